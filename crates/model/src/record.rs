//! The results record's layout: one versioned JSON document per run ([`RunRecord`]) with
//! everything a later report or comparison needs, every load's full
//! [`LoadReport`](crate::json::LoadReport) included. What a record means (statistics,
//! comparisons, verdicts) and how it is kept as a file are the report crate's.

pub mod capacity;
mod host;
mod json;
pub mod overload;
mod schema;
pub use host::HostFacts;
pub use json::RecordError;
pub use schema::{
    fell_behind, is_client_bound, is_too_short, now_rfc3339, rfc3339, AgainstRecord, AgainstStop,
    EngineRecord, GeneratorRecord, Interval, LoadRecord, Looks, Protocol, RunRecord, RunStatus,
    ScenarioRecord, ServerRecord, ServerStatus, Slowed, Usage, CLIENT_BOUND_SHARE, MIN_MEASURED_S,
    SCHEMA_VERSION, SHARE_USED_FULLY,
};

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn rfc3339_formats_known_instants() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        // 2000-02-29 is a leap day of a century divisible by 400.
        let t = UNIX_EPOCH + Duration::from_secs(951_782_400 + 3_661);
        assert_eq!(rfc3339(t), "2000-02-29T01:01:01Z");
        let t = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        assert_eq!(rfc3339(t), "2023-11-14T22:13:20Z");
        // The last second of a year, then the first of the next.
        let t = UNIX_EPOCH + Duration::from_secs(1_735_689_599);
        assert_eq!(rfc3339(t), "2024-12-31T23:59:59Z");
        assert_eq!(rfc3339(t + Duration::from_secs(1)), "2025-01-01T00:00:00Z");
    }

    #[test]
    fn scenario_hash_is_sha256_of_the_text() {
        let s = ScenarioRecord::new("x", "scenarios/x.toml", "abc");
        assert_eq!(
            s.sha256,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
