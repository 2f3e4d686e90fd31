//! The per-event worker: reads its row groups, decides with the owners which events' checkpoints
//! are reused, encodes the units of the others, runs §3–§6 on the events it owns and writes each
//! one's checkpoint as soon as it is done.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::time::Instant;

use super::checkpoint::{self, Checkpoint, CheckpointError, SegmentDigest};
use super::exchange::{router, shuffle, EncodedUnit, EventReport, Gathered, ToOwner, TrialAnswer};
use super::fault::fault;
use super::llm::{ask_llm, classify_with_llm};
use super::outputs::Outputs;
use super::pending::Pending;
use super::report::{EventStatus, LlmReport, StageTime};
use super::shared::Shared;
use super::units::{assemble, encode_units, unit_of, unit_sizes, Encoded, Encoders, UnitKey};
use crate::episodes::{self, expand, EventInput};
use crate::job::Job;
use crate::keys;
use crate::storage::Location;
use crate::tables::{Segment, Term};

/// What an event's owner decided about its checkpoint.
enum Decision {
    /// Reuse it: its status as it was computed.
    Reuse(Box<EventStatus>),
    /// Compute the event; why an existing checkpoint was not reused.
    Compute(Option<String>),
}

/// Encoding units per worker in one wave: two calls of the encoder (`units::UNITS_AT_ONCE`).
const WAVE_UNITS: usize = 2 * super::units::UNITS_AT_ONCE;

/// The wave of every event to compute: each owner's events, in key order, spread over the waves
/// by their encoding units (about [`WAVE_UNITS`] per worker and wave), so that each wave keeps
/// every worker busy and a run checkpoints its events steadily. The same for every worker.
fn keys_waves(
    to_encode: &BTreeMap<UnitKey, u64>,
    owners: &BTreeMap<String, usize>,
    peers: usize,
) -> BTreeMap<String, usize> {
    let mut units_of: BTreeMap<&String, usize> = BTreeMap::new();
    for (event, _) in to_encode.keys() {
        *units_of.entry(event).or_default() += 1;
    }
    let total: usize = units_of.values().sum();
    let n_waves = (total / (peers.max(1) * WAVE_UNITS)).max(1);
    let mut per_owner: BTreeMap<usize, Vec<(&String, usize)>> = BTreeMap::new();
    for (event, n) in units_of {
        let owner = owners.get(event).copied().unwrap_or(0);
        per_owner.entry(owner).or_default().push((event, n));
    }
    let mut waves = BTreeMap::new();
    for events in per_owner.into_values() {
        let owner_total: usize = events.iter().map(|e| e.1).sum();
        let mut before = 0;
        for (event, n) in events {
            let wave = (before * n_waves / owner_total.max(1)).min(n_waves - 1);
            waves.insert(event.clone(), wave);
            before += n;
        }
    }
    waves
}

/// Reads an event's checkpoint and decides whether it can be reused.
fn decide(
    runtime: &tokio::runtime::Runtime,
    out: &Location,
    shared: &Shared,
    event: &str,
    fingerprint: &str,
) -> Decision {
    if shared.fresh {
        return Decision::Compute(Some("--fresh".into()));
    }
    match runtime.block_on(checkpoint::read(out, event)) {
        Ok(None) => Decision::Compute(None),
        Ok(Some(c)) if c.fingerprint != fingerprint => {
            Decision::Compute(Some("its segments, statistics or settings changed".into()))
        }
        Ok(Some(c)) if c.status.status != "ok" => Decision::Compute(Some(format!(
            "it failed: {}",
            c.status.error.as_deref().unwrap_or("?")
        ))),
        Ok(Some(c))
            if c.status
                .llm
                .as_ref()
                .is_some_and(|l| !l.fallbacks.is_empty()) =>
        {
            Decision::Compute(Some("some LLM trials fell back to no-LLM episodes".into()))
        }
        Ok(Some(c)) => Decision::Reuse(Box::new(c.status)),
        Err(e @ CheckpointError::Corrupt { .. }) => {
            tracing::warn!("{e}; computing {event} again");
            Decision::Compute(Some(e.to_string()))
        }
        Err(e) => {
            tracing::warn!("checkpoint of {event}: {e}; computing it again");
            Decision::Compute(Some(e.to_string()))
        }
    }
}

