//! Consensus episodes over views (issue 66 item 1; `episodes.views`, off by default): one
//! event's term and episode stages (§1–§6, no LLM) are run over several views of its static
//! word vectors — the vectors as given and `views − 1` seeded jitters of them
//! ([`jittered`]) — and the final episodes are what the views agree on ([`consensus`]): the
//! views' episodes that hold the same segments are one consensus episode (cluster-based
//! ensembles' meta-clustering, Strehl & Ghosh 2002: average linkage of their segment-set
//! Jaccard distances, cut at ½), kept when a majority of the views has one of them, and a
//! segment is its member when a majority of the views put it there. The members' vectors are
//! then the episodes of §6 (eq. 2), classified as a single view's are
//! ([`crate::episodes::assignment::consensus_episodes`]).
//!
//! The views differ where the term stage is on a knife's edge (docs/quality.md: a rounding of
//! the word vectors changes an event's episodes); what most views agree on does not hang on
//! one of them. Linear in the segments: the overlaps are counted segment by segment, and the
//! linkage is over the views' episodes (at most `views` × the cap), not over segments.

use std::collections::HashMap;

use rand_xoshiro::rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::sharding::hash_str;

/// The seed of view `view` of `key_event`: a fixed-seed hash of both, so that a view is the same
/// on any worker, in any process, in any run.
pub fn view_seed(key_event: &str, view: usize) -> u64 {
    hash_str(&format!("{key_event}\u{1f}view\u{1f}{view}"))
}

/// `vectors` with each word's vector moved by Gaussian noise whose expected norm is `sigma`
/// times the vector's own (σ‖x‖/√d a component). Each word's noise is seeded by `seed` and the
/// word alone, so it does not depend on the map's order or on the other words.
pub fn jittered(
    vectors: &HashMap<String, Vec<f32>>,
    sigma: f64,
    seed: u64,
) -> HashMap<String, Vec<f32>> {
    vectors
        .iter()
        .map(|(word, x)| {
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ hash_str(word));
            let mut uniform = || (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
            let norm = x
                .iter()
                .map(|&v| f64::from(v) * f64::from(v))
                .sum::<f64>()
                .sqrt();
            let scale = sigma * norm / (x.len().max(1) as f64).sqrt();
            let moved = x
                .iter()
                .map(|&v| (f64::from(v) + scale * normal(&mut uniform)) as f32)
                .collect();
            (word.clone(), moved)
        })
        .collect()
}

/// The mean of `vectors`, each scaled to unit length first (a zero vector counts as zero).
pub fn mean_unit<'a>(vectors: impl IntoIterator<Item = &'a [f32]>) -> Vec<f32> {
    let mut sum: Vec<f64> = Vec::new();
    let mut count = 0usize;
    for v in vectors {
        if sum.is_empty() {
            sum = vec![0.0; v.len()];
        }
        let norm = v.iter().map(|&c| f64::from(c).powi(2)).sum::<f64>().sqrt();
        if norm > 0.0 {
            for (s, &c) in sum.iter_mut().zip(v) {
                *s += f64::from(c) / norm;
            }
        }
        count += 1;
    }
    sum.iter()
        .map(|&s| (s / count.max(1) as f64) as f32)
        .collect()
}

/// A standard normal draw (Box–Muller) from a uniform source on [0, 1).
fn normal(uniform: &mut impl FnMut() -> f64) -> f64 {
    let u = 1.0 - uniform();
    let v = uniform();
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

/// One consensus episode: its members and the views' episodes it gathers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Agreed {
    /// The segments a majority of the views put in one of its episodes, ascending.
    pub members: Vec<usize>,
    /// The views' episodes it gathers, as (view, episode), ascending.
    pub episodes: Vec<(usize, usize)>,
}

