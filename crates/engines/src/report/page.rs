//! The HTML page: inline styles and script, the index of the events, every event with its
//! timeline and episodes.

use std::fmt::Write as _;

use super::format::{conf, date_or_dash, episode_heading, escape};
use super::options::{ReportOptions, SegmentOrder};
use super::read::Manifest;
use super::timeline::timeline;
use super::view::{EpisodeView, EventView};
use crate::coverage::percent;
use crate::run_folder::manifest::Outcome;

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
.change{font-size:12px;font-weight:normal;padding:1px 6px;border-radius:3px;margin-left:6px;background:#e8f0fd;color:#1d4f9c}.change.new{background:#e5f6e8;color:#1c6b2e}
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
// A link to an episode or an event (the developments, the index) opens its folded section.
function reveal(){
  var t=location.hash&&document.getElementById(location.hash.slice(1));
  if(!t)return;
  var d=t.closest('details')||t.querySelector('details');if(d&&!d.open)d.open=true;
  t.scrollIntoView();
}
window.addEventListener('hashchange',reveal);reveal();
})();
"#;

/// The whole page: head, filters, the index of the events, then every event.
pub(super) fn page(
    run_name: &str,
    corpus_name: &str,
    manifest: &Manifest,
    views: &[EventView],
    developments: &[crate::tables::Development],
    options: &ReportOptions,
) -> String {
    let mut out = String::with_capacity(64 * 1024);
    let n_failed = views
        .iter()
        .filter(|v| v.line.status != Outcome::Ok)
        .count();
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
    developments_section(&mut out, views, developments, options.trial);
    index(&mut out, views);
    for (i, v) in views.iter().enumerate() {
        event_section(&mut out, i, v, options, views.len() == 1);
    }
    let _ = write!(out, "<script>{SCRIPT}</script>\n</body>\n</html>\n");
    out
}

/// What happened since the previous run (issue 63), first on the page: each episode of the
/// shown trial that is new, grown with articles that arrived since, split, merged or ended,
/// linked to its card, with how many of its articles arrived since. Nothing on a first run.
fn developments_section(
    out: &mut String,
    views: &[EventView],
    developments: &[crate::tables::Development],
    trial: u32,
) {
    let shown: Vec<&crate::tables::Development> =
        developments.iter().filter(|d| d.trial == trial).collect();
    let Some(first) = shown.first() else {
        return;
    };
    let _ = writeln!(
        out,
        "<section id=\"developments\"><h2>What happened in run {} ({} development{})</h2><ul>",
        first.run,
        shown.len(),
        if shown.len() == 1 { "" } else { "s" }
    );
    for d in shown {
        let event = views.iter().position(|v| v.line.key_event == d.key_event);
        let what = match (d.status.as_str(), d.today_articles) {
            ("merged", _) => format!(
                "merged into #{}",
                d.into_id.map_or("?".into(), |i| i.to_string())
            ),
            ("ended", _) => "ended".to_string(),
            (status, Some(t)) => format!(
                "{status}: {t} of its {} articles arrived since",
                d.n_articles
            ),
            (status, None) => format!("{status}: {} articles", d.n_articles),
        };
        let name = format!(
            "{} · #{} {}",
            escape(&d.key_event),
            d.stable_id,
            escape(&d.title)
        );
        let _ = match (event, d.episode_id) {
            (Some(i), Some(id)) => writeln!(
                out,
                "<li class=\"development {}\"><a href=\"#ev-{i}-e{id}\">{name}</a> — {}</li>",
                escape(&d.status),
                escape(&what)
            ),
            _ => writeln!(
                out,
                "<li class=\"development {}\">{name} — {}</li>",
                escape(&d.status),
                escape(&what)
            ),
        };
    }
    out.push_str("</ul></section>\n");
}

/// The index: one row per event.
fn index(out: &mut String, views: &[EventView]) {
    out.push_str("<table id=\"index\"><thead><tr><th>key event</th><th>theme</th><th>status</th><th class=\"n\">segments</th><th class=\"n\">episodes</th><th class=\"n\" title=\"share of the event's segments / articles in some episode\">in an episode</th><th>from</th><th>to</th></tr></thead><tbody>\n");
    for (i, v) in views.iter().enumerate() {
        let status = if v.line.status == Outcome::Ok {
            "ok".to_string()
        } else {
            escape(v.line.status.as_str())
        };
        let _ = writeln!(
            out,
            "<tr class=\"{status}\" data-key-event=\"{k}\"><td><a href=\"#ev-{i}\">{k}</a></td><td>{}</td><td>{status}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{} / {}</td><td>{}</td><td>{}</td></tr>",
            escape(v.theme.unwrap_or("")),
            v.line.segments,
            v.episodes.len(),
            percent(v.assigned_segments, v.line.segments),
            percent(v.assigned_articles, v.articles),
            date_or_dash(v.corpus_days.keys().next().copied()),
            date_or_dash(v.corpus_days.keys().next_back().copied()),
            k = escape(&v.line.key_event),
        );
    }
    out.push_str("</tbody></table>\n");
}

