//! `epimine import --articles`: a table of articles (one row an article: key event, id,
//! publication time, title, text) from Parquet, JSON Lines or CSV becomes the `segments` table.
//!
//! - Input: one file, or every file whose name starts with a prefix (`data/feed-` or
//!   `s3://bucket/feeds/2024-`; a folder means every file in it), local or on S3. The format
//!   comes from each file's extension (`.parquet`/`.pq`, `.jsonl`/`.ndjson`/`.json`, `.csv`).
//!   Or an Arrow table in memory ([`import_table`]: the Python package's pandas, polars or
//!   pyarrow tables), read as a Parquet file is.
//! - Columns are named by [`Columns`] (flags or the job's `[import]` section). `published`:
//!   ISO 8601 / RFC 3339 (a date, or a date-time with an offset or `Z`; without one it is read as
//!   UTC; `T` or a space, seconds optional), RFC 2822 (RSS's `pubDate`), or Unix seconds or
//!   milliseconds (an integer, or a string of digits; told apart by size, [`UNIX_MS_FROM`]); in
//!   Parquet also a timestamp or date column. A date before 1900 or after next year is refused
//!   by row.
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
//! - Articles are cut into segments by [`crate::import::segment`]; boilerplate lines are dropped,
//!   counted and listed in `boilerplate.parquet`.
//! - Columns (`columns.rs`): a file without some required columns is one error naming each one,
//!   with its flag and a column of the file that looks like it, and the file's columns; the
//!   optional ones not found are said in the summary, with what that costs.

mod cells;
mod check;
mod columns;
mod config;
mod copies;
mod csv_rows;
mod error;
mod order;
mod read;
mod summary;

pub use check::{
    implausible, parse_time, unix_seconds, Article, FIRST_YEAR, TIME_FORMS, UNIX_MS_FROM,
};
pub use columns::Absent;
pub use config::{Columns, ImportConfig, OnError};
pub use error::{ArticlesError, RowError};
pub use order::ArticleSummary;
pub use read::{input_files, ArticleTable};
pub use summary::{format_absent, format_summary};

use std::collections::{HashMap, HashSet};

use crate::storage::Location;
use crate::tables::{ArticleParagraphs, Boilerplate, CopyArticle, Rejected, Segment, Table};
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
    /// Optional columns (published, title, theme) absent from some input file: each with the
    /// files that lack it.
    pub absent: Vec<(Absent, Vec<String>)>,
    /// The boilerplate paragraphs dropped (written to `boilerplate.parquet`).
    pub boilerplate: Vec<Boilerplate>,
    /// The columns read: (field, column), in field order.
    pub read: Vec<(&'static str, String)>,
    /// The files written under the corpus, in order (`segments-000002.parquet`, … when
    /// appending); none when nothing was.
    pub written: Vec<String>,
}

/// Where an import's articles come from.
enum Input<'a> {
    /// Files under a location.
    Files(Location, Vec<String>),
    /// A table in memory.
    Table(&'a ArticleTable),
}

/// `epimine import --articles`: reads `spec`, writes `segments.parquet` (and, with
/// `--on-error skip`, `rejected.parquet`) under `out`, each whole or not at all, then removes
/// the corpus tables of an earlier import there (labels, gold episodes, rejected rows); a
/// folder holding other segments files is refused before anything is read.
///
/// Memory: the input files are read one at a time and only their checked articles are kept;
/// the segments are cut and written one key event at a time (a row group at a time), so the
/// articles' text is held once, not the segments of every event beside it.
pub async fn import(
    spec: &str,
    out: &Location,
    config: &ImportConfig,
) -> Result<ArticlesImport, ArticlesError> {
    config.validate().map_err(ArticlesError::Settings)?;
    crate::corpus::check_import_out(out).await?;
    import_into(spec, out, config, None).await
}

/// What a corpus already holds, per key event, for `--append`: the next free `doc_id` and the
/// ids of its articles.
#[derive(Debug, Default)]
struct Existing {
    events: HashMap<String, (u32, HashSet<String>)>,
    /// The suffix of the files this import writes (`segments-000002.parquet`).
    suffix: String,
    /// Each key event's articles of the earlier batches as their `paragraphs*.parquet` rows, to
    /// find the repeated paragraphs and the copies over every batch.
    paragraphs: HashMap<String, Vec<ArticleParagraphs>>,
}

