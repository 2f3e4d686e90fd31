//! Unit tests of `novelty`.

use std::collections::HashMap;

use super::*;
use crate::tables::Segment;

/// One segment per article; article `i` dated day `i / 10`.
fn segments(n: usize) -> Vec<Segment> {
    (0..n)
        .map(|i| Segment {
            key_event: "e".into(),
            theme: None,
            doc_id: i as u32,
            doc_date: Some((i / 10) as i32),
            seg_idx: 0,
            text: format!("segment {i}"),
            source_id: None,
            title: None,
        })
        .collect()
}

/// A vector along `axis` (of 4) with a little of the others, varying with `i`.
fn along(axis: usize, i: usize) -> Vec<f32> {
    let mut v = vec![0.1 + 0.05 * (i % 3) as f32; 4];
    v[axis] = 1.0;
    v
}

/// The rows of one kept episode holding `members` (in rank order), the rest left out.
fn rows_of(segs: &[Segment], members: &[usize]) -> (Vec<Episode>, Vec<Assignment>, Vec<LeftOut>) {
    let episode = Episode {
        key_event: "e".into(),
        trial: 0,
        episode_id: 0,
        stable_id: None,
        status: None,
        title: "old".into(),
        title_fields: Vec::new(),
        keywords: vec!["old".into()],
        example_sentences: Vec::new(),
        n_segments: members.len() as u32,
        source: "clusters".into(),
        n_articles: members.len() as u32,
        first_date: None,
        peak_date: None,
        last_date: None,
        phase_id: 0,
        phase_stable_id: None,
    };
    let assignments = members
        .iter()
        .enumerate()
        .map(|(rank, &s)| Assignment {
            key_event: "e".into(),
            trial: 0,
            episode_id: 0,
            stable_id: None,
            status: None,
            doc_id: segs[s].doc_id,
            seg_idx: 0,
            rank: rank as u32,
            confidence: 0.5,
        })
        .collect();
    let left_out = (0..segs.len())
        .filter(|s| !members.contains(s))
        .map(|s| LeftOut {
            key_event: "e".into(),
            trial: 0,
            doc_id: segs[s].doc_id,
            seg_idx: 0,
            reason: "below-confidence".into(),
            confidence: 0.1,
            similarity: 0.2,
        })
        .collect();
    (vec![episode], assignments, left_out)
}

fn view(
    embeddings: &[Vec<f32>],
    arrived: &[bool],
    members: &[usize],
    previous: &[Vec<usize>],
) -> (NoveltyReport, Vec<Episode>, Vec<Assignment>, Vec<LeftOut>) {
    view_episodes(embeddings, arrived, &[members.to_vec()], previous)
}

/// The novelty view over the kept episodes `kept` (each its members in rank order), the rest
/// left out.
fn view_episodes(
    embeddings: &[Vec<f32>],
    arrived: &[bool],
    kept: &[Vec<usize>],
    previous: &[Vec<usize>],
) -> (NoveltyReport, Vec<Episode>, Vec<Assignment>, Vec<LeftOut>) {
    let segs = segments(embeddings.len());
    let vectors = HashMap::new();
    let input = EventInput {
        segments: &segs,
        terms: Vec::new(),
        pairs: Vec::new(),
        word_vectors: &vectors,
        embeddings,
        carried: &[],
    };
    let (mut episodes, mut assignments, mut left_out) = rows_of_episodes(&segs, kept);
    let keywords = |groups: &[Vec<usize>]| -> Vec<Vec<String>> {
        (0..groups.len()).map(|g| vec![format!("k{g}")]).collect()
    };
    let report = novelty_view(
        &input,
        &keywords,
        &EpisodeParams::default(),
        arrived,
        previous,
        0,
        Rows {
            episodes: &mut episodes,
            assignments: &mut assignments,
            left_out: &mut left_out,
        },
    );
    (report, episodes, assignments, left_out)
}

