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
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn with_env(settings: &ClusterSettings, vars: &[(&str, &str)]) -> Result<Cluster, String> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        resolve(settings, &|n| map.get(n).cloned()).map_err(|e| e.to_string())
    }

    fn step(procid: &str) -> Vec<(&'static str, String)> {
        vec![
            ("SLURM_JOB_ID", "42".into()),
            ("SLURM_PROCID", procid.into()),
            ("SLURM_STEP_ID", "0".into()),
            ("SLURM_STEP_NUM_TASKS", "5".into()),
            ("SLURM_NTASKS", "5".into()),
            ("SLURM_STEP_NODELIST", "gpu[01-02],cpu5".into()),
            ("SLURM_STEP_TASKS_PER_NODE", "2(x2),1".into()),
        ]
    }

    fn slurm_env(procid: &str, extra: &[(&'static str, &str)]) -> Result<Cluster, String> {
        let mut vars = step(procid);
        for (k, v) in extra {
            vars.retain(|(n, _)| n != k);
            vars.push((k, v.to_string()));
        }
        let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
        with_env(&ClusterSettings::default(), &vars)
    }

    #[test]
    fn nothing_given_is_one_process() {
        let c = with_env(&ClusterSettings::default(), &[]).unwrap();
        assert_eq!((c.processes, c.process, c.addresses.len()), (1, 0, 0));
        let s = ClusterSettings {
            processes: Some(3),
            process: Some(2),
            port: 3000,
            ..Default::default()
        };
        let c = with_env(&s, &[]).unwrap();
        assert_eq!(
            c.addresses,
            ["localhost:3000", "localhost:3001", "localhost:3002"]
        );
    }

    #[test]
    fn slurm_block_and_cyclic_layouts() {
        let c = slurm_env("3", &[("SLURM_LOCALID", "1"), ("SLURMD_NODENAME", "gpu02")]).unwrap();
        assert_eq!((c.process, c.processes), (3, 5));
        assert_eq!(
            c.addresses,
            [
                "gpu01:2101",
                "gpu01:2102",
                "gpu02:2101",
                "gpu02:2102",
                "cpu5:2101"
            ]
        );
        assert!(
            c.source.starts_with("slurm (job 42, SLURM_STEP_NODELIST"),
            "{}",
            c.source
        );
        let c = slurm_env("3", &[("SLURM_DISTRIBUTION", "cyclic")]).unwrap();
        assert_eq!(
            c.addresses,
            [
                "gpu01:2101",
                "gpu02:2101",
                "cpu5:2101",
                "gpu01:2102",
                "gpu02:2102"
            ]
        );
        // This task's own position is checked against the layout.
        let e = slurm_env("3", &[("SLURM_LOCALID", "0")]).unwrap_err();
        assert!(e.contains("SLURM_LOCALID=0") && e.contains("task 3"), "{e}");
        let e = slurm_env("0", &[("SLURM_DISTRIBUTION", "plane=2")]).unwrap_err();
        assert!(e.contains("SLURM_DISTRIBUTION=plane=2"), "{e}");
    }

    #[test]
    fn explicit_settings_win_over_slurm() {
        let vars = step("1");
        let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
        // -p wins over SLURM_PROCID.
        let s = ClusterSettings {
            process: Some(4),
            ..Default::default()
        };
        assert_eq!(with_env(&s, &vars).unwrap().process, 4);
        // A hostfile with every setting: Slurm is not read at all (even a broken one).
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("hosts");
        std::fs::write(&file, "a:1\nb:2\n").unwrap();
        let s = ClusterSettings {
            processes: Some(2),
            process: Some(1),
            hostfile: Some(file.display().to_string()),
            ..Default::default()
        };
        let c = with_env(&s, &[("SLURM_PROCID", "x")]).unwrap();
        assert_eq!(
            (c.addresses.as_slice(), c.source.as_str()),
            (&["a:1".to_string(), "b:2".into()][..], "settings")
        );
        // A hostfile alone: the index still comes from Slurm; a step with more tasks than it
        // names hosts is an error naming both.
        let s = ClusterSettings {
            hostfile: Some(file.display().to_string()),
            ..Default::default()
        };
        let e = with_env(&s, &vars).unwrap_err();
        assert!(e.contains("names 2 hosts for 5 processes"), "{e}");
        // -n smaller than the step: the extra tasks are out of range.
        let s = ClusterSettings {
            processes: Some(1),
            ..Default::default()
        };
        let vars = step("3");
        let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let e = with_env(&s, &vars).unwrap_err();
        assert!(e.contains("process index 3 (from SLURM_PROCID)"), "{e}");
        // launcher = none ignores the environment.
        let s = ClusterSettings {
            launcher: Launcher::None,
            ..Default::default()
        };
        assert_eq!(with_env(&s, &vars).unwrap().processes, 1);
    }

    #[test]
    fn partial_or_wrong_slurm_environments_are_errors() {
        // The batch script of an allocation of 2 tasks (what sbatch gives, no srun): an error,
        // not a wait for a second process that never starts.
        let batch = [
            ("SLURM_JOB_ID", "7"),
            ("SLURM_PROCID", "0"),
            ("SLURM_NTASKS", "2"),
            ("SLURM_LOCALID", "0"),
            ("SLURM_JOB_NODELIST", "localhost"),
        ];
        let e = with_env(&ClusterSettings::default(), &batch).unwrap_err();
        assert!(
            e.contains("batch script of job 7") && e.contains("srun"),
            "{e}"
        );
        // … but one task in a batch script is one process.
        let one = [
            ("SLURM_PROCID", "0"),
            ("SLURM_NTASKS", "1"),
            ("SLURM_JOB_NODELIST", "localhost"),
        ];
        assert_eq!(
            with_env(&ClusterSettings::default(), &one)
                .unwrap()
                .processes,
            1
        );
        let e = with_env(&ClusterSettings::default(), &[("SLURM_PROCID", "0")]).unwrap_err();
        assert!(e.contains("SLURM_NTASKS"), "{e}");
        let e = slurm_env("7", &[]).unwrap_err();
        assert!(e.contains("SLURM_PROCID=7 is out of range"), "{e}");
        let e = slurm_env("a", &[]).unwrap_err();
        assert!(e.contains("SLURM_PROCID=`a`"), "{e}");
        let e = slurm_env("0", &[("SLURM_STEP_NODELIST", "gpu[01-02")]).unwrap_err();
        assert!(e.contains("SLURM_STEP_NODELIST `gpu[01-02`"), "{e}");
        let e = slurm_env("0", &[("SLURM_STEP_TASKS_PER_NODE", "2(x4)")]).unwrap_err();
        assert!(e.contains("names 3 nodes"), "{e}");
        let e = slurm_env("0", &[("SLURM_STEP_NUM_TASKS", "6")]).unwrap_err();
        assert!(e.contains("add up to 5"), "{e}");
        let s = ClusterSettings {
            launcher: Launcher::Slurm,
            ..Default::default()
        };
        assert!(with_env(&s, &[]).unwrap_err().contains("srun"));
        // The ports of many tasks on one node stay below 65536.
        let s = ClusterSettings {
            port: 65535,
            ..Default::default()
        };
        let vars = step("0");
        let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
        assert!(with_env(&s, &vars).unwrap_err().contains("past 65535"));
    }

    #[test]
    fn kubernetes_indexed_job() {
        let s = ClusterSettings {
            processes: Some(3),
            hosts: Some("{job}-{index}.epimine".into()),
            ..Default::default()
        };
        let env = [("JOB_COMPLETION_INDEX", "2"), ("HOSTNAME", "mine-2")];
        let c = with_env(&s, &env).unwrap();
        assert_eq!((c.process, c.processes), (2, 3));
        assert_eq!(
            c.addresses,
            [
                "mine-0.epimine:2101",
                "mine-1.epimine:2101",
                "mine-2.epimine:2101"
            ]
        );
        let e = with_env(&s, &[("JOB_COMPLETION_INDEX", "3"), ("HOSTNAME", "mine-3")]).unwrap_err();
        assert!(
            e.contains("process index 3 (from JOB_COMPLETION_INDEX)"),
            "{e}"
        );
        let e = with_env(&s, &[("JOB_COMPLETION_INDEX", "1")]).unwrap_err();
        assert!(e.contains("HOSTNAME"), "{e}");
        let no_count = ClusterSettings {
            processes: None,
            ..s.clone()
        };
        let e = with_env(&no_count, &env).unwrap_err();
        assert!(e.contains("cluster.processes"), "{e}");
        let no_hosts = ClusterSettings {
            hosts: None,
            ..s.clone()
        };
        let e = with_env(&no_hosts, &env).unwrap_err();
        assert!(e.contains("cluster.hosts"), "{e}");
        for bad in ["{job}.epimine", "{index}.{service}", "x-{index}:80"] {
            let s = ClusterSettings {
                hosts: Some(bad.into()),
                ..s.clone()
            };
            let e = with_env(&s, &env).unwrap_err();
            assert!(e.contains(bad), "{bad}: {e}");
        }
    }

    /// A hostfile's bad lines are named (issue 47 item 8): a port out of range is not "no
    /// port", and an address named twice is refused instead of waited for.
    #[test]
    fn hostfile_ports_out_of_range_and_repeated_addresses_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("hosts");
        let f = file.to_str().unwrap();
        let check = |text: &str| {
            std::fs::write(&file, text).unwrap();
            hostfile(f, 2).map_err(|e| e.to_string())
        };
        assert_eq!(
            check("a:2101\nb:2101\n").unwrap(),
            vec!["a:2101".to_string(), "b:2101".to_string()]
        );
        let e = check("localhost:2101\nlocalhost:99999\n").unwrap_err();
        assert!(
            e.contains(":2: `localhost:99999` has port 99999, out of 1–65535"),
            "{e}"
        );
        let e = check("localhost:2101\nlocalhost\n").unwrap_err();
        assert!(e.contains(":2: `localhost` has no port"), "{e}");
        let e = check("localhost:2101\nlocalhost:x1\n").unwrap_err();
        assert!(e.contains("has port `x1`, not a number"), "{e}");
        let e = check("localhost:2101\nlocalhost:2102 localhost:2101\n").unwrap_err();
        assert!(
            e.contains(":2: `localhost:2101` is named again (already process 0's address)"),
            "{e}"
        );
    }
}
