//! Test harness shared by the integration tests: where `../shared` is, how to run the binary,
//! scratch folders.
#![allow(dead_code)]

pub mod http;
pub mod llm;

use std::path::PathBuf;
use std::process::{Command, Output};

/// The tables `epimine run` writes.
pub const OUTPUTS: [&str; 6] = [
    "episodes.parquet",
    "assignments.parquet",
    "episode_articles.parquet",
    "fragments.parquet",
    "terms.parquet",
    "pairs.parquet",
];

/// `../shared` beside the checkout (or `$EPIMINE_SHARED`).
pub fn shared_dir() -> PathBuf {
    if let Ok(dir) = std::env::var("EPIMINE_SHARED") {
        return PathBuf::from(dir);
    }
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared")
}

/// The development dataset.
pub fn dataset_dir() -> PathBuf {
    let dir = shared_dir().join("data/epimine");
    assert!(
        dir.is_dir(),
        "the development dataset is missing at {} (set EPIMINE_SHARED)",
        dir.display()
    );
    dir
}

/// Runs the `epimine` binary.
pub fn epimine(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_epimine"))
        .args(args)
        .env("RUST_LOG", "warn")
        .output()
        .expect("the epimine binary runs")
}

/// Runs the binary and insists on success; returns stdout.
pub fn epimine_ok(args: &[&str]) -> String {
    let out = epimine(args);
    assert!(
        out.status.success(),
        "epimine {args:?} failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8(out.stdout).expect("utf-8 stdout")
}

/// A fresh scratch folder.
pub fn scratch() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}

