//! A [`Job`] document turned into the generator's configuration.

use crate::config::{ConfigError, LoadConfig, Target};
pub use model::job::{Job, JOB_VERSION};

impl LoadConfig {
    /// The generator's configuration for this job: the URL parsed, the threads pinned to the
    /// job's CPUs. Fails on a version this generator does not read and on a URL it cannot
    /// send to; the load itself is checked by [`LoadConfig::validate`].
    pub fn from_job(job: &Job) -> Result<LoadConfig, ConfigError> {
        if job.version != JOB_VERSION {
            return Err(ConfigError::Option(format!(
                "a job of version {} (this generator reads version {JOB_VERSION})",
                job.version
            )));
        }
        let target = Target::parse(&job.url)?;
        let mut cfg = LoadConfig::new(target, job.load.clone());
        if !job.cpus.is_empty() {
            cfg.cpus = Some(job.cpus.clone());
        }
        cfg.threads = job.cpus.len().max(1);
        Ok(cfg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Coalesce, Engine, HttpVersion, LoadSpec, Method};
    use std::time::Duration;

    /// A load with every field away from its default.
    fn everything() -> LoadSpec {
        LoadSpec {
            requests: Some(2001),
            duration: Some(Duration::from_millis(1500)),
            concurrency: 7,
            keep_alive: true,
            version: HttpVersion::Http2,
            method: Method::Other("PURGE".to_string()),
            timeout: Duration::from_micros(2_500_001),
            warmup: Duration::from_millis(250),
            rate: Some(1234.5),
            rx_stamps: false,
            coalesce: Coalesce::Nap(Duration::from_micros(40)),
            min_duration: Some(Duration::from_secs(3)),
            streams: 16,
            engine: Engine::Epoll,
        }
    }

    #[test]
    fn a_job_reads_back_exactly_as_it_was_written() {
        let mut job = Job::new("http://127.0.0.1:8080/index.html", everything());
        job.cpus = vec![0, 2];
        job.start_at = Some(1_796_195_100.25);
        let text = serde_json::to_string_pretty(&job).unwrap();
        let back: Job = serde_json::from_str(&text).unwrap();
        assert_eq!(back, job);
        // Durations as people write them.
        assert!(text.contains("\"timeout\": \"2s 500ms 1us\""), "{text}");
    }

    #[test]
    fn a_job_names_its_cpus_as_threads() {
        let mut job = Job::new("http://127.0.0.1:8080/", everything());
        job.cpus = vec![0, 1];
        let cfg = LoadConfig::from_job(&job).unwrap();
        assert_eq!((cfg.threads, cfg.cpus), (2, Some(vec![0, 1])));
        let cfg = LoadConfig::from_job(&Job::new("http://127.0.0.1:8080/", everything())).unwrap();
        assert_eq!((cfg.threads, cfg.cpus), (1, None));
    }

    #[test]
    fn a_field_this_generator_does_not_know_is_refused() {
        let job = Job::new("http://127.0.0.1:8080/", everything());
        let mut value = serde_json::to_value(&job).unwrap();
        value["load"]["pipeline"] = serde_json::json!(4);
        let e = serde_json::from_value::<Job>(value)
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown field `pipeline`"), "{e}");
    }

    #[test]
    fn another_version_is_refused() {
        let mut job = Job::new("http://127.0.0.1:8080/", everything());
        job.version = 2;
        let e = LoadConfig::from_job(&job).unwrap_err().to_string();
        assert!(e.contains("version 2"), "{e}");
    }
}
