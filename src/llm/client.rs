//! The LLM transport: the Anthropic Messages API and OpenAI-compatible chat completions over
//! reqwest, with retries (backoff with jitter; `retry-after` honoured on 429), a per-run request
//! budget, and a disk cache keyed by (backend, model, prompt hash, trial, temperature,
//! max_tokens, the answer's schema).

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde::Serialize;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::config::{Backend, LlmConfig};
use super::error::LlmError;
use super::retry::backoff;
pub use super::retry::EventWaits;

/// One chat message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Message {
    /// `user` or `assistant`.
    pub role: &'static str,
    /// Its text.
    pub content: String,
}

/// Request counts of a run, for `run.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Usage {
    /// HTTP requests sent (retries included).
    pub requests: u64,
    /// Completions answered from the cache.
    pub cache_hits: u64,
    /// Requests retried (429, 5xx, timeouts, dropped connections, unreadable bodies).
    pub retries: u64,
    /// Answers sent back for repair because they were invalid.
    pub repairs: u64,
}

#[derive(Default)]
struct Counters {
    requests: AtomicU64,
    cache_hits: AtomicU64,
    retries: AtomicU64,
    repairs: AtomicU64,
}

/// A client for one run: shared by every event's estimation.
pub struct Client {
    config: LlmConfig,
    http: reqwest::Client,
    key: Option<String>,
    url: String,
    cache: Option<PathBuf>,
    counters: Counters,
    /// Set when the server refused the key: no further request is sent.
    stopped: std::sync::atomic::AtomicBool,
    stop_reason: std::sync::Mutex<String>,
    /// The structured-output form requests use now ([`Form`] as a number): lowered when the
    /// server rejects one, for the rest of the run.
    form: std::sync::atomic::AtomicU8,
    /// What the server said when it rejected a form, in order.
    rejections: std::sync::Mutex<Vec<String>>,
}

/// How a request asks for the answer's schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// The protocol's own: OpenAI `response_format` `json_schema` (llama.cpp's `llama-server`,
    /// vLLM, OpenAI); Anthropic a forced tool call.
    Native,
    /// OpenAI-style `response_format` `{"type": "json_object", "schema": …}` (llama-cpp-python's
    /// server, which refuses `json_schema`).
    JsonObject,
    /// No structured output.
    Off,
}

impl Form {
    fn from_u8(n: u8) -> Self {
        match n {
            0 => Form::Native,
            1 => Form::JsonObject,
            _ => Form::Off,
        }
    }

    /// Its name in `run.json`.
    pub fn name(self, backend: Backend) -> &'static str {
        match (self, backend) {
            (Form::Native, Backend::Anthropic) => "tool",
            (Form::Native, _) => "json_schema",
            (Form::JsonObject, _) => "json_object",
            (Form::Off, _) => "off",
        }
    }
}

/// The request fields of structured output a server may reject, as they appear in its error.
const STRUCTURED_FIELDS: [&str; 4] = ["response_format", "json_schema", "tool_choice", "tools"];

enum Failure {
    /// Worth another attempt, after at least this long.
    /// (status 0: no HTTP answer), with the status and the server's body.
    Retry(String, Option<Duration>, u16, String),
    /// The key was refused (401/403): not worth any further request in this run.
    Auth(u16),
    /// Another 4xx refusal, with the server's body.
    Refused(u16, String),
}

