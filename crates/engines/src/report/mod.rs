//! `epimine report`: one self-contained HTML page of a run, for people to read.
//!
//! The page holds an index of the run's key events (segments, episodes, the share of segments and
//! articles in an episode, date range, status from `run.json`, failed events with their error)
//! and, per event, what its episodes hold and leave out, a timeline of its episodes over
//! publication dates and every episode with its title (the LLM's, or its keywords), size and
//! share of the event, first / peak / last date and its top segments with their article's title
//! (linked when the article's id is a URL), date and rank in the episode. A baseline's output
//! (no `run.json`) is shown too, every event of the corpus as it is. Nothing is fetched at view
//! time: the styles and the one small script are inline, the timelines are plain inline SVG.
//! An episode that is new, grew, shrank, split off or took others in since the previous run of
//! the same `--out` (its `lineage.parquet`) is marked so (`<span class="change new">`), with its
//! id across runs and what it gained; after a re-run that changed nothing for an event, since
//! the last run that changed something for it (`history/`).
//! Without JavaScript everything is there; with it, a search box and an event filter hide the
//! events that do not match (also driven by the page's query string:
//! `report.html?q=lava&event=2018_hawaii_volcano`).
//!
//! Made for many events: each event is a collapsed `<details>`, only the top N segments of an
//! episode are written ([`ReportOptions::top_segments`]), and a timeline mark is one compact
//! `<rect>` per episode and day: `<rect class="m" data-episode="E" data-day="YYYY-MM-DD"
//! data-count="N" …>`, N the episode's assigned segments published that day.
//!
//! The bytes depend only on the run's files and the corpus (and the options): no clock, no
//! random order; the same run gives the same page.
//!
//! Layout: [`options`](ReportOptions) and [`ReportError`]; `read` takes `run.json`, the
//! assignments and the corpus in; `view` checks that they belong together and builds each event's
//! view; `page` writes the HTML, `timeline` an event's SVG and `format` escapes and formats.

mod error;
mod format;
mod marks;
mod options;
mod page;
mod read;
mod timeline;
mod view;

pub use error::ReportError;
pub use format::{escape, iso_day};
pub use options::{ReportFiles, ReportOptions, SegmentOrder, DEFAULT_FILE, DEFAULT_TOP_SEGMENTS};

use crate::run_folder::commit::{self, Verified};
use crate::storage::Location;
use crate::tables::{Assignment, Episode, Lineage, Table};
use page::page;
use read::{assigned_slots, manifest, read_corpus};
use view::{check_corpus, event_views, ViewInputs};

/// Checks the run, reads it and the corpus, and renders the page. The corpus is read one row
/// group at a time: what is kept of it is the per-event counts per day, the dates of the
/// assigned segments and the texts of the shown ones.
pub async fn render(
    run: &Location,
    corpus: &Location,
    options: &ReportOptions,
) -> Result<(String, usize, usize), ReportError> {
    // A baseline's output (`epimine baseline`): its tables, no run.json; every event of the
    // corpus is shown as it is.
    let baseline = commit::verify(run).await? == Verified::NotARun;
    if baseline && !run.exists(&Episode::file_name()).await? {
        return Err(ReportError::NotARun(run.display().to_string()));
    }
    let manifest = if baseline {
        None
    } else {
        Some(manifest(run, &run.get(commit::MANIFEST).await?)?)
    };
    let trials = manifest.as_ref().map_or(1, |m| m.trials);
    if options.trial >= trials {
        return Err(ReportError::NoTrial {
            trial: options.trial,
            trials,
        });
    }
    // The tables of the run whose run.json was read, even while another commits.
    let tables = crate::run_folder::versions::tables_of(run).await;
    let episodes: Vec<Episode> = tables.read_table().await?;
    let assignments: Vec<Assignment> = tables.read_table().await?;

    // Every assigned segment is looked up in the corpus; the top ones of the shown trial are
    // kept whole.
    let (mut found, by_episode) = assigned_slots(&assignments, options);
    let per_event = read_corpus(corpus, &mut found).await?;
    let copies: std::collections::BTreeMap<String, Vec<crate::tables::CopyArticle>> =
        crate::corpus::read_facts(corpus)
            .await?
            .into_iter()
            .map(|(event, facts)| (event, facts.copies))
            .collect();
    let manifest = match manifest {
        Some(m) => m,
        None => read::baseline_manifest(&per_event, &episodes),
    };
    // The run's history (`epimine run` since issue 39): what is new or grew since the previous
    // run of the same `--out`. A run without one shows no marks.
    // A re-run that changed nothing for an event keeps the marks of the last run that did.
    let lineage: Vec<Lineage> = if !baseline && run.exists(&Lineage::file_name()).await? {
        marks::since_last_change(run, tables.read_table().await?).await?
    } else {
        Vec::new()
    };
    let inputs = ViewInputs {
        run_name: run.display(),
        corpus_name: corpus.display(),
        manifest: &manifest,
        per_event: &per_event,
        found: &found,
        by_episode: &by_episode,
        lineage: &lineage,
        copies: &copies,
    };
    check_corpus(&inputs, &assignments)?;
    let views = event_views(&inputs, &episodes, options);
    // What happened in the run, first on the page: on a run that followed another only.
    let developments: Vec<crate::tables::Development> =
        if lineage.iter().any(|l| l.previous_run.is_some()) {
            crate::tables::Development::of(&lineage)
        } else {
            Vec::new()
        };
    let html = page(
        run.display(),
        corpus.display(),
        &manifest,
        &views,
        &developments,
        options,
    );
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
) -> Result<ReportFiles, ReportError> {
    let (html, events, episodes) = render(run, corpus, options).await?;
    let (folder, name) = if out.ends_with(".html") || out.ends_with(".htm") {
        Location::parse_file(out, true)?
    } else {
        (Location::parse(out, true)?, DEFAULT_FILE.to_string())
    };
    let bytes = html.len();
    folder.put(&name, html.into_bytes().into()).await?;
    Ok(ReportFiles {
        location: folder.display_child(&name),
        events,
        episodes,
        bytes,
    })
}
