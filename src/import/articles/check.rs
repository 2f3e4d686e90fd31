//! One row checked: its cells become an [`Article`] (key event, id, publication time, title,
//! text) or a [`RowError`](super::error::RowError) naming the column.

use super::error::{ArticlesError, RowError};
use super::read::{Cell, RawRow, FIELDS};

/// A checked article.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Article {
    /// Key event.
    pub key_event: String,
    /// Theme.
    pub theme: Option<String>,
    /// Source id.
    pub id: String,
    /// Publication time, seconds since 1970-01-01 UTC.
    pub published: Option<i64>,
    /// Title.
    pub title: Option<String>,
    /// Body.
    pub text: String,
    /// Where it came from (file, row) for messages.
    pub origin: (usize, usize),
}

/// Seconds since 1970-01-01 UTC of an ISO 8601 date or date-time, or of Unix seconds written as
/// digits.
pub fn parse_time(text: &str) -> Option<i64> {
    let t = text.trim();
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit())
        || t.starts_with('-') && t[1..].bytes().all(|b| b.is_ascii_digit()) && t.len() > 1
    {
        return t.parse().ok();
    }
    if let Ok(dt) = chrono::DateTime::parse_from_rfc3339(t) {
        return Some(dt.timestamp());
    }
    for f in [
        "%Y-%m-%dT%H:%M:%S%.f%:z",
        "%Y-%m-%d %H:%M:%S%.f%:z",
        "%Y-%m-%dT%H:%M%:z",
    ] {
        if let Ok(dt) = chrono::DateTime::parse_from_str(t, f) {
            return Some(dt.timestamp());
        }
    }
    for f in [
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%dT%H:%M",
    ] {
        if let Ok(dt) = chrono::NaiveDateTime::parse_from_str(t, f) {
            return Some(dt.and_utc().timestamp());
        }
    }
    let date = chrono::NaiveDate::parse_from_str(t, "%Y-%m-%d").ok()?;
    Some(date.and_hms_opt(0, 0, 0)?.and_utc().timestamp())
}

/// Checks one row's cells into an article.
pub(super) fn check_row(
    file_idx: usize,
    row: usize,
    cells: &RawRow,
) -> Result<Article, (Option<&'static str>, String)> {
    let text_of = |k: usize,
                   required: bool|
     -> Result<Option<String>, (Option<&'static str>, String)> {
        match &cells[k] {
            Cell::Null => {
                if required {
                    Err((Some(FIELDS[k]), "empty".into()))
                } else {
                    Ok(None)
                }
            }
            Cell::Str(s) if s.trim().is_empty() => {
                if required {
                    Err((Some(FIELDS[k]), "empty".into()))
                } else {
                    Ok(None)
                }
            }
            Cell::Str(s) => Ok(Some(s.trim().to_string())),
            Cell::Int(i) if FIELDS[k] == "id" => Ok(Some(i.to_string())),
            Cell::BadUtf8 => Err((Some(FIELDS[k]), "invalid UTF-8".into())),
            Cell::Int(i) | Cell::Time(i) => Err((
                Some(FIELDS[k]),
                format!("expected a string, found the number {i}"),
            )),
            Cell::Other(what) => Err((Some(FIELDS[k]), format!("expected a string, found {what}"))),
        }
    };
    let key_event = text_of(0, true)?.unwrap_or_default();
    let id = text_of(1, true)?.unwrap_or_default();
    let published = match &cells[2] {
        Cell::Null => None,
        Cell::Str(s) if s.trim().is_empty() => None,
        Cell::Str(s) => Some(parse_time(s).ok_or_else(|| {
            (
                Some("published"),
                format!("`{s}` is not a date (expected ISO 8601, e.g. 2021-01-06 or 2021-01-06T14:30:00Z, or Unix seconds)"),
            )
        })?),
        Cell::Int(i) | Cell::Time(i) => Some(*i),
        Cell::BadUtf8 => return Err((Some("published"), "invalid UTF-8".into())),
        Cell::Other(what) => {
            return Err((Some("published"), format!("expected a date or Unix seconds, found {what}")))
        }
    };
    if published.is_some_and(|t| {
        chrono::DateTime::from_timestamp(t, 0).is_none()
            || i32::try_from(t.div_euclid(86_400)).is_err()
    }) {
        return Err((Some("published"), "out of the range of dates".into()));
    }
    let title = text_of(3, false)?;
    let text = match &cells[4] {
        Cell::Str(s) if !s.trim().is_empty() => s.clone(),
        _ => text_of(4, true)?.unwrap_or_default(),
    };
    let theme = text_of(5, false)?;
    Ok(Article {
        key_event,
        theme,
        id,
        published,
        title,
        text,
        origin: (file_idx, row),
    })
}

/// The error of `--on-error fail` listing the bad rows (the first 20, and how many more).
pub(super) fn bad_rows(errors: &mut [RowError]) -> ArticlesError {
    errors.sort_by(|a, b| (&a.file, a.row).cmp(&(&b.file, b.row)));
    let shown = 20;
    let mut listed: Vec<String> = errors.iter().take(shown).map(|e| e.to_string()).collect();
    if errors.len() > shown {
        listed.push(format!("… and {} more", errors.len() - shown));
    }
    ArticlesError::BadRows {
        count: errors.len(),
        listed: listed.join("\n"),
    }
}
