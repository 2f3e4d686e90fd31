//! Progress of long work: a spinner or bar per stage on a terminal, plain log lines otherwise
//! (a counted stage logs where it stands every [`LOG_EVERY_SECS`] seconds;
//! `EPIMINE_PROGRESS_SECS` sets the interval).
//!
//! A [`Bar`] may be shared by the worker threads of a process. In a run of several processes,
//! each other process reports its bars' counts to process 0 twice a second over a side line
//! ([`report_to`]; [`crate::topology::SideLines`]), and process 0's bars add them
//! ([`Remote`], [`Bar::start_summed`]), so its log counts the whole run.
//!
//! A program that embeds the library (the Python package) may [`observe`] every stage and bar
//! instead of the terminal drawing them: it is told each start, count, message and end
//! ([`Update`]), and draws them its own way (a notebook's bars); the log lines stay as they are.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex, OnceLock, RwLock};
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressStyle};

mod remote;
pub mod steps;
pub use remote::{report_to, Remote, Reporter, SILENT_FOR};

/// What an [`Observer`] is told about a stage or a bar, each known by an `id` unique in the
/// process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Update<'a> {
    /// A stage (`total`: `None`) or a bar of `total` steps started.
    Started {
        /// The stage or bar.
        id: u64,
        /// What it does, e.g. `statistics dataflow` or `events (2 worker(s), 1 wave(s))`.
        name: &'a str,
        /// Steps to do (a bar); `None` for a stage.
        total: Option<u64>,
    },
    /// A bar's steps done and to do (the total may grow as workers add their shares).
    Counted {
        /// The bar.
        id: u64,
        /// Steps done.
        done: u64,
        /// Steps to do.
        total: u64,
    },
    /// What a bar is working on (a key event, a stage inside it).
    Message {
        /// The bar.
        id: u64,
        /// The message.
        message: &'a str,
    },
    /// The stage or bar ended, with its summary.
    Finished {
        /// The stage or bar.
        id: u64,
        /// E.g. `1200 terms of 4 events` or `4 of 4`.
        summary: &'a str,
    },
}

/// Told about every stage and bar started while it is set ([`observe`]); called from the
/// worker threads, so it should only record what it is told.
pub trait Observer: Send + Sync {
    /// One update.
    fn update(&self, update: Update<'_>);
}

fn observer_slot() -> &'static RwLock<Option<Arc<dyn Observer>>> {
    static OBSERVER: OnceLock<RwLock<Option<Arc<dyn Observer>>>> = OnceLock::new();
    OBSERVER.get_or_init(|| RwLock::new(None))
}

/// Sends the progress of every stage and bar started from now on to `observer` instead of
/// drawing it on the terminal (`None`: back to the terminal). Process-wide.
pub fn observe(observer: Option<Arc<dyn Observer>>) {
    *observer_slot().write().unwrap_or_else(|e| e.into_inner()) = observer;
}

/// The observer set now, and a fresh id for what starts.
fn observed() -> Option<(Arc<dyn Observer>, u64)> {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let observer = observer_slot()
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .clone()?;
    Some((observer, NEXT.fetch_add(1, Ordering::Relaxed)))
}

/// Whether a bar or spinner is drawn on the terminal: stderr is one and no [`Observer`] is set.
fn draws(observer: &Option<(Arc<dyn Observer>, u64)>) -> bool {
    observer.is_none() && std::io::stderr().is_terminal()
}

/// One running stage. Finishing (or dropping) it logs how long it took.
pub struct Stage {
    name: String,
    bar: Option<ProgressBar>,
    observer: Option<(Arc<dyn Observer>, u64)>,
    started: Instant,
    done: bool,
}

impl Stage {
    /// Starts a stage named `name`.
    pub fn start(name: &str) -> Self {
        let observer = observed();
        if let Some((o, id)) = &observer {
            o.update(Update::Started {
                id: *id,
                name,
                total: None,
            });
        }
        let bar = draws(&observer).then(|| {
            let bar = multi().add(ProgressBar::new_spinner());
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
            observer,
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
        if let Some((o, id)) = &self.observer {
            o.update(Update::Finished { id: *id, summary });
        }
        tracing::info!("{}: {summary} ({secs:.1} s)", self.name);
    }
}

/// A stage dropped before [`Stage::finish`] did not finish: an error (or a panic) left it, and
/// its line says so rather than `done` (the error itself follows from the caller).
impl Drop for Stage {
    fn drop(&mut self) {
        self.end("stopped, not finished");
    }
}

/// How often a [`Bar`] logs where it stands when stderr is not a terminal (seconds;
/// `EPIMINE_PROGRESS_SECS` overrides it).
pub const LOG_EVERY_SECS: f64 = 5.0;

fn log_every() -> Duration {
    let secs = std::env::var("EPIMINE_PROGRESS_SECS")
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .unwrap_or(LOG_EVERY_SECS);
    Duration::from_secs_f64(secs)
}

/// Every bar and spinner on a terminal, drawn together (several workers' bars at once).
fn multi() -> &'static MultiProgress {
    static MULTI: OnceLock<MultiProgress> = OnceLock::new();
    MULTI.get_or_init(MultiProgress::new)
}

/// What a [`Bar`] counts, shared with its log ticker.
struct Counts {
    name: String,
    total: AtomicU64,
    done: AtomicU64,
    started: Instant,
    /// The other processes' counts of the same bar, added to this one's ([`Remote`]).
    remote: Option<(Arc<Remote>, String)>,
}

impl Counts {
    /// Steps done and to do: this process's, plus the other processes' last reports.
    fn sums(&self) -> (u64, u64) {
        let (mut done, mut total) = (
            self.done.load(Ordering::Relaxed),
            self.total.load(Ordering::Relaxed),
        );
        if let Some((remote, key)) = &self.remote {
            let (d, t) = remote.sum(key);
            done += d;
            total += t;
        }
        (done, total)
    }

