//! `epimine import --articles`: a table of articles (one row an article: key event, id,
//! publication time, title, text) from Parquet, JSON Lines or CSV becomes the `segments` table.
//!
//! - Input: one file, or every file whose name starts with a prefix (`data/feed-` or
//!   `s3://bucket/feeds/2024-`; a folder means every file in it), local or on S3. The format
//!   comes from each file's extension (`.parquet`/`.pq`, `.jsonl`/`.ndjson`/`.json`, `.csv`).
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
//! - Articles are cut into segments by [`crate::segment`]; boilerplate lines are dropped and
//!   counted.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Date64Type, Int16Type, Int32Type, Int64Type, Int8Type, TimestampMicrosecondType,
    TimestampMillisecondType, TimestampNanosecondType, TimestampSecondType, UInt16Type, UInt32Type,
    UInt64Type, UInt8Type,
};
use arrow_array::{Array, RecordBatch};
use arrow_schema::{DataType, TimeUnit};
use serde::{Deserialize, Serialize};

use crate::segment::{self, SegmentConfig};
use crate::storage::{Location, StorageError};
use crate::tables::{Rejected, Segment};

/// The input columns' names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Columns {
    /// The key event the article belongs to (required).
    pub key_event: String,
    /// The article's id or URL in its source (required, unique per key event).
    pub id: String,
    /// Publication time (optional column).
    pub published: String,
    /// Title (optional column).
    pub title: String,
    /// Body text (required).
    pub text: String,
    /// Theme (optional column).
    pub theme: String,
}

impl Default for Columns {
    fn default() -> Self {
        Self {
            key_event: "key_event".into(),
            id: "id".into(),
            published: "published".into(),
            title: "title".into(),
            text: "text".into(),
            theme: "theme".into(),
        }
    }
}

/// What to do with bad rows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum OnError {
    /// Report every bad row and write nothing.
    #[default]
    Fail,
    /// Write the good rows, and the bad ones to `rejected.parquet`.
    Skip,
}

/// The `[import]` section of a job file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ImportConfig {
    /// Column names.
    pub columns: Columns,
    /// Bad rows: `fail` (default) or `skip`.
    pub on_error: OnError,
    /// How articles are cut into segments.
    pub segment: SegmentConfig,
}

/// Errors of `epimine import --articles`.
#[derive(Debug, thiserror::Error)]
pub enum ArticlesError {
    /// Reading or writing failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// No input file.
    #[error("{0}: no file found (expected a file, a folder, or a prefix of file names)")]
    NoFiles(String),
    /// A file's format is unknown.
    #[error("{0}: unknown format (expected .parquet, .pq, .jsonl, .ndjson, .json or .csv)")]
    UnknownFormat(String),
    /// A file could not be read as its format.
    #[error("{file}: {reason}")]
    Unreadable {
        /// The file.
        file: String,
        /// Why.
        reason: String,
    },
    /// A required column is missing.
    #[error("{file}: no column `{column}` (name it with --{}-column or {field} = … in [import.columns])", field.replace('_', "-"))]
    MissingColumn {
        /// The file.
        file: String,
        /// The column.
        column: String,
        /// The setting that names it.
        field: &'static str,
    },
    /// A Parquet column has a type we cannot read as what it should hold.
    #[error("{file}: column `{column}` is {found}, expected {expected}")]
    ColumnType {
        /// The file.
        file: String,
        /// The column.
        column: String,
        /// Its type.
        found: String,
        /// What it should be.
        expected: &'static str,
    },
    /// Bad rows with `--on-error fail`.
    #[error("{count} bad row(s); nothing was written (--on-error skip writes the good rows and rejected.parquet):\n{listed}")]
    BadRows {
        /// How many.
        count: usize,
        /// The first ones, one a line.
        listed: String,
    },
    /// The settings are inconsistent.
    #[error("import settings: {0}")]
    Settings(String),
    /// No good row at all.
    #[error("{0}: no article left to import")]
    Empty(String),
}

/// A bad input row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowError {
    /// The file.
    pub file: String,
    /// 1-based row (Parquet) or line (JSON Lines, CSV).
    pub row: usize,
    /// `row` or `line`.
    pub unit: &'static str,
    /// The column at fault.
    pub column: Option<String>,
    /// Why.
    pub reason: String,
    /// The row as JSON, when it could be read.
    pub record: Option<String>,
}

