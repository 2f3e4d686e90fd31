//! `epimine eval`: k-prec, k-recall and k-F1 of detected episodes against gold labels
//! (paper appendix C; docs/method.md §7).
//!
//! For one key event with N described gold episodes:
//! - a detected episode *counts* when it has at least k segments;
//! - its top k segments are its k segments of lowest `rank`;
//! - a gold episode G is *hit* when some counted episode has more than k/2 of its top k segments
//!   labelled G; each G is hit at most once;
//! - k-prec = hits / counted episodes (0 when none counts), k-recall = hits / N,
//!   k-F1 = 2·p·r / (p + r) (0 when both are 0).
//!
//! A label that is not a single described episode id (`M`, `X`, `1,2,3`, an undescribed id) and a
//! segment without a label never hit anything. Themes report the mean of their events' figures,
//! and all events together the mean with a bootstrap 90% interval over events ([`interval`]).
//! Events without gold episodes cannot be scored and are listed as skipped.
//!
//! Beside the paper's figures, each event says how its gold episodes are covered beyond hits
//! (split over several episodes, absorbed into others: [`granularity`]) and, label-free, how
//! much its episodes' names overlap (when the run has `episodes.parquet`).

pub mod granularity;
pub mod interval;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Serialize;

use crate::storage::{Location, StorageError};
use crate::tables::{Assignment, Episode, GoldEpisode, Label, Segment, Table};

/// The paper's k.
pub const DEFAULT_K: usize = 5;

/// Errors of `epimine eval`.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// Reading a table failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// k must be at least 1.
    #[error("k must be at least 1")]
    ZeroK,
    /// The run folder is not one whole committed run.
    #[error(transparent)]
    NotCommitted(#[from] crate::run_folder::commit::CommitError),
    /// The corpus's segments share keys.
    #[error(transparent)]
    Corpus(#[from] crate::corpus::CorpusError),
    /// Labels name segments the corpus does not hold: they belong to another import.
    #[error("{labels}: {missing} of {total} labels name a segment that the corpus {segments} does not hold, e.g. (key_event `{key_event}`, doc_id {doc_id}, seg_idx {seg_idx}): the labels belong to another import of the corpus; import it again (into an empty folder)")]
    StaleLabels {
        /// The labels file.
        labels: String,
        /// The segments file.
        segments: String,
        /// Labels whose segment is not there.
        missing: usize,
        /// Labels.
        total: usize,
        /// The first such label's event,
        key_event: String,
        /// article,
        doc_id: u32,
        /// and segment.
        seg_idx: u32,
    },
    /// The corpus has no labels to score against.
    #[error("{0}: no labels.parquet, so nothing to score against: `epimine eval` needs a labelled corpus (`epimine import <DATASET_DIR>` of a folder with groundtruth.tsv and episodes.tsv, or `epimine synth`); a corpus from `import --articles` has none. To read a run of your own articles, use `epimine report` or its episode_articles.parquet")]
    NoLabels(String),
    /// An assignment names a segment that is not in the corpus.
    #[error("{file}: row {row}: segment (key_event `{key_event}`, doc_id {doc_id}, seg_idx {seg_idx}) is not in the corpus")]
    UnknownSegment {
        /// The assignments file.
        file: String,
        /// 0-based row.
        row: usize,
        /// Event.
        key_event: String,
        /// Article.
        doc_id: u32,
        /// Segment.
        seg_idx: u32,
    },
}

/// (rank, doc_id, seg_idx) of an assigned segment.
type RankedSegment = (u32, u32, u32);

/// An event's detected episodes: (trial, episode) → its segments.
type Episodes = BTreeMap<(u32, u32), Vec<RankedSegment>>;

/// One key event's scores.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EventScore {
    /// The key event.
    pub key_event: String,
    /// Its theme.
    pub theme: Option<String>,
    /// k-precision in [0, 1] (the mean over trials).
    pub k_prec: f64,
    /// k-recall in [0, 1] (the mean over trials).
    pub k_recall: f64,
    /// k-F1 in [0, 1] (the mean over trials).
    pub k_f1: f64,
    /// Detected episodes with at least k segments (summed over trials).
    pub counted: usize,
    /// Gold episodes hit (summed over trials).
    pub hits: usize,
    /// Gold episodes described (N).
    pub gold: usize,
    /// Estimation trials in the run (the `trial` column; 1 without an LLM).
    pub trials: usize,
    /// Gold episodes that two or more episodes are about ([`granularity`]; summed over trials).
    pub split: usize,
    /// Gold episodes with labelled segments that no episode is about (summed over trials).
    pub absorbed: usize,
    /// The mean Jaccard overlap of the first five keywords of each pair of its episodes (trial
    /// 0; [`granularity::name_overlap`]); `None` when the run has no `episodes.parquet` (a
    /// peer's) or fewer than two episodes.
    pub name_overlap: Option<f64>,
}

