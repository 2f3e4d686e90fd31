//! The per-event episode stages (ALGORITHM.md §3–§6): segment salience and partitioning,
//! candidate clusters from the top articles, no-LLM episode vectors and confidence
//! classification. For one key event, [`prepare`] runs §3–§4 and [`episodes_without_llm`] §5
//! (no LLM) and §6; with an LLM, `run` classifies against its episodes with [`assign`]. Each stage
//! is a plain function in its own module.

pub mod candidates;
pub mod classify;
pub mod expand;
pub mod names;
pub mod partition;
pub mod select;
pub mod termspace;

use std::collections::{BTreeSet, HashMap};

use serde::{Deserialize, Serialize};

use rayon::prelude::*;

use crate::clustering::density::{self, DensityError, DensityParams};
use crate::progress::steps::Steps;
use crate::tables::{Assignment, Episode, FragmentRow, Segment};
use candidates::PruneRule;
use classify::ConfidenceRule;
use termspace::{SalientTerm, TermSpace};

/// Parameters of the episode stages, with the paper's defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EpisodeParams {
    /// δ: share of top-ranked articles whose fragments are clustered (paper: 25%).
    pub top_articles: f64,
    /// At least this many top articles (all of them when fewer; issue 27, default 0): a small
    /// event's δ share is two or three articles, too few fragments for its episodes.
    pub min_top_articles: usize,
    /// Cluster pruning rule (ALGORITHM.md §4).
    pub prune: PruneRule,
    /// Confidence rule of the classification (paper text: μ − σ; authors' code: μ + σ).
    pub confidence: ConfidenceRule,
    /// How each episode's segments are ranked (ALGORITHM.md §6 says by confidence; default: by
    /// density among the episode's own segments, its tight core first — chosen out of theme,
    /// see docs/quality.md).
    pub rank: classify::RankBy,
    /// Neighbours of `rank = "density"`: a segment's density is its mean cosine to this many of
    /// its most similar fellow members.
    pub rank_neighbors: usize,
    /// At most this many episodes per event, the largest kept (after the cohesion and size
    /// rules; 0: no limit; the default is [`EpisodeParams::default`]'s, chosen out of theme,
    /// see docs/quality.md). Gold episode counts do not grow
    /// with an event's size, while the candidates do.
    pub max_episodes: usize,
    /// Episodes with fewer assigned segments are dropped (ALGORITHM.md §6: 2).
    pub min_segments: usize,
    /// Keywords reported per episode.
    pub keywords: usize,
    /// Merge candidate episodes that tell the same episode (complete linkage of their vectors,
    /// cut at μ − σ) before classification — the no-LLM stand-in for the LLM's merging.
    pub merge: bool,
    /// Where the merge's dendrogram is cut, over the candidates' pairwise cosine distances
    /// (ALGORITHM.md §4–§5; default μ − σ: μ merged too much on the development set).
    pub merge_cut: termspace::Cut,
    /// Episodes kept by the cohesion of their segments (ALGORITHM.md §6, after `min_segments`;
    /// default μ − σ, the method's significance bound).
    pub cohesion: select::CohesionRule,
    /// Episodes kept by their number of segments among the event's episodes (ALGORITHM.md §6,
    /// after the cohesion rule; default μ − σ of ln(size)).
    pub size: select::SizeRule,
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
    pub core: select::CohesionRule,
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
}

/// Segments of an episode's top that `core` and `split` look at (the evaluation's k).
pub const CORE_TOP: usize = 5;

/// Default [`EpisodeParams::max_fragments`].
pub const DEFAULT_MAX_FRAGMENTS: usize = 2000;

/// Default [`EpisodeParams::max_ranked`].
pub const DEFAULT_MAX_RANKED: usize = 2000;

/// Items per task of the stages' parallel loops over segments (rayon): small enough to spread a
/// big event over every core, large enough that a small one costs nothing extra.
const CHUNK: usize = 1024;

/// Where candidate episodes come from (§4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Candidates {
    /// The paper's §4: fragments of the top δ articles, clustered by complete linkage of their
    /// term co-occurrence and similarity, pruned by size.
    Fragments,
    /// HDBSCAN clusters of the event's segment embeddings ([`crate::clustering::density`]), each cluster's
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
            prune: PruneRule::MeanMinusStd,
            confidence: ConfidenceRule::MeanMinusStd,
            rank: classify::RankBy::Density,
            rank_neighbors: 10,
            max_episodes: 15,
            min_segments: 2,
            keywords: 10,
            merge: true,
            merge_cut: termspace::Cut::MeanMinusStd,
            cohesion: select::CohesionRule::MeanMinusStd,
            size: select::SizeRule::LogMeanMinusStd,
            candidates: Candidates::Fragments,
            density: DensityParams::default(),
            core: select::CohesionRule::All,
            split: false,
            min_episodes: 5,
            max_fragments: DEFAULT_MAX_FRAGMENTS,
            max_ranked: DEFAULT_MAX_RANKED,
        }
    }
}

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
    /// Segments assigned.
    pub assigned: usize,
}

