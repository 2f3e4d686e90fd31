//! The LLM client of a run: one completion at a time from the answer cache (`cache`) or the
//! server (`transport`, in the wire format of [`protocol`](super::protocol)), with retries
//! (backoff with jitter; `retry-after` honoured on 429), a per-run request budget, and the
//! structured-output form lowered for the rest of the run when a server rejects it.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use super::cache::AnswerCache;
use super::config::{Backend, LlmConfig};
use super::error::LlmError;
use super::protocol::{request_body, Form, Message, STRUCTURED_FIELDS};
use super::retry::{backoff, EventWaits};
use super::transport::{excerpt, Failure, Transport};

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
    transport: Transport,
    cache: AnswerCache,
    counters: Counters,
    /// Set when the server refused the key: no further request is sent.
    stopped: AtomicBool,
    stop_reason: Mutex<String>,
    /// The structured-output form requests use now ([`Form`] as a number): lowered when the
    /// server rejects one, for the rest of the run.
    form: AtomicU8,
    /// What the server said when it rejected a form, in order.
    rejections: Mutex<Vec<String>>,
}

impl Client {
    /// A client for `config` with its API key (read from the environment by the caller).
    pub fn new(config: &LlmConfig, key: Option<String>) -> Result<Self, LlmError> {
        let transport = Transport::new(config, key)?;
        let cache = AnswerCache::new(if config.cache {
            Some(config.cache_folder()?)
        } else {
            None
        });
        Ok(Self {
            config: config.clone(),
            transport,
            cache,
            counters: Counters::default(),
            stopped: Default::default(),
            stop_reason: Default::default(),
            form: AtomicU8::new(if config.structured { 0 } else { 2 }),
            rejections: Default::default(),
        })
    }

    /// The settings it was made with.
    pub fn config(&self) -> &LlmConfig {
        &self.config
    }

    /// The endpoint requests go to.
    pub fn url(&self) -> &str {
        &self.transport.url
    }

    /// The context window the server reports (llama.cpp's `GET /props`:
    /// `default_generation_settings.n_ctx`), if it reports one within a few seconds.
    pub async fn server_context(&self) -> Option<u32> {
        self.transport.server_context(self.config.base_url()).await
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
        let cached = self.cache.read(&self.config, messages, trial, schema).await;
        if let Some(text) = cached {
            self.counters.cache_hits.fetch_add(1, Ordering::Relaxed);
            return Ok((text, true));
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
        self.cache
            .store(&self.config, messages, trial, schema, text)
            .await;
    }

    async fn request_with_retries(
        &self,
        messages: &[Message],
        trial: u32,
        schema: Option<&Value>,
        waits: &EventWaits,
    ) -> Result<String, LlmError> {
        let form = self.form();
        let sent = schema.filter(|_| form != Form::Off);
        let body = request_body(&self.config, messages, trial, sent, form);
        let mut attempt = 0u32;
        loop {
            if self.counters.requests.fetch_add(1, Ordering::Relaxed) >= self.config.max_requests {
                self.counters.requests.fetch_sub(1, Ordering::Relaxed);
                return Err(LlmError::Budget(self.config.max_requests));
            }
            let failure = match self.transport.send(&body).await {
                Ok(text) => return Ok(text),
                Err(f) => f,
            };
            match failure {
                Failure::Auth(status) => return Err(self.stop(status)),
                // A refusal (4xx, or a 5xx from a server that fails on a field it does not
                // know) that names the structured-output field: the next form.
                Failure::Refused(status, text) | Failure::Retry(_, _, status, text)
                    if sent.is_some() && names_structured_field(status, &text) =>
                {
                    let why = format!(
                        "HTTP {status} from {} for structured output `{}`: {}",
                        self.url(),
                        form.name(self.config.backend),
                        self.transport.scrub(excerpt(&text))
                    );
                    self.lower(form, why);
                    return Err(LlmError::StructuredRejected);
                }
                Failure::Refused(status, text) => {
                    return Err(LlmError::Request(self.transport.scrub(format!(
                        "HTTP {status} from {}: {}",
                        self.url(),
                        excerpt(&text)
                    ))))
                }
                Failure::Retry(why, ..) if attempt >= self.config.retries => {
                    return Err(LlmError::Exhausted {
                        attempts: attempt + 1,
                        last: self.transport.scrub(why),
                    })
                }
                Failure::Retry(why, after, ..) => {
                    let why = self.transport.scrub(why);
                    let wait = self.retry_wait(after, attempt, &body, trial);
                    self.wait_to_retry(wait, &why, attempt, trial, waits)
                        .await?;
                    attempt += 1;
                }
            }
        }
    }

    /// The key was refused: no further request in this run.
    fn stop(&self, status: u16) -> LlmError {
        let error = LlmError::Auth {
            status,
            url: self.url().to_string(),
            variable: self.config.key_variable().to_string(),
        };
        *self.stop_reason.lock().expect("stop reason") = error.to_string();
        self.stopped.store(true, Ordering::Relaxed);
        error
    }

    /// Waits before retry `attempt`, if the event's waits allow it (`llm.event_retry_wait`).
    async fn wait_to_retry(
        &self,
        (wait, reason): (Duration, String),
        why: &str,
        attempt: u32,
        trial: u32,
        waits: &EventWaits,
    ) -> Result<(), LlmError> {
        if let Err(waited) = waits.take(wait) {
            return Err(LlmError::Waited {
                attempts: attempt + 1,
                waited: waited.as_secs_f64(),
                limit: self.config.event_retry_wait,
                wait: wait.as_secs_f64(),
                last: why.to_string(),
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
        Ok(())
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
}

/// Whether a refusal (a 4xx other than 429, or a 5xx from a server that fails on a field it does
/// not know) names a field of structured output.
fn names_structured_field(status: u16, text: &str) -> bool {
    (400..600).contains(&status)
        && status != 429
        && STRUCTURED_FIELDS.iter().any(|f| text.contains(f))
}
