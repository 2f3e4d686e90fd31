//! Who may join a run: one job a hostfile, silent connections, the token.

use super::*;

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
