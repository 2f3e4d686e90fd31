//! k-prec / k-recall / k-F1 on hand-made cases whose answers are computed by hand in the comments.

use std::collections::{BTreeMap, BTreeSet};

use crate::util::*;
use epimine::eval::{evaluate, Report};
use epimine::storage::Location;
use epimine::tables::{Assignment, GoldEpisode, Label, Segment};

/// A hand-made corpus: event -> (theme, gold ids, episodes as lists of labels in rank order).
/// `None` is an unlabelled segment. Each segment gets its own (doc_id = episode, seg_idx = i).
struct Case {
    segments: Vec<Segment>,
    labels: Vec<Label>,
    gold: Vec<GoldEpisode>,
    assignments: Vec<Assignment>,
}

type EventSpec<'a> = (
    &'a str,
    Option<&'a str>,
    &'a [u32],
    &'a [&'a [Option<&'a str>]],
);

fn case(events: &[EventSpec]) -> Case {
    let mut c = Case {
        segments: vec![],
        labels: vec![],
        gold: vec![],
        assignments: vec![],
    };
    for (event, theme, gold, episodes) in events {
        for &g in *gold {
            c.gold.push(GoldEpisode {
                key_event: event.to_string(),
                episode_id: g,
                description: format!("gold {g}"),
            });
        }
        // One extra article so that events without episodes still have segments.
        c.segments.push(Segment {
            key_event: event.to_string(),
            theme: theme.map(str::to_string),
            doc_id: 1000,
            doc_date: None,
            seg_idx: 0,
            text: "filler".into(),
            source_id: None,
            title: None,
        });
        for (e, labels) in episodes.iter().enumerate() {
            let n = labels.len();
            for (i, label) in labels.iter().enumerate() {
                let (doc_id, seg_idx) = (e as u32, i as u32);
                c.segments.push(Segment {
                    key_event: event.to_string(),
                    theme: theme.map(str::to_string),
                    doc_id,
                    doc_date: None,
                    seg_idx,
                    text: format!("segment {e}/{i}"),
                    source_id: None,
                    title: None,
                });
                if let Some(label) = label {
                    c.labels.push(Label {
                        key_event: event.to_string(),
                        doc_id,
                        seg_idx,
                        label: label.to_string(),
                    });
                }
                // Rows in reverse rank order: eval must sort by rank, not trust row order.
                c.assignments.push(Assignment {
                    key_event: event.to_string(),
                    trial: 0,
                    episode_id: e as u32,
                    stable_id: None,
                    status: None,
                    doc_id,
                    seg_idx,
                    rank: i as u32,
                    confidence: 1.0 - i as f64 / n as f64,
                });
            }
        }
    }
    c.assignments.reverse();
    c
}

fn run(k: usize, c: &Case) -> Report {
    let events: BTreeMap<String, Option<String>> = c
        .segments
        .iter()
        .map(|s| (s.key_event.clone(), s.theme.clone()))
        .collect();
    let keys: BTreeSet<(&str, u32, u32)> = c
        .segments
        .iter()
        .map(|s| (s.key_event.as_str(), s.doc_id, s.seg_idx))
        .collect();
    evaluate(
        k,
        &events,
        &keys,
        &c.labels,
        &c.gold,
        &c.assignments,
        "test",
    )
    .unwrap()
}

const M: Option<&str> = Some("M");
const X: Option<&str> = Some("X");
const L0: Option<&str> = Some("0");
const L1: Option<&str> = Some("1");
const L2: Option<&str> = Some("2");

/// `c`'s corpus tables (segments, labels, gold episodes) in `dir`.
fn write_corpus(c: &Case, dir: &std::path::Path) {
    block_on(async {
        let corpus = Location::parse(s(dir), false).unwrap();
        corpus.write_table(&c.segments).await.unwrap();
        corpus.write_table(&c.labels).await.unwrap();
        corpus.write_table(&c.gold).await.unwrap();
    });
}

/// `epimine eval --corpus CORPUS --run RUN` and `extra`'s arguments.
fn eval_args<'a>(
    corpus: &'a std::path::Path,
    run: &'a std::path::Path,
    extra: &[&'a str],
) -> Vec<&'a str> {
    let mut args = vec!["eval", "--corpus", s(corpus), "--run", s(run)];
    args.extend_from_slice(extra);
    args
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-12
}

