//! LLM episode estimation against real HTTP servers on 127.0.0.1 that speak the Anthropic
//! Messages API and OpenAI chat completions (tests/util/llm.rs): request shapes, good answers,
//! 429 with retry-after, 500, slow answers past the timeout, dropped connections, bodies that
//! are not JSON, invalid answers repaired or given up on, the budget, the cache, and
//! `epimine run` end to end with LLM episodes, the fallback, and the key kept out of every
//! output.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::util::llm::{good_answer, LlmServer, Protocol, Reply};
use crate::util::*;
use epimine::llm::{self, Backend, Client, LlmConfig, LlmError};
use epimine::tables::{Assignment, Episode};
use serde_json::Value;

const KEY: &str = "sk-test-0123456789-secret";

fn groups() -> Vec<Vec<&'static str>> {
    vec![
        vec![
            "Protesters broke into the legislature at night.",
            "They sprayed slogans on the chamber walls.",
        ],
        vec![
            "Police fired tear gas at the crowd.",
            "Officers cleared the streets.",
        ],
        vec!["Dozens were arrested in the following days."],
    ]
}

fn config(backend: Backend, url: &str, cache: Option<&Path>) -> LlmConfig {
    LlmConfig {
        backend,
        base_url: Some(url.to_string()),
        model: "test-model".into(),
        timeout: 5.0,
        retries: 3,
        answer_retries: 1,
        cache: cache.is_some(),
        cache_dir: cache.map(|c| c.display().to_string()),
        ..LlmConfig::default()
    }
}

fn estimate(
    client: &Client,
    trial: u32,
    answer_retries: u32,
) -> Result<Vec<llm::LlmEpisode>, LlmError> {
    block_on(llm::estimate(client, &groups(), trial, answer_retries))
}

fn good(req: &crate::util::llm::Request) -> Reply {
    Reply::Text(good_answer(&req.prompt(), 2))
}

#[test]
fn anthropic_requests_have_the_messages_shape() {
    let server = LlmServer::start(Protocol::Anthropic, |req, _| good(req));
    let client = Client::new(
        &config(Backend::Anthropic, &server.url, None),
        Some(KEY.into()),
    )
    .unwrap();
    let episodes = estimate(&client, 0, 1).unwrap();
    assert_eq!(episodes.len(), 2);
    assert_eq!(episodes[0].title[0], "Group 1");
    assert_eq!(episodes[0].example_sentences[0], groups()[0][0]);
    let reqs = server.requests();
    assert_eq!(reqs.len(), 1);
    let r = &reqs[0];
    assert_eq!(
        (r.method.as_str(), r.path.as_str()),
        ("POST", "/v1/messages")
    );
    assert_eq!(r.headers["x-api-key"], KEY);
    assert_eq!(r.headers["anthropic-version"], "2023-06-01");
    assert!(r.headers["content-type"].starts_with("application/json"));
    assert!(!r.headers.contains_key("authorization"));
    assert_eq!(r.body["model"], "test-model");
    assert_eq!(r.body["max_tokens"], 4096);
    assert_eq!(r.body["temperature"], 1.0);
    let messages = r.body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0]["role"], "user");
    let prompt = messages[0]["content"].as_str().unwrap();
    assert!(
        prompt.starts_with("Group 1:\n- Protesters broke into"),
        "{prompt}"
    );
    assert!(prompt.contains("at least 2 and at most 3 potential episodes"));
    assert_eq!(client.usage().requests, 1);
    // Structured output: a forced tool call whose input schema states the prompt's counts.
    assert_eq!(r.body["tools"][0]["name"], "episodes");
    assert_eq!(
        r.body["tools"][0]["input_schema"]["properties"]["episodes"]["maxItems"],
        3
    );
    assert_eq!(
        r.body["tool_choice"],
        serde_json::json!({"type": "tool", "name": "episodes"})
    );
    // A tool_use answer is read from its input.
    let server = LlmServer::start(Protocol::Anthropic, |req, _| {
        let text = good_answer(&req.prompt(), 2);
        let start = text.find("<answer>").unwrap() + "<answer>".len();
        let end = text.rfind("</answer>").unwrap();
        let episodes: Value = serde_json::from_str(&text[start..end]).unwrap();
        Reply::Status(
            200,
            vec![],
            serde_json::json!({
                "type": "message",
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "episodes",
                             "input": {"episodes": episodes}}],
                "stop_reason": "tool_use",
            })
            .to_string(),
        )
    });
    let client = Client::new(
        &config(Backend::Anthropic, &server.url, None),
        Some(KEY.into()),
    )
    .unwrap();
    assert_eq!(estimate(&client, 0, 1).unwrap(), episodes);
}

