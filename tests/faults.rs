//! Nothing lost, nothing wrong accepted: a re-run that fails (a broken model, a corpus of the
//! wrong schema, a kill half way) leaves a finished run in `--out` whole; segments that repeat a
//! key fail their event; an object store that stops answering stops the run at its first
//! failure, naming the object in every retry line; SIGTERM and SIGHUP say what is kept and how
//! to resume; a location that is not there says whether it is the corpus, the background or the
//! model. Real processes, real files, a real S3 server (moto, started here from the one
//! `scripts/ci/s3-server.sh` installed).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::util::*;
use arrow_array::{ArrayRef, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use epimine::storage::Location;
use epimine::tables::{Assignment, Segment, Table};

/// `epimine run` on a synthetic corpus into `out` with the tiny model (or `model`), extra
/// arguments and environment.
fn run_command(corpus: &Path, out: &str, model: Option<&str>, extra: &[&str]) -> Command {
    let tiny = tiny_model();
    let mut cmd = synth_run_with(corpus, out, model.unwrap_or(&tiny));
    cmd.args(extra)
        .env("RUST_LOG", "warn")
        .env_remove("EPIMINE_FAULT");
    cmd
}

/// Every file under `dir` (relative path → bytes).
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let bytes = std::fs::read(&p).unwrap();
                files.insert(p.strip_prefix(dir).unwrap().to_path_buf(), bytes);
            }
        }
    }
    files
}

fn assert_unchanged(before: &BTreeMap<PathBuf, Vec<u8>>, out: &Path, what: &str) {
    let after = snapshot(out);
    let names = |m: &BTreeMap<PathBuf, Vec<u8>>| m.keys().cloned().collect::<Vec<_>>();
    assert_eq!(names(&after), names(before), "{what}: the files of --out");
    for (name, bytes) in before {
        assert!(after[name] == *bytes, "{what}: {} changed", name.display());
    }
}

fn eval(corpus: &Path, out: &Path) -> Output {
    epimine(&["eval", "--corpus", s(corpus), "--run", s(out), "--json"])
}

fn report(out: &Path) -> serde_json::Value {
    crate::util::run_json(out)
}

/// A copy of the tiny model whose `model.safetensors` is cut to half.
fn broken_model(dir: &Path) -> PathBuf {
    let model = dir.join("broken-model");
    std::fs::create_dir_all(&model).unwrap();
    for e in std::fs::read_dir(tiny_model()).unwrap() {
        let p = e.unwrap().path();
        if p.is_file() {
            std::fs::copy(&p, model.join(p.file_name().unwrap())).unwrap();
        }
    }
    let weights = model.join("model.safetensors");
    let bytes = std::fs::read(&weights).unwrap();
    std::fs::write(&weights, &bytes[..bytes.len() / 2]).unwrap();
    model
}

#[test]
fn a_broken_model_is_found_before_out_is_touched() {
    let dir = scratch();
    let corpus = synth(dir.path(), 6, 10);
    let out = dir.path().join("out");
    ok(run_command(&corpus, s(&out), None, &[]).output().unwrap());
    let finished = snapshot(&out);
    let model = broken_model(dir.path());
    let o = run_command(&corpus, s(&out), Some(s(&model)), &[])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let msg = stderr(&o);
    assert!(
        msg.contains("model.safetensors") && msg.contains("loading weights"),
        "{msg}"
    );
    assert!(!msg.contains("panicked"), "{msg}");
    // Nothing of the finished run changed: run.json, job.toml, the tables, every checkpoint.
    assert_unchanged(&finished, &out, "a broken model");
    ok(eval(&corpus, &out));
    // The good model again: every checkpoint reused.
    ok(run_command(&corpus, s(&out), None, &[]).output().unwrap());
    assert_eq!(report(&out)["checkpoints"]["reused"], 6);
}

