//! Episodes followed from run to run: what changed in a run (`lineage`, also kept per run under
//! `history/`), each event's episodes as keys and a vector (`episode_keys`, in the checkpoints),
//! and the identities a run hands on to the next (`episode_state`, under `_identity/`).

use super::table::Table;

table! {
    /// One row of `lineage` (and of every `history/<run>.parquet`): one episode of a run and
    /// what became of it since the previous run of the same `--out`. Every episode of the run
    /// has one row; so has every episode of the previous run that no episode continues (status
    /// `merged` or `ended`, `episode_id` null).
    #[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
    pub struct Lineage in "lineage" {
        /// The run's number in this `--out` (1 for the first run that kept a history).
        pub run: u32 => U32,
        /// When the run committed (or `--run-time`), UTC.
        pub run_time: i64 => TimestampMs,
        /// The previous run's number; null for the first.
        pub previous_run: Option<u32> => U32Opt,
        /// The previous run's time; null for the first.
        pub previous_run_time: Option<i64> => TimestampMsOpt,
        /// The key event.
        pub key_event: String => Utf8,
        /// The estimation trial.
        pub trial: u32 => U32,
        /// The episode's id across runs: kept while it is the same episode.
        pub stable_id: u32 => U32,
        /// Its `episode_id` in this run's `episodes` and `assignments`; null when it ended or
        /// merged into another.
        pub episode_id: Option<u32> => U32Opt,
        /// `new` (a new id, at least half of whose articles arrived since the previous run),
        /// `found` (a new id, but most of its articles were there at the previous run: found
        /// now, not news now), `continued` (its id kept, as many segments as before), `grown` / `shrunk` (its
        /// id kept, more / fewer segments than before), `split` (a new id, split off
        /// `from_ids`), `merged` (it went into `into_id`) or `ended`.
        pub status: String => Utf8,
        /// The previous run's episodes it comes from (its own id first when it kept it).
        pub from_ids: Vec<u32> => U32List,
        /// `merged`: the episode it went into.
        pub into_id: Option<u32> => U32Opt,
        /// How it was matched to the previous run: `segments` or `vector`; null when new.
        pub matched_by: Option<String> => Utf8Opt,
        /// Its title (the previous run's for `merged` and `ended`).
        pub title: String => Utf8,
        /// Its assigned segments in this run (0 when it ended or merged).
        pub n_segments: u32 => U32,
        /// Its distinct articles in this run.
        pub n_articles: u32 => U32,
        /// Its assigned segments in the previous run (0 when new).
        pub previous_segments: u32 => U32,
        /// Its segments that none of `from_ids` held.
        pub new_segments: u32 => U32,
        /// Its articles that arrived since the previous run (not in the event then); null when
        /// that is not known (a history begun before these were recorded).
        pub new_articles: Option<u32> => U32Opt,
        /// Its articles that were there at the previous run but that none of `from_ids` held a
        /// segment of (older articles it took in).
        pub joined_articles: u32 => U32,
        /// The previous run's segments of this id that it no longer holds.
        pub lost_segments: u32 => U32,
    }
}

table! {
    /// One row of `developments` (issue 63): what happened in this run, one row an episode that
    /// is `new`, `grown` with articles that arrived since the previous run, `split`, `merged`
    /// or `ended` in it (`lineage`'s rows of those, with how many of today's articles each
    /// holds). Rows by key event, trial, then status in that order, most of today's articles
    /// first, then stable id.
    #[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
    pub struct Development in "developments" {
        /// The run's number in this `--out`.
        pub run: u32 => U32,
        /// When the run committed (or `--run-time`), UTC.
        pub run_time: i64 => TimestampMs,
        /// The key event.
        pub key_event: String => Utf8,
        /// The estimation trial.
        pub trial: u32 => U32,
        /// The episode's id across runs.
        pub stable_id: u32 => U32,
        /// Its `episode_id` in this run's tables; null when it ended or merged.
        pub episode_id: Option<u32> => U32Opt,
        /// `new`, `grown`, `split`, `merged` or `ended` (as in `lineage`).
        pub status: String => Utf8,
        /// Its title (the previous run's for `merged` and `ended`).
        pub title: String => Utf8,
        /// Its articles that arrived since the previous run; null when not known.
        pub today_articles: Option<u32> => U32Opt,
        /// Its distinct articles in this run (0 when it ended or merged).
        pub n_articles: u32 => U32,
        /// Its assigned segments in this run (0 when it ended or merged).
        pub n_segments: u32 => U32,
        /// The previous run's episodes it comes from (its own id first when it kept it).
        pub from_ids: Vec<u32> => U32List,
        /// `merged`: the episode it went into.
        pub into_id: Option<u32> => U32Opt,
    }
}