#[test]
fn openai_requests_have_the_chat_shape() {
    let server = LlmServer::start(Protocol::Openai, |req, _| good(req));
    let url = format!("{}/v1", server.url);
    let client = Client::new(&config(Backend::Openai, &url, None), Some(KEY.into())).unwrap();
    assert_eq!(estimate(&client, 0, 1).unwrap().len(), 2);
    let r = &server.requests()[0];
    assert_eq!(r.path, "/v1/chat/completions");
    assert_eq!(r.headers["authorization"], format!("Bearer {KEY}"));
    assert!(!r.headers.contains_key("x-api-key"));
    assert_eq!(r.body["model"], "test-model");
    assert_eq!(r.body["messages"][0]["role"], "user");
    assert!(r.body["max_tokens"].is_number() && r.body["temperature"].is_number());
    assert_eq!(r.body["response_format"]["type"], "json_schema");
    assert_eq!(
        r.body["response_format"]["json_schema"]["schema"]["required"],
        serde_json::json!(["episodes"])
    );
    // A seed per trial: trials differ, the same trial repeats.
    estimate(&client, 1, 1).unwrap();
    estimate(&client, 0, 1).unwrap();
    let seeds: Vec<u64> = server.requests()[..3]
        .iter()
        .map(|r| r.body["seed"].as_u64().expect("a seed"))
        .collect();
    assert_ne!(seeds[0], seeds[1]);
    assert_eq!(seeds[0], seeds[2]);
    assert!(seeds.iter().all(|&s| s < 1 << 31));
    // A local server without a key gets no Authorization header.
    let client = Client::new(&config(Backend::Openai, &url, None), None).unwrap();
    estimate(&client, 0, 1).unwrap();
    assert!(!server.requests()[3].headers.contains_key("authorization"));
}

#[test]
fn retry_after_is_honoured_on_429() {
    let server = LlmServer::start(Protocol::Anthropic, |req, n| match n {
        0 => Reply::Status(
            429,
            vec![("retry-after".into(), "1".into())],
            r#"{"type":"error","error":{"type":"rate_limit_error"}}"#.into(),
        ),
        _ => good(req),
    });
    let client = Client::new(
        &config(Backend::Anthropic, &server.url, None),
        Some(KEY.into()),
    )
    .unwrap();
    let started = Instant::now();
    assert_eq!(estimate(&client, 0, 1).unwrap().len(), 2);
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    let usage = client.usage();
    assert_eq!((usage.requests, usage.retries), (2, 1));
}

