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

use std::ops::Range;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use bytes::Bytes;
use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt, TryStreamExt};
use object_store::aws::AmazonS3Builder;
use object_store::buffered::BufWriter;
use object_store::local::LocalFileSystem;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use parquet::arrow::arrow_reader::ArrowReaderOptions;
use parquet::arrow::async_reader::{AsyncFileReader, ParquetRecordBatchStreamBuilder};
use parquet::arrow::AsyncArrowWriter;
use parquet::basic::Compression;
use parquet::file::metadata::{ParquetMetaData, ParquetMetaDataReader};
use parquet::file::properties::WriterProperties;

use crate::tables::Table;

mod named;
pub use named::{retry_config, DEFAULT_TIMEOUT_SECS, TIMEOUT_ENV};

/// Rows per Parquet row group. Small enough that workers can split a table by row group.
pub const DEFAULT_ROW_GROUP_ROWS: usize = 64 * 1024;

/// How far back from the end of a Parquet file the first read fetches, to get the footer in one
/// request most of the time.
const FOOTER_PREFETCH: usize = 64 * 1024;

/// Errors of the storage boundary.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// The path or URL could not be understood.
    #[error("bad location `{location}`: {reason}")]
    BadLocation {
        /// What the user gave.
        location: String,
        /// Why it was refused.
        reason: String,
    },
    /// The object store failed.
    #[error("{location}: {}", describe_store_error(source))]
    Store {
        /// The object, as the user would write it.
        location: String,
        /// The store's error.
        #[source]
        source: object_store::Error,
    },
    /// Encoding or decoding Parquet failed (or the store under it).
    #[error("{location}: {}", describe(source))]
    Parquet {
        /// The file, as the user would write it.
        location: String,
        /// Parquet's error.
        #[source]
        source: parquet::errors::ParquetError,
    },
    /// A local directory could not be created.
    #[error("{location}: {}", describe_io_error(source))]
    Io {
        /// The path.
        location: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A table's rows could not be decoded.
    #[error("{location}: {source}")]
    Table {
        /// The file.
        location: String,
        /// What was wrong.
        #[source]
        source: crate::tables::TableError,
    },
    /// A table file holds columns other than the ones expected.
    #[error("{location}: {reason}")]
    Schema {
        /// The file.
        location: String,
        /// What differs.
        reason: String,
    },
}

impl StorageError {
    /// Whether the object or file asked for is not there (what the user named is wrong, not
    /// the store): the Python package raises `InputError` for it.
    pub fn is_not_found(&self) -> bool {
        match self {
            StorageError::Store { source, .. } => {
                matches!(source, object_store::Error::NotFound { .. })
            }
            _ => false,
        }
    }
}

/// Turns an object store error into one line that names the cause a user can act on (missing
/// bucket, refused credentials, no space, no permission, no such file), then the store's own
/// words.
pub fn describe_store_error(e: &object_store::Error) -> String {
    describe(e)
}

/// An error and its sources as one line, the cause a user can act on first (missing bucket,
/// refused credentials, no space, no permission, not found), XML bodies of S3 errors left out.
pub fn describe(e: &(dyn std::error::Error + 'static)) -> String {
    let mut chain = String::new();
    let mut raw = String::new();
    let mut io_found = None;
    let mut not_found = false;
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = source {
        let text = s.to_string();
        raw.push_str(&text);
        let text = text.split("<?xml").next().unwrap_or("").trim_end();
        let text = text.trim_end_matches(':').trim_end();
        if !text.is_empty() && !chain.contains(text) {
            if !chain.is_empty() {
                chain.push_str(": ");
            }
            chain.push_str(text);
        }
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            io_found = io_found.or(io_cause(io));
        }
        if matches!(
            s.downcast_ref::<object_store::Error>(),
            Some(object_store::Error::NotFound { .. })
        ) {
            not_found = true;
        }
        source = s.source();
    }
    let cause = if raw.contains("NoSuchBucket") || raw.contains("bucket does not exist") {
        Some("the bucket does not exist")
    } else if raw.contains("InvalidAccessKeyId")
        || raw.contains("SignatureDoesNotMatch")
        || raw.contains("AccessDenied")
        || raw.contains("403 Forbidden")
        || raw.contains("InvalidToken")
    {
        Some("access refused: check the credentials (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY) and their permissions")
    } else if raw.contains("No space left") || raw.contains("StorageFull") {
        Some("no space left on the device")
    } else if let Some(cause) = io_found {
        Some(cause)
    } else if chain.contains("Permission denied") {
        Some("permission denied")
    } else if not_found || chain.contains("Unable to canonicalize") {
        Some("not found")
    } else if chain.contains("error sending request") || chain.contains("Connection refused") {
        Some("cannot reach the object store (check AWS_ENDPOINT_URL and the network)")
    } else {
        None
    };
    match cause {
        Some(cause) => format!("{cause} ({chain})"),
        None => chain,
    }
}

