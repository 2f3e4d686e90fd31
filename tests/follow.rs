//! Following events from run to run (issue 39): episodes keep their ids across runs of the same
//! `--out` while they are the same episodes, a planted episode shows as new, an episode whose
//! segments are gone is marked ended, the history survives a killed run, and
//! `import --articles --append` adds a feed's articles without touching the segments there.
//! Real runs of the binary (the tiny encoder), real kills (`EPIMINE_FAULT`).

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Output;

use crate::util::*;
use epimine::storage::Location;
use epimine::tables::{Assignment, Development, Episode, Label, Lineage, Segment};

/// `epimine run` at `time` (`--run-time`), extra flags, environment, with the tiny encoder.
fn run_at(corpus: &Path, out: &Path, time: &str, extra: &[&str], env: &[(&str, &str)]) -> Output {
    run_with_model(&tiny_model(), corpus, out, time, extra, env)
}

/// [`run_at`] with the encoder `model`.
fn run_with_model(
    model: &str,
    corpus: &Path,
    out: &Path,
    time: &str,
    extra: &[&str],
    env: &[(&str, &str)],
) -> Output {
    let mut cmd = synth_run_with(corpus, s(out), model);
    cmd.args(["--run-time", time])
        .args(extra)
        .env("RUST_LOG", "warn")
        .env_remove("EPIMINE_FAULT");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("epimine runs")
}

fn loc(p: &Path) -> Location {
    Location::parse(s(p), false).unwrap()
}

fn lineage(out: &Path) -> Vec<Lineage> {
    read_rows(out)
}

/// A synthetic corpus whose articles carry ids (`import --articles` gives them), so that their
/// segments' keys follow the ids.
fn corpus_with_ids(dir: &Path, events: usize, docs: usize) -> std::path::PathBuf {
    let corpus = synth(dir, events, docs);
    let mut segments: Vec<Segment> = read_rows(&corpus);
    for s in &mut segments {
        s.source_id = Some(format!("https://example.org/{}/{}", s.key_event, s.doc_id));
    }
    block_on(loc(&corpus).write_table(&segments)).unwrap();
    corpus
}

/// Per (key event, episode_id) of trial 0: the stable keys of its assigned segments.
fn episode_keys(corpus: &Path, out: &Path) -> BTreeMap<(String, u32), BTreeSet<u64>> {
    let mut segments: Vec<Segment> =
        block_on(epimine::corpus::read_segments(&loc(corpus))).unwrap();
    segments.sort_by(|a, b| {
        (&a.key_event, a.doc_id, a.seg_idx).cmp(&(&b.key_event, b.doc_id, b.seg_idx))
    });
    let mut key_of: BTreeMap<(String, u32, u32), u64> = BTreeMap::new();
    let mut start = 0;
    while start < segments.len() {
        let end = segments[start..]
            .iter()
            .position(|s| s.key_event != segments[start].key_event)
            .map_or(segments.len(), |n| start + n);
        let event = &segments[start..end];
        for (s, (k, _)) in event.iter().zip(epimine::lineage::segment_keys(event)) {
            key_of.insert((s.key_event.clone(), s.doc_id, s.seg_idx), k);
        }
        start = end;
    }
    let mut out_keys: BTreeMap<(String, u32), BTreeSet<u64>> = BTreeMap::new();
    for a in read_rows::<Assignment>(out)
        .into_iter()
        .filter(|a| a.trial == 0)
    {
        out_keys
            .entry((a.key_event.clone(), a.episode_id))
            .or_default()
            .insert(key_of[&(a.key_event.clone(), a.doc_id, a.seg_idx)]);
    }
    out_keys
}

/// Per (key event, episode_id): its stable id.
fn stable_ids(out: &Path) -> BTreeMap<(String, u32), u32> {
    lineage(out)
        .into_iter()
        .filter(|r| r.trial == 0)
        .filter_map(|r| r.episode_id.map(|e| ((r.key_event, e), r.stable_id)))
        .collect()
}

/// Plants into `target` the articles of the largest gold episode of `from` (its own made-up
/// vocabulary) as new articles with their own ids, appended to `segments`; returns their texts.
fn plant_episode(
    corpus: &Path,
    from: &str,
    target: &str,
    segments: &mut Vec<Segment>,
) -> BTreeSet<String> {
    let labels: Vec<Label> = read_rows(corpus);
    let mut sizes: BTreeMap<&str, usize> = BTreeMap::new();
    for l in labels.iter().filter(|l| l.key_event == from) {
        if l.label != "M" && l.label != "X" {
            *sizes.entry(l.label.as_str()).or_default() += 1;
        }
    }
    let planted_label = sizes.iter().max_by_key(|(_, n)| **n).unwrap().0.to_string();
    let planted: BTreeSet<(u32, u32)> = labels
        .iter()
        .filter(|l| l.key_event == from && l.label == planted_label)
        .map(|l| (l.doc_id, l.seg_idx))
        .collect();
    assert!(planted.len() >= 5);
    let next_doc = segments
        .iter()
        .filter(|s| s.key_event == target)
        .map(|s| s.doc_id + 1)
        .max()
        .unwrap();
    let mut by_doc: BTreeMap<u32, Vec<Segment>> = BTreeMap::new();
    for s in segments
        .iter()
        .filter(|s| s.key_event == from && planted.contains(&(s.doc_id, s.seg_idx)))
    {
        by_doc.entry(s.doc_id).or_default().push(s.clone());
    }
    let texts = by_doc.values().flatten().map(|s| s.text.clone()).collect();
    for (n, (doc, segs)) in by_doc.into_iter().enumerate() {
        for (i, s) in segs.into_iter().enumerate() {
            segments.push(Segment {
                key_event: target.into(),
                doc_id: next_doc + n as u32,
                seg_idx: i as u32,
                source_id: Some(format!("https://example.org/planted/{doc}")),
                ..s
            });
        }
    }
    texts
}

