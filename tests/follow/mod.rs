//! Following events from run to run (issue 39): episodes keep their ids across runs of the same
//! `--out` while they are the same episodes, a planted episode shows as new, an episode whose
//! segments are gone is marked ended, the history survives a killed run, and
//! `import --articles --append` adds a feed's articles without touching the segments there.
//! Real runs of the binary (the tiny encoder), real kills (`EPIMINE_FAULT`).

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Output;

use crate::util::*;
use epimine::storage::Location;
use epimine::tables::{Assignment, Development, Episode, Label, Lineage, Segment};

mod appends;
mod history;
mod ids;
mod novelty;

/// `epimine run` at `time` (`--run-time`), extra flags, environment, with the tiny encoder.
fn run_at(corpus: &Path, out: &Path, time: &str, extra: &[&str], env: &[(&str, &str)]) -> Output {
    run_with_model(&tiny_model(), corpus, out, time, extra, env)
}

/// [`run_at`] with the encoder `model`.
fn run_with_model(
    model: &str,
    corpus: &Path,
    out: &Path,
    time: &str,
    extra: &[&str],
    env: &[(&str, &str)],
) -> Output {
    let mut cmd = synth_run_with(corpus, s(out), model);
    cmd.args(["--run-time", time])
        .args(extra)
        .env("RUST_LOG", "warn")
        .env_remove("EPIMINE_FAULT");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("epimine runs")
}

fn loc(p: &Path) -> Location {
    Location::parse(s(p), false).unwrap()
}

fn lineage(out: &Path) -> Vec<Lineage> {
    read_rows(out)
}

/// A synthetic corpus whose articles carry ids (`import --articles` gives them), so that their
/// segments' keys follow the ids.
fn corpus_with_ids(dir: &Path, events: usize, docs: usize) -> std::path::PathBuf {
    let corpus = synth(dir, events, docs);
    let mut segments: Vec<Segment> = read_rows(&corpus);
    for s in &mut segments {
        s.source_id = Some(format!("https://example.org/{}/{}", s.key_event, s.doc_id));
    }
    block_on(loc(&corpus).write_table(&segments)).unwrap();
    corpus
}

/// Per (key event, episode_id) of trial 0: the stable keys of its assigned segments.
fn episode_keys(corpus: &Path, out: &Path) -> BTreeMap<(String, u32), BTreeSet<u64>> {
    let mut segments: Vec<Segment> =
        block_on(epimine::corpus::read_segments(&loc(corpus))).unwrap();
    segments.sort_by(|a, b| {
        (&a.key_event, a.doc_id, a.seg_idx).cmp(&(&b.key_event, b.doc_id, b.seg_idx))
    });
    let mut key_of: BTreeMap<(String, u32, u32), u64> = BTreeMap::new();
    let mut start = 0;
    while start < segments.len() {
        let end = segments[start..]
            .iter()
            .position(|s| s.key_event != segments[start].key_event)
            .map_or(segments.len(), |n| start + n);
        let event = &segments[start..end];
        for (s, (k, _)) in event.iter().zip(epimine::lineage::segment_keys(event)) {
            key_of.insert((s.key_event.clone(), s.doc_id, s.seg_idx), k);
        }
        start = end;
    }
    let mut out_keys: BTreeMap<(String, u32), BTreeSet<u64>> = BTreeMap::new();
    for a in read_rows::<Assignment>(out)
        .into_iter()
        .filter(|a| a.trial == 0)
    {
        out_keys
            .entry((a.key_event.clone(), a.episode_id))
            .or_default()
            .insert(key_of[&(a.key_event.clone(), a.doc_id, a.seg_idx)]);
    }
    out_keys
}

/// Per (key event, episode_id): its stable id.
fn stable_ids(out: &Path) -> BTreeMap<(String, u32), u32> {
    lineage(out)
        .into_iter()
        .filter(|r| r.trial == 0)
        .filter_map(|r| r.episode_id.map(|e| ((r.key_event, e), r.stable_id)))
        .collect()
}

