//! `epimine report` on a real run (synthetic corpus, the tiny BERT fixture as the encoder, one
//! event that fails): every event in the index and as a section, the episodes of
//! episodes.parquet, one timeline mark per episode and day whose count is the assigned segments
//! published that day (counted here from assignments.parquet and the corpus), text escaped,
//! the same bytes twice, clear errors; and the page in headless Chromium (scripts/ci/chromium.sh):
//! the DOM after its script ran, the search and the event filter driven by the query string.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::util::*;
use epimine::report::iso_day;
use epimine::storage::Location;
use epimine::tables::{Assignment, Episode, Segment};

/// The script-looking text put into a segment and the title of an article.
const EVIL_TEXT: &str = "<script>alert(\"x\")</script> & more";
const EVIL_TITLE: &str = "Q&A <b>bold</b>";

struct Fixture {
    _dir: tempfile::TempDir,
    corpus: PathBuf,
    run: PathBuf,
}

/// One run for every test: 2 synthetic events and one too small to have salient terms (it
/// fails). After the run, the corpus's rank-0 segment of the first episode gets a text with
/// markup and its article a title with markup (the report reads texts and titles from the
/// corpus; the keys are unchanged, so the corpus still matches the run).
fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let dir = scratch();
        let corpus = synth_with_a_failing_event(dir.path(), 2, 20);
        let run = dir.path().join("run");
        let out = epimine(&[
            "run",
            "--corpus",
            s(&corpus),
            "--background",
            s(&corpus.join("background.txt")),
            "--out",
            s(&run),
            "--model",
            &tiny_model(),
        ]);
        assert_eq!(
            out.status.code(),
            Some(3),
            "a partial run: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let assignments: Vec<Assignment> =
            block_on(Location::parse(s(&run), false).unwrap().read_table()).unwrap();
        let top = assignments
            .iter()
            .filter(|a| a.trial == 0 && a.rank == 0)
            .min_by_key(|a| (a.key_event.clone(), a.episode_id))
            .expect("some episode");
        let loc = Location::parse(s(&corpus), false).unwrap();
        let mut segments: Vec<Segment> = block_on(loc.read_table()).unwrap();
        for seg in segments.iter_mut() {
            if seg.key_event == top.key_event && seg.doc_id == top.doc_id {
                seg.title = Some(EVIL_TITLE.into());
                if seg.seg_idx == top.seg_idx {
                    seg.text = EVIL_TEXT.into();
                }
            }
        }
        block_on(loc.write_table(&segments)).unwrap();
        Fixture {
            _dir: dir,
            corpus,
            run,
        }
    })
}

fn report(f: &Fixture, out: &Path, extra: &[&str]) -> String {
    let mut args = vec![
        "report",
        "--run",
        s(&f.run),
        "--corpus",
        s(&f.corpus),
        "--out",
        s(out),
    ];
    args.extend_from_slice(extra);
    epimine_ok(&args)
}

/// The part of `html` from `start` to the next `end` (exclusive), after `from`.
fn between<'a>(html: &'a str, start: &str, end: &str) -> Vec<&'a str> {
    html.split(start)
        .skip(1)
        .map(|rest| rest.split(end).next().unwrap_or(rest))
        .collect()
}

/// The value of attribute `name` in a tag's text.
fn attr<'a>(tag: &'a str, name: &str) -> &'a str {
    let key = format!("{name}=\"");
    let rest = &tag[tag
        .find(&key)
        .unwrap_or_else(|| panic!("no {name} in {tag}"))
        + key.len()..];
    &rest[..rest.find('"').unwrap()]
}

/// Sections of the page by key event: (attributes of the section tag, its body).
fn sections(html: &str) -> BTreeMap<String, (String, String)> {
    between(html, "<section ", "</section>")
        .into_iter()
        .map(|s| {
            let (tag, body) = s.split_once('>').unwrap();
            (
                attr(tag, "data-key-event").to_string(),
                (tag.to_string(), body.to_string()),
            )
        })
        .collect()
}

