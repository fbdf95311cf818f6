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

mod heads;
pub use heads::Heads;

pub use crate::config::CONNECTION_FIELDS;

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
pub const SETTINGS_MAX_HEADER_LIST_SIZE: u16 = 0x6;

pub const NO_ERROR: u32 = 0x0;
pub const PROTOCOL_ERROR: u32 = 0x1;
pub const FRAME_SIZE_ERROR: u32 = 0x6;
pub const CANCEL: u32 = 0x8;
pub const COMPRESSION_ERROR: u32 = 0x9;
pub const ENHANCE_YOUR_CALM: u32 = 0xb;

/// The flow-control window every stream starts with before SETTINGS say otherwise.
pub const DEFAULT_WINDOW: i64 = 65_535;
/// The largest frame payload a peer may send before its SETTINGS raise it.
pub const DEFAULT_MAX_FRAME: usize = 16_384;
/// The dynamic table size HPACK starts with.
pub const DEFAULT_TABLE: u32 = 4_096;
/// The receive window the client gives every stream and the connection: 1 GiB, as h2load's
/// defaults (`-w 30 -W 30`), so that no body waits for the client's flow control.
pub const RECV_WINDOW: u32 = 1 << 30;
/// Largest frame payload the client takes, of any type: the default SETTINGS_MAX_FRAME_SIZE,
/// which it never raises. A larger frame is a FRAME_SIZE_ERROR (RFC 9113, section 4.2); the
/// frames the client gathers whole are never larger.
pub const MAX_FRAME_RECV: usize = DEFAULT_MAX_FRAME;
/// Largest response header block the client gathers, HEADERS and CONTINUATION fragments
/// together, encoded: 64 KiB, four times what one frame carries. A connection holds at most
/// one such block at a time (HEADERS and its CONTINUATIONs may not be interleaved).
pub const MAX_HEADER_BLOCK: usize = 64 << 10;
/// Largest header list a response block may decode to, counted as
/// SETTINGS_MAX_HEADER_LIST_SIZE counts it (each field's name and value, plus 32), and
/// advertised so in the client's SETTINGS: 64 KiB, as [`MAX_HEADER_BLOCK`]. It bounds what a
/// small block of references into the dynamic table can expand to.
pub const MAX_HEADER_LIST: u32 = 64 << 10;
/// CONTINUATION frames one header block may take: a block of [`MAX_HEADER_BLOCK`] needs 4 of
/// the default size, 64 leaves room for a server that writes it in pieces of 1 KiB, and ends a
/// flood of empty ones at once.
pub const MAX_CONTINUATIONS: u32 = 64;
/// Answers to the server's control frames (PING and SETTINGS ACKs) that may wait unwritten on a
/// connection, as nghttp2's limit on queued outbound control frames: a server that sends more
/// without reading the answers is flooding the client.
pub const MAX_QUEUED_REPLIES: usize = 1000;