/// What §3–§4 leave for §5–§6 of one key event: the kept candidate clusters, and what is
/// needed to describe and classify against them.
#[derive(Debug)]
pub struct Prepared {
    /// The key event.
    pub key_event: String,
    /// Every fragment, with its cluster.
    pub fragments: Vec<FragmentRow>,
    /// Stage counts so far.
    pub counts: EventCounts,
    /// The kept candidate clusters (after pruning): their segments (indices into the event's
    /// segments) by descending segment salience.
    pub groups: Vec<Vec<usize>>,
    space: TermSpace,
    seg_terms: Vec<Vec<usize>>,
    scores: Vec<f64>,
    /// Per term: boilerplate of articles' openings ([`names::boilerplate_terms`]).
    boilerplate: Vec<bool>,
}

/// An episode to classify against: its vector (ALGORITHM.md §6) and what describes it.
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

/// §3–§4 for one key event: segment salience, partitioning into fragments, top articles,
/// fragment distances, complete-linkage clustering and pruning. Linear in the event's segments
/// but for the fragment distances and the linkage, which see at most `params.max_fragments`
/// fragments; `steps` tells where it stands.
pub fn prepare(
    input: &EventInput,
    params: &EpisodeParams,
    steps: &Steps,
) -> Result<Prepared, EventError> {
    let segs = input.segments;
    if input.embeddings.len() != segs.len() {
        return Err(EventError::EmbeddingCount {
            embeddings: input.embeddings.len(),
            segments: segs.len(),
        });
    }
    let key_event = segs
        .first()
        .map(|s| s.key_event.clone())
        .unwrap_or_default();
    let space = TermSpace::new(input.terms.clone(), &input.pairs, input.word_vectors);
    if space.is_empty() {
        return Err(EventError::NoSalientTerms);
    }
    let mut counts = EventCounts {
        salient_terms: space.len(),
        ..EventCounts::default()
    };

    // §3: segment salience and fragments.
    steps.stage("segment terms", segs.len());
    let seg_terms: Vec<Vec<usize>> = segs
        .par_chunks(CHUNK)
        .flat_map_iter(|chunk| {
            steps.inc(chunk.len());
            chunk.iter().map(|s| space.segment_terms(&s.text))
        })
        .collect();
    steps.stage("segment salience", 0);
    let scores = partition::score_segments(&space, &seg_terms);
    let salient = partition::salient_segments(&scores);
    steps.stage("fragments", 0);
    counts.salient_segments = salient.iter().filter(|&&s| s).count();
    let docs: Vec<u32> = segs.iter().map(|s| s.doc_id).collect();
    let texts: Vec<&str> = segs.iter().map(|s| s.text.as_str()).collect();
    let fragments = partition::partition(&space, &docs, &texts, &seg_terms, &salient);
    counts.fragments = fragments.len();
    if fragments.is_empty() {
        return Err(EventError::NoFragments);
    }

    // §4: candidates.
    let scores_only: Vec<f64> = scores.iter().map(|s| s.score).collect();
    let (groups, cluster_of) = match params.candidates {
        Candidates::Fragments => {
            fragment_candidates(&space, &fragments, &scores, params, &mut counts, steps)
        }
        Candidates::Density => {
            let found = density::clusters(input.embeddings, &params.density)?;
            counts.clusters = found.len();
            counts.kept_clusters = found.len();
            (
                found.into_iter().map(|c| c.members).collect(),
                HashMap::new(),
            )
        }
        Candidates::Both => {
            let (mut groups, cluster_of) =
                fragment_candidates(&space, &fragments, &scores, params, &mut counts, steps);
            let found = density::clusters(input.embeddings, &params.density)?;
            counts.clusters += found.len();
            counts.kept_clusters += found.len();
            groups.extend(
                found
                    .into_iter()
                    .map(|c| by_salience(c.members, &scores_only)),
            );
            (groups, cluster_of)
        }
    };
    let fragment_rows: Vec<FragmentRow> = fragments
        .iter()
        .enumerate()
        .map(|(i, f)| FragmentRow {
            key_event: key_event.clone(),
            fragment_id: i as u32,
            doc_id: f.doc_id,
            first_seg_idx: segs[f.segments[0]].seg_idx,
            last_seg_idx: segs[*f.segments.last().expect("fragments are not empty")].seg_idx,
            cluster: cluster_of.get(&i).copied(),
        })
        .collect();
    let opening: Vec<bool> = (0..segs.len())
        .map(|i| i == 0 || segs[i].doc_id != segs[i - 1].doc_id)
        .collect();
    let boilerplate = names::boilerplate_terms(&seg_terms, &opening, space.len());
    Ok(Prepared {
        key_event,
        fragments: fragment_rows,
        counts,
        groups,
        space,
        seg_terms,
        scores: scores_only,
        boilerplate,
    })
}

