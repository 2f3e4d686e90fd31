//! Stable keys of segments and articles, and each episode as keys and a vector
//! ([`episode_keys`]): what the next run of the same `--out` matches its episodes against.

use std::collections::{BTreeSet, HashMap};

use sha2::{Digest, Sha256};

use crate::tables::{Assignment, Episode, EpisodeKeys, Segment};

/// The first 8 bytes of the sha256 of length-prefixed parts, little-endian.
fn hash_parts(parts: &[&[u8]]) -> u64 {
    let mut h = Sha256::new();
    for p in parts {
        h.update((p.len() as u64).to_le_bytes());
        h.update(p);
    }
    u64::from_le_bytes(h.finalize()[..8].try_into().expect("8 bytes"))
}

/// The stable key of every segment of one key event and of its article, in the order given
/// (the event's segments sorted by `(doc_id, seg_idx)`).
///
/// An article's key is the hash of its source id (`import --articles`), or, without one, of its
/// text (its segments joined by line breaks); a segment's, the hash of its article's key, its
/// text and how many segments of that article before it have the same text. Neither depends on
/// `doc_id` or `seg_idx`, which shift when articles are added (an article published earlier,
/// or a paragraph that becomes boilerplate): re-importing a corpus with more articles leaves
/// the keys of the segments it already had as they were. Keys that would repeat within the
/// event (two articles of the same text and no source id) take their occurrence in key order.
pub fn segment_keys(segments: &[Segment]) -> Vec<(u64, u64)> {
    let mut articles: Vec<(usize, usize)> = Vec::new();
    for (i, s) in segments.iter().enumerate() {
        match articles.last_mut() {
            Some((start, end)) if segments[*start].doc_id == s.doc_id => *end = i + 1,
            _ => articles.push((i, i + 1)),
        }
    }
    let mut seen_articles: HashMap<u64, u64> = HashMap::new();
    let mut seen_segments: HashMap<u64, u64> = HashMap::new();
    let mut out = Vec::with_capacity(segments.len());
    for (start, end) in articles {
        let doc = &segments[start..end];
        let base = match &doc[0].source_id {
            Some(id) => hash_parts(&[b"id", id.as_bytes()]),
            None => {
                let text = doc
                    .iter()
                    .map(|s| s.text.as_str())
                    .collect::<Vec<_>>()
                    .join("\n");
                hash_parts(&[b"text", text.as_bytes()])
            }
        };
        let article = unique(&mut seen_articles, base);
        let mut texts: HashMap<&str, u64> = HashMap::new();
        for s in doc {
            let n = texts.entry(s.text.as_str()).or_default();
            let key = hash_parts(&[&article.to_le_bytes(), s.text.as_bytes(), &n.to_le_bytes()]);
            *n += 1;
            out.push((unique(&mut seen_segments, key), article));
        }
    }
    out
}

/// The keys of every article of one key event ([`segment_keys`]), distinct, ascending.
pub fn article_keys(segments: &[Segment]) -> Vec<u64> {
    let keys: BTreeSet<u64> = segment_keys(segments).into_iter().map(|k| k.1).collect();
    keys.into_iter().collect()
}

/// `key` the first time it is seen, else the hash of it and its occurrence.
fn unique(seen: &mut HashMap<u64, u64>, key: u64) -> u64 {
    let n = seen.entry(key).or_default();
    let out = if *n == 0 {
        key
    } else {
        hash_parts(&[&key.to_le_bytes(), &n.to_le_bytes()])
    };
    *n += 1;
    out
}

/// Each episode of one key event as the keys of its assigned segments and their articles, and
/// its vector: the mean of its assigned segments' unit embeddings, scaled to unit length
/// (summed in f64 in the assignments' order, so the same for any layout). `segments` and
/// `embeddings` are the event's, in the same order.
pub fn episode_keys(
    segments: &[Segment],
    embeddings: &[Vec<f32>],
    episodes: &[Episode],
    assignments: &[Assignment],
) -> Vec<EpisodeKeys> {
    let keys = segment_keys(segments);
    let at: HashMap<(u32, u32), usize> = segments
        .iter()
        .enumerate()
        .map(|(i, s)| ((s.doc_id, s.seg_idx), i))
        .collect();
    let mut members: HashMap<(u32, u32), Vec<usize>> = HashMap::new();
    for a in assignments {
        if let Some(&i) = at.get(&(a.doc_id, a.seg_idx)) {
            members.entry((a.trial, a.episode_id)).or_default().push(i);
        }
    }
    episodes
        .iter()
        .map(|e| {
            let mine = members
                .get(&(e.trial, e.episode_id))
                .map_or(&[][..], Vec::as_slice);
            let segment_keys: BTreeSet<u64> = mine.iter().map(|&i| keys[i].0).collect();
            let article_keys: BTreeSet<u64> = mine.iter().map(|&i| keys[i].1).collect();
            EpisodeKeys {
                key_event: e.key_event.clone(),
                trial: e.trial,
                episode_id: e.episode_id,
                title: e.title.clone(),
                segment_keys: segment_keys.into_iter().collect(),
                article_keys: article_keys.into_iter().collect(),
                vector: mean_direction(mine.iter().filter_map(|&i| embeddings.get(i))),
            }
        })
        .collect()
}

