//! The rows a run writes, of one event or gathered over events.

use serde::{Deserialize, Serialize};

use crate::tables::{Assignment, Episode, EpisodeKeys, FragmentRow, Pair, Term};

/// Everything a run writes, of one event or gathered over events.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Outputs {
    /// `episodes` rows.
    pub episodes: Vec<Episode>,
    /// `assignments` rows.
    pub assignments: Vec<Assignment>,
    /// `fragments` rows.
    pub fragments: Vec<FragmentRow>,
    /// `terms` rows.
    pub terms: Vec<Term>,
    /// `pairs` rows.
    pub pairs: Vec<Pair>,
    /// The episodes as stable keys and vectors (kept in the checkpoint, matched at the commit:
    /// `crate::lineage`).
    pub episode_keys: Vec<EpisodeKeys>,
}

impl Outputs {
    /// Appends another event's rows.
    pub fn extend(&mut self, other: Outputs) {
        self.episodes.extend(other.episodes);
        self.assignments.extend(other.assignments);
        self.fragments.extend(other.fragments);
        self.terms.extend(other.terms);
        self.pairs.extend(other.pairs);
        self.episode_keys.extend(other.episode_keys);
    }
}
