//! §5 with an LLM: worker 0 asks for every waiting event, the owners classify against the
//! answers.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Instant;

use super::compute::{finish_counts, set_failed};
use super::exchange::{router, shuffle, EventReport, GatheredReports, ToOwner, TrialAnswer};
use super::pending::{normalise, Pending};
use super::units::Encoders;
use super::worker::Ctx;
use crate::encoder::{DefaultBackend, Encoder};
use crate::episodes::{self, EpisodeSpec};
use crate::job::Job;
use crate::llm::{self, LlmError};
use crate::run_folder::manifest::{EventLlm, Fallback, LlmReport, StageTime};
use crate::tables::{Assignment, Episode};

/// An event's LLM trials: its answers classified against (§6), a failed trial replaced by the
/// no-LLM episodes.
pub(in crate::run) fn classify_with_llm(
    job: &Job,
    encoder: &Encoder<DefaultBackend>,
    event: &str,
    pending: &Pending,
    mut answers: Vec<TrialAnswer>,
    steps: &crate::progress::steps::Steps,
) -> LlmTrials {
    answers.sort_by_key(|a| a.0);
    let input = pending.input();
    let mut known = pending.known_embeddings();
    let mut status = EventLlm::default();
    let (mut episodes_out, mut assignments_out) = (Vec::new(), Vec::new());
    let mut left_out = Vec::new();
    for (trial, answer) in answers {
        let from_llm = answer.and_then(|eps| {
            let specs = llm_specs(encoder, &mut known, &eps)?;
            let out = episodes::assign_explained(
                &input,
                &pending.prepared.key_event,
                &specs,
                &job.episodes,
                trial,
                steps,
            );
            if out.0.is_empty() {
                Err(format!(
                    "no LLM episode kept {} or more segments",
                    job.episodes.min_segments
                ))
            } else {
                Ok(out)
            }
        });
        let (eps, asg, reasons) = match from_llm {
            Ok(out) => {
                status.trials_ok += 1;
                out
            }
            Err(error) => {
                tracing::warn!(
                    "{event}: trial {trial}: LLM estimation failed, using no-LLM episodes: {error}"
                );
                status.fallbacks.push(Fallback { trial, error });
                let found = episodes::episodes_without_llm(
                    &input,
                    &pending.prepared,
                    &job.episodes,
                    trial,
                    steps,
                );
                (found.episodes, found.assignments, found.left_out)
            }
        };
        left_out.extend(reasons);
        status.episodes_per_trial.push(eps.len());
        episodes_out.extend(eps);
        assignments_out.extend(asg);
    }
    LlmTrials {
        llm: status,
        episodes: episodes_out,
        assignments: assignments_out,
        left_out,
    }
}

/// An event's LLM trials, classified ([`classify_with_llm`]).
pub(in crate::run) struct LlmTrials {
    pub llm: EventLlm,
    pub episodes: Vec<Episode>,
    pub assignments: Vec<Assignment>,
    /// The segments in no episode of each trial, and why.
    pub left_out: Vec<crate::tables::LeftOut>,
}

/// What the LLM stage asked: answers by (event, trial), the context window used, and the events
/// whose prompts were cut to fit it (event → segments per cluster sent).
pub(in crate::run) struct Asked {
    pub answers: BTreeMap<(String, u32), Result<Vec<llm::LlmEpisode>, LlmError>>,
    pub context_tokens: Option<u32>,
    pub cut: BTreeMap<String, usize>,
}

/// §5 with an LLM: every waiting event's trials, at most `llm.concurrency` requests in flight
/// across events. A prompt that would not fit the context window (`llm.context_tokens`, or
/// what the server reports) sends fewer segments per cluster.
pub(in crate::run) async fn ask_llm(
    client: &llm::Client,
    config: &llm::LlmConfig,
    prompts: &[(String, Vec<Vec<String>>)],
) -> Asked {
    use futures::StreamExt;
    let context_tokens = match config.context_tokens {
        0 if config.backend == llm::Backend::Openai => client.server_context().await,
        0 => None,
        n => Some(n),
    };
    let mut cut = BTreeMap::new();
    let bar = crate::progress::Bar::start(
        "LLM estimation",
        prompts.len() as u64 * u64::from(config.trials),
    );
    let mut fitted: Vec<(&String, Vec<Vec<&str>>)> = Vec::with_capacity(prompts.len());
    for (event, groups) in prompts {
        let mut groups: Vec<Vec<&str>> = groups
            .iter()
            .map(|g| g.iter().map(String::as_str).collect())
            .collect();
        if let Some(window) = context_tokens {
            let wanted = groups.iter().map(Vec::len).max().unwrap_or(0);
            let n = llm::prompt::segments_that_fit(
                &groups,
                wanted,
                window as usize,
                config.max_tokens as usize,
            );
            if n < wanted {
                for g in &mut groups {
                    g.truncate(n);
                }
                cut.insert(event.clone(), n);
            }
        }
        fitted.push((event, groups));
    }
    if !cut.is_empty() {
        tracing::warn!(
            "{} prompts cut to fit a context of {} tokens (fewer segments per cluster; see run.json)",
            cut.len(),
            context_tokens.unwrap_or_default()
        );
    }
    let jobs = fitted.into_iter().flat_map(|(event, groups)| {
        // The event's trials wait before retries against one bound together.
        let waits = Arc::new(llm::EventWaits::new(event, config.event_retry_wait));
        (0..config.trials).map(move |trial| {
            let groups = groups.clone();
            let waits = Arc::clone(&waits);
            async move {
                let answer =
                    llm::estimate_for(client, &groups, trial, config.answer_retries, &waits).await;
                ((event.clone(), trial), answer)
            }
        })
    });
    let mut answers = BTreeMap::new();
    let mut stream = futures::stream::iter(jobs).buffer_unordered(config.concurrency);
    while let Some((key, answer)) = stream.next().await {
        bar.inc();
        answers.insert(key, answer);
    }
    bar.finish();
    Asked {
        answers,
        context_tokens,
        cut,
    }
}

