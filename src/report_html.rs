//! `epimine report`: one self-contained HTML page of a run, for people to read.
//!
//! The page holds an index of the run's key events (segments, episodes, date range, status from
//! `run.json`, failed events with their error) and, per event, a timeline of its episodes over
//! publication dates and every episode with its title (the LLM's, or its keywords), size,
//! confidence, first / peak / last date and its top segments with their article's title and
//! date. Nothing is fetched at view time: the styles and the one small script are inline, the
//! timelines are plain inline SVG. Without JavaScript everything is there; with it, a search box
//! and an event filter hide the events that do not match (also driven by the page's query string:
//! `report.html?q=lava&event=2018_hawaii_volcano`).
//!
//! Made for many events: each event is a collapsed `<details>`, only the top N segments of an
//! episode are written ([`ReportOptions::top_segments`]), and a timeline mark is one compact
//! `<rect>` per episode and day: `<rect class="m" data-episode="E" data-day="YYYY-MM-DD"
//! data-count="N" …>`, N the episode's assigned segments published that day.
//!
//! The bytes depend only on the run's files and the corpus (and the options): no clock, no
//! random order; the same run gives the same page.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;

use crate::run::commit::{self, CommitError, Verified};
use crate::storage::{Location, StorageError};
use crate::tables::{Assignment, Episode, Segment};

/// Default number of segments shown per episode.
pub const DEFAULT_TOP_SEGMENTS: usize = 5;

/// The file name written when `--out` is a folder.
pub const DEFAULT_FILE: &str = "report.html";

/// Errors of `epimine report`.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// Reading or writing failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// The corpus could not be read.
    #[error(transparent)]
    Corpus(#[from] crate::corpus::CorpusError),
    /// The run is not one whole committed run of this format.
    #[error(transparent)]
    Run(#[from] CommitError),
    /// The folder holds no `run.json` at all.
    #[error("{0}: no run.json; `epimine report` reads the output folder of `epimine run`")]
    NotARun(String),
    /// `run.json` lacks what the report needs.
    #[error("{location}: {reason}")]
    Manifest {
        /// `run.json`.
        location: String,
        /// What is wrong.
        reason: String,
    },
    /// The corpus is not the one the run read.
    #[error("corpus {corpus} does not match run {run}: {reason}")]
    CorpusMismatch {
        /// The corpus.
        corpus: String,
        /// The run.
        run: String,
        /// What differs.
        reason: String,
    },
    /// The asked trial is not in the run.
    #[error("--trial {trial}: the run has trials 0..{trials}")]
    NoTrial {
        /// Asked.
        trial: u32,
        /// Trials in the run.
        trials: u32,
    },
}

/// Which of an episode's segments the page shows first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SegmentOrder {
    /// The run's own `rank` (0 first): what `episodes.rank` chose (density by default,
    /// confidence with `rank = "confidence"`); the order `epimine eval` takes its top k from.
    Rank,
    /// Classification confidence, highest first (ties by rank).
    Confidence,
}

/// What the page shows.
#[derive(Debug, Clone)]
pub struct ReportOptions {
    /// Segments shown per episode.
    pub top_segments: usize,
    /// In which order.
    pub order: SegmentOrder,
    /// The estimation trial shown (runs with an LLM have several; 0 otherwise).
    pub trial: u32,
}

impl Default for ReportOptions {
    fn default() -> Self {
        Self {
            top_segments: DEFAULT_TOP_SEGMENTS,
            order: SegmentOrder::Rank,
            trial: 0,
        }
    }
}

/// What was written.
#[derive(Debug, Clone)]
pub struct Written {
    /// Where, as the user wrote it.
    pub location: String,
    /// Key events on the page.
    pub events: usize,
    /// Episodes on the page.
    pub episodes: usize,
    /// Bytes.
    pub bytes: usize,
}

/// One event's line of `run.json`.
#[derive(Debug, Clone, serde::Deserialize)]
struct EventLine {
    key_event: String,
    status: String,
    error: Option<String>,
    segments: usize,
}

