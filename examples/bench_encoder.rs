//! Speed of the burn sentence encoder (docs/method.md §6), for `scripts/bench/bench_encoders.py`:
//! encodes every line of a file and prints one JSON line with tokens/s, CPU seconds, the
//! padding share, the SIMD path and peak memory.
//!
//! `cargo run --release --example bench_encoder -- MODEL_DIR TEXTS_FILE [BATCH_SIZE] [--words]
//! [--int8] [--shapes=buckets] [--precision=f16|bf16] [--broadcast-mask]`
//!
//! `--int8` runs the linear layers in int8 (`encoder.int8`), `--shapes=buckets` pads batches to
//! bucketed shapes (`encoder.shapes`), `--precision` casts the weights (`encoder.precision`),
//! `--broadcast-mask` builds the attention mask as CUDA does. With any of them, after the timed
//! pass the texts are encoded again with the defaults (exact shapes, f32; not timed) to print the
//! cosine of each embedding to its default one (`cos_min`, `cos_mean`), and the distinct batch
//! shapes of both runs (`shapes`, `shapes_default`).
//! Threads: `RAYON_NUM_THREADS` (burn-flex and its matrix products run on rayon's pool).
//! The allocator is tuned as `epimine` tunes it (`encoder::tune_allocator`) unless
//! `EPIMINE_NO_TUNE_ALLOCATOR` is set, to measure glibc's defaults.

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

/// CPU time (user + system, all threads) of this process so far, in seconds (Linux
/// `/proc/self/stat`, in USER_HZ = 100 ticks a second).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which is in parentheses and may hold spaces).
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(f64::NAN)
    };
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    (ticks(11) + ticks(12)) / 100.0
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let words = args.iter().any(|a| a == "--words");
    let int8 = args.iter().any(|a| a == "--int8");
    let broadcast = args.iter().any(|a| a == "--broadcast-mask");
    let value = |name: &str| {
        args.iter()
            .find_map(|a| a.strip_prefix(&format!("--{name}=")).map(str::to_string))
    };
    let shapes: epimine::encoder::ShapePolicy = value("shapes")
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(epimine::encoder::ShapePolicy::Exact);
    let precision: epimine::encoder::Precision = value("precision")
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or_default();
    let compare = int8
        || broadcast
        || shapes != epimine::encoder::ShapePolicy::Exact
        || precision != epimine::encoder::Precision::F32;
    let pos: Vec<&String> = args.iter().filter(|a| !a.starts_with("--")).collect();
    let (Some(model), Some(file)) = (pos.first(), pos.get(1)) else {
        return Err(
            "usage: bench_encoder MODEL_DIR TEXTS_FILE [BATCH_SIZE] [--words] [--int8] \
             [--shapes=buckets] [--precision=f16|bf16] [--broadcast-mask]"
                .into(),
        );
    };
    let batch: usize = pos.get(2).map(|b| b.parse()).transpose()?.unwrap_or(32);
    if std::env::var_os("EPIMINE_NO_TUNE_ALLOCATOR").is_none() {
        epimine::encoder::tune_allocator();
    }
    let text = std::fs::read_to_string(file)?;
    let texts: Vec<&str> = text.lines().collect();
    let load = || Encoder::<DefaultBackend>::load(&PathBuf::from(model), &default_device());
    let enc = load()?
        .with_batch_size(batch)
        .with_shapes(shapes)
        .with_precision(precision)
        .with_full_bias(!broadcast)
        .with_int8(int8);
    let tokens: usize = texts
        .iter()
        .map(|t| enc.tokenizer().sentence(t).map(|s| s.ids.len()))
        .sum::<Result<usize, _>>()?;
    // Positions the forward passes compute, padding included, in the batches used below.
    let (real, padded) = enc.positions(&[&texts])?;
    assert_eq!(real, tokens, "real positions are the tokens");
    // Warm-up: one batch.
    enc.sentence_embeddings(&texts[..batch.min(texts.len())])?;
    let start = Instant::now();
    let cpu_start = cpu_seconds();
    let mut embeddings = None;
    if words {
        let table = enc.word_vectors(&texts, enc.last_layer())?;
        eprintln!("{} words", table.len());
    } else {
        let v = enc.sentence_embeddings(&texts)?;
        assert_eq!(v.len(), texts.len());
        embeddings = Some(v);
    }
    let seconds = start.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - cpu_start;
    let mut cosine = String::new();
    if let (true, Some(q)) = (compare, embeddings) {
        let reference = load()?
            .with_batch_size(batch)
            .with_shapes(epimine::encoder::ShapePolicy::Exact);
        let f = reference.sentence_embeddings(&texts)?;
        let cos: Vec<f64> = (0..q.len())
            .map(|i| epimine::episodes::termspace::cosine(q.row(i), f.row(i)))
            .collect();
        let min = cos.iter().copied().fold(f64::INFINITY, f64::min);
        let mean = cos.iter().sum::<f64>() / cos.len().max(1) as f64;
        cosine = format!(
            ",\"cos_min\":{min:.7},\"cos_mean\":{mean:.7},\"shapes\":{},\"shapes_default\":{}",
            enc.shapes_seen().len(),
            reference.shapes_seen().len()
        );
    }
    println!(
        "{{\"engine\":\"burn-flex{}{}\",\"simd\":\"{}\",\"texts\":{},\"tokens\":{},\"padding_share\":{:.4},\"seconds\":{:.3},\"cpu_seconds\":{:.2},\"tokens_per_s\":{:.1},\"peak_rss_mib\":{:.1},\"threads\":\"{}\"{}}}",
        if int8 { "-int8" } else { "" },
        if compare {
            format!("-{}-{}", shapes.name(), precision.name())
        } else {
            String::new()
        },
        epimine::encoder::simd_path(),
        texts.len(),
        tokens,
        padded as f64 / real.max(1) as f64 - 1.0,
        seconds,
        cpu,
        tokens as f64 / seconds,
        peak_rss_mib().unwrap_or(f64::NAN),
        std::env::var("RAYON_NUM_THREADS").unwrap_or_else(|_| "all".into()),
        cosine,
    );
    Ok(())
}
