//! `epimine import --articles`: a table of articles (one row an article: key event, id,
//! publication time, title, text) from Parquet, JSON Lines or CSV becomes the `segments` table.
//!
//! - Input: one file, or every file whose name starts with a prefix (`data/feed-` or
//!   `s3://bucket/feeds/2024-`; a folder means every file in it), local or on S3. The format
//!   comes from each file's extension (`.parquet`/`.pq`, `.jsonl`/`.ndjson`/`.json`, `.csv`).
//!   Or an Arrow table in memory ([`import_table`]: the Python package's pandas, polars or
//!   pyarrow tables), read as a Parquet file is.
//! - Columns are named by [`Columns`] (flags or the job's `[import]` section). `published`:
//!   ISO 8601 (a date, or a date-time with an offset or `Z`; without one it is read as UTC), or
//!   Unix seconds (an integer, or a string of digits); in Parquet also a timestamp or date column.
//!   `published`, `title` and `theme` may be absent from the file.
//! - Order: per key event, articles are sorted by publication time (undated last), then id;
//!   `doc_id` is the 0-based index in that order, so the same articles in any row order, split
//!   over any files, give the same corpus bytes.
//! - Bad rows (no text, no key event, no id, an unreadable date, an id twice in one event,
//!   invalid UTF-8, a value of the wrong type) are reported with file, row (Parquet) or line
//!   (JSON Lines, CSV) and column. With [`OnError::Fail`] (the default) nothing is written;
//!   with [`OnError::Skip`] the good rows are written and the bad ones go to `rejected.parquet`.
//!   A column of the wrong type in a Parquet file, or a missing required column, fails the
//!   whole import whatever the setting.
//! - Duplicates: an article whose text (whitespace collapsed) another article of the same event
//!   already has is dropped and counted; the first in the order above is kept.
//! - Articles are cut into segments by [`crate::import::segment`]; boilerplate lines are dropped and
//!   counted.

mod check;
mod config;
mod error;
mod order;
mod read;

pub use check::{parse_time, Article};
pub use config::{Columns, ImportConfig, OnError};
pub use error::{ArticlesError, RowError};
pub use order::ArticleSummary;
pub use read::{input_files, ArticleTable};

use crate::storage::Location;
use crate::tables::{Rejected, Segment};
use check::bad_rows;
use order::{cut_articles, fill_records, fill_table_records, order_event, Collected};
use read::format_of;

/// The outcome of an import.
#[derive(Debug, Default)]
pub struct ArticlesImport {
    /// Segments written.
    pub segments: usize,
    /// Rows left out.
    pub rejected: Vec<Rejected>,
    /// Per event.
    pub events: Vec<ArticleSummary>,
    /// Input files read.
    pub files: usize,
    /// Input rows read.
    pub rows: usize,
}

/// Where an import's articles come from.
enum Input<'a> {
    /// Files under a location.
    Files(Location, Vec<String>),
    /// A table in memory.
    Table(&'a ArticleTable),
}

/// `epimine import --articles`: reads `spec`, writes `segments.parquet` (and, with
/// `--on-error skip`, `rejected.parquet`) under `out`, each whole or not at all.
///
/// Memory: the input files are read one at a time and only their checked articles are kept;
/// the segments are cut and written one key event at a time (a row group at a time), so the
/// articles' text is held once, not the segments of every event beside it.
pub async fn import(
    spec: &str,
    out: &Location,
    config: &ImportConfig,
) -> Result<ArticlesImport, ArticlesError> {
    config.segment.validate().map_err(ArticlesError::Settings)?;
    let (loc, names) = input_files(spec).await?;
    for name in &names {
        if format_of(name).is_none() {
            return Err(ArticlesError::UnknownFormat(loc.display_child(name)));
        }
    }
    import_from(Input::Files(loc, names), spec, out, config).await
}

/// [`import`] of an Arrow table in memory: the same checks, order, cut and outputs.
pub async fn import_table(
    table: &ArticleTable,
    out: &Location,
    config: &ImportConfig,
) -> Result<ArticlesImport, ArticlesError> {
    config.segment.validate().map_err(ArticlesError::Settings)?;
    import_from(Input::Table(table), &table.name, out, config).await
}

