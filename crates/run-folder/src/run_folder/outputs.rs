//! The rows a run writes, of one event or gathered over events.

use serde::{Deserialize, Serialize};

use super::manifest::EventStatus;
use crate::tables::{
    Assignment, Episode, EpisodeArticle, EpisodeKeys, EventArticles, FragmentRow, LeftOut, Pair,
    Segment, Term,
};

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
    /// `episode_articles` rows.
    pub episode_articles: Vec<EpisodeArticle>,
    /// `left_out` rows.
    pub left_out: Vec<LeftOut>,
    /// The episodes as stable keys and vectors (kept in the checkpoint, matched at the commit:
    /// `crate::lineage`).
    pub episode_keys: Vec<EpisodeKeys>,
    /// The keys of the event's articles (one row; kept in the checkpoint, handed on at the
    /// commit: `crate::lineage`).
    pub event_articles: Vec<EventArticles>,
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
        self.episode_articles.extend(other.episode_articles);
        self.left_out.extend(other.left_out);
        self.event_articles.extend(other.event_articles);
    }

    /// Once an event's episodes and assignments are in: its `episode_articles` rows (with the
    /// articles' instants and those made only of copies of its segments, `facts`, counted in the
    /// episodes' `n_articles`),
    /// and its articles and coverage in `status` ([`crate::coverage`]).
    pub fn describe(
        &mut self,
        segments: &[Segment],
        facts: &crate::corpus::ArticleFacts,
        status: &mut EventStatus,
    ) {
        self.episode_articles =
            crate::coverage::episode_articles(segments, facts, &self.episodes, &self.assignments);
        crate::coverage::count_copies(&mut self.episodes, &self.episode_articles);
        status.articles = crate::coverage::articles(segments);
        self.event_articles = vec![EventArticles {
            key_event: status.key_event.clone(),
            article_keys: crate::lineage::article_keys(segments),
        }];
        status.coverage = crate::coverage::coverage(segments, &self.episodes, &self.assignments);
    }
}
