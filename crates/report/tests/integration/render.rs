//! The reports, pinned by snapshots rendered from a deterministic results record, and the
//! properties the snapshots alone would not make obvious: reproducibility, escaping, charts a
//! browser test can find, partial runs, and template overrides.

use crate::common;
use report::RecordIo;

use report::record::{RunRecord, RunStatus};
use report::{render, Format};

fn all_formats(rec: &RunRecord) -> [String; 3] {
    [Format::Text, Format::Markdown, Format::Html].map(|f| render(rec, f, None).unwrap())
}

#[test]
fn text_report() {
    insta::assert_snapshot!(render(&common::fixture(3, None), Format::Text, None).unwrap());
}

#[test]
fn markdown_report() {
    insta::assert_snapshot!(render(&common::fixture(3, None), Format::Markdown, None).unwrap());
}

#[test]
fn html_report() {
    insta::assert_snapshot!(render(&common::fixture(3, None), Format::Html, None).unwrap());
}

#[test]
fn rendering_is_byte_for_byte_reproducible_through_a_file() {
    let rec = common::fixture(3, None);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.json");
    rec.write_atomic(&path).unwrap();
    let back = RunRecord::load(&path).unwrap();
    assert_eq!(all_formats(&rec), all_formats(&back));
    assert_eq!(all_formats(&back), all_formats(&back));
}

#[test]
fn a_load_over_http2_or_tls_says_so_after_the_port_and_plain_http_as_ab_does() {
    let mut rec = common::fixture(1, None);
    let plain = render(&rec, Format::Text, None).unwrap();
    assert!(!plain.contains("Protocol:"), "{plain}");
    rec.loads[0].protocol = Some(report::Protocol::H2c);
    rec.loads[0].streams = Some(8);
    rec.loads[1].protocol = Some(report::Protocol::H2);
    rec.loads[1].streams = Some(1);
    rec.loads[2].protocol = Some(report::Protocol::Https);
    let text = render(&rec, Format::Text, None).unwrap();
    let after_port: Vec<&str> = text
        .lines()
        .zip(text.lines().skip(1))
        .filter(|(l, _)| l.starts_with("Server Port:"))
        .map(|(_, next)| next)
        .collect();
    assert_eq!(
        &after_port[..3],
        [
            "Protocol:               HTTP/2 in cleartext (h2c), 8 streams per connection",
            "Protocol:               HTTP/2 over TLS (h2), 1 stream per connection",
            "Protocol:               HTTP/1.0 over TLS",
        ]
    );
    assert!(
        after_port[3..].iter().all(|l| l.is_empty()),
        "{after_port:?}"
    );
}

#[test]
fn a_path_measured_over_several_versions_gets_them_side_by_side_in_every_format() {
    let mut rec = common::fixture(3, None);
    for f in all_formats(&rec) {
        assert!(!f.contains("By HTTP version"), "{f}");
    }
    // As a scenario with http = ["1.1", "3"] records them: one document per version, one path.
    for l in &mut rec.loads {
        let (name, protocol) = if l.document == "hello" {
            ("hello-h1", report::Protocol::Https)
        } else {
            ("hello-h3", report::Protocol::H3)
        };
        l.document = name.to_string();
        l.url_path = "/hello.html".to_string();
        l.protocol = Some(protocol);
    }
    let [text, md, html] = all_formats(&rec);
    let section: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("By HTTP version"))
        .skip(2)
        .take(3)
        .collect();
    let words = |l: &str| l.split_whitespace().map(str::to_string).collect::<Vec<_>>();
    assert_eq!(
        words(section[0]),
        [
            "server",
            "path",
            "HTTP/1",
            "TLS",
            "req/s",
            "HTTP/3",
            "req/s",
            "HTTP/1",
            "TLS",
            "CPU-s/10k",
            "HTTP/3",
            "CPU-s/10k"
        ]
    );
    // The fixture's second document: 200 requests where the first has 300, in longer times.
    for (line, server) in section[1..].iter().zip(["apache", "nginx"]) {
        let w = words(line);
        assert_eq!(&w[..2], [server, "/hello.html"], "{text}");
        assert_eq!(w[3], "(1.00x)", "{line}");
        let h1: f64 = w[2].parse().unwrap();
        let h3: f64 = w[4].parse().unwrap();
        let ratio = format!("({:.2}x)", h3 / h1);
        assert_eq!(w[5], ratio, "{line}");
    }
    assert!(md.contains("## By HTTP version"), "{md}");
    assert!(md.contains("| server | path | HTTP/1 TLS req/s | HTTP/3 req/s | HTTP/1 TLS CPU-s/10k | HTTP/3 CPU-s/10k |"), "{md}");
    assert!(html.contains("<h2>By HTTP version</h2>"), "{html}");
    assert!(
        html.contains("<th class=\"num\">HTTP&#x2F;3 req/s</th>"),
        "{html}"
    );
}

