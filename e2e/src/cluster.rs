//! The cluster under test: started here from `ebb-cluster`, or an existing one.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use k8s_openapi::api::core::v1::Namespace as CoreNamespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

use crate::{repo_root, unique, work_dir};

/// Field manager of everything the harness itself applies.
pub const MANAGER: &str = "ebb-e2e";

/// A cluster the suite talks to.
pub struct Cluster {
    /// Admin kubeconfig.
    pub kubeconfig: PathBuf,
    /// The API server's audit log, when the harness started the cluster itself.
    pub audit_log: Option<PathBuf>,
    /// The cluster was started here (`ebb-cluster`), not given by `EBB_E2E_KUBECONFIG`.
    pub local: bool,
    /// `ebb-cluster`'s `--dir`, when the harness started the cluster itself: what
    /// [`crate::apiserver`] needs to run another API server on its etcd, or to compact that.
    pub dir: Option<PathBuf>,
    /// The supervisor process; its stdin pipe closes when this test process ends, and the
    /// cluster stops with it.
    supervisor: Option<Mutex<Child>>,
    /// One message per `ebb-cluster: apiserver restarted` line of the supervisor.
    restarted: Option<Mutex<Receiver<Instant>>>,
}

static CLUSTER: OnceLock<Result<Cluster, String>> = OnceLock::new();
static NODE_CLUSTER: OnceLock<Result<Cluster, String>> = OnceLock::new();

/// What a test binary's own cluster runs.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    /// The control plane alone, with the garbage collector and namespace controller: quick to
    /// start; tests write Job, StatefulSet and HPA status themselves.
    ControlPlane,
    /// The control plane with a node (containerd, kubelet, kube-proxy, kube-scheduler) and
    /// every controller of kube-controller-manager: pods run, charts install as on any cluster.
    Node,
}

/// The cluster of this test run, started (and its CRDs installed) on first use.
pub fn cluster() -> &'static Cluster {
    started(&CLUSTER, Kind::ControlPlane)
}

/// A cluster with a node, started on first use: the images of `target/images/` (`.ci/images`,
/// or `EBB_E2E_IMAGES`) imported into it, the third-party CRDs of `e2e/crds/` installed and
/// ebb's own left to the charts, as on a user's cluster. Under `EBB_E2E_KUBECONFIG` it is that
/// cluster, which must have the images (`kind load image-archive`), and charts install there
/// with `crds.install=false` ([`crate::helm::Release`]).
pub fn node_cluster() -> &'static Cluster {
    started(&NODE_CLUSTER, Kind::Node)
}

fn started(cell: &'static OnceLock<Result<Cluster, String>>, kind: Kind) -> &'static Cluster {
    let started = cell.get_or_init(|| {
        // Started on a thread of its own: the caller may be inside a tokio runtime, and the
        // setup runs one of its own.
        std::thread::spawn(move || start(kind).map_err(|e| format!("{e:#}")))
            .join()
            .unwrap_or_else(|_| Err("cluster setup panicked".into()))
    });
    match started {
        Ok(cluster) => cluster,
        Err(e) => panic!("no cluster for the end-to-end suite: {e}"),
    }
}

fn start(kind: Kind) -> Result<Cluster> {
    let cluster = match std::env::var_os("EBB_E2E_KUBECONFIG") {
        Some(path) if !path.is_empty() => Cluster {
            kubeconfig: PathBuf::from(path),
            audit_log: None,
            local: false,
            dir: None,
            supervisor: None,
            restarted: None,
        },
        _ => start_local(kind)?,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let client = cluster.client().await?;
        // A node cluster of its own leaves ebb's CRDs to the charts, as on a user's cluster;
        // a given cluster is shared with the node-less tests, which install them all.
        let files = match kind {
            Kind::Node if cluster.local => yaml_files(&repo_root().join("e2e/crds"))?,
            _ => crd_files()?,
        };
        install_crds(&client, files).await
    })?;
    Ok(cluster)
}

/// The image archives a node imports: `EBB_E2E_IMAGES`, else `target/images` (`.ci/images`).
pub fn images_dir() -> PathBuf {
    std::env::var_os("EBB_E2E_IMAGES")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target/images"))
}

