//! One request stream (RFC 9114, section 4.1): the request a client writes, and
//! [`ResponseReader`], which reads the response as it arrives and holds the server to the
//! stream's grammar: interim HEADERS, the final HEADERS, DATA, optional trailers, the end.

use crate::frame::{self, code, kind, FrameReader, Piece};
use crate::{qpack, Error};

/// Appends a request: its HEADERS frame (the pseudo-headers, then `headers`, names lower
/// case), and for a body of `body_len` bytes the header of its DATA frame (the body follows,
/// then the stream's end).
pub fn put_request(
    method: &str,
    scheme: &str,
    authority: &str,
    path: &str,
    headers: &[(&[u8], &[u8])],
    body_len: Option<u64>,
    out: &mut Vec<u8>,
) {
    let mut fields: Vec<(&[u8], &[u8])> = vec![
        (b":method", method.as_bytes()),
        (b":scheme", scheme.as_bytes()),
        (b":authority", authority.as_bytes()),
        (b":path", path.as_bytes()),
    ];
    fields.extend_from_slice(headers);
    let mut block = Vec::new();
    qpack::encode(&fields, &mut block);
    frame::put_headers(&block, out);
    if let Some(len) = body_len.filter(|&l| l > 0) {
        frame::put_header(kind::DATA, len, out);
    }
}

/// What [`ResponseReader::next`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum Event<'a> {
    /// An interim response (1xx), which a final one follows.
    Interim(u16),
    /// The final response's head: its status and declared length, if any.
    Head {
        status: u16,
        content_length: Option<u64>,
    },
    /// Part of the body, as it arrived.
    Body(&'a [u8]),
    /// The trailers (their fields are not kept): nothing but the stream's end may follow.
    Trailers,
}

/// Where the response is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Head,
    Body,
    Trailers,
}

/// Reads one response stream.
#[derive(Debug)]
pub struct ResponseReader {
    frames: FrameReader,
    state: State,
    content_length: Option<u64>,
    body: u64,
    max_field: usize,
    /// Whether the content-length names a body that is not sent (the response to a HEAD
    /// request, and a 304).
    bodiless: bool,
    /// Whether the final head's `server` field is kept, and the field once kept.
    keep_server: bool,
    server: Option<String>,
}

/// The last final or interim head a client's readers decoded, kept so that the next one with
/// the same bytes is taken from here after one comparison. A field section this crate decodes
/// references no dynamic table, so the same bytes always say the same; a server answering the
/// same request again sends the same section but for its `date` once a second, and decoding its
/// Huffman-coded literals is otherwise most of what reading a small response costs. One per
/// client worker, shared by all its streams; sections longer than [`Heads::MAX`] are decoded
/// every time.
#[derive(Debug, Default)]
pub struct Heads {
    block: Vec<u8>,
    max_field: usize,
    /// The head that `block` decoded to; `None` while nothing is kept.
    head: Option<(u16, Option<u64>)>,
}

impl Heads {
    /// Sections longer than this are not kept (the copy would be most of the saving).
    pub const MAX: usize = 1024;

    pub fn new() -> Heads {
        Heads::default()
    }

    fn lookup(&self, block: &[u8], max_field: usize) -> Option<(u16, Option<u64>)> {
        self.head
            .filter(|_| self.max_field == max_field && self.block[..] == *block)
    }

    fn store(&mut self, block: &[u8], max_field: usize, head: (u16, Option<u64>)) {
        if block.len() > Self::MAX {
            self.head = None;
            return;
        }
        self.block.clear();
        self.block.extend_from_slice(block);
        (self.max_field, self.head) = (max_field, Some(head));
    }
}

/// A malformed response: a stream error (H3_MESSAGE_ERROR).
fn malformed(what: impl Into<String>) -> Error {
    Error::Frame(code::H3_MESSAGE_ERROR, what.into())
}

impl ResponseReader {
    /// A reader that refuses a field section above `max_field_section` bytes (what the client
    /// announced as SETTINGS_MAX_FIELD_SECTION_SIZE) and a name or value above `max_field`.
    pub fn new(max_field_section: u64, max_field: usize) -> Self {
        ResponseReader {
            frames: FrameReader::new(max_field_section),
            state: State::Head,
            content_length: None,
            body: 0,
            max_field,
            bodiless: false,
            keep_server: false,
            server: None,
        }
    }

    /// The same, keeping the final head's `server` field for [`ResponseReader::take_server`].
    pub fn keeping_server(mut self) -> Self {
        self.keep_server = true;
        self
    }

    /// The final head's `server` field, when the reader was made to keep it and the head had
    /// one.
    pub fn take_server(&mut self) -> Option<String> {
        self.server.take()
    }

    /// The same, for the response to a HEAD request: its content-length is the length of a
    /// body it does not carry.
    pub fn for_head_request(mut self) -> Self {
        self.bodiless = true;
        self
    }

    /// The body's bytes so far.
    pub fn body_len(&self) -> u64 {
        self.body
    }

