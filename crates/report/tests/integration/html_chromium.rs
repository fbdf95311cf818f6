//! The HTML report in a real browser: a results record written by `benchctl run` (nginx and
//! Apache, two documents, three rounds: `fixtures/quick-3-runs.json`, made with
//! `benchctl run scenarios/quick.toml --runs 3`) is rendered to a file and loaded in headless
//! Chromium. The test proves that after load every chart the template promises (requests/s with
//! CI whiskers, latency percentile curves, server CPU, server memory) is in the DOM for every
//! document, that its bars and curves are laid out by the browser with non-zero size, that the
//! page refers to nothing outside itself, and it writes a screenshot as a test artifact.
//!
//! Chromium is Debian's `chromium` (`/usr/bin/chromium`, or `$BENCHCTL_CHROMIUM`). When it is
//! missing the test fails if `CI` is set and is skipped, with the reason printed, otherwise.
//! Each Chromium run is killed, with its whole process group, after 60 seconds.

use report::RecordIo;
use report::{render, Format, RunRecord};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const CHROMIUM_TIMEOUT: Duration = Duration::from_secs(60);
/// The charts each document gets, by their `data-chart` attribute (templates/report.html.tera).
const CHART_KINDS: [&str; 4] = ["rps", "latency", "cpu", "memory"];

fn fixture_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/quick-3-runs.json")
}

/// The Chromium binary, or `None` (with the reason) when there is none.
fn find_chromium() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("BENCHCTL_CHROMIUM") {
        let p = PathBuf::from(p);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(format!("BENCHCTL_CHROMIUM={} is not a file", p.display()))
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    let dirs = std::iter::once(PathBuf::from("/usr/bin")).chain(std::env::split_paths(&path));
    for dir in dirs {
        for name in ["chromium", "chromium-browser"] {
            let p = dir.join(name);
            if p.is_file() {
                return Ok(p);
            }
        }
    }
    Err("no chromium on PATH or in /usr/bin (apt-get install -y chromium, or ./x test)".into())
}

/// Chromium, or `None` when the test may be skipped; panics when it must run (CI is set).
fn chromium_or_skip() -> Option<PathBuf> {
    testsupport::ok_or_skip("the browser test cannot run", find_chromium())
}

/// Runs headless Chromium with `args` and a fresh profile, stdout to a file; returns stdout.
/// Kills Chromium's whole process group when it outlives [`CHROMIUM_TIMEOUT`].
/// The DOM of `work/probe.html` once Chromium has laid it out (the harness measures the report
/// it frames).
fn lay_out(chromium: &Path, work: &Path) -> String {
    run_chromium(
        chromium,
        work,
        "layout",
        &[
            "--allow-file-access-from-files".into(),
            "--dump-dom".into(),
            file_url(&work.join("probe.html")),
        ],
    )
}

