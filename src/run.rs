//! `epimine run`: from a corpus of many key events to Parquet episodes in one command.
//!
//! Stages: the statistics dataflow (§1–§2, timely workers over threads and processes); then, in
//! the process hosting worker 0, a coordinator runs the per-event stages — encoding (sentence
//! embeddings and static word vectors from one forward pass), expansion and synonym groups,
//! partitioning, candidate clustering (§3–§4); with an `[llm]` backend, every event's candidate
//! clusters go to the LLM (§5; requests concurrent across events, `llm.trials` times), else each
//! kept cluster is an episode; then classification (§6). An event that fails is recorded in
//! `run.json` and the others complete; an event whose LLM estimation fails falls back to no-LLM
//! episodes and `run.json` says why.
//!
//! Outputs in `<out>/`: `episodes.parquet`, `assignments.parquet`, `fragments.parquet`,
//! `terms.parquet`, `pairs.parquet`, `job.toml` (the resolved job) and `run.json`.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;

use crate::background;
use crate::encoder::{self, DefaultBackend, Encoder};
use crate::episodes::{self, expand, EpisodeSpec, EventCounts, EventInput};
use crate::job::Job;
use crate::llm::{self, LlmError};
use crate::progress::Stage;
use crate::stats::{self, Round, StatsError};
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
}

/// One event's status in `run.json`.
#[derive(Debug, Clone, Serialize)]
pub struct EventStatus {
    /// The key event.
    pub key_event: String,
    /// `ok` or `failed`.
    pub status: &'static str,
    /// Why it failed.
    pub error: Option<String>,
    /// Segments.
    pub segments: usize,
    /// Stage counts (episodes and assigned segments summed over trials).
    pub counts: EventCounts,
    /// The LLM stage of the event, when one ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub llm: Option<EventLlm>,
}

/// One event's LLM stage in `run.json`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct EventLlm {
    /// Trials whose episodes came from the LLM.
    pub trials_ok: u32,
    /// Episodes per trial.
    pub episodes_per_trial: Vec<usize>,
    /// Trials that fell back to no-LLM episodes, and why.
    pub fallbacks: Vec<Fallback>,
}

/// A trial that fell back to no-LLM episodes.
#[derive(Debug, Clone, Serialize)]
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

