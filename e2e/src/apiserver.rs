//! API-server trouble on demand: a second kube-apiserver on the suite's etcd that a test can
//! freeze, kill and start again, the main one's restart, and etcd compaction.
//!
//! [`ApiServer::start`] runs `ebb-cluster apiserver --dir <cluster dir> --port <free port>`: the
//! main server's arguments on the same etcd, certificates and ServiceAccount key, with its own
//! port, log (`<dir>/logs/kube-apiserver-<port>.log`) and audit log (`<dir>/audit-<port>.log`,
//! the main one's policy, appended to across restarts). That command execs kube-apiserver, so
//! the process held here is the API server itself: [`ApiServer::freeze`] (SIGSTOP) freezes it,
//! [`ApiServer::kill`] (SIGKILL) kills it, and it gets SIGKILL when this test process ends.
//! Point a controller at it with [`ApiServer::retarget`] of the admin kubeconfig or of an
//! identity's ([`crate::rbac::Identity::kubeconfig`]).
//!
//! Readiness is `/readyz` with the admin's client certificate, as `ebb-cluster` itself waits
//! for it (anonymous `/readyz` answers too, through `system:public-info-viewer`, but
//! `system:masters` does not wait for RBAC to be loaded), polled every 10 ms;
//! [`ApiServer::readiness`] says what the polls met.
//!
//! # 410 Expired on a watch, on purpose
//!
//! A watch already running through a server never meets 410 by itself: compaction leaves a
//! watch that is caught up alone (etcd cancels only watchers behind the compacted revision), and
//! a freeze keeps the client's connection open. Observed: freeze, 20 writes through the main
//! server, compaction, thaw: the watcher got the 20 events at the thaw, no error. A client meets
//! 410 when it *resumes* its watch at a resourceVersion the server no longer serves, and a server
//! that restarts makes every watcher resume. [`ApiServer::expire_watches`] does:
//!
//! 1. kill the server: the watch connections break, clients retry and are refused;
//! 2. `touch`: whatever the test wants changed meanwhile, through another server (optional for
//!    the 410);
//! 3. [`compact`]: `ebb-cluster etcd-compact` moves etcd's revision two steps on (two writes of
//!    a key outside `/registry`) and compacts there, so every resourceVersion a client has seen
//!    is at least two behind the compacted revision (etcd still serves a watch that starts *at*
//!    the compacted revision: with one write less, a server without watch cache replays it);
//! 4. start the server again.
//!
//! Observed with kube-rs's `watcher` (no backoff) through the server, on 1.35: connection
//! refused on every retry (hundreds: no backoff) for 1-2 s, then, before `/readyz` says 200,
//! a 200 watch response whose first event is `ERROR` 410: `watcher::Error::WatchError` with
//! code 410, message `too old resource version: 258 (262)` with the watch cache (it lists at the
//! current revision on start and refuses anything older: the compaction is not even needed) and
//! `The resourceVersion for the provided watch is too old.` with `--watch-cache=false`
//! ([`ApiServer::start_with`]; etcd's compaction is what refuses it). Then the watcher relists
//! (`Event::Init`, `InitApply` of every object including `touch`'s, `InitDone`). No 429 or 503
//! reached the watcher. `tests/api_server_harness.rs` proves it and prints the trace.
//!
//! Timings on the 2-core VM: a (re)start takes 2.0-3.4 s to the first 200 of `/readyz`;
//! before that, 10-25 polls were refused (nothing listening) and 60-85 got `500` (`/readyz`
//! while post-start hooks run), rarely one TLS handshake over 1 s; a thaw answers 200 within
//! 10 ms; the main server's restart takes about 2 s from SIGUSR1 to the supervisor's line.

use std::collections::BTreeMap;
use std::fs::File;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use kube::Client;
use kube::config::Kubeconfig;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::cluster::{Cluster, client_of, cluster_binary};
use crate::work_dir;

/// Whether the suite's cluster is one the harness started, whose API servers a test can
/// freeze and restart. Under `EBB_E2E_KUBECONFIG` it is not: this says so loudly, and the tests
/// that need it end there.
pub fn restartable() -> bool {
    let local = crate::cluster::cluster().dir.is_some();
    if !local {
        eprintln!(
            "SKIPPED: API-server faults need a cluster the harness starts (not EBB_E2E_KUBECONFIG)"
        );
    }
    local
}

