//! What the page is made of, read in: the parts of `run.json` it shows, a slot for every
//! assigned segment, and the corpus, one row group at a time.

use std::collections::{BTreeMap, HashMap};

use super::error::ReportError;
use super::options::{ReportOptions, SegmentOrder};
use crate::run_folder::commit;
use crate::run_folder::manifest::Outcome;
use crate::storage::Location;
use crate::tables::{Assignment, Segment};

/// One event's line of `run.json`.
#[derive(Debug, Clone, serde::Deserialize)]
pub(super) struct EventLine {
    pub(super) key_event: String,
    pub(super) status: Outcome,
    pub(super) error: Option<String>,
    pub(super) segments: usize,
}

/// The parts of `run.json` the page shows.
#[derive(Debug, Clone)]
pub(super) struct Manifest {
    pub(super) version: String,
    pub(super) format: u64,
    pub(super) events: Vec<EventLine>,
    pub(super) trials: u32,
    pub(super) llm: Option<String>,
}

/// The parts of `run.json` the page shows, checked.
pub(super) fn manifest(run: &Location, json: &[u8]) -> Result<Manifest, ReportError> {
    let location = run.display_child(commit::MANIFEST);
    let bad = |reason: String| ReportError::Manifest {
        location: location.clone(),
        reason,
    };
    let v: serde_json::Value =
        serde_json::from_slice(json).map_err(|e| bad(format!("not JSON: {e}")))?;
    let events: Vec<EventLine> = v
        .get("events")
        .cloned()
        .ok_or_else(|| bad("no `events`".into()))
        .and_then(|e| serde_json::from_value(e).map_err(|e| bad(format!("`events`: {e}"))))?;
    let trials = v
        .pointer("/job/llm/trials")
        .and_then(|t| t.as_u64())
        .unwrap_or(1) as u32;
    let llm = v.get("llm").and_then(|l| {
        Some(format!(
            "{} {}",
            l.get("backend")?.as_str()?,
            l.get("model")?.as_str()?
        ))
    });
    Ok(Manifest {
        version: v
            .get("epimine_version")
            .and_then(|s| s.as_str())
            .unwrap_or("?")
            .to_string(),
        format: v.get("format").and_then(|f| f.as_u64()).unwrap_or(0),
        events,
        trials: if llm.is_some() { trials.max(1) } else { 1 },
        llm,
    })
}

/// The manifest of a baseline's output (no `run.json`): every event of the corpus, `ok` when it
/// has an episode, else `skipped` (the baseline prints why).
pub(super) fn baseline_manifest(
    per_event: &BTreeMap<String, CorpusEvent>,
    episodes: &[crate::tables::Episode],
) -> Manifest {
    let with_episodes: std::collections::BTreeSet<&str> =
        episodes.iter().map(|e| e.key_event.as_str()).collect();
    let source = episodes
        .first()
        .map_or("baseline".to_string(), |e| format!("baseline {}", e.source));
    Manifest {
        version: format!("{} ({source}: no run.json)", env!("CARGO_PKG_VERSION")),
        format: u64::from(crate::run_folder::checkpoint::FORMAT),
        events: per_event
            .iter()
            .map(|(key, (segments, _, _, _))| {
                let ok = with_episodes.contains(key.as_str());
                EventLine {
                    key_event: key.clone(),
                    status: if ok { Outcome::Ok } else { Outcome::Skipped },
                    error: (!ok).then(|| format!("{source}: no episode")),
                    segments: *segments,
                }
            })
            .collect(),
        trials: 1,
        llm: None,
    }
}

/// One event in the corpus: segments, theme, segments per day, articles.
pub(super) type CorpusEvent = (usize, Option<String>, BTreeMap<i32, u32>, usize);

/// An assigned segment as found in the corpus.
#[derive(Default)]
pub(super) struct Found {
    /// Its date (`Some` once the corpus held it).
    pub(super) date: Option<Option<i32>>,
    /// Whether the page shows it (then `segment` is kept).
    pub(super) shown: bool,
    /// The segment, when shown.
    pub(super) segment: Option<Segment>,
}

/// Assigned segments by event, then (doc_id, seg_idx).
pub(super) type FoundMap<'a> = HashMap<&'a str, HashMap<(u32, u32), Found>>;

