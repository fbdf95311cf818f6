//! When a run measures what: its rounds, and for an A/B run the order of the servers in each
//! round (shuffled) and of the two sides of each server (ABBA, from a phase drawn per server),
//! when both sides get fresh containers, whether the time budget lets another
//! round start, and the rounds at which the paired comparison is looked at. A value worked out
//! before the run starts, with no engine or clock of its own: the run asks it, and its tests
//! need nothing else.

use report::Looks;
use std::time::Duration;

/// One side of an A/B run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Baseline,
    Candidate,
}

/// The rounds of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct Schedule {
    /// How many rounds at most.
    pub rounds: u32,
    /// An A/B run's part of it.
    pub against: Option<AbSchedule>,
}

/// How an A/B run's rounds go.
#[derive(Debug, Clone, PartialEq)]
pub struct AbSchedule {
    /// Every round after the first on fresh containers of both sides.
    pub fresh: bool,
    /// The time the rounds may take, from the first load.
    pub budget: Duration,
    /// The rounds (1-based) after which the comparison may stop the run.
    pub looks: Vec<u32>,
    /// Draws the servers' order in each round and each server's first side.
    pub seed: u64,
}

impl Schedule {
    /// `rounds` rounds of one side.
    pub fn plain(rounds: u32) -> Schedule {
        Schedule {
            rounds,
            against: None,
        }
    }

    /// An A/B run of at most `max_rounds`, looking at the comparison from `min_rounds` on as
    /// `looks` says; `seed` draws the order of servers and sides.
    pub fn against(
        max_rounds: u32,
        min_rounds: u32,
        looks: Looks,
        fresh: bool,
        budget: Duration,
        seed: u64,
    ) -> Self {
        Schedule {
            rounds: max_rounds,
            against: Some(AbSchedule {
                fresh,
                budget,
                looks: report::paired::look_rounds(min_rounds, max_rounds, looks),
                seed,
            }),
        }
    }

    /// The order of the sides of server `server` in round `round` (0-based): ABBA, baseline
    /// first in every other round and candidate first in the others, so that neither side is
    /// always the one measured on a machine warmed by the other. In an A/B run each server's
    /// first round starts with a side drawn from the seed; otherwise the baseline's.
    pub fn sides(&self, round: u32, server: usize) -> [Side; 2] {
        let phase = self
            .against
            .as_ref()
            .map_or(0, |a| mix(a.seed, u64::MAX, server as u64) & 1);
        if (u64::from(round) + phase) % 2 == 0 {
            [Side::Baseline, Side::Candidate]
        } else {
            [Side::Candidate, Side::Baseline]
        }
    }

    /// The order in which round `round` (0-based) measures `n` servers (their indices): in an
    /// A/B run a fresh shuffle each round, so that no server is always measured first, on a
    /// machine the others have not yet warmed, or last; otherwise the scenario's order.
    pub fn servers(&self, round: u32, n: usize) -> Vec<usize> {
        let mut order: Vec<usize> = (0..n).collect();
        if let Some(a) = &self.against {
            // Fisher-Yates, each draw from the seed, the round and the position.
            for i in (1..n).rev() {
                let j = (mix(a.seed, u64::from(round), i as u64) % (i as u64 + 1)) as usize;
                order.swap(i, j);
            }
        }
        order
    }

    /// Whether round `round` (0-based) starts on fresh containers of both sides.
    pub fn renews(&self, round: u32) -> bool {
        round > 0 && self.against.as_ref().is_some_and(|against| against.fresh)
    }

    /// Whether round `round` (0-based) may start, `elapsed` after the run started its servers,
    /// when the longest round so far took `longest`: none starts that would end beyond an A/B
    /// run's budget, even if it lasts as long as the slowest before it (a round on fresh
    /// containers, or one measured again at a smaller share).
    pub fn may_start(&self, round: u32, elapsed: Duration, longest: Duration) -> bool {
        match &self.against {
            Some(against) => round == 0 || elapsed + longest <= against.budget,
            None => true,
        }
    }

    /// Whether the comparison is looked at after round `round` (0-based).
    pub fn looks_after(&self, round: u32) -> bool {
        self.against
            .as_ref()
            .is_some_and(|against| against.looks.contains(&(round + 1)))
    }

