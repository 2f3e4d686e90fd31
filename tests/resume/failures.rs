//! Storage, disk and peer failures: named, before any work where they can be, never a panic.

use super::*;

#[test]
fn an_out_that_cannot_be_used_fails_before_any_work() {
    let dir = scratch();
    let corpus = synth(dir.path(), 2, 20);
    let timed = |out: &str, extra: &[&str]| {
        let started = std::time::Instant::now();
        let o = run(&corpus, out, extra, &[]);
        (o, started.elapsed())
    };
    // A file in the way.
    let file = dir.path().join("somefile");
    std::fs::write(&file, "x").unwrap();
    let (o, _) = timed(&format!("{}/run", s(&file)), &[]);
    assert_eq!(o.status.code(), Some(1));
    let msg = String::from_utf8_lossy(&o.stderr);
    assert!(
        msg.contains("somefile/run") && msg.contains("a file is in the way"),
        "{msg}"
    );
    assert!(!msg.contains("panicked"), "{msg}");
    // A folder we may not write (unless the tests run as root).
    let (o, _) = timed("/proc/epimine-run", &[]);
    assert_eq!(o.status.code(), Some(1));
    let msg = String::from_utf8_lossy(&o.stderr);
    assert!(msg.contains("/proc/epimine-run"), "{msg}");
    assert_eq!(msg.matches("error:").count(), 1, "said once: {msg}");
    // Files of something else: refused unless --overwrite.
    let foreign = dir.path().join("foreign");
    std::fs::create_dir_all(&foreign).unwrap();
    std::fs::write(foreign.join("notes.txt"), "mine").unwrap();
    let (o, took) = timed(s(&foreign), &[]);
    assert_eq!(o.status.code(), Some(1));
    let msg = String::from_utf8_lossy(&o.stderr);
    assert!(
        msg.contains("notes.txt") && msg.contains("--overwrite"),
        "{msg}"
    );
    assert!(took.as_secs() < 20, "refused only after {took:?}");
    assert!(!foreign.join("_checkpoints").exists());
    ok(run(&corpus, s(&foreign), &["--overwrite"], &[]));
    assert!(foreign.join("notes.txt").exists() && foreign.join("run.json").exists());
    // A missing corpus: one clear error.
    let o = run(
        &dir.path().join("nothing"),
        s(&dir.path().join("o2")),
        &[],
        &[],
    );
    assert_eq!(o.status.code(), Some(1));
    let msg = String::from_utf8_lossy(&o.stderr);
    assert!(
        msg.contains("nothing") && msg.contains("no such folder"),
        "{msg}"
    );
    assert_eq!(msg.matches("error").count(), 1, "said once: {msg}");
}

