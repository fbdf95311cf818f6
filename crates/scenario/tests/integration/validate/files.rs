//! `file` documents: where they may come from and what is refused.

use super::load_file;
use scenario::{DocumentSource, Plan, ScenarioError};
use std::path::Path;

#[test]
fn file_documents_resolve_against_the_scenario_folder() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("docs")).unwrap();
    std::fs::write(dir.path().join("docs/page.txt"), b"twelve bytes").unwrap();
    let path = dir.path().join("s.toml");
    std::fs::write(
        &path,
        r#"name = "files"
[load]
requests = 5
[[server]]
name = "nginx"
kind = "nginx"
[[document]]
name = "page"
path = "/sub/page.txt"
file = "docs/page.txt"
"#,
    )
    .unwrap();
    let plan = load_file(&path).unwrap();
    let doc = &plan.documents[0];
    let DocumentSource::File(file) = &doc.source else {
        panic!("{:?}", doc.source)
    };
    assert_eq!(file.path, dir.path().join("docs/page.txt"));
    assert_eq!(doc.length, 12);
    assert_eq!(doc.disk_path, Path::new("sub/page.txt"));
}

#[test]
fn an_unreadable_file_is_a_read_error_naming_it() {
    let err = scenario::load_file(Path::new("no/such/scenario.toml")).unwrap_err();
    assert!(matches!(err, ScenarioError::Read { .. }));
    assert!(err.diagnostics().is_empty());
    assert!(err
        .to_string()
        .starts_with("no/such/scenario.toml: error: cannot read the scenario file"));
}

/// A scenario in its own folder, with `file` documents named as given.
fn with_files(files: &[&str], extra: &str) -> (tempfile::TempDir, Result<Plan, ScenarioError>) {
    let dir = tempfile::tempdir().unwrap();
    let scenario_dir = dir.path().join("scenario");
    std::fs::create_dir(&scenario_dir).unwrap();
    let mut text = format!("name = \"files\"\n{extra}\n[load]\nrequests = 1\n[[server]]\nname = \"a\"\nkind = \"nginx\"\n");
    for (i, f) in files.iter().enumerate() {
        text.push_str(&format!(
            "[[document]]\nname = \"d{i}\"\npath = \"/d{i}\"\nfile = \"{f}\"\n"
        ));
    }
    let path = scenario_dir.join("s.toml");
    std::fs::write(&path, &text).unwrap();
    let r = load_file(&path);
    (dir, r)
}

fn messages(r: &Result<Plan, ScenarioError>) -> Vec<String> {
    match r {
        Ok(_) => Vec::new(),
        Err(e) => e.diagnostics().iter().map(|d| d.message.clone()).collect(),
    }
}

#[test]
fn files_outside_the_scenarios_folder_are_refused() {
    // Host secrets by absolute path, by climbing out, and through a symlink.
    let (dir, r) = with_files(&["/etc/passwd", "../../../../../../etc/passwd"], "");
    let m = messages(&r);
    assert_eq!(m.len(), 2, "{m:?}");
    assert!(m.iter().all(|m| m.contains("is outside")), "{m:?}");
    drop(dir);

    let dir = tempfile::tempdir().unwrap();
    let scenario_dir = dir.path().join("scenario");
    std::fs::create_dir(&scenario_dir).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", scenario_dir.join("innocent.txt")).unwrap();
    let path = scenario_dir.join("s.toml");
    std::fs::write(
        &path,
        "name = \"x\"\n[load]\nrequests = 1\n[[server]]\nname = \"a\"\nkind = \"nginx\"\n\
         [[document]]\nname = \"d\"\npath = \"/d\"\nfile = \"innocent.txt\"\n",
    )
    .unwrap();
    let m = messages(&load_file(&path));
    assert_eq!(m.len(), 1, "{m:?}");
    assert!(
        m[0].contains("is outside") && m[0].contains("/etc/passwd"),
        "{m:?}"
    );
}

#[test]
fn the_shadow_file_is_never_served() {
    // Readable by root only: refused whatever the scenario's folder (here `documents = "/etc"`
    // would even put it inside).
    if !std::path::Path::new("/etc/shadow").exists() {
        return;
    }
    let (_dir, r) = with_files(&["/etc/shadow"], "documents = \"/etc\"");
    let m = messages(&r);
    assert_eq!(m.len(), 1, "{m:?}");
    assert!(m[0].contains("not readable by other users"), "{m:?}");
    // And `documents = "/"` is refused outright.
    let (_dir, r) = with_files(&["/etc/hostname"], "documents = \"/\"");
    assert!(
        messages(&r)
            .iter()
            .any(|m| m.contains("any file of this machine")),
        "{:?}",
        messages(&r)
    );
}

#[test]
fn a_documents_folder_is_where_files_may_come_from() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let scenario_dir = dir.path().join("scenario");
    let docs = dir.path().join("docs");
    std::fs::create_dir(&scenario_dir).unwrap();
    std::fs::create_dir(&docs).unwrap();
    std::fs::write(docs.join("page.html"), "<p>hi</p>").unwrap();
    std::fs::write(docs.join("secret.txt"), "s").unwrap();
    std::fs::set_permissions(
        docs.join("secret.txt"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    let path = scenario_dir.join("s.toml");
    let text = |file: &str| {
        format!(
            "name = \"x\"\ndocuments = \"../docs\"\n[load]\nrequests = 1\n[[server]]\nname = \"a\"\nkind = \"nginx\"\n\
             [[document]]\nname = \"d\"\npath = \"/d\"\nfile = \"{file}\"\n"
        )
    };
    std::fs::write(&path, text("../docs/page.html")).unwrap();
    let plan = load_file(&path).unwrap();
    let DocumentSource::File(file) = &plan.documents[0].source else {
        panic!("{:?}", plan.documents[0].source)
    };
    assert_eq!(file.path, docs.canonicalize().unwrap().join("page.html"));
    std::fs::write(&path, text("../docs/secret.txt")).unwrap();
    let m = messages(&load_file(&path));
    assert!(m[0].contains("mode 0600"), "{m:?}");
}