/// The articles of episode `e` in `assignments`, ascending.
fn doc_ids_of(assignments: &[Assignment], e: u32) -> Vec<u32> {
    let mut d: Vec<u32> = assignments
        .iter()
        .filter(|a| a.episode_id == e)
        .map(|a| a.doc_id)
        .collect();
    d.sort();
    d
}

#[test]
fn todays_development_inside_an_old_episode_becomes_an_episode_of_its_own() {
    // 20 old segments along axis 0 (one episode), then today: 6 along axis 0 (the same
    // story, matched), 8 along axis 1 classified into the old episode (absorbed) and 4
    // along axis 1 left out.
    let mut embeddings: Vec<Vec<f32>> = (0..20).map(|i| along(0, i)).collect();
    embeddings.extend((0..6).map(|i| along(0, i)));
    embeddings.extend((0..12).map(|i| along(1, i)));
    let arrived: Vec<bool> = (0..38).map(|s| s >= 20).collect();
    let members: Vec<usize> = (0..34).collect();
    let (report, episodes, assignments, left_out) = view(&embeddings, &arrived, &members, &[]);
    assert_eq!(
        (report.added, report.moved, report.rescued),
        (1, 8, 4),
        "{report:?}"
    );
    assert_eq!(episodes.len(), 2);
    let of = |e: u32| doc_ids_of(&assignments, e);
    assert_eq!(of(0), (0..26).collect::<Vec<u32>>(), "old content stays");
    assert_eq!(
        of(1),
        (26..38).collect::<Vec<u32>>(),
        "today's development apart"
    );
    assert_eq!(episodes[1].source, SOURCE);
    assert_eq!(episodes[1].title, "k1");
    assert_eq!((episodes[0].n_segments, episodes[1].n_segments), (26, 12));
    assert_eq!(episodes[1].first_date, Some(2));
    assert!(left_out.is_empty(), "the left-out segments were taken in");
    // Ranks run from 0 in each episode.
    for e in 0..2 {
        let mut ranks: Vec<u32> = assignments
            .iter()
            .filter(|a| a.episode_id == e)
            .map(|a| a.rank)
            .collect();
        ranks.sort();
        assert_eq!(ranks, (0..ranks.len() as u32).collect::<Vec<_>>());
    }
}

#[test]
fn nothing_changes_without_arrivals_or_a_group_of_enough_articles() {
    let mut embeddings: Vec<Vec<f32>> = (0..20).map(|i| along(0, i)).collect();
    embeddings.extend((0..12).map(|i| along(1, i)));
    let members: Vec<usize> = (0..32).collect();
    let before = rows_of(&segments(32), &members).1;
    // No article arrived: the rows are the fresh run's.
    let (report, episodes, assignments, _) = view(&embeddings, &[false; 32], &members, &[]);
    assert_eq!((report.added, episodes.len()), (0, 1));
    assert_eq!(assignments, before);
    // Four of today's articles on axis 1: under novelty_min_articles (5).
    let arrived: Vec<bool> = (0..32).map(|s| s >= 28).collect();
    let (report, episodes, _, _) = view(&embeddings, &arrived, &members, &[]);
    assert_eq!((report.unmatched, report.added, episodes.len()), (4, 0, 1));
}