/// (episode, day) → count of the timeline marks in a section's body.
fn marks(body: &str) -> BTreeMap<(u32, String), u32> {
    let mut out = BTreeMap::new();
    for tag in between(body, "<rect class=\"m\" ", ">") {
        let key = (
            attr(tag, "data-episode").parse().unwrap(),
            attr(tag, "data-day").to_string(),
        );
        let n: u32 = attr(tag, "data-count").parse().unwrap();
        assert!(out.insert(key, n).is_none(), "one mark per episode-day");
    }
    out
}

/// What the page must show, from the run's tables and the corpus: key event → episode ids of
/// trial 0, and key event → (episode, day) → assigned segments published that day.
type Expected = (
    BTreeMap<String, BTreeSet<u32>>,
    BTreeMap<String, BTreeMap<(u32, String), u32>>,
);

fn expected(f: &Fixture) -> Expected {
    let run = Location::parse(s(&f.run), false).unwrap();
    let corpus = Location::parse(s(&f.corpus), false).unwrap();
    let episodes: Vec<Episode> = block_on(run.read_table()).unwrap();
    let assignments: Vec<Assignment> = block_on(run.read_table()).unwrap();
    let segments: Vec<Segment> = block_on(corpus.read_table()).unwrap();
    let dates: BTreeMap<(&str, u32), Option<i32>> = segments
        .iter()
        .map(|s| ((s.key_event.as_str(), s.doc_id), s.doc_date))
        .collect();
    let mut ids: BTreeMap<String, BTreeSet<u32>> = BTreeMap::new();
    for e in episodes.iter().filter(|e| e.trial == 0) {
        ids.entry(e.key_event.clone())
            .or_default()
            .insert(e.episode_id);
    }
    let mut days: BTreeMap<String, BTreeMap<(u32, String), u32>> = BTreeMap::new();
    for a in assignments.iter().filter(|a| a.trial == 0) {
        if let Some(d) = dates[&(a.key_event.as_str(), a.doc_id)] {
            *days
                .entry(a.key_event.clone())
                .or_default()
                .entry((a.episode_id, iso_day(d)))
                .or_default() += 1;
        }
    }
    (ids, days)
}

/// Each episode's section names the other episodes of its phase, or no phase when it stands
/// alone.
fn assert_phases_named(f: &Fixture, sections: &BTreeMap<String, (String, String)>) {
    let run = Location::parse(s(&f.run), false).unwrap();
    let episodes: Vec<Episode> = block_on(run.read_table()).unwrap();
    for e in episodes.iter().filter(|e| e.trial == 0) {
        let (_, body) = &sections[&e.key_event];
        let start = format!("data-episode-id=\"{}\">", e.episode_id);
        let head = between(body, &start, "<ol class=\"segs\">")[0];
        let others: Vec<String> = episodes
            .iter()
            .filter(|o| (&o.key_event, o.trial, o.phase_id) == (&e.key_event, 0, e.phase_id))
            .filter(|o| o.episode_id != e.episode_id)
            .map(|o| format!("#{}", o.stable_id.unwrap()))
            .collect();
        assert_eq!(
            head.contains("one phase with"),
            !others.is_empty(),
            "{head}"
        );
        assert!(
            others.iter().all(|o| head.contains(o.as_str())),
            "{others:?} {head}"
        );
    }
}

