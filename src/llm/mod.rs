//! LLM episode estimation (ALGORITHM.md §5; paper §4.3 and the prompt of appendix G): each key
//! event's kept candidate clusters, as their most salient segments, go to an LLM — the Anthropic
//! Messages API or any OpenAI-compatible chat server (OpenAI, vLLM, llama.cpp, Ollama) — which
//! returns 2..k episodes with a five-field title, keywords and example sentences.
//!
//! [`prompt`] builds the prompt and parses and validates answers; [`client`] is the transport
//! (retries, budget, cache). [`estimate`] runs one event's trial: ask, validate, and send an
//! invalid answer back with a note of what was wrong, up to `answer_retries` times.

pub mod client;
pub mod prompt;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub use client::{Client, Message, Usage};
pub use prompt::LlmEpisode;

/// Which LLM protocol to speak.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// No LLM: each kept candidate cluster is an episode (the paper's ablation).
    #[default]
    None,
    /// The Anthropic Messages API (`POST {base_url}/v1/messages`).
    Anthropic,
    /// OpenAI chat completions (`POST {base_url}/chat/completions`), also vLLM, llama.cpp
    /// server, Ollama.
    Openai,
}

impl Backend {
    /// Its name in job files.
    pub fn name(self) -> &'static str {
        match self {
            Backend::None => "none",
            Backend::Anthropic => "anthropic",
            Backend::Openai => "openai",
        }
    }
}

/// The `[llm]` section of a job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LlmConfig {
    /// `none`, `anthropic` or `openai`.
    pub backend: Backend,
    /// The server; default `https://api.anthropic.com` or `https://api.openai.com/v1`.
    pub base_url: Option<String>,
    /// The model name the server knows (required with a backend).
    pub model: String,
    /// Sampling temperature (the reference: 1).
    pub temperature: f64,
    /// Most tokens per answer.
    pub max_tokens: u32,
    /// Estimations per event (the reference: 10, scores reported as their mean).
    pub trials: u32,
    /// Requests in flight at once, across events.
    pub concurrency: usize,
    /// Seconds to wait for one answer.
    pub timeout: f64,
    /// Seconds to wait for the connection to the server (apart from `timeout`: a server that is
    /// down is found at once, a slow model on a CPU may still take minutes to answer).
    pub connect_timeout: f64,
    /// The environment variable holding the API key (default `ANTHROPIC_API_KEY` /
    /// `OPENAI_API_KEY`). The key is read only from there; it is never written anywhere.
    pub api_key_env: Option<String>,
    /// Retries of one request after 429, 5xx, timeouts or dropped connections.
    pub retries: u32,
    /// Times an invalid answer is sent back with a note of what was wrong.
    pub answer_retries: u32,
    /// Most HTTP requests in one run (retries included); past it, events fall back.
    pub max_requests: u64,
    /// Cache answers on disk, so a re-run sends no requests and gives the same bytes.
    pub cache: bool,
    /// The cache folder (default `$EPIMINE_CACHE/llm`, else `~/.cache/epimine/llm`).
    pub cache_dir: Option<String>,
    /// Most salient segments of each candidate cluster put in the prompt.
    pub segments_per_cluster: usize,
    /// The server's context window in tokens (prompt and answer together); 0: read it from the
    /// server where it says (llama.cpp's `/props`), else no budget. A prompt that would not fit
    /// with `max_tokens` of answer sends fewer segments per cluster (said in `run.json`).
    pub context_tokens: u32,
    /// Ask for the answer's JSON Schema through the protocol's structured output (OpenAI-style
    /// `response_format` `json_schema`; Anthropic a forced tool call). A server that rejects the
    /// field is detected and the run goes on without it (said in `run.json`).
    pub structured: bool,
}

impl Default for LlmConfig {
    fn default() -> Self {
        Self {
            backend: Backend::None,
            base_url: None,
            model: String::new(),
            temperature: 1.0,
            max_tokens: 4096,
            trials: 1,
            concurrency: 4,
            timeout: 120.0,
            connect_timeout: 10.0,
            api_key_env: None,
            retries: 5,
            answer_retries: 2,
            max_requests: 10_000,
            cache: true,
            cache_dir: None,
            segments_per_cluster: 5,
            context_tokens: 0,
            structured: true,
        }
    }
}