#[test]
fn text_report_has_ab_blocks_and_the_head_to_head_table() {
    let text = render(&common::fixture(3, None), Format::Text, None).unwrap();
    assert!(
        text.starts_with("benchctl report: hello\n"),
        "{:?}",
        &text[..40]
    );
    // One ab block per server and document.
    assert_eq!(text.matches("Server Software:").count(), 4);
    assert_eq!(text.matches("Requests per second:").count(), 4);
    assert!(text.contains("Percentage of the requests served within a certain time (ms)"));
    // nginx at ~1.66 times apache on the small page, as the first reference post found.
    let nginx_row = text
        .lines()
        .find(|l| l.starts_with("nginx ") && l.contains("x "))
        .unwrap();
    assert!(nginx_row.contains("1.66x"), "{nginx_row}");
    // Where nginx's row is client-bound, the verdict leads with CPU per request and names the
    // requests/s ratio for what it is; where no row is, it is the requests/s ratio.
    assert!(text.contains("nginx used 0.39x apache's CPU per request (nginx's row was client-bound, so the requests/s ratio (1.66) measures the load generator as much as the servers)."));
    assert!(text.contains("nginx served 1.60 times as many requests/s as apache."));
    assert!(!text.contains("nginx served 1.66"));
    assert!(text.contains("tornado: image build failed"));
    assert!(text.contains("[client-bound, too short]"));
    // Aligned table: every row as long as its header.
    let header = text.lines().find(|l| l.starts_with("server ")).unwrap();
    let row = text.lines().find(|l| l.starts_with("apache ")).unwrap();
    let cells = row.split("  [").next().unwrap();
    assert_eq!(header.chars().count(), cells.chars().count());
    // The fixture's loads last a few hundred ms, as the posts' `-n 1000` do.
    assert!(row.ends_with("[too short]"), "{row}");
    assert!(text.contains("Note: apache: too short to measure: its loads lasted 304 ms at most;"));
}

#[test]
fn html_page_is_self_contained_and_its_charts_are_findable() {
    let html = render(&common::fixture(3, None), Format::Html, None).unwrap();
    for (kind, id) in [
        ("rps", "rps-0"),
        ("latency", "latency-0"),
        ("cpu", "cpu-0"),
        ("memory", "memory-0"),
        ("rps", "rps-1"),
        ("latency", "latency-1"),
    ] {
        let tag = format!("<svg class=\"chart\" id=\"{id}\" data-chart=\"{kind}\"");
        assert!(html.contains(&tag), "missing {tag}");
    }
    // Three rounds: whiskers on the requests/s bars.
    assert!(html.contains("class=\"whisker\""));
    // One curve per server in each latency chart.
    assert_eq!(html.matches("<polyline class=\"curve\"").count(), 4);
    for external in [
        "<script",
        "<link",
        "src=\"http",
        "href=\"http",
        "@import",
        "url(",
    ] {
        assert!(!html.contains(external), "page loads something: {external}");
    }
    // A Server header or reason with markup is escaped, never interpreted.
    assert!(html.contains("(&lt;offline&gt;)"));
    assert!(!html.contains("<offline>"));
}

#[test]
fn markdown_cells_cannot_break_the_table() {
    let mut rec = common::fixture(1, None);
    rec.servers[0].server_header = Some("Evil | Server".into());
    let md = render(&rec, Format::Markdown, None).unwrap();
    assert!(md.contains("Evil \\| Server"));
    let table_line = md.lines().find(|l| l.contains("Evil")).unwrap();
    assert_eq!(table_line.matches(" | ").count(), 4, "{table_line}");
    // A reason like "<offline>" would be read as an HTML tag and vanish from the page.
    assert!(md.contains("(&lt;offline&gt;)"));
}

