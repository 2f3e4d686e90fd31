//! `epimine import`: reads a dataset laid out as `<theme>/<event>/segments.txt` (+ `doc_dates.txt`,
//! `groundtruth.tsv`, `episodes.tsv`) and writes the `segments`, `labels` and `gold_episodes`
//! tables (ALGORITHM.md §0).
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

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::storage::{Location, StorageError};
use crate::tables::{GoldEpisode, Label, Segment};

/// File names of the dataset layout.
pub const SEGMENTS_FILE: &str = "segments.txt";
/// Dates, one per article.
pub const DATES_FILE: &str = "doc_dates.txt";
/// Segment labels.
pub const GROUNDTRUTH_FILE: &str = "groundtruth.tsv";
/// Gold episode descriptions.
pub const EPISODES_FILE: &str = "episodes.tsv";

/// Errors of `epimine import`. Each names the file and, where there is one, the 1-based line.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// Reading or writing failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// No `segments.txt` below the dataset folder.
    #[error("{dir}: no `{SEGMENTS_FILE}` found below this folder (expected <theme>/<event>/{SEGMENTS_FILE})")]
    NoEvents {
        /// The dataset folder.
        dir: String,
    },
    /// A line is not valid UTF-8.
    #[error("{file}:{line}: invalid UTF-8")]
    Utf8 {
        /// The file.
        file: String,
        /// 1-based line.
        line: usize,
    },
    /// An event has no segments.
    #[error("{file}: no segments (every line is blank)")]
    NoSegments {
        /// The segments file.
        file: String,
    },
    /// The dates file and the segments file disagree on the number of articles.
    #[error("{dates_file}: {dates} dates, but {segments_file} has {articles} articles (one date per article expected)")]
    DateCount {
        /// The dates file.
        dates_file: String,
        /// Dates found.
        dates: usize,
        /// The segments file.
        segments_file: String,
        /// Articles found.
        articles: usize,
    },
    /// A date could not be read.
    #[error("{file}:{line}: `{text}` is not a date (expected M/D/YYYY or YYYY-MM-DD)")]
    BadDate {
        /// The file.
        file: String,
        /// 1-based line.
        line: usize,
        /// The offending text.
        text: String,
    },
    /// A label line is malformed.
    #[error("{file}:{line}: {reason}")]
    BadLabel {
        /// The file.
        file: String,
        /// 1-based line.
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// A gold episode line is malformed.
    #[error("{file}:{line}: {reason}")]
    BadEpisode {
        /// The file.
        file: String,
        /// 1-based line.
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// Two folders carry the same event name.
    #[error("key event `{key_event}` appears twice: {first} and {second}")]
    DuplicateEvent {
        /// The name.
        key_event: String,
        /// First folder.
        first: String,
        /// Second folder.
        second: String,
    },
}

/// What was imported for one key event.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct EventSummary {
    /// The key event.
    pub key_event: String,
    /// Its theme, if any.
    pub theme: Option<String>,
    /// Articles.
    pub articles: usize,
    /// Segments.
    pub segments: usize,
    /// Segments that received a label.
    pub labels: usize,
    /// Label lines whose text matched no remaining segment.
    pub unmatched_labels: usize,
    /// Label lines naming an id that `episodes.tsv` does not describe (a warning per id names
    /// the file, its first line and the count).
    pub unknown_label_ids: usize,
    /// Gold episodes described.
    pub gold_episodes: usize,
    /// Whether article dates were given.
    pub dated: bool,
}

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

/// The raw files of one event.
#[derive(Debug, Clone)]
pub struct EventFiles {
    /// The key event (folder name).
    pub key_event: String,
    /// The theme, if any.
    pub theme: Option<String>,
    /// How to name the event's folder in messages.
    pub dir: String,
    /// `segments.txt`.
    pub segments: Vec<u8>,
    /// `doc_dates.txt`, if present.
    pub dates: Option<Vec<u8>>,
    /// `groundtruth.tsv`, if present.
    pub groundtruth: Option<Vec<u8>>,
    /// `episodes.tsv`, if present.
    pub episodes: Option<Vec<u8>>,
}

