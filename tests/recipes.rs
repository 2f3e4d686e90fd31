//! The cluster recipes users copy (cluster/): the Kubernetes manifests parsed (YAML read by
//! python3's PyYAML, Debian python3-yaml, into JSON) and checked for every field the program
//! relies on, the ConfigMap's job file loaded and resolved as a pod of the Job would resolve
//! it (with the run's token and the Job's uid as run id); the Slurm batch script (its token
//! made per job) and the Dockerfile checked for what the README promises. (The
//! Slurm recipe itself runs on a real Slurm in tests/launcher.rs.)

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn cluster_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("cluster")
}

/// Every document of a YAML file, as JSON.
fn yaml(file: &Path) -> Vec<Value> {
    let script = "import json, sys, yaml\n\
                  print(json.dumps(list(yaml.safe_load_all(open(sys.argv[1])))))";
    let out = Command::new("python3")
        .args(["-c", script])
        .arg(file)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "reading {} with python3 + PyYAML (Debian: apt-get install python3-yaml; \
         scripts/ci/test.sh installs it): {}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The one document of `kind` among the manifests.
fn manifests() -> HashMap<String, Value> {
    let mut by_kind = HashMap::new();
    for entry in std::fs::read_dir(cluster_dir().join("k8s")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "yaml") {
            for doc in yaml(&path) {
                let kind = doc["kind"].as_str().expect("a kind").to_string();
                let name = doc["metadata"]["name"]
                    .as_str()
                    .expect("a name")
                    .to_string();
                by_kind.insert(format!("{kind}/{name}"), doc);
            }
        }
    }
    by_kind
}

#[test]
fn the_kubernetes_manifests_give_what_the_program_relies_on() {
    let m = manifests();
    let job = &m["Job/epimine"];
    let service = &m["Service/epimine"];
    let config = &m["ConfigMap/epimine-job"];
    assert_eq!(job["apiVersion"], "batch/v1");
    let spec = &job["spec"];
    // One pod per process, all at once, each with its index.
    assert_eq!(spec["completionMode"], "Indexed");
    let completions = spec["completions"].as_u64().unwrap();
    assert_eq!(spec["parallelism"].as_u64(), Some(completions));
    let pod = &spec["template"]["spec"];
    let container = &pod["containers"][0];
    // The pods' names under the headless Service.
    assert_eq!(pod["subdomain"], service["metadata"]["name"]);
    assert_eq!(service["spec"]["clusterIP"], "None");
    assert_eq!(service["spec"]["publishNotReadyAddresses"], true);
    assert_eq!(
        service["spec"]["selector"]["batch.kubernetes.io/job-name"],
        job["metadata"]["name"]
    );

    let settings = the_mounted_job_file(pod, container, config);
    // The CronJob that follows stories runs jobs/follow.toml's rules (the dates read, the
    // novelty view).
    let follow = m["ConfigMap/epimine-follow-job"]["data"]["job.toml"]
        .as_str()
        .expect("the follow CronJob's job file");
    let follow = epimine::job::Job::from_toml(follow, "follow-cronjob.yaml").unwrap();
    follow.validate().unwrap();
    assert!(follow.terms.dated && follow.episodes.dated && follow.episodes.novelty);

    let cluster = &settings.cluster;
    let env = assert_a_pod_resolves_the_layout(job, service, container, cluster, completions);
    assert_the_models_secrets_and_resources(&m, pod, container, cluster, &env);
}