#[test]
fn a_re_run_killed_half_way_leaves_the_finished_run_whole() {
    let dir = scratch();
    let corpus = synth(dir.path(), 8, 10);
    let out = dir.path().join("out");
    ok(run_command(&corpus, s(&out), None, &["-w", "1"])
        .output()
        .unwrap());
    let finished: BTreeMap<PathBuf, Vec<u8>> = snapshot(&out)
        .into_iter()
        .filter(|(p, _)| !p.starts_with("_checkpoints"))
        .collect();
    // Other settings (every event computed again), killed after two checkpoints.
    let killed = run_command(
        &corpus,
        s(&out),
        None,
        &["-w", "1", "--set", "episodes.keywords=7"],
    )
    .env("EPIMINE_FAULT", "checkpoint:2")
    .output()
    .unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(killed.status.signal(), Some(9), "{}", stderr(&killed));
    for (name, bytes) in &finished {
        assert!(
            std::fs::read(out.join(name)).unwrap() == *bytes,
            "{} changed",
            name.display()
        );
    }
    // Still one whole run: eval reads it.
    let scored = ok(eval(&corpus, &out));
    assert!(scored.stdout.len() > 10);
    // The same re-run, not killed, commits its own run.
    ok(run_command(
        &corpus,
        s(&out),
        None,
        &["-w", "1", "--set", "episodes.keywords=7"],
    )
    .output()
    .unwrap());
    assert_eq!(report(&out)["job"]["episodes"]["keywords"], 7);
    assert!(std::fs::read_to_string(out.join("job.toml"))
        .unwrap()
        .contains("keywords = 7"));
}

/// The corpus's segments rewritten with `column` of another type.
fn corpus_with(dir: &Path, corpus: &Path, name: &str, column: Field, values: ArrayRef) -> PathBuf {
    let bad = dir.join(name);
    std::fs::create_dir_all(&bad).unwrap();
    std::fs::copy(corpus.join("background.txt"), bad.join("background.txt")).unwrap();
    let segments: Vec<Segment> = block_on(
        Location::parse(s(corpus), false)
            .unwrap()
            .read_table::<Segment>(),
    )
    .unwrap();
    let good = Segment::to_batch(&segments);
    let schema = Segment::schema();
    let mut fields: Vec<Field> = schema.fields().iter().map(|f| (**f).clone()).collect();
    let mut columns = good.columns().to_vec();
    let at = schema.index_of(column.name()).unwrap();
    fields[at] = column;
    columns[at] = values;
    let schema = Arc::new(Schema::new(fields));
    let batch = RecordBatch::try_new(Arc::clone(&schema), columns).unwrap();
    block_on(Location::parse(s(&bad), false).unwrap().write_parquet(
        "segments.parquet",
        schema,
        &[batch],
    ))
    .unwrap();
    bad
}

#[test]
fn a_corpus_of_the_wrong_schema_is_found_before_out_is_touched() {
    let dir = scratch();
    let corpus = synth(dir.path(), 3, 10);
    let out = dir.path().join("out");
    ok(run_command(&corpus, s(&out), None, &[]).output().unwrap());
    let finished = snapshot(&out);
    let segments: Vec<Segment> = block_on(
        Location::parse(s(&corpus), false)
            .unwrap()
            .read_table::<Segment>(),
    )
    .unwrap();
    let ids: ArrayRef = Arc::new(StringArray::from_iter_values(
        segments.iter().map(|s| s.doc_id.to_string()),
    ));
    let texts: ArrayRef = Arc::new(StringArray::from_iter_values(
        segments.iter().map(|s| s.text.clone()),
    ));
    for (name, field, values) in [
        (
            "doc-id-as-text",
            Field::new("doc_id", DataType::Utf8, false),
            ids,
        ),
        (
            "nullable-text",
            Field::new("text", DataType::Utf8, true),
            texts,
        ),
    ] {
        let bad = corpus_with(dir.path(), &corpus, name, field.clone(), values);
        let o = run_command(&bad, s(&out), None, &[]).output().unwrap();
        assert_eq!(o.status.code(), Some(1), "{name}: {}", stderr(&o));
        let msg = stderr(&o);
        assert!(
            msg.contains(&format!("{}/segments.parquet", s(&bad)))
                && msg.contains("unexpected columns")
                && msg.contains(field.name().as_str()),
            "{name}: {msg}"
        );
        assert_unchanged(&finished, &out, name);
    }
    // A corpus whose segments file holds no row: refused, not a run of no events that would
    // replace the finished one (and delete its checkpoints).
    let empty = dir.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    std::fs::copy(corpus.join("background.txt"), empty.join("background.txt")).unwrap();
    block_on(
        Location::parse(s(&empty), false)
            .unwrap()
            .write_table::<Segment>(&[]),
    )
    .unwrap();
    let o = run_command(&empty, s(&out), None, &[]).output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("hold no segment"), "{}", stderr(&o));
    assert_unchanged(&finished, &out, "an empty corpus");
    ok(eval(&corpus, &out));
}

