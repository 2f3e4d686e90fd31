//! Unit tests of `lineage`.

use super::*;

const STAMP: Stamp = Stamp {
    run: 2,
    run_time: 1_000,
    previous: Some((1, 500)),
};

fn known(id: u32, keys: &[u64], vector: &[f32]) -> EpisodeState {
    EpisodeState {
        key_event: "e".into(),
        trial: 0,
        stable_id: id,
        episode_id: Some(id),
        title: format!("k{id}"),
        segment_keys: keys.to_vec(),
        article_keys: keys
            .iter()
            .map(|k| k / 10)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect(),
        vector: vector.to_vec(),
    }
}

fn found(episode_id: u32, keys: &[u64], vector: &[f32]) -> EpisodeKeys {
    EpisodeKeys {
        key_event: "e".into(),
        trial: 0,
        episode_id,
        title: format!("f{episode_id}"),
        segment_keys: keys.to_vec(),
        article_keys: keys
            .iter()
            .map(|k| k / 10)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect(),
        vector: vector.to_vec(),
    }
}

/// (stable id, episode id, status, from ids, into id).
type Row = (u32, Option<u32>, String, Vec<u32>, Option<u32>);

fn statuses(m: &Matched) -> Vec<Row> {
    m.lineage
        .iter()
        .map(|r| {
            (
                r.stable_id,
                r.episode_id,
                r.status.clone(),
                r.from_ids.clone(),
                r.into_id,
            )
        })
        .collect()
}

fn range(a: u64, b: u64) -> Vec<u64> {
    (a..b).collect()
}

#[test]
fn the_same_episodes_keep_their_ids_even_renumbered() {
    let prev = vec![
        known(0, &range(0, 10), &[1.0, 0.0]),
        known(1, &range(10, 20), &[0.0, 1.0]),
    ];
    // The same episodes, numbered the other way round in this run.
    let now = vec![
        found(0, &range(10, 20), &[0.0, 1.0]),
        found(1, &range(0, 10), &[1.0, 0.0]),
    ];
    let m = match_event(&STAMP, "e", prev, Some(now), None);
    assert_eq!(
        statuses(&m),
        vec![
            (0, Some(1), "continued".into(), vec![0], None),
            (1, Some(0), "continued".into(), vec![1], None),
        ]
    );
    assert_eq!(m.lineage[0].previous_run, Some(1));
    // Fed back in, nothing changes.
    let again: Vec<EpisodeKeys> = m
        .state
        .iter()
        .map(|s| found(s.episode_id.unwrap(), &s.segment_keys, &s.vector))
        .collect();
    let m2 = match_event(&STAMP, "e", m.state.clone(), Some(again), None);
    assert_eq!(m2.state, m.state);
}

#[test]
fn growth_new_split_merge_and_end() {
    let prev = vec![
        known(0, &range(0, 10), &[1.0, 0.0]),
        known(1, &range(10, 20), &[0.0, 1.0]),
        known(2, &range(20, 30), &[0.6, 0.8]),
        known(3, &range(30, 36), &[0.8, 0.6]),
        known(4, &range(40, 50), &[-1.0, 0.0]),
    ];
    let now = vec![
        // 0 grew by 5 segments in new articles.
        found(0, &range(0, 15), &[1.0, 0.0]),
        // 1 split in two.
        found(1, &range(10, 16), &[0.0, 1.0]),
        found(2, &range(16, 20), &[0.0, 1.0]),
        // 2 and 3 merged.
        found(3, &[range(20, 30), range(30, 36)].concat(), &[0.7, 0.7]),
        // Something new; 4 ended.
        found(4, &range(100, 110), &[0.0, -1.0]),
    ];
    let m = match_event(&STAMP, "e", prev, Some(now), None);
    assert_eq!(
        statuses(&m),
        vec![
            (0, Some(0), "grown".into(), vec![0], None),
            (1, Some(1), "shrunk".into(), vec![1], None),
            (2, Some(3), "grown".into(), vec![2, 3], None),
            (3, None, "merged".into(), vec![], Some(2)),
            (4, None, "ended".into(), vec![], None),
            (5, Some(2), "split".into(), vec![1], None),
            (6, Some(4), "new".into(), vec![], None),
        ]
    );
    let grown = &m.lineage[0];
    // Article 1 was in the event but not in episode 0: taken in, not arrived (unknown here).
    assert_eq!(
        (
            grown.new_segments,
            grown.joined_articles,
            grown.new_articles
        ),
        (5, 1, None)
    );
    assert_eq!(
        (m.lineage[1].lost_segments, m.lineage[1].previous_segments),
        (4, 10)
    );
    assert_eq!(m.lineage[4].lost_segments, 10);
    // Ended and merged ids stay taken: the next new episode is 7.
    let next = match_event(
        &STAMP,
        "e",
        m.state.clone(),
        Some(vec![found(0, &range(200, 210), &[0.0, 0.0])]),
        None,
    );
    let new_ids: Vec<u32> = next
        .lineage
        .iter()
        .filter(|r| r.status == "new")
        .map(|r| r.stable_id)
        .collect();
    assert_eq!(new_ids, vec![7]);
}

