//! The wire format of the two chat protocols (the Anthropic Messages API and OpenAI-compatible
//! chat completions): a request's body, with the answer's schema in one of the structured-output
//! [`Form`]s, and the completion text of a response.

use serde::Serialize;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::config::{Backend, LlmConfig};

/// One chat message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Message {
    /// `user` or `assistant`.
    pub role: &'static str,
    /// Its text.
    pub content: String,
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
    pub(super) fn from_u8(n: u8) -> Self {
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
pub(super) const STRUCTURED_FIELDS: [&str; 4] =
    ["response_format", "json_schema", "tool_choice", "tools"];

/// The name of the structured answer (Anthropic's tool, OpenAI's schema).
const ANSWER_TOOL: &str = "episodes";

/// The endpoint of `config`'s protocol under its base URL; `None` for the `none` backend.
pub(super) fn endpoint(config: &LlmConfig) -> Option<String> {
    let base = config.base_url().trim_end_matches('/').to_string();
    match config.backend {
        Backend::Anthropic => Some(format!("{base}/v1/messages")),
        Backend::Openai => Some(format!("{base}/chat/completions")),
        Backend::None => None,
    }
}

/// The body of a request: `messages` with `config`'s model, temperature and max_tokens (and,
/// for OpenAI-style servers, the trial's [`seed`]); `schema`, when given, in `form`.
pub(super) fn request_body(
    config: &LlmConfig,
    messages: &[Message],
    trial: u32,
    schema: Option<&Value>,
    form: Form,
) -> Value {
    let c = config;
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
            "seed": seed(messages, trial),
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

/// The seed of a trial's request: from the prompt and the trial, so that trials differ and a
/// re-run repeats (31 bits: servers take it as a signed integer).
fn seed(messages: &[Message], trial: u32) -> u64 {
    let mut h = Sha256::new();
    h.update(serde_json::to_vec(messages).expect("messages serialize"));
    h.update(trial.to_le_bytes());
    u64::from_le_bytes(h.finalize()[..8].try_into().expect("8 bytes")) >> 33
}

/// The completion text of a response body: Anthropic's forced tool call's input (as JSON text),
/// else its text blocks; OpenAI's message content.
pub(super) fn completion_text(backend: Backend, v: &Value) -> Option<String> {
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