#[test]
fn segments_that_repeat_a_key_fail_their_event_and_eval_refuses_them() {
    let dir = scratch();
    let corpus = synth(dir.path(), 3, 10);
    let loc = Location::parse(s(&corpus), false).unwrap();
    let mut segments: Vec<Segment> = block_on(loc.read_table()).unwrap();
    let event = segments[0].key_event.clone();
    let repeated: Vec<Segment> = segments
        .iter()
        .filter(|s| s.key_event == event)
        .take(10)
        .cloned()
        .collect();
    segments.extend(repeated);
    segments.sort_by(|a, b| {
        (&a.key_event, a.doc_id, a.seg_idx).cmp(&(&b.key_event, b.doc_id, b.seg_idx))
    });
    block_on(loc.write_table(&segments)).unwrap();

    let out = dir.path().join("out");
    let o = run_command(&corpus, s(&out), None, &[]).output().unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains(&format!(
            "failed {event}: the corpus: 10 segment(s) repeat the key"
        )),
        "{stdout}"
    );
    let r = report(&out);
    for e in r["events"].as_array().unwrap() {
        let failed = e["key_event"] == event.as_str();
        assert_eq!(e["status"] == "failed", failed, "{e}");
    }
    let assignments: Vec<Assignment> = block_on(
        Location::parse(s(&out), false)
            .unwrap()
            .read_table::<Assignment>(),
    )
    .unwrap();
    assert!(!assignments.is_empty());
    let mut keys: Vec<_> = assignments
        .iter()
        .map(|a| (&a.key_event, a.trial, a.doc_id, a.seg_idx))
        .collect();
    let n = keys.len();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), n, "an assignment twice");
    assert!(assignments.iter().all(|a| a.key_event != event));

    let e = eval(&corpus, &out);
    assert_eq!(e.status.code(), Some(1));
    let msg = stderr(&e);
    assert!(
        msg.contains(&format!("{}: 10 segment(s) repeat the key", s(&corpus)))
            && msg.contains(&format!("(`{event}`, 0, 0)")),
        "{msg}"
    );
    // Rows repeated in a second segments file: the same, whichever file holds them.
    let mut unique = segments.clone();
    unique.dedup_by(|a, b| {
        (&a.key_event, a.doc_id, a.seg_idx) == (&b.key_event, b.doc_id, b.seg_idx)
    });
    block_on(loc.write_table(&unique)).unwrap();
    let other = unique.last().unwrap().clone();
    let rows = [Segment::to_batch(&[other.clone(), other.clone()])];
    block_on(loc.write_parquet("segments-b.parquet", Segment::schema(), &rows)).unwrap();
    let o = run_command(&corpus, s(&dir.path().join("out-b")), None, &[])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let e = eval(&corpus, &out);
    let msg = stderr(&e);
    assert!(
        msg.contains("2 segment(s) repeat the key")
            && msg.contains(&format!(
                "(`{}`, {}, {})",
                other.key_event, other.doc_id, other.seg_idx
            )),
        "{msg}"
    );
}

#[test]
fn a_missing_location_says_what_it_is() {
    let dir = scratch();
    let corpus = synth(dir.path(), 1, 5);
    let out = dir.path().join("out");
    let missing = dir.path().join("no-such-thing");
    let bg = corpus.join("background.txt");
    for (role, args) in [
        (
            "corpus: ",
            vec!["--corpus", s(&missing), "--background", s(&bg)],
        ),
        (
            "background: ",
            vec!["--corpus", s(&corpus), "--background", s(&missing)],
        ),
    ] {
        let mut cmd = vec!["run", "--out", s(&out), "--model", "no-such-model"];
        cmd.extend(args);
        let o = epimine(&cmd);
        assert_eq!(o.status.code(), Some(1));
        let msg = stderr(&o);
        assert!(
            msg.contains(&format!("error: {role}")) && msg.contains(s(&missing)),
            "{role}: {msg}"
        );
    }
    let o = epimine(&[
        "run",
        "--corpus",
        s(&corpus),
        "--background",
        s(&bg),
        "--out",
        s(&out),
        "--model",
        s(&missing),
    ]);
    assert!(stderr(&o).contains("error: model: "), "{}", stderr(&o));
    for (flag, role) in [
        ("--corpus", "the corpus (--corpus)"),
        ("--run", "the run (--run)"),
    ] {
        let mut args = vec!["eval", "--corpus", s(&corpus), "--run", s(&corpus)];
        let at = args.iter().position(|a| *a == flag).unwrap();
        args[at + 1] = s(&missing);
        let o = epimine(&args);
        let msg = stderr(&o);
        assert!(msg.contains(&format!("error: {role}: ")), "{flag}: {msg}");
    }
    assert!(
        !out.exists(),
        "a run that fails its checks leaves no new --out"
    );
}

