//! One's own articles, start to finish (issue 37): a CSV whose columns have other names is
//! imported (what was found and what is missing said at once), run with the built-in
//! backgrounds (the corpus's own articles, general English), and read: what the episodes leave out (summary, `run.json`, report),
//! each episode's articles (`episode_articles.parquet`, links in the report), the density
//! baseline and its report on a corpus without labels, and `eval` saying what it needs. The
//! articles are `examples/articles.csv`, the README's quickstart; the encoder the tiny fixture.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::util::*;
use epimine::storage::Location;
use epimine::tables::{Assignment, Boilerplate, Episode, EpisodeArticle, Segment, Term};

/// The README's articles.
fn example_csv() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/articles.csv")
}

#[test]
fn columns_found_and_missing_are_said_at_once() {
    let dir = scratch();
    let input = example_csv();
    // No flags: every required column missing is named in one error, with a guess each, the
    // optional ones missing too, and the file's own columns.
    let out = dir.path().join("none");
    let o = epimine(&["import", "--articles", s(&input), "--out", s(&out)]);
    assert!(!o.status.success());
    let err = stderr(&o);
    for want in [
        "3 required column(s) missing",
        "no column `key_event` (name it with --key-event-column or key_event = … in [import.columns]) — `event` looks like it: --key-event-column event",
        "no column `id` (name it with --id-column or id = … in [import.columns]) — `url` looks like it: --id-column url",
        "no column `text` (name it with --text-column or text = … in [import.columns]) — `body` looks like it: --text-column body",
        "`published` (--published-column) — `date` looks like it: --published-column date",
        "`title` (--title-column) — `headline` looks like it: --title-column headline",
        "the file's columns: `event`, `url`, `date`, `headline`, `body`",
    ] {
        assert!(err.contains(want), "missing `{want}` in:\n{err}");
    }
    assert!(!out.join("segments.parquet").exists());

    // The required ones only: imported, and the summary says that no date and no title were
    // found, what that costs, and which columns look like them.
    let out = dir.path().join("required");
    let stdout = epimine_ok(&[
        "import",
        "--articles",
        s(&input),
        "--out",
        s(&out),
        "--key-event-column",
        "event",
        "--id-column",
        "url",
        "--text-column",
        "body",
    ]);
    assert!(
        stdout.contains("columns read: key_event = `event`, id = `url`, text = `body`"),
        "{stdout}"
    );
    assert!(
        stdout.contains("no column `published` in ")
            && stdout.contains("its articles have no date")
            && stdout.contains("`date` looks like it: --published-column date"),
        "{stdout}"
    );
    assert!(
        stdout.contains("no column `title` in ") && stdout.contains("--title-column headline"),
        "{stdout}"
    );

    // JSON Lines without the key event in any line: the same one error, not a bad row a line.
    let jsonl = dir.path().join("feed.jsonl");
    std::fs::write(
        &jsonl,
        "{\"story\": \"quake\", \"id\": \"1\", \"text\": \"The ground shook.\"}\n\
         {\"story\": \"quake\", \"id\": \"2\", \"text\": \"Houses fell.\"}\n",
    )
    .unwrap();
    let o = epimine(&[
        "import",
        "--articles",
        s(&jsonl),
        "--out",
        s(&dir.path().join("j")),
    ]);
    let err = stderr(&o);
    assert!(
        !o.status.success()
            && err.contains("1 required column(s) missing")
            && err.contains("`story` looks like it: --key-event-column story")
            && err.contains("the file's columns: `story`, `id`, `text`")
            && !err.contains("bad row"),
        "{err}"
    );
}

