//! The continuation test of the novelty view's step 0a ([`super`], "kept whole"): whether a
//! piece the fresh run cut continues a development the previous run told, even when today's
//! articles are most of it.
//!
//! Not part of the paper (docs/method.md §6 "Following"). Step 0a joins the pieces of a previous
//! episode *P* back into one when P's segments are most of each piece's old segments and at least
//! [`crate::lineage::MIN_SHARE`] of the piece. On a day when a development told yesterday grows
//! threefold, the fresh run cuts it into pieces made mostly of today's articles, each holding a
//! few of P's; the share fails, and the development read as several `split` episodes, with P's
//! id on one of them (docs/quality.md). Such a piece is joined too when it *continues* P.
//!
//! The test compares a set of segments with the previous run's episodes at two levels the event
//! itself sets. For a previous episode P of at least [`MIN_ARTICLES`] articles:
//! - *the same development*: the cosine between the centres of P's two halves (its articles taken
//!   alternately in id order), how close P is to itself;
//! - *another development*: the largest cosine between P's centre and another previous episode's
//!   (also of [`MIN_ARTICLES`] or more), how close P is to the nearest development told beside it.
//!
//! The segments continue the previous episode whose centre theirs is closest to when that
//! episode is nearer to itself than to any other and the cosine lies at least half-way from the
//! second level up to the first: more like P than like a development told beside P.
//!
//! Costs: the centres of the previous episodes and of their halves once (linear in their
//! segments), their pairwise cosines (quadratic in the number of previous episodes of one event,
//! a few dozen), then one centre and one pass over the previous centres for each piece judged.

use std::collections::BTreeSet;

use crate::episodes::classification::classify::{dot64 as dot, unit_centre as centre};

/// The fewest articles a previous episode has for its two halves to be compared.
pub const MIN_ARTICLES: usize = 4;

/// One previous episode as the test sees it.
pub(super) struct Told {
    /// Its index in `previous`.
    index: usize,
    /// The unit mean of its segments' unit vectors.
    centre: Vec<f64>,
    /// The cosine between its halves' centres (the same development).
    itself: f64,
    /// The largest cosine between its centre and another's (the nearest other development).
    nearest: f64,
}

/// The previous episodes (indices of this run's segments) of at least [`MIN_ARTICLES`] articles
/// that are nearer to themselves than to any other, with the two levels of the test.
pub(super) fn told(
    segs: &[crate::tables::Segment],
    units: &[Vec<f64>],
    previous: &[Vec<usize>],
) -> Vec<Told> {
    let mut told: Vec<(usize, Vec<f64>, f64)> = Vec::new();
    for (index, p) in previous.iter().enumerate() {
        if let (Some(c), Some(level)) = (centre(units, p), itself(segs, units, p)) {
            told.push((index, c, level));
        }
    }
    let nearest: Vec<f64> = told
        .iter()
        .enumerate()
        .map(|(i, (_, c, _))| {
            told.iter()
                .enumerate()
                .filter(|&(j, _)| j != i)
                .map(|(_, (_, d, _))| dot(c, d))
                .fold(f64::NEG_INFINITY, f64::max)
        })
        .collect();
    told.into_iter()
        .zip(nearest)
        .filter(|((_, _, itself), nearest)| nearest.is_finite() && itself > nearest)
        .map(|((index, centre, itself), nearest)| Told {
            index,
            centre,
            itself,
            nearest,
        })
        .collect()
}

/// The index (in `previous`) of the previous episode that the segments `m` continue, if any
/// (see the module's header).
pub(super) fn closest(units: &[Vec<f64>], told: &[Told], m: &[usize]) -> Option<usize> {
    let c = centre(units, m)?;
    let (cos, p) = told.iter().map(|t| (dot(&c, &t.centre), t)).fold(
        None,
        |best: Option<(f64, &Told)>, (cos, t)| match best {
            Some((b, _)) if b >= cos => best,
            _ => Some((cos, t)),
        },
    )?;
    (cos - p.nearest >= (p.itself - p.nearest) / 2.0).then_some(p.index)
}

/// How far apart the developments of `told` lie: the median of each one's nearest other
/// development's cosine (`None` without any).
pub(super) fn apart(told: &[Told]) -> Option<f64> {
    let mut v: Vec<f64> = told.iter().map(|t| t.nearest).collect();
    v.sort_by(f64::total_cmp);
    v.get((v.len().max(1) - 1) / 2).copied()
}

/// The cosine between the centres of the halves of the segments `m`, their articles taken
/// alternately in id order: how close a set of segments is to itself (`None` under
/// [`MIN_ARTICLES`] articles).
pub(super) fn itself(
    segs: &[crate::tables::Segment],
    units: &[Vec<f64>],
    m: &[usize],
) -> Option<f64> {
    let articles: Vec<u32> = m
        .iter()
        .map(|&s| segs[s].doc_id)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    if articles.len() < MIN_ARTICLES {
        return None;
    }
    let (a, b): (Vec<usize>, Vec<usize>) = m.iter().partition(|&&s| {
        articles
            .binary_search(&segs[s].doc_id)
            .is_ok_and(|i| i % 2 == 0)
    });
    Some(dot(&centre(units, &a)?, &centre(units, &b)?))
}
