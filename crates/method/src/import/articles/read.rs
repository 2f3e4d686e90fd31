//! Reading the input files: which files, in which format, and their rows as raw cells
//! (Parquet, JSON Lines, CSV).

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Date64Type, Int16Type, Int32Type, Int64Type, Int8Type, TimestampMicrosecondType,
    TimestampMillisecondType, TimestampNanosecondType, TimestampSecondType, UInt16Type, UInt32Type,
    UInt64Type, UInt8Type,
};
use arrow_array::{Array, RecordBatch};
use arrow_schema::{DataType, SchemaRef, TimeUnit};

use super::columns::required;
use super::config::Columns;
use super::error::{ArticlesError, RowError};
use crate::storage::Location;

/// Articles already in memory as an Arrow table (the Python package hands over a pandas, polars
/// or pyarrow table): read as a Parquet file's rows are, numbered from 1, with `name` where a
/// file's name would be in messages and in `rejected` (e.g. `polars DataFrame`).
#[derive(Debug, Clone)]
pub struct ArticleTable {
    /// What messages call the table.
    pub name: String,
    /// Its columns.
    pub schema: SchemaRef,
    /// Its rows.
    pub batches: Vec<RecordBatch>,
}

pub(super) use super::cells::{Cell, FileRows, RawRow};
pub(super) use super::columns::{column_names, FIELDS};

/// A file's format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Format {
    Parquet,
    JsonLines,
    Csv,
}

pub(super) fn format_of(name: &str) -> Option<Format> {
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
        // The files directly in the folder: a listing of everything below it would walk a
        // whole tree (the file system, for `/`).
        let names: Vec<String> = loc
            .list_top()
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
        .list_top()
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
pub(super) fn unit_of(file: &str) -> Result<&'static str, ArticlesError> {
    match format_of(file).ok_or_else(|| ArticlesError::UnknownFormat(file.into()))? {
        Format::Parquet => Ok("row"),
        Format::JsonLines | Format::Csv => Ok("line"),
    }
}

/// Hands one file's rows to `sink` as (1-based row or line, cells), in order (Parquet one record
/// batch at a time, so that a file's rows are never all decoded at once), and returns the row
/// errors of rows that could not be read at all, and the file's columns (JSON Lines: every key
/// of its objects, in order of first sight).
pub(super) fn read_file(
    file: &str,
    data: &bytes::Bytes,
    columns: &Columns,
    sink: &mut dyn FnMut(usize, RawRow),
) -> Result<(Vec<RowError>, Vec<String>), ArticlesError> {
    let ((rows, bad), file_columns) =
        match format_of(file).ok_or_else(|| ArticlesError::UnknownFormat(file.into()))? {
            Format::JsonLines => {
                let (rows, keys) = read_jsonl(file, data, columns);
                // A file with no object at all has no columns to miss.
                if !rows.0.is_empty() {
                    required(file, &keys, columns)?;
                }
                (rows, keys)
            }
            Format::Csv => super::csv_rows::read_csv(file, data, columns)?,
            Format::Parquet => {
                let names = read_parquet(file, data.clone(), columns, sink)?;
                return Ok((Vec::new(), names));
            }
        };
    for (row, cells) in rows {
        sink(row, cells);
    }
    Ok((bad, file_columns))
}

/// A JSON Lines file's rows, and every key of its objects in order of first sight.
pub(super) fn read_jsonl(file: &str, data: &[u8], columns: &Columns) -> (FileRows, Vec<String>) {
    let names = column_names(columns);
    let mut keys: Vec<String> = Vec::new();
    let mut seen: std::collections::HashSet<String> = std::collections::HashSet::new();
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
        for k in object.keys() {
            if !seen.contains(k) {
                seen.insert(k.clone());
                keys.push(k.clone());
            }
        }
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
    ((rows, errors), keys)
}

/// The cells of a Parquet column, or the error naming its type.
pub(super) fn arrow_cells(
    file: &str,
    name: &str,
    array: &dyn Array,
    field: &str,
) -> Result<Vec<Cell>, ArticlesError> {
    let time = field == "published";
    // Integers are ids or Unix seconds or milliseconds; every other column holds strings.
    let ints = time || field == "id";
    let wrong = |found: String, expected: &'static str| ArticlesError::ColumnType {
        file: file.into(),
        column: name.into(),
        found,
        expected,
    };
    let n = array.len();
    let cells = |f: &dyn Fn(usize) -> Cell| -> Vec<Cell> {
        (0..n)
            .map(|i| if array.is_null(i) { Cell::Null } else { f(i) })
            .collect()
    };
    Ok(match array.data_type() {
        DataType::Utf8 => {
            let a = array.as_string::<i32>();
            cells(&|i| Cell::Str(a.value(i).into()))
        }
        DataType::LargeUtf8 => {
            let a = array.as_string::<i64>();
            cells(&|i| Cell::Str(a.value(i).into()))
        }
        DataType::Utf8View => {
            let a = array.as_string_view();
            cells(&|i| Cell::Str(a.value(i).into()))
        }
        t if t.is_integer() && !ints => return Err(wrong(t.to_string(), "a string")),
        t if t.is_integer() => integer_cells(array, &cells),
        DataType::Timestamp(unit, _) if time => timestamp_cells(array, *unit, &cells),
        DataType::Date32 if time => {
            let a = array.as_primitive::<Date32Type>();
            cells(&|i| Cell::Time(i64::from(a.value(i)) * 86_400))
        }
        DataType::Date64 if time => {
            let a = array.as_primitive::<Date64Type>();
            cells(&|i| Cell::Time(a.value(i).div_euclid(1_000)))
        }
        other => {
            return Err(wrong(
                other.to_string(),
                if time {
                    "a timestamp, a date, Unix seconds or milliseconds, or a date string"
                } else if ints {
                    "a string or an integer"
                } else {
                    "a string"
                },
            ))
        }
    })
}