#[test]
fn an_episode_of_the_previous_run_that_no_kept_one_continues_is_told_on() {
    // Yesterday: 20 segments along axis 0 and 10 along axis 2 (two episodes). Today the
    // fresh run kept one episode of all 30, and 3 new articles arrived along axis 0.
    let mut embeddings: Vec<Vec<f32>> = (0..20).map(|i| along(0, i)).collect();
    embeddings.extend((0..10).map(|i| along(2, i)));
    embeddings.extend((0..3).map(|i| along(0, i)));
    let arrived: Vec<bool> = (0..33).map(|s| s >= 30).collect();
    let members: Vec<usize> = (0..33).collect();
    let previous = vec![(0..20).collect::<Vec<usize>>(), (20..30).collect()];
    // Axis 2's old episode shares 10 of the 33 (30%) with the kept one: linked, kept as is.
    let (report, episodes, ..) = view(&embeddings, &arrived, &members, &previous);
    assert_eq!((report.carried, episodes.len()), (0, 1));
    // With only 10 of axis 0 in the kept episode, axis 2's share falls under 30% of it …
    let members: Vec<usize> = (0..20).chain(30..33).chain(20..22).collect();
    let (report, episodes, assignments, left_out) =
        view(&embeddings, &arrived, &members, &previous);
    // … and it is told on: its 10 segments (2 taken from the kept episode, 8 left out).
    assert_eq!((report.carried, report.added), (1, 0), "{report:?}");
    assert_eq!(episodes[1].source, CARRIED);
    let told: Vec<u32> = assignments
        .iter()
        .filter(|a| a.episode_id == 1)
        .map(|a| a.doc_id)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    assert_eq!(told, (20..30).collect::<Vec<u32>>());
    assert!(left_out.is_empty());
}

/// The rows of kept episodes `kept` (each its members in rank order), the rest left out.
fn rows_of_episodes(
    segs: &[Segment],
    kept: &[Vec<usize>],
) -> (Vec<Episode>, Vec<Assignment>, Vec<LeftOut>) {
    let every: Vec<usize> = kept.iter().flatten().copied().collect();
    let (_, _, left_out) = rows_of(segs, &every);
    let (mut episodes, mut assignments) = (Vec::new(), Vec::new());
    for (e, members) in kept.iter().enumerate() {
        let (mut rows, mut assigned, _) = rows_of(segs, members);
        for r in &mut rows {
            r.episode_id = e as u32;
        }
        for a in &mut assigned {
            a.episode_id = e as u32;
        }
        episodes.extend(rows);
        assignments.extend(assigned);
    }
    (episodes, assignments, left_out)
}

#[test]
fn an_episode_the_fresh_run_cut_into_pieces_of_it_is_kept_whole() {
    // Yesterday one episode of 20 segments along axis 0. Today 3 more arrived along axis 0 and
    // 10 along axis 1 with 2 of yesterday's (recaps) among them; the fresh run cut yesterday's
    // episode in two and put today's axis-1 articles in an episode of their own.
    let mut embeddings: Vec<Vec<f32>> = (0..20).map(|i| along(0, i)).collect();
    embeddings.extend((0..3).map(|i| along(0, i)));
    embeddings.extend((0..10).map(|i| along(1, i)));
    let arrived: Vec<bool> = (0..33).map(|s| s >= 20).collect();
    let previous = vec![(0..20).collect::<Vec<usize>>()];
    let kept = vec![
        (0..10).chain(20..23).collect::<Vec<usize>>(),
        (10..18).collect(),
        (18..20).chain(23..33).collect(),
    ];
    let (report, episodes, assignments, _) = view_episodes(&embeddings, &arrived, &kept, &previous);
    // The two pieces are one again; today's axis-1 articles (an episode with two recaps of
    // yesterday's, not a piece of it) stay apart from it, and once they are an episode of their
    // own, the two recaps left behind are a piece of yesterday's episode: joined too.
    assert_eq!(report.rejoined, 2, "{report:?}");
    let of = |e: u32| doc_ids_of(&assignments, e);
    assert_eq!(of(0), (0..23).collect::<Vec<u32>>());
    assert_eq!(episodes[0].n_segments, 23);
    let today = episodes_from(&assignments, 23);
    assert_eq!(today.len(), 1, "today's development in one episode");
    assert!(!today.contains(&0));
    // Ranks run from 0 in each episode: the first piece's, then the second's.
    let ranks: Vec<u32> = assignments
        .iter()
        .filter(|a| a.episode_id == 0)
        .map(|a| a.rank)
        .collect();
    assert_eq!(ranks, (0..23).collect::<Vec<u32>>());
}

