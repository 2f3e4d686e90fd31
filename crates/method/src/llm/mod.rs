//! LLM episode estimation (docs/method.md §5; paper §4.3 and the prompt of appendix H): each key
//! event's kept candidate clusters, as their most salient segments, go to an LLM — the Anthropic
//! Messages API or any OpenAI-compatible chat server (OpenAI, vLLM, llama.cpp, Ollama) — which
//! returns 2..k episodes with a five-field title, keywords and example sentences.
//!
//! [`config`] is the `[llm]` section and [`error`] its errors; [`prompt`] builds the prompt and
//! parses and validates answers; [`client`] asks for one completion (retries, budget), from
//! the answer cache (`cache`) or over HTTP (`transport`) in the server's wire format
//! ([`protocol`]). [`estimate`] runs one event's trial: ask, validate, and send an invalid
//! answer back with a note of what was wrong, up to `answer_retries` times.

mod cache;
pub mod client;
pub mod config;
pub mod error;
pub mod prompt;
pub mod protocol;
mod retry;
mod transport;

pub use client::{Client, Usage};
pub use config::{Backend, LlmConfig};
pub use error::LlmError;
pub use prompt::LlmEpisode;
pub use protocol::{Form, Message};
pub use retry::EventWaits;

/// The start of `text`, at most `limit` bytes (on a character boundary), marked when cut.
pub fn head(text: &str, limit: usize) -> String {
    if text.len() <= limit {
        return text.to_string();
    }
    let mut end = limit;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// One trial of one event's estimation: the prompt of appendix H over `groups` (each kept
/// cluster's most salient segments), the answer parsed and validated; an invalid answer is sent
/// back with a note of what was wrong, up to `answer_retries` times.
pub async fn estimate(
    client: &Client,
    groups: &[Vec<&str>],
    trial: u32,
    answer_retries: u32,
) -> Result<Vec<LlmEpisode>, LlmError> {
    let waits = EventWaits::new("a request", client.config().event_retry_wait);
    estimate_for(client, groups, trial, answer_retries, &waits).await
}

/// [`estimate`] for one event, whose waits before retries (every trial's) count against
/// `llm.event_retry_wait` together.
pub async fn estimate_for(
    client: &Client,
    groups: &[Vec<&str>],
    trial: u32,
    answer_retries: u32,
    waits: &EventWaits,
) -> Result<Vec<LlmEpisode>, LlmError> {
    let max = prompt::max_episodes(groups.len());
    let mut messages = vec![Message {
        role: "user",
        content: prompt::build_prompt(groups),
    }];
    let schema = prompt::answer_schema(max);
    let mut answers = 0;
    loop {
        let (text, from_cache) = client
            .complete_for(&messages, trial, &schema, waits)
            .await?;
        answers += 1;
        match prompt::parse_answer(&text, max) {
            Ok(episodes) => {
                // Only answers that parse are cached, under the first question (so that a
                // re-run asks nothing, even where this run needed repairs).
                if !from_cache || messages.len() > 1 {
                    client.store(&messages[..1], trial, &schema, &text).await;
                }
                return Ok(episodes);
            }
            Err(problem) if answers > answer_retries => {
                return Err(LlmError::Invalid {
                    attempts: answers,
                    problem,
                    answer: head(&text, 1024),
                })
            }
            Err(problem) => {
                tracing::debug!("invalid LLM answer ({problem}); asking again");
                client.count_repair();
                messages.push(Message {
                    role: "assistant",
                    content: text,
                });
                messages.push(Message {
                    role: "user",
                    content: prompt::repair_note(&problem),
                });
            }
        }
    }
}