fn io_cause(e: &std::io::Error) -> Option<&'static str> {
    match e.kind() {
        std::io::ErrorKind::StorageFull => Some("no space left on the device"),
        std::io::ErrorKind::PermissionDenied => Some("permission denied"),
        std::io::ErrorKind::NotFound => Some("not found"),
        std::io::ErrorKind::NotADirectory => Some("a file is in the way of the folder"),
        std::io::ErrorKind::ReadOnlyFilesystem => Some("read-only file system"),
        _ => None,
    }
}

/// An I/O error with its cause first.
pub fn describe_io_error(e: &std::io::Error) -> String {
    match io_cause(e) {
        Some(cause) => format!("{cause} ({e})"),
        None => e.to_string(),
    }
}

/// The local folders that writing to `location` would create: the folder itself and the
/// missing ones above it, deepest first (none for an existing folder or an `s3://` location).
/// A command that fails hands them to [`remove_empty_folders`], so that it leaves nothing new
/// behind.
pub fn new_local_folders(location: &str) -> Vec<std::path::PathBuf> {
    let path = if location.starts_with("file://") {
        match url::Url::parse(location)
            .ok()
            .and_then(|u| u.to_file_path().ok())
        {
            Some(path) => path,
            None => return Vec::new(),
        }
    } else if location.contains("://") || location.is_empty() {
        return Vec::new();
    } else {
        std::path::PathBuf::from(location)
    };
    let mut new = Vec::new();
    let mut at = Some(path.as_path());
    while let Some(p) = at.filter(|p| !p.as_os_str().is_empty() && !p.exists()) {
        new.push(p.to_path_buf());
        at = p.parent();
    }
    new
}

/// Removes those of `folders` (deepest first, as [`new_local_folders`] gives them) that are
/// empty; a folder something was written into stays.
pub fn remove_empty_folders(folders: &[std::path::PathBuf]) {
    for folder in folders {
        if std::fs::remove_dir(folder).is_err() {
            break;
        }
    }
}

/// Result type of this module.
pub type Result<T, E = StorageError> = std::result::Result<T, E>;

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
        let strip = self.prefix.as_ref();
        let mut found: Vec<_> = metas
            .into_iter()
            .map(|m| {
                let full = m.location.as_ref();
                let name = full
                    .strip_prefix(strip)
                    .unwrap_or(full)
                    .trim_start_matches('/')
                    .to_string();
                (name, m.size, std::time::SystemTime::from(m.last_modified))
            })
            .collect();
        found.sort();
        Ok(found)
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
        let strip = self.prefix.as_ref();
        let mut names: Vec<String> = metas
            .into_iter()
            .map(|m| {
                let full = m.location.as_ref();
                full.strip_prefix(strip)
                    .unwrap_or(full)
                    .trim_start_matches('/')
                    .to_string()
            })
            .collect();
        names.sort();
        names
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
        let name = T::file_name();
        let batches = self.read_parquet(&name, &T::schema()).await?;
        T::from_batches(&batches).map_err(|source| StorageError::Table {
            location: self.display_child(&name),
            source,
        })
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
        check_fields(&location, builder.schema(), expected)?;
        if let Some(groups) = row_groups {
            builder = builder.with_row_groups(groups);
        }
        let stream = builder.build().map_err(pq)?;
        let batches: Vec<RecordBatch> = stream.map(|b| b.map_err(pq)).try_collect().await?;
        batches
            .into_iter()
            .map(|b| {
                RecordBatch::try_new(Arc::clone(expected), b.columns().to_vec()).map_err(|e| {
                    StorageError::Schema {
                        location: location.clone(),
                        reason: e.to_string(),
                    }
                })
            })
            .collect()
    }

    /// Reads the whole Parquet file `name` and checks that its columns are exactly `expected`'s
    /// (names, types and nullability, in order).
    pub async fn read_parquet(&self, name: &str, expected: &SchemaRef) -> Result<Vec<RecordBatch>> {
        self.read_row_groups(name, expected, None).await
    }
}

/// The fixed writer properties of every Parquet file we write.
fn writer_properties(metadata: Vec<(String, String)>) -> WriterProperties {
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
struct HashingSink {
    sink: BufWriter,
    hasher: sha2::Sha256,
    bytes: u64,
    shutting_down: bool,
}

impl HashingSink {
    fn new(sink: BufWriter) -> Self {
        Self {
            sink,
            hasher: sha2::Sha256::default(),
            bytes: 0,
            shutting_down: false,
        }
    }

    /// Drops a staged upload (once, never after the shutdown began).
    async fn abort(&mut self) {
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
/// [`Location::write_table`]'s for the same rows, and memory holds at most one such batch and
/// the row group being encoded), and the file appears under its name only when
/// [`TableWriter::finish`] completes.
pub struct TableWriter<T: Table> {
    writer: Option<AsyncArrowWriter<HashingSink>>,
    buffer: Vec<T>,
    rows: u64,
    location: String,
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
            sha256: hash.iter().map(|b| format!("{b:02x}")).collect(),
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

fn check_fields(location: &str, found: &SchemaRef, expected: &SchemaRef) -> Result<()> {
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
    store: Arc<dyn ObjectStore>,
    path: ObjectPath,
    size: u64,
    display: String,
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