#[test]
fn server_errors_timeouts_drops_and_bad_bodies_are_retried() {
    let server = LlmServer::start(Protocol::Openai, |req, n| match n {
        0 => Reply::Status(500, vec![], "oops".into()),
        1 => Reply::Slow(Duration::from_secs(3), Box::new(good(req))),
        2 => Reply::Drop,
        3 => Reply::Status(200, vec![], "this is not json".into()),
        4 => Reply::Status(200, vec![], r#"{"choices": []}"#.into()),
        _ => good(req),
    });
    let mut cfg = config(Backend::Openai, &server.url, None);
    cfg.timeout = 1.0;
    cfg.retries = 5;
    let client = Client::new(&cfg, None).unwrap();
    assert_eq!(estimate(&client, 0, 0).unwrap().len(), 2);
    let usage = client.usage();
    assert_eq!((usage.requests, usage.retries), (6, 5));
    // Every attempt sent the same request.
    let reqs = server.requests();
    assert!(reqs.iter().all(|r| r.body == reqs[0].body));

    // Out of retries: the error says how many attempts and what the last failure was.
    let server = LlmServer::start(Protocol::Openai, |_, _| {
        Reply::Status(503, vec![], "busy".into())
    });
    let mut cfg = config(Backend::Openai, &server.url, None);
    cfg.retries = 2;
    let client = Client::new(&cfg, None).unwrap();
    let err = estimate(&client, 0, 0).unwrap_err();
    assert!(
        matches!(&err, LlmError::Exhausted { attempts: 3, last } if last.contains("503")),
        "{err}"
    );
    assert_eq!(server.requests().len(), 3);
}

#[test]
fn a_server_that_cannot_be_reached_is_said_to_be_so() {
    // A port nobody listens on: the failure names the cause (connection refused), not only
    // reqwest's "error sending request for url (…)".
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut cfg = config(
        Backend::Openai,
        &format!("http://127.0.0.1:{port}/v1"),
        None,
    );
    cfg.retries = 1;
    let client = Client::new(&cfg, None).unwrap();
    let err = estimate(&client, 0, 0).unwrap_err();
    let LlmError::Exhausted { attempts: 2, last } = &err else {
        panic!("{err}");
    };
    assert!(last.starts_with("connection refused ("), "{last}");
    assert!(last.contains(&format!("127.0.0.1:{port}")), "{last}");
    assert_eq!(last.matches("Connection refused").count(), 1, "{last}");
}

#[test]
fn refusals_are_not_retried_and_never_show_the_key() {
    let server = LlmServer::start(Protocol::Anthropic, |req, _| {
        // A server that echoes what it was sent.
        Reply::Status(
            401,
            vec![],
            format!("invalid x-api-key {}", req.headers["x-api-key"]),
        )
    });
    let client = Client::new(
        &config(Backend::Anthropic, &server.url, None),
        Some(KEY.into()),
    )
    .unwrap();
    let err = estimate(&client, 0, 1).unwrap_err().to_string();
    assert!(
        err.contains("401") && err.contains("ANTHROPIC_API_KEY"),
        "{err}"
    );
    assert!(!err.contains(KEY), "{err}");
    assert_eq!(server.requests().len(), 1);
    // A refused key stops the stage: the next estimation sends nothing and says why.
    let next = estimate(&client, 1, 1).unwrap_err();
    assert!(
        matches!(&next, LlmError::Stopped(why) if why.contains("ANTHROPIC_API_KEY")),
        "{next}"
    );
    assert_eq!(server.requests().len(), 1);
    // Another refusal (400) is not retried either, and the server's echo of the key is hidden.
    let server = LlmServer::start(Protocol::Anthropic, |req, _| {
        Reply::Status(
            400,
            vec![],
            format!("bad request with x-api-key {}", req.headers["x-api-key"]),
        )
    });
    let client = Client::new(
        &config(Backend::Anthropic, &server.url, None),
        Some(KEY.into()),
    )
    .unwrap();
    let err = estimate(&client, 0, 1).unwrap_err().to_string();
    assert!(err.contains("400") && err.contains("[key]"), "{err}");
    assert!(!err.contains(KEY), "{err}");
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn invalid_answers_are_sent_back_with_what_was_wrong() {
    // Malformed JSON first, then a valid answer.
    let server = LlmServer::start(Protocol::Anthropic, |req, n| match n {
        0 => Reply::Text("<answer>[{\"title\": [\"a\", </answer>".into()),
        _ => good(req),
    });
    let client = Client::new(
        &config(Backend::Anthropic, &server.url, None),
        Some(KEY.into()),
    )
    .unwrap();
    assert_eq!(estimate(&client, 0, 1).unwrap().len(), 2);
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    let messages = reqs[1].body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3);
    assert_eq!(messages[1]["role"], "assistant");
    assert!(messages[1]["content"]
        .as_str()
        .unwrap()
        .contains("[{\"title\""));
    assert_eq!(messages[2]["role"], "user");
    assert!(messages[2]["content"]
        .as_str()
        .unwrap()
        .contains("not valid JSON"));
    assert_eq!(client.usage().repairs, 1);

    // Schema-invalid episodes every time: given up after answer_retries repairs.
    let bad = r#"<answer>[{"title": ["a", "b", "c"], "keywords": ["1","2","3","4","5"], "example_sentences": ["x", "y"]},
        {"title": ["a", "b", "c", "d", "e"], "keywords": ["1","2","3","4","5"], "example_sentences": ["x", "y"]}]</answer>"#;
    let server = LlmServer::start(Protocol::Anthropic, move |_, _| Reply::Text(bad.into()));
    let client = Client::new(
        &config(Backend::Anthropic, &server.url, None),
        Some(KEY.into()),
    )
    .unwrap();
    let err = estimate(&client, 0, 2).unwrap_err();
    assert!(
        matches!(&err, LlmError::Invalid { attempts: 3, problem, answer } if problem.contains("episode 1: `title` has 3 fields") && answer.starts_with("<answer>[{\"title\"")),
        "{err}"
    );
    let reqs = server.requests();
    assert_eq!(reqs.len(), 3);
    assert!(reqs[2].last_message().contains("`title` has 3 fields"));
}

