//! The commands that compute: `run`, `stats`, `encode`, `demo` and `baseline kmeans|hdbscan`.

use std::fmt;

use super::outcome::{CommandError, CommandOutcome};
use crate::cli;
use crate::encoder::ShapePolicy;
use crate::grouping::density::DensityParams;
use crate::grouping::umap::UmapParams;
use crate::models;
use crate::{baseline, demo as synthetic_demo, encode_file as encoding, eval, stats as term_stats};

/// How `epimine run` ended: process 0 has the run's outcome, other processes none.
pub struct RunFinished(pub Option<crate::run::RunOutcome>);

impl fmt::Display for RunFinished {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Some(outcome) => write!(
                f,
                "{}",
                crate::run_folder::summary::summary(&outcome.report, &outcome.out)
            ),
            None => Ok(()),
        }
    }
}

impl CommandOutcome for RunFinished {
    fn partial(&self) -> bool {
        self.0.as_ref().is_some_and(|o| o.report.partial)
    }
}

/// `epimine run`: partial when some event was skipped or fell back to no-LLM episodes.
pub async fn run(args: cli::RunArgs) -> Result<RunFinished, CommandError> {
    let job = args.job()?;
    let options = crate::run::RunOptions {
        fresh: args.fresh,
        overwrite: args.overwrite,
        run_time: args.run_time,
    };
    let outcome =
        tokio::task::spawn_blocking(move || crate::run::run_with(&job, &options)).await??;
    Ok(RunFinished(outcome))
}

/// What `epimine stats` wrote (process 0; other processes nothing).
pub struct StatsWritten {
    output: Option<term_stats::StatsOutput>,
    out: String,
    secs: f64,
}

impl fmt::Display for StatsWritten {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Some(output) = &self.output else {
            return Ok(());
        };
        let events: std::collections::BTreeSet<&str> =
            output.terms.iter().map(|t| t.key_event.as_str()).collect();
        let salient = output.terms.iter().filter(|t| t.salient).count();
        writeln!(
            f,
            "{} events: {} terms ({} salient), {} pairs in {:.1} s; wrote {}/{{terms,pairs}}.parquet",
            events.len(),
            output.terms.len(),
            salient,
            output.pairs.len(),
            self.secs,
            self.out.trim_end_matches('/')
        )
    }
}

impl CommandOutcome for StatsWritten {}

/// `epimine stats`: the dataflow alone (`--no-vectors`), or with word vectors (a run's job that
/// stops after the term sets).
pub async fn stats(args: cli::StatsArgs) -> Result<StatsWritten, CommandError> {
    let job = (!args.no_vectors).then(|| args.job());
    let settings = args.timely.settings();
    let bg = crate::background::Source::parse(&args.background);
    let (corpus, out) = (args.corpus, args.out);
    // What every process of `stats --no-vectors` must agree on (checked in the handshake).
    let inputs = crate::job::Job {
        corpus: corpus.clone(),
        background: bg.clone(),
        out: out.clone(),
        ..Default::default()
    };
    let fingerprint =
        crate::run::identity::job_fingerprint("stats --no-vectors", &inputs, false).await;
    let started = std::time::Instant::now();
    // The dataflows run their own threads; keep them off the async runtime.
    let shown = out.clone();
    let output = tokio::task::spawn_blocking(move || -> Result<_, CommandError> {
        Ok(match job {
            Some(job) => crate::run::stats_with_vectors(&job)?,
            None => {
                let cluster = settings.resolve()?.with_job(fingerprint);
                cluster.preflight(crate::encoder::CUDA)?;
                term_stats::run(&corpus, &bg, &out, &cluster)?
            }
        })
    })
    .await??;
    Ok(StatsWritten {
        output,
        out: shown,
        secs: started.elapsed().as_secs_f64(),
    })
}

/// What `epimine encode` wrote, and what it took.
pub struct VectorsWritten(pub encoding::EncodeSummary);

impl fmt::Display for VectorsWritten {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = &self.0;
        writeln!(
            f,
            "wrote {} rows ({}-dimensional vectors) to {}",
            s.rows, s.dim, s.out
        )?;
        writeln!(f, "{}", s.timing())
    }
}

impl CommandOutcome for VectorsWritten {}

