//! A run admits only its own processes, and an output folder takes one run at a time. Real
//! processes: two different jobs on one hostfile fail fast, naming what differs, and neither
//! writes anything; a wrong or missing token (`EPIMINE_TOKEN`) is refused and never shown or
//! written; the same job with its token gives the bytes of one process; a second run into a
//! held `--out` is refused naming the holder; the lock of a killed run (or of another machine,
//! once expired) does not block the resume; the same on the tests' S3 server, whose
//! create-only put is what makes the lock exclusive.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use crate::util::*;
use epimine::storage::Location;

mod folders;
mod peers;
mod readers;

/// `epimine run` on `corpus` into `out` with the tiny model, `extra` flags, `env`; nothing of
/// the test's own environment that changes admission (a token, a launcher).
fn run(corpus: &Path, out: &str, extra: &[&str], env: &[(&str, &str)]) -> Command {
    let mut cmd = synth_run_with(corpus, out, &tiny_model());
    cmd.args(extra)
        .env("RUST_LOG", "warn")
        .env_remove("EPIMINE_FAULT")
        .env_remove("EPIMINE_TOKEN")
        .env_remove("EPIMINE_RUN_ID")
        .env_remove("JOB_COMPLETION_INDEX")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, _) in std::env::vars() {
        if k.starts_with("SLURM") {
            cmd.env_remove(k);
        }
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

/// Process `p` of two, one worker each.
fn process(
    corpus: &Path,
    out: &Path,
    hosts: &Path,
    p: &str,
    extra: &[&str],
    env: &[(&str, &str)],
) -> Child {
    let mut args = vec!["-w", "1", "-n", "2", "-p", p, "-H", s(hosts)];
    args.extend(extra);
    run(corpus, s(out), &args, env).spawn().unwrap()
}

/// Sends `signal` (`STOP`, `CONT`) to a process.
fn signal(pid: u32, signal: &str) {
    let done = Command::new("kill")
        .args([&format!("-{signal}"), &pid.to_string()])
        .status()
        .unwrap();
    assert!(done.success());
}

/// Waits (at most 120 s) until `held()`; fails if `child` ends first.
fn wait_until(child: &mut Child, held: impl Fn() -> bool) {
    let started = Instant::now();
    while !held() {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the run ended ({status}) before it held its --out");
        }
        assert!(started.elapsed().as_secs() < 120, "no lock appeared");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// This machine's host name, as the lock names it.
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default()
}

/// Starts a run of `corpus` into `out` that stalls at `point` (`EPIMINE_STALL`) while the
/// returned marker file exists, its stderr in the returned log; returns once it stalls there.
fn start_stalled(
    dir: &Path,
    corpus: &Path,
    out: &Path,
    point: &str,
) -> (Child, std::path::PathBuf, std::path::PathBuf) {
    let marker = dir.join(format!("{point}.stall"));
    std::fs::write(&marker, b"").unwrap();
    let log = dir.join(format!("{point}.log"));
    let stall = format!("{point}:{}", s(&marker));
    let mut stalled = run(corpus, s(out), &[], &[("EPIMINE_STALL", &stall)])
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    wait_until(&mut stalled, || {
        std::fs::read_to_string(&log).is_ok_and(|t| t.contains("stalling at"))
    });
    (stalled, marker, log)
}

/// Makes the lock of `out` look like another machine's that has not been refreshed for 10
/// minutes (a holder stalled there: SIGSTOP, a frozen VM), so that the next run takes it over.
fn age_the_lock(out: &Path) {
    let locks: Vec<_> = std::fs::read_dir(out.join("_lock"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(locks.len(), 1, "{locks:?}");
    let holder = serde_json::json!({
        "command": "epimine run", "host": "node-b", "pid": 4242,
        "started": "2026-01-01T00:00:00Z", "machine": "another-boot pid:[1]",
        "process_start": 5, "epimine": "0.1.0"
    });
    std::fs::write(&locks[0], holder.to_string()).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&locks[0])
        .unwrap()
        .set_modified(SystemTime::now() - Duration::from_secs(600))
        .unwrap();
}