/// One event: a collapsed section with its status, timeline and episodes (open when it is the
/// page's only event).
fn event_section(out: &mut String, i: usize, v: &EventView, options: &ReportOptions, only: bool) {
    let k = escape(&v.line.key_event);
    let open = if only { " open" } else { "" };
    let _ = write!(
        out,
        "<section class=\"event status-{}\" id=\"ev-{i}\" data-key-event=\"{k}\">\n<details{open}><summary><h2>{k}</h2><span class=\"muted\">{} · {} segments · {} episodes · {} – {}</span></summary>\n",
        escape(v.line.status.as_str()),
        escape(v.line.status.as_str()),
        v.line.segments,
        v.episodes.len(),
        date_or_dash(v.corpus_days.keys().next().copied()),
        date_or_dash(v.corpus_days.keys().next_back().copied()),
    );
    if !v.episodes.is_empty() {
        let _ = writeln!(
            out,
            "<p class=\"coverage\">In an episode: {} of {} segments ({}) and {} of {} articles; left out: {} segments, {} articles.</p>",
            v.assigned_segments,
            v.line.segments,
            percent(v.assigned_segments, v.line.segments),
            v.assigned_articles,
            v.articles,
            v.line.segments.saturating_sub(v.assigned_segments),
            v.articles.saturating_sub(v.assigned_articles),
        );
    }
    if v.line.status != Outcome::Ok {
        let _ = writeln!(
            out,
            "<p class=\"error\">{}: {}</p>",
            escape(v.line.status.as_str()),
            escape(v.line.error.as_deref().unwrap_or("no reason given"))
        );
    }
    if !v.episodes.is_empty() {
        timeline(out, v);
    }
    out.push_str("<ol class=\"episodes\">\n");
    for e in &v.episodes {
        episode_item(out, i, v, e, options);
    }
    out.push_str("</ol>\n");
    ended_list(out, v);
    out.push_str("</details>\n</section>\n");
}

/// The previous run's episodes that ended or merged into another in this run: an episode does
/// not vanish without a word (issue 46).
fn ended_list(out: &mut String, v: &EventView) {
    let Some(first) = v.ended.first() else {
        return;
    };
    let _ = writeln!(
        out,
        "<div class=\"ended\"><h3>Ended since run {}</h3><ul>",
        first
            .previous_run
            .map_or("?".to_string(), |r| r.to_string())
    );
    for r in &v.ended {
        let what = match (r.status.as_str(), r.into_id) {
            ("merged", Some(into)) => format!("merged into #{into}"),
            _ => "ended: none of this run's episodes goes on from it".to_string(),
        };
        let _ = writeln!(
            out,
            "<li><span class=\"change ended\">#{}</span> {} <span class=\"muted\">({} segments \
             before; {})</span></li>",
            r.stable_id,
            escape(&r.title),
            r.previous_segments,
            escape(&what)
        );
    }
    out.push_str("</ul></div>\n");
}

/// `, +N new articles, M earlier ones taken in` (each part only when there is one).
fn articles_gained(c: &crate::tables::Lineage) -> String {
    let mut out = String::new();
    if let Some(n) = c.new_articles.filter(|&n| n > 0) {
        out.push_str(&format!(", +{n} new articles"));
    }
    if c.joined_articles > 0 {
        out.push_str(&format!(", {} earlier ones taken in", c.joined_articles));
    }
    out
}

/// The mark of an episode that is new or changed since the previous run (`lineage.parquet`):
/// empty for one that continued unchanged, or without a history.
fn change_mark(e: &EpisodeView) -> String {
    let Some(c) = e.change else {
        return String::new();
    };
    let since = c
        .previous_run
        .map(|p| format!(" since run {p}"))
        .unwrap_or_default();
    let text = match c.status.as_str() {
        "new" if c.previous_run.is_none() => return String::new(),
        "new" => format!("new{since}"),
        "found" => format!("found{since}, mostly in articles already there"),
        "grown" => format!(
            "grew{since}: +{} segments{}",
            c.new_segments,
            articles_gained(c)
        ),
        "shrunk" => format!("shrank{since}: −{} segments", c.lost_segments),
        "split" => format!(
            "split off #{}{since}",
            c.from_ids.first().copied().unwrap_or_default()
        ),
        _ if c.from_ids.len() > 1 => format!(
            "took in #{}{since}",
            c.from_ids[1..]
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", #")
        ),
        _ => return String::new(),
    };
    format!(
        " <span class=\"change {}\" title=\"id #{} across runs (lineage.parquet)\">{}</span>",
        escape(&c.status),
        c.stable_id,
        escape(&text)
    )
}