impl std::fmt::Display for RowError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {} {}", self.file, self.unit, self.row)?;
        if let Some(c) = &self.column {
            write!(f, ", column `{c}`")?;
        }
        write!(f, ": {}", self.reason)
    }
}

/// One value of an input cell, before it is checked.
#[derive(Debug, Clone, PartialEq)]
enum Cell {
    Null,
    Str(String),
    Int(i64),
    /// Seconds since 1970-01-01 UTC (Parquet timestamps and dates).
    Time(i64),
    /// A value of a kind no column takes (a bool, a float, a list, an object).
    Other(String),
    /// Bytes that are not UTF-8.
    BadUtf8,
}

impl Cell {
    fn to_json(&self) -> serde_json::Value {
        match self {
            Cell::Null | Cell::BadUtf8 => serde_json::Value::Null,
            Cell::Str(s) => s.clone().into(),
            Cell::Int(i) | Cell::Time(i) => (*i).into(),
            Cell::Other(s) => s.clone().into(),
        }
    }
}

/// The six configured cells of one row, in [`FIELDS`] order.
type RawRow = [Cell; 6];
/// A file's rows (1-based row or line, cells) and the rows that could not be read at all.
type FileRows = (Vec<(usize, RawRow)>, Vec<RowError>);
const FIELDS: [&str; 6] = ["key_event", "id", "published", "title", "text", "theme"];

fn column_names(c: &Columns) -> [&str; 6] {
    [
        &c.key_event,
        &c.id,
        &c.published,
        &c.title,
        &c.text,
        &c.theme,
    ]
}

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

/// A file's format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Parquet,
    JsonLines,
    Csv,
}

fn format_of(name: &str) -> Option<Format> {
    let lower = name.to_ascii_lowercase();
    let ext = lower.rsplit('.').next()?;
    match ext {
        "parquet" | "pq" => Some(Format::Parquet),
        "jsonl" | "ndjson" | "json" => Some(Format::JsonLines),
        "csv" => Some(Format::Csv),
        _ => None,
    }
}

/// The input files of `spec`: one file, a folder's files, or the files whose names start with a
/// prefix. Returns the folder's location and the names under it, sorted.
pub async fn input_files(spec: &str) -> Result<(Location, Vec<String>), ArticlesError> {
    let local_dir = !spec.contains("://") && std::path::Path::new(spec).is_dir();
    if spec.ends_with('/') || local_dir {
        let loc = Location::parse(spec, false)?;
        let names: Vec<String> = loc
            .list()
            .await?
            .into_iter()
            .filter(|n| !n.contains('/') && !n.starts_with('.') && !n.starts_with('_'))
            .collect();
        if names.is_empty() {
            return Err(ArticlesError::NoFiles(spec.into()));
        }
        return Ok((loc, names));
    }
    let (loc, name) = Location::parse_file(spec, false)?;
    if loc.exists(&name).await? {
        return Ok((loc, vec![name]));
    }
    let names: Vec<String> = loc
        .list()
        .await?
        .into_iter()
        .filter(|n| !n.contains('/') && n.starts_with(&name))
        .collect();
    if names.is_empty() {
        return Err(ArticlesError::NoFiles(spec.into()));
    }
    Ok((loc, names))
}

/// What a file's rows are called in messages: `row` (Parquet) or `line`.
fn unit_of(file: &str) -> Result<&'static str, ArticlesError> {
    match format_of(file).ok_or_else(|| ArticlesError::UnknownFormat(file.into()))? {
        Format::Parquet => Ok("row"),
        Format::JsonLines | Format::Csv => Ok("line"),
    }
}

/// Hands one file's rows to `sink` as (1-based row or line, cells), in order (Parquet one record
/// batch at a time, so that a file's rows are never all decoded at once), and returns the row
/// errors of rows that could not be read at all.
fn read_file(
    file: &str,
    data: &bytes::Bytes,
    columns: &Columns,
    sink: &mut dyn FnMut(usize, RawRow),
) -> Result<Vec<RowError>, ArticlesError> {
    let (rows, bad) =
        match format_of(file).ok_or_else(|| ArticlesError::UnknownFormat(file.into()))? {
            Format::JsonLines => read_jsonl(file, data, columns),
            Format::Csv => read_csv(file, data, columns)?,
            Format::Parquet => {
                read_parquet(file, data.clone(), columns, sink)?;
                return Ok(Vec::new());
            }
        };
    for (row, cells) in rows {
        sink(row, cells);
    }
    Ok(bad)
}