#[test]
fn a_development_grown_threefold_overnight_is_kept_whole() {
    // Yesterday: P, 8 segments along axis 0, and Q, 6 along axis 2. Today 18 more arrived along
    // axis 0 and 10 along axis 1. The fresh run cut P's development into two pieces made mostly
    // of today's articles (3 of P's and 9 new each: P's share 0.25, under MIN_SHARE) and put
    // today's axis-1 articles with P's 2 other segments (recaps).
    let mut embeddings: Vec<Vec<f32>> = (0..8).map(|i| along(0, i)).collect();
    embeddings.extend((0..6).map(|i| along(2, i)));
    // Today's axis-0 segments all lie where P's centre does, so step 1 matches them all.
    embeddings.extend((0..18).map(|_| along(0, 1)));
    embeddings.extend((0..10).map(|i| along(1, i)));
    let arrived: Vec<bool> = (0..42).map(|s| s >= 14).collect();
    let previous = vec![(0..8).collect::<Vec<usize>>(), (8..14).collect()];
    let kept = vec![
        (0..3).chain(14..23).collect::<Vec<usize>>(),
        (3..6).chain(23..32).collect(),
        (8..14).collect(),
        (6..8).chain(32..42).collect(),
    ];
    let (report, _, assignments, _) = view_episodes(&embeddings, &arrived, &kept, &previous);
    // The two pieces continue P (their centre is as close to P as P's halves are to each other,
    // far closer than Q is): one episode again. The axis-1 piece holds only P's segments among
    // its old ones too, but its centre is another development's: it is not joined, until
    // today's axis-1 articles are an episode of their own and it is P's 2 recaps alone.
    assert_eq!(report.rejoined, 2, "{report:?}");
    let of = |e: u32| doc_ids_of(&assignments, e);
    assert_eq!(of(0), (0..8).chain(14..32).collect::<Vec<u32>>());
    let axis1 = episodes_from(&assignments, 32);
    assert_eq!(axis1.len(), 1, "today's other development in one episode");
    assert!(!axis1.contains(&0));
}

#[test]
fn the_continuation_test_tells_a_development_grown_from_one_beside_it() {
    let embeddings: Vec<Vec<f32>> = (0..8)
        .map(|i| along(0, i))
        .chain((0..8).map(|i| along(2, i)))
        .chain((0..8).map(|i| along(0, i + 1)))
        .chain((0..8).map(|i| along(1, i)))
        .collect();
    let segs = segments(embeddings.len());
    let every: Vec<usize> = (0..segs.len()).collect();
    let units = classify::unit_vectors(&embeddings, &every);
    let previous = vec![
        (0..8).collect::<Vec<usize>>(),
        (8..16).collect(),
        vec![0, 1, 2],
    ];
    let told = continuation::told(&segs, &units, &previous);
    // The third previous episode has fewer than MIN_ARTICLES articles: not judged.
    assert_eq!(told.len(), 2);
    let today_p: Vec<usize> = (16..24).collect();
    let today_other: Vec<usize> = (24..32).collect();
    assert_eq!(continuation::closest(&units, &told, &today_p), Some(0));
    assert_eq!(continuation::closest(&units, &told, &today_other), None);
    // A quarter of P and three quarters of another development: not P's.
    let mixed: Vec<usize> = (16..18).chain(24..30).collect();
    assert_eq!(continuation::closest(&units, &told, &mixed), None);
}

/// The episodes holding the articles from `first` on.
fn episodes_from(assignments: &[Assignment], first: u32) -> BTreeSet<u32> {
    assignments
        .iter()
        .filter(|a| a.doc_id >= first)
        .map(|a| a.episode_id)
        .collect()
}