/// The parts of `run.json` the page shows.
#[derive(Debug, Clone)]
struct Manifest {
    version: String,
    format: u64,
    events: Vec<EventLine>,
    trials: u32,
    llm: Option<String>,
}

fn manifest(run: &Location, json: &[u8]) -> Result<Manifest, ReportError> {
    let location = run.display_child(commit::MANIFEST);
    let bad = |reason: String| ReportError::Manifest {
        location: location.clone(),
        reason,
    };
    let v: serde_json::Value =
        serde_json::from_slice(json).map_err(|e| bad(format!("not JSON: {e}")))?;
    let events: Vec<EventLine> = v
        .get("events")
        .cloned()
        .ok_or_else(|| bad("no `events`".into()))
        .and_then(|e| serde_json::from_value(e).map_err(|e| bad(format!("`events`: {e}"))))?;
    let trials = v
        .pointer("/job/llm/trials")
        .and_then(|t| t.as_u64())
        .unwrap_or(1) as u32;
    let llm = v.get("llm").and_then(|l| {
        Some(format!(
            "{} {}",
            l.get("backend")?.as_str()?,
            l.get("model")?.as_str()?
        ))
    });
    Ok(Manifest {
        version: v
            .get("epimine_version")
            .and_then(|s| s.as_str())
            .unwrap_or("?")
            .to_string(),
        format: v.get("format").and_then(|f| f.as_u64()).unwrap_or(0),
        events,
        trials: if llm.is_some() { trials.max(1) } else { 1 },
        llm,
    })
}

/// Days since 1970-01-01 as `YYYY-MM-DD`.
pub fn iso_day(days: i32) -> String {
    chrono::NaiveDate::from_num_days_from_ce_opt(days + 719_163)
        .map(|d| d.format("%Y-%m-%d").to_string())
        .unwrap_or_else(|| format!("day {days}"))
}

/// HTML-escapes text for element content and quoted attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// The first `n` characters of `text`, with `…` when cut.
fn clip(text: &str, n: usize) -> String {
    match text.char_indices().nth(n) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_string(),
    }
}

/// One episode as the page shows it.
struct EpisodeView<'a> {
    episode: &'a Episode,
    /// Mean confidence of its assigned segments.
    confidence: f64,
    /// (day, assigned segments published that day).
    days: BTreeMap<i32, u32>,
    /// Assigned segments without a date.
    undated: u32,
    /// Top segments by confidence.
    top: Vec<(&'a Assignment, &'a Segment)>,
}

/// One event in the corpus: segments, theme, segments per day.
type CorpusEvent = (usize, Option<String>, BTreeMap<i32, u32>);

/// One event as the page shows it.
struct EventView<'a> {
    line: &'a EventLine,
    theme: Option<&'a str>,
    /// Segments per day in the corpus.
    corpus_days: &'a BTreeMap<i32, u32>,
    episodes: Vec<EpisodeView<'a>>,
}

/// An assigned segment as found in the corpus.
#[derive(Default)]
struct Found {
    /// Its date (`Some` once the corpus held it).
    date: Option<Option<i32>>,
    /// Whether the page shows it (then `segment` is kept).
    shown: bool,
    /// The segment, when shown.
    segment: Option<Segment>,
}

/// Assigned segments by event, then (doc_id, seg_idx).
type FoundMap<'a> = HashMap<&'a str, HashMap<(u32, u32), Found>>;

/// The assignments of one shown episode, in the page's order.
fn ordered(mut segs: Vec<&Assignment>, order: SegmentOrder) -> Vec<&Assignment> {
    segs.sort_by(|a, b| {
        let by_confidence = match order {
            SegmentOrder::Rank => std::cmp::Ordering::Equal,
            SegmentOrder::Confidence => b.confidence.total_cmp(&a.confidence),
        };
        by_confidence
            .then(a.rank.cmp(&b.rank))
            .then(a.doc_id.cmp(&b.doc_id))
            .then(a.seg_idx.cmp(&b.seg_idx))
    });
    segs
}

