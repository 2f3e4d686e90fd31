//! The same bytes for any layout: workers, processes, caps, the encoder cache.

use super::*;

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

    assert_stats_write_the_runs_terms_and_pairs(dir.path(), &corpus, &bg, &model, &one);
    let assignments = assert_the_tables_agree(&corpus, &one);
    assert_confidence_ranking_keeps_the_members(dir.path(), &corpus, &bg, &model, &assignments);
    assert_assignments_name_corpus_segments_each_once(&corpus, &assignments);
    assert_the_job_and_report_sit_beside(&one, &model);

    // eval reads the run.
    let eval = epimine_ok(&["eval", "--corpus", s(&corpus), "--run", s(&one), "--json"]);
    let v: serde_json::Value = serde_json::from_str(&eval).unwrap();
    assert_eq!(v["events"].as_array().unwrap().len(), 3);
}

/// `epimine stats` with word vectors writes the same terms and pairs (expansion, synonym
/// groups, group-sense pairs) as the run `one`, for 1 and 2 workers; without vectors it differs.
fn assert_stats_write_the_runs_terms_and_pairs(
    dir: &Path,
    corpus: &Path,
    bg: &Path,
    model: &str,
    one: &Path,
) {
    let stats = |out: &Path, extra: &[&str]| {
        let mut args = vec![
            "stats",
            "--corpus",
            s(corpus),
            "--background",
            s(bg),
            "--out",
            s(out),
        ];
        args.extend(extra);
        epimine_ok(&args);
    };
    for w in ["1", "2"] {
        let stats_out = dir.join(format!("stats-{w}"));
        stats(&stats_out, &["--model", model, "-w", w]);
        for f in ["terms.parquet", "pairs.parquet"] {
            assert!(
                std::fs::read(one.join(f)).unwrap() == std::fs::read(stats_out.join(f)).unwrap(),
                "{f}: stats -w {w} vs run"
            );
        }
    }
    let plain = dir.join("stats-plain");
    stats(&plain, &["--no-vectors"]);
    let with: Vec<Term> = block_on(Location::parse(s(one), false).unwrap().read_table()).unwrap();
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
}

/// Every table of the run `one` reads back and agrees with the others and with `corpus`;
/// returns its assignments.
fn assert_the_tables_agree(corpus: &Path, one: &Path) -> Vec<Assignment> {
    let out = Location::parse(s(one), false).unwrap();
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
        block_on(Location::parse(s(corpus), false).unwrap().read_table()).unwrap();
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
    assignments
}

/// With the paper's ranking (eq. 2 confidence) the same episodes keep the same segments as in
/// `assignments`, ranked by descending confidence.
fn assert_confidence_ranking_keeps_the_members(
    dir: &Path,
    corpus: &Path,
    bg: &Path,
    model: &str,
    assignments: &[Assignment],
) {
    let by_confidence = dir.join("by-confidence");
    let mut args = run_args(s(corpus), s(bg), s(&by_confidence), model);
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
    assert_eq!(members(&ranked), members(assignments));
    for w in ranked.windows(2) {
        if (&w[0].key_event, w[0].episode_id) == (&w[1].key_event, w[1].episode_id) {
            assert!(w[0].rank < w[1].rank && w[0].confidence >= w[1].confidence);
        }
    }
}

/// Every assigned segment is one of `corpus`'s, and a segment belongs to at most one episode.
fn assert_assignments_name_corpus_segments_each_once(corpus: &Path, assignments: &[Assignment]) {
    let segments = block_on(
        Location::parse(s(corpus), false)
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
}

/// The resolved job and the report sit next to the outputs of the run `one`.
fn assert_the_job_and_report_sit_beside(one: &Path, model: &str) {
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