#[test]
fn the_budget_stops_requests() {
    let server = LlmServer::start(Protocol::Openai, |_, _| {
        Reply::Status(500, vec![], "no".into())
    });
    let mut cfg = config(Backend::Openai, &server.url, None);
    cfg.max_requests = 2;
    let client = Client::new(&cfg, None).unwrap();
    assert_eq!(estimate(&client, 0, 0).unwrap_err(), LlmError::Budget(2));
    assert_eq!(estimate(&client, 1, 0).unwrap_err(), LlmError::Budget(2));
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn the_cache_answers_a_second_run_without_requests() {
    let dir = scratch();
    let cache = dir.path().join("cache");
    let server = LlmServer::start(Protocol::Anthropic, |req, _| good(req));
    let cfg = config(Backend::Anthropic, &server.url, Some(&cache));
    let first = Client::new(&cfg, Some(KEY.into())).unwrap();
    let a = estimate(&first, 0, 1).unwrap();
    let b = estimate(&first, 1, 1).unwrap();
    assert_eq!(first.usage().requests, 2, "each trial is its own request");
    let second = Client::new(&cfg, Some(KEY.into())).unwrap();
    assert_eq!(estimate(&second, 0, 1).unwrap(), a);
    assert_eq!(estimate(&second, 1, 1).unwrap(), b);
    assert_eq!((second.usage().requests, second.usage().cache_hits), (0, 2));
    assert_eq!(server.requests().len(), 2);
    // Another temperature or model is another key.
    let mut other = cfg.clone();
    other.temperature = 0.0;
    let third = Client::new(&other, Some(KEY.into())).unwrap();
    estimate(&third, 0, 1).unwrap();
    assert_eq!(third.usage().requests, 1);
    // The cache holds answers, not the key.
    for entry in std::fs::read_dir(&cache).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        assert!(!text.contains(KEY));
    }
}

#[test]
fn a_server_that_rejects_a_structured_form_is_asked_in_the_next_from_then_on() {
    // llama-cpp-python's server: `json_schema` fails (a 500 naming the field), `json_object`
    // with a schema is its form.
    let server = LlmServer::start(Protocol::Openai, |req, _| {
        match req.body["response_format"]["type"].as_str() {
            Some("json_schema") => Reply::Status(
                500,
                vec![],
                r#"{"error": {"message": "('body', 'response_format', 'type'): Input should be 'text' or 'json_object'"}}"#
                    .into(),
            ),
            _ => good(req),
        }
    });
    let client = Client::new(&config(Backend::Openai, &server.url, None), None).unwrap();
    assert_eq!(estimate(&client, 0, 1).unwrap().len(), 2);
    assert_eq!(estimate(&client, 1, 1).unwrap().len(), 2);
    let reqs = server.requests();
    // One refused request (not retried as a 5xx would be), then json_object for the rest.
    assert_eq!(reqs.len(), 3);
    assert_eq!(reqs[0].body["response_format"]["type"], "json_schema");
    for r in &reqs[1..] {
        assert_eq!(r.body["response_format"]["type"], "json_object");
        assert_eq!(
            r.body["response_format"]["schema"]["required"],
            serde_json::json!(["episodes"])
        );
    }
    assert_eq!(client.form(), llm::Form::JsonObject);
    let why = client.structured_off().expect("said why");
    assert!(why.contains("500") && why.contains("json_schema"), "{why}");

    // A server that refuses every form (a 400 naming response_format): asked without it.
    let server = LlmServer::start(Protocol::Openai, |req, _| {
        if req.body.get("response_format").is_some() {
            Reply::Status(
                400,
                vec![],
                r#"{"error": {"message": "Unrecognized request argument supplied: response_format"}}"#
                    .into(),
            )
        } else {
            good(req)
        }
    });
    let client = Client::new(&config(Backend::Openai, &server.url, None), None).unwrap();
    assert_eq!(estimate(&client, 0, 1).unwrap().len(), 2);
    assert_eq!(estimate(&client, 1, 1).unwrap().len(), 2);
    let reqs = server.requests();
    assert_eq!(reqs.len(), 4);
    assert!(reqs[2..]
        .iter()
        .all(|r| r.body.get("response_format").is_none()));
    assert_eq!(client.form(), llm::Form::Off);
    // With `structured = false` the field is never sent.
    let mut cfg = config(Backend::Openai, &server.url, None);
    cfg.structured = false;
    let client = Client::new(&cfg, None).unwrap();
    estimate(&client, 0, 1).unwrap();
    assert!(server.requests()[4].body.get("response_format").is_none());
    assert!(client.structured_off().is_none());
}

