//! Job files: CLI flags + a TOML job file + `--set key=value` overrides become one validated
//! [`Job`], which is saved next to the outputs (`job.toml`, and inside `run.json`).
//!
//! Every parameter of the method (docs/method.md) has the paper's default here (δ = 25%, expansion 0.75,
//! synonym 0.85, μ − σ bounds, the paper's confidence rule).

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::encoder::{AutotuneLevel, EncoderOptions, Precision, ShapePolicy};
use crate::episodes::EpisodeParams;
use crate::llm::LlmConfig;
use crate::topology::ClusterSettings;

/// The default encoder model: a name in the model cache (the one `epimine models fetch` fetches
/// by default).
pub const DEFAULT_MODEL: &str = crate::models::DEFAULT_MODEL_NAME;
/// Expansion bound: a non-salient word whose best cosine to a salient term reaches it joins T.
pub const DEFAULT_EXPANSION: f64 = 0.75;
/// Synonym bound: terms whose nearest neighbour is at least this similar share a group.
pub const DEFAULT_SYNONYM: f64 = 0.85;

/// Errors of job handling.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// The job file could not be read.
    #[error("{file}: {source}")]
    Read {
        /// The file.
        file: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The job file is not a valid job.
    #[error("{file}: {message}")]
    Parse {
        /// The file (or `--set`).
        file: String,
        /// What is wrong, with line and column where TOML gives them.
        message: String,
    },
    /// A `--set` is not `key=value`.
    #[error("--set {0}: expected key=value, e.g. episodes.top_articles=0.3")]
    BadSet(String),
    /// A `--set` names no setting, or gives it a value of the wrong kind.
    #[error("--set {set}: {message}")]
    Set {
        /// The `key=value` as given.
        set: String,
        /// What is wrong.
        message: String,
    },
    /// A required setting is missing.
    #[error("no {0}: give it in the job file or as a flag")]
    Missing(&'static str),
}

/// The encoder section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EncoderConfig {
    /// A model directory, or a name in the model cache (`$EPIMINE_MODELS`, else
    /// `~/.cache/epimine/models`).
    pub model: String,
    /// A second model for the sentence embeddings alone (docs/method.md §6), e.g.
    /// `all-mpnet-base-v2` (the paper's); `model` then makes only the static word vectors (§1).
    /// A folder or a name in the model cache, like `model`. It costs a second forward pass over
    /// every segment. Unset: `model` makes both from one pass.
    pub sentence_model: Option<String>,
    /// Sequences per forward pass (default 32 on the CPU, 128 in a CUDA build).
    pub batch_size: usize,
    /// Run the transformer's linear layers in integers (dynamic quantization: int8 weights per
    /// output column, 13-bit activations per row; `encoder::quant`). CPU only. Off by default:
    /// about 1.2–1.3× faster on AVX2, but the vectors move (cosine ≈ 0.9995 to the f32 ones on
    /// all-MiniLM-L6-v2) and with them the episodes (development-set 5-F1 23.9 against 27.5).
    pub int8: bool,
    /// A local folder where each event's embeddings and word vectors are kept, keyed by the
    /// model's weights and the event's texts, so re-runs with other parameters skip encoding.
    pub cache_dir: Option<String>,
    /// Batch shapes: `"exact"` (each batch padded to its own longest text; least work, the
    /// CPU default) or `"buckets"` (fixed rows, lengths rounded up to a few buckets, so the
    /// run meets a few known shapes; the CUDA default). `encoder::shapes`.
    pub shapes: ShapePolicy,
    /// Float type of the transformer: `"f32"` (default), `"f16"` or `"bf16"` (for GPUs; the
    /// vectors move by rounding).
    pub precision: Precision,
    /// Run one forward pass at every bucket shape before the first batch (timed and logged), so
    /// that kernel compilation and autotuning happen there and not mid-run. Default: on in a
    /// CUDA build, off on the CPU (where a shape costs nothing to meet). Needs `shapes =
    /// "buckets"`.
    pub warmup: bool,
    /// CUDA builds: where cubecl keeps its autotune results and compiled kernels, so that a
    /// later process (or, on a shared path, another node with the same GPU) does not pay them
    /// again. Default: `$EPIMINE_KERNELS`, else `kernels/` beside the model cache
    /// (`~/.cache/epimine/kernels`). Ignored by CPU builds.
    pub kernel_cache: Option<String>,
    /// CUDA builds: cubecl's matmul autotuning effort, `"minimal"`, `"balanced"` (cubecl's
    /// default), `"extensive"` or `"full"`; paid once per shape and kernel cache.
    pub autotune: AutotuneLevel,
    /// The hidden layer of `model` whose vectors make the static word vectors (§1; unset: the
    /// last, as the paper and X-Class take them; 0: the embedding layer). The int8 weights move
    /// the last layer's word vectors by about 3% of their norm, past the 1% the term stage holds
    /// steady; the embedding layer's barely move (docs/quality.md, issue 66). The sentence
    /// embeddings are the last layer's either way.
    pub word_layer: Option<usize>,
}

