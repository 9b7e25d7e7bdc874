//! A controller binary running as a child process of the test.

use std::fs::File;
use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::rbac::Identity;
use crate::work_dir;

/// A running controller binary (killed when dropped).
pub struct Controller {
    pub binary: String,
    /// The identity the leader election uses (`POD_NAME`).
    pub pod_name: String,
    pub metrics_addr: SocketAddr,
    pub log: PathBuf,
    child: Child,
}

/// The directory holding the workspace's binaries: `EBB_BIN_DIR`, else the profile directory of
/// this test executable (`target/debug`, wherever `CARGO_TARGET_DIR` puts it).
pub fn bin_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("EBB_BIN_DIR") {
        return PathBuf::from(dir);
    }
    let exe = std::env::current_exe().expect("test executable path");
    // target/debug/deps/<test> -> target/debug
    exe.parent()
        .and_then(|deps| deps.parent())
        .expect("test executable lives in <target>/<profile>/deps")
        .to_path_buf()
}

/// The environment the controllers' image sets (the Dockerfile's final stage's `ENV KEY=VALUE`
/// lines), which a pod of the chart runs with and so a controller under test does too.
fn image_env() -> Vec<(String, String)> {
    let dockerfile = std::fs::read_to_string(crate::repo_root().join("Dockerfile"))
        .unwrap_or_else(|e| panic!("read the repository's Dockerfile: {e}"));
    let final_stage = dockerfile
        .rsplit_once("\nFROM ")
        .map_or(dockerfile.as_str(), |(_, last)| last);
    final_stage
        .lines()
        .filter_map(|l| l.strip_prefix("ENV "))
        .filter_map(|kv| kv.trim().split_once('='))
        .map(|(k, v)| (k.to_owned(), v.trim_matches('"').to_owned()))
        .collect()
}

fn free_port() -> Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// `path` as a pod of `identity` would run it: its kubeconfig, `POD_NAME`/`POD_NAMESPACE`, and
/// no EBB_*/LABEL_SELECTOR/KUBE* from the test's environment.
fn pod_command(
    path: &std::path::Path,
    identity: &Identity,
    kubeconfig: &std::path::Path,
    pod_name: &str,
) -> Command {
    let mut cmd = Command::new(path);
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy().into_owned();
        if key.starts_with("EBB_") || key == "LABEL_SELECTOR" || key.starts_with("KUBE") {
            cmd.env_remove(key);
        }
    }
    let binary = path.file_name().unwrap_or_default().to_string_lossy();
    cmd.envs(image_env());
    cmd.env("KUBECONFIG", kubeconfig)
        .env("POD_NAME", pod_name)
        .env("POD_NAMESPACE", &identity.namespace)
        // The Lease the chart's Role names (its resourceNames): the release's, as the chart
        // passes it. A `--lease-name` among a test's arguments wins.
        .env("EBB_LEASE_NAME", &identity.release)
        .env(
            "RUST_LOG",
            format!("info,{}=debug,ebb_runtime=debug", binary.replace('-', "_")),
        );
    cmd
}

/// Runs `binary` with `args` to its end as a pod of `identity` (a Job, such as the charts'
/// pre-delete `cleanup`), `--lease-namespace` set to the identity's namespace after `args`.
///
/// # Errors
/// The binary is missing or cannot be started.
pub fn run_job(binary: &str, identity: &Identity, args: &[&str]) -> Result<std::process::Output> {
    let path = bin_dir().join(binary);
    if !path.exists() {
        bail!("{} is missing: build the controllers first", path.display());
    }
    let output = pod_command(
        &path,
        identity,
        &identity.kubeconfig,
        &format!("{binary}-job"),
    )
    .args(args)
    .arg("--lease-namespace")
    .arg(&identity.namespace)
    .stdin(Stdio::null())
    .output()
    .with_context(|| format!("run {}", path.display()))?;
    Ok(output)
}

impl Controller {
    /// Starts `binary` as the ServiceAccount of `identity`, leader election in the identity's
    /// namespace, metrics and health on a free port, and `args` after that.
    pub fn start(
        binary: &str,
        identity: &Identity,
        pod_name: &str,
        args: &[&str],
    ) -> Result<Controller> {
        Self::start_with(binary, identity, &identity.kubeconfig, pod_name, args)
    }

    /// [`Controller::start`] with a kubeconfig of its own (see [`Identity::replica`]).
    pub fn start_with(
        binary: &str,
        identity: &Identity,
        kubeconfig: &std::path::Path,
        pod_name: &str,
        args: &[&str],
    ) -> Result<Controller> {
        Self::start_env(binary, identity, kubeconfig, pod_name, args, &[])
    }

