//! Per-event checkpoints: each event's rows, status and fingerprint in one object under
//! `<out>/_checkpoints/`, written whole or not at all by the worker that owns the event.
//!
//! A checkpoint is `MAGIC`, the length of a JSON header (u64, little-endian), the header (format,
//! key event, fingerprint, status, each table's row count and byte length), then each table as
//! an in-memory Parquet file (episodes, assignments, fragments, terms, pairs, episode_articles,
//! and the episodes as stable keys and vectors, `episode_keys`, for the next run's matching),
//! and last the sha256 of everything before it. A checkpoint that is cut short or altered fails
//! the sha256 and is never half-read.
//!
//! The fingerprint is the sha256 of everything an event's rows depend on: the output format
//! version, the crate version, the settings that change results ([`settings_digest`]: the
//! encoder's files and batch size, `[terms]`, `[episodes]`, the LLM settings that shape the
//! answers), the event's segments ([`SegmentDigest`]) and its statistics (every term's
//! frequencies and salience, which is how the background reaches an event).

use std::collections::BTreeMap;

use arrow_array::RecordBatch;
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::digest::hex;

use super::manifest::EventStatus;
use super::outputs::Outputs;
use crate::job::Job;
use crate::storage::{Location, StorageError};
use crate::tables::{
    Assignment, Episode, EpisodeArticle, EpisodeKeys, EventArticles, FragmentRow, LeftOut, Pair,
    Segment, Table, Term,
};

/// The version of the output format: tables, checkpoints, `run.json`. A checkpoint of another
/// version is recomputed.
pub const FORMAT: u32 = 7;

/// The folder of the checkpoints inside `--out`.
pub const DIR: &str = "_checkpoints";

const MAGIC: &[u8] = b"EPIMINE-CHECKPOINT\n";

/// Why a checkpoint could not be used.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// Reading or writing failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// The object is not a whole checkpoint.
    #[error("{location}: not a whole checkpoint ({reason})")]
    Corrupt {
        /// The object.
        location: String,
        /// What is wrong.
        reason: String,
    },
}

/// The object name of an event's checkpoint: a readable part of the name and a hash of it (key
/// events are arbitrary strings).
pub fn object_name(key_event: &str) -> String {
    let readable: String = key_event
        .chars()
        .take(60)
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let hash = hex(&Sha256::digest(key_event.as_bytes()))[..16].to_string();
    format!("{DIR}/{readable}-{hash}.ckpt")
}

/// An order-independent digest of a multiset of segments: the count and the sum (four wrapping
/// 64-bit lanes) of each segment's sha256. Workers add the digests of the segments they read, in
/// any order, and get the same value.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SegmentDigest {
    /// Segments.
    pub count: u64,
    /// The lanes.
    pub sum: [u64; 4],
}

impl SegmentDigest {
    /// Adds one segment (every column).
    pub fn add_segment(&mut self, s: &Segment) {
        let mut h = Sha256::new();
        let field = |h: &mut Sha256, b: &[u8]| {
            h.update((b.len() as u64).to_le_bytes());
            h.update(b);
        };
        field(&mut h, s.key_event.as_bytes());
        match &s.theme {
            Some(t) => field(&mut h, t.as_bytes()),
            None => h.update([0xff; 8]),
        }
        h.update(s.doc_id.to_le_bytes());
        match s.doc_date {
            Some(d) => field(&mut h, &d.to_le_bytes()),
            None => h.update([0xff; 8]),
        }
        h.update(s.seg_idx.to_le_bytes());
        field(&mut h, s.text.as_bytes());
        // The article's id names its segments' stable keys (`lineage::segment_keys`).
        match &s.source_id {
            Some(id) => field(&mut h, id.as_bytes()),
            None => h.update([0xff; 8]),
        }
        let d = h.finalize();
        self.add(&SegmentDigest {
            count: 1,
            sum: std::array::from_fn(|i| {
                u64::from_le_bytes(d[8 * i..8 * i + 8].try_into().expect("8 bytes"))
            }),
        });
    }

    /// Adds another digest.
    pub fn add(&mut self, other: &SegmentDigest) {
        self.count += other.count;
        for (a, b) in self.sum.iter_mut().zip(other.sum) {
            *a = a.wrapping_add(b);
        }
    }
}