impl Default for EncoderConfig {
    fn default() -> Self {
        // How the encoder runs: the encoder's own defaults, set in one place.
        let options = EncoderOptions::default();
        Self {
            model: DEFAULT_MODEL.into(),
            sentence_model: None,
            batch_size: options.batch_size,
            int8: options.int8,
            cache_dir: None,
            shapes: options.shapes,
            precision: options.precision,
            warmup: cfg!(feature = "cuda"),
            kernel_cache: None,
            autotune: AutotuneLevel::Balanced,
            word_layer: None,
        }
    }
}

impl EncoderConfig {
    /// The layer of the static word vectors for a word model whose last layer is `last`:
    /// `word_layer`, else the last; a layer the model lacks is refused, naming the setting.
    pub fn word_layer_of(&self, last: usize) -> Result<usize, crate::encoder::EncoderError> {
        let layer = self.word_layer.unwrap_or(last);
        crate::encoder::check_layer(layer, last).map_err(|e| {
            crate::encoder::EncoderError::Invalid(format!("encoder.word_layer = {layer}: {e}"))
        })?;
        Ok(layer)
    }

    /// The encoder options of this section.
    pub fn options(&self) -> EncoderOptions {
        EncoderOptions {
            batch_size: self.batch_size,
            int8: self.int8,
            shapes: self.shapes,
            precision: self.precision,
        }
    }
}

/// The term section (docs/method.md §1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TermConfig {
    /// Expansion bound (paper: 0.75).
    pub expansion: f64,
    /// Synonym bound (reference: 0.85).
    pub synonym: f64,
    /// Use word vectors for expansion and synonym groups.
    pub vectors: bool,
    /// At most this many salient terms per event, the most salient (0: no cap): T's pairwise
    /// matrices grow with its square.
    pub max_terms: usize,
    /// At most this many non-salient words per event tried for expansion, the most frequent
    /// (0: no cap).
    pub max_expansion_words: usize,
    /// Words written on days of their own join T before the expansion, with their own salience
    /// ([`crate::episodes::dated_words`]; off by default).
    pub dated: bool,
}

/// Default [`TermConfig::max_terms`].
pub const DEFAULT_MAX_TERMS: usize = 5000;

/// Default [`TermConfig::max_expansion_words`].
pub const DEFAULT_MAX_EXPANSION_WORDS: usize = 20000;

impl Default for TermConfig {
    fn default() -> Self {
        Self {
            expansion: DEFAULT_EXPANSION,
            synonym: DEFAULT_SYNONYM,
            vectors: true,
            max_terms: DEFAULT_MAX_TERMS,
            max_expansion_words: DEFAULT_MAX_EXPANSION_WORDS,
            dated: false,
        }
    }
}

impl TermConfig {
    /// The bounds of the term steps ([`crate::episodes::expand::build_term_set`]).
    pub fn params(&self) -> crate::episodes::expand::TermParams {
        crate::episodes::expand::TermParams {
            expansion: self.expansion,
            synonym: self.synonym,
            max_terms: self.max_terms,
            max_candidates: self.max_expansion_words,
        }
    }
}

/// The most worker threads one process may start (`cluster.workers`, `-w`).
pub const MAX_WORKERS: usize = 1024;

impl Default for Job {
    fn default() -> Self {
        Self {
            corpus: String::new(),
            background: crate::background::Source::default(),
            out: String::new(),
            encoder: EncoderConfig::default(),
            terms: TermConfig::default(),
            episodes: EpisodeParams::default(),
            cluster: ClusterSettings::default(),
            llm: LlmConfig::default(),
            import: crate::import::articles::ImportConfig::default(),
            keep_versions: default_keep_versions(),
        }
    }
}