#[test]
fn boilerplate_dropped_is_listed_in_the_corpus() {
    let dir = scratch();
    let out = dir.path().join("corpus");
    let input = example_csv();
    let mut args = vec!["import", "--articles", s(&input), "--out", s(&out)];
    args.extend(COLUMN_FLAGS);
    let stdout = epimine_ok(&args);
    let rows: Vec<Boilerplate> = read_rows(&out);
    let byline = rows
        .iter()
        .find(|b| b.text.starts_with("Reporting by the Valley Courier staff"))
        .unwrap_or_else(|| panic!("no byline in {rows:?}"));
    // Every article of an event ends with the byline, dropped once per article.
    let segments: Vec<Segment> = read_rows(&out);
    let articles = segments
        .iter()
        .filter(|s| s.key_event == byline.key_event)
        .map(|s| s.doc_id)
        .collect::<BTreeSet<_>>()
        .len();
    assert_eq!(byline.dropped as usize, articles);
    assert!(segments.iter().all(|s| !s.text.contains("Valley Courier")));
    assert_eq!(byline.kind, "furniture");
    // The summary's counts are the table's.
    let furniture: Vec<&Boilerplate> = rows.iter().filter(|b| b.kind == "furniture").collect();
    let total: u32 = furniture.iter().map(|b| b.dropped).sum();
    assert!(
        stdout.contains(&format!(
            "{total} boilerplate lines dropped ({} distinct)",
            furniture.len()
        )) && stdout.contains(&format!(
            "boilerplate.parquet (its {} distinct paragraphs dropped or kept once)",
            rows.len()
        )),
        "{stdout}"
    );
}

/// The example imported with every column, into `<dir>/corpus`.
fn import_example(dir: &Path) -> PathBuf {
    let corpus = dir.join("corpus");
    let input = example_csv();
    let mut args = vec!["import", "--articles", s(&input), "--out", s(&corpus)];
    args.extend(COLUMN_FLAGS);
    epimine_ok(&args);
    corpus
}

/// `epimine run` of `corpus` into `out` with the corpus's own background and `workers` workers.
fn run_own(corpus: &Path, out: &Path, model: &str, workers: &str) -> std::process::Output {
    epimine(&[
        "run",
        "--corpus",
        s(corpus),
        "--out",
        s(out),
        "--background",
        "corpus",
        "--model",
        model,
        "-w",
        workers,
    ])
}

#[test]
fn a_run_against_its_own_articles_reads_them_start_to_finish() {
    let dir = scratch();
    let corpus = import_example(dir.path());
    let model = tiny_model();
    let (one, two) = (dir.path().join("one"), dir.path().join("two"));
    let o = run_own(&corpus, &one, &model, "1");
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    // The same bytes with 2 workers, episode_articles included.
    let o2 = run_own(&corpus, &two, &model, "2");
    assert!(o2.status.success(), "{}", stderr(&o2));
    for f in OUTPUTS {
        assert!(
            std::fs::read(one.join(f)).unwrap() == std::fs::read(two.join(f)).unwrap(),
            "{f} differs between 1 and 2 workers"
        );
    }

    // The background is the corpus's 300 articles: every term's bg_freq counts articles.
    let terms: Vec<Term> = read_rows(&one);
    let flood = terms
        .iter()
        .find(|t| t.key_event == "riverside_flood_2024" && t.term == "levee")
        .expect("levee is a term of the flood");
    let segments: Vec<Segment> = read_rows(&corpus);
    let with_levee: BTreeSet<(&str, u32)> = segments
        .iter()
        .filter(|s| epimine::terms::distinct_terms(&s.text).contains(&"levee".to_string()))
        .map(|s| (s.key_event.as_str(), s.doc_id))
        .collect();
    assert_eq!(flood.bg_freq as usize, with_levee.len());

    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(one.join("run.json")).unwrap()).unwrap();
    let lines = check_left_out(&one, &segments, &manifest, &out);
    check_episode_articles(&one, &segments, &manifest);
    check_report(dir.path(), &one, &corpus, &manifest, &lines);
    check_without_labels(dir.path(), &corpus, &one, &model);
}

