//! Words told on days of their own join T (issue 45; `terms.dated`, off by default), before
//! the expansion of docs/method.md §1.
//!
//! Eq. 3's salience grows with a word's frequency, and T keeps the words above the event's mean
//! salience, so a phase told in 18 of an event's 379 articles never gets its own words into T:
//! its segments are salient only through the story's shared words, its articles rank low (§4)
//! and no candidate of its own forms. What sets such a word apart is when it is written: the
//! words every article repeats are spread over the event's days as its articles are, while a
//! phase's words are written on the days it happened — the paper's premise that an episode is
//! temporally coherent (§2), and the "bursty feature" of news event detection.
//!
//! The test, per word with a valid salience (eq. 3: not a stop word, at least 5 segments) that
//! is not in T: the overlap of its articles' date histogram with the event's (each normalised to
//! 1; the overlap of [`crate::episodes::classification::dated_candidates`]) against random sets of as many of the event's articles.
//! The word joins T, with its own salience, when its overlap lies at least [`Z`] standard
//! deviations below the random sets' mean. Thousands of words are tested per event, so the
//! bound is far in the tail (a one-sided normal 3σ: about one word in 700 by chance), not a 5%
//! level. The null of a word in n articles is drawn once for the largest size of a geometric
//! grid at most n (a smaller set overlaps the event less on average, so the bound is the more
//! cautious one), and only for the sizes some word needs, which keeps the draws linear in the
//! event's articles.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use rayon::prelude::*;

use crate::episodes::classification::dated_candidates::{
    article_dates, articles_overlap, random_overlaps,
};
use crate::stats::formulas::NOT_SALIENT;
use crate::tables::Term;

/// Random draws of the null per grid size.
const DRAWS: usize = 199;
/// How far below the null's mean (in its standard deviations) a word's overlap must lie.
pub const Z: f64 = 3.0;
/// A word in fewer dated articles is not tested.
const MIN_ARTICLES: usize = 3;
/// The grid of null sizes: each next size is the last times (1 + 1/GRID), rounded up.
const GRID: usize = 10;

/// A word that joined T: its row, its overlap with the event's dates and the null's mean and
/// standard deviation at its grid size.
pub type Bursty = (usize, f64, f64, f64);

/// The rows (indices into `rows`) of the non-salient words with a valid salience whose articles
/// are told on days of their own (module doc). `segments` are the event's segment texts and
/// `articles` each segment's article and date. Nothing when the event's articles carry fewer
/// than two distinct dates. The same for any number of threads (fixed seeds, results in row
/// order).
pub fn dated_terms(
    rows: &[Term],
    segments: &[&str],
    articles: &[(u32, Option<i32>)],
) -> Vec<Bursty> {
    let (dates, event) = article_dates(articles);
    if event.len() < 2 {
        return Vec::new();
    }
    let tested: HashMap<&str, usize> = rows
        .iter()
        .enumerate()
        .filter(|(_, r)| !r.salient && r.salience != NOT_SALIENT)
        .map(|(i, r)| (r.term.as_str(), i))
        .collect();
    // Each tested word's dated articles, in article order.
    let mut word_articles: BTreeMap<usize, BTreeMap<u32, i32>> = BTreeMap::new();
    for (text, &(doc, date)) in segments.iter().zip(articles) {
        let Some(date) = date else { continue };
        for w in crate::terms::distinct_terms(text) {
            if let Some(&i) = tested.get(w.as_str()) {
                word_articles.entry(i).or_default().insert(doc, date);
            }
        }
    }
    let grid = grid(dates.len());
    // Each tested word with its grid size (index into `grid`).
    let sized: Vec<(usize, BTreeMap<u32, i32>, usize)> = word_articles
        .into_iter()
        .filter_map(|(i, own)| {
            let k = grid.partition_point(|&n| n <= own.len()).checked_sub(1)?;
            Some((i, own, k))
        })
        .collect();
    let needed: BTreeSet<usize> = sized.iter().map(|w| w.2).collect();
    let nulls: BTreeMap<usize, (f64, f64)> = needed
        .into_par_iter()
        .map(|k| (k, null(grid[k], &dates, &event, k as u64)))
        .collect();
    sized
        .into_par_iter()
        .filter_map(|(i, own, k)| {
            let shared = articles_overlap(&own, &event);
            let (mean, sd) = nulls[&k];
            (sd > 0.0 && shared <= mean - Z * sd).then_some((i, shared, mean, sd))
        })
        .collect()
}

