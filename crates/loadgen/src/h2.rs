//! HTTP/2 on the wire, reduced to what a client that only sends requests needs (RFC 9113):
//! the connection preface, SETTINGS and their ACK, HEADERS with CONTINUATION, DATA,
//! WINDOW_UPDATE, PING's answer, RST_STREAM and GOAWAY. Header blocks are HPACK (RFC 7541):
//! requests' encoded with the `loona-hpack` crate, responses' decoded with `httlib-hpack`
//! (see [`decode_head`]).
//!
//! Every request of a run is the same, so its header block is encoded once per run: the
//! first block a connection sends (which adds the request's fields to the server's dynamic
//! table) and the block every later request sends (which refers to them), both the same on
//! every connection because each starts from an empty table. A server that shrinks the table
//! below the default gets blocks that index nothing.
//!
//! Frames are read by [`FrameReader`] straight from the worker's read buffer: a DATA frame's
//! payload is counted as it arrives and never copied; any other frame is handed over whole,
//! copied only when it was split across reads.

use crate::config::LoadConfig;

pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

pub const DATA: u8 = 0x0;
pub const HEADERS: u8 = 0x1;
pub const RST_STREAM: u8 = 0x3;
pub const SETTINGS: u8 = 0x4;
pub const PUSH_PROMISE: u8 = 0x5;
pub const PING: u8 = 0x6;
pub const GOAWAY: u8 = 0x7;
pub const WINDOW_UPDATE: u8 = 0x8;
pub const CONTINUATION: u8 = 0x9;

pub const END_STREAM: u8 = 0x1;
pub const ACK: u8 = 0x1;
pub const END_HEADERS: u8 = 0x4;
pub const PADDED: u8 = 0x8;
pub const PRIORITY: u8 = 0x20;

pub const SETTINGS_HEADER_TABLE_SIZE: u16 = 0x1;
pub const SETTINGS_ENABLE_PUSH: u16 = 0x2;
pub const SETTINGS_MAX_CONCURRENT_STREAMS: u16 = 0x3;
pub const SETTINGS_INITIAL_WINDOW_SIZE: u16 = 0x4;
pub const SETTINGS_MAX_FRAME_SIZE: u16 = 0x5;

pub const NO_ERROR: u32 = 0x0;
pub const PROTOCOL_ERROR: u32 = 0x1;
pub const CANCEL: u32 = 0x8;

/// The flow-control window every stream starts with before SETTINGS say otherwise.
pub const DEFAULT_WINDOW: i64 = 65_535;
/// The largest frame payload a peer may send before its SETTINGS raise it.
pub const DEFAULT_MAX_FRAME: usize = 16_384;
/// The dynamic table size HPACK starts with.
pub const DEFAULT_TABLE: u32 = 4_096;
/// The receive window the client gives every stream and the connection: 1 GiB, as h2load's
/// defaults (`-w 30 -W 30`), so that no body waits for the client's flow control.
pub const RECV_WINDOW: u32 = 1 << 30;
/// Largest payload of a frame other than DATA accepted (header blocks included).
const MAX_CONTROL_PAYLOAD: usize = 1 << 20;

