//! One load as a document ([`Job`]): where it goes, the load itself, the CPUs that make it and
//! when it starts. `benchctl load --job FILE` reads one; a run writes one for each of its
//! `[load] generators`. Both go through this type, so every field of the load reaches a
//! generator as the run meant it: there is no list of flags to keep in step with the load's
//! fields.

use crate::load::LoadSpec;
use serde::{Deserialize, Serialize};

/// The version of the job document this generator reads; a job names the one it was written
/// in, and one of another version is refused rather than half understood.
pub const JOB_VERSION: u32 = 1;

/// One load for one generator.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Job {
    /// [`JOB_VERSION`] when written.
    pub version: u32,
    /// Where the requests go: `http://HOST:PORT/PATH` or `https://...`.
    pub url: String,
    pub load: LoadSpec,
    /// The CPUs the generator's threads are pinned to, one thread each; none: one thread,
    /// wherever the system puts it.
    #[serde(default)]
    pub cpus: Vec<usize>,
    /// When the load starts, in Unix seconds by the generator's own clock; none: at once.
    #[serde(default)]
    pub start_at: Option<f64>,
}

impl Job {
    /// `load` sent to `url` at once, from one unpinned thread.
    pub fn new(url: impl Into<String>, load: LoadSpec) -> Job {
        Job {
            version: JOB_VERSION,
            url: url.into(),
            load,
            cpus: Vec::new(),
            start_at: None,
        }
    }
}
