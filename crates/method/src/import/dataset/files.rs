//! The dataset's layout: the file names, and the files of one event folder.

/// File names of the dataset layout.
pub const SEGMENTS_FILE: &str = "segments.txt";

/// Dates, one per article.
pub const DATES_FILE: &str = "doc_dates.txt";

/// Segment labels.
pub const GROUNDTRUTH_FILE: &str = "groundtruth.tsv";

/// Gold episode descriptions.
pub const EPISODES_FILE: &str = "episodes.tsv";

/// The raw files of one event.
#[derive(Debug, Clone)]
pub struct EventFiles {
    /// The key event (folder name).
    pub key_event: String,
    /// The theme, if any.
    pub theme: Option<String>,
    /// How to name the event's folder in messages.
    pub dir: String,
    /// `segments.txt`.
    pub segments: Vec<u8>,
    /// `doc_dates.txt`, if present.
    pub dates: Option<Vec<u8>>,
    /// `groundtruth.tsv`, if present.
    pub groundtruth: Option<Vec<u8>>,
    /// `episodes.tsv`, if present.
    pub episodes: Option<Vec<u8>>,
}