    /// [`Controller::start_with`], with `env` set in the process's environment besides.
    pub fn start_env(
        binary: &str,
        identity: &Identity,
        kubeconfig: &std::path::Path,
        pod_name: &str,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Result<Controller> {
        let path = bin_dir().join(binary);
        if !path.exists() {
            bail!(
                "{} is missing: build the controllers first (`cargo build --workspace --bins`)",
                path.display()
            );
        }
        let metrics_addr: SocketAddr = format!("127.0.0.1:{}", free_port()?).parse()?;
        let log = work_dir().join(format!("{}-{pod_name}.log", identity.release));
        let out = File::create(&log)?;
        let mut cmd = pod_command(&path, identity, kubeconfig, pod_name);
        cmd.arg("--metrics-addr")
            .arg(metrics_addr.to_string())
            .arg("--lease-namespace")
            .arg(&identity.namespace)
            .args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out);
        let child = cmd
            .spawn()
            .with_context(|| format!("start {}", path.display()))?;
        Ok(Controller {
            binary: binary.into(),
            pod_name: pod_name.into(),
            metrics_addr,
            log,
            child,
        })
    }

    /// [`Controller::start`], then waits until it is ready (a test helper: panics with the
    /// controller's log on failure).
    pub async fn ready(
        binary: &str,
        identity: &Identity,
        pod_name: &str,
        args: &[&str],
    ) -> Controller {
        let mut controller = Self::start(binary, identity, pod_name, args)
            .unwrap_or_else(|e| panic!("start {binary}: {e:#}"));
        if let Err(e) = controller.wait_ready(Duration::from_secs(30)).await {
            panic!("{binary} never became ready: {e:#}");
        }
        controller
    }

    /// SIGTERM, and asserts a clean exit within 10 s (a test helper).
    pub async fn stop(mut self) {
        self.terminate()
            .unwrap_or_else(|e| panic!("SIGTERM to {}: {e}", self.binary));
        match self.wait_exit(Duration::from_secs(10)).await {
            Ok(status) => assert!(
                status.success(),
                "{} exited with {status}:\n{}",
                self.binary,
                self.log_tail()
            ),
            Err(e) => panic!("{e}\n{}", self.log_tail()),
        }
    }

    /// GET `path` of the process's metrics/health server: status and body.
    pub fn get(&self, path: &str) -> Result<(u16, String)> {
        self.get_as(path, None)
    }

    /// [`Controller::get`] with `Authorization: Bearer <token>` when a token is given.
    pub fn get_as(&self, path: &str, bearer: Option<&str>) -> Result<(u16, String)> {
        crate::http_get(&format!("http://{}{path}", self.metrics_addr), bearer)
    }

