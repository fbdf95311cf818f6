//! The bounds and defaults a scenario is held to.

use std::time::Duration;

/// CPU layout on the 2-core machines this runs on: servers on CPU 1, load generator on CPU 0.
pub const DEFAULT_SERVER_CPUS: &str = "1";
pub const DEFAULT_LOADGEN_CPUS: &str = "0";
/// Container memory limit when a server names none.
pub const DEFAULT_MEMORY: u64 = 1 << 30;
/// Docker refuses memory limits below 6 MiB.
pub const MIN_MEMORY: u64 = 6 << 20;
/// ab's default `-s`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// Containers cannot raise their open-files limit above 20,000; keep well below.
pub const MAX_CONCURRENCY: u32 = 10_000;
/// Names end up in container names and labels; Docker's DNS-label limit.
pub(super) const MAX_NAME_LEN: usize = 63;
/// The smallest CPU share a server may be given, in cores: below it the kernel's scheduling
/// period (100 ms, of which the server then runs under 5 ms) is what is measured.
pub const MIN_SERVER_SHARE: f64 = 0.05;

/// Most streams at once on one HTTP/2 connection a scenario may ask for: above what the servers
/// here allow (nginx 128, Apache, H2O and Varnish 100, Caddy 250) a client cannot open more.
pub const MAX_STREAMS: u32 = 1000;