/// One worker of the per-event stages. Each worker reads its row groups of the corpus and every
/// worker learns each encoding unit's size and segment digest; the worker owning an event
/// (`keys::event_owners`, by segment count) gets its terms, computes its fingerprint and reads
/// its checkpoint; the events to reuse are told to every worker. The other events go in waves
/// (`keys_waves`): per wave, their segments go to the workers that encode their units (balanced
/// over the wave's units), the encoded units to the owners, which run §3–§6 (without an LLM) or
/// §3–§4 (with one) and write each event's checkpoint; statuses (not rows) go to worker 0. With an LLM, worker 0 asks it for
/// every waiting event, the answers go back to the owners, which classify, write the checkpoints
/// and report again. `epimine stats` (`terms_only`, no `--out` checkpoints) sends the terms and
/// pairs to worker 0 instead.
pub(super) fn event_worker(
    worker: &mut timely::worker::Worker,
    shared: &Shared,
) -> Option<Gathered> {
    let (index, peers) = (worker.index(), worker.peers());
    let job = &shared.job;
    let fail = |e: String| {
        // Reported once, by the caller (every worker may fail the same way).
        tracing::debug!(worker = index, "{e}");
        shared.errors.lock().expect("error list").push(e);
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            fail(format!("cannot start a tokio runtime: {e}"));
            return None;
        }
    };
    let started = Instant::now();
    let mut stages = Vec::new();

    let segments = match Location::parse(&job.corpus, false)
        .map_err(|e| e.to_string())
        .and_then(|corpus| {
            runtime
                .block_on(crate::corpus::read_segment_shard(&corpus, index, peers))
                .map_err(|e| e.to_string())
        }) {
        Ok(segments) => segments,
        Err(e) => {
            fail(e);
            Vec::new()
        }
    };
    let units = unit_sizes(worker, &segments);
    let mut sizes: BTreeMap<String, u64> = BTreeMap::new();
    let mut digests: BTreeMap<String, SegmentDigest> = BTreeMap::new();
    for ((event, _), (n, d)) in &units {
        *sizes.entry(event.clone()).or_default() += n;
        digests.entry(event.clone()).or_default().add(d);
    }
    let owners = Arc::new(keys::event_owners(&sizes, peers));

    // This worker's share of the terms to the owners, which decide on the checkpoints.
    let terms_out: Vec<ToOwner> = shared
        .terms
        .lock()
        .expect("terms")
        .remove(&index)
        .unwrap_or_default()
        .into_iter()
        .map(|(e, t)| ToOwner::Terms(e, t))
        .collect();
    let mut my_terms: BTreeMap<String, Vec<Term>> = BTreeMap::new();
    for message in shuffle(worker, terms_out, router(&owners)) {
        if let ToOwner::Terms(e, t) = message {
            my_terms.insert(e, t);
        }
    }
    let my_events: BTreeSet<String> = owners
        .iter()
        .filter(|(_, &o)| o == index)
        .map(|(e, _)| e.clone())
        .chain(my_terms.keys().cloned())
        .collect();
    let mut decisions: BTreeMap<String, (String, Decision)> = BTreeMap::new();
    for event in &my_events {
        let terms = my_terms.get(event).map_or(&[][..], Vec::as_slice);
        let digest = digests.get(event).copied().unwrap_or_default();
        let fingerprint = checkpoint::fingerprint(&shared.settings, &digest, terms);
        let decision = match &shared.out {
            Some(out) => decide(&runtime, out, shared, event, &fingerprint),
            None => Decision::Compute(None),
        };
        decisions.insert(event.clone(), (fingerprint, decision));
    }
    let reused_here: Vec<String> = decisions
        .iter()
        .filter(|(_, (_, d))| matches!(d, Decision::Reuse(_)))
        .map(|(e, _)| e.clone())
        .collect();
    let copies: Vec<(u64, String)> = (0..peers as u64)
        .flat_map(|to| reused_here.iter().map(move |e| (to, e.clone())))
        .collect();
    let reused: HashSet<String> = shuffle(worker, copies, |c| c.0)
        .into_iter()
        .map(|(_, e)| e)
        .collect();

    // The events to compute go in waves: each owner's events in order, cut into slices of
    // about the same number of encoding units, so that every wave is encoded, run and
    // checkpointed before the next (a run killed half way has checkpointed about half its
    // work). Within a wave, segments go to the workers that encode their units (balanced over
    // the wave's units) and the encoded units to the owners. Every worker derives the same
    // waves from what all know (units, owners, reused events).
    let to_encode: BTreeMap<UnitKey, u64> = units
        .iter()
        .filter(|((e, _), _)| !reused.contains(e))
        .map(|(u, (n, _))| (u.clone(), *n))
        .collect();
    let waves = keys_waves(&to_encode, &owners, peers);
    let n_waves = waves.values().copied().max().map_or(1, |w| w + 1);
    let mut by_wave: Vec<Vec<Segment>> = vec![Vec::new(); n_waves];
    for s in segments {
        if let Some(&w) = waves.get(&s.key_event) {
            by_wave[w].push(s);
        }
    }
    let encoder = if to_encode.is_empty() && !job.llm.enabled() {
        None
    } else {
        match Encoders::load(
            &shared.model_dir,
            shared.sentence_model_dir.as_deref(),
            &job.encoder,
        ) {
            Ok(e) => {
                tracing::debug!(simd = crate::encoder::simd_path(), "encoder loaded");
                Some(e)
            }
            Err(e) => {
                fail(format!("encoder: {e}"));
                None
            }
        }
    };
    let write_checkpoint = |fingerprint: &str, status: &EventStatus, outputs: Outputs| {
        let Some(out) = &shared.out else {
            return;
        };
        let c = Checkpoint {
            fingerprint: fingerprint.to_string(),
            status: status.clone(),
            outputs,
        };
        match runtime.block_on(checkpoint::write(out, &c)) {
            Ok(()) => {
                let n = shared
                    .checkpoints_written
                    .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                fault("checkpoint", n + 1);
            }
            Err(e) => fail(format!(
                "writing the checkpoint of {}: {e}",
                status.key_event
            )),
        }
    };
    // Every worker of this process counts in the same bars.
    let bar = shared.progress.events(n_waves);
    bar.add_total(decisions.len() as u64);
    let mut reports = Vec::new();
    let mut pending: BTreeMap<String, (Pending, EventReport)> = BTreeMap::new();
    let mut decisions: Vec<(String, (String, Decision))> = decisions.into_iter().collect();
    // Reused events first: nothing to do but report.
    decisions.retain_mut(|(event, (_, decision))| {
        let Decision::Reuse(status) = decision else {
            return true;
        };
        let mut status = std::mem::replace(status, Box::new(EventStatus::new(event)));
        status.checkpoint = "reused".into();
        status.not_reused = None;
        status.encoded_units = 0;
        reports.push(EventReport {
            status: *status,
            outputs: Outputs::default(),
            prompt: None,
        });
        bar.inc();
        false
    });
    let (mut encoding_secs, mut episodes_secs) = (started.elapsed().as_secs_f64(), 0.0);
    for (wave, wave_segments) in by_wave.into_iter().enumerate() {
        let started = Instant::now();
        let wave_units: BTreeMap<UnitKey, u64> = to_encode
            .iter()
            .filter(|((e, _), _)| waves.get(e) == Some(&wave))
            .map(|(u, n)| (u.clone(), *n))
            .collect();
        let encoders = keys::event_owners(&wave_units, peers);
        let route = move |s: &Segment| encoders.get(&unit_of(s)).copied().unwrap_or(0) as u64;
        let mut my_units: BTreeMap<UnitKey, Vec<Segment>> = BTreeMap::new();
        for s in shuffle(worker, wave_segments, route) {
            my_units.entry(unit_of(&s)).or_default().push(s);
        }
        if index == 0 && wave == 0 {
            fault("encoding", 1);
        }
        let units_bar = (!my_units.is_empty()).then(|| shared.progress.encoding());
        if let Some(bar) = units_bar {
            bar.add_total(my_units.len() as u64);
        }
        let outgoing = encode_units(shared, encoder.as_ref(), my_units, units_bar);
        let mut mine: BTreeMap<String, Vec<EncodedUnit>> = BTreeMap::new();
        for message in shuffle(worker, outgoing, router(&owners)) {
            if let ToOwner::Unit(e, u) = message {
                mine.entry(e).or_default().push(u);
            }
        }
        encoding_secs += started.elapsed().as_secs_f64();
        let started = Instant::now();

        // §3–§6 (or §3–§4) on this worker's events of the wave; checkpoints as they are done.
        let in_wave = |e: &String| waves.get(e).copied().unwrap_or(0) == wave;
        let (now, later): (Vec<_>, Vec<_>) = decisions.into_iter().partition(|(e, _)| in_wave(e));
        decisions = later;
        for (event, (fingerprint, decision)) in now {
            bar.set_message(&event);
            let Decision::Compute(not_reused) = decision else {
                continue;
            };
            let units = mine.remove(&event).unwrap_or_default();
            let encoded_units = units.iter().filter(|u| u.fresh).count() as u32;
            let terms = my_terms.remove(&event).unwrap_or_default();
            let (segs, encoded) = assemble(units);
            let mut report = EventReport {
                status: EventStatus {
                    segments: segs.len(),
                    not_reused,
                    encoded_units,
                    fingerprint: fingerprint.clone(),
                    ..EventStatus::new(&event)
                },
                outputs: Outputs::default(),
                prompt: None,
            };
            compute_event(job, shared, segs, terms, encoded, &mut report, &mut pending);
            if report.prompt.is_none() {
                if shared.out.is_some() {
                    let outputs = std::mem::take(&mut report.outputs);
                    write_checkpoint(&fingerprint, &report.status, outputs);
                }
            } else if let Some(p) = pending.get_mut(&event) {
                // The rows wait on the owner for the LLM's answers; worker 0 gets the prompt.
                p.1.outputs = std::mem::take(&mut report.outputs);
                p.1.status = report.status.clone();
            }
            reports.push(report);
            bar.inc();
        }
        episodes_secs += started.elapsed().as_secs_f64();
    }
    if let Some(e) = &encoder {
        let seen = e.shapes_seen();
        tracing::debug!(
            worker = index,
            "encoder batch shapes met: {} ([rows, seq] × batches: {:?})",
            seen.len(),
            seen
        );
    }
    stages.push(StageTime {
        stage: "encoding".into(),
        seconds: encoding_secs,
    });
    let started = Instant::now();
    let gathered = shuffle(worker, reports, |_| 0);
    let mut reports: BTreeMap<String, EventReport> = gathered
        .into_iter()
        .map(|r| (r.status.key_event.clone(), r))
        .collect();
    stages.push(StageTime {
        stage: "episodes".into(),
        seconds: episodes_secs + started.elapsed().as_secs_f64(),
    });
    if !job.llm.enabled() || shared.out.is_none() {
        return (index == 0).then_some(Gathered {
            reports,
            stages,
            llm: None,
            waves: n_waves,
        });
    }

    // §5 with the LLM, from worker 0; answers to the owners.
    let started = Instant::now();
    let mut answers_out: Vec<ToOwner> = Vec::new();
    let mut context: (Option<u32>, BTreeMap<String, usize>) = (None, BTreeMap::new());
    if let (0, Some(client)) = (index, &shared.llm) {
        let prompts: Vec<(String, Vec<Vec<String>>)> = reports
            .iter_mut()
            .filter_map(|(e, r)| Some((e.clone(), r.prompt.take()?)))
            .collect();
        let asked = runtime.block_on(ask_llm(client, &job.llm, &prompts));
        context = (asked.context_tokens, asked.cut);
        let mut by_event: BTreeMap<String, Vec<TrialAnswer>> = BTreeMap::new();
        for ((event, trial), answer) in asked.answers {
            by_event
                .entry(event)
                .or_default()
                .push((trial, answer.map_err(|e| e.to_string())));
        }
        answers_out = by_event
            .into_iter()
            .map(|(e, a)| ToOwner::Answers(e, a))
            .collect();
        stages.push(StageTime {
            stage: "llm".into(),
            seconds: started.elapsed().as_secs_f64(),
        });
    }
    let started = Instant::now();
    let mut second = Vec::new();
    for message in shuffle(worker, answers_out, router(&owners)) {
        let ToOwner::Answers(event, answers) = message else {
            continue;
        };
        let (Some((p, mut report)), Some(encoder)) = (pending.remove(&event), &encoder) else {
            continue;
        };
        let (_, llm_status, eps, asg) =
            classify_with_llm(job, encoder.sentence(), &event, &p, answers);
        finish_counts(&mut report.status, &job.episodes, eps.len(), asg.len());
        report.status.llm = Some(llm_status);
        report.outputs.episodes = eps;
        report.outputs.assignments = asg;
        let outputs = std::mem::take(&mut report.outputs);
        write_checkpoint(&report.status.fingerprint, &report.status, outputs);
        report.prompt = None;
        second.push(report);
    }
    // Events left waiting (no answers reached them): failed, so that a re-run computes them.
    for (_, (_, mut report)) in std::mem::take(&mut pending) {
        set_failed(
            &mut report.status,
            "no LLM answers reached the event's owner".into(),
        );
        let outputs = std::mem::take(&mut report.outputs);
        write_checkpoint(&report.status.fingerprint, &report.status, outputs);
        second.push(report);
    }
    for report in shuffle(worker, second, |_| 0) {
        reports.insert(report.status.key_event.clone(), report);
    }
    if index != 0 {
        return None;
    }
    stages.push(StageTime {
        stage: "classification".into(),
        seconds: started.elapsed().as_secs_f64(),
    });
    let client = shared.llm.as_ref()?;
    let fallbacks = reports
        .values()
        .filter_map(|r| r.status.llm.as_ref())
        .map(|l| l.fallbacks.len())
        .sum();
    let usage = client.usage();
    tracing::info!(
        "LLM: {} requests, {} answers from the cache, {fallbacks} fallbacks",
        usage.requests,
        usage.cache_hits
    );
    Some(Gathered {
        reports,
        stages,
        waves: n_waves,
        llm: Some(LlmReport {
            backend: job.llm.backend.name(),
            model: job.llm.model.clone(),
            url: client.url().to_string(),
            trials: job.llm.trials,
            usage,
            fallbacks,
            structured: client.form() != crate::llm::client::Form::Off,
            structured_form: client.form().name(job.llm.backend),
            structured_off: client.structured_off(),
            context_tokens: context.0,
            prompts_cut: context.1,
        }),
    })
}