    fn line(&self) -> String {
        let (done, total) = self.sums();
        format!(
            "{}: {done}/{total} ({:.0} s)",
            self.name,
            self.started.elapsed().as_secs_f64()
        )
    }
}

/// A counted stage (e.g. events done of all): a bar on a terminal, otherwise a log line every
/// few seconds ([`LOG_EVERY_SECS`]) while it runs and one at the end. It may be shared by the
/// worker threads of a process (each adds its share with [`Bar::add_total`]), and, on the
/// first process of several, count the others' shares too ([`Bar::start_summed`]).
pub struct Bar {
    counts: Arc<Counts>,
    bar: Option<ProgressBar>,
    observer: Option<(Arc<dyn Observer>, u64)>,
    /// Dropped at the end, which stops the log ticker.
    ticker: Mutex<Option<mpsc::Sender<()>>>,
    finished: AtomicBool,
}

impl Bar {
    /// Starts a bar of `total` steps.
    pub fn start(name: &str, total: u64) -> Self {
        Self::start_summed(name, total, None)
    }

    /// Starts a bar of `total` steps to which `remote`'s counts of the bar `key` (the other
    /// processes') are added, as they report them.
    pub fn start_summed(name: &str, total: u64, remote: Option<(Arc<Remote>, String)>) -> Self {
        let summed = remote.is_some();
        let counts = Arc::new(Counts {
            name: name.to_string(),
            total: AtomicU64::new(total),
            done: AtomicU64::new(0),
            started: Instant::now(),
            remote,
        });
        let observer = observed();
        if let Some((o, id)) = &observer {
            o.update(Update::Started {
                id: *id,
                name,
                total: Some(total),
            });
        }
        let bar = draws(&observer).then(|| {
            let bar = multi().add(ProgressBar::new(total));
            bar.set_style(
                ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} {msg} [{elapsed}]")
                    .expect("a valid template")
                    .progress_chars("=> "),
            );
            bar.set_prefix(name.to_string());
            bar
        });
        // Off a terminal, a log line every few seconds; on one, a bar that counts other
        // processes is redrawn from their reports. An observer is told at each step.
        let ticker = if (bar.is_none() && observer.is_none()) || summed {
            let (stop, stopped) = mpsc::channel::<()>();
            let (every, drawn) = match &bar {
                Some(bar) => (Duration::from_millis(250), Some(bar.clone())),
                None => (log_every(), None),
            };
            let shared = Arc::clone(&counts);
            let spawned = std::thread::Builder::new()
                .name("progress".into())
                .spawn(move || {
                    while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(every) {
                        let (done, total) = shared.sums();
                        match &drawn {
                            Some(bar) => {
                                bar.set_length(total);
                                bar.set_position(done);
                            }
                            // Nothing in hand (every step counted so far is done): no line.
                            None if total == 0 || done < total => {
                                tracing::info!("{}", shared.line())
                            }
                            None => {}
                        }
                    }
                });
            spawned.ok().map(|_| stop)
        } else {
            None
        };
        Self {
            counts,
            bar,
            observer,
            ticker: Mutex::new(ticker),
            finished: AtomicBool::new(false),
        }
    }

    /// `n` more steps to do (a worker adding its share).
    pub fn add_total(&self, n: u64) {
        self.counts.total.fetch_add(n, Ordering::Relaxed);
        if let Some(bar) = &self.bar {
            match self.counts.remote {
                Some(_) => bar.set_length(self.counts.sums().1),
                None => bar.inc_length(n),
            }
        }
        self.tell_counts();
    }

    /// Whether the bar is drawn (on a terminal, or by an [`Observer`]); otherwise it logs.
    pub fn is_drawn(&self) -> bool {
        self.bar.is_some() || self.observer.is_some()
    }

