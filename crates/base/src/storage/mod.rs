//! Where tables live: local paths, `file://` URLs and `s3://bucket/prefix`, read and written
//! through `object_store`, with Parquet on top.
//!
//! Every path the CLI takes goes through [`Location::parse`]. Parquet files are written through
//! object_store's [`BufWriter`] into parquet's [`AsyncArrowWriter`], and read through
//! [`ObjectReader`], our own [`AsyncFileReader`] over an object store (so a reader fetches only
//! the byte ranges — footer and row groups — it needs).
//!
//! Whole or nothing: on a local disk, object_store stages a multipart upload in a temporary file
//! and renames it into place when the upload completes; on S3 an object appears only when its
//! multipart upload completes. A failed write is aborted, so no half file is ever visible under the
//! final name.

use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use object_store::aws::AmazonS3Builder;
use object_store::buffered::BufWriter;
use object_store::local::LocalFileSystem;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use parquet::arrow::arrow_reader::ArrowReaderOptions;
use parquet::arrow::async_reader::{AsyncFileReader, ParquetRecordBatchStreamBuilder};
use parquet::arrow::AsyncArrowWriter;

use crate::tables::Table;

mod error;
mod folders;
pub mod lock;
mod named;
mod parquet_io;
mod staged;
pub use error::{describe, describe_io_error, describe_store_error, Result, StorageError};
pub use folders::{new_local_folders, remove_empty_folders};
pub use named::{retry_config, DEFAULT_TIMEOUT_SECS, TIMEOUT_ENV};
use parquet_io::{check_fields, writer_properties, HashingSink};
pub use parquet_io::{ObjectReader, TableWriter, Written, DEFAULT_ROW_GROUP_ROWS};
pub use staged::{delete_staged, is_staged, STAGED_AGE};

/// Which kind of store a [`Location`] points into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreKind {
    /// A local directory (plain path or `file://`).
    Local,
    /// An S3-protocol object store (`s3://`).
    S3,
}

/// A directory-like place: a store plus a prefix inside it.
#[derive(Debug, Clone)]
pub struct Location {
    store: Arc<dyn ObjectStore>,
    prefix: ObjectPath,
    display: String,
    kind: StoreKind,
}

impl Location {
    /// Parses a local path, `file://…` URL or `s3://bucket/prefix`.
    ///
    /// S3 credentials, region and endpoint come from the usual AWS environment variables
    /// (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`, `AWS_ENDPOINT_URL`,
    /// `AWS_ALLOW_HTTP`, …). A local directory that does not exist yet is created when
    /// `create` is true.
    pub fn parse(location: &str, create: bool) -> Result<Self> {
        let bad = |reason: String| StorageError::BadLocation {
            location: location.to_string(),
            reason,
        };
        if let Some(rest) = location.strip_prefix("s3://") {
            let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
            if bucket.is_empty() {
                return Err(bad("no bucket name after s3://".into()));
            }
            let store = AmazonS3Builder::from_env()
                .with_bucket_name(bucket)
                .with_retry(retry_config().map_err(bad)?)
                .build()
                .map_err(|e| bad(e.to_string()))?;
            let prefix =
                ObjectPath::parse(prefix.trim_matches('/')).map_err(|e| bad(e.to_string()))?;
            let store = named::NamedStore::new(Arc::new(store), &format!("s3://{bucket}"));
            return Ok(Self {
                store: Arc::new(store),
                prefix,
                display: location.trim_end_matches('/').to_string(),
                kind: StoreKind::S3,
            });
        }
        let path = if location.starts_with("file://") {
            url::Url::parse(location)
                .map_err(|e| bad(e.to_string()))?
                .to_file_path()
                .map_err(|()| bad("not a local file URL".into()))?
        } else if location.contains("://") {
            return Err(bad(
                "only local paths, file:// and s3:// are supported".into()
            ));
        } else {
            std::path::PathBuf::from(location)
        };
        if create {
            std::fs::create_dir_all(&path).map_err(|source| StorageError::Io {
                location: location.to_string(),
                source,
            })?;
        } else if !path.is_dir() {
            let reason = if path.exists() {
                "not a folder"
            } else {
                "no such folder"
            };
            return Err(bad(reason.into()));
        }
        let store =
            LocalFileSystem::new_with_prefix(&path).map_err(|source| StorageError::Store {
                location: location.to_string(),
                source,
            })?;
        Ok(Self {
            store: Arc::new(store),
            prefix: ObjectPath::default(),
            display: location.trim_end_matches('/').to_string(),
            kind: StoreKind::Local,
        })
    }

