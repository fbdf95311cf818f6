//! Where a series of nightly figures changed level: binary segmentation, each split tested by a
//! permutation test.
//!
//! A series (one figure of one server and document, night by night) is split where the
//! difference between the means before and after, in units of its standard error (Welch's t of
//! the two parts), is largest. The split is kept when a permutation test says a series of the
//! same values in random order rarely splits as well: the p-value is the share of
//! [`PERMUTATIONS`] shuffles (drawn from a fixed seed, so a page is the same every time it is
//! rendered) whose best split is at least as strong, counting the series itself. Each part is
//! then searched again, so a series may have several change points. A part shorter than twice
//! [`MIN_SEGMENT`] is not split: one odd night is an outlier, not a new level.
//!
//! The test assumes nights without a change are exchangeable (their order carries no
//! information); a slow drift breaks that and may be named as a change where it crossed most.

/// Shuffles per test.
pub const PERMUTATIONS: u32 = 999;

/// Fewest nights on either side of a change point.
pub const MIN_SEGMENT: usize = 2;

/// One change of level.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Split {
    /// Index of the first value at the new level.
    pub at: usize,
    /// The permutation test's p-value for this split within the part it was found in.
    pub p: f64,
}

/// The change points of `values`, in order, each with p at most `alpha`.
pub fn change_points(values: &[f64], alpha: f64) -> Vec<Split> {
    let mut found = Vec::new();
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    segment(values, 0, alpha, &mut rng, &mut found);
    found.sort_by_key(|s| s.at);
    found
}

fn segment(values: &[f64], offset: usize, alpha: f64, rng: &mut XorShift, out: &mut Vec<Split>) {
    if values.len() < 2 * MIN_SEGMENT {
        return;
    }
    let Some((at, observed)) = best_split(values) else {
        return;
    };
    let mut shuffled = values.to_vec();
    let mut as_strong = 0u32;
    for _ in 0..PERMUTATIONS {
        rng.shuffle(&mut shuffled);
        if best_split(&shuffled).is_some_and(|(_, t)| t >= observed) {
            as_strong += 1;
        }
    }
    let p = f64::from(as_strong + 1) / f64::from(PERMUTATIONS + 1);
    if p > alpha {
        return;
    }
    out.push(Split { at: offset + at, p });
    segment(&values[..at], offset, alpha, rng, out);
    segment(&values[at..], offset + at, alpha, rng, out);
}

/// The split with the largest |t| between the two parts, and that |t|; `None` when the values
/// are all equal.
fn best_split(values: &[f64]) -> Option<(usize, f64)> {
    let n = values.len();
    // Prefix sums make every split O(1).
    let mut sum = vec![0.0; n + 1];
    let mut sq = vec![0.0; n + 1];
    for (i, v) in values.iter().enumerate() {
        sum[i + 1] = sum[i] + v;
        sq[i + 1] = sq[i] + v * v;
    }
    let total_var = (sq[n] - sum[n] * sum[n] / n as f64) / (n as f64 - 1.0);
    // A floor for the spread of a part whose values are equal, relative to the whole series'.
    let floor = (total_var.max(0.0) * 1e-6).max(f64::MIN_POSITIVE);
    let mut best: Option<(usize, f64)> = None;
    for k in MIN_SEGMENT..=n - MIN_SEGMENT {
        let (a, b) = (k as f64, (n - k) as f64);
        let (sa, sb) = (sum[k], sum[n] - sum[k]);
        let (qa, qb) = (sq[k], sq[n] - sq[k]);
        let (ma, mb) = (sa / a, sb / b);
        // Pooled variance of the two parts around their own means.
        let within = ((qa - sa * ma) + (qb - sb * mb)).max(0.0) / (n as f64 - 2.0);
        let t = (ma - mb).abs() / (within.max(floor) * (1.0 / a + 1.0 / b)).sqrt();
        if best.is_none_or(|(_, bt)| t > bt) {
            best = Some((k, t));
        }
    }
    best.filter(|&(_, t)| t > 0.0)
}

/// A small deterministic generator for the shuffles (xorshift64*).
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Fisher-Yates.
    fn shuffle(&mut self, v: &mut [f64]) {
        for i in (1..v.len()).rev() {
            let j = (self.next() % (i as u64 + 1)) as usize;
            v.swap(i, j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Normal noise by Box-Muller from the same generator as the shuffles, on its own seed.
    fn noise(rng: &mut XorShift) -> f64 {
        let u = |r: &mut XorShift| ((r.next() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
        let (a, b) = (u(rng), u(rng));
        (-2.0 * a.ln()).sqrt() * (std::f64::consts::TAU * b).cos()
    }

    fn series(rng: &mut XorShift, n: usize, sd: f64, step_at: usize, step: f64) -> Vec<f64> {
        (0..n)
            .map(|i| sd * noise(rng) + if i >= step_at { step } else { 0.0 })
            .collect()
    }

    #[test]
    fn a_clear_step_is_found_where_it_is() {
        let v = [1.0, 1.02, 0.99, 1.01, 1.0, 0.9, 0.91, 0.89, 0.9, 0.92];
        let found = change_points(&v, 0.05);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].at, 5);
        assert!(found[0].p <= 0.02, "{found:?}");
    }

    #[test]
    fn flat_and_constant_series_have_none() {
        assert!(change_points(&[3.0; 12], 0.05).is_empty());
        assert!(change_points(&[1.0, 2.0, 1.0], 0.05).is_empty());
        assert!(change_points(&[], 0.05).is_empty());
    }

    #[test]
    fn two_steps_are_both_found() {
        let mut v = vec![1.0; 8];
        v.extend([1.2; 8]);
        v.extend([0.9; 8]);
        for (i, x) in v.iter_mut().enumerate() {
            *x += 0.01 * ((i * 7 % 5) as f64 - 2.0);
        }
        let at: Vec<usize> = change_points(&v, 0.05).iter().map(|s| s.at).collect();
        assert_eq!(at, [8, 16]);
    }

    #[test]
    fn one_outlier_night_is_not_a_change() {
        let v = [1.0, 1.01, 0.99, 1.0, 1.02, 0.99, 1.0, 1.01, 0.99, 0.7];
        assert!(change_points(&v, 0.05).is_empty());
    }

    /// Over many simulated series of ten nights with 3% noise: how often a change is named where
    /// there is none (14 of these 200 series: the test's 5% per split, a little more for the
    /// parts searched again), and how often a 10% step at night 6 is found exactly there (162 of
    /// 200). Ten nights are few: a permutation test of ten values cannot go far below p = 0.01.
    #[test]
    fn false_alarms_are_rare_and_a_step_of_three_sds_is_found() {
        let mut rng = XorShift(42);
        let trials = 200;
        let mut false_alarms = 0;
        let mut found = 0;
        for _ in 0..trials {
            if !change_points(&series(&mut rng, 10, 0.03, 10, 0.0), 0.05).is_empty() {
                false_alarms += 1;
            }
            let hits = change_points(&series(&mut rng, 10, 0.03, 5, -0.10), 0.05);
            if hits.iter().any(|s| s.at == 5) {
                found += 1;
            }
        }
        assert!(false_alarms <= trials / 10, "{false_alarms} of {trials}");
        assert!(found >= trials * 3 / 4, "{found} of {trials}");
    }
}
