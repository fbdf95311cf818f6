//! A record as JSON: written pretty with a final line break, and read back with every version
//! and field checked, an error saying where in the text it is. Reading and writing files is
//! the report crate's.

use super::schema::{AgainstRecord, RunRecord, ServerStatus, SCHEMA_VERSION};
use crate::json::{LoadReport, LOAD_REPORT_VERSION};

/// Why a text is not a record this reader can use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    #[error("not JSON (line {line}, column {column}: {message})")]
    NotJson {
        line: usize,
        column: usize,
        message: String,
    },
    #[error("JSON but not a benchctl results file: {0}")]
    NotARecord(String),
    #[error("{what} version {found}, newer than the {supported} this benchctl reads")]
    NewerVersion {
        what: &'static str,
        found: u64,
        supported: u64,
    },
}

impl RunRecord {
    /// The record as the pretty JSON every results file holds, with a final line break.
    pub fn to_json(&self) -> Result<Vec<u8>, serde_json::Error> {
        let mut json = serde_json::to_vec_pretty(self)?;
        json.push(b'\n');
        Ok(json)
    }

    /// A record from its JSON text, telling apart text that is not JSON, JSON that is not a
    /// results file, and a results file newer than this reader.
    pub fn parse(text: &str) -> Result<RunRecord, RecordError> {
        let not_record = RecordError::NotARecord;
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| RecordError::NotJson {
                line: e.line(),
                column: e.column(),
                message: strip_position(&e.to_string()),
            })?;
        let obj = value.as_object().ok_or_else(|| {
            not_record(format!(
                "the top level is {}, not an object",
                json_kind(&value)
            ))
        })?;
        let version = match obj.get("schema_version") {
            None => return Err(not_record("it has no \"schema_version\" field".to_string())),
            Some(v) => v.as_u64().ok_or_else(|| {
                not_record(format!(
                    "\"schema_version\" is {}, not a whole number",
                    json_kind(v)
                ))
            })?,
        };
        if version == 0 {
            // Versions start at 1: a 0 was made by hand or by something else.
            return Err(not_record(
                "\"schema_version\" is 0, a version no benchctl ever wrote (they start at 1)"
                    .to_string(),
            ));
        }
        if version > u64::from(SCHEMA_VERSION) {
            return Err(RecordError::NewerVersion {
                what: "schema",
                found: version,
                supported: u64::from(SCHEMA_VERSION),
            });
        }
        // Checked before the full parse so a newer load layout is reported as such, not as a
        // confusing missing or unknown field deep inside a load.
        if let Some(loads) = obj.get("loads").and_then(|l| l.as_array()) {
            for l in loads {
                if let Some(v) = l.pointer("/load/version").and_then(|v| v.as_u64()) {
                    if v == 0 {
                        return Err(not_record(
                            "a load's \"version\" is 0, a version no benchctl ever wrote (they start at 1)"
                                .to_string(),
                        ));
                    }
                    if v > u64::from(LOAD_REPORT_VERSION) {
                        return Err(RecordError::NewerVersion {
                            what: "load report",
                            found: v,
                            supported: u64::from(LOAD_REPORT_VERSION),
                        });
                    }
                }
            }
        }
        // Parsed again from the text rather than from `value` so the error keeps its position.
        let record: RunRecord =
            serde_json::from_str(text).map_err(|e| not_record(e.to_string()))?;
        record.check_figures().map_err(|detail| {
            not_record(format!(
                "{detail} (a measured figure cannot be that: was the file edited?)"
            ))
        })?;
        Ok(record)
    }

    /// Every figure a report or comparison reads, checked for what a measurement can give:
    /// finite, not negative, and consistent with the counters it derives from. The first
    /// problem, named by its place in the file.
    pub fn check_figures(&self) -> Result<(), String> {
        for (i, s) in self.servers.iter().enumerate() {
            if let ServerStatus::Available { ready_s } = s.status {
                figure(&format!("servers[{i}].status.ready_s"), ready_s)?;
            }
        }
        let baseline_side = self.against.as_ref().map_or(&[][..], |a| &a.loads[..]);
        if let Some(a) = &self.against {
            check_against(a)?;
        }
        let sides = [("loads", &self.loads[..]), ("against.loads", baseline_side)];
        for (i, l, list) in sides
            .into_iter()
            .flat_map(|(list, loads)| loads.iter().enumerate().map(move |(i, l)| (i, l, list)))
        {
            let prefix = format!("{list}[{i}].load");
            check_load_figures(&prefix, &l.load)?;
            if let Some(u) = &l.server_usage {
                figure(&format!("{list}[{i}].server_usage.cpu_s"), u.cpu_s)?;
            }
        }
        super::capacity::check_figures(&self.capacity)
    }
}

