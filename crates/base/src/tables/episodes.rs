//! The detected episodes (`episodes`) and the segments assigned to them (`assignments`).

use arrow_schema::SchemaRef;

use super::table::Table;

/// `episodes`: the detected episodes of each key event.
pub fn episodes_schema() -> SchemaRef {
    Episode::schema()
}

/// `assignments`: segments assigned to detected episodes; `rank` 0 is the episode's top
/// segment in the run's `episodes.rank` order (density by default).
pub fn assignments_schema() -> SchemaRef {
    Assignment::schema()
}

table! {
    /// One row of `episodes`.
    #[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
    pub struct Episode in "episodes" {
        /// The key event.
        pub key_event: String => Utf8,
        /// The estimation trial (0 without an LLM; 0..trials with one).
        pub trial: u32 => U32,
        /// The episode's id inside its key event and trial.
        pub episode_id: u32 => U32,
        /// Its id across the runs of one `--out` (`lineage.parquet`'s `stable_id`: kept while
        /// the episode goes on from run to run); null in a baseline's output.
        pub stable_id: Option<u32> => U32Opt,
        /// What became of it in this run (`lineage.parquet`'s `status`: `new`, `found`,
        /// `continued`, `grown`, `shrunk`, `split`); null in a baseline's output.
        pub status: Option<String> => Utf8Opt,
        /// A short title (LLM: its five fields joined by spaces).
        pub title: String => Utf8,
        /// LLM: [subject, action, object, time, location]; empty for `clusters`.
        pub title_fields: Vec<String> => StringList,
        /// Keywords, most telling first.
        pub keywords: Vec<String> => StringList,
        /// LLM: the 2–5 example sentences it extracted; empty for `clusters`.
        pub example_sentences: Vec<String> => StringList,
        /// Number of segments assigned to it.
        pub n_segments: u32 => U32,
        /// `clusters`, `llm`, or a baseline's name (`kmeans`, `hdbscan`).
        pub source: String => Utf8,
        /// Distinct articles among its assigned segments, and those made only of copies that
        /// carry one of them (`episode_articles.copy_of`, `epimine run`).
        pub n_articles: u32 => U32,
        /// When it is told ([`EpisodeSpan`]): the first publication date of its assigned segments
        /// (days since 1970-01-01; none when no segment is dated).
        pub first_date: Option<i32> => Date32Opt,
        /// The date with the most assigned segments (ties: the earliest).
        pub peak_date: Option<i32> => Date32Opt,
        /// The last publication date of its assigned segments.
        pub last_date: Option<i32> => Date32Opt,
        /// Its phase (issue 45): the `episode_id` of the first episode of the group it belongs
        /// to, episodes whose segments lie together (complete linkage of their member
        /// centroids, cut at μ − σ of their distances, `episodes::phases`), so that one phase
        /// told in several vocabularies reads as one; its own id when it stands alone.
        pub phase_id: u32 => U32,
        /// The phase's id across the runs of one `--out`: the lowest `stable_id` among its
        /// episodes; null where `stable_id` is.
        pub phase_stable_id: Option<u32> => U32Opt,
    }
}

/// `episode_articles`: each episode's articles, for people to read: source id or URL, title,
/// date, how many of its segments the episode holds, its best passage, the episode's top one.
pub fn episode_articles_schema() -> SchemaRef {
    EpisodeArticle::schema()
}

table! {
    /// One row of `episode_articles`: an article of an episode (an article with at least one
    /// segment assigned to it, or one made only of copies of such segments: `copy_of`). Rows by
    /// key event, trial, episode, then `article_rank` (the copies after the articles with
    /// segments of their own).
    #[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
    pub struct EpisodeArticle in "episode_articles" {
        /// The key event.
        pub key_event: String => Utf8,
        /// The estimation trial of the episode.
        pub trial: u32 => U32,
        /// The episode.
        pub episode_id: u32 => U32,
        /// Its id across the runs of one `--out` (`lineage.parquet`'s `stable_id`: kept while
        /// the episode goes on from run to run); null in a baseline's output.
        pub stable_id: Option<u32> => U32Opt,
        /// What became of it in this run (`lineage.parquet`'s `status`: `new`, `found`,
        /// `continued`, `grown`, `shrunk`, `split`); null in a baseline's output.
        pub status: Option<String> => Utf8Opt,
        /// The episode's title (as in `episodes`).
        pub episode_title: String => Utf8,
        /// 0 = the article holding the episode's top passage; then by the rank of each article's
        /// best segment in the episode.
        pub article_rank: u32 => U32,
        /// Article index in the key event (as in `segments`).
        pub doc_id: u32 => U32,
        /// The article's id or URL in its source (`import --articles`'s id column).
        pub source_id: Option<String> => Utf8Opt,
        /// The article's title.
        pub title: Option<String> => Utf8Opt,
        /// Its publication date (days since 1970-01-01): its day in the date's own offset, or
        /// `import --timezone`'s.
        pub published: Option<i32> => Date32Opt,
        /// Its publication instant, as the import read it (the corpus's `paragraphs`; null for
        /// an undated article, or one of a corpus imported before the instants were kept).
        pub published_at: Option<i64> => TimestampMsOpt,
        /// Its segments assigned to the episode.
        pub segments: u32 => U32,
        /// Its segments in the corpus.
        pub article_segments: u32 => U32,
        /// The rank of its best segment in the episode (`assignments.rank`; 0 = the top).
        pub best_rank: u32 => U32,
        /// Its best segment's text.
        pub passage: String => Utf8,
        /// The episode's top passage (its rank-0 segment), the same on every row of the episode.
        pub episode_passage: String => Utf8,
        /// For an article made only of copies of another's paragraphs (`copies.parquet`: an
        /// outlet that carried agency copy whole): the `doc_id` of the article it copies, whose
        /// segments it carries (`segments` counts those in the episode; `article_segments` is
        /// 0). Null for an article with segments of its own.
        pub copy_of: Option<u32> => U32Opt,
        /// When its `passage` is a near-copy (80% of its words shared) of a higher-ranked
        /// article's passage in the episode (the same sentence from several outlets): that
        /// article's `doc_id`; `echo_of is null` gives the episode's distinct passages. Null for
        /// a copy (`copy_of` says more).
        pub echo_of: Option<u32> => U32Opt,
    }
}

