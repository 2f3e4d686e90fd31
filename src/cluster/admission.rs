//! Which processes belong to a run: every connection between two processes begins with a
//! handshake ([`super::handshake`]) in which the dialing process shows its job's [`Fingerprint`]
//! (the settings that change outputs, the inputs, `--out`, the layout, the program's version,
//! the launcher's run id) and, when the run has a shared secret ([`TOKEN_VAR`]), proves that it
//! knows it. [`admit`] makes those connections once before `--out` is touched (process 0 refuses
//! a process of another job, and both fail at once naming what differs), and gives the run a
//! random *session* that every later connection of the run must carry, so that a process of an
//! earlier or a later start of the same job cannot join a run under way. [`Admitted::start`] is
//! the start barrier over those connections: every process learns whether every other could
//! start before any work.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::handshake::{read_frame, write_frame, Mode};
use super::layout::{Cluster, ClusterError};
use super::SideLines;

/// The environment variable holding the shared secret every process of a run must present
/// (optional; the job recipes in `cluster/` set it). Never logged, never written to a file.
pub const TOKEN_VAR: &str = "EPIMINE_TOKEN";

/// The environment variable holding a launcher's run id (the Kubernetes recipe sets it to the
/// Job's uid); under Slurm the job and step ids are read without it.
pub const RUN_ID_VAR: &str = "EPIMINE_RUN_ID";

/// The shared secret ([`TOKEN_VAR`]). Its `Debug` hides it, so that no log line shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(pub(super) String);

impl Token {
    /// The secret's bytes, for the handshake's proofs.
    pub(super) fn bytes(&self) -> &[u8] {
        self.0.as_bytes()
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(hidden)")
    }
}

/// What every process of a job must agree on, named field by field so that a difference can be
/// said: e.g. `("corpus", "other-corpus/")`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint(Vec<(String, String)>);

impl Fingerprint {
    /// An empty fingerprint.
    pub fn new() -> Self {
        Self::default()
    }

    /// The fingerprint with one more field.
    pub fn with(mut self, what: impl Into<String>, value: impl Into<String>) -> Self {
        self.0.push((what.into(), value.into()));
        self
    }

    /// The fields, in order.
    pub fn fields(&self) -> &[(String, String)] {
        &self.0
    }

    /// What differs between `theirs` and this one, each as `what theirs vs ours` (a field one
    /// side lacks reads `(none)`); empty when they agree.
    pub fn differences(&self, theirs: &Fingerprint) -> Vec<String> {
        let get = |f: &Fingerprint, what: &str| {
            f.0.iter().find(|(w, _)| w == what).map(|(_, v)| v.clone())
        };
        let mut names: Vec<&str> = theirs.0.iter().map(|(w, _)| w.as_str()).collect();
        for (w, _) in &self.0 {
            if !names.contains(&w.as_str()) {
                names.push(w);
            }
        }
        names
            .into_iter()
            .filter_map(|what| {
                let (t, o) = (get(theirs, what), get(self, what));
                (t != o).then(|| {
                    let show = |v: Option<String>| v.map_or("(none)".into(), |v| shorten(&v));
                    format!("{what} {} vs {}", show(t), show(o))
                })
            })
            .collect()
    }

    pub(super) fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a fingerprint serializes")
    }

    pub(super) fn from_bytes(bytes: &[u8]) -> Option<Self> {
        serde_json::from_slice(bytes).ok()
    }
}

/// A value as an error message shows it: at most 120 characters.
fn shorten(v: &str) -> String {
    if v.chars().count() <= 120 {
        v.to_string()
    } else {
        format!("{}…", v.chars().take(119).collect::<String>())
    }
}

/// A run's session: drawn by process 0 when it admits the others, carried by every later
/// connection of the run.
pub(super) type Session = [u8; 16];

/// What this process shows and proves in every handshake, and the session of the run it was
/// admitted to. Part of [`Cluster`], never serialized with it.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Admission {
    /// The job's own fields (the command, inputs, `--out`, the settings that change outputs);
    /// the layout, the launcher's run id and the program's version are added by
    /// [`Cluster::fingerprint`].
    pub job: Fingerprint,
    /// The launcher's run id: [`RUN_ID_VAR`], else a Slurm step's job and step ids.
    pub run_id: Option<String>,
    pub(super) token: Option<Token>,
    pub(super) session: Option<Session>,
}

