//! The corpus by row groups: which worker reads what. Both the statistics dataflow and the
//! per-event stages of `epimine run` read a corpus this way: the row groups of every
//! `segments*.parquet`, in name order, dealt to the workers by [`sharding::owner`].

use crate::sharding;
use crate::storage::{Location, StorageError};
use crate::tables::{ArticleParagraphs, CopyArticle, Segment, Table};
use std::collections::{BTreeMap, HashMap};

/// A segments file a run reads: `run.json`'s `corpus_files`, pinned at the run's start
/// ([`pin`]).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CorpusFile {
    /// Its name in the corpus.
    pub name: String,
    /// Its size.
    pub bytes: u64,
    /// Its segments.
    pub rows: u64,
    /// Its sha256 as its import wrote it ([`BATCHES`]), when the corpus lists it and its size
    /// is the listed one.
    #[serde(default)]
    pub sha256: Option<String>,
}

/// The corpus's list of its segments files, one a batch, with the sha256 each import wrote:
/// `batches.json` (issue 64, item 4).
pub const BATCHES: &str = "batches.json";

/// One batch of [`BATCHES`].
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Batch {
    /// The segments file.
    pub name: String,
    /// Its sha256 when written.
    pub sha256: String,
    /// Its segments.
    pub rows: u64,
    /// Its size.
    pub bytes: u64,
    /// When it was imported (UTC, RFC 3339).
    pub imported: String,
}

/// The batches the corpus lists ([`BATCHES`]); none for a corpus from before the list.
pub async fn batches(corpus: &Location) -> Result<Vec<Batch>, CorpusError> {
    if !corpus.exists(BATCHES).await? {
        return Ok(Vec::new());
    }
    let bytes = corpus.get(BATCHES).await?;
    serde_json::from_slice(&bytes)
        .map_err(|e| CorpusError::Batches(corpus.display_child(BATCHES), e.to_string()))
}

/// Adds the segments file `name` just written (`written`) to the corpus's [`BATCHES`] (a new
/// list for a whole import, `fresh`); called with the corpus held (an append's lock).
pub async fn record_batch(
    corpus: &Location,
    name: &str,
    written: &crate::storage::Written,
    fresh: bool,
) -> Result<(), CorpusError> {
    let mut list = if fresh {
        Vec::new()
    } else {
        batches(corpus).await.unwrap_or_else(|e| {
            tracing::warn!("{e}; written anew, listing this batch only");
            Vec::new()
        })
    };
    list.retain(|b| b.name != name);
    list.push(Batch {
        name: name.to_string(),
        sha256: written.sha256.clone(),
        rows: written.rows,
        bytes: written.bytes,
        imported: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
    });
    let json = serde_json::to_vec_pretty(&list).expect("batches serialize");
    corpus.put(BATCHES, json.into()).await?;
    Ok(())
}

/// The corpus this process's run reads and its pinned files ([`pin`]).
static PINNED: std::sync::Mutex<Option<(String, Vec<CorpusFile>)>> = std::sync::Mutex::new(None);

/// The pinned files of `corpus`, if this process pinned it ([`pin`]).
pub fn pinned(corpus: &Location) -> Option<Vec<CorpusFile>> {
    let pinned = PINNED.lock().unwrap_or_else(|e| e.into_inner());
    pinned
        .as_ref()
        .filter(|(c, _)| c == corpus.display())
        .map(|(_, files)| files.clone())
}

