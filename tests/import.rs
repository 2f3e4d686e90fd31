//! `epimine import` on the development dataset and on broken inputs.

use std::collections::BTreeMap;
use std::path::Path;

use crate::util::*;
use epimine::storage::Location;
use epimine::tables::{GoldEpisode, Label, Segment};

/// (theme, segment texts per article, groundtruth (label, text) lines, gold episode count).
type Expected = (String, Vec<Vec<String>>, Vec<(String, String)>, usize);

/// Per event, counted straight from the files, independently of the importer.
fn expected(dataset: &Path) -> BTreeMap<String, Expected> {
    let mut out = BTreeMap::new();
    for theme in std::fs::read_dir(dataset).unwrap() {
        let theme = theme.unwrap().path();
        for event in std::fs::read_dir(&theme).unwrap() {
            let event = event.unwrap().path();
            let text = std::fs::read_to_string(event.join("segments.txt")).unwrap();
            let mut articles: Vec<Vec<String>> = vec![vec![]];
            for line in text.lines() {
                if line.trim().is_empty() {
                    if !articles.last().unwrap().is_empty() {
                        articles.push(vec![]);
                    }
                } else {
                    articles.last_mut().unwrap().push(line.to_string());
                }
            }
            if articles.last().unwrap().is_empty() {
                articles.pop();
            }
            let gt = std::fs::read_to_string(event.join("groundtruth.tsv")).unwrap();
            let gt: Vec<(String, String)> = gt
                .lines()
                .filter(|l| !l.is_empty())
                .map(|l| {
                    let (a, b) = l.split_once('\t').unwrap();
                    (a.to_string(), b.to_string())
                })
                .collect();
            let episodes = std::fs::read_to_string(event.join("episodes.tsv"))
                .unwrap()
                .lines()
                .filter(|l| !l.trim().is_empty())
                .count();
            out.insert(
                event.file_name().unwrap().to_string_lossy().into_owned(),
                (
                    theme.file_name().unwrap().to_string_lossy().into_owned(),
                    articles,
                    gt,
                    episodes,
                ),
            );
        }
    }
    out
}

#[test]
fn imports_the_whole_development_set() {
    let dataset = dataset_dir();
    let out = scratch();
    let stdout = epimine_ok(&["import", s(&dataset), "--out", s(out.path())]);
    assert!(stdout.contains("21 events"), "{stdout}");
    assert_eq!(
        files_in(out.path()),
        [
            "gold_episodes.parquet",
            "labels.parquet",
            "segments.parquet"
        ]
    );

    let corpus = Location::parse(s(out.path()), false).unwrap();
    let (segments, labels, gold) = block_on(async {
        (
            corpus.read_table::<Segment>().await.unwrap(),
            corpus.read_table::<Label>().await.unwrap(),
            corpus.read_table::<GoldEpisode>().await.unwrap(),
        )
    });
    let expected = expected(&dataset);
    assert_eq!(expected.len(), 21);

    // Ordered by (key_event, doc_id, seg_idx), with dense ids.
    let keys: Vec<_> = segments
        .iter()
        .map(|s| (s.key_event.clone(), s.doc_id, s.seg_idx))
        .collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted);

    for (event, (theme, articles, gt, n_episodes)) in &expected {
        let mine: Vec<&Segment> = segments.iter().filter(|s| &s.key_event == event).collect();
        let total: usize = articles.iter().map(Vec::len).sum();
        assert_eq!(mine.len(), total, "{event}: segment count");
        for s in &mine {
            assert_eq!(s.theme.as_deref(), Some(theme.as_str()));
            assert_eq!(
                articles[s.doc_id as usize][s.seg_idx as usize], s.text,
                "{event}"
            );
            assert!(s.doc_date.is_some(), "{event}: every article is dated");
        }
        // Every groundtruth line is joined, to a segment with its exact text and its label.
        let mine_labels: Vec<&Label> = labels.iter().filter(|l| &l.key_event == event).collect();
        assert_eq!(
            mine_labels.len(),
            gt.len(),
            "{event}: every label line joins"
        );
        let mut gt_pairs: Vec<(String, String)> = gt.clone();
        let mut joined: Vec<(String, String)> = mine_labels
            .iter()
            .map(|l| {
                let text = articles[l.doc_id as usize][l.seg_idx as usize].clone();
                (l.label.clone(), text)
            })
            .collect();
        gt_pairs.sort();
        joined.sort();
        assert_eq!(joined, gt_pairs, "{event}: (label, text) pairs");
        let n_gold = gold.iter().filter(|g| &g.key_event == event).count();
        assert_eq!(n_gold, *n_episodes, "{event}: gold episodes");
    }
}