/// §4 as the paper has it: the top δ articles' fragments, their distances, complete linkage and
/// pruning. Returns the kept clusters' segments by descending salience, and each clustered
/// fragment's cluster.
fn fragment_candidates(
    space: &TermSpace,
    fragments: &[partition::Fragment],
    scores: &[partition::SegmentScore],
    params: &EpisodeParams,
    counts: &mut EventCounts,
    steps: &Steps,
) -> (Vec<Vec<usize>>, HashMap<usize, u32>) {
    steps.stage("top articles", 0);
    let ranks = candidates::article_ranks(fragments, scores);
    let top = candidates::top_articles(&ranks, params.top_articles, params.min_top_articles);
    let (chosen, taken) = candidates::capped_top(fragments, &ranks, &top, params.max_fragments);
    if taken.len() < top.len() {
        tracing::debug!(
            "{} of {} top articles ({} fragments) enter the fragment distances (max_fragments)",
            taken.len(),
            top.len(),
            chosen.len()
        );
    }
    counts.top_articles = taken.len();
    let chosen_refs: Vec<&partition::Fragment> = chosen.iter().map(|&f| &fragments[f]).collect();
    let distances = candidates::fragment_distances(space, &chosen_refs, steps);
    steps.stage("candidate clusters", 0);
    let labels = candidates::cluster(&distances, chosen.len());
    drop(distances);
    let n_clusters = labels.iter().copied().max().map_or(0, |m| m + 1);
    counts.clusters = n_clusters;
    let mut sizes = vec![0usize; n_clusters];
    let mut arts: Vec<BTreeSet<u32>> = vec![BTreeSet::new(); n_clusters];
    // Each cluster's fragments, in the chosen order.
    let mut of_cluster: Vec<Vec<usize>> = vec![Vec::new(); n_clusters];
    for (k, &f) in chosen.iter().enumerate() {
        sizes[labels[k]] += fragments[f].segments.len();
        arts[labels[k]].insert(fragments[f].doc_id);
        of_cluster[labels[k]].push(f);
    }
    let n_arts: Vec<usize> = arts.iter().map(BTreeSet::len).collect();
    let keep = candidates::keep_clusters(&sizes, &n_arts, params.prune);
    counts.kept_clusters = keep.iter().filter(|&&k| k).count();
    let cluster_of: HashMap<usize, u32> = chosen
        .iter()
        .enumerate()
        .map(|(k, &f)| (f, labels[k] as u32))
        .collect();
    let scores: Vec<f64> = scores.iter().map(|s| s.score).collect();
    let groups = of_cluster
        .into_iter()
        .zip(keep)
        .filter(|(_, keep)| *keep)
        .map(|(members, _)| {
            let members: Vec<usize> = members
                .into_iter()
                .flat_map(|f| fragments[f].segments.iter().copied())
                .collect();
            by_salience(members, &scores)
        })
        .collect();
    (groups, cluster_of)
}

/// Segments by descending salience score (ties by position), each once.
fn by_salience(mut members: Vec<usize>, scores: &[f64]) -> Vec<usize> {
    members.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
    members.dedup();
    members
}

impl Prepared {
    /// The `n` most salient segments of each kept cluster (the LLM's input, §5).
    pub fn top_segments(&self, n: usize) -> Vec<Vec<usize>> {
        self.groups
            .iter()
            .map(|g| g.iter().take(n).copied().collect())
            .collect()
    }

    /// The keywords of each of `groups` (segment indices): the terms that set it apart from
    /// the event's other segments, boilerplate left out ([`names`]), `n` each.
    fn keywords(&self, groups: &[Vec<usize>], n: usize) -> Vec<Vec<String>> {
        let synonyms: Vec<u32> = self.space.terms.iter().map(|t| t.group).collect();
        names::distinctive_terms(groups, &self.seg_terms, &self.boilerplate, &synonyms, n)
            .into_iter()
            .map(|ids| {
                ids.into_iter()
                    .map(|t| self.space.terms[t].term.clone())
                    .collect()
            })
            .collect()
    }
}

