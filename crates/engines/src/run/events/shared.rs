//! What every worker of the per-event stages shares.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};

use super::stage_progress::StageProgress;
use crate::job::Job;
use crate::llm;
use crate::storage::Location;
use crate::tables::Term;

/// What every worker of the per-event stages shares.
pub(in crate::run) struct Shared {
    pub(in crate::run) job: Job,
    pub(in crate::run) model_dir: PathBuf,
    /// The sentence model's folder (`encoder.sentence_model`).
    pub(in crate::run) sentence_model_dir: Option<PathBuf>,
    pub(in crate::run) model_hash: String,
    /// The digest of the settings that change results ([`checkpoint::settings_digest`]).
    pub(in crate::run) settings: String,
    /// This process's shares of the statistics' terms: worker index → event → terms (each
    /// worker takes its own and sends it on to the events' owners).
    pub(in crate::run) terms: Mutex<BTreeMap<usize, BTreeMap<String, Vec<Term>>>>,
    /// Only expansion and synonym groups (`epimine stats` with vectors).
    pub(in crate::run) terms_only: bool,
    /// Where checkpoints go (`None`: rows are gathered at worker 0, for `epimine stats`).
    pub(in crate::run) out: Option<Location>,
    /// Ignore existing checkpoints.
    pub(in crate::run) fresh: bool,
    /// Checkpoints this process wrote.
    pub(in crate::run) checkpoints_written: AtomicUsize,
    /// The LLM client (process 0).
    pub(in crate::run) llm: Option<Arc<llm::Client>>,
    /// What went wrong on some worker.
    pub(in crate::run) errors: Mutex<Vec<String>>,
    /// The progress of this process's workers, together.
    pub(in crate::run) progress: StageProgress,
    /// The threads of an event's parallel loops (as many as this process has workers): a
    /// worker runs its event's stages in this pool, so that while fewer events than workers
    /// remain (one big event, the end of a run) the idle workers' cores work on them.
    pub(in crate::run) pool: rayon::ThreadPool,
    /// Raised to stop the run ([`crate::run::interrupt::Interrupt`]).
    pub(in crate::run) interrupt: crate::run::interrupt::Interrupt,
    /// The previous committed run's episodes of each event (trial 0, as their segments'
    /// stable keys), for `episodes.carry`; empty on a first run.
    pub(in crate::run) carried: BTreeMap<String, Vec<Vec<u64>>>,
    /// The previous committed run's article keys of each event (ascending), for
    /// `episodes.novelty`; empty on a first run or with `novelty` off.
    pub(in crate::run) previous_articles: BTreeMap<String, Vec<u64>>,
}

/// What a followed run reads of the previous committed run of its `--out`, on every process.
#[derive(Default)]
pub(in crate::run) struct Followed {
    /// [`Shared::carried`].
    pub(in crate::run) carried: BTreeMap<String, Vec<Vec<u64>>>,
    /// [`Shared::previous_articles`].
    pub(in crate::run) articles: BTreeMap<String, Vec<u64>>,
}

impl Shared {
    /// Whether the run was asked to stop: from then on the workers compute and write nothing
    /// more (they still take part in every exchange, so none waits for another).
    pub(in crate::run) fn interrupted(&self) -> bool {
        self.interrupt.is_set()
    }

    /// Whether some worker of this process recorded an error that fails the run (a storage
    /// failure, the encoder, the corpus): from then on the workers do no more work and write
    /// nothing, so the run stops at its first failure and a failure never replaces a good
    /// checkpoint.
    pub(in crate::run) fn failed(&self) -> bool {
        !self.errors.lock().expect("error list").is_empty()
    }

    /// Whether the workers stop: the run was interrupted or has failed.
    pub(in crate::run) fn stopped(&self) -> bool {
        self.interrupted() || self.failed()
    }
}
