//! What the page shows, and what was written.

/// Default number of segments shown per episode.
pub const DEFAULT_TOP_SEGMENTS: usize = 5;

/// The file name written when `--out` is a folder.
pub const DEFAULT_FILE: &str = "report.html";

/// Which of an episode's segments the page shows first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SegmentOrder {
    /// The run's own `rank` (0 first): what `episodes.rank` chose (density by default,
    /// confidence with `rank = "confidence"`); the order `epimine eval` takes its top k from.
    Rank,
    /// Classification confidence, highest first (ties by rank).
    Confidence,
}

/// What the page shows.
#[derive(Debug, Clone)]
pub struct ReportOptions {
    /// Segments shown per episode.
    pub top_segments: usize,
    /// In which order.
    pub order: SegmentOrder,
    /// The estimation trial shown (runs with an LLM have several; 0 otherwise).
    pub trial: u32,
}

impl Default for ReportOptions {
    fn default() -> Self {
        Self {
            top_segments: DEFAULT_TOP_SEGMENTS,
            order: SegmentOrder::Rank,
            trial: 0,
        }
    }
}

/// What was written.
#[derive(Debug, Clone)]
pub struct ReportFiles {
    /// Where, as the user wrote it.
    pub location: String,
    /// Key events on the page.
    pub events: usize,
    /// Episodes on the page.
    pub episodes: usize,
    /// Bytes.
    pub bytes: usize,
}
