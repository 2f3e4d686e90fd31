//! The timely layout of a job: worker threads, processes and their addresses (the usual timely
//! flags `-w -n -p -h`, or a job's `[cluster]` section).

/// A cluster layout that timely cannot use.
#[derive(Debug, thiserror::Error)]
#[error("cluster: {0}")]
pub struct ClusterError(pub String);

/// How the timely workers are laid out (the usual timely flags; a job's `[cluster]` section).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Cluster {
    /// Worker threads per process (`-w`).
    pub workers: usize,
    /// Processes (`-n`).
    pub processes: usize,
    /// This process's index (`-p`).
    pub process: usize,
    /// File of `host:port` lines, one per process (`-h`); default `localhost:2101+i`.
    pub hostfile: Option<String>,
}

impl Default for Cluster {
    fn default() -> Self {
        Self {
            workers: 1,
            processes: 1,
            process: 0,
            hostfile: None,
        }
    }
}

impl Cluster {
    /// The timely configuration.
    pub fn timely_config(&self) -> Result<timely::Config, ClusterError> {
        use timely::CommunicationConfig;
        let communication = if self.processes > 1 {
            let addresses = match &self.hostfile {
                Some(file) => {
                    let text = std::fs::read_to_string(file)
                        .map_err(|e| ClusterError(format!("hostfile {file}: {e}")))?;
                    let hosts: Vec<String> = text
                        .lines()
                        .map(str::trim)
                        .filter(|l| !l.is_empty())
                        .map(str::to_string)
                        .collect();
                    if hosts.len() < self.processes {
                        return Err(ClusterError(format!(
                            "hostfile {file} names {} hosts for {} processes",
                            hosts.len(),
                            self.processes
                        )));
                    }
                    hosts
                }
                None => (0..self.processes)
                    .map(|i| format!("localhost:{}", 2101 + i))
                    .collect(),
            };
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
