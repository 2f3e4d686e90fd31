//! Runs with an LLM server: episodes, fallbacks, context windows, settings, several processes.

use super::*;

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
        assert_key_in_no_file(out);
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

/// The API key is in no file of the run `out`, its checkpoints (one an event) included.
fn assert_key_in_no_file(out: &Path) {
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