/// Waits until `out` holds at least `n` checkpoints (at most two minutes).
fn wait_for_checkpoints(child: &mut std::process::Child, out: &Path, n: usize) {
    let started = Instant::now();
    loop {
        let saved = std::fs::read_dir(out.join("_checkpoints"))
            .map(|d| {
                d.filter(|e| {
                    e.as_ref()
                        .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "ckpt"))
                })
                .count()
            })
            .unwrap_or(0);
        if saved >= n {
            return;
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the run ended ({status}) before it could be stopped");
        }
        assert!(started.elapsed().as_secs() < 120, "no checkpoints appeared");
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn sigterm_sighup_and_sigint_say_what_is_kept_give_the_lock_back_and_resume() {
    let dir = scratch();
    let corpus = synth(dir.path(), 30, 10);
    let reference = dir.path().join("reference");
    ok(run_command(&corpus, s(&reference), None, &[])
        .output()
        .unwrap());
    for (signal, code) in [("TERM", 143), ("HUP", 129), ("INT", 130)] {
        let out = dir.path().join(signal);
        let mut child = run_command(&corpus, s(&out), None, &["-w", "1"])
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        wait_for_checkpoints(&mut child, &out, 3);
        let sent = Command::new("kill")
            .args([format!("-{signal}"), child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
        let o = child.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(code), "SIG{signal}: {}", stderr(&o));
        let msg = stderr(&o);
        assert!(
            msg.contains(&format!("SIG{signal} received: stopping"))
                && msg.contains(&format!("{}/_checkpoints", s(&out)))
                && msg.contains("holds no run.json")
                && msg.contains("run the same command again")
                && msg.contains(&format!("the lock of {} is given back", s(&out))),
            "SIG{signal}: {msg}"
        );
        // No lock left for the next run to wait out (from another machine, 120 s; issue 47).
        assert!(
            !out.join("_lock").exists() || files_in(&out.join("_lock")).is_empty(),
            "SIG{signal}: {:?}",
            files_in(&out.join("_lock"))
        );
        ok(run_command(&corpus, s(&out), None, &[]).output().unwrap());
        for f in OUTPUTS {
            assert!(
                std::fs::read(reference.join(f)).unwrap() == std::fs::read(out.join(f)).unwrap(),
                "SIG{signal}: {f} differs after the resumed run"
            );
        }
        assert!(report(&out)["checkpoints"]["reused"].as_u64().unwrap() >= 3);
    }
    // A re-run with other settings on a finished run, stopped once it wrote a checkpoint: it
    // says that the finished run is kept whole, and it is.
    let out = dir.path().join("TERM");
    let finished = std::fs::read(out.join("run.json")).unwrap();
    let modified = |out: &Path| -> Vec<std::time::SystemTime> {
        // The checkpoints only: a run's start writes and deletes a probe there too.
        let mut times: Vec<_> = std::fs::read_dir(out.join("_checkpoints"))
            .unwrap()
            .filter_map(|e| {
                let e = e.ok()?;
                e.file_name()
                    .to_string_lossy()
                    .ends_with(".ckpt")
                    .then(|| e.metadata().ok()?.modified().ok())
                    .flatten()
            })
            .collect();
        times.sort();
        times
    };
    let before = modified(&out);
    let mut child = run_command(
        &corpus,
        s(&out),
        None,
        &["-w", "1", "--set", "episodes.keywords=7"],
    )
    .stderr(Stdio::piped())
    .stdout(Stdio::null())
    .spawn()
    .unwrap();
    let started = Instant::now();
    while modified(&out) == before {
        assert!(
            child.try_wait().unwrap().is_none(),
            "ended before a checkpoint"
        );
        assert!(started.elapsed().as_secs() < 120, "no checkpoint written");
        std::thread::sleep(Duration::from_millis(2));
    }
    Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    let o = child.wait_with_output().unwrap();
    let msg = stderr(&o);
    assert_eq!(o.status.code(), Some(143), "{msg}");
    assert!(
        msg.contains("run.json and the tables of the finished run that was there are kept whole"),
        "{msg}"
    );
    assert_eq!(std::fs::read(out.join("run.json")).unwrap(), finished);
    ok(eval(&corpus, &out));
}

/// A moto S3 server of this test's own (it is stopped with SIGSTOP, so it cannot be the one the
/// other tests share), with a bucket; killed (after a SIGCONT) when dropped.
struct OwnS3 {
    child: std::process::Child,
    port: u16,
}

impl OwnS3 {
    fn start(bucket: &str) -> Option<Self> {
        let Ok(server) = std::env::var("EPIMINE_TEST_MOTO_SERVER") else {
            assert!(
                std::env::var("EPIMINE_SKIP_S3").as_deref() == Ok("1"),
                "EPIMINE_TEST_MOTO_SERVER is not set: run the tests through scripts/ci/test.sh (or set EPIMINE_SKIP_S3=1 to skip on purpose)"
            );
            return None;
        };
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(&server)
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("moto_server starts");
        let s3 = Self { child, port };
        let started = Instant::now();
        while s3.http("PUT", &format!("/{bucket}")).is_none() {
            assert!(
                started.elapsed().as_secs() < 30,
                "moto_server did not start"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        Some(s3)
    }

    /// One plain HTTP request (moto needs no signature by default); the answer's text.
    fn http(&self, method: &str, path: &str) -> Option<String> {
        use std::io::{Read, Write};
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", self.port)).ok()?;
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .ok()?;
        write!(
            stream,
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            self.port
        )
        .ok()?;
        let mut answer = String::new();
        stream.read_to_string(&mut answer).ok()?;
        answer.starts_with("HTTP/1.1 200").then_some(answer)
    }

    fn signal(&self, signal: &str) {
        Command::new("kill")
            .args([signal, &self.child.id().to_string()])
            .status()
            .unwrap();
    }
}

impl Drop for OwnS3 {
    fn drop(&mut self) {
        self.signal("-CONT");
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn an_object_store_that_stops_answering_stops_the_run_at_its_first_failure() {
    let Some(s3) = OwnS3::start("stopped") else {
        eprintln!("EPIMINE_SKIP_S3=1: skipping");
        return;
    };
    let dir = scratch();
    let corpus = synth(dir.path(), 24, 10);
    let out = "s3://stopped/run";
    let endpoint = format!("http://127.0.0.1:{}", s3.port);
    let mut child = run_command(&corpus, out, None, &["-w", "1"])
        .env("RUST_LOG", "info")
        .env("AWS_ENDPOINT_URL", &endpoint)
        .env("AWS_ALLOW_HTTP", "true")
        .env("AWS_ACCESS_KEY_ID", "epimine-test")
        .env("AWS_SECRET_ACCESS_KEY", "epimine-test")
        .env("AWS_REGION", "us-east-1")
        // Each request waits 1 s for its answer and is retried for 2 s.
        .env("AWS_TIMEOUT", "1s")
        .env("EPIMINE_STORAGE_TIMEOUT", "2")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Once the first checkpoint is there, the server stops answering (SIGSTOP: connections
    // are still accepted, nothing is answered).
    let started = Instant::now();
    loop {
        let listed = s3
            .http("GET", "/stopped?list-type=2&prefix=run/_checkpoints/")
            .unwrap_or_default();
        // A checkpoint, not the probe a run writes and deletes in each of its folders.
        if listed.contains(".ckpt</Key>") {
            break;
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the run ended ({status}) before the server was stopped");
        }
        assert!(started.elapsed().as_secs() < 120, "no checkpoint appeared");
        std::thread::sleep(Duration::from_millis(5));
    }
    s3.signal("-STOP");
    let stopped = Instant::now();
    let o = loop {
        if child.try_wait().unwrap().is_some() {
            break child.wait_with_output().unwrap();
        }
        if stopped.elapsed().as_secs() > 90 {
            let _ = child.kill();
            let o = child.wait_with_output().unwrap();
            panic!(
                "still running 90 s after the server stopped: {}",
                stderr(&o)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let took = stopped.elapsed();
    let msg = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{msg}");
    // One bound for the run, not one per object: it does not go on to the other events.
    assert!(took < Duration::from_secs(30), "{took:?}: {msg}");
    // It names the object it could not reach: the checkpoint it was writing, or the lock it
    // checks before each checkpoint (the fence of issue 47), whichever came first.
    let error = msg.lines().rfind(|l| l.starts_with("error:")).unwrap_or("");
    assert!(
        (error.contains("s3://stopped/run/_checkpoints/") && error.contains(".ckpt"))
            || (error.contains("not writing the checkpoint of")
                && error.contains("s3://stopped/run/_lock")),
        "{msg}"
    );
    assert!(error.contains("cannot reach the object store"), "{msg}");
    // Every line of the store's retries names its object.
    let retries: Vec<&str> = msg
        .lines()
        .filter(|l| l.contains("backing off") || l.contains("retry"))
        .collect();
    assert!(
        retries.iter().all(|l| l.contains("s3://stopped/run/")),
        "{msg}"
    );
    assert!(!msg.contains("panicked"), "{msg}");
}