impl Existing {
    /// What the corpus holds of `key_event`: its next free `doc_id` and its articles'
    /// `paragraphs` rows.
    fn of(&self, key_event: &str) -> (u32, &[ArticleParagraphs]) {
        (
            self.events.get(key_event).map_or(0, |e| e.0),
            self.paragraphs
                .get(key_event)
                .map_or(&[][..], Vec::as_slice),
        )
    }
}

/// `epimine import --articles … --append`: adds the articles of `spec` to the corpus in `out`
/// without reading its earlier input again. An article whose id the corpus already holds in its
/// key event is left out (counted, not an error: feeding the same file twice adds nothing), the
/// others get the `doc_id`s after the event's last, and they are written as one more segments
/// file, `segments-<n>.parquet` (with `boilerplate-<n>.parquet`, and `rejected-<n>.parquet` with
/// `--on-error skip`), whole or not at all; `epimine run` reads every `segments*.parquet` of a
/// corpus. Nothing new: nothing written. Boilerplate is found among the new articles (and the
/// duplicates of a text, too); the segments already there are never changed, so their keys
/// (`crate::lineage::segment_keys`) and the episodes they hold stay.
pub async fn import_append(
    spec: &str,
    out: &Location,
    config: &ImportConfig,
) -> Result<ArticlesImport, ArticlesError> {
    config.validate().map_err(ArticlesError::Settings)?;
    let _held = hold_for_append(out).await?;
    remove_staged(out).await;
    let existing = existing_in(out).await?;
    import_into(spec, out, config, Some(existing)).await
}

/// Removes the files an import killed while it wrote left staged (`segments-000003.parquet#0`),
/// with the corpus held.
async fn remove_staged(out: &Location) {
    match crate::storage::delete_staged(out) {
        Ok(0) => {}
        Ok(n) => tracing::info!(
            "{}: {n} file(s) a stopped import left half-written removed",
            out.display()
        ),
        Err(e) => tracing::warn!("{}: {e}", out.display()),
    }
}

/// Takes the corpus for one append (the lock of `crate::storage::lock`, under `<corpus>/_lock/`),
/// from reading what it holds until its new files are written: two appends at once would
/// otherwise both number their file `segments-<n+1>` and one would replace the other. The
/// second is refused with the holder named (a killed append's lock is taken over, as a run's).
async fn hold_for_append(out: &Location) -> Result<crate::storage::lock::RunLock, ArticlesError> {
    let corpus = out.clone();
    let taken = tokio::task::spawn_blocking(move || {
        let runtime = crate::runtime::current_thread().map_err(|e| e.to_string())?;
        crate::storage::lock::acquire(&corpus, &runtime, "epimine import --append")
    })
    .await
    .map_err(|e| e.to_string())
    .and_then(|r| r);
    taken.map_err(|reason| ArticlesError::Busy {
        corpus: out.display().to_string(),
        reason,
    })
}

/// [`import_append`] of an Arrow table in memory (the Python package's DataFrame of the day's
/// articles).
pub async fn import_table_append(
    table: &ArticleTable,
    out: &Location,
    config: &ImportConfig,
) -> Result<ArticlesImport, ArticlesError> {
    config.validate().map_err(ArticlesError::Settings)?;
    let _held = hold_for_append(out).await?;
    let existing = existing_in(out).await?;
    import_from(
        Input::Table(table),
        &table.name,
        out,
        config,
        Some(existing),
    )
    .await
}

/// The number of the next batch of a corpus holding the segments `files`: one past the highest
/// number there (`segments.parquet` is 1, `segments-<n>.parquet` is n), not the count of files:
/// after a batch was removed (an undo) the count names the newest batch, and the append would
/// replace it (issue 64 item 1). A gap in the numbers (a batch removed from the middle) is said
/// in a warning naming the missing files.
fn next_batch(out: &Location, files: &[(String, usize)]) -> usize {
    let numbers: std::collections::BTreeSet<usize> = files
        .iter()
        .filter_map(|(name, _)| batch_number(name))
        .collect();
    let highest = numbers.iter().next_back().copied().unwrap_or(files.len());
    let next = highest.max(files.len()) + 1;
    let missing: Vec<String> = (2..highest)
        .filter(|n| !numbers.contains(n))
        .map(|n| out.display_child(&format!("segments-{n:06}.parquet")))
        .collect();
    if !missing.is_empty() {
        tracing::warn!(
            "{}: {} batch(es) of this corpus are missing ({}): their articles are not in it; this \
             append is batch {}",
            out.display(),
            missing.len(),
            missing.join(", "),
            next
        );
    }
    next
}

