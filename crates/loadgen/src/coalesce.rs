//! Coalesced wake-ups: how long a worker that has caught up with the server sleeps before it
//! collects the responses that arrived meanwhile.
//!
//! A worker blocked in `epoll_wait` is woken by the server's own write: on the same machine the
//! server's CPU pays for that wake-up (on an idle CPU, an inter-processor interrupt; in a VM, an
//! exit to the hypervisor as well), once per response when the generator is faster than the
//! server. Measured against nginx on one core, that was a tenth of nginx's capacity, so a fast
//! generator got fewer requests/s out of the server than a slow one. A worker that sleeps on
//! its own timer instead is not on the socket's wait queue; the server's write then costs it
//! nothing, and the worker collects several responses per wake-up.
//!
//! Sleeping delays reading, never the measurement: response times come from the kernel's
//! receive stamps (see [`crate::sock`]). What a nap does change is when the connection's next
//! request goes out, so [`Coalesce::Auto`] bounds each nap to a fiftieth of the recent request
//! cycle (2%; on average a response waits half of that), caps it, and naps only when at least
//! one read that completes a response is expected per nap: with few connections, or a fast
//! server, it blocks as ab and wrk do. Reads, not responses, because what a nap saves is
//! wake-ups: a pipelined connection's 16 responses arrive in one read, and a nap that collects
//! one such read in two wakes the worker twice as often as blocking would.

use crate::config::Coalesce;
use std::time::{Duration, Instant};

/// Longest automatic nap.
pub const MAX_NAP: Duration = Duration::from_micros(200);
/// Shortest nap worth taking: below this, the timer costs as much as the wake-up it saves.
pub const MIN_NAP: Duration = Duration::from_micros(10);
/// A nap lasts at most this fraction of the recent request cycle.
pub const CYCLE_FRACTION: u32 = 50;
/// Responses observed before the automatic policy trusts its estimates.
const WARM: u32 = 64;
/// Completing reads per estimate of the interval between them.
const RATE_WINDOW: u32 = 64;

/// One worker's policy: how long to sleep when there is nothing to read.
#[derive(Debug, Clone)]
pub struct Napper {
    mode: Coalesce,
    /// Exponentially weighted mean of the request cycle (start to response complete), ns.
    cycle_ns: u64,
    /// Mean interval between this worker's reads that completed a response, over the last
    /// window, ns.
    gap_ns: u64,
    seen: u32,
    /// When the read that completed the last response observed was made.
    last_read: Option<Instant>,
    window_start: Option<Instant>,
    window_count: u32,
}

impl Napper {
    pub fn new(mode: Coalesce) -> Self {
        Napper {
            mode,
            cycle_ns: 0,
            gap_ns: u64::MAX,
            seen: 0,
            last_read: None,
            window_start: None,
            window_count: 0,
        }
    }

    /// Takes one completed request into the estimates: its cycle, and `read`, when the read
    /// that completed it was made (responses completed by one read share it).
    #[inline]
    pub fn observe(&mut self, cycle: Duration, read: Instant) {
        if self.mode != Coalesce::Auto {
            return;
        }
        let ns = cycle.as_nanos().min(u128::from(u64::MAX / 2)) as u64;
        if self.seen == 0 {
            self.cycle_ns = ns;
        } else {
            // Weight 1/16 for the newest: follows a change within a few dozen responses.
            self.cycle_ns = self.cycle_ns - self.cycle_ns / 16 + ns / 16;
        }
        self.seen = self.seen.saturating_add(1);
        if self.last_read == Some(read) {
            // Another response of the same read: no wake-up of its own.
            return;
        }
        self.last_read = Some(read);
        match self.window_start {
            None => self.window_start = Some(read),
            Some(start) => {
                self.window_count += 1;
                if self.window_count == RATE_WINDOW {
                    let span = read.saturating_duration_since(start).as_nanos();
                    self.gap_ns = (span / u128::from(RATE_WINDOW)) as u64;
                    self.window_start = Some(read);
                    self.window_count = 0;
                }
            }
        }
    }