    /// Parses the path or URL of one file: the [`Location`] of its folder (created when `create`
    /// is true and it is local) and the file's name, so `out/x.parquet`, `file:///data/x.parquet`
    /// and `s3://bucket/runs/x.parquet` all work where a command writes or reads one file.
    pub fn parse_file(path: &str, create: bool) -> Result<(Self, String)> {
        let bad = |reason: &str| StorageError::BadLocation {
            location: path.to_string(),
            reason: reason.to_string(),
        };
        if path.ends_with('/') {
            return Err(bad("no file name"));
        }
        let (folder, name) = match path.rsplit_once('/') {
            // `file:///x.parquet`: the folder is the root.
            Some(("file://", name)) => ("file:///".to_string(), name),
            // `s3://x.parquet`: no bucket.
            Some((folder, _)) if folder.ends_with(":/") => return Err(bad("no bucket")),
            Some((folder, name)) => (folder.to_string(), name),
            None => (".".to_string(), path),
        };
        if name.is_empty() || name == "." || name == ".." {
            return Err(bad("no file name"));
        }
        let folder = if folder.is_empty() {
            "/".to_string()
        } else {
            folder
        };
        Ok((Self::parse(&folder, create)?, name.to_string()))
    }

    /// The kind of store.
    pub fn kind(&self) -> StoreKind {
        self.kind
    }

    /// The local folder, for a local location.
    pub fn local_path(&self) -> Option<std::path::PathBuf> {
        if self.kind != StoreKind::Local {
            return None;
        }
        if self.display.starts_with("file://") {
            return url::Url::parse(&self.display)
                .ok()
                .and_then(|u| u.to_file_path().ok());
        }
        Some(std::path::PathBuf::from(if self.display.is_empty() {
            "/"
        } else {
            &self.display
        }))
    }

    /// The location as the user wrote it (no trailing slash).
    pub fn display(&self) -> &str {
        &self.display
    }

    /// How the user would write the object `name` under this location.
    pub fn display_child(&self, name: &str) -> String {
        format!("{}/{}", self.display, name)
    }

    fn object(&self, name: &str) -> ObjectPath {
        // As the store lists names (a file `copy%20.csv` or `feed[1].csv` is its own name, not
        // one to percent-encode again); a name the store would not list (an empty part, `..`)
        // part by part, encoded.
        let parts: Vec<&str> = name.split('/').filter(|p| !p.is_empty()).collect();
        let joined = std::iter::once(self.prefix.as_ref())
            .filter(|p| !p.is_empty())
            .chain(parts.iter().copied())
            .collect::<Vec<_>>()
            .join("/");
        if let Ok(path) = ObjectPath::parse(&joined) {
            return path;
        }
        name.split('/')
            .filter(|p| !p.is_empty())
            .fold(self.prefix.clone(), |path, part| path.clone().join(part))
    }