/// All scored events together: the per-event means.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AllScore {
    /// Mean k-precision of the events.
    pub k_prec: f64,
    /// Mean k-recall.
    pub k_recall: f64,
    /// Mean k-F1.
    pub k_f1: f64,
    /// The bootstrap 90% interval of the mean k-F1 over events ([`interval::bootstrap_90`]).
    pub k_f1_interval: (f64, f64),
    /// Events averaged.
    pub events: usize,
}

/// A theme's mean scores.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ThemeScore {
    /// The theme.
    pub theme: Option<String>,
    /// Mean k-precision of its events.
    pub k_prec: f64,
    /// Mean k-recall.
    pub k_recall: f64,
    /// Mean k-F1.
    pub k_f1: f64,
    /// Events averaged.
    pub events: usize,
}

/// An event that could not be scored.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Skipped {
    /// The key event.
    pub key_event: String,
    /// Why.
    pub reason: String,
}

/// The whole evaluation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// k.
    pub k: usize,
    /// Per event, ordered by key_event.
    pub events: Vec<EventScore>,
    /// Per theme, ordered by theme (no theme first).
    pub themes: Vec<ThemeScore>,
    /// All scored events together (`None` when none was).
    pub all: Option<AllScore>,
    /// Events not scored.
    pub skipped: Vec<Skipped>,
}

/// Scores one key event.
///
/// `episodes` maps each detected episode to its segments in rank order; `labels` maps a segment
/// (doc_id, seg_idx) to its label; `gold` holds the described episode ids.
pub fn score_event(
    k: usize,
    episodes: &[Vec<(u32, u32)>],
    labels: &HashMap<(u32, u32), &str>,
    gold: &BTreeSet<u32>,
) -> (usize, usize) {
    let mut hit: BTreeSet<u32> = BTreeSet::new();
    let mut counted = 0;
    for segments in episodes.iter().filter(|s| s.len() >= k) {
        counted += 1;
        let mut votes: BTreeMap<u32, usize> = BTreeMap::new();
        for seg in &segments[..k] {
            let id = labels
                .get(seg)
                .and_then(|l| l.parse::<u32>().ok())
                .filter(|id| gold.contains(id));
            if let Some(id) = id {
                *votes.entry(id).or_default() += 1;
            }
        }
        // More than k/2 votes: at most one gold episode can have them.
        if let Some((&id, _)) = votes.iter().find(|(_, &n)| 2 * n > k) {
            hit.insert(id);
        }
    }
    (counted, hit.len())
}

fn ratio(a: usize, b: usize) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

fn f1(p: f64, r: f64) -> f64 {
    if p + r == 0.0 {
        0.0
    } else {
        2.0 * p * r / (p + r)
    }
}