#[test]
fn invalid_answers_are_not_cached() {
    let dir = scratch();
    let cache = dir.path().join("cache");
    // Invalid first, valid after.
    let server = LlmServer::start(Protocol::Anthropic, |req, n| match n {
        0 => Reply::Text("Sure! <answer></answer>".into()),
        _ => good(req),
    });
    let cfg = config(Backend::Anthropic, &server.url, Some(&cache));
    let first = Client::new(&cfg, Some(KEY.into())).unwrap();
    let a = estimate(&first, 0, 1).unwrap();
    assert_eq!((first.usage().requests, first.usage().repairs), (2, 1));
    assert!(server.requests()[1]
        .last_message()
        .contains("tags are empty"));
    // Only the valid answer was cached, under the first question: a second run asks nothing.
    let second = Client::new(&cfg, Some(KEY.into())).unwrap();
    assert_eq!(estimate(&second, 0, 1).unwrap(), a);
    assert_eq!((second.usage().requests, second.usage().cache_hits), (0, 1));
    assert_eq!(std::fs::read_dir(&cache).unwrap().count(), 1);
    let cached = std::fs::read_dir(&cache)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    assert!(!std::fs::read_to_string(cached)
        .unwrap()
        .contains("<answer></answer>"));
}

// ---- `epimine run` end to end ----

/// Three events of 25 articles.
fn synth3(dir: &Path) -> PathBuf {
    synth(dir, 3, 25)
}

/// `epimine run` on a synthetic corpus with `--set`s; the key in the environment when `key`.
fn llm_command(corpus: &Path, out: &Path, sets: &[String], key: bool) -> Command {
    let mut cmd = crate::util::synth_run(corpus, out);
    for set in sets {
        cmd.args(["--set", set]);
    }
    cmd.env("RUST_LOG", "info")
        .env_remove("EPIMINE_TEST_LLM_KEY");
    if key {
        cmd.env("EPIMINE_TEST_LLM_KEY", KEY);
    }
    cmd
}

/// Runs `epimine run` with the key in the environment; returns (exit code, stderr + stdout).
fn run_llm(corpus: &Path, out: &Path, sets: &[String]) -> (Option<i32>, String) {
    let output = llm_command(corpus, out, sets, true).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned()
        + &String::from_utf8_lossy(&output.stdout);
    (output.status.code(), stderr)
}

fn llm_sets(url: &str, cache: &Path, trials: u32) -> Vec<String> {
    vec![
        "llm.backend=openai".into(),
        "llm.model=test-model".into(),
        format!("llm.base_url={url}/v1"),
        "llm.api_key_env=EPIMINE_TEST_LLM_KEY".into(),
        format!("llm.trials={trials}"),
        "llm.concurrency=2".into(),
        "llm.retries=1".into(),
        // A window given, so the server is not asked for its own (`GET /props`).
        "llm.context_tokens=100000".into(),
        format!("llm.cache_dir=\"{}\"", cache.display()),
    ]
}

fn report(out: &Path) -> serde_json::Value {
    crate::util::run_json(out)
}

