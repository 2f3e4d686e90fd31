//! §5 with an LLM: worker 0 asks for every waiting event, the owners classify against the
//! answers.

use std::collections::{BTreeMap, HashMap};

use super::exchange::TrialAnswer;
use super::pending::{normalise, Pending};
use super::report::{EventLlm, Fallback};
use crate::encoder::{DefaultBackend, Encoder};
use crate::episodes::{self, EpisodeSpec};
use crate::job::Job;
use crate::llm::{self, LlmError};
use crate::tables::{Assignment, Episode};

/// An event's LLM trials: its answers classified against (§6), a failed trial replaced by the
/// no-LLM episodes.
pub(super) fn classify_with_llm(
    job: &Job,
    encoder: &Encoder<DefaultBackend>,
    event: &str,
    pending: &Pending,
    mut answers: Vec<TrialAnswer>,
) -> (String, EventLlm, Vec<Episode>, Vec<Assignment>) {
    answers.sort_by_key(|a| a.0);
    let input = pending.input();
    let mut known = pending.known_embeddings();
    let mut status = EventLlm::default();
    let (mut episodes_out, mut assignments_out) = (Vec::new(), Vec::new());
    for (trial, answer) in answers {
        let from_llm = answer.and_then(|eps| {
            let specs = llm_specs(encoder, &mut known, &eps)?;
            let out = episodes::assign(
                &input,
                &pending.prepared.key_event,
                &specs,
                &job.episodes,
                trial,
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
        let (eps, asg) = match from_llm {
            Ok(out) => {
                status.trials_ok += 1;
                out
            }
            Err(error) => {
                tracing::warn!(
                    "{event}: trial {trial}: LLM estimation failed, using no-LLM episodes: {error}"
                );
                status.fallbacks.push(Fallback { trial, error });
                let (_, eps, asg) =
                    episodes::episodes_without_llm(&input, &pending.prepared, &job.episodes, trial);
                (eps, asg)
            }
        };
        status.episodes_per_trial.push(eps.len());
        episodes_out.extend(eps);
        assignments_out.extend(asg);
    }
    (event.to_string(), status, episodes_out, assignments_out)
}

/// What the LLM stage asked: answers by (event, trial), the context window used, and the events
/// whose prompts were cut to fit it (event → segments per cluster sent).
pub(super) struct Asked {
    pub answers: BTreeMap<(String, u32), Result<Vec<llm::LlmEpisode>, LlmError>>,
    pub context_tokens: Option<u32>,
    pub cut: BTreeMap<String, usize>,
}

/// §5 with an LLM: every waiting event's trials, at most `llm.concurrency` requests in flight
/// across events. A prompt that would not fit the context window (`llm.context_tokens`, or
/// what the server reports) sends fewer segments per cluster.
pub(super) async fn ask_llm(
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
        (0..config.trials).map(move |trial| {
            let groups = groups.clone();
            async move {
                let answer = llm::estimate(client, &groups, trial, config.answer_retries).await;
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
pub(super) fn llm_specs(
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
