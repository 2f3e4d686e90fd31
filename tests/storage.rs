//! One storage suite, run against every backend: a local path, a `file://` URL and `s3://` on a
//! real S3-protocol server on 127.0.0.1 (started by `scripts/ci/test.sh`; see README).

use std::sync::Arc;

use crate::util::*;
use arrow_array::{RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use epimine::storage::{Location, StorageError};
use epimine::tables::{Assignment, Episode, GoldEpisode, Label, Segment, Table};

/// Roots of every backend for one test: plain path, file:// URL, s3:// (when available).
fn roots(test: &str) -> (tempfile::TempDir, Vec<String>) {
    let dir = scratch();
    let mut roots = vec![
        s(&dir.path().join("plain")).to_string(),
        format!("file://{}", s(&dir.path().join("url"))),
    ];
    roots.extend(s3_root(test));
    (dir, roots)
}

fn sample_segments() -> Vec<Segment> {
    vec![
        Segment {
            key_event: "ev".into(),
            theme: Some("th".into()),
            doc_id: 0,
            doc_date: Some(17722),
            seg_idx: 0,
            text: "Ünïcödé text, with \"quotes\".".into(),
            source_id: None,
            title: None,
        },
        Segment {
            key_event: "ev".into(),
            theme: None,
            doc_id: 1,
            doc_date: None,
            seg_idx: 0,
            text: String::new(),
            source_id: None,
            title: None,
        },
    ]
}

fn sample_episodes() -> Vec<Episode> {
    vec![
        Episode {
            key_event: "ev".into(),
            trial: 0,
            episode_id: 0,
            stable_id: None,
            status: None,
            title: "Protesters storm the legislature".into(),
            title_fields: vec![],
            keywords: vec!["protesters".into(), "storm".into()],
            example_sentences: vec![],
            n_segments: 7,
            source: "clusters".into(),
            n_articles: 3,
            first_date: Some(18_809),
            peak_date: Some(18_810),
            last_date: Some(18_812),
            phase_id: 0,
            phase_stable_id: None,
        },
        Episode {
            key_event: "ev".into(),
            trial: 2,
            episode_id: 1,
            stable_id: None,
            status: None,
            title: "Protesters storm the legislature July 1 Hong Kong".into(),
            title_fields: [
                "Protesters",
                "storm",
                "the legislature",
                "July 1",
                "Hong Kong",
            ]
            .map(String::from)
            .to_vec(),
            keywords: vec![],
            example_sentences: vec!["They broke in.".into(), "Slogans, \"quoted\".".into()],
            n_segments: 2,
            source: "llm".into(),
            n_articles: 2,
            first_date: None,
            peak_date: None,
            last_date: None,
            phase_id: 1,
            phase_stable_id: None,
        },
    ]
}

#[test]
fn tables_round_trip_on_every_backend() {
    let (_dir, roots) = roots("round-trip");
    for root in roots {
        let loc = Location::parse(&root, true).unwrap();
        let labels = vec![Label {
            key_event: "ev".into(),
            doc_id: 0,
            seg_idx: 0,
            label: "1,2,3".into(),
        }];
        let gold = vec![GoldEpisode {
            key_event: "ev".into(),
            episode_id: 3,
            description: "a | b | c | d | e".into(),
        }];
        let assignments = vec![Assignment {
            key_event: "ev".into(),
            trial: 2,
            episode_id: 1,
            stable_id: None,
            status: None,
            doc_id: 0,
            seg_idx: 0,
            rank: 0,
            confidence: 0.125,
        }];
        block_on(async {
            loc.write_table(&sample_segments()).await.unwrap();
            loc.write_table(&labels).await.unwrap();
            loc.write_table(&gold).await.unwrap();
            loc.write_table(&sample_episodes()).await.unwrap();
            loc.write_table(&assignments).await.unwrap();
            assert_eq!(
                loc.read_table::<Segment>().await.unwrap(),
                sample_segments(),
                "{root}"
            );
            assert_eq!(loc.read_table::<Label>().await.unwrap(), labels, "{root}");
            assert_eq!(
                loc.read_table::<GoldEpisode>().await.unwrap(),
                gold,
                "{root}"
            );
            assert_eq!(
                loc.read_table::<Episode>().await.unwrap(),
                sample_episodes(),
                "{root}"
            );
            assert_eq!(
                loc.read_table::<Assignment>().await.unwrap(),
                assignments,
                "{root}"
            );
            let names = loc.list().await.unwrap();
            assert_eq!(
                names,
                [
                    "assignments.parquet",
                    "episodes.parquet",
                    "gold_episodes.parquet",
                    "labels.parquet",
                    "segments.parquet"
                ],
                "{root}"
            );
        });
    }
}

#[test]
fn same_rows_give_the_same_bytes_on_every_backend() {
    let (_dir, roots) = roots("bytes");
    let mut seen: Option<bytes::Bytes> = None;
    for root in roots {
        let loc = Location::parse(&root, true).unwrap();
        let data = block_on(async {
            loc.write_table(&sample_episodes()).await.unwrap();
            loc.get(&Episode::file_name()).await.unwrap()
        });
        if let Some(first) = &seen {
            assert_eq!(first, &data, "{root}");
        }
        seen = Some(data);
    }
}

#[test]
fn a_failed_write_leaves_nothing_behind() {
    let (_dir, roots) = roots("failed-write");
    for root in roots {
        let loc = Location::parse(&root, true).unwrap();
        // A batch whose columns do not match the declared schema: the writer fails after the
        // upload has started.
        let other = Arc::new(Schema::new(vec![Field::new("x", DataType::Utf8, false)]));
        let wrong =
            RecordBatch::try_new(other, vec![Arc::new(StringArray::from(vec!["a"]))]).unwrap();
        let good = Label::to_batch(&[Label {
            key_event: "ev".into(),
            doc_id: 0,
            seg_idx: 0,
            label: "0".into(),
        }]);
        let result = block_on(loc.write_parquet("labels.parquet", Label::schema(), &[good, wrong]));
        assert!(
            matches!(result, Err(StorageError::Parquet { .. })),
            "{root}: {result:?}"
        );
        block_on(async {
            assert!(!loc.exists("labels.parquet").await.unwrap(), "{root}");
            assert_eq!(
                loc.list().await.unwrap(),
                Vec::<String>::new(),
                "{root}: no staging left"
            );
        });
        if let Some(path) = root
            .strip_prefix("file://")
            .or(Some(root.as_str()))
            .filter(|p| !p.starts_with("s3://"))
        {
            assert_eq!(
                files_in(std::path::Path::new(path)),
                Vec::<String>::new(),
                "{root}"
            );
        }
    }
}

#[test]
fn reading_errors_name_the_file() {
    let (_dir, roots) = roots("read-errors");
    for root in roots {
        let loc = Location::parse(&root, true).unwrap();
        let missing = block_on(loc.read_table::<Segment>())
            .unwrap_err()
            .to_string();
        assert!(missing.contains("segments.parquet"), "{root}: {missing}");
        // A labels table stored under the segments name: wrong columns.
        block_on(async {
            let labels = Label::to_batch(&[]);
            loc.write_parquet("segments.parquet", Label::schema(), &[labels])
                .await
                .unwrap();
        });
        let wrong = block_on(loc.read_table::<Segment>())
            .unwrap_err()
            .to_string();
        assert!(
            wrong.contains("segments.parquet") && wrong.contains("unexpected columns"),
            "{root}: {wrong}"
        );
    }
}

#[test]
fn bad_locations_are_refused() {
    for bad in ["http://example.com/x", "s3://", "gs://bucket/x"] {
        let err = Location::parse(bad, false).unwrap_err().to_string();
        assert!(err.contains(bad), "{err}");
    }
}

#[test]
fn import_and_eval_through_every_backend() {
    // The CLI end to end: the built-in example dataset is uploaded to each backend, imported
    // from there into a corpus there, and scored against a run stored there.
    let (_dir, roots) = roots("cli");
    let local = scratch();
    let reference = local.path().join("ref");
    block_on(async {
        let d = Location::parse(s(&reference.join("dataset")), true).unwrap();
        epimine::demo::write_example_dataset(&d).await.unwrap();
        let (episodes, assignments) = epimine::demo::example_run();
        let r = Location::parse(s(&reference.join("run")), true).unwrap();
        r.write_table(&episodes).await.unwrap();
        r.write_table(&assignments).await.unwrap();
    });
    epimine_ok(&[
        "import",
        s(&reference.join("dataset")),
        "--out",
        s(&reference.join("corpus")),
    ]);
    let expected = epimine_ok(&[
        "eval",
        "--corpus",
        s(&reference.join("corpus")),
        "--run",
        s(&reference.join("run")),
        "--json",
    ]);
    for root in roots {
        let dataset = format!("{root}/dataset");
        let corpus = format!("{root}/corpus");
        let run = format!("{root}/run");
        block_on(async {
            let d = Location::parse(&dataset, true).unwrap();
            epimine::demo::write_example_dataset(&d).await.unwrap();
            let (episodes, assignments) = epimine::demo::example_run();
            let r = Location::parse(&run, true).unwrap();
            r.write_table(&episodes).await.unwrap();
            r.write_table(&assignments).await.unwrap();
        });
        let summary = epimine_ok(&["import", &dataset, "--out", &corpus]);
        assert!(
            summary.contains("2 events, 7 articles, 30 segments"),
            "{root}: {summary}"
        );
        let got = epimine_ok(&["eval", "--corpus", &corpus, "--run", &run, "--json"]);
        assert_eq!(got, expected, "{root}");
        // The corpus bytes match a local import of the same dataset.
        let here = Location::parse(&corpus, false).unwrap();
        let there = Location::parse(s(&reference.join("corpus")), false).unwrap();
        block_on(async {
            for name in [
                "segments.parquet",
                "labels.parquet",
                "gold_episodes.parquet",
            ] {
                assert_eq!(
                    here.get(name).await.unwrap(),
                    there.get(name).await.unwrap(),
                    "{root}: {name}"
                );
            }
        });
    }
}
