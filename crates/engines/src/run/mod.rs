//! `epimine run`: from a corpus of many key events to Parquet episodes in one command — the
//! engine. What it leaves in `--out` (tables, `run.json`, checkpoints, the commit, the history's
//! files) is the run folder's contract, in [`crate::run_folder`], which `eval` and `report` read
//! too.
//!
//! Two parts. The process: the statistics dataflow (§1–§2, timely workers over threads and
//! processes, `crate::stats`), then the per-event pipeline, then the commit (`assemble`):
//! process 0 streams the final tables from the checkpoints, one event at a time, to their names,
//! and writes `run.json`, which lists every table with its sha256 and row count, last; with the
//! errors in `error`, the flag that stops a run from outside
//! (the Python package's Ctrl-C) in [`interrupt`], what a stopped run keeps in [`kept`], what the
//! processes of a job must agree on in [`identity`], the lock that keeps one run per `--out` in
//! [`crate::storage::lock`]; the history of the `--out` (read before, written at the commit) is
//! the run folder's, [`crate::run_folder::history`]. The per-event
//! pipeline on every worker (reuse, waves, encoding units, §3–§6, checkpoints) is `events`.

mod assemble;
mod error;
mod events;
pub mod identity;
pub mod interrupt;
pub mod kept;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::run_folder::manifest::{ModelInfo, RunReport, StageTime, TableEntry};
pub use crate::run_folder::outputs::Outputs;
pub use error::RunError;
pub use interrupt::Interrupt;

use crate::background;
use crate::fault::fault;
use crate::job::Job;
use crate::llm;
use crate::models::resolve_model;
use crate::progress::Stage;
use crate::run_folder::history::writer as history;
use crate::run_folder::{checkpoint, commit};
use crate::stats::{self, Round};
use crate::storage::Location;
use crate::topology::Cluster;
use assemble::{commit_run, Finished};
use events::exchange::GatheredReports;
use events::shared::Shared;

/// What a run produced (process 0), and whether it was partial.
#[derive(Debug)]
pub struct RunOutcome {
    /// `run.json`'s content.
    pub report: RunReport,
    /// Where the outputs are.
    pub out: String,
}

/// How a run treats what is already in `--out` (not part of the job: it does not change
/// results).
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Ignore the checkpoints: compute every event.
    pub fresh: bool,
    /// Write into an `--out` that holds files of something else.
    pub overwrite: bool,
    /// The run's time in its history (ms since 1970 UTC); `None`: when it commits.
    pub run_time: Option<i64>,
}

fn sha256_files(dir: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let path = e.path();
            if path.is_file() {
                if let Ok(bytes) = std::fs::read(&path) {
                    let hex = crate::digest::sha256_hex(&bytes);
                    out.insert(e.file_name().to_string_lossy().into_owned(), hex);
                }
            }
        }
    }
    out
}

/// What the distributed part of a run gathered (process 0).
struct Distributed {
    gathered: GatheredReports,
    models: ModelDirs,
    model_files: BTreeMap<String, String>,
    stages: Vec<StageTime>,
}

/// The model folders of a run: the word model (which also makes the sentence embeddings unless
/// `sentence` is given).
struct ModelDirs {
    words: PathBuf,
    sentence: Option<PathBuf>,
}

impl ModelDirs {
    /// sha256 of every file of both models; the sentence model's under `sentence_model/`.
    fn files(&self) -> BTreeMap<String, String> {
        let mut files = sha256_files(&self.words);
        if let Some(dir) = &self.sentence {
            for (name, sha) in sha256_files(dir) {
                files.insert(format!("sentence_model/{name}"), sha);
            }
        }
        files
    }
}

/// The key of the encoder cache: the weights of the model(s).
fn model_hash(files: &BTreeMap<String, String>) -> String {
    let words = files.get("model.safetensors").cloned().unwrap_or_default();
    match files.get("sentence_model/model.safetensors") {
        Some(sentence) => format!("{words}+{sentence}"),
        None => words,
    }
}