/// A segments file's batch number: 1 for `segments.parquet`, n for `segments-<n>.parquet`.
fn batch_number(name: &str) -> Option<usize> {
    let stem = name.strip_suffix(".parquet")?.strip_prefix("segments")?;
    if stem.is_empty() {
        return Some(1);
    }
    stem.strip_prefix('-')?.parse().ok()
}

/// What the corpus in `out` holds, for an append to it.
async fn existing_in(out: &Location) -> Result<Existing, ArticlesError> {
    let files = match crate::corpus::segment_files(out).await {
        Ok(files) => files,
        Err(crate::corpus::CorpusError::NoSegments(_)) => {
            return Err(ArticlesError::NothingToAppendTo(out.display().to_string()))
        }
        Err(e) => return Err(e.into()),
    };
    let mut existing = Existing {
        suffix: format!("-{:06}", next_batch(out, &files)),
        ..Default::default()
    };
    for s in crate::corpus::read_segments(out).await? {
        let e = existing.events.entry(s.key_event).or_default();
        e.0 = e.0.max(s.doc_id + 1);
        if let Some(id) = s.source_id {
            e.1.insert(id);
        }
    }
    let (paragraphs, copies) = earlier_paragraphs(out, &files).await?;
    for c in copies {
        let e = existing.events.entry(c.key_event).or_default();
        e.0 = e.0.max(c.doc_id + 1);
        if let Some(id) = c.source_id {
            e.1.insert(id);
        }
    }
    existing.paragraphs = paragraphs;
    Ok(existing)
}

/// The `paragraphs` rows of every article of the corpus's batches (`paragraphs*.parquet`
/// beside each `segments*.parquet`), by key event in batch order, and the articles made only
/// of copies (`copies*.parquet`). A batch imported before the corpus kept them has none: said
/// in a warning (the repeated paragraphs are then found over the batches that have them).
async fn earlier_paragraphs(
    out: &Location,
    files: &[(String, usize)],
) -> Result<(HashMap<String, Vec<ArticleParagraphs>>, Vec<CopyArticle>), ArticlesError> {
    let mut by_event: HashMap<String, Vec<ArticleParagraphs>> = HashMap::new();
    let mut copies = Vec::new();
    let mut without = Vec::new();
    // One listing, not a request a file (an hourly feed has thousands of batches).
    let listed: HashSet<String> = out.list().await?.into_iter().collect();
    for (name, _) in files {
        let beside = |table| crate::corpus::beside(name, table).filter(|t| listed.contains(t));
        let Some(marks) = beside(ArticleParagraphs::NAME) else {
            without.push(name.clone());
            continue;
        };
        for r in out.read_table_named::<ArticleParagraphs>(&marks).await? {
            by_event.entry(r.key_event.clone()).or_default().push(r);
        }
        if let Some(copied) = beside(CopyArticle::NAME) {
            copies.extend(out.read_table_named::<CopyArticle>(&copied).await?);
        }
    }
    if !without.is_empty() {
        tracing::warn!(
            "{}: {} batch(es) were imported before the corpus kept its paragraphs ({}): \
             site furniture and shared copy are found over the later batches only",
            out.display(),
            without.len(),
            without.join(", ")
        );
    }
    Ok((by_event, copies))
}

async fn import_into(
    spec: &str,
    out: &Location,
    config: &ImportConfig,
    existing: Option<Existing>,
) -> Result<ArticlesImport, ArticlesError> {
    let (loc, names) = input_files(spec).await?;
    for name in &names {
        if format_of(name).is_none() {
            return Err(ArticlesError::UnknownFormat(loc.display_child(name)));
        }
    }
    import_from(Input::Files(loc, names), spec, out, config, existing).await
}