fn main_case() -> Case {
    case(&[
        // e1, N = 3.
        //  ep0: top5 = 0 0 1 0 M -> three 0s -> hits gold 0.
        //  ep1: top5 = 0 0 0 2 2 -> hits gold 0 again: still one hit.
        //  ep2: 3 segments -> shorter than k, not counted (its 1s hit nothing).
        //  ep3: top5 = 2 2 X (unlabelled) 2 -> hits gold 2.
        //  counted 3, hits 2: prec 2/3, recall 2/3, F1 2/3.
        (
            "e1",
            Some("t1"),
            &[0, 1, 2],
            &[
                &[L0, L0, L1, L0, M, L0],
                &[L0, L0, L0, L2, L2],
                &[L1, L1, L1],
                &[L2, L2, X, None, L2],
            ],
        ),
        // e2, N = 2.
        //  ep0: 1 1 M X "1,2,3" -> two 1s, not > 5/2: no hit.
        //  ep1: 1 1 "7" 1 (unlabelled) -> "7" is not a described id; three 1s: hit.
        //  counted 2, hits 1: prec 1/2, recall 1/2, F1 1/2.
        (
            "e2",
            Some("t1"),
            &[0, 1],
            &[
                &[L1, L1, M, X, Some("1,2,3")],
                &[L1, L1, Some("7"), L1, None],
            ],
        ),
        // e3, N = 4, no episodes at all: 0 / 0 / 0.
        ("e3", Some("t2"), &[0, 1, 2, 3], &[]),
        // e4: no gold episodes -> skipped.
        ("e4", Some("t2"), &[], &[&[L0, L0, L0, L0, L0]]),
    ])
}

#[test]
fn hand_computed_k5() {
    let report = run(5, &main_case());
    let by: BTreeMap<&str, _> = report
        .events
        .iter()
        .map(|e| (e.key_event.as_str(), e))
        .collect();
    assert_eq!(by.len(), 3);

    let e1 = by["e1"];
    assert_eq!((e1.counted, e1.hits, e1.gold), (3, 2, 3));
    // Over all their segments: ep0 and ep1 are about 0 (split), ep2 about 1, ep3 about 2.
    assert_eq!((e1.split, e1.absorbed, e1.name_overlap), (1, 0, None));
    assert!(
        close(e1.k_prec, 2.0 / 3.0) && close(e1.k_recall, 2.0 / 3.0) && close(e1.k_f1, 2.0 / 3.0)
    );

    let e2 = by["e2"];
    assert_eq!((e2.counted, e2.hits, e2.gold), (2, 1, 2));
    // Both episodes are about 1; gold 0 has no labelled segment, so it is not absorbed.
    assert_eq!((e2.split, e2.absorbed), (1, 0));
    assert!(close(e2.k_prec, 0.5) && close(e2.k_recall, 0.5) && close(e2.k_f1, 0.5));

    let e3 = by["e3"];
    assert_eq!((e3.counted, e3.hits, e3.gold), (0, 0, 4));
    assert_eq!((e3.k_prec, e3.k_recall, e3.k_f1), (0.0, 0.0, 0.0));

    assert_eq!(report.skipped.len(), 1);
    assert_eq!(report.skipped[0].key_event, "e4");

    // Theme means: t1 = mean(2/3, 1/2) = 7/12 for each figure; t2 = e3 alone = 0.
    assert_eq!(report.themes.len(), 2);
    let t1 = &report.themes[0];
    assert_eq!((t1.theme.as_deref(), t1.events), (Some("t1"), 2));
    assert!(
        close(t1.k_prec, 7.0 / 12.0)
            && close(t1.k_recall, 7.0 / 12.0)
            && close(t1.k_f1, 7.0 / 12.0)
    );
    let t2 = &report.themes[1];
    assert_eq!(
        (t2.theme.as_deref(), t2.events, t2.k_f1),
        (Some("t2"), 1, 0.0)
    );
    // All three events: mean(2/3, 1/2, 0) = 7/18, inside its bootstrap interval.
    let all = report.all.as_ref().unwrap();
    assert_eq!(all.events, 3);
    assert!(close(all.k_f1, 7.0 / 18.0) && close(all.k_recall, 7.0 / 18.0));
    let (lo, hi) = all.k_f1_interval;
    assert!(
        0.0 <= lo && lo < all.k_f1 && all.k_f1 < hi && hi <= 2.0 / 3.0,
        "{lo} {hi}"
    );
}

