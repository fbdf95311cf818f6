//! A wake-up at an exact instant for a worker blocked in its poller.
//!
//! `epoll_wait` takes its timeout in whole milliseconds (mio rounds up), so a worker that waits
//! for the next send time of a constant-rate schedule wakes up to a millisecond late, and the
//! request goes out that much after its intended time. The corrected latencies, measured from
//! the intended time, would then charge that lateness to the server: half a millisecond on
//! average, more than a fast server takes to answer. A `timerfd` has nanosecond resolution and no
//! timer slack; registered with the poller, it wakes the worker at the send time itself.

use mio::unix::SourceFd;
use mio::{Interest, Registry, Token};
use rustix::time::{Itimerspec, TimerfdClockId, TimerfdFlags, TimerfdTimerFlags, Timespec};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::{Duration, Instant};

/// A one-shot timer the poller reports as readable when it expires.
pub struct Alarm {
    fd: OwnedFd,
    /// The instant it is set for, until it fires or is set again.
    armed: Option<Instant>,
}

impl Alarm {
    /// A disarmed timer on the monotonic clock, registered with `registry` under `token`.
    pub fn new(registry: &Registry, token: Token) -> io::Result<Alarm> {
        let fd = rustix::time::timerfd_create(
            TimerfdClockId::Monotonic,
            TimerfdFlags::NONBLOCK | TimerfdFlags::CLOEXEC,
        )?;
        registry.register(&mut SourceFd(&fd.as_raw_fd()), token, Interest::READABLE)?;
        Ok(Alarm { fd, armed: None })
    }

    /// Sets the timer to fire at `at` (`now` is the caller's reading of the clock). Setting it
    /// again for the instant it is already set for costs nothing.
    pub fn set(&mut self, at: Instant, now: Instant) -> io::Result<()> {
        if self.armed == Some(at) {
            return Ok(());
        }
        // A zero it_value would disarm the timer: an instant already reached fires at once.
        let after = at
            .saturating_duration_since(now)
            .max(Duration::from_nanos(1));
        let spec = Itimerspec {
            it_interval: Timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: Timespec {
                tv_sec: after.as_secs() as _,
                tv_nsec: after.subsec_nanos().into(),
            },
        };
        rustix::time::timerfd_settime(&self.fd, TimerfdTimerFlags::empty(), &spec)?;
        self.armed = Some(at);
        Ok(())
    }

    /// Takes note that the poller reported the timer: it has fired and is disarmed.
    pub fn fired(&mut self) {
        let mut expirations = [0u8; 8];
        // Reading clears the expiration count. Nothing to read (the timer was set again since
        // it fired) is fine.
        let _ = rustix::io::read(&self.fd, &mut expirations);
        self.armed = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mio::{Events, Poll};

    const ALARM: Token = Token(7);

    fn wait_for_alarm(poll: &mut Poll, alarm: &mut Alarm, limit: Duration) -> Option<Instant> {
        let mut events = Events::with_capacity(4);
        let give_up = Instant::now() + limit;
        while Instant::now() < give_up {
            poll.poll(&mut events, Some(give_up - Instant::now()))
                .unwrap();
            if events.iter().any(|e| e.token() == ALARM) {
                alarm.fired();
                return Some(Instant::now());
            }
        }
        None
    }

    #[test]
    fn fires_at_the_instant_it_was_set_for_not_at_the_next_millisecond() {
        let mut poll = Poll::new().unwrap();
        let mut alarm = Alarm::new(poll.registry(), ALARM).unwrap();
        let mut late = Vec::new();
        for _ in 0..20 {
            let now = Instant::now();
            let at = now + Duration::from_micros(300);
            alarm.set(at, now).unwrap();
            // The poller's own timeout, a whole millisecond later, is only the backstop.
            let woke = wait_for_alarm(&mut poll, &mut alarm, Duration::from_secs(1))
                .expect("the alarm never fired");
            assert!(woke >= at, "woke {:?} early", at - woke);
            late.push(woke - at);
        }
        late.sort();
        // A millisecond-granular wait would be ~700 µs late; the alarm is late by the wake-up
        // latency of the machine alone.
        assert!(
            late[late.len() / 2] < Duration::from_micros(400),
            "{late:?}"
        );
    }

    #[test]
    fn an_instant_already_past_fires_at_once_and_setting_it_again_is_a_no_op() {
        let mut poll = Poll::new().unwrap();
        let mut alarm = Alarm::new(poll.registry(), ALARM).unwrap();
        let now = Instant::now();
        alarm.set(now - Duration::from_millis(5), now).unwrap();
        assert!(wait_for_alarm(&mut poll, &mut alarm, Duration::from_secs(1)).is_some());
        let at = Instant::now() + Duration::from_millis(20);
        alarm.set(at, Instant::now()).unwrap();
        alarm.set(at, Instant::now()).unwrap();
        assert_eq!(alarm.armed, Some(at));
        let woke = wait_for_alarm(&mut poll, &mut alarm, Duration::from_secs(1)).unwrap();
        assert!(woke >= at);
        assert_eq!(alarm.armed, None);
    }
}
