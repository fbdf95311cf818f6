//! Why requests failed, by kind: counted on the hot path as a small `Copy` enum, kept as one
//! counter per kind.
//!
//! A leaf: the recorder and the timeline both count failures, and neither needs the other
//! for it.

use serde::{Deserialize, Serialize};

/// Why a request failed. Counted, never stringified on the hot path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// The TCP connection could not be established.
    Connect,
    /// Reading the response failed: reset, or the connection closed before the response ended.
    Receive,
    /// The body length differed from the first good response's (ab's "Length").
    Length,
    /// The request could not be written (ab's "Write errors").
    Write,
    /// No complete response within the per-request timeout.
    Timeout,
    /// The response could not be parsed as HTTP (ab's "Exceptions").
    Exception,
    /// HTTP/2: the server reset the stream (RST_STREAM) before its response ended.
    Reset,
    /// HTTP/2: the server's GOAWAY said it would not process the stream (its id was above
    /// the last one the GOAWAY named).
    GoAway,
    /// The generator could not open a connection for want of its own resources: file
    /// descriptors (EMFILE, ENFILE), local ports (EADDRNOTAVAIL) or kernel memory (ENOBUFS).
    /// The server never saw these requests: never counted against it.
    Generator,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Failure counts by kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failures {
    pub connect: u64,
    pub receive: u64,
    pub length: u64,
    pub write: u64,
    pub timeout: u64,
    pub exception: u64,
    /// HTTP/2 streams reset by the server (see [`FailureKind::Reset`]).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reset: u64,
    /// HTTP/2 streams refused by a GOAWAY (see [`FailureKind::GoAway`]).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub goaway: u64,
    /// The generator's own failures (see [`FailureKind::Generator`]); not in [`total`](Self::total).
    #[serde(default)]
    pub generator: u64,
}

impl Failures {
    #[inline]
    pub fn add(&mut self, kind: FailureKind) {
        match kind {
            FailureKind::Connect => self.connect += 1,
            FailureKind::Receive => self.receive += 1,
            FailureKind::Length => self.length += 1,
            FailureKind::Write => self.write += 1,
            FailureKind::Timeout => self.timeout += 1,
            FailureKind::Exception => self.exception += 1,
            FailureKind::Reset => self.reset += 1,
            FailureKind::GoAway => self.goaway += 1,
            FailureKind::Generator => self.generator += 1,
        }
    }

    pub fn merge(&mut self, other: &Failures) {
        self.connect += other.connect;
        self.receive += other.receive;
        self.length += other.length;
        self.write += other.write;
        self.timeout += other.timeout;
        self.exception += other.exception;
        self.reset += other.reset;
        self.goaway += other.goaway;
        self.generator += other.generator;
    }

    /// No failure of any kind.
    pub fn is_zero(&self) -> bool {
        *self == Failures::default()
    }

    /// ab's "Failed requests": every kind but write errors, which ab prints on a line of their
    /// own ("Write errors"), and the generator's own failures, which are not the server's.
    pub fn total(&self) -> u64 {
        self.connect
            + self.receive
            + self.length
            + self.timeout
            + self.exception
            + self.reset
            + self.goaway
    }
}
