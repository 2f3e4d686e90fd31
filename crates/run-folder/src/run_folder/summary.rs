//! What a finished run says to people: the summary `epimine run` prints last (and the Python
//! face's `Run.summary`), from the run's `run.json` content alone.

use super::manifest::RunReport;

/// Appends one line to `s`.
fn push(s: &mut String, line: String) {
    s.push_str(&line);
    s.push('\n');
}

/// The summary of a run for people (what `epimine run` prints last): events done, what the
/// episodes hold and leave out and why, the history, the LLM's fallbacks, the failed events and
/// what to open next. `out` is where the outputs are.
pub fn summary(report: &RunReport, out: &str) -> String {
    let mut text = String::new();
    let s = &mut text;
    let ok = report
        .events
        .iter()
        .filter(|e| e.status == crate::run_folder::manifest::Outcome::Ok)
        .count();
    let reused = report.checkpoints.reused;
    let episodes: usize = report.events.iter().map(|e| e.counts.episodes).sum();
    push(s, format!(
        "{ok} of {} events done ({reused} reused from their checkpoints), {episodes} episodes; wrote {}/{{episodes,assignments,episode_articles,left_out,fragments,terms,pairs,lineage,developments}}.parquet, job.toml, run.json",
        report.events.len(),
        out
    ));
    coverage(s, report);
    if let Some(h) = &report.history {
        let counts: Vec<String> = h.statuses.iter().map(|(s, n)| format!("{n} {s}")).collect();
        push(
            s,
            format!(
                "history: run {} at {}{}: {} episode(s) {}; see {}/lineage.parquet and {}/{}",
                h.run,
                h.run_time,
                h.previous_run
                    .map(|p| format!(
                        " (matched to run {p} at {})",
                        h.previous_run_time.as_deref().unwrap_or("?")
                    ))
                    .unwrap_or_default(),
                h.statuses.values().sum::<usize>(),
                if counts.is_empty() {
                    "(none)".to_string()
                } else {
                    counts.join(", ")
                },
                out,
                out,
                h.file
            ),
        );
        if h.previous_run.is_some() {
            developments(s, h, out);
        }
        // An episode that ended is said, not left to vanish (issue 46 item 5).
        const ENDED_LISTED: usize = 10;
        for e in h.ended.iter().take(ENDED_LISTED) {
            let what = match e.into_id {
                Some(into) => format!("merged into #{into}"),
                None => "ended".to_string(),
            };
            push(
                s,
                format!(
                    "  {what}: {} #{} \"{}\" ({} segments in run {})",
                    e.key_event,
                    e.stable_id,
                    e.title,
                    e.previous_segments,
                    h.previous_run.unwrap_or(0)
                ),
            );
        }
        if h.ended.len() > ENDED_LISTED {
            push(
                s,
                format!(
                    "  … and {} more that ended or merged (lineage.parquet, status)",
                    h.ended.len() - ENDED_LISTED
                ),
            );
        }
    }
    if report.llm.is_some() {
        llm_fallbacks(s, report);
    }
    for e in report
        .events
        .iter()
        .filter(|e| e.status != crate::run_folder::manifest::Outcome::Ok)
    {
        // The same word as the event's line above and run.json's status (issue 46 item 7).
        push(
            s,
            format!(
                "failed {}: {} (the other events are done; exit code 3)",
                e.key_event,
                e.error.as_deref().unwrap_or("?")
            ),
        );
    }
    push(s, format!(
        "next: epimine report --run {out} --corpus {} --out report.html; each episode's articles: {out}/episode_articles.parquet; each segment left out and why: {out}/left_out.parquet",
        report.job.corpus,
        out = out.trim_end_matches('/')
    ));
    text
}

/// Developments listed one a line in the summary, at most (all of them are in `run.json` and
/// `developments.parquet`).
const DEVELOPMENTS_LISTED: usize = 20;

