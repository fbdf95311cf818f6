//! The generated documents are exact, valid for their format, and deterministic.

use scenario::documents::{generate, write_generated, HTML_MIN_SIZE, PNG_MIN_SIZE};
use scenario::{materialize, GeneratorKind};
use std::io::Cursor;
use std::path::Path;

fn decode_png(bytes: &[u8]) -> (png::OutputInfo, Vec<u8>) {
    let decoder = png::Decoder::new(Cursor::new(bytes));
    let mut reader = decoder.read_info().expect("PNG header decodes");
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).expect("PNG image data decodes");
    reader.finish().expect("PNG ends with a valid IEND");
    (info, buf)
}

#[test]
fn the_seed_png_is_23619_bytes_and_decodes() {
    let bytes = generate(GeneratorKind::Png, 23_619).unwrap();
    assert_eq!(bytes.len(), 23_619);
    let (info, pixels) = decode_png(&bytes);
    assert!(
        info.width >= 64 && info.height >= 64,
        "{}x{}",
        info.width,
        info.height
    );
    assert_eq!(pixels.len(), info.buffer_size());
    // Pseudo-random pixels: far from a flat image.
    let distinct: std::collections::HashSet<u8> = pixels.iter().copied().collect();
    assert!(distinct.len() > 200);
}

#[test]
fn pngs_of_many_sizes_decode_at_their_exact_size() {
    let sizes = [
        PNG_MIN_SIZE,
        PNG_MIN_SIZE + 1,
        91,
        92,
        100,
        1000,
        65_600,
        70_000,
        250_001,
    ];
    for size in sizes {
        let bytes = generate(GeneratorKind::Png, size).unwrap();
        assert_eq!(bytes.len() as u64, size);
        let (info, _) = decode_png(&bytes);
        assert!(info.width >= 1 && info.height >= 1, "size {size}");
    }
    assert!(generate(GeneratorKind::Png, PNG_MIN_SIZE - 1).is_err());
}

#[test]
fn generators_are_deterministic() {
    for (kind, size) in [
        (GeneratorKind::Html, 468),
        (GeneratorKind::Png, 23_619),
        (GeneratorKind::Blob, 70_001),
    ] {
        assert_eq!(generate(kind, size).unwrap(), generate(kind, size).unwrap());
    }
    assert_eq!(
        generate(GeneratorKind::Html, HTML_MIN_SIZE).unwrap().len() as u64,
        HTML_MIN_SIZE
    );
}

#[test]
fn the_hundred_megabyte_blob_is_exact_and_streams() {
    // Counted, not stored: the generator must not need the whole body in memory.
    struct Count(u64, u64);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len() as u64;
            self.1 = self.1.max(buf.len() as u64);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut sink = Count(0, 0);
    let start = std::time::Instant::now();
    write_generated(GeneratorKind::Blob, 104_857_600, &mut sink).unwrap();
    let took = start.elapsed();
    assert_eq!(sink.0, 104_857_600);
    assert!(sink.1 <= 1 << 20, "wrote in pieces of {} bytes", sink.1);
    // Generous for an unoptimised test build on a shared machine; release is far faster.
    assert!(took.as_secs() < 20, "100 MB took {took:?}");
}

const PLAN: &str = r#"
name = "docs"
[load]
requests = 10
[[server]]
name = "nginx"
kind = "nginx"
[[document]]
name = "hello"
path = "/"
generate = "hello"
[[document]]
name = "html"
path = "/pages/small.html"
generate = "html"
size = 468
[[document]]
name = "png"
path = "/cherokee-logo.png"
generate = "png"
size = 23619
[[document]]
name = "blob"
path = "/1mb.bin"
generate = "blob"
size = "1m"
[[document]]
name = "robots"
path = "/robots.txt"
file = "files/robots.txt"
"#;

