//! Whether a load was steady: its first and second halves compared interval by interval
//! ([`crate::timeline`]), and, when they differ beyond the noise of the intervals, a
//! [`Note::Unsteady`] that says how (a warm-up or a drift) and names the steady stretch.
//!
//! The method, on two per-interval series, requests/s and the median latency (Total time, or
//! the latency from the intended send time in constant-rate runs):
//! - A last interval shorter than half an interval is left out (its rate rests on too little
//!   time); with fewer than [`MIN_INTERVALS`] intervals left there is no judgement.
//! - The noise of a series is the spread of one interval about its neighbours: σ = 1.4826 ·
//!   median(|x[i+1] − x[i]|) / √2, a robust standard deviation that a step or a slow trend
//!   barely moves (it changes one difference, or all of them a little).
//! - The halves are the first and the last ⌊n/2⌋ intervals (the middle one of an odd count is
//!   in neither). A series moved when the halves' means differ by more than z standard errors
//!   (σ·√(1/k₁ + 1/k₂)) and by more than [`MIN_CHANGE`] of the larger mean: beyond chance, and
//!   large enough to matter. z is Student's t at 99.5% with n − 1 degrees of freedom, and at
//!   least 3 ([`standard_errors`]): σ from a handful of intervals is itself uncertain, so short
//!   loads need a larger difference (5.8 standard errors with 4 intervals, 3.25 with 10).
//! - An interval is at a level when each series that moved is within max(z·σ, [`BAND`] of the
//!   level) of it, σ here the noise of the stretch itself. A half is steady when at most one
//!   interval in four of it is not at its level, the median of its intervals (a busy machine
//!   has odd seconds).
//! - When every interval is at the whole load's level (its median, with its noise), nothing is
//!   flagged: the change is within the noise.
//! - The steady stretch grows from a steady second half backwards (or from a steady first half
//!   forwards) while the next interval is at that half's level; the longer one wins, and one
//!   that grew over the whole load names nothing (a half whose own noise is inflated by a ramp
//!   within it can do that).
//! - A change for the better (more requests/s, or lower latency) before a steady stretch that
//!   runs to the end is a warm-up; anything else is a drift.

use crate::stats::{Note, Recorder};
use std::ops::Range;
use std::time::Duration;

/// The figures the judgement reads and gives, which the report crate reads too.
pub use model::steady as figures;
pub use model::steady::{Pattern, Point, Shift, Window, MIN_INTERVALS};
/// Fewest standard errors by which the halves' means must differ.
pub const MIN_STANDARD_ERRORS: f64 = 3.0;
/// Smallest difference between the halves that is flagged, as a share of the larger mean.
pub const MIN_CHANGE: f64 = 0.10;
/// Least half-width of the band about a steady level, as a share of the level.
pub const BAND: f64 = 0.05;
/// A steady stretch may have one interval in this many away from its level (a second in which
/// the machine did something else).
const OUTLIER_ONE_IN: usize = 4;

/// How many standard errors apart the halves' means must be, for `n` intervals: Student's t
/// at 99.5% (two-sided 99%) with n − 1 degrees of freedom, and at least
/// [`MIN_STANDARD_ERRORS`] (which it is from 15 intervals on).
pub fn standard_errors(n: usize) -> f64 {
    const T995: [f64; 14] = [
        f64::INFINITY,
        63.657,
        9.925,
        5.841,
        4.604,
        4.032,
        3.707,
        3.499,
        3.355,
        3.250,
        3.169,
        3.106,
        3.055,
        3.012,
    ];
    T995.get(n.saturating_sub(1))
        .copied()
        .unwrap_or(MIN_STANDARD_ERRORS)
        .max(MIN_STANDARD_ERRORS)
}

/// σ of a series from the median of its successive differences (0 with fewer than two values).
fn noise_of(values: &[f64]) -> f64 {
    let mut diffs: Vec<f64> = values.windows(2).map(|w| (w[1] - w[0]).abs()).collect();
    if diffs.is_empty() {
        0.0
    } else {
        1.4826 * median(&mut diffs) / std::f64::consts::SQRT_2
    }
}

/// One per-interval series and its noise.
struct Series {
    values: Vec<Option<f64>>,
    noise: f64,
    /// Standard errors a difference must exceed ([`standard_errors`]).
    z: f64,
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

impl Series {
    fn new(values: Vec<Option<f64>>) -> Series {
        let present: Vec<f64> = values.iter().flatten().copied().collect();
        let noise = noise_of(&present);
        let z = standard_errors(values.len());
        Series { values, noise, z }
    }

    fn present(&self, r: Range<usize>) -> impl Iterator<Item = f64> + '_ {
        self.values[r].iter().flatten().copied()
    }

