//! Killed runs resume to the bytes of an uninterrupted run; checkpoints are checked.

use super::*;

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
