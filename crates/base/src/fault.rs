//! The test hooks that kill a process at a named point (the resume tests) or stall it there
//! (the fence at the switch).

/// Test hook (`EPIMINE_FAULT=point` or `point:n`): the process kills itself with SIGKILL when it
/// reaches `point` for the n-th time (default the first): `statistics`, `encoding` (worker 0),
/// `checkpoint` (after the n-th checkpoint this process wrote), `assembly` (after the n-th
/// final table is in its version folder: the seven tables, then `_identity/<run>.parquet`, its
/// articles and `lineage.parquet`), `publish` (after the n-th file of the committed version is
/// published), `history` (after `run.json` and `history/<run>.parquet` are published, before
/// the history's head). For the resume tests; never set it otherwise.
pub fn fault(point: &str, n: usize) {
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

/// Test hook (`EPIMINE_STALL=point:FILE`): at `point` the process waits while `FILE` exists (at
/// most 10 minutes), as a run stalled there (SIGSTOP, a frozen VM) would: `switch` (the commit's
/// fence passed, before the switch) or `publish` (after the switch, before the publication).
/// For the tests of the fence at the switch; never set it otherwise.
pub fn stall(point: &str) {
    let Ok(spec) = std::env::var("EPIMINE_STALL") else {
        return;
    };
    let Some((name, file)) = spec.split_once(':') else {
        return;
    };
    if name != point {
        return;
    }
    eprintln!("EPIMINE_STALL={spec}: stalling at {point}");
    let started = std::time::Instant::now();
    while std::path::Path::new(file).exists() && started.elapsed().as_secs() < 600 {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
