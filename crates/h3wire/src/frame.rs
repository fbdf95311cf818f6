//! HTTP/3 frames (RFC 9114, section 7): a type and a length, both variable-length integers,
//! then the payload. Writers for the frames a client sends, and [`FrameReader`], which reads
//! the frames of one stream from the pieces QUIC hands over, however they are cut.

use crate::{varint, Error};

/// Frame types (RFC 9114, section 7.2).
pub mod kind {
    pub const DATA: u64 = 0x00;
    pub const HEADERS: u64 = 0x01;
    pub const CANCEL_PUSH: u64 = 0x03;
    pub const SETTINGS: u64 = 0x04;
    pub const PUSH_PROMISE: u64 = 0x05;
    pub const GOAWAY: u64 = 0x07;
    pub const MAX_PUSH_ID: u64 = 0x0d;

    /// HTTP/2's frame types that HTTP/3 reserves: receiving one is a connection error
    /// (H3_FRAME_UNEXPECTED, section 7.2.8).
    pub fn reserved_from_http2(kind: u64) -> bool {
        matches!(kind, 0x02 | 0x06 | 0x08 | 0x09)
    }
}

/// Settings identifiers (RFC 9114, section 7.2.4.1; RFC 9204, section 5).
pub mod setting {
    pub const QPACK_MAX_TABLE_CAPACITY: u64 = 0x01;
    pub const MAX_FIELD_SECTION_SIZE: u64 = 0x06;
    pub const QPACK_BLOCKED_STREAMS: u64 = 0x07;
}

/// The first integer of a unidirectional stream: what the stream is for (RFC 9114, section
/// 6.2; RFC 9204, section 4.2).
pub mod stream_type {
    pub const CONTROL: u64 = 0x00;
    pub const PUSH: u64 = 0x01;
    pub const QPACK_ENCODER: u64 = 0x02;
    pub const QPACK_DECODER: u64 = 0x03;
}

/// Error codes of HTTP/3 (RFC 9114, section 8.1) and QPACK (RFC 9204, section 6), for closing
/// a connection or resetting a stream.
pub mod code {
    pub const H3_NO_ERROR: u64 = 0x100;
    pub const H3_GENERAL_PROTOCOL_ERROR: u64 = 0x101;
    pub const H3_INTERNAL_ERROR: u64 = 0x102;
    pub const H3_STREAM_CREATION_ERROR: u64 = 0x103;
    pub const H3_CLOSED_CRITICAL_STREAM: u64 = 0x104;
    pub const H3_FRAME_UNEXPECTED: u64 = 0x105;
    pub const H3_FRAME_ERROR: u64 = 0x106;
    pub const H3_EXCESSIVE_LOAD: u64 = 0x107;
    pub const H3_ID_ERROR: u64 = 0x108;
    pub const H3_SETTINGS_ERROR: u64 = 0x109;
    pub const H3_MISSING_SETTINGS: u64 = 0x10a;
    pub const H3_REQUEST_REJECTED: u64 = 0x10b;
    pub const H3_REQUEST_CANCELLED: u64 = 0x10c;
    pub const H3_REQUEST_INCOMPLETE: u64 = 0x10d;
    pub const H3_MESSAGE_ERROR: u64 = 0x10e;
    pub const QPACK_DECOMPRESSION_FAILED: u64 = 0x200;
}

/// Appends a frame's type and length; its payload follows.
pub fn put_header(kind: u64, len: u64, out: &mut Vec<u8>) {
    varint::put(kind, out);
    varint::put(len, out);
}

/// Appends a HEADERS frame carrying the encoded field section `block`.
pub fn put_headers(block: &[u8], out: &mut Vec<u8>) {
    put_header(kind::HEADERS, block.len() as u64, out);
    out.extend_from_slice(block);
}