fn required(
    file: &str,
    present: &dyn Fn(&str) -> bool,
    columns: &Columns,
) -> Result<(), ArticlesError> {
    for (name, field) in [
        (&columns.key_event, "key_event"),
        (&columns.id, "id"),
        (&columns.text, "text"),
    ] {
        if !present(name) {
            return Err(ArticlesError::MissingColumn {
                file: file.into(),
                column: name.clone(),
                field,
            });
        }
    }
    Ok(())
}

fn read_jsonl(file: &str, data: &[u8], columns: &Columns) -> FileRows {
    let names = column_names(columns);
    let data = data.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(data);
    let (mut rows, mut errors) = (Vec::new(), Vec::new());
    for (i, raw) in data.split(|&b| b == b'\n').enumerate() {
        let line = i + 1;
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        if raw.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let err = |column: Option<String>, reason: String| RowError {
            file: file.into(),
            row: line,
            unit: "line",
            column,
            reason,
            record: None,
        };
        let value: serde_json::Value = match serde_json::from_slice(raw) {
            Ok(v) => v,
            Err(e) => {
                let reason = if std::str::from_utf8(raw).is_err() {
                    "invalid UTF-8".to_string()
                } else {
                    format!("not JSON: {e}")
                };
                errors.push(err(None, reason));
                continue;
            }
        };
        let Some(object) = value.as_object() else {
            errors.push(err(None, "not a JSON object".into()));
            continue;
        };
        let cells: RawRow = std::array::from_fn(|k| match object.get(names[k]) {
            None | Some(serde_json::Value::Null) => Cell::Null,
            Some(serde_json::Value::String(s)) => Cell::Str(s.clone()),
            Some(serde_json::Value::Number(n)) => match n.as_i64() {
                Some(i) => Cell::Int(i),
                None => Cell::Other(format!("the number {n}")),
            },
            Some(serde_json::Value::Bool(b)) => Cell::Other(format!("the boolean {b}")),
            Some(serde_json::Value::Array(_)) => Cell::Other("a list".into()),
            Some(serde_json::Value::Object(_)) => Cell::Other("an object".into()),
        });
        rows.push((line, cells));
    }
    (rows, errors)
}

fn read_csv(file: &str, data: &[u8], columns: &Columns) -> Result<FileRows, ArticlesError> {
    let names = column_names(columns);
    let data = data.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(data);
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .from_reader(data);
    let header = reader
        .byte_headers()
        .map_err(|e| ArticlesError::Unreadable {
            file: file.into(),
            reason: format!("CSV header: {e}"),
        })?
        .clone();
    let header: Vec<String> = header
        .iter()
        .map(|h| String::from_utf8_lossy(h).trim().to_string())
        .collect();
    required(file, &|c| header.iter().any(|h| h == c), columns)?;
    let index: [Option<usize>; 6] =
        std::array::from_fn(|k| header.iter().position(|h| h == names[k]));
    let (mut rows, mut errors) = (Vec::new(), Vec::new());
    let mut record = csv::ByteRecord::new();
    loop {
        let line = reader.position().line() as usize;
        match reader.read_byte_record(&mut record) {
            Ok(false) => break,
            Ok(true) => {
                let line = record.position().map_or(line, |p| p.line() as usize);
                let cells: RawRow = std::array::from_fn(|k| match index[k] {
                    None => Cell::Null,
                    Some(i) => match record.get(i) {
                        None => Cell::Null,
                        Some([]) => Cell::Null,
                        Some(b) => match std::str::from_utf8(b) {
                            Ok(s) => Cell::Str(s.to_string()),
                            Err(_) => Cell::BadUtf8,
                        },
                    },
                });
                rows.push((line, cells));
            }
            Err(e) => {
                let line = e.position().map_or(line, |p| p.line() as usize);
                errors.push(RowError {
                    file: file.into(),
                    row: line,
                    unit: "line",
                    column: None,
                    reason: format!("not a CSV record: {e}"),
                    record: None,
                });
                if matches!(e.kind(), csv::ErrorKind::Io(_)) {
                    break;
                }
            }
        }
    }
    Ok((rows, errors))
}

