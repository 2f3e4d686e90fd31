//! The commands: `import` (of files or a dataset folder), `eval`, `report`, `background build`
//! and `synth` call the CLI's own commands (`epimine::commands`) with the arguments the CLI
//! would parse, and return their outcomes; on a thread of their own ([`call`]), interruptible
//! by Ctrl-C. Two keep their own call, for what the CLI has not: the import of an Arrow table
//! (its settings resolved as the CLI resolves them, `Job::resolve_import_over`), and `run`, which
//! is one process whose Ctrl-C stops the run where it is (`run::run_interruptible`), where the
//! CLI's run is a launcher's process stopped by signals. What they return crosses as JSON (the
//! same serialisation as `run.json` and `eval --json`), or as a [`PyTable`].

use std::path::PathBuf;

use epimine::cli;
use epimine::commands;
use epimine::import::articles::{self, ArticleTable, OnError};
use epimine::report as html;
use epimine::run as pipeline;
use epimine::storage::{self, Location};
use epimine::{eval, import};
use pyo3::prelude::*;
use serde_json::json;

use crate::call::{self, until_interrupted};
use crate::errors::{Failure, Kind};
use crate::table::{self, PyTable};

/// A JSON value as text.
fn text(value: serde_json::Value) -> Result<String, Failure> {
    Ok(value.to_string())
}

/// Runs `work` on the output folder `out` as the binary does: a local folder it creates is
/// removed again (when still empty) if the command fails.
fn in_out<T>(out: &str, work: impl FnOnce() -> Result<T, Failure>) -> Result<T, Failure> {
    let created = storage::new_local_folders(out);
    let result = work();
    if result.is_err() {
        storage::remove_empty_folders(&created);
    }
    result
}

/// `epimine import --articles`: `articles` (a file, a folder or a prefix) or `table` (an object
/// with `__arrow_c_stream__`, called `table_name` in messages) into the corpus `out`. Returns
/// the summary as JSON: `segments`, `files`, `rows`, `rejected`, `events` and `summary` (the
/// CLI's table).
#[pyfunction]
#[pyo3(signature = (
    out, *, articles=None, table=None, table_name=None, job=None, key_event_column=None,
    id_column=None, published_column=None, title_column=None, text_column=None,
    theme_column=None, on_error=None, target_chars=None, append=false, progress=None,
    date_format=None, timezone=None
))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn import_articles(
    py: Python<'_>,
    out: String,
    articles: Option<String>,
    table: Option<Bound<'_, PyAny>>,
    table_name: Option<String>,
    job: Option<PathBuf>,
    key_event_column: Option<String>,
    id_column: Option<String>,
    published_column: Option<String>,
    title_column: Option<String>,
    text_column: Option<String>,
    theme_column: Option<String>,
    on_error: Option<String>,
    target_chars: Option<usize>,
    append: bool,
    progress: Option<Py<PyAny>>,
    date_format: Option<String>,
    timezone: Option<String>,
) -> PyResult<String> {
    let args = cli::ImportArgs {
        dataset_dir: None,
        articles,
        out,
        job,
        key_event_column,
        id_column,
        published_column,
        date_format,
        timezone,
        title_column,
        text_column,
        theme_column,
        on_error: on_error_of(py, on_error.as_deref())?,
        target_chars,
        append,
    };
    let Some(source) = table else {
        // Article files: the CLI's own command (`epimine import --articles`).
        if args.articles.is_none() {
            return Err(
                Failure::new(Kind::Input, "no articles: give a path or a table").into_py(py),
            );
        }
        return call::blocking(py, progress, move |interrupt| {
            in_out(&args.out.clone(), || {
                until_interrupted(&interrupt, async {
                    match commands::inputs::import(args).await? {
                        commands::inputs::Imported::Articles { result, .. } => imported(&result),
                        commands::inputs::Imported::Dataset { .. } => Err(Failure::new(
                            Kind::Other,
                            "article files were imported as a dataset folder",
                        )),
                    }
                })
            })
        });
    };
    // An Arrow table: the CLI has none, so the table's import is called here, with the settings
    // resolved as the CLI resolves them: an append starts from the corpus's own settings (its
    // first import's), the job file and the arguments over them.
    let saved = if append {
        saved_import_config(py, &args.out)?
    } else {
        None
    };
    let config = args
        .import_config_over(saved)
        .map_err(|e| Failure::from(e).into_py(py))?;
    let out = args.out;
    let (schema, batches) = table::from_stream(&source)?;
    let table = ArticleTable {
        name: table_name.unwrap_or_else(|| "table".into()),
        schema,
        batches,
    };
    call::blocking(py, progress, move |interrupt| {
        in_out(&out, || {
            until_interrupted(&interrupt, async {
                let loc = Location::parse(&out, true)?;
                let result = if append {
                    articles::import_table_append(&table, &loc, &config).await?
                } else {
                    articles::import_table(&table, &loc, &config).await?
                };
                imported(&result)
            })
        })
    })
}

