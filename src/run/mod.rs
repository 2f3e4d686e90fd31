//! `epimine run`: from a corpus of many key events to Parquet episodes in one command.
//!
//! Stages: the statistics dataflow (§1–§2, timely workers over threads and processes); then the
//! per-event stages, again on every worker of every process: each worker reads its row groups of
//! the corpus; each segment goes to the worker that encodes its unit (`stats::keys::encoding_unit`,
//! a fixed group of an event's articles; sentence embeddings and word-vector sums from one forward
//! pass); the encoded units and the terms go to the worker that owns their event
//! (`stats::keys::event_owners`: largest first, each to the least-loaded worker), which adds the
//! word sums in unit order, expands the salient set and forms synonym groups, partitions,
//! clusters (§3–§4) and — without an LLM — classifies (§5 ablation, §6). With an
//! `[llm]` backend, worker 0 sends every event's candidate clusters to the LLM (requests
//! concurrent across events, `llm.trials` times), the answers go back to the owners, which
//! classify. Reports are gathered at worker 0, sorted by event, and written by process 0: the
//! same bytes for any layout. An event that fails is recorded in `run.json` and the others
//! complete; an event whose LLM estimation fails falls back to no-LLM episodes and `run.json`
//! says why.
//!
//! Outputs in `<out>/`: `episodes.parquet`, `assignments.parquet`, `fragments.parquet`,
//! `terms.parquet`, `pairs.parquet`, `job.toml` (the resolved job) and `run.json`.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::background;
use crate::encoder::{self, DefaultBackend, Encoder, WordSum};
use crate::episodes::{self, expand, EpisodeSpec, EventCounts, EventInput};
use crate::job::Job;
use crate::llm::{self, LlmError};
use crate::progress::Stage;
use crate::stats::{self, keys, Round, StatsError};
use crate::storage::{Location, StorageError};
use crate::tables::{Assignment, Episode, FragmentRow, Pair, Segment, Term};

/// Errors that stop a whole run (a single event's failure does not).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Storage failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// The statistics job failed.
    #[error(transparent)]
    Stats(#[from] StatsError),
    /// The background failed to load.
    #[error(transparent)]
    Background(#[from] background::BackgroundError),
    /// The encoder failed to load.
    #[error("encoder: {0}")]
    Encoder(#[from] encoder::EncoderError),
    /// The model could not be found or fetched.
    #[error("model: {0}")]
    Model(String),
    /// The job is invalid.
    #[error(transparent)]
    Job(#[from] crate::job::JobError),
    /// The LLM stage could not start (no key, no cache folder).
    #[error(transparent)]
    Llm(#[from] LlmError),
    /// A worker of the per-event stages failed.
    #[error("per-event stages: {0}")]
    Workers(String),
}

/// One event's status in `run.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EventStatus {
    /// The key event.
    pub key_event: String,
    /// `ok` or `failed`.
    pub status: String,
    /// Why it failed.
    pub error: Option<String>,
    /// Segments.
    pub segments: usize,
    /// Stage counts (episodes and assigned segments summed over trials).
    pub counts: EventCounts,
    /// The LLM stage of the event, when one ran (`null` otherwise: no field is skipped, since
    /// statuses cross workers in bincode).
    pub llm: Option<EventLlm>,
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
    /// sha256 of each of its files.
    pub files: BTreeMap<String, String>,
}

/// `run.json`.
#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    /// The crate version.
    pub epimine_version: &'static str,
    /// The resolved job.
    pub job: Job,
    /// The encoder model.
    pub model: Option<ModelInfo>,
    /// Wall time per stage.
    pub stages: Vec<StageTime>,
    /// The LLM stage, when one ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub llm: Option<LlmReport>,
    /// Per event.
    pub events: Vec<EventStatus>,
    /// Whether some event failed.
    pub partial: bool,
}

/// Finds the model folder: a directory as given, else a name in the model cache (the default
/// model is fetched when missing).
pub async fn resolve_model(model: &str) -> Result<PathBuf, RunError> {
    let as_dir = Path::new(model);
    if encoder::fetch::is_complete(as_dir) {
        return Ok(as_dir.to_path_buf());
    }
    let cache = encoder::fetch::model_cache(None).map_err(|e| RunError::Model(e.to_string()))?;
    let named = cache.join(model);
    if encoder::fetch::is_complete(&named) {
        return Ok(named);
    }
    if model == crate::job::DEFAULT_MODEL {
        let stage = Stage::start("fetching the default model");
        let (dir, _) =
            encoder::fetch::fetch_default_model(&cache, &encoder::fetch::Sources::from_env())
                .await
                .map_err(|e| RunError::Model(e.to_string()))?;
        stage.finish(&dir.display().to_string());
        return Ok(dir);
    }
    Err(RunError::Model(format!(
        "`{model}` is neither a model folder (config.json, model.safetensors, tokenizer.json) nor a model in {}",
        cache.display()
    )))
}

fn sha256_files(dir: &Path) -> BTreeMap<String, String> {
    use sha2::{Digest, Sha256};
    let mut out = BTreeMap::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let path = e.path();
            if path.is_file() {
                if let Ok(bytes) = std::fs::read(&path) {
                    let hash = Sha256::digest(&bytes);
                    let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
                    out.insert(e.file_name().to_string_lossy().into_owned(), hex);
                }
            }
        }
    }
    out
}

