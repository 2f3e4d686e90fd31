//! What the processes of one job must agree on, field by field ([`job_fingerprint`]): the
//! command, the corpus and the background (each location as given, and the size of what is
//! there), `--out` (where every process writes), and every setting that changes outputs. The cluster adds the layout, the
//! launcher's run id and the program's version, and checks it in every handshake
//! ([`crate::topology::admission`]).

use sha2::{Digest, Sha256};

use crate::job::Job;
use crate::storage::Location;
use crate::topology::Fingerprint;

/// Settings that change no output (local paths, speed, patience) and so may differ between the
/// processes of one job; `cluster` is compared as the layout, `import` is not used by runs.
const LOCAL_SETTINGS: [&str; 13] = [
    "encoder.cache_dir",
    "encoder.kernel_cache",
    "encoder.autotune",
    "encoder.warmup",
    "llm.concurrency",
    "llm.timeout",
    "llm.connect_timeout",
    "llm.api_key_env",
    "llm.retries",
    "llm.max_requests",
    "llm.cache",
    "llm.cache_dir",
    "import",
];

/// The fingerprint of `job` run as `command` (`run`, `stats`); `--out` is in it when every
/// process writes there (`shared_out`: `run`'s checkpoints), not when only process 0 does
/// (`stats`).
pub async fn job_fingerprint(command: &str, job: &Job, shared_out: bool) -> Fingerprint {
    let mut f = Fingerprint::new()
        .with("command", command)
        .with("corpus", job.corpus.as_str())
        .with("corpus files", corpus_files(job).await)
        .with("background", job.background.as_str())
        .with("background size", background_size(&job.background).await);
    if shared_out {
        f = f.with("out", job.out.as_str());
    }
    for (key, value) in settings(job) {
        f = f.with(key, value);
    }
    f
}

/// The segments files of a corpus: their count, bytes and a digest of their names and sizes
/// (what a reader says when it cannot list them); the files this process pinned, when it did
/// ([`crate::corpus::pin`]).
async fn corpus_files(job: &Job) -> String {
    let location = job.corpus_location();
    let pinned = location
        .as_ref()
        .ok()
        .and_then(crate::corpus::pinned)
        .map(|files| files.into_iter().map(|f| (f.name, f.bytes)).collect());
    let listed = match (pinned, location) {
        (Some(files), _) => Ok(files),
        (None, Ok(loc)) => loc
            .list_folder("")
            .await
            .map(|found| {
                found
                    .into_iter()
                    .filter(|(n, _, _)| {
                        !n.contains('/') && n.starts_with("segments") && n.ends_with(".parquet")
                    })
                    .map(|(n, size, _)| (n, size))
                    .collect::<Vec<(String, u64)>>()
            })
            .map_err(|e| e.to_string()),
        (None, Err(e)) => Err(e.to_string()),
    };
    match listed {
        Ok(files) => {
            let bytes: u64 = files.iter().map(|(_, s)| s).sum();
            let digest = Sha256::digest(format!("{files:?}"));
            let hex = crate::digest::hex(&digest[..6]);
            format!("{} file(s), {bytes} bytes, digest {hex}", files.len())
        }
        Err(e) => format!("(unreadable: {e})"),
    }
}

/// The size of one file in bytes (or why it cannot be read).
/// What stands for a background's content: a file's size; the default's wordfreq version; the
/// corpus's own articles are fingerprinted as the corpus's files.
async fn background_size(source: &crate::background::Source) -> String {
    use crate::background::{wordfreq, Source};
    match source {
        Source::Wordfreq => format!("wordfreq {}", wordfreq::VERSION),
        Source::Corpus => "the corpus's files".to_string(),
        Source::File(path) => file_size(path).await,
    }
}

async fn file_size(path: &str) -> String {
    let sized = match Location::parse_file(path, false) {
        Ok((dir, name)) => dir.size(&name).await.map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    };
    match sized {
        Ok(bytes) => format!("{bytes} bytes"),
        Err(e) => format!("(unreadable: {e})"),
    }
}

/// Every setting of the job but the inputs, `--out`, the layout and [`LOCAL_SETTINGS`], as
/// `section.key` and its TOML value.
fn settings(job: &Job) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let Ok(table) = toml::Table::try_from(job) else {
        return out;
    };
    fn flatten(prefix: &str, value: &toml::Value, out: &mut Vec<(String, String)>) {
        if LOCAL_SETTINGS.contains(&prefix) {
            return;
        }
        match value {
            toml::Value::Table(t) => {
                for (k, v) in t {
                    let key = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    flatten(&key, v, out);
                }
            }
            other => out.push((prefix.to_string(), other.to_string())),
        }
    }
    for (section, value) in &table {
        if matches!(
            section.as_str(),
            "corpus" | "background" | "out" | "cluster"
        ) {
            continue;
        }
        flatten(section, value, &mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_setting_is_named_and_local_ones_are_not_compared() {
        let job = Job::from_toml("corpus = \"c\"\nbackground = \"b\"\nout = \"o\"\n", "t").unwrap();
        let other = job
            .clone()
            .with_sets(&[
                "episodes.max_episodes=7".into(),
                "encoder.cache_dir=/local/cache".into(),
                "cluster.workers=4".into(),
            ])
            .unwrap();
        let keys: Vec<String> = settings(&job).into_iter().map(|(k, _)| k).collect();
        assert!(
            keys.contains(&"episodes.max_episodes".to_string()),
            "{keys:?}"
        );
        assert!(keys.contains(&"encoder.model".to_string()), "{keys:?}");
        assert!(!keys
            .iter()
            .any(|k| k.starts_with("cluster") || k.starts_with("import")));
        let f = |j: &Job| {
            settings(j)
                .into_iter()
                .fold(Fingerprint::new(), |f, (k, v)| f.with(k, v))
        };
        let diff = f(&job).differences(&f(&other));
        assert_eq!(diff.len(), 1, "{diff:?}");
        assert!(
            diff[0].starts_with("episodes.max_episodes 7 vs "),
            "{diff:?}"
        );
    }
}
