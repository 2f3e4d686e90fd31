//! The errors of `import --articles`: the whole import's, and one row's.

use crate::storage::StorageError;

/// Errors of `epimine import --articles`.
#[derive(Debug, thiserror::Error)]
pub enum ArticlesError {
    /// Reading or writing failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// The output folder cannot hold the corpus.
    #[error(transparent)]
    Corpus(#[from] crate::corpus::CorpusError),
    /// Another `--append` (or a run's lock) holds the corpus.
    #[error("{corpus}: {reason}")]
    Busy {
        /// The corpus.
        corpus: String,
        /// Who holds it, or why it could not be taken.
        reason: String,
    },
    /// `--append` to a folder that holds no corpus.
    #[error("{0}: --append adds articles to a corpus, and this folder holds no segments*.parquet (import it once without --append)")]
    NothingToAppendTo(String),
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
    /// Required columns are missing: each named with its flag, and the file's columns.
    #[error("{file}: {message}")]
    MissingColumns {
        /// The file.
        file: String,
        /// Every required column missing, the optional ones too, and the file's columns.
        message: String,
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