/// Each segment's text of `event` in `corpus`, by (doc_id, seg_idx).
fn texts_of(corpus: &Path, event: &str) -> BTreeMap<(u32, u32), String> {
    read_rows::<Segment>(corpus)
        .into_iter()
        .filter(|s| s.key_event == event)
        .map(|s| ((s.doc_id, s.seg_idx), s.text))
        .collect()
}

/// Writes `segments` as the corpus's, `seg_idx` dense within each article, in corpus order.
fn write_renumbered(corpus: &Path, segments: Vec<Segment>) {
    let mut renumbered: Vec<Segment> = Vec::new();
    for s in segments {
        let idx = renumbered
            .iter()
            .rev()
            .take_while(|p| p.key_event == s.key_event && p.doc_id == s.doc_id)
            .count() as u32;
        renumbered.push(Segment { seg_idx: idx, ..s });
    }
    renumbered.sort_by(|a, b| {
        (&a.key_event, a.doc_id, a.seg_idx).cmp(&(&b.key_event, b.doc_id, b.seg_idx))
    });
    block_on(loc(corpus).write_table(&renumbered)).unwrap();
}

#[test]
fn a_re_run_keeps_the_ids_of_episodes_whose_segments_did_not_change() {
    let dir = scratch();
    let corpus = corpus_with_ids(dir.path(), 4, 12);
    let out = dir.path().join("out");
    ok(run_at(&corpus, &out, "2024-05-01", &[], &[]));
    let first = lineage(&out);
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
    ok(run_at(&corpus, &out, "2024-05-02", &[], &[]));
    let again = lineage(&out);
    assert_eq!(again.len(), first.len());
    for (a, b) in first.iter().zip(&again) {
        assert_eq!((a.stable_id, a.episode_id), (b.stable_id, b.episode_id));
        assert_eq!(b.status, "continued", "{b:?}");
        assert_eq!((b.run, b.previous_run), (2, Some(1)));
        // Nothing arrived (issue 46 item 6: it counted articles newly assigned).
        assert_eq!((b.new_articles, b.joined_articles), (Some(0), 0), "{b:?}");
    }
    let before_keys = episode_keys(&corpus, &out);
    let before_ids = stable_ids(&out);

    // New articles, published first, in one event: every doc_id of that event shifts (a
    // re-import with more articles), and the other events are as they were.
    let changed = "synth_event_001";
    let mut segments: Vec<Segment> = read_rows(&corpus);
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
    // And in another event, the same articles at other places (an import that numbered them
    // otherwise): recomputed, and its episodes are the same sets of segments under new doc_ids.
    let shifted = "synth_event_003";
    for s in segments.iter_mut().filter(|s| s.key_event == shifted) {
        s.doc_id += 3;
    }
    segments.extend(added);
    segments.sort_by(|a, b| {
        (&a.key_event, a.doc_id, a.seg_idx).cmp(&(&b.key_event, b.doc_id, b.seg_idx))
    });
    block_on(loc(&corpus).write_table(&segments)).unwrap();
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
    let rows = lineage(&out);
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
    // The tables a user reads carry the same stable ids as lineage.parquet (issue 46 item 4),
    // and after this run some differ from the episode_id (the ids moved).
    let ids = stable_ids(&out);
    let episodes: Vec<epimine::tables::Episode> = read_rows(&out);
    let assignments: Vec<epimine::tables::Assignment> = read_rows(&out);
    let articles: Vec<epimine::tables::EpisodeArticle> = read_rows(&out);
    assert!(!episodes.is_empty() && !assignments.is_empty() && !articles.is_empty());
    // And the episode's status in this run, as lineage.parquet has it.
    let statuses: BTreeMap<(String, u32), String> = lineage(&out)
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
    // Each episode's phase is an episode of its event and trial at or before it, whose phase
    // is itself, and the phase's stable id is the lowest stable id of its episodes.
    let by_id: BTreeMap<(&str, u32, u32), &epimine::tables::Episode> = episodes
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
    // A re-run with nothing new keeps the report's marks of the run that changed something.
    let marks = |name: &str| {
        let page = dir.path().join(name);
        ok(epimine(&[
            "report",
            "--run",
            s(&out),
            "--corpus",
            s(&corpus),
            "--out",
            s(&page),
        ]));
        let html = std::fs::read_to_string(&page).unwrap();
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

/// With the real sentence encoder: the tiny random-weight one gives every episode nearly the
/// same vector and re-clusters a changed event from scratch, so no episode of it is the planted
/// story.
#[test]
fn a_planted_episode_shows_as_new_and_one_whose_segments_are_gone_as_ended() {
    let Some(model) = minilm_dir() else {
        return;
    };
    let model = s(&model).to_string();
    // As jobs/follow.toml follows a story: today's articles judged on their own (without it, the
    // planted articles join an episode of mostly older ones, which is then `found`, not `new`).
    let run_at = |corpus: &Path, out: &Path, time: &str, extra: &[&str], env: &[(&str, &str)]| {
        let extra = [&["--set", "episodes.novelty=true"][..], extra].concat();
        run_with_model(&model, corpus, out, time, &extra, env)
    };
    let dir = scratch();
    let corpus = corpus_with_ids(dir.path(), 3, 30);
    let out = dir.path().join("out");
    ok(run_at(&corpus, &out, "2024-05-01", &[], &[]));
    let first_keys = episode_keys(&corpus, &out);
    let first_ids = stable_ids(&out);

    // Planted into synth_event_000: the articles of one episode of synth_event_002 (its own
    // made-up vocabulary), as new articles. Removed from synth_event_001: every segment of one of
    // its episodes.
    let target = "synth_event_000";
    let mut segments: Vec<Segment> = read_rows(&corpus);
    let planted_texts = plant_episode(&corpus, "synth_event_002", target, &mut segments);
    // The episode of synth_event_001 with the most segments loses every one of them.
    let gone_event = "synth_event_001";
    let (gone_episode, gone_keys) = first_keys
        .iter()
        .filter(|(k, _)| k.0 == gone_event)
        .max_by_key(|(_, keys)| keys.len())
        .map(|(k, keys)| (k.1, keys.clone()))
        .unwrap();
    let gone_assigned: BTreeSet<(u32, u32)> = read_rows::<Assignment>(&out)
        .into_iter()
        .filter(|a| a.key_event == gone_event && a.trial == 0 && a.episode_id == gone_episode)
        .map(|a| (a.doc_id, a.seg_idx))
        .collect();
    assert_eq!(gone_assigned.len(), gone_keys.len());
    segments
        .retain(|s| !(s.key_event == gone_event && gone_assigned.contains(&(s.doc_id, s.seg_idx))));
    write_renumbered(&corpus, segments);
    ok(run_at(&corpus, &out, "2024-05-02", &[], &[]));
    let rows = lineage(&out);

    // The planted episode: a `new` row whose segments are mostly the planted ones.
    let text_of = texts_of(&corpus, target);
    let assignments: Vec<Assignment> = read_rows(&out);
    let diagnosis: Vec<String> = rows
        .iter()
        .filter(|r| r.key_event == target)
        .map(|r| {
            let mine: Vec<&Assignment> = assignments
                .iter()
                .filter(|a| {
                    a.key_event == target && a.trial == 0 && Some(a.episode_id) == r.episode_id
                })
                .collect();
            let planted_n = mine
                .iter()
                .filter(|a| planted_texts.contains(text_of[&(a.doc_id, a.seg_idx)].as_str()))
                .count();
            format!(
                "{} {} {:?} from {:?}: {} segments, {planted_n} planted, {} new",
                r.stable_id,
                r.status,
                r.episode_id,
                r.from_ids,
                mine.len(),
                r.new_segments
            )
        })
        .collect();
    let news: Vec<&Lineage> = rows
        .iter()
        .filter(|r| r.key_event == target && r.status == "new")
        .collect();
    assert!(
        !news.is_empty(),
        "no new episode in {target} ({} planted segments): {diagnosis:#?}",
        planted_texts.len()
    );
    // The episode that holds most of the planted segments (as the replay counts a gold episode
    // that begins after a cut) is a new one: a fresh id, every segment new to it, from no one.
    let planted_in = |r: &Lineage| {
        assignments
            .iter()
            .filter(|a| a.key_event == target && a.trial == 0 && Some(a.episode_id) == r.episode_id)
            .filter(|a| planted_texts.contains(text_of[&(a.doc_id, a.seg_idx)].as_str()))
            .count()
    };
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
    // The report marks it, and the episodes that grew.
    let page = dir.path().join("report.html");
    epimine_ok(&[
        "report",
        "--run",
        s(&out),
        "--corpus",
        s(&corpus),
        "--out",
        s(&page),
    ]);
    let html = std::fs::read_to_string(&page).unwrap();
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

    // Today's developments (issue 63): developments.parquet, run.json and the report list the
    // new episode with its articles of today and the ended one; the events that did not change
    // have none.
    let developments: Vec<Development> = read_rows(&out);
    let new_row = developments
        .iter()
        .find(|d| d.stable_id == holder.stable_id && d.key_event == target)
        .expect("the new episode among the developments");
    assert_eq!(new_row.status, "new");
    assert_eq!(new_row.today_articles, Some(holder.n_articles));
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
        holder.episode_id.unwrap(),
        holder.stable_id
    )));

    // A whole event removed: every one of its episodes ended.
    let mut segs: Vec<Segment> = read_rows(&corpus);
    segs.retain(|s| s.key_event != "synth_event_002");
    block_on(loc(&corpus).write_table(&segs)).unwrap();
    let said = ok(run_at(&corpus, &out, "2024-05-03", &[], &[]));
    let said = String::from_utf8_lossy(&said.stdout).to_string();
    // The run's last lines say what happened today.
    assert!(
        said.contains("today: ") && said.contains("/developments.parquet"),
        "{said}"
    );
    let rows = lineage(&out);
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
    ok(run_at(&corpus, &out, "2024-05-04", &[], &[]));
    assert!(lineage(&out)
        .iter()
        .all(|r| r.key_event != "synth_event_002"));
}

