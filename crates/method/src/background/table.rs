//! The background table on storage: its schema, its document count in the file's metadata, and
//! writing it whole (read back by [`super::load`]).

use std::sync::Arc;

use arrow_array::{RecordBatch, StringArray, UInt32Array};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use crate::storage::{Location, StorageError};

/// Metadata key holding the number of background documents.
pub const N_DOCS_KEY: &str = "epimine.background.n_docs";

/// The schema of a background table.
pub fn background_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("term", DataType::Utf8, false),
        Field::new("doc_freq", DataType::UInt32, false),
    ]))
}

/// Writes a background table (sorted `(term, doc_freq)`, N_bg and more metadata) to `out`, whole
/// or not at all.
pub async fn write_table(
    out: &str,
    doc_freq: &[(String, u32)],
    n_docs: u64,
    mut metadata: Vec<(String, String)>,
) -> Result<(), StorageError> {
    let batch = RecordBatch::try_new(
        background_schema(),
        vec![
            Arc::new(StringArray::from_iter_values(
                doc_freq.iter().map(|(t, _)| t.as_str()),
            )),
            Arc::new(UInt32Array::from_iter_values(
                doc_freq.iter().map(|(_, n)| *n),
            )),
        ],
    )
    .expect("columns match");
    metadata.insert(0, (N_DOCS_KEY.to_string(), n_docs.to_string()));
    let (dir, name) = Location::parse_file(out, true)?;
    dir.write_parquet_with_metadata(&name, background_schema(), &[batch], metadata)
        .await?;
    Ok(())
}