    /// The level of a stretch, the median of its values (which one odd interval does not
    /// move), and its own noise (the whole series' when it has fewer than three values: a
    /// quiet warm-up must not narrow the band of a busier steady stretch, nor the reverse).
    fn level(&self, r: Range<usize>) -> Option<(f64, f64)> {
        let v: Vec<f64> = self.present(r).collect();
        let noise = if v.len() >= 3 {
            noise_of(&v)
        } else {
            self.noise
        };
        let mut sorted = v;
        (!sorted.is_empty()).then(|| (median(&mut sorted), noise))
    }

    fn mean(&self, r: Range<usize>) -> Option<f64> {
        let (n, sum) = self
            .present(r)
            .fold((0usize, 0.0), |(n, s), v| (n + 1, s + v));
        (n > 0).then(|| sum / n as f64)
    }

    /// The halves' means differ beyond noise and by enough to matter.
    fn moved(&self, first: Range<usize>, second: Range<usize>) -> bool {
        let k1 = self.present(first.clone()).count();
        let k2 = self.present(second.clone()).count();
        let (Some(m1), Some(m2)) = (self.mean(first), self.mean(second)) else {
            return false;
        };
        if k1 < 2 || k2 < 2 {
            return false;
        }
        let d = (m2 - m1).abs();
        let se = self.noise * (1.0 / k1 as f64 + 1.0 / k2 as f64).sqrt();
        d > self.z * se && d > MIN_CHANGE * m1.abs().max(m2.abs())
    }

    /// Whether interval `i` is within max(z·σ, [`BAND`]) of a stretch's (level, σ).
    fn at_level(&self, i: usize, (level, noise): (f64, f64)) -> bool {
        match self.values[i] {
            None => true,
            Some(v) => (v - level).abs() <= (self.z * noise).max(BAND * level.abs()),
        }
    }
}

/// Ends the recorder's timeline with the measured part (`elapsed`) and judges it, by the
/// latency from the intended send time in constant-rate runs.
pub fn settle(rec: &mut Recorder, elapsed: Duration) -> Option<Note> {
    let corrected = rec.corrected.is_some();
    let t = rec.timeline.as_mut()?;
    t.close(elapsed);
    judge(&t.points(corrected), t.interval().as_secs_f64())
}