#[test]
fn the_page_shows_every_event_episode_and_episode_day() {
    let f = fixture();
    let dir = scratch();
    let out = dir.path().join("r.html");
    let stdout = report(f, &out, &[]);
    assert!(
        stdout.contains("3 key events") && stdout.contains(&format!("wrote {}", s(&out))),
        "{stdout}"
    );
    let html = std::fs::read_to_string(&out).unwrap();
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(f.run.join("run.json")).unwrap()).unwrap();
    let listed: BTreeSet<String> = manifest["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["key_event"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(listed.len(), 3);

    // The index: one row per event of run.json, the failed one marked.
    let index = between(&html, "<table id=\"index\">", "</table>")[0];
    let rows = between(index, "<tr class=", "</tr>");
    assert_eq!(rows.len(), 3);
    let row_events: BTreeSet<String> = rows
        .iter()
        .map(|r| attr(r, "data-key-event").to_string())
        .collect();
    assert_eq!(row_events, listed);
    assert!(rows
        .iter()
        .any(|r| r.starts_with("\"failed\"") && r.contains("zz_tiny_event")));

    let sections = sections(&html);
    assert_eq!(
        sections.keys().cloned().collect::<BTreeSet<_>>(),
        listed,
        "one section per event"
    );
    let (tiny_tag, tiny_body) = &sections["zz_tiny_event"];
    assert!(tiny_tag.contains("status-failed"));
    assert!(tiny_body.contains("no salient terms"), "{tiny_body}");

    let (ids, days) = expected(f);
    assert_eq!(ids.len(), 2, "two events have episodes");
    for (event, want) in &ids {
        let (_, body) = &sections[event];
        let shown: BTreeSet<u32> = between(body, "data-episode-id=\"", "\"")
            .iter()
            .map(|i| i.parse().unwrap())
            .collect();
        assert_eq!(&shown, want, "{event}: episode ids");
        let got = marks(body);
        assert!(!got.is_empty());
        assert_eq!(got, days[event], "{event}: marks per episode-day");
        // Top segments: 5 (fewer when the episode has fewer), the first by rank, in rank order,
        // from as many articles as the best ranks offer (issue 65: distinct passages).
        for episode in between(body, "<li class=\"episode\"", "</ol>") {
            let id: u32 = attr(episode, "data-episode-id").parse().unwrap();
            let assigned: u32 = got
                .iter()
                .filter(|((e, _), _)| *e == id)
                .map(|(_, n)| n)
                .sum();
            let ranks: Vec<u32> = between(episode, "data-rank=\"", "\"")
                .iter()
                .map(|r| r.parse().unwrap())
                .collect();
            assert_eq!(ranks.len() as u32, assigned.min(5), "{event}: {episode}");
            assert_eq!(ranks.first(), Some(&0), "{event}: {episode}");
            assert!(ranks.windows(2).all(|w| w[0] < w[1]), "{event}: {episode}");
            let docs: Vec<&str> = between(episode, "data-doc=\"", "\"");
            let distinct: BTreeSet<&str> = docs.iter().copied().collect();
            // A rank skipped is an article already shown (no passage of this corpus is a
            // near-copy of another).
            if ranks.last().is_some_and(|&r| r as usize >= ranks.len()) {
                assert_eq!(distinct.len(), docs.len(), "{event}: {episode}");
            }
        }
    }

    // Each episode names the other episodes of its phase (`phase_id`), by the ids the page
    // shows, and says nothing of a phase when it stands alone.
    assert_phases_named(f, &sections);

    // --top-segments 2 --order confidence: two segments, most confident first.
    let two = dir.path().join("two.html");
    report(f, &two, &["--top-segments", "2", "--order", "confidence"]);
    let two = std::fs::read_to_string(&two).unwrap();
    for episode in between(&two, "<li class=\"episode\"", "</ol>") {
        let conf: Vec<f64> = between(episode, "· confidence ", "<")
            .iter()
            .map(|c| c.parse().unwrap())
            .collect();
        assert_eq!(conf.len(), 2, "{episode}");
        assert!(conf[0] >= conf[1], "{conf:?}");
    }
}

