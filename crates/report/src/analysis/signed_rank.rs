//! The Hodges-Lehmann estimate of a centre and its interval from Wilcoxon's signed-rank test:
//! an interval that holds for heavy-tailed values, where one wild value widens a t-interval
//! (its standard deviation) but moves this one by one rank.
//!
//! Of `n` values, the `M = n(n + 1) / 2` Walsh averages `(x_i + x_j) / 2`, `i <= j`, are sorted;
//! their median is the estimate (Hodges and Lehmann 1963), and the interval at two-sided level
//! `alpha` runs from the `k`-th smallest to the `k`-th largest, where `k - 1` is the largest
//! count whose lower tail under the signed-rank test's null distribution is at most `alpha / 2`
//! (Hollander and Wolfe, *Nonparametric Statistical Methods*, 3.2). The distribution is counted
//! exactly up to [`EXACT_UP_TO`] values and taken as normal beyond. The interval holds for any
//! distribution symmetric about its centre; it needs no variance at all.
//!
//! With few values the level cannot be reached: `n` values give no interval below
//! `alpha = 2 / 2^n` (the chance that all signs agree), so at the small levels of a run's many
//! looks and metrics an interval needs some ten values or more.

use statrs::distribution::{ContinuousCDF, Normal};

/// Up to this many values the null distribution is counted exactly.
pub const EXACT_UP_TO: usize = 200;

/// The estimate and its interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HlInterval {
    pub n: usize,
    /// The median of the Walsh averages.
    pub estimate: f64,
    /// Infinite (both ends) when `n` values cannot reach the level.
    pub low: f64,
    pub high: f64,
    /// The rank of the interval's ends among the Walsh averages, from either end; 0 when there
    /// is no interval.
    pub k: usize,
}

/// P(T <= t) for t = 0 ..= n(n+1)/2, T the signed-rank statistic of `n` values with no ties
/// and no zeros under the null hypothesis (each sign + or - alike).
fn lower_tail(n: usize) -> Vec<f64> {
    let m = n * (n + 1) / 2;
    // ways[s]: subsets of 1..=n with sum s, scaled by 2^-n as they are built so none overflows.
    let mut ways = vec![0.0f64; m + 1];
    ways[0] = 1.0;
    let mut top = 0;
    for r in 1..=n {
        top += r;
        for s in (0..=top).rev() {
            let with = if s >= r { ways[s - r] } else { 0.0 };
            ways[s] = (ways[s] + with) * 0.5;
        }
    }
    let mut acc = 0.0;
    ways.iter()
        .map(|w| {
            acc += w;
            acc
        })
        .collect()
}

/// The interval's rank `k` for `n` values at two-sided level `alpha`: the largest `k` with
/// P(T <= k - 1) <= alpha / 2; 0 when even k = 1 exceeds it.
pub fn critical_rank(n: usize, alpha: f64) -> usize {
    if n == 0 {
        return 0;
    }
    if n <= EXACT_UP_TO {
        let tail = lower_tail(n);
        // tail[k - 1] <= alpha / 2 for k = 1, 2, ...: count how many.
        return tail.iter().take_while(|p| **p <= alpha / 2.0).count();
    }
    let nf = n as f64;
    let mean = nf * (nf + 1.0) / 4.0;
    let sd = (nf * (nf + 1.0) * (2.0 * nf + 1.0) / 24.0).sqrt();
    let z = Normal::standard().inverse_cdf(1.0 - alpha / 2.0);
    // P(T <= k - 1) ~ Phi((k - 1 + 0.5 - mean) / sd) <= alpha / 2.
    let k = (mean - z * sd + 0.5).floor();
    if k < 1.0 {
        0
    } else {
        k as usize
    }
}

/// The Hodges-Lehmann estimate of `values` and its signed-rank interval at two-sided level
/// `alpha`; `None` with fewer than two values or any that is not finite.
pub fn hodges_lehmann(values: &[f64], alpha: f64) -> Option<HlInterval> {
    let n = values.len();
    if n < 2 || values.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let mut walsh = Vec::with_capacity(n * (n + 1) / 2);
    for i in 0..n {
        for j in i..n {
            walsh.push((values[i] + values[j]) / 2.0);
        }
    }
    walsh.sort_by(f64::total_cmp);
    let m = walsh.len();
    let estimate = if m % 2 == 1 {
        walsh[m / 2]
    } else {
        (walsh[m / 2 - 1] + walsh[m / 2]) / 2.0
    };
    let k = critical_rank(n, alpha).min(m.div_ceil(2));
    let (low, high) = if k == 0 {
        (f64::NEG_INFINITY, f64::INFINITY)
    } else {
        (walsh[k - 1], walsh[m - k])
    };
    Some(HlInterval {
        n,
        estimate,
        low,
        high,
        k,
    })
}