/// Appends a frame header.
pub fn frame_head(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
    let len = len as u32;
    out.extend_from_slice(&[(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags]);
    out.extend_from_slice(&(stream & 0x7fff_ffff).to_be_bytes());
}

/// The client's connection preface: the magic, its SETTINGS (no server push, the large
/// stream window) and the connection window raised to [`RECV_WINDOW`].
pub fn client_preface(out: &mut Vec<u8>) {
    out.extend_from_slice(PREFACE);
    frame_head(out, 12, SETTINGS, 0, 0);
    for (id, v) in [
        (SETTINGS_ENABLE_PUSH, 0u32),
        (SETTINGS_INITIAL_WINDOW_SIZE, RECV_WINDOW),
    ] {
        out.extend_from_slice(&id.to_be_bytes());
        out.extend_from_slice(&v.to_be_bytes());
    }
    window_update(out, 0, RECV_WINDOW - DEFAULT_WINDOW as u32);
}

pub fn window_update(out: &mut Vec<u8>, stream: u32, increment: u32) {
    frame_head(out, 4, WINDOW_UPDATE, 0, stream);
    out.extend_from_slice(&(increment & 0x7fff_ffff).to_be_bytes());
}

pub fn rst_stream(out: &mut Vec<u8>, stream: u32, code: u32) {
    frame_head(out, 4, RST_STREAM, 0, stream);
    out.extend_from_slice(&code.to_be_bytes());
}

pub fn settings_ack(out: &mut Vec<u8>) {
    frame_head(out, 0, SETTINGS, ACK, 0);
}

pub fn ping_ack(out: &mut Vec<u8>, data: &[u8]) {
    frame_head(out, 8, PING, ACK, 0);
    out.extend_from_slice(data);
}

pub fn goaway(out: &mut Vec<u8>, last: u32, code: u32) {
    frame_head(out, 8, GOAWAY, 0, 0);
    out.extend_from_slice(&last.to_be_bytes());
    out.extend_from_slice(&code.to_be_bytes());
}

/// Appends a header block as HEADERS and as many CONTINUATION frames as `max_frame` needs.
/// `end_stream`: the request has no body.
pub fn headers(out: &mut Vec<u8>, stream: u32, block: &[u8], end_stream: bool, max_frame: usize) {
    let mut parts = block.chunks(max_frame.max(1));
    let first = parts.next().unwrap_or(&[]);
    let more = block.len() > first.len();
    let mut flags = if end_stream { END_STREAM } else { 0 };
    if !more {
        flags |= END_HEADERS;
    }
    frame_head(out, first.len(), HEADERS, flags, stream);
    out.extend_from_slice(first);
    let mut rest = parts.peekable();
    while let Some(p) = rest.next() {
        let flags = if rest.peek().is_none() {
            END_HEADERS
        } else {
            0
        };
        frame_head(out, p.len(), CONTINUATION, flags, stream);
        out.extend_from_slice(p);
    }
}

/// Header fields an HTTP/2 request may not carry (RFC 9113, section 8.2.2): they describe an
/// HTTP/1.1 connection.
pub const CONNECTION_FIELDS: [&str; 5] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "upgrade",
];

/// The request's fields, in order: the pseudo-fields, then what ab's HTTP/1 request carries
/// (see [`crate::http::build_request`]), names in lower case. A `Host` given with `-H`
/// becomes `:authority`.
pub fn request_fields(cfg: &LoadConfig) -> Vec<(Vec<u8>, Vec<u8>)> {
    use base64::Engine as _;
    let t = &cfg.target;
    let user = |name: &str| {
        cfg.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
    };
    let authority = user("host").unwrap_or_else(|| t.host_header.clone());
    let mut f: Vec<(Vec<u8>, Vec<u8>)> = vec![
        (b":method".to_vec(), cfg.load.method.as_str().into()),
        (
            b":scheme".to_vec(),
            if t.https { "https" } else { "http" }.into(),
        ),
        (b":authority".to_vec(), authority.into_bytes()),
        (b":path".to_vec(), t.path.clone().into_bytes()),
    ];
    let mut add = |k: &str, v: String| f.push((k.to_ascii_lowercase().into_bytes(), v.into()));
    if !cfg.cookies.is_empty() {
        add("cookie", cfg.cookies.join("; "));
    }
    let b64 = base64::engine::general_purpose::STANDARD;
    if let Some(cred) = &cfg.basic_auth {
        add("authorization", format!("Basic {}", b64.encode(cred)));
    }
    let has = |name: &str| {
        cfg.headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case(name))
    };
    if let Some(body) = &cfg.body {
        add("content-length", body.len().to_string());
        if !has("content-type") {
            add(
                "content-type",
                cfg.content_type.as_deref().unwrap_or("text/plain").into(),
            );
        }
    }
    for (k, v) in &cfg.headers {
        if !k.eq_ignore_ascii_case("host") {
            add(k, v.clone());
        }
    }
    if !has("user-agent") {
        add(
            "user-agent",
            concat!("benchctl/", env!("CARGO_PKG_VERSION")).into(),
        );
    }
    if !has("accept") {
        add("accept", "*/*".into());
    }
    f
}