/// §5 without an LLM (the paper's ablation): each kept candidate cluster is an episode whose
/// vector is the harmonic-weighted mean of its segments' embeddings by descending salience
/// (§6). With `params.merge`, candidates whose vectors are close are first merged.
pub fn cluster_episodes(
    input: &EventInput,
    prepared: &Prepared,
    params: &EpisodeParams,
) -> Vec<EpisodeSpec> {
    let vector_of = |members: &[usize]| {
        let vectors: Vec<&[f32]> = members
            .iter()
            .map(|&s| input.embeddings[s].as_slice())
            .collect();
        classify::harmonic_mean_vector(&vectors)
    };
    let mut groups = prepared.groups.clone();
    if params.merge && params.candidates != Candidates::Density && groups.len() > 2 {
        // Candidates that tell the same episode: complete linkage of their episode vectors
        // (cosine distance) cut at μ − σ, the method's own significance rule.
        let vectors: Vec<Vec<f32>> = groups.iter().map(|g| vector_of(g)).collect();
        let mut condensed = Vec::new();
        for i in 0..vectors.len() {
            for j in i + 1..vectors.len() {
                condensed.push(1.0 - termspace::cosine(&vectors[i], &vectors[j]));
            }
        }
        let merged = crate::clustering::linkage::linkage_cut_floor(
            &condensed,
            vectors.len(),
            kodama::Method::Complete,
            params.merge_cut.bound(&condensed),
            params.min_episodes,
        );
        let n = merged.iter().copied().max().map_or(0, |m| m + 1);
        let mut joined: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (g, label) in groups.into_iter().zip(merged) {
            joined[label].extend(g);
        }
        groups = joined
            .into_iter()
            .map(|g| by_salience(g, &prepared.scores))
            .collect();
        if params.split {
            let bound = params.merge_cut.bound(&condensed);
            groups = groups
                .into_iter()
                .flat_map(|g| match split_cores(input.embeddings, &g, bound) {
                    Some((a, b)) => vec![a, b],
                    None => vec![g],
                })
                .collect();
        }
    }
    let keywords = prepared.keywords(&groups, params.keywords);
    groups
        .iter()
        .zip(keywords)
        .map(|(g, keywords)| EpisodeSpec {
            vector: vector_of(g),
            title: keywords
                .iter()
                .take(3)
                .cloned()
                .collect::<Vec<_>>()
                .join(" "),
            title_fields: Vec::new(),
            keywords,
            example_sentences: Vec::new(),
            source: "clusters",
        })
        .collect()
}