/// Runs a whole job. Returns `None` in processes other than the one hosting worker 0.
pub fn run(job: &Job) -> Result<Option<RunOutcome>, RunError> {
    job.validate()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| RunError::Model(e.to_string()))?;
    let mut stages: Vec<StageTime> = Vec::new();
    let mut timed = |name: &str, started: Instant| {
        stages.push(StageTime {
            stage: name.into(),
            seconds: started.elapsed().as_secs_f64(),
        })
    };

    // The LLM's key is read before any work, by the process that will use it (worker 0's).
    let llm_key = if job.llm.enabled() && job.cluster.process == 0 {
        Some(job.llm.api_key()?)
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
    let Some(output) = output else {
        return Ok(None);
    };
    stage.finish(&format!(
        "{} terms, {} pairs",
        output.terms.len(),
        output.pairs.len()
    ));
    timed("statistics", started);

    // The coordinator: corpus, model.
    let started = Instant::now();
    let corpus = Location::parse(&job.corpus, false)?;
    let segments: Vec<Segment> = runtime.block_on(corpus.read_table())?;
    let model_dir = runtime.block_on(resolve_model(&job.encoder.model))?;
    let device = encoder::default_device();
    let encoder = Encoder::<DefaultBackend>::load(&model_dir, &device)?
        .with_batch_size(job.encoder.batch_size);
    let model_files = sha256_files(&model_dir);
    let model_hash = model_files
        .get("model.safetensors")
        .cloned()
        .unwrap_or_default();
    timed("load", started);

    let mut by_event: BTreeMap<&str, Vec<&Segment>> = BTreeMap::new();
    for s in &segments {
        by_event.entry(s.key_event.as_str()).or_default().push(s);
    }
    let mut terms_by_event: HashMap<&str, Vec<Term>> = HashMap::new();
    for t in &output.terms {
        terms_by_event
            .entry(t.key_event.as_str())
            .or_default()
            .push(t.clone());
    }

    let llm_client = match llm_key {
        Some(key) => Some(llm::Client::new(&job.llm, key)?),
        None => None,
    };

    let started = Instant::now();
    let bar = crate::progress::Bar::start("episodes", by_event.len() as u64);
    let mut all = Outputs::default();
    let mut statuses = Vec::new();
    // Events waiting for the LLM, with what their classification needs.
    let mut waiting: Vec<(usize, Pending)> = Vec::new();
    for (event, segs) in &by_event {
        bar.set_message(event);
        let segs: Vec<Segment> = segs.iter().map(|s| (*s).clone()).collect();
        let result = prepare_event(
            job,
            &encoder,
            &model_hash,
            &segs,
            terms_by_event.remove(event).unwrap_or_default(),
        );
        let mut status = EventStatus {
            key_event: event.to_string(),
            status: "ok",
            error: None,
            segments: segs.len(),
            counts: EventCounts::default(),
            llm: None,
        };
        match result {
            Ok((pending, set)) => {
                all.terms.extend(set.rows);
                all.pairs.extend(set.pairs);
                all.fragments
                    .extend(pending.prepared.fragments.iter().cloned());
                status.counts = pending.prepared.counts.clone();
                if llm_client.is_some() {
                    waiting.push((statuses.len(), pending));
                } else {
                    let input = pending.input();
                    let specs =
                        episodes::cluster_episodes(&input, &pending.prepared, &job.episodes);
                    status.counts.kept_clusters = specs.len();
                    let (eps, asg) = episodes::assign(
                        &input,
                        &pending.prepared.key_event,
                        &specs,
                        &job.episodes,
                        0,
                    );
                    if eps.is_empty() {
                        fail(
                            &mut status,
                            episodes::EventError::NoEpisodes(job.episodes.min_segments).to_string(),
                        );
                    }
                    status.counts.episodes = eps.len();
                    status.counts.assigned = asg.len();
                    all.episodes.extend(eps);
                    all.assignments.extend(asg);
                }
            }
            Err((e, set)) => {
                if let Some(set) = set {
                    all.terms.extend(set.rows);
                    all.pairs.extend(set.pairs);
                }
                fail(&mut status, e);
            }
        }
        statuses.push(status);
        bar.inc();
    }
    bar.finish();
    timed("episodes", started);

    let mut llm_report = None;
    if let Some(client) = &llm_client {
        let started = Instant::now();
        let answers = runtime.block_on(ask_llm(client, &job.llm, &waiting));
        timed("llm", started);
        let started = Instant::now();
        let mut fallbacks = 0;
        let bar = crate::progress::Bar::start("classification", waiting.len() as u64);
        for (i, pending) in &waiting {
            let status = &mut statuses[*i];
            bar.set_message(&status.key_event);
            let input = pending.input();
            let mut known = pending.known_embeddings();
            let mut event_llm = EventLlm::default();
            let (mut n_eps, mut n_asg) = (0, 0);
            for trial in 0..job.llm.trials {
                let answer = &answers[&(*i, trial)];
                let from_llm = match answer {
                    Ok(eps) => llm_specs(&encoder, &mut known, eps).and_then(|specs| {
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
                    }),
                    Err(e) => Err(e.to_string()),
                };
                let (eps, asg) = match from_llm {
                    Ok(out) => {
                        event_llm.trials_ok += 1;
                        out
                    }
                    Err(error) => {
                        tracing::warn!(
                            "{}: trial {trial}: LLM estimation failed, using no-LLM episodes: {error}",
                            status.key_event
                        );
                        fallbacks += 1;
                        event_llm.fallbacks.push(Fallback { trial, error });
                        let specs =
                            episodes::cluster_episodes(&input, &pending.prepared, &job.episodes);
                        episodes::assign(
                            &input,
                            &pending.prepared.key_event,
                            &specs,
                            &job.episodes,
                            trial,
                        )
                    }
                };
                event_llm.episodes_per_trial.push(eps.len());
                n_eps += eps.len();
                n_asg += asg.len();
                all.episodes.extend(eps);
                all.assignments.extend(asg);
            }
            status.counts.episodes = n_eps;
            status.counts.assigned = n_asg;
            if n_eps == 0 {
                fail(
                    status,
                    episodes::EventError::NoEpisodes(job.episodes.min_segments).to_string(),
                );
            }
            status.llm = Some(event_llm);
            bar.inc();
        }
        bar.finish();
        timed("classification", started);
        llm_report = Some(LlmReport {
            backend: job.llm.backend.name(),
            model: job.llm.model.clone(),
            url: client.url().to_string(),
            trials: job.llm.trials,
            usage: client.usage(),
            fallbacks,
        });
        tracing::info!(
            "LLM: {} requests, {} answers from the cache, {fallbacks} fallbacks",
            client.usage().requests,
            client.usage().cache_hits
        );
    }

    // Write everything, each file whole.
    let started = Instant::now();
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
        llm: llm_report,
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
    timed("write", started);
    report.stages = stages;
    let json = serde_json::to_string_pretty(&report).expect("reports serialize");
    runtime.block_on(out.put("run.json", json.into_bytes().into()))?;
    Ok(Some(RunOutcome {
        report,
        out: out.display().to_string(),
    }))
}

