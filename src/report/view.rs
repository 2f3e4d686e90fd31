//! Each event as the page shows it: the corpus checked against the run, then every event's
//! episodes with their days, coverage and top segments.

use std::collections::{BTreeMap, BTreeSet};

use super::error::ReportError;
use super::options::ReportOptions;
use super::read::{ByEpisode, CorpusEvent, EventLine, Found, FoundMap, Manifest};
use crate::run_folder::manifest::Outcome;
use crate::tables::{Assignment, Episode, Lineage, Segment};

/// One episode as the page shows it.
pub(super) struct EpisodeView<'a> {
    pub(super) episode: &'a Episode,
    /// (day, assigned segments published that day).
    pub(super) days: BTreeMap<i32, u32>,
    /// Assigned segments without a date.
    pub(super) undated: u32,
    /// Top segments by confidence.
    pub(super) top: Vec<(&'a Assignment, &'a Segment)>,
    /// What became of it since the previous run of the same `--out` (`lineage.parquet`).
    pub(super) change: Option<&'a Lineage>,
}

/// One event as the page shows it.
pub(super) struct EventView<'a> {
    pub(super) line: &'a EventLine,
    pub(super) theme: Option<&'a str>,
    /// Segments per day in the corpus.
    pub(super) corpus_days: &'a BTreeMap<i32, u32>,
    pub(super) episodes: Vec<EpisodeView<'a>>,
    /// The event's articles in the corpus.
    pub(super) articles: usize,
    /// Segments in some episode of the shown trial.
    pub(super) assigned_segments: usize,
    /// Articles with a segment in some episode of the shown trial.
    pub(super) assigned_articles: usize,
    /// The previous run's episodes that ended (or merged into another) in this run, shown
    /// trial's (`lineage.parquet`).
    pub(super) ended: Vec<&'a Lineage>,
}

/// What the views are built from: the run's and the corpus's names, `run.json`, the corpus's events,
/// the slots of the assigned segments, and the shown trial's assignments by episode.
pub(super) struct ViewInputs<'a> {
    pub(super) run_name: &'a str,
    pub(super) corpus_name: &'a str,
    pub(super) manifest: &'a Manifest,
    pub(super) per_event: &'a BTreeMap<String, CorpusEvent>,
    pub(super) found: &'a FoundMap<'a>,
    pub(super) by_episode: &'a ByEpisode<'a>,
    /// The run's `lineage` rows (none for a baseline or a run without a history).
    pub(super) lineage: &'a [Lineage],
}

/// The slot of an assigned segment.
fn slot<'a>(found: &'a FoundMap, a: &Assignment) -> &'a Found {
    found
        .get(a.key_event.as_str())
        .and_then(|m| m.get(&(a.doc_id, a.seg_idx)))
        .expect("every assignment has a slot")
}

/// The corpus holds every event of `run.json` with as many segments (events that did not fail),
/// no other event, and every assigned segment.
pub(super) fn check_corpus(
    inputs: &ViewInputs,
    assignments: &[Assignment],
) -> Result<(), ReportError> {
    let (manifest, per_event) = (inputs.manifest, inputs.per_event);
    let mismatch = |reason: String| ReportError::CorpusMismatch {
        corpus: inputs.corpus_name.to_string(),
        run: inputs.run_name.to_string(),
        reason,
    };
    let listed: BTreeSet<&str> = manifest
        .events
        .iter()
        .map(|e| e.key_event.as_str())
        .collect();
    for line in &manifest.events {
        match per_event.get(line.key_event.as_str()) {
            None => {
                return Err(mismatch(format!(
                    "event `{}` of run.json is not in the corpus",
                    line.key_event
                )))
            }
            Some((n, _, _, _)) if *n != line.segments && line.status == Outcome::Ok => {
                return Err(mismatch(format!(
                    "event `{}` has {n} segments in the corpus, {} in run.json",
                    line.key_event, line.segments
                )))
            }
            _ => {}
        }
    }
    if let Some(extra) = per_event.keys().find(|k| !listed.contains(k.as_str())) {
        return Err(mismatch(format!(
            "event `{extra}` of the corpus is not in run.json"
        )));
    }
    for (row, a) in assignments.iter().enumerate() {
        if slot(inputs.found, a).date.is_none() {
            return Err(mismatch(format!(
                "assignments.parquet row {row}: segment (key_event `{}`, doc_id {}, seg_idx {}) is not in the corpus",
                a.key_event, a.doc_id, a.seg_idx
            )));
        }
    }
    Ok(())
}