/// One event's stages after encoding: §1 expansion and §3–§6 without an LLM (rows into
/// `report.outputs`), or §3–§4 with one (the prompt into `report.prompt`, the event into
/// `pending`), or only the term set (`epimine stats`).
fn compute_event(
    job: &Job,
    shared: &Shared,
    segs: Vec<Segment>,
    terms: Vec<Term>,
    encoded: Result<Encoded, String>,
    report: &mut EventReport,
    pending: &mut BTreeMap<String, (Pending, EventReport)>,
) {
    let encoded = match encoded {
        Ok(encoded) => encoded,
        Err(e) => {
            set_failed(&mut report.status, e);
            return;
        }
    };
    if shared.terms_only {
        let set = term_set(job, &segs, &terms, &encoded.1);
        report.outputs.terms = set.rows;
        report.outputs.pairs = set.pairs;
        return;
    }
    match prepare_event(job, segs, terms, encoded) {
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
                let (kept, eps, asg) =
                    episodes::episodes_without_llm(&p.input(), &p.prepared, &job.episodes, 0);
                report.status.counts.kept_clusters = kept;
                finish_counts(&mut report.status, &job.episodes, eps.len(), asg.len());
                report.outputs.episodes = eps;
                report.outputs.assignments = asg;
            }
        }
        Err((e, set)) => {
            report.outputs.terms = set.rows;
            report.outputs.pairs = set.pairs;
            set_failed(&mut report.status, e);
        }
    }
}