/// What an import of articles returns to Python, as JSON.
fn imported(result: &articles::ArticlesImport) -> Result<String, Failure> {
    text(json!({
        "segments": result.segments,
        "files": result.files,
        "rows": result.rows,
        "rejected": result.rejected.len(),
        "events": result.events,
        "summary": articles::format_summary(result),
    }))
}

/// The arguments of `epimine import` for the dataset folder `dataset_dir` into `out`, every other
/// setting unset.
fn dataset_args(dataset_dir: String, out: String) -> cli::ImportArgs {
    cli::ImportArgs {
        dataset_dir: Some(dataset_dir),
        articles: None,
        out,
        job: None,
        key_event_column: None,
        id_column: None,
        published_column: None,
        date_format: None,
        timezone: None,
        title_column: None,
        text_column: None,
        theme_column: None,
        on_error: None,
        target_chars: None,
        append: false,
    }
}

/// `on_error` as given to `import_articles`: `fail`, `skip` or none.
fn on_error_of(py: Python<'_>, on_error: Option<&str>) -> PyResult<Option<OnError>> {
    match on_error {
        None => Ok(None),
        Some("fail") => Ok(Some(OnError::Fail)),
        Some("skip") => Ok(Some(OnError::Skip)),
        Some(other) => Err(Failure::new(
            Kind::Input,
            format!("on_error: `{other}` is neither `fail` nor `skip`"),
        )
        .into_py(py)),
    }
}

/// The import settings saved in the corpus `out` by its first import (none when it has none).
fn saved_import_config(py: Python<'_>, out: &str) -> PyResult<Option<articles::ImportConfig>> {
    let runtime = epimine::runtime::current_thread()
        .map_err(|e| Failure::new(Kind::Storage, e.to_string()).into_py(py))?;
    runtime
        .block_on(async {
            // A corpus that is not there: the append itself says so.
            let Ok(loc) = Location::parse(out, false) else {
                return Ok(None);
            };
            articles::saved_config(&loc).await.map_err(Failure::from)
        })
        .map_err(|e: Failure| e.into_py(py))
}

/// `epimine import DATASET_DIR`: a dataset folder into the corpus `out`. Returns `events` and
/// `summary` (the CLI's table) as JSON.
#[pyfunction]
#[pyo3(signature = (dataset_dir, out, *, progress=None))]
pub(crate) fn import_dataset(
    py: Python<'_>,
    dataset_dir: String,
    out: String,
    progress: Option<Py<PyAny>>,
) -> PyResult<String> {
    call::blocking(py, progress, move |interrupt| {
        in_out(&out.clone(), || {
            let args = dataset_args(dataset_dir, out);
            until_interrupted(&interrupt, async {
                match commands::inputs::import(args).await? {
                    commands::inputs::Imported::Dataset { events, .. } => text(json!({
                        "summary": import::format_summary(&events),
                        "events": events,
                    })),
                    commands::inputs::Imported::Articles { .. } => Err(Failure::new(
                        Kind::Other,
                        "a dataset folder was imported as article files",
                    )),
                }
            })
        })
    })
}