fn run_chromium(chromium: &Path, work: &Path, label: &str, args: &[String]) -> String {
    let profile = tempfile::tempdir_in(work).unwrap();
    let out_path = work.join(format!("{label}.stdout"));
    let err_path = work.join(format!("{label}.stderr"));
    let mut child = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(args)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        // Its own process group, so the renderer and GPU processes die with it on a timeout.
        .process_group(0)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", chromium.display()));
    let started = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if started.elapsed() > CHROMIUM_TIMEOUT {
            // SAFETY: kill(2) on the process group this test created for the child.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            let _ = child.wait();
            panic!(
                "chromium ({label}) still running after {CHROMIUM_TIMEOUT:?}; killed. stderr:\n{}",
                tail(&err_path)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    // Helpers Chromium forked may outlive it briefly; they belong to no one else.
    // SAFETY: as above.
    unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
    assert!(
        status.success(),
        "chromium ({label}) failed: {status}; stderr:\n{}",
        tail(&err_path)
    );
    std::fs::read_to_string(&out_path).unwrap()
}

fn tail(p: &Path) -> String {
    let s = std::fs::read_to_string(p).unwrap_or_default();
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(30)..].join("\n")
}

fn file_url(p: &Path) -> String {
    format!("file://{}", p.canonicalize().unwrap().display())
}

/// The attributes of every `<tag ...>` start tag in serialized HTML, in order.
fn start_tags(html: &str, tag: &str) -> Vec<HashMap<String, String>> {
    let open = format!("<{tag}");
    let mut out = Vec::new();
    let mut rest = html;
    while let Some(i) = rest.find(&open) {
        let after = &rest[i + open.len()..];
        let boundary = after.chars().next();
        if !matches!(boundary, Some(' ' | '>' | '/' | '\n' | '\t')) {
            rest = after;
            continue;
        }
        let end = after.find('>').expect("unterminated start tag");
        out.push(attributes(&after[..end]));
        rest = &after[end..];
    }
    out
}

/// `name="value"` pairs of one start tag (Chromium's serializer always double-quotes).
fn attributes(s: &str) -> HashMap<String, String> {
    let mut out = HashMap::new();
    let mut rest = s.trim_start();
    while !rest.is_empty() && rest != "/" {
        let name_end = rest
            .find(|c: char| c == '=' || c.is_whitespace())
            .unwrap_or(rest.len());
        let name = rest[..name_end].to_string();
        rest = &rest[name_end..];
        if let Some(r) = rest.strip_prefix("=\"") {
            let close = r.find('"').expect("unterminated attribute value");
            out.insert(
                name,
                r[..close].replace("&quot;", "\"").replace("&amp;", "&"),
            );
            rest = &r[close + 1..];
        } else {
            out.insert(name, String::new());
        }
        rest = rest.trim_start();
    }
    out
}

/// Each `<svg ...>...</svg>` of the page: its start-tag attributes and its inner markup.
fn svgs(html: &str) -> Vec<(HashMap<String, String>, String)> {
    let mut out = Vec::new();
    let mut rest = html;
    while let Some(i) = rest.find("<svg") {
        let seg = &rest[i..];
        let head_end = seg.find('>').unwrap();
        let close = seg.find("</svg>").expect("unclosed <svg>");
        out.push((
            attributes(&seg[4..head_end]),
            seg[head_end + 1..close].to_string(),
        ));
        rest = &seg[close + 6..];
    }
    out
}

/// Largest minus smallest.
fn span(v: impl Iterator<Item = f64> + Clone) -> f64 {
    v.clone().fold(f64::MIN, f64::max) - v.fold(f64::MAX, f64::min)
}

fn num(attrs: &HashMap<String, String>, name: &str) -> f64 {
    attrs
        .get(name)
        .unwrap_or_else(|| panic!("no {name} in {attrs:?}"))
        .parse()
        .unwrap_or_else(|_| panic!("{name} is not a number in {attrs:?}"))
}

/// The (server, document) pairs the record measured, per document in first-seen order.
fn measured(rec: &RunRecord) -> Vec<(String, BTreeSet<String>)> {
    let mut docs: Vec<(String, BTreeSet<String>)> = Vec::new();
    for l in &rec.loads {
        match docs.iter_mut().find(|(d, _)| *d == l.document) {
            Some((_, servers)) => {
                servers.insert(l.server.clone());
            }
            None => docs.push((l.document.clone(), BTreeSet::from([l.server.clone()]))),
        }
    }
    docs
}

/// A page that loads the report in a frame and, once everything has loaded, writes what the
/// browser laid out for each chart into its own DOM, where `--dump-dom` shows it. The report
/// itself stays exactly as rendered.
const HARNESS: &str = r#"<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>layout probe</title></head><body>
<iframe id="report" src="report.html" style="width:1280px;height:2000px;border:0"></iframe>
<pre id="layout">pending</pre>
<script>
window.addEventListener('load', function () {
  var lines = [];
  try {
    var doc = document.getElementById('report').contentDocument;
    doc.querySelectorAll('svg[data-chart]').forEach(function (svg) {
      var box = svg.getBoundingClientRect();
      var drawn = function (sel) {
        var n = 0;
        svg.querySelectorAll(sel).forEach(function (e) {
          var b = e.getBBox(), r = e.getBoundingClientRect();
          if (b.width > 0 && b.height > 0 && r.width > 0 && r.height > 0) { n++; }
        });
        return n;
      };
      lines.push([svg.id, svg.getAttribute('data-chart'), box.width.toFixed(1),
                  box.height.toFixed(1), drawn('rect'), drawn('polyline, path')].join(' '));
    });
  } catch (e) {
    lines.push('error ' + e);
  }
  document.getElementById('layout').textContent = lines.join('\n');
});
</script>
</body></html>
"#;

/// One chart as the browser laid it out.
#[derive(Debug)]
struct Laid {
    kind: String,
    width: f64,
    height: f64,
    rects: usize,
    lines: usize,
}

fn parse_layout(dom: &str) -> BTreeMap<String, Laid> {
    let start = dom
        .find("<pre id=\"layout\">")
        .expect("the probe page has no layout block: did the script run?")
        + "<pre id=\"layout\">".len();
    let end = start + dom[start..].find("</pre>").unwrap();
    let text = &dom[start..end];
    assert!(
        !text.starts_with("pending") && !text.starts_with("error"),
        "the layout probe did not measure the report: {text:?}"
    );
    text.lines()
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            assert_eq!(f.len(), 6, "layout line {l:?}");
            (
                f[0].to_string(),
                Laid {
                    kind: f[1].to_string(),
                    width: f[2].parse().unwrap(),
                    height: f[3].parse().unwrap(),
                    rects: f[4].parse().unwrap(),
                    lines: f[5].parse().unwrap(),
                },
            )
        })
        .collect()
}

