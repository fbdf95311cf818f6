//! What the server's frames do to a connection's state (RFC 9113, section 6). Each handler
//! checks its frame, applies it to the connection, and returns what is left for the worker
//! to do: a stream to
//! complete or fail, a header block to decode, an answer to queue. A `ConnError` ends the
//! connection with a GOAWAY.

use super::conn::{Conn, Cont, Table, MAX_ID};
use crate::h2::{self, ConnError, Head};
use crate::sock::Stamp;
use std::time::Instant;

/// A complete header block: its stream, the flags of the HEADERS frame that began it, and
/// the block.
pub(super) type Block = (u32, u8, Vec<u8>);

/// A DATA frame's numbers, as the frame reader reports them.
pub(super) struct Data {
    pub(super) stream: u32,
    /// Bytes that count against the flow-control windows (padding included), and of them
    /// the body's.
    pub(super) flow: usize,
    pub(super) body: usize,
    pub(super) end: bool,
    /// This part of the frame holds its 9-byte head.
    pub(super) head: bool,
}

/// A DATA frame (or the part of one that arrived) that arrived at `now`; returns the slot
/// of the stream it ended.
pub(super) fn on_data<S>(
    c: &mut Conn<S>,
    d: &Data,
    now: Instant,
    arrival: Option<(Stamp, Stamp)>,
) -> Result<Option<usize>, ConnError> {
    if c.cont.is_some() || d.stream == 0 {
        return Err(ConnError::Protocol);
    }
    c.unacked += d.flow as u64;
    if c.unacked >= u64::from(h2::RECV_WINDOW / 2) {
        h2::window_update(&mut c.out, 0, c.unacked as u32);
        c.unacked = 0;
    }
    let Some(k) = c.slots.iter().position(|s| s.id == d.stream) else {
        return Ok(None);
    };
    let s = &mut c.slots[k];
    s.touch(now, arrival);
    s.body_len += d.body as u64;
    s.wire_len += d.flow as u64 + if d.head { 9 } else { 0 };
    s.unacked += d.flow as u32;
    if d.end {
        return Ok(Some(k));
    } else if s.unacked >= h2::RECV_WINDOW / 2 {
        h2::window_update(&mut c.out, d.stream, s.unacked);
        s.unacked = 0;
    }
    Ok(None)
}

/// A HEADERS frame; returns its block once it is complete.
pub(super) fn on_headers<S>(
    c: &mut Conn<S>,
    head: &Head,
    payload: &[u8],
) -> Result<Option<Block>, ConnError> {
    if head.stream == 0 {
        return Err(ConnError::Protocol);
    }
    let frag = h2::headers_fragment(head, payload)?;
    if let Some(s) = c.slots.iter_mut().find(|s| s.id == head.stream) {
        s.wire_len += 9 + head.len as u64;
    }
    if head.flags & h2::END_HEADERS != 0 {
        return Ok(Some((head.stream, head.flags, frag)));
    }
    c.cont = Some(Cont {
        stream: head.stream,
        flags: head.flags,
        block: frag,
        frames: 0,
    });
    Ok(None)
}

/// A CONTINUATION frame; returns the block it completes.
pub(super) fn on_continuation<S>(
    c: &mut Conn<S>,
    head: &Head,
    payload: &[u8],
) -> Result<Option<Block>, ConnError> {
    let Some(mut cont) = c.cont.take() else {
        return Err(ConnError::Protocol);
    };
    if cont.stream != head.stream {
        return Err(ConnError::Protocol);
    }
    cont.frames += 1;
    if cont.frames > h2::MAX_CONTINUATIONS {
        return Err(ConnError::Continuations);
    }
    if cont.block.len() + payload.len() > h2::MAX_HEADER_BLOCK {
        return Err(ConnError::HeaderBlock);
    }
    if let Some(s) = c.slots.iter_mut().find(|s| s.id == head.stream) {
        s.wire_len += 9 + head.len as u64;
    }
    cont.block.extend_from_slice(payload);
    if head.flags & h2::END_HEADERS != 0 {
        return Ok(Some((cont.stream, cont.flags, cont.block)));
    }
    c.cont = Some(cont);
    Ok(None)
}

