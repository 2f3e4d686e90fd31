//! Ids that follow their episodes: kept over re-runs and layouts, `new` and `ended` told.

use super::*;

#[test]
fn a_re_run_keeps_the_ids_of_episodes_whose_segments_did_not_change() {
    let dir = scratch();
    let corpus = corpus_with_ids(dir.path(), 4, 12);
    let out = dir.path().join("out");
    first_run_then_the_same_corpus_again(&corpus, &out);
    let before_keys = episode_keys(&corpus, &out);
    let before_ids = stable_ids(&out);

    // New articles, published first, in one event: every doc_id of that event shifts (a
    // re-import with more articles), and the other events are as they were.
    let changed = "synth_event_001";
    // And in another event, the same articles at other places (an import that numbered them
    // otherwise): recomputed, and its episodes are the same sets of segments under new doc_ids.
    let shifted = "synth_event_003";
    add_and_renumber_articles(&corpus, changed, shifted);
    ok(run_at(&corpus, &out, "2024-05-03", &[], &[]));
    let after_keys = episode_keys(&corpus, &out);
    let after_ids = stable_ids(&out);

    // Every episode whose segments are the same set keeps its id (matched by keys, whatever its
    // episode_id now); there are such episodes in the changed event too.
    let mut kept_in_shifted = 0;
    let mut kept = 0;
    for (now, keys) in &after_keys {
        let same = before_keys
            .iter()
            .find(|(was, k)| was.0 == now.0 && *k == keys);
        if let Some((was, _)) = same {
            assert_eq!(
                after_ids[now], before_ids[was],
                "{now:?}: the same segments as {was:?}, another id"
            );
            kept += 1;
            kept_in_shifted += usize::from(now.0 == shifted);
        }
    }
    assert!(kept > 0);
    assert!(
        kept_in_shifted > 0,
        "no episode of {shifted} kept its segments: the test shows nothing"
    );
    check_the_third_run_s_lineage(&out, changed, shifted);
    check_tables_carry_lineage_ids(&out);
    check_phases(&out);
    // A re-run with nothing new keeps the report's marks of the run that changed something.
    let marks = |name: &str| {
        let html = report_html(dir.path(), &out, &corpus, name);
        html.split("<span class=\"change ")
            .skip(1)
            .map(|m| m.split("</span>").next().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    let before = marks("run3.html");
    assert!(
        !before.is_empty(),
        "run 3 marks nothing: the check shows nothing"
    );
    ok(run_at(&corpus, &out, "2024-05-04", &[], &[]));
    assert!(lineage(&out).iter().all(|r| r.status == "continued"));
    assert_eq!(marks("run4.html"), before);
    // The per-run history is kept: four runs, queryable together.
    let history: Vec<String> = files_in(&out.join("history"));
    assert_eq!(
        history,
        [
            "000001.parquet",
            "000002.parquet",
            "000003.parquet",
            "000004.parquet"
        ]
    );
}

/// Runs 1 and 2 of `corpus` into `out`: every episode new, then every one continued, same ids.
fn first_run_then_the_same_corpus_again(corpus: &Path, out: &Path) {
    ok(run_at(corpus, out, "2024-05-01", &[], &[]));
    let first = lineage(out);
    assert!(!first.is_empty());
    assert!(first.iter().all(|r| r.status == "new" && r.run == 1));
    assert!(first
        .iter()
        .all(|r| r.previous_run.is_none() && r.episode_id == Some(r.stable_id)));
    // At a first run every article arrived.
    assert!(first
        .iter()
        .all(|r| r.new_articles == Some(r.n_articles) && r.joined_articles == 0));

    // The same corpus again: no id changes, everything continued.
    ok(run_at(corpus, out, "2024-05-02", &[], &[]));
    let again = lineage(out);
    assert_eq!(again.len(), first.len());
    for (a, b) in first.iter().zip(&again) {
        assert_eq!((a.stable_id, a.episode_id), (b.stable_id, b.episode_id));
        assert_eq!(b.status, "continued", "{b:?}");
        assert_eq!((b.run, b.previous_run), (2, Some(1)));
        // Nothing arrived (issue 46 item 6: it counted articles newly assigned).
        assert_eq!((b.new_articles, b.joined_articles), (Some(0), 0), "{b:?}");
    }
}

/// Rewrites `corpus` with two new articles first in `changed` and the doc_ids of `shifted` moved.
fn add_and_renumber_articles(corpus: &Path, changed: &str, shifted: &str) {
    let mut segments: Vec<Segment> = read_rows(corpus);
    let added: Vec<Segment> = segments
        .iter()
        .filter(|s| s.key_event == "synth_event_002" && s.doc_id < 2)
        .map(|s| Segment {
            key_event: changed.into(),
            source_id: Some(format!("https://example.org/new/{}", s.doc_id)),
            ..s.clone()
        })
        .collect();
    for s in segments.iter_mut().filter(|s| s.key_event == changed) {
        s.doc_id += 2;
    }
    for s in segments.iter_mut().filter(|s| s.key_event == shifted) {
        s.doc_id += 3;
    }
    segments.extend(added);
    segments.sort_by(|a, b| {
        (&a.key_event, a.doc_id, a.seg_idx).cmp(&(&b.key_event, b.doc_id, b.seg_idx))
    });
    block_on(loc(corpus).write_table(&segments)).unwrap();
}

/// Run 3's lineage: only `changed` and `shifted` computed, and the arrivals counted in `changed`.
fn check_the_third_run_s_lineage(out: &Path, changed: &str, shifted: &str) {
    let rows = lineage(out);
    assert!(rows.iter().all(|r| r.run == 3 && r.previous_run == Some(2)));
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("run.json")).unwrap()).unwrap();
    let computed: Vec<&str> = report["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["checkpoint"] == "computed")
        .map(|e| e["key_event"].as_str().unwrap())
        .collect();
    assert_eq!(computed, [changed, shifted]);
    for r in rows.iter().filter(|r| r.key_event != changed) {
        assert_eq!(r.status, "continued", "{r:?}");
        assert_eq!(r.new_articles, Some(0), "{r:?}");
    }
    // The two articles that arrived in `changed` are counted in the episodes they went to (an
    // article can tell several), and only there.
    let arrived: Vec<u32> = rows
        .iter()
        .filter(|r| r.key_event == changed)
        .filter_map(|r| r.new_articles)
        .collect();
    assert!(
        arrived.iter().all(|&n| n <= 2) && arrived.iter().sum::<u32>() > 0,
        "{arrived:?}"
    );
    for r in rows
        .iter()
        .filter(|r| r.status == "new" || r.status == "found")
    {
        assert_eq!(r.status == "new", r.new_articles > Some(0), "{r:?}");
    }
}

/// The episodes, assignments and episode articles in `out` carry lineage.parquet's ids and status.
fn check_tables_carry_lineage_ids(out: &Path) {
    // The tables a user reads carry the same stable ids as lineage.parquet (issue 46 item 4),
    // and after this run some differ from the episode_id (the ids moved).
    let ids = stable_ids(out);
    let episodes: Vec<Episode> = read_rows(out);
    let assignments: Vec<Assignment> = read_rows(out);
    let articles: Vec<epimine::tables::EpisodeArticle> = read_rows(out);
    assert!(!episodes.is_empty() && !assignments.is_empty() && !articles.is_empty());
    // And the episode's status in this run, as lineage.parquet has it.
    let statuses: BTreeMap<(String, u32), String> = lineage(out)
        .into_iter()
        .filter_map(|r| Some(((r.key_event, r.episode_id?), r.status)))
        .collect();
    for (key_event, episode_id, stable_id, status) in episodes
        .iter()
        .map(|e| (&e.key_event, e.episode_id, e.stable_id, &e.status))
        .chain(
            assignments
                .iter()
                .map(|a| (&a.key_event, a.episode_id, a.stable_id, &a.status)),
        )
        .chain(
            articles
                .iter()
                .map(|a| (&a.key_event, a.episode_id, a.stable_id, &a.status)),
        )
    {
        let key = (key_event.clone(), episode_id);
        assert_eq!(stable_id, Some(ids[&key]), "{key_event} {episode_id}");
        assert_eq!(
            status.as_ref(),
            Some(&statuses[&key]),
            "{key_event} {episode_id}"
        );
    }
    assert!(
        episodes
            .iter()
            .any(|e| e.status.as_deref() != Some("continued")),
        "every episode continued: the status check shows little"
    );
    assert!(
        episodes.iter().any(|e| e.stable_id != Some(e.episode_id)),
        "no id moved: the check shows nothing"
    );
}

/// Each episode's phase in `out` is an episode that heads itself, with the lowest stable id.
fn check_phases(out: &Path) {
    let episodes: Vec<Episode> = read_rows(out);
    // Each episode's phase is an episode of its event and trial at or before it, whose phase
    // is itself, and the phase's stable id is the lowest stable id of its episodes.
    let by_id: BTreeMap<(&str, u32, u32), &Episode> = episodes
        .iter()
        .map(|e| ((e.key_event.as_str(), e.trial, e.episode_id), e))
        .collect();
    for e in &episodes {
        let head = by_id[&(e.key_event.as_str(), e.trial, e.phase_id)];
        assert!(
            e.phase_id <= e.episode_id && head.phase_id == e.phase_id,
            "{e:?}"
        );
        let lowest = episodes
            .iter()
            .filter(|o| (&o.key_event, o.trial, o.phase_id) == (&e.key_event, e.trial, e.phase_id))
            .filter_map(|o| o.stable_id)
            .min();
        assert_eq!(e.phase_stable_id, lowest, "{e:?}");
    }
}

/// `epimine report` of `out` into `dir/name`; returns the page.
fn report_html(dir: &Path, out: &Path, corpus: &Path, name: &str) -> String {
    let page = dir.join(name);
    ok(epimine(&[
        "report",
        "--run",
        s(out),
        "--corpus",
        s(corpus),
        "--out",
        s(&page),
    ]));
    std::fs::read_to_string(&page).unwrap()
}

/// [`run_with_model`] with `model`, today's articles judged on their own (`episodes.novelty`).
fn novelty_run(model: &str, corpus: &Path, out: &Path, time: &str) -> Output {
    // As jobs/follow.toml follows a story: today's articles judged on their own (without it, the
    // planted articles join an episode of mostly older ones, which is then `found`, not `new`).
    run_with_model(
        model,
        corpus,
        out,
        time,
        &["--set", "episodes.novelty=true"],
        &[],
    )
}

/// With the real sentence encoder: the tiny random-weight one gives every episode nearly the
/// same vector and re-clusters a changed event from scratch, so no episode of it is the planted
/// story.
#[test]
fn a_planted_episode_shows_as_new_and_one_whose_segments_are_gone_as_ended() {
    let Some(model) = minilm_dir() else {
        return;
    };
    let model = s(&model).to_string();
    let dir = scratch();
    let corpus = corpus_with_ids(dir.path(), 3, 30);
    let out = dir.path().join("out");
    ok(novelty_run(&model, &corpus, &out, "2024-05-01"));
    let first_keys = episode_keys(&corpus, &out);
    let first_ids = stable_ids(&out);

    // Planted into synth_event_000: the articles of one episode of synth_event_002 (its own
    // made-up vocabulary), as new articles. Removed from synth_event_001: every segment of one of
    // its episodes.
    let target = "synth_event_000";
    let gone_event = "synth_event_001";
    let (planted_texts, gone_episode, gone_keys) =
        plant_one_and_remove_another(&corpus, &out, &first_keys, target, gone_event);
    ok(novelty_run(&model, &corpus, &out, "2024-05-02"));
    let rows = lineage(&out);

    let (holder, news) =
        the_new_episode_of_the_planted(&corpus, &out, &rows, target, &planted_texts);
    // The report marks it, and the episodes that grew.
    let html = report_html(dir.path(), &out, &corpus, "report.html");
    assert!(
        html.contains(&format!(
            "<span class=\"change new\" title=\"id #{} across runs (lineage.parquet)\">new since run 1</span>",
            holder.stable_id
        )),
        "the report does not mark the new episode"
    );
    let grown = rows.iter().filter(|r| r.status == "grown").count();
    assert_eq!(html.matches("class=\"change grown\"").count(), grown);
    // New ids are fresh: above every id the event had.
    let max_before = first_ids
        .iter()
        .filter(|(k, _)| k.0 == target)
        .map(|(_, id)| *id)
        .max()
        .unwrap();
    assert!(news.iter().all(|r| r.stable_id > max_before));

    // The episode whose segments are gone: ended, not silently dropped; its id is not given again.
    let gone_id = first_ids[&(gone_event.to_string(), gone_episode)];
    let row = rows
        .iter()
        .find(|r| r.key_event == gone_event && r.stable_id == gone_id)
        .expect("a row for the episode whose segments are gone");
    assert_eq!(row.status, "ended", "{row:?}");
    assert_eq!(row.episode_id, None);
    assert_eq!(row.lost_segments as usize, gone_keys.len());
    // The report says so (issue 46 item 5).
    assert!(
        html.contains("Ended since run 1")
            && html.contains(&format!("<span class=\"change ended\">#{gone_id}</span>")),
        "the report does not show the ended episode"
    );
    assert_eq!(
        rows.iter()
            .filter(|r| r.key_event == gone_event && r.stable_id == gone_id)
            .count(),
        1
    );
    check_today_s_developments(&out, &html, &holder, (gone_event, gone_id));
    a_whole_event_removed_ends_all_its_episodes(&model, &corpus, &out);
}

/// Plants synth_event_002's episode into `target`, removes `gone_event`'s largest; says which.
fn plant_one_and_remove_another(
    corpus: &Path,
    out: &Path,
    first_keys: &BTreeMap<(String, u32), BTreeSet<u64>>,
    target: &str,
    gone_event: &str,
) -> (BTreeSet<String>, u32, BTreeSet<u64>) {
    let mut segments: Vec<Segment> = read_rows(corpus);
    let planted_texts = plant_episode(corpus, "synth_event_002", target, &mut segments);
    // The episode of synth_event_001 with the most segments loses every one of them.
    let (gone_episode, gone_keys) = first_keys
        .iter()
        .filter(|(k, _)| k.0 == gone_event)
        .max_by_key(|(_, keys)| keys.len())
        .map(|(k, keys)| (k.1, keys.clone()))
        .unwrap();
    let gone_assigned: BTreeSet<(u32, u32)> = read_rows::<Assignment>(out)
        .into_iter()
        .filter(|a| a.key_event == gone_event && a.trial == 0 && a.episode_id == gone_episode)
        .map(|a| (a.doc_id, a.seg_idx))
        .collect();
    assert_eq!(gone_assigned.len(), gone_keys.len());
    segments
        .retain(|s| !(s.key_event == gone_event && gone_assigned.contains(&(s.doc_id, s.seg_idx))));
    write_renumbered(corpus, segments);
    (planted_texts, gone_episode, gone_keys)
}

/// The episode of `target` holding most `planted` segments is `new`; returns it and the new rows.
fn the_new_episode_of_the_planted(
    corpus: &Path,
    out: &Path,
    rows: &[Lineage],
    target: &str,
    planted_texts: &BTreeSet<String>,
) -> (Lineage, Vec<Lineage>) {
    // The planted episode: a `new` row whose segments are mostly the planted ones.
    let text_of = texts_of(corpus, target);
    let assignments: Vec<Assignment> = read_rows(out);
    let planted_of = |mine: &[&Assignment]| {
        mine.iter()
            .filter(|a| planted_texts.contains(text_of[&(a.doc_id, a.seg_idx)].as_str()))
            .count()
    };
    let mine = |r: &Lineage| -> Vec<&Assignment> {
        assignments
            .iter()
            .filter(|a| a.key_event == target && a.trial == 0 && Some(a.episode_id) == r.episode_id)
            .collect()
    };
    let diagnosis: Vec<String> = rows
        .iter()
        .filter(|r| r.key_event == target)
        .map(|r| {
            let mine = mine(r);
            format!(
                "{} {} {:?} from {:?}: {} segments, {} planted, {} new",
                r.stable_id,
                r.status,
                r.episode_id,
                r.from_ids,
                mine.len(),
                planted_of(&mine),
                r.new_segments
            )
        })
        .collect();
    let news: Vec<Lineage> = rows
        .iter()
        .filter(|r| r.key_event == target && r.status == "new")
        .cloned()
        .collect();
    assert!(
        !news.is_empty(),
        "no new episode in {target} ({} planted segments): {diagnosis:#?}",
        planted_texts.len()
    );
    // The episode that holds most of the planted segments (as the replay counts a gold episode
    // that begins after a cut) is a new one: a fresh id, every segment new to it, from no one.
    let planted_in = |r: &Lineage| planted_of(&mine(r));
    let holder = rows
        .iter()
        .filter(|r| r.key_event == target && r.episode_id.is_some())
        .max_by_key(|r| planted_in(r))
        .unwrap();
    assert!(
        planted_in(holder) * 2 > planted_texts.len() / 3,
        "the planted segments went nowhere: {diagnosis:#?}"
    );
    assert!(
        holder.status == "new"
            && holder.from_ids.is_empty()
            && holder.new_segments == holder.n_segments,
        "{} planted segments; {diagnosis:#?}",
        planted_texts.len()
    );
    (holder.clone(), news)
}

/// developments.parquet, run.json and the report `html` list the `new` episode and the `gone` one.
fn check_today_s_developments(out: &Path, html: &str, new: &Lineage, gone: (&str, u32)) {
    let (gone_event, gone_id) = gone;
    // Today's developments (issue 63): developments.parquet, run.json and the report list the
    // new episode with its articles of today and the ended one; the events that did not change
    // have none.
    let developments: Vec<Development> = read_rows(out);
    let new_row = developments
        .iter()
        .find(|d| d.stable_id == new.stable_id && d.key_event == new.key_event)
        .expect("the new episode among the developments");
    assert_eq!(new_row.status, "new");
    assert_eq!(new_row.today_articles, Some(new.n_articles));
    assert!(developments
        .iter()
        .any(|d| d.key_event == gone_event && d.stable_id == gone_id && d.status == "ended"));
    assert!(developments.iter().all(|d| d.key_event != "synth_event_002"
        && ["new", "grown", "split", "merged", "ended"].contains(&d.status.as_str())
        && (d.status != "grown" || d.today_articles > Some(0))));
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("run.json")).unwrap()).unwrap();
    let listed: Vec<Development> =
        serde_json::from_value(manifest["history"]["developments"].clone()).unwrap();
    assert_eq!(listed, developments);
    assert!(
        html.contains("<section id=\"developments\">"),
        "the report does not open with them"
    );
    assert!(html.contains(&format!(
        "href=\"#ev-0-e{}\">synth_event_000 · #{}",
        new.episode_id.unwrap(),
        new.stable_id
    )));
}