/// Checks the run, reads it and the corpus, and renders the page. The corpus is read one row
/// group at a time: what is kept of it is the per-event counts per day, the dates of the
/// assigned segments and the texts of the shown ones.
pub async fn render(
    run: &Location,
    corpus: &Location,
    options: &ReportOptions,
) -> Result<(String, usize, usize), ReportError> {
    if commit::verify(run).await? == Verified::NotARun {
        return Err(ReportError::NotARun(run.display().to_string()));
    }
    let manifest = manifest(run, &run.get(commit::MANIFEST).await?)?;
    if options.trial >= manifest.trials {
        return Err(ReportError::NoTrial {
            trial: options.trial,
            trials: manifest.trials,
        });
    }
    let episodes: Vec<Episode> = run.read_table().await?;
    let assignments: Vec<Assignment> = run.read_table().await?;

    // Every assigned segment is looked up in the corpus; the top ones of the shown trial are
    // kept whole.
    let mut found: FoundMap = HashMap::new();
    let mut by_episode: BTreeMap<(&str, u32), Vec<&Assignment>> = BTreeMap::new();
    for a in &assignments {
        found
            .entry(a.key_event.as_str())
            .or_default()
            .entry((a.doc_id, a.seg_idx))
            .or_default();
        if a.trial == options.trial {
            by_episode
                .entry((a.key_event.as_str(), a.episode_id))
                .or_default()
                .push(a);
        }
    }
    let by_episode: BTreeMap<(&str, u32), Vec<&Assignment>> = by_episode
        .into_iter()
        .map(|(k, segs)| (k, ordered(segs, options.order)))
        .collect();
    for ((event, _), segs) in &by_episode {
        let slots = found.get_mut(event).expect("filled above");
        for a in segs.iter().take(options.top_segments) {
            slots
                .get_mut(&(a.doc_id, a.seg_idx))
                .expect("filled above")
                .shown = true;
        }
    }

    let mut per_event: BTreeMap<String, CorpusEvent> = BTreeMap::new();
    for (name, groups) in crate::corpus::segment_files(corpus).await? {
        for group in 0..groups {
            for s in crate::corpus::read_row_group(corpus, &name, group).await? {
                let event = match per_event.get_mut(s.key_event.as_str()) {
                    Some(e) => e,
                    None => per_event.entry(s.key_event.clone()).or_insert((
                        0,
                        s.theme.clone(),
                        BTreeMap::new(),
                    )),
                };
                event.0 += 1;
                if let Some(d) = s.doc_date {
                    *event.2.entry(d).or_default() += 1;
                }
                if let Some(slot) = found
                    .get_mut(s.key_event.as_str())
                    .and_then(|m| m.get_mut(&(s.doc_id, s.seg_idx)))
                {
                    slot.date = Some(s.doc_date);
                    if slot.shown {
                        slot.segment = Some(s);
                    }
                }
            }
        }
    }
    let html = build(
        run.display(),
        corpus.display(),
        &manifest,
        &per_event,
        &found,
        &episodes,
        &assignments,
        &by_episode,
        options,
    )?;
    let shown = episodes.iter().filter(|e| e.trial == options.trial).count();
    Ok((html, manifest.events.len(), shown))
}

/// `epimine report`: renders the page and writes it to `out` (a `.html` file, or a folder that
/// gets `report.html`), whole or not at all (the store writes a temporary object and renames it
/// on local disk; an S3 PUT is atomic).
pub async fn report(
    run: &Location,
    corpus: &Location,
    out: &str,
    options: &ReportOptions,
) -> Result<Written, ReportError> {
    let (html, events, episodes) = render(run, corpus, options).await?;
    let (folder, name) = if out.ends_with(".html") || out.ends_with(".htm") {
        Location::parse_file(out, true)?
    } else {
        (Location::parse(out, true)?, DEFAULT_FILE.to_string())
    };
    let bytes = html.len();
    folder.put(&name, html.into_bytes().into()).await?;
    Ok(Written {
        location: folder.display_child(&name),
        events,
        episodes,
        bytes,
    })
}

