//! HTTP/3's bytes without I/O, for a client that drives QUIC from its own loop:
//!
//! - [`varint`]: QUIC's variable-length integers (RFC 9000, section 16);
//! - [`frame`]: HTTP/3's frames (RFC 9114, section 7), written, and read incrementally from a
//!   stream's pieces however they are cut, a DATA payload handed on without a copy;
//! - [`control`]: the unidirectional streams of a connection, the client's and the server's;
//! - [`message`]: a request, and the reading of its response with the stream's grammar held
//!   (a head whose bytes repeat the last one's taken from [`message::Heads`]);
//! - [`qpack`]: field sections (RFC 9204) on the static table alone. A client that announces a
//!   dynamic table of capacity 0 (the default of `SETTINGS_QPACK_MAX_TABLE_CAPACITY`) gets
//!   only static references and literals back; literals may be Huffman-coded (RFC 7541,
//!   appendix B), and are decoded.
//!
//! Nothing here reads a socket or a clock: the QUIC state machine and the loop that feed these
//! functions are the caller's.

pub mod control;
pub mod frame;
pub mod message;
pub mod qpack;
pub mod varint;

/// What a peer sent that HTTP/3 does not allow, with the error code to close the connection or
/// reset the stream with ([`frame::code`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// A frame that is malformed, too large, or not allowed.
    #[error("HTTP/3 frame error {0:#x}: {1}")]
    Frame(u64, String),
    /// A field section that cannot be decoded (QPACK_DECOMPRESSION_FAILED).
    #[error("QPACK: {0}")]
    Qpack(String),
}

impl Error {
    /// The code to close the connection (or reset the stream) with.
    pub fn code(&self) -> u64 {
        match self {
            Error::Frame(code, _) => *code,
            Error::Qpack(_) => frame::code::QPACK_DECOMPRESSION_FAILED,
        }
    }
}
