//! The facts of this machine, read from /proc for a run's record.

use model::record::HostFacts;

/// Reads the CPU model, core count and kernel release from /proc. Facts that cannot be read
/// are recorded as "unknown" rather than failing a run over a report detail. The Docker
/// version is left for the caller, who has the Docker connection.
pub fn host_facts() -> HostFacts {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let (cpu_model, processors) = parse_cpuinfo(&cpuinfo);
    let cores = if processors > 0 {
        processors
    } else {
        std::thread::available_parallelism().map_or(0, |n| n.get() as u32)
    };
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".to_string());
    HostFacts {
        cpu_model,
        cores,
        kernel,
        docker_version: None,
        system: None,
    }
}

/// The CPU model and the number of `processor` entries of a /proc/cpuinfo text. x86 names the
/// model "model name"; some ARM kernels only give "Hardware" or "Processor".
pub(super) fn parse_cpuinfo(text: &str) -> (String, u32) {
    let mut model = None;
    let mut fallback = None;
    let mut processors = 0;
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let (key, value) = (key.trim(), value.trim());
        match key {
            "processor" => processors += 1,
            "model name" if model.is_none() && !value.is_empty() => model = Some(value.to_string()),
            "Hardware" | "Processor" | "cpu model" if fallback.is_none() && !value.is_empty() => {
                fallback = Some(value.to_string())
            }
            _ => {}
        }
    }
    let model = model.or(fallback).unwrap_or_else(|| "unknown".to_string());
    (model, processors)
}
