//! `epimine encode`: a text file → the sentence embedding table or, with `--words`, the static
//! word table, written as Parquet to a local path or s3:// (the local S3 test server).

use std::path::{Path, PathBuf};

use crate::util::*;
use arrow_array::RecordBatch;
use epimine::storage::Location;
use epimine::tables;
use serde_json::Value;

fn tiny(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/encoders")
        .join(name)
}

fn reference(model: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(model.join("reference.json")).unwrap()).unwrap()
}

fn texts(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap().to_string())
        .collect()
}

fn floats(v: &Value) -> Vec<f32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap() as f32)
        .collect()
}

fn read(path: &str, schema: &arrow_schema::SchemaRef) -> Vec<RecordBatch> {
    let (loc, name) = Location::parse_file(path, false).unwrap();
    block_on(loc.read_parquet(&name, schema)).unwrap()
}

/// Where to write: a local file, and an s3:// object when the test S3 server is up
/// (`EPIMINE_TEST_S3_BUCKET`, set by scripts/ci/test.sh; `EPIMINE_SKIP_S3=1` skips on purpose).
fn outputs(dir: &Path, name: &str) -> Vec<String> {
    let mut out = vec![s(&dir.join("sub").join(name)).to_string()];
    out.extend(s3_root("encode").map(|root| format!("{root}/{name}")));
    out
}

#[test]
fn encode_writes_one_embedding_per_line() {
    let model = tiny("tiny-mpnet");
    let reference = reference(&model);
    let sentences = texts(&reference["sentences"]);
    let dir = scratch();
    let input = dir.path().join("in.txt");
    std::fs::write(&input, sentences.join("\n") + "\n").unwrap();
    for out in outputs(dir.path(), "emb.parquet") {
        let stdout = epimine_ok(&[
            "encode",
            "--model",
            s(&model),
            "--input",
            s(&input),
            "--out",
            &out,
            "--batch-size",
            "2",
        ]);
        assert!(
            stdout.contains(&format!("wrote {} rows", sentences.len())),
            "{stdout}"
        );
        let batches = read(&out, &tables::sentence_embeddings_schema(32));
        let mut idx = Vec::new();
        let mut vectors = Vec::new();
        for b in &batches {
            idx.extend(tables::u32_column("sentence_embeddings", b, "idx").unwrap());
            let (dim, values) =
                tables::vector_column("sentence_embeddings", b, "embedding").unwrap();
            assert_eq!(dim, 32);
            vectors.extend(values.chunks(dim).map(<[f32]>::to_vec));
        }
        assert_eq!(idx, (0..sentences.len() as u32).collect::<Vec<_>>());
        for (i, want) in reference["sentence_embeddings"]
            .as_array()
            .unwrap()
            .iter()
            .enumerate()
        {
            let c = cosine(&vectors[i], &floats(want));
            assert!(c >= 0.9999, "{out}: line {i}: cosine {c}");
        }
    }
}

#[test]
fn encode_words_writes_the_static_word_table() {
    let model = tiny("tiny-bert");
    let reference = reference(&model);
    let lines = texts(&reference["word_texts"]);
    let dir = scratch();
    let input = dir.path().join("event.txt");
    std::fs::write(&input, lines.join("\r\n")).unwrap();
    let want = reference["words"]["2"].as_array().unwrap();
    for out in outputs(dir.path(), "words.parquet") {
        epimine_ok(&[
            "encode",
            "--model",
            s(&model),
            "--input",
            s(&input),
            "--out",
            &out,
            "--words",
        ]);
        let batches = read(&out, &tables::word_vectors_schema(32));
        let mut words = Vec::new();
        let mut counts = Vec::new();
        let mut vectors = Vec::new();
        for b in &batches {
            words.extend(tables::utf8_column("word_vectors", b, "word").unwrap());
            counts.extend(tables::u32_column("word_vectors", b, "count").unwrap());
            let (dim, values) = tables::vector_column("word_vectors", b, "vector").unwrap();
            vectors.extend(values.chunks(dim).map(<[f32]>::to_vec));
        }
        let want_words: Vec<&str> = want.iter().map(|w| w["word"].as_str().unwrap()).collect();
        assert_eq!(words, want_words);
        for (i, w) in want.iter().enumerate() {
            assert_eq!(
                u64::from(counts[i]),
                w["count"].as_u64().unwrap(),
                "{}",
                words[i]
            );
            let c = cosine(&vectors[i], &floats(&w["vector"]));
            assert!(c >= 0.9999, "{out}: {}: cosine {c}", words[i]);
        }
    }
    // --layer picks another hidden layer: layer 1's table.
    let out = dir.path().join("layer1.parquet");
    epimine_ok(&[
        "encode",
        "--model",
        s(&model),
        "--input",
        s(&input),
        "--out",
        s(&out),
        "--words",
        "--layer",
        "1",
    ]);
    let batches = read(s(&out), &tables::word_vectors_schema(32));
    let (_, values) = tables::vector_column("word_vectors", &batches[0], "vector").unwrap();
    let want1 = floats(&reference["words"]["1"][0]["vector"]);
    assert!(cosine(&values[..32], &want1) >= 0.9999);
}

