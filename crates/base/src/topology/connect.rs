//! The connections of one round between the processes of a run ([`connect_peers`]), made as
//! timely's own networking makes them but quietly, with a bounded wait, and each through the
//! handshake of [`super::handshake`].

use std::net::TcpListener;
use std::time::{Duration, Instant};

use super::accept::receive_on_thread;
use super::handshake::{Connected, Handshake, Mode};
use super::layout::{Cluster, ClusterError};

/// At most this many connections are read at once; more are closed until some are done (a
/// real process dials again).
const MAX_READING: usize = 64;

/// How often the log says which processes are still awaited.
const AWAIT_REPORT_EVERY: Duration = Duration::from_secs(5);

/// Connects this process to every other one as timely's own networking does (each process
/// dials the ones with lower indices; it accepts the ones with higher indices), but quietly:
/// timely prints `awaiting connections (at 0/1)` to stdout once a second; here the log (stderr)
/// says every few seconds which processes are awaited, and a process that has not connected
/// within `startup_timeout` seconds is an error naming them. Every connection begins with the
/// handshake of [`super::handshake`]: a process of another job, without the token, or of another start
/// of this job is refused.
///
/// `mode` says what for: the admission lines to process 0 ([`super::start::admit`]), or timely's
/// connections with (`side`) a second connection from every other process to process 0,
/// returned apart as [`SideLines`] for what timely does not carry.
pub(super) fn connect_peers(cluster: &Cluster, mode: Mode) -> Result<Connected, ClusterError> {
    let addresses = cluster.addresses()?;
    let (me, n) = (cluster.process, cluster.processes);
    let timeout = Duration::from_secs(cluster.startup_timeout);
    let fail = |what: String| ClusterError(format!("process {me} of {n}: {what}"));
    let listeners = addresses[me]
        .split_whitespace()
        .map(TcpListener::bind)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| {
            fail(format!(
                "cannot listen on its address {}: {e}",
                addresses[me]
            ))
        })?;
    for listener in &listeners {
        listener
            .set_nonblocking(true)
            .map_err(|e| fail(format!("listening on {}: {e}", addresses[me])))?;
    }
    let mut held = Handshake::new(cluster, mode, addresses.clone());
    // Each accepted connection is read on a thread of its own: a connection that says nothing
    // (an outsider, a port scanner) costs its own thread ANSWER_WITHIN, not everyone's wait.
    let (received, incoming) = std::sync::mpsc::channel();
    let mut reading = 0usize;
    let begun = Instant::now();
    let mut reported = begun;
    loop {
        let waiting = held.awaited();
        if waiting.is_empty() {
            break;
        }
        if begun.elapsed() >= timeout {
            return Err(fail(format!(
                "not every other process connected within {} s; waited for {}. Start every \
                 process with the same layout (-n and --hostfile, or one launcher step); \
                 cluster.startup_timeout sets the wait",
                timeout.as_secs(),
                waiting.join(", ")
            )));
        }
        if reported.elapsed() >= AWAIT_REPORT_EVERY {
            tracing::info!(
                "process {me} of {n}: waiting for {} to connect ({} of {} s)",
                waiting.join(", "),
                begun.elapsed().as_secs(),
                timeout.as_secs()
            );
            reported = Instant::now();
        }
        // The lower indices listen for this one; the higher ones dial it.
        let mut progress = held.dial_lower()?;
        for listener in &listeners {
            loop {
                match listener.accept() {
                    Ok((stream, from)) if reading < MAX_READING => {
                        match receive_on_thread(me, stream, from, received.clone()) {
                            Ok(()) => reading += 1,
                            Err(e) => tracing::warn!(
                                "process {me} of {n}: cannot read a connection from {from}: {e}"
                            ),
                        }
                        progress = true;
                    }
                    Ok((stream, from)) => {
                        tracing::debug!(
                            "process {me} of {n}: {MAX_READING} connections being read; \
                             closed the one from {from}"
                        );
                        drop(stream);
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    Err(e) => return Err(fail(format!("accepting on {}: {e}", addresses[me]))),
                }
            }
        }
        while let Ok(r) = incoming.try_recv() {
            reading -= 1;
            progress |= held.take(r)?;
        }
        if !progress {
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    Ok(held.into_parts())
}
