//! Every event folder of a dataset found and its files read.

use std::collections::{BTreeMap, BTreeSet};

use super::error::ImportError;
use super::files::{EventFiles, DATES_FILE, EPISODES_FILE, GROUNDTRUTH_FILE, SEGMENTS_FILE};
use crate::storage::Location;

/// Finds every event folder below `src` and reads its files.
pub async fn read_event_files(src: &Location) -> Result<Vec<EventFiles>, ImportError> {
    let names = src.list().await?;
    let mut events: BTreeMap<String, EventFiles> = BTreeMap::new();
    for name in &names {
        let Some(dir) = name
            .strip_suffix(SEGMENTS_FILE)
            .filter(|d| d.is_empty() || d.ends_with('/'))
        else {
            continue;
        };
        let dir = dir.trim_end_matches('/');
        let mut parts: Vec<&str> = dir.split('/').filter(|p| !p.is_empty()).collect();
        let key_event = match parts.pop() {
            Some(event) => event.to_string(),
            // segments.txt right in the dataset folder: the folder itself is the event.
            None => src
                .display()
                .rsplit('/')
                .next()
                .filter(|n| !n.is_empty())
                .unwrap_or("event")
                .to_string(),
        };
        let theme = parts.pop().map(str::to_string);
        let child = |file: &str| {
            if dir.is_empty() {
                file.to_string()
            } else {
                format!("{dir}/{file}")
            }
        };
        let optional = |file: &str| {
            let path = child(file);
            names.binary_search(&path).is_ok().then_some(path)
        };
        let dir_display = if dir.is_empty() {
            src.display().to_string()
        } else {
            src.display_child(dir)
        };
        let mut files = EventFiles {
            key_event: key_event.clone(),
            theme,
            dir: dir_display,
            segments: src.get(&child(SEGMENTS_FILE)).await?.to_vec(),
            dates: None,
            groundtruth: None,
            episodes: None,
        };
        if let Some(p) = optional(DATES_FILE) {
            files.dates = Some(src.get(&p).await?.to_vec());
        }
        if let Some(p) = optional(GROUNDTRUTH_FILE) {
            files.groundtruth = Some(src.get(&p).await?.to_vec());
        }
        if let Some(p) = optional(EPISODES_FILE) {
            files.episodes = Some(src.get(&p).await?.to_vec());
        }
        if let Some(first) = events.get(&key_event) {
            return Err(ImportError::DuplicateEvent {
                key_event,
                first: first.dir.clone(),
                second: files.dir,
            });
        }
        events.insert(key_event, files);
    }
    if events.is_empty() {
        return Err(ImportError::NoEvents {
            dir: src.display().to_string(),
        });
    }
    for folder in skipped_folders(src, &names) {
        tracing::warn!(
            "{}: no {SEGMENTS_FILE} in this folder beside the events; skipped",
            src.display_child(&folder)
        );
    }
    Ok(events.into_values().collect())
}

/// The folders beside event folders (in the same theme folder) that hold no `segments.txt`:
/// empty ones (local folders only: an object store has no empty folders) and ones with other
/// files. Hidden folders (`.git`, …) are left out.
pub(super) fn skipped_folders(src: &Location, names: &[String]) -> BTreeSet<String> {
    let event_dirs: BTreeSet<&str> = names
        .iter()
        .filter_map(|n| n.strip_suffix(SEGMENTS_FILE))
        .filter_map(|d| d.strip_suffix('/'))
        .filter(|d| !d.is_empty())
        .collect();
    // The folders that hold events ("" for the dataset folder itself).
    let parents: BTreeSet<&str> = event_dirs
        .iter()
        .map(|d| d.rsplit_once('/').map_or("", |(p, _)| p))
        .collect();
    let child = |parent: &str, name: &str| {
        if parent.is_empty() {
            name.to_string()
        } else {
            format!("{parent}/{name}")
        }
    };
    let mut skipped = BTreeSet::new();
    let mut consider = |parent: &str, name: &str| {
        let dir = child(parent, name);
        let has_events = event_dirs
            .iter()
            .any(|d| *d == dir || d.starts_with(&format!("{dir}/")));
        if !name.starts_with('.') && !has_events {
            skipped.insert(dir);
        }
    };
    for parent in &parents {
        let prefix = if parent.is_empty() {
            String::new()
        } else {
            format!("{parent}/")
        };
        for name in names {
            if let Some((folder, _)) = name
                .strip_prefix(&prefix)
                .and_then(|rest| rest.split_once('/'))
            {
                consider(parent, folder);
            }
        }
        if let Some(root) = src.local_path() {
            if let Ok(entries) = std::fs::read_dir(root.join(parent)) {
                for entry in entries.flatten() {
                    if entry.file_type().is_ok_and(|t| t.is_dir()) {
                        consider(parent, &entry.file_name().to_string_lossy());
                    }
                }
            }
        }
    }
    skipped
}
