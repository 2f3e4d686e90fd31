//! `run.json`: what a run reports about itself and each event.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::episodes::EventCounts;
use crate::job::Job;
use crate::llm;

/// How an event ended, as `run.json` spells it (`"ok"`, `"failed"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// Its stages finished (it may still have fallen back to no-LLM episodes).
    Ok,
    /// It produced no episodes; `error` says why.
    Failed,
    /// A baseline's event with no episode (only in `epimine report`'s view of a baseline's
    /// output, which has no `run.json`; a run never writes it).
    Skipped,
}

impl Outcome {
    /// The word `run.json` and the report use.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Failed => "failed",
            Outcome::Skipped => "skipped",
        }
    }
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One event's status in `run.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EventStatus {
    /// The key event.
    pub key_event: String,
    /// `ok` or `failed`.
    pub status: Outcome,
    /// Why it failed.
    pub error: Option<String>,
    /// Segments.
    pub segments: usize,
    /// Articles (set once the event has episodes).
    #[serde(default)]
    pub articles: usize,
    /// Per trial: segments and articles in some episode, and left out (empty when the event
    /// failed).
    #[serde(default)]
    pub coverage: Vec<crate::coverage::Coverage>,
    /// Stage counts (episodes and assigned segments summed over trials).
    pub counts: EventCounts,
    /// The LLM stage of the event, when one ran (`null` otherwise: no field is skipped, since
    /// statuses cross workers in bincode).
    pub llm: Option<EventLlm>,
    /// `computed` in this run, or `reused` from its checkpoint.
    pub checkpoint: String,
    /// Why an existing checkpoint was not reused (`null` when reused or when there was none).
    pub not_reused: Option<String>,
    /// Encoding units this run encoded for the event (0 when reused; units read from the
    /// encoder cache are not counted).
    pub encoded_units: u32,
    /// The fingerprint of everything the event's rows depend on.
    pub fingerprint: String,
}

impl EventStatus {
    /// A fresh `ok` status.
    pub fn new(key_event: &str) -> Self {
        Self {
            key_event: key_event.to_string(),
            status: Outcome::Ok,
            error: None,
            segments: 0,
            articles: 0,
            coverage: Vec::new(),
            counts: EventCounts::default(),
            llm: None,
            checkpoint: "computed".into(),
            not_reused: None,
            encoded_units: 0,
            fingerprint: String::new(),
        }
    }
}

/// One file of a committed run, in `run.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableEntry {
    /// The file name inside `--out`.
    pub name: String,
    /// sha256 of its bytes, hex.
    pub sha256: String,
    /// Rows (tables; 0 for `job.toml`).
    pub rows: u64,
    /// Bytes.
    pub bytes: u64,
}

/// How many events were computed and reused, in `run.json`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CheckpointSummary {
    /// Events computed in this run.
    pub computed: usize,
    /// Events whose checkpoint was reused.
    pub reused: usize,
    /// Checkpoints of events no longer in the corpus, deleted.
    pub deleted: usize,
    /// Encoding units encoded in this run.
    pub encoded_units: u64,
    /// Waves the computed events went in (each encoded, run and checkpointed before the next).
    pub waves: usize,
}

/// One event's LLM stage in `run.json`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct EventLlm {
    /// Trials whose episodes came from the LLM.
    pub trials_ok: u32,
    /// Episodes per trial.
    pub episodes_per_trial: Vec<usize>,
    /// Trials that fell back to no-LLM episodes, and why.
    pub fallbacks: Vec<Fallback>,
}

/// A trial that fell back to no-LLM episodes.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Fallback {
    /// The trial.
    pub trial: u32,
    /// Why.
    pub error: String,
}

/// The LLM stage of a run in `run.json` (never the key).
#[derive(Debug, Clone, Serialize)]
pub struct LlmReport {
    /// `anthropic` or `openai`.
    pub backend: &'static str,
    /// The model.
    pub model: String,
    /// The endpoint.
    pub url: String,
    /// Trials per event.
    pub trials: u32,
    /// Requests, cache hits, retries, repairs.
    pub usage: llm::Usage,
    /// Event trials that fell back to no-LLM episodes.
    pub fallbacks: usize,
    /// Whether the requests asked for structured output (`llm.structured`) to the end.
    pub structured: bool,
    /// The form they used at the end: `json_schema`, `json_object`, `tool` or `off`.
    pub structured_form: &'static str,
    /// What the server said when it rejected a form (each one it rejected, in order).
    pub structured_off: Option<String>,
    /// The context window prompts were fitted to (`llm.context_tokens`, or the server's).
    pub context_tokens: Option<u32>,
    /// Events whose prompt was cut to fit it: event → segments per cluster sent.
    pub prompts_cut: std::collections::BTreeMap<String, usize>,
}

/// A stage's wall time in `run.json`.
#[derive(Debug, Clone, Serialize)]
pub struct StageTime {
    /// The stage.
    pub stage: String,
    /// Seconds.
    pub seconds: f64,
}

/// The model used, in `run.json`.
#[derive(Debug, Clone, Serialize)]
pub struct ModelInfo {
    /// Its folder.
    pub dir: String,
    /// The sentence model's folder (`encoder.sentence_model`), when another model makes the
    /// sentence embeddings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sentence_dir: Option<String>,
    /// sha256 of each of its files (the sentence model's under `sentence_model/`).
    pub files: BTreeMap<String, String>,
}

/// `run.json`.
#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    /// The output format ([`super::checkpoint::FORMAT`]).
    pub format: u32,
    /// The crate version.
    pub epimine_version: &'static str,
    /// The resolved job.
    pub job: Job,
    /// The timely layout this run had: processes, workers, every address, and where it came
    /// from (the settings, or a launcher: Slurm, Kubernetes).
    pub layout: crate::topology::Cluster,
    /// The encoder model.
    pub model: Option<ModelInfo>,
    /// Wall time per stage.
    pub stages: Vec<StageTime>,
    /// The LLM stage, when one ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub llm: Option<LlmReport>,
    /// Per event.
    pub events: Vec<EventStatus>,
    /// Whether some event failed, or fell back to no-LLM episodes in some LLM trial.
    pub partial: bool,
    /// Events computed and reused.
    pub checkpoints: CheckpointSummary,
    /// Every file of the run with its sha256 and row count: `run.json` is written last, so a
    /// reader that finds the files matching this list reads one whole run.
    pub tables: Vec<TableEntry>,
    /// The run's version folder in `--out` (`_versions/<run>-…`), which holds the same files
    /// as long as it is kept (`keep_versions`): a reader that reads its tables there reads this
    /// run's, whatever commits meanwhile.
    pub version: String,
    /// The corpus's segments files this run read, pinned at its start (an append meanwhile is
    /// the next run's): name, bytes, segments.
    pub corpus_files: Vec<crate::corpus::CorpusFile>,
    /// Resident memory of process 0 around the final assembly (Linux; `null` elsewhere).
    pub assembly_memory: Option<AssemblyMemory>,
    /// This run in the history of its `--out`: its number and time, the previous run's, and
    /// its episodes' statuses (`lineage.parquet`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub history: Option<super::history::HistoryReport>,
}

/// Resident memory around the final assembly, in MiB: when it began, and the peak while it ran
/// (the kernel's high-water mark, reset when the assembly began).
#[derive(Debug, Clone, Serialize)]
pub struct AssemblyMemory {
    /// Resident when the assembly began.
    pub rss_before_mib: f64,
    /// Peak resident while it ran.
    pub peak_mib: f64,
}
