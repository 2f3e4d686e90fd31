//! Encoding units: a fixed group of an event's articles ([`sharding::encoding_unit`]), encoded on
//! any worker, their word sums added in unit order on the event's owner.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use super::cache::{cache_path, read_cache, write_cache, UnitEncoding};
use super::exchange::{shuffle, EncodedUnit, ToOwner};
use super::shared::Shared;
use crate::encoder::{DefaultBackend, Encoder, WordSum};
use crate::run_folder::checkpoint::SegmentDigest;
use crate::sharding;
use crate::tables::Segment;

/// An encoding unit of a key event: (key event, [`sharding::encoding_unit`] of its articles).
pub(in crate::run) type UnitKey = (String, u32);

/// The encoding unit of a segment.
pub(in crate::run) fn unit_of(s: &Segment) -> UnitKey {
    (s.key_event.clone(), sharding::encoding_unit(s.doc_id))
}

/// Every encoding unit's segment count and [`SegmentDigest`], known to every worker (each sends
/// its shard's counts and digests to all).
pub(in crate::run) fn unit_sizes(
    worker: &mut timely::worker::Worker,
    segments: &[Segment],
) -> BTreeMap<UnitKey, (u64, SegmentDigest)> {
    let peers = worker.peers();
    let mut local: BTreeMap<UnitKey, SegmentDigest> = BTreeMap::new();
    for s in segments {
        local.entry(unit_of(s)).or_default().add_segment(s);
    }
    let copies: Vec<(u64, UnitKey, SegmentDigest)> = (0..peers as u64)
        .flat_map(|to| local.iter().map(move |(u, d)| (to, u.clone(), *d)))
        .collect();
    let mut sizes: BTreeMap<UnitKey, (u64, SegmentDigest)> = BTreeMap::new();
    for (_, unit, d) in shuffle(worker, copies, |c| c.0) {
        let entry = sizes.entry(unit).or_default();
        entry.1.add(&d);
        entry.0 = entry.1.count;
    }
    sizes
}

/// The encoders of a run: one for the word vectors (and the sentence embeddings, from the same
/// pass, unless a second model makes those: `encoder.sentence_model`).
pub(crate) struct Encoders {
    /// The word model (`encoder.model`).
    pub(crate) words: Encoder<DefaultBackend>,
    /// The sentence model (`encoder.sentence_model`), when it is another.
    pub(crate) sentences: Option<Encoder<DefaultBackend>>,
    /// The word model's layer of the static word vectors (`encoder.word_layer`, else its last).
    pub(crate) word_layer: usize,
}

impl Encoders {
    /// Loads `words` and, when given, `sentences`, with the options of `config` (the job's
    /// encoder section); in a CUDA build, points cubecl at the kernel cache first, and warms up
    /// every bucket shape when `config.warmup` (timed and logged).
    pub(crate) fn load(
        words: &std::path::Path,
        sentences: Option<&std::path::Path>,
        config: &crate::job::EncoderConfig,
    ) -> Result<Self, crate::encoder::EncoderError> {
        let options = config.options();
        let load = |dir| crate::encode_file::load_encoder(dir, config);
        let started = std::time::Instant::now();
        let words = load(words)?;
        let word_layer = config.word_layer_of(words.last_layer())?;
        let encoders = Self {
            words,
            sentences: sentences.map(load).transpose()?,
            word_layer,
        };
        tracing::debug!(
            secs = started.elapsed().as_secs_f64(),
            batch_size = options.batch_size,
            shapes = options.shapes.name(),
            precision = options.precision.name(),
            "encoder loaded"
        );
        if config.warmup {
            let started = std::time::Instant::now();
            let mut shapes = encoders.words.warm_up();
            if let Some(s) = &encoders.sentences {
                shapes.extend(s.warm_up());
            }
            tracing::info!(
                "encoder warm-up: {} shape(s) {:?} in {:.1} s",
                shapes.len(),
                shapes,
                started.elapsed().as_secs_f64()
            );
        }
        Ok(encoders)
    }

    /// The encoder of sentence embeddings.
    pub(crate) fn sentence(&self) -> &Encoder<DefaultBackend> {
        self.sentences.as_ref().unwrap_or(&self.words)
    }

