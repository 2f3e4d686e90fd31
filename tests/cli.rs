//! The command line as a new user tries it: `-h` on every command, no colour codes in a log
//! that is not a terminal, an error said once, `--set` errors that name the key, warnings that
//! name file and line.

use std::process::Command;

use crate::util::*;

/// Every subcommand path of the binary.
const COMMANDS: &[&[&str]] = &[
    &[],
    &["import"],
    &["eval"],
    &["demo"],
    &["schemas"],
    &["stats"],
    &["background"],
    &["background", "build"],
    &["synth"],
    &["encode"],
    &["models"],
    &["models", "fetch"],
    &["run"],
    &["baseline"],
    &["baseline", "kmeans"],
    &["baseline", "hdbscan"],
    &["report"],
];

#[test]
fn dash_h_is_help_on_every_command() {
    for command in COMMANDS {
        let mut args: Vec<&str> = command.to_vec();
        args.push("-h");
        let out = epimine(&args);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("Usage: epimine"),
            "epimine {args:?}: {}{stdout}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // The hostfile moved to -H / --hostfile.
    for command in ["run", "stats"] {
        let help = epimine_ok(&[command, "--help"]);
        assert!(help.contains("-H, --hostfile"), "{help}");
    }
}

/// Runs the binary with stderr to a pipe (not a terminal), with the given environment.
fn with_env(args: &[&str], env: &[(&str, &str)]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_epimine"))
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("the binary runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_log_that_is_not_a_terminal_has_no_colour_and_an_error_is_said_once() {
    let dir = scratch();
    let corpus = synth(dir.path(), 2, 5);
    let bg = corpus.join("background.txt");
    let missing = dir.path().join("no-such-corpus");
    let stats_out = dir.path().join("stats");
    let run_out = dir.path().join("run");
    let args = [
        "stats",
        "--corpus",
        s(&missing),
        "--background",
        s(&bg),
        "--out",
        s(&stats_out),
        "--no-vectors",
        "-w",
        "2",
    ];
    for env in [vec![("RUST_LOG", "info")], vec![("NO_COLOR", "1")]] {
        let (ok, stderr) = with_env(&args, &env);
        assert!(!ok, "{stderr}");
        assert!(
            !stderr.contains('\u{1b}'),
            "colour codes in a log: {stderr}"
        );
        let said = stderr.matches("no-such-corpus").count();
        assert_eq!(said, 1, "the error should be said once:\n{stderr}");
        assert!(stderr.contains("error: "), "{stderr}");
    }
    // The same for `run`, with two workers.
    let (ok, stderr) = with_env(
        &[
            "run",
            "--corpus",
            s(&missing),
            "--background",
            s(&bg),
            "--out",
            s(&run_out),
            "-w",
            "2",
        ],
        &[("RUST_LOG", "info")],
    );
    assert!(!ok, "{stderr}");
    assert!(!stderr.contains('\u{1b}'), "{stderr}");
    assert_eq!(stderr.matches("no-such-corpus").count(), 1, "{stderr}");
}

#[test]
fn a_bad_set_names_the_key_not_a_line() {
    let dir = scratch();
    for (set, expect) in [
        ("episodes.top_articles=abc", "`episodes.top_articles`"),
        ("episodes.top_article=0.3", "top_article"),
        ("llm.backend=gpt", "gpt"),
    ] {
        let out = epimine(&[
            "run",
            "--corpus",
            "c",
            "--background",
            "b",
            "--out",
            s(dir.path()),
            "--set",
            set,
        ]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success());
        assert!(
            err.contains(&format!("--set {set}:")) && err.contains(expect),
            "{err}"
        );
        assert!(!err.contains("line "), "{err}");
    }
}

#[test]
fn a_label_id_not_in_episodes_tsv_is_warned_about_with_file_and_line() {
    let root = scratch();
    let event = root.path().join("theme_a/event_a");
    std::fs::create_dir_all(&event).unwrap();
    std::fs::write(event.join("segments.txt"), "One.\nTwo.\n\nThree.\n").unwrap();
    std::fs::write(
        event.join("groundtruth.tsv"),
        "0\tOne.\n7\tTwo.\n0,9\tThree.\n",
    )
    .unwrap();
    std::fs::write(event.join("episodes.tsv"), "0\ta | b | c | d | e\n").unwrap();
    let out = root.path().join("corpus");
    let result = epimine(&["import", s(root.path()), "--out", s(&out)]);
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(result.status.success(), "{stderr}");
    assert!(
        stderr.contains("event_a/groundtruth.tsv:2: label id 7 is not in"),
        "{stderr}"
    );
    assert!(
        stderr.contains("event_a/groundtruth.tsv:3: label id 9 is not in"),
        "{stderr}"
    );
    assert!(!stderr.contains("label id 0"), "{stderr}");
}

#[test]
fn a_missing_file_says_its_cause_once() {
    let dir = scratch();
    let corpus = synth(dir.path(), 2, 5);
    let missing_bg = dir.path().join("no-such-background.txt");
    let missing_job = dir.path().join("no-such-job.toml");
    let runs: [Vec<&str>; 2] = [
        vec![
            "stats",
            "--corpus",
            s(&corpus),
            "--background",
            s(&missing_bg),
            "--out",
            s(dir.path()),
            "--no-vectors",
        ],
        vec!["run", s(&missing_job)],
    ];
    for args in runs {
        let out = epimine(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{stderr}");
        let error = stderr
            .lines()
            .find(|l| l.starts_with("error: "))
            .unwrap_or_else(|| panic!("no error line: {stderr}"));
        assert_eq!(
            error.matches("No such file or directory").count(),
            1,
            "the cause should be said once: {error}"
        );
        assert_eq!(error.matches("os error 2").count(), 1, "{error}");
    }
}

#[test]
fn values_that_make_no_sense_are_refused() {
    let dir = scratch();
    let out = dir.path().join("out");
    let run = |extra: &[&str]| {
        let mut args = vec![
            "run",
            "--corpus",
            "c",
            "--background",
            "b",
            "--out",
            s(&out),
        ];
        args.extend_from_slice(extra);
        let result = epimine(&args);
        assert!(!result.status.success(), "{args:?} was accepted");
        String::from_utf8_lossy(&result.stderr).into_owned()
    };
    let err = run(&["-w", "0"]);
    assert!(err.contains("at least 1"), "{err}");
    let err = run(&["--set", "encoder.batch_size=0"]);
    assert!(err.contains("encoder.batch_size = 0"), "{err}");
    let err = run(&["--set", "llm.trials=0"]);
    assert!(err.contains("llm.trials"), "{err}");
    let err = run(&["--set", "cluster.workers=0"]);
    assert!(err.contains("cluster.workers = 0"), "{err}");
    // Issue 64: a million workers aborted (exit 134) and left the lock; refused up front.
    let err = run(&["--set", "cluster.workers=1000000"]);
    assert!(
        err.contains("cluster.workers = 1000000: at most 1024"),
        "{err}"
    );
    let err = run(&["--set", "episodes.keywords=0"]);
    assert!(err.contains("episodes.keywords = 0"), "{err}");
    assert!(!out.exists(), "a refused job left {}", out.display());
    for args in [
        vec!["encode", "--input", "x", "--out", "y", "--batch-size", "0"],
        vec![
            "stats",
            "--corpus",
            "c",
            "--background",
            "b",
            "--out",
            "o",
            "-w",
            "0",
        ],
    ] {
        let result = epimine(&args);
        let err = String::from_utf8_lossy(&result.stderr);
        assert!(
            !result.status.success() && err.contains("at least 1"),
            "{args:?}: {err}"
        );
    }

    // A hostfile line without a port names the file and the line, not a port in use.
    let hosts = dir.path().join("hosts");
    std::fs::write(&hosts, "localhost:2101\nlocalhost\n").unwrap();
    let result = epimine(&[
        "stats",
        "--corpus",
        "c",
        "--background",
        "b",
        "--out",
        s(&out),
        "--no-vectors",
        "-n",
        "2",
        "-p",
        "0",
        "-H",
        s(&hosts),
    ]);
    let err = String::from_utf8_lossy(&result.stderr);
    assert!(!result.status.success(), "{err}");
    assert!(
        err.contains(&format!("{}:2: `localhost` has no port", hosts.display())),
        "{err}"
    );
    assert!(!err.contains("in use"), "{err}");
}

#[test]
fn a_command_that_fails_leaves_nothing_new_behind() {
    let dir = scratch();
    // An import that finds no event: no --out folder (nor the folders above it).
    let empty = dir.path().join("empty-dataset");
    std::fs::create_dir(&empty).unwrap();
    let out = dir.path().join("new/corpus");
    let result = epimine(&["import", s(&empty), "--out", s(&out)]);
    assert!(!result.status.success());
    assert!(
        !dir.path().join("new").exists(),
        "a failed import left its --out"
    );
    // The same with --articles.
    let articles = dir.path().join("none.jsonl");
    std::fs::write(&articles, "").unwrap();
    let result = epimine(&["import", "--articles", s(&articles), "--out", s(&out)]);
    assert!(!result.status.success());
    assert!(
        !dir.path().join("new").exists(),
        "a failed import left its --out"
    );

    // A run that fails its checks: no job.toml in an existing --out, no new --out.
    let corpus = synth(dir.path(), 2, 5);
    let existing = dir.path().join("existing");
    std::fs::create_dir(&existing).unwrap();
    for run_out in [&existing, &dir.path().join("new-run")] {
        let result = epimine(&[
            "run",
            "--corpus",
            s(&corpus),
            "--background",
            s(&dir.path().join("no-such-background.txt")),
            "--out",
            s(run_out),
        ]);
        assert!(!result.status.success());
        assert!(files_in(run_out).is_empty(), "{:?}", files_in(run_out));
    }
    assert!(!dir.path().join("new-run").exists());
}

#[test]
fn import_says_what_it_skipped_stripped_and_cut() {
    let root = scratch();
    let event = root.path().join("theme_a/event_a");
    std::fs::create_dir_all(&event).unwrap();
    // A bell and an escape sequence (valid UTF-8 control characters) in the text.
    std::fs::write(
        event.join("segments.txt"),
        "One\u{7} bell.\nTwo \u{1b}[1mbold.\n\nThree.\n",
    )
    .unwrap();
    // An empty event folder and one with no segments.txt, beside the good one.
    std::fs::create_dir_all(root.path().join("theme_a/event_empty")).unwrap();
    std::fs::create_dir_all(root.path().join("theme_a/event_notes")).unwrap();
    std::fs::write(root.path().join("theme_a/event_notes/notes.txt"), "x").unwrap();
    let out = root.path().join("corpus");
    let result = epimine(&["import", s(root.path()), "--out", s(&out)]);
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(result.status.success(), "{stderr}");
    for folder in ["event_empty", "event_notes"] {
        assert!(
            stderr.contains(&format!("theme_a/{folder}: no segments.txt")),
            "{stderr}"
        );
    }
    assert!(
        stderr.contains("event_a/segments.txt:1: removed 2 control character(s)"),
        "{stderr}"
    );
    let texts: Vec<String> = read_segments(&out).into_iter().map(|s| s.text).collect();
    assert_eq!(texts, ["One bell.", "Two [1mbold.", "Three."]);

    // An article with no sentence break: cut into segments of at most MAX_SEGMENT_CHARS.
    let long = vec!["word"; 3_000].join(" ");
    let articles = root.path().join("a.jsonl");
    std::fs::write(
        &articles,
        serde_json::json!({"key_event": "e", "id": "1", "text": format!("{long}\u{0}")})
            .to_string()
            + "\n",
    )
    .unwrap();
    let out = root.path().join("corpus-articles");
    let result = epimine(&["import", "--articles", s(&articles), "--out", s(&out)]);
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(result.status.success(), "{stderr}");
    let max = epimine::import::segment::MAX_SEGMENT_CHARS;
    assert!(
        stderr.contains(&format!("longer than {max} characters")),
        "{stderr}"
    );
    assert!(
        stderr.contains("removed 1 control character(s)"),
        "{stderr}"
    );
    let segs = read_segments(&out);
    assert!(segs.len() >= 7, "{}", segs.len());
    assert!(segs.iter().all(|s| s.text.chars().count() <= max));
}

fn read_segments(corpus: &std::path::Path) -> Vec<epimine::tables::Segment> {
    block_on(async {
        epimine::storage::Location::parse(s(corpus), false)
            .unwrap()
            .read_table::<epimine::tables::Segment>()
            .await
            .unwrap()
    })
}

/// `epimine run` on a synthetic corpus with the tiny model ([`crate::util::synth_run`]), and `extra`.
fn synth_run(corpus: &std::path::Path, out: &std::path::Path, extra: &[&str]) -> Command {
    let mut command = crate::util::synth_run(corpus, out);
    command.args(extra);
    command
}

#[test]
fn waiting_for_other_processes_is_logged_on_stderr_and_stdout_stays_clean() {
    let dir = scratch();
    let corpus = synth(dir.path(), 2, 5);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let hosts = dir.path().join("hosts");
    std::fs::write(&hosts, format!("127.0.0.1:{port}\n127.0.0.1:1\n")).unwrap();
    // Process 1 never starts: process 0 says whom it waits for, then gives up.
    let out = synth_run(
        &corpus,
        &dir.path().join("out"),
        &[
            "-n",
            "2",
            "-p",
            "0",
            "-H",
            s(&hosts),
            "--set",
            "cluster.startup_timeout=6",
        ],
    )
    .env("RUST_LOG", "info")
    .output()
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stdout.is_empty(), "stdout: {stdout}");
    assert!(
        stderr.contains("process 0 of 2: waiting for process 1 (127.0.0.1:1) to connect"),
        "{stderr}"
    );
    assert!(
        stderr.contains("not every other process connected within 6 s; waited for process 1"),
        "{stderr}"
    );
    // A failed start logs no stage of it as done.
    assert!(
        !stderr.contains("statistics dataflow: done"),
        "a failed start logged its stage as done: {stderr}"
    );
}

/// The number before "of" in the last line of `log` that holds `what`'s final count
/// (`<what>: N of M (…)`): (N, M).
fn final_count(log: &str, what: &str) -> Option<(u64, u64)> {
    let line = log
        .lines()
        .rev()
        .find(|l| l.contains(what) && l.contains(" of "))?;
    let rest = &line[line.find(what)? + what.len()..];
    let mut words = rest.split_whitespace();
    let done = words.next()?.parse().ok()?;
    (words.next()? == "of").then_some(())?;
    Some((done, words.next()?.parse().ok()?))
}

#[test]
fn the_first_process_counts_every_process_s_progress() {
    let dir = scratch();
    let events = 4;
    let corpus = synth(dir.path(), events, 8);
    let hosts = hostfile(dir.path(), 2);
    let out = dir.path().join("out");
    let spawn = |p: &str| {
        synth_run(
            &corpus,
            &out,
            &["-w", "1", "-n", "2", "-p", p, "-H", s(&hosts)],
        )
        .env("RUST_LOG", "info")
        .env("EPIMINE_PROGRESS_SECS", "0.01")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
    };
    let one = spawn("1");
    let zero = spawn("0");
    let zero = zero.wait_with_output().unwrap();
    let one = one.wait_with_output().unwrap();
    let log0 = String::from_utf8_lossy(&zero.stderr);
    let log1 = String::from_utf8_lossy(&one.stderr);
    assert!(
        zero.status.success() && one.status.success(),
        "{log0}\n{log1}"
    );
    // Process 1 counts its own share, which is not nothing (else this test shows nothing)…
    let (mine, of) = final_count(&log1, "events (1 worker(s) of process 1 of 2, 1 wave(s)):")
        .unwrap_or_else(|| panic!("{log1}"));
    assert!(mine == of && mine > 0 && mine < events as u64, "{log1}");
    // …and process 0 counts the whole run's events and encoding units: its own and process 1's.
    assert_eq!(
        final_count(&log0, "events (2 processes, 1 worker(s) each, 1 wave(s)):"),
        Some((events as u64, events as u64)),
        "{log0}"
    );
    let (units1, _) = final_count(&log1, "encoding units (1 worker(s) of process 1 of 2):")
        .unwrap_or_else(|| panic!("{log1}"));
    let (units, units_total) =
        final_count(&log0, "encoding units (2 processes, 1 worker(s) each):")
            .unwrap_or_else(|| panic!("{log0}"));
    assert!(units == units_total && units > units1, "{log0}\n{log1}");
}

#[test]
fn a_long_event_logs_its_stage_and_counts_while_it_runs() {
    // One event, a log line every 10 ms: while the event's stages run, lines name the event,
    // the stage and its count (`synth_event_000: classification 1024/1900 (0 s)`), and at the
    // end one line gives each stage's seconds — a user never watches `events 0/1` in silence.
    let dir = scratch();
    let corpus = synth(dir.path(), 1, 150);
    let out = synth_run(&corpus, &dir.path().join("out"), &["-w", "2"])
        .env("RUST_LOG", "info")
        .env("EPIMINE_PROGRESS_SECS", "0.01")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let counted = stderr.lines().any(|l| {
        l.contains("synth_event_000: ")
            && ["segment terms ", "fragment distances ", "classification "]
                .iter()
                .any(|stage| {
                    l.split(stage)
                        .nth(1)
                        .and_then(|rest| rest.split_whitespace().next())
                        .is_some_and(|count| {
                            let mut parts = count.split('/');
                            let done = parts.next().and_then(|d| d.parse::<u64>().ok());
                            let total = parts.next().and_then(|t| t.parse::<u64>().ok());
                            matches!((done, total), (Some(d), Some(t)) if t > 0 && d <= t)
                        })
                })
    });
    assert!(counted, "no counted stage line:\n{stderr}");
    let summary = stderr
        .lines()
        .find(|l| l.contains("synth_event_000: stages done in "))
        .unwrap_or_else(|| panic!("no summary:\n{stderr}"));
    for stage in ["term set", "fragment distances", "classification"] {
        assert!(summary.contains(stage), "{summary}");
    }
}

#[test]
fn a_run_logs_its_progress_over_every_worker() {
    let dir = scratch();
    let corpus = synth(dir.path(), 3, 8);
    let out = synth_run(&corpus, &dir.path().join("out"), &["-w", "2"])
        .env("RUST_LOG", "info")
        .env("EPIMINE_PROGRESS_SECS", "0.01")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // The whole run's events (both workers'), and the encoding, counted at the end…
    assert!(
        stderr.contains("events (2 worker(s), 1 wave(s)): 3 of 3"),
        "{stderr}"
    );
    assert!(
        stderr.contains("encoding units (2 worker(s)): 3 of 3"),
        "{stderr}"
    );
    // …and while they run, a line every EPIMINE_PROGRESS_SECS (here 10 ms) on a log that is
    // not a terminal.
    assert!(
        stderr.contains("events (2 worker(s), 1 wave(s)): ")
            && stderr
                .lines()
                .any(|l| l.contains("events (2 worker(s), 1 wave(s)): ") && l.contains('/')),
        "{stderr}"
    );
}
