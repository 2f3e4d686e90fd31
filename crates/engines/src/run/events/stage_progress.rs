//! The progress of a run's per-event stages over every worker of the process, and, with several
//! processes, over the whole run on process 0 (the other processes report to it over side lines).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::topology::Cluster;

/// The progress of the per-event stages, counted over every worker of this process: one bar
/// (or periodic log line) for the encoding units, one for the events. With several processes,
/// the others report theirs to process 0 over side lines ([`crate::topology::SideLines`]), whose
/// bars count the whole run.
pub(crate) struct StageProgress {
    /// The workers counted, e.g. `2 worker(s)`, `2 worker(s) of process 1 of 3` or
    /// `3 processes, 2 worker(s) each`.
    workers: String,
    encoding: Arc<std::sync::OnceLock<crate::progress::Bar>>,
    events: Arc<std::sync::OnceLock<crate::progress::Bar>>,
    /// Process 0 of several: what the others report.
    remote: Option<Arc<crate::progress::Remote>>,
    /// How many other processes report to this one.
    reporting: usize,
    /// Another process: its reports to process 0.
    reporter: Mutex<Option<crate::progress::Reporter>>,
}

/// The keys of the bars in the reports to process 0.
const ENCODING_BAR: &str = "encoding";
const EVENTS_BAR: &str = "events";

impl StageProgress {
    pub(in crate::run) fn new(cluster: &Cluster) -> Self {
        let several = cluster.processes > 1;
        let workers = match (several, cluster.process) {
            (false, _) => format!("{} worker(s)", cluster.workers),
            (true, 0) => format!(
                "{} processes, {} worker(s) each",
                cluster.processes, cluster.workers
            ),
            (true, p) => format!(
                "{} worker(s) of process {p} of {}",
                cluster.workers, cluster.processes
            ),
        };
        let first = several && cluster.process == 0;
        Self {
            workers,
            encoding: Arc::default(),
            events: Arc::default(),
            remote: first.then(Arc::default),
            reporting: if first { cluster.processes - 1 } else { 0 },
            reporter: Mutex::new(None),
        }
    }

    /// Process 0 reads the other processes' reports; another process starts sending its own.
    pub(in crate::run) fn connected(&self, lines: crate::topology::SideLines) {
        use crate::topology::SideLines;
        match lines {
            SideLines::None => {}
            SideLines::First(lines) => {
                if let Some(remote) = &self.remote {
                    for (process, line) in lines {
                        remote.gather_from(process, line);
                    }
                }
            }
            SideLines::ToFirst(line) => {
                let (encoding, events) = (Arc::clone(&self.encoding), Arc::clone(&self.events));
                let reporter = crate::progress::report_to(line, move || {
                    [(ENCODING_BAR, &encoding), (EVENTS_BAR, &events)]
                        .into_iter()
                        .filter_map(|(key, bar)| {
                            let (done, total) = bar.get()?.local();
                            Some((key.to_string(), done, total))
                        })
                        .collect()
                });
                *self.reporter.lock().unwrap_or_else(|e| e.into_inner()) = Some(reporter);
            }
        }
    }

    fn start(&self, name: String, key: &str) -> crate::progress::Bar {
        let remote = self
            .remote
            .as_ref()
            .map(|r| (Arc::clone(r), key.to_string()));
        crate::progress::Bar::start_summed(&name, 0, remote)
    }

    /// The bar of the events, created by the first worker to ask.
    pub(in crate::run) fn events(&self, waves: usize) -> &crate::progress::Bar {
        self.events.get_or_init(|| {
            self.start(
                format!("events ({}, {waves} wave(s))", self.workers),
                EVENTS_BAR,
            )
        })
    }

    /// The bar of the encoding units, created by the first worker to ask.
    pub(in crate::run) fn encoding(&self) -> &crate::progress::Bar {
        self.encoding
            .get_or_init(|| self.start(format!("encoding units ({})", self.workers), ENCODING_BAR))
    }

    /// Ends the bars: another process first sends its last counts; process 0 waits (a few
    /// seconds at most) for them, so that its last line counts the whole run.
    pub(in crate::run) fn finish(&self) {
        let reporter = self
            .reporter
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(reporter) = reporter {
            reporter.end();
        }
        if let Some(remote) = &self.remote {
            if !remote.wait_ended(self.reporting, REPORTS_WAIT) {
                tracing::debug!("not every process sent its last progress report");
            }
        }
        for bar in [self.encoding.get(), self.events.get()]
            .into_iter()
            .flatten()
        {
            bar.finish();
        }
    }
}

/// How long process 0 waits at the end for the other processes' last progress reports.
const REPORTS_WAIT: Duration = Duration::from_secs(3);