/// `epimine run`, in this process alone (`workers` threads): the job file, then the flags,
/// then `sets` (`key=value`), resolved as the CLI resolves it (`Job::resolve`). Returns
/// `run.json`'s content and where the outputs are, as JSON (`{"out": …, "report": …}`).
#[pyfunction]
#[pyo3(signature = (
    *, job=None, corpus=None, background=None, out=None, model=None, sets=Vec::new(),
    workers=None, fresh=false, overwrite=false, run_time=None, progress=None
))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn run(
    py: Python<'_>,
    job: Option<PathBuf>,
    corpus: Option<String>,
    background: Option<String>,
    out: Option<String>,
    model: Option<String>,
    sets: Vec<String>,
    workers: Option<usize>,
    fresh: bool,
    overwrite: bool,
    run_time: Option<String>,
    progress: Option<Py<PyAny>>,
) -> PyResult<String> {
    let run_time = match run_time.as_deref().map(cli::run_time) {
        None => None,
        Some(Ok(ms)) => Some(ms),
        Some(Err(e)) => return Err(Failure::new(Kind::Input, format!("run_time: {e}")).into_py(py)),
    };
    // One process: several are the CLI's (a launcher, a hostfile).
    let overrides = epimine::job::Overrides {
        corpus,
        background,
        out,
        model,
        workers,
        processes: Some(1),
        process: Some(0),
        hostfile: None,
    };
    let job = epimine::job::Job::resolve(job.as_deref(), overrides, &sets)
        .map_err(|e| Failure::from(e).into_py(py))?;
    let options = pipeline::RunOptions {
        fresh,
        overwrite,
        run_time,
    };
    // As the binary does before it encodes (process-wide: only once a run is asked for).
    epimine::encoder::tune_allocator();
    call::blocking(py, progress, move |interrupt| {
        in_out(&job.out, || {
            let outcome = pipeline::run_interruptible(&job, &options, &interrupt)?;
            let outcome = outcome.ok_or_else(|| {
                Failure::new(Kind::Other, "the run returned no outcome in process 0")
            })?;
            let summary = epimine::run_folder::summary::summary(&outcome.report, &outcome.out);
            text(json!({"out": outcome.out, "report": outcome.report, "summary": summary}))
        })
    })
}

/// `epimine eval --json`: the scores as JSON, plus `text` (the CLI's table).
#[pyfunction]
#[pyo3(signature = (corpus, run, k=eval::DEFAULT_K, *, progress=None))]
pub(crate) fn evaluate(
    py: Python<'_>,
    corpus: String,
    run: String,
    k: usize,
    progress: Option<Py<PyAny>>,
) -> PyResult<String> {
    let args = cli::EvalArgs {
        corpus,
        run,
        k,
        json: false,
    };
    call::blocking(py, progress, move |interrupt| {
        until_interrupted(&interrupt, async {
            let scores = commands::results::eval(args).await?;
            text(json!({"report": scores.report(), "text": scores.to_string()}))
        })
    })
}

/// `epimine report`: the HTML page; returns what was written as JSON (`location`, `events`,
/// `episodes`, `bytes`).
#[pyfunction]
#[pyo3(signature = (
    run, corpus, out, *, top_segments=html::DEFAULT_TOP_SEGMENTS, order="rank".to_string(),
    trial=0, progress=None
))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn report(
    py: Python<'_>,
    run: String,
    corpus: String,
    out: String,
    top_segments: usize,
    order: String,
    trial: u32,
    progress: Option<Py<PyAny>>,
) -> PyResult<String> {
    let args = cli::ReportArgs {
        run,
        corpus,
        out,
        top_segments,
        order,
        trial,
    };
    call::blocking(py, progress, move |interrupt| {
        until_interrupted(&interrupt, async {
            let w = commands::results::report(args).await?.0;
            text(json!({
                "location": w.location,
                "events": w.events,
                "episodes": w.episodes,
                "bytes": w.bytes,
            }))
        })
    })
}

/// `epimine background build`: returns (documents, terms).
#[pyfunction]
#[pyo3(signature = (text, out, *, progress=None))]
pub(crate) fn build_background(
    py: Python<'_>,
    text: String,
    out: String,
    progress: Option<Py<PyAny>>,
) -> PyResult<(u64, usize)> {
    let args = cli::BackgroundBuildArgs { text, out };
    call::blocking(py, progress, move |interrupt| {
        until_interrupted(&interrupt, async {
            let built = commands::inputs::background_build(args).await?;
            Ok::<_, Failure>((built.docs, built.terms))
        })
    })
}