/// What happened since the previous run (issue 63): the new, grown, split episodes with their
/// articles of today, one a line (ended and merged ones follow as before).
fn developments(s: &mut String, h: &crate::run_folder::history::HistoryReport, out: &str) {
    let live: Vec<&crate::tables::Development> = h
        .developments
        .iter()
        .filter(|d| d.episode_id.is_some())
        .collect();
    let today: u32 = live.iter().filter_map(|d| d.today_articles).sum();
    push(
        s,
        format!(
            "today: {} development(s) since run {} ({today} of their articles arrived since); see {}/developments.parquet",
            live.len(),
            h.previous_run.unwrap_or(0),
            out.trim_end_matches('/')
        ),
    );
    for d in live.iter().take(DEVELOPMENTS_LISTED) {
        let articles = match d.today_articles {
            Some(t) => format!("{t} of {} articles arrived since", d.n_articles),
            None => format!("{} articles", d.n_articles),
        };
        let from = match (d.status.as_str(), d.from_ids.first()) {
            ("split", Some(f)) => format!(", split off #{f}"),
            _ => String::new(),
        };
        push(
            s,
            format!(
                "  {}: {} #{} \"{}\" ({articles}{from})",
                d.status, d.key_event, d.stable_id, d.title
            ),
        );
    }
    if live.len() > DEVELOPMENTS_LISTED {
        push(
            s,
            format!(
                "  … and {} more (developments.parquet)",
                live.len() - DEVELOPMENTS_LISTED
            ),
        );
    }
}

/// Events listed one a line in the summary, at most (all of them are in `run.json`).
const EVENTS_LISTED: usize = 30;

/// ` (why: below-confidence 120, episode-dropped-by-size 40)`, or nothing without reasons.
fn why_left_out<'a>(reasons: impl Iterator<Item = (&'a str, usize)>) -> String {
    let parts: Vec<String> = reasons.map(|(why, n)| format!("{why} {n}")).collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!(" (why: {})", parts.join(", "))
    }
}

/// What the episodes hold and leave out (trial 0): over the run, then per event.
fn coverage(s: &mut String, report: &RunReport) {
    use crate::coverage::{percent, Coverage};
    let first = |e: &crate::run_folder::manifest::EventStatus| e.coverage.first().cloned();
    let total = report
        .events
        .iter()
        .filter_map(first)
        .fold(Coverage::default(), |a, c| Coverage {
            trial: 0,
            segments_assigned: a.segments_assigned + c.segments_assigned,
            segments_left_out: a.segments_left_out + c.segments_left_out,
            articles_assigned: a.articles_assigned + c.articles_assigned,
            articles_left_out: a.articles_left_out + c.articles_left_out,
        });
    let segments = total.segments_assigned + total.segments_left_out;
    if segments == 0 {
        return;
    }
    let trial = if report.events.iter().any(|e| e.coverage.len() > 1) {
        " (trial 0)"
    } else {
        ""
    };
    let mut reasons: std::collections::BTreeMap<&str, usize> = Default::default();
    for e in &report.events {
        for (why, n) in &e.counts.left_out {
            *reasons.entry(why.as_str()).or_default() += n;
        }
    }
    push(
        s,
        format!(
            "{}{trial}; left out: {} segments ({}), {} articles{}",
            total.describe(),
            total.segments_left_out,
            percent(total.segments_left_out, segments),
            total.articles_left_out,
            why_left_out(reasons.iter().map(|(k, v)| (*k, *v)))
        ),
    );
    for e in report.events.iter().take(EVENTS_LISTED) {
        match first(e) {
            Some(c) => push(
                s,
                format!(
                    "  {}: {} episodes in {} phases; {}{}",
                    e.key_event,
                    e.counts.episodes,
                    e.counts.phases,
                    c.describe(),
                    why_left_out(e.counts.left_out.iter().map(|(k, v)| (k.as_str(), *v)))
                ),
            ),
            None => push(
                s,
                format!("  {}: {} (no episodes; why below)", e.key_event, e.status),
            ),
        }
    }
    if report.events.len() > EVENTS_LISTED {
        push(
            s,
            format!(
                "  … and {} more events (each one's `coverage` is in run.json)",
                report.events.len() - EVENTS_LISTED
            ),
        );
    }
}

/// How many events got their episodes from the LLM, and every trial that fell back.
fn llm_fallbacks(s: &mut String, report: &RunReport) {
    let fell_back: Vec<_> = report
        .events
        .iter()
        .filter(|e| e.llm.as_ref().is_some_and(|l| !l.fallbacks.is_empty()))
        .collect();
    let with_llm = report
        .events
        .iter()
        .filter(|e| e.llm.as_ref().is_some_and(|l| l.trials_ok > 0))
        .count();
    push(s, format!(
        "LLM: episodes from the LLM for {with_llm} events; {} events fell back to no-LLM episodes in some trial",
        fell_back.len()
    ));
    for e in fell_back {
        for f in &e.llm.as_ref().expect("filtered").fallbacks {
            push(
                s,
                format!("fell back {} (trial {}): {}", e.key_event, f.trial, f.error),
            );
        }
    }
}
