//! One event after §3–§4, waiting for its episodes (from the LLM or without it).

use std::collections::HashMap;

use crate::episodes::{self, EventInput};
use crate::tables::Segment;

/// One event after §3–§4, waiting for episodes.
pub(in crate::run) struct Pending {
    pub(in crate::run) segments: Vec<Segment>,
    pub(in crate::run) embeddings: Vec<Vec<f32>>,
    pub(in crate::run) prepared: episodes::Prepared,
    /// The previous run's episodes of the event as indices into `segments`
    /// ([`EventInput::carried`]).
    pub(in crate::run) carried: Vec<Vec<usize>>,
    /// The novelty view's input when the run follows an `--out` and `episodes.novelty` is on
    /// (`None` otherwise, or for an event the previous run did not have).
    pub(in crate::run) followed: Option<Followed>,
    /// What the corpus keeps of the event's articles beside their segments: those made only of
    /// copies, their instants ([`crate::corpus::pinned_facts`]).
    pub(in crate::run) facts: crate::corpus::ArticleFacts,
}

/// What the novelty view ([`episodes::novelty`]) needs of the previous run, for one event.
pub(in crate::run) struct Followed {
    /// Whether each segment's article arrived since the previous run.
    pub(in crate::run) arrived: Vec<bool>,
    /// The previous run's episodes as indices of this run's segments.
    pub(in crate::run) previous: Vec<Vec<usize>>,
}

impl Followed {
    /// The novelty view's input for `segments`, given the previous run's article keys
    /// (ascending) and episodes (as segment keys).
    pub(in crate::run) fn of(
        segments: &[Segment],
        articles: &[u64],
        previous: &[Vec<u64>],
    ) -> Self {
        // The keys once (a hash of every segment): arrivals and the previous episodes both.
        let keys = crate::lineage::segment_keys(segments);
        Self {
            arrived: keys
                .iter()
                .map(|(_, article)| articles.binary_search(article).is_err())
                .collect(),
            previous: held_by(&keys, previous),
        }
    }
}

/// Classification needs no word vectors.
pub(in crate::run) static NO_VECTORS: std::sync::LazyLock<HashMap<String, Vec<f32>>> =
    std::sync::LazyLock::new(HashMap::new);

impl Pending {
    /// The novelty view over trial `trial`'s rows, when the run follows an `--out` with
    /// `episodes.novelty` on; logs what it did.
    pub(in crate::run) fn novelty(
        &self,
        params: &episodes::EpisodeParams,
        trial: u32,
        rows: episodes::novelty::Rows,
    ) {
        let Some(f) = &self.followed else {
            return;
        };
        let keywords = |groups: &[Vec<usize>]| self.prepared.keywords(groups, params.keywords);
        let report = episodes::novelty::novelty_view(
            &self.input(),
            &keywords,
            params,
            &f.arrived,
            &f.previous,
            trial,
            rows,
        );
        tracing::debug!(
            "{}: novelty view: {report:?}",
            self.segments.first().map_or("", |s| s.key_event.as_str())
        );
    }

    /// The event's segment embeddings by whitespace-normalised text: an LLM's example sentence
    /// copied from a segment needs no new encoding.
    pub(in crate::run) fn known_embeddings(&self) -> HashMap<String, Vec<f32>> {
        self.segments
            .iter()
            .zip(&self.embeddings)
            .map(|(s, e)| (normalise(&s.text), e.clone()))
            .collect()
    }

    pub(in crate::run) fn input(&self) -> EventInput<'_> {
        EventInput {
            segments: &self.segments,
            terms: Vec::new(),
            pairs: Vec::new(),
            word_vectors: &NO_VECTORS,
            embeddings: &self.embeddings,
            carried: &self.carried,
        }
    }
}

/// The previous run's episodes of an event (each as its segments' stable keys,
/// `crate::lineage::segment_keys`) as indices into this run's `segments`; episodes none of whose
/// segments are still there left out.
pub(in crate::run) fn carried(segments: &[Segment], previous: &[Vec<u64>]) -> Vec<Vec<usize>> {
    if previous.is_empty() {
        return Vec::new();
    }
    held_by(&crate::lineage::segment_keys(segments), previous)
}

/// [`carried`] given the segments' keys (`crate::lineage::segment_keys`).
fn held_by(keys: &[(u64, u64)], previous: &[Vec<u64>]) -> Vec<Vec<usize>> {
    let at: HashMap<u64, usize> = keys
        .iter()
        .enumerate()
        .map(|(i, (key, _))| (*key, i))
        .collect();
    previous
        .iter()
        .map(|keys| {
            keys.iter()
                .filter_map(|k| at.get(k).copied())
                .collect::<Vec<_>>()
        })
        .filter(|held: &Vec<usize>| !held.is_empty())
        .collect()
}

pub(in crate::run) fn normalise(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
