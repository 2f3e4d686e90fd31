//! `epimine stats`: salience and discriminative co-occurrence of many key events at once
//! (docs/method.md §1–§2, paper eqs. 1 and 3), as a timely / differential dataflow over threads,
//! processes and machines.
//!
//! Outputs `<out>/terms.parquet` and `<out>/pairs.parquet`, byte-identical whatever the number of
//! workers and processes: all results are gathered at worker 0 and sorted by strings before
//! they are written. `epimine run` takes the terms spread instead ([`compute_by_event`]): each
//! event's on one worker, never all in one process.

pub mod dataflow;
pub mod formulas;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use crate::background::{self, Background, BackgroundError};
use crate::corpus::{stream_shard, CorpusError};
use crate::progress::Stage;
use crate::sharding;
use crate::storage::{Location, StorageError};
use crate::tables::{Pair, Segment, Term};
pub use crate::topology::Cluster;

use dataflow::{Deliver, Delivered, Gathered, NamedTerm};

/// Errors of the statistics job.
#[derive(Debug, thiserror::Error)]
pub enum StatsError {
    /// Reading or writing failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// The background could not be loaded.
    #[error("background: {0}")]
    Background(#[from] BackgroundError),
    /// The corpus could not be read.
    #[error("corpus: {0}")]
    Corpus(#[from] CorpusError),
    /// The cluster layout is invalid.
    #[error(transparent)]
    Cluster(#[from] crate::topology::ClusterError),
    /// Timely could not start or a worker panicked.
    #[error("dataflow: {0}")]
    Timely(String),
    /// No async runtime could be started.
    #[error(transparent)]
    Runtime(#[from] crate::runtime::RuntimeError),
    /// Some worker (maybe in another process) failed to read its input; nothing was written.
    #[error("{0} worker(s) failed to read their input; nothing was written (see their errors)")]
    WorkersFailed(isize),
    /// Two strings share a 64-bit id.
    #[error("hash collision between `{0}` and `{1}`; please report it")]
    Collision(String, String),
}

/// One round of input: a corpus whose segments are added (+1) or retracted (−1).
#[derive(Debug, Clone)]
pub struct Round {
    /// The corpus location (holding `segments*.parquet`).
    pub corpus: String,
    /// +1 to add, −1 to retract.
    pub sign: isize,
}

/// What the statistics job computed (process 0 only).
#[derive(Debug, Clone, Default)]
pub struct StatsOutput {
    /// Every vocabulary term of every event, sorted by (key_event, term).
    pub terms: Vec<Term>,
    /// Every co-occurring salient pair, sorted by (key_event, a, b), a < b.
    pub pairs: Vec<Pair>,
}

/// Runs the statistics dataflow over `rounds` with `background` on the cluster layout `cluster`.
/// Returns the results in the process that hosts worker 0, `None` in the others.
pub fn compute(
    rounds: &[Round],
    background: &Background,
    cluster: &Cluster,
) -> Result<Option<StatsOutput>, StatsError> {
    let delivered = execute(rounds, background, cluster, Deliver::Gather)?;
    let gathered = delivered.into_iter().find_map(|(_, d)| match d {
        Delivered::Gathered(g) => Some(g),
        Delivered::Share(_) => None,
    });
    match gathered {
        Some(g) if g.failures > 0 => Err(StatsError::WorkersFailed(g.failures)),
        Some(g) => to_rows(g).map(Some),
        None => Ok(None),
    }
}

/// This process's workers' shares of the terms (no pairs): worker index → event → the event's
/// terms sorted by term, with synonym groups as [`compute`] numbers them. Every event's terms
/// are on exactly one worker ([`sharding::stats_worker`]), so no process holds more than its share
/// (`epimine run` sends each share on to the events' owners). The same rows as [`compute`]'s.
pub fn compute_by_event(
    rounds: &[Round],
    background: &Background,
    cluster: &Cluster,
) -> Result<BTreeMap<usize, BTreeMap<String, Vec<Term>>>, StatsError> {
    let delivered = execute(rounds, background, cluster, Deliver::ByEvent)?;
    let mut shares = BTreeMap::new();
    for (worker, d) in delivered {
        let Delivered::Share(share) = d else { continue };
        if share.failures > 0 {
            return Err(StatsError::WorkersFailed(share.failures));
        }
        shares.insert(worker, share_rows(share.terms)?);
    }
    Ok(shares)
}

/// One worker's named terms as rows by event (a term id with two strings is a collision).
fn share_rows(terms: Vec<NamedTerm>) -> Result<BTreeMap<String, Vec<Term>>, StatsError> {
    let mut seen: HashMap<(u64, u64), String> = HashMap::new();
    let mut by_event: BTreeMap<String, Vec<Term>> = BTreeMap::new();
    for ((e, event), term, (t, freq, bg_freq, sal, salient)) in terms {
        if let Some(old) = seen.insert((e, t), term.clone()) {
            return Err(StatsError::Collision(old, term));
        }
        by_event.entry(event.clone()).or_default().push(term_row(
            event,
            term,
            (t, freq, bg_freq, sal, salient),
        ));
    }
    for rows in by_event.values_mut() {
        rows.sort_by(|a, b| a.term.cmp(&b.term));
        number_groups(rows);
    }
    Ok(by_event)
}

/// A term's row from its statistics (no expansion, no group yet).
fn term_row(key_event: String, term: String, stat: dataflow::TermStat) -> Term {
    let (_, freq, bg_freq, sal, salient) = stat;
    Term {
        key_event,
        term,
        freq,
        bg_freq,
        salience: f64::from_bits(sal),
        salient,
        expanded_from: None,
        group: None,
    }
}

/// Synonym groups without word vectors, for one event's terms: each salient term is its own
/// group, numbered by descending salience (ties by term).
fn number_groups(rows: &mut [Term]) {
    let mut salient: Vec<usize> = (0..rows.len()).filter(|&i| rows[i].salient).collect();
    salient.sort_by(|&a, &b| {
        rows[b]
            .salience
            .total_cmp(&rows[a].salience)
            .then_with(|| rows[a].term.cmp(&rows[b].term))
    });
    for (group, i) in salient.into_iter().enumerate() {
        rows[i].group = Some(group as u32);
    }
}

/// The dataflow on every worker of this process: (worker index, what it delivered).
fn execute(
    rounds: &[Round],
    background: &Background,
    cluster: &Cluster,
    deliver: Deliver,
) -> Result<Vec<(usize, Delivered)>, StatsError> {
    let rounds = Arc::new(rounds.to_vec());
    let background = Arc::new(background.clone());
    let errors: Arc<Mutex<Vec<StatsError>>> = Arc::new(Mutex::new(Vec::new()));
    let worker_errors = Arc::clone(&errors);
    let results = crate::topology::execute(cluster, move |worker| {
        let (index, peers) = (worker.index(), worker.peers());
        // A worker with no runtime reads nothing and says so in the dataflow, like a worker
        // whose input fails, so that every worker still takes part and the run ends.
        let runtime = crate::runtime::current_thread();
        let n_bg = background.n_docs();
        let bg: HashMap<sharding::TermId, u32> = background
            .doc_freq_shard(index, peers)
            .into_iter()
            .map(|(t, n)| (sharding::term_id(&t), n))
            .collect();
        // Each round is streamed into the dataflow one row group at a time; a worker that
        // fails to read reports it in the dataflow, and the results are then refused.
        let started = std::time::Instant::now();
        let mut read = |round: usize, feed: &mut dyn FnMut(&[Segment])| -> bool {
            let runtime = match &runtime {
                Ok(runtime) => runtime,
                Err(e) => {
                    tracing::debug!(worker = index, "{e}");
                    worker_errors
                        .lock()
                        .expect("error list")
                        .push(e.clone().into());
                    return false;
                }
            };
            match stream_shard(runtime, &rounds[round].corpus, index, peers, feed) {
                Ok(()) => true,
                Err(e) => {
                    // Reported once, by the caller (every worker may fail the same way).
                    tracing::debug!(worker = index, "{e}");
                    worker_errors.lock().expect("error list").push(e.into());
                    false
                }
            }
        };
        let signs: Vec<isize> = rounds.iter().map(|r| r.sign).collect();
        let delivered = dataflow::run_worker(worker, n_bg, bg, &signs, &mut read, deliver);
        tracing::debug!(
            worker = index,
            secs = started.elapsed().as_secs_f64(),
            "dataflow done"
        );
        delivered.map(|d| (index, d))
    })?;
    if let Some(e) = errors.lock().expect("error list").drain(..).next() {
        return Err(e);
    }
    Ok(results.into_iter().flatten().collect())
}

/// Turns gathered ids into sorted rows, with synonym groups ([`number_groups`]).
fn to_rows(g: Gathered) -> Result<StatsOutput, StatsError> {
    let mut events: HashMap<u64, String> = HashMap::new();
    let mut terms: HashMap<u64, String> = HashMap::new();
    for (is_event, id, text) in g.dictionary {
        let map = if is_event { &mut events } else { &mut terms };
        if let Some(old) = map.insert(id, text.clone()) {
            if old != text {
                return Err(StatsError::Collision(old, text));
            }
        }
    }
    let name = |map: &HashMap<u64, String>, id: u64| map.get(&id).cloned().unwrap_or_default();
    let mut term_rows: Vec<Term> = g
        .terms
        .into_iter()
        .map(|(e, stat)| term_row(name(&events, e), name(&terms, stat.0), stat))
        .collect();
    term_rows.sort_by(|a, b| (&a.key_event, &a.term).cmp(&(&b.key_event, &b.term)));
    // Groups: per event, salient terms by descending salience.
    let mut start = 0;
    while start < term_rows.len() {
        let end = start
            + term_rows[start..]
                .iter()
                .take_while(|t| t.key_event == term_rows[start].key_event)
                .count();
        number_groups(&mut term_rows[start..end]);
        start = end;
    }
    let mut pair_rows: Vec<Pair> = g
        .pairs
        .into_iter()
        .map(|((e, a, b), (freq, d))| {
            let (mut a, mut b) = (name(&terms, a), name(&terms, b));
            if b < a {
                std::mem::swap(&mut a, &mut b);
            }
            Pair {
                key_event: name(&events, e),
                a,
                b,
                freq,
                d: f64::from_bits(d),
            }
        })
        .collect();
    pair_rows.sort_by(|x, y| (&x.key_event, &x.a, &x.b).cmp(&(&y.key_event, &y.a, &y.b)));
    Ok(StatsOutput {
        terms: term_rows,
        pairs: pair_rows,
    })
}

/// `epimine stats`: computes the statistics of `corpus` against `background` and writes
/// `terms.parquet` and `pairs.parquet` under `out` (from the process hosting worker 0).
pub fn run(
    corpus: &str,
    background_source: &background::Source,
    out: &str,
    cluster: &Cluster,
) -> Result<Option<StatsOutput>, StatsError> {
    let runtime = crate::runtime::current_thread()?;
    // A corpus that cannot be read is an error before any work.
    let corpus_loc = Location::parse(corpus, false).map_err(CorpusError::from)?;
    runtime.block_on(crate::corpus::segment_files(&corpus_loc))?;
    let stage = Stage::start("loading the background");
    let background = runtime.block_on(background::resolve(background_source, &corpus_loc))?;
    stage.finish(&format!("{} documents", background.n_docs()));
    let rounds = [Round {
        corpus: corpus.to_string(),
        sign: 1,
    }];
    let stage = Stage::start(&format!(
        "statistics dataflow ({} process(es) × {} worker(s), layout from {})",
        cluster.processes, cluster.workers, cluster.source
    ));
    let output = compute(&rounds, &background, cluster)?;
    stage.finish(&match &output {
        Some(o) => format!("{} terms, {} pairs", o.terms.len(), o.pairs.len()),
        None => "done; process 0 writes the outputs".into(),
    });
    if let Some(output) = &output {
        let stage = Stage::start("writing terms.parquet and pairs.parquet");
        runtime.block_on(async {
            let out = Location::parse(out, true)?;
            out.write_table(&output.terms).await?;
            out.write_table(&output.pairs).await?;
            Ok::<_, StatsError>(())
        })?;
        stage.finish("written");
    }
    Ok(output)
}