/// Checks every input before any work: the corpus has segments files with the segments'
/// columns, the background loads, the models are there (fetching a known one) and load (every
/// weight read, on the CPU), and the word model has the layer `encoder.word_layer` asks for.
/// Returns the background and the model folders.
fn check_inputs(
    job: &Job,
    runtime: &tokio::runtime::Runtime,
) -> Result<(background::Background, ModelDirs), RunError> {
    let corpus = job
        .corpus_location()
        .map_err(crate::corpus::CorpusError::from)?;
    runtime.block_on(crate::corpus::segment_files(&corpus))?;
    let bg = load_background(job, &corpus, runtime)?;
    let words = runtime.block_on(resolve_model(&job.encoder.model))?;
    let sentence = match &job.encoder.sentence_model {
        Some(m) => Some(runtime.block_on(resolve_model(m))?),
        None => None,
    };
    job.encoder
        .word_layer_of(crate::encoder::check_model(&words)?)?;
    if let Some(dir) = &sentence {
        crate::encoder::check_model(dir)?;
    }
    Ok((bg, ModelDirs { words, sentence }))
}

/// The job's background ([`background::resolve`]: the general-English default, the corpus's own
/// articles, or a file), said in one line.
fn load_background(
    job: &Job,
    corpus: &Location,
    runtime: &tokio::runtime::Runtime,
) -> Result<background::Background, RunError> {
    let bg = runtime.block_on(background::resolve(&job.background, corpus))?;
    match &job.background {
        background::Source::Wordfreq => tracing::info!(
            "background: general English (wordfreq {}, {} documents); a general-news text of \
             your own: --background FILE, one article a line (docs/design.md, \"The background\")",
            background::wordfreq::VERSION,
            bg.n_docs()
        ),
        background::Source::Corpus => tracing::info!(
            "background: the corpus's own {} articles (a word found in many of them weighs little)",
            bg.n_docs()
        ),
        background::Source::File(_) => {}
    }
    Ok(bg)
}

/// A history runs forward: this run's time (`--run-time`, else now) is not before the last
/// committed run's, checked before any work.
fn check_run_time(
    out: &Location,
    run_time: Option<i64>,
    last_run: u32,
    last_ms: i64,
) -> Result<(), RunError> {
    use crate::run_folder::history::{now_ms, rfc3339};
    let (this, given) = match run_time {
        Some(t) => (t, true),
        None => (now_ms(), false),
    };
    if this >= last_ms {
        return Ok(());
    }
    let reason = if given {
        format!(
            "--run-time {} is before the last run's time (run {last_run} at {}): a history runs \
             forward; give a later time, or none (the time of the commit)",
            rfc3339(this),
            rfc3339(last_ms)
        )
    } else {
        format!(
            "the last run's time (run {last_run} at {}) is after now ({}): this machine's clock \
             is behind, or that run was given a later --run-time; give a --run-time after it",
            rfc3339(last_ms),
            rfc3339(this)
        )
    };
    Err(RunError::Out {
        location: out.display_child(crate::run_folder::history::HEAD),
        reason,
    })
}

/// What a run needs before any work, all checked before anything is written.
struct RunInputs {
    bg: background::Background,
    models: ModelDirs,
    llm_client: Option<Arc<llm::Client>>,
}

/// The LLM's key (read by the process that will use it, worker 0's) and every input
/// ([`check_inputs`]).
fn prepare(
    job: &Job,
    runtime: &tokio::runtime::Runtime,
    terms_only: bool,
    cluster: &Cluster,
) -> Result<RunInputs, RunError> {
    let llm_client = if job.llm.enabled() && cluster.process == 0 && !terms_only {
        let key = job.llm.api_key()?;
        Some(Arc::new(llm::Client::new(&job.llm, key)?))
    } else {
        None
    };
    let (bg, models) = check_inputs(job, runtime)?;
    // A CUDA build without a GPU stops here, before any work, with one line.
    crate::encoder::check_device().map_err(crate::encoder::EncoderError::NoGpu)?;
    Ok(RunInputs {
        bg,
        models,
        llm_client,
    })
}

/// This process's shares of the terms, by worker and event.
type Shares = BTreeMap<usize, BTreeMap<String, Vec<crate::tables::Term>>>;

/// The statistics dataflow: each event's terms on one worker (never all of them in one
/// process), sent on to the event's owner by the per-event computation.
fn statistics(
    job: &Job,
    bg: background::Background,
    cluster: &Cluster,
) -> Result<Shares, RunError> {
    fault("statistics", 1);
    crate::fault::stall("statistics");
    let stage = Stage::start("statistics dataflow");
    let shares = stats::compute_by_event(
        &[Round {
            corpus: job.corpus.clone(),
            sign: 1,
        }],
        &bg,
        cluster,
    )?;
    drop(bg);
    let (events, terms) = shares.values().fold((0, 0), |(e, t), share| {
        (
            e + share.len(),
            t + share.values().map(Vec::len).sum::<usize>(),
        )
    });
    stage.finish(&format!(
        "{terms} terms of {events} events in this process's share"
    ));
    Ok(shares)
}

