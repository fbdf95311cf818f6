//! Every file in `tests/broken/` is a scenario with mistakes; the `# expect: LINE:COL: MESSAGE`
//! comments at its end list, in order, exactly the errors it must produce. Nothing else may be
//! reported, and the file must not validate.

use std::path::{Path, PathBuf};

fn broken_files() -> Vec<PathBuf> {
    // Relative to the crate (cargo runs tests there) so that messages naming paths are the
    // same on every machine.
    let dir = Path::new("tests/broken");
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("tests/broken exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    files
}

fn expectations(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter_map(|l| l.strip_prefix("# expect: "))
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_broken_file_gives_exactly_its_expected_errors() {
    let files = broken_files();
    assert!(
        files.len() >= 15,
        "the broken suite went missing: {files:?}"
    );
    let mut failures = Vec::new();
    for path in &files {
        let expected = expectations(path);
        assert!(
            !expected.is_empty(),
            "{} has no `# expect:` lines",
            path.display()
        );
        let kinds = scenario::Kinds::discover(&[testsupport::repo_root().join("docker")]);
        let err = match scenario::load_file_with(path, &kinds) {
            Ok(_) => {
                failures.push(format!("{} validated, but must not", path.display()));
                continue;
            }
            Err(e) => e,
        };
        let actual: Vec<String> = err
            .diagnostics()
            .iter()
            .map(|d| format!("{}:{}: {}", d.line, d.column, d.message))
            .collect();
        if actual != expected {
            failures.push(format!(
                "{}\n  expected:\n    {}\n  actual:\n    {}",
                path.display(),
                expected.join("\n    "),
                actual.join("\n    ")
            ));
        }
        // Displayed, each error is one compiler-style line naming the file.
        let shown = err.to_string();
        assert_eq!(shown.lines().count(), expected.len(), "{shown}");
        for (line, want) in shown.lines().zip(&expected) {
            let (pos, msg) = want.split_once(": ").unwrap();
            assert_eq!(line, format!("{}:{pos}: error: {msg}", path.display()));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n\n"));
}