/// What a run produced (process 0), and whether it was partial.
#[derive(Debug)]
pub struct RunOutcome {
    /// `run.json`'s content.
    pub report: RunReport,
    /// Where the outputs are.
    pub out: String,
}

/// What the distributed part of a run gathered (process 0).
struct Distributed {
    gathered: Gathered,
    model_dir: PathBuf,
    model_files: BTreeMap<String, String>,
    stages: Vec<StageTime>,
}

/// The statistics dataflow, then the per-event stages on the workers owning the events
/// (`terms_only`: just expansion and synonym groups). `None` outside process 0.
fn distributed(
    job: &Job,
    runtime: &tokio::runtime::Runtime,
    terms_only: bool,
) -> Result<Option<Distributed>, RunError> {
    let mut stages: Vec<StageTime> = Vec::new();
    let mut timed = |name: &str, started: Instant| {
        stages.push(StageTime {
            stage: name.into(),
            seconds: started.elapsed().as_secs_f64(),
        })
    };
    let writer = job.cluster.process == 0;

    // The LLM's key is read before any work, by the process that will use it (worker 0's).
    let llm_client = if job.llm.enabled() && writer && !terms_only {
        let key = job.llm.api_key()?;
        Some(Arc::new(llm::Client::new(&job.llm, key)?))
    } else {
        None
    };

    // Statistics dataflow.
    let started = Instant::now();
    let bg = runtime.block_on(background::load(&job.background))?;
    let stage = Stage::start("statistics dataflow");
    let output = stats::compute(
        &[Round {
            corpus: job.corpus.clone(),
            sign: 1,
        }],
        &bg,
        &job.cluster,
    )?;
    drop(bg);
    if let Some(output) = &output {
        stage.finish(&format!(
            "{} terms, {} pairs",
            output.terms.len(),
            output.pairs.len()
        ));
    } else {
        stage.finish("done");
    }
    timed("statistics", started);

    // Every process: the model.
    let started = Instant::now();
    let model_dir = runtime.block_on(resolve_model(&job.encoder.model))?;
    let model_files = sha256_files(&model_dir);
    timed("load", started);

    // The per-event stages on the workers that own the events.
    let mut terms_by_event: BTreeMap<String, Vec<Term>> = BTreeMap::new();
    for t in output.map(|o| o.terms).unwrap_or_default() {
        terms_by_event
            .entry(t.key_event.clone())
            .or_default()
            .push(t);
    }
    let shared = Arc::new(Shared {
        job: job.clone(),
        model_dir: model_dir.clone(),
        model_hash: model_files
            .get("model.safetensors")
            .cloned()
            .unwrap_or_default(),
        terms: Mutex::new(Some(terms_by_event)),
        terms_only,
        llm: llm_client,
        errors: Mutex::new(Vec::new()),
    });
    let config = job.cluster.timely_config()?;
    let worker_shared = Arc::clone(&shared);
    let guards = timely::execute(config, move |worker| event_worker(worker, &worker_shared))
        .map_err(RunError::Workers)?;
    let mut gathered = None;
    for result in guards.join() {
        match result {
            Ok(Some(g)) => gathered = Some(g),
            Ok(None) => {}
            Err(e) => return Err(RunError::Workers(e)),
        }
    }
    if let Some(e) = shared.errors.lock().expect("error list").first() {
        return Err(RunError::Workers(e.clone()));
    }
    let Some(mut gathered) = gathered else {
        return Ok(None);
    };
    stages.append(&mut gathered.stages);
    Ok(Some(Distributed {
        gathered,
        model_dir,
        model_files,
        stages,
    }))
}

/// Runs a whole job. Returns `None` in processes other than the one hosting worker 0.
pub fn run(job: &Job) -> Result<Option<RunOutcome>, RunError> {
    job.validate()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| RunError::Model(e.to_string()))?;
    let Some(Distributed {
        gathered,
        model_dir,
        model_files,
        mut stages,
    }) = distributed(job, &runtime, false)?
    else {
        return Ok(None);
    };

    // Write everything, each file whole.
    let started = Instant::now();
    let mut all = Outputs::default();
    let mut statuses = Vec::new();
    for (_, report) in gathered.reports {
        all.extend(report.outputs);
        statuses.push(report.status);
    }
    let Outputs {
        episodes: episodes_rows,
        assignments,
        fragments,
        terms,
        pairs,
    } = all;
    let partial = statuses.iter().any(|s| s.status != "ok");
    let mut report = RunReport {
        epimine_version: env!("CARGO_PKG_VERSION"),
        job: job.clone(),
        model: Some(ModelInfo {
            dir: model_dir.display().to_string(),
            files: model_files,
        }),
        stages: Vec::new(),
        llm: gathered.llm,
        events: statuses,
        partial,
    };
    let out = Location::parse(&job.out, true)?;
    runtime.block_on(async {
        out.write_table::<Episode>(&episodes_rows).await?;
        out.write_table::<Assignment>(&assignments).await?;
        out.write_table::<Term>(&terms).await?;
        out.write_table::<Pair>(&pairs).await?;
        out.write_table::<FragmentRow>(&fragments).await?;
        out.put("job.toml", job.to_toml().into_bytes().into())
            .await?;
        Ok::<_, StorageError>(())
    })?;
    stages.push(StageTime {
        stage: "write".into(),
        seconds: started.elapsed().as_secs_f64(),
    });
    report.stages = stages;
    let json = serde_json::to_string_pretty(&report).expect("reports serialize");
    runtime.block_on(out.put("run.json", json.into_bytes().into()))?;
    Ok(Some(RunOutcome {
        report,
        out: out.display().to_string(),
    }))
}