impl fmt::Debug for Admission {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Admission")
            .field("job", &self.job)
            .field("run_id", &self.run_id)
            .field("token", &self.token.as_ref().map(|_| "hidden"))
            .field("session", &self.session.is_some())
            .finish()
    }
}

impl Admission {
    /// The token ([`TOKEN_VAR`]) and the run id from the environment `env`; the run id of a
    /// Slurm step is its job id, step id and restart count when `slurm` (the layout came from
    /// Slurm) and [`RUN_ID_VAR`] is not set. An empty token is an error.
    pub fn from_env(env: super::launcher::Env, slurm: bool) -> Result<Self, ClusterError> {
        let token = match env(TOKEN_VAR) {
            Some(t) if t.is_empty() => {
                return Err(ClusterError(format!(
                    "{TOKEN_VAR} is set but empty: give every process the same secret, or unset it"
                )))
            }
            t => t.map(Token),
        };
        let run_id = env(RUN_ID_VAR)
            .filter(|r| !r.trim().is_empty())
            .or_else(|| {
                let job = env("SLURM_JOB_ID").filter(|_| slurm)?;
                let step = env("SLURM_STEP_ID")
                    .or_else(|| env("SLURM_STEPID"))
                    .unwrap_or_default();
                let restart = env("SLURM_RESTART_COUNT").unwrap_or_else(|| "0".into());
                Some(format!("slurm job {job} step {step} start {restart}"))
            });
        Ok(Self {
            job: Fingerprint::new(),
            run_id,
            token,
            session: None,
        })
    }

    /// Whether this process has a token to present.
    pub fn has_token(&self) -> bool {
        self.token.is_some()
    }
}

