//! The history of an `--out` (issue 39): at the commit, process 0 matches every event's episodes
//! to the previous committed run's (`crate::lineage`) and writes, with the other tables,
//! `lineage.parquet` (this run's episodes, their ids across runs and what changed) and
//! `_identity/<run>.parquet` (the ids handed on to the next run) with
//! `_identity/<run>.articles.parquet` (each event's articles, so that the next run tells those
//! that arrive from those that were there). Once `run.json` is written,
//! `history/<run>.parquet` (a copy of `lineage.parquet`, kept: `select * from
//! 'out/history/*.parquet'`) and then `_identity/head.json`, naming the last run whose history is
//! committed. So `history/` only ever holds runs that committed. A run killed before its
//! `run.json` leaves the previous head, and the same command again writes the same run number
//! over what the killed one left; one killed after its `run.json` but before its head is
//! finished by the next run (`previous`), which then follows it.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::{rfc3339, EndedEpisode, HistoryError, HistoryReport, HEAD, HISTORY_DIR, STATE_DIR};
use crate::lineage::Stamp;
use crate::run_folder::versions;
use crate::storage::{Location, StorageError, TableWriter, Written};
use crate::tables::{Development, EpisodeKeys, EpisodeState, EventArticles, Lineage, Table};

/// `_identity/head.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Head {
    /// The run's number.
    run: u32,
    /// Its time, ms since 1970 UTC.
    run_time_ms: i64,
    /// The same, readable.
    run_time: String,
    /// Its state file.
    state: String,
}

fn history_file(run: u32) -> String {
    format!("{HISTORY_DIR}/{run:06}.parquet")
}

fn state_file(run: u32) -> String {
    format!("{STATE_DIR}/{run:06}.parquet")
}

/// The articles file beside a state file.
fn articles_file(state: &str) -> String {
    format!("{}.articles.parquet", state.trim_end_matches(".parquet"))
}

/// The previous committed run's head and state, by event (none before the first run).
pub struct Previous {
    head: Option<Head>,
    state: BTreeMap<String, Vec<EpisodeState>>,
    /// Each event's article keys at that run; `None` when its history does not record them
    /// (begun by an earlier version).
    articles: Option<BTreeMap<String, Vec<u64>>>,
}

impl Previous {
    /// The last committed run's number and time (ms since 1970 UTC), if any.
    pub fn last(&self) -> Option<(u32, i64)> {
        self.head.as_ref().map(|h| (h.run, h.run_time_ms))
    }

    /// The key events the last committed run had episodes or articles of.
    pub fn events(&self) -> BTreeSet<String> {
        let mut events: BTreeSet<String> = self.state.keys().cloned().collect();
        if let Some(articles) = &self.articles {
            events.extend(articles.keys().cloned());
        }
        events
    }
}

/// The history part of a committed `run.json`, as read back.
#[derive(Debug, Deserialize)]
struct CommittedRun {
    history: Option<CommittedHistory>,
}

#[derive(Debug, Deserialize)]
struct CommittedHistory {
    run: u32,
    run_time_ms: i64,
}