/// What every worker of the per-event stages shares.
struct Shared {
    job: Job,
    model_dir: PathBuf,
    model_hash: String,
    /// The statistics' terms by event (process 0; taken by worker 0).
    terms: Mutex<Option<BTreeMap<String, Vec<Term>>>>,
    /// Only expansion and synonym groups (`epimine stats` with vectors).
    terms_only: bool,
    /// The LLM client (process 0).
    llm: Option<Arc<llm::Client>>,
    /// What went wrong on some worker.
    errors: Mutex<Vec<String>>,
}

/// One trial's LLM answer for an event (the error as text).
type TrialAnswer = (u32, Result<Vec<llm::LlmEpisode>, String>);

/// An encoding unit of a key event: (key event, [`keys::encoding_unit`] of its articles).
type UnitKey = (String, u32);

/// Sentence embeddings of some segments, in order, and their word table as sums.
type UnitEncoding = (Vec<Vec<f32>>, Vec<WordSum>);

/// One encoding unit, encoded on some worker: its segments in (doc_id, seg_idx) order with their
/// embeddings and word sums, or why encoding failed.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct EncodedUnit {
    unit: u32,
    segments: Vec<Segment>,
    encoded: Result<UnitEncoding, String>,
}

/// A message to the worker that owns a key event ([`keys::event_owners`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
enum ToOwner {
    /// One of the event's encoding units.
    Unit(String, EncodedUnit),
    /// The event's terms from the statistics dataflow.
    Terms(String, Vec<Term>),
    /// The LLM's answers for the event, by trial.
    Answers(String, Vec<TrialAnswer>),
}

impl ToOwner {
    fn key_event(&self) -> &str {
        match self {
            ToOwner::Unit(e, _) | ToOwner::Terms(e, _) | ToOwner::Answers(e, _) => e,
        }
    }
}

/// An owner's report on one event, sent to worker 0.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct EventReport {
    status: EventStatus,
    outputs: Outputs,
    /// The LLM's input (each kept cluster's most salient segments), when the event waits for it.
    prompt: Option<Vec<Vec<String>>>,
}

/// What worker 0 gathers.
struct Gathered {
    reports: BTreeMap<String, EventReport>,
    stages: Vec<StageTime>,
    llm: Option<LlmReport>,
}

/// Sends `items` to the workers `route` names (all workers call it with their own items) and
/// returns what this worker received: one small timely dataflow of input, exchange and capture.
fn shuffle<D>(
    worker: &mut timely::worker::Worker,
    items: Vec<D>,
    route: impl Fn(&D) -> u64 + 'static,
) -> Vec<D>
where
    D: timely::ExchangeData + Clone,
{
    use timely::dataflow::operators::{Exchange, Input, Inspect, Probe};
    let received: Rc<RefCell<Vec<D>>> = Rc::default();
    let sink = Rc::clone(&received);
    let mut input = timely::dataflow::InputHandle::new();
    let probe = worker.dataflow::<u32, _, _>(|scope| {
        scope
            .input_from(&mut input)
            .container::<Vec<D>>()
            .exchange(move |d| route(d))
            .inspect(move |d| sink.borrow_mut().push(d.clone()))
            .probe()
            .0
    });
    for item in items {
        input.send(item);
    }
    drop(input);
    while !probe.done() {
        worker.step_or_park(None);
    }
    received.take()
}

/// The encoding unit of a segment.
fn unit_of(s: &Segment) -> UnitKey {
    (s.key_event.clone(), keys::encoding_unit(s.doc_id))
}

/// Every encoding unit's segment count, known to every worker (each sends its shard's counts
/// to all).
fn unit_sizes(worker: &mut timely::worker::Worker, segments: &[Segment]) -> BTreeMap<UnitKey, u64> {
    let peers = worker.peers();
    let mut local: BTreeMap<UnitKey, u64> = BTreeMap::new();
    for s in segments {
        *local.entry(unit_of(s)).or_default() += 1;
    }
    let copies: Vec<(u64, UnitKey, u64)> = (0..peers as u64)
        .flat_map(|to| local.iter().map(move |(u, &n)| (to, u.clone(), n)))
        .collect();
    let mut sizes = BTreeMap::new();
    for (_, unit, n) in shuffle(worker, copies, |c| c.0) {
        *sizes.entry(unit).or_default() += n;
    }
    sizes
}

/// Units encoded in one call: their batches share the waves of concurrent forward passes.
const UNITS_AT_ONCE: usize = 8;