/// Appends a frame header.
pub fn frame_head(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
    let len = len as u32;
    out.extend_from_slice(&[(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags]);
    out.extend_from_slice(&(stream & 0x7fff_ffff).to_be_bytes());
}

/// The client's connection preface: the magic, its SETTINGS (no server push, the large
/// stream window, the largest header list it takes) and the connection window raised to
/// [`RECV_WINDOW`].
pub fn client_preface(out: &mut Vec<u8>) {
    out.extend_from_slice(PREFACE);
    frame_head(out, 18, SETTINGS, 0, 0);
    for (id, v) in [
        (SETTINGS_ENABLE_PUSH, 0u32),
        (SETTINGS_INITIAL_WINDOW_SIZE, RECV_WINDOW),
        (SETTINGS_MAX_HEADER_LIST_SIZE, MAX_HEADER_LIST),
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

/// Why the client ends a connection (a connection error, RFC 9113, section 5.4.1): the
/// server broke HTTP/2, or asked more of the client than it gives any server. The GOAWAY that
/// ends the connection carries [`ConnError::code`]; the reason is the run's to report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnError {
    /// A frame HTTP/2 does not allow where it came.
    Protocol,
    /// A frame larger than [`MAX_FRAME_RECV`].
    FrameSize,
    /// A header block that does not decode.
    Compression,
    /// A header block beyond [`MAX_HEADER_BLOCK`] encoded or [`MAX_HEADER_LIST`] decoded.
    HeaderBlock,
    /// More than [`MAX_CONTINUATIONS`] CONTINUATION frames in one header block.
    Continuations,
    /// More than [`MAX_QUEUED_REPLIES`] answers to the server's control frames waiting
    /// unwritten.
    Flood,
}

impl ConnError {
    /// The error code of the GOAWAY that says so.
    pub fn code(self) -> u32 {
        match self {
            ConnError::Protocol => PROTOCOL_ERROR,
            ConnError::FrameSize => FRAME_SIZE_ERROR,
            ConnError::Compression => COMPRESSION_ERROR,
            ConnError::HeaderBlock | ConnError::Continuations | ConnError::Flood => {
                ENHANCE_YOUR_CALM
            }
        }
    }
}

impl std::fmt::Display for ConnError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConnError::Protocol => write!(
                f,
                "the server sent a frame HTTP/2 does not allow there (GOAWAY PROTOCOL_ERROR)"
            ),
            ConnError::FrameSize => write!(
                f,
                "the server sent a frame larger than {MAX_FRAME_RECV} bytes, the client's \
                 SETTINGS_MAX_FRAME_SIZE (GOAWAY FRAME_SIZE_ERROR)"
            ),
            ConnError::Compression => write!(
                f,
                "the server sent a header block that does not decode (HPACK; GOAWAY \
                 COMPRESSION_ERROR)"
            ),
            ConnError::HeaderBlock => write!(
                f,
                "the server sent a header block larger than {} KiB, encoded or decoded \
                 (GOAWAY ENHANCE_YOUR_CALM)",
                MAX_HEADER_BLOCK >> 10
            ),
            ConnError::Continuations => write!(
                f,
                "the server sent more than {MAX_CONTINUATIONS} CONTINUATION frames for one \
                 header block (GOAWAY ENHANCE_YOUR_CALM)"
            ),
            ConnError::Flood => write!(
                f,
                "the server sent PING or SETTINGS frames faster than it read their answers: \
                 {MAX_QUEUED_REPLIES} answers waited unwritten (GOAWAY ENHANCE_YOUR_CALM)"
            ),
        }
    }
}

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
    ) -> Result<Option<Event<'a>>, ConnError> {
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
                if head.len > MAX_FRAME_RECV {
                    return Err(ConnError::FrameSize);
                }
                self.gather = head.kind != DATA || head.flags & PADDED != 0;
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
                let pad = usize::from(*payload.first().ok_or(ConnError::Protocol)?);
                if pad + 1 > head.len {
                    return Err(ConnError::Protocol);
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
pub fn headers_fragment(head: &Head, payload: &[u8]) -> Result<Vec<u8>, ConnError> {
    let mut p = payload;
    let mut pad = 0;
    if head.flags & PADDED != 0 {
        pad = usize::from(*p.first().ok_or(ConnError::Protocol)?);
        p = &p[1..];
    }
    if head.flags & PRIORITY != 0 {
        p = p.get(5..).ok_or(ConnError::Protocol)?;
    }
    if pad > p.len() {
        return Err(ConnError::Protocol);
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
/// not decode is a connection error (the table is then out of step with the server's), and so
/// is one whose fields add up to more than [`MAX_HEADER_LIST`].
///
/// Decoding uses `httlib-hpack`, whose Huffman decoder works from static tables; servers send
/// most values Huffman-coded, and [`Heads::decode`] spares decoding a head that repeats.
pub fn decode_head(
    dec: &mut httlib_hpack::Decoder<'static>,
    mut block: Vec<u8>,
    want_server: bool,
) -> Result<ResponseHead, ConnError> {
    // A few fields at a time (the decoder stops once `fields` is full, and it never grows), so
    // that a block that expands beyond the limit is refused before it is all expanded.
    let mut fields = Vec::with_capacity(16);
    let mut list = 0usize;
    let mut h = ResponseHead::default();
    let mut status = None;
    while !block.is_empty() {
        fields.clear();
        dec.decode_exact(&mut block, &mut fields)
            .map_err(|_| ConnError::Compression)?;
        for (k, v, _) in &fields {
            list += k.len() + v.len() + 32;
            match k.as_slice() {
                b":status" => {
                    status = std::str::from_utf8(v).ok().and_then(|s| s.parse().ok());
                }
                b"content-length" => {
                    h.content_length = std::str::from_utf8(v).ok().and_then(|s| s.parse().ok())
                }
                b"server" if want_server => {
                    h.server = Some(String::from_utf8_lossy(v).into_owned())
                }
                _ => {}
            }
        }
        if list > MAX_HEADER_LIST as usize {
            return Err(ConnError::HeaderBlock);
        }
    }
    h.status = status.ok_or(ConnError::Protocol)?;
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
    fn frames_beyond_the_largest_the_client_takes_end_the_connection() {
        for kind in [DATA, HEADERS, SETTINGS, CONTINUATION, 0xfa] {
            let mut b = Vec::new();
            frame_head(&mut b, MAX_FRAME_RECV, kind, 0, 1);
            b.resize(b.len() + MAX_FRAME_RECV, 0);
            let mut pos = 0;
            assert!(FrameReader::new().next(&b, &mut pos).is_ok(), "type {kind}");
            let mut b = Vec::new();
            frame_head(&mut b, MAX_FRAME_RECV + 1, kind, 0, 1);
            let mut pos = 0;
            assert_eq!(
                FrameReader::new().next(&b, &mut pos),
                Err(ConnError::FrameSize),
                "type {kind}"
            );
        }
        assert_eq!(ConnError::FrameSize.code(), FRAME_SIZE_ERROR);
        for e in [
            ConnError::HeaderBlock,
            ConnError::Continuations,
            ConnError::Flood,
        ] {
            assert_eq!(e.code(), ENHANCE_YOUR_CALM);
            assert!(e.to_string().contains("ENHANCE_YOUR_CALM"), "{e}");
        }
    }

    #[test]
    fn a_header_block_that_expands_beyond_the_list_limit_ends_the_connection() {
        // A field of 4,000 bytes added to the dynamic table (4,033 as the list counts it), then
        // :status 200 and `refs` one-byte references to that field.
        let block = |refs: usize| {
            let mut b = vec![0x40, 1, b'x', 0x7f, 0xa1, 0x1e];
            b.resize(b.len() + 4000, b'v');
            b.push(0x88);
            b.resize(b.len() + refs, 0xbe);
            b
        };
        let mut dec = httlib_hpack::Decoder::default();
        let head = decode_head(&mut dec, block(10), false).unwrap();
        assert_eq!(head.status, 200);
        // 17 fields of 4,033 are beyond 64 KiB: refused before the rest are expanded.
        let mut dec = httlib_hpack::Decoder::default();
        assert_eq!(
            decode_head(&mut dec, block(100_000), false),
            Err(ConnError::HeaderBlock)
        );
        let mut dec = httlib_hpack::Decoder::default();
        assert_eq!(
            decode_head(&mut dec, vec![0xff, 0xff, 0xff, 0x0f], false),
            Err(ConnError::Compression)
        );
    }

    #[test]
    fn the_preface_advertises_the_header_list_limit() {
        let mut out = Vec::new();
        client_preface(&mut out);
        let mut pos = PREFACE.len();
        let mut r = FrameReader::new();
        let Ok(Some(Event::Frame { head, payload })) = r.next(&out, &mut pos) else {
            panic!("no SETTINGS after the magic");
        };
        assert_eq!(head.kind, SETTINGS);
        let entries: Vec<(u16, u32)> = payload
            .chunks_exact(6)
            .map(|e| {
                (
                    u16::from_be_bytes([e[0], e[1]]),
                    u32::from_be_bytes([e[2], e[3], e[4], e[5]]),
                )
            })
            .collect();
        assert!(entries.contains(&(SETTINGS_MAX_HEADER_LIST_SIZE, MAX_HEADER_LIST)));
        assert!(entries.contains(&(SETTINGS_ENABLE_PUSH, 0)));
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
