//! The statistics dataflow against a plain sequential implementation written here, with 1 and
//! 4 workers and with 2 processes × 2 workers over TCP; a hand-computed tiny corpus; and
//! incremental updates against a from-scratch run.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use crate::util::*;
use epimine::background::{self, Background};
use epimine::stats::{compute, compute_by_event, Cluster, Round, StatsOutput};
use epimine::storage::Location;
use epimine::tables::{Pair, Segment, Term};

/// The sequential reference: every statistic of docs/method.md §1–§2 (no vectors) with plain maps.
fn reference(segments: &[Segment], background: &[String]) -> (Vec<Term>, Vec<Pair>) {
    let n_bg = background.len() as f64;
    let mut bgf: HashMap<String, u32> = HashMap::new();
    for doc in background {
        for t in epimine::terms::distinct_terms(doc) {
            *bgf.entry(t).or_default() += 1;
        }
    }
    let mut by_event: BTreeMap<&str, Vec<&Segment>> = BTreeMap::new();
    for s in segments {
        by_event.entry(&s.key_event).or_default().push(s);
    }
    let (mut terms, mut pairs) = (Vec::new(), Vec::new());
    for (event, segs) in by_event {
        let seg_terms: Vec<BTreeSet<String>> = segs
            .iter()
            .map(|s| {
                epimine::terms::distinct_terms(&s.text)
                    .into_iter()
                    .collect()
            })
            .collect();
        let (event_terms, salient) = reference_terms(event, &seg_terms, &bgf, n_bg);
        terms.extend(event_terms);
        pairs.extend(reference_pairs(event, &seg_terms, &salient));
    }
    (terms, pairs)
}

/// The reference's terms of one event (frequency, salience, salient, group) from its segments'
/// distinct terms, and the event's salient terms.
fn reference_terms<'a>(
    event: &str,
    seg_terms: &'a [BTreeSet<String>],
    bgf: &HashMap<String, u32>,
    n_bg: f64,
) -> (Vec<Term>, BTreeSet<&'a str>) {
    let mut terms = Vec::new();
    let mut freq: BTreeMap<&str, u32> = BTreeMap::new();
    for ts in seg_terms {
        for t in ts {
            *freq.entry(t.as_str()).or_default() += 1;
        }
    }
    let sal: BTreeMap<&str, f64> = freq
        .iter()
        .map(|(&t, &f)| {
            let b = bgf.get(t).copied().unwrap_or(0);
            let s = if f < 5 {
                -1.0
            } else if b == 0 {
                (1.0 + (f as f64).ln().powi(2)) * n_bg.ln()
            } else {
                (1.0 + (f as f64).ln().powi(2)) * (n_bg / b as f64).ln()
            };
            (t, s)
        })
        .collect();
    let valid: Vec<f64> = sal.values().copied().filter(|&s| s != -1.0).collect();
    let mean = valid.iter().sum::<f64>() / valid.len() as f64;
    let salient: BTreeSet<&str> = sal
        .iter()
        .filter(|(_, &s)| s != -1.0 && s > mean)
        .map(|(&t, _)| t)
        .collect();
    let mut order: Vec<&str> = salient.iter().copied().collect();
    order.sort_by(|a, b| sal[b].total_cmp(&sal[a]).then(a.cmp(b)));
    let group: HashMap<&str, u32> = order
        .iter()
        .enumerate()
        .map(|(i, &t)| (t, i as u32))
        .collect();
    for (&t, &f) in &freq {
        terms.push(Term {
            key_event: event.to_string(),
            term: t.to_string(),
            freq: f,
            bg_freq: bgf.get(t).copied().unwrap_or(0),
            salience: sal[t],
            salient: salient.contains(t),
            expanded_from: None,
            group: group.get(t).copied(),
        });
    }
    (terms, salient)
}