#[test]
fn materialize_writes_each_document_at_its_url_path_with_its_hash() {
    // As if the scenario lived in scenarios/, beside the robots.txt it serves.
    let scenario_path = testsupport::repo_root().join("scenarios/docs.toml");
    let plan = scenario::parse_str(PLAN, &scenario_path).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let docs = materialize(&plan, dir.path()).unwrap();

    let got: Vec<(&str, u64)> = docs.iter().map(|d| (d.url_path.as_str(), d.len)).collect();
    assert_eq!(
        got,
        [
            ("/", 13),
            ("/pages/small.html", 468),
            ("/cherokee-logo.png", 23_619),
            ("/1mb.bin", 1 << 20),
            ("/robots.txt", 204),
        ]
    );
    let expected_files = [
        "index.html",
        "pages/small.html",
        "cherokee-logo.png",
        "1mb.bin",
        "robots.txt",
    ];
    for (doc, rel) in docs.iter().zip(expected_files) {
        assert_eq!(doc.file, dir.path().join(rel));
        let bytes = std::fs::read(&doc.file).unwrap();
        assert_eq!(bytes.len() as u64, doc.len);
        assert_eq!(doc.sha256, scenario::sha256_hex(&bytes), "{}", doc.name);
    }
    assert_eq!(
        std::fs::read(dir.path().join("index.html")).unwrap(),
        b"Hello, World!"
    );
    assert_eq!(
        docs[0].sha256, "dffd6021bb2bd5b0af676290809ec3a53191dd81c7f70a4b28688a362182986f",
        "SHA-256 of \"Hello, World!\""
    );
    let robots =
        std::fs::read(testsupport::repo_root().join("scenarios/files/robots.txt")).unwrap();
    assert_eq!(
        std::fs::read(dir.path().join("robots.txt")).unwrap(),
        robots
    );
    decode_png(&std::fs::read(dir.path().join("cherokee-logo.png")).unwrap());

    // Same plan, another folder: the same bytes.
    let again = tempfile::tempdir().unwrap();
    let docs2 = materialize(&plan, again.path()).unwrap();
    let hashes =
        |d: &[scenario::MaterializedDoc]| d.iter().map(|x| x.sha256.clone()).collect::<Vec<_>>();
    assert_eq!(hashes(&docs), hashes(&docs2));
}

#[test]
fn a_file_that_changed_since_validation_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f.txt"), b"1234").unwrap();
    let path = dir.path().join("s.toml");
    std::fs::write(
        &path,
        "name = \"f\"\n[load]\nrequests = 1\n[[server]]\nname = \"n\"\nkind = \"nginx\"\n[[document]]\nname = \"f\"\npath = \"/f.txt\"\nfile = \"f.txt\"\n",
    )
    .unwrap();
    let kinds = scenario::Kinds::discover(&[testsupport::repo_root().join("docker")]);
    let plan = scenario::load_file_with(&path, &kinds).unwrap();
    std::fs::write(dir.path().join("f.txt"), b"12345").unwrap();
    let out = tempfile::tempdir().unwrap();
    let err = materialize(&plan, out.path()).unwrap_err();
    assert!(err.to_string().contains("it is 5 bytes but was 4"), "{err}");
}

/// A scenario serving `docs/sub/page.txt`, validated; returns (its folder, plan).
fn page_in_a_subfolder(content: &[u8]) -> (tempfile::TempDir, scenario::Plan) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("docs/sub")).unwrap();
    std::fs::write(dir.path().join("docs/sub/page.txt"), content).unwrap();
    let path = dir.path().join("s.toml");
    std::fs::write(
        &path,
        "name = \"f\"\ndocuments = \"docs\"\n[load]\nrequests = 1\n[[server]]\nname = \"n\"\nkind = \"nginx\"\n[[document]]\nname = \"page\"\npath = \"/page.txt\"\nfile = \"docs/sub/page.txt\"\n",
    )
    .unwrap();
    let kinds = scenario::Kinds::discover(&[testsupport::repo_root().join("docker")]);
    let plan = scenario::load_file_with(&path, &kinds).unwrap();
    (dir, plan)
}

/// A readable file of the same length elsewhere, standing in for a secret of this machine.
fn secret_beside(content: &[u8]) -> tempfile::TempDir {
    let secret = tempfile::tempdir().unwrap();
    std::fs::write(secret.path().join("page.txt"), content).unwrap();
    secret
}