/// [`import`] of an Arrow table in memory: the same checks, order, cut and outputs.
pub async fn import_table(
    table: &ArticleTable,
    out: &Location,
    config: &ImportConfig,
) -> Result<ArticlesImport, ArticlesError> {
    config.validate().map_err(ArticlesError::Settings)?;
    crate::corpus::check_import_out(out).await?;
    import_from(Input::Table(table), &table.name, out, config, None).await
}

/// The import of `input` (`spec`: what the user named); `existing`: what the corpus holds when
/// appending to it.
async fn import_from(
    input: Input<'_>,
    spec: &str,
    out: &Location,
    config: &ImportConfig,
    existing: Option<Existing>,
) -> Result<ArticlesImport, ArticlesError> {
    let (files, reading) = match &input {
        Input::Files(_, names) => (names.len(), format!("{} file(s)", names.len())),
        Input::Table(table) => (1, table.name.clone()),
    };
    let stage = crate::progress::Stage::start(&format!("reading and cutting {reading}"));
    let mut c = collect(&input, config).await?;
    // Every event ordered and de-duplicated first, so that `--on-error fail` lists every bad row
    // (duplicate ids included) before anything is cut or written.
    let (events, late_errors) = ordered_events(&mut c, existing.as_ref(), config);
    let mut result = ArticlesImport {
        files,
        rows: c.rows,
        absent: absent_optional(&c, config),
        ..Default::default()
    };
    result.read = columns_read(&result.absent, c.files.len(), config);
    refuse_swapped_dates(&c.errors)?;
    let mut errors = c.errors;
    let needs_record = late_errors.len();
    errors.extend(late_errors);
    if !errors.is_empty() && config.on_error == OnError::Fail {
        return Err(bad_rows(&mut errors));
    }
    if needs_record > 0 {
        let from = errors.len() - needs_record;
        fill_late_records(&input, &mut errors[from..], config).await?;
    }

    let suffix = existing.as_ref().map_or("", |x| x.suffix.as_str());
    let named = |table: &str| format!("{table}{suffix}.parquet");
    let mut writer = out.table_writer_named::<Segment>(&named(Segment::NAME))?;
    let mut sides = order::Sides::default();
    for (key_event, kept, mut summary) in events {
        let (first_doc, earlier) = existing.as_ref().map_or((0, &[][..]), |x| x.of(&key_event));
        let segments = cut_articles(
            &key_event,
            first_doc,
            &kept,
            &mut summary,
            config,
            earlier,
            &mut sides,
        );
        drop(kept);
        result.segments += segments.len();
        if let Err(e) = writer.push(segments).await {
            writer.abort().await;
            return Err(e.into());
        }
        result.events.push(summary);
    }
    result.boilerplate = std::mem::take(&mut sides.boilerplate);
    stage.finish(&format!(
        "{} rows, {} segments",
        result.rows, result.segments
    ));
    // A batch of articles made only of copies (outlets carrying earlier agency copy) adds no
    // segment, but its articles: it is written (its segments file empty).
    if result.segments == 0 && (existing.is_none() || sides.copies.is_empty()) {
        writer.abort().await;
        if existing.is_some() && errors.is_empty() {
            // Appending: nothing new is not an error (a feed with nothing since the last time).
            return Ok(result);
        }
        return Err(ArticlesError::Empty(spec.into()));
    }
    result.rejected = rejected_rows(errors);
    // The segments file last: it is what makes the import part of the corpus (an append's
    // number counts them), so a kill before it leaves side tables that the same command
    // writes again, never a segments file whose boilerplate table is missing for good.
    let written = match write_sides(out, suffix, &result, &sides, config).await {
        Ok(written) => written,
        Err(e) => {
            writer.abort().await;
            return Err(e);
        }
    };
    let batch = writer.finish().await?;
    crate::corpus::record_batch(out, &named(Segment::NAME), &batch, existing.is_none()).await?;
    result.written = std::iter::once(named(Segment::NAME))
        .chain(written)
        .collect();
    if existing.is_none() {
        whole_corpus(out, &result.written, config).await?;
    }
    Ok(result)
}