/// A complete header block for `stream` that arrived at `now`: decoded (even for a stream
/// that is gone, so that the table stays in step) and kept as the stream's response head;
/// returns the slot of the stream it ended.
pub(super) fn on_block<S>(
    c: &mut Conn<S>,
    (stream, flags, block): Block,
    now: Instant,
    arrival: Option<(Stamp, Stamp)>,
) -> Result<Option<usize>, ConnError> {
    let k = c.slots.iter().position(|s| s.id == stream);
    let want = k.is_some_and(|k| c.slots[k].req.want_server);
    let head = c.heads.decode(block, want)?;
    let Some(k) = k else {
        return Ok(None);
    };
    let s = &mut c.slots[k];
    s.touch(now, arrival);
    let end = flags & h2::END_STREAM != 0;
    if (100..200).contains(&head.status) && !end {
        // An interim response: the final one follows.
        return Ok(None);
    }
    if s.head.is_none() {
        s.head = Some(head);
    }
    Ok(end.then_some(k))
}

/// A SETTINGS frame (not an ACK), applied as the last value of each setting leaves it;
/// true when it is the server's first.
pub(super) fn on_settings<S>(
    c: &mut Conn<S>,
    head: &Head,
    payload: &[u8],
) -> Result<bool, ConnError> {
    if head.stream != 0 || payload.len() % 6 != 0 {
        return Err(ConnError::Protocol);
    }
    // Applied once per frame, as the last value leaves it: a frame of thousands of
    // entries costs no more than one.
    let mut window = None;
    for e in payload.chunks_exact(6) {
        let id = u16::from_be_bytes([e[0], e[1]]);
        let v = u32::from_be_bytes([e[2], e[3], e[4], e[5]]);
        match id {
            h2::SETTINGS_HEADER_TABLE_SIZE
                if v < h2::DEFAULT_TABLE && c.table == Table::Default =>
            {
                c.table = Table::Shrink
            }
            h2::SETTINGS_MAX_CONCURRENT_STREAMS => c.peer_max = v,
            h2::SETTINGS_INITIAL_WINDOW_SIZE => {
                if v > MAX_ID {
                    return Err(ConnError::Protocol);
                }
                window = Some(i64::from(v));
            }
            h2::SETTINGS_MAX_FRAME_SIZE => {
                if !(16_384..=16_777_215).contains(&v) {
                    return Err(ConnError::Protocol);
                }
                c.max_frame = v as usize;
            }
            _ => {}
        }
    }
    if let Some(v) = window {
        let delta = v - c.peer_window;
        for s in c.slots.iter_mut().filter(|s| s.id != 0) {
            s.send_window += delta;
        }
        c.peer_window = v;
    }
    if c.settings_seen {
        return Ok(false);
    }
    c.settings_seen = true;
    if !payload
        .chunks_exact(6)
        .any(|e| u16::from_be_bytes([e[0], e[1]]) == h2::SETTINGS_MAX_CONCURRENT_STREAMS)
    {
        // No limit given: as many as asked for.
        c.peer_max = u32::MAX;
    }
    Ok(true)
}

/// A GOAWAY frame: the connection takes no new streams; returns the last stream id the
/// server processes (the streams above it are refused).
pub(super) fn on_goaway<S>(c: &mut Conn<S>, payload: &[u8]) -> Result<u32, ConnError> {
    if payload.len() < 8 {
        return Err(ConnError::Protocol);
    }
    c.goaway = true;
    Ok(u32::from_be_bytes([payload[0], payload[1], payload[2], payload[3]]) & MAX_ID)
}

/// An RST_STREAM frame; returns the slot of the stream it ended.
pub(super) fn on_rst_stream<S>(
    c: &mut Conn<S>,
    head: &Head,
    payload: &[u8],
) -> Result<Option<usize>, ConnError> {
    if head.stream == 0 || payload.len() != 4 {
        return Err(ConnError::Protocol);
    }
    Ok(c.slots.iter().position(|s| s.id == head.stream))
}

/// A WINDOW_UPDATE frame: more room to send on the connection or on a stream.
pub(super) fn on_window_update<S>(
    c: &mut Conn<S>,
    head: &Head,
    payload: &[u8],
) -> Result<(), ConnError> {
    if payload.len() != 4 {
        return Err(ConnError::Protocol);
    }
    let inc =
        i64::from(u32::from_be_bytes([payload[0], payload[1], payload[2], payload[3]]) & MAX_ID);
    if head.stream == 0 {
        c.conn_window += inc;
    } else if let Some(s) = c.slots.iter_mut().find(|s| s.id == head.stream) {
        s.send_window += inc;
    }
    Ok(())
}