/// Judges a load's intervals (see the module's documentation); `None` when it was steady or
/// too short to say.
pub fn judge(points: &[Point], interval_s: f64) -> Option<Note> {
    let pts: Vec<&Point> = points.iter().filter(|p| p.counts(interval_s)).collect();
    let n = pts.len();
    if n < MIN_INTERVALS {
        return None;
    }
    let k = n / 2;
    let (first, second) = (0..k, n - k..n);
    let rate = Series::new(pts.iter().map(|p| Some(p.rate())).collect());
    let p50 = Series::new(pts.iter().map(|p| p.p50_us.map(|v| v as f64)).collect());
    let rate_moved = rate.moved(first.clone(), second.clone());
    let p50_moved = p50.moved(first.clone(), second.clone());
    let moved: Vec<&Series> = [(rate_moved, &rate), (p50_moved, &p50)]
        .into_iter()
        .filter_map(|(m, s)| m.then_some(s))
        .collect();
    if moved.is_empty() {
        return None;
    }
    let levels = |r: Range<usize>| -> Option<Vec<(f64, f64)>> {
        moved.iter().map(|s| s.level(r.clone())).collect()
    };
    let at_level =
        |i: usize, lv: &[(f64, f64)]| moved.iter().zip(lv).all(|(s, &l)| s.at_level(i, l));
    let steady = |r: Range<usize>, lv: &[(f64, f64)]| {
        let away = r.clone().filter(|&i| !at_level(i, lv)).count();
        away <= r.len() / OUTLIER_ONE_IN
    };
    // From a steady second half backwards, from a steady first half forwards.
    let suffix = levels(second.clone())
        .filter(|lv| steady(second.clone(), lv))
        .map(|lv| {
            let mut s = second.start;
            while s > 0 && at_level(s - 1, &lv) {
                s -= 1;
            }
            s
        });
    let prefix = levels(first.clone())
        .filter(|lv| steady(first.clone(), lv))
        .map(|lv| {
            let mut e = first.end;
            while e < n && at_level(e, &lv) {
                e += 1;
            }
            e
        });
    // Every interval within the band of the whole load's level: the change is in the noise.
    let whole = levels(0..n)?;
    if (0..n).all(|i| at_level(i, &whole)) {
        return None;
    }
    // A stretch that grew over the whole load names nothing (a half whose own noise is
    // inflated by a ramp within it can do that).
    let suffix = suffix.filter(|&s| s > 0);
    let prefix = prefix.filter(|&e| e < n);
    // The stretch, and the intervals before and after the change.
    let (window, before, after) = match (suffix, prefix) {
        (Some(s), Some(e)) if e > n - s => (Some(0..e), 0..e, e..n),
        (Some(s), _) => (Some(s..n), 0..s, s..n),
        (None, Some(e)) => (Some(0..e), 0..e, e..n),
        (None, None) => (None, first.clone(), second.clone()),
    };
    let shift = |s: &Series, moved: bool| -> Option<Shift> {
        if !moved {
            return None;
        }
        Some(Shift {
            before: s.mean(before.clone())?,
            after: s.mean(after.clone())?,
        })
    };
    let requests_per_s = shift(&rate, rate_moved);
    let p50_us = shift(&p50, p50_moved);
    let better = match (requests_per_s, p50_us) {
        (Some(r), _) => r.after > r.before,
        (None, Some(l)) => l.after < l.before,
        (None, None) => return None,
    };
    let ends_steady = window.as_ref().is_none_or(|w| w.end == n);
    Some(Note::Unsteady {
        pattern: if better && ends_steady {
            Pattern::WarmUp
        } else {
            Pattern::Drift
        },
        requests_per_s,
        p50_us,
        steady: window.map(|w| Window {
            from_s: pts[w.start].start_s,
            to_s: pts[w.end - 1].start_s + pts[w.end - 1].duration_s,
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whole-second intervals with these requests/s and median latencies (µs).
    fn series(rates: &[f64], p50s: &[u64]) -> Vec<Point> {
        rates
            .iter()
            .zip(p50s)
            .enumerate()
            .map(|(i, (&r, &l))| Point {
                start_s: i as f64,
                duration_s: 1.0,
                requests: r as u64,
                p50_us: Some(l),
                p99_us: Some(l * 3),
            })
            .collect()
    }

    /// A deterministic spread of ±`amp` (share) about 1: a fixed pseudo-random sequence.
    fn jitter(i: usize, amp: f64) -> f64 {
        let x = ((i as u64 * 2_654_435_761 + 12_345) % 1_000) as f64 / 999.0;
        1.0 + amp * (2.0 * x - 1.0)
    }

    fn flat(n: usize, level: f64, amp: f64) -> Vec<f64> {
        (0..n).map(|i| level * jitter(i, amp)).collect()
    }

    fn latencies(rates: &[f64], work: f64) -> Vec<u64> {
        // A closed loop: latency goes as concurrency over throughput.
        rates.iter().map(|r| (work / r) as u64).collect()
    }

    #[test]
    fn a_steady_load_is_not_flagged() {
        let rates = flat(10, 10_000.0, 0.01);
        assert_eq!(judge(&series(&rates, &latencies(&rates, 1e7)), 1.0), None);
    }

    /// splitmix64: a fixed, well-mixed sequence of uniform numbers in [0, 1).
    fn uniforms(seed: u64) -> impl FnMut() -> f64 {
        let mut state = seed;
        move || {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            (z ^ (z >> 31)) as f64 / 2f64.powi(64)
        }
    }

    #[test]
    fn a_noisy_but_flat_load_is_rarely_flagged() {
        // Loads whose intervals scatter at random about one level, for every length from the
        // shortest judged: the share flagged is the method's false alarm rate, about 1 in 20
        // at worst (short loads scattering by ±20-40% an interval), none from 30 intervals.
        for amp in [0.1, 0.2, 0.4] {
            for n in [4, 5, 8, 10, 30, 120] {
                let trials: usize = 300;
                let flagged = (0..trials)
                    .filter(|&seed| {
                        let mut u = uniforms(seed as u64 * 1_000 + n as u64);
                        let rates: Vec<f64> = (0..n)
                            .map(|_| 10_000.0 * (1.0 + amp * (2.0 * u() - 1.0)))
                            .collect();
                        let lat: Vec<u64> = (0..n)
                            .map(|_| (800.0 * (1.0 + amp * (2.0 * u() - 1.0))) as u64)
                            .collect();
                        judge(&series(&rates, &lat), 1.0).is_some()
                    })
                    .count();
                println!("±{amp} over {n} intervals: {flagged} of {trials} flagged");
                assert!(
                    flagged * 100 <= trials * 8,
                    "±{amp} over {n} intervals: {flagged} of {trials} flagged"
                );
            }
        }
        // And the common case, a few percent of scatter, never.
        for seed in 0..300 {
            let mut u = uniforms(seed);
            let rates: Vec<f64> = (0..10)
                .map(|_| 10_000.0 * (1.0 + 0.03 * (2.0 * u() - 1.0)))
                .collect();
            assert_eq!(
                judge(&series(&rates, &latencies(&rates, 1e7)), 1.0),
                None,
                "{rates:?}"
            );
        }
    }

    #[test]
    fn a_warm_up_is_flagged_with_the_steady_stretch_after_it() {
        let mut rates = vec![3_000.0, 6_000.0, 8_000.0];
        rates.extend(flat(7, 10_000.0, 0.01));
        let Some(Note::Unsteady {
            pattern,
            requests_per_s,
            p50_us,
            steady,
        }) = judge(&series(&rates, &latencies(&rates, 1e7)), 1.0)
        else {
            panic!("a warm-up goes unflagged");
        };
        assert_eq!(pattern, Pattern::WarmUp);
        assert_eq!(
            steady,
            Some(Window {
                from_s: 3.0,
                to_s: 10.0
            })
        );
        let r = requests_per_s.unwrap();
        assert!((r.before - 17_000.0 / 3.0).abs() < 1.0, "{r:?}");
        assert!(r.after > 9_900.0 && r.after < 10_100.0, "{r:?}");
        let l = p50_us.unwrap();
        assert!(l.before > l.after, "{l:?}");
    }

    #[test]
    fn one_slow_first_interval_of_four_is_a_warm_up() {
        let rates = [5_000.0, 10_000.0, 10_000.0, 10_100.0];
        let note = judge(&series(&rates, &[800; 4]), 1.0);
        let Some(Note::Unsteady {
            pattern, steady, ..
        }) = note
        else {
            panic!("not flagged: {note:?}");
        };
        assert_eq!(pattern, Pattern::WarmUp);
        assert_eq!(
            steady,
            Some(Window {
                from_s: 1.0,
                to_s: 4.0
            })
        );
    }

    #[test]
    fn a_drift_is_flagged_as_such() {
        // Throughput falls by 30% over the load, steadily.
        let rates: Vec<f64> = (0..12)
            .map(|i| 10_000.0 * (1.0 - 0.3 * i as f64 / 11.0) * jitter(i, 0.005))
            .collect();
        let note = judge(&series(&rates, &latencies(&rates, 1e7)), 1.0);
        let Some(Note::Unsteady {
            pattern,
            requests_per_s,
            ..
        }) = note
        else {
            panic!("a drift goes unflagged");
        };
        assert_eq!(pattern, Pattern::Drift);
        let r = requests_per_s.unwrap();
        assert!(r.after < r.before * 0.9, "{r:?}");
    }

    #[test]
    fn a_fall_after_a_steady_start_names_where_it_was_steady() {
        let mut rates = flat(6, 10_000.0, 0.01);
        rates.extend(flat(4, 6_000.0, 0.01));
        let note = judge(&series(&rates, &latencies(&rates, 1e7)), 1.0);
        let Some(Note::Unsteady {
            pattern, steady, ..
        }) = note
        else {
            panic!("not flagged: {note:?}");
        };
        assert_eq!(pattern, Pattern::Drift);
        assert_eq!(
            steady,
            Some(Window {
                from_s: 0.0,
                to_s: 6.0
            })
        );
    }

    #[test]
    fn latency_alone_can_move_at_a_constant_rate() {
        // An open-loop load: the rate is the schedule's, the latency climbs.
        let rates = flat(10, 1_000.0, 0.001);
        let lat: Vec<u64> = (0..10).map(|i| 1_000 + 400 * i as u64).collect();
        let Some(Note::Unsteady {
            pattern,
            requests_per_s,
            p50_us,
            ..
        }) = judge(&series(&rates, &lat), 1.0)
        else {
            panic!("rising latency goes unflagged");
        };
        assert_eq!(pattern, Pattern::Drift);
        assert!(requests_per_s.is_none());
        assert!(p50_us.unwrap().after > p50_us.unwrap().before);
    }

    #[test]
    fn too_few_intervals_get_no_judgement() {
        let rates = [1_000.0, 10_000.0, 10_000.0];
        assert_eq!(judge(&series(&rates, &[500, 100, 100]), 1.0), None);
        // A fourth interval cut short does not count.
        let mut pts = series(
            &[1_000.0, 10_000.0, 10_000.0, 10_000.0],
            &[500, 100, 100, 100],
        );
        pts[3].duration_s = 0.3;
        assert_eq!(judge(&pts, 1.0), None);
        pts[3].duration_s = 0.6;
        pts[3].requests = 6_000;
        assert!(judge(&pts, 1.0).is_some());
    }

    #[test]
    fn a_change_within_the_noise_band_is_not_flagged() {
        // 8% apart: below the smallest change worth flagging.
        let mut rates = flat(5, 10_000.0, 0.005);
        rates.extend(flat(5, 10_800.0, 0.005));
        assert_eq!(judge(&series(&rates, &[700; 10]), 1.0), None);
    }
}
