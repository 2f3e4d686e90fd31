//! One event's stages once its units are encoded: §1 expansion and synonym groups, §3–§6
//! without an LLM, §3–§4 with one (the event then waits for its answers: [`Pending`]).

use std::collections::{BTreeMap, HashMap};

use super::exchange::EventReport;
use super::pending::Pending;
use super::shared::Shared;
use super::units::Encoded;
use crate::episodes::{self, expand, EventInput};
use crate::job::Job;
use crate::progress::steps::Steps;
use crate::run_folder::manifest::{EventStatus, Outcome};
use crate::run_folder::outputs::Outputs;
use crate::tables::{Segment, Term};

/// What one event's stages start from: its segments, its terms' statistics, and its encoding
/// (or why it failed).
pub(in crate::run) struct EventData {
    /// The event's segments, in corpus order.
    pub(in crate::run) segs: Vec<Segment>,
    /// Its terms' statistics (§1–§2).
    pub(in crate::run) terms: Vec<Term>,
    /// Its sentence and word vectors.
    pub(in crate::run) encoded: Result<Encoded, String>,
}

/// One event's stages after encoding, under the run's job (`shared.job`): §1 expansion and
/// §3–§6 without an LLM (rows into `report.outputs`), or §3–§4 with one (the prompt into
/// `report.prompt`, the event into `pending`), or only the term set (`epimine stats`). `steps`
/// tells where it stands.
pub(in crate::run) fn compute_event(
    shared: &Shared,
    EventData {
        segs,
        terms,
        encoded,
    }: EventData,
    report: &mut EventReport,
    pending: &mut BTreeMap<String, (Pending, EventReport)>,
    steps: &Steps,
) {
    let job = &shared.job;
    let encoded = match encoded {
        Ok(encoded) => encoded,
        Err(e) => {
            set_failed(&mut report.status, e);
            return;
        }
    };
    if shared.terms_only {
        let set = term_set(job, &segs, &terms, &encoded.1, steps);
        report.outputs.terms = set.rows;
        report.outputs.pairs = set.pairs;
        return;
    }
    let previous = shared
        .carried
        .get(&report.status.key_event)
        .map_or(&[][..], Vec::as_slice);
    let previous_articles = shared
        .previous_articles
        .get(&report.status.key_event)
        .map(Vec::as_slice);
    match prepare_event(
        job,
        segs,
        terms,
        encoded,
        steps,
        previous,
        previous_articles,
    ) {
        Ok((p, set)) => {
            report.outputs.terms = set.rows;
            report.outputs.pairs = set.pairs;
            report.outputs.fragments = p.prepared.fragments.clone();
            report.status.counts = p.prepared.counts.clone();
            if job.llm.enabled() {
                report.prompt = Some(
                    p.prepared
                        .top_segments(job.llm.segments_per_cluster)
                        .into_iter()
                        .map(|g| g.into_iter().map(|s| p.segments[s].text.clone()).collect())
                        .collect(),
                );
                let event = report.status.key_event.clone();
                pending.insert(
                    event,
                    (
                        p,
                        EventReport {
                            status: report.status.clone(),
                            outputs: Outputs::default(),
                            prompt: None,
                        },
                    ),
                );
            } else {
                without_llm(job, &p, report, steps);
            }
        }
        Err((e, set)) => {
            report.outputs.terms = set.rows;
            report.outputs.pairs = set.pairs;
            set_failed(&mut report.status, e);
        }
    }
}

/// §5 without an LLM and §6 for one prepared event (then the novelty view when the run follows
/// an `--out` with `episodes.novelty`): its rows and counts into `report`.
fn without_llm(job: &Job, p: &Pending, report: &mut EventReport, steps: &Steps) {
    let mut found =
        episodes::episodes_without_llm(&p.input(), &p.prepared, &job.episodes, 0, steps);
    p.novelty(
        &job.episodes,
        0,
        episodes::novelty::Rows {
            episodes: &mut found.episodes,
            assignments: &mut found.assignments,
            left_out: &mut found.left_out,
        },
    );
    episodes::headlines::retitle(&p.segments, &mut found.episodes, &found.assignments);
    report.status.counts.kept_clusters = found.candidates;
    report.status.counts.left_out = episodes::left_out_counts(&found.left_out, 0);
    report.outputs.left_out = found.left_out;
    let (eps, asg) = (found.episodes, found.assignments);
    finish_counts(&mut report.status, &job.episodes, &eps, asg.len());
    report.outputs.episode_keys =
        crate::lineage::episode_keys(&p.segments, &p.embeddings, &eps, &asg);
    report.outputs.episodes = eps;
    report.outputs.assignments = asg;
    report
        .outputs
        .describe(&p.segments, &p.facts, &mut report.status);
}

