//! A real HTTP/1.1 server on 127.0.0.1 that speaks the LLM protocols the tests need (the
//! Anthropic Messages API and OpenAI chat completions): it records every request (path,
//! headers, JSON body) and answers with what a script says — a completion, an HTTP error with
//! headers, a body that is not JSON, a slow answer, or a dropped connection.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

/// A recorded request.
#[derive(Debug, Clone)]
pub struct Request {
    /// `POST`.
    pub method: String,
    /// `/v1/messages`.
    pub path: String,
    /// Header names lowercased.
    pub headers: HashMap<String, String>,
    /// The JSON body (`null` when it was not JSON).
    pub body: Value,
}

impl Request {
    /// The text of the first message (epimine's prompt).
    pub fn prompt(&self) -> String {
        self.body["messages"][0]["content"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// The text of the last message.
    pub fn last_message(&self) -> String {
        let messages = self.body["messages"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        messages
            .last()
            .and_then(|m| m["content"].as_str())
            .unwrap_or_default()
            .to_string()
    }
}

/// What the server answers.
#[derive(Debug, Clone)]
pub enum Reply {
    /// 200 with a completion holding this text, in the server's protocol.
    Text(String),
    /// A status, extra headers and a raw body.
    Status(u16, Vec<(String, String)>, String),
    /// The reply after a pause.
    Slow(Duration, Box<Reply>),
    /// Close the connection without answering.
    Drop,
}

/// The protocol a server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// Anthropic Messages.
    Anthropic,
    /// OpenAI chat completions.
    Openai,
}

type Script = dyn Fn(&Request, usize) -> Reply + Send + Sync;

/// A running server.
pub struct LlmServer {
    /// `http://127.0.0.1:PORT` (add `/v1` for the OpenAI base URL).
    pub url: String,
    requests: Arc<Mutex<Vec<Request>>>,
}

impl LlmServer {
    /// Starts a server; `script(request, n)` decides the answer to the n-th request (from 0).
    pub fn start(
        protocol: Protocol,
        script: impl Fn(&Request, usize) -> Reply + Send + Sync + 'static,
    ) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let url = format!("http://{}", listener.local_addr().unwrap());
        let requests: Arc<Mutex<Vec<Request>>> = Arc::default();
        let script: Arc<Script> = Arc::new(script);
        let seen = Arc::clone(&requests);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let (seen, script) = (Arc::clone(&seen), Arc::clone(&script));
                std::thread::spawn(move || {
                    let Some(request) = read_request(&mut stream) else {
                        return;
                    };
                    let n = {
                        let mut all = seen.lock().unwrap();
                        all.push(request.clone());
                        all.len() - 1
                    };
                    let mut reply = script(&request, n);
                    while let Reply::Slow(pause, inner) = reply {
                        std::thread::sleep(pause);
                        reply = *inner;
                    }
                    let (status, headers, body) = match reply {
                        Reply::Text(text) => (200, Vec::new(), completion(protocol, &text)),
                        Reply::Status(status, headers, body) => (status, headers, body),
                        Reply::Drop | Reply::Slow(..) => return,
                    };
                    let mut head = format!(
                        "HTTP/1.1 {status} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
                        reason(status),
                        body.len()
                    );
                    for (k, v) in headers {
                        head.push_str(&format!("{k}: {v}\r\n"));
                    }
                    head.push_str("\r\n");
                    let _ = stream.write_all(head.as_bytes());
                    let _ = stream.write_all(body.as_bytes());
                });
            }
        });
        Self { url, requests }
    }

    /// The requests so far, in arrival order.
    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        401 => "Unauthorized",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        _ => "Status",
    }
}

fn read_request(stream: &mut std::net::TcpStream) -> Option<Request> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_string();
    let path = parts.next()?.to_string();
    let mut headers = HashMap::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).ok()? == 0 || h == "\r\n" {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
        }
    }
    let len: usize = headers
        .get("content-length")
        .and_then(|l| l.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; len];
    reader.read_exact(&mut body).ok()?;
    Some(Request {
        method,
        path,
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    })
}

/// A completion body holding `text` in the protocol's shape.
pub fn completion(protocol: Protocol, text: &str) -> String {
    match protocol {
        Protocol::Anthropic => json!({
            "id": "msg_test",
            "type": "message",
            "role": "assistant",
            "model": "test-model",
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 10, "output_tokens": 10}
        }),
        Protocol::Openai => json!({
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "model": "test-model",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20}
        }),
    }
    .to_string()
}

/// The groups of segments in a prompt built by `epimine` (`Group i:` then `- text` lines).
pub fn prompt_groups(prompt: &str) -> Vec<Vec<String>> {
    let mut groups: Vec<Vec<String>> = Vec::new();
    for line in prompt.lines() {
        if line.starts_with("Group ") && line.ends_with(':') {
            groups.push(Vec::new());
        } else if let (Some(text), Some(g)) = (line.strip_prefix("- "), groups.last_mut()) {
            g.push(text.to_string());
        } else if line.starts_with("Task:") {
            break;
        }
    }
    groups
}

/// A valid answer made from the prompt's groups, as a model would: one episode for each of the
/// first `n` groups (at least 2), its title fields named after the group, keywords from its first
/// segment and its first segments as examples.
pub fn good_answer(prompt: &str, n: usize) -> String {
    let groups = prompt_groups(prompt);
    let all: Vec<&String> = groups.iter().flatten().collect();
    let episodes: Vec<Value> = groups
        .iter()
        .take(n.max(2))
        .enumerate()
        .map(|(i, g)| {
            let mut words: Vec<String> = g
                .iter()
                .flat_map(|t| t.split_whitespace())
                .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()).to_lowercase())
                .filter(|w| w.len() > 3)
                .collect();
            words.dedup();
            words.truncate(6);
            while words.len() < 5 {
                words.push(format!("word{}", words.len()));
            }
            let mut examples: Vec<&String> = g.iter().take(3).collect();
            if examples.len() < 2 {
                examples.push(all.iter().find(|t| !examples.contains(t)).unwrap_or(&all[0]));
            }
            json!({
                "title": [format!("Group {}", i + 1), "happens", "something", "one day", "somewhere"],
                "keywords": words,
                "example_sentences": examples,
            })
        })
        .collect();
    format!(
        "Here are the episodes.\n<answer>\n{}\n</answer>",
        serde_json::to_string_pretty(&episodes).unwrap()
    )
}