/// Encodes this worker's units (or reads them from the encoder cache), in key order. A unit that
/// fails to encode fails alone (its group is encoded again one unit at a time).
fn encode_units(
    shared: &Shared,
    encoder: Option<&Encoder<DefaultBackend>>,
    units: BTreeMap<UnitKey, Vec<Segment>>,
    bar: Option<&crate::progress::Bar>,
) -> Vec<ToOwner> {
    let units: Vec<(UnitKey, Vec<Segment>)> = units
        .into_iter()
        .map(|(key, mut segments)| {
            segments.sort_by_key(|s| (s.doc_id, s.seg_idx));
            (key, segments)
        })
        .collect();
    let texts: Vec<Vec<&str>> = units
        .iter()
        .map(|(_, segments)| segments.iter().map(|s| s.text.as_str()).collect())
        .collect();
    let cached: Vec<Option<PathBuf>> = texts
        .iter()
        .map(|t| cache_path(&shared.job, &shared.model_hash, t))
        .collect();
    let mut encoded: Vec<Option<Result<UnitEncoding, String>>> = cached
        .iter()
        .map(|path| path.as_deref().and_then(read_cache).map(Ok))
        .collect();
    let misses: Vec<usize> = (0..units.len()).filter(|&i| encoded[i].is_none()).collect();
    let step = |done: usize| {
        if let Some(bar) = bar {
            bar.inc_by(done as u64);
        }
    };
    step(units.len() - misses.len());
    let encode = |group: &[usize]| -> Result<Vec<UnitEncoding>, String> {
        let encoder = encoder.ok_or("no encoder")?;
        let parts: Vec<&[&str]> = group.iter().map(|&i| texts[i].as_slice()).collect();
        let results = encoder
            .encode_parts(&parts, encoder.last_layer())
            .map_err(|e| format!("encoder: {e}"))?;
        Ok(results
            .into_iter()
            .map(|(vectors, words)| {
                let rows = (0..vectors.len()).map(|i| vectors.row(i).to_vec());
                (rows.collect(), words)
            })
            .collect())
    };
    for group in misses.chunks(UNITS_AT_ONCE) {
        if let Some(bar) = bar {
            bar.set_message(&units[group[0]].0 .0);
        }
        let results: Vec<Result<UnitEncoding, String>> = match encode(group) {
            Ok(all) => all.into_iter().map(Ok).collect(),
            Err(_) => group
                .iter()
                .map(|&i| encode(&[i]).map(|mut one| one.remove(0)))
                .collect(),
        };
        for (&i, result) in group.iter().zip(results) {
            if let (Ok(e), Some(path)) = (&result, &cached[i]) {
                if let Err(err) = write_cache(path, e) {
                    tracing::warn!("encoder cache {}: {err}", path.display());
                }
            }
            encoded[i] = Some(result);
        }
        step(group.len());
    }
    units
        .into_iter()
        .zip(encoded)
        .map(|(((event, unit), segments), encoded)| {
            let encoded = encoded.expect("every unit encoded or failed");
            ToOwner::Unit(
                event,
                EncodedUnit {
                    unit,
                    segments,
                    encoded,
                },
            )
        })
        .collect()
}

/// An event's segments in (doc_id, seg_idx) order with their embeddings and word vectors, from
/// its encoded units: the word sums are added in unit order, so the floats are the same
/// whichever workers encoded the units.
fn assemble(mut units: Vec<EncodedUnit>) -> (Vec<Segment>, Result<Encoded, String>) {
    units.sort_by_key(|u| u.unit);
    let mut segments = Vec::new();
    let mut embeddings = Vec::new();
    let mut sums: BTreeMap<String, WordSum> = BTreeMap::new();
    let mut error = None;
    for unit in units {
        segments.extend(unit.segments);
        match unit.encoded {
            Ok((e, words)) => {
                embeddings.extend(e);
                for w in words {
                    match sums.get_mut(&w.word) {
                        Some(sum) => sum.add(&w),
                        None => {
                            sums.insert(w.word.clone(), w);
                        }
                    }
                }
            }
            Err(e) => error = error.or(Some(e)),
        }
    }
    let encoded = match error {
        Some(e) => Err(e),
        None => Ok((
            embeddings,
            sums.into_iter().map(|(w, s)| (w, s.mean())).collect(),
        )),
    };
    (segments, encoded)
}

/// Routes by the owners map (an event it lacks, e.g. terms of an event without segments, goes
/// to worker 0).
fn router(owners: &Arc<BTreeMap<String, usize>>) -> impl Fn(&ToOwner) -> u64 + 'static {
    let owners = Arc::clone(owners);
    move |m| owners.get(m.key_event()).copied().unwrap_or(0) as u64
}