    /// The next event in `input`, which it advances past what it used; `None` once `input`
    /// is used up (feed the next bytes, or call [`ResponseReader::finish`] at the stream's end).
    pub fn next<'a>(&mut self, input: &mut &'a [u8]) -> Result<Option<Event<'a>>, Error> {
        self.next_with(input, None)
    }

    /// The same, taking a head from `heads` when its section repeats the last one decoded
    /// there, and keeping it there otherwise; what it returns is what [`ResponseReader::next`]
    /// would. A reader that keeps the `server` field decodes its heads every time.
    pub fn next_remembering<'a>(
        &mut self,
        input: &mut &'a [u8],
        heads: &mut Heads,
    ) -> Result<Option<Event<'a>>, Error> {
        self.next_with(input, Some(heads))
    }

    fn next_with<'a>(
        &mut self,
        input: &mut &'a [u8],
        mut heads: Option<&mut Heads>,
    ) -> Result<Option<Event<'a>>, Error> {
        loop {
            let Some(piece) = self.frames.next(input)? else {
                return Ok(None);
            };
            match (piece, self.state) {
                (Piece::Headers(block), State::Head) => {
                    let (status, content_length, server) = match heads.as_deref_mut() {
                        Some(heads) if !self.keep_server => {
                            let head = match heads.lookup(&block, self.max_field) {
                                Some(head) => head,
                                None => {
                                    let (status, length, _) = self.head(&block)?;
                                    heads.store(&block, self.max_field, (status, length));
                                    (status, length)
                                }
                            };
                            (head.0, head.1, None)
                        }
                        _ => self.head(&block)?,
                    };
                    if (100..200).contains(&status) {
                        return Ok(Some(Event::Interim(status)));
                    }
                    self.state = State::Body;
                    self.server = server;
                    self.bodiless |= status == 304;
                    self.content_length = content_length.filter(|_| !self.bodiless);
                    return Ok(Some(Event::Head {
                        status,
                        content_length,
                    }));
                }
                (Piece::Headers(block), State::Body) => {
                    qpack::decode(&block, self.max_field, |_, _| {})?;
                    self.state = State::Trailers;
                    return Ok(Some(Event::Trailers));
                }
                (Piece::Data(d), State::Body) => {
                    self.body += d.len() as u64;
                    if let Some(len) = self.content_length.filter(|&l| self.body > l) {
                        return Err(malformed(format!(
                            "a body longer than its content-length of {len}"
                        )));
                    }
                    if d.is_empty() {
                        continue;
                    }
                    return Ok(Some(Event::Body(d)));
                }
                (Piece::Other { kind: k, .. }, _) if k == kind::PUSH_PROMISE => {
                    return Err(Error::Frame(
                        code::H3_ID_ERROR,
                        "a PUSH_PROMISE, though no push was allowed".into(),
                    ))
                }
                (piece, state) => {
                    return Err(Error::Frame(
                        code::H3_FRAME_UNEXPECTED,
                        format!("{} in a response's {state:?}", name(&piece)),
                    ))
                }
            }
        }
    }

    /// At the stream's end: whether the response was whole (a final head, every frame
    /// complete, the body as long as its content-length said).
    pub fn finish(&self) -> Result<(), Error> {
        if self.state == State::Head {
            return Err(malformed("the stream ended before the response's head"));
        }
        if !self.frames.at_boundary() {
            return Err(Error::Frame(
                code::H3_FRAME_ERROR,
                "the stream ended within a frame".into(),
            ));
        }
        match self.content_length {
            Some(len) if len != self.body => Err(malformed(format!(
                "a body of {} bytes, though its content-length said {len}",
                self.body
            ))),
            _ => Ok(()),
        }
    }

    /// A head's status and content-length, checked: one `:status` of three digits, before
    /// every other field, no other pseudo-header, at most one content-length.
    /// Its `server` field too, when the reader keeps it.
    fn head(&self, block: &[u8]) -> Result<(u16, Option<u64>, Option<String>), Error> {
        let (mut status, mut length, mut bad, mut server) = (None, None, None, None);
        let mut regular = false;
        qpack::decode(block, self.max_field, |name, value| {
            if bad.is_some() {
                return;
            }
            if name == b":status" {
                let parsed = std::str::from_utf8(value)
                    .ok()
                    .filter(|v| v.len() == 3)
                    .and_then(|v| v.parse::<u16>().ok())
                    .filter(|s| (100..600).contains(s) && *s != 101);
                bad = match (status, parsed, regular) {
                    (Some(_), ..) => Some("two :status fields".to_string()),
                    (_, _, true) => Some(":status after a regular field".into()),
                    (_, None, _) => Some(format!(
                        ":status {:?} is not a status HTTP/3 allows",
                        String::from_utf8_lossy(value)
                    )),
                    (None, Some(s), false) => {
                        status = Some(s);
                        None
                    }
                };
            } else if name.first() == Some(&b':') {
                bad = Some(format!(
                    "pseudo-header {} in a response",
                    String::from_utf8_lossy(name)
                ));
            } else {
                regular = true;
                if self.keep_server && name == b"server" {
                    server = Some(String::from_utf8_lossy(value).into_owned());
                }
                if name == b"content-length" {
                    let v = std::str::from_utf8(value)
                        .ok()
                        .and_then(|v| v.parse::<u64>().ok());
                    bad = match (length, v) {
                        (_, None) => Some(format!(
                            "content-length {:?}",
                            String::from_utf8_lossy(value)
                        )),
                        (Some(a), Some(b)) if a != b => Some("two content-lengths".into()),
                        (_, v) => {
                            length = v;
                            None
                        }
                    };
                }
            }
        })?;
        if let Some(what) = bad {
            return Err(malformed(what));
        }
        let status = status.ok_or_else(|| malformed("a response head without :status"))?;
        Ok((status, length, server))
    }
}

/// A frame's name, for an error.
fn name(piece: &Piece<'_>) -> String {
    match piece {
        Piece::Headers(_) => "a HEADERS frame".into(),
        Piece::Data(_) => "a DATA frame".into(),
        Piece::Settings(_) => "a SETTINGS frame".into(),
        Piece::Goaway(_) => "a GOAWAY frame".into(),
        Piece::Other { kind, .. } => format!("a frame of type {kind:#x}"),
    }
}

#[cfg(test)]
mod tests;