/// The settings of a job that change an event's rows, with the encoder's files, as one digest
/// (not `out`, paths, the layout, caches or progress settings).
pub fn settings_digest(job: &Job, model_files: &BTreeMap<String, String>) -> String {
    let llm = &job.llm;
    let mut settings = serde_json::json!({
        "format": FORMAT,
        "epimine": env!("CARGO_PKG_VERSION"),
        "model_files": model_files,
        "batch_size": job.encoder.batch_size,
        "batching": crate::encoder::BATCHING,
        "terms": job.terms,
        "episodes": job.episodes,
        "llm": {
            "backend": llm.backend.name(),
            "base_url": llm.base_url,
            "model": llm.model,
            "temperature": llm.temperature,
            "max_tokens": llm.max_tokens,
            "trials": llm.trials,
            "answer_retries": llm.answer_retries,
            "segments_per_cluster": llm.segments_per_cluster,
            "structured": llm.structured,
            "context_tokens": llm.context_tokens,
        },
    });
    if job.encoder.int8 {
        // Only when on, so that f32 runs keep the digest of earlier versions.
        settings["int8"] = serde_json::Value::Bool(true);
    }
    let options = job.encoder.options();
    if options.shapes != crate::encoder::ShapePolicy::Exact {
        // Likewise: bucketed shapes and half precision move the floats.
        settings["shapes"] = options.shapes.name().into();
    }
    if options.precision != crate::encoder::Precision::F32 {
        settings["precision"] = options.precision.name().into();
    }
    if let Some(layer) = job.encoder.word_layer {
        // Likewise: another layer, other word vectors.
        settings["word_layer"] = layer.into();
    }
    hex(&Sha256::digest(settings.to_string().as_bytes()))
}

/// An event's fingerprint: the run's settings digest, its segments and its statistics.
pub fn fingerprint(settings: &str, segments: &SegmentDigest, terms: &[Term]) -> String {
    let mut h = Sha256::new();
    h.update(settings.as_bytes());
    h.update(segments.count.to_le_bytes());
    for lane in segments.sum {
        h.update(lane.to_le_bytes());
    }
    h.update((terms.len() as u64).to_le_bytes());
    for t in terms {
        h.update((t.term.len() as u64).to_le_bytes());
        h.update(t.term.as_bytes());
        h.update(t.freq.to_le_bytes());
        h.update(t.bg_freq.to_le_bytes());
        h.update(t.salience.to_bits().to_le_bytes());
        h.update([u8::from(t.salient)]);
        h.update(t.group.map_or(u64::MAX, u64::from).to_le_bytes());
    }
    hex(&h.finalize())
}

/// One event's checkpoint.
#[derive(Debug, Clone)]
pub struct Checkpoint {
    /// The fingerprint of what its rows depend on.
    pub fingerprint: String,
    /// The event's status as computed.
    pub status: EventStatus,
    /// Its rows.
    pub outputs: Outputs,
}

#[derive(Serialize, Deserialize)]
struct Header {
    format: u32,
    key_event: String,
    fingerprint: String,
    status: EventStatus,
    /// (table, rows, bytes) in the order of the blobs.
    tables: Vec<(String, u64, u64)>,
}

fn parquet_bytes<T: Table>(rows: &[T]) -> Result<Vec<u8>, parquet::errors::ParquetError> {
    let mut writer = parquet::arrow::ArrowWriter::try_new(Vec::new(), T::schema(), None)?;
    for chunk in rows.chunks(crate::storage::DEFAULT_ROW_GROUP_ROWS) {
        writer.write(&T::to_batch(chunk))?;
    }
    writer.into_inner()
}

fn parquet_rows<T: Table>(bytes: Bytes) -> Result<Vec<T>, String> {
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(bytes)
        .map_err(|e| e.to_string())?
        .build()
        .map_err(|e| e.to_string())?;
    let batches: Vec<RecordBatch> = reader
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())?;
    let batches: Vec<RecordBatch> = batches
        .into_iter()
        .map(|b| RecordBatch::try_new(T::schema(), b.columns().to_vec()))
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())?;
    T::from_batches(&batches).map_err(|e| e.to_string())
}

/// The bytes of a checkpoint.
pub fn encode(c: &Checkpoint, location: &str) -> Result<Bytes, CheckpointError> {
    let corrupt = |e: parquet::errors::ParquetError| CheckpointError::Corrupt {
        location: location.to_string(),
        reason: e.to_string(),
    };
    let o = &c.outputs;
    let blobs = [
        (Episode::NAME, o.episodes.len(), parquet_bytes(&o.episodes)),
        (
            Assignment::NAME,
            o.assignments.len(),
            parquet_bytes(&o.assignments),
        ),
        (
            FragmentRow::NAME,
            o.fragments.len(),
            parquet_bytes(&o.fragments),
        ),
        (Term::NAME, o.terms.len(), parquet_bytes(&o.terms)),
        (Pair::NAME, o.pairs.len(), parquet_bytes(&o.pairs)),
        (
            EpisodeArticle::NAME,
            o.episode_articles.len(),
            parquet_bytes(&o.episode_articles),
        ),
        (LeftOut::NAME, o.left_out.len(), parquet_bytes(&o.left_out)),
        (
            EpisodeKeys::NAME,
            o.episode_keys.len(),
            parquet_bytes(&o.episode_keys),
        ),
        (
            EventArticles::NAME,
            o.event_articles.len(),
            parquet_bytes(&o.event_articles),
        ),
    ];
    let mut tables = Vec::new();
    let mut body = Vec::new();
    for (name, rows, blob) in blobs {
        let blob = blob.map_err(corrupt)?;
        tables.push((name.to_string(), rows as u64, blob.len() as u64));
        body.push(blob);
    }
    let header = Header {
        format: FORMAT,
        key_event: c.status.key_event.clone(),
        fingerprint: c.fingerprint.clone(),
        status: c.status.clone(),
        tables,
    };
    let header = serde_json::to_vec(&header).expect("headers serialize");
    let mut out = MAGIC.to_vec();
    out.extend((header.len() as u64).to_le_bytes());
    out.extend(header);
    for blob in body {
        out.extend(blob);
    }
    let sum = Sha256::digest(&out);
    out.extend(sum);
    Ok(out.into())
}