/// One worker of the per-event stages: reads its row groups of the corpus; each segment goes to
/// the worker that encodes its unit (a fixed group of an event's articles), the encoded units and
/// the terms to the worker owning their event, which runs §3–§6 (without an LLM) or §3–§4 (with
/// one) on its events and reports to worker 0. With an LLM, worker 0 asks it for
/// every waiting event, the answers go back to the owners, which classify and report again.
fn event_worker(worker: &mut timely::worker::Worker, shared: &Shared) -> Option<Gathered> {
    let (index, peers) = (worker.index(), worker.peers());
    let job = &shared.job;
    let fail = |e: String| {
        tracing::error!(worker = index, "{e}");
        shared.errors.lock().expect("error list").push(e);
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime per worker");
    let started = Instant::now();
    let mut stages = Vec::new();

    // Segments to the workers that encode their units; units and terms to the event owners,
    // both balanced by segment counts.
    let segments = match Location::parse(&job.corpus, false)
        .map_err(|e| e.to_string())
        .and_then(|corpus| {
            runtime
                .block_on(stats::read_segment_shard(&corpus, index, peers))
                .map_err(|e| e.to_string())
        }) {
        Ok(segments) => segments,
        Err(e) => {
            fail(e);
            Vec::new()
        }
    };
    let units = unit_sizes(worker, &segments);
    let mut sizes: BTreeMap<String, u64> = BTreeMap::new();
    for ((event, _), n) in &units {
        *sizes.entry(event.clone()).or_default() += n;
    }
    let owners = Arc::new(keys::event_owners(&sizes, peers));
    let encoders = keys::event_owners(&units, peers);
    let route = move |s: &Segment| encoders.get(&unit_of(s)).copied().unwrap_or(0) as u64;
    let mut my_units: BTreeMap<UnitKey, Vec<Segment>> = BTreeMap::new();
    for s in shuffle(worker, segments, route) {
        my_units.entry(unit_of(&s)).or_default().push(s);
    }
    let encoder =
        match Encoder::<DefaultBackend>::load(&shared.model_dir, &encoder::default_device()) {
            Ok(e) => Some(e.with_batch_size(job.encoder.batch_size)),
            Err(e) => {
                fail(format!("encoder: {e}"));
                None
            }
        };
    let bar = (index == 0).then(|| {
        crate::progress::Bar::start(
            &format!("encoding (worker 0 of {peers})"),
            my_units.len() as u64,
        )
    });
    let mut outgoing = encode_units(shared, encoder.as_ref(), my_units, bar.as_ref());
    if let Some(bar) = bar {
        bar.finish();
    }
    if let Some(terms) = shared.terms.lock().expect("terms").take() {
        outgoing.extend(terms.into_iter().map(|(e, t)| ToOwner::Terms(e, t)));
    }
    let mut mine: BTreeMap<String, (Vec<EncodedUnit>, Vec<Term>)> = BTreeMap::new();
    for message in shuffle(worker, outgoing, router(&owners)) {
        match message {
            ToOwner::Unit(e, u) => mine.entry(e).or_default().0.push(u),
            ToOwner::Terms(e, t) => mine.entry(e).or_default().1 = t,
            ToOwner::Answers(..) => {}
        }
    }
    stages.push(StageTime {
        stage: "encoding".into(),
        seconds: started.elapsed().as_secs_f64(),
    });
    let started = Instant::now();

    // §3–§6 (or §3–§4) on this worker's events.
    let bar = (index == 0).then(|| {
        crate::progress::Bar::start(
            &format!("episodes (worker 0 of {peers})"),
            mine.len() as u64,
        )
    });
    let mut reports = Vec::new();
    let mut pending: BTreeMap<String, Pending> = BTreeMap::new();
    for (event, (units, terms)) in mine {
        if let Some(bar) = &bar {
            bar.set_message(&event);
        }
        let (segs, encoded) = assemble(units);
        let mut report = EventReport {
            status: EventStatus {
                key_event: event.clone(),
                status: "ok".into(),
                error: None,
                segments: segs.len(),
                counts: EventCounts::default(),
                llm: None,
            },
            outputs: Outputs::default(),
            prompt: None,
        };
        let encoded = match encoded {
            Ok(encoded) => encoded,
            Err(e) => {
                set_failed(&mut report.status, e);
                reports.push(report);
                continue;
            }
        };
        if shared.terms_only {
            let set = term_set(job, &segs, &terms, &encoded.1);
            report.outputs.terms = set.rows;
            report.outputs.pairs = set.pairs;
            reports.push(report);
            if let Some(bar) = &bar {
                bar.inc();
            }
            continue;
        }
        match prepare_event(job, segs, terms, encoded) {
            Ok((p, set)) => {
                report.outputs.terms = set.rows;
                report.outputs.pairs = set.pairs;
                report.outputs.fragments = p.prepared.fragments.clone();
                report.status.counts = p.prepared.counts.clone();
                if shared.job.llm.enabled() {
                    report.prompt = Some(
                        p.prepared
                            .top_segments(job.llm.segments_per_cluster)
                            .into_iter()
                            .map(|g| g.into_iter().map(|s| p.segments[s].text.clone()).collect())
                            .collect(),
                    );
                    pending.insert(event.clone(), p);
                } else {
                    let (kept, eps, asg) =
                        episodes::episodes_without_llm(&p.input(), &p.prepared, &job.episodes, 0);
                    report.status.counts.kept_clusters = kept;
                    finish_counts(&mut report.status, &job.episodes, eps.len(), asg.len());
                    report.outputs.episodes = eps;
                    report.outputs.assignments = asg;
                }
            }
            Err((e, set)) => {
                report.outputs.terms = set.rows;
                report.outputs.pairs = set.pairs;
                set_failed(&mut report.status, e);
            }
        }
        reports.push(report);
        if let Some(bar) = &bar {
            bar.inc();
        }
    }
    if let Some(bar) = bar {
        bar.finish();
    }
    let gathered = shuffle(worker, reports, |_| 0);
    let mut reports: BTreeMap<String, EventReport> = gathered
        .into_iter()
        .map(|r| (r.status.key_event.clone(), r))
        .collect();
    stages.push(StageTime {
        stage: "episodes".into(),
        seconds: started.elapsed().as_secs_f64(),
    });
    if !job.llm.enabled() {
        return (index == 0).then_some(Gathered {
            reports,
            stages,
            llm: None,
        });
    }

    // §5 with the LLM, from worker 0; answers to the owners.
    let started = Instant::now();
    let mut answers_out: Vec<ToOwner> = Vec::new();
    if let (0, Some(client)) = (index, &shared.llm) {
        let prompts: Vec<(String, Vec<Vec<String>>)> = reports
            .iter()
            .filter_map(|(e, r)| Some((e.clone(), r.prompt.clone()?)))
            .collect();
        let answers = runtime.block_on(ask_llm(client, &job.llm, &prompts));
        let mut by_event: BTreeMap<String, Vec<TrialAnswer>> = BTreeMap::new();
        for ((event, trial), answer) in answers {
            by_event
                .entry(event)
                .or_default()
                .push((trial, answer.map_err(|e| e.to_string())));
        }
        answers_out = by_event
            .into_iter()
            .map(|(e, a)| ToOwner::Answers(e, a))
            .collect();
        stages.push(StageTime {
            stage: "llm".into(),
            seconds: started.elapsed().as_secs_f64(),
        });
    }
    let started = Instant::now();
    let mut second = Vec::new();
    for message in shuffle(worker, answers_out, router(&owners)) {
        let ToOwner::Answers(event, answers) = message else {
            continue;
        };
        let (Some(p), Some(encoder)) = (pending.get(&event), &encoder) else {
            continue;
        };
        second.push(classify_with_llm(job, encoder, &event, p, answers));
    }
    for (event, llm_status, eps, asg) in shuffle(worker, second, |_| 0) {
        let Some(report) = reports.get_mut(&event) else {
            continue;
        };
        finish_counts(&mut report.status, &job.episodes, eps.len(), asg.len());
        report.status.llm = Some(llm_status);
        report.outputs.episodes = eps;
        report.outputs.assignments = asg;
    }
    if index != 0 {
        return None;
    }
    stages.push(StageTime {
        stage: "classification".into(),
        seconds: started.elapsed().as_secs_f64(),
    });
    let client = shared.llm.as_ref()?;
    let fallbacks = reports
        .values()
        .filter_map(|r| r.status.llm.as_ref())
        .map(|l| l.fallbacks.len())
        .sum();
    let usage = client.usage();
    tracing::info!(
        "LLM: {} requests, {} answers from the cache, {fallbacks} fallbacks",
        usage.requests,
        usage.cache_hits
    );
    Some(Gathered {
        reports,
        stages,
        llm: Some(LlmReport {
            backend: job.llm.backend.name(),
            model: job.llm.model.clone(),
            url: client.url().to_string(),
            trials: job.llm.trials,
            usage,
            fallbacks,
        }),
    })
}

/// The episodes and assigned segments of an event, summed over trials; no episode is a failure.
fn finish_counts(
    status: &mut EventStatus,
    params: &episodes::EpisodeParams,
    episodes: usize,
    assigned: usize,
) {
    status.counts.episodes = episodes;
    status.counts.assigned = assigned;
    if episodes == 0 && status.status == "ok" {
        set_failed(
            status,
            episodes::EventError::NoEpisodes(params.min_segments).to_string(),
        );
    }
}

/// An event's LLM trials: its answers classified against (§6), a failed trial replaced by the
/// no-LLM episodes.
fn classify_with_llm(
    job: &Job,
    encoder: &Encoder<DefaultBackend>,
    event: &str,
    pending: &Pending,
    mut answers: Vec<TrialAnswer>,
) -> (String, EventLlm, Vec<Episode>, Vec<Assignment>) {
    answers.sort_by_key(|a| a.0);
    let input = pending.input();
    let mut known = pending.known_embeddings();
    let mut status = EventLlm::default();
    let (mut episodes_out, mut assignments_out) = (Vec::new(), Vec::new());
    for (trial, answer) in answers {
        let from_llm = answer.and_then(|eps| {
            let specs = llm_specs(encoder, &mut known, &eps)?;
            let out = episodes::assign(
                &input,
                &pending.prepared.key_event,
                &specs,
                &job.episodes,
                trial,
            );
            if out.0.is_empty() {
                Err(format!(
                    "no LLM episode kept {} or more segments",
                    job.episodes.min_segments
                ))
            } else {
                Ok(out)
            }
        });
        let (eps, asg) = match from_llm {
            Ok(out) => {
                status.trials_ok += 1;
                out
            }
            Err(error) => {
                tracing::warn!(
                    "{event}: trial {trial}: LLM estimation failed, using no-LLM episodes: {error}"
                );
                status.fallbacks.push(Fallback { trial, error });
                let (_, eps, asg) =
                    episodes::episodes_without_llm(&input, &pending.prepared, &job.episodes, trial);
                (eps, asg)
            }
        };
        status.episodes_per_trial.push(eps.len());
        episodes_out.extend(eps);
        assignments_out.extend(asg);
    }
    (event.to_string(), status, episodes_out, assignments_out)
}

/// An event's sentence embeddings (in segment order) and word vectors.
type Encoded = (Vec<Vec<f32>>, HashMap<String, Vec<f32>>);

/// The cache key of a unit's encoding: the model weights' hash, the batch size (it sets which
/// texts are padded together, which moves the floats a little) and the texts.
fn cache_key(model_hash: &str, batch_size: usize, texts: &[&str]) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(model_hash.as_bytes());
    h.update((batch_size as u64).to_le_bytes());
    for t in texts {
        h.update((t.len() as u64).to_le_bytes());
        h.update(t.as_bytes());
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// The cache file's first bytes (version 2: word sums in f64, per encoding unit).
const CACHE_MAGIC: &[u8] = b"EPIMINE-ENC2";

fn write_cache(path: &Path, (embeddings, words): &UnitEncoding) -> std::io::Result<()> {
    let mut buf: Vec<u8> = CACHE_MAGIC.to_vec();
    let dim = embeddings.first().map_or(0, Vec::len);
    buf.extend((embeddings.len() as u32).to_le_bytes());
    buf.extend((dim as u32).to_le_bytes());
    for v in embeddings {
        v.iter().for_each(|x| buf.extend(x.to_le_bytes()));
    }
    buf.extend((words.len() as u32).to_le_bytes());
    for w in words {
        buf.extend((w.word.len() as u32).to_le_bytes());
        buf.extend(w.word.as_bytes());
        buf.extend(w.count.to_le_bytes());
        buf.extend((w.sum.len() as u32).to_le_bytes());
        w.sum.iter().for_each(|x| buf.extend(x.to_le_bytes()));
    }
    let tmp = path.with_extension("partial");
    std::fs::write(&tmp, buf)?;
    std::fs::rename(tmp, path)
}

fn read_cache(path: &Path) -> Option<UnitEncoding> {
    let data = std::fs::read(path).ok()?;
    let mut at = data.strip_prefix(CACHE_MAGIC)?;
    fn take<'a>(at: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
        if at.len() < n {
            return None;
        }
        let (head, rest) = at.split_at(n);
        *at = rest;
        Some(head)
    }
    let u32_ =
        |at: &mut &[u8]| -> Option<u32> { Some(u32::from_le_bytes(take(at, 4)?.try_into().ok()?)) };
    let n = u32_(&mut at)? as usize;
    let dim = u32_(&mut at)? as usize;
    let mut embeddings = Vec::with_capacity(n);
    for _ in 0..n {
        let raw = take(&mut at, 4 * dim)?;
        embeddings.push(
            raw.chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
        );
    }
    let words_n = u32_(&mut at)? as usize;
    let mut words = Vec::with_capacity(words_n);
    for _ in 0..words_n {
        let len = u32_(&mut at)? as usize;
        let word = String::from_utf8(take(&mut at, len)?.to_vec()).ok()?;
        let count = u32_(&mut at)?;
        let d = u32_(&mut at)? as usize;
        let sum = take(&mut at, 8 * d)?
            .chunks_exact(8)
            .map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes")))
            .collect();
        words.push(WordSum { word, count, sum });
    }
    at.is_empty().then_some((embeddings, words))
}

/// The encoder cache file of a unit's texts, when the job has a cache.
fn cache_path(job: &Job, model_hash: &str, texts: &[&str]) -> Option<PathBuf> {
    job.encoder.cache_dir.as_ref().map(|dir| {
        let dir = PathBuf::from(dir);
        let _ = std::fs::create_dir_all(&dir);
        let key = cache_key(model_hash, job.encoder.batch_size, texts);
        dir.join(format!("{key}.enc"))
    })
}

/// Everything a run writes, of one event or gathered over events.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Outputs {
    episodes: Vec<Episode>,
    assignments: Vec<Assignment>,
    fragments: Vec<FragmentRow>,
    terms: Vec<Term>,
    pairs: Vec<Pair>,
}