#[test]
fn hand_computed_k3() {
    // e1 at k = 3: ep0 top3 = 0 0 1 -> hit 0; ep1 = 0 0 0 -> 0 again; ep2 = 1 1 1 -> counted now,
    // hit 1; ep3 = 2 2 X -> hit 2. counted 4, hits 3: prec 3/4, recall 1, F1 = 1.5/1.75 = 6/7.
    let report = run(3, &main_case());
    let e1 = &report.events[0];
    assert_eq!((e1.key_event.as_str(), e1.counted, e1.hits), ("e1", 4, 3));
    assert!(close(e1.k_prec, 0.75) && close(e1.k_recall, 1.0) && close(e1.k_f1, 6.0 / 7.0));
}

#[test]
fn half_is_not_a_majority() {
    // k = 4, top4 = 0 0 1 1: two of four is not more than k/2, so nothing is hit: prec 0 of 1.
    let c = case(&[("e", None, &[0, 1], &[&[L0, L0, L1, L1]])]);
    let e = &run(4, &c).events[0];
    assert_eq!((e.counted, e.hits, e.k_prec, e.k_f1), (1, 0, 0.0, 0.0));
    // The episode is about 0 (a tie goes to the lower id): 1 is absorbed.
    assert_eq!((e.split, e.absorbed), (0, 1));
    // k = 3 on the same episode: top3 = 0 0 1 -> hit.
    let e = &run(3, &c).events[0];
    assert_eq!((e.counted, e.hits), (1, 1));
    assert!(close(e.k_prec, 1.0) && close(e.k_recall, 0.5));
}

#[test]
fn unknown_segment_is_an_error_naming_the_row() {
    let mut c = main_case();
    c.assignments.push(Assignment {
        key_event: "e1".into(),
        trial: 0,
        episode_id: 9,
        stable_id: None,
        status: None,
        doc_id: 77,
        seg_idx: 0,
        rank: 0,
        confidence: 1.0,
    });
    let events = BTreeMap::from([("e1".to_string(), None)]);
    let keys: BTreeSet<(&str, u32, u32)> = c
        .segments
        .iter()
        .map(|s| (s.key_event.as_str(), s.doc_id, s.seg_idx))
        .collect();
    let err = evaluate(
        5,
        &events,
        &keys,
        &c.labels,
        &c.gold,
        &c.assignments,
        "run/assignments.parquet",
    )
    .unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("run/assignments.parquet: row 34") && msg.contains("doc_id 77"),
        "{msg}"
    );
}