/// Pins `corpus` for this process's run (issue 64, item 3): its segments files now, with their
/// sizes and rows, are the ones every later read of this process takes ([`segment_files`]), so
/// an append that lands while the run works is seen by the next run only; a pinned file that
/// is gone or changed size is an error naming it. Returns them (`run.json`'s `corpus_files`).
pub async fn pin(corpus: &Location) -> Result<Vec<CorpusFile>, CorpusError> {
    unpin();
    let sizes = file_sizes(corpus).await?;
    let listed = batches(corpus).await.unwrap_or_else(|e| {
        tracing::warn!("{e}; this run records no sha256 of the corpus's batches");
        Vec::new()
    });
    let mut files = Vec::new();
    for (name, _, rows) in listed_segment_files(corpus).await? {
        let bytes = sizes.get(&name).copied().unwrap_or_default();
        let batch = listed.iter().find(|b| b.name == name);
        if let Some(b) = batch.filter(|b| b.bytes != bytes) {
            tracing::warn!(
                "{}: {bytes} bytes, but {} bytes when it was imported ({}): it was changed \
                 since",
                corpus.display_child(&name),
                b.bytes,
                b.imported
            );
        }
        let sha256 = batch.filter(|b| b.bytes == bytes).map(|b| b.sha256.clone());
        files.push(CorpusFile {
            name,
            bytes,
            rows,
            sha256,
        });
    }
    for b in &listed {
        if !files.iter().any(|f| f.name == b.name) {
            tracing::warn!(
                "{}: missing, though {} lists it (imported {}, {} segments): its articles are \
                 not in this run; restore it from a copy, or import them again",
                corpus.display_child(&b.name),
                BATCHES,
                b.imported,
                b.rows
            );
        }
    }
    let names: Vec<&str> = files.iter().map(|f| f.name.as_str()).collect();
    let facts = batches_facts(corpus, &names, &sizes).await;
    *PINNED.lock().unwrap_or_else(|e| e.into_inner()) =
        Some((corpus.display().to_string(), files.clone()));
    *FACTS.lock().unwrap_or_else(|e| e.into_inner()) = Some(facts);
    Ok(files)
}

/// What a corpus keeps of one key event's articles beside their segments: those made only of
/// copies of other articles' paragraphs (`copies*.parquet`, issue 65 item 5) and each article's
/// publication instant (`paragraphs*.parquet`, issue 65 item 3), by `doc_id`.
#[derive(Debug, Clone, Default)]
pub struct ArticleFacts {
    /// The articles made only of copies.
    pub copies: Vec<CopyArticle>,
    /// Each dated article's publication instant (milliseconds since 1970, UTC), by `doc_id`.
    pub instants: HashMap<u32, i64>,
}

/// What the corpus keeps of its articles beside their segments ([`ArticleFacts`]), by key
/// event: what `epimine report` counts as the outlets that carried an episode whole.
pub async fn read_facts(corpus: &Location) -> Result<BTreeMap<String, ArticleFacts>, CorpusError> {
    let files = segment_files(corpus).await?;
    let sizes = file_sizes(corpus).await?;
    let names: Vec<&str> = files.iter().map(|f| f.0.as_str()).collect();
    Ok(batches_facts(corpus, &names, &sizes).await)
}

/// The rows of the side table `name` of the corpus (none when it is not there); one that
/// cannot be read is said in a warning (`lost`: what that costs) and read as none.
async fn side_rows<T: Table>(
    corpus: &Location,
    name: &str,
    sizes: &BTreeMap<String, u64>,
    lost: &str,
) -> Vec<T> {
    if !sizes.contains_key(name) {
        return Vec::new();
    }
    corpus.read_table_named(name).await.unwrap_or_else(|e| {
        tracing::warn!("{e}: {lost}");
        Vec::new()
    })
}

/// The file of `table` that the import of the segments file `segments` wrote beside it
/// (`segments-000002.parquet`, `copies` → `copies-000002.parquet`); `None` for a name that is
/// not a segments file.
pub fn beside(segments: &str, table: &str) -> Option<String> {
    let suffix = segments
        .strip_prefix(Segment::NAME)?
        .strip_suffix(".parquet")?;
    (suffix.is_empty() || suffix.starts_with('-')).then(|| format!("{table}{suffix}.parquet"))
}

/// Whether `name` is one of a corpus's segments files (`segments.parquet`,
/// `segments-<n>.parquet`, any other `segments*.parquet` at its top).
pub fn is_segments_file(name: &str) -> bool {
    !name.contains('/') && name.starts_with(Segment::NAME) && name.ends_with(".parquet")
}

