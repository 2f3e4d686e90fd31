//! `epimine baseline kmeans`: the paper's K-means baseline (appendix, "K-means (given N)"): per
//! key event, k-means with k = its number of gold episodes over the same sentence embeddings
//! `epimine run` uses; each cluster is an episode, its segments ranked by distance to the
//! centroid. linfa-clustering's k-means with a fixed seed (Xoshiro256+), so runs repeat.

use std::collections::BTreeMap;

use linfa::prelude::*;
use linfa_clustering::KMeans;
use ndarray::Array2;
use rand_xoshiro::rand_core::SeedableRng;
use rand_xoshiro::Xoshiro256Plus;

use crate::encoder::{self, DefaultBackend, Encoder};
use crate::run::{resolve_model, RunError};
use crate::storage::Location;
use crate::tables::{Assignment, Episode, GoldEpisode, Segment};

/// Runs the baseline and writes `episodes.parquet` and `assignments.parquet` under `out`.
/// Returns a one-line summary.
pub fn kmeans(corpus: &str, out: &str, model: &str, seed: u64) -> Result<String, RunError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| RunError::Model(e.to_string()))?;
    let corpus = Location::parse(corpus, false)?;
    let segments: Vec<Segment> = runtime.block_on(corpus.read_table())?;
    let gold: Vec<GoldEpisode> = runtime.block_on(corpus.read_table())?;
    let model_dir = runtime.block_on(resolve_model(model))?;
    let encoder = Encoder::<DefaultBackend>::load(&model_dir, &encoder::default_device())?;
    let mut k_of: BTreeMap<&str, usize> = BTreeMap::new();
    for g in &gold {
        *k_of.entry(g.key_event.as_str()).or_default() += 1;
    }
    let mut by_event: BTreeMap<&str, Vec<&Segment>> = BTreeMap::new();
    for s in &segments {
        by_event.entry(s.key_event.as_str()).or_default().push(s);
    }
    let (mut episodes, mut assignments, mut skipped) = (Vec::new(), Vec::new(), Vec::new());
    let bar = crate::progress::Bar::start("k-means", by_event.len() as u64);
    for (event, segs) in &by_event {
        bar.set_message(event);
        let k = k_of.get(event).copied().unwrap_or(0);
        if k == 0 || segs.len() < k {
            skipped.push(format!("{event} (k = {k}, {} segments)", segs.len()));
            bar.inc();
            continue;
        }
        let texts: Vec<&str> = segs.iter().map(|s| s.text.as_str()).collect();
        let vectors = encoder.sentence_embeddings(&texts)?;
        let records = Array2::from_shape_fn((vectors.len(), vectors.dim), |(i, j)| {
            f64::from(vectors.row(i)[j])
        });
        let dataset = DatasetBase::from(records.clone());
        let fitted = KMeans::params_with_rng(k, Xoshiro256Plus::seed_from_u64(seed))
            .max_n_iterations(300)
            .tolerance(1e-6)
            .fit(&dataset)
            .map_err(|e| RunError::Model(format!("{event}: k-means: {e}")))?;
        let labels = fitted.predict(&records);
        let centroids = fitted.centroids();
        let mut members: Vec<Vec<(f64, usize)>> = vec![Vec::new(); k];
        for (i, &c) in labels.iter().enumerate() {
            let d: f64 = records
                .row(i)
                .iter()
                .zip(centroids.row(c).iter())
                .map(|(a, b)| (a - b) * (a - b))
                .sum::<f64>()
                .sqrt();
            members[c].push((d, i));
        }
        for (c, mut m) in members.into_iter().enumerate() {
            m.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            episodes.push(Episode {
                key_event: event.to_string(),
                trial: 0,
                episode_id: c as u32,
                title: format!("k-means cluster {c}"),
                title_fields: Vec::new(),
                keywords: Vec::new(),
                example_sentences: Vec::new(),
                n_segments: m.len() as u32,
                source: "kmeans".into(),
            });
            for (rank, (d, i)) in m.into_iter().enumerate() {
                assignments.push(Assignment {
                    key_event: event.to_string(),
                    trial: 0,
                    episode_id: c as u32,
                    doc_id: segs[i].doc_id,
                    seg_idx: segs[i].seg_idx,
                    rank: rank as u32,
                    confidence: 1.0 / (1.0 + d),
                });
            }
        }
        bar.inc();
    }
    bar.finish();
    let out = Location::parse(out, true)?;
    runtime.block_on(async {
        out.write_table(&episodes).await?;
        out.write_table(&assignments).await
    })?;
    let mut summary = format!(
        "{} events, {} k-means episodes; wrote {}/{{episodes,assignments}}.parquet",
        by_event.len() - skipped.len(),
        episodes.len(),
        out.display()
    );
    for s in skipped {
        summary.push_str(&format!("\nskipped {s}: no gold episode count"));
    }
    Ok(summary)
}
