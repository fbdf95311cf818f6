//! The words for what `benchctl system check` found on a machine: the command's table, and the
//! one line per bias that a run's warning and its reports show.

use model::system::{Finding, Level, SystemCheck};

/// One line for a finding that biases measurements: what it is, what was found, what it does.
pub fn bias_line(f: &Finding) -> String {
    let mut line = format!("{}: {}", f.aspect.name(), f.found);
    if !f.effect.is_empty() {
        line.push_str(" (");
        line.push_str(&f.effect);
        line.push(')');
    }
    line
}

/// The lines of every finding that biases measurements in `c`.
pub fn bias_lines(c: &SystemCheck) -> Vec<String> {
    c.biases().map(bias_line).collect()
}

/// The whole check as `benchctl system check` prints it: a line per aspect with its level and
/// what was found, the effect below it, and a closing line that counts the biases.
pub fn check_text(c: &SystemCheck) -> String {
    let width = c
        .findings
        .iter()
        .map(|f| f.aspect.name().len())
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    for f in &c.findings {
        let level = match f.level {
            Level::Ok => "ok",
            Level::Info => "info",
            Level::Bias => "BIAS",
        };
        let tune = if f.tunable { "  [system tune]" } else { "" };
        out.push_str(&format!(
            "{:width$}  {level:4}  {}{tune}\n",
            f.aspect.name(),
            f.found
        ));
        if !f.effect.is_empty() && f.level != Level::Ok {
            out.push_str(&format!("{:width$}        {}\n", "", f.effect));
        }
    }
    let biases = c.biases().count();
    let tunable = c.findings.iter().filter(|f| f.tunable).count();
    out.push_str(&match biases {
        0 => "nothing found biases measurements here".to_string(),
        1 => "1 finding biases measurements here".to_string(),
        n => format!("{n} findings bias measurements here"),
    });
    if tunable > 0 {
        out.push_str("; `benchctl system tune` (as root) changes those marked [system tune], and `benchctl system tune --undo` puts them back");
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::system::Aspect;

    fn f(aspect: Aspect, level: Level, tunable: bool) -> Finding {
        Finding {
            aspect,
            level,
            found: "found".into(),
            effect: if level == Level::Ok {
                String::new()
            } else {
                "effect".into()
            },
            tunable,
        }
    }

    #[test]
    fn the_table_marks_biases_and_what_tune_changes() {
        let c = SystemCheck {
            findings: vec![
                f(Aspect::Conntrack, Level::Bias, true),
                f(Aspect::Swap, Level::Ok, false),
            ],
        };
        let text = check_text(&c);
        // The effect goes under what was found.
        let under = " ".repeat("connection tracking  BIAS  ".len());
        assert_eq!(
            text,
            format!("connection tracking  BIAS  found  [system tune]\n{under}effect\n\
             swap                 ok    found\n\
             1 finding biases measurements here; `benchctl system tune` (as root) changes those marked [system tune], and `benchctl system tune --undo` puts them back\n")
        );
        assert_eq!(bias_lines(&c), ["connection tracking: found (effect)"]);
    }
}