/// The request's header blocks, encoded once per run.
#[derive(Debug, Clone)]
pub struct Blocks {
    /// The first request on a connection: adds the fields to the server's dynamic table.
    pub first: Vec<u8>,
    /// Every later request on that connection: refers to what `first` added.
    pub repeat: Vec<u8>,
    /// For a server that shrinks the dynamic table: a table size update to 0, then fields
    /// that index nothing (sent once per connection, after which [`Blocks::unindexed`]).
    pub shrink: Vec<u8>,
    pub unindexed: Vec<u8>,
}

impl Blocks {
    pub fn new(fields: &[(Vec<u8>, Vec<u8>)]) -> Blocks {
        let it = || fields.iter().map(|(k, v)| (k.as_slice(), v.as_slice()));
        let mut enc = loona_hpack::Encoder::new();
        let first = enc.encode(it());
        let repeat = enc.encode(it());
        let mut plain = loona_hpack::Encoder::new();
        plain.set_max_table_size(0);
        let unindexed = plain.encode(it());
        // A dynamic table size update (RFC 7541, section 6.3) to 0: 001 and a 5-bit zero.
        let mut shrink = vec![0x20];
        shrink.extend_from_slice(&unindexed);
        Blocks {
            first,
            repeat,
            shrink,
            unindexed,
        }
    }
}

/// Why a connection that was made does not speak HTTP/2: the server answered the preface in
/// HTTP/1.x, or did not choose `h2` by ALPN. Carried in an `io::Error` as a connect error.
#[derive(Debug)]
pub struct NotHttp2(pub String);

impl std::fmt::Display for NotHttp2 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NotHttp2 {}

/// A frame's 9-byte header, decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    pub len: usize,
    pub kind: u8,
    pub flags: u8,
    pub stream: u32,
}

/// What the reader found next in the bytes it was given.
#[derive(Debug, PartialEq, Eq)]
pub enum Event<'a> {
    /// Part (or all) of a DATA frame's payload: `flow` bytes count against the flow-control
    /// windows, `body` of them are the response's body (padding excluded); `end` when this
    /// part ends the frame and the frame ends the stream. `head` is true for the part that
    /// starts the frame (whose 9 header bytes then also arrived).
    Data {
        stream: u32,
        flow: usize,
        body: usize,
        end: bool,
        head: bool,
    },
    /// A whole frame of any other type.
    Frame { head: Head, payload: &'a [u8] },
}

/// The frame is not HTTP/2 this client can take: a connection error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameError;

/// Splits the bytes a connection receives into frames, across reads.
#[derive(Debug, Default)]
pub struct FrameReader {
    head: [u8; 9],
    head_len: usize,
    /// The frame being read, once its header is complete.
    cur: Option<Head>,
    /// DATA: payload bytes still to come. Others: the payload gathered so far.
    data_left: usize,
    payload: Vec<u8>,
    /// Padded DATA is gathered whole, as other frames are.
    gather: bool,
    /// The next DATA part is the first of its frame.
    data_started: bool,
}

impl FrameReader {
    pub fn new() -> Self {
        Self::default()
    }

    /// Nothing is half read: the connection is between frames.
    pub fn idle(&self) -> bool {
        self.head_len == 0 && self.cur.is_none()
    }

