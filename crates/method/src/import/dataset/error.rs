//! The errors of `epimine import` (a dataset folder).

use super::files::SEGMENTS_FILE;
use crate::storage::StorageError;

/// Errors of `epimine import`. Each names the file and, where there is one, the 1-based line.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// Reading or writing failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// The output folder cannot hold the corpus.
    #[error(transparent)]
    Corpus(#[from] crate::corpus::CorpusError),
    /// No `segments.txt` below the dataset folder.
    #[error("{dir}: no `{SEGMENTS_FILE}` found below this folder (expected <theme>/<event>/{SEGMENTS_FILE})")]
    NoEvents {
        /// The dataset folder.
        dir: String,
    },
    /// A line is not valid UTF-8.
    #[error("{file}:{line}: invalid UTF-8")]
    Utf8 {
        /// The file.
        file: String,
        /// 1-based line.
        line: usize,
    },
    /// An event has no segments.
    #[error("{file}: no segments (every line is blank)")]
    NoSegments {
        /// The segments file.
        file: String,
    },
    /// The dates file and the segments file disagree on the number of articles.
    #[error("{dates_file}: {dates} dates, but {segments_file} has {articles} articles (one date per article expected)")]
    DateCount {
        /// The dates file.
        dates_file: String,
        /// Dates found.
        dates: usize,
        /// The segments file.
        segments_file: String,
        /// Articles found.
        articles: usize,
    },
    /// A date could not be read.
    #[error("{file}:{line}: `{text}` is not a date (expected M/D/YYYY or YYYY-MM-DD)")]
    BadDate {
        /// The file.
        file: String,
        /// 1-based line.
        line: usize,
        /// The offending text.
        text: String,
    },
    /// A label line is malformed.
    #[error("{file}:{line}: {reason}")]
    BadLabel {
        /// The file.
        file: String,
        /// 1-based line.
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// A gold episode line is malformed.
    #[error("{file}:{line}: {reason}")]
    BadEpisode {
        /// The file.
        file: String,
        /// 1-based line.
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// Two folders carry the same event name.
    #[error("key event `{key_event}` appears twice: {first} and {second}")]
    DuplicateEvent {
        /// The name.
        key_event: String,
        /// First folder.
        first: String,
        /// Second folder.
        second: String,
    },
}
