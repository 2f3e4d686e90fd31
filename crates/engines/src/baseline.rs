//! `epimine baseline …`: peers that `epimine eval` scores like a run, on the same sentence
//! embeddings `epimine run` uses.
//!
//! - `kmeans`: the paper's K-means baseline (appendix, "K-means (given N)"): per key event,
//!   k-means with k = its number of gold episodes; each cluster is an episode, its segments
//!   ranked by distance to the centroid. linfa-clustering's k-means with a fixed seed
//!   (Xoshiro256+), so runs repeat.
//! - `hdbscan`: density clusters per key event ([`crate::grouping::density`]), noise unassigned.

use std::collections::BTreeMap;

use linfa::prelude::*;
use linfa_clustering::KMeans;
use ndarray::Array2;
use rand_xoshiro::rand_core::SeedableRng;
use rand_xoshiro::Xoshiro256Plus;

use crate::encoder::{self, DefaultBackend, Encoder, Vectors};
use crate::grouping::density::{self, DensityParams};
use crate::models::{resolve_model, ResolveError};
use crate::storage::{Location, StorageError};
use crate::tables::{Assignment, Episode, GoldEpisode, Segment, Table};

/// Errors of the baselines.
#[derive(Debug, thiserror::Error)]
pub enum BaselineError {
    /// Reading or writing failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// The model could not be found or fetched.
    #[error("model: {0}")]
    Resolve(#[from] ResolveError),
    /// The encoder failed.
    #[error("encoder: {0}")]
    Encoder(#[from] encoder::EncoderError),
    /// The clustering failed.
    #[error("model: {0}")]
    Model(String),
    /// No async runtime could be started.
    #[error(transparent)]
    Runtime(#[from] crate::runtime::RuntimeError),
    /// The density settings are invalid.
    #[error(transparent)]
    Density(#[from] density::DensityError),
    /// The corpus is not one (segments that share a key).
    #[error("corpus: {0}")]
    Corpus(#[from] crate::corpus::CorpusError),
    /// `kmeans` on a corpus without gold episodes.
    #[error("{0}: no gold_episodes.parquet: `baseline kmeans` takes k from each event's gold episode count, which only a labelled corpus has (a dataset folder's import, or `synth`); `baseline hdbscan` needs none")]
    NoGold(String),
}

/// One baseline's clusters of one event: each cluster's members (indices into the event's
/// segments) most representative first, with a confidence each. `Err`: the event is skipped,
/// with the reason.
type Clusters = Result<Vec<Vec<(usize, f64)>>, String>;

/// A corpus's segments (each key once) and gold episodes; a corpus without gold episodes has
/// none, which only a baseline that takes k from them refuses.
fn read_corpus(
    runtime: &tokio::runtime::Runtime,
    corpus: &str,
    needs_gold: bool,
) -> Result<(Vec<Segment>, Vec<GoldEpisode>), BaselineError> {
    let corpus = Location::parse(corpus, false).map_err(crate::corpus::CorpusError::from)?;
    let segments = runtime.block_on(crate::corpus::read_segments(&corpus))?;
    let gold = if runtime.block_on(corpus.exists(&GoldEpisode::file_name()))? {
        runtime.block_on(corpus.read_table())?
    } else if needs_gold {
        return Err(BaselineError::NoGold(corpus.display().to_string()));
    } else {
        Vec::new()
    };
    Ok((segments, gold))
}

/// Runs the baseline and writes `episodes.parquet`, `assignments.parquet` and
/// `episode_articles.parquet` under `out`. Returns a one-line summary.
pub fn kmeans(corpus: &str, out: &str, model: &str, seed: u64) -> Result<String, BaselineError> {
    per_event(
        corpus,
        out,
        model,
        Baseline {
            source: "kmeans",
            needs_gold: true,
        },
        |event, segs, gold, vectors| {
            let k = gold;
            if k == 0 || segs < k {
                return Ok(Err(format!(
                    "k = {k}, {segs} segments: no gold episode count"
                )));
            }
            let vectors = vectors()?;
            let records = Array2::from_shape_fn((vectors.len(), vectors.dim), |(i, j)| {
                f64::from(vectors.row(i)[j])
            });
            let dataset = DatasetBase::from(records.clone());
            let fitted = KMeans::params_with_rng(k, Xoshiro256Plus::seed_from_u64(seed))
                .max_n_iterations(300)
                .tolerance(1e-6)
                .fit(&dataset)
                .map_err(|e| BaselineError::Model(format!("{event}: k-means: {e}")))?;
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
            Ok(Ok(members
                .into_iter()
                .map(|mut m| {
                    m.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
                    m.into_iter().map(|(d, i)| (i, 1.0 / (1.0 + d))).collect()
                })
                .collect()))
        },
    )
}

/// `epimine baseline hdbscan`: HDBSCAN over the UMAP layout of each event's sentence embeddings
/// (BERTopic's clustering; `params.reduce` can skip the UMAP step); noise stays unassigned, each
/// cluster's segments are ranked by membership ([`crate::grouping::density`]). Needs no gold episode
/// count.
pub fn hdbscan(
    corpus: &str,
    out: &str,
    model: &str,
    params: &DensityParams,
) -> Result<String, BaselineError> {
    params.validate()?;
    let baseline = Baseline {
        source: "hdbscan",
        needs_gold: false,
    };
    per_event(corpus, out, model, baseline, |_, _, _, vectors| {
        let vectors = vectors()?;
        let rows: Vec<Vec<f32>> = (0..vectors.len())
            .map(|i| vectors.row(i).to_vec())
            .collect();
        match density::clusters(&rows, params) {
            Ok(found) => Ok(Ok(found
                .into_iter()
                .map(|c| c.members.into_iter().zip(c.membership).collect())
                .collect())),
            Err(e) => Ok(Err(e.to_string())),
        }
    })
}

/// Which baseline: its name (the episodes' `source`), and whether it needs the corpus's gold
/// episode counts.
struct Baseline {
    source: &'static str,
    needs_gold: bool,
}

/// One cluster of a baseline as an episode row and its assignments: `members` are (segment
/// index in `segs`, membership) in rank order.
fn cluster_rows(
    event: &str,
    source: &str,
    segs: &[&Segment],
    c: u32,
    members: Vec<(usize, f64)>,
) -> (Episode, Vec<Assignment>) {
    let span = crate::tables::EpisodeSpan::of(
        members
            .iter()
            .map(|&(i, _)| (segs[i].doc_id, segs[i].doc_date)),
    );
    let episode = Episode {
        key_event: event.to_string(),
        trial: 0,
        episode_id: c,
        stable_id: None,
        status: None,
        title: format!("{source} cluster {c}"),
        title_fields: Vec::new(),
        keywords: Vec::new(),
        example_sentences: Vec::new(),
        n_segments: members.len() as u32,
        source: source.into(),
        n_articles: span.n_articles,
        first_date: span.first_date,
        peak_date: span.peak_date,
        last_date: span.last_date,
        phase_id: c,
        phase_stable_id: None,
    };
    let rows = members
        .into_iter()
        .enumerate()
        .map(|(rank, (i, confidence))| Assignment {
            key_event: event.to_string(),
            trial: 0,
            episode_id: c,
            stable_id: None,
            status: None,
            doc_id: segs[i].doc_id,
            seg_idx: segs[i].seg_idx,
            rank: rank as u32,
            confidence,
        })
        .collect();
    (episode, rows)
}

/// The baselines' shared frame: reads the corpus, encodes each event's segments when its
/// clustering asks for them (`vectors()`), and writes every cluster as an episode with its
/// members ranked as given, and each episode's articles. `cluster(event, segments, gold
/// episodes, vectors)`; a corpus without gold episodes gives 0 for every event.
fn per_event<F>(
    corpus: &str,
    out: &str,
    model: &str,
    baseline: Baseline,
    mut cluster: F,
) -> Result<String, BaselineError>
where
    F: FnMut(
        &str,
        usize,
        usize,
        &dyn Fn() -> Result<Vectors, BaselineError>,
    ) -> Result<Clusters, BaselineError>,
{
    let runtime = crate::runtime::multi_thread()?;
    let (segments, gold) = read_corpus(&runtime, corpus, baseline.needs_gold)?;
    let out = Location::parse(out, true)?;
    let source = baseline.source;
    let model_dir = runtime.block_on(resolve_model(model))?;
    encoder::check_device().map_err(encoder::EncoderError::NoGpu)?;
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
    let mut articles = Vec::new();
    let bar = crate::progress::Bar::start(source, by_event.len() as u64);
    for (event, segs) in &by_event {
        bar.set_message(event);
        let texts: Vec<&str> = segs.iter().map(|s| s.text.as_str()).collect();
        let vectors =
            || -> Result<Vectors, BaselineError> { Ok(encoder.sentence_embeddings(&texts)?) };
        let gold = k_of.get(event).copied().unwrap_or(0);
        let clusters = match cluster(event, segs.len(), gold, &vectors)? {
            Ok(c) => c,
            Err(why) => {
                skipped.push(format!("{event}: {why}"));
                bar.inc();
                continue;
            }
        };
        let (first_episode, first_assignment) = (episodes.len(), assignments.len());
        for (c, members) in clusters.into_iter().enumerate() {
            let (episode, rows) = cluster_rows(event, source, segs, c as u32, members);
            episodes.push(episode);
            assignments.extend(rows);
        }
        let owned: Vec<Segment> = segs.iter().map(|s| (*s).clone()).collect();
        articles.extend(crate::coverage::episode_articles(
            &owned,
            &crate::corpus::ArticleFacts::default(),
            &episodes[first_episode..],
            &assignments[first_assignment..],
        ));
        bar.inc();
    }
    bar.finish();
    runtime.block_on(async {
        out.write_table(&episodes).await?;
        out.write_table(&assignments).await?;
        out.write_table(&articles).await
    })?;
    let mut summary = format!(
        "{} events, {} {source} episodes; wrote {}/{{episodes,assignments,episode_articles}}.parquet",
        by_event.len() - skipped.len(),
        episodes.len(),
        out.display()
    );
    for s in skipped {
        summary.push_str(&format!("\nskipped {s}"));
    }
    Ok(summary)
}
