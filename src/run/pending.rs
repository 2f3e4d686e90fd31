//! One event after §3–§4, waiting for its episodes (from the LLM or without it).

use std::collections::HashMap;

use crate::episodes::{self, EventInput};
use crate::tables::Segment;

/// One event after §3–§4, waiting for episodes.
pub(super) struct Pending {
    pub(super) segments: Vec<Segment>,
    pub(super) embeddings: Vec<Vec<f32>>,
    pub(super) prepared: episodes::Prepared,
}

/// Classification needs no word vectors.
pub(super) static NO_VECTORS: std::sync::LazyLock<HashMap<String, Vec<f32>>> =
    std::sync::LazyLock::new(HashMap::new);

impl Pending {
    /// The event's segment embeddings by whitespace-normalised text: an LLM's example sentence
    /// copied from a segment needs no new encoding.
    pub(super) fn known_embeddings(&self) -> HashMap<String, Vec<f32>> {
        self.segments
            .iter()
            .zip(&self.embeddings)
            .map(|(s, e)| (normalise(&s.text), e.clone()))
            .collect()
    }

    pub(super) fn input(&self) -> EventInput<'_> {
        EventInput {
            segments: &self.segments,
            terms: Vec::new(),
            pairs: Vec::new(),
            word_vectors: &NO_VECTORS,
            embeddings: &self.embeddings,
        }
    }
}

pub(super) fn normalise(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