/// A whole job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Job {
    /// The corpus (from `epimine import` or `epimine synth`).
    #[serde(default)]
    pub corpus: String,
    /// The background: general-news text (one document a line), a `background build` table,
    /// `corpus` (the corpus's own articles) or `wordfreq` (general English, the default; empty
    /// means it too), decoded once: [`crate::background::Source`].
    #[serde(default)]
    pub background: crate::background::Source,
    /// Output folder.
    #[serde(default)]
    pub out: String,
    /// How many committed versions `--out` keeps in `_versions/` (at least 1: the current one;
    /// docs/tables.md, "Versions").
    #[serde(default = "default_keep_versions")]
    pub keep_versions: usize,
    /// Encoder.
    #[serde(default)]
    pub encoder: EncoderConfig,
    /// Terms.
    #[serde(default)]
    pub terms: TermConfig,
    /// Episode stages.
    #[serde(default)]
    pub episodes: EpisodeParams,
    /// Timely layout (what it leaves open comes from the launcher: Slurm, Kubernetes).
    #[serde(default)]
    pub cluster: ClusterSettings,
    /// LLM episode estimation (docs/method.md §5); `backend = "none"` by default.
    #[serde(default)]
    pub llm: LlmConfig,
    /// `epimine import --articles`: column names, bad rows, how articles are cut.
    #[serde(default)]
    pub import: crate::import::articles::ImportConfig,
}

/// How many committed versions a run folder keeps by default (`keep_versions`).
pub const DEFAULT_KEEP_VERSIONS: usize = 3;

fn default_keep_versions() -> usize {
    DEFAULT_KEEP_VERSIONS
}

/// Parses a TOML value the way a user types it after `key=`: numbers, booleans and quoted
/// strings as TOML, anything else as a plain string.
fn set_value(text: &str) -> toml::Value {
    let doc = format!("v = {text}");
    match doc.parse::<toml::Table>() {
        Ok(mut t) => t
            .remove("v")
            .unwrap_or_else(|| toml::Value::String(text.into())),
        Err(_) => toml::Value::String(text.to_string()),
    }
}

/// The settings a command line (or a Python call) gives over a job file: each replaces the
/// file's when given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Overrides {
    /// `--corpus`.
    pub corpus: Option<String>,
    /// `--background`.
    pub background: Option<String>,
    /// `--out`.
    pub out: Option<String>,
    /// `--model` (`encoder.model`).
    pub model: Option<String>,
    /// `-w`: worker threads per process.
    pub workers: Option<usize>,
    /// `-n`: processes.
    pub processes: Option<usize>,
    /// `-p`: this process's index.
    pub process: Option<usize>,
    /// `-H`: the hostfile.
    pub hostfile: Option<String>,
}

/// The import settings a command line (or a Python call) gives over a job file's `[import]`:
/// each replaces the file's when given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImportOverrides {
    /// `--key-event-column`.
    pub key_event_column: Option<String>,
    /// `--id-column`.
    pub id_column: Option<String>,
    /// `--published-column`.
    pub published_column: Option<String>,
    /// `--title-column`.
    pub title_column: Option<String>,
    /// `--text-column`.
    pub text_column: Option<String>,
    /// `--theme-column`.
    pub theme_column: Option<String>,
    /// `--on-error`.
    pub on_error: Option<crate::import::articles::OnError>,
    /// `--date-format`.
    pub date_format: Option<String>,
    /// `--timezone`.
    pub timezone: Option<String>,
    /// `--target-chars`.
    pub target_chars: Option<usize>,
}

impl Job {
    /// The corpus as a [`crate::storage::Location`] (read, never made): every stage that reads
    /// the job's corpus takes it from here.
    pub fn corpus_location(
        &self,
    ) -> Result<crate::storage::Location, crate::storage::StorageError> {
        crate::storage::Location::parse(&self.corpus, false)
    }

    /// `--out` as a [`crate::storage::Location`] (a local folder is made): every stage that
    /// writes the job's outputs takes it from here.
    pub fn out_location(&self) -> Result<crate::storage::Location, crate::storage::StorageError> {
        crate::storage::Location::parse(&self.out, true)
    }

