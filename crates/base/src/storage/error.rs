//! What can go wrong with storage, and how a store's or the OS's error reads in one line.

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

/// Result type of this module.
pub type Result<T, E = StorageError> = std::result::Result<T, E>;