#[test]
fn a_piece_left_of_yesterday_s_episode_once_today_s_group_is_out_is_kept_whole() {
    // Yesterday: P, 8 segments along axis 0, and Q, 6 along axis 2. Today 3 more arrived along
    // axis 0 and 10 along axis 1. The fresh run cut P in two: one piece with 4 of P's and the 3
    // new ones, the other with P's 4 others and today's 10 axis-1 articles (P's share 4 of 14,
    // under MIN_SHARE, and its centre is the axis-1 development's): not joined at first.
    let mut embeddings: Vec<Vec<f32>> = (0..8).map(|i| along(0, i)).collect();
    embeddings.extend((0..6).map(|i| along(2, i)));
    embeddings.extend((0..3).map(|i| along(0, i)));
    embeddings.extend((0..10).map(|i| along(1, i)));
    let arrived: Vec<bool> = (0..27).map(|s| s >= 14).collect();
    let previous = vec![(0..8).collect::<Vec<usize>>(), (8..14).collect()];
    let kept = vec![
        (0..4).chain(14..17).collect::<Vec<usize>>(),
        (4..8).chain(17..27).collect(),
        (8..14).collect(),
    ];
    let (report, episodes, assignments, _) = view_episodes(&embeddings, &arrived, &kept, &previous);
    // Today's axis-1 articles become an episode of their own; what is left of the second piece
    // is P's alone, and it joins the first: P is one episode again.
    assert_eq!((report.added, report.rejoined), (1, 1), "{report:?}");
    let of = |e: u32| doc_ids_of(&assignments, e);
    assert_eq!(of(0), (0..8).chain(14..17).collect::<Vec<u32>>());
    let axis1 = episodes_from(&assignments, 17);
    assert_eq!(axis1.len(), 1, "today's development in one episode");
    assert!(!axis1.contains(&0));
    assert_eq!(episodes.len(), 3, "P, Q and today's development");
}

/// A vector along `axis` (of 4) leaning `lean` towards `towards`, varying a little with `i`.
fn leaning(axis: usize, towards: usize, lean: f32, i: usize) -> Vec<f32> {
    let mut v = along(axis, i);
    v[towards] = lean;
    v
}

#[test]
fn two_developments_of_one_day_that_the_day_s_linkage_joins_are_told_apart() {
    // Yesterday's and still kept: P along axis 0 and Q along axis 2 (8 articles each), and two
    // loose episodes R and S, each half along axis 0 and half along axis 2, that make the cut
    // of today's articles loose. Today 8 articles along axis 1 and 8 along axis 3, each leaning
    // towards the other axis, all left out: the day's linkage joins them in one group, but
    // their two sides lie further apart than half-way from the event's developments' distance
    // to the group's own level.
    let mut embeddings: Vec<Vec<f32>> = (0..8).map(|i| along(0, i)).collect();
    embeddings.extend((0..8).map(|i| along(2, i)));
    embeddings.extend((0..16).map(|i| along(if i % 2 == 0 { 0 } else { 2 }, i)));
    embeddings.extend((0..8).map(|i| leaning(1, 3, 0.5, i)));
    embeddings.extend((0..8).map(|i| leaning(3, 1, 0.5, i)));
    let arrived: Vec<bool> = (0..48).map(|s| s >= 32).collect();
    let previous = vec![
        (0..8).collect::<Vec<usize>>(),
        (8..16).collect(),
        (16..24).collect(),
        (24..32).collect(),
    ];
    let (report, _, assignments, _) = view_episodes(&embeddings, &arrived, &previous, &previous);
    assert_eq!(report.added, 2, "{report:?}");
    let episode_of = |range: std::ops::Range<u32>| -> BTreeSet<u32> {
        assignments
            .iter()
            .filter(|a| range.contains(&a.doc_id))
            .map(|a| a.episode_id)
            .collect()
    };
    let (axis1, axis3) = (episode_of(32..40), episode_of(40..48));
    assert_eq!((axis1.len(), axis3.len()), (1, 1), "{axis1:?} {axis3:?}");
    assert_ne!(axis1, axis3, "one episode each");
}
