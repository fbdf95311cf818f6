//! When a run measures what: its rounds, and for an A/B run the order of the two sides in each
//! round (ABBA), when both sides get fresh containers, whether the time budget lets another
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
    /// `looks` says.
    pub fn against(
        max_rounds: u32,
        min_rounds: u32,
        looks: Looks,
        fresh: bool,
        budget: Duration,
    ) -> Self {
        Schedule {
            rounds: max_rounds,
            against: Some(AbSchedule {
                fresh,
                budget,
                looks: report::paired::look_rounds(min_rounds, max_rounds, looks),
            }),
        }
    }

    /// The order of the sides in round `round` (0-based): baseline first in even rounds,
    /// candidate first in odd ones, so that neither side is always the one measured on a
    /// machine warmed by the other.
    pub fn order(round: u32) -> [Side; 2] {
        if round % 2 == 0 {
            [Side::Baseline, Side::Candidate]
        } else {
            [Side::Candidate, Side::Baseline]
        }
    }

    /// Whether round `round` (0-based) starts on fresh containers of both sides.
    pub fn renews(&self, round: u32) -> bool {
        round > 0 && self.against.as_ref().is_some_and(|against| against.fresh)
    }

    /// Whether round `round` (0-based) may start, `elapsed` after the first began, when the
    /// last one took `last`: none starts that would end beyond an A/B run's budget.
    pub fn may_start(&self, round: u32, elapsed: Duration, last: Duration) -> bool {
        match &self.against {
            Some(against) => round == 0 || elapsed + last <= against.budget,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn against(fresh: bool) -> Schedule {
        Schedule::against(10, 4, Looks::Growing, fresh, Duration::from_secs(60))
    }

    #[test]
    fn sides_alternate_abba() {
        let orders: Vec<[Side; 2]> = (0..4).map(Schedule::order).collect();
        use Side::*;
        assert_eq!(
            orders,
            [
                [Baseline, Candidate],
                [Candidate, Baseline],
                [Baseline, Candidate],
                [Candidate, Baseline]
            ]
        );
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