/// The mount path of the container's volume mount `name`.
fn mount(container: &Value, name: &str) -> String {
    container["volumeMounts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == name)
        .unwrap_or_else(|| panic!("no volume mount {name}"))["mountPath"]
        .as_str()
        .unwrap()
        .to_string()
}

/// The pod's volume `name`.
fn volume(pod: &Value, name: &str) -> Value {
    pod["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == name)
        .unwrap_or_else(|| panic!("no volume {name}"))
        .clone()
}

/// The container's environment entry `name`.
fn env_value(container: &Value, name: &str) -> Value {
    container["env"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == name)
        .unwrap_or_else(|| panic!("no env {name}"))
        .clone()
}

/// The job file: mounted where the container's arguments name it, from the ConfigMap
/// `config`; returns it loaded and validated.
fn the_mounted_job_file(pod: &Value, container: &Value, config: &Value) -> epimine::job::Job {
    let args: Vec<&str> = container["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(args[0], "run");
    let job_path = Path::new(args[1]);
    let job_volume = container["volumeMounts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| job_path.starts_with(v["mountPath"].as_str().unwrap()))
        .expect("the job file's folder is mounted")["name"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        volume(pod, &job_volume)["configMap"]["name"],
        config["metadata"]["name"]
    );
    let key = job_path.file_name().unwrap().to_str().unwrap();
    let text = config["data"][key]
        .as_str()
        .expect("the job file in the ConfigMap");
    let settings = epimine::job::Job::from_toml(text, "configmap.yaml").unwrap();
    settings.validate().unwrap();
    settings
}

/// The layout a pod resolves: the count is the Job's completions, the peers resolve through
/// the Service, every pod listens on the port the Service and container name; returns the
/// environment of pod 1.
fn assert_a_pod_resolves_the_layout(
    job: &Value,
    service: &Value,
    container: &Value,
    cluster: &epimine::topology::ClusterSettings,
    completions: u64,
) -> HashMap<&'static str, String> {
    assert_eq!(cluster.processes, Some(completions as usize));
    let env: HashMap<&str, String> = [
        ("JOB_COMPLETION_INDEX", "1".to_string()),
        (
            "HOSTNAME",
            format!("{}-1", job["metadata"]["name"].as_str().unwrap()),
        ),
    ]
    .into();
    let layout = epimine::topology::launcher::resolve(cluster, &|n| env.get(n).cloned()).unwrap();
    assert_eq!(
        (layout.process, layout.processes),
        (1, completions as usize)
    );
    let service_name = service["metadata"]["name"].as_str().unwrap();
    assert_eq!(
        layout.addresses[0],
        format!("epimine-0.{service_name}:{}", cluster.port)
    );
    assert_eq!(
        service["spec"]["ports"][0]["port"].as_u64(),
        Some(cluster.port.into())
    );
    assert_eq!(
        container["ports"][0]["containerPort"].as_u64(),
        Some(cluster.port.into())
    );
    env
}

/// The model cache volume where EPIMINE_MODELS points, filled by the model fetch job; secrets
/// for S3, the LLM key and the run's token; the Job's uid as run id; one GPU per pod.
fn assert_the_models_secrets_and_resources(
    m: &HashMap<String, Value>,
    pod: &Value,
    container: &Value,
    cluster: &epimine::topology::ClusterSettings,
    env: &HashMap<&'static str, String>,
) {
    assert_eq!(
        env_value(container, "EPIMINE_MODELS")["value"]
            .as_str()
            .unwrap(),
        mount(container, "models")
    );
    let models_claim = volume(pod, "models")["persistentVolumeClaim"]["claimName"].clone();
    assert!(m.contains_key(&format!(
        "PersistentVolumeClaim/{}",
        models_claim.as_str().unwrap()
    )));
    assert!(
        env_value(container, "ANTHROPIC_API_KEY")["valueFrom"]["secretKeyRef"]["name"].is_string()
    );
    // The run's shared secret from a Secret (required: a pod without it does not start), and
    // the Job's uid as the launcher's run id, both read as a pod of the Job reads them.
    let token = &env_value(container, epimine::topology::TOKEN_VAR)["valueFrom"]["secretKeyRef"];
    assert!(
        token["name"].is_string() && token["key"].is_string(),
        "{token}"
    );
    assert_ne!(token["optional"], true);
    assert_eq!(
        env_value(container, epimine::topology::RUN_ID_VAR)["valueFrom"]["fieldRef"]["fieldPath"],
        "metadata.labels['batch.kubernetes.io/controller-uid']"
    );
    let mut pod_env = env.clone();
    pod_env.insert(epimine::topology::TOKEN_VAR, "from-the-secret".into());
    pod_env.insert(epimine::topology::RUN_ID_VAR, "6a1f-uid".into());
    let admitted =
        epimine::topology::launcher::resolve(cluster, &|n| pod_env.get(n).cloned()).unwrap();
    assert!(admitted.admission.has_token());
    assert_eq!(admitted.admission.run_id.as_deref(), Some("6a1f-uid"));
    assert!(!format!("{admitted:?}").contains("from-the-secret"));
    assert!(container["envFrom"][0]["secretRef"]["name"].is_string());
    // Resources, with one GPU per pod.
    assert!(container["resources"]["requests"]["cpu"].is_string());
    assert_eq!(container["resources"]["limits"]["nvidia.com/gpu"], 1);
    // The model fetch job fills the same claim.
    let fetch = &m["Job/epimine-fetch-model"]["spec"]["template"]["spec"];
    assert_eq!(fetch["containers"][0]["args"][0], "models");
    assert_eq!(
        fetch["volumes"][0]["persistentVolumeClaim"]["claimName"],
        models_claim
    );
}

#[test]
fn the_slurm_recipe_and_the_dockerfile_say_what_the_readme_promises() {
    let sbatch = cluster_dir().join("slurm/epimine.sbatch");
    let syntax = Command::new("bash")
        .arg("-n")
        .arg(&sbatch)
        .status()
        .unwrap();
    assert!(syntax.success(), "bash -n {}", sbatch.display());
    let text = std::fs::read_to_string(&sbatch).unwrap();
    for needed in [
        "#SBATCH --requeue",
        "#SBATCH --open-mode=append",
        "##SBATCH --gpus-per-task=1",
        "srun \"${srun_args[@]}\" \"$EPIMINE\" run \"$@\"",
        "--kill-on-bad-exit=1",
        "export EPIMINE_TOKEN",
    ] {
        assert!(text.contains(needed), "{} lacks {needed}", sbatch.display());
    }
    // The token the script makes: 64 hex digits, a new one per job, one kept when given.
    let made = |given: Option<&str>| -> String {
        let start = text
            .find("if [ -z \"${EPIMINE_TOKEN:-}\" ]")
            .expect("the token block");
        let end = start + text[start..].find("\nfi\n").expect("its end") + 4;
        let mut cmd = Command::new("bash");
        cmd.arg("-c")
            .arg(format!(
                "set -euo pipefail\n{}printf %s \"$EPIMINE_TOKEN\"",
                &text[start..end]
            ))
            .env_remove("EPIMINE_TOKEN");
        if let Some(g) = given {
            cmd.env("EPIMINE_TOKEN", g);
        }
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let (a, b) = (made(None), made(None));
    assert!(
        a.len() == 64 && a.chars().all(|c| c.is_ascii_hexdigit()),
        "{a}"
    );
    assert_ne!(a, b);
    assert_eq!(made(Some("mine")), "mine");
    assert!(!text.contains("echo \"$EPIMINE_TOKEN") && !text.contains("${EPIMINE_TOKEN}\""));

    let docker = std::fs::read_to_string(cluster_dir().join("Dockerfile")).unwrap();
    let froms = docker.lines().filter(|l| l.starts_with("FROM ")).count();
    assert_eq!(froms, 2, "a build stage and a runtime stage");
    for needed in [
        "ARG FEATURES=cuda",
        "--features \"${FEATURES}\"",
        "runtime",
        "VOLUME /models",
        "EPIMINE_MODELS=/models",
        "ENTRYPOINT [\"epimine\"]",
    ] {
        assert!(docker.contains(needed), "the Dockerfile lacks {needed}");
    }
    dockerfile_copies_every_member(&docker);
    // What it copies exists.
    for line in docker
        .lines()
        .filter(|l| l.starts_with("COPY ") && !l.contains("--from"))
    {
        let parts: Vec<&str> = line.split_whitespace().collect();
        for src in &parts[1..parts.len() - 1] {
            let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(src);
            assert!(
                path.exists(),
                "the Dockerfile copies {src}, which is missing"
            );
        }
    }
}

/// Every member of the workspace is in the Dockerfile for cargo to read (a missing one fails the
/// build): a folder of members (`crates/*`, the library's layer crates) copied whole.
fn dockerfile_copies_every_member(docker: &str) {
    let manifest: toml::Table = toml::from_str(
        &std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml")).unwrap(),
    )
    .unwrap();
    let members = manifest["workspace"]["members"].as_array().unwrap();
    for member in members
        .iter()
        .filter_map(|m| m.as_str())
        .filter(|m| *m != ".")
    {
        let needed = match member.strip_suffix("/*") {
            Some(folder) => vec![format!("COPY {folder} ./{folder}")],
            None => vec![
                format!("COPY {member}/Cargo.toml"),
                format!("COPY {member}/src"),
            ],
        };
        for needed in needed {
            assert!(docker.contains(&needed), "the Dockerfile lacks {needed}");
        }
    }
}