/// Reads the last committed head and its state. A head that does not parse, or whose state file
/// is missing or unreadable, is an error naming it (ids would otherwise be given again). A run
/// whose `run.json` is written but whose head is not (killed in between) is finished first: its
/// history file and head written, so that this run follows it.
pub async fn previous(out: &Location) -> Result<Previous, HistoryError> {
    let fix = "; to start a new history on purpose (episodes numbered afresh), delete the \
               folders _identity/, history/, _commits/ and _versions/ of --out";
    let mut head: Option<Head> = if out.exists(HEAD).await? {
        Some(
            serde_json::from_slice(&out.get(HEAD).await?).map_err(|e| HistoryError::Out {
                location: out.display_child(HEAD),
                reason: format!("not a history head ({e}){fix}"),
            })?,
        )
    } else {
        None
    };
    head = finish_published(out, head, fix).await?;
    if let Some(run) = unfinished_commit(out, head.as_ref()).await? {
        let committed = Committed {
            head: Head {
                run: run.run,
                run_time_ms: run.run_time_ms,
                run_time: rfc3339(run.run_time_ms),
                state: state_file(run.run),
            },
        };
        tracing::info!(
            "{}: run {} committed but was stopped before its history's head; finishing it",
            out.display(),
            run.run
        );
        head = Some(committed.head.clone());
        committed.commit(out).await?;
    }
    let Some(head) = head else {
        return first_run(out, fix).await;
    };
    check_history_files(out).await;
    let unreadable = |reason: String| HistoryError::Out {
        location: out.display_child(&head.state),
        reason: format!("the episode ids of run {} ({reason}){fix}", head.run),
    };
    let batches = match out.read_parquet(&head.state, &EpisodeState::schema()).await {
        Ok(b) => b,
        // Damaged (cut short, overwritten): the run's own version still holds it whole.
        Err(e) if restore(out, head.run, &head.state, &head.state, &e.to_string()).await => out
            .read_parquet(&head.state, &EpisodeState::schema())
            .await
            .map_err(|e| unreadable(e.to_string()))?,
        Err(e) => return Err(unreadable(e.to_string())),
    };
    let rows = EpisodeState::from_batches(&batches).map_err(|e| unreadable(e.to_string()))?;
    let mut state: BTreeMap<String, Vec<EpisodeState>> = BTreeMap::new();
    for r in rows {
        state.entry(r.key_event.clone()).or_default().push(r);
    }
    let file = articles_file(&head.state);
    let articles = if out.exists(&file).await? {
        read_articles(out, head.run, &file).await
    } else {
        None
    };
    Ok(Previous {
        head: Some(head),
        state,
        articles,
    })
}

/// [`previous`] without a head: a first run, unless the folder holds committed runs (the head
/// or `_identity/` removed or lost), which numbering afresh would give the ids of again.
async fn first_run(out: &Location, fix: &str) -> Result<Previous, HistoryError> {
    // No head: a first run, unless history/ holds committed runs (the head or _identity/
    // was removed or lost): numbering afresh would give their ids again and overwrite them.
    let runs: Vec<String> = out
        .list_folder(HISTORY_DIR)
        .await?
        .into_iter()
        .map(|(name, _, _)| name)
        .filter(|name| name.ends_with(".parquet"))
        .collect();
    if let (Some(first), Some(last)) = (runs.iter().min(), runs.iter().max()) {
        return Err(HistoryError::Out {
            location: out.display_child(HEAD),
            reason: format!(
                "missing, but {} holds {} committed run(s) ({first} … {last}): this run \
                 cannot follow them, and numbering afresh would give their episode ids \
                 again and overwrite their history. Restore {HEAD} and {STATE_DIR}/ from a \
                 copy{fix}",
                out.display_child(HISTORY_DIR),
                runs.len()
            ),
        });
    }
    if let Some(r) = versions::latest(out).await.ok().flatten() {
        return Err(HistoryError::Out {
            location: out.display_child(HEAD),
            reason: format!(
                "missing, but {} holds run {} committed: this run cannot follow it, and \
                 numbering afresh would give its episode ids again. Restore {HEAD} and \
                 {STATE_DIR}/ from a copy{fix}",
                out.display_child(versions::COMMITS_DIR),
                r.run
            ),
        });
    }
    Ok(Previous {
        head: None,
        state: BTreeMap::new(),
        articles: Some(BTreeMap::new()),
    })
}

/// The articles of run `run` handed on to this one (`file`, `_identity/<run>.articles.parquet`),
/// by event. Damaged, it is restored from the run's own version when that is kept; else the run
/// goes on without it, with a warning: it only tells the articles that arrived since (today's
/// counts, `new`, the novelty view), not the episodes' ids, so it is no reason to start the
/// history again.
async fn read_articles(out: &Location, run: u32, file: &str) -> Option<BTreeMap<String, Vec<u64>>> {
    let read = || async {
        let batches = out
            .read_parquet(file, &EventArticles::schema())
            .await
            .map_err(|e| e.to_string())?;
        EventArticles::from_batches(&batches).map_err(|e| e.to_string())
    };
    let rows = match read().await {
        Ok(rows) => rows,
        Err(e) if restore(out, run, file, file, &e).await => read().await.ok()?,
        Err(e) => {
            tracing::warn!(
                "{}: unreadable ({e}); this run does not know which articles arrived since run \
                 {run} (today's counts and `new` are left unknown), its episodes' ids are kept",
                out.display_child(file)
            );
            return None;
        }
    };
    Some(
        rows.into_iter()
            .map(|r| (r.key_event, r.article_keys))
            .collect(),
    )
}