#[test]
fn dates_are_days_since_epoch() {
    assert_eq!(epimine::import::parse_date("1/1/1970"), Some(0));
    assert_eq!(epimine::import::parse_date("7/10/2018"), Some(17722));
    assert_eq!(epimine::import::parse_date("2018-07-10"), Some(17722));
    assert_eq!(epimine::import::parse_date("13/1/2018"), None);
    assert_eq!(epimine::import::parse_date("yesterday"), None);
}

#[test]
fn importing_twice_gives_the_same_bytes() {
    let dataset = dataset_dir();
    let (a, b) = (scratch(), scratch());
    epimine_ok(&["import", s(&dataset), "--out", s(a.path())]);
    epimine_ok(&["import", s(&dataset), "--out", s(b.path())]);
    for f in files_in(a.path()) {
        assert_eq!(
            std::fs::read(a.path().join(&f)).unwrap(),
            std::fs::read(b.path().join(&f)).unwrap(),
            "{f}"
        );
    }
}

/// A small event folder with the given file contents.
fn event_dir(files: &[(&str, &[u8])]) -> tempfile::TempDir {
    let root = scratch();
    let event = root.path().join("theme_a/event_a");
    std::fs::create_dir_all(&event).unwrap();
    for (name, data) in files {
        std::fs::write(event.join(name), data).unwrap();
    }
    root
}

const SEGMENTS: &[u8] = b"First segment.\nSecond segment.\n\nThird segment.\n\n";

/// Runs an import that must fail; returns stderr and checks nothing was written.
fn failing_import(root: &Path) -> String {
    let out = scratch();
    let target = out.path().join("corpus");
    let result = epimine(&["import", s(root), "--out", s(&target)]);
    assert!(!result.status.success(), "import should fail");
    assert_eq!(files_in(&target), Vec::<String>::new(), "nothing written");
    String::from_utf8(result.stderr).unwrap()
}

#[test]
fn invalid_utf8_names_file_and_line() {
    let root = event_dir(&[("segments.txt", b"Fine.\nAlso fine.\nBroken \xff here.\n\n")]);
    let err = failing_import(root.path());
    assert!(
        err.contains("event_a/segments.txt:3: invalid UTF-8"),
        "{err}"
    );
}

#[test]
fn date_count_mismatch_names_both_files() {
    let root = event_dir(&[("segments.txt", SEGMENTS), ("doc_dates.txt", b"1/2/2020\n")]);
    let err = failing_import(root.path());
    assert!(err.contains("doc_dates.txt: 1 dates"), "{err}");
    assert!(err.contains("segments.txt has 2 articles"), "{err}");
}

#[test]
fn malformed_date_names_line() {
    let root = event_dir(&[
        ("segments.txt", SEGMENTS),
        ("doc_dates.txt", b"1/2/2020\nsoon\n"),
    ]);
    let err = failing_import(root.path());
    assert!(
        err.contains("doc_dates.txt:2: `soon` is not a date"),
        "{err}"
    );
}