    /// The next round (1-based) after round `round` (0-based) at which the comparison is
    /// looked at.
    pub fn next_look(&self, round: u32) -> Option<u32> {
        let against = self.against.as_ref()?;
        against.looks.iter().copied().find(|&r| r > round + 1)
    }
}

/// A well-mixed 64-bit value of `seed`, `a` and `b` (splitmix64's finaliser over their sum).
fn mix(seed: u64, a: u64, b: u64) -> u64 {
    let mut z = seed
        .wrapping_add(a.wrapping_mul(0x9e37_79b9_7f4a_7c15))
        .wrapping_add(b.wrapping_mul(0xbf58_476d_1ce4_e5b9));
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn against(fresh: bool) -> Schedule {
        Schedule::against(10, 4, Looks::Growing, fresh, Duration::from_secs(60), 7)
    }

    #[test]
    fn each_servers_sides_alternate_abba_from_a_drawn_side() {
        use Side::*;
        let mut firsts = std::collections::BTreeSet::new();
        for seed in 0..8 {
            let s = Schedule::against(10, 4, Looks::Growing, true, Duration::from_secs(60), seed);
            for server in 0..4 {
                let orders: Vec<[Side; 2]> = (0..4).map(|r| s.sides(r, server)).collect();
                let flip = |o: [Side; 2]| [o[1], o[0]];
                assert_eq!(orders[1], flip(orders[0]));
                assert_eq!(orders[2], orders[0]);
                assert_eq!(orders[3], orders[1]);
                firsts.insert(orders[0] == [Baseline, Candidate]);
            }
        }
        assert_eq!(firsts.len(), 2, "both sides are drawn to go first");
        let plain = Schedule::plain(3);
        assert_eq!(plain.sides(0, 1), [Baseline, Candidate]);
        assert_eq!(plain.sides(1, 1), [Candidate, Baseline]);
    }

    #[test]
    fn an_ab_run_shuffles_its_servers_each_round_and_a_plain_run_does_not() {
        let s = against(true);
        let orders: Vec<Vec<usize>> = (0..12).map(|r| s.servers(r, 4)).collect();
        for o in &orders {
            let mut sorted = o.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, [0, 1, 2, 3], "a permutation: {o:?}");
        }
        let firsts: std::collections::BTreeSet<usize> = orders.iter().map(|o| o[0]).collect();
        assert!(firsts.len() >= 3, "{orders:?}");
        // The same seed, the same orders: a schedule is a value.
        assert_eq!(against(true).servers(5, 4), orders[5]);
        assert_eq!(Schedule::plain(3).servers(2, 4), [0, 1, 2, 3]);
        assert_eq!(s.servers(0, 1), [0]);
        assert!(s.servers(0, 0).is_empty());
    }

    #[test]
    fn fresh_containers_from_the_second_round_of_an_ab_run_only() {
        assert!(!against(true).renews(0));
        assert!(against(true).renews(1));
        assert!(!against(false).renews(1));
        assert!(!Schedule::plain(3).renews(1));
    }

    #[test]
    fn no_round_starts_that_would_end_beyond_the_budget() {
        let s = against(true);
        let secs = Duration::from_secs;
        // The first always starts, whatever the clock says.
        assert!(s.may_start(0, secs(100), secs(100)));
        assert!(s.may_start(3, secs(40), secs(20)));
        assert!(!s.may_start(3, secs(41), secs(20)));
        // A run of one side has no budget.
        assert!(Schedule::plain(5).may_start(4, secs(1000), secs(1000)));
    }

    #[test]
    fn the_comparison_is_looked_at_on_its_rounds_only() {
        let s = against(true);
        let looks = &s.against.as_ref().unwrap().looks;
        assert_eq!(looks.first(), Some(&4));
        assert_eq!(looks.last(), Some(&10));
        assert!(!s.looks_after(2));
        assert!(s.looks_after(3));
        assert_eq!(s.next_look(3), looks.get(1).copied());
        assert_eq!(s.next_look(9), None);
        assert!(!Schedule::plain(10).looks_after(3));
    }
}