/// LLM episodes as classification targets (§6): each vector is the harmonic-weighted mean of
/// the sentence embeddings of [title joined by spaces, example sentence 1, 2, …]. Texts already
/// in `known` (the event's segments, and texts of earlier trials) are not encoded again.
pub(in crate::run) fn llm_specs(
    encoder: &Encoder<DefaultBackend>,
    known: &mut HashMap<String, Vec<f32>>,
    episodes: &[llm::LlmEpisode],
) -> Result<Vec<EpisodeSpec>, String> {
    let texts_of = |e: &llm::LlmEpisode| -> Vec<String> {
        std::iter::once(e.title.join(" "))
            .chain(e.example_sentences.iter().cloned())
            .map(|t| normalise(&t))
            .collect()
    };
    let mut new: Vec<String> = episodes
        .iter()
        .flat_map(texts_of)
        .filter(|t| !known.contains_key(t))
        .collect();
    new.sort();
    new.dedup();
    if !new.is_empty() {
        let refs: Vec<&str> = new.iter().map(String::as_str).collect();
        let vectors = encoder
            .sentence_embeddings(&refs)
            .map_err(|e| format!("encoding the LLM's episodes: {e}"))?;
        for (i, text) in new.into_iter().enumerate() {
            known.insert(text, vectors.row(i).to_vec());
        }
    }
    Ok(episodes
        .iter()
        .map(|e| {
            let texts = texts_of(e);
            let rows: Vec<&[f32]> = texts.iter().map(|t| known[t].as_slice()).collect();
            EpisodeSpec {
                vector: episodes::classify::harmonic_mean_vector(&rows),
                title: e.title.join(" "),
                title_fields: e.title.clone(),
                keywords: e.keywords.clone(),
                example_sentences: e.example_sentences.clone(),
                source: "llm",
            }
        })
        .collect())
}

/// The context window the LLM stage used and the events whose prompts were cut to fit it.
type Context = (Option<u32>, BTreeMap<String, usize>);

/// §5 on worker 0: asks the LLM for every waiting event (taking the prompts out of `reports`).
/// Returns the answers to send to the owners (none on other workers) and the context.
fn ask_from_worker0(
    ctx: &Ctx,
    reports: &mut BTreeMap<String, EventReport>,
    stages: &mut Vec<StageTime>,
) -> (Vec<ToOwner>, Context) {
    let started = Instant::now();
    let mut context: Context = (None, BTreeMap::new());
    let (0, Some(client)) = (ctx.index, &ctx.shared.llm) else {
        return (Vec::new(), context);
    };
    if ctx.shared.stopped() {
        return (Vec::new(), context);
    }
    let prompts: Vec<(String, Vec<Vec<String>>)> = reports
        .iter_mut()
        .filter_map(|(e, r)| Some((e.clone(), r.prompt.take()?)))
        .collect();
    // Stopped (the requests in flight dropped) when the run is interrupted.
    let stopped = async {
        while !ctx.shared.interrupted() {
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    };
    let asked = ctx.runtime.block_on(async {
        tokio::select! {
            asked = ask_llm(client, &ctx.job().llm, &prompts) => Some(asked),
            () = stopped => None,
        }
    });
    let Some(asked) = asked else {
        return (Vec::new(), context);
    };
    context = (asked.context_tokens, asked.cut);
    let mut by_event: BTreeMap<String, Vec<TrialAnswer>> = BTreeMap::new();
    for ((event, trial), answer) in asked.answers {
        by_event
            .entry(event)
            .or_default()
            .push((trial, answer.map_err(|e| e.to_string())));
    }
    let answers_out = by_event
        .into_iter()
        .map(|(e, a)| ToOwner::Answers(e, a))
        .collect();
    stages.push(StageTime {
        stage: "llm".into(),
        seconds: started.elapsed().as_secs_f64(),
    });
    (answers_out, context)
}

/// What the LLM round starts from: worker 0's reports (with the prompts) and stages, this
/// worker's events waiting for answers, the owners and the encoders.
pub(in crate::run) struct LlmRound<'a> {
    pub(in crate::run) reports: BTreeMap<String, EventReport>,
    pub(in crate::run) stages: Vec<StageTime>,
    pub(in crate::run) pending: BTreeMap<String, (Pending, EventReport)>,
    pub(in crate::run) owners: &'a Arc<BTreeMap<String, usize>>,
    pub(in crate::run) encoder: Option<&'a Encoders>,
    pub(in crate::run) waves: usize,
}

