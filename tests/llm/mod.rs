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

mod protocol;
mod runs;

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
