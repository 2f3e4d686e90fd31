//! Dense groups that no episode covers (issue 45; docs/method.md §6, "coverage"; the job's
//! `episodes.cover`, default off): after §6 has kept its episodes, the salient segments left in
//! no episode are grouped by their sentence embeddings, and every group as tight as the
//! episodes the rules kept becomes an episode of its own, beside them
//! ([`crate::episodes::classification::selection::Selection::add_kept`]: the kept episodes and their segments stay as
//! they are).
//!
//! The term view (§3–§4) proposes candidates only from the top δ articles' fragments, and the
//! merge, the confidence bound and the rules of §6 can each leave a whole phase of an event in
//! no episode (docs/quality.md, "Where a phase is lost"). This pass is a density view over the
//! same embeddings, reconciled with the term view by a label-free criterion: the kept episodes
//! set the bar. A group of uncovered segments becomes an episode when
//! - its segments' mean pairwise cosine is at least that of the loosest kept episode's members
//!   (average linkage cut at that distance), and
//! - its core (the mean density of its [`CORE_TOP`] densest segments)
//!   is at least the loosest kept episode's core, and
//! - it holds at least [`CORE_TOP`] segments from at least [`MIN_ARTICLES`] articles.
//!
//! Quadratic in the uncovered segments it groups: at most `max_fragments` of them, the most
//! salient (the bound of §4's pairwise steps).

use std::collections::BTreeSet;

use rayon::prelude::*;

use crate::episodes::classification::classify;
use crate::episodes::classification::classify::mean_pairwise_cosine;
use crate::episodes::classification::episode_floor::core_mean;
use crate::episodes::classification::selection::Selection;
use crate::episodes::event::EventInput;
use crate::episodes::params::{EpisodeParams, CORE_TOP};
use crate::episodes::terms::termspace::lower_bound;
use crate::grouping::linkage::linkage_cut;

/// Fewest distinct articles of an uncovered group that becomes a candidate: a group from one or
/// two articles is one story's wording, not an episode the news told.
pub const MIN_ARTICLES: usize = 3;

/// At most this many of a kept episode's members (the most similar to its vector) enter its
/// mean pairwise cosine.
const TIGHTNESS_SAMPLE: usize = 200;

/// The bar the kept episodes of `selection` set: (the loosest kept episode's mean pairwise
/// cosine among its members, the loosest kept core). None when no episode is kept.
fn bar(input: &EventInput, selection: &Selection) -> Option<(f64, f64)> {
    let mut tightness = f64::INFINITY;
    let mut core = f64::INFINITY;
    for (e, members) in selection.members.iter().enumerate() {
        if !selection.kept(e) {
            continue;
        }
        let mut by_similarity = members.clone();
        by_similarity.sort_by(|a, b| {
            let (sa, sb) = (
                selection.classified[a.1].similarity,
                selection.classified[b.1].similarity,
            );
            sb.total_cmp(&sa).then(a.1.cmp(&b.1))
        });
        let ids: Vec<usize> = by_similarity
            .iter()
            .take(TIGHTNESS_SAMPLE)
            .map(|&(_, s)| s)
            .collect();
        tightness = tightness.min(mean_pairwise_cosine(input.embeddings, &ids));
        if let Some(c) = selection.core[e] {
            core = core.min(c);
        }
    }
    (tightness.is_finite()).then_some((tightness, if core.is_finite() { core } else { 0.0 }))
}

/// The salient segments (`scores`: §3's segment scores) that no kept episode of `selection`
/// covers, at most `cap` of them (0: all), the most salient first; returned in index order.
pub fn uncovered(scores: &[f64], selection: &Selection, cap: usize) -> Vec<usize> {
    let bound = lower_bound(scores);
    let mut left: Vec<usize> = (0..scores.len())
        .filter(|&s| scores[s] > 0.0 && scores[s] >= bound && !selection.covered(s))
        .collect();
    if cap > 0 && left.len() > cap {
        left.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
        left.truncate(cap);
        left.sort_unstable();
    }
    left
}