#[test]
fn servers_on_other_engines_are_shown_with_their_host_and_each_engine_with_its_facts() {
    let mut rec = common::fixture(1, None);
    rec.servers[1].host = Some("srv1".into());
    rec.engines = vec![common::srv1_engine()];
    let [text, md, html] = all_formats(&rec);
    let facts = "Docker 27.3.1 (API 1.47), 8 CPUs, 16.0 GiB, kernel 6.1.0-26-amd64, clock -0.004 s (±0.001)";
    assert!(
        text.contains(&format!("engine     srv1: tcp://10.0.0.5:2376, {facts}")),
        "{text}"
    );
    assert!(text.contains("  nginx: nginx on srv1, image"), "{text}");
    assert!(
        text.contains("  apache: apache on this machine, image"),
        "{text}"
    );
    assert!(
        md.contains(&format!("- Engine srv1: `tcp://10.0.0.5:2376`, {facts}")),
        "{md}"
    );
    assert!(md.contains("| server | software | host | image |"), "{md}");
    assert!(md.contains("| nginx | nginx | srv1 | `"), "{md}");
    assert!(md.contains("| apache | apache | this machine | `"), "{md}");
    let nginx_row = md
        .lines()
        .find(|l| l.starts_with("| nginx | nginx |"))
        .unwrap();
    let header = md
        .lines()
        .find(|l| l.starts_with("| server | software |"))
        .unwrap();
    assert_eq!(
        nginx_row.matches(" | ").count(),
        header.matches(" | ").count()
    );
    assert!(
        html.contains("<dt>Engine srv1</dt><dd><code>tcp:&#x2F;&#x2F;10.0.0.5:2376</code>"),
        "{html}"
    );
    assert!(html.contains("<th>host</th>"));
    assert!(html.contains("<td>srv1</td>") && html.contains("<td>this machine</td>"));

    // Everything on this machine: no host column, no engine lines.
    let [text, md, html] = all_formats(&common::fixture(1, None));
    assert!(!text.contains("engine ") && !text.contains("on this machine"));
    assert!(!md.contains("| host |") && !md.contains("- Engine "));
    assert!(!html.contains("<th>host</th>") && !html.contains("<dt>Engine"));
}

#[test]
fn an_interrupted_run_still_renders_what_finished() {
    let mut rec = common::fixture(3, None);
    // Stopped during round 1: round 0 complete, one load of round 1.
    rec.loads.truncate(5);
    rec.status = RunStatus::Interrupted {
        reason: "Ctrl-C".into(),
    };
    rec.finished_at = None;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("partial.json");
    rec.write_atomic(&path).unwrap();
    let rec = RunRecord::load(&path).unwrap();
    let [text, md, html] = all_formats(&rec);
    assert!(text.contains("NOTE: this run is interrupted; 5 loads were recorded"));
    assert!(text.contains("interrupted: Ctrl-C"));
    assert!(md.contains("**Partial results:**"));
    assert!(html.contains("<strong>Partial results:</strong>"));
    // apache has two rounds of the small page, nginx one.
    assert!(text.contains("round 1 of 2") || text.contains("round 2 of 2"));
    assert!(text.contains("---- nginx (1 round)"));
    insta::assert_snapshot!(text);
}

#[test]
fn a_run_without_server_usage_renders_without_resource_charts() {
    let mut rec = common::fixture(2, None);
    for l in &mut rec.loads {
        l.server_usage = None;
    }
    let [text, _, html] = all_formats(&rec);
    assert!(!html.contains("data-chart=\"cpu\""));
    assert!(html.contains("No server CPU or memory was recorded"));
    let row = text.lines().find(|l| l.starts_with("apache ")).unwrap();
    assert!(
        row.trim_end().ends_with("-  -") || row.contains("  -  "),
        "{row}"
    );
}