/// Appends a SETTINGS frame with these identifiers and values, in order.
pub fn put_settings(settings: &[(u64, u64)], out: &mut Vec<u8>) {
    let len: usize = settings
        .iter()
        .map(|&(id, v)| varint::len(id) + varint::len(v))
        .sum();
    put_header(kind::SETTINGS, len as u64, out);
    for &(id, v) in settings {
        varint::put(id, out);
        varint::put(v, out);
    }
}

/// What [`FrameReader::next`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum Piece<'a> {
    /// A HEADERS frame's field section, whole.
    Headers(Vec<u8>),
    /// Part of a DATA frame's payload, as it arrived: a frame's payload may come in several.
    Data(&'a [u8]),
    /// A SETTINGS frame's identifiers and values, in order.
    Settings(Vec<(u64, u64)>),
    /// A GOAWAY frame: the first request stream the server will not process.
    Goaway(u64),
    /// Another frame HTTP/3 defines (CANCEL_PUSH, PUSH_PROMISE, MAX_PUSH_ID), whole: whether
    /// it may come on this stream is the caller's to say.
    Other { kind: u64, payload: Vec<u8> },
}

/// Where the reader is within the stream.
#[derive(Debug, Clone, Copy)]
enum At {
    /// Between frames, with `have` bytes of the next frame's type and length in `head`.
    Head { head: [u8; 16], have: usize },
    /// Within a DATA frame's payload, `left` bytes of it still to come.
    Data { left: u64 },
    /// Within a frame of an unknown type (an extension, or grease), skipped.
    Skip { left: u64 },
    /// Within a frame that is read whole, `left` bytes of it still to come.
    Whole { kind: u64, left: u64 },
}

/// Reads the frames of one stream, fed as its bytes arrive.
#[derive(Debug)]
pub struct FrameReader {
    at: At,
    /// The payload of a frame read whole, as far as it has come.
    buffered: Vec<u8>,
    /// The largest frame read whole (a HEADERS frame's field section, SETTINGS, ...).
    max_whole: u64,
}

impl FrameReader {
    /// A reader that refuses a frame read whole (all but DATA and unknown ones) longer than
    /// `max_whole` bytes, as H3_EXCESSIVE_LOAD: the peer was told the largest field section it
    /// may send.
    pub fn new(max_whole: u64) -> Self {
        FrameReader {
            at: At::Head {
                head: [0; 16],
                have: 0,
            },
            buffered: Vec::new(),
            max_whole,
        }
    }

    /// Whether the stream may end here: between frames, with nothing of the next one read.
    /// A stream that ends elsewhere ended within a frame (H3_FRAME_ERROR).
    pub fn at_boundary(&self) -> bool {
        matches!(self.at, At::Head { have: 0, .. })
    }