/// The assignments of one shown episode, in the page's order.
pub(super) fn ordered(mut segs: Vec<&Assignment>, order: SegmentOrder) -> Vec<&Assignment> {
    segs.sort_by(|a, b| {
        let by_confidence = match order {
            SegmentOrder::Rank => std::cmp::Ordering::Equal,
            SegmentOrder::Confidence => b.confidence.total_cmp(&a.confidence),
        };
        by_confidence
            .then(a.rank.cmp(&b.rank))
            .then(a.doc_id.cmp(&b.doc_id))
            .then(a.seg_idx.cmp(&b.seg_idx))
    });
    segs
}

/// The assigned segments of a run, by episode of the shown trial (in the page's order).
pub(super) type ByEpisode<'a> = BTreeMap<(&'a str, u32), Vec<&'a Assignment>>;

/// A slot for every assigned segment, to be filled from the corpus, and the shown trial's
/// assignments by episode; the top ones of each episode are marked to be kept whole.
/// How many times `--top-segments` of an episode's passages are read, to show that many
/// distinct ones.
pub(super) const CANDIDATES: usize = 4;

pub(super) fn assigned_slots<'a>(
    assignments: &'a [Assignment],
    options: &ReportOptions,
) -> (FoundMap<'a>, ByEpisode<'a>) {
    let mut found: FoundMap = HashMap::new();
    let mut by_episode: ByEpisode = BTreeMap::new();
    for a in assignments {
        found
            .entry(a.key_event.as_str())
            .or_default()
            .entry((a.doc_id, a.seg_idx))
            .or_default();
        if a.trial == options.trial {
            by_episode
                .entry((a.key_event.as_str(), a.episode_id))
                .or_default()
                .push(a);
        }
    }
    let by_episode: ByEpisode = by_episode
        .into_iter()
        .map(|(k, segs)| (k, ordered(segs, options.order)))
        .collect();
    for ((event, _), segs) in &by_episode {
        let slots = found.get_mut(event).expect("filled above");
        // More than are shown: near-copies among them are folded into one
        // (`view::distinct_top`).
        for a in segs
            .iter()
            .take(options.top_segments.saturating_mul(CANDIDATES))
        {
            slots
                .get_mut(&(a.doc_id, a.seg_idx))
                .expect("filled above")
                .shown = true;
        }
    }
    (found, by_episode)
}

/// Reads the corpus one row group at a time: keeps each event's segment count, theme and
/// segments per day, and fills the slots of the assigned segments (their dates, and the shown
/// ones whole).
pub(super) async fn read_corpus(
    corpus: &Location,
    found: &mut FoundMap<'_>,
) -> Result<BTreeMap<String, CorpusEvent>, ReportError> {
    let mut per_event: BTreeMap<String, CorpusEvent> = BTreeMap::new();
    let mut articles: BTreeMap<String, std::collections::HashSet<u32>> = BTreeMap::new();
    for (name, groups) in crate::corpus::segment_files(corpus).await? {
        for group in 0..groups {
            for s in crate::corpus::read_row_group(corpus, &name, group).await? {
                let event = match per_event.get_mut(s.key_event.as_str()) {
                    Some(e) => e,
                    None => per_event.entry(s.key_event.clone()).or_insert((
                        0,
                        s.theme.clone(),
                        BTreeMap::new(),
                        0,
                    )),
                };
                event.0 += 1;
                match articles.get_mut(s.key_event.as_str()) {
                    Some(docs) => {
                        docs.insert(s.doc_id);
                    }
                    None => {
                        articles.insert(s.key_event.clone(), [s.doc_id].into());
                    }
                }
                if let Some(d) = s.doc_date {
                    *event.2.entry(d).or_default() += 1;
                }
                if let Some(slot) = found
                    .get_mut(s.key_event.as_str())
                    .and_then(|m| m.get_mut(&(s.doc_id, s.seg_idx)))
                {
                    slot.date = Some(s.doc_date);
                    if slot.shown {
                        slot.segment = Some(s);
                    }
                }
            }
        }
    }
    for (event, docs) in articles {
        if let Some(e) = per_event.get_mut(&event) {
            e.3 = docs.len();
        }
    }
    Ok(per_event)
}
