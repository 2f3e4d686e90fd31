//! The encoder cache: one file per encoding unit, keyed by the model, the batch size and the
//! texts.

use std::path::{Path, PathBuf};

use crate::encoder::WordSum;
use crate::job::Job;

/// Sentence embeddings of some segments, in order, and their word table as sums.
pub(in crate::run) type UnitEncoding = (Vec<Vec<f32>>, Vec<WordSum>);

/// The cache key of a unit's encoding: the model weights' hash, the batch size and the
/// batching rule ([`crate::encoder::BATCHING`]; they set which texts are padded together, which
/// moves the floats a little) and the texts.
/// `float_tag` is [`crate::encoder::EncoderOptions::float_tag`] (int8, bucketed shapes, half
/// precision) and the word layer when set (`encoder.word_layer`), empty for the defaults so that
/// their keys stay those of earlier versions.
pub(in crate::run) fn cache_key(
    model_hash: &str,
    batch_size: usize,
    float_tag: &str,
    texts: &[&str],
) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(model_hash.as_bytes());
    h.update((batch_size as u64).to_le_bytes());
    h.update(crate::encoder::BATCHING.as_bytes());
    // Only when set, so that default keys stay those of earlier versions.
    h.update(float_tag.as_bytes());
    for t in texts {
        h.update((t.len() as u64).to_le_bytes());
        h.update(t.as_bytes());
    }
    crate::digest::hex(&h.finalize())
}

/// The cache file's first bytes (version 2: word sums in f64, per encoding unit).
pub(in crate::run) const CACHE_MAGIC: &[u8] = b"EPIMINE-ENC2";

pub(in crate::run) fn write_cache(
    path: &Path,
    (embeddings, words): &UnitEncoding,
) -> std::io::Result<()> {
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

pub(in crate::run) fn read_cache(path: &Path) -> Option<UnitEncoding> {
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
pub(in crate::run) fn cache_path(job: &Job, model_hash: &str, texts: &[&str]) -> Option<PathBuf> {
    job.encoder.cache_dir.as_ref().map(|dir| {
        let dir = PathBuf::from(dir);
        let _ = std::fs::create_dir_all(&dir);
        let mut tag = job.encoder.options().float_tag();
        if let Some(layer) = job.encoder.word_layer {
            // Only when set, so that default keys stay those of earlier versions.
            tag.push_str(&format!("|word layer {layer}"));
        }
        let key = cache_key(model_hash, job.encoder.batch_size, &tag, texts);
        dir.join(format!("{key}.enc"))
    })
}

#[cfg(test)]
mod tests {
    use super::cache_key;

    /// int8, bucketed and half-precision encodings get their own keys; default keys are those of
    /// versions before the options; an int8 key is that of the version that added int8.
    #[test]
    fn int8_has_its_own_key_and_f32_keys_are_unchanged() {
        use crate::encoder::{EncoderOptions, Precision, ShapePolicy};
        use sha2::{Digest, Sha256};
        let texts = ["a text", "another"];
        let options = |int8, shapes, precision| EncoderOptions {
            batch_size: 32,
            int8,
            shapes,
            precision,
        };
        let tag = |o: EncoderOptions| o.float_tag();
        let f32_key = cache_key(
            "m",
            32,
            &tag(options(false, ShapePolicy::Exact, Precision::F32)),
            &texts,
        );
        let int8_key = cache_key(
            "m",
            32,
            &tag(options(true, ShapePolicy::Exact, Precision::F32)),
            &texts,
        );
        assert_ne!(f32_key, int8_key);
        assert_eq!(int8_key, cache_key("m", 32, "int8 linear layers", &texts));
        let others = [
            options(false, ShapePolicy::Buckets, Precision::F32),
            options(false, ShapePolicy::Exact, Precision::F16),
            options(false, ShapePolicy::Buckets, Precision::Bf16),
        ];
        let mut keys: Vec<String> = others
            .iter()
            .map(|o| cache_key("m", 32, &tag(*o), &texts))
            .chain([f32_key.clone(), int8_key])
            .collect();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), 5, "every option has its own key");
        let mut h = Sha256::new();
        h.update(b"m");
        h.update(32u64.to_le_bytes());
        h.update(crate::encoder::BATCHING.as_bytes());
        for t in texts {
            h.update((t.len() as u64).to_le_bytes());
            h.update(t.as_bytes());
        }
        let before = crate::digest::hex(&h.finalize());
        assert_eq!(f32_key, before);
    }
}
