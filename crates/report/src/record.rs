//! The results record: one versioned JSON document per run, holding everything a later report or
//! comparison needs (the scenario text and hash, host facts, each server's identity, and per
//! document and round the load generator's full [`LoadReport`](model::json::LoadReport) with its
//! histograms), so nothing has to be re-measured to re-render or re-compare a run. Its types
//! are the shared vocabulary's ([`model::record`]); this module keeps them as files.
//!
//! A run claims its file with [`RecordFile::create`] before it starts any work (so that two
//! runs given the same file cannot both believe they own it) and rewrites it after each server
//! and round with [`RecordFile::write`]: a reader sees either the previous complete document or
//! the new one, never a torn write, and a crash later in the run loses only the load in flight.

mod dir;
mod file;
mod host;
mod json;
pub use dir::{read_records, FolderRecords};
pub use file::RecordFile;
pub use host::host_facts;
pub use json::RecordIo;
/// The record's types are the shared vocabulary's; they keep their paths here.
pub use model::record::{
    fell_behind, is_client_bound, is_too_short, now_rfc3339, rfc3339, AgainstRecord, AgainstStop,
    EngineRecord, GeneratorRecord, HostFacts, Interval, LoadRecord, Looks, Protocol, RecordError,
    RunRecord, RunStatus, ScenarioRecord, ServerRecord, ServerStatus, Slowed, Usage,
    CLIENT_BOUND_SHARE, MIN_MEASURED_S, SCHEMA_VERSION, SHARE_USED_FULLY,
};
/// A machine's check, as a record keeps it.
pub use model::system::{Aspect, Finding, Level, SystemCheck};

#[cfg(test)]
mod tests {
    use super::file::tmp_path;
    use super::host::parse_cpuinfo;
    use super::*;
    use std::path::Path;

    #[test]
    fn cpuinfo_model_and_count() {
        let x86 = "processor\t: 0\nmodel name\t: AMD EPYC 7B13\nflags\t: fpu\n\n\
                   processor\t: 1\nmodel name\t: AMD EPYC 7B13\n";
        assert_eq!(parse_cpuinfo(x86), ("AMD EPYC 7B13".to_string(), 2));
        let arm = "processor\t: 0\nBogoMIPS\t: 50.00\n\nHardware\t: BCM2835\n";
        assert_eq!(parse_cpuinfo(arm), ("BCM2835".to_string(), 1));
        assert_eq!(parse_cpuinfo(""), ("unknown".to_string(), 0));
    }

    #[test]
    fn host_facts_are_read_from_this_machine() {
        let h = host_facts();
        assert!(h.cores >= 1);
        assert!(!h.kernel.is_empty());
        assert!(h.docker_version.is_none());
    }

    #[test]
    fn a_temporary_record_names_its_writer() {
        let tmp = tmp_path(Path::new("results/run-1.json"), "1234-5678");
        assert_eq!(tmp, Path::new("results/.run-1.json.1234-5678.tmp"));
        let name = tmp.file_name().unwrap().to_str().unwrap();
        assert_eq!(RecordFile::writer_of(name), Some("1234-5678"));
        assert_eq!(
            tmp_path(Path::new("x.json"), "12:34/5"),
            Path::new(".x.json.12-34-5.tmp")
        );
        // Not a record's temporary file, or one that names no writer.
        for other in [
            "run-1.json",
            ".run-1.json.tmp",
            ".run-1.json.12:34.tmp",
            "..tmp",
            ".x..tmp",
            ".benchctl-results-abc123.tmp",
        ] {
            assert_eq!(RecordFile::writer_of(other), None, "{other}");
        }
    }
}
