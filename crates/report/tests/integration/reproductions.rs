//! The seed posts beside today's figures: parsing the published figures, rendering the page,
//! and the committed page being exactly what its committed inputs render to.

use crate::common;
use report::RecordIo;

use std::path::{Path, PathBuf};

use report::reproductions::{parse_published, render_markdown, Reproductions, PUBLISHED_FILE};
use report::RunRecord;

const PUBLISHED: &str = r#"
[[post]]
seed = "000_test.txt"
title = "Apache, nginx and Tornado on a small page"
machine = "a Celeron"
load = "ab -n 300 -c 10"
conclusion = "nginx is 1.66 times Apache"
scenarios = ["hello"]

[[post.row]]
scenario = "hello"
server = "apache"
path = "/hello.html"
software = "Apache/2.2.12"
requests_per_second = 1888.58
time_per_request_ms = 158.85
p50_ms = 49

[[post.row]]
scenario = "hello"
server = "nginx"
path = "/hello.html"
software = "nginx/0.6.13"
requests_per_second = 3152.12
time_per_request_ms = 95.174
p50_ms = 27

[[post.row]]
scenario = "hello"
server = "tornado"
path = "/hello.html"
software = "TornadoServer/0.1"
requests_per_second = 1957.33
time_per_request_ms = 153.27
"#;

fn write_record(dir: &Path, name: &str, rec: &RunRecord) {
    rec.write_atomic(&dir.join(name)).unwrap();
}

fn folder(with_records: bool) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(PUBLISHED_FILE), PUBLISHED).unwrap();
    if with_records {
        write_record(dir.path(), "hello.json", &common::fixture(3, None));
        let mut headroom = common::with_capacity(common::fixture(3, None));
        headroom.run_id.push_str("-headroom");
        write_record(dir.path(), "hello.headroom.json", &headroom);
    }
    dir
}

#[test]
fn the_page_puts_the_posts_figures_beside_todays() {
    let dir = folder(true);
    let page = render_markdown(&Reproductions::load(dir.path()).unwrap());
    // The post's ratio and today's, side by side, with the software of then and now.
    let nginx = page
        .lines()
        .find(|l| l.starts_with("| nginx | nginx/0.6.13 | nginx/1.26.3 |"))
        .unwrap_or_else(|| panic!("no nginx row in:\n{page}"));
    let cells: Vec<&str> = nginx.split(" | ").collect();
    assert_eq!(cells[3], "3152", "{nginx}");
    assert_eq!(cells[5], "1.67x", "the post's own ratio: {nginx}");
    // Today's ratio: the fixture's nginx runs the page in 0.1807 s to apache's 0.30 s.
    assert_eq!(cells[6], "1.66x", "{nginx}");
    // A server the run could not build says why, in one line.
    assert!(
        page.contains("| tornado | TornadoServer/0.1 | - | 1957 | - | 1.04x | - |"),
        "{page}"
    );
    assert!(
        page.contains("unavailable: image build failed: pip could not reach its index"),
        "{page}"
    );
    // The capacity search: apache found, nginx only a lower bound at the generator's limit.
    assert!(page.contains("capacity at p99 <= 10ms"), "{page}");
    assert!(page.contains("| >= 12800 | >= 6.83x |"), "{page}");
    assert!(
        page.contains("- the post, by requests/s: nginx > tornado > apache"),
        "{page}"
    );
    assert!(
        page.contains("- today, by requests/s: nginx > apache"),
        "{page}"
    );
    assert!(page.contains("(lower bounds among them)"), "{page}");
    // The machine the records say they ran on.
    assert!(page.contains("## The machine"), "{page}");
    // The same inputs give the same bytes.
    assert_eq!(
        page,
        render_markdown(&Reproductions::load(dir.path()).unwrap())
    );
}

#[test]
fn a_post_not_yet_measured_says_so() {
    let dir = folder(false);
    let page = render_markdown(&Reproductions::load(dir.path()).unwrap());
    assert!(page.contains("As published: not measured yet."), "{page}");
    assert!(
        page.contains("With headroom and capacity: not measured yet."),
        "{page}"
    );
    assert!(page.contains("run `just reproduce`"), "{page}");
}

#[test]
fn published_figures_are_checked_with_their_position() {
    let path = PathBuf::from("published.toml");
    let bad = PUBLISHED.replace(
        "requests_per_second = 3152.12",
        "requests_per_second = \"fast\"",
    );
    let e = parse_published(&bad, &path).unwrap_err().to_string();
    assert!(e.starts_with("published.toml: line 24, column 23: "), "{e}");
    assert!(
        e.contains("invalid type: string \"fast\", expected f64"),
        "{e}"
    );

    let stray = PUBLISHED.replace(
        "scenario = \"hello\"\nserver = \"nginx\"",
        "scenario = \"robots\"\nserver = \"nginx\"",
    );
    let e = parse_published(&stray, &path).unwrap_err().to_string();
    assert!(
        e.contains("names scenario \"robots\", which is not among its scenarios [\"hello\"]"),
        "{e}"
    );

    let unknown = PUBLISHED.replace("p50_ms = 27", "p50 = 27");
    let e = parse_published(&unknown, &path).unwrap_err().to_string();
    assert!(e.contains("unknown field `p50`"), "{e}");
}

#[test]
fn a_record_that_is_not_one_is_an_error_naming_it() {
    let dir = folder(false);
    std::fs::write(dir.path().join("hello.json"), "{\"half\": ").unwrap();
    let e = Reproductions::load(dir.path()).unwrap_err().to_string();
    assert!(e.contains("hello.json"), "{e}");
}

/// docs/reproductions.md is generated: it must be what its committed inputs render to, so
/// that a figure on the page is always one a record holds.
#[test]
fn the_committed_page_is_what_the_committed_records_render_to() {
    let root = testsupport::repo_root();
    let r = Reproductions::load(&root.join("results/reproductions")).unwrap();
    let committed = std::fs::read_to_string(root.join("docs/reproductions.md")).unwrap();
    assert!(
        render_markdown(&r) == committed,
        "docs/reproductions.md is not what results/reproductions/ renders to: run `just reproductions`"
    );
}