/// Evaluates assignments against a corpus's labels and gold episodes.
///
/// `events` lists the corpus's key events with their themes; `file` names the assignments for
/// error messages.
pub fn evaluate(
    k: usize,
    events: &BTreeMap<String, Option<String>>,
    segments: &BTreeSet<(&str, u32, u32)>,
    labels: &[Label],
    gold: &[GoldEpisode],
    assignments: &[Assignment],
    file: &str,
) -> Result<Report, EvalError> {
    if k == 0 {
        return Err(EvalError::ZeroK);
    }
    let mut gold_ids: HashMap<&str, BTreeSet<u32>> = HashMap::new();
    for g in gold {
        gold_ids
            .entry(g.key_event.as_str())
            .or_default()
            .insert(g.episode_id);
    }
    let mut event_labels: HashMap<&str, HashMap<(u32, u32), &str>> = HashMap::new();
    for l in labels {
        event_labels
            .entry(l.key_event.as_str())
            .or_default()
            .insert((l.doc_id, l.seg_idx), l.label.as_str());
    }
    let (detected, trials) = detected_episodes(segments, assignments, file)?;
    // Every trial of the run counts, also one where an event has no episodes; an event's
    // figures are the mean over trials (the paper's protocol).
    let trials: Vec<u32> = if trials.is_empty() {
        vec![0]
    } else {
        trials.into_iter().collect()
    };
    let empty_labels = HashMap::new();
    let mut scores = Vec::new();
    let mut skipped = Vec::new();
    for (key_event, theme) in events {
        let Some(gold) = gold_ids.get(key_event.as_str()) else {
            skipped.push(Skipped {
                key_event: key_event.clone(),
                reason: "no gold episodes".into(),
            });
            continue;
        };
        let labels = event_labels
            .get(key_event.as_str())
            .unwrap_or(&empty_labels);
        let episodes = detected.get(key_event.as_str());
        scores.push(event_score(
            k, key_event, theme, &trials, episodes, labels, gold,
        ));
    }
    let themes = theme_means(&scores);
    let all = all_mean(&scores);
    Ok(Report {
        k,
        events: scores,
        themes,
        all,
        skipped,
    })
}

/// A run's episodes by event: (trial, episode) → its segments as (rank, doc_id, seg_idx), and
/// the run's trials. A row naming a segment the corpus does not have is an error naming its row.
fn detected_episodes<'a>(
    segments: &BTreeSet<(&str, u32, u32)>,
    assignments: &'a [Assignment],
    file: &str,
) -> Result<(HashMap<&'a str, Episodes>, BTreeSet<u32>), EvalError> {
    let mut detected: HashMap<&str, Episodes> = HashMap::new();
    let mut trials: BTreeSet<u32> = BTreeSet::new();
    for (row, a) in assignments.iter().enumerate() {
        if !segments.contains(&(a.key_event.as_str(), a.doc_id, a.seg_idx)) {
            return Err(EvalError::UnknownSegment {
                file: file.to_string(),
                row,
                key_event: a.key_event.clone(),
                doc_id: a.doc_id,
                seg_idx: a.seg_idx,
            });
        }
        detected
            .entry(a.key_event.as_str())
            .or_default()
            .entry((a.trial, a.episode_id))
            .or_default()
            .push((a.rank, a.doc_id, a.seg_idx));
        trials.insert(a.trial);
    }
    Ok((detected, trials))
}

/// One event's k-precision, k-recall and k-F1: the mean over `trials` of each trial's figures
/// ([`score_event`] over its episodes, each in rank order).
fn event_score(
    k: usize,
    key_event: &str,
    theme: &Option<String>,
    trials: &[u32],
    episodes: Option<&Episodes>,
    labels: &HashMap<(u32, u32), &str>,
    gold: &BTreeSet<u32>,
) -> EventScore {
    let mut score = EventScore {
        key_event: key_event.to_string(),
        theme: theme.clone(),
        k_prec: 0.0,
        k_recall: 0.0,
        k_f1: 0.0,
        counted: 0,
        hits: 0,
        gold: gold.len(),
        trials: trials.len(),
        split: 0,
        absorbed: 0,
        name_overlap: None,
    };
    let n = trials.len() as f64;
    for &trial in trials {
        let episodes: Vec<Vec<(u32, u32)>> = episodes
            .map(|eps| {
                eps.range((trial, 0)..=(trial, u32::MAX))
                    .map(|(_, segs)| {
                        let mut segs = segs.clone();
                        segs.sort_unstable();
                        segs.into_iter().map(|(_, d, s)| (d, s)).collect()
                    })
                    .collect()
            })
            .unwrap_or_default();
        let (counted, hits) = score_event(k, &episodes, labels, gold);
        let (p, r) = (ratio(hits, counted), ratio(hits, gold.len()));
        score.k_prec += p / n;
        score.k_recall += r / n;
        score.k_f1 += f1(p, r) / n;
        score.counted += counted;
        score.hits += hits;
        let (split, absorbed) = granularity::split_and_absorbed(&episodes, labels, gold);
        score.split += split;
        score.absorbed += absorbed;
    }
    score
}

