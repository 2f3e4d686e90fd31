//! The per-event worker: reads its row groups, decides with the owners which events' checkpoints
//! are reused, encodes the units of the others, runs §3–§6 on the events it owns and writes each
//! one's checkpoint as soon as it is done.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use super::compute::{compute_event, EventData};
use super::estimation::{llm_round, LlmRound};
use super::exchange::{router, shuffle, EncodedUnit, EventReport, GatheredReports, ToOwner};
use super::pending::Pending;
use super::placement::{plan_waves, read_placement, Placement, Waves};
use super::reuse::{decide_events, report_reused, Decided, Decision, Decisions};
use super::shared::Shared;
use super::units::{assemble, encode_units, unit_of, Encoders, UnitKey};
use super::worker::Ctx;
use crate::fault::fault;
use crate::run_folder::manifest::{EventStatus, StageTime};
use crate::run_folder::outputs::Outputs;
use crate::sharding;
use crate::tables::{Segment, Term};

/// What this worker did over the waves: its events' reports, its events waiting for the LLM,
/// and the seconds spent encoding and computing.
struct Done {
    reports: Vec<EventReport>,
    pending: BTreeMap<String, (Pending, EventReport)>,
    encoding_secs: f64,
    episodes_secs: f64,
}

/// One worker of the per-event stages. Each worker reads its row groups of the corpus and every
/// worker learns each encoding unit's size and segment digest ([`read_placement`]); the worker
/// owning an event (`sharding::event_owners`, by segment count) gets its terms, computes its
/// fingerprint and reads its checkpoint; the events to reuse are told to every worker
/// ([`decide_events`]). The other events go in waves ([`plan_waves`]): per wave, their segments
/// go to the workers that encode their units (balanced over the wave's units), the encoded units
/// to the owners ([`encode_wave`]), which run §3–§6 (without an LLM) or §3–§4 (with one) and
/// write each event's checkpoint ([`compute_wave`]); statuses (not rows) go to worker 0. With an
/// LLM, worker 0 asks it for every waiting event, the answers go back to the owners, which
/// classify, write the checkpoints and report again ([`llm_round`]). `epimine stats`
/// (`terms_only`, no `--out` checkpoints) sends the terms and pairs to worker 0 instead.
pub(in crate::run) fn event_worker(
    worker: &mut timely::worker::Worker,
    shared: &Shared,
) -> Option<GatheredReports> {
    let ctx = Ctx::start(worker, shared)?;
    let job = ctx.job();
    let started = Instant::now();
    let placement = read_placement(&ctx, worker);
    let decisions = decide_events(&ctx, worker, &placement);
    let Placement {
        segments,
        units,
        owners,
        ..
    } = placement;
    let plan = plan_waves(&units, &decisions.reused, &owners, ctx.peers, segments);
    let n_waves = plan.segments.len();
    let encoder = load_encoder(&ctx, !plan.to_encode.is_empty() || job.llm.enabled());
    let done = run_waves(
        &ctx,
        worker,
        plan,
        decisions,
        &owners,
        encoder.as_ref(),
        started,
    );
    if let Some(e) = &encoder {
        let seen = e.shapes_seen();
        tracing::debug!(
            worker = ctx.index,
            "encoder batch shapes met: {} ([rows, seq] × batches: {:?})",
            seen.len(),
            seen
        );
    }
    let mut stages = vec![StageTime {
        stage: "encoding".into(),
        seconds: done.encoding_secs,
    }];
    let started = Instant::now();
    let gathered = shuffle(worker, done.reports, |_| 0);
    let reports: BTreeMap<String, EventReport> = gathered
        .into_iter()
        .map(|r| (r.status.key_event.clone(), r))
        .collect();
    stages.push(StageTime {
        stage: "episodes".into(),
        seconds: done.episodes_secs + started.elapsed().as_secs_f64(),
    });
    if !job.llm.enabled() || shared.out.is_none() {
        return (ctx.index == 0).then_some(GatheredReports {
            reports,
            stages,
            llm: None,
            waves: n_waves,
        });
    }
    let round = LlmRound {
        reports,
        stages,
        pending: done.pending,
        owners: &owners,
        encoder: encoder.as_ref(),
        waves: n_waves,
    };
    llm_round(&ctx, worker, round)
}