/// Checks a checkpoint's sha256 and reads its header: where its tables start.
fn open(data: &Bytes, location: &str) -> Result<(Header, usize), CheckpointError> {
    let corrupt = |reason: String| CheckpointError::Corrupt {
        location: location.to_string(),
        reason,
    };
    if data.len() < MAGIC.len() + 8 + 32 || !data.starts_with(MAGIC) {
        return Err(corrupt(format!(
            "{} bytes, not a checkpoint of this format",
            data.len()
        )));
    }
    let (payload, sum) = data.split_at(data.len() - 32);
    if Sha256::digest(payload).as_slice() != sum {
        return Err(corrupt(
            "its sha256 does not match: cut short or altered".into(),
        ));
    }
    let mut at = MAGIC.len();
    let len = u64::from_le_bytes(payload[at..at + 8].try_into().expect("8 bytes")) as usize;
    at += 8;
    let header: Header = payload
        .get(at..at + len)
        .ok_or_else(|| corrupt("header past the end".into()))
        .and_then(|h| serde_json::from_slice(h).map_err(|e| corrupt(e.to_string())))?;
    at += len;
    if header.format != FORMAT {
        return Err(corrupt(format!(
            "format {} (this epimine writes {FORMAT})",
            header.format
        )));
    }
    Ok((header, at))
}

/// Reads checkpoint bytes, checking the sha256 first: never a half-read.
pub fn decode(data: Bytes, location: &str) -> Result<Checkpoint, CheckpointError> {
    let corrupt = |reason: String| CheckpointError::Corrupt {
        location: location.to_string(),
        reason,
    };
    let (header, mut at) = open(&data, location)?;
    let payload = &data[..data.len() - 32];
    let mut blobs = Vec::new();
    for (name, rows, bytes) in &header.tables {
        let end = at + *bytes as usize;
        if end > payload.len() {
            return Err(corrupt(format!("{name} past the end")));
        }
        blobs.push((name.clone(), *rows, data.slice(at..end)));
        at = end;
    }
    let mut outputs = Outputs::default();
    let names = [
        Episode::NAME,
        Assignment::NAME,
        FragmentRow::NAME,
        Term::NAME,
        Pair::NAME,
        EpisodeArticle::NAME,
        LeftOut::NAME,
        EpisodeKeys::NAME,
        EventArticles::NAME,
    ];
    if blobs.len() != names.len() || blobs.iter().zip(names).any(|(b, n)| b.0 != n) {
        return Err(corrupt("unexpected tables".into()));
    }
    let mut blobs = blobs.into_iter().map(|(name, rows, b)| {
        let check = move |n: usize| {
            if n as u64 == rows {
                Ok(())
            } else {
                Err(format!("{name}: {n} rows, the header says {rows}"))
            }
        };
        (b, check)
    });
    macro_rules! table {
        ($field:ident, $t:ty) => {{
            let (b, check) = blobs.next().expect("nine tables");
            outputs.$field = parquet_rows::<$t>(b).map_err(&corrupt)?;
            check(outputs.$field.len()).map_err(&corrupt)?;
        }};
    }
    table!(episodes, Episode);
    table!(assignments, Assignment);
    table!(fragments, FragmentRow);
    table!(terms, Term);
    table!(pairs, Pair);
    table!(episode_articles, EpisodeArticle);
    table!(left_out, LeftOut);
    table!(episode_keys, EpisodeKeys);
    table!(event_articles, EventArticles);
    if header.status.key_event != header.key_event {
        return Err(corrupt("its status names another event".into()));
    }
    Ok(Checkpoint {
        fingerprint: header.fingerprint,
        status: header.status,
        outputs,
    })
}