/// §6: classifies every segment of the event against the episodes (paper eq. 2), drops
/// episodes with fewer than `min_segments` segments, then those below the cohesion rule
/// (`params.cohesion`), then those below the size rule (`params.size`) and the core rule
/// (`params.core`), brings tight dropped ones back up to `params.min_episodes`
/// ([`apply_floor`]), keeps the `params.max_episodes` largest, and ranks each
/// episode's segments by `params.rank` (density among its own segments by default; eq. 2
/// confidence as ALGORITHM.md §6 says with `rank = "confidence"`).
/// Episode ids count from 0 within the trial.
pub fn assign(
    input: &EventInput,
    key_event: &str,
    episodes_in: &[EpisodeSpec],
    params: &EpisodeParams,
    trial: u32,
    steps: &Steps,
) -> (Vec<Episode>, Vec<Assignment>) {
    let segs = input.segments;
    let vectors: Vec<Vec<f32>> = episodes_in.iter().map(|c| c.vector.clone()).collect();
    let classified = classify::classify(input.embeddings, &vectors, params.confidence, steps);
    let mut members: Vec<Vec<(f64, usize)>> = vec![Vec::new(); episodes_in.len()];
    for (s, c) in classified.iter().enumerate() {
        if c.assigned {
            let key = match params.rank {
                classify::RankBy::Confidence => c.confidence,
                classify::RankBy::Similarity | classify::RankBy::Density => c.similarity,
            };
            members[c.episode].push((key, s));
        }
    }
    let mut episodes = Vec::new();
    let mut assignments = Vec::new();
    // Episodes kept: enough segments (§6), then significantly cohesive ones among those, then
    // significantly large ones among those.
    let mut kept: Vec<bool> = members
        .iter()
        .map(|m| m.len() >= params.min_segments)
        .collect();
    select::narrow(
        &mut kept,
        |e| -> Vec<f64> {
            members[e]
                .iter()
                .map(|&(_, s)| classified[s].similarity)
                .collect()
        },
        |similarities| select::cohesive(similarities, params.cohesion),
    );
    select::narrow(
        &mut kept,
        |e| members[e].len(),
        |sizes| select::large_enough(sizes, params.size),
    );
    // Densities among each episode's members (at most `max_ranked` of them compared), once.
    steps.stage("episode cores and ranks", members.len());
    let densities: Vec<std::cell::OnceCell<Vec<Option<f64>>>> = (0..members.len())
        .map(|_| std::cell::OnceCell::new())
        .collect();
    let density_of = |e: usize| -> &Vec<Option<f64>> {
        densities[e].get_or_init(|| {
            steps.inc(1);
            let ids: Vec<usize> = members[e].iter().map(|&(_, s)| s).collect();
            let similarity: Vec<f64> = ids.iter().map(|&s| classified[s].similarity).collect();
            classify::ranked_density(
                input.embeddings,
                &ids,
                &similarity,
                params.rank_neighbors,
                params.max_ranked,
            )
        })
    };
    let core_of = |e: usize| top_core(density_of(e));
    if params.core != select::CohesionRule::All {
        select::narrow(&mut kept, core_of, |cores| {
            select::cohesive(cores, params.core)
        });
    }
    apply_floor(&mut kept, &members, core_of, params);
    if params.max_episodes > 0 {
        // The largest episodes, ties by index.
        let mut by_size: Vec<usize> = (0..kept.len()).filter(|&e| kept[e]).collect();
        by_size.sort_by(|&a, &b| members[b].len().cmp(&members[a].len()).then(a.cmp(&b)));
        for &e in by_size.iter().skip(params.max_episodes) {
            kept[e] = false;
        }
    }
    for (e, spec) in episodes_in.iter().enumerate() {
        if !kept[e] {
            continue;
        }
        let mut segs_of = members[e].clone();
        if params.rank == classify::RankBy::Density {
            // The compared members by density, then the rest by similarity (their key).
            let mut keyed: Vec<(bool, f64, usize)> = segs_of
                .iter()
                .zip(density_of(e))
                .map(|(&(similarity, s), d)| (d.is_some(), d.unwrap_or(similarity), s))
                .collect();
            keyed.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.total_cmp(&a.1)).then(a.2.cmp(&b.2)));
            segs_of = keyed.into_iter().map(|(_, key, s)| (key, s)).collect();
        } else {
            segs_of.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        }
        let episode_id = episodes.len() as u32;
        let span = crate::tables::EpisodeSpan::of(
            segs_of
                .iter()
                .map(|&(_, s)| (segs[s].doc_id, segs[s].doc_date)),
        );
        episodes.push(Episode {
            key_event: key_event.to_string(),
            trial,
            episode_id,
            title: spec.title.clone(),
            title_fields: spec.title_fields.clone(),
            keywords: spec.keywords.clone(),
            example_sentences: spec.example_sentences.clone(),
            n_segments: segs_of.len() as u32,
            source: spec.source.into(),
            n_articles: span.n_articles,
            first_date: span.first_date,
            peak_date: span.peak_date,
            last_date: span.last_date,
        });
        for (rank, (_, s)) in segs_of.into_iter().enumerate() {
            let confidence = classified[s].confidence;
            assignments.push(Assignment {
                key_event: key_event.to_string(),
                trial,
                episode_id,
                doc_id: segs[s].doc_id,
                seg_idx: segs[s].seg_idx,
                rank: rank as u32,
                confidence,
            });
        }
    }
    (episodes, assignments)
}

/// The [`CORE_TOP`] highest of an episode's densities ([`classify::ranked_density`]: those of
/// its compared members), densest first: the top a reader sees first.
fn top_core(densities: &[Option<f64>]) -> Vec<f64> {
    let mut d: Vec<f64> = densities.iter().flatten().copied().collect();
    d.sort_by(|a, b| b.total_cmp(a));
    d.truncate(CORE_TOP);
    d
}

/// `params.min_episodes` over the rules' `kept` episodes: their cores (the mean of
/// `core_of`, [`top_core`]) gate what [`restore_floor`] brings back; nothing to do when enough
/// are kept. Cores are computed only for the episodes that [`restore_floor`] looks at (the kept
/// ones and those with a whole top).
fn apply_floor<T>(
    kept: &mut [bool],
    members: &[Vec<T>],
    core_of: impl Fn(usize) -> Vec<f64>,
    params: &EpisodeParams,
) {
    if kept.iter().filter(|&&k| k).count() >= params.min_episodes {
        return;
    }
    // Only episodes with a whole top come back: a smaller one's density is that of two or three
    // segments, and a reader gets no top from it.
    let with_top = params.min_segments.max(CORE_TOP);
    let cores: Vec<f64> = (0..members.len())
        .map(|e| {
            if !kept[e] && members[e].len() < with_top {
                return f64::NEG_INFINITY;
            }
            let d = core_of(e);
            if d.is_empty() {
                f64::NEG_INFINITY
            } else {
                d.iter().sum::<f64>() / d.len() as f64
            }
        })
        .collect();
    restore_floor(kept, members, &cores, with_top, params.min_episodes);
}