fn history_files(out: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v = Vec::new();
    for name in files_in(&out.join("history")) {
        v.push((
            name.clone(),
            std::fs::read(out.join("history").join(&name)).unwrap(),
        ));
    }
    v.push((
        "lineage.parquet".into(),
        std::fs::read(out.join("lineage.parquet")).unwrap_or_default(),
    ));
    v
}

#[test]
fn the_history_survives_a_killed_run_whole_or_not_at_all() {
    let dir = scratch();
    let corpus = corpus_with_ids(dir.path(), 3, 10);
    let reference = dir.path().join("reference");
    ok(run_at(&corpus, &reference, "2024-05-01", &[], &[]));
    // A change in one event.
    let mut segments: Vec<Segment> = read_rows(&corpus);
    segments.retain(|s| !(s.key_event == "synth_event_000" && s.doc_id == 9));
    block_on(loc(&corpus).write_table(&segments)).unwrap();
    ok(run_at(&corpus, &reference, "2024-05-02", &[], &[]));
    let want = history_files(&reference);
    assert_eq!(want.len(), 3);

    // The same two runs, the second killed: at each table of the assembly (the state file, then
    // lineage.parquet), and after run.json before the history's head.
    // The assembly's writes, counted: the seven tables, then the history's state, its
    // articles and lineage.parquet (stopped after the state, and after lineage.parquet).
    // Then after the third file of the committed version is published (issue 64: committed,
    // its publication finished by the next run).
    for fault in ["assembly:8", "assembly:10", "publish:3", "history"] {
        let out = dir.path().join(format!("out-{}", fault.replace(':', "-")));
        // Run 1 on the same first corpus (synth gives the same bytes), then the same change.
        let original = corpus_with_ids(
            &dir.path().join(format!("c-{}", fault.replace(':', "-"))),
            3,
            10,
        );
        ok(run_at(&original, &out, "2024-05-01", &[], &[]));
        let after_first = history_files(&out);
        block_on(loc(&original).write_table(&segments)).unwrap();
        let killed = run_at(
            &original,
            &out,
            "2024-05-02",
            &[],
            &[("EPIMINE_FAULT", fault)],
        );
        assert_eq!(killed.status.signal(), Some(9), "{fault}: {killed:?}");
        let committed = fault == "history" || fault.starts_with("publish");
        let manifest = || -> serde_json::Value {
            serde_json::from_slice(&std::fs::read(out.join("run.json")).unwrap()).unwrap()
        };
        if fault == "history" {
            // Committed (run.json) but stopped before the head: history/ holds run 2 whole.
            assert_eq!(manifest()["history"]["run"], 2);
        } else if committed {
            // Committed (`_commits/000002.json`), its publication stopped before run.json.
            assert_eq!(
                files_in(&out.join("_commits")),
                ["000001.json", "000002.json"]
            );
            assert_eq!(manifest()["history"]["run"], 1, "{fault}");
        } else {
            // Not committed: run 1 is there whole (its run.json and every file it lists), and
            // history/ and the head are run 1's, as they were.
            assert_eq!(manifest()["history"]["run"], 1, "{fault}");
            assert!(
                matches!(
                    block_on(epimine::run_folder::commit::verify(&loc(&out))),
                    Ok(epimine::run_folder::commit::Verified::Committed(_))
                ),
                "{fault}: run 1 is not whole"
            );
            assert_eq!(files_in(&out.join("_commits")), ["000001.json"], "{fault}");
            let now = history_files(&out);
            assert_eq!(
                now[..1],
                after_first[..1],
                "{fault}: history/000001 changed"
            );
            assert_eq!(
                files_in(&out.join("history")),
                ["000001.parquet"],
                "{fault}"
            );
            let head = std::fs::read_to_string(out.join("_identity/head.json")).unwrap();
            assert!(head.contains("\"run\": 1"), "{fault}: {head}");
        }
        // The same command again: the history is the uninterrupted one's, byte for byte.
        let again = run_at(&original, &out, "2024-05-02", &[], &[]);
        ok(again);
        let got = history_files(&out);
        if committed {
            // Run 2 was committed: the re-run finished its head and is run 3 (nothing changed).
            assert_eq!(got[..2], want[..2], "{fault}");
            assert_eq!(got.len(), 4);
            let rows = lineage(&out);
            assert!(rows.iter().all(|r| r.run == 3 && r.status == "continued"));
        } else {
            assert_eq!(
                got, want,
                "{fault}: the history differs from the uninterrupted run's"
            );
        }
        let head = std::fs::read_to_string(out.join("_identity/head.json")).unwrap();
        let n = if committed { 3 } else { 2 };
        assert!(head.contains(&format!("\"run\": {n}")), "{fault}: {head}");
        // Only the head's ids (and its articles) are kept.
        assert_eq!(
            files_in(&out.join("_identity")),
            [
                format!("{n:06}.articles.parquet"),
                format!("{n:06}.parquet"),
                "head.json".to_string()
            ]
        );
    }
}