/// `ebb-cluster`: `EBB_CLUSTER_BIN`, else `target/bin/ebb-cluster` (built by `make cluster-bin`).
pub(crate) fn cluster_binary() -> PathBuf {
    std::env::var_os("EBB_CLUSTER_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target/bin/ebb-cluster"))
}

fn start_local(kind: Kind) -> Result<Cluster> {
    let binary = cluster_binary();
    if !binary.exists() {
        bail!(
            "{} is missing: run `make cluster-bin` (or set EBB_CLUSTER_BIN, or EBB_E2E_KUBECONFIG \
             to use an existing cluster)",
            binary.display()
        );
    }
    // ebb-cluster picks its ports by binding port 0 and letting go; another process may take one
    // in between ("address already in use"), and the supervisor then exits before it is ready.
    // That is worth a fresh start; a cluster that hangs is not.
    const ATTEMPTS: u32 = 3;
    for attempt in 1..=ATTEMPTS {
        let dir = work_dir().join(format!("cluster-{}-{attempt}", std::process::id()));
        let mut command = Command::new(&binary);
        if kind == Kind::Node {
            if std::env::var_os("EBB_E2E_IN_NETNS").is_none() {
                bail!(
                    "a node runs only inside e2e/isolated's namespaces (make e2e runs the suite there)"
                );
            }
            command.arg("--node").arg("--images").arg(images_dir());
            // containerd v2 as `make cluster-bin` builds it; without it, Debian's on PATH.
            let containerd = repo_root().join(".tools/containerd/bin");
            if containerd.join("containerd").exists() {
                command
                    .arg("--containerd")
                    .arg(containerd.join("containerd"))
                    .arg("--ctr")
                    .arg(containerd.join("ctr"));
            }
        }
        let mut child = command
            .arg("--dir")
            .arg(&dir)
            .arg("--exit-on-stdin-close")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| format!("start {}", binary.display()))?;
        let stdout = child.stdout.take().context("supervisor stdout")?;
        let (tx, rx) = std::sync::mpsc::channel();
        let (restarted_tx, restarted) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if line.starts_with("ebb-cluster: ready") {
                    let _ = tx.send(line);
                } else if line.starts_with("ebb-cluster: apiserver restarted") {
                    let _ = restarted_tx.send(Instant::now());
                }
            }
        });
        match rx.recv_timeout(Duration::from_secs(300)) {
            Ok(line) => {
                eprintln!("{line}");
                return Ok(Cluster {
                    kubeconfig: dir.join("kubeconfig"),
                    audit_log: Some(dir.join("audit.log")),
                    local: true,
                    dir: Some(dir),
                    supervisor: Some(Mutex::new(child)),
                    restarted: Some(Mutex::new(restarted)),
                });
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) if attempt < ATTEMPTS => {
                let _ = child.wait();
                eprintln!(
                    "ebb-cluster exited before it was ready (attempt {attempt}; logs in {}); starting again",
                    dir.join("logs").display()
                );
            }
            Err(_) => {
                let _ = child.kill();
                bail!(
                    "ebb-cluster did not become ready (attempt {attempt}); logs in {}",
                    dir.join("logs").display()
                );
            }
        }
    }
    bail!("ebb-cluster did not start")
}

impl Cluster {
    /// Has the supervisor restart its kube-apiserver (SIGUSR1: kill -9, then the same command on
    /// the same port and etcd) and waits until it reports the server ready again: the Instant
    /// it did (the supervisor polls `/readyz` every 200 ms).
    pub fn restart_apiserver(&self, timeout: Duration) -> Result<Instant> {
        let (Some(supervisor), Some(restarted)) = (&self.supervisor, &self.restarted) else {
            bail!("not a cluster this harness started: its API server cannot be restarted");
        };
        let restarted = restarted.lock().unwrap_or_else(|e| e.into_inner());
        while restarted.try_recv().is_ok() {}
        let pid = supervisor.lock().unwrap_or_else(|e| e.into_inner()).id();
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGUSR1,
        )?;
        restarted
            .recv_timeout(timeout)
            .with_context(|| format!("kube-apiserver not restarted within {timeout:?}"))
    }

    /// An admin client (a new one per call: a client belongs to the runtime that made it).
    pub async fn client(&self) -> Result<Client> {
        Ok(Client::try_from(self.config().await?)?)
    }

    /// The admin client configuration.
    pub async fn config(&self) -> Result<Config> {
        config_of(&self.kubeconfig).await
    }
}

