//! One writer a folder: locks, create-only objects, the switch, pinned corpora, staged files.

use super::*;

#[test]
fn a_second_run_into_a_held_folder_is_refused_and_a_killed_runs_lock_does_not_block_it() {
    let dir = scratch();
    let corpus = synth(dir.path(), 6, 10);
    let reference = dir.path().join("reference");
    ok(run(&corpus, s(&reference), &[], &[]).output().unwrap());
    assert_a_held_folder_is_refused(dir.path(), &corpus, &reference);
    assert_a_killed_runs_lock_is_taken_over(dir.path(), &corpus, &reference);
    assert_another_machines_lock_is_taken_over_once_expired(dir.path(), &corpus, &reference);
}

/// A run holds --out (stopped, so that it surely still does); a second one is refused at
/// start, naming the holder, and changes nothing; the first then finishes as if alone.
fn assert_a_held_folder_is_refused(dir: &Path, corpus: &Path, reference: &Path) {
    let out = dir.join("out");
    let mut first = run(corpus, s(&out), &[], &[]).spawn().unwrap();
    wait_until(&mut first, || out.join("_lock/0").exists());
    signal(first.id(), "STOP");
    let (second, took) = {
        let started = Instant::now();
        let o = run(corpus, s(&out), &["--set", "episodes.max_episodes=7"], &[])
            .output()
            .unwrap();
        (o, started.elapsed())
    };
    // The same with two processes: process 1 is told at once why the run does not start.
    let hosts = hostfile(dir, 2);
    let one = process(corpus, &out, &hosts, "1", &[], &[]);
    let zero = process(corpus, &out, &hosts, "0", &[], &[]);
    let (o1, t1) = wait_bounded(one, 120);
    let (o0, _) = wait_bounded(zero, 120);
    signal(first.id(), "CONT");
    let (e0, e1) = (stderr(&o0), stderr(&o1));
    assert_eq!(o0.status.code(), Some(1), "{e0}");
    assert!(e0.contains("in use by another run"), "{e0}");
    assert_eq!(o1.status.code(), Some(1), "{e1}");
    assert!(t1.as_secs() < 60, "{t1:?}");
    assert!(
        e1.contains("the run did not start: process 0 could not start: --out")
            && e1.contains(&format!("pid {}", first.id())),
        "{e1}"
    );
    let said = stderr(&second);
    assert_eq!(second.status.code(), Some(1), "{said}");
    assert!(took.as_secs() < 60, "{took:?}");
    assert!(
        said.contains(&format!(
            "--out {}: in use by another run: epimine run on host {}, pid {}",
            s(&out),
            host_name(),
            first.id()
        )) && said.contains("_lock/0"),
        "{said}"
    );
    let (first, _) = wait_bounded(first, 300);
    ok(first);
    assert_same_tables(reference, &out, "the held run");
    assert!(!out.join("_lock").exists(), "the lock is given back");
}

/// A run killed half way leaves its lock; running it again takes the lock over (its process
/// is gone) and resumes from the checkpoints.
fn assert_a_killed_runs_lock_is_taken_over(dir: &Path, corpus: &Path, reference: &Path) {
    let killed = dir.join("killed");
    let o = run(
        corpus,
        s(&killed),
        &[],
        &[("EPIMINE_FAULT", "checkpoint:2")],
    )
    .output()
    .unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(o.status.signal(), Some(9), "{}", stderr(&o));
    let left: serde_json::Value =
        serde_json::from_slice(&std::fs::read(killed.join("_lock/0")).unwrap()).unwrap();
    assert_eq!(left["host"], host_name().as_str());
    let resumed = ok(run(corpus, s(&killed), &[], &[]).output().unwrap());
    let said = stderr(&resumed);
    assert!(
        said.contains("taking over the lock of a run that ended without giving it back")
            && said.contains(&format!("its process {} is gone", left["pid"])),
        "{said}"
    );
    assert_same_tables(reference, &killed, "resumed after a kill");
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(killed.join("run.json")).unwrap()).unwrap();
    assert!(
        report["checkpoints"]["reused"].as_u64().unwrap() >= 2,
        "{report}"
    );
    assert!(!killed.join("_lock").exists());
}

