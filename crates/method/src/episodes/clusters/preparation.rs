//! §3–§4 for one key event, stage by stage (docs/method.md §3–§4): segment terms and salience
//! ([`partition`]), fragments, top articles, fragment distances and candidate clusters
//! ([`candidates`], or density clusters), ending in a [`Prepared`] event.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use rayon::prelude::*;

use crate::episodes::clusters::candidates;
use crate::episodes::clusters::partition;
use crate::episodes::event::{EventCounts, EventError, EventInput};
use crate::episodes::naming::names;
use crate::episodes::params::{Candidates, EpisodeParams, CHUNK};
use crate::episodes::terms::termspace::TermSpace;
use crate::grouping::density;
use crate::progress::steps::Steps;
use crate::tables::FragmentRow;

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
    pub(in crate::episodes) space: TermSpace,
    pub(in crate::episodes) seg_terms: Vec<Vec<usize>>,
    pub(in crate::episodes) scores: Vec<f64>,
    /// Per term: boilerplate of articles' openings ([`names::boilerplate_terms`]).
    pub(in crate::episodes) boilerplate: Vec<bool>,
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
    let fragments_view = |counts: &mut EventCounts| {
        fragment_candidates(&space, &fragments, &scores, segs, params, counts, steps)
    };
    let (groups, cluster_of) = match params.candidates {
        Candidates::Fragments => fragments_view(&mut counts),
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
            let (mut groups, cluster_of) = fragments_view(&mut counts);
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
    let fragment_rows = fragment_rows(&key_event, segs, &fragments, &cluster_of);
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

/// The `fragments` table's rows of an event: each fragment's article, first and last segment
/// and the candidate cluster it went into (`cluster_of`).
fn fragment_rows(
    key_event: &str,
    segs: &[crate::tables::Segment],
    fragments: &[partition::Fragment],
    cluster_of: &HashMap<usize, u32>,
) -> Vec<FragmentRow> {
    fragments
        .iter()
        .enumerate()
        .map(|(i, f)| FragmentRow {
            key_event: key_event.to_string(),
            fragment_id: i as u32,
            doc_id: f.doc_id,
            first_seg_idx: segs[f.segments[0]].seg_idx,
            last_seg_idx: segs[*f.segments.last().expect("fragments are not empty")].seg_idx,
            cluster: cluster_of.get(&i).copied(),
        })
        .collect()
}

/// §4 as the paper has it: the top δ articles' fragments, their distances, complete linkage and
/// pruning. Returns the kept clusters' segments by descending salience, and each clustered
/// fragment's cluster.
fn fragment_candidates(
    space: &TermSpace,
    fragments: &[partition::Fragment],
    scores: &[partition::SegmentScore],
    segs: &[crate::tables::Segment],
    params: &EpisodeParams,
    counts: &mut EventCounts,
    steps: &Steps,
) -> (Vec<Vec<usize>>, HashMap<usize, u32>) {
    steps.stage("top articles", 0);
    let ranks = candidates::article_ranks(fragments, scores);
    let top = if params.top_by_day {
        // Each article's date.
        let dates: BTreeMap<u32, Option<i32>> =
            crate::episodes::classification::dated_candidates::segment_articles(segs)
                .into_iter()
                .collect();
        candidates::top_articles_by_day(
            &ranks,
            &dates,
            params.top_articles,
            params.min_top_articles,
        )
    } else {
        candidates::top_articles(&ranks, params.top_articles, params.min_top_articles)
    };
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
    if tracing::enabled!(tracing::Level::DEBUG) {
        // The trace of docs/quality.md: each candidate cluster's size, articles and pruning.
        let kept_labels: Vec<usize> = (0..n_clusters).filter(|&c| keep[c]).collect();
        tracing::debug!(
            "candidate clusters (label: segments/articles, pruned or kept as group g): {}",
            (0..n_clusters)
                .map(|c| match kept_labels.iter().position(|&k| k == c) {
                    Some(g) => format!("{c}: {}/{} g{g}", sizes[c], n_arts[c]),
                    None => format!("{c}: {}/{} pruned", sizes[c], n_arts[c]),
                })
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
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
pub(in crate::episodes) fn by_salience(mut members: Vec<usize>, scores: &[f64]) -> Vec<usize> {
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
    pub fn keywords(&self, groups: &[Vec<usize>], n: usize) -> Vec<Vec<String>> {
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
