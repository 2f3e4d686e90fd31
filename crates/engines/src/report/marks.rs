//! Which run an episode's mark is relative to: the previous run, unless this run changed
//! nothing for its event (a re-run with no new articles), in which case the marks an event
//! showed stay those of the last run that changed something for it (found in `history/`), so
//! that a re-run does not wipe "new since run N".

use std::collections::{BTreeMap, BTreeSet};

use super::error::ReportError;
use crate::run_folder::history::HISTORY_DIR;
use crate::storage::Location;
use crate::tables::{Lineage, Table};

/// Whether a row says nothing changed: its id kept with the same segments and no new article.
fn unchanged(r: &Lineage) -> bool {
    r.status == "continued"
        && r.new_segments == 0
        && r.lost_segments == 0
        && r.new_articles.unwrap_or(0) == 0
}

/// `lineage` (this run's rows) with the rows of every event this run changed nothing for
/// replaced by those of the last run in `history/` that changed something for it (their
/// `episode_id` set to the episode's id in this run, by stable id; rows of episodes that are no
/// longer there dropped). Events no earlier run changed keep their rows.
pub(super) async fn since_last_change(
    run: &Location,
    lineage: Vec<Lineage>,
) -> Result<Vec<Lineage>, ReportError> {
    let Some(this_run) = lineage.first().map(|r| r.run) else {
        return Ok(lineage);
    };
    let mut by_event: BTreeMap<String, Vec<Lineage>> = BTreeMap::new();
    for r in lineage {
        by_event.entry(r.key_event.clone()).or_default().push(r);
    }
    let mut quiet: BTreeSet<String> = by_event
        .iter()
        .filter(|(_, rows)| rows.iter().all(unchanged))
        .map(|(e, _)| e.clone())
        .collect();
    if quiet.is_empty() {
        return Ok(by_event.into_values().flatten().collect());
    }
    let mut files: Vec<String> = run
        .list_folder(HISTORY_DIR)
        .await?
        .into_iter()
        .map(|(name, _, _)| name)
        .filter(|n| n.ends_with(".parquet"))
        .collect();
    files.sort();
    for file in files.iter().rev() {
        // A history file of an earlier format (or unreadable) ends the look-back: the marks
        // are then this run's own.
        let read = match run.read_parquet(file, &Lineage::schema()).await {
            Ok(batches) => Lineage::from_batches(&batches).map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        let rows = match read {
            Ok(rows) => rows,
            Err(e) => {
                tracing::warn!(
                    "{}: not read ({e}); marks since the previous run",
                    run.display_child(file)
                );
                break;
            }
        };
        if rows.first().is_some_and(|r| r.run >= this_run) {
            continue;
        }
        let mut then: BTreeMap<&str, Vec<&Lineage>> = BTreeMap::new();
        for r in &rows {
            if quiet.contains(&r.key_event) {
                then.entry(r.key_event.as_str()).or_default().push(r);
            }
        }
        for (event, old) in then {
            if old.iter().all(|r| unchanged(r)) {
                continue;
            }
            let now = by_event.get_mut(event).expect("a quiet event has rows");
            let ids: BTreeMap<(u32, u32), Option<u32>> = now
                .iter()
                .map(|r| ((r.trial, r.stable_id), r.episode_id))
                .collect();
            *now = old
                .into_iter()
                .filter_map(|r| {
                    let episode_id = match r.episode_id {
                        Some(_) => Some(ids.get(&(r.trial, r.stable_id)).copied().flatten()?),
                        None => None,
                    };
                    Some(Lineage {
                        episode_id,
                        ..r.clone()
                    })
                })
                .collect();
            quiet.remove(event);
        }
        if quiet.is_empty() {
            break;
        }
    }
    Ok(by_event.into_values().flatten().collect())
}