/// How long a (re)start may take before `/readyz` answers 200.
const READY_TIMEOUT: Duration = Duration::from_secs(120);
/// How often `/readyz` is polled.
const POLL: Duration = Duration::from_millis(10);
/// How long the threads of a server may take to stop after SIGSTOP.
const FREEZE_TIMEOUT: Duration = Duration::from_secs(10);

/// The state letter of each thread of a process (`/proc/PID/task/TID/stat`, third field), by
/// thread id; a thread that ended between the listing and the read is left out.
fn thread_states(pid: u32) -> Result<BTreeMap<u32, char>> {
    let mut states = BTreeMap::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))? {
        let task = task?;
        let Ok(tid) = task.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(task.path().join("stat")) else {
            continue;
        };
        // "TID (COMM) STATE ...": COMM may hold spaces and parentheses, so split at the last ')'.
        let state = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.trim_start().chars().next())
            .with_context(|| format!("/proc/{pid}/task/{tid}/stat: no state in {stat:?}"))?;
        states.insert(tid, state);
    }
    Ok(states)
}

/// Another kube-apiserver of a cluster the harness started (killed when dropped).
pub struct ApiServer {
    /// The cluster's `--dir`.
    dir: PathBuf,
    binary: PathBuf,
    port: u16,
    /// kube-apiserver flags after the main server's.
    extra: Vec<String>,
    /// The admin kubeconfig, pointed at this server.
    admin: PathBuf,
    child: Mutex<Option<Child>>,
    readiness: Mutex<Option<Readiness>>,
}

/// What the polls of `/readyz` met until the first 200.
#[derive(Debug, Clone)]
pub struct Readiness {
    /// When the first 200 came.
    pub ready_at: Instant,
    /// From the (re)start, or the thaw, to the first 200.
    pub waited: Duration,
    /// Connections refused (nothing listening yet).
    pub refused: u32,
    /// Polls that got no answer within a second (a frozen server).
    pub timed_out: u32,
    /// Other transport errors, by message.
    pub errors: BTreeMap<String, u32>,
    /// HTTP statuses other than 200 (`/readyz` answers 500 while post-start hooks run).
    pub statuses: BTreeMap<u16, u32>,
}

impl ApiServer {
    /// Starts another kube-apiserver for `cluster` on a free port and waits until `/readyz`
    /// answers 200.
    pub async fn start(cluster: &Cluster) -> Result<ApiServer> {
        Self::start_with(cluster, &[]).await
    }

    /// [`ApiServer::start`] with kube-apiserver flags after the main server's (a later one wins),
    /// e.g. `--watch-cache=false`.
    pub async fn start_with(cluster: &Cluster, extra: &[&str]) -> Result<ApiServer> {
        let dir = cluster.dir.clone().context(
            "another API server needs a cluster the harness started (not EBB_E2E_KUBECONFIG)",
        )?;
        // The port is picked by binding port 0 and letting go: another process may take it in
        // between, and the server then exits; a fresh port is worth another attempt.
        const ATTEMPTS: u32 = 3;
        let mut last = None;
        for _ in 0..ATTEMPTS {
            let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
            let mut server = ApiServer {
                admin: PathBuf::new(),
                dir: dir.clone(),
                binary: cluster_binary(),
                port,
                extra: extra.iter().map(|s| (*s).to_owned()).collect(),
                child: Mutex::new(None),
                readiness: Mutex::new(None),
            };
            server.admin = server.retarget(&cluster.kubeconfig)?;
            match server.start_again().await {
                Ok(_) => return Ok(server),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| anyhow::anyhow!("not started")))
    }

    /// `https://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("https://127.0.0.1:{}", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The process id of the API server itself (None while killed).
    pub fn pid(&self) -> Option<u32> {
        self.child().as_ref().map(Child::id)
    }