/// The lines of a text file with their 1-based numbers; a `\r` before `\n` and a leading BOM
/// are dropped; invalid UTF-8 is an error naming the line; C0 control characters other than
/// tab, and DEL, are removed ([`crate::import::segment::strip_controls`]), with a warning naming the file, how many,
/// and the first line.
fn lines<'a>(
    file: &str,
    data: &'a [u8],
) -> Result<Vec<(usize, std::borrow::Cow<'a, str>)>, ImportError> {
    let data = data.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(data);
    let mut out = Vec::new();
    let mut stripped = 0;
    let mut first_line = 0;
    let mut pieces = data.split(|&b| b == b'\n').peekable();
    let mut number = 0;
    while let Some(raw) = pieces.next() {
        number += 1;
        if raw.is_empty() && pieces.peek().is_none() {
            break; // the newline that ends the file
        }
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        let text = std::str::from_utf8(raw).map_err(|_| ImportError::Utf8 {
            file: file.to_string(),
            line: number,
        })?;
        let (text, n) = crate::import::segment::strip_controls(text);
        if n > 0 && stripped == 0 {
            first_line = number;
        }
        stripped += n;
        out.push((number, text));
    }
    if stripped > 0 {
        tracing::warn!(
            "{file}:{first_line}: removed {stripped} control character(s) from this file (the \
             first on this line)"
        );
    }
    Ok(out)
}

/// Days since 1970-01-01 of `M/D/YYYY` or `YYYY-MM-DD`.
pub fn parse_date(text: &str) -> Option<i32> {
    let text = text.trim();
    let date = if text.contains('/') {
        chrono::NaiveDate::parse_from_str(text, "%m/%d/%Y").ok()?
    } else {
        chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d").ok()?
    };
    let epoch = chrono::NaiveDate::from_ymd_opt(1970, 1, 1)?;
    i32::try_from((date - epoch).num_days()).ok()
}

fn valid_label(label: &str) -> bool {
    label == "M"
        || label == "X"
        || (!label.is_empty()
            && label
                .split(',')
                .all(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit())))
}

/// The rows of one parsed event.
#[derive(Debug)]
pub struct ParsedEvent {
    /// Segments in (doc_id, seg_idx) order.
    pub segments: Vec<Segment>,
    /// Labels in the same order.
    pub labels: Vec<Label>,
    /// Gold episodes by id.
    pub gold_episodes: Vec<GoldEpisode>,
    /// Counts.
    pub summary: EventSummary,
}

/// Parses one event's files into rows (no I/O).
pub fn parse_event(files: &EventFiles) -> Result<ParsedEvent, ImportError> {
    let mut segments = read_segments(files)?;
    let articles = segments.last().map_or(0, |s| s.doc_id as usize + 1);
    if let Some(data) = &files.dates {
        set_dates(files, data, articles, &mut segments)?;
    }
    let (labels, label_lines, unmatched_labels) = match &files.groundtruth {
        Some(data) => join_labels(files, data, &segments)?,
        None => (Vec::new(), Vec::new(), 0),
    };
    let gold = match &files.episodes {
        Some(data) => read_gold(files, data)?,
        None => BTreeMap::new(),
    };
    let unknown_label_ids = if files.episodes.is_some() {
        warn_unknown_label_ids(files, &label_lines, &gold)
    } else {
        0
    };
    let gold: Vec<GoldEpisode> = gold
        .into_iter()
        .map(|(episode_id, description)| GoldEpisode {
            key_event: files.key_event.clone(),
            episode_id,
            description,
        })
        .collect();

    let summary = EventSummary {
        key_event: files.key_event.clone(),
        theme: files.theme.clone(),
        articles,
        segments: segments.len(),
        labels: labels.len(),
        unmatched_labels,
        unknown_label_ids,
        gold_episodes: gold.len(),
        dated: files.dates.is_some(),
    };
    Ok(ParsedEvent {
        segments,
        labels,
        gold_episodes: gold,
        summary,
    })
}