    /// How long to sleep before looking for responses again; `None`: block in the poller.
    #[inline]
    pub fn nap(&self) -> Option<Duration> {
        match self.mode {
            Coalesce::Off => None,
            Coalesce::Nap(d) => Some(d),
            Coalesce::Auto => {
                if self.seen < WARM {
                    return None;
                }
                let d =
                    Duration::from_nanos(self.cycle_ns / u64::from(CYCLE_FRACTION)).min(MAX_NAP);
                (d >= MIN_NAP && d.as_nanos() >= u128::from(self.gap_ns)).then_some(d)
            }
        }
    }

    /// The longest a worker that waits for a batch of completions (the io_uring engine) may
    /// wait for it: a nap's bound, a fiftieth of the recent request cycle within
    /// [`MIN_NAP`]..=[`MAX_NAP`], once the estimates are warm. Unlike [`Self::nap`] it does not
    /// ask whether a response is due meanwhile: such a wait ends as soon as the batch is in,
    /// and past the cap as soon as one completion is (see the io_uring engine's `wait_for`),
    /// so it costs time only when fewer come. `None`: wait for one completion.
    pub fn batch_cap(&self) -> Option<Duration> {
        match self.mode {
            Coalesce::Off => None,
            Coalesce::Nap(d) => Some(d),
            Coalesce::Auto => {
                let d =
                    Duration::from_nanos(self.cycle_ns / u64::from(CYCLE_FRACTION)).min(MAX_NAP);
                (self.seen >= WARM && d >= MIN_NAP).then_some(d)
            }
        }
    }

    /// What a worker does before a poll that may wait up to `timeout`: `None`, block in the
    /// poller for it; otherwise look without waiting (a zero timeout), after sleeping a nap
    /// first when the last look found nothing (`caught_up`; then `Some(true)`). A worker that
    /// naps never blocks in the poller, so that no response has to wake it.
    pub fn before_poll(&self, caught_up: bool, timeout: Duration) -> Option<bool> {
        let nap = self.nap().filter(|_| !timeout.is_zero())?;
        if caught_up {
            std::thread::sleep(nap.min(timeout));
        }
        Some(caught_up)
    }

