//! The input tables: the corpus (`segments`), its gold annotation (`labels`, `gold_episodes`)
//! and the rows an import left out (`rejected`).

use arrow_schema::SchemaRef;

use super::table::Table;

/// `segments`: the input corpus, ordered by (key_event, doc_id, seg_idx).
pub fn segments_schema() -> SchemaRef {
    Segment::schema()
}

/// `labels`: the gold label of a segment: an episode id as text, `M` (several episodes or
/// general) or `X` (no episode).
pub fn labels_schema() -> SchemaRef {
    Label::schema()
}

/// `gold_episodes`: the described gold episodes of each key event.
pub fn gold_episodes_schema() -> SchemaRef {
    GoldEpisode::schema()
}

table! {
    /// One row of `segments`.
    #[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
    pub struct Segment in "segments" {
        /// The key event (its folder name).
        pub key_event: String => Utf8,
        /// The theme (the folder above the event), if any.
        pub theme: Option<String> => Utf8Opt,
        /// 0-based article index in file order.
        pub doc_id: u32 => U32,
        /// Publication date of the article, days since 1970-01-01.
        pub doc_date: Option<i32> => Date32Opt,
        /// 0-based segment index inside the article.
        pub seg_idx: u32 => U32,
        /// The segment's text.
        pub text: String => Utf8,
        /// The article's id in its source (`epimine import --articles`), if given.
        pub source_id: Option<String> => Utf8Opt,
        /// The article's title, if given.
        pub title: Option<String> => Utf8Opt,
    }
}

table! {
    /// One row of `labels`.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Label in "labels" {
        /// The key event.
        pub key_event: String => Utf8,
        /// Article index.
        pub doc_id: u32 => U32,
        /// Segment index inside the article.
        pub seg_idx: u32 => U32,
        /// Episode id as text, `M` or `X` (as the annotation file has it).
        pub label: String => Utf8,
    }
}

table! {
    /// One row of `gold_episodes`.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct GoldEpisode in "gold_episodes" {
        /// The key event.
        pub key_event: String => Utf8,
        /// The episode id labels refer to.
        pub episode_id: u32 => U32,
        /// `subject | action | object | time | location`.
        pub description: String => Utf8,
    }
}

table! {
    /// One row of `rejected`: an input row `epimine import --articles --on-error skip` left out,
    /// and why.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Rejected in "rejected" {
        /// The input file.
        pub file: String => Utf8,
        /// 1-based row (Parquet) or line (JSON Lines, CSV) in the file.
        pub row: u32 => U32,
        /// The column at fault, when one is.
        pub column: Option<String> => Utf8Opt,
        /// Why the row was left out.
        pub reason: String => Utf8,
        /// The row as JSON (its configured columns), when it could be read.
        pub record: Option<String> => Utf8Opt,
    }
}

table! {
    /// One row of `boilerplate`: a paragraph `epimine import --articles` dropped from one key
    /// event's articles because several of them hold it (`crate::import::segment::repeated`):
    /// site furniture (bylines, "Read more", photo credits), dropped from every article, or a
    /// news paragraph shared by several articles (agency copy), kept in the first article
    /// holding it and dropped from the others. Sorted by key event, then text.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Boilerplate in "boilerplate" {
        /// The key event.
        pub key_event: String => Utf8,
        /// The paragraph (whitespace collapsed).
        pub text: String => Utf8,
        /// How many times it was dropped (once per article holding it; a copy: once per
        /// article after the first).
        pub dropped: u32 => U32,
        /// `furniture` (dropped from every article) or `copy` (kept once, in the first article
        /// holding it).
        pub kind: String => Utf8,
    }
}