/// Restores the damaged `target` of `out` from `name` in the version folder of run `run` (its
/// commit record's), when that is kept and the copy reads; says so. `why`: what was wrong.
async fn restore(out: &Location, run: u32, name: &str, target: &str, why: &str) -> bool {
    let Ok(record) = versions::read(out, run).await else {
        return false;
    };
    let from = format!("{}/{name}", record.folder);
    if out.parquet_layout(&from).await.is_err() || out.copy(&from, target).await.is_err() {
        return false;
    }
    tracing::warn!(
        "{}: damaged ({why}); restored from {}",
        out.display_child(target),
        out.display_child(&from)
    );
    true
}

/// How many of the newest `history/` files each run checks.
const HISTORY_CHECKED: usize = 64;

/// Checks the newest [`HISTORY_CHECKED`] files of `history/` (their Parquet footers): a damaged
/// one (cut short, overwritten) is restored from its run's kept version (`lineage.parquet`),
/// or named in a warning — `select * from 'out/history/*.parquet'` fails on it. The run does not
/// need them, so nothing stops.
async fn check_history_files(out: &Location) {
    let Ok(found) = out.list_folder(HISTORY_DIR).await else {
        return;
    };
    let mut files: Vec<String> = found
        .into_iter()
        .map(|(name, _, _)| name)
        .filter(|n| n.ends_with(".parquet"))
        .collect();
    files.sort();
    for name in files.iter().rev().take(HISTORY_CHECKED) {
        let Err(e) = out.parquet_layout(name).await else {
            continue;
        };
        let run = name
            .trim_start_matches(&format!("{HISTORY_DIR}/"))
            .trim_end_matches(".parquet")
            .parse::<u32>();
        let restored = match run {
            Ok(run) => restore(out, run, &Lineage::file_name(), name, &e.to_string()).await,
            Err(_) => false,
        };
        if !restored {
            tracing::warn!(
                "{}: unreadable ({e}); a query over history/*.parquet fails on it: restore it \
                 from a copy, or delete it (its run's rows are lost from the history)",
                out.display_child(name)
            );
        }
    }
}

/// The commit after `head` when `_commits/` holds one ([`versions`]): a run stopped between
/// its switch and the end of its publication (or still publishing). `Err` when `_commits/`
/// holds a later run than that: the head was removed or lost.
async fn unpublished(
    out: &Location,
    head: Option<&Head>,
    fix: &str,
) -> Result<Option<versions::Record>, HistoryError> {
    let next = head.map_or(1, |h| h.run + 1);
    let latest = versions::latest(out).await?;
    match latest {
        Some(r) if r.run == next => Ok(Some(r)),
        // Without a head, [`previous`] names what is missing.
        Some(_) if head.is_none() => Ok(None),
        Some(r) if r.run > next => Err(HistoryError::Out {
            location: out.display_child(HEAD),
            reason: format!(
                "{} holds run {} committed, but the history's head is {}: this run cannot                  follow it, and numbering from there would give its episode ids again. Restore                  {HEAD} and {STATE_DIR}/ from a copy{fix}",
                out.display_child(versions::COMMITS_DIR),
                r.run,
                head.map_or("missing".to_string(), |h| format!("run {}", h.run)),
            ),
        }),
        _ => Ok(None),
    }
}

