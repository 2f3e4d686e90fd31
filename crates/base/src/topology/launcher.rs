//! The layout a launcher gives a process through its environment: a Slurm step started by
//! `srun` (`SLURM_PROCID`, `SLURM_STEP_NUM_TASKS`, `SLURM_STEP_NODELIST`,
//! `SLURM_STEP_TASKS_PER_NODE`, `SLURM_DISTRIBUTION`) or a pod of a Kubernetes Indexed Job
//! (`JOB_COMPLETION_INDEX`, with the process count and the peers' host pattern from the job's
//! settings). What the settings give wins; the launcher fills in the rest.

use super::admission::Admission;
pub use super::layout::Launcher;
use super::layout::{Cluster, ClusterError, ClusterSettings};
use super::nodelist::{self, NodeListError};

/// Reads one environment variable.
pub type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// What a launcher says about this process.
struct LaunchedAs {
    /// The launcher, with what it read (for the log and `run.json`).
    source: String,
    /// This process's index, and the variable it came from.
    process: (usize, String),
    /// The process count, and where it came from (Kubernetes gives none).
    processes: Option<(usize, String)>,
    /// Every process's address, for a given process count.
    peers: Peers,
}

enum Peers {
    /// Slurm: one address per task, in task order.
    Tasks(Vec<String>),
    /// Kubernetes: a host pattern and the Job's name.
    Pattern {
        pattern: String,
        job: Option<String>,
    },
    /// Kubernetes without `cluster.hosts`.
    NoPattern,
}

fn err(text: impl Into<String>) -> ClusterError {
    ClusterError(text.into())
}

impl From<NodeListError> for ClusterError {
    fn from(e: NodeListError) -> Self {
        ClusterError(format!("slurm: {e}"))
    }
}

/// A variable that must be an index or count.
fn number(env: Env, name: &str) -> Result<Option<usize>, ClusterError> {
    match env(name) {
        None => Ok(None),
        Some(v) => v
            .trim()
            .parse()
            .map(Some)
            .map_err(|_| err(format!("{name}=`{v}` is not a non-negative integer"))),
    }
}

/// The first of `names` that is set, with its name.
fn first_of(env: Env, names: &[&str]) -> Option<(String, String)> {
    names
        .iter()
        .find_map(|n| env(n).map(|v| (n.to_string(), v)))
}