/// After a whole import (not an append), the folder holds this corpus whole: the labels and
/// gold episodes of an earlier import (whose keys name other segments) go, and the settings it
/// was read with are saved for its appends (issue 65, item 4).
async fn whole_corpus(
    out: &Location,
    written: &[String],
    config: &ImportConfig,
) -> Result<(), ArticlesError> {
    let written: Vec<&str> = written.iter().map(String::as_str).collect();
    crate::corpus::remove_stale_tables(out, &written).await?;
    let saved = toml::to_string(config).map_err(|e| ArticlesError::Settings(e.to_string()))?;
    out.put(SAVED_CONFIG, saved.into_bytes().into()).await?;
    Ok(())
}

/// Dates read the wrong way round stop the import whatever `on_error` says: the rows that did
/// read (a day up to 12) were read with the day and the month swapped.
fn refuse_swapped_dates(errors: &[RowError]) -> Result<(), ArticlesError> {
    let swapped: Vec<&RowError> = errors
        .iter()
        .filter(|e| e.reason.contains(check::DAY_FIRST))
        .collect();
    match swapped.first() {
        None => Ok(()),
        Some(e) => Err(ArticlesError::Settings(format!(
            "{} date(s) are not dates with --date-format but are with the day and the month \
             swapped (e.g. {e}); the dates that did read were read the wrong way round: give \
             the other --date-format",
            swapped.len()
        ))),
    }
}

/// The settings a corpus was first imported with (column names, bad rows, dates, the cut),
/// which its appends start from: `import.toml` in the corpus.
pub const SAVED_CONFIG: &str = "import.toml";

/// The settings the corpus in `out` was first imported with ([`SAVED_CONFIG`]); `None` for a
/// corpus from before they were saved (or a dataset's import).
pub async fn saved_config(out: &Location) -> Result<Option<ImportConfig>, ArticlesError> {
    if !out.exists(SAVED_CONFIG).await? {
        return Ok(None);
    }
    let text = String::from_utf8_lossy(&out.get(SAVED_CONFIG).await?).into_owned();
    toml::from_str(&text).map(Some).map_err(|e| {
        ArticlesError::Settings(format!(
            "{}: not the import settings epimine saves ({e}); delete it to append with the \
             flags given only",
            out.display_child(SAVED_CONFIG)
        ))
    })
}

/// The whole record of each bad row found after reading (`errors`: duplicate ids), read again
/// from the input for `rejected.parquet`.
async fn fill_late_records(
    input: &Input<'_>,
    errors: &mut [RowError],
    config: &ImportConfig,
) -> Result<(), ArticlesError> {
    match input {
        Input::Files(loc, names) => fill_records(loc, names, errors, config).await,
        Input::Table(table) => fill_table_records(table, errors, config),
    }
}

/// Every row of the input, read and checked ([`Collected`]).
async fn collect(input: &Input<'_>, config: &ImportConfig) -> Result<Collected, ArticlesError> {
    let mut c = Collected::default();
    match input {
        Input::Files(loc, names) => {
            for name in names {
                let data = loc.get(name).await?;
                c.add_file(&loc.display_child(name), &data, config)?;
            }
        }
        Input::Table(table) => c.add_table(table, config)?,
    }
    Ok(c)
}

/// An event's articles to cut, in order, with its summary so far.
type OrderedEvent = (String, Vec<Article>, ArticleSummary);

/// Every event's articles ordered and de-duplicated ([`order_event`]), less those an append's
/// corpus holds already (`existing`), and the bad rows found on the way (duplicate ids).
fn ordered_events(
    c: &mut Collected,
    existing: Option<&Existing>,
    config: &ImportConfig,
) -> (Vec<OrderedEvent>, Vec<RowError>) {
    let by_event = std::mem::take(&mut c.by_event);
    let mut events = Vec::with_capacity(by_event.len());
    let mut late_errors = Vec::new();
    for (key_event, list) in by_event {
        let (mut kept, mut summary, errors) = order_event(&key_event, list, c, config);
        if let Some((_, known)) = existing.and_then(|x| x.events.get(&key_event)) {
            let before = kept.len();
            kept.retain(|a| !known.contains(&a.id));
            summary.already = before - kept.len();
        }
        late_errors.extend(errors);
        events.push((key_event, kept, summary));
    }
    (events, late_errors)
}