/// A measured figure: finite and not negative; `at` names its place in the file.
fn figure(at: &str, v: f64) -> Result<(), String> {
    if !v.is_finite() || v < 0.0 {
        return Err(format!("{at} is {v}"));
    }
    Ok(())
}

/// The settings of a comparison's search: threshold, budget, alpha and slowdowns.
fn check_against(a: &AgainstRecord) -> Result<(), String> {
    figure("against.threshold", a.threshold)?;
    figure("against.budget_s", a.budget_s)?;
    if !(a.alpha > 0.0 && a.alpha < 1.0) {
        return Err(format!("against.alpha is {}", a.alpha));
    }
    for (i, s) in a.slowed.iter().enumerate() {
        if !s.factor.is_finite() || s.factor <= 0.0 {
            return Err(format!("against.slowed[{i}].factor is {}", s.factor));
        }
    }
    Ok(())
}

/// One load's figures, at `prefix` in the file: its rates and counters, timers and timeline.
fn check_load_figures(prefix: &str, r: &LoadReport) -> Result<(), String> {
    let at = |f: &str| format!("{prefix}.{f}");
    figure(&at("elapsed_s"), r.elapsed_s)?;
    figure(&at("requests_per_second"), r.requests_per_second)?;
    figure(&at("transfer_rate_kbps"), r.transfer_rate_kbps)?;
    figure(&at("client_cpu_s"), r.client_cpu_s)?;
    if r.elapsed_s > 0.0 {
        let expect = r.complete as f64 / r.elapsed_s;
        if (r.requests_per_second - expect).abs() > 1e-6 * expect.max(1.0) {
            return Err(format!(
                "{} is {}, but complete / elapsed_s is {expect}",
                at("requests_per_second"),
                r.requests_per_second
            ));
        }
    }
    if r.failed != r.failures.total() {
        return Err(format!(
            "{} is {}, but the failures by kind add up to {}",
            at("failed"),
            r.failed,
            r.failures.total()
        ));
    }
    check_timer_figures(prefix, r)?;
    check_timeline_figures(prefix, r)
}

/// Each timer's mean and spread, its count within the requests, and percentiles in order.
fn check_timer_figures(prefix: &str, r: &LoadReport) -> Result<(), String> {
    let at = |f: &str| format!("{prefix}.{f}");
    for (t, timer) in r.timers.iter() {
        let name = format!("{t:?}").to_lowercase();
        let m = &timer.moments;
        figure(&at(&format!("{name}.mean_us")), timer.mean_us)?;
        figure(&at(&format!("{name}.sd_us")), timer.sd_us)?;
        if m.count > r.complete {
            return Err(format!(
                "{} is {}, more than the {} complete requests",
                at(&format!("{name}.moments.count")),
                m.count,
                r.complete
            ));
        }
        if m.count > 0 && m.min > m.max {
            return Err(format!(
                "{}: min {} is above max {}",
                at(&format!("{name}.moments")),
                m.min,
                m.max
            ));
        }
        let mut last = 0;
        for &(p, v) in &timer.percentiles_us {
            if v < last {
                return Err(format!(
                    "{}: the {p}th percentile ({v} µs) is below an earlier one ({last} µs)",
                    at(&format!("{name}.percentiles_us"))
                ));
            }
            last = v;
        }
    }
    Ok(())
}

/// The timeline's intervals, which add up to the requests completed.
fn check_timeline_figures(prefix: &str, r: &LoadReport) -> Result<(), String> {
    let at = |f: &str| format!("{prefix}.{f}");
    let Some(t) = &r.timeline else {
        return Ok(());
    };
    figure(&at("timeline.interval_s"), t.interval_s)?;
    for (j, iv) in t.intervals.iter().enumerate() {
        figure(&at(&format!("timeline.intervals[{j}].start_s")), iv.start_s)?;
        figure(
            &at(&format!("timeline.intervals[{j}].duration_s")),
            iv.duration_s,
        )?;
    }
    let completed: u64 = t.intervals.iter().map(|iv| iv.completed).sum();
    if completed != r.complete {
        return Err(format!(
            "{} add up to {completed} requests, but complete is {}",
            at("timeline.intervals"),
            r.complete
        ));
    }
    Ok(())
}

/// serde_json appends " at line L column C" to its messages; the error prints them apart.
fn strip_position(msg: &str) -> String {
    match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg.to_string(),
    }
}

fn json_kind(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}