/// The layout from `settings` and, for what they leave open, the launcher's environment.
pub fn resolve(settings: &ClusterSettings, env: Env) -> Result<Cluster, ClusterError> {
    let launcher = match settings.launcher {
        Launcher::Auto if env("SLURM_PROCID").is_some() => Launcher::Slurm,
        Launcher::Auto if env("JOB_COMPLETION_INDEX").is_some() => Launcher::Kubernetes,
        Launcher::Auto => Launcher::None,
        other => other,
    };
    let needed =
        settings.process.is_none() || settings.processes.is_none() || settings.hostfile.is_none();
    let found = match launcher {
        Launcher::Slurm if needed => Some(slurm(settings, env)?),
        Launcher::Kubernetes if needed => Some(kubernetes(settings, env)?),
        _ => None,
    };

    let (processes, processes_from) = match (settings.processes, &found) {
        (Some(n), _) => (n, "-n / cluster.processes".to_string()),
        (
            None,
            Some(LaunchedAs {
                processes: Some((n, from)),
                ..
            }),
        ) => (*n, from.clone()),
        (None, Some(f)) => {
            return Err(err(format!(
                "{}: set cluster.processes (or -n) to the number of processes, the Job's \
                 `completions`",
                f.source
            )))
        }
        (None, None) => (1, "the default".to_string()),
    };
    if processes == 0 {
        return Err(err("cluster.processes = 0: at least one process"));
    }
    if settings.workers == 0 {
        return Err(err("cluster.workers = 0 (-w): at least one worker thread"));
    }
    let (process, process_from) = match (settings.process, &found) {
        (Some(p), _) => (p, "-p / cluster.process".to_string()),
        (None, Some(f)) => f.process.clone(),
        (None, None) => (0, "the default".to_string()),
    };
    if process >= processes {
        return Err(err(format!(
            "process index {process} (from {process_from}) is out of range for {processes} \
             processes (from {processes_from}): every process must be given the same count, \
             and indices 0 to {}",
            processes - 1
        )));
    }

    let addresses = if processes == 1 {
        Vec::new()
    } else if let Some(file) = &settings.hostfile {
        hostfile(file, processes)?
    } else if let Some(found) = &found {
        match &found.peers {
            Peers::Tasks(tasks) if tasks.len() == processes => tasks.clone(),
            Peers::Tasks(tasks) => {
                return Err(err(format!(
                    "{}: the step has {} tasks but the job asks for {processes} processes \
                     ({processes_from}): start one task per process (srun -n {processes}), or \
                     give --hostfile",
                    found.source,
                    tasks.len()
                )))
            }
            Peers::Pattern { pattern, job } => (0..processes)
                .map(|i| expand_pattern(pattern, i, job.as_deref(), settings.port))
                .collect::<Result<_, _>>()?,
            Peers::NoPattern => {
                return Err(err(format!(
                    "{}: set cluster.hosts to the pods' host names, e.g. \
                     \"{{job}}-{{index}}.<headless service>\" (or give --hostfile)",
                    found.source
                )))
            }
        }
    } else {
        (0..processes)
            .map(|i| port_plus(settings.port, i).map(|p| format!("localhost:{p}")))
            .collect::<Result<_, _>>()?
    };
    let source = found
        .as_ref()
        .map_or_else(|| "settings".into(), |f| f.source.clone());
    let slurm = found.is_some() && launcher == Launcher::Slurm;
    let admission = Admission::from_env(env, slurm).map_err(ClusterError)?;
    Ok(Cluster {
        workers: settings.workers,
        processes,
        process,
        addresses,
        startup_timeout: settings.startup_timeout,
        source,
        admission,
    })
}

fn port_plus(port: u16, i: usize) -> Result<u16, ClusterError> {
    u16::try_from(usize::from(port) + i).map_err(|_| {
        err(format!(
            "cluster.port = {port}: port {port} + {i} is past 65535"
        ))
    })
}

/// A hostfile: one `host:port` line per process.
fn hostfile(file: &str, processes: usize) -> Result<Vec<String>, ClusterError> {
    let text =
        std::fs::read_to_string(file).map_err(|e| ClusterError(format!("hostfile {file}: {e}")))?;
    let mut hosts: Vec<String> = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        // A process may listen on several addresses (separated by spaces); each needs a port.
        for address in line.split_whitespace() {
            let port = address.rsplit_once(':').map(|(_, p)| p);
            let why = match port {
                None | Some("") => "has no port".to_string(),
                Some(p) => match p.parse::<u64>() {
                    Ok(n) if (1..=65535).contains(&n) => String::new(),
                    Ok(n) => format!("has port {n}, out of 1–65535"),
                    Err(_) => format!("has port `{}`, not a number", p.escape_debug()),
                },
            };
            if !why.is_empty() {
                return Err(ClusterError(format!(
                    "hostfile {file}:{}: `{}` {why}: each line is host:port, e.g. node1:2101",
                    number + 1,
                    address.escape_debug()
                )));
            }
            // Two processes cannot listen on one address: the second would never be reached
            // and the run would wait out its whole start-up timeout.
            if let Some(earlier) = hosts
                .iter()
                .position(|h| h.split_whitespace().any(|a| a == address))
            {
                return Err(ClusterError(format!(
                    "hostfile {file}:{}: `{}` is named again (already process {earlier}'s \
                     address): each process needs an address of its own",
                    number + 1,
                    address.escape_debug(),
                )));
            }
        }
        hosts.push(line.to_string());
    }
    if hosts.len() < processes {
        return Err(ClusterError(format!(
            "hostfile {file} names {} hosts for {processes} processes",
            hosts.len()
        )));
    }
    Ok(hosts)
}