/// `epimine encode`.
pub async fn encode(args: cli::EncodeArgs) -> Result<VectorsWritten, CommandError> {
    let model = match args.model {
        Some(dir) => dir,
        None => {
            let dir = models::default_model_dir(&models::model_cache(None)?);
            if !models::is_complete(&dir) {
                return Err(CommandError::Usage(format!(
                    "no model at {} (run `epimine models fetch`, or pass --model DIR)",
                    dir.display()
                )));
            }
            dir
        }
    };
    let shapes = args.shapes.unwrap_or_else(ShapePolicy::default_for_build);
    if args.warmup == Some(true) && shapes == ShapePolicy::Exact {
        return Err(CommandError::Usage(
            "--warmup true needs --shapes buckets (exact shapes follow the texts, so there \
             is nothing to warm up)"
                .into(),
        ));
    }
    let options = encoding::EncodeOptions {
        words: args.words,
        layer: args.layer,
        encoder: crate::job::EncoderConfig {
            batch_size: args.batch_size,
            int8: args.int8,
            shapes,
            precision: args.precision,
            warmup: args
                .warmup
                .unwrap_or(crate::encoder::CUDA && shapes == ShapePolicy::Buckets),
            kernel_cache: args.kernel_cache,
            autotune: args.autotune,
            ..Default::default()
        },
    };
    let summary = encoding::encode(&model, &args.input, &args.out, &options).await?;
    Ok(VectorsWritten(summary))
}

/// What `epimine demo` made: its scores, and where the corpus and the run are.
pub struct Demoed {
    outcome: synthetic_demo::DemoOutcome,
    out: String,
}

impl fmt::Display for Demoed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let o = &self.outcome;
        write!(f, "{}", eval::format_report(&o.eval))?;
        writeln!(f)?;
        let episodes: usize = o.report.events.iter().map(|e| e.counts.episodes).sum();
        writeln!(
            f,
            "{} synthetic key events, {episodes} episodes found",
            o.report.events.len()
        )?;
        writeln!(
            f,
            "corpus (segments, labels, planted episodes): {}",
            o.corpus
        )?;
        writeln!(
            f,
            "run outputs: {} (episodes, assignments, episode_articles, left_out, fragments, terms, pairs, lineage, developments .parquet; job.toml; run.json)",
            o.run
        )?;
        writeln!(
            f,
            "next: epimine report --run {} --corpus {} --out {}/report.html",
            o.run,
            o.corpus,
            self.out.trim_end_matches('/')
        )
    }
}

impl CommandOutcome for Demoed {}

/// `epimine demo`.
pub async fn demo(args: cli::DemoArgs) -> Result<Demoed, CommandError> {
    let out = args.out.clone();
    let outcome = tokio::task::spawn_blocking(move || {
        synthetic_demo::demo(
            &args.out,
            &args.model,
            args.events,
            args.docs_per_event,
            args.workers,
        )
    })
    .await??;
    Ok(Demoed { outcome, out })
}

/// What a baseline wrote (its one-line summary).
pub struct BaselineWritten(pub String);

impl fmt::Display for BaselineWritten {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", self.0)
    }
}

impl CommandOutcome for BaselineWritten {}

/// `epimine baseline kmeans`.
pub async fn kmeans(args: cli::KmeansArgs) -> Result<BaselineWritten, CommandError> {
    let outcome = tokio::task::spawn_blocking(move || {
        baseline::kmeans(&args.io.corpus, &args.io.out, &args.io.model, args.seed)
    })
    .await??;
    Ok(BaselineWritten(outcome))
}

/// `epimine baseline hdbscan`.
pub async fn hdbscan(args: cli::HdbscanArgs) -> Result<BaselineWritten, CommandError> {
    let params = DensityParams {
        reduce: args.reduce,
        umap: UmapParams {
            seed: args.seed,
            init: args.init,
            ..Default::default()
        },
        runs: 1,
        min_cluster_size: args.min_cluster_size,
        min_samples: args.min_samples,
    };
    let outcome = tokio::task::spawn_blocking(move || {
        baseline::hdbscan(&args.io.corpus, &args.io.out, &args.io.model, &params)
    })
    .await??;
    Ok(BaselineWritten(outcome))
}
