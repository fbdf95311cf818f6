//! The files ab's flags read and write: its output files and tables, bodies and CA files that
//! are not regular files, and output files created new, never through a symlink.

use super::{benchctl, SHORT};
use crate::support::TestServer;
use std::time::Duration;

#[test]
fn ab_output_flags_write_its_files_and_tables() {
    let s = TestServer::start();
    let url = s.url("/cl");
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("p.csv");
    let tsv = dir.path().join("g.tsv");
    let f = benchctl(
        &[
            "load",
            "-q",
            "-n",
            "40",
            "-c",
            "4",
            "-k",
            "-e",
            csv.to_str().unwrap(),
            "-g",
            tsv.to_str().unwrap(),
            "-S",
            "-d",
            &url,
        ],
        SHORT,
    );
    assert_eq!(f.code, Some(0), "{}", f.describe());
    // -S: min, avg and max only; -d: no percentage table.
    assert!(f.stdout.contains("              min   avg   max\n"));
    assert!(!f.stdout.contains("mean[+/-sd]"));
    assert!(!f.stdout.contains("Percentage of the requests"));
    let csv = std::fs::read_to_string(&csv).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 102, "{csv}");
    assert_eq!(lines[0], "Percentage served,Time in ms");
    let mut last = 0.0f64;
    for (i, l) in lines[1..].iter().enumerate() {
        let (p, ms) = l.split_once(',').unwrap();
        assert_eq!(p, i.to_string());
        assert_eq!(ms.split_once('.').map(|(_, d)| d.len()), Some(3), "{l}");
        let ms: f64 = ms.parse().unwrap();
        assert!(ms >= last, "percentages served in order: {csv}");
        last = ms;
    }
    let tsv = std::fs::read_to_string(&tsv).unwrap();
    let rows: Vec<Vec<&str>> = tsv.lines().map(|l| l.split('\t').collect()).collect();
    assert_eq!(rows.len(), 41, "{tsv}");
    assert_eq!(
        rows[0],
        ["starttime", "seconds", "ctime", "dtime", "ttime", "wait"]
    );
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let mut last_total = 0;
    for r in &rows[1..] {
        assert_eq!(r.len(), 6, "{r:?}");
        // "Wed Dec 02 00:00:00 2026"
        assert_eq!(r[0].len(), 24, "{r:?}");
        let secs: u64 = r[1].parse().unwrap();
        assert!(secs <= now && now - secs < 120, "{r:?}");
        let [c, d, t, w]: [i64; 4] = std::array::from_fn(|i| r[i + 2].parse().unwrap());
        assert!(c >= 0 && d >= 0 && w >= 0 && t >= last_total, "{r:?}");
        last_total = t;
    }

    // -w: ab's HTML table instead of its text.
    let f = benchctl(&["load", "-q", "-n", "10", "-w", &url], SHORT);
    assert_eq!(f.code, Some(0), "{}", f.describe());
    assert!(f.stdout.starts_with("\n\n<table >\n"), "{}", f.stdout);
    assert!(f.stdout.contains(
        "<tr ><th colspan=2 bgcolor=white>Complete requests:</th><td colspan=2 bgcolor=white>10</td></tr>"
    ));
    assert!(f.stdout.contains("<th bgcolor=white>Processing:</th>"));
    assert!(f.stdout.ends_with("</table>\n"));
    assert!(!f.stdout.contains("Server Software:        "));

    // -v 2: the request, before the run.
    let f = benchctl(
        &["load", "-q", "-n", "1", "-v", "2", "-m", "DELETE", &url],
        SHORT,
    );
    assert_eq!(f.code, Some(0), "{}", f.describe());
    assert!(
        f.stderr
            .contains("INFO: DELETE header == \n---\nDELETE /cl HTTP/1.0\r\n"),
        "{}",
        f.describe()
    );
    assert_eq!(s.seen().last().unwrap().line, "DELETE /cl HTTP/1.0");
}

/// A FIFO at `path`, with no writer.
fn mkfifo(path: &std::path::Path) {
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: c is a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
}

