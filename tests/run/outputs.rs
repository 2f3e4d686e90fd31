//! What a run writes: every segment accounted for, failed events recorded, settings checked.

use super::*;

#[test]
fn every_segment_is_in_an_episode_or_left_out_with_why() {
    let dir = scratch();
    let corpus = synth(dir.path(), 3, 70);
    let bg = corpus.join("background.txt");
    let model = tiny_model();
    let out = dir.path().join("out");
    let mut args = run_args(s(&corpus), s(&bg), s(&out), &model);
    args.extend(["-w", "2", "--set", "episodes.max_episodes=2"]);
    let stdout = epimine_ok(&args);
    assert!(stdout.contains("left_out.parquet"), "{stdout}");
    let read = |d: &Path| Location::parse(s(d), false).unwrap();
    let segments: Vec<Segment> = block_on(read(&corpus).read_table()).unwrap();
    let assigned: Vec<Assignment> = block_on(read(&out).read_table()).unwrap();
    let left: Vec<LeftOut> = block_on(read(&out).read_table()).unwrap();
    // The cap of 2 drops candidates, so some segments are left out by it.
    assert!(left.iter().any(|r| r.reason == "episode-dropped-by-cap"));
    let key = |e: &str, d: u32, g: u32| (e.to_string(), d, g);
    let mut seen: BTreeMap<(String, u32, u32), &str> = BTreeMap::new();
    for a in &assigned {
        assert!(seen
            .insert(key(&a.key_event, a.doc_id, a.seg_idx), "episode")
            .is_none());
    }
    for r in &left {
        assert_eq!(r.trial, 0);
        let before = seen.insert(key(&r.key_event, r.doc_id, r.seg_idx), "left out");
        assert!(before.is_none(), "{r:?} is also {before:?}");
    }
    let all: Vec<_> = segments
        .iter()
        .map(|g| key(&g.key_event, g.doc_id, g.seg_idx))
        .collect();
    assert_eq!(
        seen.keys().cloned().collect::<Vec<_>>(),
        all,
        "every segment once"
    );
    // run.json's counts are the table's rows counted by reason.
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("run.json")).unwrap()).unwrap();
    for e in manifest["events"].as_array().unwrap() {
        let event = e["key_event"].as_str().unwrap();
        let mut counted: BTreeMap<String, u64> = BTreeMap::new();
        for r in left.iter().filter(|r| r.key_event == event) {
            *counted.entry(r.reason.clone()).or_default() += 1;
        }
        let said: BTreeMap<String, u64> = e["counts"]["left_out"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.as_u64().unwrap()))
            .collect();
        assert_eq!(counted, said, "{event}");
    }
}

#[test]
fn a_second_sentence_model_makes_the_embeddings_alone() {
    let dir = scratch();
    let corpus = synth(dir.path(), 2, 70);
    let bg = corpus.join("background.txt");
    let words = tiny_model();
    let sentences = fixture_model("tiny-mpnet");
    let set = format!("encoder.sentence_model=\"{sentences}\"");
    let run = |name: &str, extra: &[&str]| {
        let out = dir.path().join(name);
        let mut args = run_args(s(&corpus), s(&bg), s(&out), &words);
        args.extend(extra);
        epimine_ok(&args);
        out
    };
    let single = run("single", &["-w", "2"]);
    let one = run("one", &["-w", "1", "--set", &set]);
    let two = run("two", &["-w", "2", "--set", &set]);
    for f in OUTPUTS {
        assert!(
            std::fs::read(one.join(f)).unwrap() == std::fs::read(two.join(f)).unwrap(),
            "{f}: 1 vs 2 workers"
        );
    }
    // The word vectors come from the word model alone: the same terms as with one model.
    assert!(
        std::fs::read(single.join("terms.parquet")).unwrap()
            == std::fs::read(one.join("terms.parquet")).unwrap()
    );
    // The sentence embeddings are the other model's: other episodes.
    assert!(
        std::fs::read(single.join("assignments.parquet")).unwrap()
            != std::fs::read(one.join("assignments.parquet")).unwrap()
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(one.join("run.json")).unwrap()).unwrap();
    let model = &report["model"];
    assert!(
        model["sentence_dir"]
            .as_str()
            .unwrap()
            .ends_with("tiny-mpnet"),
        "{model}"
    );
    assert!(model["files"]["sentence_model/model.safetensors"].is_string());
    assert_eq!(
        report["job"]["encoder"]["sentence_model"].as_str(),
        Some(sentences.as_str())
    );

    // A sentence model that is not there stops the run before any work, naming it.
    let out = dir.path().join("missing");
    let mut args = run_args(s(&corpus), s(&bg), s(&out), &words);
    args.extend(["--set", "encoder.sentence_model=\"no-such-model\""]);
    let failed = epimine(&args);
    let err = String::from_utf8_lossy(&failed.stderr);
    assert!(
        !failed.status.success() && err.contains("no-such-model"),
        "{err}"
    );
}