    /// The job a command runs: the file (or the defaults), then `overrides`, then the `--set`s
    /// (`key=value`). Not yet checked: the run that takes it checks it first
    /// (`run::run_with`, `run::stats_with_vectors`), once. The CLI and the Python package both
    /// resolve a job here.
    pub fn resolve(
        file: Option<&Path>,
        overrides: Overrides,
        sets: &[String],
    ) -> Result<Self, JobError> {
        let mut job = match file {
            Some(path) => Self::from_file(path)?,
            None => Self::default(),
        };
        let o = overrides;
        let strings = [
            (o.corpus, &mut job.corpus),
            (o.out, &mut job.out),
            (o.model, &mut job.encoder.model),
        ];
        for (given, field) in strings {
            if let Some(v) = given {
                *field = v;
            }
        }
        if let Some(b) = o.background {
            job.background = crate::background::Source::parse(&b);
        }
        if let Some(w) = o.workers {
            job.cluster.workers = w;
        }
        job.cluster.processes = o.processes.or(job.cluster.processes);
        job.cluster.process = o.process.or(job.cluster.process);
        job.cluster.hostfile = o.hostfile.or(job.cluster.hostfile);
        job.with_sets(sets)
    }

    /// The import settings a command runs with (`epimine import --articles`): the job file's
    /// `[import]` (or the defaults), then `overrides`. The CLI and the Python package both
    /// resolve them here.
    pub fn resolve_import(
        file: Option<&Path>,
        overrides: ImportOverrides,
    ) -> Result<crate::import::articles::ImportConfig, JobError> {
        Self::resolve_import_over(file, None, overrides)
    }

    /// [`Job::resolve_import`] over `base` (an append: the corpus's own settings,
    /// [`crate::import::articles::saved_config`]) where no job file is given.
    pub fn resolve_import_over(
        file: Option<&Path>,
        base: Option<crate::import::articles::ImportConfig>,
        overrides: ImportOverrides,
    ) -> Result<crate::import::articles::ImportConfig, JobError> {
        let mut config = match file {
            Some(path) => Self::from_file(path)?.import,
            None => base.unwrap_or_default(),
        };
        let o = overrides;
        let c = &mut config.columns;
        for (given, field) in [
            (o.key_event_column, &mut c.key_event),
            (o.id_column, &mut c.id),
            (o.published_column, &mut c.published),
            (o.title_column, &mut c.title),
            (o.text_column, &mut c.text),
            (o.theme_column, &mut c.theme),
        ] {
            if let Some(v) = given {
                *field = v;
            }
        }
        if let Some(e) = o.on_error {
            config.on_error = e;
        }
        if let Some(f) = o.date_format {
            config.date_format = Some(f);
        }
        if let Some(z) = o.timezone {
            config.timezone = Some(z);
        }
        if let Some(t) = o.target_chars {
            config.segment.target_chars = t;
            config.segment.max_chars = config.segment.max_chars.max(t);
            config.segment.min_chars = config.segment.min_chars.min(t);
        }
        Ok(config)
    }