/// `epimine synth`: a synthetic corpus with planted episodes (and `background.txt`) in `out`.
/// Returns (segments, planted episodes).
#[pyfunction]
#[pyo3(signature = (out, *, events=4, docs_per_event=40, seed=7, progress=None))]
pub(crate) fn synth(
    py: Python<'_>,
    out: String,
    events: usize,
    docs_per_event: usize,
    seed: u64,
    progress: Option<Py<PyAny>>,
) -> PyResult<(usize, usize)> {
    call::blocking(py, progress, move |interrupt| {
        in_out(&out.clone(), || {
            let args = cli::SynthArgs {
                events,
                docs_per_event,
                seed,
                out,
            };
            until_interrupted(&interrupt, async {
                let made = commands::inputs::synth(args).await?;
                Ok::<_, Failure>((made.segments, made.planted))
            })
        })
    })
}

/// The tables (`*.parquet`) directly in a folder, sorted.
#[pyfunction]
pub(crate) fn list_tables(py: Python<'_>, location: String) -> PyResult<Vec<String>> {
    call::blocking(py, None, move |interrupt| {
        until_interrupted(&interrupt, async {
            let loc = Location::parse(&location, false)?;
            let mut names: Vec<String> = loc
                .list()
                .await?
                .into_iter()
                .filter(|n| !n.contains('/') && n.ends_with(".parquet"))
                .collect();
            names.sort();
            Ok::<_, Failure>(names)
        })
    })
}

/// A corpus's table `name` over all its batches: the file of it beside each segments file of
/// the folder `location` (`epimine::corpus::beside`: `<name>.parquet`, `<name>-<n>.parquet` of
/// an `import --append`), read whole and joined in the order a run reads the segments files.
#[pyfunction]
pub(crate) fn read_batches(py: Python<'_>, location: String, name: String) -> PyResult<PyTable> {
    call::blocking(py, None, move |interrupt| {
        until_interrupted(&interrupt, async {
            let loc = Location::parse(&location, false)?;
            let mut listed = loc.list().await?;
            listed.sort();
            let names: Vec<String> = listed
                .iter()
                .filter(|n| epimine::corpus::is_segments_file(n))
                .filter_map(|n| epimine::corpus::beside(n, &name))
                .filter(|n| listed.binary_search(n).is_ok())
                .collect();
            let mut joined: Option<PyTable> = None;
            for n in &names {
                let t = table::from_parquet(&loc.display_child(n), loc.get(n).await?)?;
                match &mut joined {
                    None => joined = Some(t),
                    Some(j) if j.schema == t.schema => j.batches.extend(t.batches),
                    Some(_) => {
                        return Err(Failure::new(
                            Kind::Input,
                            format!(
                                "{}: its columns are not those of {}",
                                loc.display_child(n),
                                loc.display_child(&names[0])
                            ),
                        ))
                    }
                }
            }
            joined.ok_or_else(|| {
                Failure::new(
                    Kind::Input,
                    format!(
                        "{}: not found",
                        loc.display_child(&format!("{name}.parquet"))
                    ),
                )
            })
        })
    })
}

/// The table `name` (a file name) of the folder `location`, read whole.
#[pyfunction]
pub(crate) fn read_table(py: Python<'_>, location: String, name: String) -> PyResult<PyTable> {
    call::blocking(py, None, move |interrupt| {
        until_interrupted(&interrupt, async {
            let loc = Location::parse(&location, false)?;
            let data = loc.get(&name).await?;
            table::from_parquet(&loc.display_child(&name), data)
        })
    })
}

/// The `run.json` of the run in `location` as text, checked as `epimine eval` checks it
/// (present, and every file it lists with its sha256); `None` for a folder of tables without
/// one (a baseline's).
#[pyfunction]
pub(crate) fn open_run(py: Python<'_>, location: String) -> PyResult<Option<String>> {
    use epimine::run_folder::commit::{self, Verified};
    call::blocking(py, None, move |interrupt| {
        until_interrupted(&interrupt, async {
            let loc = Location::parse(&location, false)?;
            match commit::verify(&loc).await? {
                Verified::NotARun => Ok(None),
                Verified::Committed(_) => {
                    let bytes = loc.get(commit::MANIFEST).await?;
                    Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
                }
            }
        })
    })
}
