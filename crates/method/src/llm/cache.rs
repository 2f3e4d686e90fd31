//! The answer cache: one JSON file per accepted answer, keyed by (backend, model, prompt hash,
//! trial, temperature, max_tokens, the answer's schema), so that a re-run asks nothing it was
//! already answered.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::config::LlmConfig;
use super::protocol::Message;

/// A run's answer cache (`llm.cache`), or none.
pub(super) struct AnswerCache {
    dir: Option<PathBuf>,
}

impl AnswerCache {
    /// The cache in `dir`; `None`: no cache (nothing read, nothing stored).
    pub(super) fn new(dir: Option<PathBuf>) -> Self {
        Self { dir }
    }

    /// The cached answer of a request, if there is one that reads.
    pub(super) async fn read(
        &self,
        config: &LlmConfig,
        messages: &[Message],
        trial: u32,
        schema: Option<&Value>,
    ) -> Option<String> {
        let path = self.path(config, messages, trial, schema)?;
        let bytes = tokio::fs::read(&path).await.ok()?;
        serde_json::from_slice::<Value>(&bytes)
            .ok()
            .and_then(|v| v.get("text")?.as_str().map(str::to_string))
    }

    /// Stores an accepted answer (whole or not at all; a failure is only a warning).
    pub(super) async fn store(
        &self,
        config: &LlmConfig,
        messages: &[Message],
        trial: u32,
        schema: Option<&Value>,
        text: &str,
    ) {
        if let Some(path) = self.path(config, messages, trial, schema) {
            if let Err(e) = write_whole(&path, &json!({ "text": text })).await {
                tracing::warn!("LLM cache {}: {e}", path.display());
            }
        }
    }

    fn path(
        &self,
        config: &LlmConfig,
        messages: &[Message],
        trial: u32,
        schema: Option<&Value>,
    ) -> Option<PathBuf> {
        self.dir
            .as_ref()
            .map(|dir| dir.join(format!("{}.json", key(config, messages, trial, schema))))
    }
}

/// The cache key of a completion: backend, model, prompt (every message), trial, temperature,
/// max_tokens and the answer's schema when structured output is asked for.
fn key(config: &LlmConfig, messages: &[Message], trial: u32, schema: Option<&Value>) -> String {
    let mut h = Sha256::new();
    let prompt = serde_json::to_vec(messages).expect("messages serialize");
    let prompt_hash = Sha256::digest(&prompt);
    for part in [
        config.backend.name().as_bytes(),
        config.model.as_bytes(),
        prompt_hash.as_slice(),
        &trial.to_le_bytes(),
        &config.temperature.to_bits().to_le_bytes(),
        &config.max_tokens.to_le_bytes(),
        schema.map(|v| v.to_string()).unwrap_or_default().as_bytes(),
    ] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part);
    }
    crate::digest::hex(&h.finalize())
}

/// Writes `value` to `path` whole or not at all: into a file of its own (named by the process,
/// the time and a per-process count, so that two writers of one answer, in one process or two,
/// never share it), then renamed over `path`.
async fn write_whole(path: &Path, value: &Value) -> std::io::Result<()> {
    static WRITES: AtomicU64 = AtomicU64::new(0);
    if let Some(dir) = path.parent() {
        tokio::fs::create_dir_all(dir).await?;
    }
    let n = WRITES.fetch_add(1, Ordering::Relaxed);
    // The time too: pods of one Job often all have pid 1 and may share the cache.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let tmp = path.with_extension(format!("partial.{}-{nanos:x}-{n}", std::process::id()));
    tokio::fs::write(&tmp, serde_json::to_vec(value).expect("json")).await?;
    tokio::fs::rename(&tmp, path).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn many_writers_of_one_answer_at_once_leave_one_whole_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("answer.json");
        // Large enough that writes overlap: with one file per process, one writer's rename
        // took the file another was about to rename ("No such file or directory").
        let text = "episode ".repeat(1 << 14);
        let writes: Vec<_> = (0..64)
            .map(|i| {
                let path = path.clone();
                let value = json!({ "text": format!("{i} {text}") });
                tokio::spawn(async move { write_whole(&path, &value).await })
            })
            .collect();
        for write in writes {
            write.await.unwrap().unwrap();
        }
        let v: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert!(v["text"].as_str().unwrap().ends_with(&text));
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "only the answer is left: {left:?}");
    }
}
