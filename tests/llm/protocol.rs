//! The LLM client against a real HTTP server: request shapes, retries, refusals, budgets, the cache.

use super::*;

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