#[test]
fn body_and_ca_files_that_are_not_regular_files_are_refused_at_once() {
    let s = TestServer::start();
    let url = s.url("/cl");
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    mkfifo(&fifo);
    let (fifo, folder) = (fifo.to_str().unwrap(), dir.path().to_str().unwrap());
    let https = format!("https://127.0.0.1:{}/", s.port);
    let cases: &[(&[&str], String)] = &[
        // /dev/zero never ends, and a FIFO without a writer blocks its open and its read.
        (
            &["load", "-p", "/dev/zero", &url],
            "-p /dev/zero: cannot read the file: it is a character device, not a regular file"
                .into(),
        ),
        (
            &["load", "-u", fifo, &url],
            format!(
                "-u {fifo}: cannot read the file: it is a FIFO (named pipe), not a regular file"
            ),
        ),
        (
            &["load", "-p", folder, &url],
            format!("-p {folder}: cannot read the file: it is a directory"),
        ),
        (
            &["load", "--verify", fifo, &https],
            format!("--verify {fifo}: cannot read the file: it is a FIFO (named pipe)"),
        ),
        (
            &["load", "--verify", "/dev/zero", &https],
            "--verify /dev/zero: cannot read the file: it is a character device".into(),
        ),
    ];
    for (args, names) in cases {
        let f = benchctl(args, Duration::from_secs(5));
        assert_eq!(f.code, Some(2), "benchctl {args:?}\n{}", f.describe());
        assert_eq!(
            f.stderr.trim_end().lines().count(),
            1,
            "{args:?}\n{}",
            f.describe()
        );
        assert!(
            f.stderr.starts_with("benchctl: error: ") && f.stderr.contains(names.as_str()),
            "the error for {args:?} should say {names:?}\n{}",
            f.describe()
        );
    }
    assert_eq!(s.accepted(), 0, "bad input never reaches the server");
}

#[test]
fn csv_and_gnuplot_files_are_created_new_never_through_a_symlink() {
    let s = TestServer::start();
    let url = s.url("/cl");
    let dir = tempfile::tempdir().unwrap();
    let existing = dir.path().join("existing.csv");
    std::fs::write(&existing, "keep me\n").unwrap();
    let precious = dir.path().join("precious");
    std::fs::write(&precious, "keep me too\n").unwrap();
    let link = dir.path().join("link.tsv");
    std::os::unix::fs::symlink(&precious, &link).unwrap();
    let dangling = dir.path().join("dangling.csv");
    let target = dir.path().join("made-through-a-link");
    std::os::unix::fs::symlink(&target, &dangling).unwrap();
    let fresh = dir.path().join("fresh.csv");
    let p = |p: &std::path::Path| p.to_str().unwrap().to_string();
    let cases: Vec<(Vec<String>, String)> = vec![
        (
            vec!["-e".into(), p(&existing)],
            format!("-e {}: the file exists already", existing.display()),
        ),
        (
            vec!["-g".into(), p(&link)],
            format!("-g {}: the file exists already", link.display()),
        ),
        (
            vec!["-e".into(), p(&dangling)],
            format!("-e {}: the file exists already", dangling.display()),
        ),
        // The first file is made, the second cannot be: neither stays.
        (
            vec!["-e".into(), p(&fresh), "-g".into(), p(&existing)],
            format!("-g {}: the file exists already", existing.display()),
        ),
    ];
    for (flags, says) in cases {
        let mut args = vec!["load", "-q", "-n", "2"];
        args.extend(flags.iter().map(String::as_str));
        args.push(&url);
        let f = benchctl(&args, SHORT);
        assert_eq!(f.code, Some(2), "benchctl {args:?}\n{}", f.describe());
        assert!(
            f.stderr.starts_with("benchctl: error: ") && f.stderr.contains(&says),
            "benchctl {args:?}: should say {says:?}\n{}",
            f.describe()
        );
        assert_eq!(f.stderr.trim_end().lines().count(), 1, "{}", f.describe());
        assert!(f.stdout.is_empty(), "{}", f.describe());
    }
    assert_eq!(std::fs::read_to_string(&existing).unwrap(), "keep me\n");
    assert_eq!(std::fs::read_to_string(&precious).unwrap(), "keep me too\n");
    assert!(
        !target.exists(),
        "a file was made through a dangling symlink"
    );
    assert!(!fresh.exists(), "the -e file of a refused run was left");
    assert_eq!(
        s.accepted(),
        0,
        "nothing is sent when an output cannot be created"
    );
}