/// A lock of another machine, whose process cannot be checked from here: refused while it
/// is fresh, taken over once it has not been refreshed for the expiry (its file's time
/// moved back 10 minutes).
fn assert_another_machines_lock_is_taken_over_once_expired(
    dir: &Path,
    corpus: &Path,
    reference: &Path,
) {
    let elsewhere = dir.join("elsewhere");
    std::fs::create_dir_all(elsewhere.join("_lock")).unwrap();
    let lock = elsewhere.join("_lock/0");
    let holder = serde_json::json!({
        "command": "epimine run", "host": "node-b", "pid": 4242,
        "started": "2026-01-01T00:00:00Z", "machine": "another-boot pid:[1]",
        "process_start": 5, "epimine": "0.1.0"
    });
    std::fs::write(&lock, holder.to_string()).unwrap();
    let o = run(corpus, s(&elsewhere), &[], &[]).output().unwrap();
    let said = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{said}");
    assert!(
        said.contains("in use by another run: epimine run on host node-b, pid 4242")
            && said.contains("120 s after its last refresh"),
        "{said}"
    );
    assert!(!elsewhere.join("run.json").exists() && !elsewhere.join("job.toml").exists());
    std::fs::File::options()
        .write(true)
        .open(&lock)
        .unwrap()
        .set_modified(SystemTime::now() - Duration::from_secs(600))
        .unwrap();
    let o = ok(run(corpus, s(&elsewhere), &[], &[]).output().unwrap());
    assert!(
        stderr(&o).contains("host node-b, pid 4242")
            && stderr(&o).contains("it was not refreshed for"),
        "{}",
        stderr(&o)
    );
    assert_same_tables(reference, &elsewhere, "after an expired lock");
    assert!(!elsewhere.join("_lock").exists());
}

#[test]
fn only_one_writer_creates_an_object_locally_and_on_s3() {
    let dir = scratch();
    let mut places = vec![s(dir.path()).to_string()];
    places.extend(s3_root("put-new"));
    for place in places {
        let loc = Location::parse(&place, true).unwrap();
        assert!(
            block_on(loc.put_new("_lock/0", "first".into())).unwrap(),
            "{place}"
        );
        assert!(
            !block_on(loc.put_new("_lock/0", "second".into())).unwrap(),
            "{place}"
        );
        assert_eq!(
            block_on(loc.get("_lock/0")).unwrap().as_ref(),
            b"first",
            "{place}"
        );
        let listed = block_on(loc.list_folder("_lock")).unwrap();
        assert_eq!(listed.len(), 1, "{place}");
        assert_eq!(
            (listed[0].0.as_str(), listed[0].1),
            ("_lock/0", 5),
            "{place}"
        );
        let age = SystemTime::now()
            .duration_since(listed[0].2)
            .unwrap_or_default();
        assert!(age.as_secs() < 60, "{place}: {age:?}");
    }
}

#[test]
fn on_s3_a_held_folder_is_refused_and_a_killed_runs_lock_is_taken_over() {
    let Some(root) = s3_root("lock") else {
        return;
    };
    let dir = scratch();
    let corpus = synth(dir.path(), 6, 10);
    let reference = dir.path().join("reference");
    ok(run(&corpus, s(&reference), &[], &[]).output().unwrap());
    let same_bytes = |out: &str, what: &str| {
        let loc = Location::parse(out, false).unwrap();
        for f in OUTPUTS {
            let got = block_on(loc.get(f)).unwrap();
            assert!(
                got.as_ref() == std::fs::read(reference.join(f)).unwrap().as_slice(),
                "{what}: {f} on s3"
            );
        }
        assert!(
            block_on(loc.list_folder("_lock")).unwrap().is_empty(),
            "{what}: lock left"
        );
    };

    let out = format!("{root}/held");
    let loc = Location::parse(&out, false).unwrap();
    let mut first = run(&corpus, &out, &[], &[]).spawn().unwrap();
    wait_until(&mut first, || {
        block_on(loc.exists("_lock/0")).unwrap_or(false)
    });
    signal(first.id(), "STOP");
    let second = run(&corpus, &out, &[], &[]).output().unwrap();
    signal(first.id(), "CONT");
    let said = stderr(&second);
    assert_eq!(second.status.code(), Some(1), "{said}");
    assert!(
        said.contains(&format!(
            "in use by another run: epimine run on host {}, pid {}",
            host_name(),
            first.id()
        )) && said.contains(&format!("{out}/_lock/0")),
        "{said}"
    );
    let (first, _) = wait_bounded(first, 300);
    ok(first);
    same_bytes(&out, "the held run");

    let out = format!("{root}/killed");
    let o = run(
        &corpus,
        &out,
        &["-w", "2"],
        &[("EPIMINE_FAULT", "checkpoint:2")],
    )
    .output()
    .unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(o.status.signal(), Some(9), "{}", stderr(&o));
    let loc = Location::parse(&out, false).unwrap();
    assert!(
        block_on(loc.exists("_lock/0")).unwrap(),
        "the killed run's lock stays"
    );
    let resumed = ok(run(&corpus, &out, &["-w", "2"], &[]).output().unwrap());
    assert!(stderr(&resumed).contains("is gone"), "{}", stderr(&resumed));
    same_bytes(&out, "resumed on s3");
}