/// The client configuration of kubeconfig file `path` (its current context).
pub async fn config_of(path: &Path) -> Result<Config> {
    let kubeconfig =
        Kubeconfig::read_from(path).with_context(|| format!("read {}", path.display()))?;
    Ok(Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?)
}

/// A client of kubeconfig file `path` ([`config_of`]).
pub async fn client_of(path: &Path) -> Result<Client> {
    Ok(Client::try_from(config_of(path).await?)?)
}

/// The CRD manifests the suite installs: ebb's own (`crds/`) and the third-party fixtures
/// shaped like upstream's (`e2e/crds/`); a fixture wins over a file of the same name in `crds/`
/// (ebb does not install Babylon's or Poolboy's CRDs on a real cluster).
pub fn crd_files() -> Result<Vec<PathBuf>> {
    let fixtures = yaml_files(&repo_root().join("e2e/crds"))?;
    let mut files: Vec<PathBuf> = yaml_files(&repo_root().join("crds"))?
        .into_iter()
        .filter(|own| {
            !fixtures
                .iter()
                .any(|fixture| fixture.file_name() == own.file_name())
        })
        .collect();
    files.extend(fixtures);
    Ok(files)
}

fn yaml_files(dir: &Path) -> Result<Vec<PathBuf>> {
    if !dir.exists() {
        return Ok(Vec::new());
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    Ok(files)
}

async fn install_crds(client: &Client, files: Vec<PathBuf>) -> Result<()> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut names = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file)?;
        let crd: CustomResourceDefinition =
            serde_saphyr::from_str(&text).with_context(|| format!("parse {}", file.display()))?;
        let name = crd.metadata.name.clone().context("CRD without a name")?;
        api.patch(
            &name,
            &PatchParams::apply(MANAGER).force(),
            &Patch::Apply(&crd),
        )
        .await
        .with_context(|| format!("apply {}", file.display()))?;
        names.push(name);
    }
    for name in names {
        crate::eventually(Duration::from_secs(30), || {
            let api = api.clone();
            let name = name.clone();
            async move {
                let crd = api.get(&name).await.ok()?;
                let established = crd
                    .status?
                    .conditions?
                    .iter()
                    .any(|c| c.type_ == "Established" && c.status == "True");
                established.then_some(())
            }
        })
        .await
        .with_context(|| format!("CRD {name} not established"))?;
    }
    Ok(())
}

/// A namespace of one test, deleted when the test calls [`Namespace::delete`] (a local
/// cluster is thrown away after the run anyway).
pub struct Namespace {
    pub name: String,
}

impl Namespace {
    pub async fn create(client: &Client, prefix: &str) -> Result<Namespace> {
        Self::create_labelled(client, prefix, &[]).await
    }

    /// A namespace that enforces the `restricted` Pod Security Standard, as platforms set
    /// for workloads: a pod that asks for more than it may is refused at admission.
    pub async fn create_restricted(client: &Client, prefix: &str) -> Result<Namespace> {
        Self::create_labelled(
            client,
            prefix,
            &[
                ("pod-security.kubernetes.io/enforce", "restricted"),
                ("pod-security.kubernetes.io/enforce-version", "latest"),
            ],
        )
        .await
    }

    async fn create_labelled(
        client: &Client,
        prefix: &str,
        labels: &[(&str, &str)],
    ) -> Result<Namespace> {
        let name = unique(prefix);
        let api: Api<CoreNamespace> = Api::all(client.clone());
        let mut all = serde_json::Map::new();
        all.insert("ebb.dev/e2e".into(), "true".into());
        for (key, value) in labels {
            all.insert((*key).into(), (*value).into());
        }
        let ns: CoreNamespace = serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "labels": all}
        }))?;
        api.create(&PostParams::default(), &ns).await?;
        Ok(Namespace { name })
    }

    pub async fn delete(self, client: &Client) -> Result<()> {
        let api: Api<CoreNamespace> = Api::all(client.clone());
        api.delete(&self.name, &DeleteParams::default()).await?;
        Ok(())
    }
}
