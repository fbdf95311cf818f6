//! The small value languages a scenario uses — byte sizes (`"512m"`), durations (`"30s"`),
//! cpuset lists (`"0-1,3"`) and the load generator's wake-up policy (`"auto"`, `"50us"`) —
//! parsed strictly so that a typo is an error, not a surprise.

use std::time::Duration;

/// Parses a byte size: digits with an optional suffix `b`, `k`, `m`, `g` or `t`
/// (case-insensitive, powers of 1024 as Docker reads `--memory`).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let digits_end = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, suffix) = t.split_at(digits_end);
    if digits.is_empty() {
        return Err(format!(
            "`{text}` is not a size (write bytes as a number, or with a suffix: \"512m\", \"1g\")"
        ));
    }
    let shift = match suffix.to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => {
            return Err(format!(
                "`{text}` has an unknown size suffix `{suffix}` (use b, k, m, g or t)"
            ))
        }
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(1u64 << shift))
        .ok_or_else(|| format!("`{text}` is too large (use a smaller size)"))
}

/// Parses a duration: a number (fraction allowed) followed by `us`, `ms`, `s`, `m` or `h`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let number_end = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(number_end);
    let unit_nanos: u128 = match unit {
        "us" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        "" => {
            return Err(format!(
                "`{text}` has no unit (write it as \"500ms\", \"30s\", \"2m\" or \"1h\")"
            ))
        }
        _ => {
            return Err(format!(
                "`{text}` has an unknown unit `{unit}` (use us, ms, s, m or h)"
            ))
        }
    };
    let bad = || format!("`{text}` is not a duration (write it as \"500ms\", \"30s\" or \"1.5s\")");
    let (whole, frac) = match number.split_once('.') {
        Some((w, f)) => (w, f),
        None => (number, ""),
    };
    if whole.is_empty() || frac.contains('.') || (number.contains('.') && frac.is_empty()) {
        return Err(bad());
    }
    let whole: u128 = whole.parse().map_err(|_| bad())?;
    // Exact decimal arithmetic: "0.1s" is exactly 100ms, not 99.999...ms.
    let frac_digits = frac.len().min(18) as u32;
    let frac_value: u128 = if frac_digits == 0 {
        0
    } else {
        frac[..frac_digits as usize].parse().map_err(|_| bad())?
    };
    let nanos = whole
        .checked_mul(unit_nanos)
        .and_then(|w| w.checked_add(frac_value * unit_nanos / 10u128.pow(frac_digits)))
        .filter(|n| *n <= u64::MAX as u128)
        .ok_or_else(|| format!("`{text}` is too long (use a shorter duration)"))?;
    Ok(Duration::from_nanos(nanos as u64))
}

pub use model::cpuset::{format_cpuset, parse_cpuset, MAX_CPU};

/// Human form of a byte count for messages: exact bytes, plus the binary unit when round.
pub fn describe_bytes(n: u64) -> String {
    for (shift, unit) in [(30u32, "g"), (20, "m"), (10, "k")] {
        if n >= 1 << shift && n % (1 << shift) == 0 {
            return format!("{n} bytes ({}{unit})", n >> shift);
        }
    }
    format!("{n} bytes")
}

pub use model::Coalesce;

/// Longest nap `parse_coalesce` accepts: longer would stall every connection.
pub const MAX_NAP: Duration = Duration::from_secs(1);

/// Parses `auto`, `off` or a duration (`"50us"`; zero means off).
pub fn parse_coalesce(text: &str) -> Result<Coalesce, String> {
    match text.trim() {
        "auto" => Ok(Coalesce::Auto),
        "off" => Ok(Coalesce::Off),
        t => match parse_duration(t) {
            Ok(d) if d.is_zero() => Ok(Coalesce::Off),
            Ok(d) if d > MAX_NAP => Err(format!(
                "`{text}` is longer than a second: a nap that long would stall every connection"
            )),
            Ok(d) => Ok(Coalesce::Nap(d)),
            Err(e) => Err(format!(
                "`{text}` is not auto, off or a duration such as \"50us\" ({e})"
            )),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_use_binary_suffixes() {
        assert_eq!(parse_size("468"), Ok(468));
        assert_eq!(parse_size("100m"), Ok(104_857_600));
        assert_eq!(parse_size("256M"), Ok(256 << 20));
        assert_eq!(parse_size("1g"), Ok(1 << 30));
        assert_eq!(parse_size("2k"), Ok(2048));
        assert_eq!(parse_size("7b"), Ok(7));
        assert!(parse_size("").is_err());
        assert!(parse_size("m").is_err());
        assert!(parse_size("12q")
            .unwrap_err()
            .contains("unknown size suffix `q`"));
        assert!(parse_size("-1").is_err());
        assert!(parse_size("99999999999999t")
            .unwrap_err()
            .contains("too large"));
    }

    #[test]
    fn durations_are_exact() {
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration("0.1s"), Ok(Duration::from_millis(100)));
        assert_eq!(parse_duration("1.5m"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("250us"), Ok(Duration::from_micros(250)));
        assert_eq!(parse_duration("0s"), Ok(Duration::ZERO));
        assert!(parse_duration("30").unwrap_err().contains("no unit"));
        assert!(parse_duration("30sec")
            .unwrap_err()
            .contains("unknown unit"));
        assert!(parse_duration(".5s").is_err());
        assert!(parse_duration("5.s").is_err());
        assert!(parse_duration("1.2.3s").is_err());
        assert!(parse_duration("s").is_err());
    }

    #[test]
    fn cpusets_parse_and_format_round_trip() {
        assert_eq!(parse_cpuset("1"), Ok(vec![1]));
        assert_eq!(parse_cpuset("0-1,3"), Ok(vec![0, 1, 3]));
        assert_eq!(parse_cpuset("3, 1,1"), Ok(vec![1, 3]));
        assert!(parse_cpuset("").is_err());
        assert!(parse_cpuset("2-1").unwrap_err().contains("runs backwards"));
        assert!(parse_cpuset("a")
            .unwrap_err()
            .contains("`a` is not a CPU number"));
        assert!(parse_cpuset("0,,1").is_err());
        assert!(parse_cpuset("9999").is_err());
        assert_eq!(format_cpuset(&[0, 1, 2, 5]), "0-2,5");
        assert_eq!(format_cpuset(&[3, 1]), "1,3");
        assert_eq!(format_cpuset(&[]), "");
        for text in ["0", "0-3", "0,2-4,7"] {
            assert_eq!(format_cpuset(&parse_cpuset(text).unwrap()), text);
        }
    }

    #[test]
    fn byte_descriptions_name_round_units() {
        assert_eq!(describe_bytes(104_857_600), "104857600 bytes (100m)");
        assert_eq!(describe_bytes(468), "468 bytes");
        assert_eq!(describe_bytes(2048), "2048 bytes (2k)");
    }

    #[test]
    fn coalesce_values() {
        assert_eq!(parse_coalesce("auto"), Ok(Coalesce::Auto));
        assert_eq!(parse_coalesce(" off "), Ok(Coalesce::Off));
        assert_eq!(parse_coalesce("0us"), Ok(Coalesce::Off));
        assert_eq!(
            parse_coalesce("50us"),
            Ok(Coalesce::Nap(Duration::from_micros(50)))
        );
        assert!(parse_coalesce("2s")
            .unwrap_err()
            .contains("longer than a second"));
        assert!(parse_coalesce("50").unwrap_err().contains("has no unit"));
        assert!(parse_coalesce("sometimes")
            .unwrap_err()
            .contains("not auto, off or a duration"));
    }
}