/// Issue 64, item 2: a run stalled at its switch (its fence passed) or inside its publication
/// while another run took the folder over and committed never replaces the newer result: at
/// the switch it loses the run number (exit 1, naming the winner, its version removed); after
/// its switch, the newer run finishes its publication first, and the stalled one, resuming,
/// leaves the top of the folder as the newest commit's.
#[test]
fn a_run_stalled_at_its_switch_never_replaces_a_newer_result() {
    let dir = scratch();
    let corpus = synth(dir.path(), 6, 10);
    // The newer run's tables differ from the stalled one's (five keywords a title).
    let newer = ["--set", "episodes.keywords=5"];
    // The newer run alone, and after the stalled one's (its run 2: the ids follow run 1).
    let alone = dir.path().join("alone");
    ok(run(&corpus, s(&alone), &newer, &[]).output().unwrap());
    let after = dir.path().join("after");
    ok(run(&corpus, s(&after), &[], &[]).output().unwrap());
    ok(run(&corpus, s(&after), &newer, &[]).output().unwrap());
    for point in ["switch", "publish"] {
        let reference = if point == "switch" { &alone } else { &after };
        let out = dir.path().join(point);
        let (stalled, marker, log) = start_stalled(dir.path(), &corpus, &out, point);
        age_the_lock(&out);
        let took_over = ok(run(&corpus, s(&out), &newer, &[]).output().unwrap());
        let said = stderr(&took_over);
        assert!(said.contains("it was not refreshed for"), "{point}: {said}");
        assert_same_tables(reference, &out, &format!("{point}: the newer run"));
        std::fs::remove_file(&marker).unwrap();
        let (resumed, _) = wait_bounded(stalled, 300);
        let said = std::fs::read_to_string(&log).unwrap();
        let commits: Vec<String> = files_in(&out.join("_commits"));
        if point == "switch" {
            assert_eq!(resumed.status.code(), Some(1), "{said}");
            assert!(
                said.contains("another run committed run 1 first (epimine run on host"),
                "{said}"
            );
            assert_eq!(commits, ["000001.json"]);
        } else {
            // Committed as run 1, published by the newer run (run 2) before its own.
            assert!(resumed.status.success(), "{said}");
            assert!(
                said.contains("run 2 (epimine run on host") && said.contains("published again"),
                "{said}"
            );
            assert_eq!(commits, ["000001.json", "000002.json"]);
            assert_eq!(files_in(&out.join("history")).len(), 2);
        }
        // The top of the folder is the newer run's, whole, and only committed versions are
        // kept.
        assert_same_tables(reference, &out, &format!("{point}: after the stalled run"));
        let report: serde_json::Value =
            serde_json::from_slice(&std::fs::read(out.join("run.json")).unwrap()).unwrap();
        assert_eq!(report["job"]["episodes"]["keywords"], 5, "{point}");
        assert_eq!(
            files_in(&out.join("_versions")).len(),
            commits.len(),
            "{point}"
        );
    }
}

/// Issue 64, item 4: every folder a run writes in `--out` is checked before any work, so a run
/// that could not commit stops at once, naming the folder, and the last good result stays whole
/// (here `history/` replaced by a file: root, which runs the tests, may write any folder).
#[test]
fn a_folder_a_run_cannot_write_stops_it_before_any_work_and_the_last_result_stays() {
    let dir = scratch();
    let corpus = synth(dir.path(), 3, 10);
    let out = dir.path().join("out");
    ok(run(&corpus, s(&out), &[], &[]).output().unwrap());
    let committed = std::fs::read(out.join("run.json")).unwrap();
    let history = out.join("history");
    std::fs::rename(&history, dir.path().join("history-away")).unwrap();
    std::fs::write(&history, b"not a folder").unwrap();
    let o = run(&corpus, s(&out), &["--set", "episodes.keywords=5"], &[])
        .output()
        .unwrap();
    let said = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{said}");
    assert!(
        said.contains(&format!("{} is not a folder", s(&history)))
            && said.contains("a run writes its history/ there"),
        "{said}"
    );
    assert!(
        !said.contains("encoding"),
        "refused before any work: {said}"
    );
    assert_eq!(std::fs::read(out.join("run.json")).unwrap(), committed);
    assert_eq!(files_in(&out.join("_commits")), ["000001.json"]);
    std::fs::remove_file(&history).unwrap();
    std::fs::rename(dir.path().join("history-away"), &history).unwrap();
    ok(
        run(&corpus, s(&out), &["--set", "episodes.keywords=5"], &[])
            .output()
            .unwrap(),
    );
    assert_eq!(
        files_in(&out.join("_commits")),
        ["000001.json", "000002.json"]
    );
}