    /// Whether this worker may nap at all.
    pub fn enabled(&self) -> bool {
        self.mode != Coalesce::Off
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `n` completions of `cycle` each, `gap` apart.
    fn feed(p: &mut Napper, n: u32, cycle: Duration, gap: Duration) {
        let mut t = Instant::now();
        for _ in 0..n {
            p.observe(cycle, t);
            t += gap;
        }
    }

    #[test]
    fn a_batch_is_waited_for_a_fiftieth_of_the_cycle_whatever_the_gap() {
        let mut auto = Napper::new(Coalesce::Auto);
        assert_eq!(auto.batch_cap(), None, "not before the estimates are warm");
        // 2 ms cycles, responses 1 ms apart: no nap would collect one, a batch wait may.
        feed(
            &mut auto,
            WARM + 10,
            Duration::from_millis(2),
            Duration::from_millis(1),
        );
        assert_eq!(auto.nap(), None);
        assert_eq!(auto.batch_cap(), Some(Duration::from_micros(40)));
        // Long cycles: at most MAX_NAP; short ones: under MIN_NAP, none.
        let mut slow = Napper::new(Coalesce::Auto);
        feed(&mut slow, WARM, Duration::from_secs(1), Duration::ZERO);
        assert_eq!(slow.batch_cap(), Some(MAX_NAP));
        let mut fast = Napper::new(Coalesce::Auto);
        feed(&mut fast, WARM, Duration::from_micros(100), Duration::ZERO);
        assert_eq!(fast.batch_cap(), None);
        assert_eq!(Napper::new(Coalesce::Off).batch_cap(), None);
        let fixed = Coalesce::Nap(Duration::from_micros(70));
        assert_eq!(
            Napper::new(fixed).batch_cap(),
            Some(Duration::from_micros(70))
        );
    }

    #[test]
    fn off_never_naps() {
        let mut off = Napper::new(Coalesce::Off);
        feed(
            &mut off,
            1000,
            Duration::from_millis(5),
            Duration::from_micros(20),
        );
        assert_eq!(off.nap(), None);
        assert!(!off.enabled());
    }

    #[test]
    fn fixed_naps_from_the_start() {
        let d = Duration::from_micros(70);
        assert_eq!(Napper::new(Coalesce::Nap(d)).nap(), Some(d));
    }

    #[test]
    fn auto_naps_a_fiftieth_of_the_cycle_once_warm() {
        let mut p = Napper::new(Coalesce::Auto);
        // 100 connections at 40k responses/s: a 2.5 ms cycle, a response every 25 µs.
        feed(
            &mut p,
            WARM - 1,
            Duration::from_micros(2500),
            Duration::from_micros(25),
        );
        assert_eq!(p.nap(), None, "not before {WARM} responses");
        feed(
            &mut p,
            200,
            Duration::from_micros(2500),
            Duration::from_micros(25),
        );
        assert_eq!(p.nap(), Some(Duration::from_micros(50)));
    }

    #[test]
    fn auto_caps_the_nap() {
        let mut p = Napper::new(Coalesce::Auto);
        feed(
            &mut p,
            500,
            Duration::from_millis(100),
            Duration::from_micros(50),
        );
        assert_eq!(p.nap(), Some(MAX_NAP));
    }

    #[test]
    fn auto_blocks_when_a_nap_would_be_too_short() {
        // One connection against a fast server: a 60 µs cycle.
        let mut p = Napper::new(Coalesce::Auto);
        feed(
            &mut p,
            500,
            Duration::from_micros(60),
            Duration::from_micros(60),
        );
        assert_eq!(p.nap(), None);
    }

    #[test]
    fn auto_blocks_when_a_nap_would_collect_less_than_one_response() {
        // 10 connections to a slow server: a 10 ms cycle (nap 200 µs) but a response only every
        // millisecond.
        let mut p = Napper::new(Coalesce::Auto);
        feed(
            &mut p,
            500,
            Duration::from_millis(10),
            Duration::from_millis(1),
        );
        assert_eq!(p.nap(), None);
    }

    #[test]
    fn auto_counts_reads_not_the_responses_each_brings() {
        // 100 pipelined connections, 16 responses per read: a 40 ms cycle (nap 200 µs) and a
        // response every 25 µs, but a read only every 400 µs, half a read per nap.
        let mut p = Napper::new(Coalesce::Auto);
        let mut t = Instant::now();
        for _ in 0..200 {
            for _ in 0..16 {
                p.observe(Duration::from_millis(40), t);
            }
            t += Duration::from_micros(400);
        }
        assert_eq!(p.nap(), None);
        // Two such reads per nap: worth napping.
        for _ in 0..200 {
            for _ in 0..16 {
                p.observe(Duration::from_millis(40), t);
            }
            t += Duration::from_micros(100);
        }
        assert_eq!(p.nap(), Some(MAX_NAP));
    }

    #[test]
    fn auto_follows_a_change_in_the_cycle() {
        let mut p = Napper::new(Coalesce::Auto);
        feed(
            &mut p,
            500,
            Duration::from_micros(2500),
            Duration::from_micros(10),
        );
        assert_eq!(p.nap(), Some(Duration::from_micros(50)));
        // The server speeds up: 200 µs cycles leave a 4 µs nap, not worth taking.
        feed(
            &mut p,
            200,
            Duration::from_micros(200),
            Duration::from_micros(2),
        );
        assert_eq!(p.nap(), None);
    }
}
