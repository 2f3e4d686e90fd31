//! Runs that survive: per-event checkpoints, resume after SIGKILL at several points, incremental
//! re-mining of a changed event, corrupt checkpoints, the commit (`run.json` last, `eval`
//! refusing an inconsistent folder), and the checks on `--out` before any work. Real processes,
//! real kills (`EPIMINE_FAULT` makes the process SIGKILL itself at a named point; one test kills
//! it from outside).

use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::util::*;
use epimine::storage::Location;
use epimine::tables::{Segment, Table};

/// `epimine run` on `corpus` into `out` with the tiny model, extra flags, and environment.
fn run(corpus: &Path, out: &str, extra: &[&str], env: &[(&str, &str)]) -> Output {
    let model = tiny_model();
    let bg = corpus.join("background.txt");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_epimine"));
    cmd.args([
        "run",
        "--corpus",
        s(corpus),
        "--background",
        s(&bg),
        "--out",
        out,
        "--model",
        &model,
    ])
    .args(extra)
    .env("RUST_LOG", "warn")
    .env_remove("EPIMINE_FAULT");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("epimine runs")
}

fn report(out: &Path) -> serde_json::Value {
    crate::util::run_json(out)
}

/// Per event: (checkpoint, encoded_units).
fn per_event(report: &serde_json::Value) -> BTreeMap<String, (String, u64)> {
    report["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["key_event"].as_str().unwrap().to_string(),
                (
                    e["checkpoint"].as_str().unwrap().to_string(),
                    e["encoded_units"].as_u64().unwrap(),
                ),
            )
        })
        .collect()
}

fn assert_same_tables(a: &Path, b: &Path, what: &str) {
    for f in OUTPUTS {
        let x = std::fs::read(a.join(f)).unwrap_or_else(|e| panic!("{what}: {f}: {e}"));
        assert!(!x.is_empty());
        if x == std::fs::read(b.join(f)).unwrap() {
            continue;
        }
        // A run into an `--out` with a history gives its episodes' status in this run (`new`
        // in a fresh one, `continued` after): the rows must match but for that column.
        let rows = |dir: &Path| -> Vec<String> {
            let loc = Location::parse(s(dir), false).unwrap();
            match f {
                "episodes.parquet" => block_on(loc.read_table::<epimine::tables::Episode>())
                    .unwrap()
                    .into_iter()
                    .map(|r| format!("{:?}", epimine::tables::Episode { status: None, ..r }))
                    .collect(),
                "assignments.parquet" => block_on(loc.read_table::<epimine::tables::Assignment>())
                    .unwrap()
                    .into_iter()
                    .map(|r| format!("{:?}", epimine::tables::Assignment { status: None, ..r }))
                    .collect(),
                "episode_articles.parquet" => {
                    block_on(loc.read_table::<epimine::tables::EpisodeArticle>())
                        .unwrap()
                        .into_iter()
                        .map(|r| {
                            format!(
                                "{:?}",
                                epimine::tables::EpisodeArticle { status: None, ..r }
                            )
                        })
                        .collect()
                }
                _ => panic!("{what}: {f} differs from the uninterrupted run"),
            }
        };
        assert!(
            rows(a) == rows(b),
            "{what}: {f} differs from the uninterrupted run (status aside)"
        );
    }
}

