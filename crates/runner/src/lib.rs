//! The run pipeline as a library: [`run`] takes a validated [`scenario::Plan`], builds and
//! starts every server through the orchestrator, verifies each serves the exact bytes,
//! measures every document round by round with the load generator, searches each server's
//! capacity at a latency target when asked ([`capacity`]), and keeps the results record on
//! disk after every load; with [`RunOptions::against`], an A/B run measures a stored record's
//! images beside the candidate's, round by round, until the paired comparison is decided
//! ([`against`]). The command line maps its arguments onto [`RunOptions`]
//! and prints what an [`Observer`] hears; tests call [`run`] in-process.
//!
//! What a run promises, whatever happens:
//! - nothing starts before everything that can be checked is: the options against the
//!   scenario, every server kind's manifest, the CPUs, and the results file, which the run
//!   claims exclusively (it never overwrites another run's record);
//! - every file it makes lives in one private folder ([`rundir`]) that goes with the run, or
//!   with a later run once its owner is gone;
//! - every container carries its owner and run, and none outlives the run: normal end, error,
//!   cancellation ([`Cancel`]), or a last-moment [`Cleanup::now`] from another thread;
//! - a measured load is never lost: the record is rewritten after each load, and if the disk
//!   refuses, kept in memory and saved elsewhere at the end ([`Saved`]);
//! - the outcome says plainly whether the run succeeded ([`RunOutcome::problems`]): a run that
//!   measured nothing, or lost a server the scenario needs, did not.
//!
//! Per-server-kind knowledge is not here: a kind is a folder (a Dockerfile and a
//! `server.toml` manifest, [`scenario::Manifest`]) that says which header names its version,
//! which options it takes and the environment variables they set, and what its container may
//! do; [`kinds_for`] finds them.

pub mod against;
pub mod cancel;
pub mod capacity;
mod error;
pub mod events;
pub mod fleet;
pub mod generators;
pub mod headroom;
pub mod hosts;
mod images;
mod options;
pub mod overload;
mod pipeline;
mod results;
pub mod rundir;
pub mod schedule;
mod source;
pub mod tls;

pub use against::Against;
pub use cancel::{Cancel, Cleanup, Leftover};
pub use events::{Event, Observer, Quiet, Recorder};
pub use headroom::Headroom;
pub use images::{build_image, push_image, push_targets};
pub use pipeline::{confinement, kinds_for, run, Problem, RunError, RunOptions, RunOutcome};
pub use results::Saved;