/// A history runs forward and is never restarted by accident (issue 47, items 3 and 7): a
/// `--run-time` before the last run's is refused before any work, naming both times; with the
/// head (or all of `_identity/`) gone while `history/` holds runs, the run stops and names what
/// is missing and how to start afresh on purpose; the history is left as it was each time.
#[test]
fn a_history_runs_forward_and_a_lost_head_is_an_error_not_a_restart() {
    let dir = scratch();
    let corpus = corpus_with_ids(dir.path(), 2, 8);
    let out = dir.path().join("out");
    ok(run_at(&corpus, &out, "2024-05-01", &[], &[]));
    ok(run_at(&corpus, &out, "2024-05-02", &[], &[]));
    let before = history_files(&out);
    let run_json = std::fs::read(out.join("run.json")).unwrap();

    let o = run_at(&corpus, &out, "2024-04-01", &[], &[]);
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(!o.status.success(), "{err}");
    assert!(
        err.contains("--run-time 2024-04-01T00:00:00") && err.contains("run 2 at 2024-05-02"),
        "{err}"
    );
    assert!(!err.contains("events ("), "refused before any work: {err}");
    assert_eq!(history_files(&out), before);
    assert_eq!(std::fs::read(out.join("run.json")).unwrap(), run_json);
    // The same time as the last run is not before it.
    ok(run_at(&corpus, &out, "2024-05-02", &[], &[]));
    let before = history_files(&out);

    for lost in ["_identity/head.json", "_identity"] {
        let copy = dir.path().join(format!("copy-{}", lost.replace('/', "-")));
        std::fs::create_dir_all(&copy).unwrap();
        let path = out.join(lost);
        std::fs::rename(&path, copy.join("x")).unwrap();
        let o = run_at(&corpus, &out, "2024-05-03", &[], &[]);
        let err = String::from_utf8_lossy(&o.stderr).to_string();
        assert!(!o.status.success(), "{lost}: {err}");
        assert!(
            err.contains("head.json")
                && err.contains(
                    "3 committed run(s) (history/000001.parquet … history/000003.parquet)"
                )
                && err
                    .contains("delete the folders _identity/, history/, _commits/ and _versions/")
                && err.contains("this run cannot follow them")
                && !err.contains("   "),
            "{lost}: {err}"
        );
        assert_eq!(history_files(&out), before, "{lost}");
        std::fs::rename(copy.join("x"), &path).unwrap();
    }
    // Restored, the history goes on.
    ok(run_at(&corpus, &out, "2024-05-03", &[], &[]));
    assert!(lineage(&out).iter().all(|r| r.run == 4));
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

#[test]
fn append_adds_a_feed_without_touching_the_segments_there() {
    let dir = scratch();
    let day1 = dir.path().join("day1.jsonl");
    let day2 = dir.path().join("day2.jsonl");
    let article = |id: &str, day: &str, text: &str| {
        serde_json::json!({"key_event": "flood", "id": id, "published": day, "title": id, "text": text})
            .to_string()
    };
    std::fs::write(
        &day1,
        [
            article(
                "a",
                "2024-05-02",
                "The river rose overnight. Homes were evacuated.",
            ),
            article("b", "2024-05-01", "Rain fell for three days. The dam held."),
        ]
        .join("\n"),
    )
    .unwrap();
    // Day 2 repeats article b (the feed overlaps) and brings an earlier-published article.
    std::fs::write(
        &day2,
        [
            article("b", "2024-05-01", "Rain fell for three days. The dam held."),
            article("c", "2024-04-30", "Forecasters warned of heavy rain."),
        ]
        .join("\n"),
    )
    .unwrap();
    let corpus = dir.path().join("corpus");
    // Appending to nothing is refused, naming the folder.
    let e = epimine(&[
        "import",
        "--articles",
        s(&day1),
        "--out",
        s(&corpus),
        "--append",
    ]);
    assert!(!e.status.success());
    assert!(
        String::from_utf8_lossy(&e.stderr).contains("holds no segments"),
        "{e:?}"
    );
    epimine_ok(&["import", "--articles", s(&day1), "--out", s(&corpus)]);
    let before = std::fs::read(corpus.join("segments.parquet")).unwrap();
    let first: Vec<Segment> = block_on(epimine::corpus::read_segments(&loc(&corpus))).unwrap();
    let text = epimine_ok(&[
        "import",
        "--articles",
        s(&day2),
        "--out",
        s(&corpus),
        "--append",
    ]);
    assert!(text.contains("1 articles already in the corpus"), "{text}");
    // The files written are named (issue 46 item 7: was `segments-<n>.parquet`).
    assert!(
        text.contains("segments-000002.parquet") && text.contains("boilerplate-000002.parquet"),
        "{text}"
    );
    assert!(!text.contains("<n>"), "{text}");
    assert_eq!(
        std::fs::read(corpus.join("segments.parquet")).unwrap(),
        before
    );
    assert!(corpus.join("segments-000002.parquet").exists());
    let all: Vec<Segment> = block_on(epimine::corpus::read_segments(&loc(&corpus))).unwrap();
    let ids: Vec<(String, u32)> = all
        .iter()
        .map(|s| (s.source_id.clone().unwrap(), s.doc_id))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    // a and b keep their doc_ids; c comes after them.
    let max_first = first.iter().map(|s| s.doc_id).max().unwrap();
    assert!(ids.contains(&("c".into(), max_first + 1)), "{ids:?}");
    assert_eq!(ids.len(), 3);
    // The same feed again adds nothing and writes nothing.
    let text = epimine_ok(&[
        "import",
        "--articles",
        s(&day2),
        "--out",
        s(&corpus),
        "--append",
    ]);
    assert!(text.contains("nothing new"), "{text}");
    assert!(!corpus.join("segments-000003.parquet").exists());

    // Batches 3 and 4, then batch 3 removed (an undo): the next append is batch 5, and batch 4's
    // articles stay (issue 64 item 1: it counted the files and wrote over batch 4). The gap is
    // said, naming the missing batch.
    let feed = |name: &str, id: &str| {
        let path = dir.path().join(name);
        let text = format!("Article {id}: crews worked through the night on the levee.");
        std::fs::write(&path, article(id, "2024-05-03", &text)).unwrap();
        path
    };
    for (name, id) in [("day3.jsonl", "d"), ("day4.jsonl", "e")] {
        epimine_ok(&[
            "import",
            "--articles",
            s(&feed(name, id)),
            "--out",
            s(&corpus),
            "--append",
        ]);
    }
    let fourth = std::fs::read(corpus.join("segments-000004.parquet")).unwrap();
    std::fs::remove_file(corpus.join("segments-000003.parquet")).unwrap();
    let out = epimine(&[
        "import",
        "--articles",
        s(&feed("day5.jsonl", "f")),
        "--out",
        s(&corpus),
        "--append",
    ]);
    assert!(out.status.success(), "{out:?}");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("segments-000003.parquet"), "{said}");
    assert_eq!(
        std::fs::read(corpus.join("segments-000004.parquet")).unwrap(),
        fourth
    );
    assert!(corpus.join("segments-000005.parquet").exists());
    let ids: BTreeSet<String> = block_on(epimine::corpus::read_segments(&loc(&corpus)))
        .unwrap()
        .into_iter()
        .filter_map(|s| s.source_id)
        .collect();
    assert_eq!(ids, ["a", "b", "c", "e", "f"].map(String::from).into());
}