/// The other episodes of `ep`'s phase (`phase_id`), as the page shows their ids; nothing when it
/// stands alone.
fn phase_note(v: &EventView, ep: &crate::tables::Episode) -> String {
    let others: Vec<String> = v
        .episodes
        .iter()
        .map(|o| o.episode)
        .filter(|o| o.trial == ep.trial && o.phase_id == ep.phase_id)
        .filter(|o| o.episode_id != ep.episode_id)
        .map(|o| {
            o.stable_id
                .map_or_else(|| o.episode_id.to_string(), |s| format!("#{s}"))
        })
        .collect();
    if others.is_empty() {
        String::new()
    } else {
        format!(" · one phase with {}", escape(&others.join(", ")))
    }
}

/// One episode of event `i`: heading, keywords, counts and dates, top segments (each with its
/// article, linked when its id is a URL, and its rank in the episode).
fn episode_item(
    out: &mut String,
    i: usize,
    v: &EventView,
    e: &EpisodeView,
    options: &ReportOptions,
) {
    let ep = e.episode;
    let _ = writeln!(
        out,
        "<li class=\"episode\" id=\"ev-{i}-e{id}\" data-episode-id=\"{id}\"><h3>{shown} · {}{}</h3>",
        escape(&episode_heading(ep)),
        change_mark(e),
        id = ep.episode_id,
        // Its id across runs where it has one (the same number every day), else this run's.
        shown = ep
            .stable_id
            .map_or_else(|| ep.episode_id.to_string(), |s| format!("#{s}")),
    );
    if !ep.keywords.is_empty() {
        let _ = writeln!(
            out,
            "<div class=\"kw\">{}</div>",
            escape(&ep.keywords.join(", "))
        );
    }
    // The outlets that carried it whole in agency copy (issue 65 item 5).
    let carried = match e.carriers {
        0 => String::new(),
        1 => ", carried whole by 1 more article (agency copy)".to_string(),
        n => format!(", carried whole by {n} more articles (agency copy)"),
    };
    let undated = if e.undated > 0 {
        format!(" ({} undated)", e.undated)
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "<div class=\"muted\">{} segments ({} of the event's){undated} in {} articles ({} of its articles){carried} · first {} · peak {} · last {}{}</div>",
        ep.n_segments,
        percent(ep.n_segments as usize, v.line.segments),
        e.own_articles,
        percent(e.own_articles, v.articles),
        date_or_dash(ep.first_date),
        date_or_dash(ep.peak_date),
        date_or_dash(ep.last_date),
        phase_note(v, ep),
    );
    if !e.top.is_empty() {
        out.push_str("<ol class=\"segs\">\n");
        for &(a, s, also) in &e.top {
            let url = s
                .source_id
                .as_deref()
                .filter(|id| id.starts_with("https://") || id.starts_with("http://"));
            let name = match (&s.title, &s.source_id) {
                (Some(t), _) if !t.is_empty() => escape(t),
                (_, Some(id)) if !id.is_empty() && url.is_some() => escape(id),
                (_, Some(id)) if !id.is_empty() => format!("article {}", escape(id)),
                _ => format!("article {}", s.doc_id),
            };
            let article = match url {
                Some(u) => format!(
                    "<a href=\"{}\" rel=\"noopener noreferrer\">{name}</a>",
                    escape(u)
                ),
                None => name,
            };
            // The number for readers is the rank; confidence only when asked to order by it.
            let confidence = match options.order {
                SegmentOrder::Confidence => format!(" · confidence {}", conf(a.confidence)),
                SegmentOrder::Rank => String::new(),
            };
            let also = match also {
                0 => String::new(),
                1 => " · also in 1 other article".to_string(),
                n => format!(" · also in {n} other articles"),
            };
            let _ = writeln!(
                out,
                "<li data-doc=\"{}\" data-seg=\"{}\" data-rank=\"{}\">{}<cite>{article}, {} · #{} of {} in the episode{confidence}{also}</cite></li>",
                s.doc_id,
                s.seg_idx,
                a.rank,
                escape(&s.text),
                date_or_dash(s.doc_date),
                a.rank + 1,
                ep.n_segments,
            );
        }
        out.push_str("</ol>\n");
    }
    out.push_str("</li>\n");
}