/// The order of the statuses in `developments`.
const DEVELOPMENTS: [&str; 5] = ["new", "grown", "split", "merged", "ended"];

impl Development {
    /// The developments among one event's `lineage` rows, in the table's order: `grown` only
    /// with articles that arrived since the previous run (or where that is not known).
    pub fn of(rows: &[Lineage]) -> Vec<Development> {
        let mut out: Vec<(usize, Development)> = rows
            .iter()
            .filter_map(|r| {
                let order = DEVELOPMENTS.iter().position(|s| *s == r.status)?;
                if r.status == "grown" && r.new_articles == Some(0) {
                    return None;
                }
                Some((
                    order,
                    Development {
                        run: r.run,
                        run_time: r.run_time,
                        key_event: r.key_event.clone(),
                        trial: r.trial,
                        stable_id: r.stable_id,
                        episode_id: r.episode_id,
                        status: r.status.clone(),
                        title: r.title.clone(),
                        today_articles: r.new_articles,
                        n_articles: r.n_articles,
                        n_segments: r.n_segments,
                        from_ids: r.from_ids.clone(),
                        into_id: r.into_id,
                    },
                ))
            })
            .collect();
        out.sort_by(|(oa, a), (ob, b)| {
            (&a.key_event, a.trial, oa)
                .cmp(&(&b.key_event, b.trial, ob))
                .then(b.today_articles.cmp(&a.today_articles))
                .then(a.stable_id.cmp(&b.stable_id))
        });
        out.into_iter().map(|(_, d)| d).collect()
    }
}

table! {
    /// One row of `episode_keys` (kept in each event's checkpoint): one episode of a run as the
    /// stable keys of its assigned segments, their articles' keys and its vector.
    #[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
    pub struct EpisodeKeys in "episode_keys" {
        /// The key event.
        pub key_event: String => Utf8,
        /// The estimation trial.
        pub trial: u32 => U32,
        /// The episode in this run's tables.
        pub episode_id: u32 => U32,
        /// Its title.
        pub title: String => Utf8,
        /// The key of each assigned segment, ascending (`lineage::segment_keys`).
        pub segment_keys: Vec<u64> => U64List,
        /// The keys of the articles of its assigned segments, distinct, ascending.
        pub article_keys: Vec<u64> => U64List,
        /// The unit mean of its assigned segments' unit sentence embeddings.
        pub vector: Vec<f32> => F32List,
    }
}

table! {
    /// One row of `episode_state` (`_identity/<run>.parquet`): an episode id a run hands on to
    /// the next, with what the next run matches against.
    #[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
    pub struct EpisodeState in "episode_state" {
        /// The key event.
        pub key_event: String => Utf8,
        /// The estimation trial.
        pub trial: u32 => U32,
        /// The episode's id across runs.
        pub stable_id: u32 => U32,
        /// Its `episode_id` in that run; null once it ended or merged (the id stays taken).
        pub episode_id: Option<u32> => U32Opt,
        /// Its title.
        pub title: String => Utf8,
        /// [`EpisodeKeys::segment_keys`] (empty once ended).
        pub segment_keys: Vec<u64> => U64List,
        /// [`EpisodeKeys::article_keys`] (empty once ended).
        pub article_keys: Vec<u64> => U64List,
        /// [`EpisodeKeys::vector`] (empty once ended).
        pub vector: Vec<f32> => F32List,
    }
}

table! {
    /// One row of `event_articles` (in each checkpoint, and `_identity/<run>.articles.parquet`):
    /// the keys of every article a key event held in a run, so that the next run tells the
    /// articles that arrived since from those that were there.
    #[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
    pub struct EventArticles in "event_articles" {
        /// The key event.
        pub key_event: String => Utf8,
        /// The key of each of its articles (`lineage::segment_keys`), distinct, ascending.
        pub article_keys: Vec<u64> => U64List,
    }
}

impl EpisodeState {
    /// Whether the episode is still there (not ended or merged away).
    pub fn live(&self) -> bool {
        self.episode_id.is_some()
    }
}

/// The schema of [`Lineage`].
pub fn lineage_schema() -> arrow_schema::SchemaRef {
    Lineage::schema()
}