impl Cluster {
    /// Everything the processes of this run must agree on: the job's fields
    /// ([`Admission::job`]), the layout (processes, workers, every address), the launcher's run
    /// id and the program's version.
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

/// The processes of a run, admitted ([`admit`]) and still connected (process 0 to each other
/// one), until [`Admitted::start`].
pub struct Admitted {
    process: usize,
    lines: SideLines,
    timeout: std::time::Duration,
}

/// With several processes: connects every other process to process 0 and checks them
/// ([`super::handshake`]): the same job (else both fail, naming what differs), the token when
/// there is one. Process 0 draws the run's session, which every later connection carries.
/// Waits at most `startup_timeout` for the others. One process: nothing to do.
pub fn admit(cluster: &mut Cluster) -> Result<Admitted, ClusterError> {
    let timeout = std::time::Duration::from_secs(cluster.startup_timeout);
    if cluster.processes <= 1 {
        return Ok(Admitted {
            process: cluster.process,
            lines: SideLines::None,
            timeout,
        });
    }
    let connected = super::connect_peers(cluster, Mode::Admission)?;
    cluster.admission.session = connected.session;
    if cluster.process == 0 {
        tracing::info!(
            "process 0: all {} processes run this job{}",
            cluster.processes,
            if cluster.admission.has_token() {
                " and hold its token"
            } else {
                ""
            }
        );
    }
    Ok(Admitted {
        process: cluster.process,
        lines: connected.lines,
        timeout,
    })
}

impl Admitted {
    /// The start barrier: each process says whether it could start (`ready`: its checks of
    /// `--out` and the inputs), process 0 answers go or stop to all. Returns an error naming
    /// the process that could not start (this process's own failure is left to the caller,
    /// once the others are told). Every wait is bounded by `startup_timeout`.
    pub fn start(self, ready: Result<(), String>) -> Result<(), ClusterError> {
        use std::io::ErrorKind;
        let deadline = std::time::Instant::now() + self.timeout;
        let left = || {
            deadline
                .saturating_duration_since(std::time::Instant::now())
                .max(std::time::Duration::from_millis(1))
        };
        let fail = |what: String| ClusterError(format!("process {}: {what}", self.process));
        let say = |stream: &mut std::net::TcpStream, ok: bool, text: &str| {
            use std::io::Write;
            stream
                .set_write_timeout(Some(left()))
                .and_then(|()| stream.write_all(&[u8::from(!ok)]))
                .and_then(|()| write_frame(stream, text.as_bytes()))
        };
        let hear = |stream: &mut std::net::TcpStream| -> std::io::Result<(bool, String)> {
            use std::io::Read;
            stream.set_read_timeout(Some(left()))?;
            let mut ok = [0u8];
            stream.read_exact(&mut ok)?;
            let text = read_frame(stream)?;
            Ok((ok[0] == 0, String::from_utf8_lossy(&text).into_owned()))
        };
        let why = |e: std::io::Error| match e.kind() {
            ErrorKind::WouldBlock | ErrorKind::TimedOut => format!(
                "no word within startup_timeout ({} s)",
                self.timeout.as_secs()
            ),
            ErrorKind::UnexpectedEof => "its connection closed (it ended)".to_string(),
            _ => e.to_string(),
        };
        match self.lines {
            SideLines::None => Ok(()),
            SideLines::ToFirst(mut line) => {
                let own = ready.as_ref().err().cloned().unwrap_or_default();
                if let Err(e) = say(&mut line, ready.is_ok(), &own) {
                    return Err(fail(format!("cannot tell process 0 it is ready: {e}")));
                }
                if ready.is_err() {
                    return Ok(());
                }
                match hear(&mut line) {
                    Ok((true, _)) => Ok(()),
                    Ok((false, text)) => Err(fail(format!("the run did not start: {text}"))),
                    Err(e) => Err(fail(format!(
                        "waited for process 0 to start the run: {}",
                        why(e)
                    ))),
                }
            }
            SideLines::First(mut lines) => {
                let mut stop = ready
                    .as_ref()
                    .err()
                    .map(|e| format!("process 0 could not start: {e}"));
                for (p, line) in lines.iter_mut() {
                    if stop.is_some() {
                        break;
                    }
                    stop = match hear(line) {
                        Ok((true, _)) => None,
                        Ok((false, text)) => Some(format!("process {p} could not start: {text}")),
                        Err(e) => Some(format!("process {p} did not start: {}", why(e))),
                    };
                }
                for (p, line) in lines.iter_mut() {
                    if let Err(e) = say(line, stop.is_none(), stop.as_deref().unwrap_or("")) {
                        tracing::debug!("process 0: telling process {p} the start: {e}");
                    }
                }
                match stop {
                    Some(text) if ready.is_ok() => Err(fail(text)),
                    _ => Ok(()),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn differences_name_each_field_theirs_first() {
        let ours = Fingerprint::new()
            .with("corpus", "corpus/")
            .with("episodes.max_episodes", "5");
        let theirs = Fingerprint::new()
            .with("corpus", "other-corpus/")
            .with("episodes.max_episodes", "7")
            .with("launcher run", "slurm job 3 step 0 start 0");
        assert_eq!(
            ours.differences(&theirs),
            vec![
                "corpus other-corpus/ vs corpus/",
                "episodes.max_episodes 7 vs 5",
                "launcher run slurm job 3 step 0 start 0 vs (none)",
            ]
        );
        assert!(ours.differences(&ours.clone()).is_empty());
        let bytes = theirs.to_bytes();
        assert_eq!(Fingerprint::from_bytes(&bytes), Some(theirs));
        assert_eq!(Fingerprint::from_bytes(b"\x00junk"), None);
    }

    #[test]
    fn the_token_comes_from_the_environment_and_is_never_shown() {
        let env = |n: &str| match n {
            TOKEN_VAR => Some("s3cr3t-value".to_string()),
            "SLURM_JOB_ID" => Some("77".to_string()),
            "SLURM_STEP_ID" => Some("0".to_string()),
            _ => None,
        };
        let a = Admission::from_env(&env, true).unwrap();
        assert!(a.has_token());
        assert_eq!(a.run_id.as_deref(), Some("slurm job 77 step 0 start 0"));
        let shown = format!("{a:?}");
        assert!(!shown.contains("s3cr3t"), "{shown}");
        let c = Cluster {
            admission: a.clone(),
            ..Cluster::default()
        };
        assert!(!format!("{c:?}").contains("s3cr3t"));
        assert!(!serde_json::to_string(&c).unwrap().contains("s3cr3t"));
        // Not under Slurm: no run id from its variables.
        assert_eq!(Admission::from_env(&env, false).unwrap().run_id, None);
        // An explicit run id wins.
        let k8s = |n: &str| (n == RUN_ID_VAR).then(|| "uid-1".to_string());
        assert_eq!(
            Admission::from_env(&k8s, false).unwrap().run_id.as_deref(),
            Some("uid-1")
        );
        let empty = |n: &str| (n == TOKEN_VAR).then(String::new);
        let e = Admission::from_env(&empty, false).unwrap_err().to_string();
        assert!(e.contains("EPIMINE_TOKEN is set but empty"), "{e}");
    }
}
