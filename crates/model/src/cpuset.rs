//! A set of CPUs as Docker's `--cpuset-cpus`, a scenario's `[cpus]` and the kernel's CPU lists
//! (`/sys/devices/system/cpu/.../thread_siblings_list`) all write it: `"0-3,8"`.

/// Highest CPU number accepted; far above any real machine, low enough to catch typos.
pub const MAX_CPU: usize = 4095;

/// Parses a cpuset list as Docker's `--cpuset-cpus` takes it: `"1"`, `"0-3"`, `"0,2-3"`.
/// Returns the CPUs sorted and without repeats.
pub fn parse_cpuset(text: &str) -> Result<Vec<usize>, String> {
    let bad = |why: &str| {
        format!("`{text}` is not a cpuset list: {why} (write it as \"1\", \"0-1\" or \"0,2-3\")")
    };
    if text.trim().is_empty() {
        return Err(bad("it is empty"));
    }
    let mut cpus = Vec::new();
    for part in text.split(',') {
        let part = part.trim();
        let number = |s: &str| -> Result<usize, String> {
            let n: usize = s
                .trim()
                .parse()
                .map_err(|_| bad(&format!("`{s}` is not a CPU number")))?;
            if n > MAX_CPU {
                return Err(bad(&format!("CPU {n} is beyond {MAX_CPU}")));
            }
            Ok(n)
        };
        match part.split_once('-') {
            Some((lo, hi)) => {
                let (lo, hi) = (number(lo)?, number(hi)?);
                if lo > hi {
                    return Err(bad(&format!("range {lo}-{hi} runs backwards")));
                }
                cpus.extend(lo..=hi);
            }
            None => cpus.push(number(part)?),
        }
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// Formats CPUs back into the compact list Docker's `cpuset_cpus` expects: `[0,1,2,5]` → `"0-2,5"`.
pub fn format_cpuset(cpus: &[usize]) -> String {
    let mut sorted = cpus.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut out = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let start = sorted[i];
        let mut end = start;
        while i + 1 < sorted.len() && sorted[i + 1] == end + 1 {
            i += 1;
            end = sorted[i];
        }
        out.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    out.join(",")
}
