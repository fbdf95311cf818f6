//! What a worker hands the kernel, and when: how long each wait is and for how many
//! completions, the rounds in which queued requests start (a new connection in a submission
//! of its own), and the moments the requests are written.

use super::super::slot::{H1Slots, State};
use super::conn::{split, OP_SEND};
use super::ring::{Cqe, Ring};
use super::{Slots, MAX_BATCH, OPENS_PER_ROUND, STARTS_PER_ROUND, STOP_CHECK};
use std::cmp::Reverse;
use std::time::{Duration, Instant};

impl Slots {
    /// How many completions the next wait is for, and how long it may take: a batch within
    /// the napper's cap once it says waiting pays, else one, until the next thing due.
    /// `caught_up`: the last look found no completion. A look without waiting asks for one
    /// completion with no time to wait: an enter that asks for none would not run the ring's
    /// deferred work, and nothing would complete.
    pub(super) fn wait(
        &mut self,
        now: Instant,
        next_watch: Instant,
        caught_up: bool,
    ) -> (usize, Option<Duration>) {
        if !self.queued.is_empty() || !self.rearm.is_empty() {
            return (1, Some(Duration::ZERO));
        }
        let mut wake = (now + STOP_CHECK).min(next_watch);
        if let Some(Reverse((t, _))) = self.core.timers.peek() {
            wake = wake.min(*t);
        }
        if let Some(e) = self.core.end {
            wake = wake.min(e);
        }
        let until = wake.saturating_duration_since(now);
        let reading = self
            .conns
            .iter()
            .filter(|c| matches!(c.slot.state, State::Reading | State::Draining))
            .count();
        match self.core.napper.batch_cap() {
            // A fixed nap, as the epoll engine takes it: once caught up, sleep it on the
            // worker's own timer, then look without waiting.
            Some(nap) if self.fixed_nap => {
                if caught_up && !until.is_zero() {
                    self.core.rec.naps += 1;
                    std::thread::sleep(nap.min(until));
                }
                (1, Some(Duration::ZERO))
            }
            Some(cap) if reading > 1 => {
                self.core.rec.naps += 1;
                ((reading / 4).clamp(1, MAX_BATCH), Some(cap.min(until)))
            }
            _ => (1, Some(until)),
        }
    }

    /// The requests staged since the last submission go out now.
    pub(super) fn written(&mut self, now: Instant) {
        for idx in self.unsent.drain(..) {
            let c = &mut self.conns[idx];
            if c.unsent {
                c.wrote(now);
            }
        }
    }

    /// Starts the queued slots' next requests, at most [`STARTS_PER_ROUND`] of them and at
    /// most [`OPENS_PER_ROUND`] on new connections: the rest wait for the next round, which
    /// comes at once. One round holding thousands of connects would fill the server's accept
    /// queue before it could take one (the epoll engine's connects, a system call each, leave
    /// it that time), and what is staged for one submission stays small.
    ///
    /// Staging a request makes no system call, so the requests staged together share a start.
    /// A new connection is handed to the kernel on its own, between two reads of the clock:
    /// the kernel makes it (and, on loopback, sends its request) inside that submission, so
    /// its time starts when the worker gets to it, as on epoll, and not when a batch of them
    /// was handed over; else the kernel's work for the connections before it would count as
    /// the server's. What that submission completed goes to `cqes`, handled with the next
    /// batch; a request it sent is written (and its connection made) as it returned.
    pub(super) fn start_queued(&mut self, ring: &mut Ring, cqes: &mut Vec<Cqe>) {
        if self.queued.is_empty() {
            return;
        }
        let (mut opens, mut starts) = (0, 0);
        let mut now = Instant::now();
        let queued = std::mem::take(&mut self.queued);
        for (n, &idx) in queued.iter().enumerate() {
            let c = &self.conns[idx];
            if c.slot.state != State::Queued {
                continue;
            }
            let open = c.sock.is_none();
            if starts == STARTS_PER_ROUND || (open && opens == OPENS_PER_ROUND) {
                self.queued.extend_from_slice(&queued[n..]);
                return;
            }
            starts += 1;
            opens += usize::from(open);
            if open {
                now = Instant::now();
            }
            self.next_request(idx, now);
            if open && !self.staged.is_empty() {
                if !self.submit(ring, 0, None) {
                    return;
                }
                now = Instant::now();
                self.written(now);
                // Its send's completion is handled here; the rest wait for the batch.
                let from = cqes.len();
                ring.reap(cqes);
                let mut kept = from;
                for i in from..cqes.len() {
                    let cqe = cqes[i];
                    if !self.sent(cqe, now) {
                        cqes[kept] = cqe;
                        kept += 1;
                    }
                }
                cqes.truncate(kept);
            }
        }
    }

    /// A new connection's request, sent by `cqe` (seen at `now`): written, and the connection
    /// made, then. Its `send` is the one that posts its completion: on loopback it goes out
    /// inside the submission that made the connection; over a network once the handshake is
    /// done. Whether `cqe` was such a completion (a send's success: nothing else to do).
    pub(super) fn sent(&mut self, cqe: Cqe, now: Instant) -> bool {
        let (op, idx, generation) = split(cqe.data);
        if op != OP_SEND || cqe.res < 0 {
            return false;
        }
        let Some(c) = self.conns.get_mut(idx) else {
            return true;
        };
        if c.unsent && c.sock.is_some() && c.generation & 0xff_ffff == generation {
            c.wrote(now);
            if !c.connected {
                c.connected = true;
                self.core.sh.note_connected();
            }
        }
        true
    }

    /// Hands what is staged to the kernel and waits as [`Ring::submit_and_wait`] does; a
    /// failure stops the load with its reason, and says `false`.
    pub(super) fn submit(
        &mut self,
        ring: &mut Ring,
        want: usize,
        timeout: Option<Duration>,
    ) -> bool {
        match ring.submit_and_wait(&mut self.staged, want, timeout) {
            Ok(()) => true,
            Err(e) => {
                self.core
                    .sh
                    .note_first_error(|| format!("io_uring_enter failed: {e}"));
                self.core.sh.trigger_stop();
                false
            }
        }
    }
}