    /// Waits until `/readyz` answers 200 (the controller's caches are warm).
    pub async fn wait_ready(&mut self, timeout: Duration) -> Result<Duration> {
        let start = Instant::now();
        while start.elapsed() < timeout {
            if let Some(status) = self.child.try_wait()? {
                bail!(
                    "{} exited before ready ({status}):\n{}",
                    self.binary,
                    self.log_tail()
                );
            }
            if let Ok((200, _)) = self.get("/readyz") {
                return Ok(start.elapsed());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        bail!(
            "{} not ready after {timeout:?}:\n{}",
            self.binary,
            self.log_tail()
        )
    }

    /// `/healthz`'s and `/readyz`'s status codes.
    pub fn health(&self) -> Result<(u16, u16)> {
        Ok((self.get("/healthz")?.0, self.get("/readyz")?.0))
    }

    /// `/metrics`, parsed as the Prometheus text format.
    pub fn metrics(&self) -> Result<prometheus_parse::Scrape> {
        self.metrics_where(|_| true)
    }

    /// `/metrics` with only the lines `keep` wants parsed.
    fn metrics_where(&self, keep: impl Fn(&str) -> bool) -> Result<prometheus_parse::Scrape> {
        let (status, body) = self.get("/metrics")?;
        if status != 200 {
            bail!("/metrics answered {status}");
        }
        let lines = body.lines().filter(|l| keep(l)).map(|l| Ok(l.to_owned()));
        Ok(prometheus_parse::Scrape::parse(lines)?)
    }

    /// The sum of a metric's samples whose labels include all of `labels`. Only that metric's
    /// lines are parsed: with per-object series a scrape of 100 000 objects is millions of lines.
    pub fn metric(&self, name: &str, labels: &[(&str, &str)]) -> Result<f64> {
        let scrape = self.metrics_where(|l| {
            l.starts_with('#')
                || l.strip_prefix(name)
                    .is_some_and(|rest| rest.starts_with(['{', ' ']))
        })?;
        let mut sum = 0.0;
        let mut found = false;
        for sample in scrape.samples.iter().filter(|s| s.metric == name) {
            if labels.iter().all(|(k, v)| sample.labels.get(k) == Some(*v)) {
                found = true;
                sum += match sample.value {
                    prometheus_parse::Value::Counter(v)
                    | prometheus_parse::Value::Gauge(v)
                    | prometheus_parse::Value::Untyped(v) => v,
                    _ => 0.0,
                };
            }
        }
        if !found {
            bail!("no sample of {name} with {labels:?}");
        }
        Ok(sum)
    }

    /// The count of a histogram's samples whose labels include all of `labels` (summed), as
    /// [`Controller::metric`] parses only that metric's lines.
    pub fn histogram_count(&self, name: &str, labels: &[(&str, &str)]) -> Result<f64> {
        let scrape = self.metrics_where(|l| {
            l.starts_with('#')
                || l.strip_prefix(name)
                    .is_some_and(|rest| rest.starts_with(['_', '{', ' ']))
        })?;
        let mut sum = 0.0;
        let mut found = false;
        for sample in scrape.samples.iter().filter(|s| s.metric == name) {
            if let prometheus_parse::Value::Histogram(buckets) = &sample.value
                && labels.iter().all(|(k, v)| sample.labels.get(k) == Some(*v))
            {
                found = true;
                sum += buckets.last().map_or(0.0, |b| b.count);
            }
        }
        if !found {
            bail!("no histogram {name} with {labels:?}");
        }
        Ok(sum)
    }

    /// Sends SIGTERM (a graceful stop: the Lease is released).
    pub fn terminate(&self) -> Result<()> {
        kill(Pid::from_raw(self.child.id() as i32), Signal::SIGTERM)?;
        Ok(())
    }

    /// Kills the process outright (`kill -9`): nothing is released.
    pub fn kill(&mut self) -> Result<()> {
        self.child.kill()?;
        self.child.wait()?;
        Ok(())
    }

    /// Waits for the process to exit.
    pub async fn wait_exit(&mut self, timeout: Duration) -> Result<ExitStatus> {
        let start = Instant::now();
        while start.elapsed() < timeout {
            if let Some(status) = self.child.try_wait()? {
                return Ok(status);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        bail!("{} still running after {timeout:?}", self.binary)
    }

    /// The process's resident memory in KiB (from /proc).
    pub fn rss_kib(&self) -> Result<u64> {
        self.status_kib("VmRSS:")
    }

    /// The process's resident memory as the kernel splits it, in KiB: anonymous (heap, stacks:
    /// what the process allocated and its allocator kept) and file-backed (the binary and its
    /// libraries, mapped and touched).
    pub fn rss_split_kib(&self) -> Result<(u64, u64)> {
        Ok((self.status_kib("RssAnon:")?, self.status_kib("RssFile:")?))
    }

    /// A `/proc/<pid>/status` field given in kB, e.g. `VmRSS:`.
    fn status_kib(&self, field: &str) -> Result<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))?;
        status
            .lines()
            .find_map(|l| l.strip_prefix(field))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .with_context(|| format!("no {field} in /proc status"))
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// CPU time the process has used so far, user and system (from `/proc/<pid>/stat`).
    pub fn cpu_time(&self) -> Result<Duration> {
        cpu_time_of(&self.child.id().to_string())
    }

    /// Whether the process is still running.
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// The last lines of the controller's log (for failure messages).
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// CPU time process `pid` (a number, or `self`) has used so far, user and system (from
/// `/proc/<pid>/stat`).
pub fn cpu_time_of(pid: &str) -> Result<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // After the command name in parentheses: state is field 3, utime 14, stime 15.
    let rest = stat.rsplit_once(')').context("no ) in /proc stat")?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = fields
        .get(11..13)
        .context("short /proc stat")?
        .iter()
        .map(|f| f.parse::<u64>())
        .sum::<Result<u64, _>>()?;
    // /proc counts in USER_HZ, 100 per second on Linux whatever the kernel's own tick.
    Ok(Duration::from_millis(ticks * 10))
}