/// Every event of `run.json` in key order, with the shown trial's episodes in id order.
pub(super) fn event_views<'a>(
    inputs: &ViewInputs<'a>,
    episodes: &'a [Episode],
    options: &ReportOptions,
) -> Vec<EventView<'a>> {
    let mut event_episodes: BTreeMap<&str, Vec<&Episode>> = BTreeMap::new();
    for e in episodes.iter().filter(|e| e.trial == options.trial) {
        event_episodes
            .entry(e.key_event.as_str())
            .or_default()
            .push(e);
    }
    let mut lines: Vec<&EventLine> = inputs.manifest.events.iter().collect();
    lines.sort_by(|a, b| a.key_event.cmp(&b.key_event));
    lines
        .into_iter()
        .map(|line| {
            let (_, theme, corpus_days, articles) = &inputs.per_event[line.key_event.as_str()];
            let mut eps = event_episodes
                .remove(line.key_event.as_str())
                .unwrap_or_default();
            eps.sort_by_key(|e| e.episode_id);
            let mut segs: BTreeSet<(u32, u32)> = BTreeSet::new();
            for e in &eps {
                if let Some(list) = inputs
                    .by_episode
                    .get(&(line.key_event.as_str(), e.episode_id))
                {
                    segs.extend(list.iter().map(|a| (a.doc_id, a.seg_idx)));
                }
            }
            let docs: BTreeSet<u32> = segs.iter().map(|s| s.0).collect();
            let episodes = eps
                .into_iter()
                .map(|episode| episode_view(inputs, line, episode, options))
                .collect();
            let ended = inputs
                .lineage
                .iter()
                .filter(|r| {
                    r.key_event == line.key_event
                        && r.trial == options.trial
                        && matches!(r.status.as_str(), "ended" | "merged")
                })
                .collect();
            EventView {
                ended,
                line,
                theme: theme.as_deref(),
                corpus_days,
                episodes,
                articles: *articles,
                assigned_segments: segs.len(),
                assigned_articles: docs.len(),
            }
        })
        .collect()
}

/// One episode: its assigned segments per day and the top ones.
fn episode_view<'a>(
    inputs: &ViewInputs<'a>,
    line: &EventLine,
    episode: &'a Episode,
    options: &ReportOptions,
) -> EpisodeView<'a> {
    let no_segments = Vec::new();
    let segs = inputs
        .by_episode
        .get(&(line.key_event.as_str(), episode.episode_id))
        .unwrap_or(&no_segments);
    let mut days: BTreeMap<i32, u32> = BTreeMap::new();
    let mut undated = 0;
    for a in segs {
        match slot(inputs.found, a).date.flatten() {
            Some(d) => *days.entry(d).or_default() += 1,
            None => undated += 1,
        }
    }
    let top = segs
        .iter()
        .take(options.top_segments)
        .map(|a| {
            (
                *a,
                slot(inputs.found, a)
                    .segment
                    .as_ref()
                    .expect("shown, so kept"),
            )
        })
        .collect();
    let change = inputs.lineage.iter().find(|r| {
        r.key_event == episode.key_event
            && r.trial == episode.trial
            && r.episode_id == Some(episode.episode_id)
    });
    EpisodeView {
        episode,
        days,
        undated,
        top,
        change,
    }
}