    /// The next event in `buf[*pos..]`, advancing `pos`; `None` once `buf` is used up.
    pub fn next<'a>(
        &'a mut self,
        buf: &'a [u8],
        pos: &mut usize,
    ) -> Result<Option<Event<'a>>, FrameError> {
        loop {
            let rest = &buf[*pos..];
            let Some(head) = self.cur else {
                if rest.is_empty() {
                    return Ok(None);
                }
                let take = (9 - self.head_len).min(rest.len());
                self.head[self.head_len..self.head_len + take].copy_from_slice(&rest[..take]);
                self.head_len += take;
                *pos += take;
                if self.head_len < 9 {
                    return Ok(None);
                }
                self.head_len = 0;
                let h = &self.head;
                let head = Head {
                    len: (usize::from(h[0]) << 16) | (usize::from(h[1]) << 8) | usize::from(h[2]),
                    kind: h[3],
                    flags: h[4],
                    stream: u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & 0x7fff_ffff,
                };
                self.gather = head.kind != DATA || head.flags & PADDED != 0;
                if self.gather && head.len > MAX_CONTROL_PAYLOAD {
                    return Err(FrameError);
                }
                self.cur = Some(head);
                self.data_left = head.len;
                self.data_started = true;
                self.payload.clear();
                continue;
            };
            if !self.gather {
                // Unpadded DATA: counted as it comes, never copied.
                let take = self.data_left.min(rest.len());
                if take == 0 && self.data_left > 0 {
                    return Ok(None);
                }
                *pos += take;
                self.data_left -= take;
                let done = self.data_left == 0;
                if done {
                    self.cur = None;
                }
                let first = std::mem::replace(&mut self.data_started, false);
                return Ok(Some(Event::Data {
                    stream: head.stream,
                    flow: take,
                    body: take,
                    end: done && head.flags & END_STREAM != 0,
                    head: first,
                }));
            }
            // Gathered: the whole payload in one piece, from `buf` when it is all there.
            let whole_here = self.payload.is_empty() && rest.len() >= head.len;
            let payload: &'a [u8] = if whole_here {
                *pos += head.len;
                &buf[*pos - head.len..*pos]
            } else {
                let take = (head.len - self.payload.len()).min(rest.len());
                self.payload.extend_from_slice(&rest[..take]);
                *pos += take;
                if self.payload.len() < head.len {
                    return Ok(None);
                }
                &self.payload
            };
            self.cur = None;
            if head.kind == DATA {
                // Padded: the pad length, the data, the padding.
                let pad = usize::from(*payload.first().ok_or(FrameError)?);
                if pad + 1 > head.len {
                    return Err(FrameError);
                }
                return Ok(Some(Event::Data {
                    stream: head.stream,
                    flow: head.len,
                    body: head.len - 1 - pad,
                    end: head.flags & END_STREAM != 0,
                    head: true,
                }));
            }
            return Ok(Some(Event::Frame { head, payload }));
        }
    }
}

/// The header block fragment of a HEADERS frame's payload, without its padding and priority.
pub fn headers_fragment(head: &Head, payload: &[u8]) -> Result<Vec<u8>, FrameError> {
    let mut p = payload;
    let mut pad = 0;
    if head.flags & PADDED != 0 {
        pad = usize::from(*p.first().ok_or(FrameError)?);
        p = &p[1..];
    }
    if head.flags & PRIORITY != 0 {
        p = p.get(5..).ok_or(FrameError)?;
    }
    if pad > p.len() {
        return Err(FrameError);
    }
    Ok(p[..p.len() - pad].to_vec())
}

/// What a response's header block says that the client uses.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ResponseHead {
    pub status: u16,
    pub content_length: Option<u64>,
    pub server: Option<String>,
}

