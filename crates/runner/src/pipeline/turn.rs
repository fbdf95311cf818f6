//! What the steps of a load pass between them: what a load is of ([`LoadAt`]), what it
//! measured ([`Measured`]) and what became of it ([`Turn`]); and what an A/B run's look at its
//! comparison says ([`Look`]).

use loadgen::json::LoadReport;
use report::{AgainstStop, GeneratorRecord, Usage};
use std::collections::HashMap;

/// What one load is of: the round, the server, and the document with its load.
#[derive(Clone, Copy)]
pub(super) struct LoadAt<'a> {
    pub(super) round: u32,
    pub(super) server: &'a scenario::ServerSpec,
    pub(super) doc: &'a scenario::MaterializedDoc,
    pub(super) spec: &'a scenario::DocumentSpec,
}

/// One load as measured: the generator's report and the server's resource use; with `[load]
/// generators`, each one's part (the report is their merge).
pub(super) struct Measured {
    pub(super) load: LoadReport,
    pub(super) usage: Option<Usage>,
    pub(super) generators: Vec<GeneratorRecord>,
    /// The generator set the pace, as seen from beyond this load alone (a pair loaded
    /// together, whose CPU time together filled the generator's CPUs).
    pub(super) client_bound: bool,
}

/// What became of one load.
pub(super) enum Turn {
    /// Measured at the CPU share it ended with.
    Measured(Box<Measured>, Option<f64>),
    /// The server, or one it needs, died: these servers are unavailable from here on.
    Died(Vec<(usize, String)>),
    /// The run was stopped during the load, which is not kept.
    Stopped,
}

/// What an A/B run's look at its comparison says.
pub(super) enum Look {
    /// Another round.
    Go,
    /// No more rounds, and why (`None`: nothing left to compare).
    Stop(Option<AgainstStop>),
}

/// Per server and document, the CPU share headroom settled on; per container (baseline side,
/// server), the share it has now.
#[derive(Default)]
pub(super) struct ShareBook {
    pub(super) shares: HashMap<(usize, String), f64>,
    pub(super) applied: HashMap<(bool, usize), Option<f64>>,
}

/// What comes after a load.
pub(super) enum Flow {
    /// The next document.
    Next,
    /// This server is done for the round (it, or one it needs, is unavailable).
    NextServer,
    /// The run was stopped.
    Stop,
}