#[test]
fn run_with_an_openai_server_gives_llm_episodes_and_caches() {
    let dir = scratch();
    let corpus = synth3(dir.path());
    let cache = dir.path().join("llm-cache");
    // A slow server that counts the requests in flight: at most llm.concurrency at once.
    let in_flight = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let (now, peak) = (Arc::clone(&in_flight), Arc::clone(&most));
    let server = LlmServer::start(Protocol::Openai, move |req, _| {
        let n = now.fetch_add(1, Ordering::SeqCst) + 1;
        peak.fetch_max(n, Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(300));
        now.fetch_sub(1, Ordering::SeqCst);
        good(req)
    });
    let first = dir.path().join("first");
    // Two workers here, one in the second run: the same bytes whatever the layout.
    let mut sets = llm_sets(&server.url, &cache, 2);
    sets.push("cluster.workers=2".into());
    let (code, log) = run_llm(&corpus, &first, &sets);
    assert_eq!(code, Some(0), "{log}");
    let r = report(&first);
    assert_eq!(r["llm"]["backend"], "openai");
    assert_eq!(r["llm"]["usage"]["requests"], 6, "3 events × 2 trials");
    assert_eq!(r["llm"]["structured"], true);
    assert_eq!(r["llm"]["structured_form"], "json_schema");
    assert!(r["llm"]["structured_off"].is_null());
    assert_eq!(r["llm"]["usage"]["cache_hits"], 0);
    assert_eq!(r["llm"]["fallbacks"], 0);
    assert_eq!(server.requests().len(), 6);
    assert_eq!(most.load(Ordering::SeqCst), 2, "requests in flight at once");
    let episodes: Vec<Episode> = read_rows(&first);
    assert!(!episodes.is_empty());
    assert!(episodes.iter().all(|e| e.source == "llm"), "{episodes:?}");
    assert!(episodes.iter().all(|e| e.title_fields.len() == 5
        && (2..=5).contains(&e.example_sentences.len())
        && (5..=10).contains(&e.keywords.len())));
    assert_eq!(
        episodes
            .iter()
            .map(|e| e.trial)
            .collect::<std::collections::BTreeSet<_>>(),
        [0, 1].into()
    );
    let assignments: Vec<Assignment> = read_rows(&first);
    for e in &episodes {
        let n = assignments
            .iter()
            .filter(|a| {
                (&a.key_event, a.trial, a.episode_id) == (&e.key_event, e.trial, e.episode_id)
            })
            .count();
        assert_eq!(n, e.n_segments as usize);
        assert!(n >= 2);
    }

    // Again (one worker): every answer from the cache, zero requests, the same bytes.
    let second = dir.path().join("second");
    let (code, log) = run_llm(&corpus, &second, &llm_sets(&server.url, &cache, 2));
    assert_eq!(code, Some(0), "{log}");
    let r = report(&second);
    assert_eq!(r["llm"]["usage"]["requests"], 0);
    assert_eq!(r["llm"]["usage"]["cache_hits"], 6);
    assert_eq!(server.requests().len(), 6);
    for f in OUTPUTS {
        assert_eq!(
            std::fs::read(first.join(f)).unwrap(),
            std::fs::read(second.join(f)).unwrap(),
            "{f} differs"
        );
    }

    // The key is in no output, no log line, not in the saved job.
    for out in [&first, &second] {
        let checkpoints = files_in(&out.join("_checkpoints"))
            .into_iter()
            .map(|c| format!("_checkpoints/{c}"));
        assert!(checkpoints.len() == 3, "one checkpoint an event");
        for name in files_in(out).into_iter().chain(checkpoints) {
            if out.join(&name).is_dir() {
                continue;
            }
            let bytes = std::fs::read(out.join(&name)).unwrap();
            assert!(
                !bytes.windows(KEY.len()).any(|w| w == KEY.as_bytes()),
                "the key is in {name}"
            );
        }
    }
    assert!(!log.contains(KEY));
    assert!(std::fs::read_to_string(second.join("job.toml"))
        .unwrap()
        .contains("EPIMINE_TEST_LLM_KEY"));

    // eval reads the trials and reports their mean.
    let stdout = epimine_ok(&["eval", "--corpus", s(&corpus), "--run", s(&first), "--json"]);
    let scores: Value = serde_json::from_str(&stdout).unwrap();
    assert!(scores["events"]
        .as_array()
        .unwrap()
        .iter()
        .all(|e| e["trials"] == 2));
}

