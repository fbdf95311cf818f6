//! An HTTP/1 connection slot as both engines keep it ([`super::h1`] over epoll,
//! [`super::uring`] over io_uring): what it is doing, the request it is on, and what it does
//! between requests (its constant-rate schedule, its tickets, its failures, its timers). The
//! engines differ only in how a request's bytes go out and come back, which they supply.

use super::worker::{Core, Request, Schedule, CONNECT_RETRY_PAUSE};
use crate::http::ResponseParser;
use crate::stats::FailureKind;
use std::cmp::Reverse;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

/// What a connection slot is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum State {
    /// Waiting for a timer: its constant-rate send time (`Some`), or a pause after a failed
    /// connect (`None`).
    Waiting(Option<Instant>),
    /// Writing the request: the socket is still connecting, or its buffer is full (epoll).
    Writing,
    /// The request is written (or, with io_uring, submitted); reading the response.
    Reading,
    /// The response is complete and the connection will not be reused: waiting for the
    /// server's FIN (or, over TLS, its close_notify), so that the server, not the generator,
    /// holds the TIME_WAIT state (as with ab).
    Draining,
    /// Done with its request; starts the next one once the current batch of events is handled.
    Queued,
    /// No tickets left (or the run is over): this slot is done.
    Finished,
}

/// A slot's part that does not depend on the engine.
pub(super) struct Slot {
    pub(super) state: State,
    pub(super) deadline: Option<Instant>,
    /// Requests written together in the current batch (1 unless pipelining), and how many of
    /// their responses have been recorded (see [`crate::pipeline`]).
    pub(super) batch: u32,
    pub(super) answered: u32,
    pub(super) parser: ResponseParser,
    pub(super) req: Request,
}

impl Slot {
    /// A slot waiting to start; `head_only`: its requests are HEAD.
    pub(super) fn new(head_only: bool, start: Instant) -> Slot {
        Slot {
            state: State::Waiting(None),
            deadline: None,
            batch: 1,
            answered: 0,
            parser: ResponseParser::new(head_only),
            req: Request::new(start, None, false, false),
        }
    }

    /// The reused connection turned out closed before any byte of the response came: the
    /// server legitimately dropped an idle connection.
    pub(super) fn stale(&self) -> bool {
        self.req.reused && !self.parser.started() && self.answered == 0
    }
}

/// An HTTP/1 worker's slots: the engine supplies its slots, how a request is sent and how a
/// socket is given up; the course of a slot between requests is the same for both.
pub(super) trait H1Slots {
    fn core_mut(&mut self) -> &mut Core;
    fn slot(&mut self, idx: usize) -> &mut Slot;
    fn slot_count(&self) -> usize;
    fn schedule(&mut self) -> &mut Schedule;
    fn queued(&mut self) -> &mut Vec<usize>;
    /// Sends the slot's current request at `now`, opening a connection first when it has none.
    fn send(&mut self, idx: usize, now: Instant);
    /// Gives up the slot's socket, if it has one.
    fn drop_socket(&mut self, idx: usize);
    /// The slot has no more requests to make: what becomes of its socket.
    fn retire(&mut self, idx: usize);

    /// Starts the slot's next request, or parks it until its constant-rate send time.
    fn next_request(&mut self, idx: usize, now: Instant) {
        if self.core_mut().sh.stop.load(Relaxed) {
            return self.finish(idx);
        }
        let start = self.core_mut().start;
        match self.schedule().next(start, now) {
            Ok(intended) => self.begin(idx, now, intended),
            Err(t) => {
                self.slot(idx).state = State::Waiting(Some(t));
                self.core_mut().timers.push(Reverse((t, idx)));
            }
        }
    }

    /// Takes the tickets of the slot's next request (sent at `intended` by the schedule) and
    /// sends it; finishes the slot when there are none.
    fn begin(&mut self, idx: usize, now: Instant, intended: Option<Instant>) {
        let Some((batch, req)) = self.core_mut().open_request(now, intended) else {
            return self.finish(idx);
        };
        let s = self.slot(idx);
        s.batch = batch;
        s.answered = 0;
        s.req = req;
        self.send(idx, now);
    }