#[test]
fn cli_json_matches_the_hand_computed_figures() {
    let c = main_case();
    let (corpus_dir, run_dir) = (scratch(), scratch());
    write_corpus(&c, corpus_dir.path());
    block_on(async {
        let run = Location::parse(s(run_dir.path()), false).unwrap();
        run.write_table(&c.assignments).await.unwrap();
    });
    let out = epimine_ok(&eval_args(corpus_dir.path(), run_dir.path(), &["--json"]));
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["k"], 5);
    let e1 = &v["events"][0];
    let keys: Vec<&str> = e1.as_object().unwrap().keys().map(String::as_str).collect();
    let mut want = vec![
        "key_event",
        "theme",
        "k_prec",
        "k_recall",
        "k_f1",
        "counted",
        "hits",
        "gold",
        "trials",
        "split",
        "absorbed",
        "name_overlap",
    ];
    let mut got = keys.clone();
    got.sort();
    want.sort();
    assert_eq!(got, want);
    assert_eq!(e1["key_event"], "e1");
    assert_eq!(e1["theme"], "t1");
    assert_eq!(
        (
            e1["counted"].as_u64(),
            e1["hits"].as_u64(),
            e1["gold"].as_u64()
        ),
        (Some(3), Some(2), Some(3))
    );
    assert!(close(e1["k_f1"].as_f64().unwrap(), 2.0 / 3.0));
    let t1 = &v["themes"][0];
    assert_eq!(t1["theme"], "t1");
    assert_eq!(t1["events"], 2);
    assert!(close(t1["k_recall"].as_f64().unwrap(), 7.0 / 12.0));

    // The plain table shows the same figures ×100.
    let table = epimine_ok(&eval_args(corpus_dir.path(), run_dir.path(), &["-k", "5"]));
    let line = table.lines().find(|l| l.contains(" e1 ")).unwrap();
    assert!(line.contains("66.67"), "{table}");
    assert!(table.contains("skipped e4: no gold episodes"), "{table}");
    let all = table.lines().find(|l| l.starts_with("all ")).unwrap();
    assert!(
        all.contains("38.89") && all.contains("90% interval"),
        "{table}"
    );
    assert!(
        v["all"]["k_f1_interval"]
            .as_array()
            .is_some_and(|i| i.len() == 2),
        "{v}"
    );
}

