//! One event's files parsed into rows (no I/O): segments and articles, dates, labels joined
//! by text, gold episodes.

use std::collections::{BTreeMap, HashMap};

use super::error::ImportError;
use super::files::{EventFiles, DATES_FILE, EPISODES_FILE, GROUNDTRUTH_FILE, SEGMENTS_FILE};
use crate::tables::{GoldEpisode, Label, Segment};

/// The lines of a text file with their 1-based numbers; a `\r` before `\n` and a leading BOM
/// are dropped; invalid UTF-8 is an error naming the line; C0 control characters other than
/// tab, and DEL, are removed ([`crate::import::segment::strip_controls`]), with a warning naming the file, how many,
/// and the first line.
pub(super) fn lines<'a>(
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

pub(super) fn valid_label(label: &str) -> bool {
    label == "M"
        || label == "X"
        || (!label.is_empty()
            && label
                .split(',')
                .all(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit())))
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
pub(super) fn file_name(files: &EventFiles, file: &str) -> String {
    format!("{}/{}", files.dir, file)
}

/// Segments and articles: one segment a line, a blank line ends an article.
pub(super) fn read_segments(files: &EventFiles) -> Result<Vec<Segment>, ImportError> {
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
pub(super) fn set_dates(
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
pub(super) fn join_labels(
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
pub(super) fn read_gold(
    files: &EventFiles,
    data: &[u8],
) -> Result<BTreeMap<u32, String>, ImportError> {
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
pub(super) fn warn_unknown_label_ids(
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