/// A file of the event's folder, as named in messages.
fn file_name(files: &EventFiles, file: &str) -> String {
    format!("{}/{}", files.dir, file)
}

/// Segments and articles: one segment a line, a blank line ends an article.
fn read_segments(files: &EventFiles) -> Result<Vec<Segment>, ImportError> {
    let seg_file = file_name(files, SEGMENTS_FILE);
    let mut segments: Vec<Segment> = Vec::new();
    let (mut doc_id, mut seg_idx) = (0u32, 0u32);
    for (_, text) in lines(&seg_file, &files.segments)? {
        if text.trim().is_empty() {
            if seg_idx > 0 {
                doc_id += 1;
                seg_idx = 0;
            }
            continue;
        }
        segments.push(Segment {
            key_event: files.key_event.clone(),
            theme: files.theme.clone(),
            doc_id,
            doc_date: None,
            seg_idx,
            text: text.to_string(),
            source_id: None,
            title: None,
        });
        seg_idx += 1;
    }
    if segments.is_empty() {
        return Err(ImportError::NoSegments { file: seg_file });
    }
    Ok(segments)
}

/// Dates: one a line, one per article.
fn set_dates(
    files: &EventFiles,
    data: &[u8],
    articles: usize,
    segments: &mut [Segment],
) -> Result<(), ImportError> {
    let file = file_name(files, DATES_FILE);
    let mut dates = Vec::new();
    for (line, text) in lines(&file, data)? {
        if text.trim().is_empty() {
            continue;
        }
        dates.push(parse_date(&text).ok_or_else(|| ImportError::BadDate {
            file: file.clone(),
            line,
            text: text.to_string(),
        })?);
    }
    if dates.len() != articles {
        return Err(ImportError::DateCount {
            dates_file: file,
            dates: dates.len(),
            segments_file: file_name(files, SEGMENTS_FILE),
            articles,
        });
    }
    for s in segments {
        s.doc_date = Some(dates[s.doc_id as usize]);
    }
    Ok(())
}

/// Labels, joined by exact text in order; with each joined label's line, and how many lines
/// matched no remaining segment.
#[allow(clippy::type_complexity)]
fn join_labels(
    files: &EventFiles,
    data: &[u8],
    segments: &[Segment],
) -> Result<(Vec<Label>, Vec<(String, usize)>, usize), ImportError> {
    let file = file_name(files, GROUNDTRUTH_FILE);
    let mut unmatched_labels = 0;
    let mut by_text: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, s) in segments.iter().enumerate() {
        by_text.entry(s.text.as_str()).or_default().push(i);
    }
    let mut taken = vec![false; segments.len()];
    let mut cursor = 0usize;
    let mut joined: Vec<(usize, String, usize)> = Vec::new();
    for (line, text) in lines(&file, data)? {
        if text.trim().is_empty() {
            continue;
        }
        let bad = |reason: String| ImportError::BadLabel {
            file: file.clone(),
            line,
            reason,
        };
        let (label, seg_text) = text
            .split_once('\t')
            .ok_or_else(|| bad("expected `LABEL<TAB>segment text`, found no tab".into()))?;
        let label = label.trim();
        if !valid_label(label) {
            return Err(bad(format!(
                "label `{label}` is not an episode id, a comma-separated list of ids, `M` or `X`"
            )));
        }
        let candidates = by_text.get(seg_text).map(Vec::as_slice).unwrap_or(&[]);
        let ahead = candidates
            .iter()
            .copied()
            .find(|&i| i >= cursor && !taken[i]);
        let any = || candidates.iter().copied().find(|&i| !taken[i]);
        match ahead.or_else(any) {
            Some(i) => {
                taken[i] = true;
                cursor = i + 1;
                joined.push((i, label.to_string(), line));
            }
            None => {
                unmatched_labels += 1;
                tracing::warn!(
                    "{file}:{line}: label text matches no remaining segment; not joined"
                );
            }
        }
    }
    joined.sort_by_key(|(i, _, _)| *i);
    let label_lines = joined
        .iter()
        .map(|(_, label, line)| (label.clone(), *line))
        .collect();
    let labels = joined
        .into_iter()
        .map(|(i, label, _)| Label {
            key_event: files.key_event.clone(),
            doc_id: segments[i].doc_id,
            seg_idx: segments[i].seg_idx,
            label,
        })
        .collect();
    Ok((labels, label_lines, unmatched_labels))
}

