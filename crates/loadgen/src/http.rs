//! HTTP/1.x on the wire, reduced to what a load generator needs: building the request bytes once,
//! and an incremental response parser that finds the end of each response (Content-Length,
//! chunked, or close-delimited) while counting bytes instead of keeping them. Body bytes it
//! does not need to see at all it only counts ([`ResponseParser::skip`]): the caller drops
//! them without reading them.
//!
//! The parser is fed whatever each read returned. The head is parsed in place when it arrives in
//! one read (the common case); only a head split across reads is copied, into a small buffer
//! that is reused for the life of the connection.

use crate::config::{HttpVersion, LoadConfig};

/// Largest response head accepted; a longer one is an exception, not a reason to grow forever.
const MAX_HEAD: usize = 64 * 1024;
/// Smallest rest of a chunk that [`ResponseParser::skippable`] offers to skip. Skipping ends
/// at the chunk's end, and the framing after it must be read, so small chunks are cheaper read
/// many at a time, the way everything else is; a chunk larger than a read buffer is not.
pub const MIN_CHUNK_SKIP: u64 = 64 * 1024;

/// Builds the request bytes once per run: every request of a run is identical.
///
/// ab's request: `METHOD path HTTP/1.0` (the absolute URL instead of the path through a
/// proxy), then `Connection: Keep-Alive` with `-k`, the cookie, the credentials, the body's
/// Content-Length and Content-Type, the user's `-H` headers, then Host, User-Agent and Accept
/// unless the user gave them, and the body. The parts the user gave were checked by
/// [`LoadConfig::validate`]: none can start another header.
pub fn build_request(cfg: &LoadConfig) -> Vec<u8> {
    use base64::Engine as _;
    let target = &cfg.target;
    let (version, keep_alive) = (cfg.load.version, cfg.load.keep_alive);
    let headers = &cfg.headers;
    let mut r = String::with_capacity(128);
    r.push_str(cfg.load.method.as_str());
    r.push(' ');
    if cfg.proxy.is_some() {
        r.push_str("http://");
        r.push_str(&target.host_header);
    }
    r.push_str(&target.path);
    r.push_str(match version {
        HttpVersion::Http10 => " HTTP/1.0\r\n",
        HttpVersion::Http11 | HttpVersion::Http2 | HttpVersion::Http3 => " HTTP/1.1\r\n",
    });
    match (version, keep_alive) {
        (HttpVersion::Http10, true) => r.push_str("Connection: Keep-Alive\r\n"),
        (HttpVersion::Http11, false) => r.push_str("Connection: close\r\n"),
        _ => {}
    }
    if !cfg.cookies.is_empty() {
        r.push_str("Cookie: ");
        r.push_str(&cfg.cookies.join("; "));
        r.push_str("\r\n");
    }
    let b64 = base64::engine::general_purpose::STANDARD;
    if let Some(cred) = &cfg.basic_auth {
        r.push_str("Authorization: Basic ");
        r.push_str(&b64.encode(cred));
        r.push_str("\r\n");
    }
    if let Some(cred) = &cfg.proxy_auth {
        r.push_str("Proxy-Authorization: Basic ");
        r.push_str(&b64.encode(cred));
        r.push_str("\r\n");
    }
    let has = |name: &str| headers.iter().any(|(k, _)| k.eq_ignore_ascii_case(name));
    if let Some(body) = &cfg.body {
        r.push_str(&format!("Content-Length: {}\r\n", body.len()));
        if !has("content-type") {
            r.push_str("Content-Type: ");
            r.push_str(cfg.content_type.as_deref().unwrap_or("text/plain"));
            r.push_str("\r\n");
        }
    }
    for (k, v) in headers {
        r.push_str(k);
        r.push_str(": ");
        r.push_str(v);
        r.push_str("\r\n");
    }
    if !has("host") {
        r.push_str("Host: ");
        r.push_str(&target.host_header);
        r.push_str("\r\n");
    }
    if !has("user-agent") {
        r.push_str(concat!(
            "User-Agent: benchctl/",
            env!("CARGO_PKG_VERSION"),
            "\r\n"
        ));
    }
    if !has("accept") {
        r.push_str("Accept: */*\r\n");
    }
    r.push_str("\r\n");
    let mut bytes = r.into_bytes();
    if let Some(body) = &cfg.body {
        bytes.extend_from_slice(body);
    }
    bytes
}

