//! What a layout is: the job's `[cluster]` settings ([`ClusterSettings`]), the launcher they may
//! defer to ([`Launcher`]), and the resolved layout of this process ([`Cluster`]), with the
//! checks made before any work. [`super::launcher`] fills in what the settings leave open.

use std::time::{Duration, Instant};

use super::admission::{Admission, Fingerprint};

/// Where the layout comes from when the settings leave it open.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Launcher {
    /// Slurm when `SLURM_PROCID` is set, else Kubernetes when `JOB_COMPLETION_INDEX` is,
    /// else none.
    #[default]
    Auto,
    /// A Slurm step (`srun`): one process per task.
    Slurm,
    /// A Kubernetes Indexed Job: one process per pod.
    Kubernetes,
    /// The settings alone (defaults: one process, `localhost:<port + i>`).
    None,
}

/// A cluster layout that timely cannot use.
#[derive(Debug, thiserror::Error)]
#[error("cluster: {0}")]
pub struct ClusterError(pub String);

/// The job's `[cluster]` section (and the flags `-w -n -p --hostfile`): what is not given here
/// comes from the launcher ([`ClusterSettings::resolve`]).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ClusterSettings {
    /// Worker threads per process (`-w`).
    pub workers: usize,
    /// Processes (`-n`); default: the launcher's task count, else 1.
    pub processes: Option<usize>,
    /// This process's index (`-p`); default: the launcher's (`SLURM_PROCID`,
    /// `JOB_COMPLETION_INDEX`), else 0.
    pub process: Option<usize>,
    /// File of `host:port` lines, one per process (`--hostfile`); default: the launcher's
    /// peers, else `localhost:<port + i>`.
    pub hostfile: Option<String>,
    /// Seconds to wait for every other process to connect before giving up (several
    /// processes only).
    pub startup_timeout: u64,
    /// Where the layout comes from when the settings above leave it open: `auto` (Slurm when
    /// `SLURM_PROCID` is set, else Kubernetes when `JOB_COMPLETION_INDEX` is, else none),
    /// `slurm`, `kubernetes` or `none`.
    pub launcher: Launcher,
    /// The first port of the processes' addresses when no hostfile names them: process `i` of
    /// one machine listens on `port + i` (Slurm: the task's index on its node; Kubernetes:
    /// every pod on `port`).
    pub port: u16,
    /// Kubernetes: the peers' host names, with `{index}` for the completion index and `{job}`
    /// for the Job's name (the pod's host name less `-<index>`), e.g. `{job}-{index}.epimine`
    /// for a headless Service `epimine`.
    pub hosts: Option<String>,
}

/// The default [`ClusterSettings::startup_timeout`]: five minutes.
pub const DEFAULT_STARTUP_TIMEOUT: u64 = 300;
/// The default [`ClusterSettings::port`].
pub const DEFAULT_PORT: u16 = 2101;

impl Default for ClusterSettings {
    fn default() -> Self {
        Self {
            workers: 1,
            processes: None,
            process: None,
            hostfile: None,
            startup_timeout: DEFAULT_STARTUP_TIMEOUT,
            launcher: Launcher::Auto,
            port: DEFAULT_PORT,
            hosts: None,
        }
    }
}

/// The resolved timely layout of this process (saved in `run.json` as `layout`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Cluster {
    /// Worker threads per process.
    pub workers: usize,
    /// Processes.
    pub processes: usize,
    /// This process's index.
    pub process: usize,
    /// Every process's `host:port` (empty for one process).
    pub addresses: Vec<String>,
    /// Seconds to wait for every other process to connect.
    pub startup_timeout: u64,
    /// Where the layout came from: `settings` (flags, job file, or the defaults) or the
    /// launcher (`slurm`, `kubernetes`), with what it read.
    pub source: String,
    /// What this process shows in the handshake with the others (its job's fingerprint, the
    /// launcher's run id, the token; [`super::admission`]). Not saved: `run.json` never holds
    /// the token.
    #[serde(skip)]
    pub admission: Admission,
}

impl Default for Cluster {
    fn default() -> Self {
        Self {
            workers: 1,
            processes: 1,
            process: 0,
            addresses: Vec::new(),
            startup_timeout: DEFAULT_STARTUP_TIMEOUT,
            source: "settings".into(),
            admission: Default::default(),
        }
    }
}

impl Cluster {
    /// One process with `workers` threads.
    pub fn local(workers: usize) -> Self {
        Self {
            workers,
            ..Self::default()
        }
    }

    /// The address of every process (several processes only).
    pub fn addresses(&self) -> Result<Vec<String>, ClusterError> {
        if self.addresses.len() < self.processes {
            return Err(ClusterError(format!(
                "{} addresses for {} processes",
                self.addresses.len(),
                self.processes
            )));
        }
        Ok(self.addresses.clone())
    }

    /// One line for the log: processes, workers, where the layout came from, every address.
    pub fn describe(&self) -> String {
        let mut line = format!(
            "{} process(es) × {} worker(s), this is process {} (layout from {})",
            self.processes, self.workers, self.process, self.source
        );
        if self.processes > 1 {
            let peers: Vec<String> = self
                .addresses
                .iter()
                .enumerate()
                .map(|(i, a)| format!("{i}={a}"))
                .collect();
            line.push_str(&format!("; peers {}", peers.join(" ")));
        }
        line
    }

