//! Batch shapes of the encoders (`encoder.shapes`, `encoder::shapes`; issue 26), on the CPU
//! backend: bucketed shapes are few and known before the first batch, the warm-up runs exactly
//! them, the vectors stay those of exact shapes (padding is masked), a unit's floats do not
//! depend on what it is encoded with, and the GPU's broadcast attention mask and half precision
//! agree with the CPU's forms.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use epimine::encoder::{DefaultBackend, Encoder, Precision, ShapePolicy};
use epimine::episodes::termspace::cosine;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/encoders")
        .join(name)
}

fn load(dir: &Path) -> Encoder<DefaultBackend> {
    Encoder::<DefaultBackend>::load(dir, &epimine::encoder::default_device())
        .unwrap_or_else(|e| panic!("loading {}: {e}", dir.display()))
}

/// Texts of 1 to 40 words (so of every token count up to past the fixtures' limits of 20 and
/// 24), in a shuffled order.
fn texts() -> Vec<String> {
    let words = [
        "protesters",
        "stormed",
        "the",
        "legislature",
        "on",
        "tuesday",
        "police",
        "fired",
        "tear",
        "gas",
        "and",
        "arrests",
        "followed",
        "river",
        "rose",
        "bridge",
        "closed",
    ];
    (0..40)
        .map(|i| (i * 7) % 40 + 1)
        .map(|n| {
            (0..n)
                .map(|k| words[(k * 5 + n) % words.len()])
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

fn distinct(enc: &Encoder<DefaultBackend>) -> BTreeSet<[usize; 2]> {
    enc.shapes_seen().into_iter().map(|(s, _)| s).collect()
}

/// Bucketed shapes: every batch runs at `[batch_size, bucket]`, so 40 texts of 40 lengths meet
/// at most as many shapes as there are buckets, where exact shapes meet one per batch; the
/// embeddings and word sums agree with the exact ones to rounding.
#[test]
fn bucketed_shapes_are_few_and_the_vectors_stay() {
    let texts = texts();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    for name in ["tiny-bert", "tiny-mpnet"] {
        let dir = fixture(name);
        let exact = load(&dir)
            .with_batch_size(4)
            .with_shapes(ShapePolicy::Exact);
        let buckets = load(&dir)
            .with_batch_size(4)
            .with_shapes(ShapePolicy::Buckets);
        let layer = exact.last_layer();
        let (e_vec, e_words) = exact.encode_both_sums(&texts, layer).unwrap();
        let (b_vec, b_words) = buckets.encode_both_sums(&texts, layer).unwrap();
        let known: BTreeSet<[usize; 2]> = buckets.sentence_shapes().into_iter().collect();
        let met = distinct(&buckets);
        assert!(
            met.is_subset(&known),
            "{name}: met {met:?}, known {known:?}"
        );
        assert!(met.iter().all(|s| s[0] == 4), "{name}: {met:?}");
        let exact_met = distinct(&exact);
        assert!(
            exact_met.len() > 2 * met.len(),
            "{name}: exact shapes {exact_met:?} against bucketed {met:?}"
        );
        eprintln!(
            "{name}: {} bucketed shapes {met:?} against {} exact ones",
            met.len(),
            exact_met.len()
        );
        let mut worst: f64 = 1.0;
        for i in 0..texts.len() {
            worst = worst.min(cosine(e_vec.row(i), b_vec.row(i)));
        }
        assert!(worst > 0.99999, "{name}: worst sentence cosine {worst}");
        assert_eq!(e_words.len(), b_words.len());
        for (e, b) in e_words.iter().zip(&b_words) {
            assert_eq!((&e.word, e.count), (&b.word, b.count));
            let (e, b) = (e.mean(), b.mean());
            let c = cosine(&e, &b);
            assert!(c > 0.99999, "{name}: word cosine {c}");
        }
        // Bucketed padding is real padding: more positions computed than exact shapes.
        let (real, padded) = buckets.positions(&[&texts]).unwrap();
        let (real_e, padded_e) = exact.positions(&[&texts]).unwrap();
        assert_eq!(real, real_e);
        assert!(padded > padded_e && padded_e >= real);
    }
}

/// The warm-up runs every bucket shape once; a run after it meets no other shape.
#[test]
fn warm_up_covers_every_shape_a_run_meets() {
    let texts = texts();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    let enc = load(&fixture("tiny-bert"))
        .with_batch_size(8)
        .with_shapes(ShapePolicy::Buckets);
    let warm = enc.warm_up();
    assert_eq!(warm, vec![[8, 16], [8, 24]], "tiny-bert: max_seq_length 24");
    let after_warm_up = distinct(&enc);
    assert_eq!(after_warm_up, warm.iter().copied().collect());
    enc.encode_parts(&[&texts[..13], &texts[13..]], enc.last_layer())
        .unwrap();
    assert_eq!(
        distinct(&enc),
        after_warm_up,
        "no shape beyond the warm-up's"
    );
    // Exact shapes have nothing to warm up.
    let exact = load(&fixture("tiny-bert")).with_shapes(ShapePolicy::Exact);
    assert!(exact.warm_up().is_empty());
}

/// Under bucketed shapes a part's floats are, bit for bit, those of the part alone (a unit's
/// batches depend on its own texts only, whichever worker encodes it with whatever else).
#[test]
fn bucketed_parts_equal_each_part_alone() {
    let texts = texts();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    let enc = load(&fixture("tiny-mpnet"))
        .with_batch_size(4)
        .with_shapes(ShapePolicy::Buckets);
    let layer = enc.last_layer();
    let parts: [&[&str]; 3] = [&texts[..7], &texts[7..30], &texts[30..]];
    let together = enc.encode_parts(&parts, layer).unwrap();
    for (p, part) in parts.iter().enumerate() {
        let (alone, words) = enc.encode_both_sums(part, layer).unwrap();
        assert_eq!(together[p].0.data, alone.data, "part {p}: embeddings");
        assert_eq!(together[p].1, words, "part {p}: word sums");
    }
}

/// CUDA's attention mask, one row per sequence broadcast on the device, gives the vectors of the
/// CPU's whole mask (run here through burn's generic operations).
#[test]
fn the_broadcast_mask_agrees_with_the_whole_one() {
    let texts = texts();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    for name in ["tiny-bert", "tiny-mpnet"] {
        let dir = fixture(name);
        let whole = load(&dir).with_batch_size(4);
        let broadcast = load(&dir).with_batch_size(4).with_full_bias(false);
        let a = whole.sentence_embeddings(&texts).unwrap();
        let b = broadcast.sentence_embeddings(&texts).unwrap();
        for i in 0..texts.len() {
            let c = cosine(a.row(i), b.row(i));
            assert!(c > 0.99999, "{name} text {i}: cosine {c}");
        }
    }
}

/// Half precision (`encoder.precision`): the vectors stay close to f32's and differ from them
/// (the option is applied); int8 with half precision is refused.
#[test]
fn half_precision_stays_close_to_f32() {
    let texts = texts();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    for name in ["tiny-bert", "tiny-mpnet"] {
        let dir = fixture(name);
        let f32s = load(&dir).sentence_embeddings(&texts).unwrap();
        for precision in [Precision::F16, Precision::Bf16] {
            let half = load(&dir)
                .with_precision(precision)
                .with_shapes(ShapePolicy::Buckets)
                .with_full_bias(false)
                .sentence_embeddings(&texts)
                .unwrap();
            let mut worst: f64 = 1.0;
            for i in 0..texts.len() {
                worst = worst.min(cosine(f32s.row(i), half.row(i)));
                assert!(half.row(i).iter().all(|x| x.is_finite()), "{name} {i}");
            }
            eprintln!(
                "{name} {}: worst cosine to f32 {worst:.6}",
                precision.name()
            );
            assert!(
                worst > 0.99,
                "{name} {}: worst cosine {worst}",
                precision.name()
            );
            assert_ne!(half.data, f32s.data, "{name}: precision not applied");
        }
    }
    let options = epimine::encoder::EncoderOptions {
        int8: true,
        precision: Precision::F16,
        ..Default::default()
    };
    let err = load(&fixture("tiny-bert"))
        .with_options(&options)
        .unwrap_err();
    assert!(err.to_string().contains("int8"), "{err}");
}

/// `epimine run` with bucketed shapes and the warm-up (the CUDA defaults, set here on the CPU):
/// the same bytes for 1 and 2 workers, the warm-up logged with its shapes, no worker meeting a
/// shape beyond them, and outputs that differ from exact shapes' only by rounding (the run
/// completes every event either way).
#[test]
fn a_bucketed_run_is_the_same_for_any_layout_and_meets_only_warmed_shapes() {
    use crate::util::*;
    let dir = scratch();
    let corpus = synth(dir.path(), 2, 70);
    let bg = corpus.join("background.txt");
    let model = tiny_model();
    let run = |name: &str, workers: &str| {
        let out = dir.path().join(name);
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_epimine"))
            .args([
                "run",
                "--corpus",
                s(&corpus),
                "--background",
                s(&bg),
                "--out",
                s(&out),
                "--model",
                &model,
                "-w",
                workers,
                "--set",
                "encoder.shapes=\"buckets\"",
                "--set",
                "encoder.warmup=true",
                "--set",
                "encoder.batch_size=8",
            ])
            .env("RUST_LOG", "epimine=debug")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr).to_string();
        assert!(output.status.success(), "{stderr}");
        (out, stderr)
    };
    let (one, log_one) = run("one", "1");
    let (two, log_two) = run("two", "2");
    for f in OUTPUTS {
        assert!(
            std::fs::read(one.join(f)).unwrap() == std::fs::read(two.join(f)).unwrap(),
            "{f}: 1 vs 2 workers"
        );
    }
    for log in [&log_one, &log_two] {
        assert!(
            log.contains("encoder warm-up: 2 shape(s) [[8, 16], [8, 24]]"),
            "{log}"
        );
        // Every worker met the 2 warmed shapes and no other.
        for line in log.lines().filter(|l| l.contains("batch shapes met")) {
            assert!(line.contains("batch shapes met: 2 "), "{line}");
        }
        assert!(log.contains("batch shapes met"), "{log}");
    }
    let job = std::fs::read_to_string(one.join("job.toml")).unwrap();
    assert!(
        job.contains("shapes = \"buckets\"") && job.contains("warmup = true"),
        "{job}"
    );
}

/// `epimine encode` with bucketed shapes and the warm-up prints what each phase took and the
/// shapes met (none beyond the warm-up's); a warm-up of exact shapes is refused.
#[test]
fn encode_reports_warm_up_and_shapes() {
    use crate::util::*;
    let dir = scratch();
    let input = dir.path().join("texts.txt");
    std::fs::write(&input, texts().join("\n")).unwrap();
    let out = dir.path().join("e.parquet");
    let model = tiny_model();
    let base = [
        "encode",
        "--model",
        &model,
        "--input",
        s(&input),
        "--out",
        s(&out),
        "--batch-size",
        "4",
    ];
    let mut args = base.to_vec();
    args.extend(["--shapes", "buckets", "--warmup", "true"]);
    let stdout = epimine_ok(&args);
    assert!(stdout.contains("wrote 40 rows"), "{stdout}");
    assert!(
        stdout.contains("(2 shapes)") && stdout.contains(", 2 batch shapes"),
        "{stdout}"
    );
    assert!(stdout.contains("tokens/s"), "{stdout}");
    let mut args = base.to_vec();
    args.extend(["--shapes", "exact", "--warmup", "true"]);
    let failed = epimine(&args);
    assert!(!failed.status.success());
    assert!(String::from_utf8_lossy(&failed.stderr).contains("--shapes buckets"));
}

/// `encoder.word_layer`: the word vectors of another layer get encoder-cache entries of their
/// own (a run never reads the last layer's for them), the run records the setting, and a layer
/// the model lacks is refused before any unit is encoded, naming the setting.
#[test]
fn another_word_layer_has_its_own_cache_entries_and_a_missing_one_is_refused() {
    use crate::util::*;
    let dir = scratch();
    let corpus = synth(dir.path(), 2, 40);
    let cache = dir.path().join("cache");
    let cache_set = format!("encoder.cache_dir=\"{}\"", cache.display());
    let entries = || {
        std::fs::read_dir(&cache)
            .map(|d| {
                d.filter_map(Result::ok)
                    .filter(|e| e.path().extension().is_some_and(|x| x == "enc"))
                    .count()
            })
            .unwrap_or(0)
    };
    let last = dir.path().join("last");
    ok(synth_run(&corpus, &last)
        .args(["--set", &cache_set])
        .output()
        .unwrap());
    let units = entries();
    assert!(units > 0, "the cache holds the run's units");
    let first = dir.path().join("first");
    ok(synth_run(&corpus, &first)
        .args(["--set", &cache_set, "--set", "encoder.word_layer=0"])
        .output()
        .unwrap());
    assert_eq!(
        entries(),
        2 * units,
        "layer 0's units are encoded again, not read from the last layer's entries"
    );
    assert_eq!(run_json(&first)["job"]["encoder"]["word_layer"], 0);
    assert!(run_json(&last)["job"]["encoder"]["word_layer"].is_null());
    let nine = dir.path().join("nine");
    let refused = synth_run(&corpus, &nine)
        .args(["--set", &cache_set, "--set", "encoder.word_layer=99"])
        .output()
        .unwrap();
    let err = stderr(&refused);
    assert!(!refused.status.success(), "{err}");
    assert!(
        err.contains("encoder.word_layer = 99: layer 99 does not exist"),
        "{err}"
    );
    assert_eq!(
        entries(),
        2 * units,
        "nothing was encoded for the refused layer"
    );
}