/// The episodes, their phases and the assigned segments of an event, summed over trials; no
/// episode is a failure.
pub(in crate::run) fn finish_counts(
    status: &mut EventStatus,
    params: &episodes::EpisodeParams,
    rows: &[crate::tables::Episode],
    assigned: usize,
) {
    let episodes = rows.len();
    status.counts.episodes = episodes;
    status.counts.phases = rows
        .iter()
        .map(|e| (e.trial, e.phase_id))
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    status.counts.assigned = assigned;
    if episodes == 0 && status.status == Outcome::Ok {
        set_failed(
            status,
            episodes::EventError::NoEpisodes(params.min_segments).to_string(),
        );
    }
}

pub(in crate::run) fn set_failed(status: &mut EventStatus, error: String) {
    tracing::warn!("{}: skipped: {error}", status.key_event);
    status.status = Outcome::Failed;
    status.error = Some(error);
}

/// An event's term set (§1 expansion and synonym groups, pairs in the group sense) from its
/// statistics and word vectors.
pub(in crate::run) fn term_set(
    job: &Job,
    segs: &[Segment],
    rows: &[Term],
    vectors: &HashMap<String, Vec<f32>>,
    steps: &Steps,
) -> expand::TermSet {
    steps.stage("term set", 0);
    let texts: Vec<&str> = segs.iter().map(|s| s.text.as_str()).collect();
    let empty = HashMap::new();
    let with_dated;
    let rows = if job.terms.dated {
        with_dated = dated_terms(segs, rows, &texts);
        &with_dated
    } else {
        rows
    };
    expand::build_term_set(
        rows,
        if job.terms.vectors { vectors } else { &empty },
        &job.terms.params(),
        &texts,
    )
}

/// `rows` with the words written on days of their own in T (`terms.dated`,
/// [`crate::episodes::dated_words`]); the debug log lists them.
fn dated_terms(segs: &[Segment], rows: &[Term], texts: &[&str]) -> Vec<Term> {
    let articles = crate::episodes::dated_candidates::segment_articles(segs);
    let joined = crate::episodes::dated_words::dated_terms(rows, texts, &articles);
    tracing::debug!(
        "{}: {} words written on days of their own join T: {}",
        segs.first().map_or("", |s| s.key_event.as_str()),
        joined.len(),
        joined
            .iter()
            .map(|&(i, shared, mean, _)| format!("{} ({shared:.2} < {mean:.2})", rows[i].term))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let mut rows = rows.to_vec();
    for (i, ..) in joined {
        rows[i].salient = true;
    }
    rows
}

pub(in crate::run) type PrepareResult =
    Result<(Pending, expand::TermSet), (String, expand::TermSet)>;

/// One event's coordinator stages up to the kept candidate clusters (§1 expansion, §3–§4).
/// `previous`: the previous run's episodes of the event as segment keys (`episodes.carry`,
/// `episodes.novelty`); `previous_articles`: its article keys at the previous run, ascending
/// (`None`: a first run, or an event the previous run did not have).
pub(in crate::run) fn prepare_event(
    job: &Job,
    segs: Vec<Segment>,
    rows: Vec<Term>,
    (embeddings, vectors): Encoded,
    steps: &Steps,
    previous: &[Vec<u64>],
    previous_articles: Option<&[u64]>,
) -> PrepareResult {
    let set = term_set(job, &segs, &rows, &vectors, steps);
    let input = EventInput {
        segments: &segs,
        terms: set.salient.clone(),
        pairs: set
            .pairs
            .iter()
            .map(|p| (p.a.clone(), p.b.clone(), p.freq, p.d))
            .collect(),
        word_vectors: &vectors,
        embeddings: &embeddings,
        carried: &[],
    };
    match episodes::prepare(&input, &job.episodes, steps) {
        Ok(prepared) => Ok((
            Pending {
                carried: if job.episodes.carry {
                    super::pending::carried(&segs, previous)
                } else {
                    Vec::new()
                },
                followed: previous_articles
                    .filter(|_| job.episodes.novelty)
                    .map(|articles| super::pending::Followed::of(&segs, articles, previous)),
                facts: segs
                    .first()
                    .map(|s| crate::corpus::pinned_facts(&s.key_event))
                    .unwrap_or_default(),
                segments: segs,
                embeddings,
                prepared,
            },
            set,
        )),
        Err(e) => Err((e.to_string(), set)),
    }
}