#[test]
fn malformed_label_lines_name_file_and_line() {
    let no_tab = event_dir(&[
        ("segments.txt", SEGMENTS),
        ("groundtruth.tsv", b"0\tFirst segment.\n1 Second segment.\n"),
    ]);
    let err = failing_import(no_tab.path());
    assert!(
        err.contains("groundtruth.tsv:2: expected `LABEL<TAB>segment text`"),
        "{err}"
    );

    let bad_label = event_dir(&[
        ("segments.txt", SEGMENTS),
        (
            "groundtruth.tsv",
            b"0\tFirst segment.\nmaybe\tSecond segment.\n",
        ),
    ]);
    let err = failing_import(bad_label.path());
    assert!(err.contains("groundtruth.tsv:2: label `maybe`"), "{err}");

    let bad_episode = event_dir(&[
        ("segments.txt", SEGMENTS),
        ("episodes.tsv", b"0\tA | b\nx\tC | d\n"),
    ]);
    let err = failing_import(bad_episode.path());
    assert!(err.contains("episodes.tsv:2: episode id `x`"), "{err}");
}

#[test]
fn empty_dataset_is_an_error() {
    let root = scratch();
    let err = failing_import(root.path());
    assert!(err.contains("no `segments.txt` found"), "{err}");
}

#[test]
fn labels_join_in_order_with_repeated_texts_and_skipped_lines() {
    // The same text twice with different labels, a label file that skips a segment, CRLF line
    // ends, a BOM, and a label line whose text is nowhere in the segments.
    let root = event_dir(&[
        (
            "segments.txt",
            b"\xEF\xBB\xBFSame.\r\nOther.\r\nSame.\r\n\r\n\r\nLast.\r\n",
        ),
        (
            "groundtruth.tsv",
            b"0\tSame.\r\n2\tSame.\r\nX\tLast.\r\nM\tNowhere.\r\n",
        ),
        ("doc_dates.txt", b"3/4/2021\r\n3/5/2021\r\n"),
    ]);
    let out = scratch();
    let stdout = epimine_ok(&["import", s(root.path()), "--out", s(out.path())]);
    assert!(
        stdout.contains("1 events, 2 articles, 4 segments, 3 labelled"),
        "{stdout}"
    );
    let corpus = Location::parse(s(out.path()), false).unwrap();
    let (segments, labels) = block_on(async {
        (
            corpus.read_table::<Segment>().await.unwrap(),
            corpus.read_table::<Label>().await.unwrap(),
        )
    });
    let texts: Vec<(u32, u32, &str)> = segments
        .iter()
        .map(|s| (s.doc_id, s.seg_idx, s.text.as_str()))
        .collect();
    assert_eq!(
        texts,
        [
            (0, 0, "Same."),
            (0, 1, "Other."),
            (0, 2, "Same."),
            (1, 0, "Last.")
        ]
    );
    assert_eq!(segments[0].theme.as_deref(), Some("theme_a"));
    assert_eq!(
        segments[3].doc_date,
        epimine::import::parse_date("3/5/2021")
    );
    let got: Vec<(u32, u32, &str)> = labels
        .iter()
        .map(|l| (l.doc_id, l.seg_idx, l.label.as_str()))
        .collect();
    assert_eq!(got, [(0, 0, "0"), (0, 2, "2"), (1, 0, "X")]);
}

#[test]
fn event_folder_without_theme_has_null_theme() {
    let root = scratch();
    std::fs::create_dir_all(root.path().join("lonely_event")).unwrap();
    std::fs::write(root.path().join("lonely_event/segments.txt"), SEGMENTS).unwrap();
    let out = scratch();
    epimine_ok(&["import", s(root.path()), "--out", s(out.path())]);
    let corpus = Location::parse(s(out.path()), false).unwrap();
    let segments = block_on(corpus.read_table::<Segment>()).unwrap();
    assert_eq!(segments.len(), 3);
    assert!(segments
        .iter()
        .all(|s| s.theme.is_none() && s.key_event == "lonely_event"));
    assert!(segments.iter().all(|s| s.doc_date.is_none()));
}