/// The cells of a Parquet column, or the error naming its type.
fn arrow_cells(
    file: &str,
    name: &str,
    array: &dyn Array,
    field: &str,
) -> Result<Vec<Cell>, ArticlesError> {
    let time = field == "published";
    // Integers are ids or Unix seconds; every other column holds strings.
    let ints = time || field == "id";
    let n = array.len();
    let mut out = Vec::with_capacity(n);
    macro_rules! each {
        ($arr:expr, $f:expr) => {{
            let a = $arr;
            for i in 0..n {
                out.push(if a.is_null(i) {
                    Cell::Null
                } else {
                    $f(a.value(i))
                });
            }
        }};
    }
    match array.data_type() {
        DataType::Utf8 => each!(array.as_string::<i32>(), |s: &str| Cell::Str(s.into())),
        DataType::LargeUtf8 => each!(array.as_string::<i64>(), |s: &str| Cell::Str(s.into())),
        DataType::Utf8View => each!(array.as_string_view(), |s: &str| Cell::Str(s.into())),
        DataType::Int8
        | DataType::Int16
        | DataType::Int32
        | DataType::Int64
        | DataType::UInt8
        | DataType::UInt16
        | DataType::UInt32
        | DataType::UInt64
            if !ints =>
        {
            return Err(ArticlesError::ColumnType {
                file: file.into(),
                column: name.into(),
                found: array.data_type().to_string(),
                expected: "a string",
            })
        }
        DataType::Int8 => each!(array.as_primitive::<Int8Type>(), |v| Cell::Int(i64::from(
            v
        ))),
        DataType::Int16 => each!(array.as_primitive::<Int16Type>(), |v| Cell::Int(i64::from(
            v
        ))),
        DataType::Int32 => each!(array.as_primitive::<Int32Type>(), |v| Cell::Int(i64::from(
            v
        ))),
        DataType::Int64 => each!(array.as_primitive::<Int64Type>(), Cell::Int),
        DataType::UInt8 => each!(array.as_primitive::<UInt8Type>(), |v| Cell::Int(i64::from(
            v
        ))),
        DataType::UInt16 => each!(array.as_primitive::<UInt16Type>(), |v| Cell::Int(
            i64::from(v)
        )),
        DataType::UInt32 => each!(array.as_primitive::<UInt32Type>(), |v| Cell::Int(
            i64::from(v)
        )),
        DataType::UInt64 => each!(array.as_primitive::<UInt64Type>(), |v: u64| {
            i64::try_from(v).map_or_else(|_| Cell::Other(format!("the number {v}")), Cell::Int)
        }),
        DataType::Timestamp(unit, _) if time => {
            let div = match unit {
                TimeUnit::Second => 1,
                TimeUnit::Millisecond => 1_000,
                TimeUnit::Microsecond => 1_000_000,
                TimeUnit::Nanosecond => 1_000_000_000,
            };
            let secs = |v: i64| Cell::Time(v.div_euclid(div));
            match unit {
                TimeUnit::Second => each!(array.as_primitive::<TimestampSecondType>(), secs),
                TimeUnit::Millisecond => {
                    each!(array.as_primitive::<TimestampMillisecondType>(), secs)
                }
                TimeUnit::Microsecond => {
                    each!(array.as_primitive::<TimestampMicrosecondType>(), secs)
                }
                TimeUnit::Nanosecond => {
                    each!(array.as_primitive::<TimestampNanosecondType>(), secs)
                }
            }
        }
        DataType::Date32 if time => each!(array.as_primitive::<Date32Type>(), |d: i32| {
            Cell::Time(i64::from(d) * 86_400)
        }),
        DataType::Date64 if time => each!(array.as_primitive::<Date64Type>(), |ms: i64| {
            Cell::Time(ms.div_euclid(1_000))
        }),
        other => {
            return Err(ArticlesError::ColumnType {
                file: file.into(),
                column: name.into(),
                found: other.to_string(),
                expected: if time {
                    "a timestamp, a date, Unix seconds or an ISO 8601 string"
                } else if ints {
                    "a string or an integer"
                } else {
                    "a string"
                },
            })
        }
    }
    Ok(out)
}