/// What the run in `run` left out adds up in run.json and its summary `out`; returns its lines.
fn check_left_out(
    run: &Path,
    segments: &[Segment],
    manifest: &serde_json::Value,
    out: &str,
) -> Vec<String> {
    // What was left out: in the summary, run.json and the report, and it adds up.
    let episodes: Vec<Episode> = read_rows(run);
    let assignments: Vec<Assignment> = read_rows(run);
    let mut lines = Vec::new();
    for e in manifest["events"].as_array().unwrap() {
        let event = e["key_event"].as_str().unwrap();
        let segs: Vec<&Segment> = segments.iter().filter(|s| s.key_event == event).collect();
        let assigned: BTreeSet<(u32, u32)> = assignments
            .iter()
            .filter(|a| a.key_event == event)
            .map(|a| (a.doc_id, a.seg_idx))
            .collect();
        let docs: BTreeSet<u32> = assigned.iter().map(|a| a.0).collect();
        let all_docs: BTreeSet<u32> = segs.iter().map(|s| s.doc_id).collect();
        let c = &e["coverage"][0];
        assert_eq!(c["segments_assigned"], assigned.len(), "{e}");
        assert_eq!(c["segments_left_out"], segs.len() - assigned.len(), "{e}");
        assert_eq!(c["articles_assigned"], docs.len(), "{e}");
        assert_eq!(c["articles_left_out"], all_docs.len() - docs.len(), "{e}");
        assert_eq!(e["articles"], all_docs.len());
        assert!(assigned.len() < segs.len(), "something is left out: {e}");
        // Every segment left out has one reason (issue 45), named by its rule, and the reasons
        // are printed on the event's line.
        let why = e["counts"]["left_out"]
            .as_object()
            .expect("left_out reasons");
        assert_eq!(
            why.values().map(|n| n.as_u64().unwrap()).sum::<u64>() as usize,
            segs.len() - assigned.len(),
            "{e}"
        );
        for (reason, n) in why {
            assert!(
                reason == "below-confidence" || reason.starts_with("episode-dropped-by-"),
                "{reason}"
            );
            assert!(
                out.contains(&format!("{reason} {n}")),
                "{reason} {n} not in:\n{out}"
            );
        }
        lines.push(format!(
            "{event}: {} episodes in {} phases; {} of {} segments ({}%) and {} of {} articles in an episode",
            episodes.iter().filter(|x| x.key_event == event).count(),
            episodes
                .iter()
                .filter(|x| x.key_event == event)
                .map(|x| x.phase_id)
                .collect::<std::collections::BTreeSet<_>>()
                .len(),
            assigned.len(),
            segs.len(),
            assigned.len() * 100 / segs.len(),
            docs.len(),
            all_docs.len()
        ));
    }
    for line in &lines {
        assert!(out.contains(line), "no `{line}` in:\n{out}");
    }
    assert!(out.contains("left out: "), "{out}");
    assert!(out.contains("next: epimine report --run"), "{out}");
    lines
}

/// `episode_articles.parquet` of the run in `run` is what its assignments and `segments` make.
fn check_episode_articles(run: &Path, segments: &[Segment], manifest: &serde_json::Value) {
    // Each episode's articles: one row per (episode, article), in the order of each article's
    // best segment, with what the corpus says of the article.
    let assignments: Vec<Assignment> = read_rows(run);
    let rows: Vec<EpisodeArticle> = read_rows(run);
    assert!(manifest["tables"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t["name"] == "episode_articles.parquet" && t["rows"] == rows.len()));
    let by_key: BTreeMap<(&str, u32, u32), &Segment> = segments
        .iter()
        .map(|s| ((s.key_event.as_str(), s.doc_id, s.seg_idx), s))
        .collect();
    // (event, episode) → its members as (rank, doc_id, seg_idx).
    type Members = Vec<(u32, u32, u32)>;
    let mut expected: BTreeMap<(String, u32), Members> = BTreeMap::new();
    for a in &assignments {
        expected
            .entry((a.key_event.clone(), a.episode_id))
            .or_default()
            .push((a.rank, a.doc_id, a.seg_idx));
    }
    let mut seen = 0;
    for ((event, episode), mut members) in expected {
        members.sort();
        let top = by_key[&(event.as_str(), members[0].1, members[0].2)];
        let mut order: Vec<u32> = Vec::new();
        for m in &members {
            if !order.contains(&m.1) {
                order.push(m.1);
            }
        }
        let mine: Vec<&EpisodeArticle> = rows
            .iter()
            .filter(|r| r.key_event == event && r.episode_id == episode)
            .collect();
        assert_eq!(
            mine.iter().map(|r| r.doc_id).collect::<Vec<_>>(),
            order,
            "{event} {episode}"
        );
        for (k, r) in mine.iter().enumerate() {
            assert_eq!(r.article_rank as usize, k);
            let count = members.iter().filter(|m| m.1 == r.doc_id).count();
            assert_eq!(r.segments as usize, count);
            let best = members.iter().find(|m| m.1 == r.doc_id).unwrap();
            let seg = by_key[&(event.as_str(), best.1, best.2)];
            assert_eq!(
                (r.best_rank, r.passage.as_str()),
                (best.0, seg.text.as_str())
            );
            assert_eq!(r.episode_passage, top.text);
            assert_eq!(r.source_id, seg.source_id);
            assert_eq!(r.title, seg.title);
            assert_eq!(r.published, seg.doc_date);
            assert!(r
                .source_id
                .as_deref()
                .unwrap()
                .starts_with("https://news.example.org/"));
            seen += 1;
        }
    }
    assert_eq!(seen, rows.len());
}

