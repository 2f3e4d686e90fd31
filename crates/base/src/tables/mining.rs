//! What mining finds on the way to episodes: the vocabulary (`terms`), co-occurring salient
//! pairs (`pairs`) and episode fragments (`fragments`).

use arrow_schema::SchemaRef;

use super::table::Table;

/// `terms`: per key event, every vocabulary term with its statistics (docs/method.md §1).
pub fn terms_schema() -> SchemaRef {
    Term::schema()
}

/// `pairs`: per key event, salient term pairs that co-occur, with their discriminative
/// co-occurrence d (docs/method.md §2, paper eq. 1).
pub fn pairs_schema() -> SchemaRef {
    Pair::schema()
}

/// `fragments`: the episode fragments of every event (docs/method.md §3), with the candidate
/// cluster of those from top articles (§4).
pub fn fragments_schema() -> SchemaRef {
    FragmentRow::schema()
}

table! {
    /// One row of `terms`.
    #[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
    pub struct Term in "terms" {
        /// The key event.
        pub key_event: String => Utf8,
        /// The term.
        pub term: String => Utf8,
        /// Segments of the event containing it.
        pub freq: u32 => U32,
        /// Background documents containing it.
        pub bg_freq: u32 => U32,
        /// Salience (paper eq. 3); −1 for words with too few occurrences.
        pub salience: f64 => F64,
        /// Whether it is in the event's salient set T.
        pub salient: bool => Bool,
        /// The salient term it was expanded from, if it joined T by expansion.
        pub expanded_from: Option<String> => Utf8Opt,
        /// Its synonym group (salient terms only).
        pub group: Option<u32> => U32Opt,
    }
}

table! {
    /// One row of `pairs`.
    #[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
    pub struct Pair in "pairs" {
        /// The key event.
        pub key_event: String => Utf8,
        /// First term (a < b).
        pub a: String => Utf8,
        /// Second term.
        pub b: String => Utf8,
        /// Segments in which both occur.
        pub freq: u32 => U32,
        /// Discriminative co-occurrence d(a, b) (paper eq. 1).
        pub d: f64 => F64,
    }
}

table! {
    /// One row of `fragments`.
    #[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
    pub struct FragmentRow in "fragments" {
        /// The key event.
        pub key_event: String => Utf8,
        /// 0-based id in article order.
        pub fragment_id: u32 => U32,
        /// Its article.
        pub doc_id: u32 => U32,
        /// First segment.
        pub first_seg_idx: u32 => U32,
        /// Last segment.
        pub last_seg_idx: u32 => U32,
        /// Candidate cluster, for fragments of top articles.
        pub cluster: Option<u32> => U32Opt,
    }
}