/// [`previous`]'s first step: a committed version not yet wholly published (its run stopped
/// between the switch and its head) is published and its head written; returns the head then.
async fn finish_published(
    out: &Location,
    head: Option<Head>,
    fix: &str,
) -> Result<Option<Head>, HistoryError> {
    let Some(record) = unpublished(out, head.as_ref(), fix).await? else {
        return Ok(head);
    };
    tracing::info!(
        "{}: run {} committed ({}) but its publication was not finished; finishing it",
        out.display(),
        record.run,
        record.folder
    );
    let committed = Committed::of(&record);
    versions::publish(out, &record).await?;
    let head = committed.head.clone();
    committed.commit(out).await?;
    Ok(Some(head))
}

/// The state file of the last committed run (a commit stopped before its head counts as
/// committed, as [`previous`] finishes it); `None` without a history. Read only.
async fn committed_state(out: &Location) -> Result<Option<String>, HistoryError> {
    let head: Option<Head> = if out.exists(HEAD).await? {
        serde_json::from_slice(&out.get(HEAD).await?).ok()
    } else {
        None
    };
    if let Ok(Some(r)) = unpublished(out, head.as_ref(), "").await {
        return Ok(Some(format!("{}/{}", r.folder, state_file(r.run))));
    }
    Ok(match unfinished_commit(out, head.as_ref()).await? {
        Some(run) => Some(state_file(run.run)),
        None => head.map(|h| h.state),
    })
}

/// The last committed run's live episodes of trial 0, by event, each as its segments' stable
/// keys (`episodes.carry`): read only (`committed_state`); empty without a history. Every
/// process reads it.
pub async fn carried(out: &Location) -> Result<BTreeMap<String, Vec<Vec<u64>>>, HistoryError> {
    let Some(state) = committed_state(out).await? else {
        return Ok(BTreeMap::new());
    };
    let unreadable = |reason: String| HistoryError::Out {
        location: out.display_child(&state),
        reason: format!("the previous run's episodes ({reason})"),
    };
    let batches = out
        .read_parquet(&state, &EpisodeState::schema())
        .await
        .map_err(|e| unreadable(e.to_string()))?;
    let mut by_event: BTreeMap<String, Vec<Vec<u64>>> = BTreeMap::new();
    for r in EpisodeState::from_batches(&batches).map_err(|e| unreadable(e.to_string()))? {
        if r.trial == 0 && r.live() && !r.segment_keys.is_empty() {
            by_event
                .entry(r.key_event)
                .or_default()
                .push(r.segment_keys);
        }
    }
    Ok(by_event)
}

/// Each event's article keys at the last committed run (`episodes.novelty`: the articles that
/// arrived since are the others), ascending; empty without a history or where it does not
/// record them (begun by an earlier version). Read only; every process reads it.
pub async fn previous_articles(out: &Location) -> Result<BTreeMap<String, Vec<u64>>, HistoryError> {
    let Some(state) = committed_state(out).await? else {
        return Ok(BTreeMap::new());
    };
    let file = articles_file(&state);
    if !out.exists(&file).await? {
        return Ok(BTreeMap::new());
    }
    let unreadable = |reason: String| HistoryError::Out {
        location: out.display_child(&file),
        reason: format!("the previous run's articles ({reason})"),
    };
    let batches = out
        .read_parquet(&file, &EventArticles::schema())
        .await
        .map_err(|e| unreadable(e.to_string()))?;
    let rows = EventArticles::from_batches(&batches).map_err(|e| unreadable(e.to_string()))?;
    Ok(rows
        .into_iter()
        .map(|r| {
            let mut keys = r.article_keys;
            keys.sort_unstable();
            keys.dedup();
            (r.key_event, keys)
        })
        .collect())
}