/// The report of the run in `run` shows each event's coverage, links and ranks, no confidence.
fn check_report(
    dir: &Path,
    run: &Path,
    corpus: &Path,
    manifest: &serde_json::Value,
    lines: &[String],
) {
    // The report: what each event leaves out, shares instead of raw confidences, rank in the
    // episode, links to the articles.
    let html_path = dir.join("report.html");
    epimine_ok(&[
        "report",
        "--run",
        s(run),
        "--corpus",
        s(corpus),
        "--out",
        s(&html_path),
    ]);
    let html = std::fs::read_to_string(&html_path).unwrap();
    for line in lines {
        let event = line.split(':').next().unwrap();
        let c = manifest["events"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["key_event"] == event)
            .unwrap()["coverage"][0]
            .clone();
        let want = format!(
            "In an episode: {} of {} segments",
            c["segments_assigned"],
            c["segments_assigned"].as_u64().unwrap() + c["segments_left_out"].as_u64().unwrap()
        );
        assert!(html.contains(&want), "no `{want}` in the report");
    }
    assert!(html.contains("<a href=\"https://news.example.org/"));
    assert!(html.contains(" of the event's)") && html.contains("#1 of "));
    assert!(!html.contains("confidence"), "a raw confidence is shown");
}

/// Without labels: `eval` says what it needs, the density baseline and its report work.
fn check_without_labels(dir: &Path, corpus: &Path, run: &Path, model: &str) {
    // No labels: eval says what it needs; the density baseline and its report work.
    let o = epimine(&["eval", "--corpus", s(corpus), "--run", s(run)]);
    let err = stderr(&o);
    assert!(
        !o.status.success()
            && err.contains("no labels.parquet")
            && err.contains("needs a labelled corpus")
            && err.contains("import --articles"),
        "{err}"
    );
    let hdb = dir.join("hdbscan");
    let said = epimine_ok(&[
        "baseline",
        "hdbscan",
        "--corpus",
        s(corpus),
        "--out",
        s(&hdb),
        "--model",
        model,
        "--reduce",
        "none",
        "--min-cluster-size",
        "5",
    ]);
    assert!(said.contains("episode_articles"), "{said}");
    let rows: Vec<EpisodeArticle> = read_rows(&hdb);
    assert!(!rows.is_empty());
    let page = dir.join("hdbscan.html");
    let said = epimine_ok(&[
        "report",
        "--run",
        s(&hdb),
        "--corpus",
        s(corpus),
        "--out",
        s(&page),
    ]);
    assert!(said.starts_with("2 key events"), "{said}");
    assert!(std::fs::read_to_string(&page)
        .unwrap()
        .contains("baseline hdbscan"));
    let o = epimine(&[
        "baseline",
        "kmeans",
        "--corpus",
        s(corpus),
        "--out",
        s(&dir.join("km")),
        "--model",
        model,
    ]);
    let err = stderr(&o);
    assert!(
        !o.status.success()
            && err.contains("no gold_episodes.parquet")
            && err.contains("`baseline hdbscan` needs none"),
        "{err}"
    );
}

/// The default background's table, if it is in the model cache (`epimine background fetch`);
/// `EPIMINE_REQUIRE_MINILM=1` (scripts/ci/test.sh, which fetches both) makes its absence a failure.
fn wordfreq_cached() -> bool {
    let cache = epimine::models::model_cache(None).unwrap();
    let table = epimine::background::wordfreq::table_path(&cache);
    if table.is_file() {
        return true;
    }
    assert!(
        std::env::var("EPIMINE_REQUIRE_MINILM").as_deref() != Ok("1"),
        "EPIMINE_REQUIRE_MINILM=1 but no {} (run `epimine background fetch`)",
        table.display()
    );
    eprintln!(
        "{} is not in the cache: skipping the default",
        table.display()
    );
    false
}

