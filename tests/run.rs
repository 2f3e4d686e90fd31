//! `epimine run` end to end on synthetic corpora, with the tiny random-weight BERT fixture as
//! the encoder (fast in any build): every output written, byte-identical for 1 and 2 workers
//! and for 2 processes, failed events recorded while the others complete, the K-means baseline,
//! and the documented example job.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use crate::util::*;
use epimine::background::Background;
use epimine::episodes::expand::{build_term_set, TermParams};
use epimine::stats::{compute, Cluster, Round};
use epimine::storage::Location;
use epimine::tables::{Assignment, Episode, FragmentRow, LeftOut, Pair, Segment, Term};

fn run_args<'a>(corpus: &'a str, bg: &'a str, out: &'a str, model: &'a str) -> Vec<&'a str> {
    vec![
        "run",
        "--corpus",
        corpus,
        "--background",
        bg,
        "--out",
        out,
        "--model",
        model,
    ]
}

#[test]
fn the_encoder_cache_gives_the_same_bytes_and_is_keyed_by_batch_size() {
    let dir = scratch();
    let corpus = synth(dir.path(), 2, 70);
    let bg = corpus.join("background.txt");
    let model = tiny_model();
    let cache = dir.path().join("cache");
    let set_cache = format!("encoder.cache_dir=\"{}\"", s(&cache));
    let run = |name: &str, extra: &[&str]| {
        let out = dir.path().join(name);
        let mut args = run_args(s(&corpus), s(&bg), s(&out), &model);
        args.extend(["-w", "2"]);
        args.extend(extra);
        epimine_ok(&args);
        out
    };
    let entries = || std::fs::read_dir(&cache).map_or(0, |d| d.count());
    let plain = run("plain", &[]);
    // Two events of 70 articles: two encoding units each, one cache entry a unit.
    let filled = run("filled", &["--set", &set_cache]);
    assert_eq!(entries(), 4);
    let hit = run("hit", &["--set", &set_cache]);
    assert_eq!(entries(), 4, "the second run reads the cache");
    for f in OUTPUTS {
        let want = std::fs::read(plain.join(f)).unwrap();
        assert!(
            want == std::fs::read(filled.join(f)).unwrap(),
            "{f}: cache filled"
        );
        assert!(
            want == std::fs::read(hit.join(f)).unwrap(),
            "{f}: cache read"
        );
    }
    // Another batch size pads other texts together (other floats): its own entries.
    run(
        "batch",
        &["--set", &set_cache, "--set", "encoder.batch_size=4"],
    );
    assert_eq!(entries(), 8);
}

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
fn run_writes_every_output_identically_for_any_layout() {
    let dir = scratch();
    // 70 articles an event: two encoding units each (`sharding::ARTICLES_PER_UNIT` = 64), so with
    // 2 workers an event's units are encoded apart and their word sums added on the owner.
    assert_eq!(epimine::sharding::ARTICLES_PER_UNIT, 64);
    let corpus = synth(dir.path(), 3, 70);
    let bg = corpus.join("background.txt");
    let model = tiny_model();
    let one = dir.path().join("one");
    let mut args = run_args(s(&corpus), s(&bg), s(&one), &model);
    args.extend(["-w", "1"]);
    let stdout = epimine_ok(&args);
    assert!(stdout.contains("3 of 3 events done"), "{stdout}");
    let two = dir.path().join("two");
    let mut args = run_args(s(&corpus), s(&bg), s(&two), &model);
    args.extend(["-w", "2"]);
    epimine_ok(&args);
    for f in OUTPUTS.iter().chain(&["left_out.parquet"]) {
        let a = std::fs::read(one.join(f)).unwrap();
        assert!(
            a == std::fs::read(two.join(f)).unwrap(),
            "{f}: 1 vs 2 workers"
        );
    }
    // More workers than events and than cores (issue 48 item 2: `-w 4` on one GPU failed).
    for w in ["4", "8"] {
        let many = dir.path().join(format!("w{w}"));
        let mut args = run_args(s(&corpus), s(&bg), s(&many), &model);
        args.extend(["-w", w]);
        epimine_ok(&args);
        for f in OUTPUTS.iter().chain(&["left_out.parquet"]) {
            assert!(
                std::fs::read(one.join(f)).unwrap() == std::fs::read(many.join(f)).unwrap(),
                "{f}: 1 vs {w} workers"
            );
        }
    }

    // `epimine stats` with word vectors writes the same terms and pairs (expansion, synonym
    // groups, group-sense pairs) as the run, for 1 and 2 workers; without vectors it differs.
    let stats = |out: &Path, extra: &[&str]| {
        let mut args = vec![
            "stats",
            "--corpus",
            s(&corpus),
            "--background",
            s(&bg),
            "--out",
            s(out),
        ];
        args.extend(extra);
        epimine_ok(&args);
    };
    for w in ["1", "2"] {
        let stats_out = dir.path().join(format!("stats-{w}"));
        stats(&stats_out, &["--model", &model, "-w", w]);
        for f in ["terms.parquet", "pairs.parquet"] {
            assert!(
                std::fs::read(one.join(f)).unwrap() == std::fs::read(stats_out.join(f)).unwrap(),
                "{f}: stats -w {w} vs run"
            );
        }
    }
    let plain = dir.path().join("stats-plain");
    stats(&plain, &["--no-vectors"]);
    let with: Vec<Term> = block_on(Location::parse(s(&one), false).unwrap().read_table()).unwrap();
    let without: Vec<Term> =
        block_on(Location::parse(s(&plain), false).unwrap().read_table()).unwrap();
    assert_eq!(with.len(), without.len());
    let groups = |t: &[Term]| {
        t.iter()
            .filter_map(|t| t.group.map(|g| (t.key_event.clone(), g)))
            .collect::<HashSet<_>>()
            .len()
    };
    let grouped = with.iter().filter(|t| t.group.is_some()).count();
    assert!(
        with.iter().any(|t| t.expanded_from.is_some()) || groups(&with) < grouped,
        "word vectors changed nothing"
    );
    assert!(without.iter().all(|t| t.expanded_from.is_none()));

    // Every table reads back and agrees with the others.
    let out = Location::parse(s(&one), false).unwrap();
    let (episodes, assignments, fragments, terms, pairs) = block_on(async {
        (
            out.read_table::<Episode>().await.unwrap(),
            out.read_table::<Assignment>().await.unwrap(),
            out.read_table::<FragmentRow>().await.unwrap(),
            out.read_table::<Term>().await.unwrap(),
            out.read_table::<Pair>().await.unwrap(),
        )
    });
    assert!(!episodes.is_empty() && !fragments.is_empty() && !pairs.is_empty());
    assert!(terms.iter().any(|t| t.salient));
    let corpus_segments: Vec<epimine::tables::Segment> =
        block_on(Location::parse(s(&corpus), false).unwrap().read_table()).unwrap();
    let date_of: std::collections::HashMap<(&str, u32, u32), Option<i32>> = corpus_segments
        .iter()
        .map(|s| ((s.key_event.as_str(), s.doc_id, s.seg_idx), s.doc_date))
        .collect();
    for e in &episodes {
        let mine: Vec<&Assignment> = assignments
            .iter()
            .filter(|a| a.key_event == e.key_event && a.episode_id == e.episode_id)
            .collect();
        assert_eq!(mine.len() as u32, e.n_segments, "{e:?}");
        // When it is told: articles and first / peak / last dates of its assigned segments,
        // counted here from the corpus.
        let docs: HashSet<u32> = mine.iter().map(|a| a.doc_id).collect();
        assert_eq!(e.n_articles as usize, docs.len(), "{e:?}");
        let mut per_day: std::collections::BTreeMap<i32, usize> = Default::default();
        for a in &mine {
            let date = date_of[&(a.key_event.as_str(), a.doc_id, a.seg_idx)].expect("synth dates");
            *per_day.entry(date).or_default() += 1;
        }
        let most = *per_day.values().max().unwrap();
        let peak = per_day.iter().find(|(_, &n)| n == most).map(|(&d, _)| d);
        assert_eq!(
            (e.first_date, e.peak_date, e.last_date),
            (
                per_day.keys().next().copied(),
                peak,
                per_day.keys().next_back().copied()
            ),
            "{e:?}"
        );
        assert!(mine.len() >= 2, "episodes keep at least 2 segments");
        let ranks: Vec<u32> = mine.iter().map(|a| a.rank).collect();
        assert_eq!(ranks, (0..mine.len() as u32).collect::<Vec<_>>());
        // Ranked by density among the episode's segments (episodes.rank = "density", the
        // default), not by confidence: only the confidences' range is checked here.
        assert!(mine.iter().all(|a| a.confidence.is_finite()));
        assert!(!e.keywords.is_empty() && e.source == "clusters");
    }
    // With the paper's ranking (eq. 2 confidence) the same episodes keep the same segments,
    // ranked by descending confidence.
    let by_confidence = dir.path().join("by-confidence");
    let mut args = run_args(s(&corpus), s(&bg), s(&by_confidence), &model);
    args.extend(["--set", "episodes.rank=\"confidence\""]);
    epimine_ok(&args);
    let ranked: Vec<Assignment> = block_on(
        Location::parse(s(&by_confidence), false)
            .unwrap()
            .read_table(),
    )
    .unwrap();
    let members = |rows: &[Assignment]| {
        rows.iter()
            .map(|a| (a.key_event.clone(), a.episode_id, a.doc_id, a.seg_idx))
            .collect::<std::collections::BTreeSet<_>>()
    };
    assert_eq!(members(&ranked), members(&assignments));
    for w in ranked.windows(2) {
        if (&w[0].key_event, w[0].episode_id) == (&w[1].key_event, w[1].episode_id) {
            assert!(w[0].rank < w[1].rank && w[0].confidence >= w[1].confidence);
        }
    }
    let segments = block_on(
        Location::parse(s(&corpus), false)
            .unwrap()
            .read_table::<Segment>(),
    )
    .unwrap();
    let keys: HashSet<(&str, u32, u32)> = segments
        .iter()
        .map(|s| (s.key_event.as_str(), s.doc_id, s.seg_idx))
        .collect();
    assert!(assignments.iter().all(|a| keys.contains(&(
        a.key_event.as_str(),
        a.doc_id,
        a.seg_idx
    ))));
    // A segment belongs to at most one episode.
    let assigned: HashSet<(&str, u32, u32)> = assignments
        .iter()
        .map(|a| (a.key_event.as_str(), a.doc_id, a.seg_idx))
        .collect();
    assert_eq!(assigned.len(), assignments.len());

    // The resolved job and the report sit next to the outputs.
    let job = epimine::job::Job::from_file(&one.join("job.toml")).unwrap();
    assert_eq!(job.encoder.model, model);
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(one.join("run.json")).unwrap()).unwrap();
    assert_eq!(report["partial"], false);
    assert_eq!(report["events"].as_array().unwrap().len(), 3);
    assert!(
        report["model"]["files"]["model.safetensors"]
            .as_str()
            .unwrap()
            .len()
            == 64
    );
    let stages: Vec<&str> = report["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["stage"].as_str().unwrap())
        .collect();
    assert_eq!(
        stages,
        ["statistics", "load", "encoding", "episodes", "write"]
    );

    // eval reads the run.
    let eval = epimine_ok(&["eval", "--corpus", s(&corpus), "--run", s(&one), "--json"]);
    let v: serde_json::Value = serde_json::from_str(&eval).unwrap();
    assert_eq!(v["events"].as_array().unwrap().len(), 3);
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
fn two_processes_write_the_same_bytes() {
    let dir = scratch();
    let corpus = synth(dir.path(), 2, 20);
    let bg = corpus.join("background.txt");
    let model = tiny_model();
    let one = dir.path().join("one");
    epimine_ok(&run_args(s(&corpus), s(&bg), s(&one), &model));
    let hosts = hostfile(dir.path(), 2);
    let two = dir.path().join("two");
    let spawn = |p: &str, out: &Path| {
        let mut args = run_args(s(&corpus), s(&bg), s(out), &model);
        args.extend(["-w", "1", "-n", "2", "-p", p, "-H", s(&hosts)]);
        let args: Vec<String> = args.into_iter().map(String::from).collect();
        std::process::Command::new(env!("CARGO_BIN_EXE_epimine"))
            .args(args)
            .env("RUST_LOG", "warn")
            .spawn()
            .unwrap()
    };
    // Both processes write their events' checkpoints into the one --out (a shared folder or
    // s3://); process 0 assembles and commits.
    let mut p1 = spawn("1", &two);
    let mut p0 = spawn("0", &two);
    assert!(p0.wait().unwrap().success());
    assert!(p1.wait().unwrap().success());
    for f in OUTPUTS {
        assert!(
            std::fs::read(one.join(f)).unwrap() == std::fs::read(two.join(f)).unwrap(),
            "{f}"
        );
    }
    assert_eq!(files_in(&two.join("_checkpoints")).len(), 2);
}

#[test]
fn an_event_over_the_caps_classifies_every_segment_the_same_for_any_layout() {
    // One event of 120 articles, with caps far below its size: at most 12 fragments enter the
    // fragment distances, 15 members of an episode are ranked by density, 40 terms form T.
    // Every segment must still reach an episode (with the rules that drop none), and the bytes
    // must not depend on the workers (the event's loops run on as many threads) or processes.
    let dir = scratch();
    let corpus = synth(dir.path(), 1, 120);
    let bg = corpus.join("background.txt");
    let model = tiny_model();
    let caps = [
        "--set",
        "episodes.max_fragments=12",
        "--set",
        "episodes.max_ranked=15",
        "--set",
        "terms.max_terms=40",
        "--set",
        "episodes.confidence=\"all\"",
        "--set",
        "episodes.cohesion=\"all\"",
        "--set",
        "episodes.size=\"all\"",
        "--set",
        "episodes.max_episodes=0",
        "--set",
        "episodes.min_segments=1",
    ];
    let run = |name: &str, layout: &[&str]| -> PathBuf {
        let out = dir.path().join(name);
        let mut args = run_args(s(&corpus), s(&bg), s(&out), &model);
        args.extend(caps);
        args.extend(layout);
        epimine_ok(&args);
        out
    };
    let one = run("one", &["-w", "1"]);
    let segments: Vec<Segment> =
        block_on(Location::parse(s(&corpus), false).unwrap().read_table()).unwrap();
    let assignments: Vec<Assignment> =
        block_on(Location::parse(s(&one), false).unwrap().read_table()).unwrap();
    assert_eq!(assignments.len(), segments.len(), "every segment assigned");
    let keys: HashSet<(u32, u32)> = assignments.iter().map(|a| (a.doc_id, a.seg_idx)).collect();
    assert_eq!(keys.len(), segments.len(), "each once");
    let fragments: Vec<FragmentRow> =
        block_on(Location::parse(s(&one), false).unwrap().read_table()).unwrap();
    let clustered = fragments.iter().filter(|f| f.cluster.is_some()).count();
    assert!(
        clustered > 0 && clustered <= 12,
        "{clustered} fragments clustered of {}",
        fragments.len()
    );
    // Without the caps more fragments are clustered: the cap is what bounded it.
    assert!(fragments.len() / 4 > 12, "{} fragments", fragments.len());
    let terms: Vec<Term> = block_on(Location::parse(s(&one), false).unwrap().read_table()).unwrap();
    assert_eq!(terms.iter().filter(|t| t.salient).count(), 40);
    let three = run("three", &["-w", "3"]);
    let hosts = hostfile(dir.path(), 2);
    let two = dir.path().join("two-processes");
    let spawn = |p: &str| {
        let mut args = run_args(s(&corpus), s(&bg), s(&two), &model);
        args.extend(caps);
        args.extend(["-w", "2", "-n", "2", "-p", p, "-H", s(&hosts)]);
        let args: Vec<String> = args.into_iter().map(String::from).collect();
        std::process::Command::new(env!("CARGO_BIN_EXE_epimine"))
            .args(args)
            .env("RUST_LOG", "warn")
            .spawn()
            .unwrap()
    };
    let mut p1 = spawn("1");
    let mut p0 = spawn("0");
    assert!(p0.wait().unwrap().success());
    assert!(p1.wait().unwrap().success());
    for f in OUTPUTS {
        let a = std::fs::read(one.join(f)).unwrap();
        assert!(
            a == std::fs::read(three.join(f)).unwrap(),
            "{f}: -w 1 vs -w 3"
        );
        assert!(
            a == std::fs::read(two.join(f)).unwrap(),
            "{f}: 1 vs 2 processes"
        );
    }
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

#[test]
fn pairs_without_vectors_equal_the_dataflow() {
    // The coordinator's group-sense pair count, with no expansion and single-term groups, must
    // equal the statistics dataflow's.
    let dir = scratch();
    let corpus = synth(dir.path(), 2, 30);
    let docs: Vec<String> = std::fs::read_to_string(corpus.join("background.txt"))
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    let out = compute(
        &[Round {
            corpus: s(&corpus).to_string(),
            sign: 1,
        }],
        &Background::Text(docs),
        &Cluster::default(),
    )
    .unwrap()
    .unwrap();
    let segments: Vec<Segment> =
        block_on(Location::parse(s(&corpus), false).unwrap().read_table()).unwrap();
    for event in ["synth_event_000", "synth_event_001"] {
        let rows: Vec<Term> = out
            .terms
            .iter()
            .filter(|t| t.key_event == event)
            .cloned()
            .collect();
        let texts: Vec<&str> = segments
            .iter()
            .filter(|s| s.key_event == event)
            .map(|s| s.text.as_str())
            .collect();
        let set = build_term_set(
            &rows,
            &Default::default(),
            &TermParams::uncapped(0.75, 0.85),
            &texts,
        );
        let want: Vec<&Pair> = out.pairs.iter().filter(|p| p.key_event == event).collect();
        assert_eq!(set.pairs.len(), want.len(), "{event}");
        for (g, w) in set.pairs.iter().zip(want) {
            assert_eq!((&g.a, &g.b, g.freq), (&w.a, &w.b, w.freq));
            assert!(
                (g.d - w.d).abs() <= 1e-9 * w.d.abs().max(1.0),
                "{g:?} {w:?}"
            );
        }
        assert_eq!(set.rows, rows, "no vectors: rows unchanged");
    }
}

/// `terms.dated` (issue 45): words below eq. 3's mean salience whose articles are written on days
/// of their own join T — salient, not expanded, a salience at or below the event's mean — where
/// the default run leaves them out; the run is the same bytes for 1 and 2 workers.
#[test]
fn dated_words_join_t_below_the_mean_and_the_run_repeats_for_any_layout() {
    let dir = scratch();
    let corpus = synth(dir.path(), 2, 70);
    let bg = corpus.join("background.txt");
    let model = tiny_model();
    let run = |name: &str, extra: &[&str]| {
        let out = dir.path().join(name);
        let mut args = run_args(s(&corpus), s(&bg), s(&out), &model);
        args.extend(extra);
        epimine_ok(&args);
        out
    };
    let dated = ["--set", "terms.dated=true"];
    let one = run("one", &[&["-w", "1"][..], &dated].concat());
    let two = run("two", &[&["-w", "2"][..], &dated].concat());
    assert_same_tables(&one, &two, "terms.dated, 1 vs 2 workers");
    let plain = run("plain", &["-w", "2"]);
    // The plain run's T cut per event: its least salient term that joined by eq. 3 alone.
    let plain_terms: Vec<Term> = read_rows(&plain);
    let mut cut: BTreeMap<&str, f64> = BTreeMap::new();
    for r in plain_terms
        .iter()
        .filter(|r| r.salient && r.expanded_from.is_none())
    {
        let c = cut.entry(r.key_event.as_str()).or_insert(f64::INFINITY);
        *c = c.min(r.salience);
    }
    let was = |r: &Term| {
        plain_terms
            .iter()
            .find(|p| p.key_event == r.key_event && p.term == r.term)
            .unwrap()
            .clone()
    };
    let dated_terms: Vec<Term> = read_rows(&one);
    let joined: Vec<&Term> = dated_terms
        .iter()
        .filter(|r| r.salient && r.expanded_from.is_none() && !was(r).salient)
        .collect();
    assert!(!joined.is_empty(), "some word joins T by its dates");
    for r in joined {
        let before = was(r);
        assert!(before.salience != -1.0, "{before:?}: a valid salience");
        assert_eq!(before.salience, r.salience, "{r:?}: its own salience");
        assert!(
            r.salience < cut[r.key_event.as_str()],
            "{r:?}: below the plain run's cut"
        );
    }
}