/// synth_event_002 removed from `corpus`: runs 3 and 4 into `out` end its episodes, then drop them.
fn a_whole_event_removed_ends_all_its_episodes(model: &str, corpus: &Path, out: &Path) {
    // A whole event removed: every one of its episodes ended.
    let mut segs: Vec<Segment> = read_rows(corpus);
    segs.retain(|s| s.key_event != "synth_event_002");
    block_on(loc(corpus).write_table(&segs)).unwrap();
    let said = ok(novelty_run(model, corpus, out, "2024-05-03"));
    let said = String::from_utf8_lossy(&said.stdout).to_string();
    // The run's last lines say what happened today.
    assert!(
        said.contains("today: ") && said.contains("/developments.parquet"),
        "{said}"
    );
    let rows = lineage(out);
    // The run's last lines name each ended episode.
    for r in rows.iter().filter(|r| r.status == "ended").take(10) {
        assert!(
            said.contains(&format!("ended: {} #{} \"", r.key_event, r.stable_id)),
            "{said}"
        );
    }
    let ended: Vec<&Lineage> = rows
        .iter()
        .filter(|r| r.key_event == "synth_event_002")
        .collect();
    assert!(!ended.is_empty());
    assert!(ended
        .iter()
        .all(|r| r.status == "ended" && r.episode_id.is_none()));
    // And it stays ended (no row) once ended: the next run says nothing new about it.
    ok(novelty_run(model, corpus, out, "2024-05-04"));
    assert!(lineage(out)
        .iter()
        .all(|r| r.key_event != "synth_event_002"));
}