    /// The slot's timer is due at `now`; true when it was still waiting for it.
    fn timer(&mut self, idx: usize, now: Instant) -> bool {
        let State::Waiting(intended) = self.slot(idx).state else {
            return false;
        };
        match intended {
            Some(t) => {
                self.begin(idx, now, Some(t));
                // Its connection was waiting for it: how late it left is the generator's own
                // lateness.
                let s = self.slot(idx);
                let measured = s.req.measured && s.state != State::Finished;
                self.core_mut().note_send_lag(measured, t, now);
            }
            None => self.next_request(idx, now),
        }
        true
    }

    /// A request failed: counts it (and the rest of its pipelined batch) by kind and moves the
    /// slot on.
    fn fail(&mut self, idx: usize, kind: FailureKind) {
        self.drop_socket(idx);
        let s = self.slot(idx);
        s.deadline = None;
        let (measured, unanswered) = (s.req.measured, s.batch.saturating_sub(s.answered));
        self.core_mut().fail_requests(measured, unanswered, kind);
        if matches!(kind, FailureKind::Connect | FailureKind::Generator) {
            // A target that refuses connections must not turn the slot into a spin.
            let t = Instant::now() + CONNECT_RETRY_PAUSE;
            self.slot(idx).state = State::Waiting(None);
            self.core_mut().timers.push(Reverse((t, idx)));
        } else {
            self.queue(idx);
        }
    }

    /// After the slot's response was recorded (it ended at `done`; `server_closed`: the
    /// server has closed its side): the next response of its pipelined batch, a failure when
    /// the server ended the batch early, or its next request when the connection is kept
    /// alive. `false`: none of these, and the engine closes or drains the connection.
    fn after_response(&mut self, idx: usize, done: Instant, server_closed: bool) -> bool {
        let core = self.core_mut();
        let (timeout, keep_alive) = (core.timeout, core.sh.cfg.load.keep_alive);
        let s = self.slot(idx);
        s.answered += 1;
        if s.answered < s.batch {
            // More responses of a pipelined batch are due on this connection.
            if crate::pipeline::next_response(s.parser.head.keep_alive, server_closed) {
                s.parser.reset(false);
                s.req.first_byte = None;
                s.deadline = Some(done + timeout);
            } else {
                // The server ends the connection with requests of the batch unanswered.
                self.fail(idx, FailureKind::Receive);
            }
            return true;
        }
        if keep_alive && s.parser.head.keep_alive {
            self.queue(idx);
            return true;
        }
        false
    }

    /// A reused keep-alive connection turned out to be closed before any byte of the response:
    /// the server legitimately dropped an idle connection. Retried once on a fresh connection,
    /// not counted (as ab does).
    fn stale(&mut self, idx: usize) {
        self.drop_socket(idx);
        let s = self.slot(idx);
        if s.req.retried {
            return self.fail(idx, FailureKind::Receive);
        }
        s.req.retried = true;
        self.send(idx, Instant::now());
    }

    fn queue(&mut self, idx: usize) {
        self.slot(idx).state = State::Queued;
        self.queued().push(idx);
    }

    fn finish(&mut self, idx: usize) {
        let s = self.slot(idx);
        if s.state != State::Finished {
            s.state = State::Finished;
            s.deadline = None;
            self.retire(idx);
            self.core_mut().active -= 1;
        }
    }

    /// Ends the requests whose deadline has passed (checked every tenth of the timeout, at
    /// most every 100 ms, rather than with a timer per request): a drained connection the
    /// server never closed is given up, a request still unanswered fails.
    fn expire(&mut self, now: Instant) {
        for idx in 0..self.slot_count() {
            let s = self.slot(idx);
            if s.deadline.is_none_or(|d| now < d) {
                continue;
            }
            s.deadline = None;
            match s.state {
                State::Draining => {
                    self.drop_socket(idx);
                    self.queue(idx);
                }
                State::Writing | State::Reading => self.fail(idx, FailureKind::Timeout),
                State::Waiting(_) | State::Queued | State::Finished => {}
            }
        }
    }

    /// When the measurement window has closed, the measured requests still waiting for their
    /// response (constant-rate runs only).
    fn count_unfinished(&mut self) {
        let mut waiting = Vec::new();
        for i in 0..self.slot_count() {
            let s = self.slot(i);
            if matches!(s.state, State::Writing | State::Reading) {
                waiting.push(s.req);
            }
        }
        self.core_mut().count_unfinished(waiting.iter());
    }
}
