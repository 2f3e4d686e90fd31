//! The background corpus (docs/method.md §1): `bgf(w)`, the number of background documents that
//! contain the whole token w, and `N_bg`, the number of documents.
//!
//! A background is either a text file with one document a line, or a table made once from such
//! a file by `epimine background build` (`term` utf8, `doc_freq` uint32; `N_bg` in the file's
//! metadata under [`N_DOCS_KEY`]) so that a large background is tokenized once and reused.
//!
//! Two names stand for built-in backgrounds ([`resolve`]): `wordfreq`, the default when a run
//! names none, a general-English table made from word frequencies ([`wordfreq`], fetched once
//! into the model cache), and `corpus`, the corpus's own articles ([`from_corpus`]): each article
//! is a document, so a word found in many of the corpus's articles weighs little. With several
//! key events that is their contrast with each other (and an event's episodes then depend on
//! which other events were imported beside it); with one, the event's articles among themselves
//! (its everyday words weigh little, words of some of its articles much). A file of either name
//! is given with its folder (`./wordfreq`).

use std::collections::HashMap;

use arrow_array::{StringArray, UInt32Array};

use crate::storage::{Location, StorageError};
use crate::terms;

mod table;
pub mod wordfreq;

pub use table::{background_schema, write_table, N_DOCS_KEY};

/// The name of the corpus's own articles as the background (`--background corpus`).
pub const CORPUS: &str = "corpus";

/// What a job's `background` names, decoded once where the job is read ([`crate::job::Job`]):
/// every stage receives this, not the string. In a job file and on the command line it is the
/// string it was given (`wordfreq`, `corpus` or a path); an empty string is the default.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(from = "String", into = "String")]
pub enum Source {
    /// General English, the default ([`wordfreq`]).
    #[default]
    Wordfreq,
    /// The corpus's own articles ([`CORPUS`]).
    Corpus,
    /// A general-news text (one document a line) or a `background build` table ([`load`]).
    File(String),
}

impl Source {
    /// `""` or [`wordfreq::NAME`]: the default; [`CORPUS`]: the corpus; anything else a file.
    pub fn parse(spec: &str) -> Self {
        match spec {
            "" | wordfreq::NAME => Source::Wordfreq,
            CORPUS => Source::Corpus,
            file => Source::File(file.to_string()),
        }
    }

    /// What a job file says for it.
    pub fn as_str(&self) -> &str {
        match self {
            Source::Wordfreq => wordfreq::NAME,
            Source::Corpus => CORPUS,
            Source::File(file) => file,
        }
    }
}

impl From<String> for Source {
    fn from(spec: String) -> Self {
        Source::parse(&spec)
    }
}

impl From<&str> for Source {
    fn from(spec: &str) -> Self {
        Source::parse(spec)
    }
}

