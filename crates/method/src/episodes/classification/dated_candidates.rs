//! Candidates told on their own days come back (issue 45; `episodes.dated`): after §6's
//! relative rules (cohesion, size, core; docs/method.md §6), a dropped candidate whose articles
//! are dated apart from the event's is kept again. The relative rules judge a candidate by how
//! tight or large it is beside the event's other candidates, so a phase told in looser words
//! than the rest (an evacuation beside a levee breach) falls with the general text. What tells
//! the two apart is when they were written: the text every article repeats (background,
//! reactions, off-topic stories) is spread over the event's days as the articles are, while a
//! phase is told on the days it happened. This is the paper's premise that an episode is
//! "temporally coherent" (§2), used as a label-free test beside eq. 2's similarity.
//!
//! The test: the dates of the candidate's articles share less with the dates of all the event's
//! articles (the intersection of the two date histograms, each normalised to 1) than random
//! sets of as many of the event's articles do, at the 5% level of a permutation test. A few
//! articles drawn from an event told over many days share little with it by chance, so the
//! bound is the chance level, not a fixed share. An event whose articles carry fewer than two
//! distinct dates has nothing to tell apart, and nothing comes back.

use std::collections::BTreeMap;

/// The share of `members`' dated segments on each day (empty when none is dated).
pub(in crate::episodes) fn histogram(
    dates: &[Option<i32>],
    members: impl IntoIterator<Item = usize>,
) -> BTreeMap<i32, f64> {
    let mut counts = BTreeMap::new();
    for s in members {
        if let Some(day) = dates[s] {
            *counts.entry(day).or_insert(0.0) += 1.0;
        }
    }
    let total: f64 = counts.values().sum();
    counts.values_mut().for_each(|c| *c /= total);
    counts
}

/// Σ_day min(a, b): 1 for the same dates in the same shares, 0 for no day in common; 1 when
/// either side has no date (nothing tells them apart).
pub(in crate::episodes) fn overlap(a: &BTreeMap<i32, f64>, b: &BTreeMap<i32, f64>) -> f64 {
    if a.is_empty() || b.is_empty() {
        return 1.0;
    }
    a.iter()
        .filter_map(|(day, x)| b.get(day).map(|y| x.min(*y)))
        .sum()
}

/// Each dated article's date once (`articles`: each segment's article and date), and the event's
/// date histogram over them.
pub(in crate::episodes) fn article_dates(
    articles: &[(u32, Option<i32>)],
) -> (Vec<Option<i32>>, BTreeMap<i32, f64>) {
    let event_dates: BTreeMap<u32, i32> = articles
        .iter()
        .filter_map(|&(doc, date)| Some((doc, date?)))
        .collect();
    let dates: Vec<Option<i32>> = event_dates.values().map(|&d| Some(d)).collect();
    let event = histogram(&dates, 0..dates.len());
    (dates, event)
}

/// Each segment's article and date, as `episodes.dated` and [`crate::episodes::terms::dated_words`] read them.
pub fn segment_articles(segments: &[crate::tables::Segment]) -> Vec<(u32, Option<i32>)> {
    segments.iter().map(|s| (s.doc_id, s.doc_date)).collect()
}

/// The [`overlap`] of a set of articles' dates (`own`: article → date) with the `event`'s.
pub(in crate::episodes) fn articles_overlap(
    own: &BTreeMap<u32, i32>,
    event: &BTreeMap<i32, f64>,
) -> f64 {
    let own_dates: Vec<Option<i32>> = own.values().map(|&d| Some(d)).collect();
    overlap(&histogram(&own_dates, 0..own_dates.len()), event)
}

/// The overlaps with the `event`'s dates of `draws` random sets of `n` of the event's articles
/// (`dates`, without replacement), from the seed `seed`.
pub(in crate::episodes) fn random_overlaps(
    n: usize,
    dates: &[Option<i32>],
    event: &BTreeMap<i32, f64>,
    draws: usize,
    seed: u64,
) -> Vec<f64> {
    use rand_xoshiro::rand_core::{RngCore, SeedableRng};
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut order: Vec<usize> = (0..dates.len()).collect();
    let n = n.min(order.len());
    (0..draws)
        .map(|_| {
            // The first n of a partial Fisher–Yates shuffle: n articles without replacement.
            for i in 0..n {
                let j = i + (rng.next_u64() % (order.len() - i) as u64) as usize;
                order.swap(i, j);
            }
            overlap(&histogram(dates, order[..n].iter().copied()), event)
        })
        .collect()
}

/// Random draws of the null (each as many articles as the candidate, from the event's).
const DRAWS: usize = 199;
/// The test's level: a candidate comes back when at most this share of the null's draws (with
/// the candidate itself, as a permutation test counts it) lie as far from the event's dates.
const LEVEL: f64 = 0.05;
/// A candidate of fewer dated articles is not tested (coverage's bound, [`crate::episodes::classification::uncovered_groups`]).
const MIN_ARTICLES: usize = 3;

/// One dated candidate: its index, its articles' overlap with the event's dates and the test's
/// p-value.
pub type DatedBack = (usize, f64, f64);

