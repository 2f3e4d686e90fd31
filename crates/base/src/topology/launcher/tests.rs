//! Unit tests of `launcher`.

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
