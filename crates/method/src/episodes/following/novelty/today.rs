//! Today's articles of the novelty view ([`super`], steps 2–3): each article's vector, the
//! cohesion of an episode's articles, today's articles grouped by average linkage, and a group
//! that is two developments cut in two.

use std::collections::BTreeMap;

use super::continuation;
use crate::episodes::classification::classify::{dot64 as dot, unit_centre as centre};
use crate::episodes::classification::join::cosine_distances;

/// Each article's vector among `members`: the unit mean of its segments there, by article.
pub(super) fn article_vectors(
    segs: &[crate::tables::Segment],
    units: &[Vec<f64>],
    members: &[usize],
) -> Vec<(u32, Vec<usize>, Vec<f64>)> {
    let mut by_article: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    for &s in members {
        by_article.entry(segs[s].doc_id).or_default().push(s);
    }
    by_article
        .into_iter()
        .filter_map(|(doc, m)| {
            let c = centre(units, &m)?;
            Some((doc, m, c))
        })
        .collect()
}

/// The mean pairwise cosine of an episode's article vectors ([`article_vectors`]); `None` for
/// fewer than two articles.
pub(super) fn article_cohesion(
    segs: &[crate::tables::Segment],
    units: &[Vec<f64>],
    members: &[usize],
) -> Option<f64> {
    let vectors = article_vectors(segs, units, members);
    let n = vectors.len();
    if n < 2 {
        return None;
    }
    let mut sum = vec![0f64; vectors[0].2.len()];
    for (_, _, v) in &vectors {
        for (a, x) in sum.iter_mut().zip(v) {
            *a += x;
        }
    }
    // Σ_{i≠j} u_i·u_j = |Σ u|² − n for unit vectors.
    Some((dot(&sum, &sum) - n as f64) / (n * (n - 1)) as f64)
}

/// Today's articles grouped by the vectors of their `unmatched` segments: average linkage of
/// their cosine distances cut at `1 − cohesion`; each group as its articles' segments, groups in
/// order of their first article.
pub(super) fn article_groups(
    segs: &[crate::tables::Segment],
    units: &[Vec<f64>],
    unmatched: &[usize],
    cohesion: f64,
) -> Vec<Vec<usize>> {
    let articles = article_vectors(segs, units, unmatched);
    let n = articles.len();
    if n < 2 {
        return Vec::new();
    }
    let condensed = cosine_distances(&articles.iter().map(|a| a.2.as_slice()).collect::<Vec<_>>());
    let labels = crate::grouping::linkage::linkage_cut(
        &condensed,
        n,
        kodama::Method::Average,
        1.0 - cohesion,
    );
    let mut groups: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for (i, label) in labels.into_iter().enumerate() {
        groups
            .entry(label)
            .or_default()
            .extend(articles[i].1.iter().copied());
    }
    groups.into_values().collect()
}

/// A group of today's articles cut in two at the top of its average linkage when its two sides
/// are two developments: both of `min_articles` articles or more, and the cosine of their
/// centres under half-way from `apart` (how close the event's developments lie to their
/// nearest other) up to the group's own level ([`continuation::itself`]).
pub(super) fn two_developments(
    segs: &[crate::tables::Segment],
    units: &[Vec<f64>],
    g: Vec<usize>,
    apart: Option<f64>,
    min_articles: usize,
) -> Vec<Vec<usize>> {
    let (Some(apart), Some(itself)) = (apart, continuation::itself(segs, units, &g)) else {
        return vec![g];
    };
    if itself <= apart {
        return vec![g];
    }
    let articles = article_vectors(segs, units, &g);
    let n = articles.len();
    if n < 2 * min_articles.max(1) {
        return vec![g];
    }
    let condensed = cosine_distances(&articles.iter().map(|a| a.2.as_slice()).collect::<Vec<_>>());
    let labels = crate::grouping::linkage::linkage_cut_floor(
        &condensed,
        n,
        kodama::Method::Average,
        f64::INFINITY,
        2,
    );
    let mut sides: [Vec<usize>; 2] = [Vec::new(), Vec::new()];
    let mut counts = [0usize; 2];
    for (i, &label) in labels.iter().enumerate() {
        let side = label.min(1);
        sides[side].extend(articles[i].1.iter().copied());
        counts[side] += 1;
    }
    if counts.iter().any(|&c| c < min_articles.max(1)) {
        return vec![g];
    }
    match (centre(units, &sides[0]), centre(units, &sides[1])) {
        (Some(a), Some(b)) if dot(&a, &b) - apart < (itself - apart) / 2.0 => sides.into(),
        _ => vec![g],
    }
}