#[test]
fn a_failed_event_is_recorded_and_the_others_complete() {
    let dir = scratch();
    // With an event too small to have salient terms.
    let corpus = synth_with_a_failing_event(dir.path(), 2, 20);
    let out = dir.path().join("out");
    let result = epimine(&run_args(
        s(&corpus),
        s(&corpus.join("background.txt")),
        s(&out),
        &tiny_model(),
    ));
    assert_eq!(
        result.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    let stdout = String::from_utf8_lossy(&result.stdout);
    assert!(
        stdout.contains("2 of 3 events done") && stdout.contains("failed zz_tiny_event"),
        "{stdout}"
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("run.json")).unwrap()).unwrap();
    assert_eq!(report["partial"], true);
    let failed: Vec<&serde_json::Value> = report["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["status"] == "failed")
        .collect();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0]["key_event"], "zz_tiny_event");
    assert!(failed[0]["error"]
        .as_str()
        .unwrap()
        .contains("no salient terms"));
    let episodes = block_on(
        Location::parse(s(&out), false)
            .unwrap()
            .read_table::<Episode>(),
    )
    .unwrap();
    let events: HashSet<&str> = episodes.iter().map(|e| e.key_event.as_str()).collect();
    assert_eq!(events.len(), 2);
}

#[test]
fn bad_job_settings_are_clear_errors() {
    let dir = scratch();
    let out = epimine(&[
        "run",
        "--corpus",
        "c",
        "--background",
        "b",
        "--out",
        s(dir.path()),
        "--set",
        "episodes.top_artcles=0.3",
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("top_artcles"));
    let out = epimine(&["run", "--background", "b", "--out", s(dir.path())]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("no corpus"));
}

#[test]
fn the_documented_example_job_is_valid() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("jobs/example.toml");
    let job = epimine::job::Job::from_file(&path).unwrap();
    job.validate().unwrap();
    assert_eq!(job.episodes.top_articles, 0.25);
    assert_eq!(job.terms.expansion, 0.75);
    // Its [episodes] section documents the default rules (min_episodes among them).
    assert_eq!(
        job.episodes,
        epimine::episodes::EpisodeParams::default(),
        "jobs/example.toml's [episodes] differs from EpisodeParams::default()"
    );
    // The local-server job parses, validates and sets what a CPU server needs.
    let local = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("jobs/local-llm.toml");
    let job = epimine::job::Job::from_file(&local).unwrap();
    job.validate().unwrap();
    assert!(job.llm.enabled());
    assert_eq!((job.llm.concurrency, job.llm.context_tokens), (1, 8192));
    assert!(job.llm.timeout >= 600.0 && job.llm.structured);
    // The job the README's cron line follows a story with: the two date rules and the novelty
    // view on, every other episode rule the default's (the Kubernetes CronJob's ConfigMap says
    // the same: tests/recipes.rs).
    let follow = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("jobs/follow.toml");
    let job = epimine::job::Job::from_file(&follow).unwrap();
    job.validate().unwrap();
    assert!(job.terms.dated && job.episodes.dated);
    assert_eq!(
        job.episodes,
        epimine::episodes::EpisodeParams {
            dated: true,
            novelty: true,
            ..epimine::episodes::EpisodeParams::default()
        }
    );
}

#[test]
fn kmeans_baseline_gives_k_clusters_and_repeats() {
    let dir = scratch();
    let corpus = synth(dir.path(), 2, 15);
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    for out in [&a, &b] {
        epimine_ok(&[
            "baseline",
            "kmeans",
            "--corpus",
            s(&corpus),
            "--out",
            s(out),
            "--model",
            &tiny_model(),
        ]);
    }
    for f in ["episodes.parquet", "assignments.parquet"] {
        assert!(
            std::fs::read(a.join(f)).unwrap() == std::fs::read(b.join(f)).unwrap(),
            "{f}"
        );
    }
    let loc = Location::parse(s(&corpus), false).unwrap();
    let gold: Vec<epimine::tables::GoldEpisode> = block_on(loc.read_table()).unwrap();
    let segments: Vec<Segment> = block_on(loc.read_table()).unwrap();
    let out = Location::parse(s(&a), false).unwrap();
    let episodes: Vec<Episode> = block_on(out.read_table()).unwrap();
    let assignments: Vec<Assignment> = block_on(out.read_table()).unwrap();
    let mut k: BTreeMap<&str, usize> = BTreeMap::new();
    for g in &gold {
        *k.entry(g.key_event.as_str()).or_default() += 1;
    }
    for (event, n) in k {
        assert_eq!(
            episodes.iter().filter(|e| e.key_event == event).count(),
            n,
            "{event}"
        );
    }
    // Every segment is in exactly one cluster.
    assert_eq!(assignments.len(), segments.len());
}