#[test]
fn the_background_is_said_in_one_line_and_both_built_ins_work_for_one_event() {
    let dir = scratch();
    let corpus = import_example(dir.path());
    // One event alone: a newcomer's corpus.
    let one_event = dir.path().join("one-event");
    let segments: Vec<Segment> = read_rows(&corpus);
    let flood: Vec<Segment> = segments
        .into_iter()
        .filter(|s| s.key_event == "riverside_flood_2024")
        .collect();
    let articles = flood
        .iter()
        .map(|s| s.doc_id)
        .collect::<BTreeSet<_>>()
        .len();
    block_on(
        Location::parse(s(&one_event), true)
            .unwrap()
            .write_table(&flood),
    )
    .unwrap();
    let model = tiny_model();
    let run = |out: &Path, background: Option<&str>| {
        let mut args = vec![
            "run",
            "--corpus",
            s(&one_event),
            "--out",
            s(out),
            "--model",
            &model,
        ];
        if let Some(bg) = background {
            args.extend(["--background", bg]);
        }
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_epimine"))
            .args(&args)
            .env("RUST_LOG", "info")
            .output()
            .unwrap();
        let err = stderr(&o);
        assert!(o.status.success(), "{err}");
        let said: Vec<String> = err
            .lines()
            .filter(|l| l.contains("background: "))
            .map(str::to_string)
            .collect();
        assert_eq!(said.len(), 1, "{err}");
        let episodes: Vec<Episode> = read_rows(out);
        assert!(episodes.len() >= 2, "{episodes:?}");
        let job = std::fs::read_to_string(out.join("job.toml")).unwrap();
        (said[0].clone(), job)
    };
    // `corpus`: the event's own articles.
    let (said, job) = run(&dir.path().join("run-corpus"), Some("corpus"));
    assert!(
        said.contains(&format!("the corpus's own {articles} articles")),
        "{said}"
    );
    assert!(job.contains("background = \"corpus\""), "{job}");
    // None named: general English from wordfreq, and the job saved says so.
    if wordfreq_cached() {
        let (said, job) = run(&dir.path().join("run-default"), None);
        assert!(
            said.contains("general English (wordfreq 3.1.1, 4000 documents)")
                && said.contains("--background FILE"),
            "{said}"
        );
        assert!(job.contains("background = \"wordfreq\""), "{job}");
    }
    // `stats` takes the same names.
    let stats = dir.path().join("stats");
    epimine_ok(&[
        "stats",
        "--corpus",
        s(&one_event),
        "--out",
        s(&stats),
        "--no-vectors",
        "--background",
        "corpus",
    ]);
    let terms: Vec<Term> = read_rows(&stats);
    let levee = terms.iter().find(|t| t.term == "levee").unwrap();
    assert!(levee.bg_freq > 0 && (levee.bg_freq as usize) < articles);
}

#[test]
fn a_cap_below_the_floor_is_warned_about() {
    let dir = scratch();
    let corpus = synth(dir.path(), 1, 30);
    let out = dir.path().join("run");
    let o = synth_run(&corpus, &out)
        .args(["--set", "episodes.max_episodes=4"])
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    let err = stderr(&o);
    assert!(
        err.contains("episodes.max_episodes = 4 is below the floor episodes.min_episodes = 5"),
        "{err}"
    );
}

#[test]
fn the_example_job_names_every_episodes_setting_and_the_workers_default() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("jobs/example.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let section = |name: &str| -> String {
        let start = text.find(&format!("\n[{name}]\n")).expect("section") + name.len() + 4;
        let end = text[start..].find("\n[").map_or(text.len(), |e| start + e);
        text[start..end].to_string()
    };
    let episodes = section("episodes");
    let defaults = toml::Table::try_from(epimine::episodes::EpisodeParams::default()).unwrap();
    for (key, value) in defaults {
        if value.is_table() {
            continue;
        }
        assert!(
            episodes
                .lines()
                .any(|l| l.trim_start_matches("# ").starts_with(&format!("{key} = "))),
            "jobs/example.toml's [episodes] does not name `{key}`"
        );
    }
    // The workers line is the default a run without a job file has.
    let cluster = section("cluster");
    let workers = epimine::topology::ClusterSettings::default().workers;
    assert!(
        cluster.lines().any(|l| l == format!("workers = {workers}")),
        "{cluster}"
    );
}
