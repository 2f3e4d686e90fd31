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

#[test]
fn two_jobs_on_one_hostfile_fail_fast_naming_what_differs_and_write_nothing() {
    let dir = scratch();
    let a = synth(&dir.path().join("a"), 2, 10);
    let b = synth(&dir.path().join("b"), 3, 10);
    let hosts = hostfile(dir.path(), 2);
    let (ja, jb) = (dir.path().join("jA"), dir.path().join("jB"));
    // Job A's process 0 and job B's process 1 (another corpus, setting and output) meet on the
    // same two addresses; the start-up wait is the default five minutes.
    let one = process(
        &b,
        &jb,
        &hosts,
        "1",
        &["--set", "episodes.max_episodes=7"],
        &[],
    );
    let zero = process(&a, &ja, &hosts, "0", &[], &[]);
    let (o0, t0) = wait_bounded(zero, 120);
    let (o1, t1) = wait_bounded(one, 120);
    let (e0, e1) = (stderr(&o0), stderr(&o1));
    assert_eq!(o0.status.code(), Some(1), "{e0}");
    assert_eq!(o1.status.code(), Some(1), "{e1}");
    assert!(t0.as_secs() < 60 && t1.as_secs() < 60, "{t0:?} {t1:?}");
    let address = |i: usize| {
        std::fs::read_to_string(&hosts)
            .unwrap()
            .lines()
            .nth(i)
            .unwrap()
            .to_string()
    };
    // Each names the other process and what differs, the other's value first.
    assert!(
        e0.contains(&format!("process 1 ({}", address(1)))
            && e0.contains(&format!("runs another job: corpus {} vs {}", s(&b), s(&a)))
            && e0.contains("episodes.max_episodes 7 vs")
            && e0.contains(&format!("out {} vs {}", s(&jb), s(&ja))),
        "{e0}"
    );
    assert!(
        e1.contains(&format!(
            "process 0 ({}) runs another job: corpus {} vs {}",
            address(0),
            s(&a),
            s(&b)
        )),
        "{e1}"
    );
    for e in [&e0, &e1] {
        assert!(!e.contains("panicked"), "{e}");
        assert_eq!(e.matches("error:").count(), 1, "said once: {e}");
    }
    assert!(!ja.exists() && !jb.exists(), "neither wrote anything");
}

