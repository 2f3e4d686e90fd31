//! `import --append` into a followed corpus: nothing touched, nothing lost, the right corpus.

use super::*;

/// One article of the flood as a JSON line.
fn flood_article(id: &str, day: &str, text: &str) -> String {
    serde_json::json!({"key_event": "flood", "id": id, "published": day, "title": id, "text": text})
        .to_string()
}

#[test]
fn append_adds_a_feed_without_touching_the_segments_there() {
    let dir = scratch();
    let day1 = dir.path().join("day1.jsonl");
    let day2 = dir.path().join("day2.jsonl");
    std::fs::write(
        &day1,
        [
            flood_article(
                "a",
                "2024-05-02",
                "The river rose overnight. Homes were evacuated.",
            ),
            flood_article("b", "2024-05-01", "Rain fell for three days. The dam held."),
        ]
        .join("\n"),
    )
    .unwrap();
    // Day 2 repeats article b (the feed overlaps) and brings an earlier-published article.
    std::fs::write(
        &day2,
        [
            flood_article("b", "2024-05-01", "Rain fell for three days. The dam held."),
            flood_article("c", "2024-04-30", "Forecasters warned of heavy rain."),
        ]
        .join("\n"),
    )
    .unwrap();
    let corpus = dir.path().join("corpus");
    // Appending to nothing is refused, naming the folder.
    let e = epimine(&[
        "import",
        "--articles",
        s(&day1),
        "--out",
        s(&corpus),
        "--append",
    ]);
    assert!(!e.status.success());
    assert!(
        String::from_utf8_lossy(&e.stderr).contains("holds no segments"),
        "{e:?}"
    );
    epimine_ok(&["import", "--articles", s(&day1), "--out", s(&corpus)]);
    let before = std::fs::read(corpus.join("segments.parquet")).unwrap();
    let first: Vec<Segment> = block_on(epimine::corpus::read_segments(&loc(&corpus))).unwrap();
    let text = epimine_ok(&[
        "import",
        "--articles",
        s(&day2),
        "--out",
        s(&corpus),
        "--append",
    ]);
    assert!(text.contains("1 articles already in the corpus"), "{text}");
    // The files written are named (issue 46 item 7: was `segments-<n>.parquet`).
    assert!(
        text.contains("segments-000002.parquet") && text.contains("boilerplate-000002.parquet"),
        "{text}"
    );
    assert!(!text.contains("<n>"), "{text}");
    assert_eq!(
        std::fs::read(corpus.join("segments.parquet")).unwrap(),
        before
    );
    assert!(corpus.join("segments-000002.parquet").exists());
    let all: Vec<Segment> = block_on(epimine::corpus::read_segments(&loc(&corpus))).unwrap();
    let ids: Vec<(String, u32)> = all
        .iter()
        .map(|s| (s.source_id.clone().unwrap(), s.doc_id))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    // a and b keep their doc_ids; c comes after them.
    let max_first = first.iter().map(|s| s.doc_id).max().unwrap();
    assert!(ids.contains(&("c".into(), max_first + 1)), "{ids:?}");
    assert_eq!(ids.len(), 3);
    // The same feed again adds nothing and writes nothing.
    let text = epimine_ok(&[
        "import",
        "--articles",
        s(&day2),
        "--out",
        s(&corpus),
        "--append",
    ]);
    assert!(text.contains("nothing new"), "{text}");
    assert!(!corpus.join("segments-000003.parquet").exists());
    an_append_after_a_removed_batch_keeps_the_later_one(dir.path(), &corpus);
}

/// Appends batches 3 and 4 to `corpus` (of a, b, c), removes 3, appends 5: 4's articles stay.
fn an_append_after_a_removed_batch_keeps_the_later_one(dir: &Path, corpus: &Path) {
    // Batches 3 and 4, then batch 3 removed (an undo): the next append is batch 5, and batch 4's
    // articles stay (issue 64 item 1: it counted the files and wrote over batch 4). The gap is
    // said, naming the missing batch.
    let feed = |name: &str, id: &str| {
        let path = dir.join(name);
        let text = format!("Article {id}: crews worked through the night on the levee.");
        std::fs::write(&path, flood_article(id, "2024-05-03", &text)).unwrap();
        path
    };
    for (name, id) in [("day3.jsonl", "d"), ("day4.jsonl", "e")] {
        epimine_ok(&[
            "import",
            "--articles",
            s(&feed(name, id)),
            "--out",
            s(corpus),
            "--append",
        ]);
    }
    let fourth = std::fs::read(corpus.join("segments-000004.parquet")).unwrap();
    std::fs::remove_file(corpus.join("segments-000003.parquet")).unwrap();
    let out = epimine(&[
        "import",
        "--articles",
        s(&feed("day5.jsonl", "f")),
        "--out",
        s(corpus),
        "--append",
    ]);
    assert!(out.status.success(), "{out:?}");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("segments-000003.parquet"), "{said}");
    assert_eq!(
        std::fs::read(corpus.join("segments-000004.parquet")).unwrap(),
        fourth
    );
    assert!(corpus.join("segments-000005.parquet").exists());
    let ids: BTreeSet<String> = block_on(epimine::corpus::read_segments(&loc(corpus)))
        .unwrap()
        .into_iter()
        .filter_map(|s| s.source_id)
        .collect();
    assert_eq!(ids, ["a", "b", "c", "e", "f"].map(String::from).into());
}