    /// Reads a job file.
    pub fn from_file(path: &Path) -> Result<Self, JobError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| JobError::Read {
            file: file.clone(),
            source,
        })?;
        Self::from_toml(&text, &file)
    }

    /// Parses a job from TOML text; `file` names it in errors.
    pub fn from_toml(text: &str, file: &str) -> Result<Self, JobError> {
        toml::from_str(text).map_err(|e| JobError::Parse {
            file: file.to_string(),
            message: e.to_string(),
        })
    }

    /// Applies `key=value` overrides (dotted keys: `episodes.top_articles=0.3`), re-validating
    /// the whole job after each; an error names the `--set` (never a line of generated TOML).
    pub fn with_sets(self, sets: &[String]) -> Result<Self, JobError> {
        let mut value = toml::Table::try_from(&self).map_err(|e| JobError::Parse {
            file: "job".into(),
            message: e.to_string(),
        })?;
        let mut job = self;
        for set in sets {
            let (key, raw) = set
                .split_once('=')
                .ok_or_else(|| JobError::BadSet(set.clone()))?;
            let parts: Vec<&str> = key.trim().split('.').collect();
            if parts.iter().any(|p| p.is_empty()) {
                return Err(JobError::BadSet(set.clone()));
            }
            let mut table = &mut value;
            for (depth, part) in parts[..parts.len() - 1].iter().enumerate() {
                table = table
                    .entry(part.to_string())
                    .or_insert_with(|| toml::Value::Table(toml::Table::new()))
                    .as_table_mut()
                    .ok_or_else(|| JobError::Set {
                        set: set.clone(),
                        message: format!(
                            "`{}` is a setting, not a section",
                            parts[..=depth].join(".")
                        ),
                    })?;
            }
            table.insert(parts[parts.len() - 1].to_string(), set_value(raw.trim()));
            job = toml::Value::Table(value.clone())
                .try_into()
                .map_err(|e: toml::de::Error| JobError::Set {
                    set: set.clone(),
                    message: format!("`{}`: {}", key.trim(), e.message().trim()),
                })?;
        }
        Ok(job)
    }

    /// The counts a job gives: each at least 1 (a zero says what it would do), and the worker
    /// threads at most [`MAX_WORKERS`] a process: past that, starting them fails inside the
    /// runtime (issue 64: a million workers aborted with exit 134 and left the lock).
    fn check_counts(&self) -> Result<(), JobError> {
        let refuse = |message: String| {
            Err(JobError::Parse {
                file: "job".into(),
                message,
            })
        };
        for (key, value, why) in [
            ("cluster.workers", self.cluster.workers, ""),
            ("encoder.batch_size", self.encoder.batch_size, ""),
            (
                "keep_versions",
                self.keep_versions,
                " (the current version is always kept)",
            ),
            (
                "episodes.keywords",
                self.episodes.keywords,
                " (an episode's title is its first three keywords)",
            ),
        ] {
            if value == 0 {
                return refuse(format!("{key} = 0: must be at least 1{why}"));
            }
        }
        if self.cluster.workers > MAX_WORKERS {
            return refuse(format!(
                "cluster.workers = {}: at most {MAX_WORKERS} worker threads a process (run more \
                 processes for more)",
                self.cluster.workers
            ));
        }
        Ok(())
    }

    /// Checks that the required settings are there.
    pub fn validate(&self) -> Result<(), JobError> {
        if self.corpus.is_empty() {
            return Err(JobError::Missing("corpus"));
        }
        if self.out.is_empty() {
            return Err(JobError::Missing("out"));
        }
        if !(0.0..=1.0).contains(&self.episodes.top_articles) || self.episodes.top_articles == 0.0 {
            return Err(JobError::Parse {
                file: "job".into(),
                message: format!(
                    "episodes.top_articles = {} is not in (0, 1]",
                    self.episodes.top_articles
                ),
            });
        }
        if matches!(
            self.episodes.core,
            crate::episodes::keep_rules::CohesionRule::Significant
                | crate::episodes::keep_rules::CohesionRule::Either
        ) {
            return Err(JobError::Parse {
                file: "job".into(),
                message: "episodes.core: \"significant\" and \"either\" judge against the event's \
                          segments, a rule of episodes.cohesion; core takes \"all\", \"mean-minus-std\" \
                          or \"mean\""
                    .into(),
            });
        }
        self.episodes
            .density
            .validate()
            .map_err(|e| JobError::Parse {
                file: "job".into(),
                message: format!("episodes.density: {e}"),
            })?;
        self.check_counts()?;
        self.encoder
            .options()
            .validate()
            .map_err(|message| JobError::Parse {
                file: "job".into(),
                message: format!("encoder: {message}"),
            })?;
        if self.encoder.warmup && self.encoder.shapes == ShapePolicy::Exact {
            return Err(JobError::Parse {
                file: "job".into(),
                message: "encoder.warmup needs encoder.shapes = \"buckets\" (exact shapes \
                          follow the texts, so there is nothing to warm up)"
                    .into(),
            });
        }
        if self.encoder.int8 && cfg!(feature = "cuda") {
            return Err(JobError::Parse {
                file: "job".into(),
                message: "encoder.int8 is a CPU option; this build encodes on CUDA".into(),
            });
        }
        self.llm.validate().map_err(|e| JobError::Parse {
            file: "job".into(),
            message: e.to_string(),
        })?;
        self.import
            .segment
            .validate()
            .map_err(|message| JobError::Parse {
                file: "job".into(),
                message: format!("import.{message}"),
            })?;
        Ok(())
    }

    /// Settings that are valid but contradict each other: said before a run, not refused.
    pub fn warnings(&self) -> Vec<String> {
        let e = &self.episodes;
        let mut out = Vec::new();
        if e.max_episodes > 0 && e.max_episodes < e.min_episodes {
            out.push(format!(
                "episodes.max_episodes = {} is below the floor episodes.min_episodes = {}: the cap \
                 wins, so no event gets more than {} episodes and the floor is never reached \
                 (lower min_episodes, or 0 for no floor)",
                e.max_episodes, e.min_episodes, e.max_episodes
            ));
        }
        out
    }

    /// The job as TOML, as saved next to the outputs.
    pub fn to_toml(&self) -> String {
        toml::to_string_pretty(self).expect("jobs serialize")
    }
}

#[cfg(test)]
mod tests;