    /// Checks before any work that this process can listen on its own address (a port in use,
    /// another process with the same index on this machine, or an index whose host is another
    /// machine are errors naming the process and the address), and logs the layout (process 0).
    /// With `cuda` (a CUDA build: `epimine_method::encoder::CUDA`), warns when several processes
    /// on this host would share one GPU ([`Cluster::gpu_note`]).
    pub fn preflight(&self, cuda: bool) -> Result<(), ClusterError> {
        if self.processes > 1 {
            let me = &self.addresses()?[self.process];
            // A pod's own name is in DNS only once the headless Service publishes it: wait for
            // it (bounded by startup_timeout).
            if self.source.starts_with("kubernetes") {
                wait_for_name(me, Duration::from_secs(self.startup_timeout))
                    .map_err(|e| ClusterError(format!("process {}: {e}", self.process)))?;
            }
            let listeners = me
                .split_whitespace()
                .map(std::net::TcpListener::bind)
                .collect::<Result<Vec<_>, _>>();
            if let Err(e) = listeners {
                return Err(ClusterError(format!(
                    "process {} of {} cannot listen on its address {me}: {e} (the port is in use, \
                     another process on this machine has index {}, or {me} is another machine; \
                     cluster.port sets the first port)",
                    self.process, self.processes, self.process
                )));
            }
        }
        if self.process == 0 {
            tracing::info!("layout: {}", self.describe());
        }
        if cuda {
            if let Some(note) = self.gpu_note(std::env::var("CUDA_VISIBLE_DEVICES").ok().as_deref())
            {
                tracing::warn!("{note}");
            }
        }
        Ok(())
    }

    /// Processes of this layout on this process's host (by the host part of the addresses).
    pub fn processes_on_my_host(&self) -> usize {
        let host = |a: &String| a.rsplit_once(':').map_or(a.clone(), |(h, _)| h.to_string());
        match self.addresses.get(self.process) {
            Some(me) => self
                .addresses
                .iter()
                .filter(|a| host(a) == host(me))
                .count(),
            None => 1,
        }
    }

    /// A warning when several processes on this host would share one GPU: the CUDA encoder
    /// uses the first device it sees (`CUDA_VISIBLE_DEVICES`), so each process must be shown
    /// its own (Slurm `--gpus-per-task=1`, one GPU per pod).
    pub fn gpu_note(&self, visible: Option<&str>) -> Option<String> {
        let here = self.processes_on_my_host();
        let shown = visible.map(|v| v.split(',').filter(|d| !d.trim().is_empty()).count());
        if here > 1 && shown != Some(1) {
            Some(format!(
                "{here} processes run on this host and this one sees {}: the encoder uses the \
                 first GPU it sees, so they share it (correct, not faster); give each process its \
                 own GPU (srun --gpus-per-task=1, or CUDA_VISIBLE_DEVICES per process)",
                match visible {
                    Some(v) => format!("CUDA_VISIBLE_DEVICES={v}"),
                    None => "every GPU (CUDA_VISIBLE_DEVICES is not set)".into(),
                }
            ))
        } else {
            None
        }
    }

    /// The timely configuration.
    pub fn timely_config(&self) -> Result<timely::Config, ClusterError> {
        use timely::CommunicationConfig;
        let communication = if self.processes > 1 {
            let addresses = self.addresses()?;
            if self.process >= self.processes {
                return Err(ClusterError(format!(
                    "process index {} out of range for {} processes",
                    self.process, self.processes
                )));
            }
            CommunicationConfig::Cluster {
                threads: self.workers.max(1),
                process: self.process,
                addresses,
                report: false,
                zerocopy: false,
            }
        } else if self.workers > 1 {
            CommunicationConfig::Process(self.workers)
        } else {
            CommunicationConfig::Thread
        };
        Ok(timely::Config {
            communication,
            worker: timely::WorkerConfig::default(),
        })
    }
}

impl Cluster {
    /// Everything the processes of this run must agree on: the job's fields
    /// ([`Admission::job`](super::admission::Admission::job)), the layout (processes, workers,
    /// every address), the launcher's run id and the program's version.
    pub fn fingerprint(&self) -> Fingerprint {
        let mut f = self.admission.job.clone();
        f = f.with(
            "layout",
            format!(
                "{} process(es) × {} worker(s) at {}",
                self.processes,
                self.workers,
                self.addresses.join(" ")
            ),
        );
        if let Some(id) = &self.admission.run_id {
            f = f.with("launcher run", id.clone());
        }
        f.with("epimine", env!("CARGO_PKG_VERSION"))
    }

    /// This process's fields set for the handshake (`job`: the command, inputs, `--out`,
    /// settings).
    pub fn with_job(mut self, job: Fingerprint) -> Self {
        self.admission.job = job;
        self
    }
}

/// Waits (at most `bound`) until `address` (`host:port`) resolves.
pub(super) fn wait_for_name(address: &str, bound: Duration) -> Result<(), String> {
    use std::net::ToSocketAddrs;
    let begun = Instant::now();
    let mut logged = false;
    loop {
        let resolved = address
            .to_socket_addrs()
            .map(|mut a| a.next().is_some())
            .map_err(|e| e.to_string());
        match resolved {
            Ok(true) => return Ok(()),
            Ok(false) | Err(_) if begun.elapsed() >= bound => {
                return Err(format!(
                    "its own address {address} did not resolve within {} s: {} (is the \
                     pod template's subdomain the headless Service named in cluster.hosts?)",
                    bound.as_secs(),
                    resolved.err().unwrap_or_else(|| "no addresses".into())
                ))
            }
            _ if !logged => {
                tracing::info!("waiting for {address} to resolve");
                logged = true;
            }
            _ => {}
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}