/// Two `import --append` at once (overlapping cron jobs; issue 47 item 2): never both "wrote"
/// with one's articles lost. Each try either has both succeed one after the other, the corpus
/// then holding every article, or one refused naming the other (`in use by another command:
/// epimine import --append …`), the corpus holding the other's; no `_lock` is left behind.
#[test]
fn two_appends_at_once_lose_nothing() {
    let dir = scratch();
    let feed = |name: &str, prefix: &str, n: usize| {
        let path = dir.path().join(name);
        let rows: Vec<String> = (0..n)
            .map(|i| {
                serde_json::json!({"key_event": "flood", "id": format!("{prefix}{i}"),
                    "published": "2024-05-01", "title": format!("{prefix}{i}"),
                    "text": format!("Article {prefix} {i}: the river rose by {i} metres overnight. Crews worked on the levee near bridge {i}.")})
                .to_string()
            })
            .collect();
        std::fs::write(&path, rows.join("\n")).unwrap();
        path
    };
    let base = feed("base.jsonl", "base", 20);
    let (a, b) = (feed("x.jsonl", "x", 400), feed("y.jsonl", "y", 400));
    let articles = |corpus: &Path| -> BTreeSet<String> {
        block_on(epimine::corpus::read_segments(&loc(corpus)))
            .unwrap()
            .into_iter()
            .map(|s| s.source_id.unwrap())
            .collect()
    };
    let mut refused = 0;
    for attempt in 0..4 {
        let corpus = dir.path().join(format!("corpus-{attempt}"));
        epimine_ok(&["import", "--articles", s(&base), "--out", s(&corpus)]);
        let start = |feed: &Path| {
            std::process::Command::new(env!("CARGO_BIN_EXE_epimine"))
                .args([
                    "import",
                    "--articles",
                    s(feed),
                    "--out",
                    s(&corpus),
                    "--append",
                ])
                .env("RUST_LOG", "warn")
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        };
        let (ca, cb) = (start(&a), start(&b));
        let (oa, ob) = (
            ca.wait_with_output().unwrap(),
            cb.wait_with_output().unwrap(),
        );
        let got = articles(&corpus);
        let has = |prefix: &str| got.iter().filter(|id| id.starts_with(prefix)).count();
        assert_eq!(has("base"), 20, "attempt {attempt}");
        for (o, prefix) in [(&oa, "x"), (&ob, "y")] {
            let err = String::from_utf8_lossy(&o.stderr);
            if o.status.success() {
                assert_eq!(
                    has(prefix),
                    400,
                    "attempt {attempt}: {prefix} said it wrote"
                );
            } else {
                refused += 1;
                assert!(
                    err.contains("in use by another command: epimine import --append"),
                    "attempt {attempt}: {err}"
                );
                assert_eq!(has(prefix), 0, "attempt {attempt}");
            }
        }
        assert!(
            oa.status.success() || ob.status.success(),
            "attempt {attempt}"
        );
        assert!(
            !corpus.join("_lock").exists() || files_in(&corpus.join("_lock")).is_empty(),
            "attempt {attempt}"
        );
        // The doc_ids stay unique per event.
        let segs: Vec<Segment> = block_on(epimine::corpus::read_segments(&loc(&corpus))).unwrap();
        let keys: BTreeSet<(u32, u32)> = segs.iter().map(|s| (s.doc_id, s.seg_idx)).collect();
        assert_eq!(keys.len(), segs.len(), "attempt {attempt}");
    }
    eprintln!("{refused} of 4 attempts had one append refused");
}

