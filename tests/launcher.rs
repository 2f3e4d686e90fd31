//! Launched as a cluster launches it: `epimine run` takes its process index, count and peers
//! from a Slurm step (a real one: `srun -n 2` inside `sbatch` on the one-machine Slurm of
//! scripts/ci/slurm-server.sh; and the same variables set by hand) or from a Kubernetes Indexed
//! Job's environment (`JOB_COMPLETION_INDEX`, peers on loopback addresses as pods on their own
//! IPs), and writes the same bytes as one process. A wrong environment is a clear error before
//! any work; two processes claiming one index end in bounded time.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::*;

/// A small corpus, its background, the tiny model, and a one-process run of it in `one/`.
struct Fixture {
    dir: tempfile::TempDir,
    corpus: PathBuf,
    bg: PathBuf,
    model: String,
    one: PathBuf,
}

fn fixture() -> Fixture {
    let dir = scratch();
    let corpus = synth(dir.path(), 3, 16);
    let bg = corpus.join("background.txt");
    let model = tiny_model();
    let one = dir.path().join("one");
    let o = bare_epimine(&run_args(&corpus, &bg, &one, &model))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    Fixture {
        dir,
        corpus,
        bg,
        model,
        one,
    }
}

fn run_args(corpus: &Path, bg: &Path, out: &Path, model: &str) -> Vec<String> {
    [
        "run",
        "--corpus",
        s(corpus),
        "--background",
        s(bg),
        "--out",
        s(out),
        "--model",
        model,
    ]
    .map(String::from)
    .to_vec()
}

/// A port `p` with `p` and `p + 1` free on 127.0.0.1.
fn free_ports() -> u16 {
    loop {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let p = l.local_addr().unwrap().port();
        if p < 65000 && std::net::TcpListener::bind(("127.0.0.1", p + 1)).is_ok() {
            return p;
        }
    }
}

/// `epimine` with no SLURM_* or JOB_COMPLETION_INDEX from the test's own environment (the
/// suite may itself run inside a Slurm job).
fn bare_epimine(args: &[String]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_epimine"));
    cmd.args(args).env("RUST_LOG", "info");
    for (k, _) in std::env::vars() {
        if k.starts_with("SLURM") || k == "JOB_COMPLETION_INDEX" {
            cmd.env_remove(k);
        }
    }
    cmd
}

fn assert_same_outputs(one: &Path, other: &Path) {
    for f in OUTPUTS {
        let (a, b) = (one.join(f), other.join(f));
        let a = std::fs::read(&a).unwrap_or_else(|e| panic!("{}: {e}", a.display()));
        let b = std::fs::read(&b).unwrap_or_else(|e| panic!("{}: {e}", b.display()));
        assert!(
            !a.is_empty() && a == b,
            "{f} differs from the one-process run"
        );
    }
}