#[test]
fn vectors_pair_episodes_whose_segments_all_changed() {
    let prev = vec![
        known(0, &range(0, 10), &[1.0, 0.0]),
        known(1, &range(10, 20), &[0.0, 1.0]),
    ];
    let now = vec![
        found(0, &range(50, 60), &[0.0, 1.0]),
        found(1, &range(60, 70), &[0.96, 0.28]),
    ];
    let m = match_event(&STAMP, "e", prev, Some(now), None);
    let by: Vec<(u32, Option<u32>, Option<String>)> = m
        .lineage
        .iter()
        .map(|r| (r.stable_id, r.episode_id, r.matched_by.clone()))
        .collect();
    assert_eq!(
        by,
        vec![
            (0, Some(1), Some("vector".into())),
            (1, Some(0), Some("vector".into())),
        ]
    );
    // Every segment replaced, as many as before.
    assert_eq!(m.lineage[0].status, "continued");
}

#[test]
fn arrived_articles_tell_news_from_what_was_there() {
    // The event held articles 0–7 at the previous run (keys / 10), episodes in 0–3.
    let prev = vec![
        known(0, &range(0, 20), &[1.0, 0.0]),
        known(1, &range(20, 40), &[0.0, 1.0]),
    ];
    let now = vec![
        // 0 kept half of article 1 and took in article 8, which arrived: 25 segments, grown.
        found(0, &[range(0, 15), range(80, 90)].concat(), &[1.0, 0.0]),
        // 1 as it was.
        found(1, &range(20, 40), &[0.0, 1.0]),
        // A new id in article 7, there at the previous run but in no episode: found.
        found(2, &range(70, 80), &[0.6, 0.8]),
        // A new id in article 9, which arrived: new.
        found(3, &range(90, 100), &[-0.6, 0.8]),
        // A new id in articles 4, 5 (there before) and 10 (arrived): old articles
        // regrouped with one of today's, mostly old: found, not new (issue 63).
        found(
            4,
            &[range(45, 50), range(55, 60), range(100, 110)].concat(),
            &[-0.8, -0.6],
        ),
        // A new id in articles 6 (there before), 11 and 12 (arrived): mostly today's: new.
        found(5, &[range(60, 62), range(110, 130)].concat(), &[0.8, -0.6]),
    ];
    let arrived: BTreeSet<u64> = [8, 9, 10, 11, 12].into();
    let m = match_event(&STAMP, "e", prev, Some(now), Some(&arrived));
    let got: Vec<(u32, String, Option<u32>, u32)> = m
        .lineage
        .iter()
        .map(|r| {
            (
                r.stable_id,
                r.status.clone(),
                r.new_articles,
                r.joined_articles,
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (0, "grown".into(), Some(1), 0),
            (1, "continued".into(), Some(0), 0),
            (2, "found".into(), Some(0), 1),
            (3, "new".into(), Some(1), 0),
            (4, "found".into(), Some(1), 2),
            (5, "new".into(), Some(2), 1),
        ]
    );
    // At a first run every article arrived: every episode is new.
    let first = Stamp {
        previous: None,
        ..STAMP
    };
    let all: BTreeSet<u64> = (0..10).collect();
    let m = match_event(
        &first,
        "e",
        Vec::new(),
        Some(vec![found(0, &[1], &[])]),
        Some(&all),
    );
    assert_eq!(m.lineage[0].status, "new");
    assert_eq!(m.lineage[0].new_articles, Some(1));
}

#[test]
fn a_failed_event_keeps_its_state_and_a_removed_one_ends() {
    let prev = vec![known(0, &range(0, 10), &[1.0, 0.0])];
    let failed = match_event(&STAMP, "e", prev.clone(), None, None);
    assert!(failed.lineage.is_empty());
    assert_eq!(failed.state, prev);
    let removed = match_event(&STAMP, "e", prev, Some(Vec::new()), None);
    assert_eq!(removed.lineage[0].status, "ended");
    assert!(!removed.state[0].live());
    // The first run: ids are the episode ids.
    let first = Stamp {
        previous: None,
        ..STAMP
    };
    let m = match_event(
        &first,
        "e",
        Vec::new(),
        Some(vec![found(0, &[1], &[]), found(1, &[2], &[])]),
        None,
    );
    assert_eq!(
        statuses(&m),
        vec![
            (0, Some(0), "new".into(), vec![], None),
            (1, Some(1), "new".into(), vec![], None),
        ]
    );
    assert_eq!(m.lineage[0].previous_run, None);
}