/// The consensus of the views' episodes. `labels[v][s]` is the episode of view `v` that holds
/// segment `s` (`None`: in none); every view has one label per segment. Returns the consensus
/// episodes as segment indices, ascending, in the order of their first view episode (view 0's
/// episodes first, in their order): a consensus episode is a group of view episodes whose
/// segment sets overlap (average linkage of 1 − Jaccard, merges at or below ½), kept when more
/// than half of the views have an episode in it; its members are the segments that more than
/// half of the views put in one of its episodes (a segment with such a majority for two groups
/// goes to the first). Groups with fewer than `min_segments` members are left out.
pub fn consensus(labels: &[Vec<Option<usize>>], min_segments: usize) -> Vec<Agreed> {
    let views = labels.len();
    let n = labels.first().map_or(0, Vec::len);
    // Node of each (view, episode), numbered view by view in episode order.
    let mut first_node = Vec::with_capacity(views + 1);
    first_node.push(0usize);
    for view in labels {
        let episodes = view.iter().flatten().map(|&e| e + 1).max().unwrap_or(0);
        first_node.push(first_node.last().copied().unwrap_or(0) + episodes);
    }
    let nodes = first_node[views];
    if nodes == 0 || n == 0 {
        return Vec::new();
    }
    let node = |v: usize, s: usize| labels[v][s].map(|e| first_node[v] + e);
    let mut size = vec![0usize; nodes];
    let mut overlap: HashMap<(usize, usize), usize> = HashMap::new();
    let mut of_segment = Vec::with_capacity(views);
    for s in 0..n {
        of_segment.clear();
        of_segment.extend((0..views).filter_map(|v| node(v, s)));
        for (i, &a) in of_segment.iter().enumerate() {
            size[a] += 1;
            for &b in &of_segment[i + 1..] {
                *overlap.entry((a, b)).or_default() += 1;
            }
        }
    }
    let mut condensed = Vec::with_capacity(nodes * (nodes - 1) / 2);
    for a in 0..nodes {
        for b in a + 1..nodes {
            let shared = overlap.get(&(a, b)).copied().unwrap_or(0);
            let union = size[a] + size[b] - shared;
            condensed.push(if union == 0 {
                1.0
            } else {
                1.0 - shared as f64 / union as f64
            });
        }
    }
    let group =
        crate::grouping::linkage::linkage_cut(&condensed, nodes, kodama::Method::Average, 0.5);
    let groups = group.iter().copied().max().map_or(0, |m| m + 1);
    // A group is kept when more than half of the views have an episode in it.
    let mut has_view = vec![vec![false; views]; groups];
    for v in 0..views {
        for g in &group[first_node[v]..first_node[v + 1]] {
            has_view[*g][v] = true;
        }
    }
    let kept: Vec<bool> = has_view
        .iter()
        .map(|seen| 2 * seen.iter().filter(|&&b| b).count() > views)
        .collect();
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); groups];
    let mut votes = vec![0usize; groups];
    for s in 0..n {
        votes.iter_mut().for_each(|c| *c = 0);
        for v in 0..views {
            if let Some(a) = node(v, s) {
                votes[group[a]] += 1;
            }
        }
        // Groups are numbered by first node, so the first with a majority is the first group.
        if let Some(g) = (0..groups).find(|&g| kept[g] && 2 * votes[g] > views) {
            members[g].push(s);
        }
    }
    let mut gathered: Vec<Vec<(usize, usize)>> = vec![Vec::new(); groups];
    for v in 0..views {
        for (e, &g) in group[first_node[v]..first_node[v + 1]].iter().enumerate() {
            gathered[g].push((v, e));
        }
    }
    members
        .into_iter()
        .zip(gathered)
        .filter(|(m, _)| m.len() >= min_segments.max(1))
        .map(|(members, episodes)| Agreed { members, episodes })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(labels: &[i64]) -> Vec<Option<usize>> {
        labels.iter().map(|&l| usize::try_from(l).ok()).collect()
    }

    fn members(found: &[Agreed]) -> Vec<Vec<usize>> {
        found.iter().map(|a| a.members.clone()).collect()
    }

    #[test]
    fn what_most_views_agree_on_is_kept_and_a_view_s_own_split_is_not() {
        // Segments 0–5 one episode, 6–11 another, in every view; view 2 splits the first in
        // two and also makes an episode of 12–14 that no other view has.
        let v0 = view(&[0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, -1, -1, -1]);
        let v1 = view(&[1, 1, 1, 1, 1, -1, 0, 0, 0, 0, 0, 0, -1, -1, -1]);
        let v2 = view(&[0, 0, 0, 2, 2, 2, 1, 1, 1, 1, 1, -1, 3, 3, 3]);
        let found = consensus(&[v0, v1, v2], 2);
        assert_eq!(found[0].episodes, vec![(0, 0), (1, 1), (2, 0)]);
        assert_eq!(found[1].episodes, vec![(0, 1), (1, 0), (2, 1)]);
        assert_eq!(
            members(&found),
            vec![vec![0, 1, 2, 3, 4], vec![6, 7, 8, 9, 10, 11]],
            "view 2's last episode is one view's, and its split-off part (3–5) joins no \
             group; segment 5 is in the first group in one view of three, segment 11 in two"
        );
    }

    #[test]
    fn one_view_is_its_own_consensus() {
        let v0 = view(&[0, 0, 1, 1, -1, 1, 0]);
        assert_eq!(
            members(&consensus(&[v0], 2)),
            vec![vec![0, 1, 6], vec![2, 3, 5]]
        );
    }

    #[test]
    fn without_a_majority_a_segment_is_in_no_episode() {
        // Four views: segment 3 is with the first episode in two of them only.
        let v0 = view(&[0, 0, 0, 0, 1, 1, 1]);
        let v1 = view(&[0, 0, 0, 0, 1, 1, 1]);
        let v2 = view(&[0, 0, 0, 1, 1, 1, 1]);
        let v3 = view(&[0, 0, 0, -1, 1, 1, 1]);
        assert_eq!(
            members(&consensus(&[v0, v1, v2, v3], 2)),
            vec![vec![0, 1, 2], vec![4, 5, 6]]
        );
    }

    #[test]
    fn a_jitter_is_seeded_by_the_word_and_moves_by_its_share_of_the_norm() {
        let mut vectors = HashMap::new();
        let x: Vec<f32> = (0..384).map(|i| ((i % 7) as f32 - 3.0) / 10.0).collect();
        vectors.insert("flood".to_string(), x.clone());
        vectors.insert("levee".to_string(), x.clone());
        let a = jittered(&vectors, 0.05, 7);
        let b = jittered(&vectors, 0.05, 7);
        assert_eq!(a, b, "the same seed, the same views");
        assert_ne!(a["flood"], a["levee"], "each word its own noise");
        let norm = |v: &[f32]| v.iter().map(|&c| f64::from(c).powi(2)).sum::<f64>().sqrt();
        let moved: Vec<f32> = a["flood"].iter().zip(&x).map(|(p, q)| p - q).collect();
        let share = norm(&moved) / norm(&x);
        assert!((0.04..0.06).contains(&share), "moved by {share}");
        assert_ne!(jittered(&vectors, 0.05, 8)["flood"], a["flood"]);
    }
}