/// A column's cells from the cell at each row (nulls are `Null`): what [`arrow_cells`] hands
/// its typed readers.
type Cells<'a> = dyn Fn(&dyn Fn(usize) -> Cell) -> Vec<Cell> + 'a;

/// The cells of an integer column (`array.data_type().is_integer()`): each an `Int`, or, for a
/// `u64` past `i64`, the number as an `Other`.
fn integer_cells(array: &dyn Array, cells: &Cells) -> Vec<Cell> {
    macro_rules! ints {
        ($t:ty) => {{
            let a = array.as_primitive::<$t>();
            cells(&|i| Cell::Int(i64::from(a.value(i))))
        }};
    }
    match array.data_type() {
        DataType::Int8 => ints!(Int8Type),
        DataType::Int16 => ints!(Int16Type),
        DataType::Int32 => ints!(Int32Type),
        DataType::Int64 => ints!(Int64Type),
        DataType::UInt8 => ints!(UInt8Type),
        DataType::UInt16 => ints!(UInt16Type),
        DataType::UInt32 => ints!(UInt32Type),
        _ => {
            let a = array.as_primitive::<UInt64Type>();
            cells(&|i| {
                let v = a.value(i);
                i64::try_from(v).map_or_else(|_| Cell::Other(format!("the number {v}")), Cell::Int)
            })
        }
    }
}

/// The cells of a timestamp column in `unit`: Unix seconds (`Time`), rounded down.
fn timestamp_cells(array: &dyn Array, unit: TimeUnit, cells: &Cells) -> Vec<Cell> {
    macro_rules! secs {
        ($t:ty, $div:expr) => {{
            let a = array.as_primitive::<$t>();
            cells(&|i| Cell::Time(a.value(i).div_euclid($div)))
        }};
    }
    match unit {
        TimeUnit::Second => secs!(TimestampSecondType, 1),
        TimeUnit::Millisecond => secs!(TimestampMillisecondType, 1_000),
        TimeUnit::Microsecond => secs!(TimestampMicrosecondType, 1_000_000),
        TimeUnit::Nanosecond => secs!(TimestampNanosecondType, 1_000_000_000),
    }
}

/// Hands a Parquet file's rows to `sink`; returns its columns.
pub(super) fn read_parquet(
    file: &str,
    data: bytes::Bytes,
    columns: &Columns,
    sink: &mut dyn FnMut(usize, RawRow),
) -> Result<Vec<String>, ArticlesError> {
    let unreadable = |e: parquet::errors::ParquetError| ArticlesError::Unreadable {
        file: file.into(),
        reason: e.to_string(),
    };
    let builder = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(data)
        .map_err(unreadable)?;
    let schema = Arc::clone(builder.schema());
    let file_columns: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
    required(file, &file_columns, columns)?;
    let reader = builder.build().map_err(unreadable)?;
    let batches = reader.map(|batch| {
        batch.map_err(|e| ArticlesError::Unreadable {
            file: file.into(),
            reason: e.to_string(),
        })
    });
    read_batches(file, batches, columns, sink)?;
    Ok(file_columns)
}

/// A table in memory (its record batches), read as a Parquet file is: rows numbered from 1;
/// returns its columns.
pub(super) fn read_table(
    file: &str,
    schema: &arrow_schema::Schema,
    batches: &[RecordBatch],
    columns: &Columns,
    sink: &mut dyn FnMut(usize, RawRow),
) -> Result<Vec<String>, ArticlesError> {
    let file_columns: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
    required(file, &file_columns, columns)?;
    read_batches(file, batches.iter().cloned().map(Ok), columns, sink)?;
    Ok(file_columns)
}

/// Hands the rows of record batches to `sink`, one batch at a time.
fn read_batches(
    file: &str,
    batches: impl Iterator<Item = Result<RecordBatch, ArticlesError>>,
    columns: &Columns,
    sink: &mut dyn FnMut(usize, RawRow),
) -> Result<(), ArticlesError> {
    let names = column_names(columns);
    let mut start = 0;
    for batch in batches {
        let batch = batch?;
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
