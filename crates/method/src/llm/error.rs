//! The errors of the LLM stage.

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
    /// Another retry would pass the event's bound on waiting (`llm.event_retry_wait`).
    #[error("{attempts} attempts failed and another retry would wait past llm.event_retry_wait ({waited:.1} s of {limit} s waited already, {wait:.1} s more asked); the last: {last}")]
    Waited {
        /// Attempts made.
        attempts: u32,
        /// Seconds the event's requests waited before retries so far.
        waited: f64,
        /// `llm.event_retry_wait`.
        limit: f64,
        /// The wait the next retry needed.
        wait: f64,
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
