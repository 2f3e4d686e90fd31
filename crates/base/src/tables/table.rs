//! What every table is: the [`Table`] trait, its read error, and the helpers that read and
//! write a column (the column kinds of `columns.rs` and the vector tables use them).

use std::sync::Arc;

use arrow_array::{
    Array, ArrayRef, ArrowPrimitiveType, PrimitiveArray, RecordBatch, StringArray, UInt32Array,
};
use arrow_schema::SchemaRef;

/// A column could not be read as the type its schema promises.
#[derive(Debug, thiserror::Error)]
#[error("table `{table}`, column `{column}`: {reason}")]
pub struct TableError {
    /// The table's name.
    pub table: &'static str,
    /// The column.
    pub column: String,
    /// What was wrong.
    pub reason: String,
}

/// A table with a fixed Arrow schema and a typed row.
pub trait Table: Sized {
    /// The table's name; its file is `<name>.parquet`.
    const NAME: &'static str;
    /// The table's schema.
    fn schema() -> SchemaRef;
    /// The rows as one record batch.
    fn to_batch(rows: &[Self]) -> RecordBatch;
    /// The rows of one record batch (whose schema has been checked).
    fn from_batch(batch: &RecordBatch) -> Result<Vec<Self>, TableError>;

    /// The table's file name.
    fn file_name() -> String {
        format!("{}.parquet", Self::NAME)
    }

    /// Rows of many batches, in order.
    fn from_batches(batches: &[RecordBatch]) -> Result<Vec<Self>, TableError> {
        let mut rows = Vec::new();
        for batch in batches {
            rows.extend(Self::from_batch(batch)?);
        }
        Ok(rows)
    }
}

pub(super) fn column<'a, A: Array + 'static>(
    table: &'static str,
    batch: &'a RecordBatch,
    name: &str,
) -> Result<&'a A, TableError> {
    let err = |reason: &str| TableError {
        table,
        column: name.to_string(),
        reason: reason.to_string(),
    };
    batch
        .column_by_name(name)
        .ok_or_else(|| err("missing"))?
        .as_any()
        .downcast_ref::<A>()
        .ok_or_else(|| err("wrong type"))
}

pub(super) fn no_nulls(
    table: &'static str,
    name: &str,
    array: &dyn Array,
) -> Result<(), TableError> {
    if array.null_count() > 0 {
        let row = (0..array.len()).find(|&i| array.is_null(i)).unwrap_or(0);
        return Err(TableError {
            table,
            column: name.to_string(),
            reason: format!("null in a non-nullable column at row {row}"),
        });
    }
    Ok(())
}

pub(super) fn strings(
    table: &'static str,
    batch: &RecordBatch,
    name: &str,
) -> Result<Vec<String>, TableError> {
    let a = column::<StringArray>(table, batch, name)?;
    no_nulls(table, name, a)?;
    Ok(a.iter()
        .map(|v| v.unwrap_or_default().to_string())
        .collect())
}

pub(super) fn primitives<T: ArrowPrimitiveType>(
    table: &'static str,
    batch: &RecordBatch,
    name: &str,
) -> Result<Vec<T::Native>, TableError> {
    let a = column::<PrimitiveArray<T>>(table, batch, name)?;
    no_nulls(table, name, a)?;
    Ok(a.values().to_vec())
}

pub(super) fn string_array<'a>(values: impl Iterator<Item = &'a str>) -> ArrayRef {
    Arc::new(StringArray::from_iter_values(values))
}

pub(super) fn u32_array(values: impl Iterator<Item = u32>) -> ArrayRef {
    Arc::new(UInt32Array::from_iter_values(values))
}

pub(crate) fn batch(schema: SchemaRef, columns: Vec<ArrayRef>) -> RecordBatch {
    RecordBatch::try_new(schema, columns).expect("columns match their schema")
}