/// Two `import --append` at once (overlapping cron jobs; issue 47 item 2): never both "wrote"
/// with one's articles lost. Each try either has both succeed one after the other, the corpus
/// then holding every article, or one refused naming the other (`in use by another command:
/// epimine import --append …`), the corpus holding the other's; no `_lock` is left behind.
#[test]
fn two_appends_at_once_lose_nothing() {
    let dir = scratch();
    let feed = |name: &str, prefix: &str, n: usize| {
        let path = dir.path().join(name);
        let rows: Vec<String> = (0..n)
            .map(|i| {
                serde_json::json!({"key_event": "flood", "id": format!("{prefix}{i}"),
                    "published": "2024-05-01", "title": format!("{prefix}{i}"),
                    "text": format!("Article {prefix} {i}: the river rose by {i} metres overnight. Crews worked on the levee near bridge {i}.")})
                .to_string()
            })
            .collect();
        std::fs::write(&path, rows.join("\n")).unwrap();
        path
    };
    let base = feed("base.jsonl", "base", 20);
    let (a, b) = (feed("x.jsonl", "x", 400), feed("y.jsonl", "y", 400));
    let articles = |corpus: &Path| -> BTreeSet<String> {
        block_on(epimine::corpus::read_segments(&loc(corpus)))
            .unwrap()
            .into_iter()
            .map(|s| s.source_id.unwrap())
            .collect()
    };
    let mut refused = 0;
    for attempt in 0..4 {
        let corpus = dir.path().join(format!("corpus-{attempt}"));
        epimine_ok(&["import", "--articles", s(&base), "--out", s(&corpus)]);
        let start = |feed: &Path| {
            std::process::Command::new(env!("CARGO_BIN_EXE_epimine"))
                .args([
                    "import",
                    "--articles",
                    s(feed),
                    "--out",
                    s(&corpus),
                    "--append",
                ])
                .env("RUST_LOG", "warn")
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        };
        let (ca, cb) = (start(&a), start(&b));
        let (oa, ob) = (
            ca.wait_with_output().unwrap(),
            cb.wait_with_output().unwrap(),
        );
        let got = articles(&corpus);
        let has = |prefix: &str| got.iter().filter(|id| id.starts_with(prefix)).count();
        assert_eq!(has("base"), 20, "attempt {attempt}");
        for (o, prefix) in [(&oa, "x"), (&ob, "y")] {
            let err = String::from_utf8_lossy(&o.stderr);
            if o.status.success() {
                assert_eq!(
                    has(prefix),
                    400,
                    "attempt {attempt}: {prefix} said it wrote"
                );
            } else {
                refused += 1;
                assert!(
                    err.contains("in use by another command: epimine import --append"),
                    "attempt {attempt}: {err}"
                );
                assert_eq!(has(prefix), 0, "attempt {attempt}");
            }
        }
        assert!(
            oa.status.success() || ob.status.success(),
            "attempt {attempt}"
        );
        assert!(
            !corpus.join("_lock").exists() || files_in(&corpus.join("_lock")).is_empty(),
            "attempt {attempt}"
        );
        // The doc_ids stay unique per event.
        let segs: Vec<Segment> = block_on(epimine::corpus::read_segments(&loc(&corpus))).unwrap();
        let keys: BTreeSet<(u32, u32)> = segs.iter().map(|s| (s.doc_id, s.seg_idx)).collect();
        assert_eq!(keys.len(), segs.len(), "attempt {attempt}");
    }
    eprintln!("{refused} of 4 attempts had one append refused");
}