/// Why a response could not be understood.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParseError {
    /// Not HTTP, a head over 64 KiB, a bad chunk size, bytes after the end of a response.
    Malformed,
}

/// What the head of a response said.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Head {
    pub status: u16,
    /// The server is willing to keep the connection open after this response.
    pub keep_alive: bool,
    pub head_len: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Body {
    Length(u64),
    Chunked(Chunk),
    UntilClose,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chunk {
    /// Reading the hex size; `seen_digit` guards against an empty size line.
    Size {
        size: u64,
        seen_digit: bool,
    },
    /// In a chunk extension, skipping to the end of the line.
    Ext {
        size: u64,
    },
    /// Expecting the LF of the size line.
    SizeLf {
        size: u64,
    },
    Data(u64),
    DataCr,
    DataLf,
    /// In the trailer section: `at_line_start` tells an empty line (the end) from a field.
    Trailer {
        at_line_start: bool,
    },
    TrailerLf {
        at_line_start: bool,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Head,
    Body(Body),
    Done,
}

/// The outcome of feeding bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Feed {
    /// More bytes are needed.
    More,
    /// The response is complete.
    Done,
}

/// The last response head a worker parsed in full and what it said. Servers send the same head
/// again and again, but for the Date line once a second: a head that repeats the last one byte
/// for byte says the same, and is taken from here after one comparison instead of a scan of
/// its lines. One per worker, shared by its connections.
#[derive(Debug, Default)]
pub struct HeadCache {
    bytes: Vec<u8>,
    head: Head,
    /// The parser's state right after that head.
    state: Option<State>,
    head_only: bool,
}

impl HeadCache {
    /// Heads longer than this are parsed every time (a server sending them is rare, and the
    /// copy would be most of the saving).
    const MAX: usize = 1024;

    pub fn new() -> HeadCache {
        HeadCache::default()
    }

    /// The length of the head `buf` starts with and what it said, when it is the last one.
    #[inline]
    fn lookup(&self, buf: &[u8], head_only: bool) -> Option<(usize, Head, State)> {
        let n = self.bytes.len();
        let state = self.state?;
        (self.head_only == head_only && buf.len() >= n && buf[..n] == self.bytes[..])
            .then_some((n, self.head, state))
    }

    fn store(&mut self, bytes: &[u8], head: Head, state: State, head_only: bool) {
        if bytes.len() > Self::MAX {
            self.state = None;
            return;
        }
        self.bytes.clear();
        self.bytes.extend_from_slice(bytes);
        (self.head, self.state, self.head_only) = (head, Some(state), head_only);
    }
}

/// Incremental parser for one response at a time; `reset` readies it for the next one on the
/// same connection.
#[derive(Debug)]
pub struct ResponseParser {
    state: State,
    head_only: bool,
    partial_head: Vec<u8>,
    pub head: Head,
    /// Body bytes (chunk payload only, for chunked responses).
    pub body_len: u64,
    /// Every byte of this response read so far.
    pub wire_len: u64,
    /// The part of `body_len` counted by [`ResponseParser::skip`] rather than fed.
    pub skipped: u64,
    /// Set when the head carried a `Server` header and `want_server` was on.
    pub server: Option<String>,
    want_server: bool,
}

impl ResponseParser {
    pub fn new(head_only: bool) -> Self {
        ResponseParser {
            state: State::Head,
            head_only,
            partial_head: Vec::new(),
            head: Head::default(),
            body_len: 0,
            wire_len: 0,
            skipped: 0,
            server: None,
            want_server: false,
        }
    }

    /// Readies the parser for the next response; `want_server` asks it to keep the Server
    /// header (done once per run, not per request).
    pub fn reset(&mut self, want_server: bool) {
        self.state = State::Head;
        self.partial_head.clear();
        self.head = Head::default();
        self.body_len = 0;
        self.wire_len = 0;
        self.skipped = 0;
        self.server = None;
        self.want_server = want_server;
    }

    /// True once any byte of the response has been seen.
    pub fn started(&self) -> bool {
        self.wire_len > 0
    }

    pub fn head_done(&self) -> bool {
        !matches!(self.state, State::Head)
    }

    /// True when the body runs until the server closes the connection.
    pub fn until_close(&self) -> bool {
        matches!(self.state, State::Body(Body::UntilClose))
    }

    /// Feeds the bytes of one read, which must all belong to this response.
    pub fn feed(&mut self, data: &[u8]) -> Result<Feed, ParseError> {
        match self.feed_prefix(data)? {
            (Feed::Done, used) if used < data.len() => Err(ParseError::Malformed),
            (fed, _) => Ok(fed),
        }
    }

    /// Feeds the bytes of one read up to the end of this response, and says how many of them
    /// it took: all of them unless the response ended before them, in which case the rest
    /// belong to the next response on the connection (pipelining).
    pub fn feed_prefix(&mut self, data: &[u8]) -> Result<(Feed, usize), ParseError> {
        self.feed_prefix_with(data, None)
    }

    /// [`ResponseParser::feed_prefix`], taking a head that repeats the last one `heads` holds
    /// from it (and keeping there the one parsed otherwise).
    pub fn feed_prefix_with(
        &mut self,
        data: &[u8],
        heads: Option<&mut HeadCache>,
    ) -> Result<(Feed, usize), ParseError> {
        let all = data.len();
        let mut head_used = 0;
        let mut rest = data;
        if let State::Head = self.state {
            let used = if self.partial_head.is_empty() {
                match self.parse_head_with(data, heads)? {
                    Some(n) => n,
                    None => {
                        self.stash(data)?;
                        self.wire_len += all as u64;
                        return Ok((Feed::More, all));
                    }
                }
            } else {
                let before = self.partial_head.len();
                self.stash(data)?;
                let buf = std::mem::take(&mut self.partial_head);
                let parsed = self.parse_head(&buf);
                self.partial_head = buf;
                match parsed? {
                    Some(n) => n - before,
                    None => {
                        self.wire_len += all as u64;
                        return Ok((Feed::More, all));
                    }
                }
            };
            head_used = used;
            rest = &data[used..];
            if self.state == State::Done {
                self.wire_len += used as u64;
                return Ok((Feed::Done, used));
            }
        }
        let (fed, body_used) = match &mut self.state {
            State::Head => unreachable!("head parsed above"),
            State::Done if data.is_empty() => (Feed::Done, 0),
            State::Done => return Err(ParseError::Malformed),
            State::Body(Body::UntilClose) => {
                self.body_len += rest.len() as u64;
                (Feed::More, rest.len())
            }
            State::Body(Body::Length(remaining)) => {
                let n = (rest.len() as u64).min(*remaining);
                *remaining -= n;
                self.body_len += n;
                if *remaining == 0 {
                    self.state = State::Done;
                    (Feed::Done, n as usize)
                } else {
                    (Feed::More, n as usize)
                }
            }
            State::Body(Body::Chunked(_)) => self.feed_chunked(rest)?,
        };
        let used = head_used + body_used;
        self.wire_len += used as u64;
        Ok((fed, used))
    }

    /// How many of the next bytes on the connection are body bytes that need not be looked at
    /// (see [`ResponseParser::skip`]): the rest of a Content-Length body, everything up to the
    /// close for a close-delimited one (`u64::MAX`), the rest of a chunk's data when at least
    /// [`MIN_CHUNK_SKIP`] of it is left. 0 while the head, a chunk's framing or a smaller chunk
    /// is next: those bytes are read and parsed.
    pub fn skippable(&self) -> u64 {
        match self.state {
            State::Body(Body::Length(remaining)) => remaining,
            State::Body(Body::UntilClose) => u64::MAX,
            State::Body(Body::Chunked(Chunk::Data(rem))) if rem >= MIN_CHUNK_SKIP => rem,
            _ => 0,
        }
    }

    /// Counts `n` body bytes that were taken off the connection without being read (at most
    /// [`ResponseParser::skippable`]), exactly as feeding them would have.
    pub fn skip(&mut self, n: u64) -> Result<Feed, ParseError> {
        if n > self.skippable() {
            return Err(ParseError::Malformed);
        }
        self.wire_len += n;
        self.body_len += n;
        self.skipped += n;
        match &mut self.state {
            State::Body(Body::Length(remaining)) => {
                *remaining -= n;
                if *remaining == 0 {
                    self.state = State::Done;
                    return Ok(Feed::Done);
                }
            }
            State::Body(Body::Chunked(Chunk::Data(rem))) => {
                *rem -= n;
                if *rem == 0 {
                    self.state = State::Body(Body::Chunked(Chunk::DataCr));
                }
            }
            _ => {}
        }
        Ok(Feed::More)
    }

    /// The server closed the connection: completes a close-delimited body.
    pub fn eof(&mut self) -> Feed {
        if let State::Body(Body::UntilClose) = self.state {
            self.state = State::Done;
            return Feed::Done;
        }
        if self.state == State::Done {
            Feed::Done
        } else {
            Feed::More
        }
    }

    fn stash(&mut self, data: &[u8]) -> Result<(), ParseError> {
        if self.partial_head.len() + data.len() > MAX_HEAD {
            return Err(ParseError::Malformed);
        }
        self.partial_head.extend_from_slice(data);
        Ok(())
    }

    /// [`ResponseParser::parse_head`] through `heads`, unless this response's Server header is
    /// wanted.
    #[inline]
    fn parse_head_with(
        &mut self,
        buf: &[u8],
        heads: Option<&mut HeadCache>,
    ) -> Result<Option<usize>, ParseError> {
        let Some(heads) = heads.filter(|_| !self.want_server) else {
            return self.parse_head(buf);
        };
        if let Some((n, head, state)) = heads.lookup(buf, self.head_only) {
            (self.head, self.state) = (head, state);
            return Ok(Some(n));
        }
        let parsed = self.parse_head(buf)?;
        if let Some(n) = parsed {
            heads.store(&buf[..n], self.head, self.state, self.head_only);
        }
        Ok(parsed)
    }

    /// Parses a complete head from `buf` if it holds one; returns the head's length.
    ///
    /// A scanner for what a load generator needs rather than a general parser: the status line
    /// is checked in full and every field line must be `token ":" value`, but only the values
    /// of Content-Length, Transfer-Encoding, Connection (and Server, once) are read. Line ends
    /// are CRLF or a bare LF. Anything else is malformed.
    fn parse_head(&mut self, buf: &[u8]) -> Result<Option<usize>, ParseError> {
        let partial = |buf: &[u8]| {
            if buf.len() > MAX_HEAD {
                Err(ParseError::Malformed)
            } else {
                Ok(None)
            }
        };
        // Reject what cannot become a status line as soon as it arrives.
        let prefix = buf.len().min(STATUS_PREFIX.len());
        if buf[..prefix] != STATUS_PREFIX[..prefix] {
            return Err(ParseError::Malformed);
        }
        let Some(eol) = memchr::memchr(b'\n', buf) else {
            return partial(buf);
        };
        let (http11, status) = status_line(strip_cr(&buf[..eol]))?;
        let mut content_length: Option<u64> = None;
        let mut chunked = false;
        let mut conn_close = false;
        let mut conn_keep = false;
        let mut pos = eol + 1;
        let len = loop {
            let Some(nl) = memchr::memchr(b'\n', &buf[pos..]) else {
                return partial(buf);
            };
            let line = strip_cr(&buf[pos..pos + nl]);
            pos += nl + 1;
            if line.is_empty() {
                break pos;
            }
            let colon = memchr::memchr(b':', line).ok_or(ParseError::Malformed)?;
            let name = &line[..colon];
            if name.is_empty() || !name.iter().all(|&b| is_tchar(b)) {
                return Err(ParseError::Malformed);
            }
            let value = &line[colon + 1..];
            match name.len() {
                14 if name.eq_ignore_ascii_case(b"content-length") => {
                    let v = parse_u64(value).ok_or(ParseError::Malformed)?;
                    if content_length.is_some_and(|c| c != v) {
                        return Err(ParseError::Malformed);
                    }
                    content_length = Some(v);
                }
                17 if name.eq_ignore_ascii_case(b"transfer-encoding") => {
                    chunked = last_token_is(value, b"chunked");
                }
                10 if name.eq_ignore_ascii_case(b"connection") => {
                    for t in value.split(|&b| b == b',') {
                        let t = trim(t);
                        if t.eq_ignore_ascii_case(b"close") {
                            conn_close = true;
                        } else if t.eq_ignore_ascii_case(b"keep-alive") {
                            conn_keep = true;
                        }
                    }
                }
                6 if self.want_server && name.eq_ignore_ascii_case(b"server") => {
                    self.server = Some(String::from_utf8_lossy(trim(value)).into_owned());
                }
                _ => {}
            }
        };
        if len > MAX_HEAD {
            return Err(ParseError::Malformed);
        }
        let no_body =
            self.head_only || (100..200).contains(&status) || status == 204 || status == 304;
        let body = if no_body {
            None
        } else if chunked {
            Some(Body::Chunked(Chunk::Size {
                size: 0,
                seen_digit: false,
            }))
        } else if let Some(n) = content_length {
            Some(Body::Length(n))
        } else {
            Some(Body::UntilClose)
        };
        let framed = !matches!(body, Some(Body::UntilClose));
        self.head = Head {
            status,
            keep_alive: framed && !conn_close && (conn_keep || http11),
            head_len: len,
        };
        self.state = match body {
            None | Some(Body::Length(0)) => State::Done,
            Some(b) => State::Body(b),
        };
        Ok(Some(len))
    }

    /// Feeds chunked body bytes up to the end of the body; returns how many it took.
    fn feed_chunked(&mut self, data: &[u8]) -> Result<(Feed, usize), ParseError> {
        let State::Body(Body::Chunked(mut st)) = self.state else {
            unreachable!("only called in the chunked state")
        };
        let mut i = 0;
        while i < data.len() {
            st = match st {
                Chunk::Data(rem) => {
                    let take = rem.min((data.len() - i) as u64);
                    self.body_len += take;
                    i += take as usize;
                    let rem = rem - take;
                    if rem == 0 {
                        Chunk::DataCr
                    } else {
                        Chunk::Data(rem)
                    }
                }
                framing => {
                    i += 1;
                    match framing.after(data[i - 1])? {
                        Some(next) => next,
                        None => {
                            self.state = State::Done;
                            return Ok((Feed::Done, i));
                        }
                    }
                }
            };
        }
        self.state = State::Body(Body::Chunked(st));
        Ok((Feed::More, data.len()))
    }
}

impl Chunk {
    /// The state after the framing byte `b` (sizes, extensions, line ends, trailers: every
    /// state but `Data`, whose bytes are taken in bulk); `None` when `b` ended the body.
    #[inline]
    fn after(self, b: u8) -> Result<Option<Chunk>, ParseError> {
        Ok(Some(match self {
            Chunk::Data(_) => unreachable!("chunk data is taken in bulk"),
            Chunk::Size { size, seen_digit } => match b {
                b'0'..=b'9' | b'a'..=b'f' | b'A'..=b'F' => {
                    let d = (b as char).to_digit(16).unwrap_or(0) as u64;
                    let size = size
                        .checked_mul(16)
                        .and_then(|s| s.checked_add(d))
                        .ok_or(ParseError::Malformed)?;
                    Chunk::Size {
                        size,
                        seen_digit: true,
                    }
                }
                b';' | b' ' | b'\t' if seen_digit => Chunk::Ext { size },
                b'\r' if seen_digit => Chunk::SizeLf { size },
                _ => return Err(ParseError::Malformed),
            },
            Chunk::Ext { size } => {
                if b == b'\r' {
                    Chunk::SizeLf { size }
                } else {
                    Chunk::Ext { size }
                }
            }
            Chunk::SizeLf { size } => {
                if b != b'\n' {
                    return Err(ParseError::Malformed);
                }
                if size == 0 {
                    Chunk::Trailer {
                        at_line_start: true,
                    }
                } else {
                    Chunk::Data(size)
                }
            }
            Chunk::DataCr => {
                if b != b'\r' {
                    return Err(ParseError::Malformed);
                }
                Chunk::DataLf
            }
            Chunk::DataLf => {
                if b != b'\n' {
                    return Err(ParseError::Malformed);
                }
                Chunk::Size {
                    size: 0,
                    seen_digit: false,
                }
            }
            Chunk::Trailer { at_line_start } => {
                if b == b'\r' {
                    Chunk::TrailerLf { at_line_start }
                } else {
                    Chunk::Trailer {
                        at_line_start: false,
                    }
                }
            }
            Chunk::TrailerLf { at_line_start } => {
                if b != b'\n' {
                    return Err(ParseError::Malformed);
                }
                if at_line_start {
                    return Ok(None);
                }
                Chunk::Trailer {
                    at_line_start: true,
                }
            }
        }))
    }
}

const STATUS_PREFIX: &[u8] = b"HTTP/1.";

/// `HTTP/1.x SP 3DIGIT [SP reason]`: (HTTP/1.1 or later, status code).
fn status_line(line: &[u8]) -> Result<(bool, u16), ParseError> {
    let [b'H', b'T', b'T', b'P', b'/', b'1', b'.', minor @ (b'0' | b'1'), b' ', d0, d1, d2, rest @ ..] =
        line
    else {
        return Err(ParseError::Malformed);
    };
    if !(d0.is_ascii_digit() && d1.is_ascii_digit() && d2.is_ascii_digit()) {
        return Err(ParseError::Malformed);
    }
    let reason_ok = match rest {
        [] => true,
        [b' ', reason @ ..] => reason
            .iter()
            .all(|&b| b == b'\t' || (b >= b' ' && b != 0x7f)),
        _ => false,
    };
    if !reason_ok {
        return Err(ParseError::Malformed);
    }
    let code = u16::from(d0 - b'0') * 100 + u16::from(d1 - b'0') * 10 + u16::from(d2 - b'0');
    Ok((*minor == b'1', code))
}

fn strip_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// RFC 9110 `tchar`: the bytes a field name is made of.
#[inline]
fn is_tchar(b: u8) -> bool {
    TCHAR[b as usize]
}

const TCHAR: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 256 {
        let b = i as u8;
        t[i] = b.is_ascii_alphanumeric();
        i += 1;
    }
    let extra = b"!#$%&'*+-.^_`|~";
    let mut j = 0;
    while j < extra.len() {
        t[extra[j] as usize] = true;
        j += 1;
    }
    t
};

fn trim(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = s {
        s = rest;
    }
    s
}

fn parse_u64(v: &[u8]) -> Option<u64> {
    let v = trim(v);
    if v.is_empty() || v.len() > 19 {
        return None;
    }
    v.iter().try_fold(0u64, |acc, &b| {
        b.is_ascii_digit().then(|| acc * 10 + (b - b'0') as u64)
    })
}

fn last_token_is(v: &[u8], token: &[u8]) -> bool {
    v.split(|&b| b == b',')
        .next_back()
        .is_some_and(|t| trim(t).eq_ignore_ascii_case(token))
}

#[cfg(test)]
mod tests;