/// The run of the committed `run.json` in `out` when it is the one after `head` and its state
/// file is there: a commit stopped between `run.json` and the head.
async fn unfinished_commit(
    out: &Location,
    head: Option<&Head>,
) -> Result<Option<CommittedHistory>, StorageError> {
    if !out.exists(crate::run_folder::commit::MANIFEST).await? {
        return Ok(None);
    }
    let Ok(run) = serde_json::from_slice::<CommittedRun>(
        &out.get(crate::run_folder::commit::MANIFEST).await?,
    ) else {
        return Ok(None);
    };
    let Some(h) = run.history else {
        return Ok(None);
    };
    let next = head.map_or(1, |h| h.run + 1);
    if h.run != next || !out.exists(&state_file(h.run)).await? {
        return Ok(None);
    }
    if !matches!(
        crate::run_folder::commit::verify(out).await,
        Ok(crate::run_folder::commit::Verified::Committed(_))
    ) {
        return Ok(None);
    }
    Ok(Some(h))
}

/// The writers of a run's history, fed one event at a time, in event order.
pub struct Writers {
    stamp: Stamp,
    previous: BTreeMap<String, Vec<EpisodeState>>,
    previous_articles: Option<BTreeMap<String, Vec<u64>>>,
    lineage: TableWriter<Lineage>,
    developments: TableWriter<Development>,
    developed: Vec<Development>,
    state: TableWriter<EpisodeState>,
    articles: TableWriter<EventArticles>,
    statuses: BTreeMap<String, usize>,
    ended: Vec<EndedEpisode>,
}

impl Writers {
    /// Starts this run's history: its number follows the committed head's.
    pub fn start(out: &Location, previous: Previous, run_time: i64) -> Result<Self, StorageError> {
        let run = previous.head.as_ref().map_or(1, |h| h.run + 1);
        let stamp = Stamp {
            run,
            run_time,
            previous: previous.head.as_ref().map(|h| (h.run, h.run_time_ms)),
        };
        Ok(Self {
            stamp,
            previous: previous.state,
            previous_articles: previous.articles,
            lineage: out.table_writer::<Lineage>()?,
            developments: out.table_writer::<Development>()?,
            developed: Vec::new(),
            state: out.table_writer_named::<EpisodeState>(&state_file(run))?,
            articles: out.table_writer_named::<EventArticles>(&articles_file(&state_file(run)))?,
            statuses: BTreeMap::new(),
            ended: Vec::new(),
        })
    }

    /// Matches one event (`found`: its episodes, `None` when it failed; `articles`: the keys of
    /// its articles in this run, `None` when it failed) and writes its rows, after those of
    /// every earlier event the previous run had and this one has not. Returns this event's
    /// stable ids and statuses: (trial, episode_id) → (stable_id, status).
    pub async fn event(
        &mut self,
        key_event: &str,
        found: Option<Vec<EpisodeKeys>>,
        articles: Option<Vec<u64>>,
    ) -> Result<BTreeMap<(u32, u32), (u32, String)>, StorageError> {
        let gone: Vec<String> = self
            .previous
            .keys()
            .take_while(|k| k.as_str() < key_event)
            .cloned()
            .collect();
        for event in gone {
            self.match_one(&event, Some(Vec::new()), Some(Vec::new()))
                .await?;
        }
        self.match_one(key_event, found, articles).await
    }

    async fn match_one(
        &mut self,
        key_event: &str,
        found: Option<Vec<EpisodeKeys>>,
        articles: Option<Vec<u64>>,
    ) -> Result<BTreeMap<(u32, u32), (u32, String)>, StorageError> {
        let known = self.previous.remove(key_event).unwrap_or_default();
        let before = self
            .previous_articles
            .as_mut()
            .map(|m| m.remove(key_event).unwrap_or_default());
        // The articles that arrived since the previous run, where both sides are known.
        let arrived: Option<BTreeSet<u64>> = match (&articles, &before) {
            (Some(now), Some(before)) => {
                let before: BTreeSet<u64> = before.iter().copied().collect();
                Some(
                    now.iter()
                        .copied()
                        .filter(|k| !before.contains(k))
                        .collect(),
                )
            }
            _ => None,
        };
        let m = crate::lineage::match_event(&self.stamp, key_event, known, found, arrived.as_ref());
        // Handed on: this run's articles; a failed event's as they were.
        if let Some(keys) = articles.or(before).filter(|k| !k.is_empty()) {
            self.articles
                .push(vec![EventArticles {
                    key_event: key_event.to_string(),
                    article_keys: keys,
                }])
                .await?;
        }
        let mut ids = BTreeMap::new();
        for r in &m.lineage {
            *self.statuses.entry(r.status.clone()).or_default() += 1;
            if let Some(episode_id) = r.episode_id {
                ids.insert((r.trial, episode_id), (r.stable_id, r.status.clone()));
            }
            if r.trial == 0 && matches!(r.status.as_str(), "ended" | "merged") {
                self.ended.push(EndedEpisode {
                    key_event: r.key_event.clone(),
                    stable_id: r.stable_id,
                    title: r.title.clone(),
                    previous_segments: r.previous_segments,
                    into_id: r.into_id,
                });
            }
        }
        let developments = Development::of(&m.lineage);
        self.developed
            .extend(developments.iter().filter(|d| d.trial == 0).cloned());
        self.developments.push(developments).await?;
        self.lineage.push(m.lineage).await?;
        self.state.push(m.state).await?;
        Ok(ids)
    }