/// The rows of `T` in `out` outside `event`.
fn rows_outside<T: epimine::tables::Table + PartialEq + std::fmt::Debug>(
    out: &Path,
    event: &str,
    key_event: fn(&T) -> &str,
) -> Vec<T> {
    read_rows::<T>(out)
        .into_iter()
        .filter(|r| key_event(r) != event)
        .collect()
}

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
    let text_of = texts_of(&corpus, target);
    let assignments: Vec<Assignment> = read_rows(&novel);
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
    let episodes: Vec<Episode> = read_rows(&novel);
    let row = episodes
        .iter()
        .find(|e| e.key_event == target && e.episode_id == holder)
        .unwrap();
    assert_eq!(row.status.as_deref(), Some("new"), "{row:?}");
    let developments: Vec<Development> = read_rows(&novel);
    assert!(developments
        .iter()
        .any(|d| d.stable_id == row.stable_id.unwrap()
            && d.status == "new"
            && d.today_articles == Some(row.n_articles)));
    let said = String::from_utf8_lossy(&said.stdout).to_string();
    assert!(
        said.contains(&format!("  new: {target} #{} \"", row.stable_id.unwrap())),
        "{said}"
    );
}

/// Copies a run folder (files and sub-folders).
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Issue 64, item 5: a corpus that is not the one an `--out` follows (here the same articles
/// under other key events) is refused before any work, naming both corpora and an event it
/// lacks; with `--fresh` it is run, and the episodes of the old events end.
#[test]
fn another_corpus_into_a_followed_out_is_refused_unless_fresh() {
    let dir = scratch();
    let corpus = synth(dir.path(), 3, 10);
    let out = dir.path().join("out");
    ok(run_at(&corpus, &out, "2024-05-01", &[], &[]));
    let committed = std::fs::read(out.join("run.json")).unwrap();
    let other = dir.path().join("other");
    copy_dir(&corpus, &other);
    let mut segments: Vec<Segment> = read_rows(&other);
    for s in &mut segments {
        s.key_event = s.key_event.replace("synth_event", "other_event");
    }
    block_on(loc(&other).write_table(&segments)).unwrap();
    let refused = run_at(&other, &out, "2024-05-02", &[], &[]);
    let said = String::from_utf8_lossy(&refused.stderr).to_string();
    assert_eq!(refused.status.code(), Some(1), "{said}");
    assert!(
        said.contains(&format!(
            "its last run (run 1) followed the corpus {}",
            s(&corpus)
        )) && said.contains(&format!(
            "3 of its 3 key event(s) are not in the corpus {} (e.g. `synth_event_000`)",
            s(&other)
        )) && said.contains("pass --fresh"),
        "{said}"
    );
    assert!(
        !said.contains("encoding"),
        "refused before any work: {said}"
    );
    assert_eq!(std::fs::read(out.join("run.json")).unwrap(), committed);
    // The same corpus again is no stranger; with --fresh the other one is run.
    ok(run_at(&corpus, &out, "2024-05-02", &[], &[]));
    ok(run_at(&other, &out, "2024-05-03", &["--fresh"], &[]));
    let rows = lineage(&out);
    assert!(rows
        .iter()
        .filter(|r| r.key_event.starts_with("synth_event"))
        .all(|r| r.status == "ended"));
    assert!(rows
        .iter()
        .filter(|r| r.key_event.starts_with("other_event"))
        .all(|r| r.status == "new"));
}

/// Issue 64's minor items: damaged files of the history (cut short) are restored from the kept
/// versions, each named in a warning; where no version keeps one, the ids' file stops the run
/// (naming it), the articles' file and a `history/` file only warn — they are no reason to
/// start the history again.
#[test]
fn damaged_history_files_are_restored_from_the_kept_versions_or_named() {
    let dir = scratch();
    let corpus = corpus_with_ids(dir.path(), 2, 10);
    let out = dir.path().join("out");
    ok(run_at(&corpus, &out, "2024-05-01", &[], &[]));
    ok(run_at(&corpus, &out, "2024-05-02", &[], &[]));
    let cut = |path: &Path| {
        let bytes = std::fs::read(path).unwrap();
        // A new file, not the hard link the version shares.
        std::fs::remove_file(path).unwrap();
        std::fs::write(path, &bytes[..bytes.len() / 2]).unwrap();
    };
    let damaged = [
        "_identity/000002.parquet",
        "_identity/000002.articles.parquet",
        "history/000001.parquet",
    ];
    let whole: Vec<Vec<u8>> = damaged
        .iter()
        .map(|f| std::fs::read(out.join(f)).unwrap())
        .collect();
    for f in damaged {
        cut(&out.join(f));
    }
    let o = ok(run_at(&corpus, &out, "2024-05-03", &[], &[]));
    let said = String::from_utf8_lossy(&o.stderr).to_string();
    for f in damaged {
        assert!(
            said.contains(&format!("{}: damaged", s(&out.join(f))))
                && said.contains("restored from"),
            "{f}: {said}"
        );
    }
    assert_eq!(
        std::fs::read(out.join("history/000001.parquet")).unwrap(),
        whole[2]
    );
    assert!(lineage(&out)
        .iter()
        .all(|r| r.run == 3 && r.status == "continued"));

    // Without the versions (removed by hand) nothing has a copy left.
    std::fs::remove_dir_all(out.join("_versions")).unwrap();
    cut(&out.join("history/000002.parquet"));
    cut(&out.join("_identity/000003.articles.parquet"));
    let o = ok(run_at(&corpus, &out, "2024-05-04", &[], &[]));
    let said = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(
        said.contains(&format!(
            "{}: unreadable",
            s(&out.join("history/000002.parquet"))
        )) && said.contains("restore it from a copy, or delete it")
            && said.contains("its episodes' ids are kept"),
        "{said}"
    );
    assert!(lineage(&out)
        .iter()
        .all(|r| r.run == 4 && r.status == "continued"));
    std::fs::remove_dir_all(out.join("_versions")).unwrap();
    cut(&out.join("_identity/000004.parquet"));
    let o = run_at(&corpus, &out, "2024-05-05", &[], &[]);
    let said = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(o.status.code(), Some(1), "{said}");
    assert!(
        said.contains(&format!(
            "{}: the episode ids of run 4",
            s(&out.join("_identity/000004.parquet"))
        )),
        "{said}"
    );
}

/// Issue 65, item 4: an append remembers the corpus's column mapping and import options (its
/// first import's, `import.toml`), so the day's feed is appended without the flags again; its
/// last line names the follow job.
#[test]
fn an_append_remembers_the_corpus_s_columns_and_names_the_follow_job() {
    let dir = scratch();
    let header = "event,url,date,headline,body\n";
    let row = |id: &str, day: &str, text: &str| format!("flood,{id},{day},{id},\"{text}\"\n");
    let day1 = dir.path().join("day1.csv");
    let day2 = dir.path().join("day2.csv");
    std::fs::write(
        &day1,
        format!(
            "{header}{}{}",
            row(
                "a",
                "02/05/2024",
                "The river rose overnight. Homes were evacuated."
            ),
            row("b", "01/05/2024", "Rain fell for three days. The dam held.")
        ),
    )
    .unwrap();
    std::fs::write(
        &day2,
        format!(
            "{header}{}",
            row("c", "03/05/2024", "Forecasters warned of more heavy rain.")
        ),
    )
    .unwrap();
    let mut flags = COLUMN_FLAGS.to_vec();
    flags.extend(["--date-format", "%d/%m/%Y"]);
    let corpus = dir.path().join("corpus");
    let mut first = vec!["import", "--articles", s(&day1), "--out", s(&corpus)];
    first.extend(&flags);
    epimine_ok(&first);
    let saved = std::fs::read_to_string(corpus.join("import.toml")).unwrap();
    assert!(
        saved.contains("key_event = \"event\"") && saved.contains("%d/%m/%Y"),
        "{saved}"
    );
    let said = epimine_ok(&[
        "import",
        "--articles",
        s(&day2),
        "--out",
        s(&corpus),
        "--append",
    ]);
    assert!(
        said.contains("settings: the corpus's own")
            && said.contains("columns read: key_event = `event`")
            && said.contains("next: epimine run jobs/follow.toml --corpus"),
        "{said}"
    );
    // The same as an append with every flag given.
    let again = dir.path().join("again");
    epimine_ok(
        &first
            .iter()
            .map(|a| if *a == s(&corpus) { s(&again) } else { a })
            .collect::<Vec<_>>(),
    );
    let mut append = vec![
        "import",
        "--articles",
        s(&day2),
        "--out",
        s(&again),
        "--append",
    ];
    append.extend(&flags);
    epimine_ok(&append);
    let rows = |c: &Path| -> Vec<Segment> {
        let mut all = Vec::new();
        for f in ["segments.parquet", "segments-000002.parquet"] {
            let loc = loc(c);
            all.extend(
                <Segment as epimine::tables::Table>::from_batches(
                    &block_on(loc.read_parquet(f, &<Segment as epimine::tables::Table>::schema()))
                        .unwrap(),
                )
                .unwrap(),
            );
        }
        all
    };
    let (remembered, given) = (rows(&corpus), rows(&again));
    assert_eq!(remembered, given);
    assert!(remembered
        .iter()
        .any(|s| s.source_id.as_deref() == Some("c") && s.doc_date.is_some()));
}