/// Every URL-bearing thing in the page that points off the page.
fn external_references(dom: &str) -> Vec<String> {
    let mut found = Vec::new();
    let remote = |v: &str| {
        let v = v.trim().to_ascii_lowercase();
        v.starts_with("http:") || v.starts_with("https:") || v.starts_with("//")
    };
    let mut rest = dom;
    while let Some(i) = rest.find('<') {
        let seg = &rest[i + 1..];
        let Some(end) = seg.find('>') else { break };
        let tag = &seg[..end];
        if !tag.starts_with('/') && !tag.starts_with('!') {
            let name_end = tag
                .find(|c: char| c.is_whitespace() || c == '/')
                .unwrap_or(tag.len());
            for (k, v) in attributes(&tag[name_end..]) {
                let url_attr = matches!(
                    k.as_str(),
                    "src" | "href" | "xlink:href" | "srcset" | "action" | "poster" | "data"
                );
                if url_attr && remote(&v) {
                    found.push(format!("<{} {k}=\"{v}\">", &tag[..name_end]));
                }
            }
        }
        rest = &seg[end..];
    }
    // CSS can fetch too: url(...) and @import.
    let lower = dom.to_ascii_lowercase();
    for (i, _) in lower.match_indices("url(") {
        let arg = lower[i + 4..].trim_start_matches(['\'', '"', ' ']);
        if remote(arg) {
            found.push(lower[i..(i + 60).min(lower.len())].to_string());
        }
    }
    if lower.contains("@import") {
        found.push("@import".to_string());
    }
    found
}

#[test]
fn html_report_charts_render_in_chromium() {
    let Some(chromium) = chromium_or_skip() else {
        return;
    };
    let rec = RunRecord::load(&fixture_path()).unwrap();
    let docs = measured(&rec);
    assert!(docs.len() >= 2 && docs.iter().all(|(_, s)| s.len() >= 2));
    let html = render(&rec, Format::Html, None).unwrap();

    // Kept under target/ so the page and the screenshot can be looked at after the run.
    let work = Path::new(env!("CARGO_TARGET_TMPDIR")).join("html_chromium");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    let page = work.join("report.html");
    std::fs::write(&page, &html).unwrap();
    std::fs::write(work.join("probe.html"), HARNESS).unwrap();

    // 1. The DOM after load, as Chromium parsed it.
    let dom = run_chromium(
        &chromium,
        &work,
        "dump-dom",
        &["--dump-dom".into(), file_url(&page)],
    );
    assert!(
        dom.contains("<svg") && dom.contains("</html>"),
        "Chromium dumped no page:\n{}",
        &dom[..dom.len().min(400)]
    );
    std::fs::write(work.join("report.dom.html"), &dom).unwrap();

    let by_id = check_charts(&dom, &docs);

    // 2. Self-contained: nothing to fetch, and nothing to run.
    let external = external_references(&dom);
    assert!(external.is_empty(), "external references: {external:?}");
    for tag in ["<script", "<link", "<img", "<iframe", "<object", "<embed"] {
        assert!(!dom.contains(tag), "the report has a {tag} element");
    }

    // 3. What the browser actually laid out: each chart has a box, and its marks have area.
    let probe_dom = lay_out(&chromium, &work);
    check_layout(&probe_dom, &docs, &by_id);

    // 4. A screenshot, as an artifact to look at.
    let png = work.join("report.png");
    run_chromium(
        &chromium,
        &work,
        "screenshot",
        &[
            format!("--screenshot={}", png.display()),
            "--window-size=1280,2000".into(),
            "--hide-scrollbars".into(),
            file_url(&page),
        ],
    );
    check_screenshot(&png);
    println!("screenshot: {}", png.display());
    println!("page: {}", page.display());
}

