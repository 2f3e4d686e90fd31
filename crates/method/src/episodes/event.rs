//! What the stages of one key event share: its input ([`EventInput`]), its stage counts
//! ([`EventCounts`]), why it produced no episodes ([`EventError`]) and an episode to classify
//! against ([`EpisodeSpec`]).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::terms::termspace::SalientTerm;
use crate::grouping::density::DensityError;
use crate::tables::Segment;

/// Why an event produced no episodes.
#[derive(Debug, Clone, PartialEq, thiserror::Error, Serialize)]
pub enum EventError {
    /// No salient terms.
    #[error("no salient terms (too few segments or too little vocabulary)")]
    NoSalientTerms,
    /// No salient segments formed a fragment.
    #[error("no episode fragments")]
    NoFragments,
    /// Segment embeddings do not line up with the segments.
    #[error("{embeddings} embeddings for {segments} segments")]
    EmbeddingCount {
        /// Embeddings given.
        embeddings: usize,
        /// Segments given.
        segments: usize,
    },
    /// Classification left no episode with enough segments.
    #[error("no episode kept {0} or more segments")]
    NoEpisodes(usize),
    /// Density candidates could not be formed.
    #[error("density candidates: {0}")]
    Density(#[from] DensityError),
}

/// Everything one event's stages need.
#[derive(Debug)]
pub struct EventInput<'a> {
    /// The event's segments in (doc_id, seg_idx) order.
    pub segments: &'a [Segment],
    /// Its salient terms with salience and synonym group.
    pub terms: Vec<SalientTerm>,
    /// Co-occurring salient pairs (a, b, freq, d).
    pub pairs: Vec<(String, String, u32, f64)>,
    /// Static word vectors by word.
    pub word_vectors: &'a HashMap<String, Vec<f32>>,
    /// Sentence embedding of every segment, aligned with `segments`.
    pub embeddings: &'a [Vec<f32>],
    /// The previous run's episodes of this event (following an `--out`), each as the indices
    /// of this run's segments it held (`episodes.carry`); empty on a first run.
    pub carried: &'a [Vec<usize>],
}

/// Counts of one event's stages, for `run.json`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EventCounts {
    /// Salient terms.
    pub salient_terms: usize,
    /// Salient segments.
    pub salient_segments: usize,
    /// Fragments.
    pub fragments: usize,
    /// Top articles.
    pub top_articles: usize,
    /// Candidate clusters.
    pub clusters: usize,
    /// Candidate episodes after pruning (and merging).
    pub kept_clusters: usize,
    /// Episodes in the output.
    pub episodes: usize,
    /// The phases those episodes form (distinct `phase_id` per trial; [`super::phases`]).
    #[serde(default)]
    pub phases: usize,
    /// Segments assigned.
    pub assigned: usize,
    /// Why the other segments are in no episode, counted (trial 0;
    /// [`super::assignment::left_out`]): `below-confidence` or `episode-dropped-by-<rule>`.
    /// Always written (no `skip_serializing_if`): the reports cross processes in a format that
    /// does not name its fields.
    #[serde(default)]
    pub left_out: std::collections::BTreeMap<String, usize>,
}

/// An episode to classify against: its vector (docs/method.md §6) and what describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct EpisodeSpec {
    /// Harmonic-weighted mean of sentence embeddings (§6).
    pub vector: Vec<f32>,
    /// Title.
    pub title: String,
    /// LLM: [subject, action, object, time, location].
    pub title_fields: Vec<String>,
    /// Keywords.
    pub keywords: Vec<String>,
    /// LLM: example sentences.
    pub example_sentences: Vec<String>,
    /// `clusters` or `llm`.
    pub source: &'static str,
}
