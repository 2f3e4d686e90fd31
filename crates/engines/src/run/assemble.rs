//! The commit (process 0): the checkpoints of events no longer in the corpus deleted, the final
//! tables streamed from the checkpoints with the history ([`history`]), then `run.json`, all
//! into a version folder of their own; the switch ([`versions::switch`]); then the version
//! published to the top of `--out` and the history's head.

use std::collections::BTreeSet;
use std::time::Instant;

use super::error::RunError;
use super::events::exchange::GatheredReports;
use crate::fault::fault;
use crate::job::Job;
use crate::run_folder::history::writer as history;
use crate::run_folder::manifest::{
    AssemblyMemory, CheckpointSummary, EventStatus, ModelInfo, Outcome, RunReport, StageTime,
    TableEntry,
};
use crate::run_folder::{checkpoint, commit, versions};
use crate::storage::{Location, StorageError};
use crate::tables::{Assignment, Episode, EpisodeArticle, FragmentRow, LeftOut, Pair, Table, Term};
use crate::topology::Cluster;

/// What the commit writes besides the tables: what worker 0 gathered, the model, the stages'
/// times, `job.toml`'s entry, the previous run's episode ids and this run's time.
pub(super) struct Finished {
    pub(super) gathered: GatheredReports,
    pub(super) model: ModelInfo,
    pub(super) stages: Vec<StageTime>,
    pub(super) job_entry: Option<TableEntry>,
    pub(super) previous: history::Previous,
    pub(super) run_time: Option<i64>,
}

/// The commit (process 0), a snapshot commit ([`versions`]): every file of the run written
/// into a version folder of its own (the final tables from the checkpoints, `job.toml`, then
/// `run.json`), `fence` passed (this run still holds `--out`), the switch, then the version
/// published to the names the README gives. Nothing at the top of `--out` changes before the
/// switch; a version left by a failed commit is removed.
pub(super) fn commit_run(
    job: &Job,
    cluster: &Cluster,
    runtime: &tokio::runtime::Runtime,
    out: &Location,
    done: Finished,
    fence: &dyn Fn() -> Result<(), String>,
) -> Result<RunReport, RunError> {
    let run = done.previous.last().map_or(1, |(run, _)| run + 1);
    let folder = versions::new_folder(run);
    // The commit begins: this run's files go into their version while the finished run that
    // was there stays whole.
    super::kept::committing(&folder);
    let written = write_version(job, cluster, runtime, out, &folder, done).and_then(|w| {
        fence().map_err(|reason| RunError::Out {
            location: job.out.clone(),
            reason,
        })?;
        Ok(w)
    });
    let (report, files, committed) = match written {
        Ok(w) => w,
        Err(e) => {
            if let Err(d) = runtime.block_on(versions::delete_folder(out, &folder)) {
                tracing::warn!("cannot remove {}: {d}", out.display_child(&folder));
            }
            return Err(e);
        }
    };
    let record = versions::Record {
        run,
        run_time_ms: committed.run_time_ms(),
        folder: folder.clone(),
        files,
        holder: crate::storage::lock::Holder::this_process("epimine run").describe(),
        committed: crate::run_folder::history::rfc3339(crate::run_folder::history::now_ms()),
    };
    crate::fault::stall("switch");
    if let Err(e) = runtime.block_on(versions::switch(out, &record)) {
        if let Err(d) = runtime.block_on(versions::delete_folder(out, &folder)) {
            tracing::warn!("cannot remove {}: {d}", out.display_child(&folder));
        }
        return Err(e.into());
    }
    super::kept::switched();
    crate::fault::stall("publish");
    runtime.block_on(publish(out, record, committed))?;
    match runtime.block_on(versions::prune(out, job.keep_versions)) {
        Ok(0) => {}
        Ok(n) => tracing::debug!("{}: {n} older version(s) removed", out.display()),
        Err(e) => tracing::warn!("cannot remove older versions: {e}"),
    }
    Ok(report)
}

/// Publishes the committed `record` (with its history's `committed`) unless a newer run
/// committed meanwhile; then, where one did (this run stalled after its switch), publishes the
/// newest again, so that the top of `--out` ends as the newest commit's.
async fn publish(
    out: &Location,
    record: versions::Record,
    committed: history::Committed,
) -> Result<(), RunError> {
    let newer = |r: Option<versions::Record>| r.filter(|n| n.run > record.run);
    if newer(versions::latest(out).await?).is_none() {
        versions::publish(out, &record).await?;
        committed.commit(out).await?;
    }
    if let Some(n) = newer(versions::latest(out).await?) {
        tracing::warn!(
            "{}: run {} ({}) committed after this run's switch; its version is published again",
            out.display(),
            n.run,
            n.holder
        );
        versions::publish(out, &n).await?;
        history::Committed::of(&n).commit(out).await?;
    }
    Ok(())
}