#[test]
fn encode_reports_a_missing_model() {
    let dir = scratch();
    let input = dir.path().join("in.txt");
    std::fs::write(&input, "a line\n").unwrap();
    let out = epimine(&[
        "encode",
        "--model",
        s(&dir.path().join("nope")),
        "--input",
        s(&input),
        "--out",
        s(&dir.path().join("o.parquet")),
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("nope/config.json"), "{err}");
    assert!(!dir.path().join("o.parquet").exists());
}

/// One file's path or URL splits into its folder's location and its name.
#[test]
fn file_locations_split_into_folder_and_name() {
    let dir = scratch();
    let nested = dir.path().join("a/b/out.parquet");
    let (loc, name) = Location::parse_file(s(&nested), true).unwrap();
    assert_eq!(name, "out.parquet");
    assert!(dir.path().join("a/b").is_dir(), "the folder is created");
    assert_eq!(loc.display(), s(&dir.path().join("a/b")));
    let (loc, name) = Location::parse_file("x.parquet", false).unwrap();
    assert_eq!((loc.display(), name.as_str()), (".", "x.parquet"));
    let url = format!("file://{}", s(&nested));
    let (loc, name) = Location::parse_file(&url, false).unwrap();
    assert_eq!(name, "out.parquet");
    assert_eq!(loc.kind(), epimine::storage::StoreKind::Local);
    for bad in ["s3://only-a-bucket.parquet", "dir/", "a/.."] {
        assert!(Location::parse_file(bad, false).is_err(), "{bad}");
    }
}

/// Without `--model`, `encode` uses the cached default model (`$EPIMINE_MODELS`), and says how
/// to get it when it is not there.
#[test]
fn encode_defaults_to_the_cached_model() {
    let dir = scratch();
    let cache = dir.path().join("models");
    let input = dir.path().join("in.txt");
    std::fs::write(&input, "first line\nsecond line\n").unwrap();
    let out = dir.path().join("o.parquet");
    let run = |cache: &Path| {
        std::process::Command::new(env!("CARGO_BIN_EXE_epimine"))
            .args(["encode", "--input", s(&input), "--out", s(&out)])
            .env("EPIMINE_MODELS", cache)
            .env("RUST_LOG", "warn")
            .output()
            .unwrap()
    };
    let missing = run(&cache);
    assert!(!missing.status.success());
    let err = String::from_utf8_lossy(&missing.stderr);
    assert!(err.contains("epimine models fetch"), "{err}");
    // A model in the cache under the default name (here the tiny BERT).
    let model = cache.join("all-MiniLM-L6-v2");
    std::fs::create_dir_all(model.join("1_Pooling")).unwrap();
    let src = tiny("tiny-bert");
    for f in [
        "config.json",
        "model.safetensors",
        "tokenizer.json",
        "modules.json",
        "sentence_bert_config.json",
        "tokenizer_config.json",
        "1_Pooling/config.json",
    ] {
        std::fs::copy(src.join(f), model.join(f)).unwrap();
    }
    let ok = run(&cache);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let batches = read(s(&out), &tables::sentence_embeddings_schema(32));
    assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 2);
}
