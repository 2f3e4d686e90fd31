//! A local stand-in for a hosted LLM, for trying the LLM path of `epimine run` where no model is
//! reachable (`scripts/ci/llm-smoke.sh`): the tests' own server (`tests/util/llm.rs`, a real
//! HTTP/1.1 server speaking OpenAI chat completions or the Anthropic Messages API) answering
//! every prompt as a model would be asked to — one episode per segment group of the paper's
//! appendix-G prompt (at most its k), titles, keywords and examples taken from the group
//! (`good_answer`). It is not a model: the episodes it returns are the input groups.
//!
//! ```text
//! cargo run --release --example llm_stand_in [-- --anthropic]
//! ```
//! prints its URL on stdout (add `/v1` for an OpenAI base URL) and serves until killed; each
//! request logs `sizes prompt_chars=N answer_chars=M` on stderr.

#[allow(dead_code)]
#[path = "../tests/util/llm.rs"]
mod llm;

use llm::{good_answer, LlmServer, Protocol, Reply};

/// The k of the prompt's "at most k potential episodes" (2 when it says none).
fn asked_for(prompt: &str) -> usize {
    prompt
        .split("at most ")
        .skip(1)
        .find_map(|rest| {
            let (n, tail) = rest.split_once(' ')?;
            tail.starts_with("potential episodes")
                .then(|| n.parse().ok())
                .flatten()
        })
        .unwrap_or(2)
}

fn main() {
    let protocol = match std::env::args().nth(1).as_deref() {
        None | Some("--openai") => Protocol::Openai,
        Some("--anthropic") => Protocol::Anthropic,
        Some(other) => {
            eprintln!("llm_stand_in: unknown argument {other:?} (--openai or --anthropic)");
            std::process::exit(2);
        }
    };
    let server = LlmServer::start(protocol, |request, _| {
        let prompt = request.prompt();
        let text = good_answer(&prompt, asked_for(&prompt));
        eprintln!(
            "sizes prompt_chars={} answer_chars={}",
            prompt.chars().count(),
            text.chars().count()
        );
        Reply::Text(text)
    });
    println!("{}", server.url);
    loop {
        std::thread::park();
    }
}