#[test]
fn the_ids_are_the_same_for_any_layout() {
    let dir = scratch();
    let corpus = corpus_with_ids(dir.path(), 4, 10);
    let mut outs = Vec::new();
    for (name, extra) in [("w1", vec!["-w", "1"]), ("w3", vec!["-w", "3"])] {
        let out = dir.path().join(name);
        ok(run_at(&corpus, &out, "2024-05-01", &extra, &[]));
        outs.push(out);
    }
    // Two processes.
    let out = dir.path().join("p2");
    let hosts = hostfile(dir.path(), 2);
    let children: Vec<_> = (0..2)
        .map(|p| {
            let mut cmd = synth_run(&corpus, &out);
            cmd.args([
                "--run-time",
                "2024-05-01",
                "-n",
                "2",
                "-p",
                &p.to_string(),
                "--hostfile",
                s(&hosts),
            ])
            .env("RUST_LOG", "warn")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
        })
        .collect();
    for c in children {
        ok(c.wait_with_output().unwrap());
    }
    outs.push(out);
    let want = history_files(&outs[0]);
    for o in &outs[1..] {
        assert_eq!(history_files(o), want, "{}", o.display());
        assert_eq!(
            std::fs::read(o.join("_identity/000001.parquet")).unwrap(),
            std::fs::read(outs[0].join("_identity/000001.parquet")).unwrap()
        );
    }
}
