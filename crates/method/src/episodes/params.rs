//! The settings of the episode stages ([`EpisodeParams`], the job's `[episodes]`), their
//! defaults and bounds.

use serde::{Deserialize, Serialize};

use super::classification::classify::{self, ConfidenceRule};
use super::classification::keep_rules;
use super::clusters::candidates::{self, PruneRule};
use super::terms::termspace;
use crate::grouping::density::DensityParams;

/// Parameters of the episode stages, with the paper's defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EpisodeParams {
    /// δ: share of top-ranked articles whose fragments are clustered (paper: 25%).
    pub top_articles: f64,
    /// At least this many top articles (all of them when fewer; issue 27, default 0): a small
    /// event's δ share is two or three articles, too few fragments for its episodes.
    pub min_top_articles: usize,
    /// Spread the top articles over the articles' days (issue 45; default off, see
    /// docs/quality.md): the same count, each day's share in proportion to its articles, taken
    /// by rank within the day ([`candidates::top_articles_by_day`]).
    pub top_by_day: bool,
    /// Cluster pruning rule (docs/method.md §4).
    pub prune: PruneRule,
    /// Confidence rule of the classification (paper text: μ − σ; authors' code: μ + σ).
    pub confidence: ConfidenceRule,
    /// How each episode's segments are ranked (docs/method.md §6 says by confidence; default: by
    /// density among the episode's own segments, its tight core first — chosen out of theme,
    /// see docs/quality.md).
    pub rank: classify::RankBy,
    /// Neighbours of `rank = "density"`: a segment's density is its mean cosine to this many of
    /// its most similar fellow members.
    pub rank_neighbors: usize,
    /// At most this many episodes per event, the tightest kept (`cap_by`; after the cohesion and size
    /// rules; 0: no limit; the default is [`EpisodeParams::default`]'s, chosen out of theme,
    /// see docs/quality.md). Gold episode counts do not grow
    /// with an event's size, while the candidates do.
    pub max_episodes: usize,
    /// Which episodes the cap (`max_episodes`) keeps: the tightest (`core`, the default since
    /// issue 45: the densest tops, [`CapBy::Core`]) or the largest (`size`, before).
    pub cap_by: CapBy,
    /// Episodes with fewer assigned segments are dropped (docs/method.md §6: 2).
    pub min_segments: usize,
    /// Keywords reported per episode.
    pub keywords: usize,
    /// Merge candidate episodes that tell the same episode (complete linkage of their vectors,
    /// cut at μ − σ) before classification — the no-LLM stand-in for the LLM's merging.
    pub merge: bool,
    /// Where the merge's dendrogram is cut, over the candidates' pairwise cosine distances
    /// (docs/method.md §5; default μ − σ: μ merged too much on the development set).
    pub merge_cut: termspace::Cut,
    /// Episodes kept by the cohesion of their segments (docs/method.md §6, after `min_segments`;
    /// default μ − σ of the event's episodes, the method's significance bound;
    /// `significant`: each episode against the event's segments instead, issue 45).
    pub cohesion: keep_rules::CohesionRule,
    /// Episodes kept by their number of segments among the event's episodes (docs/method.md §6,
    /// after the cohesion rule; default μ − σ of ln(size)).
    pub size: keep_rules::SizeRule,
    /// Where candidate episodes come from (§4): the top articles' fragments (the paper), or
    /// density clusters of the event's sentence embeddings.
    pub candidates: Candidates,
    /// HDBSCAN settings of density candidates.
    pub density: DensityParams,
    /// Episodes kept by the core density of their top segments (after the size rule, before
    /// `max_episodes`): an episode's core is the mean `rank_neighbors` density
    /// ([`classify::core_density`]) of its [`CORE_TOP`] densest segments, the ones a reader sees
    /// first. `all` (default) keeps every episode; `mean-minus-std` / `mean` drop those below
    /// that bound of the event's episodes' cores — a label-free count that follows how many
    /// tight episodes the event has (issue 27; not the default, see docs/quality-split.md).
    pub core: keep_rules::CohesionRule,
    /// Split a candidate episode whose segments form two cores (2-means of their embeddings,
    /// each part with at least [`CORE_TOP`] segments) when the two parts lie farther apart than
    /// the merge's own cut, i.e. the merge would not join them again (issue 27; default off).
    pub split: bool,
    /// A floor on the episode count (issue 27; default 5, 0: none): the merge stops before it
    /// leaves fewer candidates than this, and when the cohesion, size and core rules leave fewer
    /// episodes, the largest dropped ones come back up to it — those with at least
    /// [`CORE_TOP`] (and `min_segments`) segments whose core (the mean density of their
    /// [`CORE_TOP`] densest segments) is at least as dense as the loosest kept episode's, so
    /// that a floor adds only episodes as tight as those the rules kept. Small events otherwise
    /// collapse to two or three episodes (chosen on the exploration part, docs/quality-split.md).
    pub min_episodes: usize,
    /// At most this many fragments enter the fragment distances and the complete linkage (§4),
    /// the only steps quadratic in fragments: the top articles' in descending article rank
    /// ([`candidates::capped_top`]; 0: no cap). Every other segment of a bigger event still
    /// reaches its episode through the classification (§6), linear in segments × episodes.
    /// The default is above every development-set event's count, so their outputs do not move.
    pub max_fragments: usize,
    /// At most this many segments of an episode are ranked by their density among themselves
    /// (`rank = "density"` and the cores of `core`, `min_episodes`): the episode's segments most
    /// similar to its vector; the rest follow them by that similarity (0: no cap). Density
    /// compares every pair, so the cap bounds its cost per episode.
    pub max_ranked: usize,
    /// Coverage (issue 45; default off, see docs/quality.md): after §6, the dense groups of
    /// salient segments that no kept episode covers, each as tight as the loosest kept episode,
    /// become episodes of their own beside the kept ones, past `max_episodes` if need be
    /// ([`super::uncovered_groups`]).
    pub cover: bool,
    /// Distinct candidates come back (issue 45; default off, see docs/quality.md): after the
    /// cohesion, size and core rules, a dropped candidate whose members are set apart from the
    /// kept episodes at least as clearly as the least distinct kept episode's are from the
    /// others is kept again ([`super::distinct_candidates`]), before the floor and the cap.
    pub distinct: bool,
    /// Candidates told on their own days come back (issue 45; see docs/quality.md): after the
    /// cohesion, size and core rules, a dropped candidate whose articles' dates overlap the
    /// event's less than random sets of as many articles do (a permutation test at 5%) is kept
    /// again ([`super::dated_candidates`]), before the floor and the cap.
    pub dated: bool,
    /// Join kept episodes after classification (issue 45; default `none`, see
    /// docs/quality.md): `centroids` joins those whose member centroids lie closer than μ − σ
    /// of their distances and classifies again ([`super::join`]).
    pub join: super::classification::join::JoinRule,
    /// Following an `--out` (issue 45): a candidate episode that continues one of the previous
    /// run's episodes (it holds at least `lineage::MIN_SHARE` of that episode's segments still
    /// in the event, or they are that share of its own) is kept whatever the relative rules
    /// (cohesion, size, core, the cap) say, so that an episode found yesterday whose articles
    /// are still there does not end today. No effect on a first run. Off by default: it cost
    /// the development set replayed as a stream 4.3 points (docs/quality.md).
    pub carry: bool,
    /// Following an `--out` (issue 63): the articles that arrived since the previous run are
    /// judged on their own ([`super::novelty`]): their segments that no kept episode matches
    /// (as close to it as its own members are) are grouped among themselves, and a group as
    /// tight as the loosest kept episode, from at least `novelty_min_articles` of them, becomes
    /// an episode of its own (`source = "novelty"`). No effect on a first run or a new event.
    /// On in `jobs/follow.toml`; off by default, so that a default run into a followed `--out`
    /// gives the fresh run's tables.
    pub novelty: bool,
    /// The fewest of today's articles that make an episode of the novelty view.
    pub novelty_min_articles: usize,
}