/// `c`'s assignments as a peer writes them (`../shared/peers/bertopic_run.py`): the columns of
/// the `assignments` table less `drop`.
fn write_peer_assignments(c: &Case, dir: &std::path::Path, drop: &[&str]) {
    use epimine::tables::Table;
    let batch = Assignment::to_batch(&c.assignments);
    let keep: Vec<usize> = (0..batch.num_columns())
        .filter(|&i| !drop.contains(&batch.schema().field(i).name().as_str()))
        .collect();
    let batch = batch.project(&keep).unwrap();
    let file = std::fs::File::create(dir.join("assignments.parquet")).unwrap();
    let mut w = parquet::arrow::ArrowWriter::try_new(file, batch.schema(), None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
}

#[test]
fn a_peers_assignments_without_the_id_columns_are_scored() {
    // BERTopic's peer script writes the assignments' columns as they were before `stable_id`
    // and `status`: eval reads those as nulls and scores the same figures; a column that is not
    // nullable is still required, by name.
    let c = main_case();
    let corpus_dir = scratch();
    write_corpus(&c, corpus_dir.path());
    let eval = |drop: &[&str]| {
        let run_dir = scratch();
        write_peer_assignments(&c, run_dir.path(), drop);
        let out = epimine(&eval_args(corpus_dir.path(), run_dir.path(), &["--json"]));
        (out, run_dir)
    };
    let (out, _dir) = eval(&["stable_id", "status"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let e1 = &v["events"][0];
    assert_eq!(
        (e1["counted"].as_u64(), e1["hits"].as_u64()),
        (Some(3), Some(2))
    );
    assert!(close(e1["k_f1"].as_f64().unwrap(), 2.0 / 3.0));
    assert!(close(
        v["themes"][0]["k_recall"].as_f64().unwrap(),
        7.0 / 12.0
    ));

    let (out, dir) = eval(&["confidence"]);
    let err = String::from_utf8_lossy(&out.stderr);
    let file = dir.path().join("assignments.parquet");
    assert!(!out.status.success());
    assert!(
        err.contains(&*file.to_string_lossy()) && err.contains("unexpected columns"),
        "{err}"
    );
}

#[test]
fn example_dataset_scores_by_hand() {
    // The hand-written example dataset and run (scores computed by hand in
    // crates/engines/src/demo.rs).
    let dir = scratch();
    let (dataset, corpus, run) = (
        dir.path().join("dataset"),
        dir.path().join("corpus"),
        dir.path().join("run"),
    );
    block_on(async {
        let d = Location::parse(s(&dataset), true).unwrap();
        epimine::demo::write_example_dataset(&d).await.unwrap();
        let (episodes, assignments) = epimine::demo::example_run();
        let r = Location::parse(s(&run), true).unwrap();
        r.write_table(&episodes).await.unwrap();
        r.write_table(&assignments).await.unwrap();
    });
    epimine_ok(&["import", s(&dataset), "--out", s(&corpus)]);
    let stdout = epimine_ok(&eval_args(&corpus, &run, &[]));
    let flood = stdout
        .lines()
        .any(|l| l.contains("example_river_flood") && l.contains("80.00"));
    let protest = stdout
        .lines()
        .any(|l| l.contains("example_city_protest") && l.contains("50.00"));
    assert!(flood && protest, "{stdout}");
    // The run has episodes.parquet: each event with two episodes or more says how much their
    // names overlap.
    let v: serde_json::Value =
        serde_json::from_str(&epimine_ok(&eval_args(&corpus, &run, &["--json"]))).unwrap();
    let overlaps: Vec<f64> = v["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["name_overlap"].as_f64())
        .collect();
    assert!(!overlaps.is_empty(), "{v}");
    assert!(overlaps.iter().all(|o| (0.0..=1.0).contains(o)), "{v}");
}

#[test]
fn trials_are_scored_apart_and_averaged() {
    // Trial 0 is main_case's e1 (prec 2/3, recall 2/3, F1 2/3). Trial 1 keeps only episode 3
    // (hits gold 2): prec 1/1, recall 1/3, F1 1/2. Means: prec 5/6, recall 1/2, F1 7/12.
    let mut c = main_case();
    c.assignments.retain(|a| a.key_event == "e1");
    let trial1: Vec<Assignment> = c
        .assignments
        .iter()
        .filter(|a| a.episode_id == 3)
        .map(|a| Assignment {
            trial: 1,
            episode_id: 0,
            stable_id: None,
            status: None,
            ..a.clone()
        })
        .collect();
    c.assignments.extend(trial1);
    let report = run(5, &c);
    let e = report.events.iter().find(|e| e.key_event == "e1").unwrap();
    assert_eq!((e.trials, e.counted, e.hits), (2, 4, 3));
    assert!(close(e.k_prec, 5.0 / 6.0), "{}", e.k_prec);
    assert!(close(e.k_recall, 0.5), "{}", e.k_recall);
    assert!(close(e.k_f1, 7.0 / 12.0), "{}", e.k_f1);
    // An event with no episodes in some trial scores zero there: e2 has none in trial 1.
    let mut c = main_case();
    c.assignments.push(Assignment {
        trial: 1,
        ..c.assignments
            .iter()
            .find(|a| a.key_event == "e1")
            .unwrap()
            .clone()
    });
    let report = run(5, &c);
    let plain = run(5, &main_case());
    let (a, b) = (
        report.events.iter().find(|e| e.key_event != "e1").unwrap(),
        plain.events.iter().find(|e| e.key_event != "e1").unwrap(),
    );
    assert_eq!(a.trials, 2);
    assert!(close(a.k_f1, b.k_f1 / 2.0));
}

#[test]
fn labels_of_another_import_are_refused_not_scored() {
    let c = main_case();
    let (corpus_dir, run_dir) = (scratch(), scratch());
    // The labels of an earlier import: their articles were numbered otherwise.
    let stale: Vec<Label> = c
        .labels
        .iter()
        .map(|l| Label {
            doc_id: l.doc_id + 500,
            ..l.clone()
        })
        .collect();
    block_on(async {
        let corpus = Location::parse(s(corpus_dir.path()), false).unwrap();
        corpus.write_table(&c.segments).await.unwrap();
        corpus.write_table(&stale).await.unwrap();
        corpus.write_table(&c.gold).await.unwrap();
        let run = Location::parse(s(run_dir.path()), false).unwrap();
        run.write_table(&c.assignments).await.unwrap();
    });
    let o = epimine(&eval_args(corpus_dir.path(), run_dir.path(), &[]));
    assert_eq!(o.status.code(), Some(1));
    let msg = String::from_utf8_lossy(&o.stderr);
    let n = stale.len();
    assert!(
        msg.contains(&format!(
            "labels.parquet: {n} of {n} labels name a segment that"
        )) && msg.contains(&format!(
            "the corpus {} does not hold",
            s(corpus_dir.path())
        )) && msg.contains("belong to another import"),
        "{msg}"
    );
    assert!(o.stdout.is_empty(), "no scores printed");
}