/// The smallest level `n` values can reach: 2 / 2^n.
pub fn smallest_level(n: usize) -> f64 {
    2.0 * 0.5f64.powi(n.min(1000) as i32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn critical_ranks_match_published_tables() {
        // Two-sided 5%: the lower critical value of T is k - 1 (Hollander & Wolfe, table A.4;
        // R's qsignrank(0.025, n) - 1 gives the same).
        for (n, t_crit) in [(6, 0), (8, 3), (10, 8), (15, 25), (20, 52), (30, 137)] {
            assert_eq!(critical_rank(n, 0.05), t_crit + 1, "n = {n}");
        }
        // Five values cannot reach 5% two-sided (2/32 = 6.25%).
        assert_eq!(critical_rank(5, 0.05), 0);
        assert_eq!(critical_rank(6, 0.05), 1);
        // The normal approximation meets the exact count where they overlap.
        let n = EXACT_UP_TO;
        let nf = n as f64;
        let mean = nf * (nf + 1.0) / 4.0;
        let sd = (nf * (nf + 1.0) * (2.0 * nf + 1.0) / 24.0).sqrt();
        let approx = (mean - 1.959_964 * sd + 0.5).floor() as usize;
        let exact = critical_rank(n, 0.05);
        assert!(approx.abs_diff(exact) <= 1, "{approx} vs {exact}");
        assert!(critical_rank(n + 1, 0.05) >= exact);
    }

    /// P(T <= t) by listing every sign pattern of n values.
    fn brute_tail(n: usize) -> Vec<f64> {
        let m = n * (n + 1) / 2;
        let mut count = vec![0u64; m + 1];
        for signs in 0u32..(1 << n) {
            let t: usize = (0..n).filter(|i| signs >> i & 1 == 1).map(|i| i + 1).sum();
            count[t] += 1;
        }
        let mut acc = 0;
        count
            .iter()
            .map(|c| {
                acc += c;
                acc as f64 / f64::from(1u32 << n)
            })
            .collect()
    }

    #[test]
    fn the_null_distribution_is_counted_exactly() {
        for n in 1..=12 {
            let (a, b) = (lower_tail(n), brute_tail(n));
            assert_eq!(a.len(), b.len());
            for (x, y) in a.iter().zip(&b) {
                assert!((x - y).abs() < 1e-12, "n = {n}: {a:?} vs {b:?}");
            }
        }
    }

    /// The interval is the set of shifts the two-sided signed-rank test does not reject: checked
    /// against the test itself, ranks counted by hand, on a grid of shifts.
    #[test]
    fn the_interval_is_the_set_of_shifts_the_test_keeps() {
        let x = [
            -0.952, 0.147, -1.022, -0.43, -0.62, -0.59, -0.49, 0.08, -0.01, -0.2, -0.77,
        ];
        let n = x.len();
        let tail = brute_tail(n);
        let m = n * (n + 1) / 2;
        for alpha in [0.2, 0.05, 0.01, 0.002] {
            let hl = hodges_lehmann(&x, alpha).unwrap();
            assert!(hl.k > 0);
            for step in 0..=400 {
                let theta = -1.2 + 1.5 * f64::from(step) / 400.0;
                if (theta - hl.low).abs() < 1e-6 || (theta - hl.high).abs() < 1e-6 {
                    continue;
                }
                let mut d: Vec<f64> = x.iter().map(|v| v - theta).collect();
                d.sort_by(|a, b| a.abs().total_cmp(&b.abs()));
                let t_plus: usize = (0..n).filter(|&i| d[i] > 0.0).map(|i| i + 1).sum();
                let extreme = t_plus.min(m - t_plus);
                let rejected = tail[extreme] <= alpha / 2.0;
                let inside = hl.low < theta && theta < hl.high;
                assert_eq!(inside, !rejected, "alpha {alpha}, theta {theta}: {hl:?}");
            }
        }
        // The estimate: the median of the 66 Walsh averages.
        let mut w = Vec::new();
        for i in 0..n {
            for j in i..n {
                w.push((x[i] + x[j]) / 2.0);
            }
        }
        w.sort_by(f64::total_cmp);
        let hl = hodges_lehmann(&x, 0.05).unwrap();
        assert_eq!(hl.estimate, (w[32] + w[33]) / 2.0);
    }

    #[test]
    fn one_wild_value_moves_the_interval_little() {
        let calm: Vec<f64> = (0..20)
            .map(|i| 0.01 * ((i * 7 % 11) as f64 - 5.0))
            .collect();
        let mut wild = calm.clone();
        wild[3] = -0.35;
        let a = hodges_lehmann(&calm, 0.01).unwrap();
        let b = hodges_lehmann(&wild, 0.01).unwrap();
        let width = |h: &HlInterval| h.high - h.low;
        assert!(width(&b) < 1.3 * width(&a), "{a:?} {b:?}");
        assert!((b.estimate - a.estimate).abs() < 0.01, "{a:?} {b:?}");
    }

    #[test]
    fn too_few_values_for_the_level_give_no_interval() {
        let hl = hodges_lehmann(&[0.1, 0.2, 0.15, 0.12], 0.01).unwrap();
        assert_eq!(hl.k, 0);
        assert!(hl.low.is_infinite() && hl.high.is_infinite());
        assert!(smallest_level(4) > 0.01 && smallest_level(8) < 0.01);
        assert_eq!(hodges_lehmann(&[1.0], 0.05), None);
        assert_eq!(hodges_lehmann(&[1.0, f64::NAN], 0.05), None);
    }
}