    fn child(&self) -> std::sync::MutexGuard<'_, Option<Child>> {
        self.child.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Its audit log (the main server's policy; every start appends to it).
    pub fn audit_log(&self) -> PathBuf {
        self.dir.join(format!("audit-{}.log", self.port))
    }

    /// Its log (stdout and stderr; every start appends to it).
    pub fn log(&self) -> PathBuf {
        self.dir
            .join("logs")
            .join(format!("kube-apiserver-{}.log", self.port))
    }

    /// The admin kubeconfig pointed at this server.
    pub fn kubeconfig(&self) -> &Path {
        &self.admin
    }

    /// An admin client of this server (a new one per call).
    pub async fn client(&self) -> Result<Client> {
        client_of(&self.admin).await
    }

    /// A copy of `kubeconfig` (the admin's, or an identity's) whose every cluster is this
    /// server: `<name>-<port>.kubeconfig` in the suite's work directory.
    pub fn retarget(&self, kubeconfig: &Path) -> Result<PathBuf> {
        let mut config = Kubeconfig::read_from(kubeconfig)
            .with_context(|| format!("read {}", kubeconfig.display()))?;
        for cluster in &mut config.clusters {
            if let Some(cluster) = cluster.cluster.as_mut() {
                cluster.server = Some(self.url());
            }
        }
        let stem = kubeconfig
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "kubeconfig".into());
        let path = work_dir().join(format!("{stem}-{}.kubeconfig", self.port));
        std::fs::write(&path, serde_saphyr::to_string(&config)?)?;
        Ok(path)
    }