    /// Ends every event the previous run had and this one has not, then publishes the three
    /// files: their entries for `run.json` (in the order written), the report and the head to
    /// write once `run.json` is.
    pub async fn finish(
        mut self,
    ) -> Result<(Vec<(String, Written)>, HistoryReport, Committed), StorageError> {
        let gone: Vec<String> = self.previous.keys().cloned().collect();
        for event in gone {
            self.match_one(&event, Some(Vec::new()), Some(Vec::new()))
                .await?;
        }
        let run = self.stamp.run;
        let written = vec![
            (state_file(run), self.state.finish().await?),
            (
                articles_file(&state_file(run)),
                self.articles.finish().await?,
            ),
            (Lineage::file_name(), self.lineage.finish().await?),
            (Development::file_name(), self.developments.finish().await?),
        ];
        let report = HistoryReport {
            run,
            run_time: rfc3339(self.stamp.run_time),
            run_time_ms: self.stamp.run_time,
            previous_run: self.stamp.previous.map(|p| p.0),
            previous_run_time: self.stamp.previous.map(|p| rfc3339(p.1)),
            file: history_file(run),
            statuses: self.statuses,
            ended: self.ended,
            developments: self.developed,
        };
        let head = Head {
            run,
            run_time_ms: self.stamp.run_time,
            run_time: rfc3339(self.stamp.run_time),
            state: state_file(run),
        };
        Ok((written, report, Committed { head }))
    }

    /// Drops the staged files: nothing appears under their names.
    pub async fn abort(&mut self) {
        self.lineage.abort().await;
        self.developments.abort().await;
        self.state.abort().await;
        self.articles.abort().await;
    }
}

/// A run's history, written; committed by [`Committed::commit`] once `run.json` is.
pub struct Committed {
    head: Head,
}

impl Committed {
    /// The history's commit of a committed version.
    pub fn of(record: &versions::Record) -> Self {
        Self {
            head: Head {
                run: record.run,
                run_time_ms: record.run_time_ms,
                run_time: rfc3339(record.run_time_ms),
                state: state_file(record.run),
            },
        }
    }

    /// This run's time, ms since 1970 UTC.
    pub fn run_time_ms(&self) -> i64 {
        self.head.run_time_ms
    }

    /// Writes `history/<run>.parquet` (this run's `lineage.parquet`, copied whole), then the head
    /// naming this run, then deletes the state files of earlier runs.
    pub async fn commit(self, out: &Location) -> Result<(), StorageError> {
        let rows = out.get(&Lineage::file_name()).await?;
        out.put(&history_file(self.head.run), rows).await?;
        crate::fault::fault("history", 1);
        let json = serde_json::to_vec_pretty(&self.head).expect("heads serialize");
        out.put(HEAD, json.into()).await?;
        for (name, _, _) in out.list_folder(STATE_DIR).await? {
            let kept = name == self.head.state || name == articles_file(&self.head.state);
            if name.ends_with(".parquet") && !kept {
                out.delete(&name).await?;
            }
        }
        Ok(())
    }
}