/// The charts in the DOM Chromium parsed: the expected ones of each document (`docs`, with
/// their servers), each with its marks, and no others. Returns the kind of chart by id.
fn check_charts(dom: &str, docs: &[(String, BTreeSet<String>)]) -> BTreeMap<String, String> {
    let charts = svgs(dom);
    let mut by_id: BTreeMap<String, String> = BTreeMap::new();
    for (di, (doc, servers)) in docs.iter().enumerate() {
        for kind in CHART_KINDS {
            let id = format!("{kind}-{di}");
            let (attrs, inner) = charts
                .iter()
                .find(|(a, _)| a.get("id") == Some(&id))
                .unwrap_or_else(|| panic!("no <svg id=\"{id}\"> ({kind} chart of {doc})"));
            assert_eq!(attrs.get("data-chart").map(String::as_str), Some(kind));
            assert!(
                attrs.get("aria-label").is_some_and(|l| l.ends_with(doc)),
                "{id}: {attrs:?}"
            );
            by_id.insert(id.clone(), kind.to_string());
            match kind {
                "latency" => check_latency_chart(&id, inner, servers),
                _ => check_bar_chart(&id, kind, inner, servers),
            }
        }
    }
    let all_ids: BTreeSet<&String> = charts.iter().filter_map(|(a, _)| a.get("id")).collect();
    assert_eq!(
        all_ids,
        by_id.keys().collect::<BTreeSet<_>>(),
        "charts beyond the expected ones"
    );
    by_id
}

/// A latency chart: one curve per server, spread over the chart, each named.
fn check_latency_chart(id: &str, inner: &str, servers: &BTreeSet<String>) {
    let curves = start_tags(inner, "polyline");
    assert_eq!(curves.len(), servers.len(), "{id}: one curve per server");
    for c in &curves {
        let pts: Vec<(f64, f64)> = c["points"]
            .split_whitespace()
            .map(|p| {
                let (x, y) = p.split_once(',').unwrap();
                (x.parse().unwrap(), y.parse().unwrap())
            })
            .collect();
        assert!(pts.len() >= 5, "{id}: a curve of {} points", pts.len());
        assert!(span(pts.iter().map(|p| p.0)) > 100.0, "{id}: {pts:?}");
        assert!(span(pts.iter().map(|p| p.1)) > 0.0, "{id}: a flat curve");
    }
    for s in servers {
        assert!(inner.contains(&format!("<title>{s}</title>")), "{id}: {s}");
    }
}

/// A bar chart: one bar per server, with area and colour, each named; the requests/s chart
/// with its whiskers.
fn check_bar_chart(id: &str, kind: &str, inner: &str, servers: &BTreeSet<String>) {
    let bars = start_tags(inner, "rect");
    assert_eq!(bars.len(), servers.len(), "{id}: one bar per server");
    for b in &bars {
        assert!(
            num(b, "width") > 0.0 && num(b, "height") > 0.0,
            "{id}: {b:?}"
        );
        assert!(b.get("fill").is_some_and(|f| f.starts_with('#')));
    }
    for s in servers {
        assert!(
            inner.contains(&format!("<title>{s}: ")),
            "{id}: no bar for {s}"
        );
    }
    if kind == "rps" {
        // Three rounds: a CI whisker (stem and two caps) over every bar.
        let whiskers = start_tags(inner, "line")
            .into_iter()
            .filter(|l| l.get("class").map(String::as_str) == Some("whisker"))
            .count();
        assert_eq!(whiskers, 3 * servers.len(), "{id}: CI whiskers");
    }
}

