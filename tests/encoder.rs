//! Parity of the burn encoders with Hugging Face (docs/method.md §1, §6), on fixtures made by
//! `scripts/ci/make_encoder_fixtures.py`: tiny random-weight BERT and MPNet models with reference
//! outputs from sentence-transformers and from X-Class's static representation recipe, and
//! reference vectors of the real all-MiniLM-L6-v2 (compared when the model is in the cache).
//!
//! Tolerance: cosine ≥ 0.9999 per vector (and, where the vectors are not normalised, norms equal
//! within 0.1 %). Both sides compute in f32 with different summation orders (gemm blocking,
//! softmax, LayerNorm); over a few layers that moves vectors by ~1e-6 relative, a cosine of
//! 1 - 1e-10 or so. A real defect (a wrong mask, position, bias bucket, epsilon, pooling or
//! chunk) moves cosines to 0.99 or below on these fixtures; the fixture script checks that
//! dropping the mask or the relative position bias does.

use std::path::{Path, PathBuf};

use crate::util::{cosine, minilm_dir};
use epimine::encoder::{DefaultBackend, Encoder, WordVector};
use serde_json::Value;

const MIN_COSINE: f64 = 0.9999;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/encoders")
}

fn load(dir: &Path) -> Encoder<DefaultBackend> {
    Encoder::<DefaultBackend>::load(dir, &epimine::encoder::default_device())
        .unwrap_or_else(|e| panic!("loading {}: {e}", dir.display()))
}

fn reference(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn floats(v: &Value) -> Vec<f32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap() as f32)
        .collect()
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap().to_string())
        .collect()
}

fn norm(a: &[f32]) -> f64 {
    a.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt()
}

/// Cosine ≥ 0.9999 and norms within 0.1 %; returns the cosine.
fn assert_close(what: &str, got: &[f32], want: &[f32]) -> f64 {
    let c = cosine(got, want);
    assert!(c >= MIN_COSINE, "{what}: cosine {c:.7} < {MIN_COSINE}");
    let ratio = norm(got) / norm(want);
    assert!(
        (ratio - 1.0).abs() < 1e-3,
        "{what}: norm {} vs reference {}",
        norm(got),
        norm(want)
    );
    c
}