/// The bad rows skipped (`--on-error skip`), each logged, as `rejected` rows in file and row
/// order.
fn rejected_rows(mut errors: Vec<RowError>) -> Vec<Rejected> {
    errors.sort_by(|a, b| (&a.file, a.row).cmp(&(&b.file, b.row)));
    for e in &errors {
        tracing::warn!("skipped {e}");
    }
    errors
        .into_iter()
        .map(|e| Rejected {
            file: e.file,
            row: u32::try_from(e.row).unwrap_or(u32::MAX),
            column: e.column,
            reason: e.reason,
            record: e.record,
        })
        .collect()
}

/// Writes an import's side tables (their names end in `suffix`: the batch's): the boilerplate,
/// the paragraphs, the copies and, with `--on-error skip`, the rejected rows. Returns their
/// names.
async fn write_sides(
    out: &Location,
    suffix: &str,
    result: &ArticlesImport,
    sides: &order::Sides,
    config: &ImportConfig,
) -> Result<Vec<String>, ArticlesError> {
    let named = |table: &str| format!("{table}{suffix}.parquet");
    write_named(out, &named(Boilerplate::NAME), &result.boilerplate).await?;
    write_named(out, &named(ArticleParagraphs::NAME), &sides.paragraphs).await?;
    write_named(out, &named(CopyArticle::NAME), &sides.copies).await?;
    let mut written = vec![
        named(Boilerplate::NAME),
        named(ArticleParagraphs::NAME),
        named(CopyArticle::NAME),
    ];
    if config.on_error == OnError::Skip {
        write_named(out, &named(Rejected::NAME), &result.rejected).await?;
        written.push(named(Rejected::NAME));
    }
    Ok(written)
}

/// Writes `rows` as the table file `name`, whole or not at all.
async fn write_named<T: Table + Clone>(
    out: &Location,
    name: &str,
    rows: &[T],
) -> Result<(), ArticlesError> {
    let mut w = out.table_writer_named::<T>(name)?;
    if let Err(e) = w.push(rows.to_vec()).await {
        w.abort().await;
        return Err(e.into());
    }
    w.finish().await?;
    Ok(())
}

/// The configured columns found in at least one of the `n_files` input files: (field, column).
fn columns_read(
    absent: &[(Absent, Vec<String>)],
    n_files: usize,
    config: &ImportConfig,
) -> Vec<(&'static str, String)> {
    columns::FIELDS
        .iter()
        .zip(columns::column_names(&config.columns))
        .filter(|(f, _)| {
            !absent
                .iter()
                .any(|(a, files)| a.field == **f && files.len() == n_files)
        })
        .map(|(f, n)| (*f, n.to_string()))
        .collect()
}

/// The optional columns absent from some input file, with those files.
fn absent_optional(c: &Collected, config: &ImportConfig) -> Vec<(Absent, Vec<String>)> {
    let mut out: Vec<(Absent, Vec<String>)> = Vec::new();
    for (file, file_columns) in c.files.iter().zip(&c.columns) {
        // A JSON Lines file with no object has no columns to miss.
        if file_columns.is_empty() {
            continue;
        }
        for a in columns::absent(file_columns, &config.columns).1 {
            match out.iter_mut().find(|(b, _)| b.field == a.field) {
                Some((_, files)) => files.push(file.clone()),
                None => out.push((a, vec![file.clone()])),
            }
        }
    }
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
        // RSS's pubDate (RFC 2822), a space and no seconds, Unix milliseconds (issues 46, 47).
        let t = 1_725_291_900; // 2024-09-02T15:45:00Z
        assert_eq!(parse_time("Mon, 02 Sep 2024 15:45:00 GMT"), Some(t));
        assert_eq!(parse_time("Mon, 02 Sep 2024 17:45:00 +0200"), Some(t));
        assert_eq!(parse_time("2024-09-02 15:45"), Some(t));
        assert_eq!(parse_time("2024-09-02T17:45+02:00"), Some(t));
        assert_eq!(parse_time("1725291900000"), Some(t));
        assert_eq!(parse_time("1725291900"), Some(t));
        assert_eq!(unix_seconds(1_710_000_000_000), 1_710_000_000);
        // Implausible dates are refused by row; plausible ones pass.
        assert!(implausible(t).is_none());
        assert!(implausible(parse_time("1850-01-01").unwrap()).is_some());
        let far = implausible(99_999_999_999).unwrap();
        assert!(far.contains("5138") && far.contains("plausible"), "{far}");
    }
}