/// The articles and dates of an episode's assigned segments.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EpisodeSpan {
    /// Distinct articles.
    pub n_articles: u32,
    /// First date.
    pub first_date: Option<i32>,
    /// Date with the most segments (ties: the earliest).
    pub peak_date: Option<i32>,
    /// Last date.
    pub last_date: Option<i32>,
}

impl EpisodeSpan {
    /// The span of segments given as (doc_id, doc_date).
    pub fn of(segments: impl IntoIterator<Item = (u32, Option<i32>)>) -> Self {
        let mut docs = std::collections::BTreeSet::new();
        let mut days: std::collections::BTreeMap<i32, usize> = std::collections::BTreeMap::new();
        for (doc, date) in segments {
            docs.insert(doc);
            if let Some(d) = date {
                *days.entry(d).or_default() += 1;
            }
        }
        let peak = days
            .iter()
            .fold(None, |best: Option<(i32, usize)>, (&d, &n)| match best {
                Some((_, m)) if m >= n => best,
                _ => Some((d, n)),
            });
        Self {
            n_articles: docs.len() as u32,
            first_date: days.keys().next().copied(),
            peak_date: peak.map(|(d, _)| d),
            last_date: days.keys().next_back().copied(),
        }
    }
}

table! {
    /// One row of `assignments`.
    #[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
    pub struct Assignment in "assignments" {
        /// The key event.
        pub key_event: String => Utf8,
        /// The estimation trial of the episode.
        pub trial: u32 => U32,
        /// The detected episode.
        pub episode_id: u32 => U32,
        /// Its id across the runs of one `--out` (`lineage.parquet`'s `stable_id`: kept while
        /// the episode goes on from run to run); null in a baseline's output.
        pub stable_id: Option<u32> => U32Opt,
        /// What became of it in this run (`lineage.parquet`'s `status`: `new`, `found`,
        /// `continued`, `grown`, `shrunk`, `split`); null in a baseline's output.
        pub status: Option<String> => Utf8Opt,
        /// Article index.
        pub doc_id: u32 => U32,
        /// Segment index inside the article.
        pub seg_idx: u32 => U32,
        /// 0 = the episode's top segment: the densest among the episode's own segments by default
        /// (`episodes.rank = "density"`), else the most similar to the episode (`"similarity"`) or
        /// the most confident (`"confidence"`).
        pub rank: u32 => U32,
        /// Classification confidence (paper eq. 2).
        pub confidence: f64 => F64,
    }
}

/// `left_out`: every segment of an event that no kept episode holds, with why.
pub fn left_out_schema() -> SchemaRef {
    LeftOut::schema()
}

table! {
    /// One row of `left_out`: a segment in no episode of its trial and the reason. Rows by key
    /// event, trial, then article and segment.
    #[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
    pub struct LeftOut in "left_out" {
        /// The key event.
        pub key_event: String => Utf8,
        /// The estimation trial.
        pub trial: u32 => U32,
        /// Article index.
        pub doc_id: u32 => U32,
        /// Segment index inside the article.
        pub seg_idx: u32 => U32,
        /// `below-confidence` (its eq. 2 confidence is under the significance bound, so it was
        /// assigned nowhere) or `episode-dropped-by-<rule>` (it was assigned to a candidate
        /// episode that rule dropped: `cohesion`, `size`, `cap`, `min-segments`, …).
        pub reason: String => Utf8,
        /// Classification confidence toward its nearest candidate episode (paper eq. 2).
        pub confidence: f64 => F64,
        /// Cosine of the segment to that candidate's vector.
        pub similarity: f64 => F64,
    }
}
