//! Parquet over an object store: [`TableWriter`] writes a table's batches through object_store's
//! `BufWriter` into parquet's `AsyncArrowWriter` (hashing the bytes as they go: [`Written`]),
//! and [`ObjectReader`] is parquet's `AsyncFileReader` over an object store, fetching only the
//! byte ranges it needs.

use std::ops::Range;
use std::sync::Arc;

use arrow_schema::SchemaRef;
use bytes::Bytes;
use futures::future::BoxFuture;
use futures::FutureExt;
use object_store::buffered::BufWriter;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt};
use parquet::arrow::arrow_reader::ArrowReaderOptions;
use parquet::arrow::async_reader::AsyncFileReader;
use parquet::arrow::AsyncArrowWriter;
use parquet::basic::Compression;
use parquet::file::metadata::{ParquetMetaData, ParquetMetaDataReader};
use parquet::file::properties::WriterProperties;

use super::error::{Result, StorageError};
use crate::tables::Table;

/// Rows per Parquet row group. Small enough that workers can split a table by row group.
pub const DEFAULT_ROW_GROUP_ROWS: usize = 64 * 1024;

/// How far back from the end of a Parquet file the first read fetches, to get the footer in one
/// request most of the time.
pub(super) const FOOTER_PREFETCH: usize = 64 * 1024;

/// The fixed writer properties of every Parquet file we write.
pub(super) fn writer_properties(metadata: Vec<(String, String)>) -> WriterProperties {
    WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_max_row_group_row_count(Some(DEFAULT_ROW_GROUP_ROWS))
        .set_key_value_metadata((!metadata.is_empty()).then(|| {
            metadata
                .into_iter()
                .map(|(k, v)| parquet::file::metadata::KeyValue::new(k, v))
                .collect()
        }))
        .build()
}

/// The upload of one file, hashing what goes through it. It knows whether its shutdown began:
/// object_store's `BufWriter` panics ("Already shut down") when aborted after that, so a failed
/// shutdown (nothing published) is not aborted.
pub(super) struct HashingSink {
    sink: BufWriter,
    hasher: sha2::Sha256,
    bytes: u64,
    shutting_down: bool,
}

impl HashingSink {
    pub(super) fn new(sink: BufWriter) -> Self {
        Self {
            sink,
            hasher: sha2::Sha256::default(),
            bytes: 0,
            shutting_down: false,
        }
    }

    /// Drops a staged upload (once, never after the shutdown began).
    pub(super) async fn abort(&mut self) {
        if !self.shutting_down {
            self.shutting_down = true;
            let _ = self.sink.abort().await;
        }
    }
}

impl parquet::arrow::async_writer::AsyncFileWriter for HashingSink {
    fn write(&mut self, bs: Bytes) -> BoxFuture<'_, parquet::errors::Result<()>> {
        use sha2::Digest;
        use tokio::io::AsyncWriteExt;
        self.hasher.update(&bs);
        self.bytes += bs.len() as u64;
        async move {
            self.sink.write_all(&bs).await?;
            Ok(())
        }
        .boxed()
    }

    fn complete(&mut self) -> BoxFuture<'_, parquet::errors::Result<()>> {
        use tokio::io::AsyncWriteExt;
        self.shutting_down = true;
        async move {
            self.sink.flush().await?;
            self.sink.shutdown().await?;
            Ok(())
        }
        .boxed()
    }
}

/// What [`TableWriter::finish`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// sha256 of the file, hex.
    pub sha256: String,
    /// Rows.
    pub rows: u64,
    /// Bytes.
    pub bytes: u64,
}

/// A Parquet table written a batch of rows at a time, whole or not at all: rows are buffered
/// into [`DEFAULT_ROW_GROUP_ROWS`]-row batches (so the file is the same as
/// [`super::Location::write_table`]'s for the same rows, and memory holds at most one such batch and
/// the row group being encoded), and the file appears under its name only when
/// [`TableWriter::finish`] completes.
pub struct TableWriter<T: Table> {
    pub(super) writer: Option<AsyncArrowWriter<HashingSink>>,
    pub(super) buffer: Vec<T>,
    pub(super) rows: u64,
    pub(super) location: String,
}

impl<T: Table> TableWriter<T> {
    fn parquet_error(&self, source: parquet::errors::ParquetError) -> StorageError {
        StorageError::Parquet {
            location: self.location.clone(),
            source,
        }
    }