/// The per-event means of all the events' scores, with the interval of the mean k-F1.
fn all_mean(scores: &[EventScore]) -> Option<AllScore> {
    let f1s: Vec<f64> = scores.iter().map(|e| e.k_f1).collect();
    let k_f1_interval = interval::bootstrap_90(&f1s)?;
    let n = scores.len() as f64;
    Some(AllScore {
        k_prec: scores.iter().map(|e| e.k_prec).sum::<f64>() / n,
        k_recall: scores.iter().map(|e| e.k_recall).sum::<f64>() / n,
        k_f1: f1s.iter().sum::<f64>() / n,
        k_f1_interval,
        events: scores.len(),
    })
}

/// Each event's [`EventScore::name_overlap`] from the run's episodes (trial 0).
fn name_overlaps(report: &mut Report, episodes: &[Episode]) {
    let mut by_event: BTreeMap<&str, Vec<&[String]>> = BTreeMap::new();
    for e in episodes.iter().filter(|e| e.trial == 0) {
        by_event
            .entry(e.key_event.as_str())
            .or_default()
            .push(&e.keywords);
    }
    for score in &mut report.events {
        score.name_overlap = by_event
            .get(score.key_event.as_str())
            .and_then(|k| granularity::name_overlap(k, NAME_KEYWORDS));
    }
}

/// The keywords of an episode's name that [`EventScore::name_overlap`] compares.
const NAME_KEYWORDS: usize = 5;

/// The per-theme means of the events' scores, themes in order.
fn theme_means(scores: &[EventScore]) -> Vec<ThemeScore> {
    let mut by_theme: BTreeMap<Option<String>, Vec<&EventScore>> = BTreeMap::new();
    for s in scores {
        by_theme.entry(s.theme.clone()).or_default().push(s);
    }
    by_theme
        .into_iter()
        .map(|(theme, events)| {
            let mean = |f: fn(&EventScore) -> f64| {
                events.iter().map(|e| f(e)).sum::<f64>() / events.len() as f64
            };
            ThemeScore {
                theme,
                k_prec: mean(|e| e.k_prec),
                k_recall: mean(|e| e.k_recall),
                k_f1: mean(|e| e.k_f1),
                events: events.len(),
            }
        })
        .collect()
}

/// `epimine eval`: reads the corpus's tables and `<run>/assignments.parquet`, and scores them.
///
/// A folder written by `epimine run` is read only when it is committed: its `run.json` is there
/// and every file it lists matches its sha256 (`crate::run_folder::commit::verify`). Tables written by
/// other commands (no `run.json`, `job.toml` or checkpoints: `epimine baseline kmeans`) are read
/// as they are; one that lacks the nullable id columns (`stable_id`, `status`: a peer's, as
/// `../shared/peers/bertopic_run.py` writes it) is read with those columns null.
pub async fn eval(corpus: &Location, run: &Location, k: usize) -> Result<Report, EvalError> {
    if crate::run_folder::commit::verify(run).await? == crate::run_folder::commit::Verified::NotARun
    {
        tracing::info!(
            "{}: no run.json; reading its assignments as they are",
            run.display()
        );
    }
    if !corpus.exists(&Label::file_name()).await? {
        return Err(EvalError::NoLabels(corpus.display().to_string()));
    }
    let segments: Vec<Segment> = crate::corpus::read_segments(corpus).await?;
    let labels: Vec<Label> = corpus.read_table().await?;
    let gold: Vec<GoldEpisode> = corpus.read_table().await?;
    // A peer's table (no run.json) may lack the nullable id columns (`stable_id`, `status`).
    let tables = crate::run_folder::versions::tables_of(run).await;
    let assignments: Vec<Assignment> = tables.read_table_filling().await?;
    let events: BTreeMap<String, Option<String>> = segments
        .iter()
        .map(|s| (s.key_event.clone(), s.theme.clone()))
        .collect();
    let keys: BTreeSet<(&str, u32, u32)> = segments
        .iter()
        .map(|s| (s.key_event.as_str(), s.doc_id, s.seg_idx))
        .collect();
    check_labels(
        &keys,
        &labels,
        &corpus.display_child(&Label::file_name()),
        corpus.display(),
    )?;
    let file = run.display_child("assignments.parquet");
    let mut report = evaluate(k, &events, &keys, &labels, &gold, &assignments, &file)?;
    if tables.exists(&Episode::file_name()).await? {
        let episodes: Vec<Episode> = tables.read_table_filling().await?;
        name_overlaps(&mut report, &episodes);
    }
    Ok(report)
}