/// `min_episodes`: while fewer than `floor` episodes are kept, the largest dropped one with at
/// least `min_segments` segments and a core (`cores`: the mean density of its [`CORE_TOP`]
/// densest segments) at least as dense as the loosest kept episode's comes back (ties by index).
/// With no episode kept, any dropped one may come back.
fn restore_floor<T>(
    kept: &mut [bool],
    members: &[Vec<T>],
    cores: &[f64],
    min_segments: usize,
    floor: usize,
) {
    let count = kept.iter().filter(|&&k| k).count();
    let loosest = (0..kept.len())
        .filter(|&e| kept[e])
        .map(|e| cores[e])
        .fold(f64::INFINITY, f64::min);
    let loosest = if loosest.is_finite() {
        loosest
    } else {
        f64::NEG_INFINITY
    };
    let mut dropped: Vec<usize> = (0..kept.len())
        .filter(|&e| !kept[e] && members[e].len() >= min_segments && cores[e] >= loosest)
        .collect();
    dropped.sort_by(|&a, &b| members[b].len().cmp(&members[a].len()).then(a.cmp(&b)));
    for e in dropped.into_iter().take(floor.saturating_sub(count)) {
        kept[e] = true;
    }
}

/// Two cores of `members` (segment indices, by salience): spherical 2-means of their unit
/// embeddings, seeded by the first member and the member least similar to it, 20 rounds at
/// most. Returns the two parts (each in the members' order) when both hold at least
/// [`CORE_TOP`] segments and their harmonic mean vectors lie at a cosine distance above `bound`;
/// otherwise None. Deterministic: ties go to the first seed.
pub fn split_cores(
    embeddings: &[Vec<f32>],
    members: &[usize],
    bound: f64,
) -> Option<(Vec<usize>, Vec<usize>)> {
    if members.len() < 2 * CORE_TOP {
        return None;
    }
    let unit = classify::unit_vectors(embeddings, members);
    let dot = |a: &[f64], b: &[f64]| -> f64 { a.iter().zip(b).map(|(x, y)| x * y).sum() };
    let far = (1..unit.len())
        .min_by(|&a, &b| {
            dot(&unit[0], &unit[a])
                .total_cmp(&dot(&unit[0], &unit[b]))
                .then(a.cmp(&b))
        })
        .expect("at least two members");
    let mut centres = [unit[0].clone(), unit[far].clone()];
    let mut side = vec![false; unit.len()];
    for _ in 0..20 {
        let next: Vec<bool> = unit
            .iter()
            .map(|u| dot(u, &centres[1]) > dot(u, &centres[0]))
            .collect();
        let changed = next != side;
        side = next;
        for (c, centre) in centres.iter_mut().enumerate() {
            let mut sum = vec![0.0f64; unit[0].len()];
            for (u, &s) in unit.iter().zip(&side) {
                if s == (c == 1) {
                    for (a, x) in sum.iter_mut().zip(u) {
                        *a += x;
                    }
                }
            }
            let norm = dot(&sum, &sum).sqrt();
            if norm > 0.0 {
                *centre = sum.iter().map(|x| x / norm).collect();
            }
        }
        if !changed {
            break;
        }
    }
    let part = |second: bool| -> Vec<usize> {
        members
            .iter()
            .zip(&side)
            .filter(|&(_, &s)| s == second)
            .map(|(&m, _)| m)
            .collect()
    };
    let (a, b) = (part(false), part(true));
    if a.len() < CORE_TOP || b.len() < CORE_TOP {
        return None;
    }
    let vector = |part: &[usize]| {
        let vectors: Vec<&[f32]> = part.iter().map(|&s| embeddings[s].as_slice()).collect();
        classify::harmonic_mean_vector(&vectors)
    };
    let distance = 1.0 - termspace::cosine(&vector(&a), &vector(&b));
    (distance > bound).then_some((a, b))
}