impl Outputs {
    fn extend(&mut self, other: Outputs) {
        self.episodes.extend(other.episodes);
        self.assignments.extend(other.assignments);
        self.fragments.extend(other.fragments);
        self.terms.extend(other.terms);
        self.pairs.extend(other.pairs);
    }
}

fn set_failed(status: &mut EventStatus, error: String) {
    tracing::warn!("{}: skipped: {error}", status.key_event);
    status.status = "failed".into();
    status.error = Some(error);
}

/// One event after §3–§4, waiting for episodes.
struct Pending {
    segments: Vec<Segment>,
    embeddings: Vec<Vec<f32>>,
    prepared: episodes::Prepared,
}

/// Classification needs no word vectors.
static NO_VECTORS: std::sync::LazyLock<HashMap<String, Vec<f32>>> =
    std::sync::LazyLock::new(HashMap::new);

impl Pending {
    /// The event's segment embeddings by whitespace-normalised text: an LLM's example sentence
    /// copied from a segment needs no new encoding.
    fn known_embeddings(&self) -> HashMap<String, Vec<f32>> {
        self.segments
            .iter()
            .zip(&self.embeddings)
            .map(|(s, e)| (normalise(&s.text), e.clone()))
            .collect()
    }

    fn input(&self) -> EventInput<'_> {
        EventInput {
            segments: &self.segments,
            terms: Vec::new(),
            pairs: Vec::new(),
            word_vectors: &NO_VECTORS,
            embeddings: &self.embeddings,
        }
    }
}