/// [`ArticleFacts`] from the side tables beside the segments files `names`, by key event.
async fn batches_facts(
    corpus: &Location,
    names: &[&str],
    sizes: &BTreeMap<String, u64>,
) -> BTreeMap<String, ArticleFacts> {
    let mut by_event: BTreeMap<String, ArticleFacts> = BTreeMap::new();
    for name in names {
        let (Some(copies), Some(paragraphs)) = (
            beside(name, CopyArticle::NAME),
            beside(name, ArticleParagraphs::NAME),
        ) else {
            continue;
        };
        let lost = "the articles it lists (made only of copies) are in no episode's articles";
        for r in side_rows::<CopyArticle>(corpus, &copies, sizes, lost).await {
            by_event
                .entry(r.key_event.clone())
                .or_default()
                .copies
                .push(r);
        }
        let lost = "its articles' publication instants are not in episode_articles";
        for r in side_rows::<ArticleParagraphs>(corpus, &paragraphs, sizes, lost).await {
            if let (Some(doc), Some(t)) = (r.doc_id, r.published_at) {
                by_event
                    .entry(r.key_event)
                    .or_default()
                    .instants
                    .insert(doc, t);
            }
        }
    }
    by_event
}

/// What the pinned corpus keeps of its articles beside their segments ([`pin`]), by key event.
static FACTS: std::sync::Mutex<Option<BTreeMap<String, ArticleFacts>>> =
    std::sync::Mutex::new(None);

/// What the corpus this process pinned ([`pin`]) keeps of `key_event`'s articles beside their
/// segments ([`ArticleFacts`]); nothing when it pinned none.
pub fn pinned_facts(key_event: &str) -> ArticleFacts {
    FACTS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()
        .and_then(|c| c.get(key_event).cloned())
        .unwrap_or_default()
}

/// Each object's size in `corpus`, by name.
async fn file_sizes(corpus: &Location) -> Result<BTreeMap<String, u64>, CorpusError> {
    Ok(corpus
        .list_folder("")
        .await?
        .into_iter()
        .map(|(name, size, _)| (name, size))
        .collect())
}

/// Ends this process's pin ([`pin`]).
pub fn unpin() {
    *PINNED.lock().unwrap_or_else(|e| e.into_inner()) = None;
    *FACTS.lock().unwrap_or_else(|e| e.into_inner()) = None;
}

/// Errors of reading a corpus.
#[derive(Debug, thiserror::Error)]
pub enum CorpusError {
    /// Reading failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// The corpus has no segments table.
    #[error("{0}: no segments*.parquet in this corpus (make one with `epimine import`)")]
    NoSegments(String),
    /// The corpus's segments files hold no row.
    #[error("{0}: its segments files hold no segment (an empty corpus is refused, so that a run of it does not replace a finished one)")]
    Empty(String),
    /// An import's folder holds segments files of something else.
    #[error("{corpus}: it holds {count} segments file(s) besides segments.parquet (e.g. `{first}`), which would join the imported corpus; import into an empty folder, or remove them")]
    OtherSegments {
        /// The folder.
        corpus: String,
        /// How many.
        count: usize,
        /// The first.
        first: String,
    },
    /// A segments file this run pinned at its start is gone or changed.
    #[error("{0}: {1} since this run began (it reads the corpus as it was then; an append adds files and changes none): run again to read the corpus as it is now")]
    Changed(String, String),
    /// The corpus's list of batches does not parse.
    #[error("{0}: not the list of batches epimine writes ({1})")]
    Batches(String, String),
    /// Segments share a key: assignments and labels, which name a segment by its key, would
    /// be ambiguous.
    #[error("{corpus}: {}", duplicate_keys(*count, key_event, *doc_id, *seg_idx))]
    DuplicateKeys {
        /// The corpus (or its segments file).
        corpus: String,
        /// Segments whose key an earlier segment already has.
        count: usize,
        /// The first repeated key: its event,
        key_event: String,
        /// article,
        doc_id: u32,
        /// and segment.
        seg_idx: u32,
    },
}

