//! Progress for a Python callback (the package draws it with `tqdm.auto`): while a command that
//! was given one works, the library's stages and bars report to [`Hub`] instead of the
//! terminal ([`epimine::progress::observe`]); the waiting thread hands what changed to the
//! callback ([`Watch::drain`]).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};

use epimine::progress::{observe, Observer, Update};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// Where one stage or bar stands.
#[derive(Debug, Clone, Default)]
struct BarState {
    name: String,
    /// `None`: a stage (no count).
    total: Option<u64>,
    done: u64,
    message: String,
    /// The summary, once ended.
    finished: Option<String>,
    /// Changed since the callback last saw it.
    changed: bool,
}

/// What the library's stages and bars reported, by id.
#[derive(Default)]
struct Hub {
    bars: Mutex<BTreeMap<u64, BarState>>,
}

impl Observer for Hub {
    fn update(&self, update: Update<'_>) {
        let mut bars = self.bars.lock().unwrap_or_else(|e| e.into_inner());
        let id = match update {
            Update::Started { id, .. }
            | Update::Counted { id, .. }
            | Update::Message { id, .. }
            | Update::Finished { id, .. } => id,
        };
        let bar = bars.entry(id).or_default();
        match update {
            Update::Started { name, total, .. } => {
                bar.name = name.to_string();
                bar.total = total;
            }
            Update::Counted { done, total, .. } => {
                bar.done = done;
                bar.total = Some(total);
            }
            Update::Message { message, .. } => bar.message = message.to_string(),
            Update::Finished { summary, .. } => bar.finished = Some(summary.to_string()),
        }
        bar.changed = true;
    }
}

/// The hub, and how many commands are being watched now (it observes while one is).
fn hub() -> &'static (Arc<Hub>, Mutex<usize>) {
    static HUB: OnceLock<(Arc<Hub>, Mutex<usize>)> = OnceLock::new();
    HUB.get_or_init(|| (Arc::default(), Mutex::new(0)))
}

/// A command's progress callback, watching the library while the command works.
pub(crate) struct Watch {
    callback: Py<PyAny>,
}

impl Watch {
    /// Starts observing the library for `callback`.
    pub(crate) fn start(callback: Py<PyAny>) -> Self {
        let (hub, watching) = hub();
        let mut n = watching.lock().unwrap_or_else(|e| e.into_inner());
        if *n == 0 {
            observe(Some(Arc::clone(hub) as Arc<dyn Observer>));
        }
        *n += 1;
        Self { callback }
    }

    /// Calls the callback with what changed: a list of dicts (`id`, `name`, `total` (None for
    /// a stage), `done`, `message`, `finished` (the summary, None while it runs)). Ended ones
    /// are forgotten once told.
    pub(crate) fn drain(&self, py: Python<'_>) -> PyResult<()> {
        let changed: Vec<(u64, BarState)> = {
            let mut bars = hub().0.bars.lock().unwrap_or_else(|e| e.into_inner());
            let out = bars
                .iter_mut()
                .filter(|(_, b)| b.changed)
                .map(|(id, b)| {
                    b.changed = false;
                    (*id, b.clone())
                })
                .collect();
            bars.retain(|_, b| b.finished.is_none());
            out
        };
        if changed.is_empty() {
            return Ok(());
        }
        let mut updates = Vec::with_capacity(changed.len());
        for (id, bar) in changed {
            let d = PyDict::new(py);
            d.set_item("id", id)?;
            d.set_item("name", bar.name)?;
            d.set_item("total", bar.total)?;
            d.set_item("done", bar.done)?;
            d.set_item("message", bar.message)?;
            d.set_item("finished", bar.finished)?;
            updates.push(d);
        }
        self.callback.call1(py, (updates,))?;
        Ok(())
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let mut n = hub().1.lock().unwrap_or_else(|e| e.into_inner());
        *n = n.saturating_sub(1);
        if *n == 0 {
            observe(None);
        }
    }
}