/// An event's term set (§1 expansion and synonym groups, pairs in the group sense) from its
/// statistics and word vectors.
fn term_set(
    job: &Job,
    segs: &[Segment],
    rows: &[Term],
    vectors: &HashMap<String, Vec<f32>>,
) -> expand::TermSet {
    let seg_terms: Vec<HashSet<String>> = segs
        .iter()
        .map(|s| crate::text::distinct_terms(&s.text).into_iter().collect())
        .collect();
    let empty = HashMap::new();
    expand::build_term_set(
        rows,
        if job.terms.vectors { vectors } else { &empty },
        job.terms.expansion,
        job.terms.synonym,
        &seg_terms,
    )
}

/// `epimine stats` with word vectors: the statistics dataflow, then on the worker owning each
/// event its word vectors (the encoder), expansion and synonym groups (§1) and the pairs in the
/// group sense (§2); writes `terms.parquet` and `pairs.parquet` (process 0), the same tables
/// `epimine run` writes. `None` outside process 0.
pub fn stats_with_vectors(job: &Job) -> Result<Option<stats::StatsOutput>, RunError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| RunError::Model(e.to_string()))?;
    let Some(done) = distributed(job, &runtime, true)? else {
        return Ok(None);
    };
    let mut output = stats::StatsOutput::default();
    for (_, report) in done.gathered.reports {
        if let Some(e) = &report.status.error {
            tracing::warn!("{}: {e}", report.status.key_event);
        }
        output.terms.extend(report.outputs.terms);
        output.pairs.extend(report.outputs.pairs);
    }
    let out = Location::parse(&job.out, true)?;
    runtime.block_on(async {
        out.write_table(&output.terms).await?;
        out.write_table(&output.pairs).await
    })?;
    Ok(Some(output))
}

