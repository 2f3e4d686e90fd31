//! The handshake between real sockets on loopback: in a run under way, junk, a forged side line
//! (no token, a wrong one), a side line of another job and one of another start are refused and
//! each logged once while the run's own process still joins; before any work, a process of
//! another job is refused and both fail, naming what differs.
use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::admission::{Fingerprint, Token};
use super::connect::connect_peers;
use super::handshake::{Connected, Handshake, Mode, SideLines};
use super::layout::{Cluster, ClusterError};
use super::wire::{dial, SIDE_LINE};

const SECRET: &str = "s3cr3t-token-value";

/// A log written to memory.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<u8>>>);

impl Write for Log {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Log {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

/// Process `process` of two on free loopback ports, of the job `corpus`, with the token.
fn two(addresses: &[String], process: usize, corpus: &str) -> Cluster {
    let mut c = Cluster {
        processes: 2,
        process,
        addresses: addresses.to_vec(),
        startup_timeout: 60,
        ..Cluster::default()
    }
    .with_job(Fingerprint::new().with("corpus", corpus));
    c.admission.token = Some(Token(SECRET.into()));
    c
}

fn free_addresses() -> Vec<String> {
    let ls: Vec<_> = (0..2)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    ls.iter()
        .map(|l| format!("127.0.0.1:{}", l.local_addr().unwrap().port()))
        .collect()
}

/// Process 0 of `cluster` connecting in `mode` on a thread, its log kept.
fn process_0(
    cluster: Cluster,
    mode: Mode,
) -> (
    std::thread::JoinHandle<Result<Connected, ClusterError>>,
    Log,
) {
    let log = Log::default();
    let writer = log.clone();
    let thread = std::thread::spawn(move || {
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .with_max_level(tracing::Level::INFO)
            .finish();
        tracing::subscriber::with_default(subscriber, || connect_peers(&cluster, mode))
    });
    (thread, log)
}

/// In a run under way (its events round, with side lines), junk, a forged side line
/// without the token, a side line of another job and one of another start are refused
/// and each logged once; the run's own process 1 still joins.
#[test]
fn a_foreign_or_forged_side_line_is_refused_and_logged_once_and_the_run_goes_on() {
    let addresses = free_addresses();
    let mode = Mode::Work { side: true };
    let mut zero = two(&addresses, 0, "corpus/");
    zero.admission.session = Some([7; 16]);
    let mut one = two(&addresses, 1, "corpus/");
    one.admission.session = Some([7; 16]);
    let (p0, log) = process_0(zero, mode);
    let attempt = |cluster: &Cluster| {
        Handshake::new(cluster, mode, addresses.clone())
            .dial_one(0, SIDE_LINE)
            .map(|s| s.is_some())
    };
    for _ in 0..2 {
        let mut junk = loop {
            if let Some(s) = dial(&addresses[0]) {
                break s;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        junk.write_all(&[b'x'; 64]).unwrap();
        let mut answer = Vec::new();
        let _ = junk.read_to_end(&mut answer);
        assert!(answer.is_empty(), "junk gets no answer");
    }
    let mut forged = one.clone();
    forged.admission.token = None;
    let mut wrong = one.clone();
    wrong.admission.token = Some(Token("another-secret".into()));
    let foreign = one
        .clone()
        .with_job(Fingerprint::new().with("corpus", "other-corpus/"));
    let mut stale = one.clone();
    stale.admission.session = Some([8; 16]);
    for _ in 0..2 {
        let e = attempt(&forged).unwrap_err().to_string();
        assert!(e.contains("refused this process: no token"), "{e}");
        let e = attempt(&wrong).unwrap_err().to_string();
        assert!(e.contains("refused this process: a wrong token"), "{e}");
        let e = attempt(&foreign).unwrap_err().to_string();
        assert!(
            e.contains(&format!(
                "process 0 ({}) runs another job: corpus corpus/ vs other-corpus/",
                addresses[0]
            )),
            "{e}"
        );
        let e = attempt(&stale).unwrap_err().to_string();
        assert!(e.contains("another start of this job"), "{e}");
    }
    // The run's own process 1: timely's connection and its side line.
    let joined = connect_peers(&one, mode).unwrap();
    assert!(joined.sockets[0].is_some());
    assert!(matches!(joined.lines, SideLines::ToFirst(_)));
    let first = p0.join().unwrap().unwrap();
    assert!(first.sockets[1].is_some());
    assert!(matches!(&first.lines, SideLines::First(l) if l.len() == 1 && l[0].0 == 1));
    let text = log.text();
    for (said, what) in [
        ("does not speak this version", "junk"),
        ("it presented no token", "the forged line"),
        ("it presented a wrong token", "the wrong token"),
        (
            "runs another job: corpus other-corpus/ vs corpus/",
            "the foreign job",
        ),
        ("another start of this job", "the stale start"),
    ] {
        assert_eq!(text.matches(said).count(), 1, "{what} logged once:\n{text}");
    }
    assert!(
        !text.contains(SECRET) && !text.contains("another-secret"),
        "{text}"
    );
}

/// Before any work (admission), process 0 refuses a process of another job and both fail
/// at once, naming what differs; the same job is admitted and given process 0's session.
#[test]
fn another_job_is_refused_before_any_work_and_both_fail() {
    let addresses = free_addresses();
    let (p0, _) = process_0(two(&addresses, 0, "corpus/"), Mode::Admission);
    let foreign = two(&addresses, 1, "other-corpus/");
    let e = connect_peers(&foreign, Mode::Admission)
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("runs another job: corpus corpus/ vs other-corpus/"),
        "{e}"
    );
    let e = p0.join().unwrap().err().unwrap().to_string();
    assert!(
        e.starts_with("cluster: process 0 of 2: process 1 (")
            && e.contains("runs another job: corpus other-corpus/ vs corpus/"),
        "{e}"
    );

    let (p0, _) = process_0(two(&addresses, 0, "corpus/"), Mode::Admission);
    let one = connect_peers(&two(&addresses, 1, "corpus/"), Mode::Admission).unwrap();
    let zero = p0.join().unwrap().unwrap();
    assert!(zero.session.is_some());
    assert_eq!(one.session, zero.session);
    assert!(matches!(one.lines, SideLines::ToFirst(_)));
}
