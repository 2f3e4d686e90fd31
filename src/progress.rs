//! Progress of long work: a spinner or bar per stage on a terminal, plain log lines otherwise
//! (a counted stage logs where it stands every [`LOG_EVERY_SECS`] seconds;
//! `EPIMINE_PROGRESS_SECS` sets the interval).
//!
//! A [`Bar`] may be shared by the worker threads of a process. In a run of several processes,
//! each other process reports its bars' counts to process 0 twice a second over a side line
//! ([`report_to`]; [`crate::cluster::SideLines`]), and process 0's bars add them
//! ([`Remote`], [`Bar::start_summed`]), so its log counts the whole run.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, IsTerminal, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressStyle};

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
        let bar = std::io::stderr().is_terminal().then(|| {
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
        // processes is redrawn from their reports.
        let ticker = if bar.is_none() || summed {
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
    }

    /// Shows what is being worked on.
    pub fn set_message(&self, message: &str) {
        match &self.bar {
            Some(bar) => bar.set_message(message.to_string()),
            None => tracing::debug!("{}: {message}", self.counts.name),
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
        tracing::info!(
            "{}: {done} of {total} ({:.1} s)",
            self.counts.name,
            self.counts.started.elapsed().as_secs_f64()
        );
    }
}

/// What the other processes of a run last reported of their bars ([`report_to`]), which the
/// first process adds to its own ([`Bar::start_summed`]).
#[derive(Default)]
pub struct Remote {
    state: Mutex<RemoteState>,
    changed: Condvar,
}

#[derive(Default)]
struct RemoteState {
    /// Process → bar key → (done, total).
    counts: BTreeMap<usize, BTreeMap<String, (u64, u64)>>,
    /// The processes whose last report is in (their bars are finished).
    ended: BTreeSet<usize>,
}

impl Remote {
    fn state(&self) -> std::sync::MutexGuard<'_, RemoteState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The other processes' steps done and to do of the bar `key`, summed.
    pub fn sum(&self, key: &str) -> (u64, u64) {
        self.state()
            .counts
            .values()
            .filter_map(|bars| bars.get(key))
            .fold((0, 0), |(d, t), (dd, tt)| (d + dd, t + tt))
    }

    /// Waits (at most `bound`) until `processes` processes have sent their last report; says
    /// whether they all did.
    pub fn wait_ended(&self, processes: usize, bound: Duration) -> bool {
        let begun = Instant::now();
        let mut state = self.state();
        while state.ended.len() < processes {
            let Some(left) = bound.checked_sub(begun.elapsed()) else {
                return false;
            };
            state = match self.changed.wait_timeout(state, left) {
                Ok((state, _)) => state,
                Err(e) => e.into_inner().0,
            };
        }
        true
    }

    /// Reads process `process`'s reports from `stream` on a thread of its own until that
    /// process ends them (or its connection closes, or it is silent for [`SILENT_FOR`]: the
    /// run itself notices a lost process; progress just stops counting it).
    pub fn gather_from(self: &Arc<Self>, process: usize, stream: TcpStream) {
        let remote = Arc::clone(self);
        let spawned = std::thread::Builder::new()
            .name(format!("progress-from-{process}"))
            .spawn(move || {
                if let Err(e) = stream.set_read_timeout(Some(SILENT_FOR)) {
                    tracing::debug!("progress of process {process}: {e}");
                }
                for line in std::io::BufReader::new(stream).lines() {
                    let line = match line {
                        Ok(line) => line,
                        Err(e) => {
                            tracing::debug!("progress of process {process}: {e}");
                            break;
                        }
                    };
                    let mut state = remote.state();
                    match parse_report(&line) {
                        Some(Report::Counts { key, done, total }) => {
                            state
                                .counts
                                .entry(process)
                                .or_default()
                                .insert(key, (done, total));
                        }
                        Some(Report::End) => {
                            state.ended.insert(process);
                            remote.changed.notify_all();
                            break;
                        }
                        None => tracing::debug!(
                            "progress of process {process}: ignored the line {line:?}"
                        ),
                    }
                }
            });
        if let Err(e) = spawned {
            tracing::warn!("cannot follow the progress of process {process}: {e}");
        }
    }
}

/// How long a process's progress line may stay silent before the first process stops reading
/// it (a process reports twice a second while it runs).
pub const SILENT_FOR: Duration = Duration::from_secs(120);

/// How often a process reports its bars to the first process.
const REPORT_EVERY: Duration = Duration::from_millis(500);

/// One line of a process's report: a bar's counts, or the end of its reports.
#[derive(Debug, PartialEq, Eq)]
enum Report {
    Counts { key: String, done: u64, total: u64 },
    End,
}

fn parse_report(line: &str) -> Option<Report> {
    let mut words = line.split_whitespace();
    match (words.next()?, words.next(), words.next(), words.next()) {
        ("end", None, None, None) => Some(Report::End),
        (key, Some(done), Some(total), None) => Some(Report::Counts {
            key: key.to_string(),
            done: done.parse().ok()?,
            total: total.parse().ok()?,
        }),
        _ => None,
    }
}

/// Sends the first process this process's counts of some bars, twice a second, from a thread of
/// its own; [`Reporter::end`] sends the last counts and says they are the last.
pub struct Reporter {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// Starts reporting `bars()` (each bar's key, done, total; keys without spaces) over `stream`.
/// A write that fails or takes over five seconds stops the reports (the run goes on).
pub fn report_to<F>(mut stream: TcpStream, bars: F) -> Reporter
where
    F: Fn() -> Vec<(String, u64, u64)> + Send + 'static,
{
    let (stop, stopped) = mpsc::channel::<()>();
    let send = move |stream: &mut TcpStream, end: bool| -> std::io::Result<()> {
        let mut text = String::new();
        for (key, done, total) in bars() {
            text.push_str(&format!("{key} {done} {total}\n"));
        }
        if end {
            text.push_str("end\n");
        }
        stream.write_all(text.as_bytes())
    };
    let thread = std::thread::Builder::new()
        .name("progress-report".into())
        .spawn(move || {
            if let Err(e) = stream.set_write_timeout(Some(Duration::from_secs(5))) {
                tracing::debug!("progress report: {e}");
            }
            loop {
                let end = !matches!(
                    stopped.recv_timeout(REPORT_EVERY),
                    Err(mpsc::RecvTimeoutError::Timeout)
                );
                if let Err(e) = send(&mut stream, end) {
                    tracing::debug!("progress report to the first process stopped: {e}");
                    return;
                }
                if end {
                    return;
                }
            }
        });
    match thread {
        Ok(thread) => Reporter {
            stop: Some(stop),
            thread: Some(thread),
        },
        Err(e) => {
            tracing::warn!("cannot report progress to the first process: {e}");
            Reporter {
                stop: None,
                thread: None,
            }
        }
    }
}

impl Reporter {
    /// Sends the last counts and the end of the reports (waits for that send, itself bounded).
    pub fn end(mut self) {
        self.stop.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_parse_and_odd_lines_do_not() {
        assert_eq!(
            parse_report("events 3 7"),
            Some(Report::Counts {
                key: "events".into(),
                done: 3,
                total: 7
            })
        );
        assert_eq!(parse_report("end"), Some(Report::End));
        assert_eq!(parse_report("events 3"), None);
        assert_eq!(parse_report("events x 7"), None);
        assert_eq!(parse_report("events 1 2 3"), None);
    }

    /// Two processes report over real sockets; the sums are theirs, and their ends arrive.
    #[test]
    fn the_first_process_sums_what_the_others_report() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        let remote = Arc::new(Remote::default());
        let mut reporters = Vec::new();
        for p in 1..=2u64 {
            let out = TcpStream::connect(address).unwrap();
            let (inbound, _) = listener.accept().unwrap();
            remote.gather_from(p as usize, inbound);
            reporters.push(report_to(out, move || {
                vec![("events".into(), p, 10 * p), ("units".into(), 1, 1)]
            }));
        }
        for r in reporters {
            r.end();
        }
        assert!(remote.wait_ended(2, Duration::from_secs(10)));
        assert_eq!(remote.sum("events"), (3, 30));
        assert_eq!(remote.sum("units"), (2, 2));
        assert_eq!(remote.sum("nothing"), (0, 0));
        // A bar counting them adds them to its own.
        let bar = Bar::start_summed("events", 5, Some((Arc::clone(&remote), "events".into())));
        bar.inc_by(2);
        assert_eq!(bar.counts.sums(), (5, 35));
        assert_eq!(bar.local(), (2, 5));
        bar.finish();
    }

    #[test]
    fn waiting_for_reports_that_never_end_is_bounded() {
        let remote = Remote::default();
        let begun = Instant::now();
        assert!(!remote.wait_ended(1, Duration::from_millis(200)));
        assert!(begun.elapsed() < Duration::from_secs(5));
    }
}