/// The waves in order: the reused events reported first, then per wave its encoding
/// ([`encode_wave`]) and its events ([`compute_wave`]). `started`: when the worker started (the
/// time before the first wave counts as encoding).
fn run_waves(
    ctx: &Ctx,
    worker: &mut timely::worker::Worker,
    plan: Waves,
    decisions: Decisions,
    owners: &Arc<BTreeMap<String, usize>>,
    encoder: Option<&Encoders>,
    started: Instant,
) -> Done {
    let Waves {
        to_encode,
        of_event,
        segments: by_wave,
    } = plan;
    let Decisions {
        terms: mut my_terms,
        decided,
        ..
    } = decisions;
    // Every worker of this process counts in the same bars.
    let bar = ctx.shared.progress.events(by_wave.len());
    bar.add_total(decided.len() as u64);
    let mut reports = Vec::new();
    let mut pending: BTreeMap<String, (Pending, EventReport)> = BTreeMap::new();
    let mut decisions: Vec<Decided> = decided.into_iter().collect();
    report_reused(&mut decisions, &mut reports, bar);
    let (mut encoding_secs, mut episodes_secs) = (started.elapsed().as_secs_f64(), 0.0);
    for (wave, wave_segments) in by_wave.into_iter().enumerate() {
        let started = Instant::now();
        let in_wave = |e: &String| of_event.get(e).copied().unwrap_or(0) == wave;
        let wave_units: BTreeMap<UnitKey, u64> = to_encode
            .iter()
            .filter(|((e, _), _)| of_event.get(e) == Some(&wave))
            .map(|(u, n)| (u.clone(), *n))
            .collect();
        let mine = encode_wave(
            ctx,
            worker,
            wave,
            wave_units,
            wave_segments,
            owners,
            encoder,
        );
        encoding_secs += started.elapsed().as_secs_f64();
        let started = Instant::now();
        let (now, later): (Vec<_>, Vec<_>) = decisions.into_iter().partition(|(e, _)| in_wave(e));
        decisions = later;
        compute_wave(
            ctx,
            now,
            mine,
            &mut my_terms,
            &mut pending,
            &mut reports,
            bar,
        );
        episodes_secs += started.elapsed().as_secs_f64();
    }
    Done {
        reports,
        pending,
        encoding_secs,
        episodes_secs,
    }
}

/// The encoders, when there is anything to encode or an LLM's sentences to embed.
fn load_encoder(ctx: &Ctx, needed: bool) -> Option<Encoders> {
    if !needed {
        return None;
    }
    let shared = ctx.shared;
    match Encoders::load(
        &shared.model_dir,
        shared.sentence_model_dir.as_deref(),
        &shared.job.encoder,
    ) {
        Ok(e) => {
            tracing::debug!(simd = crate::encoder::simd_path(), "encoder loaded");
            Some(e)
        }
        Err(e) => {
            ctx.fail(format!("encoder: {e}"));
            None
        }
    }
}

/// One wave's encoding: its segments to the workers that encode their units (balanced over the
/// wave's units), the encoded units to the events' owners. Returns this worker's events' units.
fn encode_wave(
    ctx: &Ctx,
    worker: &mut timely::worker::Worker,
    wave: usize,
    wave_units: BTreeMap<UnitKey, u64>,
    wave_segments: Vec<Segment>,
    owners: &Arc<BTreeMap<String, usize>>,
    encoder: Option<&Encoders>,
) -> BTreeMap<String, Vec<EncodedUnit>> {
    let encoders = sharding::event_owners(&wave_units, ctx.peers);
    let route = move |s: &Segment| encoders.get(&unit_of(s)).copied().unwrap_or(0) as u64;
    let mut my_units: BTreeMap<UnitKey, Vec<Segment>> = BTreeMap::new();
    for s in shuffle(worker, wave_segments, route) {
        my_units.entry(unit_of(&s)).or_default().push(s);
    }
    if ctx.index == 0 && wave == 0 {
        fault("encoding", 1);
    }
    let units_bar = (!my_units.is_empty()).then(|| ctx.shared.progress.encoding());
    if let Some(bar) = units_bar {
        bar.add_total(my_units.len() as u64);
    }
    let outgoing = encode_units(ctx.shared, encoder, my_units, units_bar);
    let mut mine: BTreeMap<String, Vec<EncodedUnit>> = BTreeMap::new();
    for message in shuffle(worker, outgoing, router(owners)) {
        if let ToOwner::Unit(e, u) = message {
            mine.entry(e).or_default().push(u);
        }
    }
    mine
}

/// §3–§6 (or §3–§4) on this worker's events of a wave (`now`); checkpoints as they are done.
fn compute_wave(
    ctx: &Ctx,
    now: Vec<Decided>,
    mut mine: BTreeMap<String, Vec<EncodedUnit>>,
    my_terms: &mut BTreeMap<String, Vec<Term>>,
    pending: &mut BTreeMap<String, (Pending, EventReport)>,
    reports: &mut Vec<EventReport>,
    bar: &crate::progress::Bar,
) {
    for (event, (fingerprint, decision)) in now {
        if ctx.shared.stopped() {
            // The run stops at its first failure or when interrupted: nothing more is computed.
            break;
        }
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
        let steps = crate::progress::steps::Steps::new(&event, Some(bar));
        ctx.shared.pool.install(|| {
            let data = EventData {
                segs,
                terms,
                encoded,
            };
            compute_event(ctx.shared, data, &mut report, pending, &steps)
        });
        steps.finish();
        if report.prompt.is_none() {
            if ctx.shared.out.is_some() {
                let outputs = std::mem::take(&mut report.outputs);
                ctx.write_checkpoint(&fingerprint, &report.status, outputs);
            }
        } else if let Some(p) = pending.get_mut(&event) {
            // The rows wait on the owner for the LLM's answers; worker 0 gets the prompt.
            p.1.outputs = std::mem::take(&mut report.outputs);
            p.1.status = report.status.clone();
        }
        reports.push(report);
        bar.inc();
    }
}
