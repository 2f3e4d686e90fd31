//! The timely layout of a job: worker threads, processes and their addresses, and [`execute`],
//! which runs a timely computation on it with bounded waits for the other processes: a process
//! that never connects ends the run after `startup_timeout` seconds, and one that dies while
//! running (its connection closes) ends it as soon as timely notices, each with an error naming
//! the process.
//!
//! The layout comes from the job's `[cluster]` settings ([`ClusterSettings`], the flags
//! `-w -n -p --hostfile`) and, for what they leave open, from the launcher that started the
//! process ([`launcher`]): a Slurm step (`srun`) or a Kubernetes Indexed Job.
//! [`ClusterSettings::resolve`] turns both into one [`Cluster`], which `run.json` records.
//!
//! Every connection between two processes begins with a handshake ([`handshake`]) that admits
//! only processes of the same job, of the same start, holding the run's token when there is
//! one ([`admission`]); [`admit`] does it once before any work, with a start barrier.

pub mod admission;
mod handshake;
pub mod launcher;
mod layout;
pub mod nodelist;

use std::net::{TcpListener, TcpStream};
use std::sync::{Mutex, Once};
use std::time::{Duration, Instant};

use timely::communication::allocator::zero_copy::initialize::initialize_networking_from_sockets;
use timely::communication::allocator::ProcessBuilder;
use timely::communication::AllocatorBuilder;

pub use admission::{admit, Admission, Admitted, Fingerprint, RUN_ID_VAR, TOKEN_VAR};
use handshake::{Handshake, Mode};
pub use layout::{
    Cluster, ClusterError, ClusterSettings, Launcher, DEFAULT_PORT, DEFAULT_STARTUP_TIMEOUT,
};

impl ClusterSettings {
    /// The layout: these settings, and for what they leave open the launcher's environment
    /// (the process's own). Errors name the variable or setting that is wrong.
    pub fn resolve(&self) -> Result<Cluster, ClusterError> {
        launcher::resolve(self, &|name| std::env::var(name).ok())
    }
}

/// The process whose connection was lost (from the panic of a timely network thread), and what
/// timely said.
static LOST: Mutex<Option<(usize, String)>> = Mutex::new(None);

fn lost() -> Option<(usize, String)> {
    LOST.lock().map(|l| l.clone()).unwrap_or(None)
}

/// Installs (once) a panic hook that turns the panics timely's network threads raise when a
/// peer's connection closes (and the panics they cascade into on the worker threads) into one
/// recorded fact, [`LOST`], instead of a screen of backtraces; every other panic goes to the
/// previous hook.
fn install_panic_hook() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let thread = std::thread::current().name().unwrap_or("").to_string();
            let payload = info
                .payload()
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| info.payload().downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            let peer = thread
                .strip_prefix("timely:recv-")
                .or_else(|| thread.strip_prefix("timely:send-"))
                .and_then(|i| i.parse::<usize>().ok());
            if let (Some(peer), true) = (peer, payload.contains("timely communication error")) {
                if let Ok(mut lost) = LOST.lock() {
                    lost.get_or_insert((peer, payload));
                }
                return;
            }
            let cascade = payload.contains("MergeQueue poisoned")
                || payload.contains("Send thread panic")
                || payload.contains("Recv thread panic");
            if lost().is_some() && (cascade || thread.starts_with("timely:")) {
                return;
            }
            previous(info);
        }));
    });
}

/// How often the log says which processes are still awaited.
const AWAIT_REPORT_EVERY: Duration = Duration::from_secs(5);

/// Connects this process to every other one as timely's own networking does (each process
/// dials the ones with lower indices; it accepts the ones with higher indices), but quietly:
/// timely prints `awaiting connections (at 0/1)` to stdout once a second; here the log (stderr)
/// says every few seconds which processes are awaited, and a process that has not connected
/// within `startup_timeout` seconds is an error naming them. Every connection begins with the
/// handshake of [`handshake`]: a process of another job, without the token, or of another start
/// of this job is refused.
///
/// `mode` says what for: the admission lines to process 0 ([`admission::admit`]), or timely's
/// connections with (`side`) a second connection from every other process to process 0,
/// returned apart as [`SideLines`] for what timely does not carry.
fn connect_peers(cluster: &Cluster, mode: Mode) -> Result<handshake::Connected, ClusterError> {
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
            match listener.accept() {
                Ok((stream, from)) => progress |= held.accept(stream, from)?,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(fail(format!("accepting on {}: {e}", addresses[me]))),
            }
        }
        if !progress {
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    Ok(held.into_parts())
}

/// Connections beside timely's, between process 0 and each other process (several processes
/// only), for what the workers do not send through timely (e.g. progress while they encode).
#[derive(Debug)]
pub enum SideLines {
    /// One process, or none asked for.
    None,
    /// Process 0: one line from each other process, by index.
    First(Vec<(usize, TcpStream)>),
    /// Another process: its line to process 0.
    ToFirst(TcpStream),
}

/// A connection to the first address of `address` (`host:port`, several separated by
/// spaces) that answers within half a second; `None` while nobody listens there.
fn dial(address: &str) -> Option<TcpStream> {
    use std::net::ToSocketAddrs;
    let first = address.split_whitespace().next()?;
    first
        .to_socket_addrs()
        .ok()?
        .find_map(|a| TcpStream::connect_timeout(&a, Duration::from_millis(500)).ok())
}