/// Issue 64, item 3: a run reads the corpus as it was when it began. A batch that lands while
/// it works (here during its statistics stage, the run held there) is not read by it — its
/// tables are those of the corpus before, and `run.json`'s `corpus_files` names the files it
/// read — and the next run reads it.
#[test]
fn a_batch_appended_during_a_run_is_the_next_runs() {
    let dir = scratch();
    let corpus = synth(dir.path(), 3, 10);
    let before = dir.path().join("before");
    ok(run(&corpus, s(&before), &[], &[]).output().unwrap());
    let out = dir.path().join("out");
    let (stalled, marker, log) = start_stalled(dir.path(), &corpus, &out, "statistics");
    // A batch lands: the first event's articles again, as new articles (ids after the last).
    let segments: Vec<epimine::tables::Segment> = read_rows(&corpus);
    let last = segments.iter().map(|s| s.doc_id).max().unwrap();
    let first_event = segments[0].key_event.clone();
    let batch: Vec<epimine::tables::Segment> = segments
        .iter()
        .filter(|s| s.key_event == first_event)
        .map(|s| epimine::tables::Segment {
            doc_id: s.doc_id + last + 1,
            ..s.clone()
        })
        .collect();
    let loc = Location::parse(s(&corpus), false).unwrap();
    block_on(async {
        let mut w = loc
            .table_writer_named::<epimine::tables::Segment>("segments-000002.parquet")
            .unwrap();
        w.push(batch).await.unwrap();
        w.finish().await.unwrap();
    });
    std::fs::remove_file(&marker).unwrap();
    let (done, _) = wait_bounded(stalled, 300);
    assert!(
        done.status.success(),
        "{}",
        std::fs::read_to_string(&log).unwrap()
    );
    assert_same_tables(&before, &out, "a run with a batch appended meanwhile");
    let files = |out: &Path| -> Vec<String> {
        let report: serde_json::Value =
            serde_json::from_slice(&std::fs::read(out.join("run.json")).unwrap()).unwrap();
        report["corpus_files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(files(&out), ["segments.parquet"]);
    ok(run(&corpus, s(&out), &[], &[]).output().unwrap());
    assert_eq!(files(&out), ["segments-000002.parquet", "segments.parquet"]);
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("run.json")).unwrap()).unwrap();
    let articles: u64 = report["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["key_event"] == first_event.as_str())
        .map(|e| e["articles"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(articles, 20, "{report}");
}

/// Issue 64's minor item: files a killed run left staged (`episodes.parquet#0`: SIGKILL while
/// one was being written, before its rename into place) are removed by the next run, once it
/// holds the folder — those untouched for 10 minutes: a fresh one may be a live writer's (a
/// run racing for the lock, another process's probe).
#[test]
fn files_a_killed_run_left_staged_are_removed_by_the_next() {
    let dir = scratch();
    let corpus = synth(dir.path(), 2, 10);
    let out = dir.path().join("out");
    ok(run(&corpus, s(&out), &[], &[]).output().unwrap());
    let staged = [
        "episodes.parquet#0",
        "_identity/000001.parquet#3",
        "run.json#1",
    ];
    // Left 11 minutes ago; one staged a second ago (a writer at work) stays.
    for f in staged.iter().chain(&["terms.parquet#2"]) {
        std::fs::write(out.join(f), b"half").unwrap();
    }
    for f in staged {
        std::fs::File::options()
            .write(true)
            .open(out.join(f))
            .unwrap()
            .set_modified(SystemTime::now() - Duration::from_secs(660))
            .unwrap();
    }
    let o = ok(run(&corpus, s(&out), &[], &[("RUST_LOG", "info")])
        .output()
        .unwrap());
    assert!(
        stderr(&o).contains("3 file(s) a stopped run left half-written removed"),
        "{}",
        stderr(&o)
    );
    for f in staged {
        assert!(!out.join(f).exists(), "{f}");
    }
    assert!(out.join("terms.parquet#2").exists());
}