    /// The next piece found in `input`, which it advances past what it used; `None` once
    /// `input` is used up without completing one (feed the next bytes). A DATA frame's payload
    /// comes as it arrives, never copied; other frames whole.
    pub fn next<'a>(&mut self, input: &mut &'a [u8]) -> Result<Option<Piece<'a>>, Error> {
        loop {
            match self.at {
                At::Head { mut head, mut have } => {
                    let Some(&b) = input.first() else {
                        return Ok(None);
                    };
                    head[have] = b;
                    have += 1;
                    *input = &input[1..];
                    self.at = At::Head { head, have };
                    let Some((kind, n)) = varint::get(&head[..have]) else {
                        continue;
                    };
                    let Some((len, m)) = varint::get(&head[n..have]) else {
                        continue;
                    };
                    debug_assert_eq!(n + m, have);
                    self.begin(kind, len)?;
                    if let Some(piece) = self.complete_empty()? {
                        return Ok(Some(piece));
                    }
                }
                At::Data { left } => {
                    let Some((data, left)) = take(input, left) else {
                        return Ok(None);
                    };
                    self.at = if left == 0 {
                        Self::between()
                    } else {
                        At::Data { left }
                    };
                    return Ok(Some(Piece::Data(data)));
                }
                At::Skip { left } => {
                    let Some((_, left)) = take(input, left) else {
                        return Ok(None);
                    };
                    self.at = if left == 0 {
                        Self::between()
                    } else {
                        At::Skip { left }
                    };
                }
                At::Whole { kind, left } => {
                    let Some((part, left)) = take(input, left) else {
                        return Ok(None);
                    };
                    self.buffered.extend_from_slice(part);
                    if left == 0 {
                        self.at = Self::between();
                        let payload = std::mem::take(&mut self.buffered);
                        return whole(kind, payload).map(Some);
                    }
                    self.at = At::Whole { kind, left };
                }
            }
        }
    }

    fn between() -> At {
        At::Head {
            head: [0; 16],
            have: 0,
        }
    }

    /// Starts a frame of `kind` whose payload is `len` bytes.
    fn begin(&mut self, kind: u64, len: u64) -> Result<(), Error> {
        self.at = match kind {
            kind::DATA => At::Data { left: len },
            k if kind::reserved_from_http2(k) => {
                return Err(Error::Frame(
                    code::H3_FRAME_UNEXPECTED,
                    format!("frame type {k:#x} is HTTP/2's, reserved in HTTP/3"),
                ))
            }
            kind::HEADERS
            | kind::SETTINGS
            | kind::GOAWAY
            | kind::CANCEL_PUSH
            | kind::PUSH_PROMISE
            | kind::MAX_PUSH_ID => {
                if len > self.max_whole {
                    return Err(Error::Frame(
                        code::H3_EXCESSIVE_LOAD,
                        format!(
                            "a frame of type {kind:#x} of {len} bytes, above the {} allowed",
                            self.max_whole
                        ),
                    ));
                }
                self.buffered.clear();
                At::Whole { kind, left: len }
            }
            _ => At::Skip { left: len },
        };
        Ok(())
    }

    /// A frame just begun that is already complete: one read whole with no payload (a DATA or
    /// skipped frame of no bytes yields nothing).
    fn complete_empty(&mut self) -> Result<Option<Piece<'static>>, Error> {
        match self.at {
            At::Whole { kind, left: 0 } => {
                self.at = Self::between();
                whole(kind, Vec::new()).map(Some)
            }
            At::Data { left: 0 } | At::Skip { left: 0 } => {
                self.at = Self::between();
                Ok(None)
            }
            _ => Ok(None),
        }
    }
}

/// Takes up to `left` bytes of a payload from the front of `input`: those bytes and how many
/// are still to come, or `None` when `input` is empty.
fn take<'a>(input: &mut &'a [u8], left: u64) -> Option<(&'a [u8], u64)> {
    if input.is_empty() {
        return None;
    }
    let n = (input.len() as u64).min(left) as usize;
    let (part, rest) = input.split_at(n);
    *input = rest;
    Some((part, left - n as u64))
}

/// A frame read whole, from its payload.
fn whole(kind: u64, payload: Vec<u8>) -> Result<Piece<'static>, Error> {
    let malformed = |what: &str| Error::Frame(code::H3_FRAME_ERROR, what.to_string());
    Ok(match kind {
        kind::HEADERS => Piece::Headers(payload),
        kind::SETTINGS => {
            let mut settings = Vec::new();
            let mut rest = &payload[..];
            while !rest.is_empty() {
                let (id, n) = varint::get(rest).ok_or_else(|| malformed("a cut SETTINGS frame"))?;
                let (v, m) =
                    varint::get(&rest[n..]).ok_or_else(|| malformed("a cut SETTINGS frame"))?;
                settings.push((id, v));
                rest = &rest[n + m..];
            }
            Piece::Settings(settings)
        }
        kind::GOAWAY => match varint::get(&payload) {
            Some((id, n)) if n == payload.len() => Piece::Goaway(id),
            _ => return Err(malformed("a GOAWAY frame that is not one integer")),
        },
        kind => Piece::Other { kind, payload },
    })
}

#[cfg(test)]
mod tests;
