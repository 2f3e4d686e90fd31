//! The start of a run with several processes: [`admit`] connects every other process to
//! process 0 before `--out` is touched, through the handshake of [`super::handshake`] (a
//! process of another job: both fail at once, naming what differs; without the run's token:
//! refused), and process 0 hands out the run's session, which every later connection must
//! carry. [`Admitted::start`] is the start barrier over those connections: every process
//! learns whether every other could start before any work.

use super::connect::connect_peers;
use super::handshake::{Mode, SideLines};
use super::layout::{Cluster, ClusterError};
use super::wire::{read_frame, write_frame};

/// The processes of a run, admitted ([`admit`]) and still connected (process 0 to each other
/// one), until [`Admitted::start`].
pub struct Admitted {
    process: usize,
    lines: SideLines,
    timeout: std::time::Duration,
}

/// With several processes: connects every other process to process 0 and checks them
/// (`super::handshake`): the same job (else both fail, naming what differs), the token when
/// there is one. Process 0 draws the run's session, which every later connection carries.
/// Waits at most `startup_timeout` for the others. One process: nothing to do.
pub fn admit(cluster: &mut Cluster) -> Result<Admitted, ClusterError> {
    let timeout = std::time::Duration::from_secs(cluster.startup_timeout);
    if cluster.processes <= 1 {
        return Ok(Admitted {
            process: cluster.process,
            lines: SideLines::None,
            timeout,
        });
    }
    let connected = connect_peers(cluster, Mode::Admission)?;
    cluster.admission.session = connected.session;
    if cluster.process == 0 {
        tracing::info!(
            "process 0: all {} processes run this job{}",
            cluster.processes,
            if cluster.admission.has_token() {
                " and hold its token"
            } else {
                ""
            }
        );
    }
    Ok(Admitted {
        process: cluster.process,
        lines: connected.lines,
        timeout,
    })
}

impl Admitted {
    /// The start barrier: each process says whether it could start (`ready`: its checks of
    /// `--out` and the inputs), process 0 answers go or stop to all. Returns an error naming
    /// the process that could not start (this process's own failure is left to the caller,
    /// once the others are told). Every wait is bounded by `startup_timeout`.
    pub fn start(self, ready: Result<(), String>) -> Result<(), ClusterError> {
        use std::io::ErrorKind;
        let deadline = std::time::Instant::now() + self.timeout;
        let left = || {
            deadline
                .saturating_duration_since(std::time::Instant::now())
                .max(std::time::Duration::from_millis(1))
        };
        let fail = |what: String| ClusterError(format!("process {}: {what}", self.process));
        let say = |stream: &mut std::net::TcpStream, ok: bool, text: &str| {
            use std::io::Write;
            stream
                .set_write_timeout(Some(left()))
                .and_then(|()| stream.write_all(&[u8::from(!ok)]))
                .and_then(|()| write_frame(stream, text.as_bytes()))
        };
        let hear = |stream: &mut std::net::TcpStream| -> std::io::Result<(bool, String)> {
            use std::io::Read;
            stream.set_read_timeout(Some(left()))?;
            let mut ok = [0u8];
            stream.read_exact(&mut ok)?;
            let text = read_frame(stream)?;
            Ok((ok[0] == 0, String::from_utf8_lossy(&text).into_owned()))
        };
        let why = |e: std::io::Error| match e.kind() {
            ErrorKind::WouldBlock | ErrorKind::TimedOut => format!(
                "no word within startup_timeout ({} s)",
                self.timeout.as_secs()
            ),
            ErrorKind::UnexpectedEof => "its connection closed (it ended)".to_string(),
            _ => e.to_string(),
        };
        match self.lines {
            SideLines::None => Ok(()),
            SideLines::ToFirst(mut line) => {
                let own = ready.as_ref().err().cloned().unwrap_or_default();
                if let Err(e) = say(&mut line, ready.is_ok(), &own) {
                    // Process 0 may have said why the run does not start and closed the line
                    // before this process spoke: its word is the cause to give.
                    if let Ok((false, text)) = hear(&mut line) {
                        return Err(fail(format!("the run did not start: {text}")));
                    }
                    return Err(fail(format!("cannot tell process 0 it is ready: {e}")));
                }
                if ready.is_err() {
                    return Ok(());
                }
                match hear(&mut line) {
                    Ok((true, _)) => Ok(()),
                    Ok((false, text)) => Err(fail(format!("the run did not start: {text}"))),
                    Err(e) => Err(fail(format!(
                        "waited for process 0 to start the run: {}",
                        why(e)
                    ))),
                }
            }
            SideLines::First(mut lines) => {
                let mut stop = ready
                    .as_ref()
                    .err()
                    .map(|e| format!("process 0 could not start: {e}"));
                for (p, line) in lines.iter_mut() {
                    if stop.is_some() {
                        break;
                    }
                    stop = match hear(line) {
                        Ok((true, _)) => None,
                        Ok((false, text)) => Some(format!("process {p} could not start: {text}")),
                        Err(e) => Some(format!("process {p} did not start: {}", why(e))),
                    };
                }
                for (p, line) in lines.iter_mut() {
                    if let Err(e) = say(line, stop.is_none(), stop.as_deref().unwrap_or("")) {
                        tracing::debug!("process 0: telling process {p} the start: {e}");
                    }
                }
                if stop.is_some() {
                    // Close gently: a process that has not spoken yet reads the cause instead of
                    // a reset line (what they say is read and dropped, for at most a second in
                    // all).
                    let until = std::time::Instant::now() + std::time::Duration::from_secs(1);
                    for (_, line) in lines.iter_mut() {
                        use std::io::Read;
                        let _ = line.shutdown(std::net::Shutdown::Write);
                        let left = until.saturating_duration_since(std::time::Instant::now());
                        if left.is_zero() || line.set_read_timeout(Some(left)).is_err() {
                            continue;
                        }
                        let mut sink = [0u8; 512];
                        while matches!(line.read(&mut sink), Ok(n) if n > 0) {}
                    }
                }
                match stop {
                    Some(text) if ready.is_ok() => Err(fail(text)),
                    _ => Ok(()),
                }
            }
        }
    }
}