fn read_parquet(
    file: &str,
    data: bytes::Bytes,
    columns: &Columns,
    sink: &mut dyn FnMut(usize, RawRow),
) -> Result<(), ArticlesError> {
    let unreadable = |e: parquet::errors::ParquetError| ArticlesError::Unreadable {
        file: file.into(),
        reason: e.to_string(),
    };
    let names = column_names(columns);
    let builder = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(data)
        .map_err(unreadable)?;
    let schema = Arc::clone(builder.schema());
    required(file, &|c| schema.field_with_name(c).is_ok(), columns)?;
    let reader = builder.build().map_err(unreadable)?;
    let mut start = 0;
    for batch in reader {
        let batch: RecordBatch = batch.map_err(|e| ArticlesError::Unreadable {
            file: file.into(),
            reason: e.to_string(),
        })?;
        let mut cols: Vec<Vec<Cell>> = Vec::with_capacity(6);
        for (k, name) in names.iter().enumerate() {
            cols.push(match batch.column_by_name(name) {
                Some(a) => arrow_cells(file, name, a.as_ref(), FIELDS[k])?,
                None => vec![Cell::Null; batch.num_rows()],
            });
        }
        let mut iters: Vec<_> = cols.into_iter().map(Vec::into_iter).collect();
        for i in 0..batch.num_rows() {
            let cells: RawRow = std::array::from_fn(|k| iters[k].next().unwrap_or(Cell::Null));
            sink(start + i + 1, cells);
        }
        start += batch.num_rows();
    }
    Ok(())
}

/// Checks one row's cells into an article.
fn check_row(
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

/// What was imported for one key event.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct ArticleSummary {
    /// Key event.
    pub key_event: String,
    /// Articles kept (with at least one segment).
    pub articles: usize,
    /// Segments written.
    pub segments: usize,
    /// Articles dropped as duplicates of another article's text.
    pub duplicates: usize,
    /// Boilerplate paragraphs dropped (occurrences).
    pub boilerplate: usize,
    /// Articles with nothing left after the boilerplate.
    pub empty: usize,
    /// Rows of this event rejected (duplicate ids, with `--on-error skip`).
    pub rejected: usize,
}

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

/// The JSON record of a row, for `rejected`.
fn record_json(cells: &RawRow) -> String {
    let object: serde_json::Map<String, serde_json::Value> = FIELDS
        .iter()
        .zip(cells.iter())
        .map(|(f, c)| (f.to_string(), c.to_json()))
        .collect();
    serde_json::Value::Object(object).to_string()
}

/// Rows read and checked, file by file.
#[derive(Default)]
struct Collected {
    /// The checked articles by event.
    by_event: BTreeMap<String, Vec<Article>>,
    /// Rows that failed.
    errors: Vec<RowError>,
    /// The input files as the user would write them.
    files: Vec<String>,
    /// `row` or `line`, per file.
    units: Vec<&'static str>,
    /// Rows read.
    rows: usize,
}

impl Collected {
    /// Reads and checks one file's rows; its bytes can be dropped afterwards (only the checked
    /// articles are kept).
    fn add_file(
        &mut self,
        file: &str,
        data: &bytes::Bytes,
        config: &ImportConfig,
    ) -> Result<(), ArticlesError> {
        let file_idx = self.files.len();
        let unit = unit_of(file)?;
        let (by_event, errors, rows) = (&mut self.by_event, &mut self.errors, &mut self.rows);
        let bad = read_file(file, data, &config.columns, &mut |row, cells| {
            *rows += 1;
            match check_row(file_idx, row, &cells) {
                Ok(a) => match by_event.get_mut(&a.key_event) {
                    Some(list) => list.push(a),
                    None => {
                        by_event.insert(a.key_event.clone(), vec![a]);
                    }
                },
                Err((column, reason)) => errors.push(RowError {
                    file: file.to_string(),
                    row,
                    unit,
                    column: column.map(|c| {
                        column_names(&config.columns)
                            [FIELDS.iter().position(|f| *f == c).unwrap_or(0)]
                        .to_string()
                    }),
                    reason,
                    record: Some(record_json(&cells)),
                }),
            }
        })?;
        self.rows += bad.len();
        self.errors.extend(bad);
        self.files.push(file.to_string());
        self.units.push(unit);
        Ok(())
    }
}