/// The statistics dataflow, then the per-event stages on the workers owning the events
/// (`terms_only`: just expansion and synonym groups; `out`: where checkpoints are read and
/// written). `None` outside process 0.
#[allow(clippy::too_many_arguments)]
fn distributed(
    job: &Job,
    inputs: RunInputs,
    terms_only: bool,
    out: Option<Location>,
    fresh: bool,
    followed: events::shared::Followed,
    cluster: &Cluster,
    interrupt: &Interrupt,
) -> Result<Option<Distributed>, RunError> {
    let mut stages: Vec<StageTime> = Vec::new();
    let mut timed = |name: &str, started: Instant| {
        stages.push(StageTime {
            stage: name.into(),
            seconds: started.elapsed().as_secs_f64(),
        })
    };
    let RunInputs {
        bg,
        models,
        llm_client,
    } = inputs;

    let started = Instant::now();
    let shares = statistics(job, bg, cluster)?;
    timed("statistics", started);
    if interrupt.is_set() {
        return Err(interrupted(job));
    }

    // Every process: the model.
    let started = Instant::now();
    let model_files = models.files();
    timed("load", started);

    // The per-event stages on the workers that own the events, their loops in a pool of as many
    // threads as this process has workers.
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(cluster.workers.max(1))
        .thread_name(|i| format!("epimine-event-{i}"))
        .build()
        .map_err(|e| RunError::Workers(format!("cannot start the event threads: {e}")))?;
    let shared = Arc::new(Shared {
        job: job.clone(),
        model_dir: models.words.clone(),
        sentence_model_dir: models.sentence.clone(),
        model_hash: model_hash(&model_files),
        settings: checkpoint::settings_digest(job, &model_files),
        terms: Mutex::new(shares),
        terms_only,
        out,
        fresh,
        checkpoints_written: AtomicUsize::new(0),
        llm: llm_client,
        errors: Mutex::new(Vec::new()),
        progress: events::stage_progress::StageProgress::new(cluster),
        pool,
        interrupt: interrupt.clone(),
        carried: followed.carried,
        previous_articles: followed.articles,
    });
    let worker_shared = Arc::clone(&shared);
    let results = crate::topology::execute_with_side_lines(
        cluster,
        |lines| shared.progress.connected(lines),
        move |worker| events::event::event_worker(worker, &worker_shared),
    );
    shared.progress.finish();
    if interrupt.is_set() {
        return Err(interrupted(job));
    }
    let results = results?;
    let gathered = results.into_iter().flatten().next();
    if let Some(e) = shared.errors.lock().expect("error list").first() {
        return Err(RunError::Workers(e.clone()));
    }
    let Some(mut gathered) = gathered else {
        return Ok(None);
    };
    stages.append(&mut gathered.stages);
    Ok(Some(Distributed {
        gathered,
        models,
        model_files,
        stages,
    }))
}

/// Runs a whole job, reusing the checkpoints in `--out` that still match. Returns `None` in
/// processes other than the one hosting worker 0.
pub fn run(job: &Job) -> Result<Option<RunOutcome>, RunError> {
    run_with(job, &RunOptions::default())
}

/// [`run`] with options.
pub fn run_with(job: &Job, options: &RunOptions) -> Result<Option<RunOutcome>, RunError> {
    run_interruptible(job, options, &Interrupt::new())
}

/// Pins the corpus as it is now ([`crate::corpus::pin`]): what this run reads, whatever an
/// append adds meanwhile. Before the job's fingerprint, which names the pinned files, so that
/// the processes a run admits read the same files. A corpus that cannot be read is left to
/// [`check_inputs`], which every process reports on together.
fn pin_corpus(job: &Job, runtime: &tokio::runtime::Runtime) {
    if let Ok(corpus) = job.corpus_location() {
        if let Err(e) = runtime.block_on(crate::corpus::pin(&corpus)) {
            tracing::debug!("the corpus is not pinned: {e}");
        }
    }
}

/// Ends the corpus's pin ([`crate::corpus::pin`]) when a run ends, however it ends.
struct Unpin;

impl Drop for Unpin {
    fn drop(&mut self) {
        crate::corpus::unpin();
    }
}

/// The error of a run stopped by its [`Interrupt`].
fn interrupted(job: &Job) -> RunError {
    RunError::Interrupted(job.out.clone())
}