/// Refuses labels of which some name a segment the corpus does not hold (labels of an earlier
/// import, or of another corpus): scores against them would be wrong, not low.
pub fn check_labels(
    segments: &BTreeSet<(&str, u32, u32)>,
    labels: &[Label],
    labels_file: &str,
    segments_file: &str,
) -> Result<(), EvalError> {
    let mut stale = labels
        .iter()
        .filter(|l| !segments.contains(&(l.key_event.as_str(), l.doc_id, l.seg_idx)));
    let Some(first) = stale.next() else {
        return Ok(());
    };
    Err(EvalError::StaleLabels {
        labels: labels_file.to_string(),
        segments: segments_file.to_string(),
        missing: 1 + stale.count(),
        total: labels.len(),
        key_event: first.key_event.clone(),
        doc_id: first.doc_id,
        seg_idx: first.seg_idx,
    })
}

/// The report as a readable table, figures ×100 as in the paper.
pub fn format_report(report: &Report) -> String {
    let k = report.k;
    let theme = |t: &Option<String>| t.clone().unwrap_or_else(|| "-".into());
    let mut out = format!(
        "{:<20} {:<28} {:>8} {:>8} {:>8} {:>7} {:>4} {:>4} {:>5} {:>8} {:>5}\n",
        "theme",
        "key_event",
        format!("{k}-prec"),
        format!("{k}-rec"),
        format!("{k}-F1"),
        "counted",
        "hits",
        "gold",
        "split",
        "absorbed",
        "names"
    );
    for e in &report.events {
        let names = e
            .name_overlap
            .map_or_else(|| "-".to_string(), |o| format!("{o:.2}"));
        out.push_str(&format!(
            "{:<20} {:<28} {:>8.2} {:>8.2} {:>8.2} {:>7} {:>4} {:>4} {:>5} {:>8} {:>5}\n",
            theme(&e.theme),
            e.key_event,
            100.0 * e.k_prec,
            100.0 * e.k_recall,
            100.0 * e.k_f1,
            e.counted,
            e.hits,
            e.gold,
            e.split,
            e.absorbed,
            names
        ));
    }
    out.push('\n');
    out.push_str(&format!(
        "{:<20} {:>8} {:>8} {:>8} {:>7}\n",
        "theme (mean)",
        format!("{k}-prec"),
        format!("{k}-rec"),
        format!("{k}-F1"),
        "events"
    ));
    for t in &report.themes {
        out.push_str(&format!(
            "{:<20} {:>8.2} {:>8.2} {:>8.2} {:>7}\n",
            theme(&t.theme),
            100.0 * t.k_prec,
            100.0 * t.k_recall,
            100.0 * t.k_f1,
            t.events
        ));
    }
    if let Some(a) = &report.all {
        out.push_str(&format!(
            "{:<20} {:>8.2} {:>8.2} {:>8.2} {:>7}   {k}-F1 90% interval over events (bootstrap): {:.2}–{:.2}\n",
            "all",
            100.0 * a.k_prec,
            100.0 * a.k_recall,
            100.0 * a.k_f1,
            a.events,
            100.0 * a.k_f1_interval.0,
            100.0 * a.k_f1_interval.1
        ));
    }
    out.push_str(
        "split: gold episodes two or more episodes are about; absorbed: those none is about; names: mean keyword overlap of the event's episodes (0–1)\n",
    );
    for s in &report.skipped {
        out.push_str(&format!("skipped {}: {}\n", s.key_event, s.reason));
    }
    out
}