#[test]
fn templates_are_overridable_by_file_name() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("report.md.tera"),
        "{% for d in documents %}{{ d.name }}:{% for r in d.rows %} {{ r.server }}={{ r.ratio }}{% endfor %}\n{% endfor %}",
    )
    .unwrap();
    let rec = common::fixture(3, None);
    let md = render(&rec, Format::Markdown, Some(dir.path())).unwrap();
    assert_eq!(
        md,
        "hello: apache=1.00x nginx=1.66x\nrobots.txt: apache=1.00x nginx=1.60x\n"
    );
    // Formats without an override keep the embedded template.
    let text = render(&rec, Format::Text, Some(dir.path())).unwrap();
    assert_eq!(text, render(&rec, Format::Text, None).unwrap());
}

#[test]
fn a_broken_override_names_the_template() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("report.txt.tera"), "{{ unclosed").unwrap();
    let err = render(&common::fixture(1, None), Format::Text, Some(dir.path()))
        .err()
        .unwrap()
        .to_string();
    assert!(err.starts_with("template report.txt.tera:"), "{err}");
}

#[test]
fn formats_parse_from_cli_words() {
    assert_eq!("text".parse::<Format>().unwrap(), Format::Text);
    assert_eq!("md".parse::<Format>().unwrap(), Format::Markdown);
    assert_eq!("HTML".parse::<Format>().unwrap(), Format::Html);
    let err = "pdf".parse::<Format>().unwrap_err().to_string();
    assert!(err.contains("expected text, markdown or html"));
}

#[test]
fn text_report_with_capacity() {
    let rec = common::with_capacity(common::fixture(3, None));
    insta::assert_snapshot!(render(&rec, Format::Text, None).unwrap());
}

#[test]
fn markdown_report_with_capacity() {
    let rec = common::with_capacity(common::fixture(3, None));
    insta::assert_snapshot!(render(&rec, Format::Markdown, None).unwrap());
}

#[test]
fn every_format_shows_the_capacity_head_to_head_where_there_was_a_search() {
    let rec = common::with_capacity(common::fixture(3, None));
    let [text, md, html] = all_formats(&rec);
    // Only the searched document has the table.
    assert_eq!(text.matches("Capacity at p99 <= 10ms: hello").count(), 1);
    assert!(!text.contains("Capacity at p99 <= 10ms: robots.txt"));
    let row = |t: &str, server: &str| {
        t.lines()
            .find(|l| l.starts_with(server) && (l.contains("found") || l.contains("at least")))
            .unwrap_or_else(|| panic!("no capacity row for {server} in\n{t}"))
            .to_string()
    };
    let apache = row(&text, "apache ");
    assert!(
        apache.contains("1875") && apache.contains("1.00x") && apache.contains("8.90"),
        "{apache}"
    );
    assert!(apache.contains("found, fails at 1938"), "{apache}");
    let nginx = row(&text, "nginx ");
    assert!(
        nginx.contains(">= 12800") && nginx.contains(">= 6.83x"),
        "{nginx}"
    );
    assert!(nginx.ends_with("at least: generator limit"), "{nginx}");
    // Every step, with why it was judged so.
    assert!(
        text.contains("p99 48.00 ms > 10ms, 3 unanswered at the end"),
        "{text}"
    );
    assert!(text.contains("generator sent 80% of the rate, using its whole CPU"));
    assert!(md.contains("### Capacity at p99 &lt;= 10ms"));
    assert!(
        md.contains(
            "| nginx | &gt;= 12800 | &gt;= 6.83x | 2.60 | 5 | 12.5 | at least: generator limit |"
        ),
        "{md}"
    );
    assert!(
        html.contains("<h3>Capacity at p99 &lt;= 10ms</h3>"),
        "the HTML page escapes"
    );
    assert!(html.contains("data-table=\"capacity-steps\""));
    // A run without searches shows none of it.
    let [text, md, html] = all_formats(&common::fixture(3, None));
    assert!(
        !text.contains("Capacity at")
            && !md.contains("Capacity at")
            && !html.contains("Capacity at")
    );
}