/// Errors of the LLM stage.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LlmError {
    /// The `[llm]` section is invalid.
    #[error("llm.{key}: {message}")]
    Config {
        /// The key.
        key: &'static str,
        /// What is wrong.
        message: String,
    },
    /// The API key's variable is not set.
    #[error("the API key variable {0} (llm.api_key_env) is not set")]
    NoKey(String),
    /// The HTTP client could not be built, or no cache folder is known.
    #[error("LLM client: {0}")]
    Client(String),
    /// The server refused the request (not retried).
    #[error("{0}")]
    Request(String),
    /// Every attempt failed.
    #[error("{attempts} attempts failed; the last: {last}")]
    Exhausted {
        /// Attempts made.
        attempts: u32,
        /// The last failure.
        last: String,
    },
    /// The run's request budget is spent.
    #[error("the run's budget of {0} requests (llm.max_requests) is spent")]
    Budget(u64),
    /// Every answer was invalid.
    #[error("no valid answer after {attempts} answers; the last: {problem}; it read: {answer:?}")]
    Invalid {
        /// Answers received.
        attempts: u32,
        /// What was wrong with the last.
        problem: String,
        /// The start of the last answer (at most 1 KB), to see what the model said.
        answer: String,
    },
    /// The server refused the key (401 or 403): the LLM stage stops, no further request.
    #[error("HTTP {status} from {url}: the server refused the API key in {variable} (llm.api_key_env); no further LLM requests in this run")]
    Auth {
        /// The HTTP status.
        status: u16,
        /// The endpoint.
        url: String,
        /// The variable that holds the key (never its value).
        variable: String,
    },
    /// An earlier request of this run was refused for its key; this one was not sent.
    #[error("not sent: {0}")]
    Stopped(String),
    /// The server rejected the structured-output field (the request is sent again without it).
    #[error("the server rejected the structured-output field")]
    StructuredRejected,
}

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

impl LlmConfig {
    /// Whether an LLM is used.
    pub fn enabled(&self) -> bool {
        self.backend != Backend::None
    }

    /// The server's base URL.
    pub fn base_url(&self) -> &str {
        match (&self.base_url, self.backend) {
            (Some(url), _) => url,
            (None, Backend::Anthropic) => "https://api.anthropic.com",
            (None, _) => "https://api.openai.com/v1",
        }
    }

    /// The name of the API key's environment variable.
    pub fn key_variable(&self) -> &str {
        match (&self.api_key_env, self.backend) {
            (Some(v), _) => v,
            (None, Backend::Anthropic) => "ANTHROPIC_API_KEY",
            (None, _) => "OPENAI_API_KEY",
        }
    }

    /// The API key from the environment. Anthropic needs one; an OpenAI-compatible server
    /// without a key set is sent none (local servers), unless `api_key_env` was named.
    pub fn api_key(&self) -> Result<Option<String>, LlmError> {
        let var = self.key_variable();
        match std::env::var(var).ok().filter(|k| !k.is_empty()) {
            Some(key) => Ok(Some(key)),
            None if self.backend == Backend::Openai && self.api_key_env.is_none() => Ok(None),
            None => Err(LlmError::NoKey(var.to_string())),
        }
    }

    /// The answer cache's folder.
    pub fn cache_folder(&self) -> Result<PathBuf, LlmError> {
        if let Some(dir) = &self.cache_dir {
            return Ok(PathBuf::from(dir));
        }
        if let Some(dir) = std::env::var_os("EPIMINE_CACHE").filter(|d| !d.is_empty()) {
            return Ok(PathBuf::from(dir).join("llm"));
        }
        std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(|h| PathBuf::from(h).join(".cache/epimine/llm"))
            .ok_or_else(|| {
                LlmError::Client("no cache folder: set llm.cache_dir, EPIMINE_CACHE or HOME".into())
            })
    }

    /// Checks the values (not the key, which is read at run time).
    pub fn validate(&self) -> Result<(), LlmError> {
        let bad = |key: &'static str, message: &str| {
            Err(LlmError::Config {
                key,
                message: message.into(),
            })
        };
        // Checked with or without a backend: a job that says `trials = 0` is refused, not run.
        if self.trials == 0 {
            return bad("trials", "must be at least 1");
        }
        if !self.enabled() {
            return Ok(());
        }
        if self.model.trim().is_empty() {
            return bad("model", "give the model name the server knows");
        }
        if !(0.0..=2.0).contains(&self.temperature) {
            return bad("temperature", "must be in [0, 2]");
        }
        if self.concurrency == 0 {
            return bad("concurrency", "must be at least 1");
        }
        if !(self.timeout > 0.0 && self.timeout.is_finite()) {
            return bad("timeout", "must be a positive number of seconds");
        }
        if !(self.connect_timeout > 0.0 && self.connect_timeout.is_finite()) {
            return bad("connect_timeout", "must be a positive number of seconds");
        }
        if self.max_tokens == 0 {
            return bad("max_tokens", "must be at least 1");
        }
        if self.segments_per_cluster == 0 {
            return bad("segments_per_cluster", "must be at least 1");
        }
        if let Some(url) = &self.base_url {
            match url::Url::parse(url) {
                Ok(u) if matches!(u.scheme(), "http" | "https") => {}
                _ => return bad("base_url", "must be an http:// or https:// URL"),
            }
        }
        Ok(())
    }
}

/// One trial of one event's estimation: the prompt of appendix G over `groups` (each kept
/// cluster's most salient segments), the answer parsed and validated; an invalid answer is sent
/// back with a note of what was wrong, up to `answer_retries` times.
pub async fn estimate(
    client: &Client,
    groups: &[Vec<&str>],
    trial: u32,
    answer_retries: u32,
) -> Result<Vec<LlmEpisode>, LlmError> {
    let max = prompt::max_episodes(groups.len());
    let mut messages = vec![Message {
        role: "user",
        content: prompt::build_prompt(groups),
    }];
    let schema = prompt::answer_schema(max);
    let mut answers = 0;
    loop {
        let (text, from_cache) = client.complete(&messages, trial, &schema).await?;
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