    /// SIGSTOP, then waits until every thread of the server is stopped (the kernel stops a
    /// process's threads one by one, after `kill` returns): from then on the server answers
    /// nothing; connections stay open, requests hang.
    pub fn freeze(&self) -> Result<()> {
        self.signal(Signal::SIGSTOP)?;
        let pid = self.pid().context("the API server is not running")?;
        let since = Instant::now();
        loop {
            let states = thread_states(pid)?;
            if states.values().all(|state| *state == 'T' || *state == 't') {
                return Ok(());
            }
            if since.elapsed() > FREEZE_TIMEOUT {
                bail!(
                    "kube-apiserver (pid {pid}) not stopped {FREEZE_TIMEOUT:?} after SIGSTOP; \
                     its threads' states: {states:?}"
                );
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// SIGCONT, then waits for `/readyz`: the Instant of its first 200.
    pub async fn thaw(&self) -> Result<Instant> {
        self.signal(Signal::SIGCONT)?;
        self.wait_ready(Instant::now()).await
    }

    /// SIGKILL, and reaps it.
    pub fn kill(&mut self) -> Result<()> {
        if let Some(mut child) = self.child().take() {
            child.kill()?;
            child.wait()?;
        }
        Ok(())
    }

    /// Starts it again (same port, same arguments; a running one is killed first) and waits for
    /// `/readyz`: the Instant of its first 200.
    pub async fn start_again(&mut self) -> Result<Instant> {
        self.kill()?;
        let log = File::options()
            .create(true)
            .append(true)
            .open(self.dir.join(format!("apiserver-{}.stderr", self.port)))?;
        let mut command = Command::new(&self.binary);
        command
            .arg("apiserver")
            .arg("--dir")
            .arg(&self.dir)
            .arg("--port")
            .arg(self.port.to_string());
        if !self.extra.is_empty() {
            command.arg("--").args(&self.extra);
        }
        // What goes wrong before the exec; the server itself logs to its own file.
        command
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        let started = Instant::now();
        let child = spawn_long_lived(command)
            .with_context(|| format!("start {} apiserver", self.binary.display()))?;
        *self.child() = Some(child);
        self.wait_ready(started).await
    }

    /// [`ApiServer::kill`] and [`ApiServer::start_again`]: the Instant of the first 200.
    pub async fn restart(&mut self) -> Result<Instant> {
        self.kill()?;
        self.start_again().await
    }

    /// What the last wait for `/readyz` met.
    pub fn readiness(&self) -> Option<Readiness> {
        self.readiness
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Makes every watch through this server meet 410 Expired when it resumes (see the module
    /// documentation): kill, `touch` (writes through another server while this one is down;
    /// `|| async { Ok(()) }` for none), compact etcd, start again. Returns the compacted
    /// revision and the Instant of the first 200 of `/readyz` (the watchers may have met their
    /// 410 before that).
    pub async fn expire_watches<F, Fut>(
        &mut self,
        cluster: &Cluster,
        touch: F,
    ) -> Result<(i64, Instant)>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = Result<()>>,
    {
        self.kill()?;
        touch().await.context("touch")?;
        let revision = compact(cluster)?;
        let ready = self.start_again().await?;
        Ok((revision, ready))
    }

    fn signal(&self, signal: Signal) -> Result<()> {
        let pid = self.pid().context("the API server is not running")?;
        kill(Pid::from_raw(pid as i32), signal)?;
        Ok(())
    }

    /// Polls `/readyz` every 10 ms until it answers 200.
    async fn wait_ready(&self, since: Instant) -> Result<Instant> {
        let client = client_of(&self.admin).await?;
        let mut seen = Readiness {
            ready_at: since,
            waited: Duration::ZERO,
            refused: 0,
            timed_out: 0,
            errors: BTreeMap::new(),
            statuses: BTreeMap::new(),
        };
        while since.elapsed() < READY_TIMEOUT {
            if let Some(status) = self.exited()? {
                bail!(
                    "kube-apiserver on port {} exited ({status}); log {}:\n{}",
                    self.port,
                    self.log().display(),
                    tail(&self.log())
                );
            }
            let request =
                http::Request::get("/readyz").body(kube::client::Body::from(Vec::new()))?;
            match tokio::time::timeout(Duration::from_secs(1), client.send(request)).await {
                Ok(Ok(response)) if response.status() == http::StatusCode::OK => {
                    seen.ready_at = Instant::now();
                    seen.waited = seen.ready_at - since;
                    let ready_at = seen.ready_at;
                    *self.readiness.lock().unwrap_or_else(|e| e.into_inner()) = Some(seen);
                    return Ok(ready_at);
                }
                Ok(Ok(response)) => {
                    *seen.statuses.entry(response.status().as_u16()).or_default() += 1
                }
                Ok(Err(e)) if refused(&e) => seen.refused += 1,
                Ok(Err(e)) => *seen.errors.entry(format!("{e}")).or_default() += 1,
                Err(_) => seen.timed_out += 1,
            }
            tokio::time::sleep(POLL).await;
        }
        bail!(
            "kube-apiserver on port {} not ready after {READY_TIMEOUT:?} ({seen:?}); log {}",
            self.port,
            self.log().display()
        )
    }

    fn exited(&self) -> Result<Option<std::process::ExitStatus>> {
        match self.child().as_mut() {
            Some(child) => Ok(child.try_wait()?),
            None => bail!("the API server is not running"),
        }
    }
}

impl Drop for ApiServer {
    fn drop(&mut self) {
        let _ = self.kill();
    }
}

/// Compacts the cluster's etcd at its current revision (physically: the old revisions are
/// gone) and returns that revision.
pub fn compact(cluster: &Cluster) -> Result<i64> {
    let dir = cluster
        .dir
        .as_ref()
        .context("compaction needs a cluster the harness started (not EBB_E2E_KUBECONFIG)")?;
    let binary = cluster_binary();
    let out = Command::new(&binary)
        .arg("etcd-compact")
        .arg("--dir")
        .arg(dir)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("run {} etcd-compact", binary.display()))?;
    if !out.status.success() {
        bail!(
            "ebb-cluster etcd-compact: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let text = String::from_utf8(out.stdout)?;
    text.trim()
        .parse()
        .with_context(|| format!("ebb-cluster etcd-compact printed {text:?}"))
}

/// Restarts the cluster's main kube-apiserver (kill -9, same port, same etcd: the data stays)
/// and waits until its supervisor has seen `/readyz` answer 200 again: that Instant (within the
/// supervisor's 200 ms polling).
pub fn restart_main(cluster: &Cluster) -> Result<Instant> {
    cluster.restart_apiserver(READY_TIMEOUT)
}

/// Whether a request failed because nothing listened.
fn refused(error: &kube::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = source {
        if let Some(io) = e.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::ConnectionRefused
        {
            return true;
        }
        source = e.source();
    }
    false
}

fn tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

/// Spawns `command` from a thread that lives as long as this process: `ebb-cluster apiserver`
/// asks for SIGKILL when the thread that started it ends (PR_SET_PDEATHSIG), and a test's
/// runtime threads end before the process does.
fn spawn_long_lived(command: Command) -> std::io::Result<Child> {
    type Job = (Command, mpsc::Sender<std::io::Result<Child>>);
    static SPAWNER: OnceLock<mpsc::Sender<Job>> = OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("ebb-e2e-spawner".into())
            .spawn(move || {
                for (mut command, reply) in rx {
                    let _ = reply.send(command.spawn());
                }
            })
            .expect("spawner thread");
        tx
    });
    let (reply, answer) = mpsc::channel();
    let gone = || std::io::Error::other("spawner thread gone");
    spawner.send((command, reply)).map_err(|_| gone())?;
    answer.recv().map_err(|_| gone())?
}
