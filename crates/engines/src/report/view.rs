//! Each event as the page shows it: the corpus checked against the run, then every event's
//! episodes with their days, coverage and top segments.

use std::collections::{BTreeMap, BTreeSet};

use super::error::ReportError;
use super::options::ReportOptions;
use super::read::{ByEpisode, CorpusEvent, EventLine, Found, FoundMap, Manifest};
use crate::coverage::{near_copy, words};
use crate::run_folder::manifest::Outcome;
use crate::tables::{Assignment, CopyArticle, Episode, Lineage, Segment};

/// One episode as the page shows it.
pub(super) struct EpisodeView<'a> {
    pub(super) episode: &'a Episode,
    /// (day, assigned segments published that day).
    pub(super) days: BTreeMap<i32, u32>,
    /// Assigned segments without a date.
    pub(super) undated: u32,
    /// Top segments in the page's order, distinct ([`distinct_top`]), each with how many
    /// other articles carry a near-copy of it among the passages read.
    pub(super) top: Vec<(&'a Assignment, &'a Segment, usize)>,
    /// What became of it since the previous run of the same `--out` (`lineage.parquet`).
    pub(super) change: Option<&'a Lineage>,
    /// Its articles with segments of their own.
    pub(super) own_articles: usize,
    /// The articles made only of copies that carry one of its segments (the corpus's
    /// `copies.parquet`): the outlets that carried it whole in agency copy.
    pub(super) carriers: usize,
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
    /// The corpus's articles made only of copies, by key event.
    pub(super) copies: &'a BTreeMap<String, Vec<CopyArticle>>,
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
    let candidates: Vec<(&'a Assignment, &'a Segment)> = segs
        .iter()
        .take(options.top_segments.saturating_mul(super::read::CANDIDATES))
        .map(|a| {
            (
                *a,
                slot(inputs.found, a)
                    .segment
                    .as_ref()
                    .expect("read, so kept"),
            )
        })
        .collect();
    let top = distinct_top(&candidates, options.top_segments);
    let change = inputs.lineage.iter().find(|r| {
        r.key_event == episode.key_event
            && r.trial == episode.trial
            && r.episode_id == Some(episode.episode_id)
    });
    let held: BTreeSet<(u32, u32)> = segs.iter().map(|a| (a.doc_id, a.seg_idx)).collect();
    let carriers = inputs
        .copies
        .get(line.key_event.as_str())
        .map_or(0, |copies| {
            copies
                .iter()
                .filter(|c| c.carried.iter().any(|&g| held.contains(&(c.copy_of, g))))
                .count()
        });
    EpisodeView {
        episode,
        days,
        undated,
        top,
        change,
        own_articles: held.iter().map(|s| s.0).collect::<BTreeSet<_>>().len(),
        carriers,
    }
}

/// The passages shown of an episode (issue 65, item 2): of `candidates` (in the page's order),
/// `n` that are not near-copies of one another — a near-copy is folded into the first, which
/// counts the other articles carrying it — taken first from articles not shown yet, then from
/// any; in the page's order.
pub(super) fn distinct_top<'a>(
    candidates: &[(&'a Assignment, &'a Segment)],
    n: usize,
) -> Vec<(&'a Assignment, &'a Segment, usize)> {
    let bags: Vec<BTreeSet<String>> = candidates.iter().map(|(_, s)| words(&s.text)).collect();
    // Each candidate's group: the first earlier one it is a near-copy of, else its own.
    let mut leader: Vec<usize> = (0..candidates.len()).collect();
    for i in 0..candidates.len() {
        if let Some(j) = (0..i).find(|&j| leader[j] == j && near_copy(&bags[i], &bags[j])) {
            leader[i] = j;
        }
    }
    let others = |j: usize| {
        let mine = candidates[j].1.doc_id;
        (0..candidates.len())
            .filter(|&i| leader[i] == j)
            .map(|i| candidates[i].1.doc_id)
            .filter(|&d| d != mine)
            .collect::<BTreeSet<u32>>()
            .len()
    };
    let leaders: Vec<usize> = (0..candidates.len()).filter(|&i| leader[i] == i).collect();
    let mut chosen: Vec<usize> = Vec::new();
    let mut articles: BTreeSet<u32> = BTreeSet::new();
    for &i in &leaders {
        if chosen.len() < n && articles.insert(candidates[i].1.doc_id) {
            chosen.push(i);
        }
    }
    for &i in &leaders {
        if chosen.len() < n && !chosen.contains(&i) {
            chosen.push(i);
        }
    }
    chosen.sort_unstable();
    chosen
        .into_iter()
        .map(|i| (candidates[i].0, candidates[i].1, others(i)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(doc: u32, text: &str) -> Segment {
        Segment {
            key_event: "e".into(),
            theme: None,
            doc_id: doc,
            doc_date: None,
            seg_idx: 0,
            text: text.into(),
            source_id: None,
            title: None,
        }
    }

    fn asg(doc: u32, rank: u32) -> Assignment {
        Assignment {
            key_event: "e".into(),
            trial: 0,
            episode_id: 0,
            stable_id: None,
            status: None,
            doc_id: doc,
            seg_idx: 0,
            rank,
            confidence: 0.0,
        }
    }

    #[test]
    fn near_copies_fold_into_one_and_other_articles_come_first() {
        let wire = "Floodwater breached the eastern levee before dawn, forcing hundreds of families from their homes.";
        let segs = [
            seg(1, wire),
            seg(2, &format!("“{}”", wire.to_uppercase())),
            seg(3, &wire.replace("hundreds", "hundreds and hundreds")),
            seg(
                1,
                "Officials in Riverside said the shelters were full by noon on Tuesday.",
            ),
            seg(
                4,
                "Farmers upstream counted the cost of the drowned harvest this week.",
            ),
            seg(
                5,
                "Schools opened their gyms to the evacuees from the lower town.",
            ),
        ];
        let asgs: Vec<Assignment> = (0..segs.len() as u32)
            .map(|r| asg(segs[r as usize].doc_id, r))
            .collect();
        let candidates: Vec<(&Assignment, &Segment)> = asgs.iter().zip(segs.iter()).collect();
        let top = distinct_top(&candidates, 3);
        let shown: Vec<(u32, usize)> = top.iter().map(|(a, _, also)| (a.rank, *also)).collect();
        // The wire paragraph once (also in articles 2 and 3); article 1's other passage after
        // articles 4 and 5, which were not shown yet.
        assert_eq!(shown, [(0, 2), (4, 0), (5, 0)]);
        assert_eq!(distinct_top(&candidates, 4).len(), 4);
    }
}