/// Writes every file of this run into the version folder `folder` of `out`: the final tables,
/// the history's state files, `job.toml`, then `run.json`. Returns the run's report, the
/// version's files in the order to publish them (`run.json` last) and the history's commit.
fn write_version(
    job: &Job,
    cluster: &Cluster,
    runtime: &tokio::runtime::Runtime,
    out: &Location,
    folder: &str,
    done: Finished,
) -> Result<(RunReport, Vec<String>, history::Committed), RunError> {
    let Finished {
        gathered,
        model,
        mut stages,
        job_entry,
        previous,
        run_time,
    } = done;
    let started = Instant::now();
    let version = out.folder(folder);
    runtime.block_on(version.put(commit::JOB_FILE, job.to_toml().into_bytes().into()))?;
    let statuses: Vec<EventStatus> = gathered.reports.into_values().map(|r| r.status).collect();
    let deleted = runtime.block_on(delete_stale(out, &statuses))?;
    let rss_before = reset_peak_rss();
    let run_time = run_time.unwrap_or_else(crate::run_folder::history::now_ms);
    let (mut tables, history, committed) = runtime.block_on(assemble_tables(
        out, &version, &statuses, previous, run_time,
    ))?;
    let assembly_memory = rss_before
        .zip(peak_rss())
        .map(|(rss_before_mib, peak_mib)| AssemblyMemory {
            rss_before_mib,
            peak_mib,
        });
    tables.extend(job_entry);
    stages.push(StageTime {
        stage: "write".into(),
        seconds: started.elapsed().as_secs_f64(),
    });
    let summary = CheckpointSummary {
        computed: statuses
            .iter()
            .filter(|s| s.checkpoint == "computed")
            .count(),
        reused: statuses.iter().filter(|s| s.checkpoint == "reused").count(),
        deleted,
        encoded_units: statuses.iter().map(|s| u64::from(s.encoded_units)).sum(),
        waves: gathered.waves,
    };
    let report = RunReport {
        format: checkpoint::FORMAT,
        epimine_version: env!("CARGO_PKG_VERSION"),
        job: job.clone(),
        layout: cluster.clone(),
        model: Some(model),
        stages,
        llm: gathered.llm,
        // Skipped events, and events whose LLM trials fell back to no-LLM episodes.
        partial: statuses.iter().any(|s| {
            s.status != Outcome::Ok || s.llm.as_ref().is_some_and(|l| !l.fallbacks.is_empty())
        }),
        events: statuses,
        checkpoints: summary,
        tables,
        version: folder.to_string(),
        corpus_files: job
            .corpus_location()
            .ok()
            .and_then(|c| crate::corpus::pinned(&c))
            .unwrap_or_default(),
        assembly_memory,
        history: Some(history),
    };
    let json = serde_json::to_string_pretty(&report).map_err(|e| RunError::Out {
        location: out.display_child(commit::MANIFEST),
        reason: e.to_string(),
    })?;
    runtime.block_on(version.put(commit::MANIFEST, json.into_bytes().into()))?;
    let mut files: Vec<String> = report.tables.iter().map(|t| t.name.clone()).collect();
    files.push(commit::MANIFEST.to_string());
    Ok((report, files, committed))
}

/// Deletes the checkpoints of events no longer in the corpus; returns how many.
pub(super) async fn delete_stale(
    out: &Location,
    statuses: &[EventStatus],
) -> Result<usize, StorageError> {
    let current: BTreeSet<String> = statuses
        .iter()
        .map(|s| checkpoint::object_name(&s.key_event))
        .collect();
    let mut deleted = 0;
    for name in out.list().await? {
        if name.starts_with(&format!("{}/", checkpoint::DIR)) && !current.contains(&name) {
            tracing::info!("deleting {name}: its event is no longer in the corpus");
            out.delete(&name).await?;
            deleted += 1;
        }
    }
    Ok(deleted)
}

/// Streams the final tables from the checkpoints, one event at a time in event order, each
/// table whole or not at all, with the history (each event's episodes matched to the previous
/// run's, [`history::Writers`]), and returns their entries for `run.json`, the history's report
/// and what commits it once `run.json` is written.
async fn assemble_tables(
    out: &Location,
    version: &Location,
    statuses: &[EventStatus],
    previous: history::Previous,
    run_time: i64,
) -> Result<
    (
        Vec<TableEntry>,
        crate::run_folder::history::HistoryReport,
        history::Committed,
    ),
    RunError,