/// An event's encoder outputs: segment embeddings and static word vectors.
type Encoded = (Vec<Vec<f32>>, HashMap<String, Vec<f32>>);

/// The cache key of an event's encoding: the model weights' hash and the texts.
fn cache_key(model_hash: &str, texts: &[&str]) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(model_hash.as_bytes());
    for t in texts {
        h.update((t.len() as u64).to_le_bytes());
        h.update(t.as_bytes());
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

fn write_cache(path: &Path, (embeddings, words): &Encoded) -> std::io::Result<()> {
    let mut buf: Vec<u8> = b"EPIMINE-ENC1".to_vec();
    let dim = embeddings.first().map_or(0, Vec::len);
    buf.extend((embeddings.len() as u32).to_le_bytes());
    buf.extend((dim as u32).to_le_bytes());
    for v in embeddings {
        v.iter().for_each(|x| buf.extend(x.to_le_bytes()));
    }
    let mut sorted: Vec<(&String, &Vec<f32>)> = words.iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(b.0));
    buf.extend((sorted.len() as u32).to_le_bytes());
    for (w, v) in sorted {
        buf.extend((w.len() as u32).to_le_bytes());
        buf.extend(w.as_bytes());
        buf.extend((v.len() as u32).to_le_bytes());
        v.iter().for_each(|x| buf.extend(x.to_le_bytes()));
    }
    let tmp = path.with_extension("partial");
    std::fs::write(&tmp, buf)?;
    std::fs::rename(tmp, path)
}

fn read_cache(path: &Path) -> Option<Encoded> {
    let data = std::fs::read(path).ok()?;
    let mut at = data.strip_prefix(b"EPIMINE-ENC1")?;
    let u32_ = |at: &mut &[u8]| -> Option<u32> {
        let (head, rest) = at.split_first_chunk::<4>()?;
        *at = rest;
        Some(u32::from_le_bytes(*head))
    };
    let floats = |at: &mut &[u8], n: usize| -> Option<Vec<f32>> {
        if at.len() < 4 * n {
            return None;
        }
        let (head, rest) = at.split_at(4 * n);
        *at = rest;
        Some(
            head.chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
        )
    };
    let n = u32_(&mut at)? as usize;
    let dim = u32_(&mut at)? as usize;
    let mut embeddings = Vec::with_capacity(n);
    for _ in 0..n {
        embeddings.push(floats(&mut at, dim)?);
    }
    let words_n = u32_(&mut at)? as usize;
    let mut words = HashMap::with_capacity(words_n);
    for _ in 0..words_n {
        let len = u32_(&mut at)? as usize;
        if at.len() < len {
            return None;
        }
        let (w, rest) = at.split_at(len);
        at = rest;
        let word = String::from_utf8(w.to_vec()).ok()?;
        let d = u32_(&mut at)? as usize;
        words.insert(word, floats(&mut at, d)?);
    }
    Some((embeddings, words))
}

