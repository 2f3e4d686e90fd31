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
    /// event's articles because several of them hold it
    /// (`epimine_method::import::segment::repeated`): site furniture (bylines, "Read more", photo
    /// credits), dropped from every article, or a news paragraph shared by several articles
    /// (agency copy), kept in the first article holding it and dropped from the others. Sorted by
    /// key event, then text.
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

table! {
    /// One row of `paragraphs`: one article that `epimine import --articles` read, as its
    /// paragraphs' fixed-seed hashes and word counts, in order
    /// (`epimine_method::import::segment::Mark`), kept so that an `--append` finds the repeated paragraphs (furniture, copies) over every
    /// batch of the corpus, not only its own (issue 64 item 6). Key events in import order,
    /// articles in their order of the batch (those left with no segment too).
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct ArticleParagraphs in "paragraphs" {
        /// The key event.
        pub key_event: String => Utf8,
        /// The article's `doc_id` (in `segments`, or in `copies` for an article made only of
        /// copies); null for one left with nothing.
        pub doc_id: Option<u32> => U32Opt,
        /// Each paragraph's hash.
        pub hashes: Vec<u64> => U64List,
        /// Each paragraph's words.
        pub words: Vec<u32> => U32List,
        /// Each paragraph's first segment (`seg_idx`) in the article; 4294967295 (u32::MAX) for
        /// one dropped (furniture, a copy).
        pub seg_from: Vec<u32> => U32List,
        /// Each paragraph's last segment in the article; u32::MAX for one dropped.
        pub seg_to: Vec<u32> => U32List,
        /// The article's publication instant (the day `segments.doc_date` holds is its day in
        /// the date's own offset or `--timezone`'s, issue 65 item 3); null when undated.
        pub published_at: Option<i64> => TimestampMsOpt,
    }
}

table! {
    /// One row of `copies`: an article `epimine import --articles` read whose paragraphs were
    /// all copies of an earlier article's (agency copy an outlet carried whole), so that it has
    /// no segment of its own (issue 65 item 5). A run lists it among the articles of each
    /// episode that holds a segment it carries (`episode_articles.copy_of`). By key event, then
    /// `doc_id`.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct CopyArticle in "copies" {
        /// The key event.
        pub key_event: String => Utf8,
        /// Its article index in the key event (after those of the same import that have
        /// segments).
        pub doc_id: u32 => U32,
        /// Its id or URL in its source.
        pub source_id: Option<String> => Utf8Opt,
        /// Its title.
        pub title: Option<String> => Utf8Opt,
        /// Its publication date (days since 1970-01-01).
        pub published: Option<i32> => Date32Opt,
        /// Its publication instant.
        pub published_at: Option<i64> => TimestampMsOpt,
        /// The article it copies (`doc_id` in `segments`): of those whose paragraphs it carries,
        /// the one holding most of them (the first on a tie).
        pub copy_of: u32 => U32,
        /// The segments (`seg_idx` of `copy_of`) holding the paragraphs it carries.
        pub carried: Vec<u32> => U32List,
    }
}