#[test]
fn text_is_escaped_and_the_bytes_repeat() {
    let f = fixture();
    let dir = scratch();
    let file = dir.path().join("a.html");
    report(f, &file, &[]);
    let html = std::fs::read_to_string(&file).unwrap();
    assert!(
        html.contains("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; more"),
        "the segment's text, escaped"
    );
    assert!(
        html.contains("Q&amp;A &lt;b&gt;bold&lt;/b&gt;"),
        "the title, escaped"
    );
    assert_eq!(
        html.matches("<script").count(),
        1,
        "only the page's own script"
    );
    assert!(!html.contains("<b>bold"));
    assert!(!html.contains("http://") && !html.contains("https://") && !html.contains(" src="));

    // A folder gets report.html; the same run gives the same bytes.
    let folder = dir.path().join("folder");
    let stdout = report(f, &folder, &[]);
    assert!(stdout.contains("report.html"), "{stdout}");
    assert_eq!(
        std::fs::read(folder.join("report.html")).unwrap(),
        html.as_bytes()
    );
    assert_eq!(
        files_in(dir.path()),
        vec!["a.html", "folder"],
        "no temporary left"
    );
}

#[test]
fn a_bad_run_or_a_foreign_corpus_is_a_clear_error() {
    let f = fixture();
    let dir = scratch();
    let out = dir.path().join("r.html");
    let fail = |run: &Path, corpus: &Path| {
        let r = epimine(&[
            "report",
            "--run",
            s(run),
            "--corpus",
            s(corpus),
            "--out",
            s(&out),
        ]);
        assert!(!r.status.success());
        assert!(!out.exists(), "nothing written");
        String::from_utf8_lossy(&r.stderr).into_owned()
    };
    let missing = dir.path().join("no-such-run");
    let err = fail(&missing, &f.corpus);
    assert!(
        err.contains(s(&missing)) && err.contains("no such folder"),
        "{err}"
    );
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let err = fail(&empty, &f.corpus);
    assert!(
        err.contains(&format!("{}: no run.json", s(&empty))),
        "{err}"
    );

    // An older format.
    let old = dir.path().join("old");
    std::fs::create_dir(&old).unwrap();
    for name in files_in(&f.run) {
        if f.run.join(&name).is_file() {
            std::fs::copy(f.run.join(&name), old.join(&name)).unwrap();
        }
    }
    let mut manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(old.join("run.json")).unwrap()).unwrap();
    manifest["format"] = 1.into();
    std::fs::write(old.join("run.json"), manifest.to_string()).unwrap();
    let err = fail(&old, &f.corpus);
    assert!(
        err.contains(&format!("{}/run.json", s(&old))) && err.contains("output format 1"),
        "{err}"
    );

    // Another corpus (other events).
    let other = synth(&dir.path().join("other"), 3, 5);
    let err = fail(&f.run, &other);
    assert!(
        err.contains(&format!(
            "corpus {} does not match run {}",
            s(&other),
            s(&f.run)
        )) && err.contains("segments in the corpus"),
        "{err}"
    );

    // A trial the run does not have (no LLM: one trial).
    let r = epimine(&[
        "report",
        "--run",
        s(&f.run),
        "--corpus",
        s(&f.corpus),
        "--out",
        s(&out),
        "--trial",
        "1",
    ]);
    assert!(!r.status.success() && !out.exists());
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(err.contains("--trial 1: the run has trials 0..1"), "{err}");

    // -h documents the command.
    let help = epimine_ok(&["report", "-h"]);
    for flag in [
        "--run",
        "--corpus",
        "--out",
        "--top-segments",
        "--order",
        "--trial",
    ] {
        assert!(help.contains(flag), "{help}");
    }
}

/// `chromium` from scripts/ci/chromium.sh (`EPIMINE_CHROMIUM`). Without it the test is skipped
/// with a message, unless `EPIMINE_REQUIRE_CHROMIUM=1` (set by scripts/ci/test.sh) says it must
/// run.
fn chromium() -> Option<String> {
    match std::env::var("EPIMINE_CHROMIUM") {
        Ok(bin) => Some(bin),
        Err(_) if std::env::var("EPIMINE_REQUIRE_CHROMIUM").as_deref() == Ok("1") => panic!(
            "EPIMINE_REQUIRE_CHROMIUM=1 but EPIMINE_CHROMIUM is not set: install it with \
             `eval \"$(scripts/ci/chromium.sh)\"` (scripts/ci/test.sh does)"
        ),
        Err(_) => {
            eprintln!(
                "skipping the headless-Chromium test: EPIMINE_CHROMIUM is not set (run \
                 `eval \"$(scripts/ci/chromium.sh)\"` first; scripts/ci/test.sh does)"
            );
            None
        }
    }
}