/// The tables an import writes into a corpus folder: the segments, a dataset's labels and
/// gold episodes, the rows `--on-error skip` left out, the lines an articles import dropped as
/// boilerplate.
pub const IMPORTED_TABLES: [&str; 7] = [
    "segments.parquet",
    "labels.parquet",
    "gold_episodes.parquet",
    "rejected.parquet",
    "boilerplate.parquet",
    "paragraphs.parquet",
    "copies.parquet",
];

/// Before an import writes into `out`: refuses a folder that holds segments files other than
/// `segments.parquet`, since a corpus is all of its `segments*.parquet` and they would join the
/// new one.
pub async fn check_import_out(out: &Location) -> Result<(), CorpusError> {
    let others: Vec<String> = out
        .list()
        .await?
        .into_iter()
        .filter(|n| {
            !n.contains('/')
                && n.starts_with("segments")
                && n.ends_with(".parquet")
                && n != IMPORTED_TABLES[0]
        })
        .collect();
    match others.first() {
        None => Ok(()),
        Some(first) => Err(CorpusError::OtherSegments {
            corpus: out.display().to_string(),
            count: others.len(),
            first: first.clone(),
        }),
    }
}

/// After an import wrote the tables `written` into `out`: removes the tables of an earlier
/// import that this one did not write (labels, gold episodes, rejected rows), so that the folder
/// holds one whole corpus. Returns their names.
pub async fn remove_stale_tables(
    out: &Location,
    written: &[&str],
) -> Result<Vec<String>, CorpusError> {
    let mut removed = Vec::new();
    for name in IMPORTED_TABLES {
        if !written.contains(&name) && out.exists(name).await? {
            out.delete(name).await?;
            tracing::info!(
                "removed {}: it belonged to an earlier import into this folder",
                out.display_child(name)
            );
            removed.push(name.to_string());
        }
    }
    Ok(removed)
}

/// What a corpus with repeated segment keys is told (also an event's error in `epimine run`).
pub fn duplicate_keys(count: usize, key_event: &str, doc_id: u32, seg_idx: u32) -> String {
    format!(
        "{count} segment(s) repeat the key (key_event, doc_id, seg_idx) of another, the first \
         (`{key_event}`, {doc_id}, {seg_idx}); each segment needs its own key (import the \
         articles again, or remove the repeated rows)"
    )
}

/// Refuses segments of which two share a key (key_event, doc_id, seg_idx), naming the first
/// repeated key and how many repeat one.
pub fn check_unique_keys(corpus: &str, segments: &[Segment]) -> Result<(), CorpusError> {
    let mut seen = std::collections::HashSet::with_capacity(segments.len());
    let mut first = None;
    let mut count = 0;
    for s in segments {
        if !seen.insert((s.key_event.as_str(), s.doc_id, s.seg_idx)) {
            count += 1;
            first.get_or_insert((s.key_event.clone(), s.doc_id, s.seg_idx));
        }
    }
    match first {
        None => Ok(()),
        Some((key_event, doc_id, seg_idx)) => Err(CorpusError::DuplicateKeys {
            corpus: corpus.to_string(),
            count,
            key_event,
            doc_id,
            seg_idx,
        }),
    }
}

/// The segments files of a corpus and their row-group counts, in name order; each file's
/// footer is read and its columns checked against the `segments` schema, so that a file cut
/// short or of another schema, or a corpus without a segment, is an error before any work.
///
/// Where this process pinned `corpus` ([`pin`]), the pinned files, each checked to be there
/// with its size.
pub async fn segment_files(corpus: &Location) -> Result<Vec<(String, usize)>, CorpusError> {
    let Some(pinned) = pinned(corpus) else {
        return Ok(listed_segment_files(corpus)
            .await?
            .into_iter()
            .map(|(name, groups, _)| (name, groups))
            .collect());
    };
    let sizes = file_sizes(corpus).await?;
    let mut files = Vec::new();
    for f in pinned {
        let changed = |what: String| CorpusError::Changed(corpus.display_child(&f.name), what);
        match sizes.get(&f.name) {
            None => return Err(changed("gone".into())),
            Some(&b) if b != f.bytes => {
                return Err(changed(format!("{} bytes, {} when it began", b, f.bytes)))
            }
            Some(_) => {}
        }
        let (groups, _) = corpus
            .parquet_row_groups(&f.name, &Segment::schema())
            .await?;
        files.push((f.name, groups));
    }
    Ok(files)
}