    async fn write_buffer(&mut self) -> Result<()> {
        let batch = T::to_batch(&self.buffer);
        self.buffer.clear();
        let Some(writer) = self.writer.as_mut() else {
            return Ok(());
        };
        if let Err(e) = writer.write(&batch).await {
            let e = self.parquet_error(e);
            self.abort().await;
            return Err(e);
        }
        Ok(())
    }

    /// Appends rows.
    pub async fn push(&mut self, rows: Vec<T>) -> Result<()> {
        self.rows += rows.len() as u64;
        for row in rows {
            self.buffer.push(row);
            if self.buffer.len() == DEFAULT_ROW_GROUP_ROWS {
                self.write_buffer().await?;
            }
        }
        Ok(())
    }

    /// Writes the last rows and publishes the file under its name.
    pub async fn finish(mut self) -> Result<Written> {
        if !self.buffer.is_empty() {
            self.write_buffer().await?;
        }
        let Some(mut writer) = self.writer.take() else {
            return Err(StorageError::Schema {
                location: self.location.clone(),
                reason: "the writer was aborted".into(),
            });
        };
        if let Err(e) = writer.finish().await {
            writer.into_inner().abort().await;
            return Err(self.parquet_error(e));
        }
        let sink = writer.into_inner();
        use sha2::Digest;
        let hash = sink.hasher.finalize();
        Ok(Written {
            sha256: crate::digest::hex(&hash),
            rows: self.rows,
            bytes: sink.bytes,
        })
    }

    /// Drops the staged upload: nothing appears under the file's name.
    pub async fn abort(&mut self) {
        if let Some(writer) = self.writer.take() {
            writer.into_inner().abort().await;
        }
    }
}

pub(super) fn check_fields(location: &str, found: &SchemaRef, expected: &SchemaRef) -> Result<()> {
    let describe = |s: &SchemaRef| {
        s.fields()
            .iter()
            .map(|f| {
                format!(
                    "{} {}{}",
                    f.name(),
                    f.data_type(),
                    if f.is_nullable() { "?" } else { "" }
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let same = found.fields().len() == expected.fields().len()
        && found
            .fields()
            .iter()
            .zip(expected.fields().iter())
            .all(|(a, b)| {
                a.name() == b.name()
                    && a.data_type() == b.data_type()
                    && a.is_nullable() == b.is_nullable()
            });
    if same {
        Ok(())
    } else {
        Err(StorageError::Schema {
            location: location.to_string(),
            reason: format!(
                "unexpected columns: found [{}], expected [{}]",
                describe(found),
                describe(expected)
            ),
        })
    }
}

/// A Parquet [`AsyncFileReader`] over any object store: footer and column chunks are fetched as
/// byte ranges.
#[derive(Debug)]
pub struct ObjectReader {
    pub(super) store: Arc<dyn ObjectStore>,
    pub(super) path: ObjectPath,
    pub(super) size: u64,
    pub(super) display: String,
}

impl ObjectReader {
    /// The file as the user would write it.
    pub fn display(&self) -> &str {
        &self.display
    }
}

impl AsyncFileReader for ObjectReader {
    fn get_bytes(&mut self, range: Range<u64>) -> BoxFuture<'_, parquet::errors::Result<Bytes>> {
        async move {
            self.store
                .get_range(&self.path, range)
                .await
                .map_err(|e| parquet::errors::ParquetError::External(Box::new(e)))
        }
        .boxed()
    }

    fn get_byte_ranges(
        &mut self,
        ranges: Vec<Range<u64>>,
    ) -> BoxFuture<'_, parquet::errors::Result<Vec<Bytes>>> {
        async move {
            self.store
                .get_ranges(&self.path, &ranges)
                .await
                .map_err(|e| parquet::errors::ParquetError::External(Box::new(e)))
        }
        .boxed()
    }

    fn get_metadata<'a>(
        &'a mut self,
        _options: Option<&'a ArrowReaderOptions>,
    ) -> BoxFuture<'a, parquet::errors::Result<Arc<ParquetMetaData>>> {
        async move {
            let size = self.size;
            let metadata = ParquetMetaDataReader::new()
                .with_prefetch_hint(Some(FOOTER_PREFETCH))
                .load_and_finish(self, size)
                .await?;
            Ok(Arc::new(metadata))
        }
        .boxed()
    }
}