/// The timely allocators of `cluster`: one process's threads, or (several processes) the
/// connections made by [`connect_peers`] and timely's networking threads over them.
type Allocators = (
    Vec<AllocatorBuilder>,
    Box<dyn std::any::Any + Send>,
    SideLines,
);

fn allocators(cluster: &Cluster, side: bool) -> Result<Allocators, ClusterError> {
    if cluster.processes <= 1 {
        let (builders, others) = cluster
            .timely_config()?
            .communication
            .try_build()
            .map_err(ClusterError)?;
        return Ok((builders, others, SideLines::None));
    }
    if cluster.process >= cluster.processes {
        return Err(ClusterError(format!(
            "process index {} out of range for {} processes",
            cluster.process, cluster.processes
        )));
    }
    let connected = connect_peers(cluster, Mode::Work { side })?;
    let (sockets, lines) = (connected.sockets, connected.lines);
    let threads = cluster.workers.max(1);
    let hooks = timely::communication::Hooks::default();
    let process =
        ProcessBuilder::new_typed_vector(threads, hooks.refill.clone(), hooks.spill.clone());
    let (builders, guard) =
        initialize_networking_from_sockets(process, sockets, cluster.process, threads, hooks)
            .map_err(|e| ClusterError(format!("failed to initialize networking: {e}")))?;
    Ok((
        builders.into_iter().map(AllocatorBuilder::Tcp).collect(),
        Box::new(guard),
        lines,
    ))
}

/// Runs `f` on every worker of `cluster` (as `timely::execute`) and returns each local worker's
/// result. With several processes, waits at most `startup_timeout` seconds for the others to
/// connect ([`connect_peers`]), and turns a lost peer into an error naming it.
pub fn execute<T, F>(cluster: &Cluster, f: F) -> Result<Vec<Option<T>>, ClusterError>
where
    T: Send + 'static,
    F: Fn(&mut timely::worker::Worker) -> Option<T> + Send + Sync + 'static,
{
    run_workers(cluster, None, f)
}

/// [`execute`], with [`SideLines`] between process 0 and the others, handed to `connected`
/// once every process is connected and before any worker starts.
pub fn execute_with_side_lines<T, F, C>(
    cluster: &Cluster,
    connected: C,
    f: F,
) -> Result<Vec<Option<T>>, ClusterError>
where
    T: Send + 'static,
    F: Fn(&mut timely::worker::Worker) -> Option<T> + Send + Sync + 'static,
    C: FnOnce(SideLines),
{
    run_workers(cluster, Some(Box::new(connected)), f)
}

fn run_workers<'a, T, F>(
    cluster: &Cluster,
    connected: Option<Box<dyn FnOnce(SideLines) + 'a>>,
    f: F,
) -> Result<Vec<Option<T>>, ClusterError>
where
    T: Send + 'static,
    F: Fn(&mut timely::worker::Worker) -> Option<T> + Send + Sync + 'static,
{
    install_panic_hook();
    let (builders, others, lines) = allocators(cluster, connected.is_some())?;
    if let Some(connected) = connected {
        connected(lines);
    }
    let lost_error = |(peer, what): (usize, String)| {
        let address = cluster
            .addresses()
            .ok()
            .and_then(|a| a.get(peer).cloned())
            .unwrap_or_default();
        ClusterError(format!(
            "lost process {peer} ({address}): {}; the checkpoints written so far are kept: start every process again to resume",
            what.trim_start_matches("timely communication error: ")
        ))
    };
    let joined = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
        let guards =
            timely::execute::execute_from(builders, others, timely::WorkerConfig::default(), f)?;
        Ok::<_, String>(guards.join())
    }));
    let results = match joined {
        Ok(Ok(results)) => results,
        Ok(Err(e)) => return Err(lost().map_or(ClusterError(e), lost_error)),
        Err(_) => {
            return Err(lost().map_or_else(
                || ClusterError("a timely thread panicked".into()),
                lost_error,
            ))
        }
    };
    let mut out = Vec::new();
    for r in results {
        match r {
            Ok(v) => out.push(v),
            Err(e) => return Err(lost().map_or(ClusterError(e), lost_error)),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::layout::wait_for_name;
    use super::*;

    #[test]
    fn several_processes_on_one_host_sharing_a_gpu_are_warned_about() {
        let mut c = Cluster {
            processes: 3,
            process: 1,
            addresses: vec!["a:2101".into(), "a:2102".into(), "b:2101".into()],
            ..Cluster::default()
        };
        assert_eq!(c.processes_on_my_host(), 2);
        assert_eq!(c.gpu_note(Some("3")), None);
        let note = c.gpu_note(Some("0,1")).unwrap();
        assert!(note.contains("2 processes") && note.contains("CUDA_VISIBLE_DEVICES=0,1"));
        assert!(c.gpu_note(None).is_some());
        c.process = 2;
        assert_eq!(c.gpu_note(None), None);
        assert_eq!(Cluster::local(4).gpu_note(None), None);
    }

    #[test]
    fn a_name_that_never_resolves_is_an_error_in_bounded_time() {
        let begun = Instant::now();
        let e = wait_for_name("no-such-host.invalid:2101", Duration::from_secs(1)).unwrap_err();
        assert!(e.contains("no-such-host.invalid:2101"), "{e}");
        assert!(begun.elapsed() < Duration::from_secs(30));
        wait_for_name("127.0.0.1:2101", Duration::from_secs(0)).unwrap();
    }
}