/// The segments files of a corpus as listed now: each one's name, row groups and rows.
async fn listed_segment_files(corpus: &Location) -> Result<Vec<(String, usize, u64)>, CorpusError> {
    let mut files = Vec::new();
    let mut rows = 0;
    for name in corpus.list().await? {
        if is_segments_file(&name) {
            let (groups, n) = corpus.parquet_row_groups(&name, &Segment::schema()).await?;
            rows += n;
            files.push((name, groups, n));
        }
    }
    if files.is_empty() {
        return Err(CorpusError::NoSegments(corpus.display().to_string()));
    }
    if rows == 0 {
        return Err(CorpusError::Empty(corpus.display().to_string()));
    }
    Ok(files)
}

/// Every segment of a corpus (all its `segments*.parquet`, in name order), each key once
/// ([`check_unique_keys`]): for the commands that read a corpus whole (`eval`, the baselines).
pub async fn read_segments(corpus: &Location) -> Result<Vec<Segment>, CorpusError> {
    let mut segments = Vec::new();
    for (name, _) in segment_files(corpus).await? {
        let batches = corpus.read_parquet(&name, &Segment::schema()).await?;
        segments.extend(
            Segment::from_batches(&batches).map_err(|source| StorageError::Table {
                location: corpus.display_child(&name),
                source,
            })?,
        );
    }
    check_unique_keys(corpus.display(), &segments)?;
    Ok(segments)
}

/// The row groups of a corpus that worker `index` (of `peers`) reads: (file, row group).
pub async fn my_row_groups(
    corpus: &Location,
    index: usize,
    peers: usize,
) -> Result<Vec<(String, usize)>, CorpusError> {
    let mut mine = Vec::new();
    let mut unit = 0;
    for (name, groups) in segment_files(corpus).await? {
        mine.extend(
            (0..groups)
                .filter(|g| sharding::owner(unit + g, peers) == index)
                .map(|g| (name.clone(), g)),
        );
        unit += groups;
    }
    Ok(mine)
}

/// Reads one row group of a segments file.
pub async fn read_row_group(
    corpus: &Location,
    name: &str,
    group: usize,
) -> Result<Vec<Segment>, CorpusError> {
    let batches = corpus
        .read_row_groups(name, &Segment::schema(), Some(vec![group]))
        .await?;
    Ok(
        Segment::from_batches(&batches).map_err(|source| StorageError::Table {
            location: corpus.display_child(name),
            source,
        })?,
    )
}

/// Reads worker `index`'s share (of `peers`) of a corpus's row groups.
pub async fn read_segment_shard(
    corpus: &Location,
    index: usize,
    peers: usize,
) -> Result<Vec<Segment>, CorpusError> {
    let mut segments: Vec<Segment> = Vec::new();
    for (name, group) in my_row_groups(corpus, index, peers).await? {
        segments.extend(read_row_group(corpus, &name, group).await?);
    }
    Ok(segments)
}

/// Hands this worker's row groups of a corpus to `feed`, one row group at a time, so that the
/// input never sits in memory whole.
pub fn stream_shard(
    runtime: &tokio::runtime::Runtime,
    corpus: &str,
    index: usize,
    peers: usize,
    feed: &mut dyn FnMut(&[Segment]),
) -> Result<(), CorpusError> {
    let corpus = Location::parse(corpus, false)?;
    for (name, group) in runtime.block_on(my_row_groups(&corpus, index, peers))? {
        feed(&runtime.block_on(read_row_group(&corpus, &name, group))?);
    }
    Ok(())
}