type PrepareResult = Result<(Pending, expand::TermSet), (String, expand::TermSet)>;

/// One event's coordinator stages up to the kept candidate clusters (§1 expansion, §3–§4).
fn prepare_event(
    job: &Job,
    segs: Vec<Segment>,
    rows: Vec<Term>,
    (embeddings, vectors): Encoded,
) -> PrepareResult {
    let set = term_set(job, &segs, &rows, &vectors);
    let input = EventInput {
        segments: &segs,
        terms: set.salient.clone(),
        pairs: set
            .pairs
            .iter()
            .map(|p| (p.a.clone(), p.b.clone(), p.freq, p.d))
            .collect(),
        word_vectors: &vectors,
        embeddings: &embeddings,
    };
    match episodes::prepare(&input, &job.episodes) {
        Ok(prepared) => Ok((
            Pending {
                segments: segs,
                embeddings,
                prepared,
            },
            set,
        )),
        Err(e) => Err((e.to_string(), set)),
    }
}

/// §5 with an LLM: every waiting event's trials, at most `llm.concurrency` requests in flight
/// across events. Answers by (event, trial).
async fn ask_llm(
    client: &llm::Client,
    config: &llm::LlmConfig,
    prompts: &[(String, Vec<Vec<String>>)],
) -> BTreeMap<(String, u32), Result<Vec<llm::LlmEpisode>, LlmError>> {
    use futures::StreamExt;
    let bar = crate::progress::Bar::start(
        "LLM estimation",
        prompts.len() as u64 * u64::from(config.trials),
    );
    let jobs = prompts.iter().flat_map(|(event, groups)| {
        let groups: Vec<Vec<&str>> = groups
            .iter()
            .map(|g| g.iter().map(String::as_str).collect())
            .collect();
        (0..config.trials).map(move |trial| {
            let groups = groups.clone();
            async move {
                let answer = llm::estimate(client, &groups, trial, config.answer_retries).await;
                ((event.clone(), trial), answer)
            }
        })
    });
    let mut answers = BTreeMap::new();
    let mut stream = futures::stream::iter(jobs).buffer_unordered(config.concurrency);
    while let Some((key, answer)) = stream.next().await {
        bar.inc();
        answers.insert(key, answer);
    }
    bar.finish();
    answers
}

fn normalise(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// LLM episodes as classification targets (§6): each vector is the harmonic-weighted mean of
/// the sentence embeddings of [title joined by spaces, example sentence 1, 2, …]. Texts already
/// in `known` (the event's segments, and texts of earlier trials) are not encoded again.
fn llm_specs(
    encoder: &Encoder<DefaultBackend>,
    known: &mut HashMap<String, Vec<f32>>,
    episodes: &[llm::LlmEpisode],
) -> Result<Vec<EpisodeSpec>, String> {
    let texts_of = |e: &llm::LlmEpisode| -> Vec<String> {
        std::iter::once(e.title.join(" "))
            .chain(e.example_sentences.iter().cloned())
            .map(|t| normalise(&t))
            .collect()
    };
    let mut new: Vec<String> = episodes
        .iter()
        .flat_map(texts_of)
        .filter(|t| !known.contains_key(t))
        .collect();
    new.sort();
    new.dedup();
    if !new.is_empty() {
        let refs: Vec<&str> = new.iter().map(String::as_str).collect();
        let vectors = encoder
            .sentence_embeddings(&refs)
            .map_err(|e| format!("encoding the LLM's episodes: {e}"))?;
        for (i, text) in new.into_iter().enumerate() {
            known.insert(text, vectors.row(i).to_vec());
        }
    }
    Ok(episodes
        .iter()
        .map(|e| {
            let texts = texts_of(e);
            let rows: Vec<&[f32]> = texts.iter().map(|t| known[t].as_slice()).collect();
            EpisodeSpec {
                vector: episodes::classify::harmonic_mean_vector(&rows),
                title: e.title.join(" "),
                title_fields: e.title.clone(),
                keywords: e.keywords.clone(),
                example_sentences: e.example_sentences.clone(),
                source: "llm",
            }
        })
        .collect())
}