/// Groups of `segments` (indices into the event's segments) by average linkage of their cosine
/// distances cut at `1 − tightness`: each group's mean pairwise cosine is at least
/// `tightness`. Rows of the distance matrix in parallel (rayon), joined in order: the same
/// groups for any number of threads. Groups in order of their first segment.
pub fn tight_groups(
    embeddings: &[Vec<f32>],
    segments: &[usize],
    tightness: f64,
) -> Vec<Vec<usize>> {
    let n = segments.len();
    if n < 2 {
        return vec![segments.to_vec(); n.min(1)];
    }
    let unit = classify::unit_vectors(embeddings, segments);
    let condensed: Vec<f64> = (0..n)
        .into_par_iter()
        .map(|i| {
            (i + 1..n)
                .map(|j| {
                    1.0 - unit[i]
                        .iter()
                        .zip(&unit[j])
                        .map(|(a, b)| a * b)
                        .sum::<f64>()
                })
                .collect::<Vec<f64>>()
        })
        .collect::<Vec<_>>()
        .concat();
    let labels = linkage_cut(&condensed, n, kodama::Method::Average, 1.0 - tightness);
    let groups = labels.iter().copied().max().map_or(0, |m| m + 1);
    let mut out: Vec<Vec<usize>> = vec![Vec::new(); groups];
    for (k, &label) in labels.iter().enumerate() {
        out[label].push(segments[k]);
    }
    out
}

/// The candidate episodes that coverage adds to `selection` (each a group of segment indices,
/// in index order): the tight groups of its uncovered salient segments that pass the bar of
/// its kept episodes (module doc). Empty when nothing is kept or nothing passes.
pub fn dense_uncovered_groups(
    input: &EventInput,
    scores: &[f64],
    selection: &Selection,
    params: &EpisodeParams,
) -> Vec<Vec<usize>> {
    let Some((tightness, core)) = bar(input, selection) else {
        return Vec::new();
    };
    let left = uncovered(scores, selection, params.max_fragments);
    let least = CORE_TOP.max(params.min_segments);
    if left.len() < least {
        return Vec::new();
    }
    tight_groups(input.embeddings, &left, tightness)
        .into_iter()
        .filter(|g| {
            g.len() >= least
                && g.iter()
                    .map(|&s| input.segments[s].doc_id)
                    .collect::<BTreeSet<u32>>()
                    .len()
                    >= MIN_ARTICLES
        })
        .filter(|g| {
            let similarity = vec![0.0; g.len()];
            let d = classify::ranked_density(
                input.embeddings,
                g,
                &similarity,
                params.rank_neighbors,
                params.max_ranked,
            );
            core_mean(&d).is_some_and(|c| c >= core)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_pairwise_cosine_by_hand() {
        // x, x, y: cosines 1, 0, 0 → 1/3.
        let e = vec![vec![1.0, 0.0], vec![2.0, 0.0], vec![0.0, 3.0]];
        assert!((mean_pairwise_cosine(&e, &[0, 1, 2]) - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(mean_pairwise_cosine(&e, &[2]), 1.0);
    }

    #[test]
    fn tight_groups_separate_two_directions_and_keep_them_whole() {
        let mut e = Vec::new();
        for i in 0..8 {
            e.push(vec![1.0, 0.05 * i as f32, 0.0]);
            e.push(vec![0.0, 0.05 * i as f32, 1.0]);
        }
        let all: Vec<usize> = (0..16).collect();
        let groups = tight_groups(&e, &all, 0.9);
        assert_eq!(groups.len(), 2, "{groups:?}");
        assert_eq!(groups[0], (0..16).step_by(2).collect::<Vec<_>>());
        assert_eq!(groups[1], (1..16).step_by(2).collect::<Vec<_>>());
        // A bar no pair reaches: every segment alone.
        assert_eq!(tight_groups(&e, &all, 1.5).len(), 16);
        // The same groups for any number of threads.
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .unwrap();
        assert_eq!(pool.install(|| tight_groups(&e, &all, 0.9)), groups);
    }
}
