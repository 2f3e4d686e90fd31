//! The `[llm]` section of a job: which protocol, server, model and key, and how hard to try.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::error::LlmError;

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
    /// The longest wait before a retry, in seconds: a server's `Retry-After` above it is cut to
    /// it (and said in the log).
    pub max_retry_wait: f64,
    /// The most an event's requests (all its trials) wait before retries in all, in seconds;
    /// a retry that would pass it is not made, and the trial falls back to no-LLM episodes.
    pub event_retry_wait: f64,
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
            max_retry_wait: 60.0,
            event_retry_wait: 180.0,
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
        if !(self.max_retry_wait >= 0.0 && self.max_retry_wait.is_finite()) {
            return bad("max_retry_wait", "must be a number of seconds, 0 or more");
        }
        if !(self.event_retry_wait >= 0.0 && self.event_retry_wait.is_finite()) {
            return bad("event_retry_wait", "must be a number of seconds, 0 or more");
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