impl Client {
    /// A client for `config` with its API key (read from the environment by the caller).
    pub fn new(config: &LlmConfig, key: Option<String>) -> Result<Self, LlmError> {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs_f64(config.timeout))
            .connect_timeout(Duration::from_secs_f64(config.connect_timeout))
            .user_agent(concat!("epimine/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| LlmError::Client(e.to_string()))?;
        let base = config.base_url().trim_end_matches('/').to_string();
        let url = match config.backend {
            Backend::Anthropic => format!("{base}/v1/messages"),
            Backend::Openai => format!("{base}/chat/completions"),
            Backend::None => return Err(LlmError::Client("backend is `none`".into())),
        };
        let cache = if config.cache {
            Some(config.cache_folder()?)
        } else {
            None
        };
        Ok(Self {
            config: config.clone(),
            http,
            key,
            url,
            cache,
            counters: Counters::default(),
            stopped: Default::default(),
            stop_reason: Default::default(),
            form: std::sync::atomic::AtomicU8::new(if config.structured { 0 } else { 2 }),
            rejections: Default::default(),
        })
    }

    /// The settings it was made with.
    pub fn config(&self) -> &LlmConfig {
        &self.config
    }

    /// The endpoint requests go to.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The context window the server reports (llama.cpp's `GET /props`:
    /// `default_generation_settings.n_ctx`), if it reports one within a few seconds.
    pub async fn server_context(&self) -> Option<u32> {
        let base = self.config.base_url().trim_end_matches('/');
        let root = base.strip_suffix("/v1").unwrap_or(base);
        let response = self
            .http
            .get(format!("{root}/props"))
            .timeout(Duration::from_secs(5))
            .send()
            .await
            .ok()?;
        if !response.status().is_success() {
            return None;
        }
        let v: Value = response.json().await.ok()?;
        v.pointer("/default_generation_settings/n_ctx")
            .or_else(|| v.get("n_ctx"))
            .and_then(Value::as_u64)
            .and_then(|n| u32::try_from(n).ok())
            .filter(|&n| n > 0)
    }

    /// Counts so far.
    pub fn usage(&self) -> Usage {
        Usage {
            requests: self.counters.requests.load(Ordering::Relaxed),
            cache_hits: self.counters.cache_hits.load(Ordering::Relaxed),
            retries: self.counters.retries.load(Ordering::Relaxed),
            repairs: self.counters.repairs.load(Ordering::Relaxed),
        }
    }

    /// What the server said when it rejected a structured-output form, if it did.
    pub fn structured_off(&self) -> Option<String> {
        let said = self.rejections.lock().expect("rejections");
        (!said.is_empty()).then(|| said.join("; then "))
    }

    /// The structured-output form requests use now.
    pub fn form(&self) -> Form {
        Form::from_u8(self.form.load(Ordering::Relaxed))
    }

    /// The next form after `from` was rejected (Anthropic has no second form).
    fn lower(&self, from: Form, why: String) {
        let next = match (from, self.config.backend) {
            (Form::Native, Backend::Openai) => 1,
            _ => 2,
        };
        let current = from as u8;
        if self
            .form
            .compare_exchange(current, next, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
        {
            tracing::warn!(
                "{why}; asking with structured output `{}` from now on",
                Form::from_u8(next).name(self.config.backend)
            );
            self.rejections.lock().expect("rejections").push(why);
        }
    }

    pub(super) fn count_repair(&self) {
        self.counters.repairs.fetch_add(1, Ordering::Relaxed);
    }

    /// The cache key of a completion: backend, model, prompt (every message), trial,
    /// temperature, max_tokens and the answer's schema when structured output is asked for.
    fn cache_key(&self, messages: &[Message], trial: u32, schema: Option<&Value>) -> String {
        let mut h = Sha256::new();
        let prompt = serde_json::to_vec(messages).expect("messages serialize");
        let prompt_hash = Sha256::digest(&prompt);
        for part in [
            self.config.backend.name().as_bytes(),
            self.config.model.as_bytes(),
            prompt_hash.as_slice(),
            &trial.to_le_bytes(),
            &self.config.temperature.to_bits().to_le_bytes(),
            &self.config.max_tokens.to_le_bytes(),
            schema.map(|v| v.to_string()).unwrap_or_default().as_bytes(),
        ] {
            h.update((part.len() as u64).to_le_bytes());
            h.update(part);
        }
        crate::digest::hex(&h.finalize())
    }

    fn cache_path(
        &self,
        messages: &[Message],
        trial: u32,
        schema: Option<&Value>,
    ) -> Option<std::path::PathBuf> {
        self.cache
            .as_ref()
            .map(|dir| dir.join(format!("{}.json", self.cache_key(messages, trial, schema))))
    }

    /// One completion: from the cache (`true`), else from the server with retries (`false`).
    /// `trial` tells the trials of one prompt apart (in the cache key and, for OpenAI-style
    /// servers, in the request's `seed`). The answer is not cached here: the caller
    /// [`store`](Self::store)s the answers it accepts.
    ///
    /// With `llm.structured`, the request carries `schema` in the protocol's structured-output
    /// [`Form`]; a server that rejects the form (an error naming its field) gets the request
    /// again in the next one (json_schema, then json_object, then none), and so do all later
    /// requests of the run. The cache key holds the schema whatever the form.
    pub async fn complete(
        &self,
        messages: &[Message],
        trial: u32,
        schema: &Value,
    ) -> Result<(String, bool), LlmError> {
        let waits = EventWaits::new("a request", self.config.event_retry_wait);
        self.complete_for(messages, trial, schema, &waits).await
    }

    /// [`complete`](Self::complete) for one event, whose waits before retries (every trial's)
    /// count against `llm.event_retry_wait` together.
    pub async fn complete_for(
        &self,
        messages: &[Message],
        trial: u32,
        schema: &Value,
        waits: &EventWaits,
    ) -> Result<(String, bool), LlmError> {
        let schema = self.config.structured.then_some(schema);
        if self.stopped.load(Ordering::Relaxed) {
            let why = self.stop_reason.lock().expect("stop reason").clone();
            return Err(LlmError::Stopped(why));
        }
        if let Some(path) = self.cache_path(messages, trial, schema) {
            if let Ok(bytes) = tokio::fs::read(&path).await {
                if let Some(text) = serde_json::from_slice::<Value>(&bytes)
                    .ok()
                    .and_then(|v| v.get("text")?.as_str().map(str::to_string))
                {
                    self.counters.cache_hits.fetch_add(1, Ordering::Relaxed);
                    return Ok((text, true));
                }
            }
        }
        loop {
            match self
                .request_with_retries(messages, trial, schema, waits)
                .await
            {
                Err(LlmError::StructuredRejected) => continue,
                other => return other.map(|text| (text, false)),
            }
        }
    }

    /// Caches an accepted answer (whole or not at all; a failure is only a warning), under the
    /// key of the request that gave it.
    pub async fn store(&self, messages: &[Message], trial: u32, schema: &Value, text: &str) {
        let schema = self.config.structured.then_some(schema);
        if let Some(path) = self.cache_path(messages, trial, schema) {
            if let Err(e) = write_whole(&path, &json!({ "text": text })).await {
                tracing::warn!("LLM cache {}: {e}", path.display());
            }
        }
    }

    /// The seed of a trial's request: from the prompt and the trial, so that trials differ and
    /// a re-run repeats (31 bits: servers take it as a signed integer).
    fn seed(messages: &[Message], trial: u32) -> u64 {
        let mut h = Sha256::new();
        h.update(serde_json::to_vec(messages).expect("messages serialize"));
        h.update(trial.to_le_bytes());
        u64::from_le_bytes(h.finalize()[..8].try_into().expect("8 bytes")) >> 33
    }

    async fn request_with_retries(
        &self,
        messages: &[Message],
        trial: u32,
        schema: Option<&Value>,
        waits: &EventWaits,
    ) -> Result<String, LlmError> {
        let form = self.form();
        let body = self.request_body(messages, trial, schema.filter(|_| form != Form::Off), form);
        let sent_schema = schema.is_some() && form != Form::Off;
        let mut attempt = 0u32;
        loop {
            if self.counters.requests.fetch_add(1, Ordering::Relaxed) >= self.config.max_requests {
                self.counters.requests.fetch_sub(1, Ordering::Relaxed);
                return Err(LlmError::Budget(self.config.max_requests));
            }
            let failure = match self.send(&body).await {
                Ok(text) => return Ok(text),
                Err(f) => f,
            };
            match failure {
                Failure::Auth(status) => {
                    let error = LlmError::Auth {
                        status,
                        url: self.url.clone(),
                        variable: self.config.key_variable().to_string(),
                    };
                    *self.stop_reason.lock().expect("stop reason") = error.to_string();
                    self.stopped.store(true, Ordering::Relaxed);
                    return Err(error);
                }
                // A refusal (4xx, or a 5xx from a server that fails on a field it does not
                // know) that names the structured-output field: the next form.
                Failure::Refused(status, text) | Failure::Retry(_, _, status, text)
                    if sent_schema
                        && (400..600).contains(&status)
                        && status != 429
                        && STRUCTURED_FIELDS.iter().any(|f| text.contains(f)) =>
                {
                    let why = format!(
                        "HTTP {status} from {} for structured output `{}`: {}",
                        self.url,
                        form.name(self.config.backend),
                        self.scrub(excerpt(&text))
                    );
                    self.lower(form, why);
                    return Err(LlmError::StructuredRejected);
                }
                Failure::Refused(status, text) => {
                    return Err(LlmError::Request(self.scrub(format!(
                        "HTTP {status} from {}: {}",
                        self.url,
                        excerpt(&text)
                    ))))
                }
                Failure::Retry(why, ..) if attempt >= self.config.retries => {
                    return Err(LlmError::Exhausted {
                        attempts: attempt + 1,
                        last: self.scrub(why),
                    })
                }
                Failure::Retry(why, after, ..) => {
                    let why = self.scrub(why);
                    let (wait, reason) = self.retry_wait(after, attempt, &body, trial);
                    if let Err(waited) = waits.take(wait) {
                        return Err(LlmError::Waited {
                            attempts: attempt + 1,
                            waited: waited.as_secs_f64(),
                            limit: self.config.event_retry_wait,
                            wait: wait.as_secs_f64(),
                            last: why,
                        });
                    }
                    tracing::info!(
                        "LLM {} (trial {trial}): {why}; retry {} of {} in {:.1} s ({reason}; {:.1} s of llm.event_retry_wait = {} s waited)",
                        waits.event,
                        attempt + 1,
                        self.config.retries,
                        wait.as_secs_f64(),
                        waits.waited(),
                        self.config.event_retry_wait,
                    );
                    self.counters.retries.fetch_add(1, Ordering::Relaxed);
                    tokio::time::sleep(wait).await;
                    attempt += 1;
                }
            }
        }
    }

    /// The wait before retry `attempt`, and why that long: the server's `retry-after` (cut to
    /// `llm.max_retry_wait`), else the backoff.
    fn retry_wait(
        &self,
        after: Option<Duration>,
        attempt: u32,
        body: &Value,
        trial: u32,
    ) -> (Duration, String) {
        let max = Duration::from_secs_f64(self.config.max_retry_wait);
        match after {
            Some(asked) if asked > max => (
                max,
                format!(
                    "the server's retry-after of {:.0} s cut to llm.max_retry_wait",
                    asked.as_secs_f64()
                ),
            ),
            Some(asked) => (asked, "the server's retry-after".into()),
            None => (backoff(attempt, body, trial).min(max), "backoff".into()),
        }
    }

    fn request_body(
        &self,
        messages: &[Message],
        trial: u32,
        schema: Option<&Value>,
        form: Form,
    ) -> Value {
        let c = &self.config;
        let mut body = match c.backend {
            // The Messages API has no seed.
            Backend::Anthropic => json!({
                "model": c.model,
                "max_tokens": c.max_tokens,
                "temperature": c.temperature,
                "messages": messages,
            }),
            _ => json!({
                "model": c.model,
                "messages": messages,
                "temperature": c.temperature,
                "max_tokens": c.max_tokens,
                "seed": Self::seed(messages, trial),
            }),
        };
        if let Some(schema) = schema {
            match c.backend {
                Backend::Anthropic => {
                    body["tools"] = json!([{
                        "name": ANSWER_TOOL,
                        "description": "Report the predicted episodes of the key event.",
                        "input_schema": schema,
                    }]);
                    body["tool_choice"] = json!({"type": "tool", "name": ANSWER_TOOL});
                }
                _ if form == Form::JsonObject => {
                    body["response_format"] = json!({"type": "json_object", "schema": schema});
                }
                _ => {
                    body["response_format"] = json!({
                        "type": "json_schema",
                        "json_schema": {"name": ANSWER_TOOL, "schema": schema},
                    });
                }
            }
        }
        body
    }

    async fn send(&self, body: &Value) -> Result<String, Failure> {
        let mut request = self.http.post(&self.url).json(body);
        request = match (self.config.backend, &self.key) {
            (Backend::Anthropic, key) => request
                .header("anthropic-version", "2023-06-01")
                .header("x-api-key", key.as_deref().unwrap_or_default()),
            (_, Some(key)) => request.bearer_auth(key),
            (_, None) => request,
        };
        let response = request
            .send()
            .await
            .map_err(|e| self.transport_failure(e, ""))?;
        let status = response.status();
        let header = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).trim().to_string());
        let retry_after = header.as_deref().and_then(super::retry::retry_after);
        // The header as the server sent it, in the log line of the wait.
        let said = header.map_or(String::new(), |h| {
            format!(" (retry-after: {})", excerpt(&h))
        });
        let text = response
            .text()
            .await
            .map_err(|e| self.transport_failure(e, "reading the answer: "))?;
        if status.as_u16() == 429 {
            return Err(Failure::Retry(
                format!("429 Too Many Requests{said}"),
                retry_after,
                429,
                String::new(),
            ));
        }
        if status.is_server_error() || status.as_u16() == 408 || status.as_u16() == 529 {
            return Err(Failure::Retry(
                format!("HTTP {status}{said}: {}", excerpt(&text)),
                retry_after,
                status.as_u16(),
                text,
            ));
        }
        if matches!(status.as_u16(), 401 | 403) {
            return Err(Failure::Auth(status.as_u16()));
        }
        if !status.is_success() {
            return Err(Failure::Refused(status.as_u16(), text));
        }
        let value: Value = serde_json::from_str(&text).map_err(|e| {
            Failure::Retry(
                format!("the response is not JSON ({e}): {}", excerpt(&text)),
                None,
                0,
                String::new(),
            )
        })?;
        completion_text(self.config.backend, &value).ok_or_else(|| {
            Failure::Retry(
                format!("the response has no completion text: {}", excerpt(&text)),
                None,
                0,
                String::new(),
            )
        })
    }