#[test]
fn on_s3_a_killed_run_resumes_and_storage_failures_name_their_cause() {
    let Some(root) = s3_root("resume") else {
        return;
    };
    let dir = scratch();
    let corpus = synth(dir.path(), 6, 10);
    let reference = dir.path().join("reference");
    ok(run(&corpus, s(&reference), &[], &[]));
    let out = format!("{root}/run");
    let killed = run(
        &corpus,
        &out,
        &["-w", "2"],
        &[("EPIMINE_FAULT", "checkpoint:3")],
    );
    assert_eq!(killed.status.signal(), Some(9));
    ok(run(&corpus, &out, &["-w", "2"], &[]));
    let loc = Location::parse(&out, false).unwrap();
    for f in OUTPUTS {
        let got = block_on(loc.get(f)).unwrap();
        assert!(
            got.as_ref() == std::fs::read(reference.join(f)).unwrap().as_slice(),
            "{f} on s3"
        );
    }
    let r: serde_json::Value =
        serde_json::from_slice(&block_on(loc.get("run.json")).unwrap()).unwrap();
    assert!(r["checkpoints"]["reused"].as_u64().unwrap() >= 3);
    let names = block_on(loc.list()).unwrap();
    assert_eq!(
        names
            .iter()
            .filter(|n| n.starts_with("_checkpoints/"))
            .count(),
        6
    );
    let e = epimine(&["eval", "--corpus", s(&corpus), "--run", &out]);
    assert!(e.status.success(), "{}", String::from_utf8_lossy(&e.stderr));

    // A bucket that does not exist: found before any work, named, no panic.
    let missing = "s3://epimine-no-such-bucket/run";
    let o = run(&corpus, missing, &[], &[]);
    assert_eq!(o.status.code(), Some(1));
    let msg = String::from_utf8_lossy(&o.stderr);
    assert!(
        msg.contains(missing) && msg.contains("the bucket does not exist"),
        "{msg}"
    );
    assert!(!msg.contains("panicked") && !msg.contains("<?xml"), "{msg}");
    // A command that writes tables straight away says the same.
    let o = epimine(&[
        "synth",
        "--events",
        "1",
        "--docs-per-event",
        "3",
        "--out",
        "s3://epimine-no-such-bucket/corpus",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let msg = String::from_utf8_lossy(&o.stderr);
    assert!(msg.contains("the bucket does not exist"), "{msg}");
    assert!(!msg.contains("panicked"), "{msg}");
}

#[test]
fn a_full_disk_is_named_and_nothing_panics() {
    // A 200 KiB tmpfs, where the machine lets us mount one (root in a container usually can).
    let dir = scratch();
    let mount = dir.path().join("small-disk");
    std::fs::create_dir_all(&mount).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=200k", "tmpfs", s(&mount)])
        .output()
        .is_ok_and(|o| o.status.success());
    if !mounted {
        eprintln!("cannot mount a tmpfs here: skipping the full-disk check");
        return;
    }
    struct Unmount(PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(&self.0).status();
        }
    }
    let _guard = Unmount(mount.clone());
    let corpus = synth(dir.path(), 6, 10);
    let out = mount.join("run");
    let o = run(&corpus, s(&out), &[], &[]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let msg = String::from_utf8_lossy(&o.stderr);
    assert!(msg.contains("no space left on the device"), "{msg}");
    assert!(msg.contains(s(&out)), "names the location: {msg}");
    assert!(!msg.contains("panicked"), "{msg}");
    assert!(!out.join("run.json").exists());
}

#[test]
fn wrong_s3_credentials_are_named_before_any_work() {
    // A second S3 server that checks credentials (moto after its first request), started here
    // from the one `scripts/ci/s3-server.sh` installed.
    let Ok(server) = std::env::var("EPIMINE_TEST_MOTO_SERVER") else {
        eprintln!("EPIMINE_TEST_MOTO_SERVER is not set (scripts/ci/test.sh sets it): skipping");
        return;
    };
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = Command::new(&server)
        .args(["-H", "127.0.0.1", "-p", &port.to_string()])
        .env("INITIAL_NO_AUTH_ACTION_COUNT", "1")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("moto_server starts");
    struct Stop(std::process::Child);
    impl Drop for Stop {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let started = std::time::Instant::now();
    let mut stream = loop {
        if let Ok(s) = std::net::TcpStream::connect(("127.0.0.1", port)) {
            break s;
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("moto_server ended: {status}");
        }
        assert!(
            started.elapsed().as_secs() < 30,
            "moto_server did not start"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let _stop = Stop(child);
    // The one unauthenticated request makes the bucket.
    use std::io::{Read, Write};
    write!(
        stream,
        "PUT /creds-bucket HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");

    let dir = scratch();
    let corpus = synth(dir.path(), 2, 10);
    let endpoint = format!("http://127.0.0.1:{port}");
    let out = "s3://creds-bucket/run";
    let o = run(
        &corpus,
        out,
        &[],
        &[
            ("AWS_ENDPOINT_URL", &endpoint),
            ("AWS_ALLOW_HTTP", "true"),
            ("AWS_ACCESS_KEY_ID", "wrong"),
            ("AWS_SECRET_ACCESS_KEY", "wrong"),
            ("AWS_REGION", "us-east-1"),
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    let msg = String::from_utf8_lossy(&o.stderr);
    assert!(
        msg.contains(out) && msg.contains("access refused: check the credentials"),
        "{msg}"
    );
    assert!(!msg.contains("panicked"), "{msg}");
}

#[test]
fn a_lost_process_ends_the_run_quickly_and_a_re_run_resumes() {
    let dir = scratch();
    let corpus = synth(dir.path(), 12, 10);
    let reference = dir.path().join("reference");
    ok(run(&corpus, s(&reference), &[], &[]));
    let hosts = hostfile(dir.path(), 2);
    let out = dir.path().join("out");
    // Process 1 dies (SIGKILL) after its first checkpoint; process 0 must end, non-zero, soon,
    // naming it.
    let p1 = spawn_process(
        &corpus,
        &out,
        &hosts,
        "1",
        &[],
        &[("EPIMINE_FAULT", "checkpoint:1")],
    );
    let p0 = spawn_process(&corpus, &out, &hosts, "0", &[], &[]);
    let (o1, _) = wait_bounded(p1, 120);
    assert_eq!(o1.status.signal(), Some(9));
    let (o0, _) = wait_bounded(p0, 120);
    assert_eq!(o0.status.code(), Some(1));
    let msg = String::from_utf8_lossy(&o0.stderr);
    let address = std::fs::read_to_string(&hosts).unwrap();
    let address = address.lines().nth(1).unwrap();
    assert!(
        msg.contains("lost process 1") && msg.contains(address),
        "{msg}"
    );
    assert!(!msg.contains("panicked"), "{msg}");
    assert!(!out.join("run.json").exists());
    let saved = checkpoints(&out).len();
    assert!(saved >= 1, "process 1's checkpoint survives");

    // Both again: the run completes from the checkpoints, the same bytes as one process.
    let p1 = spawn_process(&corpus, &out, &hosts, "1", &[], &[]);
    let p0 = spawn_process(&corpus, &out, &hosts, "0", &[], &[]);
    let (o0, _) = wait_bounded(p0, 300);
    let (o1, _) = wait_bounded(p1, 300);
    assert!(
        o0.status.success(),
        "{}",
        String::from_utf8_lossy(&o0.stderr)
    );
    assert!(
        o1.status.success(),
        "{}",
        String::from_utf8_lossy(&o1.stderr)
    );
    assert_same_tables(&reference, &out, "after a lost process");
    assert_eq!(
        report(&out)["checkpoints"]["reused"].as_u64().unwrap() as usize,
        saved
    );
}

#[test]
fn a_process_that_never_starts_ends_the_run_after_the_startup_timeout() {
    let dir = scratch();
    let corpus = synth(dir.path(), 2, 10);
    let hosts = hostfile(dir.path(), 2);
    let out = dir.path().join("out");
    let p0 = spawn_process(
        &corpus,
        &out,
        &hosts,
        "0",
        &["--set", "cluster.startup_timeout=3"],
        &[],
    );
    let (o0, took) = wait_bounded(p0, 60);
    assert_eq!(o0.status.code(), Some(1));
    assert!(took.as_secs() < 30, "{took:?}");
    let msg = String::from_utf8_lossy(&o0.stderr);
    let address = std::fs::read_to_string(&hosts).unwrap();
    let address = address.lines().nth(1).unwrap();
    assert!(
        msg.contains("waited for process 1") && msg.contains(address),
        "{msg}"
    );
}