/// Gold episodes by id: `ID<TAB>description` a line.
fn read_gold(files: &EventFiles, data: &[u8]) -> Result<BTreeMap<u32, String>, ImportError> {
    let mut gold: BTreeMap<u32, String> = BTreeMap::new();
    let file = file_name(files, EPISODES_FILE);
    for (line, text) in lines(&file, data)? {
        if text.trim().is_empty() {
            continue;
        }
        let bad = |reason: String| ImportError::BadEpisode {
            file: file.clone(),
            line,
            reason,
        };
        let (id, description) = text
            .split_once('\t')
            .ok_or_else(|| bad("expected `ID<TAB>description`, found no tab".into()))?;
        let id: u32 = id.trim().parse().map_err(|_| {
            bad(format!(
                "episode id `{}` is not a non-negative integer",
                id.trim()
            ))
        })?;
        if gold.insert(id, description.trim().to_string()).is_some() {
            return Err(bad(format!("episode id {id} appears twice")));
        }
    }
    Ok(gold)
}

/// A label naming an episode that episodes.tsv does not describe: kept, but warned about, once
/// per id, at its first line. Returns how many label lines carry such ids.
fn warn_unknown_label_ids(
    files: &EventFiles,
    label_lines: &[(String, usize)],
    gold: &BTreeMap<u32, String>,
) -> usize {
    let mut unknown_label_ids = 0;
    let file = file_name(files, GROUNDTRUTH_FILE);
    let mut unknown: BTreeMap<u32, (usize, usize)> = BTreeMap::new();
    for (label, line) in label_lines {
        if label == "M" || label == "X" {
            continue;
        }
        for id in label.split(',').filter_map(|id| id.parse::<u32>().ok()) {
            if !gold.contains_key(&id) {
                let entry = unknown.entry(id).or_insert((*line, 0));
                entry.0 = entry.0.min(*line);
                entry.1 += 1;
            }
        }
    }
    for (id, (line, count)) in unknown {
        unknown_label_ids += count;
        tracing::warn!(
            "{file}:{line}: label id {id} is not in {} (kept as given; {count} label line(s) carry it)",
            file_name(files, EPISODES_FILE)
        );
    }
    unknown_label_ids
}