/// What the browser laid out (the probe page's DOM): each chart has a box, and its marks
/// have area.
fn check_layout(
    probe_dom: &str,
    docs: &[(String, BTreeSet<String>)],
    by_id: &BTreeMap<String, String>,
) {
    let laid = parse_layout(probe_dom);
    assert_eq!(
        laid.keys().collect::<BTreeSet<_>>(),
        by_id.keys().collect::<BTreeSet<_>>()
    );
    for (id, l) in &laid {
        let servers = docs[id.rsplit('-').next().unwrap().parse::<usize>().unwrap()]
            .1
            .len();
        assert_eq!(l.kind, by_id[id]);
        assert!(
            l.width > 300.0 && l.height > 100.0,
            "{id} laid out as {l:?}"
        );
        if l.kind == "latency" {
            assert_eq!(l.lines, servers, "{id}: curves drawn: {l:?}");
            assert_eq!(l.rects, servers, "{id}: legend swatches drawn: {l:?}");
        } else {
            assert_eq!(l.rects, servers, "{id}: bars drawn: {l:?}");
        }
    }
}

/// The screenshot is a PNG of the window's size, and not a blank one.
fn check_screenshot(png: &Path) {
    let bytes = std::fs::read(png).expect("chromium wrote no screenshot");
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
    let dim = |at: usize| u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap());
    assert_eq!((dim(16), dim(20)), (1280, 2000), "screenshot size");
    assert!(
        bytes.len() > 20_000,
        "a blank screenshot? {} bytes",
        bytes.len()
    );
}

#[test]
fn the_fixture_is_a_real_complete_run() {
    // What the browser test leans on: a record written by benchctl itself, with every load's
    // server CPU and memory, three rounds, two servers and two documents.
    let rec = RunRecord::load(&fixture_path()).unwrap();
    assert_eq!(rec.status.label(), "complete");
    assert!(rec.loads.iter().all(|l| l.server_usage.is_some()));
    assert_eq!(rec.loads.iter().map(|l| l.round).max(), Some(2));
    assert_eq!(rec.loads.len(), 3 * 2 * 2);
}

#[test]
fn the_external_reference_check_finds_what_it_must() {
    // The check above passing means something only if it would have failed on a page that
    // fetches: these are the ways a page can.
    for bad in [
        r#"<img src="https://example.com/a.png">"#,
        r#"<link rel="stylesheet" href="http://cdn.example.com/x.css">"#,
        r#"<script src="//cdn.example.com/x.js"></script>"#,
        r#"<svg><image xlink:href="https://example.com/i.svg"></image></svg>"#,
        r#"<style>body { background: url("https://example.com/bg.png") }</style>"#,
        r#"<style>@import "x.css";</style>"#,
    ] {
        assert!(!external_references(bad).is_empty(), "missed: {bad}");
    }
    let fine =
        r##"<a href="#rps-0">x</a><rect fill="#0072b2"></rect><p>see https://example.com</p>"##;
    assert_eq!(external_references(fine), Vec::<String>::new());
}

/// Console messages Chromium logged (`--enable-logging=stderr`): markup it could not use, an
/// attribute it could not parse, anything a script would have reported.
fn console_messages(stderr: &str) -> Vec<&str> {
    stderr.lines().filter(|l| l.contains(":CONSOLE")).collect()
}