/// The episodes and assigned segments of an event, summed over trials; no episode is a failure.
pub(super) fn finish_counts(
    status: &mut EventStatus,
    params: &episodes::EpisodeParams,
    episodes: usize,
    assigned: usize,
) {
    status.counts.episodes = episodes;
    status.counts.assigned = assigned;
    if episodes == 0 && status.status == "ok" {
        set_failed(
            status,
            episodes::EventError::NoEpisodes(params.min_segments).to_string(),
        );
    }
}

pub(super) fn set_failed(status: &mut EventStatus, error: String) {
    tracing::warn!("{}: skipped: {error}", status.key_event);
    status.status = "failed".into();
    status.error = Some(error);
}

/// An event's term set (§1 expansion and synonym groups, pairs in the group sense) from its
/// statistics and word vectors.
pub(super) fn term_set(
    job: &Job,
    segs: &[Segment],
    rows: &[Term],
    vectors: &HashMap<String, Vec<f32>>,
) -> expand::TermSet {
    let seg_terms: Vec<HashSet<String>> = segs
        .iter()
        .map(|s| crate::text::distinct_terms(&s.text).into_iter().collect())
        .collect();
    let empty = HashMap::new();
    expand::build_term_set(
        rows,
        if job.terms.vectors { vectors } else { &empty },
        job.terms.expansion,
        job.terms.synonym,
        &seg_terms,
    )
}

pub(super) type PrepareResult = Result<(Pending, expand::TermSet), (String, expand::TermSet)>;

/// One event's coordinator stages up to the kept candidate clusters (§1 expansion, §3–§4).
pub(super) fn prepare_event(
    job: &Job,
    segs: Vec<Segment>,
    rows: Vec<Term>,
    (embeddings, vectors): Encoded,
) -> PrepareResult {
    let set = term_set(job, &segs, &rows, &vectors);
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
    };
    match episodes::prepare(&input, &job.episodes) {
        Ok(prepared) => Ok((
            Pending {
                segments: segs,
                embeddings,
                prepared,
            },
            set,
        )),
        Err(e) => Err((e.to_string(), set)),
    }
}