    /// A request that failed on the way (timeout, dropped connection): worth a retry.
    fn transport_failure(&self, e: reqwest::Error, context: &str) -> Failure {
        let what = if e.is_connect() && e.is_timeout() {
            format!(
                "{context}no connection to {} within {} s (llm.connect_timeout)",
                self.url, self.config.connect_timeout
            )
        } else if e.is_timeout() {
            format!(
                "{context}no answer within {} s (llm.timeout)",
                self.config.timeout
            )
        } else {
            format!("{context}{}", transport_cause(&e))
        };
        Failure::Retry(what, None, 0, String::new())
    }

    /// Removes the API key from a message (a server may echo it).
    fn scrub(&self, text: String) -> String {
        match &self.key {
            Some(key) if !key.is_empty() && text.contains(key.as_str()) => {
                text.replace(key.as_str(), "[key]")
            }
            _ => text,
        }
    }
}

/// What went wrong on the way, its root cause first: reqwest's own text ("error sending
/// request for url (…)") says only which request failed, the cause (connection refused, a
/// name that does not resolve, a TLS failure) is further down its source chain. Each text of
/// the chain is said once.
fn transport_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut chain = String::new();
    let mut cause = None;
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = source {
        let text = s.to_string();
        let text = text.trim();
        if !text.is_empty() && !chain.contains(text) {
            if !chain.is_empty() {
                chain.push_str(": ");
            }
            chain.push_str(text);
        }
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind as K;
            cause = cause.or(match io.kind() {
                K::ConnectionRefused => Some("connection refused"),
                K::ConnectionReset => Some("connection reset by the server"),
                K::ConnectionAborted => Some("connection aborted"),
                K::UnexpectedEof => Some("the server closed the connection"),
                K::TimedOut => Some("timed out"),
                K::HostUnreachable | K::NetworkUnreachable => Some("host unreachable"),
                _ => None,
            });
        }
        source = s.source();
    }
    if cause.is_none() && chain.contains("dns error") {
        cause = Some("the server's name does not resolve");
    }
    match cause {
        Some(cause) => format!("{cause} ({chain})"),
        None => chain,
    }
}

