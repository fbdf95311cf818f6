//! Headroom: measuring a server with less CPU when the load generator, not the server, set the
//! pace. On a small machine the generator saturates its cores against a fast server long before
//! the server does; capping the server's CPU time (a share of a core) lowers what it can serve
//! until the generator keeps up, and its requests/s per core of that share is then the
//! server's own figure, comparable with another server's measured the same way.

/// Whether a run measures again, with a smaller CPU share, a server whose load left the
/// generator no headroom.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Headroom {
    /// Measure once, at the scenario's share (or none), whatever the generator did.
    #[default]
    Off,
    /// Lower the server's share until the generator has headroom (below [`TARGET`] of its
    /// cores), at most [`MAX_TRIES`] times per load.
    Auto,
}

/// The share of its cores below which the generator counts as having headroom.
pub const TARGET: f64 = 0.8;

/// Where a new share aims the generator: well below [`TARGET`], so that one step usually does.
const AIM: f64 = 0.6;

/// Measurements of one load before the last is kept as it is.
pub const MAX_TRIES: u32 = 5;

/// What one measurement says about headroom.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reading {
    /// The generator's CPU time over the measured part, as a share of its worker threads'
    /// cores (1.0: every thread busy all the time).
    pub generator: f64,
    /// Responses waited longer for the generator to read them than the server took to send
    /// them ([`loadgen::Note::GeneratorBound`]): the generator fell behind, whatever its CPU
    /// time says (the kernel's work for its sockets is not all counted there).
    pub lagging: bool,
    /// The server's CPU time over the measured part, in cores; `None` when Docker gave none.
    pub server_cores: Option<f64>,
    /// The share the server had (`None`: its whole cpuset).
    pub share: Option<f64>,
    /// How many CPUs the server's cpuset has (its share when it has none).
    pub cpuset_cores: f64,
}

/// The next, smaller share to measure the server with, or `None` when the generator had
/// headroom (or the share cannot go lower).
///
/// The generator's work is proportional to the requests the server serves, and those to the
/// CPU the server used, so capping the server at `used × AIM / generator` cores brings the
/// generator to about [`AIM`] of its cores. Each step lowers the share by at least 30% (a
/// saturated generator understates what the server could do, so one step may not be enough),
/// and never below `min_share`.
///
/// A server that leaves part of its share unused is not capped further: on a shared machine a
/// quota is a ceiling, not a guarantee, and chasing what the server got would only spiral
/// down. Its requests/s per core are taken over the CPU it used instead (see
/// `report::stats::Metric::RequestsPerServerCore`).
pub fn next_share(r: &Reading, min_share: f64) -> Option<f64> {
    if r.generator < TARGET && !r.lagging {
        return None;
    }
    // A lagging generator was saturated, however much CPU it was seen to use.
    let generator = if r.lagging {
        r.generator.max(1.0)
    } else {
        r.generator
    };
    let current = r.share.unwrap_or(r.cpuset_cores);
    let used = r.server_cores.unwrap_or(current).min(current);
    let next = (used * AIM / generator).min(current * 0.7).max(min_share);
    // Whole thousandths of a core.
    let next = (next * 1000.0).round() / 1000.0;
    (next < current).then_some(next)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(generator: f64, server_cores: Option<f64>, share: Option<f64>) -> Reading {
        Reading {
            generator,
            lagging: false,
            server_cores,
            share,
            cpuset_cores: 1.0,
        }
    }

    #[test]
    fn a_generator_with_headroom_keeps_the_share() {
        assert_eq!(next_share(&reading(0.79, Some(0.95), None), 0.05), None);
        assert_eq!(
            next_share(&reading(0.3, Some(0.24), Some(0.25)), 0.05),
            None
        );
        // However little of it the server used.
        assert_eq!(next_share(&reading(0.5, Some(0.3), None), 0.05), None);
    }

    #[test]
    fn a_saturated_generator_caps_the_server_at_what_it_used_scaled_to_the_aim() {
        // nginx used 0.5 of a core while the generator was at 100%: 0.5 × 0.6 = 0.3.
        assert_eq!(next_share(&reading(1.0, Some(0.5), None), 0.05), Some(0.3));
        // Used its whole core at 90%: 0.667, but at least 30% lower than the core it had.
        assert_eq!(
            next_share(&reading(0.9, Some(1.0), None), 0.05),
            Some(0.667)
        );
        assert_eq!(next_share(&reading(0.8, Some(1.0), None), 0.05), Some(0.7));
        // Without the server's CPU, from its share.
        assert_eq!(next_share(&reading(1.0, None, Some(0.5)), 0.05), Some(0.3));
        // A server that reports more than its share used no more than it.
        assert_eq!(
            next_share(&reading(1.0, Some(0.7), Some(0.5)), 0.05),
            Some(0.3)
        );
    }

    #[test]
    fn a_generator_that_fell_behind_is_saturated_whatever_its_cpu_time() {
        let mut r = reading(0.5, Some(0.5), None);
        assert_eq!(next_share(&r, 0.05), None);
        r.lagging = true;
        assert_eq!(next_share(&r, 0.05), Some(0.3));
    }

    #[test]
    fn the_share_never_goes_below_the_floor_and_stops_there() {
        assert_eq!(
            next_share(&reading(1.0, Some(0.05), None), 0.05),
            Some(0.05)
        );
        assert_eq!(
            next_share(&reading(1.0, Some(0.05), Some(0.05)), 0.05),
            None
        );
    }
}
