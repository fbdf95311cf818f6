//! What a worker hands the kernel, and when: how long each wait is and for how many
//! completions, the rounds in which queued requests start (a new connection in a submission
//! of its own), and the moments the requests are written.

use super::super::shared::Shared;
use super::super::slot::{H1Slots, State};
use super::super::worker::Core;
use super::conn::{split, OP_SEND};
use super::ring::{Cqe, Ring, Wait};
use super::{Slots, MAX_BATCH, OPENS_PER_ROUND, STARTS_PER_ROUND, STOP_CHECK};
use std::cmp::Reverse;
use std::time::{Duration, Instant};

impl Slots {
    /// How many completions the next wait is for, and how long it may take ([`wait_for`]).
    /// `caught_up`: the last look found no completion; `cqes`: completions already reaped,
    /// waiting to be handled.
    pub(super) fn wait(
        &mut self,
        now: Instant,
        next_watch: Instant,
        caught_up: bool,
        cqes: &[Cqe],
        batch_waits: bool,
    ) -> Wait {
        let busy = !self.queued.is_empty() || !self.rearm.is_empty() || !cqes.is_empty();
        let reading = self
            .conns
            .iter()
            .filter(|c| matches!(c.slot.state, State::Reading | State::Draining))
            .count();
        let waits = Waits {
            busy,
            reading,
            caught_up,
            fixed_nap: self.fixed_nap,
            batch_waits,
        };
        wait_for(&mut self.core, now, next_watch, waits)
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
                if !self.submit(ring, Wait::NONE) {
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
    pub(super) fn submit(&mut self, ring: &mut Ring, wait: Wait) -> bool {
        submit_or_stop(ring, &mut self.staged, wait, &self.core.sh)
    }
}

/// Hands `staged` to the kernel and waits as [`Ring::submit_and_wait`] does; a failure stops
/// the load with its reason, and says `false`.
pub(in crate::engine) fn submit_or_stop(
    ring: &mut Ring,
    staged: &mut Vec<io_uring::squeue::Entry>,
    wait: Wait,
    sh: &Shared,
) -> bool {
    match ring.submit_and_wait(staged, wait) {
        Ok(()) => true,
        Err(e) => {
            sh.note_first_error(|| format!("io_uring_enter failed: {e}"));
            sh.trigger_stop();
            false
        }
    }
}

/// What a worker's next wait depends on besides its clock and timers.
pub(in crate::engine) struct Waits {
    /// Work is waiting (a start, a receive to arm, a completion to handle): look, do not wait.
    pub(in crate::engine) busy: bool,
    /// Connections waiting for a response.
    pub(in crate::engine) reading: usize,
    /// The last look found no completion: the worker has caught up with the server.
    pub(in crate::engine) caught_up: bool,
    /// A fixed nap (`--coalesce nap:N`): every wait lasts it, collecting what came meanwhile.
    pub(in crate::engine) fixed_nap: bool,
    /// The ring can end a wait at a batch's bound once one completion is in
    /// ([`Ring::batch_waits`]).
    pub(in crate::engine) batch_waits: bool,
}

/// How the next wait goes: for a batch within the napper's cap once it says waiting pays (a
/// quarter of the connections waiting for a response, at most [`MAX_BATCH`]), else for one,
/// until the next thing due. Past the cap one completion ends the wait where the kernel can
/// say so; elsewhere the wait ends at the cap, and a wait that found nothing is followed by
/// one for a single completion, so that a slow server does not have the worker look again
/// every cap. A look without waiting asks for one completion with no time to wait: an enter
/// that asks for none would not run the ring's deferred work, and nothing would complete.
pub(in crate::engine) fn wait_for(
    core: &mut Core,
    now: Instant,
    next_watch: Instant,
    w: Waits,
) -> Wait {
    let look = Wait {
        want: 1,
        timeout: Duration::ZERO,
        batch: None,
    };
    if w.busy {
        return look;
    }
    let mut wake = (now + STOP_CHECK).min(next_watch);
    if let Some(Reverse((t, _))) = core.timers.peek() {
        wake = wake.min(*t);
    }
    if let Some(e) = core.end {
        wake = wake.min(e);
    }
    let until = wake.saturating_duration_since(now);
    let one = Wait {
        want: 1,
        timeout: until,
        batch: None,
    };
    match core.napper.batch_cap() {
        // A fixed nap, as the epoll engine takes it: once caught up, sleep it on the
        // worker's own timer, then look without waiting.
        Some(nap) if w.fixed_nap => {
            if w.caught_up && !until.is_zero() {
                core.rec.naps += 1;
                std::thread::sleep(nap.min(until));
            }
            look
        }
        Some(cap) if w.reading > 1 && (w.batch_waits || !w.caught_up) => {
            core.rec.naps += 1;
            let want = (w.reading / 4).clamp(1, MAX_BATCH);
            if w.batch_waits {
                Wait {
                    want,
                    timeout: until,
                    batch: Some(cap.min(until)),
                }
            } else {
                Wait {
                    want,
                    timeout: cap.min(until),
                    batch: None,
                }
            }
        }
        _ => one,
    }
}