/// The name of the structured answer (Anthropic's tool, OpenAI's schema).
const ANSWER_TOOL: &str = "episodes";

/// The completion text of a response body: Anthropic's forced tool call's input (as JSON text),
/// else its text blocks; OpenAI's message content.
fn completion_text(backend: Backend, v: &Value) -> Option<String> {
    match backend {
        Backend::Anthropic => {
            let tool = v.get("content")?.as_array()?.iter().find(|p| {
                p.get("type").and_then(Value::as_str) == Some("tool_use")
                    && p.get("input").is_some()
            });
            if let Some(call) = tool {
                return Some(call["input"].to_string());
            }
            let parts: Vec<&str> = v
                .get("content")?
                .as_array()?
                .iter()
                .filter(|p| p.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|p| p.get("text")?.as_str())
                .collect();
            (!parts.is_empty()).then(|| parts.concat())
        }
        _ => v
            .get("choices")?
            .get(0)?
            .get("message")?
            .get("content")?
            .as_str()
            .map(str::to_string),
    }
}

fn excerpt(text: &str) -> String {
    let t: String = text.chars().take(300).collect();
    if t.len() < text.len() {
        format!("{t}…")
    } else {
        t
    }
}

async fn write_whole(path: &std::path::Path, value: &Value) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        tokio::fs::create_dir_all(dir).await?;
    }
    let tmp = path.with_extension(format!("partial.{}", std::process::id()));
    tokio::fs::write(&tmp, serde_json::to_vec(value).expect("json")).await?;
    tokio::fs::rename(&tmp, path).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completion_text_of_both_protocols() {
        let a = json!({"content": [{"type": "text", "text": "a"}, {"type": "tool_use"}, {"type": "text", "text": "b"}]});
        assert_eq!(
            completion_text(Backend::Anthropic, &a).as_deref(),
            Some("ab")
        );
        let o = json!({"choices": [{"message": {"role": "assistant", "content": "hi"}}]});
        assert_eq!(completion_text(Backend::Openai, &o).as_deref(), Some("hi"));
        assert_eq!(completion_text(Backend::Openai, &a), None);
        assert_eq!(
            completion_text(Backend::Anthropic, &json!({"content": []})),
            None
        );
    }
}
