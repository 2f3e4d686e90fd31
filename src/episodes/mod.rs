//! The per-event episode stages (ALGORITHM.md §3–§6): segment salience and partitioning,
//! candidate clusters from the top articles, no-LLM episode vectors and confidence
//! classification. [`detect`] runs them for one key event; each stage is a plain function in
//! its own module.

pub mod candidates;
pub mod classify;
pub mod expand;
pub mod partition;
pub mod select;
pub mod termspace;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::{Deserialize, Serialize};

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
    /// Cluster pruning rule (ALGORITHM.md §4; see the README for how it was chosen).
    pub prune: PruneRule,
    /// Confidence rule of the classification (paper text: μ − σ; authors' code: μ + σ).
    pub confidence: ConfidenceRule,
    /// How each episode's segments are ranked (ALGORITHM.md §6 says by confidence; default: by
    /// cosine to the episode vector, its most representative segments first — see the README).
    pub rank: classify::RankBy,
    /// Episodes with fewer assigned segments are dropped (ALGORITHM.md §6: 2).
    pub min_segments: usize,
    /// Keywords reported per episode.
    pub keywords: usize,
    /// Merge candidate episodes that tell the same episode (complete linkage of their vectors,
    /// cut at μ − σ) before classification — the no-LLM stand-in for the LLM's merging.
    pub merge: bool,
    /// Where the merge's dendrogram is cut, over the candidates' pairwise cosine distances
    /// (ALGORITHM.md §4–§5; default μ − σ: μ merged too much on the development set).
    pub merge_cut: candidates::Cut,
    /// Episodes kept by the cohesion of their segments (ALGORITHM.md §6, after the size rule;
    /// default μ − σ, the method's significance bound).
    pub cohesion: select::CohesionRule,
}

