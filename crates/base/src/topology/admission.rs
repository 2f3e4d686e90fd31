//! Who a process is to the others of its run: its job's [`Fingerprint`] (the settings that change
//! outputs, the inputs, `--out`, and, added by [`super::Cluster::fingerprint`], the layout, the
//! program's version and the launcher's run id), the optional shared secret ([`TOKEN_VAR`])
//! and the run's session once admitted ([`super::start::admit`]). The handshake that checks
//! them is in `super::handshake`.

use std::fmt;

use serde::{Deserialize, Serialize};

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
/// admitted to. Part of [`super::Cluster`], never serialized with it.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Admission {
    /// The job's own fields (the command, inputs, `--out`, the settings that change outputs);
    /// the layout, the launcher's run id and the program's version are added by
    /// [`super::Cluster::fingerprint`].
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
    pub fn from_env(env: &dyn Fn(&str) -> Option<String>, slurm: bool) -> Result<Self, String> {
        let token = match env(TOKEN_VAR) {
            Some(t) if t.is_empty() => {
                return Err(format!(
                    "{TOKEN_VAR} is set but empty: give every process the same secret, or unset it"
                ))
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
        let c = super::super::Cluster {
            admission: a.clone(),
            ..Default::default()
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
        let e = Admission::from_env(&empty, false).unwrap_err();
        assert!(e.contains("EPIMINE_TOKEN is set but empty"), "{e}");
    }
}
