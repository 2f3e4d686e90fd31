//! Speed of the burn sentence encoder (ALGORITHM.md §6), for `scripts/bench_encoders.py`:
//! encodes every line of a file and prints one JSON line with tokens/s and peak memory.
//!
//! `cargo run --release --example bench_encoder -- MODEL_DIR TEXTS_FILE [BATCH_SIZE] [--words]`
//! Threads: `RAYON_NUM_THREADS` (burn-flex and its matrix products run on rayon's pool).

use std::path::PathBuf;
use std::time::Instant;

use epimine::encoder::{default_device, DefaultBackend, Encoder};

/// Peak resident memory of this process, in MiB (Linux `VmHWM`).
fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let words = args.iter().any(|a| a == "--words");
    let pos: Vec<&String> = args.iter().filter(|a| !a.starts_with("--")).collect();
    let (Some(model), Some(file)) = (pos.first(), pos.get(1)) else {
        return Err("usage: bench_encoder MODEL_DIR TEXTS_FILE [BATCH_SIZE] [--words]".into());
    };
    let batch: usize = pos.get(2).map(|b| b.parse()).transpose()?.unwrap_or(32);
    let text = std::fs::read_to_string(file)?;
    let texts: Vec<&str> = text.lines().collect();
    let enc = Encoder::<DefaultBackend>::load(&PathBuf::from(model), &default_device())?
        .with_batch_size(batch);
    let tokens: usize = texts
        .iter()
        .map(|t| enc.tokenizer().sentence(t).map(|s| s.ids.len()))
        .sum::<Result<usize, _>>()?;
    // Warm-up: one batch.
    enc.sentence_embeddings(&texts[..batch.min(texts.len())])?;
    let start = Instant::now();
    if words {
        let table = enc.word_vectors(&texts, enc.last_layer())?;
        eprintln!("{} words", table.len());
    } else {
        let v = enc.sentence_embeddings(&texts)?;
        assert_eq!(v.len(), texts.len());
    }
    let seconds = start.elapsed().as_secs_f64();
    println!(
        "{{\"engine\":\"burn-flex\",\"texts\":{},\"tokens\":{},\"seconds\":{:.3},\"tokens_per_s\":{:.1},\"peak_rss_mib\":{:.1},\"threads\":\"{}\"}}",
        texts.len(),
        tokens,
        seconds,
        tokens as f64 / seconds,
        peak_rss_mib().unwrap_or(f64::NAN),
        std::env::var("RAYON_NUM_THREADS").unwrap_or_else(|_| "all".into()),
    );
    Ok(())
}