/// Writes an event's checkpoint, whole or not at all (one object put).
pub async fn write(out: &Location, c: &Checkpoint) -> Result<(), CheckpointError> {
    let name = object_name(&c.status.key_event);
    let bytes = encode(c, &out.display_child(&name))?;
    out.put(&name, bytes).await?;
    Ok(())
}

/// Reads an event's checkpoint: `Ok(None)` when there is none.
pub async fn read(out: &Location, key_event: &str) -> Result<Option<Checkpoint>, CheckpointError> {
    let name = object_name(key_event);
    if !out.exists(&name).await? {
        return Ok(None);
    }
    let data = out.get(&name).await?;
    let c = decode(data, &out.display_child(&name))?;
    if c.status.key_event != key_event {
        return Err(CheckpointError::Corrupt {
            location: out.display_child(&name),
            reason: format!("it holds `{}`", c.status.key_event),
        });
    }
    Ok(Some(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Checkpoint {
        let status = EventStatus::new("ev/1 é");
        let mut outputs = Outputs::default();
        outputs.terms.push(Term {
            key_event: "ev/1 é".into(),
            term: "flood".into(),
            freq: 7,
            bg_freq: 2,
            salience: 0.1 + 0.2,
            salient: true,
            expanded_from: None,
            group: Some(0),
        });
        Checkpoint {
            fingerprint: "f".repeat(64),
            status,
            outputs,
        }
    }

    /// The int8 option is part of the settings (its rows differ), and only when on.
    #[test]
    fn int8_changes_the_settings_digest() {
        let files = BTreeMap::new();
        let mut job = crate::job::Job::default();
        let f32_digest = settings_digest(&job, &files);
        job.encoder.int8 = true;
        assert_ne!(settings_digest(&job, &files), f32_digest);
        job.encoder.int8 = false;
        assert_eq!(settings_digest(&job, &files), f32_digest);
    }

    #[test]
    fn round_trips_exactly_and_refuses_any_cut() {
        let c = sample();
        let bytes = encode(&c, "x").unwrap();
        let back = decode(bytes.clone(), "x").unwrap();
        assert_eq!(back.fingerprint, c.fingerprint);
        assert_eq!(back.outputs.terms, c.outputs.terms);
        assert_eq!(
            back.outputs.terms[0].salience.to_bits(),
            (0.1f64 + 0.2).to_bits()
        );
        for cut in [0, 10, bytes.len() / 2, bytes.len() - 1] {
            let err = decode(bytes.slice(..cut), "x").unwrap_err().to_string();
            assert!(err.contains("not a whole checkpoint"), "{cut}: {err}");
        }
        let mut flipped = bytes.to_vec();
        flipped[MAGIC.len() + 20] ^= 1;
        assert!(decode(flipped.into(), "x").is_err());
        assert!(object_name("ev/1 é").starts_with("_checkpoints/ev_1__-"));
        assert_ne!(object_name("a/b"), object_name("a_b"));
    }

    #[test]
    fn a_checkpoint_of_another_format_is_refused() {
        let bytes = encode(&sample(), "x").unwrap();
        let at = MAGIC.len();
        let len = u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap()) as usize;
        let mut header: serde_json::Value =
            serde_json::from_slice(&bytes[at + 8..at + 8 + len]).unwrap();
        header["format"] = serde_json::json!(FORMAT + 1);
        let header = serde_json::to_vec(&header).unwrap();
        let mut other = MAGIC.to_vec();
        other.extend((header.len() as u64).to_le_bytes());
        other.extend(header);
        other.extend(&bytes[at + 8 + len..bytes.len() - 32]);
        let sum = Sha256::digest(&other);
        other.extend(sum);
        let err = decode(other.into(), "x").unwrap_err().to_string();
        assert!(err.contains(&format!("format {}", FORMAT + 1)), "{err}");
    }

    #[test]
    fn segment_digests_ignore_order_and_see_every_column() {
        let seg = |doc_id, text: &str| Segment {
            key_event: "e".into(),
            theme: None,
            doc_id,
            doc_date: None,
            seg_idx: 0,
            text: text.into(),
            source_id: None,
            title: None,
        };
        let (a, b) = (seg(0, "one"), seg(1, "two"));
        let (mut x, mut y) = (SegmentDigest::default(), SegmentDigest::default());
        x.add_segment(&a);
        x.add_segment(&b);
        y.add_segment(&b);
        y.add_segment(&a);
        assert_eq!(x, y);
        let mut z = SegmentDigest::default();
        z.add_segment(&a);
        z.add_segment(&seg(1, "two!"));
        assert_ne!(x, z);
        // The article's id too: the segments' stable keys follow it.
        let mut w = SegmentDigest::default();
        w.add_segment(&a);
        w.add_segment(&Segment {
            source_id: Some("https://example.org/2".into()),
            ..b.clone()
        });
        assert_ne!(x, w);
    }
}