/// Finds every event folder below `src` and reads its files.
pub async fn read_event_files(src: &Location) -> Result<Vec<EventFiles>, ImportError> {
    let names = src.list().await?;
    let mut events: BTreeMap<String, EventFiles> = BTreeMap::new();
    for name in &names {
        let Some(dir) = name
            .strip_suffix(SEGMENTS_FILE)
            .filter(|d| d.is_empty() || d.ends_with('/'))
        else {
            continue;
        };
        let dir = dir.trim_end_matches('/');
        let mut parts: Vec<&str> = dir.split('/').filter(|p| !p.is_empty()).collect();
        let key_event = match parts.pop() {
            Some(event) => event.to_string(),
            // segments.txt right in the dataset folder: the folder itself is the event.
            None => src
                .display()
                .rsplit('/')
                .next()
                .filter(|n| !n.is_empty())
                .unwrap_or("event")
                .to_string(),
        };
        let theme = parts.pop().map(str::to_string);
        let child = |file: &str| {
            if dir.is_empty() {
                file.to_string()
            } else {
                format!("{dir}/{file}")
            }
        };
        let optional = |file: &str| {
            let path = child(file);
            names.binary_search(&path).is_ok().then_some(path)
        };
        let dir_display = if dir.is_empty() {
            src.display().to_string()
        } else {
            src.display_child(dir)
        };
        let mut files = EventFiles {
            key_event: key_event.clone(),
            theme,
            dir: dir_display,
            segments: src.get(&child(SEGMENTS_FILE)).await?.to_vec(),
            dates: None,
            groundtruth: None,
            episodes: None,
        };
        if let Some(p) = optional(DATES_FILE) {
            files.dates = Some(src.get(&p).await?.to_vec());
        }
        if let Some(p) = optional(GROUNDTRUTH_FILE) {
            files.groundtruth = Some(src.get(&p).await?.to_vec());
        }
        if let Some(p) = optional(EPISODES_FILE) {
            files.episodes = Some(src.get(&p).await?.to_vec());
        }
        if let Some(first) = events.get(&key_event) {
            return Err(ImportError::DuplicateEvent {
                key_event,
                first: first.dir.clone(),
                second: files.dir,
            });
        }
        events.insert(key_event, files);
    }
    if events.is_empty() {
        return Err(ImportError::NoEvents {
            dir: src.display().to_string(),
        });
    }
    for folder in skipped_folders(src, &names) {
        tracing::warn!(
            "{}: no {SEGMENTS_FILE} in this folder beside the events; skipped",
            src.display_child(&folder)
        );
    }
    Ok(events.into_values().collect())
}

/// The folders beside event folders (in the same theme folder) that hold no `segments.txt`:
/// empty ones (local folders only: an object store has no empty folders) and ones with other
/// files. Hidden folders (`.git`, …) are left out.
fn skipped_folders(src: &Location, names: &[String]) -> BTreeSet<String> {
    let event_dirs: BTreeSet<&str> = names
        .iter()
        .filter_map(|n| n.strip_suffix(SEGMENTS_FILE))
        .filter_map(|d| d.strip_suffix('/'))
        .filter(|d| !d.is_empty())
        .collect();
    // The folders that hold events ("" for the dataset folder itself).
    let parents: BTreeSet<&str> = event_dirs
        .iter()
        .map(|d| d.rsplit_once('/').map_or("", |(p, _)| p))
        .collect();
    let child = |parent: &str, name: &str| {
        if parent.is_empty() {
            name.to_string()
        } else {
            format!("{parent}/{name}")
        }
    };
    let mut skipped = BTreeSet::new();
    let mut consider = |parent: &str, name: &str| {
        let dir = child(parent, name);
        let has_events = event_dirs
            .iter()
            .any(|d| *d == dir || d.starts_with(&format!("{dir}/")));
        if !name.starts_with('.') && !has_events {
            skipped.insert(dir);
        }
    };
    for parent in &parents {
        let prefix = if parent.is_empty() {
            String::new()
        } else {
            format!("{parent}/")
        };
        for name in names {
            if let Some((folder, _)) = name
                .strip_prefix(&prefix)
                .and_then(|rest| rest.split_once('/'))
            {
                consider(parent, folder);
            }
        }
        if let Some(root) = src.local_path() {
            if let Ok(entries) = std::fs::read_dir(root.join(parent)) {
                for entry in entries.flatten() {
                    if entry.file_type().is_ok_and(|t| t.is_dir()) {
                        consider(parent, &entry.file_name().to_string_lossy());
                    }
                }
            }
        }
    }
    skipped
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
pub async fn import(src: &Location, out: &Location) -> Result<Vec<EventSummary>, ImportError> {
    let dataset = read_dataset(src).await?;
    write_corpus(out, &dataset).await?;
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