#[test]
fn history_page_renders_in_chromium_with_no_console_error() {
    let Some(chromium) = chromium_or_skip() else {
        return;
    };
    let work = Path::new(env!("CARGO_TARGET_TMPDIR")).join("history_chromium");
    let _ = std::fs::remove_dir_all(&work);
    let records = work.join("nightly");
    std::fs::create_dir_all(&records).unwrap();
    crate::common::write_ten_nights(&records);
    let found = report::record::read_records(&records).unwrap();
    let h =
        report::analysis::history::history("results/nightly", found.records, found.skipped, 0.05);
    let html = report::Renderer::embedded()
        .render_history(&h, Format::Html)
        .unwrap();
    let page = work.join("history.html");
    std::fs::write(&page, &html).unwrap();

    let dom = run_chromium(
        &chromium,
        &work,
        "history",
        &[
            "--enable-logging=stderr".into(),
            "--v=0".into(),
            "--dump-dom".into(),
            file_url(&page),
        ],
    );
    let stderr = std::fs::read_to_string(work.join("history.stderr")).unwrap();
    let console = console_messages(&stderr);
    assert!(console.is_empty(), "console messages: {console:#?}");
    assert!(
        dom.contains("</html>"),
        "no page: {}",
        &dom[..dom.len().min(400)]
    );
    std::fs::write(work.join("history.dom.html"), &dom).unwrap();

    // Two documents, four figures each: a chart per figure, a line and ten points per server.
    let charts = svgs(&dom);
    assert_eq!(charts.len(), 8);
    for (attrs, inner) in &charts {
        let id = &attrs["id"];
        assert!(id.starts_with("trend-0-"), "{id}");
        assert_eq!(start_tags(inner, "polyline").len(), 2, "{id}");
        let dots = start_tags(inner, "circle");
        let marks = dots.iter().filter(|d| d.contains_key("class")).count();
        assert_eq!(dots.len() - marks, 20, "{id}: ten points per server");
    }
    // Apache's requests/s charts: a change point before the sixth night, and the A/B night's
    // worse verdict ringed.
    for di in 0..2 {
        let (_, inner) = charts
            .iter()
            .find(|(a, _)| a["id"] == format!("trend-0-{di}-requests-per-second"))
            .unwrap();
        let rules: Vec<_> = start_tags(inner, "line")
            .into_iter()
            .filter(|l| l.get("class").map(String::as_str) == Some("rule"))
            .collect();
        assert_eq!(rules.len(), 1, "{inner}");
        assert!(inner.contains("apache: requests/s -1"), "{inner}");
        assert!(inner.contains("from 2026-11-06"), "{inner}");
        assert!(start_tags(inner, "circle")
            .iter()
            .any(|c| c.get("class").map(String::as_str) == Some("mark worse")));
    }
    assert!(external_references(&dom).is_empty());
    assert!(!dom.contains("<script"));

    let png = work.join("history.png");
    run_chromium(
        &chromium,
        &work,
        "history-screenshot",
        &[
            format!("--screenshot={}", png.display()),
            "--window-size=1280,2000".into(),
            "--hide-scrollbars".into(),
            file_url(&page),
        ],
    );
    check_screenshot(&png);
    println!("page: {}", page.display());
}

/// The console check itself: a page with an attribute Chromium cannot parse is caught.
#[test]
fn a_broken_chart_attribute_shows_on_the_console() {
    let Some(chromium) = chromium_or_skip() else {
        return;
    };
    let work = Path::new(env!("CARGO_TARGET_TMPDIR")).join("console_probe");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    let page = work.join("broken.html");
    std::fs::write(
        &page,
        "<!DOCTYPE html><html><body><svg viewBox=\"0 0 10 10\"><polyline points=\"1,1 NaN,2\"/>\
         <circle cx=\"x\" cy=\"1\" r=\"1\"/></svg></body></html>",
    )
    .unwrap();
    run_chromium(
        &chromium,
        &work,
        "broken",
        &[
            "--enable-logging=stderr".into(),
            "--v=0".into(),
            "--dump-dom".into(),
            file_url(&page),
        ],
    );
    let stderr = std::fs::read_to_string(work.join("broken.stderr")).unwrap();
    assert!(
        !console_messages(&stderr).is_empty(),
        "Chromium logged nothing for a broken attribute:\n{stderr}"
    );
}

#[test]
fn overload_charts_render_in_chromium() {
    let Some(chromium) = chromium_or_skip() else {
        return;
    };
    let rec = crate::common::with_overload(crate::common::fixture(3, None));
    let html = render(&rec, Format::Html, None).unwrap();
    let work = Path::new(env!("CARGO_TARGET_TMPDIR")).join("html_chromium_overload");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(work.join("report.html"), &html).unwrap();
    std::fs::write(work.join("probe.html"), HARNESS).unwrap();
    let probe_dom = lay_out(&chromium, &work);
    let laid = parse_layout(&probe_dom);
    // Per server (two), a chart of its rates (offered, goodput, responses) and one of its
    // latency, each laid out with a box, its six steps shaded and its lines drawn.
    for (kind, lines) in [("overload-rate", 3), ("overload-latency", 1)] {
        let charts: Vec<&Laid> = laid.values().filter(|l| l.kind == kind).collect();
        assert_eq!(charts.len(), 2, "{kind}: {laid:?}");
        for c in charts {
            assert!(c.width > 100.0 && c.height > 50.0, "{kind}: {c:?}");
            assert!(c.rects >= 6, "{kind}: the steps' shades: {c:?}");
            assert!(c.lines >= lines, "{kind}: {c:?}");
        }
    }
}