/// Issue 64, item 5: a corpus that is not the one an `--out` follows (here the same articles
/// under other key events) is refused before any work, naming both corpora and an event it
/// lacks; with `--fresh` it is run, and the episodes of the old events end.
#[test]
fn another_corpus_into_a_followed_out_is_refused_unless_fresh() {
    let dir = scratch();
    let corpus = synth(dir.path(), 3, 10);
    let out = dir.path().join("out");
    ok(run_at(&corpus, &out, "2024-05-01", &[], &[]));
    let committed = std::fs::read(out.join("run.json")).unwrap();
    let other = dir.path().join("other");
    copy_dir(&corpus, &other);
    let mut segments: Vec<Segment> = read_rows(&other);
    for s in &mut segments {
        s.key_event = s.key_event.replace("synth_event", "other_event");
    }
    block_on(loc(&other).write_table(&segments)).unwrap();
    let refused = run_at(&other, &out, "2024-05-02", &[], &[]);
    let said = String::from_utf8_lossy(&refused.stderr).to_string();
    assert_eq!(refused.status.code(), Some(1), "{said}");
    assert!(
        said.contains(&format!(
            "its last run (run 1) followed the corpus {}",
            s(&corpus)
        )) && said.contains(&format!(
            "3 of its 3 key event(s) are not in the corpus {} (e.g. `synth_event_000`)",
            s(&other)
        )) && said.contains("pass --fresh"),
        "{said}"
    );
    assert!(
        !said.contains("encoding"),
        "refused before any work: {said}"
    );
    assert_eq!(std::fs::read(out.join("run.json")).unwrap(), committed);
    // The same corpus again is no stranger; with --fresh the other one is run.
    ok(run_at(&corpus, &out, "2024-05-02", &[], &[]));
    ok(run_at(&other, &out, "2024-05-03", &["--fresh"], &[]));
    let rows = lineage(&out);
    assert!(rows
        .iter()
        .filter(|r| r.key_event.starts_with("synth_event"))
        .all(|r| r.status == "ended"));
    assert!(rows
        .iter()
        .filter(|r| r.key_event.starts_with("other_event"))
        .all(|r| r.status == "new"));
}

/// Issue 65, item 4: an append remembers the corpus's column mapping and import options (its
/// first import's, `import.toml`), so the day's feed is appended without the flags again; its
/// last line names the follow job.
#[test]
fn an_append_remembers_the_corpus_s_columns_and_names_the_follow_job() {
    let dir = scratch();
    let header = "event,url,date,headline,body\n";
    let row = |id: &str, day: &str, text: &str| format!("flood,{id},{day},{id},\"{text}\"\n");
    let day1 = dir.path().join("day1.csv");
    let day2 = dir.path().join("day2.csv");
    std::fs::write(
        &day1,
        format!(
            "{header}{}{}",
            row(
                "a",
                "02/05/2024",
                "The river rose overnight. Homes were evacuated."
            ),
            row("b", "01/05/2024", "Rain fell for three days. The dam held.")
        ),
    )
    .unwrap();
    std::fs::write(
        &day2,
        format!(
            "{header}{}",
            row("c", "03/05/2024", "Forecasters warned of more heavy rain.")
        ),
    )
    .unwrap();
    let mut flags = COLUMN_FLAGS.to_vec();
    flags.extend(["--date-format", "%d/%m/%Y"]);
    let corpus = dir.path().join("corpus");
    let mut first = vec!["import", "--articles", s(&day1), "--out", s(&corpus)];
    first.extend(&flags);
    epimine_ok(&first);
    let saved = std::fs::read_to_string(corpus.join("import.toml")).unwrap();
    assert!(
        saved.contains("key_event = \"event\"") && saved.contains("%d/%m/%Y"),
        "{saved}"
    );
    let said = epimine_ok(&[
        "import",
        "--articles",
        s(&day2),
        "--out",
        s(&corpus),
        "--append",
    ]);
    assert!(
        said.contains("settings: the corpus's own")
            && said.contains("columns read: key_event = `event`")
            && said.contains("next: epimine run jobs/follow.toml --corpus"),
        "{said}"
    );
    // The same as an append with every flag given.
    let again = dir.path().join("again");
    epimine_ok(
        &first
            .iter()
            .map(|a| if *a == s(&corpus) { s(&again) } else { a })
            .collect::<Vec<_>>(),
    );
    let mut append = vec![
        "import",
        "--articles",
        s(&day2),
        "--out",
        s(&again),
        "--append",
    ];
    append.extend(&flags);
    epimine_ok(&append);
    let rows = |c: &Path| -> Vec<Segment> {
        let mut all = Vec::new();
        for f in ["segments.parquet", "segments-000002.parquet"] {
            let loc = loc(c);
            all.extend(
                <Segment as epimine::tables::Table>::from_batches(
                    &block_on(loc.read_parquet(f, &<Segment as epimine::tables::Table>::schema()))
                        .unwrap(),
                )
                .unwrap(),
            );
        }
        all
    };
    let (remembered, given) = (rows(&corpus), rows(&again));
    assert_eq!(remembered, given);
    assert!(remembered
        .iter()
        .any(|s| s.source_id.as_deref() == Some("c") && s.doc_date.is_some()));
}
