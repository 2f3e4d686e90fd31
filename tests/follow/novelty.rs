//! The novelty view: today's development told apart, the rest as it was.

use super::*;

#[test]
fn the_novelty_view_tells_todays_development_apart_and_leaves_the_rest_as_it_was() {
    let Some(model) = minilm_dir() else {
        return;
    };
    let model = s(&model).to_string();
    let dir = scratch();
    let corpus = corpus_with_ids(dir.path(), 3, 30);
    let (plain, novel, novel_w1) = (
        dir.path().join("plain"),
        dir.path().join("novel"),
        dir.path().join("novel-w1"),
    );
    let novelty = ["--set", "episodes.novelty=true"];
    ok(run_with_model(
        &model,
        &corpus,
        &plain,
        "2024-05-01",
        &[],
        &[],
    ));
    ok(run_with_model(
        &model,
        &corpus,
        &novel,
        "2024-05-01",
        &novelty,
        &[],
    ));
    // A first run: nothing arrived since a previous one, the same tables.
    assert_same_tables(&plain, &novel, "a first run with the novelty view");
    copy_dir(&novel, &novel_w1);

    // Day 2: one of synth_event_002's episodes arrives in synth_event_000.
    let target = "synth_event_000";
    let mut segments: Vec<Segment> = read_rows(&corpus);
    let planted = plant_episode(&corpus, "synth_event_002", target, &mut segments);
    write_renumbered(&corpus, segments);
    ok(run_with_model(
        &model,
        &corpus,
        &plain,
        "2024-05-02",
        &[],
        &[],
    ));
    let said = ok(run_with_model(
        &model,
        &corpus,
        &novel,
        "2024-05-02",
        &[&novelty[..], &["-w", "3"]].concat(),
        &[],
    ));
    ok(run_with_model(
        &model,
        &corpus,
        &novel_w1,
        "2024-05-02",
        &[&novelty[..], &["-w", "1"]].concat(),
        &[],
    ));
    // The same bytes for any layout.
    assert_same_tables(
        &novel,
        &novel_w1,
        "the novelty view with 3 workers and with 1",
    );

    // The events that got nothing new: as the plain run has them.
    assert_eq!(
        rows_outside::<Episode>(&novel, target, |r| &r.key_event),
        rows_outside::<Episode>(&plain, target, |r| &r.key_event)
    );
    assert_eq!(
        rows_outside::<Assignment>(&novel, target, |r| &r.key_event),
        rows_outside::<Assignment>(&plain, target, |r| &r.key_event)
    );

    // In the target: the episode holding most of the planted segments is mostly them, holds
    // most of them, is `new`, and is listed among today's developments with its articles.
    let said = String::from_utf8_lossy(&said.stdout).to_string();
    assert_planted_episode_is_new(&corpus, &novel, target, &planted, &said);
}

/// The episode of `target` holding most of the `planted` texts is mostly them and holds most of
/// them, is `new`, is among today's developments with its articles, and the run `said` so.
fn assert_planted_episode_is_new(
    corpus: &Path,
    novel: &Path,
    target: &str,
    planted: &BTreeSet<String>,
    said: &str,
) {
    let text_of = texts_of(corpus, target);
    let assignments: Vec<Assignment> = read_rows(novel);
    let mut held: BTreeMap<u32, (usize, usize)> = BTreeMap::new();
    for a in assignments.iter().filter(|a| a.key_event == target) {
        let e = held.entry(a.episode_id).or_default();
        e.0 += usize::from(planted.contains(text_of[&(a.doc_id, a.seg_idx)].as_str()));
        e.1 += 1;
    }
    let (&holder, &(mine, size)) = held.iter().max_by_key(|(_, (n, _))| *n).unwrap();
    assert!(
        mine * 2 >= planted.len() && mine * 10 >= size * 8,
        "{mine} of {} planted in an episode of {size}: {held:?}",
        planted.len()
    );
    let episodes: Vec<Episode> = read_rows(novel);
    let row = episodes
        .iter()
        .find(|e| e.key_event == target && e.episode_id == holder)
        .unwrap();
    assert_eq!(row.status.as_deref(), Some("new"), "{row:?}");
    let developments: Vec<Development> = read_rows(novel);
    assert!(developments
        .iter()
        .any(|d| d.stable_id == row.stable_id.unwrap()
            && d.status == "new"
            && d.today_articles == Some(row.n_articles)));
    assert!(
        said.contains(&format!("  new: {target} #{} \"", row.stable_id.unwrap())),
        "{said}"
    );
}