/// §5–§6 with the LLM, on every worker: worker 0 asks ([`ask_from_worker0`]), the owners
/// classify ([`classify_answers`]); worker 0 returns what it gathered.
pub(in crate::run) fn llm_round(
    ctx: &Ctx,
    worker: &mut timely::worker::Worker,
    round: LlmRound,
) -> Option<GatheredReports> {
    let LlmRound {
        mut reports,
        mut stages,
        pending,
        owners,
        encoder,
        waves,
    } = round;
    let (answers_out, context) = ask_from_worker0(ctx, &mut reports, &mut stages);
    let started = Instant::now();
    classify_answers(
        ctx,
        worker,
        answers_out,
        owners,
        encoder,
        pending,
        &mut reports,
    );
    if ctx.index != 0 {
        return None;
    }
    stages.push(StageTime {
        stage: "classification".into(),
        seconds: started.elapsed().as_secs_f64(),
    });
    Some(GatheredReports {
        llm: Some(llm_report(ctx, &reports, context)?),
        reports,
        stages,
        waves,
    })
}

/// The owners classify their waiting events against the LLM's answers and write their
/// checkpoints; an event no answer reached fails (a re-run computes it). The new reports go to
/// worker 0's `reports`.
fn classify_answers(
    ctx: &Ctx,
    worker: &mut timely::worker::Worker,
    answers_out: Vec<ToOwner>,
    owners: &Arc<BTreeMap<String, usize>>,
    encoder: Option<&Encoders>,
    mut pending: BTreeMap<String, (Pending, EventReport)>,
    reports: &mut BTreeMap<String, EventReport>,
) {
    let job = ctx.job();
    let mut second = Vec::new();
    for message in shuffle(worker, answers_out, router(owners)) {
        let ToOwner::Answers(event, answers_of) = message else {
            continue;
        };
        let (Some((p, mut report)), Some(encoder)) = (pending.remove(&event), encoder) else {
            continue;
        };
        let steps = crate::progress::steps::Steps::new(&event, None);
        let mut classified = ctx
            .shared
            .pool
            .install(|| classify_with_llm(job, encoder.sentence(), &event, &p, answers_of, &steps));
        p.novelty(
            &job.episodes,
            0,
            episodes::novelty::Rows {
                episodes: &mut classified.episodes,
                assignments: &mut classified.assignments,
                left_out: &mut classified.left_out,
            },
        );
        episodes::headlines::retitle(
            &p.segments,
            &mut classified.episodes,
            &classified.assignments,
        );
        let (eps, asg) = (classified.episodes, classified.assignments);
        finish_counts(&mut report.status, &job.episodes, &eps, asg.len());
        // The counts are trial 0's (the one the summaries show).
        report.status.counts.left_out = episodes::left_out_counts(&classified.left_out, 0);
        report.status.llm = Some(classified.llm);
        report.outputs.episode_keys =
            crate::lineage::episode_keys(&p.segments, &p.embeddings, &eps, &asg);
        report.outputs.episodes = eps;
        report.outputs.assignments = asg;
        report.outputs.left_out = classified.left_out;
        report
            .outputs
            .describe(&p.segments, &p.facts, &mut report.status);
        let outputs = std::mem::take(&mut report.outputs);
        ctx.write_checkpoint(&report.status.fingerprint, &report.status, outputs);
        report.prompt = None;
        second.push(report);
    }
    // Events left waiting (no answers reached them): failed, so that a re-run computes them.
    for (_, (_, mut report)) in pending {
        set_failed(
            &mut report.status,
            "no LLM answers reached the event's owner".into(),
        );
        let outputs = std::mem::take(&mut report.outputs);
        ctx.write_checkpoint(&report.status.fingerprint, &report.status, outputs);
        second.push(report);
    }
    for report in shuffle(worker, second, |_| 0) {
        reports.insert(report.status.key_event.clone(), report);
    }
}

/// The LLM part of `run.json` (worker 0; `None` without a client).
fn llm_report(
    ctx: &Ctx,
    reports: &BTreeMap<String, EventReport>,
    context: Context,
) -> Option<LlmReport> {
    let job = ctx.job();
    let client = ctx.shared.llm.as_ref()?;
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
    Some(LlmReport {
        backend: job.llm.backend.name(),
        model: job.llm.model.clone(),
        url: client.url().to_string(),
        trials: job.llm.trials,
        usage,
        fallbacks,
        structured: client.form() != crate::llm::Form::Off,
        structured_form: client.form().name(job.llm.backend),
        structured_off: client.structured_off(),
        context_tokens: context.0,
        prompts_cut: context.1,
    })
}
