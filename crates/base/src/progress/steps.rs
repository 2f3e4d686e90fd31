//! Progress inside one long piece of work (one key event's stages): which stage it is in, with
//! its count, so that a user of a big event never watches `events 0/1` for minutes.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::{log_every, Bar};

/// How often a drawn bar's message is refreshed.
const DRAW_EVERY: Duration = Duration::from_millis(250);

/// Where one piece of work stands: its stage (a name and a count of steps) and the steps done.
/// Off a terminal it logs a line (`2021_x: fragment distances 1200/2000 (12 s)`) at most every
/// [`super::LOG_EVERY_SECS`] seconds, and only once the work has run that long, so that small
/// events log nothing; on a terminal it writes the same into the message of `bar` (the events
/// bar). Shared by the threads of the work's parallel loops (counts are atomic).
pub struct Steps<'a> {
    label: String,
    bar: Option<&'a Bar>,
    started: Instant,
    every: Duration,
    /// Milliseconds after `started` of the last line or message.
    last: AtomicU64,
    stage: Mutex<(&'static str, u64)>,
    done: AtomicU64,
    /// Each stage entered so far, with when (seconds after `started`).
    times: Mutex<Vec<(&'static str, f64)>>,
}

impl<'a> Steps<'a> {
    /// Progress of the work `label` (e.g. the key event), shown in `bar`'s message on a terminal.
    pub fn new(label: &str, bar: Option<&'a Bar>) -> Self {
        let drawn = bar.is_some_and(Bar::is_drawn);
        Self {
            label: label.to_string(),
            bar: bar.filter(|b| b.is_drawn()),
            started: Instant::now(),
            every: if drawn { DRAW_EVERY } else { log_every() },
            last: AtomicU64::new(0),
            stage: Mutex::new(("waiting for a thread", 0)),
            done: AtomicU64::new(0),
            // Until its first stage, the work waits for a thread of its pool.
            times: Mutex::new(vec![("waiting for a thread", 0.0)]),
        }
    }

    /// Progress that shows nothing (tests, callers without a user to tell).
    pub fn quiet() -> Steps<'static> {
        Steps {
            label: String::new(),
            bar: None,
            started: Instant::now(),
            every: Duration::MAX,
            last: AtomicU64::new(0),
            stage: Mutex::new(("", 0)),
            done: AtomicU64::new(0),
            times: Mutex::new(Vec::new()),
        }
    }

    /// Enters the stage `name` of `total` steps (0: not counted).
    pub fn stage(&self, name: &'static str, total: usize) {
        if let Ok(mut stage) = self.stage.lock() {
            *stage = (name, total as u64);
        }
        if let Ok(mut times) = self.times.lock() {
            times.push((name, self.elapsed_secs()));
        }
        self.done.store(0, Ordering::Relaxed);
        self.show();
    }

    /// `n` steps of the stage done.
    pub fn inc(&self, n: usize) {
        self.done.fetch_add(n as u64, Ordering::Relaxed);
        self.show();
    }

    /// The line or message, when one is due.
    fn show(&self) {
        if self.every == Duration::MAX {
            return;
        }
        let now = self.started.elapsed();
        let ms = now.as_millis() as u64;
        let last = self.last.load(Ordering::Relaxed);
        let every = self.every.as_millis() as u64;
        if ms < every || ms.saturating_sub(last) < every {
            return;
        }
        // One thread writes the line of this interval.
        if self
            .last
            .compare_exchange(last, ms, Ordering::Relaxed, Ordering::Relaxed)
            .is_err()
        {
            return;
        }
        let (name, total) = self.stage.lock().map(|s| *s).unwrap_or(("", 0));
        let done = self.done.load(Ordering::Relaxed);
        let count = if total > 0 {
            format!(" {done}/{total}")
        } else {
            String::new()
        };
        let secs = now.as_secs_f64();
        match self.bar {
            Some(bar) => bar.set_message(&format!("{}: {name}{count}", self.label)),
            None => tracing::info!("{}: {name}{count} ({secs:.0} s)", self.label),
        }
    }

    /// Seconds since the work started.
    pub fn elapsed_secs(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    /// Seconds spent in each stage, in the order entered (a stage entered twice counts twice).
    pub fn stage_seconds(&self) -> Vec<(&'static str, f64)> {
        let end = self.elapsed_secs();
        let times = self.times.lock().map(|t| t.clone()).unwrap_or_default();
        let mut out: Vec<(&'static str, f64)> = Vec::new();
        for (i, &(name, at)) in times.iter().enumerate() {
            let until = times.get(i + 1).map_or(end, |t| t.1);
            match out.iter_mut().find(|(n, _)| *n == name) {
                Some(entry) => entry.1 += until - at,
                None => out.push((name, until - at)),
            }
        }
        out
    }

    /// Ends the work: when it ran longer than the log interval (when it was worth telling where
    /// it stood), one line with the seconds of each stage; otherwise a debug line.
    pub fn finish(&self) {
        if self.label.is_empty() {
            return;
        }
        let secs = self.elapsed_secs();
        let stages: Vec<String> = self
            .stage_seconds()
            .into_iter()
            .map(|(name, s)| format!("{name} {s:.1} s"))
            .collect();
        let line = format!(
            "{}: stages done in {secs:.1} s ({})",
            self.label,
            stages.join(", ")
        );
        if secs >= log_every().as_secs_f64() {
            tracing::info!("{line}");
        } else {
            tracing::debug!("{line}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_stages_are_kept_and_quiet_progress_shows_nothing() {
        let steps = Steps::new("e", None);
        steps.stage("fragment distances", 10);
        steps.inc(3);
        steps.inc(4);
        assert_eq!(steps.done.load(Ordering::Relaxed), 7);
        assert_eq!(*steps.stage.lock().unwrap(), ("fragment distances", 10));
        steps.stage("classification", 5);
        assert_eq!(steps.done.load(Ordering::Relaxed), 0);
        let times = steps.stage_seconds();
        assert_eq!(
            times.iter().map(|t| t.0).collect::<Vec<_>>(),
            [
                "waiting for a thread",
                "fragment distances",
                "classification"
            ]
        );
        assert!(times.iter().all(|t| t.1 >= 0.0));
        let quiet = Steps::quiet();
        quiet.stage("x", 1);
        quiet.inc(1);
        assert_eq!(quiet.last.load(Ordering::Relaxed), 0);
    }
}