> {
    let mut lineage = history::Writers::start(version, previous, run_time)?;
    let mut episodes = version.table_writer::<Episode>()?;
    let mut assignments = version.table_writer::<Assignment>()?;
    let mut fragments = version.table_writer::<FragmentRow>()?;
    let mut terms = version.table_writer::<Term>()?;
    let mut pairs = version.table_writer::<Pair>()?;
    let mut articles = version.table_writer::<EpisodeArticle>()?;
    let mut left_out = version.table_writer::<LeftOut>()?;
    let stage = crate::progress::Bar::start("writing the tables", statuses.len() as u64);
    let streamed = async {
        for status in statuses {
            let mut o = matching_checkpoint(out, status).await?.outputs;
            let ok = status.status == Outcome::Ok;
            let found = ok.then_some(o.episode_keys);
            let event_articles = o
                .event_articles
                .pop()
                .filter(|_| ok)
                .map(|a| a.article_keys);
            // Each episode's id across runs, on its rows of the three tables a user reads.
            let ids = lineage
                .event(&status.key_event, found, event_articles)
                .await?;
            stamp_ids(
                &mut o.episodes,
                &mut o.assignments,
                &mut o.episode_articles,
                &ids,
            );
            episodes.push(o.episodes).await?;
            assignments.push(o.assignments).await?;
            fragments.push(o.fragments).await?;
            terms.push(o.terms).await?;
            pairs.push(o.pairs).await?;
            articles.push(o.episode_articles).await?;
            left_out.push(o.left_out).await?;
            stage.inc();
        }
        Ok(())
    }
    .await;
    if let Err(e) = streamed {
        episodes.abort().await;
        assignments.abort().await;
        fragments.abort().await;
        terms.abort().await;
        pairs.abort().await;
        articles.abort().await;
        left_out.abort().await;
        lineage.abort().await;
        return Err(e);
    }
    stage.finish();
    let mut entries = Vec::new();
    let mut done = |name: String, w: crate::storage::Written| {
        entries.push(TableEntry {
            name,
            sha256: w.sha256,
            rows: w.rows,
            bytes: w.bytes,
        });
        fault("assembly", entries.len());
    };
    done(Episode::file_name(), episodes.finish().await?);
    done(Assignment::file_name(), assignments.finish().await?);
    done(Term::file_name(), terms.finish().await?);
    done(Pair::file_name(), pairs.finish().await?);
    done(FragmentRow::file_name(), fragments.finish().await?);
    done(EpisodeArticle::file_name(), articles.finish().await?);
    done(LeftOut::file_name(), left_out.finish().await?);
    let (written, report, committed) = lineage.finish().await?;
    for (name, w) in written {
        done(name, w);
    }
    Ok((entries, report, committed))
}

/// The checkpoint of `status`'s event in `out`, which must be the one this run wrote (its
/// fingerprint): another run's or none means the processes were not given the same `--out`.
async fn matching_checkpoint(
    out: &Location,
    status: &EventStatus,
) -> Result<checkpoint::Checkpoint, RunError> {
    match checkpoint::read(out, &status.key_event).await? {
        Some(c) if c.fingerprint == status.fingerprint => Ok(c),
        found => Err(RunError::Out {
            location: out.display_child(&checkpoint::object_name(&status.key_event)),
            reason: format!(
                "the checkpoint of {} is {} (every process must be given the same --out, on storage all of them reach: a shared folder or s3://)",
                status.key_event,
                if found.is_some() { "another run's" } else { "missing" }
            ),
        }),
    }
}

/// Puts each episode's stable id and status (`ids`: (trial, episode_id) → both) on its rows of
/// `episodes`, `assignments` and `episode_articles`, and each phase's (the lowest stable id of
/// its episodes) on `episodes`.
fn stamp_ids(
    episodes: &mut [Episode],
    assignments: &mut [Assignment],
    episode_articles: &mut [EpisodeArticle],
    ids: &std::collections::BTreeMap<(u32, u32), (u32, String)>,
) {
    let id = |trial: u32, episode_id: u32| match ids.get(&(trial, episode_id)) {
        Some((stable, status)) => (Some(*stable), Some(status.clone())),
        None => (None, None),
    };
    let mut phase_ids: std::collections::BTreeMap<(u32, u32), u32> = Default::default();
    for e in episodes.iter_mut() {
        (e.stable_id, e.status) = id(e.trial, e.episode_id);
        if let Some(stable) = e.stable_id {
            let phase = phase_ids.entry((e.trial, e.phase_id)).or_insert(stable);
            *phase = (*phase).min(stable);
        }
    }
    for e in episodes.iter_mut() {
        e.phase_stable_id = phase_ids.get(&(e.trial, e.phase_id)).copied();
    }
    for a in assignments {
        (a.stable_id, a.status) = id(a.trial, a.episode_id);
    }
    for a in episode_articles {
        (a.stable_id, a.status) = id(a.trial, a.episode_id);
    }
}

/// A field of `/proc/self/status` in MiB (Linux).
fn status_mib(field: &str) -> Option<f64> {
    let text = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = text.lines().find(|l| l.starts_with(field))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

/// Resets the kernel's peak-RSS mark of this process and returns the resident memory now.
fn reset_peak_rss() -> Option<f64> {
    std::fs::write("/proc/self/clear_refs", "5").ok()?;
    status_mib("VmRSS:")
}

/// The peak resident memory since the last [`reset_peak_rss`].
fn peak_rss() -> Option<f64> {
    status_mib("VmHWM:")
}