#[test]
fn loads_over_time_are_charted_and_an_unsteady_one_is_flagged_with_its_steady_stretch() {
    let rec = common::fixture_over_time();
    let [text, md, html] = all_formats(&rec);
    // Two charts over time for the document: one line per server and round for requests/s,
    // two (p50 and p99) for latency.
    for kind in ["timeline-rps", "timeline-latency"] {
        let tag = format!("data-chart=\"{kind}\"");
        assert_eq!(html.matches(&tag).count(), 1, "{kind}");
    }
    assert_eq!(html.matches("<polyline class=\"line\"").count(), 4 + 4);
    assert_eq!(html.matches("<polyline class=\"line dashed\"").count(), 4);
    // Only nginx's first round is shaded, in both charts, from 2 s to 8 s.
    assert_eq!(html.matches("<rect class=\"steady\"").count(), 2);
    assert!(html.contains("<title>nginx round 1: steady from 2 s to 8 s</title>"));
    assert!(html.contains("data-table=\"steady\""));
    assert!(
        html.contains("<td>warm-up: steady from 2 s to 8 s</td>"),
        "{html}"
    );
    assert_eq!(html.matches("<td>steady</td>").count(), 3);
    // Text and Markdown: the note and the flag, no series.
    let note = "nginx: round 1 of 2 not steady: throughput rose 100% (353 to 705 requests/s) and median latency fell 50% (2.54 to 1.27 ms)";
    assert!(text.contains(&format!("Note: {note}")), "{text}");
    assert!(text.contains("over the first 2 s (warm-up); steady from 2 s to 8 s; a warm-up of 2s"));
    assert!(md.contains(note), "{md}");
    let row = text.lines().find(|l| l.starts_with("nginx ")).unwrap();
    assert!(row.ends_with("unsteady]"), "{row}");
    assert!(
        !text.contains("HISTF") && !text.contains("timeline"),
        "{text}"
    );
    // A record without timelines has no such section.
    let html = render(&common::fixture(3, None), Format::Html, None).unwrap();
    assert!(!html.contains("timeline-rps") && !html.contains("Over time"));
}

#[test]
fn a_load_too_short_to_judge_says_so() {
    let mut rec = common::fixture_over_time();
    rec.loads[0].load = common::load_over_time("Apache/2.4.62 (Debian)", &[(400, 2_000); 3]);
    let html = render(&rec, Format::Html, None).unwrap();
    assert!(html.contains("<td>not judged: 3 intervals</td>"), "{html}");
}

#[test]
fn every_format_shows_each_server_past_its_knee() {
    let rec = common::with_overload(common::fixture(3, None));
    let v: Vec<_> = rec.overload.iter().map(|o| &o.verdict).collect();
    assert_eq!((v[0].knee, v[0].collapse), (Some(1.5), Some(false)));
    assert_eq!((v[1].knee, v[1].collapse), (Some(1.5), Some(true)));
    assert_eq!((v[0].recovery_s, v[1].recovery_s), (Some(0.0), Some(1.5)));
    let [text, md, html] = all_formats(&rec);
    assert_eq!(text.matches("Past the knee: hello").count(), 1, "{text}");
    let row = |server: &str| {
        text.lines()
            .find(|l| l.starts_with(server) && l.contains("1.5x"))
            .unwrap_or_else(|| panic!("no overload row for {server} in\n{text}"))
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(row("apache "), "apache 1875 1.5x 99% 99% no 0.00 20.0");
    assert_eq!(row("nginx "), "nginx 12800 1.5x 23% 3% yes 1.50 20.0");
    assert!(text.contains("recovery 0.5x"), "{text}");
    assert!(text.contains("non-2xx"), "{text}");
    assert!(
        md.contains("| nginx | 12800 | 1.5x | 23% | 3% | yes | 1.50 | 20.0 |"),
        "{md}"
    );
    // Per server, its rates and its latency over the staircase, the steps shaded.
    assert_eq!(html.matches("data-chart=\"overload-rate\"").count(), 2);
    assert_eq!(html.matches("data-chart=\"overload-latency\"").count(), 2);
    assert!(
        html.contains("<title>1.5x: 2812 req&#x2F;s offered</title>"),
        "{html}"
    );
    assert!(html.contains("data-table=\"overload-steps\""));
    // A run without a staircase shows none of it.
    let [text, md, html] = all_formats(&common::fixture(3, None));
    for page in [text, md, html] {
        assert!(!page.contains("Past the knee"));
    }
}