/// Connections that say nothing hold up no one (issue 47 item 5): three idle TCP connections to
/// process 0's port, opened before process 1 starts and held open, and a start-up wait of 12 s
/// (each used to cost a 10 s read in turn: both processes failed "not every other process
/// connected"). Now each is read on its own thread and the run goes through.
#[test]
fn silent_connections_do_not_hold_up_the_start() {
    let dir = scratch();
    let corpus = synth(dir.path(), 2, 10);
    let hosts = hostfile(dir.path(), 2);
    let out = dir.path().join("out");
    let zero_address = std::fs::read_to_string(&hosts)
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .to_string();
    let timeout = ["--set", "cluster.startup_timeout=12"];
    let zero = process(&corpus, &out, &hosts, "0", &timeout, &[]);
    let started = Instant::now();
    let mut idle = Vec::new();
    while idle.len() < 3 {
        match std::net::TcpStream::connect(&zero_address) {
            Ok(stream) => idle.push(stream),
            Err(_) => {
                assert!(started.elapsed().as_secs() < 30, "process 0 never listened");
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
    let one = process(&corpus, &out, &hosts, "1", &timeout, &[]);
    let (o0, _) = wait_bounded(zero, 120);
    let (o1, _) = wait_bounded(one, 120);
    drop(idle);
    ok(o0);
    ok(o1);
    assert!(out.join("run.json").exists());
}

#[test]
fn a_wrong_or_missing_token_is_refused_and_the_token_is_never_shown_or_written() {
    let dir = scratch();
    let corpus = synth(dir.path(), 2, 10);
    let hosts = hostfile(dir.path(), 2);
    let out = dir.path().join("out");
    let secret = "alpha-7f3c9e-secret";
    let other = "beta-0d21aa-secret";
    let short = ["--set", "cluster.startup_timeout=5"];
    // Process 1 with another token, without one, and with one where process 0 has none: it is
    // refused at once, told why; process 0 logs the refusal and goes on waiting for its own
    // process 1 (here until its 5 s start-up wait ends).
    type Env<'a> = &'a [(&'a str, &'a str)];
    let cases: [(Env, Env, &str, &str); 3] = [
        (
            &[("EPIMINE_TOKEN", secret)],
            &[("EPIMINE_TOKEN", other)],
            "refused this process: a wrong token (its EPIMINE_TOKEN differs",
            "it presented a wrong token",
        ),
        (
            &[("EPIMINE_TOKEN", secret)],
            &[],
            "refused this process: no token, and this run requires one",
            "it presented no token",
        ),
        (
            &[],
            &[("EPIMINE_TOKEN", secret)],
            "refused this process: a token (EPIMINE_TOKEN), and process 0 has none",
            "it presented a token (EPIMINE_TOKEN), and process 0 has none",
        ),
    ];
    for (env0, env1, said1, said0) in cases {
        let one = process(&corpus, &out, &hosts, "1", &short, env1);
        let zero = process(&corpus, &out, &hosts, "0", &short, env0);
        let (o1, t1) = wait_bounded(one, 60);
        let (o0, _) = wait_bounded(zero, 60);
        let (e0, e1) = (stderr(&o0), stderr(&o1));
        assert_eq!(o1.status.code(), Some(1), "{e1}");
        assert!(t1.as_secs() < 30, "{t1:?}");
        assert!(e1.contains(said1), "{e1}");
        assert_eq!(o0.status.code(), Some(1), "{e0}");
        assert!(e0.contains(said0), "{e0}");
        assert!(e0.contains("waited for process 1"), "{e0}");
        for e in [&e0, &e1] {
            assert!(
                !e.contains(secret) && !e.contains(other),
                "the token shown: {e}"
            );
        }
        assert!(!out.join("run.json").exists());
    }

    // The same token on both: the run of one process, byte for byte; the token is in no file
    // and no log line.
    let single = dir.path().join("single");
    ok(run(&corpus, s(&single), &[], &[]).output().unwrap());
    let env = [("EPIMINE_TOKEN", secret)];
    let one = process(&corpus, &out, &hosts, "1", &[], &env);
    let zero = process(&corpus, &out, &hosts, "0", &[], &env);
    let (o0, _) = wait_bounded(zero, 300);
    let (o1, _) = wait_bounded(one, 300);
    let (o0, o1) = (ok(o0), ok(o1));
    assert_same_tables(&single, &out, "two processes with a token");
    for text in [
        stderr(&o0),
        stderr(&o1),
        String::from_utf8_lossy(&o0.stdout).into_owned(),
        std::fs::read_to_string(out.join("job.toml")).unwrap(),
        std::fs::read_to_string(out.join("run.json")).unwrap(),
    ] {
        assert!(!text.contains(secret), "the token shown or written: {text}");
    }
    assert!(!out.join("_lock").exists(), "the lock is given back");
}

#[test]
fn a_second_run_into_a_held_folder_is_refused_and_a_killed_runs_lock_does_not_block_it() {
    let dir = scratch();
    let corpus = synth(dir.path(), 6, 10);
    let reference = dir.path().join("reference");
    ok(run(&corpus, s(&reference), &[], &[]).output().unwrap());
    let out = dir.path().join("out");

    // A run holds --out (stopped, so that it surely still does); a second one is refused at
    // start, naming the holder, and changes nothing; the first then finishes as if alone.
    let mut first = run(&corpus, s(&out), &[], &[]).spawn().unwrap();
    wait_until(&mut first, || out.join("_lock/0").exists());
    signal(first.id(), "STOP");
    let (second, took) = {
        let started = Instant::now();
        let o = run(&corpus, s(&out), &["--set", "episodes.max_episodes=7"], &[])
            .output()
            .unwrap();
        (o, started.elapsed())
    };
    // The same with two processes: process 1 is told at once why the run does not start.
    let hosts = hostfile(dir.path(), 2);
    let one = process(&corpus, &out, &hosts, "1", &[], &[]);
    let zero = process(&corpus, &out, &hosts, "0", &[], &[]);
    let (o1, t1) = wait_bounded(one, 120);
    let (o0, _) = wait_bounded(zero, 120);
    signal(first.id(), "CONT");
    let (e0, e1) = (stderr(&o0), stderr(&o1));
    assert_eq!(o0.status.code(), Some(1), "{e0}");
    assert!(e0.contains("in use by another run"), "{e0}");
    assert_eq!(o1.status.code(), Some(1), "{e1}");
    assert!(t1.as_secs() < 60, "{t1:?}");
    assert!(
        e1.contains("the run did not start: process 0 could not start: --out")
            && e1.contains(&format!("pid {}", first.id())),
        "{e1}"
    );
    let said = stderr(&second);
    assert_eq!(second.status.code(), Some(1), "{said}");
    assert!(took.as_secs() < 60, "{took:?}");
    assert!(
        said.contains(&format!(
            "--out {}: in use by another run: epimine run on host {}, pid {}",
            s(&out),
            host_name(),
            first.id()
        )) && said.contains("_lock/0"),
        "{said}"
    );
    let (first, _) = wait_bounded(first, 300);
    ok(first);
    assert_same_tables(&reference, &out, "the held run");
    assert!(!out.join("_lock").exists(), "the lock is given back");

    // A run killed half way leaves its lock; running it again takes the lock over (its process
    // is gone) and resumes from the checkpoints.
    let killed = dir.path().join("killed");
    let o = run(
        &corpus,
        s(&killed),
        &[],
        &[("EPIMINE_FAULT", "checkpoint:2")],
    )
    .output()
    .unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(o.status.signal(), Some(9), "{}", stderr(&o));
    let left: serde_json::Value =
        serde_json::from_slice(&std::fs::read(killed.join("_lock/0")).unwrap()).unwrap();
    assert_eq!(left["host"], host_name().as_str());
    let resumed = ok(run(&corpus, s(&killed), &[], &[]).output().unwrap());
    let said = stderr(&resumed);
    assert!(
        said.contains("taking over the lock of a run that ended without giving it back")
            && said.contains(&format!("its process {} is gone", left["pid"])),
        "{said}"
    );
    assert_same_tables(&reference, &killed, "resumed after a kill");
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(killed.join("run.json")).unwrap()).unwrap();
    assert!(
        report["checkpoints"]["reused"].as_u64().unwrap() >= 2,
        "{report}"
    );
    assert!(!killed.join("_lock").exists());

    // A lock of another machine, whose process cannot be checked from here: refused while it
    // is fresh, taken over once it has not been refreshed for the expiry (its file's time
    // moved back 10 minutes).
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir_all(elsewhere.join("_lock")).unwrap();
    let lock = elsewhere.join("_lock/0");
    let holder = serde_json::json!({
        "command": "epimine run", "host": "node-b", "pid": 4242,
        "started": "2026-01-01T00:00:00Z", "machine": "another-boot pid:[1]",
        "process_start": 5, "epimine": "0.1.0"
    });
    std::fs::write(&lock, holder.to_string()).unwrap();
    let o = run(&corpus, s(&elsewhere), &[], &[]).output().unwrap();
    let said = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{said}");
    assert!(
        said.contains("in use by another run: epimine run on host node-b, pid 4242")
            && said.contains("120 s after its last refresh"),
        "{said}"
    );
    assert!(!elsewhere.join("run.json").exists() && !elsewhere.join("job.toml").exists());
    std::fs::File::options()
        .write(true)
        .open(&lock)
        .unwrap()
        .set_modified(SystemTime::now() - Duration::from_secs(600))
        .unwrap();
    let o = ok(run(&corpus, s(&elsewhere), &[], &[]).output().unwrap());
    assert!(
        stderr(&o).contains("host node-b, pid 4242")
            && stderr(&o).contains("it was not refreshed for"),
        "{}",
        stderr(&o)
    );
    assert_same_tables(&reference, &elsewhere, "after an expired lock");
    assert!(!elsewhere.join("_lock").exists());
}

#[test]
fn only_one_writer_creates_an_object_locally_and_on_s3() {
    let dir = scratch();
    let mut places = vec![s(dir.path()).to_string()];
    places.extend(s3_root("put-new"));
    for place in places {
        let loc = Location::parse(&place, true).unwrap();
        assert!(
            block_on(loc.put_new("_lock/0", "first".into())).unwrap(),
            "{place}"
        );
        assert!(
            !block_on(loc.put_new("_lock/0", "second".into())).unwrap(),
            "{place}"
        );
        assert_eq!(
            block_on(loc.get("_lock/0")).unwrap().as_ref(),
            b"first",
            "{place}"
        );
        let listed = block_on(loc.list_folder("_lock")).unwrap();
        assert_eq!(listed.len(), 1, "{place}");
        assert_eq!(
            (listed[0].0.as_str(), listed[0].1),
            ("_lock/0", 5),
            "{place}"
        );
        let age = SystemTime::now()
            .duration_since(listed[0].2)
            .unwrap_or_default();
        assert!(age.as_secs() < 60, "{place}: {age:?}");
    }
}

#[test]
fn on_s3_a_held_folder_is_refused_and_a_killed_runs_lock_is_taken_over() {
    let Some(root) = s3_root("lock") else {
        return;
    };
    let dir = scratch();
    let corpus = synth(dir.path(), 6, 10);
    let reference = dir.path().join("reference");
    ok(run(&corpus, s(&reference), &[], &[]).output().unwrap());
    let same_bytes = |out: &str, what: &str| {
        let loc = Location::parse(out, false).unwrap();
        for f in OUTPUTS {
            let got = block_on(loc.get(f)).unwrap();
            assert!(
                got.as_ref() == std::fs::read(reference.join(f)).unwrap().as_slice(),
                "{what}: {f} on s3"
            );
        }
        assert!(
            block_on(loc.list_folder("_lock")).unwrap().is_empty(),
            "{what}: lock left"
        );
    };

    let out = format!("{root}/held");
    let loc = Location::parse(&out, false).unwrap();
    let mut first = run(&corpus, &out, &[], &[]).spawn().unwrap();
    wait_until(&mut first, || {
        block_on(loc.exists("_lock/0")).unwrap_or(false)
    });
    signal(first.id(), "STOP");
    let second = run(&corpus, &out, &[], &[]).output().unwrap();
    signal(first.id(), "CONT");
    let said = stderr(&second);
    assert_eq!(second.status.code(), Some(1), "{said}");
    assert!(
        said.contains(&format!(
            "in use by another run: epimine run on host {}, pid {}",
            host_name(),
            first.id()
        )) && said.contains(&format!("{out}/_lock/0")),
        "{said}"
    );
    let (first, _) = wait_bounded(first, 300);
    ok(first);
    same_bytes(&out, "the held run");

    let out = format!("{root}/killed");
    let o = run(
        &corpus,
        &out,
        &["-w", "2"],
        &[("EPIMINE_FAULT", "checkpoint:2")],
    )
    .output()
    .unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(o.status.signal(), Some(9), "{}", stderr(&o));
    let loc = Location::parse(&out, false).unwrap();
    assert!(
        block_on(loc.exists("_lock/0")).unwrap(),
        "the killed run's lock stays"
    );
    let resumed = ok(run(&corpus, &out, &["-w", "2"], &[]).output().unwrap());
    assert!(stderr(&resumed).contains("is gone"), "{}", stderr(&resumed));
    same_bytes(&out, "resumed on s3");
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

/// Issue 64, item 2: a run stalled at its switch (its fence passed) or inside its publication
/// while another run took the folder over and committed never replaces the newer result: at
/// the switch it loses the run number (exit 1, naming the winner, its version removed); after
/// its switch, the newer run finishes its publication first, and the stalled one, resuming,
/// leaves the top of the folder as the newest commit's.
#[test]
fn a_run_stalled_at_its_switch_never_replaces_a_newer_result() {
    let dir = scratch();
    let corpus = synth(dir.path(), 6, 10);
    // The newer run's tables differ from the stalled one's (five keywords a title).
    let newer = ["--set", "episodes.keywords=5"];
    // The newer run alone, and after the stalled one's (its run 2: the ids follow run 1).
    let alone = dir.path().join("alone");
    ok(run(&corpus, s(&alone), &newer, &[]).output().unwrap());
    let after = dir.path().join("after");
    ok(run(&corpus, s(&after), &[], &[]).output().unwrap());
    ok(run(&corpus, s(&after), &newer, &[]).output().unwrap());
    for point in ["switch", "publish"] {
        let reference = if point == "switch" { &alone } else { &after };
        let out = dir.path().join(point);
        let (stalled, marker, log) = start_stalled(dir.path(), &corpus, &out, point);
        age_the_lock(&out);
        let took_over = ok(run(&corpus, s(&out), &newer, &[]).output().unwrap());
        let said = stderr(&took_over);
        assert!(said.contains("it was not refreshed for"), "{point}: {said}");
        assert_same_tables(reference, &out, &format!("{point}: the newer run"));
        std::fs::remove_file(&marker).unwrap();
        let (resumed, _) = wait_bounded(stalled, 300);
        let said = std::fs::read_to_string(&log).unwrap();
        let commits: Vec<String> = files_in(&out.join("_commits"));
        if point == "switch" {
            assert_eq!(resumed.status.code(), Some(1), "{said}");
            assert!(
                said.contains("another run committed run 1 first (epimine run on host"),
                "{said}"
            );
            assert_eq!(commits, ["000001.json"]);
        } else {
            // Committed as run 1, published by the newer run (run 2) before its own.
            assert!(resumed.status.success(), "{said}");
            assert!(
                said.contains("run 2 (epimine run on host") && said.contains("published again"),
                "{said}"
            );
            assert_eq!(commits, ["000001.json", "000002.json"]);
            assert_eq!(files_in(&out.join("history")).len(), 2);
        }
        // The top of the folder is the newer run's, whole, and only committed versions are
        // kept.
        assert_same_tables(reference, &out, &format!("{point}: after the stalled run"));
        let report: serde_json::Value =
            serde_json::from_slice(&std::fs::read(out.join("run.json")).unwrap()).unwrap();
        assert_eq!(report["job"]["episodes"]["keywords"], 5, "{point}");
        assert_eq!(
            files_in(&out.join("_versions")).len(),
            commits.len(),
            "{point}"
        );
    }
}

/// Issue 64, item 4: every folder a run writes in `--out` is checked before any work, so a run
/// that could not commit stops at once, naming the folder, and the last good result stays whole
/// (here `history/` replaced by a file: root, which runs the tests, may write any folder).
#[test]
fn a_folder_a_run_cannot_write_stops_it_before_any_work_and_the_last_result_stays() {
    let dir = scratch();
    let corpus = synth(dir.path(), 3, 10);
    let out = dir.path().join("out");
    ok(run(&corpus, s(&out), &[], &[]).output().unwrap());
    let committed = std::fs::read(out.join("run.json")).unwrap();
    let history = out.join("history");
    std::fs::rename(&history, dir.path().join("history-away")).unwrap();
    std::fs::write(&history, b"not a folder").unwrap();
    let o = run(&corpus, s(&out), &["--set", "episodes.keywords=5"], &[])
        .output()
        .unwrap();
    let said = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{said}");
    assert!(
        said.contains(&format!("{} is not a folder", s(&history)))
            && said.contains("a run writes its history/ there"),
        "{said}"
    );
    assert!(
        !said.contains("encoding"),
        "refused before any work: {said}"
    );
    assert_eq!(std::fs::read(out.join("run.json")).unwrap(), committed);
    assert_eq!(files_in(&out.join("_commits")), ["000001.json"]);
    std::fs::remove_file(&history).unwrap();
    std::fs::rename(dir.path().join("history-away"), &history).unwrap();
    ok(
        run(&corpus, s(&out), &["--set", "episodes.keywords=5"], &[])
            .output()
            .unwrap(),
    );
    assert_eq!(
        files_in(&out.join("_commits")),
        ["000001.json", "000002.json"]
    );
}

/// Issue 64, item 3: a run reads the corpus as it was when it began. A batch that lands while
/// it works (here during its statistics stage, the run held there) is not read by it — its
/// tables are those of the corpus before, and `run.json`'s `corpus_files` names the files it
/// read — and the next run reads it.
#[test]
fn a_batch_appended_during_a_run_is_the_next_runs() {
    let dir = scratch();
    let corpus = synth(dir.path(), 3, 10);
    let before = dir.path().join("before");
    ok(run(&corpus, s(&before), &[], &[]).output().unwrap());
    let out = dir.path().join("out");
    let (stalled, marker, log) = start_stalled(dir.path(), &corpus, &out, "statistics");
    // A batch lands: the first event's articles again, as new articles (ids after the last).
    let segments: Vec<epimine::tables::Segment> = read_rows(&corpus);
    let last = segments.iter().map(|s| s.doc_id).max().unwrap();
    let first_event = segments[0].key_event.clone();
    let batch: Vec<epimine::tables::Segment> = segments
        .iter()
        .filter(|s| s.key_event == first_event)
        .map(|s| epimine::tables::Segment {
            doc_id: s.doc_id + last + 1,
            ..s.clone()
        })
        .collect();
    let loc = Location::parse(s(&corpus), false).unwrap();
    block_on(async {
        let mut w = loc
            .table_writer_named::<epimine::tables::Segment>("segments-000002.parquet")
            .unwrap();
        w.push(batch).await.unwrap();
        w.finish().await.unwrap();
    });
    std::fs::remove_file(&marker).unwrap();
    let (done, _) = wait_bounded(stalled, 300);
    assert!(
        done.status.success(),
        "{}",
        std::fs::read_to_string(&log).unwrap()
    );
    assert_same_tables(&before, &out, "a run with a batch appended meanwhile");
    let files = |out: &Path| -> Vec<String> {
        let report: serde_json::Value =
            serde_json::from_slice(&std::fs::read(out.join("run.json")).unwrap()).unwrap();
        report["corpus_files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(files(&out), ["segments.parquet"]);
    ok(run(&corpus, s(&out), &[], &[]).output().unwrap());
    assert_eq!(files(&out), ["segments-000002.parquet", "segments.parquet"]);
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("run.json")).unwrap()).unwrap();
    let articles: u64 = report["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["key_event"] == first_event.as_str())
        .map(|e| e["articles"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(articles, 20, "{report}");
}

/// Issue 64's minor item: files a killed run left staged (`episodes.parquet#0`: SIGKILL while
/// one was being written, before its rename into place) are removed by the next run, once it
/// holds the folder — those untouched for 10 minutes: a fresh one may be a live writer's (a
/// run racing for the lock, another process's probe).
#[test]
fn files_a_killed_run_left_staged_are_removed_by_the_next() {
    let dir = scratch();
    let corpus = synth(dir.path(), 2, 10);
    let out = dir.path().join("out");
    ok(run(&corpus, s(&out), &[], &[]).output().unwrap());
    let staged = [
        "episodes.parquet#0",
        "_identity/000001.parquet#3",
        "run.json#1",
    ];
    // Left 11 minutes ago; one staged a second ago (a writer at work) stays.
    for f in staged.iter().chain(&["terms.parquet#2"]) {
        std::fs::write(out.join(f), b"half").unwrap();
    }
    for f in staged {
        std::fs::File::options()
            .write(true)
            .open(out.join(f))
            .unwrap()
            .set_modified(SystemTime::now() - Duration::from_secs(660))
            .unwrap();
    }
    let o = ok(run(&corpus, s(&out), &[], &[("RUST_LOG", "info")])
        .output()
        .unwrap());
    assert!(
        stderr(&o).contains("3 file(s) a stopped run left half-written removed"),
        "{}",
        stderr(&o)
    );
    for f in staged {
        assert!(!out.join(f).exists(), "{f}");
    }
    assert!(out.join("terms.parquet#2").exists());
}