/// One event's articles in the documented order, with rows of an id seen before (in that order)
/// and duplicate texts left out: (kept, summary so far, rejected rows as (file, row) and why).
fn order_event(
    key_event: &str,
    mut list: Vec<Article>,
    c: &Collected,
    config: &ImportConfig,
) -> (Vec<Article>, ArticleSummary, Vec<RowError>) {
    list.sort_by(|a, b| {
        (
            a.published.is_none(),
            a.published,
            &a.id,
            &a.title,
            &a.text,
            &a.theme,
        )
            .cmp(&(
                b.published.is_none(),
                b.published,
                &b.id,
                &b.title,
                &b.text,
                &b.theme,
            ))
    });
    let mut ids: HashMap<String, (usize, usize)> = HashMap::new();
    let mut texts: HashSet<String> = HashSet::new();
    let mut kept: Vec<Article> = Vec::new();
    let mut errors = Vec::new();
    let mut summary = ArticleSummary {
        key_event: key_event.to_string(),
        ..Default::default()
    };
    for a in list {
        if let Some(&(f, r)) = ids.get(&a.id) {
            let (file, row) = a.origin;
            errors.push(RowError {
                file: c.files[file].clone(),
                row,
                unit: c.units[file],
                column: Some(config.columns.id.clone()),
                reason: format!(
                    "id `{}` appears twice in key event `{key_event}` (also at {} {} {r})",
                    a.id, c.files[f], c.units[f]
                ),
                // Filled in by `fill_records` (it is needed only when rows are skipped).
                record: None,
            });
            summary.rejected += 1;
            continue;
        }
        ids.insert(a.id.clone(), a.origin);
        let normal = a.text.split_whitespace().collect::<Vec<_>>().join(" ");
        if !texts.insert(normal) {
            summary.duplicates += 1;
            continue;
        }
        kept.push(a);
    }
    (kept, summary, errors)
}

/// Cuts one event's kept articles into its segments (doc_id dense in their order).
fn cut_articles(
    key_event: &str,
    kept: &[Article],
    summary: &mut ArticleSummary,
    config: &ImportConfig,
) -> Vec<Segment> {
    let texts: Vec<&str> = kept.iter().map(|a| a.text.as_str()).collect();
    let cut = segment::cut_event(&texts, &config.segment);
    summary.boilerplate = cut.boilerplate_dropped;
    if cut.controls_stripped > 0 {
        tracing::warn!(
            "key event `{key_event}`: removed {} control character(s) from the articles' text",
            cut.controls_stripped
        );
    }
    if cut.long_cut > 0 {
        tracing::warn!(
            "key event `{key_event}`: {} piece(s) with no sentence break were longer than {} \
             characters, cut there into several segments",
            cut.long_cut,
            segment::MAX_SEGMENT_CHARS
        );
    }
    let mut segments = Vec::new();
    let mut doc_id = 0u32;
    for (a, segs) in kept.iter().zip(cut.segments) {
        if segs.is_empty() {
            summary.empty += 1;
            continue;
        }
        let doc_date = a
            .published
            .and_then(|t| i32::try_from(t.div_euclid(86_400)).ok());
        for (seg_idx, text) in segs.into_iter().enumerate() {
            segments.push(Segment {
                key_event: key_event.to_string(),
                theme: a.theme.clone(),
                doc_id,
                doc_date,
                seg_idx: seg_idx as u32,
                text,
                source_id: Some(a.id.clone()),
                title: a.title.clone(),
            });
            summary.segments += 1;
        }
        doc_id += 1;
        summary.articles += 1;
    }
    segments
}

/// The error of `--on-error fail` listing the bad rows (the first 20, and how many more).
fn bad_rows(errors: &mut [RowError]) -> ArticlesError {
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
    let stage =
        crate::progress::Stage::start(&format!("reading and cutting {} file(s)", names.len()));
    let mut c = Collected::default();
    for name in &names {
        let data = loc.get(name).await?;
        c.add_file(&loc.display_child(name), &data, config)?;
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
        fill_records(&loc, &names, &mut errors[from..], config).await?;
    }

    let mut writer = out.table_writer::<Segment>()?;
    let mut result = ArticlesImport {
        files: names.len(),
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

/// The records of rows rejected after reading (an id seen before): their files are read again
/// (rare: only when such rows are skipped), so that no row's record is held in the meantime.
async fn fill_records(
    loc: &Location,
    names: &[String],
    errors: &mut [RowError],
    config: &ImportConfig,
) -> Result<(), ArticlesError> {
    for name in names {
        let file = loc.display_child(name);
        if !errors.iter().any(|e| e.file == file) {
            continue;
        }
        let data = loc.get(name).await?;
        let rows: HashSet<usize> = errors
            .iter()
            .filter(|e| e.file == file)
            .map(|e| e.row)
            .collect();
        let mut wanted: HashMap<usize, String> = HashMap::new();
        read_file(&file, &data, &config.columns, &mut |row, cells| {
            if rows.contains(&row) {
                wanted.insert(row, record_json(&cells));
            }
        })?;
        for e in errors.iter_mut().filter(|e| e.file == file) {
            e.record = wanted.get(&e.row).cloned();
        }
    }
    Ok(())
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