/// A path as &str.
pub fn s(p: &std::path::Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// The files directly in a folder, sorted.
pub fn files_in(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// Runs a future on a fresh runtime.
pub fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

/// A hostfile of `n` free ports on 127.0.0.1 (one `host:port` a line) for multi-process runs.
pub fn hostfile(dir: &std::path::Path, n: usize) -> PathBuf {
    let listeners: Vec<std::net::TcpListener> = (0..n)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").expect("a free port"))
        .collect();
    let text: String = listeners
        .iter()
        .map(|l| format!("127.0.0.1:{}\n", l.local_addr().unwrap().port()))
        .collect();
    let path = dir.join("hosts.txt");
    std::fs::write(&path, text).expect("hostfile");
    path
}

/// A run folder's `run.json`, parsed.
pub fn run_json(out: &std::path::Path) -> serde_json::Value {
    let text = std::fs::read_to_string(out.join("run.json"))
        .unwrap_or_else(|e| panic!("{}: {e}", out.join("run.json").display()));
    serde_json::from_str(&text).expect("run.json is JSON")
}

/// The tiny random-weight BERT fixture (fast in any build).
pub fn tiny_model() -> String {
    fixture_model("tiny-bert")
}

/// A model folder of `tests/fixtures/encoders/` (`tiny-bert`, `tiny-mpnet`).
pub fn fixture_model(name: &str) -> String {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/encoders")
        .join(name);
    assert!(
        dir.join("model.safetensors").is_file(),
        "missing {}",
        dir.display()
    );
    s(&dir).to_string()
}

/// `epimine run` on a synthetic corpus (its own `background.txt`) into `out` with the tiny model;
/// callers add their own flags.
pub fn synth_run(corpus: &std::path::Path, out: &std::path::Path) -> Command {
    synth_run_with(corpus, s(out), &tiny_model())
}

/// [`synth_run`] into `out` as given (a path or a URL) with the encoder `model`.
pub fn synth_run_with(corpus: &std::path::Path, out: &str, model: &str) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_epimine"));
    command.args([
        "run",
        "--corpus",
        s(corpus),
        "--background",
        s(&corpus.join("background.txt")),
        "--out",
        out,
        "--model",
        model,
    ]);
    command
}

/// `epimine synth` into `<dir>/corpus`.
pub fn synth(dir: &std::path::Path, events: usize, docs: usize) -> PathBuf {
    let corpus = dir.join("corpus");
    epimine_ok(&[
        "synth",
        "--events",
        &events.to_string(),
        "--docs-per-event",
        &docs.to_string(),
        "--out",
        s(&corpus),
    ]);
    corpus
}

/// [`synth`], plus an event too small to have salient terms (`zz_tiny_event`, 3 one-line
/// segments): a run of it fails that event and completes the others (exit 3).
pub fn synth_with_a_failing_event(dir: &std::path::Path, events: usize, docs: usize) -> PathBuf {
    use epimine::storage::Location;
    use epimine::tables::Segment;
    let corpus = synth(dir, events, docs);
    let loc = Location::parse(s(&corpus), false).unwrap();
    let mut segments: Vec<Segment> = block_on(loc.read_table()).unwrap();
    for i in 0..3 {
        segments.push(Segment {
            key_event: "zz_tiny_event".into(),
            theme: None,
            doc_id: 0,
            doc_date: None,
            seg_idx: i,
            text: format!("A lone sentence number {i}."),
            source_id: None,
            title: None,
        });
    }
    block_on(loc.write_table(&segments)).unwrap();
    corpus
}

/// The S3 bucket of the test server, from `EPIMINE_TEST_S3_BUCKET`. Without it the S3 half of
/// the suite fails, unless `EPIMINE_SKIP_S3=1` says to skip it on purpose.
pub fn s3_root(test: &str) -> Option<String> {
    match std::env::var("EPIMINE_TEST_S3_BUCKET") {
        Ok(bucket) => {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos();
            Some(format!(
                "s3://{bucket}/{test}-{}-{nanos}",
                std::process::id()
            ))
        }
        Err(_) if std::env::var("EPIMINE_SKIP_S3").as_deref() == Ok("1") => {
            eprintln!("EPIMINE_SKIP_S3=1: skipping the s3:// part");
            None
        }
        Err(_) => panic!(
            "EPIMINE_TEST_S3_BUCKET is not set: run the tests through scripts/ci/test.sh, which \
             starts a local S3 server (or set EPIMINE_SKIP_S3=1 to skip on purpose)"
        ),
    }
}

/// Waits for a child at most `secs` seconds (killing it then and failing); its output and how
/// long it took.
pub fn wait_bounded(mut child: std::process::Child, secs: u64) -> (Output, std::time::Duration) {
    let started = std::time::Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return (child.wait_with_output().unwrap(), started.elapsed());
        }
        if started.elapsed().as_secs() > secs {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "still running after {secs} s: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// A process's standard error as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Insists that a process succeeded (its standard error and output in the failure); returns it.
pub fn ok(output: Output) -> Output {
    assert!(
        output.status.success(),
        "failed: {}\n{}",
        String::from_utf8_lossy(&output.stderr),
        String::from_utf8_lossy(&output.stdout)
    );
    output
}

/// Every row of table `T` in the folder (or URL) `dir`.
pub fn read_rows<T: epimine::tables::Table>(dir: &std::path::Path) -> Vec<T> {
    let loc = epimine::storage::Location::parse(s(dir), false).unwrap();
    block_on(loc.read_table::<T>()).unwrap()
}

/// Insists that the two run folders hold the same bytes in every table of [`OUTPUTS`], none empty.
pub fn assert_same_tables(a: &std::path::Path, b: &std::path::Path, what: &str) {
    for f in OUTPUTS {
        let x = std::fs::read(a.join(f)).unwrap_or_else(|e| panic!("{what}: {f}: {e}"));
        assert!(!x.is_empty(), "{what}: {f} is empty");
        assert!(
            x == std::fs::read(b.join(f)).unwrap(),
            "{what}: {f} differs"
        );
    }
}

/// The cosine of two vectors of the same width, in f64.
pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    assert_eq!(a.len(), b.len(), "vector widths");
    let dot: f64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| f64::from(*x) * f64::from(*y))
        .sum();
    let norm = |v: &[f32]| v.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    dot / (norm(a) * norm(b))
}

/// The cached all-MiniLM-L6-v2, if any. `EPIMINE_REQUIRE_MINILM=1` (set by scripts/ci/test.sh,
/// which fetches it first) makes its absence a failure instead of a skip.
pub fn minilm_dir() -> Option<PathBuf> {
    let cache = epimine::models::model_cache(None).ok()?;
    let dir = epimine::models::default_model_dir(&cache);
    if epimine::models::is_complete(&dir) {
        return Some(dir);
    }
    assert!(
        std::env::var("EPIMINE_REQUIRE_MINILM").as_deref() != Ok("1"),
        "EPIMINE_REQUIRE_MINILM=1 but no all-MiniLM-L6-v2 at {} (run `epimine models fetch`)",
        dir.display()
    );
    eprintln!(
        "all-MiniLM-L6-v2 is not in the cache ({}): skipping",
        dir.display()
    );
    None
}

/// The import flags naming the columns of `examples/articles.csv` and of the fed stories
/// (`event,url,date,headline,body`).
pub const COLUMN_FLAGS: [&str; 10] = [
    "--key-event-column",
    "event",
    "--id-column",
    "url",
    "--published-column",
    "date",
    "--title-column",
    "headline",
    "--text-column",
    "body",
];