/// Runs headless Chromium on `url` with `args`, at most two minutes; returns stdout.
fn headless(bin: &str, profile: &Path, args: &[&str], url: &str) -> String {
    let mut child = Command::new(bin)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--hide-scrollbars",
            &format!("--user-data-dir={}", s(profile)),
        ])
        .args(args)
        .arg(url)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromium starts");
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut text).map(|_| text)
    });
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "chromium {args:?} {url}: {status}");
            break;
        }
        if Instant::now() > deadline {
            child.kill().ok();
            child.wait().ok();
            panic!("chromium {args:?} {url} did not finish in 120 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    reader.join().unwrap().unwrap()
}

#[test]
fn the_page_works_in_headless_chromium() {
    let Some(bin) = chromium() else { return };
    let f = fixture();
    let dir = scratch();
    let page = dir.path().join("report.html");
    report(f, &page, &[]);
    let profile = dir.path().join("profile");
    let url = format!("file://{}", s(&page));
    let (ids, days) = expected(f);

    // The DOM after the script ran: every event and episode, one mark per episode-day.
    let dom = headless(&bin, &profile, &["--dump-dom"], &url);
    assert!(
        dom.contains("3 of 3 key events shown"),
        "the script ran: {dom}"
    );
    assert!(
        !dom.contains("<form id=\"filters\" hidden"),
        "filters shown"
    );
    let secs = sections(&dom);
    assert_eq!(secs.len(), 3);
    assert!(secs.values().all(|(tag, _)| !tag.contains("hidden")));
    for (event, want) in &ids {
        let (_, body) = &secs[event];
        let shown: BTreeSet<u32> = between(body, "data-episode-id=\"", "\"")
            .iter()
            .map(|i| i.parse().unwrap())
            .collect();
        assert_eq!(&shown, want, "{event}: episodes in the DOM");
        assert_eq!(marks(body), days[event], "{event}: marks in the DOM");
    }

    // The search box, from the query string: a word only the first event has.
    let (first, second) = {
        let mut it = ids.keys();
        (it.next().unwrap().clone(), it.next().unwrap().clone())
    };
    let word = secs[&first]
        .1
        .split(|c: char| !c.is_alphanumeric())
        .find(|w| w.len() > 6 && !secs[&second].1.contains(w))
        .expect("a word of the first event only")
        .to_string();
    let dom = headless(&bin, &profile, &["--dump-dom"], &format!("{url}?q={word}"));
    let secs = sections(&dom);
    let visible: Vec<&String> = secs
        .iter()
        .filter(|(_, (tag, _))| !tag.contains("hidden"))
        .map(|(k, _)| k)
        .collect();
    assert_eq!(visible, vec![&first], "search {word}");
    assert!(dom.contains("1 of 3 key events shown"));

    // The event filter.
    let dom = headless(
        &bin,
        &profile,
        &["--dump-dom"],
        &format!("{url}?event=zz_tiny_event"),
    );
    let visible: Vec<String> = sections(&dom)
        .into_iter()
        .filter(|(_, (tag, _))| !tag.contains("hidden"))
        .map(|(k, _)| k)
        .collect();
    assert_eq!(visible, vec!["zz_tiny_event".to_string()]);

    // A screenshot: a PNG is written (its pixels are not checked).
    let png = dir.path().join("report.png");
    headless(
        &bin,
        &profile,
        &[
            &format!("--screenshot={}", s(&png)),
            "--window-size=1100,900",
        ],
        &url,
    );
    let bytes = std::fs::read(&png).expect("a screenshot");
    assert!(
        bytes.starts_with(b"\x89PNG") && bytes.len() > 10_000,
        "{}",
        bytes.len()
    );
}

#[test]
fn llm_titles_are_shown_escaped() {
    let f = fixture();
    let dir = scratch();
    // A copy of the run whose first episode has an LLM title (run.json's list of tables
    // updated, so that it is still one whole run).
    let run = dir.path().join("run");
    copy_tree(&f.run, &run);
    let loc = Location::parse(s(&run), false).unwrap();
    let mut episodes: Vec<Episode> = block_on(loc.read_table()).unwrap();
    episodes[0].source = "llm".into();
    episodes[0].title = "Officials <i>evacuate</i> the town & shelter".into();
    block_on(loc.write_table(&episodes)).unwrap();
    let bytes = std::fs::read(run.join("episodes.parquet")).unwrap();
    let mut manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("run.json")).unwrap()).unwrap();
    for t in manifest["tables"].as_array_mut().unwrap() {
        if t["name"] == "episodes.parquet" {
            t["sha256"] = epimine::digest::sha256_hex(&bytes).into();
            t["bytes"] = bytes.len().into();
        }
    }
    manifest["llm"] = serde_json::json!({"backend": "openai", "model": "small <model>"});
    std::fs::write(run.join("run.json"), manifest.to_string()).unwrap();

    let out = dir.path().join("r.html");
    epimine_ok(&[
        "report",
        "--run",
        s(&run),
        "--corpus",
        s(&f.corpus),
        "--out",
        s(&out),
    ]);
    let html = std::fs::read_to_string(&out).unwrap();
    let (_, body) = &sections(&html)[&episodes[0].key_event];
    let heading = format!(
        "<h3>{} · Officials &lt;i&gt;evacuate&lt;/i&gt; the town &amp; shelter</h3>",
        episodes[0]
            .stable_id
            .map_or_else(|| episodes[0].episode_id.to_string(), |s| format!("#{s}"))
    );
    assert!(body.contains(&heading), "{body}");
    assert!(html.contains("titles by openai small &lt;model&gt;"));
    // Its keywords follow the LLM title.
    assert!(body.contains(&format!(
        "<div class=\"kw\">{}</div>",
        episodes[0].keywords.join(", ")
    )));
}