fn check_sentences(enc: &Encoder<DefaultBackend>, reference: &Value) -> f64 {
    let sentences = strings(&reference["sentences"]);
    let texts: Vec<&str> = sentences.iter().map(String::as_str).collect();
    let got = enc.sentence_embeddings(&texts).unwrap();
    assert_eq!(got.len(), texts.len());
    let mut worst: f64 = 1.0;
    for (i, want) in reference["sentence_embeddings"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
    {
        worst = worst.min(assert_close(
            &format!("sentence {i} ({:?})", texts[i]),
            got.row(i),
            &floats(want),
        ));
    }
    worst
}

fn check_words(got: &[WordVector], want: &Value, what: &str) -> f64 {
    let want = want.as_array().unwrap();
    let got_words: Vec<&str> = got.iter().map(|w| w.word.as_str()).collect();
    let want_words: Vec<&str> = want.iter().map(|w| w["word"].as_str().unwrap()).collect();
    assert_eq!(got_words, want_words, "{what}: the word list");
    let mut worst: f64 = 1.0;
    for (g, w) in got.iter().zip(want) {
        assert_eq!(
            u64::from(g.count),
            w["count"].as_u64().unwrap(),
            "{what}: count of {:?}",
            g.word
        );
        worst = worst.min(assert_close(
            &format!("{what}: word {:?}", g.word),
            &g.vector,
            &floats(&w["vector"]),
        ));
    }
    worst
}

fn check_fixture(name: &str) {
    let dir = fixtures().join(name);
    let reference = reference(&dir.join("reference.json"));
    let enc = load(&dir).with_batch_size(3);
    assert_eq!(
        enc.sentence.max_seq_length as u64,
        reference["max_seq_length"].as_u64().unwrap(),
        "max_seq_length"
    );
    assert_eq!(
        enc.sentence.normalize,
        reference["normalize"].as_bool().unwrap()
    );
    // The fixture's tokenizer.json pads and truncates at 8 tokens; sentence-transformers
    // overrides both, and so must we.
    let counts: Vec<usize> = strings(&reference["sentences"])
        .iter()
        .map(|s| enc.tokenizer().sentence(s).unwrap().ids.len())
        .collect();
    let want: Vec<usize> = reference["sentence_token_counts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_u64().unwrap() as usize)
        .collect();
    assert_eq!(counts, want, "token counts per sentence");

    let worst = check_sentences(&enc, &reference);
    eprintln!("{name}: worst sentence cosine 1 - {:.1e}", 1.0 - worst);

    let texts = strings(&reference["word_texts"]);
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    let chunks: Vec<u64> = texts
        .iter()
        .map(|t| {
            epimine::encoder::tokenize::word_chunks(enc.tokenizer(), t, 512)
                .unwrap()
                .chunks
                .len() as u64
        })
        .collect();
    let want_chunks: Vec<u64> = reference["word_chunks_per_text"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_u64().unwrap())
        .collect();
    assert_eq!(chunks, want_chunks, "X-Class chunks per text");
    for (layer, want) in reference["words"].as_object().unwrap() {
        let layer: usize = layer.parse().unwrap();
        let got = enc.word_vectors(&texts, layer).unwrap();
        let worst = check_words(&got, want, &format!("{name} layer {layer}"));
        eprintln!(
            "{name}: layer {layer}: worst word cosine 1 - {:.1e}",
            1.0 - worst
        );
    }
}

#[test]
fn tiny_bert_matches_hugging_face() {
    check_fixture("tiny-bert");
}

#[test]
fn tiny_mpnet_matches_hugging_face() {
    check_fixture("tiny-mpnet");
}

/// Batching (padding to the batch's longest sequence) does not change any vector.
#[test]
fn batch_size_does_not_change_results() {
    for name in ["tiny-bert", "tiny-mpnet"] {
        let dir = fixtures().join(name);
        let reference = reference(&dir.join("reference.json"));
        let sentences = strings(&reference["sentences"]);
        let texts: Vec<&str> = sentences.iter().map(String::as_str).collect();
        let one = load(&dir)
            .with_batch_size(1)
            .sentence_embeddings(&texts)
            .unwrap();
        let all = load(&dir)
            .with_batch_size(64)
            .sentence_embeddings(&texts)
            .unwrap();
        for i in 0..texts.len() {
            let c = cosine(one.row(i), all.row(i));
            assert!(c > 0.999_999, "{name} sentence {i}: cosine {c}");
        }
    }
}

/// One pass for both roles: the same sentence embeddings, and on clean short texts the same
/// word vectors as the X-Class recipe.
#[test]
fn one_pass_gives_both_roles() {
    for name in ["tiny-bert", "tiny-mpnet"] {
        let dir = fixtures().join(name);
        let enc = load(&dir).with_batch_size(4);
        // Clean (nothing for X-Class to remove) and within max_seq_length.
        let texts = [
            "protesters stormed the legislature on tuesday.",
            "police fired tear gas, and protesters were arrested!",
            "the river rose",
        ];
        let layer = enc.last_layer();
        let (sentences, words) = enc.encode_both(&texts, layer).unwrap();
        let alone = enc.sentence_embeddings(&texts).unwrap();
        for i in 0..texts.len() {
            assert!(cosine(sentences.row(i), alone.row(i)) > 0.999_999);
        }
        let xclass = enc.word_vectors(&texts, layer).unwrap();
        let want = serde_json::to_value(
            xclass
                .iter()
                .map(|w| serde_json::json!({"word": w.word, "count": w.count, "vector": w.vector}))
                .collect::<Vec<_>>(),
        )
        .unwrap();
        check_words(&words, &want, &format!("{name} one pass"));
        // Layer 1 differs from the last layer: the layer parameter is honoured.
        let (_, first) = enc.encode_both(&texts, 1).unwrap();
        assert!(cosine(&first[0].vector, &words[0].vector) < 0.99);
    }
}

/// A second model's sentence embeddings of several parts (`encoder.sentence_model`) are, bit for
/// bit, those of the one-pass path of each part alone: the floats do not depend on the grouping.
#[test]
fn sentence_parts_equal_each_part_alone() {
    let enc = load(&fixtures().join("tiny-mpnet")).with_batch_size(2);
    let texts = [
        "protesters stormed the legislature on tuesday.",
        "police fired tear gas, and protesters were arrested!",
        "the river rose and police closed the bridge",
        "arrests followed",
        "the river fell",
    ];
    let parts: [&[&str]; 2] = [&texts[..3], &texts[3..]];
    let together = enc.sentence_parts(&parts).unwrap();
    assert_eq!(together.len(), 2);
    for (part, got) in parts.iter().zip(&together) {
        let (want, _) = enc.encode_both(part, enc.last_layer()).unwrap();
        assert_eq!(got.len(), part.len());
        for i in 0..part.len() {
            assert_eq!(got.row(i), want.row(i));
        }
    }
}

/// The word sums of parts of an event, encoded apart and added, give the whole's word table:
/// what lets `epimine run` encode an event's units on different workers.
#[test]
fn word_sums_of_parts_add_up_to_the_whole() {
    use std::collections::BTreeMap;
    let enc = load(&fixtures().join("tiny-bert")).with_batch_size(2);
    let texts = [
        "protesters stormed the legislature on tuesday.",
        "police fired tear gas, and protesters were arrested!",
        "the river rose and police closed the bridge",
        "arrests followed as the river fell",
    ];
    let layer = enc.last_layer();
    let (_, whole) = enc.encode_both(&texts, layer).unwrap();
    let mut added: BTreeMap<String, epimine::encoder::WordSum> = BTreeMap::new();
    for part in [&texts[..1], &texts[1..3], &texts[3..]] {
        let (embeddings, sums) = enc.encode_both_sums(part, layer).unwrap();
        assert_eq!(embeddings.len(), part.len());
        for w in sums {
            match added.get_mut(&w.word) {
                Some(sum) => sum.add(&w),
                None => {
                    added.insert(w.word.clone(), w);
                }
            }
        }
    }
    assert_eq!(added.len(), whole.len());
    // "police", "protesters" and "river" occur in two parts each.
    assert_eq!(added["police"].count, 2);
    for w in &whole {
        let sum = &added[&w.word];
        assert_eq!(sum.count, w.count, "{}", w.word);
        let mean = sum.mean();
        for (a, b) in mean.iter().zip(&w.vector) {
            assert!((a - b).abs() < 1e-4, "{}: {a} vs {b}", w.word);
        }
    }
}

#[test]
fn a_layer_beyond_the_model_is_an_error() {
    let enc = load(&fixtures().join("tiny-bert"));
    let err = enc.word_vectors(&["a b"], 3).unwrap_err().to_string();
    assert!(err.contains("layer 3 does not exist"), "{err}");
}

#[test]
fn real_minilm_matches_sentence_transformers() {
    let Some(dir) = minilm_dir() else { return };
    let reference = reference(&fixtures().join("minilm-reference.json"));
    let enc = load(&dir);
    assert_eq!(enc.dim(), 384);
    assert_eq!(enc.sentence.max_seq_length, 256);
    assert!(enc.sentence.normalize);
    let worst = check_sentences(&enc, &reference);
    eprintln!(
        "all-MiniLM-L6-v2: worst sentence cosine 1 - {:.1e}",
        1.0 - worst
    );
    let texts = strings(&reference["word_texts"]);
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    let got = enc.word_vectors(&texts, enc.last_layer()).unwrap();
    let worst = check_words(&got, &reference["words"], "all-MiniLM-L6-v2 words");
    eprintln!(
        "all-MiniLM-L6-v2: worst word cosine 1 - {:.1e}",
        1.0 - worst
    );
}

/// The int8 option (`encoder.int8`): on both architectures the sentence embeddings stay close
/// to the f32 ones without being equal to them, the same bits come back twice, and batching
/// still does not matter (the activations are quantized per row).
#[test]
fn int8_stays_close_to_f32_and_is_reproducible() {
    for name in ["tiny-bert", "tiny-mpnet"] {
        let dir = fixtures().join(name);
        let reference = reference(&dir.join("reference.json"));
        let sentences = strings(&reference["sentences"]);
        let texts: Vec<&str> = sentences.iter().map(String::as_str).collect();
        let f32s = load(&dir).sentence_embeddings(&texts).unwrap();
        let int8 = load(&dir).with_int8(true);
        assert!(int8.int8());
        let q = int8.sentence_embeddings(&texts).unwrap();
        let again = int8.sentence_embeddings(&texts).unwrap();
        assert_eq!(q.data, again.data, "{name}: int8 is not reproducible");
        let one = load(&dir)
            .with_int8(true)
            .with_batch_size(1)
            .sentence_embeddings(&texts)
            .unwrap();
        let mut moved = false;
        for i in 0..texts.len() {
            let c = cosine(q.row(i), f32s.row(i));
            assert!(c > 0.98, "{name} sentence {i}: int8 cosine {c} to f32");
            moved |= q.row(i) != f32s.row(i);
            let b = cosine(q.row(i), one.row(i));
            assert!(
                b > 0.9999,
                "{name} sentence {i}: batch 1 against default, cosine {b}"
            );
        }
        assert!(
            moved,
            "{name}: int8 changed nothing (the option is not applied)"
        );
    }
}
