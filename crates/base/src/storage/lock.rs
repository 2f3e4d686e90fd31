//! One run per output folder: process 0 of `epimine run` holds `--out` while the run works, by a
//! lock object `<out>/_lock/<generation>` that names its host, pid and start time. It is made
//! with a create-only write ([`Location::put_new`]: on a local disk a hard link, which fails
//! when the name exists; on S3 a conditional put, `If-None-Match: *`), so of two runs started at
//! once exactly one gets it, and the other is refused at start with the holder named.
//!
//! A lock left by a killed run is taken over, by writing the next generation (create-only
//! again, so two runs taking over race safely) and deleting the older ones:
//! - at once when the holder ran on this machine (the same boot and pid namespace) and its
//!   process is gone (no such pid, or a pid reused by a process started later);
//! - otherwise (another machine, where its process cannot be checked) once the lock has not
//!   been refreshed for [`EXPIRES`]: the holder rewrites it every [`REFRESH`] while it runs,
//!   and the age is read from the store's own time of the last write.
//!
//! The holder checks at each refresh, and again against the store right before its commit
//! ([`RunLock::check_now`], the fence), that its lock object still holds its own content and no
//! later generation exists; a run whose lock was taken over (it stalled past [`EXPIRES`] on
//! another machine: SIGSTOP, a frozen VM) does not commit, whether the other run still holds
//! the folder, has given it back, or a third holds it afresh, and it leaves their locks alone.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::storage::{Location, StoreKind};

/// The folder of a lock, inside the folder it holds (a run's `--out`, a corpus being appended
/// to).
pub const LOCK_DIR: &str = "_lock";

/// How often the holder rewrites its lock.
pub const REFRESH: Duration = Duration::from_secs(20);
/// How long a lock of another machine may go without a refresh before it is taken over.
pub const EXPIRES: Duration = Duration::from_secs(120);

/// Who holds an output folder: the content of a lock object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Holder {
    /// The command, e.g. `epimine run`.
    pub command: String,
    /// The host name.
    pub host: String,
    /// The process id.
    pub pid: u32,
    /// When the run started (UTC, RFC 3339).
    pub started: String,
    /// Where `pid` means this process: the boot id and the pid namespace (Linux), when known.
    pub machine: Option<String>,
    /// The process's start time in clock ticks since boot (`/proc/<pid>/stat`), to tell it
    /// from a later process given the same pid.
    pub process_start: Option<u64>,
    /// The program's version.
    pub epimine: String,
}

impl Holder {
    /// This process.
    pub fn this_process(command: &str) -> Self {
        let pid = std::process::id();
        Self {
            command: command.into(),
            host: host_name(),
            pid,
            started: chrono::DateTime::<chrono::Utc>::from(SystemTime::now())
                .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            machine: machine(),
            process_start: process_start(pid),
            epimine: env!("CARGO_PKG_VERSION").into(),
        }
    }

    /// `epimine run on host h, pid p, started t`.
    pub fn describe(&self) -> String {
        format!(
            "{} on host {}, pid {}, started {}",
            self.command, self.host, self.pid, self.started
        )
    }

    /// Whether this holder's process is known to be gone: `Some(true)` gone, `Some(false)`
    /// running, `None` when it cannot be checked from here (another machine).
    fn gone(&self) -> Option<bool> {
        let here = machine()?;
        if self.machine.as_deref() != Some(here.as_str()) {
            return None;
        }
        Some(match (self.process_start, process_start(self.pid)) {
            (Some(then), Some(now)) => then != now,
            (_, None) => true,
            (None, Some(_)) => false,
        })
    }
}

/// The host name (Linux: the kernel's, as `hostname` prints it; else `$HOSTNAME`), or
/// `unknown`.
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

/// This machine's boot and pid namespace (where a pid names one process), when known.
fn machine() -> Option<String> {
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let namespace = std::fs::read_link("/proc/self/ns/pid").ok()?;
    Some(format!("{} {}", boot.trim(), namespace.display()))
}

