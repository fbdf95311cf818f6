//! The labels every container and image benchctl makes carries, by which it finds them again.

/// Label every benchctl container carries; `gc` removes whatever has it.
pub const LABEL_OWNER: &str = "benchctl";
/// Label naming the run a container belongs to.
pub const LABEL_RUN: &str = "benchctl.run";
/// Label naming the server a container (or image) is for.
pub const LABEL_SERVER: &str = "benchctl.server";
/// Label holding the pid of the benchctl process that started a container, so a later run can
/// tell a leftover (owner gone) from a container of a run still going.
pub const LABEL_PID: &str = "benchctl.pid";
/// Label holding that process's start time (clock ticks since boot), so that a reused pid is
/// not taken for the owner.
pub const LABEL_PID_START: &str = "benchctl.pid-start";
/// Label naming the machine (its `/etc/machine-id`) of the process in [`LABEL_PID`]: on an
/// engine of another machine, a pid says nothing about whether its owner lives, so only the
/// machine that started a container judges it stale.
pub const LABEL_MACHINE: &str = "benchctl.machine";