/// Decodes a complete header block, keeping the decoder's table in step; a block that does
/// not decode is a connection error (the table is then out of step with the server's).
///
/// Decoding uses `httlib-hpack`, whose Huffman decoder works from static tables: every
/// response's head is decoded, and servers send most values Huffman-coded.
pub fn decode_head(
    dec: &mut httlib_hpack::Decoder<'static>,
    mut block: Vec<u8>,
    want_server: bool,
) -> Result<ResponseHead, FrameError> {
    let mut fields = Vec::with_capacity(8);
    dec.decode(&mut block, &mut fields)
        .map_err(|_| FrameError)?;
    let mut h = ResponseHead::default();
    let mut status = None;
    for (k, v, _) in &fields {
        match k.as_slice() {
            b":status" => {
                status = std::str::from_utf8(v).ok().and_then(|s| s.parse().ok());
            }
            b"content-length" => {
                h.content_length = std::str::from_utf8(v).ok().and_then(|s| s.parse().ok())
            }
            b"server" if want_server => h.server = Some(String::from_utf8_lossy(v).into_owned()),
            _ => {}
        }
    }
    h.status = status.ok_or(FrameError)?;
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{LoadSpec, Target};

    fn frames(bytes: &[u8], cuts: &[usize]) -> Vec<String> {
        let mut r = FrameReader::new();
        let mut out = Vec::new();
        let mut at = 0;
        for &end in cuts.iter().chain(std::iter::once(&bytes.len())) {
            let part = &bytes[at..end];
            at = end;
            let mut pos = 0;
            while let Some(ev) = r.next(part, &mut pos).unwrap() {
                out.push(match ev {
                    Event::Data {
                        stream,
                        flow,
                        body,
                        end,
                        ..
                    } => format!("data {stream} {flow} {body} {end}"),
                    Event::Frame { head, payload } => {
                        format!("frame {} {} {:?}", head.kind, head.stream, payload)
                    }
                });
            }
        }
        out
    }

    #[test]
    fn frames_are_found_however_the_reads_split_them() {
        let mut b = Vec::new();
        frame_head(&mut b, 3, HEADERS, END_HEADERS, 1);
        b.extend_from_slice(&[1, 2, 3]);
        frame_head(&mut b, 4, DATA, END_STREAM, 1);
        b.extend_from_slice(b"abcd");
        // Padded DATA: pad length 2, 1 byte of data, 2 of padding.
        frame_head(&mut b, 4, DATA, PADDED | END_STREAM, 3);
        b.extend_from_slice(&[2, b'x', 0, 0]);
        settings_ack(&mut b);
        let whole = frames(&b, &[]);
        assert_eq!(
            whole,
            [
                "frame 1 1 [1, 2, 3]",
                "data 1 4 4 true",
                "data 3 4 1 true",
                "frame 4 0 []"
            ]
        );
        for cut in 1..b.len() {
            let got = frames(&b, &[cut]);
            // A DATA frame split by the read comes in two parts that add up.
            let (mut flow, mut body) = (0, 0);
            for g in got.iter().filter(|g| g.starts_with("data 1 ")) {
                let f: Vec<usize> = g
                    .split(' ')
                    .skip(2)
                    .take(2)
                    .map(|x| x.parse().unwrap())
                    .collect();
                flow += f[0];
                body += f[1];
            }
            assert_eq!((flow, body), (4, 4), "cut at {cut}");
            let others: Vec<_> = got.iter().filter(|g| !g.starts_with("data 1 ")).collect();
            assert_eq!(others, [&whole[0], &whole[2], &whole[3]], "cut at {cut}");
        }
    }

    #[test]
    fn header_blocks_round_trip_and_repeat_the_same() {
        let mut cfg = LoadConfig::new(
            Target::parse("http://127.0.0.1:8080/x?y").unwrap(),
            LoadSpec::default(),
        );
        cfg.headers.push(("X-Test".into(), "1".into()));
        let fields = request_fields(&cfg);
        let b = Blocks::new(&fields);
        let mut dec = loona_hpack::Decoder::new();
        for block in [&b.first, &b.repeat, &b.repeat] {
            let got = dec.decode(block).unwrap();
            assert_eq!(got, fields);
        }
        // The response side: a block the other crate encoded decodes to the same fields.
        let mut dec = httlib_hpack::Decoder::default();
        let mut got = Vec::new();
        dec.decode(&mut b.first.clone(), &mut got).unwrap();
        let got: Vec<_> = got.into_iter().map(|(k, v, _)| (k, v)).collect();
        assert_eq!(got, fields);
        assert!(b.repeat.len() < b.first.len());
        // A third encoding is the second's: the blocks can be reused on every request.
        let mut enc = loona_hpack::Encoder::new();
        let it = || fields.iter().map(|(k, v)| (k.as_slice(), v.as_slice()));
        enc.encode(it());
        let second = enc.encode(it());
        assert_eq!(enc.encode(it()), second);
        let mut dec = loona_hpack::Decoder::new();
        assert_eq!(dec.decode(&b.first).unwrap(), fields);
        assert_eq!(dec.decode(&b.shrink).unwrap(), fields);
        assert_eq!(dec.decode(&b.unindexed).unwrap(), fields);
        assert_eq!(fields[2].1, b"127.0.0.1:8080");
        assert_eq!(fields[4].0, b"x-test");
    }

    #[test]
    fn long_header_blocks_continue() {
        let mut out = Vec::new();
        headers(&mut out, 5, &[7u8; 10], true, 4);
        let mut r = FrameReader::new();
        let mut pos = 0;
        let mut seen = Vec::new();
        while let Some(Event::Frame { head, payload }) = r.next(&out, &mut pos).unwrap() {
            seen.push((head.kind, head.flags, payload.len()));
        }
        assert_eq!(
            seen,
            [
                (HEADERS, END_STREAM, 4),
                (CONTINUATION, 0, 4),
                (CONTINUATION, END_HEADERS, 2)
            ]
        );
    }
}