/// The whole checkpoints of a run (`.ckpt`; not the temporary file of one being written when
/// the run was killed, which object_store renames into place only once written).
fn checkpoints(out: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(out.join("_checkpoints"))
        .map(|d| {
            d.map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|x| x == "ckpt"))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn eval(corpus: &Path, out: &Path) -> Output {
    epimine(&["eval", "--corpus", s(corpus), "--run", s(out), "--json"])
}

#[test]
fn a_run_killed_anywhere_resumes_to_the_bytes_of_an_uninterrupted_run() {
    let dir = scratch();
    let corpus = synth(dir.path(), 40, 10);
    let reference = dir.path().join("reference");
    ok(run(&corpus, s(&reference), &["-w", "2"], &[]));
    let first = report(&reference);
    assert_eq!(first["checkpoints"]["computed"], 40);
    assert_eq!(first["checkpoints"]["reused"], 0);
    assert!(first["checkpoints"]["encoded_units"].as_u64().unwrap() >= 40);
    let events = per_event(&first);
    assert_eq!(events.len(), 40);
    assert_eq!(checkpoints(&reference).len(), 40);
    // One worker takes the 40 units in two waves (16 units a worker and wave): the same bytes.
    let one = dir.path().join("one-worker");
    ok(run(&corpus, s(&one), &["-w", "1"], &[]));
    assert_eq!(first["checkpoints"]["waves"], 1);
    assert_eq!(report(&one)["checkpoints"]["waves"], 2);
    assert_same_tables(&reference, &one, "two waves");

    for (fault, workers_before, workers_after) in [
        ("statistics", "2", "2"),
        ("encoding", "2", "2"),
        ("checkpoint:12", "2", "1"),
        ("checkpoint:21", "1", "2"),
        ("assembly:2", "2", "2"),
    ] {
        let out = dir.path().join(fault.replace(':', "-"));
        let killed = run(
            &corpus,
            s(&out),
            &["-w", workers_before],
            &[("EPIMINE_FAULT", fault)],
        );
        assert_eq!(
            killed.status.signal(),
            Some(9),
            "{fault}: {:?} {}",
            killed.status,
            String::from_utf8_lossy(&killed.stderr)
        );
        assert!(
            !out.join("run.json").exists(),
            "{fault}: run.json without a commit"
        );
        let refused = eval(&corpus, &out);
        assert_eq!(
            refused.status.code(),
            Some(1),
            "{fault}: eval of a killed run"
        );
        let msg = String::from_utf8_lossy(&refused.stderr);
        assert!(msg.contains("no run.json"), "{fault}: {msg}");
        let saved = checkpoints(&out).len();
        match fault {
            "statistics" | "encoding" => assert_eq!(saved, 0, "{fault}"),
            "checkpoint:12" => assert!((12..40).contains(&saved), "{fault}: {saved}"),
            // One worker, two waves of 20 events: killed in the second wave.
            "checkpoint:21" => assert_eq!(saved, 21, "{fault}"),
            _ => assert_eq!(saved, 40, "{fault}"),
        }

        ok(run(&corpus, s(&out), &["-w", workers_after], &[]));
        assert_same_tables(&reference, &out, fault);
        let again = report(&out);
        let reused = again["checkpoints"]["reused"].as_u64().unwrap() as usize;
        assert_eq!(reused, saved, "{fault}: every saved checkpoint reused");
        for (event, (how, units)) in per_event(&again) {
            if how == "reused" {
                assert_eq!(units, 0, "{fault}: {event} was encoded again");
            } else {
                assert_eq!(how, "computed");
                assert_eq!(units, events[&event].1, "{fault}: {event}");
            }
        }
        assert!(ok(eval(&corpus, &out)).stdout.len() > 10);
    }
}

#[test]
fn a_run_killed_from_outside_resumes() {
    let dir = scratch();
    let corpus = synth(dir.path(), 30, 10);
    let reference = dir.path().join("reference");
    ok(run(&corpus, s(&reference), &[], &[]));
    let out = dir.path().join("out");
    let model = tiny_model();
    let bg = corpus.join("background.txt");
    let mut child = Command::new(env!("CARGO_BIN_EXE_epimine"))
        .args([
            "run",
            "--corpus",
            s(&corpus),
            "--background",
            s(&bg),
            "--out",
            s(&out),
            "--model",
            &model,
        ])
        .env("RUST_LOG", "warn")
        .env_remove("EPIMINE_FAULT")
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    loop {
        if checkpoints(&out).len() >= 5 {
            child.kill().unwrap();
            break;
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the run ended ({status}) before it could be killed");
        }
        assert!(started.elapsed().as_secs() < 120, "no checkpoints appeared");
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(9));
    let saved = checkpoints(&out).len();
    ok(run(&corpus, s(&out), &[], &[]));
    assert_same_tables(&reference, &out, "killed from outside");
    let reused = report(&out)["checkpoints"]["reused"].as_u64().unwrap() as usize;
    assert!(
        reused >= 5 && reused == saved,
        "reused {reused}, saved {saved}"
    );
}

#[test]
fn only_the_changed_event_is_recomputed_and_removed_events_lose_their_checkpoints() {
    let dir = scratch();
    let corpus = synth(dir.path(), 20, 10);
    let out = dir.path().join("out");
    ok(run(&corpus, s(&out), &[], &[]));
    assert_eq!(checkpoints(&out).len(), 20);

    // New articles' worth of change in one event (a segment's text), one event removed.
    let loc = Location::parse(s(&corpus), false).unwrap();
    let mut segments: Vec<Segment> = block_on(loc.read_table()).unwrap();
    let changed = "synth_event_007";
    let removed = "synth_event_013";
    let seg = segments
        .iter_mut()
        .find(|s| s.key_event == changed && s.doc_id == 3)
        .unwrap();
    seg.text.push_str(" Officials later confirmed the report.");
    segments.retain(|s| s.key_event != removed);
    block_on(loc.write_table(&segments)).unwrap();

    ok(run(&corpus, s(&out), &[], &[]));
    let again = report(&out);
    assert_eq!(again["checkpoints"]["computed"], 1);
    assert_eq!(again["checkpoints"]["reused"], 18);
    assert_eq!(again["checkpoints"]["deleted"], 1);
    let ev = again["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["key_event"] == changed)
        .unwrap();
    assert_eq!(ev["checkpoint"], "computed");
    assert!(ev["encoded_units"].as_u64().unwrap() >= 1);
    assert!(
        ev["not_reused"].as_str().unwrap().contains("changed"),
        "{ev}"
    );
    assert_eq!(checkpoints(&out).len(), 19);

    // The same bytes as a fresh run on the new corpus, with 2 workers.
    let fresh = dir.path().join("fresh");
    ok(run(&corpus, s(&fresh), &["-w", "2"], &[]));
    assert_same_tables(&fresh, &out, "incremental");

    // A setting that changes results recomputes every event; --fresh too.
    ok(run(
        &corpus,
        s(&out),
        &["--set", "episodes.top_articles=0.5"],
        &[],
    ));
    assert_eq!(report(&out)["checkpoints"]["computed"], 19);
    ok(run(
        &corpus,
        s(&out),
        &["--set", "episodes.top_articles=0.5"],
        &[],
    ));
    assert_eq!(report(&out)["checkpoints"]["reused"], 19);
    ok(run(
        &corpus,
        s(&out),
        &["--set", "episodes.top_articles=0.5", "--fresh"],
        &[],
    ));
    let r = report(&out);
    assert_eq!(r["checkpoints"]["computed"], 19);
    assert_eq!(r["events"][0]["not_reused"], "--fresh");
}

#[test]
fn a_corrupt_checkpoint_is_recomputed_with_a_warning_naming_it() {
    let dir = scratch();
    let corpus = synth(dir.path(), 4, 20);
    let out = dir.path().join("out");
    ok(run(&corpus, s(&out), &[], &[]));
    let reference = dir.path().join("reference");
    ok(run(&corpus, s(&reference), &[], &[]));
    let files = checkpoints(&out);
    let victim = &files[1];
    let bytes = std::fs::read(victim).unwrap();
    std::fs::write(victim, &bytes[..bytes.len() * 2 / 3]).unwrap();
    let again = ok(run(&corpus, s(&out), &[], &[]));
    let stderr = String::from_utf8_lossy(&again.stderr);
    let name = victim.file_name().unwrap().to_str().unwrap();
    assert!(
        stderr.contains(name) && stderr.contains("not a whole checkpoint"),
        "{stderr}"
    );
    let r = report(&out);
    assert_eq!(r["checkpoints"]["computed"], 1);
    assert_eq!(r["checkpoints"]["reused"], 3);
    assert_same_tables(&reference, &out, "after a corrupt checkpoint");
}

#[test]
fn eval_refuses_an_out_whose_files_do_not_match_run_json() {
    let dir = scratch();
    let corpus = synth(dir.path(), 2, 20);
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    ok(run(&corpus, s(&a), &[], &[]));
    ok(run(
        &corpus,
        s(&b),
        &["--set", "episodes.top_articles=0.5"],
        &[],
    ));
    ok(eval(&corpus, &a));
    let tables = report(&a)["tables"].as_array().unwrap().clone();
    let names: Vec<&str> = tables.iter().map(|t| t["name"].as_str().unwrap()).collect();
    for f in OUTPUTS {
        assert!(names.contains(&f), "{f} not in run.json");
    }
    for t in &tables {
        let bytes = std::fs::read(a.join(t["name"].as_str().unwrap())).unwrap();
        assert_eq!(t["bytes"].as_u64().unwrap(), bytes.len() as u64);
    }
    let episodes_rows = tables
        .iter()
        .find(|t| t["name"] == "episodes.parquet")
        .unwrap()["rows"]
        .as_u64()
        .unwrap();
    let episodes: Vec<epimine::tables::Episode> =
        block_on(Location::parse(s(&a), false).unwrap().read_table()).unwrap();
    assert_eq!(episodes_rows, episodes.len() as u64);

    // A table of another run: refused, naming the file.
    std::fs::copy(b.join("assignments.parquet"), a.join("assignments.parquet")).unwrap();
    let out = eval(&corpus, &a);
    assert_eq!(out.status.code(), Some(1));
    let msg = String::from_utf8_lossy(&out.stderr);
    assert!(
        msg.contains("assignments.parquet") && msg.contains("does not match run.json"),
        "{msg}"
    );
    // run.json of an older epimine (no format, no list of tables): refused.
    let mut old = report(&b);
    old.as_object_mut().unwrap().remove("format");
    old.as_object_mut().unwrap().remove("tables");
    std::fs::write(b.join("run.json"), old.to_string()).unwrap();
    let msg = String::from_utf8_lossy(&eval(&corpus, &b).stderr).to_string();
    assert!(msg.contains("older epimine"), "{msg}");
    // ... and a run over it rewrites the folder whole.
    ok(run(&corpus, s(&b), &[], &[]));
    ok(eval(&corpus, &b));
    // No run.json at all.
    std::fs::remove_file(b.join("run.json")).unwrap();
    let msg = String::from_utf8_lossy(&eval(&corpus, &b).stderr).to_string();
    assert!(msg.contains("no run.json"), "{msg}");
}

#[test]
fn an_out_that_cannot_be_used_fails_before_any_work() {
    let dir = scratch();
    let corpus = synth(dir.path(), 2, 20);
    let timed = |out: &str, extra: &[&str]| {
        let started = std::time::Instant::now();
        let o = run(&corpus, out, extra, &[]);
        (o, started.elapsed())
    };
    // A file in the way.
    let file = dir.path().join("somefile");
    std::fs::write(&file, "x").unwrap();
    let (o, _) = timed(&format!("{}/run", s(&file)), &[]);
    assert_eq!(o.status.code(), Some(1));
    let msg = String::from_utf8_lossy(&o.stderr);
    assert!(
        msg.contains("somefile/run") && msg.contains("a file is in the way"),
        "{msg}"
    );
    assert!(!msg.contains("panicked"), "{msg}");
    // A folder we may not write (unless the tests run as root).
    let (o, _) = timed("/proc/epimine-run", &[]);
    assert_eq!(o.status.code(), Some(1));
    let msg = String::from_utf8_lossy(&o.stderr);
    assert!(msg.contains("/proc/epimine-run"), "{msg}");
    assert_eq!(msg.matches("error:").count(), 1, "said once: {msg}");
    // Files of something else: refused unless --overwrite.
    let foreign = dir.path().join("foreign");
    std::fs::create_dir_all(&foreign).unwrap();
    std::fs::write(foreign.join("notes.txt"), "mine").unwrap();
    let (o, took) = timed(s(&foreign), &[]);
    assert_eq!(o.status.code(), Some(1));
    let msg = String::from_utf8_lossy(&o.stderr);
    assert!(
        msg.contains("notes.txt") && msg.contains("--overwrite"),
        "{msg}"
    );
    assert!(took.as_secs() < 20, "refused only after {took:?}");
    assert!(!foreign.join("_checkpoints").exists());
    ok(run(&corpus, s(&foreign), &["--overwrite"], &[]));
    assert!(foreign.join("notes.txt").exists() && foreign.join("run.json").exists());
    // A missing corpus: one clear error.
    let o = run(
        &dir.path().join("nothing"),
        s(&dir.path().join("o2")),
        &[],
        &[],
    );
    assert_eq!(o.status.code(), Some(1));
    let msg = String::from_utf8_lossy(&o.stderr);
    assert!(
        msg.contains("nothing") && msg.contains("no such folder"),
        "{msg}"
    );
    assert_eq!(msg.matches("error").count(), 1, "said once: {msg}");
}

#[test]
fn checkpoints_name_events_of_any_spelling() {
    let a = epimine::run_folder::checkpoint::object_name("Flood in Libya / 2023");
    assert!(a.starts_with("_checkpoints/Flood_in_Libya___2023-") && a.ends_with(".ckpt"));
    assert_ne!(
        a,
        epimine::run_folder::checkpoint::object_name("Flood in Libya _ 2023")
    );
    assert!(epimine::run_folder::commit::is_ours(&a));
    assert!(!epimine::run_folder::commit::is_ours("notes.txt"));
    assert!(!epimine::run_folder::commit::is_ours(&Segment::file_name()));
}

#[test]
fn on_s3_a_killed_run_resumes_and_storage_failures_name_their_cause() {
    let Some(root) = s3_root("resume") else {
        return;
    };
    let dir = scratch();
    let corpus = synth(dir.path(), 6, 10);
    let reference = dir.path().join("reference");
    ok(run(&corpus, s(&reference), &[], &[]));
    let out = format!("{root}/run");
    let killed = run(
        &corpus,
        &out,
        &["-w", "2"],
        &[("EPIMINE_FAULT", "checkpoint:3")],
    );
    assert_eq!(killed.status.signal(), Some(9));
    ok(run(&corpus, &out, &["-w", "2"], &[]));
    let loc = Location::parse(&out, false).unwrap();
    for f in OUTPUTS {
        let got = block_on(loc.get(f)).unwrap();
        assert!(
            got.as_ref() == std::fs::read(reference.join(f)).unwrap().as_slice(),
            "{f} on s3"
        );
    }
    let r: serde_json::Value =
        serde_json::from_slice(&block_on(loc.get("run.json")).unwrap()).unwrap();
    assert!(r["checkpoints"]["reused"].as_u64().unwrap() >= 3);
    let names = block_on(loc.list()).unwrap();
    assert_eq!(
        names
            .iter()
            .filter(|n| n.starts_with("_checkpoints/"))
            .count(),
        6
    );
    let e = epimine(&["eval", "--corpus", s(&corpus), "--run", &out]);
    assert!(e.status.success(), "{}", String::from_utf8_lossy(&e.stderr));

    // A bucket that does not exist: found before any work, named, no panic.
    let missing = "s3://epimine-no-such-bucket/run";
    let o = run(&corpus, missing, &[], &[]);
    assert_eq!(o.status.code(), Some(1));
    let msg = String::from_utf8_lossy(&o.stderr);
    assert!(
        msg.contains(missing) && msg.contains("the bucket does not exist"),
        "{msg}"
    );
    assert!(!msg.contains("panicked") && !msg.contains("<?xml"), "{msg}");
    // A command that writes tables straight away says the same.
    let o = epimine(&[
        "synth",
        "--events",
        "1",
        "--docs-per-event",
        "3",
        "--out",
        "s3://epimine-no-such-bucket/corpus",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let msg = String::from_utf8_lossy(&o.stderr);
    assert!(msg.contains("the bucket does not exist"), "{msg}");
    assert!(!msg.contains("panicked"), "{msg}");
}

#[test]
fn a_full_disk_is_named_and_nothing_panics() {
    // A 200 KiB tmpfs, where the machine lets us mount one (root in a container usually can).
    let dir = scratch();
    let mount = dir.path().join("small-disk");
    std::fs::create_dir_all(&mount).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=200k", "tmpfs", s(&mount)])
        .output()
        .is_ok_and(|o| o.status.success());
    if !mounted {
        eprintln!("cannot mount a tmpfs here: skipping the full-disk check");
        return;
    }
    struct Unmount(PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(&self.0).status();
        }
    }
    let _guard = Unmount(mount.clone());
    let corpus = synth(dir.path(), 6, 10);
    let out = mount.join("run");
    let o = run(&corpus, s(&out), &[], &[]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let msg = String::from_utf8_lossy(&o.stderr);
    assert!(msg.contains("no space left on the device"), "{msg}");
    assert!(msg.contains(s(&out)), "names the location: {msg}");
    assert!(!msg.contains("panicked"), "{msg}");
    assert!(!out.join("run.json").exists());
}

#[test]
fn wrong_s3_credentials_are_named_before_any_work() {
    // A second S3 server that checks credentials (moto after its first request), started here
    // from the one `scripts/s3-server.sh` installed.
    let Ok(server) = std::env::var("EPIMINE_TEST_MOTO_SERVER") else {
        eprintln!("EPIMINE_TEST_MOTO_SERVER is not set (scripts/test.sh sets it): skipping");
        return;
    };
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = Command::new(&server)
        .args(["-H", "127.0.0.1", "-p", &port.to_string()])
        .env("INITIAL_NO_AUTH_ACTION_COUNT", "1")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("moto_server starts");
    struct Stop(std::process::Child);
    impl Drop for Stop {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let started = std::time::Instant::now();
    let mut stream = loop {
        if let Ok(s) = std::net::TcpStream::connect(("127.0.0.1", port)) {
            break s;
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("moto_server ended: {status}");
        }
        assert!(
            started.elapsed().as_secs() < 30,
            "moto_server did not start"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let _stop = Stop(child);
    // The one unauthenticated request makes the bucket.
    use std::io::{Read, Write};
    write!(
        stream,
        "PUT /creds-bucket HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");

    let dir = scratch();
    let corpus = synth(dir.path(), 2, 10);
    let endpoint = format!("http://127.0.0.1:{port}");
    let out = "s3://creds-bucket/run";
    let o = run(
        &corpus,
        out,
        &[],
        &[
            ("AWS_ENDPOINT_URL", &endpoint),
            ("AWS_ALLOW_HTTP", "true"),
            ("AWS_ACCESS_KEY_ID", "wrong"),
            ("AWS_SECRET_ACCESS_KEY", "wrong"),
            ("AWS_REGION", "us-east-1"),
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    let msg = String::from_utf8_lossy(&o.stderr);
    assert!(
        msg.contains(out) && msg.contains("access refused: check the credentials"),
        "{msg}"
    );
    assert!(!msg.contains("panicked"), "{msg}");
}

/// `epimine run` as process `p` of 2 (one worker each) into `out`.
fn spawn_process(
    corpus: &Path,
    out: &Path,
    hosts: &Path,
    p: &str,
    extra: &[&str],
    env: &[(&str, &str)],
) -> std::process::Child {
    let model = tiny_model();
    let bg = corpus.join("background.txt");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_epimine"));
    cmd.args([
        "run",
        "--corpus",
        s(corpus),
        "--background",
        s(&bg),
        "--out",
        s(out),
        "--model",
        &model,
        "-w",
        "1",
        "-n",
        "2",
        "-p",
        p,
        "-H",
        s(hosts),
    ])
    .args(extra)
    .env("RUST_LOG", "warn")
    .env_remove("EPIMINE_FAULT")
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.spawn().expect("epimine starts")
}

#[test]
fn a_lost_process_ends_the_run_quickly_and_a_re_run_resumes() {
    let dir = scratch();
    let corpus = synth(dir.path(), 12, 10);
    let reference = dir.path().join("reference");
    ok(run(&corpus, s(&reference), &[], &[]));
    let hosts = hostfile(dir.path(), 2);
    let out = dir.path().join("out");
    // Process 1 dies (SIGKILL) after its first checkpoint; process 0 must end, non-zero, soon,
    // naming it.
    let p1 = spawn_process(
        &corpus,
        &out,
        &hosts,
        "1",
        &[],
        &[("EPIMINE_FAULT", "checkpoint:1")],
    );
    let p0 = spawn_process(&corpus, &out, &hosts, "0", &[], &[]);
    let (o1, _) = wait_bounded(p1, 120);
    assert_eq!(o1.status.signal(), Some(9));
    let (o0, _) = wait_bounded(p0, 120);
    assert_eq!(o0.status.code(), Some(1));
    let msg = String::from_utf8_lossy(&o0.stderr);
    let address = std::fs::read_to_string(&hosts).unwrap();
    let address = address.lines().nth(1).unwrap();
    assert!(
        msg.contains("lost process 1") && msg.contains(address),
        "{msg}"
    );
    assert!(!msg.contains("panicked"), "{msg}");
    assert!(!out.join("run.json").exists());
    let saved = checkpoints(&out).len();
    assert!(saved >= 1, "process 1's checkpoint survives");

    // Both again: the run completes from the checkpoints, the same bytes as one process.
    let p1 = spawn_process(&corpus, &out, &hosts, "1", &[], &[]);
    let p0 = spawn_process(&corpus, &out, &hosts, "0", &[], &[]);
    let (o0, _) = wait_bounded(p0, 300);
    let (o1, _) = wait_bounded(p1, 300);
    assert!(
        o0.status.success(),
        "{}",
        String::from_utf8_lossy(&o0.stderr)
    );
    assert!(
        o1.status.success(),
        "{}",
        String::from_utf8_lossy(&o1.stderr)
    );
    assert_same_tables(&reference, &out, "after a lost process");
    assert_eq!(
        report(&out)["checkpoints"]["reused"].as_u64().unwrap() as usize,
        saved
    );
}

#[test]
fn a_process_that_never_starts_ends_the_run_after_the_startup_timeout() {
    let dir = scratch();
    let corpus = synth(dir.path(), 2, 10);
    let hosts = hostfile(dir.path(), 2);
    let out = dir.path().join("out");
    let p0 = spawn_process(
        &corpus,
        &out,
        &hosts,
        "0",
        &["--set", "cluster.startup_timeout=3"],
        &[],
    );
    let (o0, took) = wait_bounded(p0, 60);
    assert_eq!(o0.status.code(), Some(1));
    assert!(took.as_secs() < 30, "{took:?}");
    let msg = String::from_utf8_lossy(&o0.stderr);
    let address = std::fs::read_to_string(&hosts).unwrap();
    let address = address.lines().nth(1).unwrap();
    assert!(
        msg.contains("waited for process 1") && msg.contains(address),
        "{msg}"
    );
}
