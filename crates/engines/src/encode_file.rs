//! `epimine encode`: a text file (one text a line) → the sentence embedding table, or with
//! `--words` the static word table of the whole file as one key event (docs/method.md §1 static
//! word representations, §6 segment embeddings).

use std::path::Path;

use crate::encoder::{self, DefaultBackend, Encoder, EncoderError};
use crate::storage::{Location, StorageError};
use crate::tables;

/// Errors of `epimine encode`.
#[derive(Debug, thiserror::Error)]
pub enum EncodeError {
    /// Reading the input or writing the output failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// The model failed to load or run.
    #[error(transparent)]
    Encoder(#[from] EncoderError),
    /// The input is not UTF-8.
    #[error("{location}: not UTF-8 text ({source})")]
    Utf8 {
        /// The input file.
        location: String,
        /// Where decoding failed.
        #[source]
        source: std::str::Utf8Error,
    },
    /// The worker thread died.
    #[error("the encoder thread failed: {0}")]
    Join(String),
}

/// What `encode` wrote, and what it took.
#[derive(Debug, Clone, PartialEq)]
pub struct EncodeSummary {
    /// Rows written.
    pub rows: usize,
    /// Vector width.
    pub dim: usize,
    /// The output file as the user wrote it.
    pub out: String,
    /// Seconds to load the model (and, in a CUDA build, set up the device).
    pub load_secs: f64,
    /// Seconds of the warm-up, and the shapes it ran.
    pub warmup: (f64, usize),
    /// Seconds of encoding proper (tokenisation, forward passes, reading results back).
    pub encode_secs: f64,
    /// Token positions of the texts, and those computed (padding and pad rows included); for
    /// sentence embeddings only (0 with `--words`).
    pub tokens: (usize, usize),
    /// Distinct `[rows, seq]` batch shapes met while encoding, warm-up excluded.
    pub shapes: usize,
}

impl EncodeSummary {
    /// One line of timings for the terminal.
    pub fn timing(&self) -> String {
        let per_sec = |n: usize| n as f64 / self.encode_secs.max(1e-9);
        format!(
            "model load {:.2} s, warm-up {:.2} s ({} shapes), encoding {:.2} s: {:.0} texts/s, \
             {:.0} tokens/s ({} tokens, {:.1}% padding), {} batch shapes",
            self.load_secs,
            self.warmup.0,
            self.warmup.1,
            self.encode_secs,
            per_sec(self.rows),
            per_sec(self.tokens.0),
            self.tokens.0,
            100.0 * (self.tokens.1 as f64 / self.tokens.0.max(1) as f64 - 1.0),
            self.shapes
        )
    }
}

/// Options of `epimine encode`.
#[derive(Debug, Clone)]
pub struct EncodeOptions {
    /// Write the static word table instead of sentence embeddings.
    pub words: bool,
    /// Hidden layer of the word vectors (`None`: the last).
    pub layer: Option<usize>,
    /// The encoder settings (the job file's `[encoder]`; `model`, `sentence_model` and
    /// `cache_dir` are not read).
    pub encoder: crate::job::EncoderConfig,
}

/// Loads the model in `model_dir` with the options of `config` (the job's `[encoder]`), after
/// pointing a CUDA build's kernel caches at `config.kernel_cache`
/// ([`encoder::kernels::configure`]).
pub fn load_encoder(
    model_dir: &Path,
    config: &crate::job::EncoderConfig,
) -> Result<Encoder<DefaultBackend>, EncoderError> {
    encoder::check_device().map_err(EncoderError::NoGpu)?;
    if encoder::CUDA {
        let dir = encoder::kernels::kernel_cache_dir(config.kernel_cache.as_deref())?;
        encoder::kernels::configure(&dir, config.autotune)?;
    }
    Encoder::<DefaultBackend>::load(model_dir, &encoder::default_device())?
        .with_options(&config.options())
}

/// The texts of a file: one per line (`\n` or `\r\n`), in order.
pub fn lines(text: &str) -> Vec<&str> {
    text.lines().collect()
}

/// Runs `epimine encode`: reads `input` (local, `file://` or `s3://`), encodes it with the model
/// in `model_dir` (a local folder) and writes `out` (a Parquet file: local, `file://` or `s3://`).
pub async fn encode(
    model_dir: &Path,
    input: &str,
    out: &str,
    options: &EncodeOptions,
) -> Result<EncodeSummary, EncodeError> {
    let (in_loc, in_name) = Location::parse_file(input, false)?;
    let bytes = in_loc.get(&in_name).await?;
    let text = std::str::from_utf8(&bytes)
        .map_err(|source| EncodeError::Utf8 {
            location: input.to_string(),
            source,
        })?
        .to_string();
    let (out_loc, out_name) = Location::parse_file(out, true)?;

    let model_dir = model_dir.to_path_buf();
    let options = options.clone();
    let (schema, batch, summary) = tokio::task::spawn_blocking(move || {
        let started = std::time::Instant::now();
        let config = &options.encoder;
        let enc = load_encoder(&model_dir, config)?;
        let load_secs = started.elapsed().as_secs_f64();
        let started = std::time::Instant::now();
        let warm = if config.warmup {
            enc.warm_up()
        } else {
            Vec::new()
        };
        let warmup = (started.elapsed().as_secs_f64(), warm.len());
        let texts = lines(&text);
        let dim = enc.dim();
        let started = std::time::Instant::now();
        let (schema, batch, rows, tokens) = if options.words {
            let layer = options.layer.unwrap_or_else(|| enc.last_layer());
            let table = enc.word_vectors(&texts, layer)?;
            let rows: Vec<(String, u32, Vec<f32>)> = table
                .into_iter()
                .map(|w| (w.word, w.count, w.vector))
                .collect();
            let n = rows.len();
            (
                tables::word_vectors_schema(dim),
                tables::word_vectors_batch(dim, &rows),
                n,
                (0, 0),
            )
        } else {
            let vectors = enc.sentence_embeddings(&texts)?;
            let idx: Vec<u32> = (0..texts.len() as u32).collect();
            (
                tables::sentence_embeddings_schema(dim),
                tables::sentence_embeddings_batch(dim, &idx, vectors.data),
                texts.len(),
                (0, 0),
            )
        };
        let encode_secs = started.elapsed().as_secs_f64();
        // Counted after the clock stops: it tokenises the texts again.
        let tokens = if options.words {
            tokens
        } else {
            enc.positions(&[&texts])?
        };
        let shapes = enc.shapes_seen();
        let warm: std::collections::BTreeSet<[usize; 2]> = warm.into_iter().collect();
        let met = shapes
            .iter()
            .filter(|(shape, n)| !warm.contains(shape) || *n > 1)
            .count();
        tracing::debug!("batch shapes ([rows, seq] × batches, warm-up included): {shapes:?}");
        Ok::<_, EncodeError>((
            schema,
            batch,
            EncodeSummary {
                rows,
                dim,
                out: String::new(),
                load_secs,
                warmup,
                encode_secs,
                tokens,
                shapes: met,
            },
        ))
    })
    .await
    .map_err(|e| EncodeError::Join(e.to_string()))??;
    out_loc.write_parquet(&out_name, schema, &[batch]).await?;
    Ok(EncodeSummary {
        out: out.to_string(),
        ..summary
    })
}
