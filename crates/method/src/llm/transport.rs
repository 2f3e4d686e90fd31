//! One HTTP request to the LLM server and what became of it: the completion text, or a
//! [`Failure`] that says whether another attempt is worth it (429, 5xx, timeouts, dropped
//! connections, unreadable bodies), the key was refused, or the request was.

use std::time::Duration;

use serde_json::Value;

use super::config::{Backend, LlmConfig};
use super::error::LlmError;
use super::protocol::{completion_text, endpoint};

/// Why a request gave no completion.
pub(super) enum Failure {
    /// Worth another attempt, after at least this long (from `retry-after`), with the status
    /// (0: no HTTP answer) and the server's body.
    Retry(String, Option<Duration>, u16, String),
    /// The key was refused (401/403): not worth any further request in this run.
    Auth(u16),
    /// Another 4xx refusal, with the server's body.
    Refused(u16, String),
}

/// The HTTP side of a client: reqwest with the run's timeouts, the endpoint and the key.
pub(super) struct Transport {
    http: reqwest::Client,
    backend: Backend,
    key: Option<String>,
    /// The endpoint requests go to.
    pub(super) url: String,
    timeout: f64,
    connect_timeout: f64,
}

impl Transport {
    /// The transport of `config` with its API key.
    pub(super) fn new(config: &LlmConfig, key: Option<String>) -> Result<Self, LlmError> {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs_f64(config.timeout))
            .connect_timeout(Duration::from_secs_f64(config.connect_timeout))
            .user_agent(concat!("epimine/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| LlmError::Client(e.to_string()))?;
        let url = endpoint(config).ok_or_else(|| LlmError::Client("backend is `none`".into()))?;
        Ok(Self {
            http,
            backend: config.backend,
            key,
            url,
            timeout: config.timeout,
            connect_timeout: config.connect_timeout,
        })
    }

    /// The context window the server at `base_url` reports (llama.cpp's `GET /props`:
    /// `default_generation_settings.n_ctx`), if it reports one within a few seconds.
    pub(super) async fn server_context(&self, base_url: &str) -> Option<u32> {
        let base = base_url.trim_end_matches('/');
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

    /// Sends one request: its completion text, or why there is none.
    pub(super) async fn send(&self, body: &Value) -> Result<String, Failure> {
        let mut request = self.http.post(&self.url).json(body);
        request = match (self.backend, &self.key) {
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
        completion_text(self.backend, &value).ok_or_else(|| {
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
                self.url, self.connect_timeout
            )
        } else if e.is_timeout() {
            format!("{context}no answer within {} s (llm.timeout)", self.timeout)
        } else {
            format!("{context}{}", transport_cause(&e))
        };
        Failure::Retry(what, None, 0, String::new())
    }

    /// Removes the API key from a message (a server may echo it).
    pub(super) fn scrub(&self, text: String) -> String {
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

/// The first 300 characters of a server's text, marked when cut.
pub(super) fn excerpt(text: &str) -> String {
    let t: String = text.chars().take(300).collect();
    if t.len() < text.len() {
        format!("{t}…")
    } else {
        t
    }
}