#[test]
fn a_folder_swapped_for_a_symlink_after_validation_is_not_followed() {
    let (dir, plan) = page_in_a_subfolder(b"the real page");
    let secret = secret_beside(b"SECRET-BYTES!");
    let sub = dir.path().join("docs/sub");
    std::fs::rename(&sub, dir.path().join("docs/sub.real")).unwrap();
    std::os::unix::fs::symlink(secret.path(), &sub).unwrap();
    let out = tempfile::tempdir().unwrap();
    let err = materialize(&plan, out.path()).unwrap_err().to_string();
    assert!(
        err.contains("symlink") && err.contains("not followed"),
        "{err}"
    );
    let written = std::fs::read(out.path().join("page.txt")).unwrap_or_default();
    assert!(!written.starts_with(b"SECRET"), "served {written:?}");
}

#[test]
fn a_file_replaced_after_validation_is_refused_even_at_the_same_length() {
    let (dir, plan) = page_in_a_subfolder(b"the real page");
    let page = dir.path().join("docs/sub/page.txt");
    // Kept aside, so that the new file cannot be given its inode again.
    std::fs::rename(&page, dir.path().join("docs/page.old")).unwrap();
    std::fs::write(&page, b"another page!").unwrap();
    let out = tempfile::tempdir().unwrap();
    let err = materialize(&plan, out.path()).unwrap_err().to_string();
    assert!(err.contains("another file than the one"), "{err}");
}

#[test]
fn a_folder_swapped_in_a_tight_loop_never_serves_the_target() {
    let (dir, plan) = page_in_a_subfolder(b"the real page");
    let secret = secret_beside(b"SECRET-BYTES!");
    let sub = dir.path().join("docs/sub");
    let real = dir.path().join("docs/sub.real");
    let link = dir.path().join("docs/sub.link");
    std::os::unix::fs::symlink(secret.path(), &link).unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let swapper = {
        let (stop, sub, real, link) = (stop.clone(), sub.clone(), real.clone(), link.clone());
        std::thread::spawn(move || {
            let started = std::time::Instant::now();
            let mut swaps = 0u64;
            // Bounded in time and count whatever the other side does.
            while !stop.load(std::sync::atomic::Ordering::Relaxed)
                && started.elapsed() < std::time::Duration::from_secs(20)
                && swaps < 5_000_000
            {
                // The folder out, the symlink in; then back.
                let _ = std::fs::rename(&sub, &real);
                let _ = std::fs::rename(&link, &sub);
                std::hint::spin_loop();
                let _ = std::fs::rename(&sub, &link);
                let _ = std::fs::rename(&real, &sub);
                swaps += 1;
            }
            swaps
        })
    };
    let (mut served, mut refused) = (0, 0);
    for _ in 0..20 {
        let out = tempfile::tempdir().unwrap();
        match materialize(&plan, out.path()) {
            Ok(docs) => {
                assert_eq!(std::fs::read(&docs[0].file).unwrap(), b"the real page");
                served += 1;
            }
            Err(e) => {
                let written = std::fs::read(out.path().join("page.txt")).unwrap_or_default();
                assert!(!written.starts_with(b"SECRET"), "{e}: wrote {written:?}");
                refused += 1;
            }
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    assert!(swaps > 0);
    assert_eq!(served + refused, 20);
}

#[test]
fn documents_larger_than_the_free_space_are_refused_before_a_byte_is_written() {
    let src = "name = \"big\"\n[load]\nrequests = 1\n[[server]]\nname = \"n\"\nkind = \"nginx\"\n\
               [[document]]\nname = \"small\"\npath = \"/small.html\"\ngenerate = \"html\"\nsize = \"468\"\n\
               [[document]]\nname = \"huge\"\npath = \"/huge.bin\"\ngenerate = \"blob\"\nsize = \"1000000t\"\n";
    let kinds = scenario::Kinds::discover(&[testsupport::repo_root().join("docker")]);
    let plan = scenario::parse_str_with(src, Path::new("big.toml"), &kinds).unwrap();
    let out = tempfile::tempdir().unwrap();
    let err = materialize(&plan, out.path()).unwrap_err().to_string();
    assert!(err.contains("`huge`") && err.contains("free"), "{err}");
    assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 0);
}
