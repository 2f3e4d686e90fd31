//! The floor of episodes (`episodes.min_episodes`: tight dropped episodes come back) and the
//! split of a candidate into two cores (`episodes.split`), both judged on an episode's top
//! [`CORE_TOP`] segments.

use crate::episodes::classification::classify;
use crate::episodes::params::{EpisodeParams, CORE_TOP};
use crate::episodes::terms::termspace;

/// The [`CORE_TOP`] highest of an episode's densities ([`classify::ranked_density`]: those of
/// its compared members), densest first: the top a reader sees first.
pub(in crate::episodes) fn top_core(densities: &[Option<f64>]) -> Vec<f64> {
    let mut d: Vec<f64> = densities.iter().flatten().copied().collect();
    d.sort_by(|a, b| b.total_cmp(a));
    d.truncate(CORE_TOP);
    d
}

/// An episode's core: the mean of its [`top_core`] (None when no member was compared).
pub(in crate::episodes) fn core_mean(densities: &[Option<f64>]) -> Option<f64> {
    let d = top_core(densities);
    (!d.is_empty()).then(|| d.iter().sum::<f64>() / d.len() as f64)
}

/// `params.min_episodes` over the rules' `kept` episodes: their cores (the mean of
/// `core_of`, [`top_core`]) gate what [`restore_floor`] brings back; nothing to do when enough
/// are kept. Cores are computed only for the episodes that [`restore_floor`] looks at (the kept
/// ones and those with a whole top).
pub(in crate::episodes) fn apply_floor<T>(
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
pub(in crate::episodes) fn restore_floor<T>(
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
    let distance = 1.0
        - termspace::cosine(
            &classify::harmonic_vector_of(embeddings, &a),
            &classify::harmonic_vector_of(embeddings, &b),
        );
    (distance > bound).then_some((a, b))
}
