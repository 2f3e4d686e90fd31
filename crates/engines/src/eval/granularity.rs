//! How a run's episodes cover an event's gold episodes beyond the hits of k-F1 (paper appendix C
//! counts hits only): a gold episode *split* over several episodes, or *absorbed* into episodes
//! about others. Not part of the paper; what `scripts/quality/gold_granularity.py` printed
//! before `epimine eval` did (issue 67 item 5).
//!
//! An episode is *about* the gold episode most of its labelled segments name (among all its
//! segments, not only its top k; labels that are not one described episode id are not counted;
//! ties to the lower id). A gold episode that some segment of the event is labelled with is
//! *split* when two or more episodes are about it, and *absorbed* when none is.

use std::collections::{BTreeMap, BTreeSet, HashMap};

/// The described gold episode a label names, if it names one.
pub(super) fn gold_of(label: Option<&&str>, gold: &BTreeSet<u32>) -> Option<u32> {
    label
        .and_then(|l| l.parse::<u32>().ok())
        .filter(|id| gold.contains(id))
}

/// (split, absorbed) over one trial's `episodes` (each its segments as (doc_id, seg_idx)).
pub fn split_and_absorbed(
    episodes: &[Vec<(u32, u32)>],
    labels: &HashMap<(u32, u32), &str>,
    gold: &BTreeSet<u32>,
) -> (usize, usize) {
    let mut about: BTreeMap<u32, usize> = BTreeMap::new();
    for segments in episodes {
        let mut votes: BTreeMap<u32, usize> = BTreeMap::new();
        for seg in segments {
            if let Some(id) = gold_of(labels.get(seg), gold) {
                *votes.entry(id).or_default() += 1;
            }
        }
        // The most votes, the lowest id on ties (the map iterates ids in order).
        if let Some((id, _)) =
            votes
                .into_iter()
                .fold(None, |best: Option<(u32, usize)>, (id, n)| match best {
                    Some((_, m)) if m >= n => best,
                    _ => Some((id, n)),
                })
        {
            *about.entry(id).or_default() += 1;
        }
    }
    let labelled: BTreeSet<u32> = labels
        .values()
        .filter_map(|l| gold_of(Some(l), gold))
        .collect();
    let split = labelled
        .iter()
        .filter(|id| about.get(id).is_some_and(|&n| n >= 2))
        .count();
    let absorbed = labelled.iter().filter(|id| !about.contains_key(id)).count();
    (split, absorbed)
}

/// The mean Jaccard overlap of the first `k` keywords of every pair of an event's episodes (0:
/// no keyword shared, 1: the same names); `None` under two episodes. What
/// `scripts/quality/episode_name_overlap.py` printed before: label-free, how distinct the
/// episodes' names are.
pub fn name_overlap(keywords: &[&[String]], k: usize) -> Option<f64> {
    let sets: Vec<BTreeSet<&str>> = keywords
        .iter()
        .map(|w| w.iter().take(k).map(String::as_str).collect())
        .collect();
    let mut sum = 0.0;
    let mut pairs = 0usize;
    for (i, a) in sets.iter().enumerate() {
        for b in &sets[i + 1..] {
            let union = a.union(b).count();
            if union > 0 {
                sum += a.intersection(b).count() as f64 / union as f64;
            }
            pairs += 1;
        }
    }
    (pairs > 0).then(|| sum / pairs as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gold_episode_about_which_two_episodes_are_is_split_and_one_no_episode_is_about_is_absorbed(
    ) {
        // Gold 1: segments (0, 0..4); gold 2: (1, 0..4); gold 3: (2, 0..2); (3, 0) is `M`.
        let mut labels: HashMap<(u32, u32), &str> = HashMap::new();
        for s in 0..4 {
            labels.insert((0, s), "1");
            labels.insert((1, s), "2");
        }
        labels.insert((2, 0), "3");
        labels.insert((2, 1), "3");
        labels.insert((3, 0), "M");
        let gold: BTreeSet<u32> = [1, 2, 3, 4].into();
        let episodes = vec![
            vec![(0, 0), (0, 1), (2, 0)],         // about 1
            vec![(0, 2), (0, 3), (3, 0)],         // about 1 again: 1 is split
            vec![(1, 0), (1, 1), (1, 2), (2, 1)], // about 2; 3's segments sit in others
        ];
        // 3 is absorbed; 4 has no labelled segment, so it is neither.
        assert_eq!(split_and_absorbed(&episodes, &labels, &gold), (1, 1));
        // A tie goes to the lower id: an episode of one segment each of 2 and 3 is about 2.
        let tie = vec![vec![(1, 3), (2, 0)], vec![(0, 0)]];
        assert_eq!(split_and_absorbed(&tie, &labels, &gold), (0, 1));
    }

    #[test]
    fn names_overlap_by_the_jaccard_of_their_first_keywords() {
        let w = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let (a, b, c) = (
            w(&["flood", "river", "x"]),
            w(&["flood", "rescue"]),
            w(&["vote"]),
        );
        // Over the first 2: {flood, river} and {flood, rescue} share 1 of 3; c shares none.
        let got = name_overlap(&[&a, &b, &c], 2).unwrap();
        assert!((got - (1.0 / 3.0) / 3.0).abs() < 1e-12, "{got}");
        assert_eq!(name_overlap(&[&a], 2), None);
    }
}
