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
//! Every connection between two processes begins with a handshake (`handshake`) that admits
//! only processes of the same job, of the same start, holding the run's token when there is
//! one ([`admission`]); [`admit`] does it once before any work, with a start barrier.

mod accept;
pub mod admission;
mod connect;
mod handshake;
#[cfg(test)]
mod handshake_tests;
pub mod launcher;
mod layout;
pub mod nodelist;
mod start;
mod wire;

use std::sync::{Mutex, Once};

use timely::communication::allocator::zero_copy::initialize::initialize_networking_from_sockets;
use timely::communication::allocator::ProcessBuilder;
use timely::communication::AllocatorBuilder;

pub use admission::{Admission, Fingerprint, RUN_ID_VAR, TOKEN_VAR};
use connect::connect_peers;
use handshake::Mode;
pub use handshake::SideLines;
pub use layout::{
    Cluster, ClusterError, ClusterSettings, Launcher, DEFAULT_PORT, DEFAULT_STARTUP_TIMEOUT,
};
pub use start::{admit, Admitted};

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
/// connect (`connect_peers`), and turns a lost peer into an error naming it.
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
    use std::time::{Duration, Instant};

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
