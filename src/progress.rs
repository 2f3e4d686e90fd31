//! Progress of long work: a spinner per stage on a terminal, plain log lines otherwise.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

/// One running stage. Finishing (or dropping) it logs how long it took.
pub struct Stage {
    name: String,
    bar: Option<ProgressBar>,
    started: Instant,
    done: bool,
}

impl Stage {
    /// Starts a stage named `name`.
    pub fn start(name: &str) -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new_spinner();
            bar.set_style(
                ProgressStyle::with_template("{spinner} {msg} [{elapsed}]")
                    .expect("a valid template"),
            );
            bar.set_message(name.to_string());
            bar.enable_steady_tick(Duration::from_millis(120));
            bar
        });
        if bar.is_none() {
            tracing::info!("{name} …");
        }
        Self {
            name: name.to_string(),
            bar,
            started: Instant::now(),
            done: false,
        }
    }

    /// Ends the stage with a short summary.
    pub fn finish(mut self, summary: &str) {
        self.end(summary);
    }

    fn end(&mut self, summary: &str) {
        if self.done {
            return;
        }
        self.done = true;
        let secs = self.started.elapsed().as_secs_f64();
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
        tracing::info!("{}: {summary} ({secs:.1} s)", self.name);
    }
}

impl Drop for Stage {
    fn drop(&mut self) {
        let summary = if std::thread::panicking() {
            "stopped"
        } else {
            "done"
        };
        self.end(summary);
    }
}

/// A counted stage (e.g. events done of all): a bar on a terminal, a log line per step
/// otherwise.
pub struct Bar {
    name: String,
    bar: Option<ProgressBar>,
    total: u64,
    done: std::cell::Cell<u64>,
    started: Instant,
}

impl Bar {
    /// Starts a bar of `total` steps.
    pub fn start(name: &str, total: u64) -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new(total);
            bar.set_style(
                ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} {msg} [{elapsed}]")
                    .expect("a valid template")
                    .progress_chars("=> "),
            );
            bar.set_prefix(name.to_string());
            bar
        });
        Self {
            name: name.to_string(),
            bar,
            total,
            done: std::cell::Cell::new(0),
            started: Instant::now(),
        }
    }

    /// Shows what is being worked on.
    pub fn set_message(&self, message: &str) {
        match &self.bar {
            Some(bar) => bar.set_message(message.to_string()),
            None => tracing::debug!("{}: {message}", self.name),
        }
    }

    /// One step done.
    pub fn inc(&self) {
        self.inc_by(1);
    }

    /// `n` steps done (nothing to show when `n` is 0).
    pub fn inc_by(&self, n: u64) {
        if n == 0 {
            return;
        }
        self.done.set(self.done.get() + n);
        match &self.bar {
            Some(bar) => bar.inc(n),
            None => tracing::info!("{}: {}/{}", self.name, self.done.get(), self.total),
        }
    }

    /// Ends the bar.
    pub fn finish(self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
        tracing::info!(
            "{}: {} of {} ({:.1} s)",
            self.name,
            self.done.get(),
            self.total,
            self.started.elapsed().as_secs_f64()
        );
    }
}
