//! What `import --articles` is told: the input columns' names, what a bad row does, how
//! articles are cut.

use serde::{Deserialize, Serialize};

use crate::import::segment::SegmentConfig;

/// The input columns' names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Columns {
    /// The key event the article belongs to (required).
    pub key_event: String,
    /// The article's id or URL in its source (required, unique per key event).
    pub id: String,
    /// Publication time (optional column).
    pub published: String,
    /// Title (optional column).
    pub title: String,
    /// Body text (required).
    pub text: String,
    /// Theme (optional column).
    pub theme: String,
}

impl Default for Columns {
    fn default() -> Self {
        Self {
            key_event: "key_event".into(),
            id: "id".into(),
            published: "published".into(),
            title: "title".into(),
            text: "text".into(),
            theme: "theme".into(),
        }
    }
}

/// What to do with bad rows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum OnError {
    /// Report every bad row and write nothing.
    #[default]
    Fail,
    /// Write the good rows, and the bad ones to `rejected.parquet`.
    Skip,
}

/// The `[import]` section of a job file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ImportConfig {
    /// Column names.
    pub columns: Columns,
    /// Bad rows: `fail` (default) or `skip`.
    pub on_error: OnError,
    /// A strftime format (chrono's: `%d/%m/%Y %H:%M`, `%B %d, %Y`) for publication times in
    /// none of the forms read by default; tried first, then those forms. A format with no time
    /// reads midnight; one with no offset (`%z`) reads UTC.
    pub date_format: Option<String>,
    /// The newsroom's time zone, an IANA name (`America/New_York`, `Europe/London`), for the
    /// dates that carry none of their own (issue 65 item 3): a date without an offset is that
    /// zone's local time, and an instant in UTC (`Z`, `+00:00`, `GMT`, Unix seconds or
    /// milliseconds, a Parquet timestamp) falls on its day there; a date with another offset
    /// keeps its own day. Unset: every date's own offset (UTC for those without one).
    pub timezone: Option<String>,
    /// How articles are cut into segments.
    pub segment: SegmentConfig,
    /// The longest text an article keeps, in characters: a longer one is cut there (at a space)
    /// with a warning naming it. The default, 1,000,000 (about 150,000 words), is far above any
    /// real article; it bounds what a blob in the text column costs.
    #[serde(default = "default_max_article_chars")]
    pub max_article_chars: usize,
}

/// [`ImportConfig::max_article_chars`]'s default.
pub const DEFAULT_MAX_ARTICLE_CHARS: usize = 1_000_000;

fn default_max_article_chars() -> usize {
    DEFAULT_MAX_ARTICLE_CHARS
}

impl Default for ImportConfig {
    fn default() -> Self {
        Self {
            columns: Columns::default(),
            on_error: OnError::default(),
            date_format: None,
            timezone: None,
            segment: SegmentConfig::default(),
            max_article_chars: DEFAULT_MAX_ARTICLE_CHARS,
        }
    }
}

impl ImportConfig {
    /// The zone of [`ImportConfig::timezone`], when one is named; a name that is not an IANA
    /// zone is an error naming it.
    pub fn zone(&self) -> Result<Option<chrono_tz::Tz>, String> {
        let Some(name) = &self.timezone else {
            return Ok(None);
        };
        name.trim().parse::<chrono_tz::Tz>().map(Some).map_err(|_| {
            format!(
                "--timezone `{}` is not an IANA time zone name (e.g. `America/New_York`, \
                 `Europe/London`, `Asia/Kolkata`, `UTC`)",
                name.escape_debug()
            )
        })
    }

    /// Checks the settings before any row is read: the segmenting ones
    /// ([`SegmentConfig::validate`]) and `date_format`, whose every `%` must be one chrono knows
    /// (issue 64: `%Q` failed every row, one row at a time).
    pub fn validate(&self) -> Result<(), String> {
        self.segment.validate()?;
        if self.max_article_chars < 1000 {
            return Err(format!(
                "import.max_article_chars = {}: at least 1000 (the default, {DEFAULT_MAX_ARTICLE_CHARS}, \
                 is far above any real article)",
                self.max_article_chars
            ));
        }
        self.zone()?;
        if let Some(f) = &self.date_format {
            let bad = chrono::format::StrftimeItems::new(f)
                .any(|item| matches!(item, chrono::format::Item::Error));
            if bad || f.trim().is_empty() {
                return Err(format!(
                    "--date-format `{}` is not a date format chrono reads (e.g. `%d/%m/%Y`, \
                     `%B %d, %Y %H:%M`; the specifiers: \
                     https://docs.rs/chrono/latest/chrono/format/strftime/)",
                    f.escape_debug()
                ));
            }
        }
        Ok(())
    }
}