/// The `layout` object of a run's `run.json`.
fn layout(out: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(out.join("run.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["layout"].clone()
}

/// Waits for every child with a bound; returns their outputs.
fn wait_all(children: Vec<std::process::Child>, bound: Duration) -> Vec<std::process::Output> {
    let started = Instant::now();
    let mut children: Vec<Option<std::process::Child>> = children.into_iter().map(Some).collect();
    loop {
        let done = children
            .iter_mut()
            .all(|c| c.as_mut().unwrap().try_wait().unwrap().is_some());
        if done {
            break;
        }
        if started.elapsed() > bound {
            for c in children.iter_mut().flatten() {
                let _ = c.kill();
            }
            panic!("processes still running after {bound:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    children
        .iter_mut()
        .map(|c| c.take().unwrap().wait_with_output().unwrap())
        .collect()
}

fn spawn(cmd: &mut Command) -> std::process::Child {
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The variables `srun -n 2` gives its tasks on one node (as the real Slurm below sets them).
fn slurm_task(cmd: &mut Command, procid: usize) -> &mut Command {
    cmd.env("SLURM_JOB_ID", "77")
        .env("SLURM_STEP_ID", "0")
        .env("SLURM_PROCID", procid.to_string())
        .env("SLURM_LOCALID", procid.to_string())
        .env("SLURM_NODEID", "0")
        .env("SLURMD_NODENAME", "localhost")
        .env("SLURM_NTASKS", "2")
        .env("SLURM_STEP_NUM_TASKS", "2")
        .env("SLURM_JOB_NODELIST", "localhost")
        .env("SLURM_STEP_NODELIST", "localhost")
        .env("SLURM_STEP_TASKS_PER_NODE", "2")
}

#[test]
fn a_slurm_step_environment_gives_the_layout_and_the_same_bytes() {
    let f = fixture();
    let two = f.dir.path().join("two");
    let port = free_ports();
    let mut args = run_args(&f.corpus, &f.bg, &two, &f.model);
    args.extend(["--set".into(), format!("cluster.port={port}")]);
    let children = (0..2)
        .map(|p| spawn(slurm_task(&mut bare_epimine(&args), p)))
        .collect();
    let outs = wait_all(children, Duration::from_secs(600));
    for o in &outs {
        assert!(o.status.success(), "{}", stderr(o));
    }
    assert_same_outputs(&f.one, &two);
    // Process 0 logs the layout and records it in run.json.
    let log = stderr(&outs[0]);
    assert!(log.contains("layout: 2 process(es)"), "{log}");
    assert!(log.contains(&format!("1=localhost:{}", port + 1)), "{log}");
    let l = layout(&two);
    assert_eq!(l["processes"], 2);
    assert_eq!(
        l["addresses"],
        serde_json::json!([
            format!("localhost:{port}"),
            format!("localhost:{}", port + 1)
        ])
    );
    assert!(
        l["source"].as_str().unwrap().starts_with("slurm (job 77"),
        "{l}"
    );
    assert_eq!(layout(&f.one)["source"], "settings");

    // `epimine stats` takes the same layout.
    let stats = |out: &Path| -> Vec<String> {
        [
            "stats",
            "--corpus",
            s(&f.corpus),
            "--background",
            s(&f.bg),
            "--out",
            s(out),
            "--no-vectors",
            "--port",
            &port.to_string(),
        ]
        .map(String::from)
        .to_vec()
    };
    let (one, two) = (f.dir.path().join("stats1"), f.dir.path().join("stats2"));
    let o = bare_epimine(&stats(&one)).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let children = (0..2)
        .map(|p| spawn(slurm_task(&mut bare_epimine(&stats(&two)), p)))
        .collect();
    let outs = wait_all(children, Duration::from_secs(300));
    for o in &outs {
        assert!(o.status.success(), "{}", stderr(o));
    }
    assert!(stderr(&outs[0]).contains("layout: 2 process(es)"));
    for f in ["terms.parquet", "pairs.parquet"] {
        let (a, b) = (
            std::fs::read(one.join(f)).unwrap(),
            std::fs::read(two.join(f)).unwrap(),
        );
        assert!(!a.is_empty() && a == b, "stats {f}");
    }
}

#[test]
fn a_kubernetes_indexed_job_environment_gives_the_layout_and_the_same_bytes() {
    let f = fixture();
    let two = f.dir.path().join("two");
    let port = free_ports();
    // Each pod on its own address, every one on the same port: 127.0.0.10 and 127.0.0.11 (both
    // loopback) stand for `{job}-{index}.<service>`.
    let mut args = run_args(&f.corpus, &f.bg, &two, &f.model);
    for set in [
        "cluster.processes=2".to_string(),
        "cluster.hosts=127.0.0.1{index}".into(),
        format!("cluster.port={port}"),
    ] {
        args.extend(["--set".into(), set]);
    }
    let children = (0..2)
        .map(|i| {
            spawn(
                bare_epimine(&args)
                    .env("JOB_COMPLETION_INDEX", i.to_string())
                    .env("HOSTNAME", format!("epimine-{i}")),
            )
        })
        .collect();
    let outs = wait_all(children, Duration::from_secs(600));
    for o in &outs {
        assert!(o.status.success(), "{}", stderr(o));
    }
    assert_same_outputs(&f.one, &two);
    let l = layout(&two);
    assert_eq!(
        l["addresses"],
        serde_json::json!([format!("127.0.0.10:{port}"), format!("127.0.0.11:{port}")])
    );
    assert_eq!(l["source"], "kubernetes (JOB_COMPLETION_INDEX=0)");
}

#[test]
fn a_wrong_launcher_environment_is_an_error_before_any_work() {
    let dir = scratch();
    let corpus = synth(dir.path(), 2, 8);
    let bg = corpus.join("background.txt");
    let out = dir.path().join("out");
    let args = run_args(&corpus, &bg, &out, &tiny_model());
    let cases: Vec<(Vec<(&str, &str)>, &str)> = vec![
        (
            vec![("SLURM_STEP_NODELIST", "gpu[01-02")],
            "SLURM_STEP_NODELIST `gpu[01-02`",
        ),
        (
            vec![("SLURM_PROCID", "5")],
            "SLURM_PROCID=5 is out of range",
        ),
        (
            vec![("SLURM_STEP_NUM_TASKS", "")],
            "SLURM_STEP_NUM_TASKS=``",
        ),
    ];
    for (vars, expected) in cases {
        let mut cmd = bare_epimine(&args);
        slurm_task(&mut cmd, 1);
        for (k, v) in &vars {
            cmd.env(k, v);
        }
        let o = cmd.output().unwrap();
        assert_eq!(o.status.code(), Some(1), "{vars:?}");
        let e = stderr(&o);
        assert!(e.contains(expected), "{vars:?}: {e}");
        assert!(
            !out.exists(),
            "{vars:?}: something was written before the error"
        );
    }
    // A Kubernetes pod without cluster.processes.
    let o = bare_epimine(&args)
        .env("JOB_COMPLETION_INDEX", "0")
        .output()
        .unwrap();
    assert!(
        stderr(&o).contains("set cluster.processes"),
        "{}",
        stderr(&o)
    );
    // A step with more tasks than the hostfile names hosts.
    let hosts = hostfile(dir.path(), 1);
    let mut with_hostfile = args.clone();
    with_hostfile.extend(["--hostfile".into(), s(&hosts).into()]);
    let o = slurm_task(&mut bare_epimine(&with_hostfile), 0)
        .output()
        .unwrap();
    assert!(
        stderr(&o).contains("names 1 hosts for 2 processes"),
        "{}",
        stderr(&o)
    );
    assert!(!out.exists());
}

#[test]
fn two_processes_claiming_one_index_end_in_bounded_time() {
    let dir = scratch();
    let corpus = synth(dir.path(), 2, 8);
    let bg = corpus.join("background.txt");
    let out = dir.path().join("out");
    let port = free_ports();
    let mut args = run_args(&corpus, &bg, &out, &tiny_model());
    for set in [
        format!("cluster.port={port}"),
        "cluster.startup_timeout=3".into(),
    ] {
        args.extend(["--set".into(), set]);
    }
    // The first takes index 0 and its port; the second, also SLURM_PROCID=0, cannot listen
    // there; the first gives up waiting for process 1 after cluster.startup_timeout.
    let first = spawn(slurm_task(&mut bare_epimine(&args), 0));
    std::thread::sleep(Duration::from_millis(1500));
    let second = spawn(slurm_task(&mut bare_epimine(&args), 0));
    let started = Instant::now();
    let outs = wait_all(vec![first, second], Duration::from_secs(120));
    assert!(started.elapsed() < Duration::from_secs(60));
    let (e0, e1) = (stderr(&outs[0]), stderr(&outs[1]));
    assert_eq!(outs[1].status.code(), Some(1), "{e1}");
    assert!(
        e1.contains(&format!(
            "process 0 of 2 cannot listen on its address localhost:{port}"
        )),
        "{e1}"
    );
    assert_eq!(outs[0].status.code(), Some(1), "{e0}");
    assert!(
        e0.contains("waited for process 1") && e0.contains(&format!("localhost:{}", port + 1)),
        "{e0}"
    );
}

/// The one-machine Slurm of scripts/ci/slurm-server.sh (`EPIMINE_TEST_SLURM`, its slurm.conf).
/// Without it the test is skipped with a message, unless `EPIMINE_REQUIRE_SLURM=1` (set by
/// scripts/ci/test.sh) says it must run.
fn slurm_conf() -> Option<String> {
    match std::env::var("EPIMINE_TEST_SLURM") {
        Ok(conf) => Some(conf),
        Err(_) if std::env::var("EPIMINE_REQUIRE_SLURM").as_deref() == Ok("1") => panic!(
            "EPIMINE_REQUIRE_SLURM=1 but EPIMINE_TEST_SLURM is not set: start the test Slurm \
             with `eval \"$(scripts/ci/slurm-server.sh start)\"` (scripts/ci/test.sh does)"
        ),
        Err(_) => {
            eprintln!(
                "skipping the real-Slurm test: EPIMINE_TEST_SLURM is not set (run \
                 `eval \"$(scripts/ci/slurm-server.sh start)\"` first; scripts/ci/test.sh does)"
            );
            None
        }
    }
}

#[test]
fn sbatch_with_srun_two_tasks_writes_the_same_bytes_as_one_process() {
    let Some(conf) = slurm_conf() else { return };
    // Our host list parser against Slurm's own.
    for list in [
        "gpu[01-03,07],cpu5",
        "rack[1-2]-n[08-10]",
        "n[8-10],n[9-11]",
        "localhost",
    ] {
        let o = Command::new("scontrol")
            .args(["show", "hostnames", list])
            .env("SLURM_CONF", &conf)
            .output()
            .unwrap();
        assert!(o.status.success(), "scontrol: {}", stderr(&o));
        let theirs: Vec<String> = String::from_utf8_lossy(&o.stdout)
            .lines()
            .map(String::from)
            .collect();
        let ours = epimine::topology::nodelist::expand(list, "list").unwrap();
        assert_eq!(ours, theirs, "{list}");
    }

    let f = fixture();
    let two = f.dir.path().join("two");
    let port = free_ports();
    // The recipe users copy, submitted as it is: its directives overridden for this one-node
    // Slurm (2 tasks of 1 core), the binary under test as EPIMINE, the job as its arguments.
    let recipe = Path::new(env!("CARGO_MANIFEST_DIR")).join("cluster/slurm/epimine.sbatch");
    let mut args = run_args(&f.corpus, &f.bg, &two, &f.model);
    args.remove(0);
    args.extend(["--set".into(), format!("cluster.port={port}")]);
    let log = f.dir.path().join("slurm.out");
    let started = Instant::now();
    let o = Command::new("timeout")
        .args([
            "600",
            "sbatch",
            "--wait",
            "--nodes=1",
            "--ntasks-per-node=2",
            "--cpus-per-task=1",
            "--time=10",
        ])
        .arg(format!("--output={}", s(&log)))
        .arg(&recipe)
        .args(&args)
        .env("SLURM_CONF", &conf)
        .env("EPIMINE", env!("CARGO_BIN_EXE_epimine"))
        .env("RUST_LOG", "info")
        .current_dir(f.dir.path())
        .output()
        .unwrap();
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(o.status.success(), "sbatch: {}\n{text}", stderr(&o));
    eprintln!(
        "sbatch --wait of cluster/slurm/epimine.sbatch, 2 tasks: {:.1} s",
        started.elapsed().as_secs_f64()
    );
    assert_same_outputs(&f.one, &two);
    let l = layout(&two);
    assert_eq!(l["processes"], 2);
    assert!(
        l["source"]
            .as_str()
            .unwrap()
            .contains("SLURM_STEP_NODELIST=localhost"),
        "{l}"
    );
    assert!(text.contains("layout: 2 process(es)"), "{text}");
    assert!(
        text.contains("epimine: job ") && text.contains("2 tasks on localhost"),
        "{text}"
    );
    // The script made the job's token and srun gave it to both tasks, which proved it to each
    // other; it is nowhere in the log (no 64-hex-digit word).
    assert!(
        text.contains("process 0: all 2 processes run this job and hold its token"),
        "{text}"
    );
    assert!(
        !text
            .split(|c: char| !c.is_ascii_hexdigit())
            .any(|w| w.len() >= 64),
        "{text}"
    );
}