impl Default for EpisodeParams {
    fn default() -> Self {
        Self {
            top_articles: candidates::DEFAULT_TOP_ARTICLES,
            prune: PruneRule::MeanMinusStd,
            confidence: ConfidenceRule::MeanMinusStd,
            rank: classify::RankBy::Similarity,
            min_segments: 2,
            keywords: 10,
            merge: true,
            merge_cut: candidates::Cut::MeanMinusStd,
            cohesion: select::CohesionRule::MeanMinusStd,
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
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
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

/// One event's results.
#[derive(Debug, Clone, Default)]
pub struct EventOutcome {
    /// Detected episodes.
    pub episodes: Vec<Episode>,
    /// Their segments, ranked.
    pub assignments: Vec<Assignment>,
    /// Every fragment.
    pub fragments: Vec<FragmentRow>,
    /// Stage counts.
    pub counts: EventCounts,
}

/// Runs §3–§6 for one key event (no LLM: each kept candidate cluster is an episode whose vector
/// is the harmonic-weighted mean of its segments' embeddings by descending segment score).
pub fn detect(input: &EventInput, params: &EpisodeParams) -> Result<EventOutcome, EventError> {
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
    let seg_terms: Vec<Vec<usize>> = segs.iter().map(|s| space.segment_terms(&s.text)).collect();
    let scores = partition::score_segments(&space, &seg_terms);
    let salient = partition::salient_segments(&scores);
    counts.salient_segments = salient.iter().filter(|&&s| s).count();
    let docs: Vec<u32> = segs.iter().map(|s| s.doc_id).collect();
    let texts: Vec<&str> = segs.iter().map(|s| s.text.as_str()).collect();
    let fragments = partition::partition(&space, &docs, &texts, &seg_terms, &salient);
    counts.fragments = fragments.len();
    if fragments.is_empty() {
        return Err(EventError::NoFragments);
    }

    // §4: top articles, distances, clusters, pruning.
    let ranks = candidates::article_ranks(&fragments, &scores);
    let top: BTreeSet<u32> = candidates::top_articles(&ranks, params.top_articles)
        .into_iter()
        .collect();
    counts.top_articles = top.len();
    let chosen: Vec<usize> = (0..fragments.len())
        .filter(|&f| top.contains(&fragments[f].doc_id))
        .collect();
    let chosen_refs: Vec<&partition::Fragment> = chosen.iter().map(|&f| &fragments[f]).collect();
    let distances = candidates::fragment_distances(&space, &chosen_refs);
    let labels = candidates::cluster(&distances, chosen.len());
    let n_clusters = labels.iter().copied().max().map_or(0, |m| m + 1);
    counts.clusters = n_clusters;
    let mut sizes = vec![0usize; n_clusters];
    let mut arts: Vec<BTreeSet<u32>> = vec![BTreeSet::new(); n_clusters];
    for (k, &f) in chosen.iter().enumerate() {
        sizes[labels[k]] += fragments[f].segments.len();
        arts[labels[k]].insert(fragments[f].doc_id);
    }
    let n_arts: Vec<usize> = arts.iter().map(BTreeSet::len).collect();
    let keep = candidates::keep_clusters(&sizes, &n_arts, params.prune);
    counts.kept_clusters = keep.iter().filter(|&&k| k).count();

    let mut cluster_of: HashMap<usize, u32> = HashMap::new();
    for (k, &f) in chosen.iter().enumerate() {
        cluster_of.insert(f, labels[k] as u32);
    }
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

    // §5 (no LLM): one candidate episode per kept cluster.
    struct Candidate {
        vector: Vec<f32>,
        keywords: Vec<String>,
    }
    let describe = |mut members: Vec<usize>| {
        members.sort_by(|&a, &b| scores[b].score.total_cmp(&scores[a].score).then(a.cmp(&b)));
        members.dedup();
        let vectors: Vec<&[f32]> = members
            .iter()
            .map(|&s| input.embeddings[s].as_slice())
            .collect();
        let mut weight: BTreeMap<usize, f64> = BTreeMap::new();
        for &s in &members {
            for &t in &seg_terms[s] {
                *weight.entry(t).or_default() += space.terms[t].salience;
            }
        }
        let mut ranked: Vec<(usize, f64)> = weight.into_iter().collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        Candidate {
            vector: classify::harmonic_mean_vector(&vectors),
            keywords: ranked
                .into_iter()
                .take(params.keywords)
                .map(|(t, _)| space.terms[t].term.clone())
                .collect(),
        }
    };
    let mut groups: Vec<Vec<usize>> = (0..n_clusters)
        .filter(|&c| keep[c])
        .map(|c| {
            chosen
                .iter()
                .enumerate()
                .filter(|(k, _)| labels[*k] == c)
                .flat_map(|(_, &f)| fragments[f].segments.iter().copied())
                .collect()
        })
        .collect();
    if params.merge && groups.len() > 2 {
        // Candidates that tell the same episode: complete linkage of their episode vectors
        // (cosine distance) cut at μ − σ, the method's own significance rule.
        let vectors: Vec<Vec<f32>> = groups.iter().map(|g| describe(g.clone()).vector).collect();
        let mut condensed = Vec::new();
        for i in 0..vectors.len() {
            for j in i + 1..vectors.len() {
                condensed.push(1.0 - termspace::cosine(&vectors[i], &vectors[j]));
            }
        }
        let merged = candidates::cluster_cut(&condensed, vectors.len(), params.merge_cut);
        let n = merged.iter().copied().max().map_or(0, |m| m + 1);
        let mut joined: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (g, label) in groups.into_iter().zip(merged) {
            joined[label].extend(g);
        }
        groups = joined;
    }
    counts.kept_clusters = groups.len();
    let candidates_out: Vec<Candidate> = groups.into_iter().map(describe).collect();

    // §6: classify every segment.
    let episode_vectors: Vec<Vec<f32>> = candidates_out.iter().map(|c| c.vector.clone()).collect();
    let classified = classify::classify(input.embeddings, &episode_vectors, params.confidence);
    let mut members: Vec<Vec<(f64, usize)>> = vec![Vec::new(); candidates_out.len()];
    for (s, c) in classified.iter().enumerate() {
        if c.assigned {
            let key = match params.rank {
                classify::RankBy::Confidence => c.confidence,
                classify::RankBy::Similarity => c.similarity,
            };
            members[c.episode].push((key, s));
        }
    }
    let mut episodes = Vec::new();
    let mut assignments = Vec::new();
    // Episodes kept: enough segments (§6), then significantly cohesive ones among those.
    let large: Vec<bool> = members
        .iter()
        .map(|m| m.len() >= params.min_segments)
        .collect();
    let similarities: Vec<Vec<f64>> = members
        .iter()
        .zip(&large)
        .filter(|(_, &l)| l)
        .map(|(m, _)| m.iter().map(|&(_, s)| classified[s].similarity).collect())
        .collect();
    let mut cohesive = select::cohesive(&similarities, params.cohesion).into_iter();
    let kept: Vec<bool> = large
        .iter()
        .map(|&l| l && cohesive.next().unwrap_or(false))
        .collect();
    for ((cand, mut segs_of), kept) in candidates_out.iter().zip(members).zip(kept) {
        if !kept {
            continue;
        }
        segs_of.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        let episode_id = episodes.len() as u32;
        episodes.push(Episode {
            key_event: key_event.clone(),
            episode_id,
            title: cand
                .keywords
                .iter()
                .take(3)
                .cloned()
                .collect::<Vec<_>>()
                .join(" "),
            keywords: cand.keywords.clone(),
            n_segments: segs_of.len() as u32,
            source: "clusters".into(),
        });
        for (rank, (_, s)) in segs_of.into_iter().enumerate() {
            let confidence = classified[s].confidence;
            assignments.push(Assignment {
                key_event: key_event.clone(),
                episode_id,
                doc_id: segs[s].doc_id,
                seg_idx: segs[s].seg_idx,
                rank: rank as u32,
                confidence,
            });
        }
    }
    counts.episodes = episodes.len();
    counts.assigned = assignments.len();
    if episodes.is_empty() {
        return Err(EventError::NoEpisodes(params.min_segments));
    }
    Ok(EventOutcome {
        episodes,
        assignments,
        fragments: fragment_rows,
        counts,
    })
}