/// Sizes from [`MIN_ARTICLES`] to `total`, each the last times 1.1 rounded up ([`GRID`]).
fn grid(total: usize) -> Vec<usize> {
    let mut sizes = Vec::new();
    let mut n = MIN_ARTICLES;
    while n <= total {
        sizes.push(n);
        n += n.div_ceil(GRID);
    }
    sizes
}

/// The mean and standard deviation of the overlap with the `event`'s dates of [`DRAWS`] random
/// sets of `n` of the event's articles (`dates`), from a fixed seed.
fn null(n: usize, dates: &[Option<i32>], event: &BTreeMap<i32, f64>, seed: u64) -> (f64, f64) {
    let drawn = random_overlaps(n, dates, event, DRAWS, 0x45_b125_7000 ^ seed);
    let mean = drawn.iter().sum::<f64>() / DRAWS as f64;
    let var = drawn.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (DRAWS - 1) as f64;
    (mean, var.sqrt())
}

#[cfg(test)]
mod tests {
    use super::super::expand::tests::row;
    use super::*;

    /// Sixty articles over ten days, six a day, one segment each; every article says "storm".
    /// "levee" is written in the eight articles of days 3 and 4, "mayor" in eight articles
    /// spread over eight days, "rain" in the articles of days 3 and 4 too but is already in T,
    /// "gale" in two articles only and "the" is a stop word (no valid salience).
    #[test]
    fn a_word_written_on_its_own_days_joins_one_spread_like_the_event_does_not() {
        let mut texts = Vec::new();
        let mut articles = Vec::new();
        for d in 0..60u32 {
            let day = d as i32 / 6;
            let mut t = String::from("storm the");
            if (day == 3 || day == 4) && d % 6 < 4 {
                t.push_str(" levee rain");
            }
            if d % 7 == 0 && d < 56 {
                t.push_str(" mayor");
            }
            if d < 2 {
                t.push_str(" gale");
            }
            texts.push(t);
            articles.push((d, Some(day)));
        }
        let segments: Vec<&str> = texts.iter().map(String::as_str).collect();
        let rows = vec![
            row("storm", 60, 10.0, true),
            row("levee", 8, 4.0, false),
            row("rain", 8, 4.0, true),
            row("mayor", 8, 4.0, false),
            row("gale", 2, 4.0, false),
            row("the", 60, NOT_SALIENT, false),
        ];
        let found = dated_terms(&rows, &segments, &articles);
        let joined: Vec<&str> = found.iter().map(|b| rows[b.0].term.as_str()).collect();
        assert_eq!(joined, ["levee"], "{found:?}");
        let (_, shared, mean, sd) = found[0];
        assert!(
            shared <= mean - Z * sd && (shared - 0.2).abs() < 1e-9,
            "{found:?}"
        );
        // The same answer from one thread as from several.
        let one = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap()
            .install(|| dated_terms(&rows, &segments, &articles));
        assert_eq!(one, found);
        // No dates, or one date: nothing to tell apart.
        let undated: Vec<(u32, Option<i32>)> = (0..60).map(|d| (d, None)).collect();
        assert!(dated_terms(&rows, &segments, &undated).is_empty());
        let one_day: Vec<(u32, Option<i32>)> = (0..60).map(|d| (d, Some(7))).collect();
        assert!(dated_terms(&rows, &segments, &one_day).is_empty());
    }

    #[test]
    fn the_grid_grows_geometrically_from_the_smallest_tested_size() {
        assert_eq!(grid(2), Vec::<usize>::new());
        assert_eq!(grid(12), [3, 4, 5, 6, 7, 8, 9, 10, 11]);
        let big = grid(100_000);
        assert!(
            big.len() < 120 && *big.last().unwrap() <= 100_000,
            "{}",
            big.len()
        );
    }
}
