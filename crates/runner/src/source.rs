//! Where a load comes from, as one type: this process's own generator, the scenario's
//! `[load] generators` (each its share, merged), or another benchctl binary on this machine
//! (the baseline side of an A/B run). Every source sends the same [`LoadSpec`] to the same URL
//! and gives the same thing back: the load's report and, from generators, each one's record.

use crate::against::BaselineGenerator;
use crate::error::RunError;
use crate::events::Observer;
use crate::generators::Generator;
use crate::Cancel;
use loadgen::json::LoadReport;
use loadgen::{LoadConfig, LoadSpec, StopReason, Target};
use report::GeneratorRecord;
use std::sync::Arc;

/// Who sends a load.
#[derive(Clone, Copy)]
pub(crate) enum LoadSource<'a> {
    /// The load generator in this process, its threads pinned to the scenario's loadgen CPUs.
    Local,
    /// The scenario's `[load] generators`, each its share of the load.
    Generators(&'a [Generator]),
    /// Another benchctl binary on this machine: an A/B run's baseline measured by its own
    /// generator.
    Baseline(&'a BaselineGenerator),
}

/// What every source needs besides the load itself.
pub(crate) struct Sending<'a> {
    /// The scenario's loadgen CPUs (on each generator's host, for generators).
    pub cpus: &'a [usize],
    pub run_id: &'a str,
    pub cancel: &'a Cancel,
    pub observer: &'a Arc<dyn Observer>,
    /// The length of the intervals the load is followed over (`None`: the generator's
    /// default). Generators on other hosts keep their default.
    pub interval: Option<std::time::Duration>,
}

/// A load's report and, when generators sent it, each one's record.
pub(crate) type Sent = (LoadReport, Vec<GeneratorRecord>);

impl LoadSource<'_> {
    /// Sends `load` to `url`: the report, or `None` when the run was cancelled during it.
    pub(crate) async fn send(
        self,
        url: &str,
        load: &LoadSpec,
        with: &Sending<'_>,
    ) -> Result<Option<Sent>, RunError> {
        match self {
            LoadSource::Baseline(g) => {
                let report =
                    crate::against::measure_with(g, load, with.cpus, url, with.cancel).await?;
                Ok(report.map(|r| (r, Vec::new())))
            }
            LoadSource::Generators(gens) => {
                let observer: &dyn Observer = with.observer.as_ref();
                crate::generators::measure(
                    gens,
                    url,
                    load,
                    with.cpus,
                    with.run_id,
                    with.cancel,
                    observer,
                )
                .await
            }
            LoadSource::Local => local(url, load, with).await,
        }
    }
}

/// The load sent by this process's generator on a blocking thread, its progress reported.
async fn local(url: &str, load: &LoadSpec, with: &Sending<'_>) -> Result<Option<Sent>, RunError> {
    let target = Target::parse(url).map_err(|e| RunError::Step(format!("{url}: {e}")))?;
    let mut cfg = LoadConfig::new(target, load.clone());
    cfg.cpus = Some(with.cpus.to_vec());
    cfg.threads = with.cpus.len().max(1);
    if let Some(i) = with.interval {
        cfg.interval = i;
    }
    let stop = with.cancel.stop_flag().clone();
    let observer = Arc::clone(with.observer);
    let planned = load.requests;
    let m = tokio::task::spawn_blocking(move || {
        loadgen::run_observed(cfg, &stop, &mut |n| observer.progress(n, planned))
    })
    .await
    .map_err(|e| RunError::Step(format!("the load generator panicked: {e}")))?
    .map_err(|e| RunError::Step(e.to_string()))?;
    Ok((m.stopped_early != Some(StopReason::Interrupted))
        .then(|| (LoadReport::from_measurement(&m), Vec::new())))
}