/// Brings back every candidate that a relative rule dropped (`eligible`) whose articles are
/// told on their own days: the [`overlap`] of its articles' dates with the event's is lower
/// than that of all but [`LEVEL`] of [`DRAWS`] random sets of as many of the event's articles
/// (a permutation test with a fixed seed, so runs repeat). `articles` is each segment's article
/// and date; a candidate's articles are those of its members, each counted once. Nothing changes
/// when the event's articles carry fewer than two distinct dates. Returns what came back.
pub(in crate::episodes) fn restore_dated(
    kept: &mut [bool],
    eligible: &[bool],
    articles: &[(u32, Option<i32>)],
    members: &[Vec<(f64, usize)>],
) -> Vec<DatedBack> {
    let (dates, event) = article_dates(articles);
    if event.len() < 2 {
        return Vec::new();
    }
    let mut back = Vec::new();
    for e in (0..kept.len()).filter(|&e| !kept[e] && eligible[e]) {
        let own: BTreeMap<u32, i32> = members[e]
            .iter()
            .filter_map(|&(_, s)| Some((articles[s].0, articles[s].1?)))
            .collect();
        if own.len() < MIN_ARTICLES {
            continue;
        }
        let shared = articles_overlap(&own, &event);
        let p = p_value(shared, own.len(), &dates, &event, e as u64);
        if p <= LEVEL {
            back.push((e, shared, p));
        }
    }
    for &(e, _, _) in &back {
        kept[e] = true;
    }
    back
}

/// The share of [`DRAWS`] random sets of `n` of the event's articles (`dates`) whose overlap
/// with the `event`'s dates is at most `shared`, the candidate counted as one more draw.
fn p_value(
    shared: f64,
    n: usize,
    dates: &[Option<i32>],
    event: &BTreeMap<i32, f64>,
    seed: u64,
) -> f64 {
    let as_far = random_overlaps(n, dates, event, DRAWS, 0x45_da7e_d000 ^ seed)
        .into_iter()
        .filter(|&drawn| drawn <= shared + 1e-12)
        .count();
    (1 + as_far) as f64 / (DRAWS + 1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Forty articles over ten days, four a day, one segment each. A dropped candidate of the
    /// eight articles of days 0 and 1 comes back (random sets of eight spread over most days);
    /// one of eight articles spread over eight days does not; one that no relative rule dropped,
    /// and one of two articles, stay out; a kept one is untouched.
    #[test]
    fn a_dropped_candidate_on_its_own_days_comes_back_one_spread_like_the_event_does_not() {
        let articles: Vec<(u32, Option<i32>)> = (0..40).map(|d| (d, Some(d as i32 / 4))).collect();
        let seg = |docs: &[u32]| docs.iter().map(|&d| (0.0, d as usize)).collect::<Vec<_>>();
        let members = vec![
            seg(&[0, 1, 2, 3]),                     // kept already
            seg(&[0, 1, 2, 3, 4, 5, 6, 7]),         // days 0, 1: dropped, eligible
            seg(&[0, 4, 8, 12, 16, 20, 24, 28]),    // days 0 to 7: spread
            seg(&[32, 33, 34, 35, 36, 37, 38, 39]), // days 8, 9: not eligible
            seg(&[36, 37]),                         // two articles: not tested
        ];
        let mut kept = vec![true, false, false, false, false];
        let eligible = vec![false, true, true, false, true];
        let back = restore_dated(&mut kept, &eligible, &articles, &members);
        let ids: Vec<usize> = back.iter().map(|&(e, _, _)| e).collect();
        assert_eq!(ids, vec![1]);
        assert!((back[0].1 - 0.2).abs() < 1e-12, "{back:?}");
        assert!(back[0].2 <= LEVEL, "{back:?}");
        assert_eq!(kept, vec![true, true, false, false, false]);
        // The same again: the draws are seeded.
        let mut again = vec![true, false, false, false, false];
        assert_eq!(
            restore_dated(&mut again, &eligible, &articles, &members),
            back
        );
    }

    /// A few articles drawn from an event told over many days share little with it by chance:
    /// three articles on three of thirty days share 0.1 of the event's dates, and random sets
    /// of three do as well, so the candidate stays out.
    #[test]
    fn a_small_candidate_of_a_long_event_is_judged_against_chance() {
        let articles: Vec<(u32, Option<i32>)> = (0..30).map(|d| (d, Some(d as i32))).collect();
        let members = vec![vec![(0.0, 0), (0.0, 1)], vec![(0.0, 3), (0.0, 4), (0.0, 5)]];
        let mut kept = vec![true, false];
        assert!(restore_dated(&mut kept, &[false, true], &articles, &members).is_empty());
        assert_eq!(kept, vec![true, false]);
    }

    /// Without dates, or with one date for every segment, nothing comes back.
    #[test]
    fn an_event_of_one_day_or_none_brings_nothing_back() {
        let members = vec![vec![(0.0, 0)], vec![(0.0, 1), (0.0, 2), (0.0, 3)]];
        for date in [None, Some(3)] {
            let articles: Vec<(u32, Option<i32>)> = (0..4).map(|d| (d, date)).collect();
            let mut kept = vec![true, false];
            let back = restore_dated(&mut kept, &[false, true], &articles, &members);
            assert!(back.is_empty());
            assert_eq!(kept, vec![true, false]);
        }
    }

    /// Half the dates in common is not apart; an undated side never separates.
    #[test]
    fn overlap_is_the_shared_share_of_days() {
        let dates = vec![Some(1), Some(2), Some(2), Some(3), None];
        let a = histogram(&dates, [0, 1]);
        let b = histogram(&dates, [2, 3]);
        assert_eq!(overlap(&a, &b), 0.5);
        assert_eq!(overlap(&a, &histogram(&dates, [3])), 0.0);
        assert_eq!(overlap(&a, &histogram(&dates, [4])), 1.0);
        assert_eq!(overlap(&a, &a), 1.0);
    }
}