    /// Shows what is being worked on.
    pub fn set_message(&self, message: &str) {
        if let Some((o, id)) = &self.observer {
            o.update(Update::Message { id: *id, message });
        }
        match &self.bar {
            Some(bar) => bar.set_message(message.to_string()),
            None => tracing::debug!("{}: {message}", self.counts.name),
        }
    }

    /// Tells the observer (when one is set) the counts now.
    fn tell_counts(&self) {
        if let Some((o, id)) = &self.observer {
            let (done, total) = self.counts.sums();
            o.update(Update::Counted {
                id: *id,
                done,
                total,
            });
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
        self.counts.done.fetch_add(n, Ordering::Relaxed);
        if let Some(bar) = &self.bar {
            match self.counts.remote {
                Some(_) => bar.set_position(self.counts.sums().0),
                None => bar.inc(n),
            }
        }
        self.tell_counts();
    }

    /// This process's steps done and to do (not the other processes').
    pub fn local(&self) -> (u64, u64) {
        (
            self.counts.done.load(Ordering::Relaxed),
            self.counts.total.load(Ordering::Relaxed),
        )
    }

    /// Ends the bar (once; later calls do nothing).
    pub fn finish(&self) {
        if self.finished.swap(true, Ordering::SeqCst) {
            return;
        }
        if let Ok(mut ticker) = self.ticker.lock() {
            ticker.take();
        }
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
        let (done, total) = self.counts.sums();
        if let Some((o, id)) = &self.observer {
            o.update(Update::Finished {
                id: *id,
                summary: &format!("{done} of {total}"),
            });
        }
        tracing::info!(
            "{}: {done} of {total} ({:.1} s)",
            self.counts.name,
            self.counts.started.elapsed().as_secs_f64()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records what it is told.
    #[derive(Default)]
    struct Recorder(Mutex<Vec<String>>);

    impl Observer for Recorder {
        fn update(&self, update: Update<'_>) {
            let line = match update {
                Update::Started { name, total, .. } => format!("start {name} {total:?}"),
                Update::Counted { done, total, .. } => format!("count {done}/{total}"),
                Update::Message { message, .. } => format!("message {message}"),
                Update::Finished { summary, .. } => format!("end {summary}"),
            };
            self.0.lock().unwrap().push(line);
        }
    }

    #[test]
    fn an_observer_is_told_every_start_count_message_and_end() {
        let recorder = Arc::new(Recorder::default());
        observe(Some(recorder.clone()));
        let stage = Stage::start("observed stage");
        stage.finish("3 things");
        let bar = Bar::start("observed bar", 2);
        assert!(bar.is_drawn(), "an observed bar counts as drawn");
        bar.add_total(1);
        bar.set_message("event a");
        bar.inc();
        bar.inc_by(2);
        bar.finish();
        observe(None);
        let after = Bar::start("not observed", 1);
        after.finish();
        // Other tests of this process may start bars meanwhile: keep the lines of ours.
        let lines = recorder.0.lock().unwrap().clone();
        let ours: Vec<&str> = lines
            .iter()
            .map(String::as_str)
            .filter(|l| !l.starts_with("start") || l.contains("observed"))
            .collect();
        for expected in [
            "start observed stage None",
            "end 3 things",
            "start observed bar Some(2)",
            "count 0/3",
            "message event a",
            "count 1/3",
            "count 3/3",
            "end 3 of 3",
        ] {
            assert!(ours.contains(&expected), "{expected} missing from {ours:?}");
        }
        assert!(!lines.iter().any(|l| l.contains("not observed")));
    }
}

#[cfg(test)]
mod stage_tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// What `f` logs at info level and above, as text.
    fn logged(f: impl FnOnce()) -> String {
        let buffer = Arc::new(Mutex::new(Vec::<u8>::new()));
        let sink = buffer.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_ansi(false)
            .with_writer(move || SharedWriter(sink.clone()))
            .finish();
        tracing::subscriber::with_default(subscriber, f);
        let text = String::from_utf8_lossy(&buffer.lock().unwrap()).into_owned();
        text
    }

    struct SharedWriter(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for SharedWriter {
        fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(data);
            Ok(data.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_stage_left_by_an_error_says_it_stopped_not_done() {
        fn fails() -> Result<(), String> {
            let stage = Stage::start("statistics dataflow");
            Err("a peer never connected".to_string())?;
            stage.finish("3 terms");
            Ok(())
        }
        let log = logged(|| assert!(fails().is_err()));
        assert!(
            log.contains("statistics dataflow: stopped, not finished"),
            "{log}"
        );
        assert!(!log.contains("statistics dataflow: done"), "{log}");
        let log = logged(|| Stage::start("writing").finish("2 tables"));
        assert!(log.contains("writing: 2 tables"), "{log}");
    }
}