/// The import of `input` (`spec`: what the user named).
async fn import_from(
    input: Input<'_>,
    spec: &str,
    out: &Location,
    config: &ImportConfig,
) -> Result<ArticlesImport, ArticlesError> {
    let (files, reading) = match &input {
        Input::Files(_, names) => (names.len(), format!("{} file(s)", names.len())),
        Input::Table(table) => (1, table.name.clone()),
    };
    let stage = crate::progress::Stage::start(&format!("reading and cutting {reading}"));
    let mut c = Collected::default();
    match &input {
        Input::Files(loc, names) => {
            for name in names {
                let data = loc.get(name).await?;
                c.add_file(&loc.display_child(name), &data, config)?;
            }
        }
        Input::Table(table) => c.add_table(table, config)?,
    }
    // Every event ordered and de-duplicated first, so that `--on-error fail` lists every bad row
    // (duplicate ids included) before anything is cut or written.
    let by_event = std::mem::take(&mut c.by_event);
    let mut events = Vec::with_capacity(by_event.len());
    let mut late_errors = Vec::new();
    for (key_event, list) in by_event {
        let (kept, summary, errors) = order_event(&key_event, list, &c, config);
        late_errors.extend(errors);
        events.push((key_event, kept, summary));
    }
    let mut errors = c.errors;
    let needs_record = late_errors.len();
    errors.extend(late_errors);
    if !errors.is_empty() && config.on_error == OnError::Fail {
        return Err(bad_rows(&mut errors));
    }
    if needs_record > 0 {
        let from = errors.len() - needs_record;
        match &input {
            Input::Files(loc, names) => {
                fill_records(loc, names, &mut errors[from..], config).await?;
            }
            Input::Table(table) => fill_table_records(table, &mut errors[from..], config)?,
        }
    }

    let mut writer = out.table_writer::<Segment>()?;
    let mut result = ArticlesImport {
        files,
        rows: c.rows,
        ..Default::default()
    };
    for (key_event, kept, mut summary) in events {
        let segments = cut_articles(&key_event, &kept, &mut summary, config);
        drop(kept);
        result.segments += segments.len();
        if let Err(e) = writer.push(segments).await {
            writer.abort().await;
            return Err(e.into());
        }
        result.events.push(summary);
    }
    stage.finish(&format!(
        "{} rows, {} segments",
        result.rows, result.segments
    ));
    if result.segments == 0 {
        writer.abort().await;
        return Err(ArticlesError::Empty(spec.into()));
    }
    errors.sort_by(|a, b| (&a.file, a.row).cmp(&(&b.file, b.row)));
    for e in &errors {
        tracing::warn!("skipped {e}");
    }
    result.rejected = errors
        .into_iter()
        .map(|e| Rejected {
            file: e.file,
            row: u32::try_from(e.row).unwrap_or(u32::MAX),
            column: e.column,
            reason: e.reason,
            record: e.record,
        })
        .collect();
    writer.finish().await?;
    if config.on_error == OnError::Skip {
        out.write_table(&result.rejected).await?;
    }
    Ok(result)
}

/// The per-event counts as a readable table.
pub fn format_summary(result: &ArticlesImport) -> String {
    let mut out = format!(
        "{:<32} {:>8} {:>8} {:>10} {:>11} {:>8}\n",
        "key_event", "articles", "segments", "duplicates", "boilerplate", "rejected"
    );
    for e in &result.events {
        out.push_str(&format!(
            "{:<32} {:>8} {:>8} {:>10} {:>11} {:>8}\n",
            e.key_event, e.articles, e.segments, e.duplicates, e.boilerplate, e.rejected
        ));
    }
    let total = |f: fn(&ArticleSummary) -> usize| result.events.iter().map(f).sum::<usize>();
    out.push_str(&format!(
        "{} rows in {} file(s): {} events, {} articles, {} segments; {} duplicate articles dropped, {} boilerplate lines dropped, {} articles empty after it, {} rows rejected\n",
        result.rows,
        result.files,
        result.events.len(),
        total(|e| e.articles),
        total(|e| e.segments),
        total(|e| e.duplicates),
        total(|e| e.boilerplate),
        total(|e| e.empty),
        result.rejected.len()
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times() {
        assert_eq!(parse_time("1970-01-02"), Some(86_400));
        assert_eq!(parse_time("1970-01-01T01:00:00Z"), Some(3_600));
        assert_eq!(parse_time("1970-01-01T02:00:00+01:00"), Some(3_600));
        assert_eq!(parse_time("1970-01-01 01:00:00"), Some(3_600));
        assert_eq!(parse_time("86400"), Some(86_400));
        assert_eq!(parse_time("yesterday"), None);
        assert_eq!(parse_time("2021-13-01"), None);
    }
}