    /// Every `[rows, seq]` shape the encoders ran (warm-up included), with batch counts.
    pub(crate) fn shapes_seen(&self) -> Vec<([usize; 2], u64)> {
        let mut seen = self.words.shapes_seen();
        if let Some(s) = &self.sentences {
            seen.extend(s.shapes_seen());
        }
        seen
    }
}

/// Units encoded in one call: their batches share the waves of concurrent forward passes.
pub(in crate::run) const UNITS_AT_ONCE: usize = 8;

/// Encodes this worker's units (or reads them from the encoder cache), in key order. A unit that
/// fails to encode fails alone (its group is encoded again one unit at a time).
pub(in crate::run) fn encode_units(
    shared: &Shared,
    encoders: Option<&Encoders>,
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
        // Nothing more once the run has failed or was interrupted.
        let encoders = encoders
            .filter(|_| !shared.stopped())
            .ok_or("not encoded")?;
        let parts: Vec<&[&str]> = group.iter().map(|&i| texts[i].as_slice()).collect();
        encode_parts(encoders, &parts)
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
    let mut fresh = vec![false; units.len()];
    for &i in &misses {
        fresh[i] = true;
    }
    units
        .into_iter()
        .zip(encoded)
        .zip(fresh)
        .map(|((((event, unit), segments), encoded), fresh)| {
            let encoded = encoded.unwrap_or_else(|| Err("not encoded".into()));
            ToOwner::Unit(
                event,
                EncodedUnit {
                    unit,
                    segments,
                    encoded,
                    fresh,
                },
            )
        })
        .collect()
}

/// Encodes `parts` (each a unit's texts) in one call: word vectors from the word model, and
/// sentence embeddings from the same pass or from the sentence model when there is one.
fn encode_parts(encoders: &Encoders, parts: &[&[&str]]) -> Result<Vec<UnitEncoding>, String> {
    let encoder = &encoders.words;
    let mut results = encoder
        .encode_parts(parts, encoders.word_layer)
        .map_err(|e| format!("encoder: {e}"))?;
    if let Some(sentences) = &encoders.sentences {
        let vectors = sentences
            .sentence_parts(parts)
            .map_err(|e| format!("sentence encoder: {e}"))?;
        for (result, v) in results.iter_mut().zip(vectors) {
            result.0 = v;
        }
    }
    Ok(results
        .into_iter()
        .map(|(vectors, words)| {
            let rows = (0..vectors.len()).map(|i| vectors.row(i).to_vec());
            (rows.collect(), words)
        })
        .collect())
}

/// An event's segments in (doc_id, seg_idx) order with their embeddings and word vectors, from
/// its encoded units: the word sums are added in unit order, so the floats are the same
/// whichever workers encoded the units. Segments that repeat a key (doc_id, seg_idx) fail the
/// event (its owner is the one place that sees all its segments, in key order).
pub(in crate::run) fn assemble(
    mut units: Vec<EncodedUnit>,
) -> (Vec<Segment>, Result<Encoded, String>) {
    units.sort_by_key(|u| u.unit);
    let mut segments: Vec<Segment> = Vec::new();
    let mut embeddings = Vec::new();
    let mut sums: BTreeMap<String, WordSum> = BTreeMap::new();
    let mut error = repeated_keys(&units);
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

/// The error of an event whose units (each sorted by key) hold segments that share a key.
fn repeated_keys(units: &[EncodedUnit]) -> Option<String> {
    let mut first = None;
    let mut count = 0;
    for unit in units {
        for pair in unit.segments.windows(2) {
            if (pair[0].doc_id, pair[0].seg_idx) == (pair[1].doc_id, pair[1].seg_idx) {
                count += 1;
                first.get_or_insert(&pair[1]);
            }
        }
    }
    first.map(|s| {
        format!(
            "the corpus: {}",
            crate::corpus::duplicate_keys(count, &s.key_event, s.doc_id, s.seg_idx)
        )
    })
}

/// An event's sentence embeddings (in segment order) and word vectors.
pub(in crate::run) type Encoded = (Vec<Vec<f32>>, HashMap<String, Vec<f32>>);
