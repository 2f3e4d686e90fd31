//! The test hook that kills a process at a named point (the resume tests).

/// Test hook (`EPIMINE_FAULT=point` or `point:n`): the process kills itself with SIGKILL when it
/// reaches `point` for the n-th time (default the first): `statistics`, `encoding` (worker 0),
/// `checkpoint` (after the n-th checkpoint this process wrote), `assembly` (after the n-th
/// final table is in place: the six tables, then `_identity/<run>.parquet` and
/// `lineage.parquet`), `history` (after `run.json` and `history/<run>.parquet`, before the
/// history's head). For the resume tests; never set it otherwise.
pub(crate) fn fault(point: &str, n: usize) {
    let Ok(spec) = std::env::var("EPIMINE_FAULT") else {
        return;
    };
    let (name, at) = match spec.split_once(':') {
        Some((name, at)) => (name, at.parse().unwrap_or(1)),
        None => (spec.as_str(), 1),
    };
    if name == point && at == n {
        tracing::warn!("EPIMINE_FAULT={spec}: killing this process");
        let _ = std::process::Command::new("kill")
            .args(["-KILL", &std::process::id().to_string()])
            .status();
        std::thread::sleep(std::time::Duration::from_secs(5));
        std::process::abort();
    }
}