/// The reference's pairs of one event's salient terms (co-occurrences and distance) from its
/// segments' distinct terms.
fn reference_pairs(
    event: &str,
    seg_terms: &[BTreeSet<String>],
    salient: &BTreeSet<&str>,
) -> Vec<Pair> {
    let mut pairs = Vec::new();
    let mut co: BTreeMap<(&str, &str), u32> = BTreeMap::new();
    for ts in seg_terms {
        let present: Vec<&str> = ts
            .iter()
            .map(String::as_str)
            .filter(|t| salient.contains(t))
            .collect();
        for i in 0..present.len() {
            for j in i + 1..present.len() {
                *co.entry((present[i], present[j])).or_default() += 1;
            }
        }
    }
    let t_size = salient.len() as f64;
    let mut sum: HashMap<&str, f64> = HashMap::new();
    let mut big_f: HashMap<&str, f64> = HashMap::new();
    for (&(a, b), &n) in &co {
        for x in [a, b] {
            *sum.entry(x).or_default() += n as f64;
            if n > 1 {
                *big_f.entry(x).or_default() += 1.0;
            }
        }
    }
    for (&(a, b), &n) in &co {
        let fbar = sum[a].max(sum[b]) / t_size;
        let f = big_f
            .get(a)
            .copied()
            .unwrap_or(0.0)
            .max(big_f.get(b).copied().unwrap_or(0.0));
        let d = (n as f64 / fbar).ln() * (t_size / (f + 1.0)).ln();
        pairs.push(Pair {
            key_event: event.to_string(),
            a: a.to_string(),
            b: b.to_string(),
            freq: n,
            d,
        });
    }
    pairs
}

