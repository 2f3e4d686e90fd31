//! `epimine import`: reads a dataset laid out as `<theme>/<event>/segments.txt` (+ `doc_dates.txt`,
//! `groundtruth.tsv`, `episodes.tsv`) and writes the `segments`, `labels` and `gold_episodes`
//! tables (docs/method.md §0).
//!
//! Files:
//! - `segments.txt`: one segment a line; one or more blank lines end an article.
//! - `doc_dates.txt` (optional): one date a line (`M/D/YYYY` or `YYYY-MM-DD`), one per article.
//! - `groundtruth.tsv` (optional): `LABEL<TAB>segment text`; LABEL is an episode id, a
//!   comma-separated list of ids, `M` or `X`. Labels are joined to segments by exact text, in
//!   order: the n-th line goes to the first segment with its text after the segment the previous
//!   line went to (some files skip the tails of long articles, and a text can occur twice). A line
//!   whose text has no segment left is reported, not joined.
//! - `episodes.tsv` (optional): `id<TAB>description`, one gold episode a line.
//!
//! The folder that holds `segments.txt` names the key event; the folder above it, when it lies
//! inside the dataset folder, names the theme. Everything is parsed and checked before anything
//! is written.

mod error;
mod files;
mod find;
mod parse;

pub use error::ImportError;
pub use files::{EventFiles, DATES_FILE, EPISODES_FILE, GROUNDTRUTH_FILE, SEGMENTS_FILE};
pub use find::read_event_files;
pub use parse::{parse_date, parse_event, EventSummary, ParsedEvent};

use crate::storage::Location;
use crate::tables::{GoldEpisode, Label, Segment};

/// A parsed dataset, ready to be written.
#[derive(Debug, Default)]
pub struct Dataset {
    /// Segments, ordered by (key_event, doc_id, seg_idx).
    pub segments: Vec<Segment>,
    /// Labels, same order.
    pub labels: Vec<Label>,
    /// Gold episodes, ordered by (key_event, episode_id).
    pub gold_episodes: Vec<GoldEpisode>,
    /// One summary per event, ordered by key_event.
    pub events: Vec<EventSummary>,
}

/// Parses every event of a dataset folder.
pub async fn read_dataset(src: &Location) -> Result<Dataset, ImportError> {
    let mut dataset = Dataset::default();
    for files in read_event_files(src).await? {
        let event = parse_event(&files)?;
        dataset.segments.extend(event.segments);
        dataset.labels.extend(event.labels);
        dataset.gold_episodes.extend(event.gold_episodes);
        dataset.events.push(event.summary);
    }
    Ok(dataset)
}

/// Writes a dataset's three tables under `out`, each whole or not at all.
pub async fn write_corpus(out: &Location, dataset: &Dataset) -> Result<(), ImportError> {
    out.write_table(&dataset.segments).await?;
    out.write_table(&dataset.labels).await?;
    out.write_table(&dataset.gold_episodes).await?;
    Ok(())
}

/// `epimine import`: reads `src`, writes the corpus tables to `out`, returns per-event summaries.
/// The folder then holds this corpus whole: a folder with other segments files is refused
/// before anything is read, and a `rejected.parquet` of an earlier import is removed.
pub async fn import(src: &Location, out: &Location) -> Result<Vec<EventSummary>, ImportError> {
    crate::corpus::check_import_out(out).await?;
    let dataset = read_dataset(src).await?;
    write_corpus(out, &dataset).await?;
    crate::corpus::remove_stale_tables(
        out,
        &[
            "segments.parquet",
            "labels.parquet",
            "gold_episodes.parquet",
        ],
    )
    .await?;
    Ok(dataset.events)
}

/// The per-event counts as a readable table.
pub fn format_summary(events: &[EventSummary]) -> String {
    let mut out = format!(
        "{:<20} {:<28} {:>8} {:>8} {:>8} {:>9} {:>5}\n",
        "theme", "key_event", "articles", "segments", "labelled", "unmatched", "gold"
    );
    for e in events {
        out.push_str(&format!(
            "{:<20} {:<28} {:>8} {:>8} {:>8} {:>9} {:>5}\n",
            e.theme.as_deref().unwrap_or("-"),
            e.key_event,
            e.articles,
            e.segments,
            e.labels,
            e.unmatched_labels,
            e.gold_episodes
        ));
    }
    let total = |f: fn(&EventSummary) -> usize| events.iter().map(f).sum::<usize>();
    out.push_str(&format!(
        "{} events, {} articles, {} segments, {} labelled, {} gold episodes\n",
        events.len(),
        total(|e| e.articles),
        total(|e| e.segments),
        total(|e| e.labels),
        total(|e| e.gold_episodes)
    ));
    out
}