/// A copy of the folder `from` (and everything below it) as `to`.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Issue 65's report items: a page of one event opens it; the timeline numbers the episodes as
/// their cards do (their ids across runs, `#n`); each card is headed by the episode's title (no
/// keywords list) with its keywords under it; a link to `#ev-0` opens the event's section.
#[test]
fn one_event_is_open_and_the_timeline_and_cards_share_numbers_and_titles() {
    let dir = scratch();
    let corpus = synth(dir.path(), 1, 20);
    let run = dir.path().join("run");
    ok(synth_run_with(&corpus, s(&run), &tiny_model())
        .output()
        .unwrap());
    let out = dir.path().join("r.html");
    epimine_ok(&[
        "report",
        "--run",
        s(&run),
        "--corpus",
        s(&corpus),
        "--out",
        s(&out),
    ]);
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(html.contains("<details open><summary>"), "one event, open");
    let episodes: Vec<Episode> =
        block_on(Location::parse(s(&run), false).unwrap().read_table()).unwrap();
    assert!(!episodes.is_empty());
    for e in episodes.iter().filter(|e| e.trial == 0) {
        let id = e.stable_id.expect("a run's episodes have ids");
        assert!(
            html.contains(&format!(
                "<h3>#{id} · {}",
                epimine::report::escape(&e.title)
            )),
            "{}",
            e.title
        );
        assert!(
            html.contains(&format!("\">#{id} · ")),
            "timeline label #{id}"
        );
        assert!(html.contains(&format!(
            "<div class=\"kw\">{}</div>",
            epimine::report::escape(&e.keywords.join(", "))
        )));
    }
    assert!(html.contains("t.closest('details')||t.querySelector('details')"));
}