/// §5 without an LLM, then §6: the kept candidate clusters (merged with `params.merge`) as
/// episodes ([`cluster_episodes`]), every segment classified against them ([`assign`]). Returns
/// the number of candidate episodes with the episodes and assignments kept.
pub fn episodes_without_llm(
    input: &EventInput,
    prepared: &Prepared,
    params: &EpisodeParams,
    trial: u32,
    steps: &Steps,
) -> (usize, Vec<Episode>, Vec<Assignment>) {
    steps.stage("episode vectors and merge", 0);
    let specs = cluster_episodes(input, prepared, params);
    let (episodes, assignments) = assign(input, &prepared.key_event, &specs, params, trial, steps);
    (specs.len(), episodes, assignments)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(vector: Vec<f32>) -> EpisodeSpec {
        EpisodeSpec {
            vector,
            title: String::new(),
            title_fields: Vec::new(),
            keywords: Vec::new(),
            example_sentences: Vec::new(),
            source: "clusters",
        }
    }

    /// `n` segments of event "e", one per article.
    fn one_per_article(n: usize) -> Vec<Segment> {
        (0..n)
            .map(|i| Segment {
                key_event: "e".into(),
                theme: None,
                doc_id: i as u32,
                doc_date: None,
                seg_idx: 0,
                text: String::new(),
                source_id: None,
                title: None,
            })
            .collect()
    }

    /// An event input of segments and embeddings only.
    fn input_of<'a>(
        segments: &'a [Segment],
        vectors: &'a HashMap<String, Vec<f32>>,
        embeddings: &'a [Vec<f32>],
    ) -> EventInput<'a> {
        EventInput {
            segments,
            terms: Vec::new(),
            pairs: Vec::new(),
            word_vectors: vectors,
            embeddings,
        }
    }

    #[test]
    fn the_size_rule_drops_the_small_tail_after_classification() {
        // 30, 20 and 12 segments along three axes, 2 along the diagonal: ln sizes 3.40, 3.00,
        // 2.48, 0.69 → μ − σ ≈ 1.35 (≈ 3.9 segments): the diagonal episode is dropped.
        let mut embeddings = Vec::new();
        for (axis, n) in [(0usize, 30usize), (1, 20), (2, 12)] {
            for i in 0..n {
                let mut v = vec![0.05 * (i % 3) as f32; 3];
                v[axis] = 1.0;
                embeddings.push(v);
            }
        }
        embeddings.extend([vec![0.6, 0.6, 0.61], vec![0.61, 0.6, 0.6]]);
        let segments = one_per_article(embeddings.len());
        let vectors = HashMap::new();
        let input = input_of(&segments, &vectors, &embeddings);
        let specs: Vec<EpisodeSpec> = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0; 3]]
            .iter()
            .map(|v| spec(v.to_vec()))
            .collect();
        let params = EpisodeParams {
            confidence: ConfidenceRule::All,
            cohesion: select::CohesionRule::All,
            ..EpisodeParams::default()
        };
        let sizes = |p: &EpisodeParams| {
            let (episodes, assignments) = assign(&input, "e", &specs, p, 0, &Steps::quiet());
            assert_eq!(
                assignments.len() as u32,
                episodes.iter().map(|e| e.n_segments).sum::<u32>()
            );
            episodes.iter().map(|e| e.n_segments).collect::<Vec<_>>()
        };
        // The default floor (5) does not bring the diagonal back: it has no whole top.
        assert_eq!(sizes(&params), vec![30, 20, 12]);
        let all = EpisodeParams {
            size: select::SizeRule::All,
            ..params
        };
        assert_eq!(sizes(&all), vec![30, 20, 12, 2]);
        // At most two episodes: the two largest stay, in their order.
        let capped = EpisodeParams {
            size: select::SizeRule::All,
            max_episodes: 2,
            ..params
        };
        assert_eq!(sizes(&capped), vec![30, 20]);
    }

    #[test]
    fn the_floor_stops_the_merge_and_brings_back_the_largest_dropped_episodes() {
        // Distances 1, 2, 9 under a bound of 10: complete linkage joins all three; a floor of 2
        // stops after the first merge, a floor of 3 merges nothing.
        let d = [1.0, 2.0, 9.0];
        let cut = |floor| {
            crate::clustering::linkage::linkage_cut_floor(
                &d,
                3,
                kodama::Method::Complete,
                10.0,
                floor,
            )
        };
        assert_eq!(cut(0), vec![0, 0, 0]);
        assert_eq!(cut(2), vec![0, 0, 1]);
        assert_eq!(cut(3), vec![0, 1, 2]);
        // Kept: episode 0 only; floor 3 brings back the largest dropped ones with at least two
        // segments (3, then 1; never 2, with one segment), when their cores are as dense as
        // episode 0's.
        let members: Vec<Vec<u8>> = vec![vec![0; 9], vec![0; 3], vec![0; 1], vec![0; 5]];
        let cores = [0.5, 0.6, 0.9, 0.5];
        let mut kept = vec![true, false, false, false];
        restore_floor(&mut kept, &members, &cores, 2, 3);
        assert_eq!(kept, vec![true, true, false, true]);
        let mut kept = vec![true, false, false, false];
        restore_floor(&mut kept, &members, &cores, 2, 10);
        assert_eq!(kept, vec![true, true, false, true]);
        let mut kept = vec![true, false, false, false];
        restore_floor(&mut kept, &members, &cores, 2, 0);
        assert_eq!(kept, vec![true, false, false, false]);
        // A looser core than the loosest kept episode's stays out: episode 3 (0.4 < 0.5).
        let looser = [0.5, 0.6, 0.9, 0.4];
        let mut kept = vec![true, false, false, false];
        restore_floor(&mut kept, &members, &looser, 2, 3);
        assert_eq!(kept, vec![true, true, false, false]);
        // Nothing kept: the largest dropped ones come back whatever their cores.
        let mut kept = vec![false; 4];
        restore_floor(&mut kept, &members, &looser, 2, 2);
        assert_eq!(kept, vec![true, false, false, true]);
    }

    #[test]
    fn split_cores_separates_two_tight_groups_and_leaves_one_alone() {
        // Six segments near x, six near y: two cores at cosine distance ≈ 1.
        let mut embeddings = Vec::new();
        for i in 0..6 {
            embeddings.push(vec![1.0, 0.02 * i as f32, 0.0]);
            embeddings.push(vec![0.02 * i as f32, 1.0, 0.0]);
        }
        let members: Vec<usize> = (0..12).collect();
        let (a, b) = split_cores(&embeddings, &members, 0.5).expect("two cores");
        assert_eq!(a, [0, 2, 4, 6, 8, 10]);
        assert_eq!(b, [1, 3, 5, 7, 9, 11]);
        // Farther apart than the bound only: with a bound above their distance, no split.
        assert!(split_cores(&embeddings, &members, 1.5).is_none());
        // Fewer than CORE_TOP on a side: no split.
        assert!(split_cores(&embeddings, &members[..9], 0.5).is_none());
        // One core: the parts lie close, no split.
        let one: Vec<Vec<f32>> = (0..12).map(|i| vec![1.0, 0.01 * i as f32, 0.0]).collect();
        assert!(split_cores(&one, &members, 0.1).is_none());
    }

    #[test]
    fn the_core_rule_drops_episodes_whose_top_segments_are_loose() {
        // Three tight episodes (identical segments) and one loose one (spread segments), each
        // of 8 segments along its own axis of a 6-dimensional space.
        let mut embeddings = Vec::new();
        for axis in 0..3 {
            for _ in 0..8 {
                let mut v = vec![0.0f32; 6];
                v[axis] = 1.0;
                embeddings.push(v);
            }
        }
        for i in 0..8 {
            let mut v = vec![0.0f32; 6];
            v[3] = 1.0;
            v[4 + i % 2] = if i < 4 { 1.0 } else { -1.0 };
            embeddings.push(v);
        }
        let segments = one_per_article(embeddings.len());
        let vectors = HashMap::new();
        let input = input_of(&segments, &vectors, &embeddings);
        let specs: Vec<EpisodeSpec> = (0..4)
            .map(|axis| {
                let mut v = vec![0.0f32; 6];
                v[axis] = 1.0;
                spec(v)
            })
            .collect();
        let params = EpisodeParams {
            confidence: ConfidenceRule::All,
            cohesion: select::CohesionRule::All,
            size: select::SizeRule::All,
            rank_neighbors: 3,
            ..EpisodeParams::default()
        };
        let count = |p: &EpisodeParams| assign(&input, "e", &specs, p, 0, &Steps::quiet()).0.len();
        assert_eq!(count(&params), 4);
        let core = EpisodeParams {
            core: select::CohesionRule::MeanMinusStd,
            ..params
        };
        assert_eq!(count(&core), 3);
    }

    #[test]
    fn density_ranking_puts_the_tight_core_before_loose_but_similar_segments() {
        // One episode along x. Five identical core segments at cosine 0.9 to it; four loose
        // ones at cosine ≈ 0.95 to it but spread apart from each other.
        let mut embeddings = vec![vec![0.9f32, 0.435_889_9, 0.0]; 5];
        embeddings.extend([
            vec![0.95, 0.0, 0.312],
            vec![0.95, 0.0, -0.312],
            vec![0.95, -0.22, 0.22],
            vec![0.95, -0.3, -0.1],
        ]);
        let segments = one_per_article(embeddings.len());
        let vectors = HashMap::new();
        let input = input_of(&segments, &vectors, &embeddings);
        let specs = vec![spec(vec![1.0, 0.0, 0.0])];
        let params = EpisodeParams {
            confidence: ConfidenceRule::All,
            cohesion: select::CohesionRule::All,
            size: select::SizeRule::All,
            rank_neighbors: 4,
            ..EpisodeParams::default()
        };
        let order = |rank| {
            let p = EpisodeParams {
                rank,
                ..params.clone()
            };
            let (_, assignments) = assign(&input, "e", &specs, &p, 0, &Steps::quiet());
            assignments.iter().map(|a| a.doc_id).collect::<Vec<u32>>()
        };
        assert_eq!(order(classify::RankBy::Density)[..5], [0, 1, 2, 3, 4]);
        let by_similarity = order(classify::RankBy::Similarity);
        assert!(
            by_similarity[..4].iter().all(|&d| d >= 5),
            "{by_similarity:?}"
        );
    }
}