    fn store_err(&self, name: &str) -> impl FnOnce(object_store::Error) -> StorageError + '_ {
        let location = self.display_child(name);
        move |source| StorageError::Store { location, source }
    }

    /// Reads a whole object.
    pub async fn get(&self, name: &str) -> Result<Bytes> {
        let result = self
            .store
            .get(&self.object(name))
            .await
            .map_err(self.store_err(name))?;
        result.bytes().await.map_err(self.store_err(name))
    }

    /// Whether the object exists.
    pub async fn exists(&self, name: &str) -> Result<bool> {
        match self.store.head(&self.object(name)).await {
            Ok(_) => Ok(true),
            Err(object_store::Error::NotFound { .. }) => Ok(false),
            Err(e) => Err(self.store_err(name)(e)),
        }
    }

    /// Writes a whole object in one request.
    pub async fn put(&self, name: &str, data: Bytes) -> Result<()> {
        self.store
            .put(&self.object(name), PutPayload::from_bytes(data))
            .await
            .map_err(self.store_err(name))?;
        Ok(())
    }

    /// The size of an object, in bytes.
    pub async fn size(&self, name: &str) -> Result<u64> {
        let meta = self
            .store
            .head(&self.object(name))
            .await
            .map_err(self.store_err(name))?;
        Ok(meta.size)
    }

    /// Writes a whole object only where there is none (on a local disk a hard link of a
    /// staged file, on S3 a conditional put, `If-None-Match: *`): two writers racing for one
    /// name, one wins. Whether this one did (`false`: an object was already there).
    pub async fn put_new(&self, name: &str, data: Bytes) -> Result<bool> {
        let mode = object_store::PutMode::Create;
        match self
            .store
            .put_opts(
                &self.object(name),
                PutPayload::from_bytes(data),
                mode.into(),
            )
            .await
        {
            Ok(_) => Ok(true),
            Err(object_store::Error::AlreadyExists { .. }) => Ok(false),
            Err(e) => Err(self.store_err(name)(e)),
        }
    }

    /// The objects in the folder `dir` of this location (and below it): each one's name
    /// relative to this location, size and time of its last write (the store's clock).
    pub async fn list_folder(
        &self,
        dir: &str,
    ) -> Result<Vec<(String, u64, std::time::SystemTime)>> {
        let metas: Vec<_> = self
            .store
            .list(Some(&self.object(dir)))
            .try_collect()
            .await
            .map_err(self.store_err(dir))?;
        let mut found: Vec<_> = metas
            .into_iter()
            .map(|m| {
                (
                    self.relative_name(&m.location),
                    m.size,
                    std::time::SystemTime::from(m.last_modified),
                )
            })
            .collect();
        found.sort();
        Ok(found)
    }

    /// The folder `dir` of this location, as a location of its own (the same store).
    pub fn folder(&self, dir: &str) -> Location {
        Location {
            store: Arc::clone(&self.store),
            prefix: self.object(dir),
            display: self.display_child(dir.trim_matches('/')),
            kind: self.kind,
        }
    }

    /// Copies the object `from` to `to`, replacing what is there in one step (on a local disk
    /// a hard link staged and renamed into place, no bytes copied; on S3 a server-side copy).
    pub async fn copy(&self, from: &str, to: &str) -> Result<()> {
        if let Some(dir) = self.local_path() {
            // Already the same file (a publication done again): renaming a hard link over its
            // own name does nothing and would leave the staged link behind.
            use std::os::unix::fs::MetadataExt;
            let same = |a: std::fs::Metadata, b: std::fs::Metadata| {
                a.dev() == b.dev() && a.ino() == b.ino()
            };
            if let (Ok(a), Ok(b)) = (
                std::fs::metadata(dir.join(from)),
                std::fs::metadata(dir.join(to)),
            ) {
                if same(a, b) {
                    return Ok(());
                }
            }
        }
        self.store
            .copy(&self.object(from), &self.object(to))
            .await
            .map_err(self.store_err(to))
    }

    /// Deletes an object (a missing one is no error).
    pub async fn delete(&self, name: &str) -> Result<()> {
        match self.store.delete(&self.object(name)).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(self.store_err(name)(e)),
        }
    }

    /// Starts writing the rows of table `T` as `<location>/<T::NAME>.parquet`, a batch at a time
    /// ([`TableWriter`]): the same bytes as [`Location::write_table`] with the same rows.
    pub fn table_writer<T: Table>(&self) -> Result<TableWriter<T>> {
        self.table_writer_named(&T::file_name())
    }

    /// [`Location::table_writer`] into the file `name` (e.g. `history/000002.parquet`).
    pub fn table_writer_named<T: Table>(&self, name: &str) -> Result<TableWriter<T>> {
        let name = name.to_string();
        let location = self.display_child(&name);
        let sink = HashingSink::new(BufWriter::new(Arc::clone(&self.store), self.object(&name)));
        let writer =
            AsyncArrowWriter::try_new(sink, T::schema(), Some(writer_properties(Vec::new())))
                .map_err(|source| StorageError::Parquet {
                    location: location.clone(),
                    source,
                })?;
        Ok(TableWriter {
            writer: Some(writer),
            buffer: Vec::new(),
            rows: 0,
            location,
        })
    }

    /// Lists the objects directly in this location (not in folders below it), as names
    /// relative to it, sorted: one listing call, however much lies below.
    pub async fn list_top(&self) -> Result<Vec<String>> {
        let prefix = (!self.prefix.as_ref().is_empty()).then_some(&self.prefix);
        let listed = self
            .store
            .list_with_delimiter(prefix)
            .await
            .map_err(self.store_err(""))?;
        Ok(self.relative_names(listed.objects))
    }

    /// Lists every object below this location, as names relative to it, sorted.
    pub async fn list(&self) -> Result<Vec<String>> {
        let prefix = (!self.prefix.as_ref().is_empty()).then_some(&self.prefix);
        let metas: Vec<_> = self
            .store
            .list(prefix)
            .try_collect()
            .await
            .map_err(self.store_err(""))?;
        Ok(self.relative_names(metas))
    }

    /// The listed objects' names relative to this location, sorted.
    fn relative_names(&self, metas: Vec<object_store::ObjectMeta>) -> Vec<String> {
        let mut names: Vec<String> = metas
            .into_iter()
            .map(|m| self.relative_name(&m.location))
            .collect();
        names.sort();
        names
    }

    /// An object's name relative to this location, as the store lists it (and as
    /// [`Location::object`] takes it back).
    fn relative_name(&self, path: &ObjectPath) -> String {
        let full = path.as_ref();
        full.strip_prefix(self.prefix.as_ref())
            .unwrap_or(full)
            .trim_start_matches('/')
            .to_string()
    }

    /// Writes `batches` as the Parquet file `name`, whole or not at all.
    ///
    /// The bytes depend only on the batches: fixed writer properties, snappy compression,
    /// [`DEFAULT_ROW_GROUP_ROWS`] rows per row group.
    pub async fn write_parquet(
        &self,
        name: &str,
        schema: SchemaRef,
        batches: &[RecordBatch],
    ) -> Result<()> {
        self.write_parquet_with_metadata(name, schema, batches, Vec::new())
            .await
    }

    /// As [`Location::write_parquet`], with extra key-value pairs in the file's metadata.
    pub async fn write_parquet_with_metadata(
        &self,
        name: &str,
        schema: SchemaRef,
        batches: &[RecordBatch],
        metadata: Vec<(String, String)>,
    ) -> Result<()> {
        let location = self.display_child(name);
        let pq = |source| StorageError::Parquet {
            location: location.clone(),
            source,
        };
        let props = writer_properties(metadata);
        let sink = HashingSink::new(BufWriter::new(Arc::clone(&self.store), self.object(name)));
        let mut writer = AsyncArrowWriter::try_new(sink, schema, Some(props)).map_err(pq)?;
        let mut written = Ok(());
        for batch in batches {
            if let Err(e) = writer.write(batch).await {
                written = Err(pq(e));
                break;
            }
        }
        // `finish` completes the upload (it shuts the BufWriter down), publishing the object.
        if written.is_ok() {
            written = writer.finish().await.map(|_| ()).map_err(pq);
        }
        if written.is_err() {
            // Nothing was published: drop the staged upload and report the first error.
            writer.into_inner().abort().await;
        }
        written
    }

    /// Writes the rows of table `T` as `<location>/<T::NAME>.parquet`, whole or not at all.
    pub async fn write_table<T: Table>(&self, rows: &[T]) -> Result<()> {
        let batches: Vec<RecordBatch> = rows
            .chunks(DEFAULT_ROW_GROUP_ROWS)
            .map(T::to_batch)
            .collect();
        self.write_parquet(&T::file_name(), T::schema(), &batches)
            .await
    }

    /// Reads every row of `<location>/<T::NAME>.parquet`, checking its schema.
    pub async fn read_table<T: Table>(&self) -> Result<Vec<T>> {
        self.read_table_named(&T::file_name()).await
    }

    /// [`Self::read_table`] of the file `name` (a corpus's batch: `copies-000002.parquet`).
    pub async fn read_table_named<T: Table>(&self, name: &str) -> Result<Vec<T>> {
        let batches = self.read_parquet(name, &T::schema()).await?;
        T::from_batches(&batches).map_err(|source| StorageError::Table {
            location: self.display_child(name),
            source,
        })
    }

    /// [`Self::read_table`] for a table another tool wrote: a *nullable* column of `T` that the
    /// file lacks is read as nulls (a peer's `assignments`, written by
    /// `../shared/peers/bertopic_run.py` before `stable_id` and `status` existed); every column
    /// the file has must be `T`'s, in `T`'s order, as [`Self::read_table`] asks.
    pub async fn read_table_filling<T: Table>(&self) -> Result<Vec<T>> {
        let name = T::file_name();
        let expected = T::schema();
        // Whether each of `T`'s columns is read from the file (those it lacks must be nullable).
        let mut present = Vec::new();
        let batches = self
            .read_batches(&name, None, |found| {
                present = expected
                    .fields()
                    .iter()
                    .map(|f| found.field_with_name(f.name()).is_ok() || !f.is_nullable())
                    .collect();
                let read = expected.fields().iter().zip(&present).filter(|(_, &p)| p);
                Arc::new(arrow_schema::Schema::new(
                    read.map(|(f, _)| Arc::clone(f)).collect::<Vec<_>>(),
                ))
            })
            .await?;
        let location = self.display_child(&name);
        let filled: Vec<RecordBatch> = batches
            .into_iter()
            .map(|b| {
                let mut columns = b.columns().iter().cloned();
                let all: Vec<_> = expected
                    .fields()
                    .iter()
                    .zip(&present)
                    .filter_map(|(f, &p)| {
                        if p {
                            columns.next()
                        } else {
                            Some(arrow_array::new_null_array(f.data_type(), b.num_rows()))
                        }
                    })
                    .collect();
                RecordBatch::try_new(Arc::clone(&expected), all).map_err(|e| StorageError::Schema {
                    location: location.clone(),
                    reason: e.to_string(),
                })
            })
            .collect::<Result<_>>()?;
        T::from_batches(&filled).map_err(|source| StorageError::Table { location, source })
    }

    /// Opens the Parquet file `name` for range reads.
    pub async fn open_parquet(&self, name: &str) -> Result<ObjectReader> {
        let path = self.object(name);
        let meta = self.store.head(&path).await.map_err(self.store_err(name))?;
        Ok(ObjectReader {
            store: Arc::clone(&self.store),
            path,
            size: meta.size,
            display: self.display_child(name),
        })
    }

    /// The number of row groups of the Parquet file `name`, and its key-value metadata.
    pub async fn parquet_layout(&self, name: &str) -> Result<(usize, Vec<(String, String)>)> {
        let mut reader = self.open_parquet(name).await?;
        let location = reader.display.clone();
        let meta = reader
            .get_metadata(None)
            .await
            .map_err(|source| StorageError::Parquet { location, source })?;
        let kv = meta
            .file_metadata()
            .key_value_metadata()
            .map(|kvs| {
                kvs.iter()
                    .map(|kv| (kv.key.clone(), kv.value.clone().unwrap_or_default()))
                    .collect()
            })
            .unwrap_or_default();
        Ok((meta.num_row_groups(), kv))
    }

    /// The numbers of row groups and rows of the Parquet file `name`, after checking (from its
    /// footer alone) that its columns are exactly `expected`'s: a file of the wrong schema is
    /// found before any of its rows are read.
    pub async fn parquet_row_groups(
        &self,
        name: &str,
        expected: &SchemaRef,
    ) -> Result<(usize, u64)> {
        let mut reader = self.open_parquet(name).await?;
        let location = reader.display.clone();
        let pq = |source| StorageError::Parquet {
            location: location.clone(),
            source,
        };
        let meta = reader.get_metadata(None).await.map_err(pq)?;
        let file = meta.file_metadata();
        let found =
            parquet::arrow::parquet_to_arrow_schema(file.schema_descr(), file.key_value_metadata())
                .map_err(pq)?;
        check_fields(&location, &Arc::new(found), expected)?;
        let rows = u64::try_from(file.num_rows()).unwrap_or_default();
        Ok((meta.num_row_groups(), rows))
    }

    /// Reads the given row groups of the Parquet file `name` (all when `row_groups` is `None`),
    /// checking that its columns are exactly `expected`'s.
    pub async fn read_row_groups(
        &self,
        name: &str,
        expected: &SchemaRef,
        row_groups: Option<Vec<usize>>,
    ) -> Result<Vec<RecordBatch>> {
        self.read_batches(name, row_groups, |_| Arc::clone(expected))
            .await
    }

    /// The given row groups of the Parquet file `name` (all when `None`), after checking that its
    /// columns are exactly those of the schema `expected` makes of the file's own (from its
    /// footer); the batches carry that schema.
    async fn read_batches(
        &self,
        name: &str,
        row_groups: Option<Vec<usize>>,
        expected: impl FnOnce(&SchemaRef) -> SchemaRef,
    ) -> Result<Vec<RecordBatch>> {
        let reader = self.open_parquet(name).await?;
        let location = reader.display.clone();
        let pq = |source| StorageError::Parquet {
            location: location.clone(),
            source,
        };
        let mut builder =
            ParquetRecordBatchStreamBuilder::new_with_options(reader, ArrowReaderOptions::new())
                .await
                .map_err(pq)?;
        let expected = expected(builder.schema());
        check_fields(&location, builder.schema(), &expected)?;
        if let Some(groups) = row_groups {
            builder = builder.with_row_groups(groups);
        }
        let stream = builder.build().map_err(pq)?;
        let batches: Vec<RecordBatch> = stream.map(|b| b.map_err(pq)).try_collect().await?;
        batches
            .into_iter()
            .map(|b| {
                RecordBatch::try_new(Arc::clone(&expected), b.columns().to_vec()).map_err(|e| {
                    StorageError::Schema {
                        location: location.clone(),
                        reason: e.to_string(),
                    }
                })
            })
            .collect()
    }

    /// The distinct values of the string column `column` of the Parquet file `name` (only that
    /// column is read).
    pub async fn distinct_strings(
        &self,
        name: &str,
        column: &str,
    ) -> Result<std::collections::BTreeSet<String>> {
        let reader = self.open_parquet(name).await?;
        let location = reader.display.clone();
        let pq = |source| StorageError::Parquet {
            location: location.clone(),
            source,
        };
        let builder =
            ParquetRecordBatchStreamBuilder::new_with_options(reader, ArrowReaderOptions::new())
                .await
                .map_err(pq)?;
        let mask = parquet::arrow::ProjectionMask::columns(builder.parquet_schema(), [column]);
        let stream = builder.with_projection(mask).build().map_err(pq)?;
        let batches: Vec<RecordBatch> = stream.map(|b| b.map_err(pq)).try_collect().await?;
        let mut values = std::collections::BTreeSet::new();
        for b in &batches {
            let Some(col) = b.column_by_name(column) else {
                continue;
            };
            let Some(a) = col.as_any().downcast_ref::<arrow_array::StringArray>() else {
                return Err(StorageError::Schema {
                    location: location.clone(),
                    reason: format!("column {column} is {}, not utf8", col.data_type()),
                });
            };
            values.extend(a.iter().flatten().map(str::to_string));
        }
        Ok(values)
    }

    /// Reads the whole Parquet file `name` and checks that its columns are exactly `expected`'s
    /// (names, types and nullability, in order).
    pub async fn read_parquet(&self, name: &str, expected: &SchemaRef) -> Result<Vec<RecordBatch>> {
        self.read_row_groups(name, expected, None).await
    }
}