/// [`run_with`], stopped when `interrupt` is raised: the workers stop at the next event or
/// encoding batch, nothing more is written, the lock is given back and the run ends with
/// [`RunError::Interrupted`]; run it again to resume from its checkpoints.
pub fn run_interruptible(
    job: &Job,
    options: &RunOptions,
    interrupt: &Interrupt,
) -> Result<Option<RunOutcome>, RunError> {
    let _pin = Unpin;
    job.validate()?;
    for warning in job.warnings() {
        tracing::warn!("{warning}");
    }
    let runtime = crate::runtime::multi_thread()?;
    pin_corpus(job, &runtime);
    // The layout (flags, job, launcher) and this process's address, before any work.
    let mut cluster = job
        .cluster
        .resolve()?
        .with_job(runtime.block_on(identity::job_fingerprint("run", job, true)));
    cluster.preflight(crate::encoder::CUDA)?;
    // Every other process runs this job (process 0 admits them), before anything is touched.
    let admitted = crate::topology::admit(&mut cluster)?;
    // Every input before `--out` is touched: a run that fails its checks leaves nothing behind.
    // Then every process says whether it could start, so that all stop at once when one cannot.
    let ready = prepare(job, &runtime, false, &cluster)
        .and_then(|inputs| Ok((inputs, open_out(job, options, &runtime, cluster.process)?)));
    admitted.start(ready.as_ref().map(|_| ()).map_err(|e| e.to_string()))?;
    let (inputs, (out, job_entry, lock, previous)) = ready?;
    kept::opened(
        out.display(),
        runtime.block_on(out.exists(commit::MANIFEST))?,
    );
    // Every process: the previous run's episodes its events may carry on (`episodes.carry`)
    // and its articles, so that the novelty view tells those that arrived since
    // (`episodes.novelty`).
    let followed = events::shared::Followed {
        carried: if job.episodes.carry || job.episodes.novelty {
            runtime.block_on(history::carried(&out))?
        } else {
            BTreeMap::new()
        },
        articles: if job.episodes.novelty {
            runtime.block_on(history::previous_articles(&out))?
        } else {
            BTreeMap::new()
        },
    };
    let Some(done) = distributed(
        job,
        inputs,
        false,
        Some(out.clone()),
        options.fresh,
        followed,
        &cluster,
        interrupt,
    )?
    else {
        return Ok(None);
    };
    let Distributed {
        gathered,
        models,
        model_files,
        stages,
    } = done;
    let model = ModelInfo {
        dir: models.words.display().to_string(),
        sentence_dir: models.sentence.as_ref().map(|d| d.display().to_string()),
        files: model_files,
    };
    let finished = Finished {
        gathered,
        model,
        stages,
        job_entry,
        previous: previous.expect("process 0 read the history"),
        run_time: options.run_time,
    };
    let fence = || lock.as_ref().map_or(Ok(()), |l| l.check_now(&runtime));
    fence().map_err(|reason| RunError::Out {
        location: job.out.clone(),
        reason,
    })?;
    let report = commit_run(job, &cluster, &runtime, &out, finished, &fence)?;
    drop(lock);
    Ok(Some(RunOutcome {
        report,
        out: out.display().to_string(),
    }))
}

/// What [`open_out`] gives: `--out`, `job.toml`'s entry for `run.json`, the lock and the
/// previous run's episode ids (process 0).
type Opened = (
    Location,
    Option<TableEntry>,
    Option<crate::storage::lock::RunLock>,
    Option<history::Previous>,
);