/// Which episodes `max_episodes` keeps.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CapBy {
    /// The largest (most segments), ties by candidate order (the default before issue 45).
    Size,
    /// The default: the tightest: the highest core (the mean density of an episode's [`CORE_TOP`] densest
    /// segments), ties by candidate order. A small, tight phase is no longer the first out when
    /// an event has more candidates than the cap (issue 45: on the development set never worse
    /// on any theme or part, +0.9 5-F1 on the exploration part, docs/quality.md).
    #[default]
    Core,
}

/// Segments of an episode's top that `core` and `split` look at (the evaluation's k).
pub const CORE_TOP: usize = 5;

/// Default [`EpisodeParams::max_fragments`].
pub const DEFAULT_MAX_FRAGMENTS: usize = 2000;

/// Default [`EpisodeParams::max_ranked`].
pub const DEFAULT_MAX_RANKED: usize = 2000;

/// Items per task of the stages' parallel loops over segments (rayon): small enough to spread a
/// big event over every core, large enough that a small one costs nothing extra.
pub(super) const CHUNK: usize = 1024;

/// Where candidate episodes come from (§4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Candidates {
    /// The paper's §4: fragments of the top δ articles, clustered by complete linkage of their
    /// term co-occurrence and similarity, pruned by size.
    Fragments,
    /// HDBSCAN clusters of the event's segment embeddings ([`crate::grouping::density`]), each cluster's
    /// segments by membership; no pruning, no merge (density already separates them).
    Density,
    /// Both views: the fragment candidates and the density clusters (by salience), reconciled
    /// by the merge (candidates of the two views that tell the same episode join).
    Both,
}

impl Default for EpisodeParams {
    fn default() -> Self {
        Self {
            top_articles: candidates::DEFAULT_TOP_ARTICLES,
            min_top_articles: 0,
            top_by_day: false,
            prune: PruneRule::MeanMinusStd,
            confidence: ConfidenceRule::MeanMinusStd,
            rank: classify::RankBy::Density,
            rank_neighbors: 10,
            max_episodes: 15,
            cap_by: CapBy::Core,
            min_segments: 2,
            keywords: 10,
            merge: true,
            merge_cut: termspace::Cut::MeanMinusStd,
            cohesion: keep_rules::CohesionRule::MeanMinusStd,
            size: keep_rules::SizeRule::LogMeanMinusStd,
            candidates: Candidates::Fragments,
            density: DensityParams::default(),
            core: keep_rules::CohesionRule::All,
            split: false,
            min_episodes: 5,
            max_fragments: DEFAULT_MAX_FRAGMENTS,
            max_ranked: DEFAULT_MAX_RANKED,
            cover: false,
            distinct: false,
            dated: false,
            join: super::classification::join::JoinRule::None,
            carry: false,
            novelty: false,
            novelty_min_articles: 5,
        }
    }
}