/// A Slurm step: this task's index, the task count, and every task's node and port (the port
/// is `cluster.port` plus the task's index on its node).
fn slurm(settings: &ClusterSettings, env: Env) -> Result<LaunchedAs, ClusterError> {
    let procid = number(env, "SLURM_PROCID")?.ok_or_else(|| {
        err("cluster.launcher = \"slurm\", but SLURM_PROCID is not set: start epimine with srun")
    })?;
    let (count_var, count) = match first_of(env, &["SLURM_STEP_NUM_TASKS", "SLURM_NTASKS"]) {
        Some((name, _)) => {
            let n = number(env, &name)?.expect("set");
            (name, n)
        }
        None => {
            return Err(err(format!(
                "slurm: SLURM_PROCID={procid} but neither SLURM_STEP_NUM_TASKS nor SLURM_NTASKS \
                 is set: start epimine with srun (one task per process), or give -n"
            )))
        }
    };
    if count > 1 && first_of(env, &["SLURM_STEP_ID", "SLURM_STEPID"]).is_none() {
        let job = env("SLURM_JOB_ID").unwrap_or_default();
        return Err(err(format!(
            "slurm: {count_var}={count} but SLURM_STEP_ID is not set: this is the batch script \
             of job {job}, not a step; start epimine with srun (`srun epimine run …`, one \
             task per process), or give -n 1"
        )));
    }
    let (list_var, list) = first_of(
        env,
        &[
            "SLURM_STEP_NODELIST",
            "SLURM_JOB_NODELIST",
            "SLURM_NODELIST",
        ],
    )
    .ok_or_else(|| {
        err("slurm: none of SLURM_STEP_NODELIST, SLURM_JOB_NODELIST, SLURM_NODELIST is set")
    })?;
    let nodes = nodelist::expand(&list, &list_var)?;
    let per_node = match first_of(env, &["SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"]) {
        Some((name, text)) => nodelist::tasks_per_node(&text, &name)?,
        None if nodes.len() == 1 => vec![count],
        None if nodes.len() == count => vec![1; count],
        None => {
            return Err(err(format!(
                "slurm: SLURM_STEP_TASKS_PER_NODE is not set and {count} tasks do not spread \
                 evenly over the {} nodes of {list_var}",
                nodes.len()
            )))
        }
    };
    if per_node.len() != nodes.len() {
        return Err(err(format!(
            "slurm: {list_var}={list} names {} nodes but the tasks per node list {} ({per_node:?})",
            nodes.len(),
            per_node.len()
        )));
    }
    let total: usize = per_node.iter().sum();
    if total != count {
        return Err(err(format!(
            "slurm: {count_var}={count} but the tasks per node add up to {total}"
        )));
    }
    if procid >= count {
        return Err(err(format!(
            "slurm: SLURM_PROCID={procid} is out of range for {count_var}={count}"
        )));
    }
    let cyclic = cyclic_layout(&env("SLURM_DISTRIBUTION").unwrap_or_default())?;
    let tasks = place_tasks(&per_node, count, cyclic);
    let (node, local) = tasks[procid];
    let layout = if cyclic { "cyclic" } else { "block" };
    let claimed_local = number(env, "SLURM_LOCALID")?;
    let claimed_node = env("SLURMD_NODENAME");
    if claimed_local.is_some_and(|l| l != local)
        || claimed_node.as_ref().is_some_and(|n| *n != nodes[node])
    {
        return Err(err(format!(
            "slurm: in a {layout} layout of {list_var}={list}, task {procid} is task {local} on \
             node {}, but this process is SLURM_LOCALID={} on SLURMD_NODENAME={}: start with \
             srun --distribution=block or cyclic, or give --hostfile",
            nodes[node],
            claimed_local.map_or("?".into(), |l| l.to_string()),
            claimed_node.as_deref().unwrap_or("?")
        )));
    }
    let peers = tasks
        .iter()
        .map(|&(n, l)| port_plus(settings.port, l).map(|p| format!("{}:{p}", nodes[n])))
        .collect::<Result<Vec<_>, _>>()?;
    let job = env("SLURM_JOB_ID").map_or(String::new(), |j| format!("job {j}, "));
    Ok(LaunchedAs {
        source: format!("slurm ({job}{list_var}={list}, {layout})"),
        process: (procid, "SLURM_PROCID".into()),
        processes: Some((count, count_var)),
        peers: Peers::Tasks(peers),
    })
}