/// The unit mean of unit vectors (zero vectors skipped); empty when there are none.
fn mean_direction<'a>(vectors: impl Iterator<Item = &'a Vec<f32>>) -> Vec<f32> {
    let mut sum: Vec<f64> = Vec::new();
    for v in vectors {
        let norm = v.iter().map(|&x| f64::from(x).powi(2)).sum::<f64>().sqrt();
        if norm == 0.0 {
            continue;
        }
        if sum.is_empty() {
            sum = vec![0.0; v.len()];
        }
        for (s, &x) in sum.iter_mut().zip(v) {
            *s += f64::from(x) / norm;
        }
    }
    let norm = sum.iter().map(|x| x * x).sum::<f64>().sqrt();
    if norm == 0.0 {
        return Vec::new();
    }
    sum.iter().map(|x| (x / norm) as f32).collect()
}

/// The cosine of two unit vectors (0 when either is empty or their lengths differ).
pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    if a.is_empty() || a.len() != b.len() {
        return 0.0;
    }
    a.iter()
        .zip(b)
        .map(|(&x, &y)| f64::from(x) * f64::from(y))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(doc_id: u32, seg_idx: u32, text: &str, source: Option<&str>) -> Segment {
        Segment {
            key_event: "e".into(),
            theme: None,
            doc_id,
            doc_date: None,
            seg_idx,
            text: text.into(),
            source_id: source.map(Into::into),
            title: None,
        }
    }

    #[test]
    fn keys_do_not_move_with_positions() {
        let before = [
            seg(0, 0, "alpha", Some("u1")),
            seg(0, 1, "beta", Some("u1")),
            seg(1, 0, "gamma", Some("u2")),
        ];
        // An article published earlier shifts doc_id; a paragraph turned boilerplate shifts
        // seg_idx: the keys of the segments that are still there stay.
        let after = [
            seg(0, 0, "new", Some("u0")),
            seg(1, 0, "beta", Some("u1")),
            seg(2, 0, "gamma", Some("u2")),
        ];
        let (k0, k1) = (segment_keys(&before), segment_keys(&after));
        assert_eq!(k0[1], k1[1]);
        assert_eq!(k0[2], k1[2]);
        assert_ne!(k0[0].0, k1[0].0);
        // Without source ids the article's text names it.
        let plain = [seg(0, 0, "alpha", None), seg(0, 1, "beta", None)];
        let moved = [seg(5, 0, "alpha", None), seg(5, 1, "beta", None)];
        assert_eq!(segment_keys(&plain), segment_keys(&moved));
    }

    #[test]
    fn repeated_texts_get_distinct_keys() {
        let twins = [
            seg(0, 0, "same", None),
            seg(0, 1, "same", None),
            seg(1, 0, "same", None),
            seg(1, 1, "same", None),
        ];
        let keys: BTreeSet<u64> = segment_keys(&twins).into_iter().map(|k| k.0).collect();
        assert_eq!(keys.len(), 4);
    }

    #[test]
    fn episode_vectors_are_unit_means() {
        let segs = [seg(0, 0, "a", Some("x")), seg(0, 1, "b", Some("x"))];
        let emb = vec![vec![2.0, 0.0], vec![0.0, 5.0]];
        let ep = Episode {
            key_event: "e".into(),
            trial: 0,
            episode_id: 0,
            stable_id: None,
            status: None,
            title: "t".into(),
            title_fields: vec![],
            keywords: vec![],
            example_sentences: vec![],
            n_segments: 2,
            source: "clusters".into(),
            n_articles: 1,
            first_date: None,
            peak_date: None,
            last_date: None,
            phase_id: 0,
            phase_stable_id: None,
        };
        let asg = |seg_idx| Assignment {
            key_event: "e".into(),
            trial: 0,
            episode_id: 0,
            stable_id: None,
            status: None,
            doc_id: 0,
            seg_idx,
            rank: seg_idx,
            confidence: 1.0,
        };
        let k = episode_keys(&segs, &emb, &[ep], &[asg(0), asg(1)]);
        assert_eq!(k[0].segment_keys.len(), 2);
        assert_eq!(k[0].article_keys.len(), 1);
        let h = std::f32::consts::FRAC_1_SQRT_2;
        assert!((k[0].vector[0] - h).abs() < 1e-6 && (k[0].vector[1] - h).abs() < 1e-6);
        assert!((cosine(&k[0].vector, &k[0].vector) - 1.0).abs() < 1e-6);
    }
}