/// Encodes an event's texts (or reads them from the cache).
fn encode_event(
    job: &Job,
    encoder: &Encoder<DefaultBackend>,
    model_hash: &str,
    texts: &[&str],
) -> Result<Encoded, encoder::EncoderError> {
    let cached = job.encoder.cache_dir.as_ref().map(|dir| {
        let dir = PathBuf::from(dir);
        let _ = std::fs::create_dir_all(&dir);
        dir.join(format!("{}.enc", cache_key(model_hash, texts)))
    });
    if let Some(hit) = cached.as_deref().and_then(read_cache) {
        return Ok(hit);
    }
    let (embeddings, words) = encoder.encode_both(texts, encoder.last_layer())?;
    let embeddings: Vec<Vec<f32>> = (0..embeddings.len())
        .map(|i| embeddings.row(i).to_vec())
        .collect();
    let vectors: HashMap<String, Vec<f32>> =
        words.into_iter().map(|w| (w.word, w.vector)).collect();
    let encoded = (embeddings, vectors);
    if let Some(path) = cached {
        if let Err(e) = write_cache(&path, &encoded) {
            tracing::warn!("encoder cache {}: {e}", path.display());
        }
    }
    Ok(encoded)
}

/// Everything a run writes, gathered over events.
#[derive(Default)]
struct Outputs {
    episodes: Vec<Episode>,
    assignments: Vec<Assignment>,
    fragments: Vec<FragmentRow>,
    terms: Vec<Term>,
    pairs: Vec<Pair>,
}

fn fail(status: &mut EventStatus, error: String) {
    tracing::warn!("{}: skipped: {error}", status.key_event);
    status.status = "failed";
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

type PrepareResult = Result<(Pending, expand::TermSet), (String, Option<expand::TermSet>)>;

/// One event's coordinator stages up to the kept candidate clusters (§1 expansion, §3–§4).
fn prepare_event(
    job: &Job,
    encoder: &Encoder<DefaultBackend>,
    model_hash: &str,
    segs: &[Segment],
    rows: Vec<Term>,
) -> PrepareResult {
    let texts: Vec<&str> = segs.iter().map(|s| s.text.as_str()).collect();
    let (embeddings, vectors) = encode_event(job, encoder, model_hash, &texts)
        .map_err(|e| (format!("encoder: {e}"), None))?;
    let seg_terms: Vec<HashSet<String>> = segs
        .iter()
        .map(|s| crate::text::distinct_terms(&s.text).into_iter().collect())
        .collect();
    let empty = HashMap::new();
    let set = expand::build_term_set(
        &rows,
        if job.terms.vectors { &vectors } else { &empty },
        job.terms.expansion,
        job.terms.synonym,
        &seg_terms,
    );
    let input = EventInput {
        segments: segs,
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
                segments: segs.to_vec(),
                embeddings,
                prepared,
            },
            set,
        )),
        Err(e) => Err((e.to_string(), Some(set))),
    }
}

/// §5 with an LLM: every waiting event's trials, at most `llm.concurrency` requests in flight
/// across events. Answers by (event's status index, trial).
async fn ask_llm(
    client: &llm::Client,
    config: &llm::LlmConfig,
    waiting: &[(usize, Pending)],
) -> BTreeMap<(usize, u32), Result<Vec<llm::LlmEpisode>, LlmError>> {
    use futures::StreamExt;
    let bar = crate::progress::Bar::start(
        "LLM estimation",
        waiting.len() as u64 * u64::from(config.trials),
    );
    let jobs = waiting.iter().flat_map(|(i, pending)| {
        let groups: Vec<Vec<&str>> = pending
            .prepared
            .top_segments(config.segments_per_cluster)
            .into_iter()
            .map(|g| {
                g.into_iter()
                    .map(|s| pending.segments[s].text.as_str())
                    .collect()
            })
            .collect();
        (0..config.trials).map(move |trial| {
            let groups = groups.clone();
            async move {
                let answer = llm::estimate(client, &groups, trial, config.answer_retries).await;
                ((*i, trial), answer)
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