fn close(a: f64, b: f64) -> bool {
    a == b || (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

fn assert_agrees(got: &StatsOutput, want: &(Vec<Term>, Vec<Pair>), what: &str) {
    let (terms, pairs) = want;
    assert_eq!(got.terms.len(), terms.len(), "{what}: term count");
    for (g, w) in got.terms.iter().zip(terms) {
        assert_eq!(
            (&g.key_event, &g.term, g.freq, g.bg_freq, g.salient, g.group),
            (&w.key_event, &w.term, w.freq, w.bg_freq, w.salient, w.group),
            "{what}"
        );
        assert!(close(g.salience, w.salience), "{what}: {g:?} vs {w:?}");
    }
    assert_eq!(got.pairs.len(), pairs.len(), "{what}: pair count");
    for (g, w) in got.pairs.iter().zip(pairs) {
        assert_eq!(
            (&g.key_event, &g.a, &g.b, g.freq),
            (&w.key_event, &w.a, &w.b, w.freq),
            "{what}"
        );
        assert!(close(g.d, w.d), "{what}: {g:?} vs {w:?}");
    }
}

fn cluster(workers: usize) -> Cluster {
    Cluster {
        workers,
        ..Cluster::default()
    }
}

fn bbc() -> String {
    let path = shared_dir().join("data/background/bbc-news-2225.txt");
    assert!(path.is_file(), "missing {}", path.display());
    s(&path).to_string()
}

/// The development set's events of fewer than 1,500 segments (19 of 21, every theme; 7,327
/// segments), copied under `dir`: the two largest (2021_capitol_attack and 2023_hawaii_fires,
/// 5,497 of its 12,824 segments) more than doubled the test's time (99 s in CI) and bring no
/// case the others lack.
fn most_of_the_dataset(dir: &std::path::Path) -> std::path::PathBuf {
    let root = dir.join("dataset");
    let (mut events, mut segments) = (0, 0);
    for theme in std::fs::read_dir(dataset_dir()).unwrap() {
        let theme = theme.unwrap().path();
        if !theme.is_dir() {
            continue;
        }
        for event in std::fs::read_dir(&theme).unwrap() {
            let event = event.unwrap().path();
            let Ok(text) = std::fs::read_to_string(event.join("segments.txt")) else {
                continue;
            };
            let n = text.lines().filter(|l| !l.trim().is_empty()).count();
            if n >= 1500 {
                continue;
            }
            let to = root
                .join(theme.file_name().unwrap())
                .join(event.file_name().unwrap());
            std::fs::create_dir_all(&to).unwrap();
            for file in std::fs::read_dir(&event).unwrap() {
                let file = file.unwrap().path();
                if file.is_file() {
                    std::fs::copy(&file, to.join(file.file_name().unwrap())).unwrap();
                }
            }
            events += 1;
            segments += n;
        }
    }
    assert!(
        events >= 15 && segments > 4000,
        "{events} events, {segments} segments"
    );
    root
}

#[test]
fn dataflow_matches_the_sequential_reference_on_the_dataset() {
    let dir = scratch();
    let corpus = dir.path().join("corpus");
    let dataset = most_of_the_dataset(dir.path());
    epimine_ok(&["import", s(&dataset), "--out", s(&corpus)]);
    let segments: Vec<Segment> =
        block_on(Location::parse(s(&corpus), false).unwrap().read_table()).unwrap();
    let bg = block_on(background::load(&bbc())).unwrap();
    let Background::Text(docs) = &bg else {
        panic!("text background")
    };
    let want = reference(&segments, docs);
    assert!(
        want.0.iter().filter(|t| t.salient).count() > 1000,
        "a real salient set"
    );
    assert!(want.1.len() > 1000, "real pairs");
    let rounds = [Round {
        corpus: s(&corpus).to_string(),
        sign: 1,
    }];
    // 1 worker and several; 2 processes × 2 workers: the next test.
    for workers in [1, 4] {
        let got = compute(&rounds, &bg, &cluster(workers)).unwrap().unwrap();
        assert_agrees(&got, &want, &format!("{workers} workers"));
        // Spread by event (what `epimine run` takes): every event on exactly one worker, its
        // rows the same as the gathered ones, bit for bit.
        let shares = compute_by_event(&rounds, &bg, &cluster(workers)).unwrap();
        let mut spread: Vec<Term> = Vec::new();
        let mut seen: BTreeSet<String> = BTreeSet::new();
        for share in shares.values() {
            for (event, rows) in share {
                assert!(seen.insert(event.clone()), "{event} on two workers");
                assert!(rows.iter().all(|t| &t.key_event == event));
                spread.extend(rows.iter().cloned());
            }
        }
        if workers > 1 {
            assert!(
                shares.values().filter(|s| !s.is_empty()).count() > 1,
                "{workers} workers: the events are spread"
            );
        }
        spread.sort_by(|a, b| (&a.key_event, &a.term).cmp(&(&b.key_event, &b.term)));
        assert_eq!(spread.len(), got.terms.len());
        for (a, b) in spread.iter().zip(&got.terms) {
            assert_eq!(
                (&a.key_event, &a.term, a.freq, a.bg_freq, a.salient, a.group),
                (&b.key_event, &b.term, b.freq, b.bg_freq, b.salient, b.group)
            );
            assert_eq!(a.salience.to_bits(), b.salience.to_bits());
        }
    }
}

#[test]
fn two_processes_over_tcp_write_the_same_bytes_as_one_worker() {
    let dir = scratch();
    let corpus = dir.path().join("corpus");
    let dataset = most_of_the_dataset(dir.path());
    epimine_ok(&["import", s(&dataset), "--out", s(&corpus)]);
    // A background table this time, built once.
    let bg = dir.path().join("bg/bbc.parquet");
    epimine_ok(&["background", "build", &bbc(), "--out", s(&bg)]);
    let one = dir.path().join("one");
    epimine_ok(&[
        "stats",
        "--corpus",
        s(&corpus),
        "--background",
        s(&bg),
        "--out",
        s(&one),
        "--no-vectors",
        "-w",
        "1",
    ]);

    let hostfile = hostfile(dir.path(), 2);
    let two = dir.path().join("two");
    let spawn = |p: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_epimine"))
            .args([
                "stats",
                "--corpus",
                s(&corpus),
                "--background",
                s(&bg),
                "--out",
                s(&two),
                "--no-vectors",
            ])
            .args(["-w", "2", "-n", "2", "-p", p, "-H", s(&hostfile)])
            .env("RUST_LOG", "warn")
            .output()
    };
    let (c1, b1, h1) = (corpus.clone(), bg.clone(), hostfile.clone());
    let second = std::thread::spawn(move || spawn_process_1(&c1, &b1, &h1));
    let first = spawn("0").unwrap();
    let second: std::process::Output = second.join().unwrap();
    for (i, out) in [(0, &first), (1, &second)] {
        assert!(
            out.status.success(),
            "process {i}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    for f in ["terms.parquet", "pairs.parquet"] {
        let a = std::fs::read(one.join(f)).unwrap();
        let b = std::fs::read(two.join(f)).unwrap();
        assert!(a.len() > 1000, "{f} holds data");
        assert!(a == b, "{f}: 2 processes × 2 workers differ from 1 worker");
    }
}

fn spawn_process_1(
    corpus: &std::path::Path,
    bg: &std::path::Path,
    hostfile: &std::path::Path,
) -> std::process::Output {
    let elsewhere = scratch();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_epimine"))
        .args([
            "stats",
            "--corpus",
            s(corpus),
            "--background",
            s(bg),
            "--out",
            s(elsewhere.path()),
            "--no-vectors",
        ])
        .args(["-w", "2", "-n", "2", "-p", "1", "-H", s(hostfile)])
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    // Only the process hosting worker 0 writes.
    assert_eq!(files_in(elsewhere.path()), Vec::<String>::new());
    out
}

/// The tiny corpus of the hand computation below.
fn tiny() -> (Vec<Segment>, Vec<String>) {
    let mut texts: Vec<&str> = Vec::new();
    texts.extend(["The common apple and berry."; 5]);
    texts.extend(["Common cherry, date!"; 5]);
    texts.push("common apple cherry");
    texts.push("COMMON berry date");
    let segments = texts
        .iter()
        .enumerate()
        .map(|(i, t)| Segment {
            key_event: "tiny".into(),
            theme: None,
            doc_id: (i / 4) as u32,
            doc_date: None,
            seg_idx: (i % 4) as u32,
            text: t.to_string(),
            source_id: None,
            title: None,
        })
        .collect();
    let background = (0..10).map(|i| format!("common news item {i}")).collect();
    (segments, background)
}

#[test]
fn tiny_corpus_by_hand() {
    // 12 segments; N_bg = 10 background documents, all containing "common".
    // freq: apple = berry = cherry = date = 6, common = 12; "the", "and" are stop words.
    // salience(fruit) = (1 + ln²6) · ln(10/1)… with bgf = 0: (1 + ln²6) · ln 10 ≈ 9.6948;
    // salience(common) = (1 + ln²12) · ln(10/10) = 0. Mean = 4·9.6948/5 ≈ 7.7558, so
    // T = {apple, berry, cherry, date}, |T| = 4.
    // freq(apple,berry) = freq(cherry,date) = 5; freq(apple,cherry) = freq(berry,date) = 1.
    // Σ_w freq(x,w) = 6 for every x, so f̄ = 6/4 = 1.5; |F_x| = 1 for every x.
    // d(apple,berry) = ln(5/1.5) · ln(4/2) ≈ 0.834530; d(apple,cherry) = ln(1/1.5) · ln 2 ≈ −0.281047.
    let (segments, docs) = tiny();
    let dir = scratch();
    let corpus = Location::parse(s(dir.path()), false).unwrap();
    block_on(corpus.write_table(&segments)).unwrap();
    let rounds = [Round {
        corpus: s(dir.path()).to_string(),
        sign: 1,
    }];
    for workers in [1, 3] {
        let out = compute(&rounds, &Background::Text(docs.clone()), &cluster(workers))
            .unwrap()
            .unwrap();
        let terms: BTreeMap<&str, &Term> = out.terms.iter().map(|t| (t.term.as_str(), t)).collect();
        assert_eq!(
            terms.keys().copied().collect::<Vec<_>>(),
            ["apple", "berry", "cherry", "common", "date"]
        );
        let fruit = (1.0 + 6f64.ln().powi(2)) * 10f64.ln();
        for f in ["apple", "berry", "cherry", "date"] {
            assert_eq!(
                (terms[f].freq, terms[f].bg_freq, terms[f].salient),
                (6, 0, true),
                "{f}"
            );
            assert!(close(terms[f].salience, fruit));
        }
        assert_eq!(
            (
                terms["common"].freq,
                terms["common"].bg_freq,
                terms["common"].salient
            ),
            (12, 10, false)
        );
        assert_eq!(terms["common"].salience, 0.0);
        // Ties in salience are grouped by term.
        let groups: Vec<Option<u32>> = ["apple", "berry", "cherry", "date", "common"]
            .iter()
            .map(|t| terms[t].group)
            .collect();
        assert_eq!(groups, [Some(0), Some(1), Some(2), Some(3), None]);
        let pairs: Vec<(&str, &str, u32, f64)> = out
            .pairs
            .iter()
            .map(|p| (p.a.as_str(), p.b.as_str(), p.freq, p.d))
            .collect();
        assert_eq!(pairs.len(), 4, "{pairs:?}");
        let strong = (5.0f64 / 1.5).ln() * 2f64.ln();
        let weak = (1.0f64 / 1.5).ln() * 2f64.ln();
        assert!((strong - 0.834530).abs() < 1e-6 && (weak + 0.281047).abs() < 1e-6);
        for (a, b, n, d) in pairs {
            let want = if n == 5 { strong } else { weak };
            assert!(close(d, want), "{a} {b} {n} {d}");
            assert!(matches!(
                (a, b),
                ("apple", "berry") | ("cherry", "date") | ("apple", "cherry") | ("berry", "date")
            ));
        }
    }
}

#[test]
fn adding_articles_later_equals_a_run_from_scratch() {
    // The dataset's Kroger event split in two: the first half of its articles, then the rest
    // added in a later round (a new salient set, so the earlier round's pairs are recounted);
    // and a retraction round that removes an extra event again.
    let dir = scratch();
    let corpus = dir.path().join("corpus");
    epimine_ok(&["import", s(&dataset_dir()), "--out", s(&corpus)]);
    let all: Vec<Segment> =
        block_on(Location::parse(s(&corpus), false).unwrap().read_table()).unwrap();
    let kroger: Vec<Segment> = all
        .iter()
        .filter(|s| s.key_event == "2021_kroger_shooting")
        .cloned()
        .collect();
    let fedex: Vec<Segment> = all
        .iter()
        .filter(|s| s.key_event == "2021_fedex_shooting")
        .cloned()
        .collect();
    let half = kroger.iter().map(|s| s.doc_id).max().unwrap() / 2;
    let (first, later): (Vec<Segment>, Vec<Segment>) =
        kroger.iter().cloned().partition(|s| s.doc_id <= half);
    assert!(!first.is_empty() && !later.is_empty());
    let write = |name: &str, rows: &[Segment]| {
        let path = dir.path().join(name);
        block_on(Location::parse(s(&path), true).unwrap().write_table(rows)).unwrap();
        s(&path).to_string()
    };
    let first_dir = write("first", &first);
    let later_dir = write("later", &later);
    let fedex_dir = write("fedex", &fedex);
    let whole_dir = write("whole", &kroger);
    let bg = block_on(background::load(&bbc())).unwrap();
    let round = |corpus: &str, sign| Round {
        corpus: corpus.to_string(),
        sign,
    };
    let stats_of = |rounds: &[Round]| compute(rounds, &bg, &cluster(2)).unwrap().unwrap();
    let incremental = stats_of(&[
        round(&first_dir, 1),
        round(&fedex_dir, 1),
        round(&later_dir, 1),
        round(&fedex_dir, -1),
    ]);
    let scratch_run = stats_of(&[round(&whole_dir, 1)]);
    let first_only = stats_of(&[round(&first_dir, 1)]);
    assert!(!scratch_run.pairs.is_empty());
    assert_eq!(incremental.terms, scratch_run.terms);
    assert_eq!(incremental.pairs, scratch_run.pairs);
    // And the later articles did change the statistics.
    assert_ne!(first_only.terms, scratch_run.terms);
    let events: HashSet<&str> = incremental
        .terms
        .iter()
        .map(|t| t.key_event.as_str())
        .collect();
    assert_eq!(events, HashSet::from(["2021_kroger_shooting"]));
    // Retracting the later articles again (part of an event, whose salient set shrinks back)
    // gives the first half's statistics.
    let retracted = stats_of(&[
        round(&first_dir, 1),
        round(&later_dir, 1),
        round(&later_dir, -1),
    ]);
    assert!(!first_only.pairs.is_empty());
    assert_eq!(retracted.terms, first_only.terms);
    assert_eq!(retracted.pairs, first_only.pairs);
}

#[test]
fn missing_corpus_fails_without_writing_or_hanging() {
    let dir = scratch();
    let out = dir.path().join("out");
    let bgfile = dir.path().join("bg.txt");
    std::fs::write(&bgfile, "one doc\nanother doc\n").unwrap();
    let result = epimine(&[
        "stats",
        "--corpus",
        s(&dir.path().join("nowhere")),
        "--background",
        s(&bgfile),
        "--out",
        s(&out),
        "--no-vectors",
        "-w",
        "2",
    ]);
    assert!(!result.status.success());
    let err = String::from_utf8_lossy(&result.stderr);
    assert!(err.contains("nowhere"), "{err}");
    assert_eq!(files_in(&out), Vec::<String>::new());
}