impl From<Source> for String {
    fn from(source: Source) -> Self {
        source.as_str().to_string()
    }
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Errors of the background boundary.
#[derive(Debug, thiserror::Error)]
pub enum BackgroundError {
    /// Reading or writing failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// A line is not UTF-8.
    #[error("{file}:{line}: invalid UTF-8")]
    Utf8 {
        /// The file.
        file: String,
        /// 1-based line.
        line: usize,
    },
    /// The table lacks its document count or has a bad row.
    #[error("{file}: {reason}")]
    BadTable {
        /// The file.
        file: String,
        /// What is wrong.
        reason: String,
    },
    /// The corpus could not be read as a background.
    #[error(transparent)]
    Corpus(#[from] crate::corpus::CorpusError),
    /// The default background could not be had.
    #[error(transparent)]
    Wordfreq(#[from] wordfreq::WordfreqError),
    /// No documents.
    #[error("{file}: the background has no documents")]
    Empty {
        /// The file.
        file: String,
    },
}

/// A loaded background: the raw documents of a text file, or the counts of a table.
#[derive(Debug, Clone)]
pub enum Background {
    /// One document a line (blank lines are not documents).
    Text(Vec<String>),
    /// Document frequencies and the document count.
    Table {
        /// (term, doc_freq), sorted by term.
        doc_freq: Vec<(String, u32)>,
        /// N_bg.
        n_docs: u64,
    },
}

impl Background {
    /// N_bg.
    pub fn n_docs(&self) -> u64 {
        match self {
            Background::Text(docs) => docs.len() as u64,
            Background::Table { n_docs, .. } => *n_docs,
        }
    }

    /// Document frequencies of the units `unit % peers == index` (lines, or table rows), so that
    /// workers split the tokenizing between them.
    pub fn doc_freq_shard(&self, index: usize, peers: usize) -> HashMap<String, u32> {
        let mut counts: HashMap<String, u32> = HashMap::new();
        match self {
            Background::Text(docs) => {
                for (i, doc) in docs.iter().enumerate() {
                    if crate::sharding::owner(i, peers) == index {
                        for term in terms::distinct_terms(doc) {
                            *counts.entry(term).or_default() += 1;
                        }
                    }
                }
            }
            Background::Table { doc_freq, .. } => {
                for (i, (term, n)) in doc_freq.iter().enumerate() {
                    if crate::sharding::owner(i, peers) == index {
                        counts.insert(term.clone(), *n);
                    }
                }
            }
        }
        counts
    }
}

/// Loads a background from a `.parquet` table or a text file (local, file:// or s3://).
pub async fn load(path: &str) -> Result<Background, BackgroundError> {
    let (dir, name) = Location::parse_file(path, false)?;
    let file = dir.display_child(&name);
    if name.ends_with(".parquet") {
        let (_, kv) = dir.parquet_layout(&name).await?;
        let n_docs = kv
            .iter()
            .find(|(k, _)| k == N_DOCS_KEY)
            .and_then(|(_, v)| v.parse::<u64>().ok())
            .ok_or_else(|| BackgroundError::BadTable {
                file: file.clone(),
                reason: format!("no `{N_DOCS_KEY}` in the file metadata (make it with `epimine background build`)"),
            })?;
        let batches = dir.read_parquet(&name, &background_schema()).await?;
        let mut doc_freq = Vec::new();
        for b in &batches {
            let terms = b.column(0).as_any().downcast_ref::<StringArray>();
            let freqs = b.column(1).as_any().downcast_ref::<UInt32Array>();
            let (Some(terms), Some(freqs)) = (terms, freqs) else {
                return Err(BackgroundError::BadTable {
                    file,
                    reason: "unexpected column types".into(),
                });
            };
            doc_freq.extend(
                terms
                    .iter()
                    .zip(freqs.iter())
                    .filter_map(|(t, f)| Some((t?.to_string(), f?))),
            );
        }
        if n_docs == 0 {
            return Err(BackgroundError::Empty { file });
        }
        return Ok(Background::Table { doc_freq, n_docs });
    }
    let data = dir.get(&name).await?;
    let mut docs = Vec::new();
    for (i, raw) in data.split(|&b| b == b'\n').enumerate() {
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        let line = std::str::from_utf8(raw).map_err(|_| BackgroundError::Utf8 {
            file: file.clone(),
            line: i + 1,
        })?;
        if !line.trim().is_empty() {
            docs.push(line.to_string());
        }
    }
    if docs.is_empty() {
        return Err(BackgroundError::Empty { file });
    }
    Ok(Background::Text(docs))
}

/// The corpus's own articles as the background: one document per article (its segments
/// together), `doc_freq` the number of articles holding each term, read one row group at a time.
///
/// An article counts once per term when its segments lie together in the corpus, as every
/// writer of epimine puts them (`import`, `synth`): segments are taken in file, row group, then
/// (key event, article, segment) order.
pub async fn from_corpus(corpus: &Location) -> Result<Background, BackgroundError> {
    // term → (the last article that counted it, articles holding it).
    let mut counts: HashMap<String, (u64, u32)> = HashMap::new();
    let mut articles: u64 = 0;
    let mut last: Option<(String, u32)> = None;
    for (name, groups) in crate::corpus::segment_files(corpus).await? {
        for group in 0..groups {
            let mut segments = crate::corpus::read_row_group(corpus, &name, group).await?;
            segments.sort_by(|a, b| {
                (&a.key_event, a.doc_id, a.seg_idx).cmp(&(&b.key_event, b.doc_id, b.seg_idx))
            });
            for s in segments {
                let same = last
                    .as_ref()
                    .is_some_and(|(e, d)| *e == s.key_event && *d == s.doc_id);
                if !same {
                    articles += 1;
                    last = Some((s.key_event.clone(), s.doc_id));
                }
                for term in terms::distinct_terms(&s.text) {
                    let entry = counts.entry(term).or_insert((0, 0));
                    if entry.0 != articles {
                        *entry = (articles, entry.1 + 1);
                    }
                }
            }
        }
    }
    if articles == 0 {
        return Err(BackgroundError::Empty {
            file: corpus.display().to_string(),
        });
    }
    let mut doc_freq: Vec<(String, u32)> = counts.into_iter().map(|(t, (_, n))| (t, n)).collect();
    doc_freq.sort();
    Ok(Background::Table {
        doc_freq,
        n_docs: articles,
    })
}

/// `epimine background build`: tokenizes a text background once and writes its table to `out`
/// (a path ending in `.parquet`). Returns (documents, terms).
pub async fn build(text_path: &str, out: &str) -> Result<(u64, usize), BackgroundError> {
    let background = load(text_path).await?;
    let n_docs = background.n_docs();
    let mut doc_freq: Vec<(String, u32)> = background.doc_freq_shard(0, 1).into_iter().collect();
    doc_freq.sort();
    write_table(out, &doc_freq, n_docs, Vec::new()).await?;
    Ok((n_docs, doc_freq.len()))
}

/// The background a [`Source`] names: the general-English default, the corpus's own articles,
/// or a file ([`load`]).
pub async fn resolve(source: &Source, corpus: &Location) -> Result<Background, BackgroundError> {
    match source {
        Source::Wordfreq => {
            let path = wordfreq::resolve().await?;
            load(&path.to_string_lossy()).await
        }
        Source::Corpus => from_corpus(corpus).await,
        Source::File(file) => load(file).await,
    }
}