/// Plants into `target` the articles of the largest gold episode of `from` (its own made-up
/// vocabulary) as new articles with their own ids, appended to `segments`; returns their texts.
fn plant_episode(
    corpus: &Path,
    from: &str,
    target: &str,
    segments: &mut Vec<Segment>,
) -> BTreeSet<String> {
    let labels: Vec<Label> = read_rows(corpus);
    let mut sizes: BTreeMap<&str, usize> = BTreeMap::new();
    for l in labels.iter().filter(|l| l.key_event == from) {
        if l.label != "M" && l.label != "X" {
            *sizes.entry(l.label.as_str()).or_default() += 1;
        }
    }
    let planted_label = sizes.iter().max_by_key(|(_, n)| **n).unwrap().0.to_string();
    let planted: BTreeSet<(u32, u32)> = labels
        .iter()
        .filter(|l| l.key_event == from && l.label == planted_label)
        .map(|l| (l.doc_id, l.seg_idx))
        .collect();
    assert!(planted.len() >= 5);
    let next_doc = segments
        .iter()
        .filter(|s| s.key_event == target)
        .map(|s| s.doc_id + 1)
        .max()
        .unwrap();
    let mut by_doc: BTreeMap<u32, Vec<Segment>> = BTreeMap::new();
    for s in segments
        .iter()
        .filter(|s| s.key_event == from && planted.contains(&(s.doc_id, s.seg_idx)))
    {
        by_doc.entry(s.doc_id).or_default().push(s.clone());
    }
    let texts = by_doc.values().flatten().map(|s| s.text.clone()).collect();
    for (n, (doc, segs)) in by_doc.into_iter().enumerate() {
        for (i, s) in segs.into_iter().enumerate() {
            segments.push(Segment {
                key_event: target.into(),
                doc_id: next_doc + n as u32,
                seg_idx: i as u32,
                source_id: Some(format!("https://example.org/planted/{doc}")),
                ..s
            });
        }
    }
    texts
}

/// Each segment's text of `event` in `corpus`, by (doc_id, seg_idx).
fn texts_of(corpus: &Path, event: &str) -> BTreeMap<(u32, u32), String> {
    read_rows::<Segment>(corpus)
        .into_iter()
        .filter(|s| s.key_event == event)
        .map(|s| ((s.doc_id, s.seg_idx), s.text))
        .collect()
}

/// Writes `segments` as the corpus's, `seg_idx` dense within each article, in corpus order.
fn write_renumbered(corpus: &Path, segments: Vec<Segment>) {
    let mut renumbered: Vec<Segment> = Vec::new();
    for s in segments {
        let idx = renumbered
            .iter()
            .rev()
            .take_while(|p| p.key_event == s.key_event && p.doc_id == s.doc_id)
            .count() as u32;
        renumbered.push(Segment { seg_idx: idx, ..s });
    }
    renumbered.sort_by(|a, b| {
        (&a.key_event, a.doc_id, a.seg_idx).cmp(&(&b.key_event, b.doc_id, b.seg_idx))
    });
    block_on(loc(corpus).write_table(&renumbered)).unwrap();
}

fn history_files(out: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v = Vec::new();
    for name in files_in(&out.join("history")) {
        v.push((
            name.clone(),
            std::fs::read(out.join("history").join(&name)).unwrap(),
        ));
    }
    v.push((
        "lineage.parquet".into(),
        std::fs::read(out.join("lineage.parquet")).unwrap_or_default(),
    ));
    v
}

/// The rows of `T` in `out` outside `event`.
fn rows_outside<T: epimine::tables::Table + PartialEq + std::fmt::Debug>(
    out: &Path,
    event: &str,
    key_event: fn(&T) -> &str,
) -> Vec<T> {
    read_rows::<T>(out)
        .into_iter()
        .filter(|r| key_event(r) != event)
        .collect()
}

/// Copies a run folder (files and sub-folders).
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}