/// `--out` before any work: writable, ours, held by no other run (process 0 takes its lock,
/// [`lock`], held until the run ends). A finished run there (its `run.json`) stays whole until
/// this run commits (`assemble::commit_run`), so a run that fails or is killed leaves it as it
/// was; a folder without one gets the resolved job at once (process 0). Returns `job.toml`'s
/// entry for `run.json` (process 0), the lock, and the previous committed run's episode ids
/// (process 0: read now, so that a broken history stops the run before any work).
fn open_out(
    job: &Job,
    options: &RunOptions,
    runtime: &tokio::runtime::Runtime,
    process: usize,
) -> Result<Opened, RunError> {
    let out_error = |reason: String| RunError::Out {
        location: job.out.clone(),
        reason,
    };
    let out = job.out_location().map_err(|e| out_error(e.to_string()))?;
    runtime
        .block_on(commit::check_out(&out, process, options.overwrite))
        .map_err(out_error)?;
    let mut job_entry = None;
    let mut held = None;
    let mut previous = None;
    if process == 0 {
        held =
            Some(crate::storage::lock::acquire(&out, runtime, "epimine run").map_err(out_error)?);
        // Files a killed run was writing (`episodes.parquet#0`): ours to remove, now that no
        // other run can be writing here.
        match crate::storage::delete_staged(&out) {
            Ok(0) => {}
            Ok(n) => tracing::info!(
                "{}: {n} file(s) a stopped run left half-written removed",
                out.display()
            ),
            Err(e) => tracing::warn!("{}: {e}", out.display()),
        }
        let prev = runtime.block_on(history::previous(&out))?;
        if !options.fresh {
            check_followed_corpus(job, &out, &prev, runtime)?;
        }
        if let Some((run, last_ms)) = prev.last() {
            check_run_time(&out, options.run_time, run, last_ms)?;
        }
        previous = Some(prev);
        let text = job.to_toml().into_bytes();
        job_entry = Some(TableEntry {
            name: commit::JOB_FILE.into(),
            sha256: crate::digest::sha256_hex(&text),
            rows: 0,
            bytes: text.len() as u64,
        });
        runtime.block_on(async {
            if out.exists(commit::MANIFEST).await? {
                return Ok(());
            }
            out.put(commit::JOB_FILE, text.into()).await
        })?;
    }
    Ok((out, job_entry, held, previous))
}

/// A run into an `--out` whose history follows another corpus is refused before any work
/// (issue 64, item 5), unless `--fresh`: at least half of the key events of the last committed
/// run must be in this run's corpus, or this run would end every episode of the others (and a
/// run with the right corpus after it would give them new ids).
fn check_followed_corpus(
    job: &Job,
    out: &Location,
    previous: &history::Previous,
    runtime: &tokio::runtime::Runtime,
) -> Result<(), RunError> {
    let before = previous.events();
    let Some((run, _)) = previous.last().filter(|_| !before.is_empty()) else {
        return Ok(());
    };
    let corpus = job
        .corpus_location()
        .map_err(crate::corpus::CorpusError::from)?;
    let mut now = std::collections::BTreeSet::new();
    for (name, _) in runtime.block_on(crate::corpus::segment_files(&corpus))? {
        now.extend(runtime.block_on(corpus.distinct_strings(&name, "key_event"))?);
    }
    let missing: Vec<&String> = before.iter().filter(|e| !now.contains(*e)).collect();
    if missing.len() * 2 <= before.len() {
        return Ok(());
    }
    let then = runtime
        .block_on(out.get(commit::MANIFEST))
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .and_then(|v| v["job"]["corpus"].as_str().map(str::to_string))
        .unwrap_or_else(|| "another corpus".into());
    Err(RunError::Out {
        location: job.out.clone(),
        reason: format!(
            "its last run (run {run}) followed the corpus {then}: {} of its {} key event(s) are not in the corpus {} (e.g. `{}`), so this run would end every episode of them. Give the --out of this corpus, or pass --fresh to follow this corpus here anyway",
            missing.len(),
            before.len(),
            job.corpus,
            missing[0]
        ),
    })
}

/// `epimine stats` with word vectors: the statistics dataflow, then on the worker owning each
/// event its word vectors (the encoder), expansion and synonym groups (§1) and the pairs in the
/// group sense (§2); writes `terms.parquet` and `pairs.parquet` (process 0), the same tables
/// `epimine run` writes. `None` outside process 0.
pub fn stats_with_vectors(job: &Job) -> Result<Option<stats::StatsOutput>, RunError> {
    let _pin = Unpin;
    job.validate()?;
    let runtime = crate::runtime::multi_thread()?;
    pin_corpus(job, &runtime);
    let cluster = job
        .cluster
        .resolve()?
        .with_job(runtime.block_on(identity::job_fingerprint("stats", job, false)));
    cluster.preflight(crate::encoder::CUDA)?;
    let inputs = prepare(job, &runtime, true, &cluster)?;
    let Some(done) = distributed(
        job,
        inputs,
        true,
        None,
        false,
        events::shared::Followed::default(),
        &cluster,
        &Interrupt::new(),
    )?
    else {
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
    let out = job.out_location()?;
    runtime.block_on(async {
        out.write_table(&output.terms).await?;
        out.write_table(&output.pairs).await
    })?;
    Ok(Some(output))
}
