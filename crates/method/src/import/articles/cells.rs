//! A row of an input file as raw cells, before any check: what the readers of each format
//! (read.rs, csv_rows.rs) hand to the checks.

use super::error::RowError;

/// One value of an input cell, before it is checked.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Cell {
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
    pub(super) fn to_json(&self) -> serde_json::Value {
        match self {
            Cell::Null | Cell::BadUtf8 => serde_json::Value::Null,
            Cell::Str(s) => s.clone().into(),
            Cell::Int(i) | Cell::Time(i) => (*i).into(),
            Cell::Other(s) => s.clone().into(),
        }
    }
}

/// The six configured cells of one row, in [`FIELDS`] order.
pub(super) type RawRow = [Cell; 6];

/// A file's rows (1-based row or line, cells) and the rows that could not be read at all.
pub(super) type FileRows = (Vec<(usize, RawRow)>, Vec<RowError>);