/// When process `pid` started, in clock ticks since boot (field 22 of `/proc/<pid>/stat`);
/// `None` when there is no such process (or no /proc).
fn process_start(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// The lock objects under `--out`: (generation, name, time of last write), oldest first.
async fn locks(out: &Location) -> Result<Vec<(u64, String, SystemTime)>, String> {
    let found = match out.list_folder(LOCK_DIR).await {
        Ok(found) => found,
        Err(e) => return Err(format!("cannot list its locks: {e}")),
    };
    let mut gens: Vec<_> = found
        .into_iter()
        .filter_map(|(name, _, at)| {
            let g = name
                .strip_prefix(&format!("{LOCK_DIR}/"))?
                .parse::<u64>()
                .ok()?;
            Some((g, name, at))
        })
        .collect();
    gens.sort();
    Ok(gens)
}

/// Whether this process still holds its lock `name` (generation `generation`, content `text`):
/// `Ok(Err(who))` when it lost it — a later generation exists (another run took it over), or its
/// object is gone or holds another holder (taken over and given back meanwhile: a run that
/// stalled past the expiry finds its lock gone, not free); `Err` when the store cannot say.
async fn verify(
    out: &Location,
    name: &str,
    generation: u64,
    text: &[u8],
) -> Result<Result<(), String>, String> {
    let all = locks(out).await?;
    if let Some((_, newer, _)) = all.iter().find(|(g, _, _)| *g > generation) {
        let holder = out
            .get(newer)
            .await
            .ok()
            .and_then(|b| serde_json::from_slice::<Holder>(&b).ok())
            .map_or("another run".to_string(), |h| h.describe());
        return Ok(Err(holder));
    }
    match out.get(name).await {
        Ok(bytes) if bytes.as_ref() == text => Ok(Ok(())),
        Ok(bytes) => Ok(Err(serde_json::from_slice::<Holder>(&bytes)
            .map_or("another run".to_string(), |h| h.describe()))),
        Err(crate::storage::StorageError::Store {
            source: object_store::Error::NotFound { .. },
            ..
        }) => Ok(Err(
            "a run that took its lock over and has given it back".to_string()
        )),
        Err(e) => Err(format!("cannot read its lock: {e}")),
    }
}

/// The hold of a run on its `--out` ([`acquire`]): refreshed from a thread of its own, given
/// back (the lock deleted) when dropped.
pub struct RunLock {
    name: String,
    stop: Option<mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// The lock, as [`HELD`] lists it.
    held: Held,
}

/// Why a lock was not taken.
fn refusal(out: &Location, name: &str, holder: &str, refreshed: Duration) -> String {
    let what = if holder.starts_with("epimine run") {
        "run"
    } else {
        "command"
    };
    format!(
        "in use by another {what}: {holder} (its lock {}, refreshed {} s ago). Wait for it to \
         end, or stop it; a lock left by a killed process is taken over: at once on the machine \
         it ran on, else {} s after its last refresh",
        out.display_child(name),
        refreshed.as_secs(),
        EXPIRES.as_secs()
    )
}

/// Takes `out` for this run, or says who holds it (an error for `--out`). A lock whose holder
/// is gone is taken over with a warning naming it.
pub fn acquire(
    out: &Location,
    runtime: &tokio::runtime::Runtime,
    command: &str,
) -> Result<RunLock, String> {
    acquire_refreshed(out, runtime, command, REFRESH)
}

/// [`acquire`], refreshing the lock every `refresh`.
fn acquire_refreshed(
    out: &Location,
    runtime: &tokio::runtime::Runtime,
    command: &str,
    refresh: Duration,
) -> Result<RunLock, String> {
    let me = Holder::this_process(command);
    let text = serde_json::to_vec_pretty(&me).expect("a holder serializes");
    for _ in 0..8 {
        let existing = runtime.block_on(locks(out))?;
        let generation = match existing.last() {
            None => 0,
            Some((g, name, written)) => {
                let age = SystemTime::now()
                    .duration_since(*written)
                    .unwrap_or_default();
                let holder = match runtime.block_on(out.get(name)) {
                    Ok(bytes) => serde_json::from_slice::<Holder>(&bytes).ok(),
                    // Given back meanwhile: look again.
                    Err(crate::storage::StorageError::Store {
                        source: object_store::Error::NotFound { .. },
                        ..
                    }) => continue,
                    Err(e) => return Err(format!("cannot read its lock: {e}")),
                };
                let (desc, gone) = match &holder {
                    Some(h) => (h.describe(), h.gone()),
                    None => ("an unreadable lock".to_string(), None),
                };
                let why = match gone {
                    Some(true) => format!("its process {} is gone", holder.map_or(0, |h| h.pid)),
                    Some(false) => return Err(refusal(out, name, &desc, age)),
                    None if age > EXPIRES => {
                        format!("it was not refreshed for {} s", age.as_secs())
                    }
                    None => return Err(refusal(out, name, &desc, age)),
                };
                tracing::warn!(
                    "{}: taking over the lock of a run that ended without giving it back ({desc}): {why}",
                    out.display()
                );
                g + 1
            }
        };
        let name = format!("{LOCK_DIR}/{generation}");
        let made = runtime
            .block_on(out.put_new(&name, Bytes::from(text.clone())))
            .map_err(|e| format!("cannot write its lock: {e}"))?;
        if !made {
            // Another run took this generation first: look again.
            continue;
        }
        for (_, old, _) in existing {
            if let Err(e) = runtime.block_on(out.delete(&old)) {
                tracing::debug!("{}: {e}", out.display());
            }
        }
        return Ok(start_refresh(out.clone(), name, generation, text, refresh));
    }
    Err("cannot take its lock: other runs keep taking it".into())
}

/// A lock this process holds, for [`give_back_held`] and [`check_held`].
#[derive(Clone)]
struct Held {
    out: Location,
    name: String,
    generation: u64,
    text: Vec<u8>,
    /// Stops its refresh thread from writing it again.
    given_back: Arc<AtomicBool>,
    /// Who took it over, once lost.
    lost: Arc<Mutex<Option<String>>>,
}
static HELD: Mutex<Vec<Held>> = Mutex::new(Vec::new());

impl Held {
    /// Who took this lock over, once known.
    fn taker(&self) -> Option<String> {
        self.lost.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// [`verify`] now, remembering a loss: `Ok(Err(who))` when lost (now or before), `Err` when
    /// the store cannot say.
    async fn check(&self) -> Result<Result<(), String>, String> {
        if let Some(holder) = self.taker() {
            return Ok(Err(holder));
        }
        let checked = verify(&self.out, &self.name, self.generation, &self.text).await?;
        if let Err(holder) = &checked {
            *self.lost.lock().unwrap_or_else(|e| e.into_inner()) = Some(holder.clone());
        }
        Ok(checked)
    }
}

/// Whether this process still holds its lock on `out`, asked of the store now (the fence of
/// every checkpoint a run writes: a run that stalled past the expiry and lost `--out` writes
/// none that the run which took it over would read). `Ok` when this process holds no lock on
/// `out` (a process other than 0, a command without one).
pub async fn check_held(out: &Location) -> Result<(), String> {
    let mine: Vec<Held> = HELD
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .filter(|h| h.out.display() == out.display())
        .cloned()
        .collect();
    for held in mine {
        match held.check().await {
            Ok(Ok(())) => {}
            Ok(Err(holder)) => {
                return Err(format!(
                    "another run took {} over ({holder})",
                    out.display()
                ))
            }
            Err(e) => return Err(format!("cannot check the lock of {}: {e}", out.display())),
        }
    }
    Ok(())
}

/// Gives back every lock this process holds, now (each deletion bounded by 10 s): for a signal
/// that ends the process without unwinding (SIGTERM, SIGINT, SIGHUP), so that the next run, on
/// this machine or another, need not wait for the lock to expire. Returns the folders given
/// back.
pub fn give_back_held() -> Vec<String> {
    let held = std::mem::take(&mut *HELD.lock().unwrap_or_else(|e| e.into_inner()));
    let Ok(runtime) = crate::runtime::current_thread() else {
        return Vec::new();
    };
    let mut given = Vec::new();
    for Held {
        out,
        name,
        given_back,
        lost,
        ..
    } in held
    {
        given_back.store(true, Ordering::SeqCst);
        if lost.lock().unwrap_or_else(|e| e.into_inner()).is_some() {
            // Another run's now (or gone): not ours to delete.
            continue;
        }
        let deleted = runtime.block_on(async {
            tokio::time::timeout(Duration::from_secs(10), out.delete(&name)).await
        });
        match deleted {
            Ok(Ok(())) => {
                if let Some(dir) = out.local_path() {
                    let _ = std::fs::remove_dir(dir.join(LOCK_DIR));
                }
                given.push(out.display().to_string());
            }
            Ok(Err(e)) => {
                tracing::warn!("cannot remove the lock {}: {e}", out.display_child(&name))
            }
            Err(_) => tracing::warn!(
                "cannot remove the lock {}: no answer in 10 s",
                out.display_child(&name)
            ),
        }
    }
    given
}

/// Starts the thread that rewrites the lock every `refresh` and gives it back at the end.
fn start_refresh(
    out: Location,
    name: String,
    generation: u64,
    text: Vec<u8>,
    refresh: Duration,
) -> RunLock {
    let held = Held {
        out: out.clone(),
        name: name.clone(),
        generation,
        text: text.clone(),
        given_back: Arc::default(),
        lost: Arc::default(),
    };
    let (lost, thread_given_back) = (Arc::clone(&held.lost), Arc::clone(&held.given_back));
    let (stop, stopped) = mpsc::channel::<()>();
    let (thread_lost, thread_name) = (Arc::clone(&lost), name.clone());
    let spawned = std::thread::Builder::new()
        .name("run-lock".into())
        .spawn(move || {
            let runtime = match crate::runtime::current_thread() {
                Ok(r) => r,
                Err(e) => {
                    tracing::warn!("the lock of {} is not refreshed: {e}", out.display());
                    return;
                }
            };
            let name = thread_name;
            let mut warned = false;
            while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(refresh) {
                let taken = runtime.block_on(async {
                    if let Err(holder) = verify(&out, &name, generation, &text).await? {
                        return Ok(Some(holder));
                    }
                    if !thread_given_back.load(Ordering::SeqCst) {
                        out.put(&name, Bytes::from(text.clone()))
                            .await
                            .map_err(|e| e.to_string())?;
                    }
                    Ok::<_, String>(None)
                });
                match taken {
                    Ok(None) => {}
                    Ok(Some(holder)) => {
                        tracing::error!(
                            "{}: another run took over this run's lock ({holder}); this run will \
                             not commit",
                            out.display()
                        );
                        *thread_lost.lock().unwrap_or_else(|e| e.into_inner()) = Some(holder);
                        break;
                    }
                    Err(e) if !warned => {
                        tracing::warn!("cannot refresh the lock of {}: {e}", out.display());
                        warned = true;
                    }
                    Err(e) => tracing::debug!("{e}"),
                }
            }
            // The end of the run (or of its hold): give back this run's own lock object, unless
            // it lost it (the object is then another run's, or gone).
            let lost = thread_lost
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .is_some();
            if lost
                && !runtime
                    .block_on(out.get(&name))
                    .is_ok_and(|b| b.as_ref() == text.as_slice())
            {
                return;
            }
            if let Err(e) = runtime.block_on(out.delete(&name)) {
                tracing::warn!("cannot remove the lock {}: {e}", out.display_child(&name));
            }
            if out.kind() == StoreKind::Local {
                if let Some(dir) = out.local_path() {
                    // Only when empty: a lock taken meanwhile stays.
                    let _ = std::fs::remove_dir(dir.join(LOCK_DIR));
                }
            }
        });
    let thread = match spawned {
        Ok(t) => Some(t),
        Err(e) => {
            tracing::warn!("the lock of this run is not refreshed: {e}");
            None
        }
    };
    HELD.lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(held.clone());
    RunLock {
        name,
        stop: Some(stop),
        thread,
        held,
    }
}

impl RunLock {
    /// The lock object's name under `--out`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// [`RunLock::still_held`], asked of the store now (not at the last refresh): the fence a
    /// run passes before its commit, so that one that stalled (SIGSTOP, a frozen VM) past the
    /// expiry while another took `--out` over can never commit over it, even when its refresh
    /// thread has not run since it resumed.
    pub fn check_now(&self, runtime: &tokio::runtime::Runtime) -> Result<(), String> {
        match runtime.block_on(self.held.check()) {
            Ok(Ok(())) => Ok(()),
            Ok(Err(_)) => self.still_held(),
            Err(e) => Err(format!(
                "cannot check that this run still holds it ({e}): this run's tables were not \
                 written"
            )),
        }
    }

    /// An error when another run took the folder over meanwhile (this run then must not
    /// commit).
    pub fn still_held(&self) -> Result<(), String> {
        match self.held.taker() {
            None => Ok(()),
            Some(holder) => Err(format!(
                "another run took it over while this one worked ({holder}): this run's tables \
                 were not written"
            )),
        }
    }
}

impl Drop for RunLock {
    fn drop(&mut self) {
        HELD.lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|h| !Arc::ptr_eq(&h.lost, &self.held.lost));
        self.stop.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runtime() -> tokio::runtime::Runtime {
        crate::runtime::current_thread().unwrap()
    }

    #[test]
    fn a_holder_is_alive_gone_or_unknown() {
        let me = Holder::this_process("epimine run");
        assert_eq!(me.gone(), Some(false), "{me:?}");
        // A pid that was never started (beyond pid_max), and this pid with another start time.
        let never = Holder {
            pid: 4_194_304 + 7,
            ..me.clone()
        };
        assert_eq!(never.gone(), Some(true));
        let reused = Holder {
            process_start: me.process_start.map(|s| s + 1),
            ..me.clone()
        };
        assert_eq!(reused.gone(), Some(true));
        let elsewhere = Holder {
            machine: Some("another-boot pid:[1]".into()),
            ..me
        };
        assert_eq!(elsewhere.gone(), None);
    }

    /// The holder refreshes its lock; a later generation (another run taking over) is noticed
    /// at the next refresh, and the run must then not commit; the lock is deleted at the end.
    #[test]
    fn a_lock_is_refreshed_a_takeover_is_noticed_and_it_is_given_back() {
        let dir = tempfile::tempdir().unwrap();
        let out = Location::parse(dir.path().to_str().unwrap(), false).unwrap();
        let rt = runtime();
        let lock = acquire_refreshed(&out, &rt, "epimine run", Duration::from_millis(100)).unwrap();
        assert_eq!(lock.name(), "_lock/0");
        let file = dir.path().join("_lock/0");
        let written = std::fs::metadata(&file).unwrap().modified().unwrap();
        std::thread::sleep(Duration::from_millis(1200));
        assert!(
            std::fs::metadata(&file).unwrap().modified().unwrap() > written,
            "refreshed"
        );
        lock.still_held().unwrap();
        // A second lock of this very process is refused: its holder is alive.
        let e = acquire(&out, &rt, "epimine run").err().unwrap();
        assert!(e.contains(&format!("pid {}", std::process::id())), "{e}");
        // Another run takes over (as after an expiry).
        let other = Holder {
            host: "node-c".into(),
            ..Holder::this_process("epimine run")
        };
        assert!(rt
            .block_on(out.put_new("_lock/1", serde_json::to_vec(&other).unwrap().into()))
            .unwrap());
        std::thread::sleep(Duration::from_millis(600));
        let e = lock.still_held().unwrap_err();
        assert!(
            e.contains("another run took it over") && e.contains("node-c"),
            "{e}"
        );
        drop(lock);
        // It removed its own generation, not the newer one.
        assert!(!file.exists() && dir.path().join("_lock/1").exists());

        let dir = tempfile::tempdir().unwrap();
        let out = Location::parse(dir.path().to_str().unwrap(), false).unwrap();
        drop(acquire(&out, &rt, "epimine run").unwrap());
        assert!(!dir.path().join("_lock").exists(), "given back");
    }

    /// A run that stalled past the expiry (its refresh thread not run since; issue 47 item 1)
    /// is fenced at its commit by [`RunLock::check_now`], whatever happened meanwhile: another
    /// run holding a later generation, having given it back, or a third run holding
    /// generation 0 afresh. `still_held` (the refresh thread's view) still says yes in each.
    #[test]
    fn a_stalled_holder_is_fenced_at_the_commit() {
        let rt = runtime();
        let other = |host: &str| {
            serde_json::to_vec(&Holder {
                host: host.into(),
                ..Holder::this_process("epimine run")
            })
            .unwrap()
        };
        for case in ["holding", "given back", "third run"] {
            let dir = tempfile::tempdir().unwrap();
            let out = Location::parse(dir.path().to_str().unwrap(), false).unwrap();
            // The refresh is an hour away: the holder is stalled.
            let stalled =
                acquire_refreshed(&out, &rt, "epimine run", Duration::from_secs(3600)).unwrap();
            stalled.check_now(&rt).unwrap();
            rt.block_on(check_held(&out)).unwrap();
            // Run B takes over as `acquire` does: the next generation, the older deleted.
            assert!(rt
                .block_on(out.put_new("_lock/1", other("node-b").into()))
                .unwrap());
            rt.block_on(out.delete("_lock/0")).unwrap();
            let who = match case {
                "holding" => "node-b",
                "given back" => {
                    rt.block_on(out.delete("_lock/1")).unwrap();
                    "given it back"
                }
                _ => {
                    rt.block_on(out.delete("_lock/1")).unwrap();
                    assert!(rt
                        .block_on(out.put_new("_lock/0", other("node-c").into()))
                        .unwrap());
                    "node-c"
                }
            };
            stalled.still_held().unwrap();
            // The checkpoints' fence sees it too.
            let e = rt.block_on(check_held(&out)).unwrap_err();
            assert!(
                e.contains("another run took") && e.contains(who),
                "{case}: {e}"
            );
            let e = stalled.check_now(&rt).unwrap_err();
            assert!(
                e.contains("another run took it over") && e.contains(who),
                "{case}: {e}"
            );
            // And it stays lost; given back, it leaves the others' locks alone.
            assert!(stalled.still_held().is_err(), "{case}");
            drop(stalled);
            let left = match case {
                "holding" => vec!["_lock/1"],
                "given back" => vec![],
                _ => vec!["_lock/0"],
            };
            let now: Vec<String> = rt
                .block_on(locks(&out))
                .unwrap()
                .into_iter()
                .map(|(_, n, _)| n)
                .collect();
            assert_eq!(now, left, "{case}");
        }
    }
}