#[allow(clippy::too_many_arguments)]
fn build(
    run_name: &str,
    corpus_name: &str,
    manifest: &Manifest,
    per_event: &BTreeMap<String, CorpusEvent>,
    found: &FoundMap,
    episodes: &[Episode],
    assignments: &[Assignment],
    by_episode: &BTreeMap<(&str, u32), Vec<&Assignment>>,
    options: &ReportOptions,
) -> Result<String, ReportError> {
    let mismatch = |reason: String| ReportError::CorpusMismatch {
        corpus: corpus_name.to_string(),
        run: run_name.to_string(),
        reason,
    };
    let listed: BTreeSet<&str> = manifest
        .events
        .iter()
        .map(|e| e.key_event.as_str())
        .collect();
    for line in &manifest.events {
        match per_event.get(line.key_event.as_str()) {
            None => {
                return Err(mismatch(format!(
                    "event `{}` of run.json is not in the corpus",
                    line.key_event
                )))
            }
            Some((n, _, _)) if *n != line.segments && line.status == "ok" => {
                return Err(mismatch(format!(
                    "event `{}` has {n} segments in the corpus, {} in run.json",
                    line.key_event, line.segments
                )))
            }
            _ => {}
        }
    }
    if let Some(extra) = per_event.keys().find(|k| !listed.contains(k.as_str())) {
        return Err(mismatch(format!(
            "event `{extra}` of the corpus is not in run.json"
        )));
    }
    let slot = |a: &Assignment| {
        found
            .get(a.key_event.as_str())
            .and_then(|m| m.get(&(a.doc_id, a.seg_idx)))
            .expect("every assignment has a slot")
    };
    for (row, a) in assignments.iter().enumerate() {
        if slot(a).date.is_none() {
            return Err(mismatch(format!(
                "assignments.parquet row {row}: segment (key_event `{}`, doc_id {}, seg_idx {}) is not in the corpus",
                a.key_event, a.doc_id, a.seg_idx
            )));
        }
    }
    let mut event_episodes: BTreeMap<&str, Vec<&Episode>> = BTreeMap::new();
    for e in episodes.iter().filter(|e| e.trial == options.trial) {
        event_episodes
            .entry(e.key_event.as_str())
            .or_default()
            .push(e);
    }
    let no_segments = Vec::new();
    let mut lines: Vec<&EventLine> = manifest.events.iter().collect();
    lines.sort_by(|a, b| a.key_event.cmp(&b.key_event));
    let views: Vec<EventView> = lines
        .into_iter()
        .map(|line| {
            let (_, theme, corpus_days) = &per_event[line.key_event.as_str()];
            let mut eps = event_episodes
                .remove(line.key_event.as_str())
                .unwrap_or_default();
            eps.sort_by_key(|e| e.episode_id);
            let episodes = eps
                .into_iter()
                .map(|episode| {
                    let segs = by_episode
                        .get(&(line.key_event.as_str(), episode.episode_id))
                        .unwrap_or(&no_segments);
                    let mut days: BTreeMap<i32, u32> = BTreeMap::new();
                    let mut undated = 0;
                    for a in segs {
                        match slot(a).date.flatten() {
                            Some(d) => *days.entry(d).or_default() += 1,
                            None => undated += 1,
                        }
                    }
                    let confidence = if segs.is_empty() {
                        0.0
                    } else {
                        segs.iter().map(|a| a.confidence).sum::<f64>() / segs.len() as f64
                    };
                    let top = segs
                        .iter()
                        .take(options.top_segments)
                        .map(|a| (*a, slot(a).segment.as_ref().expect("shown, so kept")))
                        .collect();
                    EpisodeView {
                        episode,
                        confidence,
                        days,
                        undated,
                        top,
                    }
                })
                .collect();
            EventView {
                line,
                theme: theme.as_deref(),
                corpus_days,
                episodes,
            }
        })
        .collect();
    Ok(page(run_name, corpus_name, manifest, &views, options))
}