#[test]
fn an_event_whose_llm_fails_falls_back_to_cluster_episodes() {
    let dir = scratch();
    let corpus = synth3(dir.path());
    let segments: Vec<epimine::tables::Segment> = read_rows(&corpus);
    let events: Vec<String> = segments
        .iter()
        .map(|s| s.key_event.clone())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    // The server fails every request whose prompt holds a text of the first event.
    let first_texts: Vec<String> = segments
        .iter()
        .filter(|s| s.key_event == events[0])
        .map(|s| s.text.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    let server = LlmServer::start(Protocol::Openai, move |req, _| {
        let prompt = req.prompt();
        if first_texts
            .iter()
            .any(|t| prompt.contains(&format!("- {t}\n")))
        {
            Reply::Status(500, vec![], "model crashed".into())
        } else {
            good(req)
        }
    });
    let out = dir.path().join("out");
    let (code, log) = run_llm(
        &corpus,
        &out,
        &llm_sets(&server.url, &dir.path().join("c"), 1),
    );
    // A fallback is a partial run: exit code 3, and the last lines say which and why.
    assert_eq!(code, Some(3), "{log}");
    assert!(
        log.contains("episodes from the LLM for 2 events; 1 events fell back"),
        "{log}"
    );
    assert!(
        log.contains(&format!("fell back {} (trial 0):", events[0])),
        "{log}"
    );
    let r = report(&out);
    assert_eq!(r["llm"]["fallbacks"], 1);
    assert_eq!(r["partial"], true);
    let failed = r["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["key_event"] == events[0].as_str())
        .unwrap();
    assert_eq!(failed["status"], "ok");
    let why = failed["llm"]["fallbacks"][0]["error"].as_str().unwrap();
    assert!(why.contains("2 attempts") && why.contains("500"), "{why}");
    let episodes: Vec<Episode> = read_rows(&out);
    for e in &episodes {
        let expected = if e.key_event == events[0] {
            "clusters"
        } else {
            "llm"
        };
        assert_eq!(e.source, expected, "{}", e.key_event);
    }
    assert_eq!(
        episodes
            .iter()
            .map(|e| e.key_event.as_str())
            .collect::<std::collections::BTreeSet<_>>()
            .len(),
        3
    );
}

#[test]
fn a_refused_key_stops_the_llm_stage_after_one_request() {
    let dir = scratch();
    let corpus = synth3(dir.path());
    let server = LlmServer::start(Protocol::Openai, |_, _| {
        Reply::Status(401, vec![], "invalid key".into())
    });
    let out = dir.path().join("out");
    let mut sets = llm_sets(&server.url, &dir.path().join("c"), 2);
    sets.push("llm.concurrency=1".into());
    let (code, log) = run_llm(&corpus, &out, &sets);
    // 3 events × 2 trials, one request: every trial falls back, the run says so and why.
    assert_eq!(server.requests().len(), 1, "{log}");
    assert_eq!(code, Some(3), "{log}");
    assert!(
        log.contains("episodes from the LLM for 0 events; 3 events fell back"),
        "{log}"
    );
    assert!(
        log.contains("EPIMINE_TEST_LLM_KEY") && !log.contains(KEY),
        "{log}"
    );
    let r = report(&out);
    assert_eq!(r["llm"]["fallbacks"], 6);
    let episodes: Vec<Episode> = read_rows(&out);
    assert!(!episodes.is_empty() && episodes.iter().all(|e| e.source == "clusters"));
}

#[test]
fn prompts_are_cut_to_the_context_window_the_server_reports() {
    let dir = scratch();
    let corpus = synth3(dir.path());
    // llama.cpp's server reports its window at GET /props.
    let server = LlmServer::start(Protocol::Openai, |req, _| {
        if req.method == "GET" && req.path == "/props" {
            Reply::Status(
                200,
                vec![],
                r#"{"default_generation_settings": {"n_ctx": 700}}"#.into(),
            )
        } else {
            good(req)
        }
    });
    let out = dir.path().join("out");
    let sets: Vec<String> = llm_sets(&server.url, &dir.path().join("c"), 1)
        .into_iter()
        .filter(|s| !s.starts_with("llm.context_tokens"))
        .chain(["llm.max_tokens=200".to_string()])
        .collect();
    let (code, log) = run_llm(&corpus, &out, &sets);
    assert_eq!(code, Some(0), "{log}");
    let r = report(&out);
    assert_eq!(r["llm"]["context_tokens"], 700, "{log}");
    let cut = r["llm"]["prompts_cut"].as_object().unwrap().clone();
    assert!(!cut.is_empty(), "some prompt was cut: {log}");
    let reqs = server.requests();
    assert_eq!(
        (reqs[0].method.as_str(), reqs[0].path.as_str()),
        ("GET", "/props")
    );
    for req in &reqs[1..] {
        let prompt = req.prompt();
        // Within the window, at 3 characters a token, with the answer's 200.
        assert!(
            prompt.len().div_ceil(3) + 200 <= 700 || {
                // A prompt at one segment per cluster may still be over; then it was cut to 1.
                prompt
                    .split("\n\n")
                    .filter(|g| g.starts_with("Group "))
                    .all(|g| g.matches("\n- ").count() <= 1)
            }
        );
    }
}

#[test]
fn missing_keys_and_bad_llm_settings_are_clear_errors() {
    let dir = scratch();
    let run = |sets: &[&str]| {
        let mut args = vec![
            "run",
            "--corpus",
            "c",
            "--background",
            "b",
            "--out",
            s(dir.path()),
        ];
        for set in sets {
            args.extend(["--set", set]);
        }
        let out = epimine(&args);
        assert!(!out.status.success());
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let err = run(&[
        "llm.backend=anthropic",
        "llm.model=claude",
        "llm.api_key_env=EPIMINE_TEST_NO_SUCH_KEY",
    ]);
    assert!(
        err.contains("EPIMINE_TEST_NO_SUCH_KEY") && err.contains("not set"),
        "{err}"
    );
    let err = run(&["llm.backend=openai", "llm.model=m", "llm.trials=0"]);
    assert!(err.contains("llm.trials"), "{err}");
    let err = run(&["llm.backend=openai", "llm.model=m", "llm.base_url=ftp://x"]);
    assert!(err.contains("llm.base_url"), "{err}");
    let err = run(&["llm.backend=openai"]);
    assert!(err.contains("llm.model"), "{err}");
}

#[test]
fn two_processes_with_an_llm_write_the_same_bytes_and_only_process_0_needs_the_key() {
    let dir = scratch();
    let corpus = synth3(dir.path());
    let cache = dir.path().join("llm-cache");
    let server = LlmServer::start(Protocol::Openai, |req, _| good(req));
    let sets = llm_sets(&server.url, &cache, 1);
    let one = dir.path().join("one");
    let (code, log) = run_llm(&corpus, &one, &sets);
    assert_eq!(code, Some(0), "{log}");
    assert_eq!(server.requests().len(), 3);

    // 2 processes × 1 worker over TCP: the answers (from the cache) cross to the owning
    // process; process 1 runs without the key variable.
    let hosts = hostfile(dir.path(), 2);
    // Both processes get the one --out: each writes its events' checkpoints there.
    let two = dir.path().join("two");
    let spawn = |p: &str, out: &Path, key: bool| {
        llm_command(&corpus, out, &sets, key)
            .args(["-w", "1", "-n", "2", "-p", p, "-H", s(&hosts)])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap()
    };
    let mut p1 = spawn("1", &two, false);
    let mut p0 = spawn("0", &two, true);
    assert!(p0.wait().unwrap().success());
    assert!(p1.wait().unwrap().success());
    assert_eq!(server.requests().len(), 3, "the second run asked nothing");
    for f in OUTPUTS {
        assert!(
            std::fs::read(one.join(f)).unwrap() == std::fs::read(two.join(f)).unwrap(),
            "{f}"
        );
    }
    let episodes: Vec<Episode> = read_rows(&two);
    assert!(!episodes.is_empty() && episodes.iter().all(|e| e.source == "llm"));
    assert_eq!(files_in(&two.join("_checkpoints")).len(), 3);
}

#[test]
fn a_long_retry_after_is_cut_logged_and_bounded_per_event() {
    let dir = scratch();
    let corpus = synth(dir.path(), 1, 25);
    let cache = dir.path().join("llm-cache");
    // A server that is always rate-limited, and asks to come back in an hour.
    let server = LlmServer::start(Protocol::Openai, |_, _| {
        Reply::Status(
            429,
            vec![("retry-after".into(), "3600".into())],
            r#"{"error": {"message": "rate limited"}}"#.into(),
        )
    });
    let out = dir.path().join("out");
    let mut sets = llm_sets(&server.url, &cache, 2);
    sets.extend([
        "llm.retries=5".to_string(),
        "llm.max_retry_wait=1".to_string(),
        "llm.event_retry_wait=2.5".to_string(),
    ]);
    let started = Instant::now();
    let mut child = llm_command(&corpus, &out, &sets, true)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > Duration::from_secs(60) {
            child.kill().unwrap();
            panic!("still running after 60 s: the retry-after of an hour was taken at its word");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let output = child.wait_with_output().unwrap();
    let log = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{log}");
    // Each wait is logged with its reason; the event's two trials wait 2.5 s in all, at most.
    let waits: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("the server's retry-after of 3600 s cut to llm.max_retry_wait"))
        .collect();
    assert_eq!(waits.len(), 2, "{log}");
    assert!(
        waits
            .iter()
            .all(|l| l.contains("429 Too Many Requests") && l.contains("in 1.0 s")),
        "{log}"
    );
    let r = report(&out);
    let fallbacks = r["events"][0]["llm"]["fallbacks"].as_array().unwrap();
    assert_eq!(fallbacks.len(), 2, "{r}");
    for f in fallbacks {
        assert!(
            f["error"]
                .as_str()
                .unwrap()
                .contains("another retry would wait past llm.event_retry_wait"),
            "{f}"
        );
    }
    assert!(started.elapsed() < Duration::from_secs(30));
}
