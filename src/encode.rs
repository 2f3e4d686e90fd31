//! `epimine encode`: a text file (one text a line) → the sentence embedding table, or with
//! `--words` the static word table of the whole file as one key event (ALGORITHM.md §1 static
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

/// What `encode` wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncodeSummary {
    /// Rows written.
    pub rows: usize,
    /// Vector width.
    pub dim: usize,
    /// The output file as the user wrote it.
    pub out: String,
}

/// Options of `epimine encode`.
#[derive(Debug, Clone)]
pub struct EncodeOptions {
    /// Write the static word table instead of sentence embeddings.
    pub words: bool,
    /// Hidden layer of the word vectors (`None`: the last).
    pub layer: Option<usize>,
    /// Sequences per forward pass.
    pub batch_size: usize,
    /// Linear layers in int8 ([`Encoder::with_int8`]).
    pub int8: bool,
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
    let (schema, batch, rows, dim) = tokio::task::spawn_blocking(move || {
        let device = encoder::default_device();
        let enc = Encoder::<DefaultBackend>::load(&model_dir, &device)?
            .with_batch_size(options.batch_size)
            .with_int8(options.int8);
        let texts = lines(&text);
        let dim = enc.dim();
        if options.words {
            let layer = options.layer.unwrap_or_else(|| enc.last_layer());
            let table = enc.word_vectors(&texts, layer)?;
            let rows: Vec<(String, u32, Vec<f32>)> = table
                .into_iter()
                .map(|w| (w.word, w.count, w.vector))
                .collect();
            let n = rows.len();
            Ok::<_, EncodeError>((
                tables::word_vectors_schema(dim),
                tables::word_vectors_batch(dim, &rows),
                n,
                dim,
            ))
        } else {
            let vectors = enc.sentence_embeddings(&texts)?;
            let idx: Vec<u32> = (0..texts.len() as u32).collect();
            Ok((
                tables::sentence_embeddings_schema(dim),
                tables::sentence_embeddings_batch(dim, &idx, vectors.data),
                texts.len(),
                dim,
            ))
        }
    })
    .await
    .map_err(|e| EncodeError::Join(e.to_string()))??;
    out_loc.write_parquet(&out_name, schema, &[batch]).await?;
    Ok(EncodeSummary {
        rows,
        dim,
        out: out.to_string(),
    })
}