/// Whether `SLURM_DISTRIBUTION` lays tasks out cyclically (`cyclic`) or in blocks (`block`, the
/// default, or unset); any other layout is an error that says how to start instead.
fn cyclic_layout(distribution: &str) -> Result<bool, ClusterError> {
    match distribution.split([':', ',']).next().unwrap_or("") {
        "" | "block" => Ok(false),
        "cyclic" => Ok(true),
        other => Err(err(format!(
            "slurm: SLURM_DISTRIBUTION={distribution}: tasks laid out by `{other}` cannot be \
             placed; start with srun --distribution=block (the default) or cyclic, or give \
             --hostfile"
        ))),
    }
}

/// (node, index on the node) of each of `count` tasks, `per_node[n]` of them on node n, laid
/// out in blocks (node by node) or cyclically (one a node in turn), as srun places them.
fn place_tasks(per_node: &[usize], count: usize, cyclic: bool) -> Vec<(usize, usize)> {
    let mut tasks: Vec<(usize, usize)> = Vec::with_capacity(count);
    if cyclic {
        let mut placed = vec![0usize; per_node.len()];
        while tasks.len() < count {
            for (node, &cap) in per_node.iter().enumerate() {
                if placed[node] < cap {
                    tasks.push((node, placed[node]));
                    placed[node] += 1;
                }
            }
        }
    } else {
        for (node, &cap) in per_node.iter().enumerate() {
            tasks.extend((0..cap).map(|local| (node, local)));
        }
    }
    tasks
}

/// A pod of a Kubernetes Indexed Job: its completion index; the count and the peers' host
/// pattern are settings.
fn kubernetes(settings: &ClusterSettings, env: Env) -> Result<LaunchedAs, ClusterError> {
    let index =
        number(env, "JOB_COMPLETION_INDEX")?.ok_or_else(|| {
            err("cluster.launcher = \"kubernetes\", but JOB_COMPLETION_INDEX is not set: run in an \
             Indexed Job (completionMode: Indexed)")
        })?;
    // The pod's host name is `<job>-<index>`.
    let job = env("HOSTNAME").and_then(|h| {
        h.strip_suffix(&format!("-{index}"))
            .filter(|j| !j.is_empty())
            .map(str::to_string)
    });
    let peers = match &settings.hosts {
        Some(pattern) => {
            // Checked here, before any work, for a clear error.
            expand_pattern(pattern, index, job.as_deref(), settings.port)?;
            Peers::Pattern {
                pattern: pattern.clone(),
                job,
            }
        }
        None => Peers::NoPattern,
    };
    Ok(LaunchedAs {
        source: format!("kubernetes (JOB_COMPLETION_INDEX={index})"),
        process: (index, "JOB_COMPLETION_INDEX".into()),
        processes: None,
        peers,
    })
}

/// `cluster.hosts` for process `index`: `{index}` and `{job}` filled in, then `:port`.
fn expand_pattern(
    pattern: &str,
    index: usize,
    job: Option<&str>,
    port: u16,
) -> Result<String, ClusterError> {
    let mut host = pattern.replace("{index}", &index.to_string());
    if host.contains("{job}") {
        let job = job.ok_or_else(|| {
            err(format!(
                "cluster.hosts = \"{pattern}\": {{job}} is the pod's host name less \
                 `-<index>`, but HOSTNAME does not end in -<JOB_COMPLETION_INDEX>"
            ))
        })?;
        host = host.replace("{job}", job);
    }
    if host.contains(['{', '}', ' ', ':', '/']) || host.is_empty() {
        return Err(err(format!(
            "cluster.hosts = \"{pattern}\" gives the host `{host}`: only {{index}} and {{job}} \
             are filled in, and the port is cluster.port"
        )));
    }
    if !pattern.contains("{index}") {
        return Err(err(format!(
            "cluster.hosts = \"{pattern}\" has no {{index}}: every pod would get one host"
        )));
    }
    Ok(format!("{host}:{port}"))
}

#[cfg(test)]
mod tests;
