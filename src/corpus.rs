//! The corpus by row groups: which worker reads what. Both the statistics dataflow and the
//! per-event stages of `epimine run` read a corpus this way: the row groups of every
//! `segments*.parquet`, in name order, dealt to the workers by [`keys::owner`].

use crate::keys;
use crate::storage::{Location, StorageError};
use crate::tables::{Segment, Table};

/// Errors of reading a corpus.
#[derive(Debug, thiserror::Error)]
pub enum CorpusError {
    /// Reading failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// The corpus has no segments table.
    #[error("{0}: no segments*.parquet in this corpus (make one with `epimine import`)")]
    NoSegments(String),
}

/// The segments files of a corpus and their row-group counts, in name order.
pub async fn segment_files(corpus: &Location) -> Result<Vec<(String, usize)>, CorpusError> {
    let mut files = Vec::new();
    for name in corpus.list().await? {
        if !name.contains('/') && name.starts_with("segments") && name.ends_with(".parquet") {
            let (groups, _) = corpus.parquet_layout(&name).await?;
            files.push((name, groups));
        }
    }
    if files.is_empty() {
        return Err(CorpusError::NoSegments(corpus.display().to_string()));
    }
    Ok(files)
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
                .filter(|g| keys::owner(unit + g, peers) == index)
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
