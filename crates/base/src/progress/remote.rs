//! Progress across processes: each other process reports its bars' counts to process 0 over a
//! side line ([`report_to`]), and process 0 gathers them ([`Remote`]) for its bars to add.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, Write};
use std::net::TcpStream;
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// What the other processes of a run last reported of their bars ([`report_to`]), which the
/// first process adds to its own ([`super::Bar::start_summed`]).
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
    use super::super::Bar;
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