const STYLE: &str = r#"
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;max-width:1100px;padding:0 16px 48px;color:#1d2330;background:#fff}
h1{font-size:22px;margin:18px 0 4px}h2{font-size:17px;margin:0;display:inline}h3{font-size:15px;margin:0 0 2px}
.meta,.muted{color:#5a6270}code{font-size:12px}
#filters{position:sticky;top:0;background:#fff;padding:8px 0;border-bottom:1px solid #dde1e7;z-index:2}
#filters input{width:280px;padding:4px 6px}#filters select{max-width:320px;padding:3px}
table{border-collapse:collapse;width:100%;margin:12px 0 20px;font-size:13px}
th,td{text-align:left;padding:3px 8px;border-bottom:1px solid #eceef2;white-space:nowrap}
td.n,th.n{text-align:right}td.err{white-space:normal;color:#a12a2a}
.failed td:first-child a{color:#a12a2a}
section.event{border-top:1px solid #dde1e7;padding:8px 0}
summary{cursor:pointer;padding:4px 0}summary .muted{margin-left:8px}
.status-failed h2{color:#a12a2a}.error{color:#a12a2a}
svg.timeline{display:block;margin:8px 0 6px;max-width:100%;height:auto;font-size:11px}
svg .m{fill:#2f6fd6}svg .c{fill:#b9c0cc}svg text{fill:#3a4150}svg .axis{stroke:#9aa3b1;stroke-width:1}
ol.episodes{padding-left:0;list-style:none;margin:0}
li.episode{margin:10px 0 14px;padding-left:10px;border-left:3px solid #2f6fd6}
.kw{color:#3d5a80}ol.segs{margin:4px 0 0;padding-left:22px}ol.segs li{margin:3px 0}
ol.segs cite{color:#5a6270;font-style:normal;font-size:12px;margin-left:6px}
#tip{position:fixed;pointer-events:none;background:#1d2330;color:#fff;padding:2px 6px;border-radius:3px;font-size:12px;display:none;z-index:3}
"#;

const SCRIPT: &str = r#"
(function(){
var form=document.getElementById('filters'),q=document.getElementById('q'),ev=document.getElementById('ev'),shown=document.getElementById('shown');
var secs=[].slice.call(document.querySelectorAll('section.event'));
var rows=[].slice.call(document.querySelectorAll('#index tbody tr'));
var texts=null;
function apply(){
  var t=q.value.trim().toLowerCase(),e=ev.value,n=0;
  if(t&&!texts){texts=secs.map(function(s){return s.textContent.toLowerCase();});}
  secs.forEach(function(s,i){
    var ok=(!e||s.getAttribute('data-key-event')===e)&&(!t||texts[i].indexOf(t)>=0);
    s.hidden=!ok;rows[i].hidden=!ok;
    if(ok){n++;if(e||t){s.querySelector('details').open=true;}}
  });
  shown.textContent=n+' of '+secs.length+' key events shown';
}
var p=new URLSearchParams(location.search||location.hash.replace(/^#\??/,''));
if(p.get('q')){q.value=p.get('q');}
if(p.get('event')){ev.value=p.get('event');}
q.addEventListener('input',apply);ev.addEventListener('change',apply);
form.hidden=false;apply();
var tip=document.createElement('div');tip.id='tip';document.body.appendChild(tip);
document.addEventListener('mousemove',function(x){
  var m=x.target;
  if(m.classList&&m.classList.contains('m')){
    tip.textContent='episode '+m.getAttribute('data-episode')+' \u00b7 '+m.getAttribute('data-day')+' \u00b7 '+m.getAttribute('data-count')+' segment(s)';
    tip.style.left=(x.clientX+12)+'px';tip.style.top=(x.clientY+12)+'px';tip.style.display='block';
  }else{tip.style.display='none';}
});
})();
"#;

/// The timeline's geometry, in SVG units.
const WIDTH: f64 = 1000.0;
const LABEL: f64 = 220.0;
const ROW: f64 = 18.0;
const BAR: f64 = 15.0;

/// Writes a number with at most one decimal, without a trailing `.0`.
fn num(x: f64) -> String {
    let r = (x * 10.0).round() / 10.0;
    if r.fract() == 0.0 {
        format!("{}", r as i64)
    } else {
        format!("{r:.1}")
    }
}

/// A confidence with three significant digits (they are small: a share of the event's gaps).
fn conf(x: f64) -> String {
    if x == 0.0 || (0.01..1000.0).contains(&x.abs()) {
        format!("{x:.3}")
    } else {
        format!("{x:.2e}")
    }
}

fn episode_heading(e: &Episode) -> String {
    if e.source == "llm" && !e.title.is_empty() {
        e.title.clone()
    } else if !e.keywords.is_empty() {
        e.keywords
            .iter()
            .take(5)
            .cloned()
            .collect::<Vec<_>>()
            .join(", ")
    } else {
        e.title.clone()
    }
}

fn timeline(out: &mut String, ev: &EventView) {
    let first = ev
        .corpus_days
        .keys()
        .next()
        .into_iter()
        .chain(ev.episodes.iter().filter_map(|e| e.days.keys().next()))
        .min()
        .copied();
    let last = ev
        .corpus_days
        .keys()
        .next_back()
        .into_iter()
        .chain(ev.episodes.iter().filter_map(|e| e.days.keys().next_back()))
        .max()
        .copied();
    let (Some(first), Some(last)) = (first, last) else {
        out.push_str("<p class=\"muted\">No dated segments: no timeline.</p>\n");
        return;
    };
    let n_days = (last - first + 1) as f64;
    let plot = WIDTH - LABEL - 10.0;
    let step = plot / n_days;
    let bar_w = (step * 0.85).max(1.0);
    let rows = ev.episodes.len() + 1;
    let height = ROW * rows as f64 + 22.0;
    let max_c = ev.corpus_days.values().copied().max().unwrap_or(1).max(1) as f64;
    let max_e = ev
        .episodes
        .iter()
        .flat_map(|e| e.days.values())
        .copied()
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let x = |d: i32| LABEL + (d - first) as f64 * step + (step - bar_w) / 2.0;
    let _ = writeln!(
        out,
        "<svg class=\"timeline\" viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\" role=\"img\" aria-label=\"segments per day per episode\">",
        num(WIDTH),
        num(height),
        num(WIDTH),
        num(height)
    );
    // The corpus row: every segment of the event per day.
    let _ = writeln!(
        out,
        "<text x=\"0\" y=\"{}\">all segments</text>",
        num(ROW - 5.0)
    );
    for (&d, &n) in ev.corpus_days {
        let h = (BAR * n as f64 / max_c).max(1.0);
        let _ = write!(
            out,
            "<rect class=\"c\" data-day=\"{}\" data-count=\"{n}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>",
            iso_day(d),
            num(x(d)),
            num(ROW - 2.0 - h),
            num(bar_w),
            num(h)
        );
    }
    out.push('\n');
    for (i, e) in ev.episodes.iter().enumerate() {
        let base = ROW * (i + 2) as f64 - 2.0;
        let _ = writeln!(
            out,
            "<text x=\"0\" y=\"{}\">{} · {}</text>",
            num(base - 3.0),
            e.episode.episode_id,
            escape(&clip(&episode_heading(e.episode), 30))
        );
        let id = e.episode.episode_id;
        for (&d, &n) in &e.days {
            let h = (BAR * n as f64 / max_e).max(1.5);
            let _ = write!(
                out,
                "<rect class=\"m\" data-episode=\"{id}\" data-day=\"{}\" data-count=\"{n}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>",
                iso_day(d),
                num(x(d)),
                num(base - h),
                num(bar_w),
                num(h)
            );
        }
        out.push('\n');
    }
    let axis_y = ROW * rows as f64 + 2.0;
    let _ = writeln!(
        out,
        "<line class=\"axis\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>",
        num(LABEL),
        num(axis_y),
        num(WIDTH - 10.0),
        num(axis_y)
    );
    let _ = writeln!(
        out,
        "<text x=\"{}\" y=\"{}\">{}</text><text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
        num(LABEL),
        num(axis_y + 14.0),
        iso_day(first),
        num(WIDTH - 10.0),
        num(axis_y + 14.0),
        iso_day(last)
    );
    if last - first >= 4 {
        let mid = first + (last - first) / 2;
        let _ = writeln!(
            out,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            num(x(mid) + bar_w / 2.0),
            num(axis_y + 14.0),
            iso_day(mid)
        );
    }
    out.push_str("</svg>\n");
}

fn date_or_dash(d: Option<i32>) -> String {
    d.map(iso_day).unwrap_or_else(|| "–".into())
}

fn page(
    run_name: &str,
    corpus_name: &str,
    manifest: &Manifest,
    views: &[EventView],
    options: &ReportOptions,
) -> String {
    let mut out = String::with_capacity(64 * 1024);
    let n_failed = views.iter().filter(|v| v.line.status != "ok").count();
    let n_episodes: usize = views.iter().map(|v| v.episodes.len()).sum();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<meta name=\"generator\" content=\"epimine {}\">\n<title>Episodes: {}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n",
        escape(&manifest.version),
        escape(run_name)
    );
    let _ = writeln!(
        out,
        "<h1>Episodes of {} key event{}</h1>",
        views.len(),
        if views.len() == 1 { "" } else { "s" }
    );
    let trial = if manifest.trials > 1 {
        format!(" · trial {} of {}", options.trial, manifest.trials)
    } else {
        String::new()
    };
    let llm = manifest
        .llm
        .as_deref()
        .map(|l| format!(" · titles by {}", escape(l)))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "<p class=\"meta\">run <code>{}</code> · corpus <code>{}</code> · epimine {} (output format {}) · {} episodes · {} event(s) failed{trial}{llm} · top {} segments per episode by {}</p>",
        escape(run_name),
        escape(corpus_name),
        escape(&manifest.version),
        manifest.format,
        n_episodes,
        n_failed,
        options.top_segments,
        match options.order {
            SegmentOrder::Rank => "the run's rank",
            SegmentOrder::Confidence => "confidence",
        }
    );
    out.push_str("<form id=\"filters\" hidden onsubmit=\"return false\"><label>Search <input id=\"q\" type=\"search\" placeholder=\"words in titles, keywords, segments\"></label> <label>Key event <select id=\"ev\"><option value=\"\">all</option>");
    for v in views {
        let k = escape(&v.line.key_event);
        let _ = write!(out, "<option value=\"{k}\">{k}</option>");
    }
    out.push_str("</select></label> <span id=\"shown\" class=\"muted\"></span></form>\n");

    // The index.
    out.push_str("<table id=\"index\"><thead><tr><th>key event</th><th>theme</th><th>status</th><th class=\"n\">segments</th><th class=\"n\">episodes</th><th>from</th><th>to</th></tr></thead><tbody>\n");
    for (i, v) in views.iter().enumerate() {
        let status = if v.line.status == "ok" {
            "ok".to_string()
        } else {
            escape(&v.line.status)
        };
        let _ = writeln!(
            out,
            "<tr class=\"{status}\" data-key-event=\"{k}\"><td><a href=\"#ev-{i}\">{k}</a></td><td>{}</td><td>{status}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td><td>{}</td></tr>",
            escape(v.theme.unwrap_or("")),
            v.line.segments,
            v.episodes.len(),
            date_or_dash(v.corpus_days.keys().next().copied()),
            date_or_dash(v.corpus_days.keys().next_back().copied()),
            k = escape(&v.line.key_event),
        );
    }
    out.push_str("</tbody></table>\n");

    // The events.
    for (i, v) in views.iter().enumerate() {
        let k = escape(&v.line.key_event);
        let _ = write!(
            out,
            "<section class=\"event status-{}\" id=\"ev-{i}\" data-key-event=\"{k}\">\n<details><summary><h2>{k}</h2><span class=\"muted\">{} · {} segments · {} episodes · {} – {}</span></summary>\n",
            escape(&v.line.status),
            escape(&v.line.status),
            v.line.segments,
            v.episodes.len(),
            date_or_dash(v.corpus_days.keys().next().copied()),
            date_or_dash(v.corpus_days.keys().next_back().copied()),
        );
        if v.line.status != "ok" {
            let _ = writeln!(
                out,
                "<p class=\"error\">{}: {}</p>",
                escape(&v.line.status),
                escape(v.line.error.as_deref().unwrap_or("no reason given"))
            );
        }
        if !v.episodes.is_empty() {
            timeline(&mut out, v);
        }
        out.push_str("<ol class=\"episodes\">\n");
        for e in &v.episodes {
            let ep = e.episode;
            let _ = writeln!(
                out,
                "<li class=\"episode\" id=\"ev-{i}-e{id}\" data-episode-id=\"{id}\"><h3>{id} · {}</h3>",
                escape(&episode_heading(ep)),
                id = ep.episode_id,
            );
            if ep.source == "llm" && !ep.keywords.is_empty() {
                let _ = writeln!(
                    out,
                    "<div class=\"kw\">{}</div>",
                    escape(&ep.keywords.join(", "))
                );
            } else if ep.keywords.len() > 5 {
                let _ = writeln!(
                    out,
                    "<div class=\"kw\">also: {}</div>",
                    escape(&ep.keywords[5..].join(", "))
                );
            }
            let undated = if e.undated > 0 {
                format!(" ({} undated)", e.undated)
            } else {
                String::new()
            };
            let _ = writeln!(
                out,
                "<div class=\"muted\">{} segments{undated} in {} articles · mean confidence {} · first {} · peak {} · last {}</div>",
                ep.n_segments,
                ep.n_articles,
                conf(e.confidence),
                date_or_dash(ep.first_date),
                date_or_dash(ep.peak_date),
                date_or_dash(ep.last_date),
            );
            if !e.top.is_empty() {
                out.push_str("<ol class=\"segs\">\n");
                for (a, s) in &e.top {
                    let article = match (&s.title, &s.source_id) {
                        (Some(t), _) if !t.is_empty() => escape(t),
                        (_, Some(id)) if !id.is_empty() => format!("article {}", escape(id)),
                        _ => format!("article {}", s.doc_id),
                    };
                    let _ = writeln!(
                        out,
                        "<li data-doc=\"{}\" data-seg=\"{}\">{}<cite>{article}, {} · rank {} · confidence {}</cite></li>",
                        s.doc_id,
                        s.seg_idx,
                        escape(&s.text),
                        date_or_dash(s.doc_date),
                        a.rank,
                        conf(a.confidence)
                    );
                }
                out.push_str("</ol>\n");
            }
            out.push_str("</li>\n");
        }
        out.push_str("</ol>\n</details>\n</section>\n");
    }
    let _ = write!(out, "<script>{SCRIPT}</script>\n</body>\n</html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_formats_days() {
        assert_eq!(
            escape("<script>a & 'b' \"c\"</script>"),
            "&lt;script&gt;a &amp; &#39;b&#39; &quot;c&quot;&lt;/script&gt;"
        );
        assert_eq!(iso_day(0), "1970-01-01");
        assert_eq!(iso_day(14_621), "2010-01-12");
        assert_eq!(clip("abcdef", 3), "abc…");
        assert_eq!(clip("abc", 3), "abc");
        assert_eq!(num(2.0), "2");
        assert_eq!(num(2.25), "2.3");
        assert_eq!(conf(0.000177), "1.77e-4");
        assert_eq!(conf(0.5), "0.500");
    }
}
