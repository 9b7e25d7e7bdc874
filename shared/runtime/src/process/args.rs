//! Flags (with environment fallbacks) that every ebb controller binary takes.
//!
//! Embed [`CommonArgs`] in a controller's own `clap::Parser` with `#[command(flatten)]`.
//! controller-runtime's names for the same flags (`--leader-elect`, `--metrics-bind-address`)
//! and kube-controller-manager's (`--leader-elect-resource-name`, `--leader-elect-resource-namespace`)
//! are accepted as aliases, so a Deployment written for a Go operator's habits works; `--help`
//! groups the flags under headings.

use std::net::SocketAddr;

use clap::builder::{BoolishValueParser, FalseyValueParser};

use crate::lead::leader::LeaseName;
use crate::lead::overlap::Scope;
use crate::process::kubeconfig::CLUSTER;
use crate::serve::telemetry::LogFormat;

/// `--help` headings of the flags every controller takes.
/// How many reconciles one controller runs at once.
///
/// kube's default is no limit: a thousand objects created at once ran a thousand reconciles at
/// once, each holding its reads and writes in flight, and the process kept that peak as resident
/// memory. Every reconcile reads and writes without waiting on anything but the API server, so a
/// few at a time keep it busy: a Controller still runs one reconcile per object at most, and the
/// rest wait in its queue, merged per object.
pub const CONCURRENT_RECONCILES: u16 = 8;

const SCOPE: &str = "What to manage";
const LEADER: &str = "Leader election";
const SERVING: &str = "Metrics and health";
const OUTPUT: &str = "Logging";
const WRITES: &str = "Writes";

/// Flags shared by every controller.
#[derive(clap::Args, Debug, Clone, PartialEq, Eq)]
pub struct CommonArgs {
    /// Which cluster to talk to (`--kubeconfig`, `--context`).
    #[command(flatten)]
    pub cluster: crate::process::kubeconfig::ClusterArgs,

    /// Namespaces to watch; repeat the flag or separate with commas. None means cluster-wide.
    #[arg(
        help_heading = SCOPE,
        long = "namespace",
        env = "EBB_NAMESPACES",
        value_delimiter = ',',
        value_name = "NAMESPACE"
    )]
    pub namespace: Vec<String>,

    /// Only manage objects matching this label selector (e.g. `team=a,tier!=db`); udaan's
    /// `LABEL_SELECTOR` works too.
    #[arg(
        help_heading = SCOPE,
        long,
        env = "EBB_LABEL_SELECTOR",
        value_name = "SELECTOR"
    )]
    pub label_selector: Option<String>,

    /// udaan's name for `--label-selector` (its environment variable `LABEL_SELECTOR`, kept so
    /// udaan's Deployments work unchanged); `--label-selector` wins when both are set.
    #[arg(long, env = "LABEL_SELECTOR", value_name = "SELECTOR", hide = true)]
    pub udaan_label_selector: Option<String>,

    /// Elect a leader through a coordination.k8s.io Lease before writing; `--leader-election=false`
    /// turns it off (single replica only).
    #[arg(
        help_heading = LEADER,
        long,
        visible_alias = "leader-elect",
        env = "EBB_LEADER_ELECTION",
        default_value_t = true,
        value_parser = BoolishValueParser::new(),
        action = clap::ArgAction::Set,
        // `--leader-elect` alone means true, as in controller-runtime.
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "true",
        value_name = "BOOL"
    )]
    pub leader_election: bool,

    /// Name of the leader-election Lease [default: the controller's name].
    #[arg(
        help_heading = LEADER,
        long,
        visible_alias = "leader-elect-resource-name",
        env = "EBB_LEASE_NAME",
        value_name = "NAME"
    )]
    pub lease_name: Option<String>,

    /// Namespace of the leader-election Lease (in a pod: its own namespace via POD_NAMESPACE).
    #[arg(
        help_heading = LEADER,
        long,
        visible_alias = "leader-elect-resource-namespace",
        env = "POD_NAMESPACE",
        default_value = "default",
        value_name = "NAMESPACE"
    )]
    pub lease_namespace: String,

    /// Address of the HTTP server for /metrics (and /healthz and /readyz, unless --health-addr).
    #[arg(
        help_heading = SERVING,
        long,
        visible_alias = "metrics-bind-address",
        env = "EBB_METRICS_ADDR",
        default_value = "0.0.0.0:8080",
        value_name = "ADDR"
    )]
    pub metrics_addr: SocketAddr,

    /// /metrics answers only callers whose bearer token the API server authenticates
    /// (TokenReview) and allows `get` on the non-resource URL /metrics (SubjectAccessReview).
    /// /healthz and /readyz stay open.
    #[arg(
        help_heading = SERVING,
        long,
        env = "EBB_METRICS_AUTH",
        value_parser = BoolishValueParser::new(),
        default_value_t = false,
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "true",
        value_name = "BOOL"
    )]
    pub metrics_auth: bool,

    /// With --metrics-auth: how long the API server's verdict on a caller is kept, in seconds.
    /// A caller it vouched for keeps its verdict past this while the API server cannot be asked.
    #[arg(
        help_heading = SERVING,
        long,
        env = "EBB_METRICS_AUTH_CACHE_TTL",
        default_value_t = 60,
        value_name = "SECONDS"
    )]
    pub metrics_auth_cache_ttl: u64,

    /// Serve /metrics over TLS with `tls.crt` and `tls.key` from this directory (a mounted
    /// kubernetes.io/tls Secret), re-read when they change. Without it, /metrics is plain HTTP.
    #[arg(
        help_heading = SERVING,
        long,
        visible_alias = "metrics-cert-path",
        env = "EBB_METRICS_CERT_DIR",
        value_name = "DIR"
    )]
    pub metrics_cert_dir: Option<std::path::PathBuf>,

    /// Address of a plain-HTTP server for /healthz and /readyz alone (the kubelet's probes), so
    /// that /metrics can require TLS and a token. Without it, both are served beside /metrics.
    #[arg(
        help_heading = SERVING,
        long,
        visible_alias = "health-probe-bind-address",
        env = "EBB_HEALTH_ADDR",
        value_name = "ADDR"
    )]
    pub health_addr: Option<SocketAddr>,

    /// Log line format.
    #[arg(
        help_heading = OUTPUT,
        long,
        env = "EBB_LOG_FORMAT",
        value_enum,
        default_value_t = LogFormat::Text
    )]
    pub log_format: LogFormat,

    /// Decide and record the intended change as an Event and in status, but write nothing else.
    // As an env var, anything but a false-like value ("", false, no, off, 0) enables it: a typo
    // errs on the side of not writing.
    #[arg(
        help_heading = WRITES,
        long,
        env = "EBB_DRY_RUN",
        value_parser = FalseyValueParser::new()
    )]
    pub dry_run: bool,

    /// How many objects a controller reconciles at once; each makes its requests in order.
    #[arg(
        help_heading = WRITES,
        long,
        env = "EBB_CONCURRENT_RECONCILES",
        default_value_t = CONCURRENT_RECONCILES,
        value_parser = clap::value_parser!(u16).range(1..),
        value_name = "N"
    )]
    pub concurrent_reconciles: u16,

    /// Most requests a second to the API server, on average (client-side). 0: no client-side
    /// limit, the API server's priority and fairness alone (controller-runtime's default since
    /// v0.21, on SIG API Machinery's advice).
    #[arg(
        help_heading = CLUSTER,
        long,
        env = "EBB_KUBE_API_QPS",
        default_value_t = 0,
        value_name = "QPS"
    )]
    pub kube_api_qps: u32,

    /// With --kube-api-qps: how many requests may go at once after a quiet spell [default: twice
    /// the QPS].
    #[arg(help_heading = CLUSTER, long, env = "EBB_KUBE_API_BURST", value_name = "N")]
    pub kube_api_burst: Option<u32>,

    /// Where time zones are read from (see [`crate::cli::tz`]).
    #[command(flatten)]
    pub tz: crate::cli::tz::TzArgs,
}

/// The flags of a controller that takes only the common ones (its `RunArgs`).
#[derive(clap::Args, Debug, Clone, PartialEq, Eq)]
pub struct CommonOnly {
    /// Flags every ebb controller takes.
    #[command(flatten)]
    pub common: CommonArgs,
}

impl AsRef<CommonArgs> for CommonOnly {
    fn as_ref(&self) -> &CommonArgs {
        &self.common
    }
}

impl CommonArgs {
    /// The client-side limit on requests to the API server, if any (`--kube-api-qps`,
    /// `--kube-api-burst`).
    pub fn api_rate(&self) -> Option<crate::watch::contact::ApiRate> {
        crate::watch::contact::ApiRate::new(self.kube_api_qps, self.kube_api_burst)
    }

    /// The namespaces to watch, trimmed, without blanks or duplicates; empty means cluster-wide.
    pub fn watched_namespaces(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for ns in self.namespace.iter().map(|n| n.trim()) {
            if !ns.is_empty() && !out.iter().any(|seen| seen == ns) {
                out.push(ns.to_owned());
            }
        }
        out
    }

    /// The label selector (`--label-selector`, else udaan's `LABEL_SELECTOR`), or `None` when
    /// unset or blank.
    pub fn label_selector(&self) -> Option<&str> {
        [&self.label_selector, &self.udaan_label_selector]
            .into_iter()
            .filter_map(|s| s.as_deref().map(str::trim))
            .find(|s| !s.is_empty())
    }

    /// The scope of this install ([`Scope`]: which objects it manages, for
    /// [`crate::lead::overlap`]); `namespaced`: whether the controller's kind is namespaced (a
    /// cluster-scoped kind is watched everywhere whatever `--namespace` says).
    pub fn scope(&self, namespaced: bool) -> Scope {
        Scope {
            namespaces: if namespaced {
                self.watched_namespaces()
            } else {
                Vec::new()
            },
            label_selector: self.label_selector().map(str::to_owned),
        }
    }

    /// The Lease `controller` competes for (`--lease-namespace`, `--lease-name`), or `None` with
    /// `--leader-election=false`.
    pub fn lease(&self, controller: &str) -> Option<LeaseName> {
        self.leader_election.then(|| LeaseName {
            namespace: self.lease_namespace.clone(),
            name: self.lease_name_or(controller),
        })
    }

    /// The Lease name: `--lease-name`, else the controller's name.
    pub fn lease_name_or(&self, controller: &str) -> String {
        self.lease_name
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .unwrap_or(controller)
            .to_owned()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use clap::{CommandFactory, Parser};
    use std::process::Command;

    #[derive(Parser, Debug)]
    struct Cli {
        #[command(flatten)]
        common: CommonArgs,
    }

    const ENV_VARS: [&str; 9] = [
        "EBB_NAMESPACES",
        "EBB_LABEL_SELECTOR",
        "LABEL_SELECTOR",
        "EBB_LEASE_NAME",
        "EBB_LEADER_ELECTION",
        "POD_NAMESPACE",
        "EBB_METRICS_ADDR",
        "EBB_LOG_FORMAT",
        "EBB_DRY_RUN",
    ];
    const CHILD_MARKER: &str = "EBB_ARGS_TEST_CHILD";

    fn parse(argv: &[&str]) -> Result<CommonArgs, clap::Error> {
        Cli::try_parse_from(std::iter::once("ebb").chain(argv.iter().copied())).map(|c| c.common)
    }

    /// clap reads env fallbacks from the process environment, which tests must not mutate
    /// (`set_var` is unsafe). So env tests re-run themselves in a child process with a prepared
    /// environment; the child does the parsing and asserting.
    fn in_child(test: &str, env: &[(&str, &str)]) -> bool {
        if std::env::var_os(CHILD_MARKER).is_some() {
            return true;
        }
        let exe = std::env::current_exe().unwrap();
        let mut cmd = Command::new(exe);
        cmd.args([test, "--exact", "--test-threads=1"])
            .env(CHILD_MARKER, "1");
        for var in ENV_VARS {
            cmd.env_remove(var);
        }
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("1 passed"),
            "child run of {test} failed:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        false
    }

    #[test]
    fn defaults() {
        if !in_child("process::args::tests::defaults", &[]) {
            return;
        }
        let a = parse(&[]).unwrap();
        assert!(a.watched_namespaces().is_empty());
        assert_eq!(a.label_selector(), None);
        assert!(a.leader_election);
        assert_eq!(a.lease_name_or("service-scaler"), "service-scaler");
        assert_eq!(a.lease_namespace, "default");
        assert_eq!(a.metrics_addr, "0.0.0.0:8080".parse().unwrap());
        assert_eq!(a.log_format, LogFormat::Text);
        assert!(!a.dry_run);
    }

    #[test]
    fn flags() {
        // Every flag is given, so the environment cannot leak in.
        let a = parse(&[
            "--namespace",
            "a,b",
            "--namespace=c",
            "--namespace",
            " a ",
            "--label-selector",
            "team=x",
            "--leader-election=false",
            "--lease-name",
            "my-lease",
            "--lease-namespace",
            "ops",
            "--metrics-addr",
            "127.0.0.1:9000",
            "--log-format",
            "json",
            "--dry-run",
        ])
        .unwrap();
        assert_eq!(a.watched_namespaces(), ["a", "b", "c"]);
        assert_eq!(a.label_selector(), Some("team=x"));
        assert!(!a.leader_election);
        assert_eq!(a.lease_name_or("ctl"), "my-lease");
        assert_eq!(a.lease_namespace, "ops");
        assert_eq!(a.metrics_addr, "127.0.0.1:9000".parse().unwrap());
        assert_eq!(a.log_format, LogFormat::Json);
        assert!(a.dry_run);
    }

    #[test]
    fn env_fallbacks() {
        let env = [
            ("EBB_NAMESPACES", "x, y"),
            ("EBB_LABEL_SELECTOR", "app in (a,b)"),
            ("EBB_LEASE_NAME", "ebb-prod-service-scaler"),
            ("EBB_LEADER_ELECTION", "false"),
            ("POD_NAMESPACE", "ebb-system"),
            ("EBB_METRICS_ADDR", "[::1]:8081"),
            ("EBB_LOG_FORMAT", "json"),
            ("EBB_DRY_RUN", "true"),
        ];
        if !in_child("process::args::tests::env_fallbacks", &env) {
            return;
        }
        let a = parse(&[]).unwrap();
        assert_eq!(a.watched_namespaces(), ["x", "y"]);
        assert_eq!(a.label_selector(), Some("app in (a,b)"));
        assert_eq!(a.lease_name_or("service-scaler"), "ebb-prod-service-scaler");
        assert!(!a.leader_election);
        assert_eq!(a.lease_namespace, "ebb-system");
        assert_eq!(a.metrics_addr, "[::1]:8081".parse().unwrap());
        assert_eq!(a.log_format, LogFormat::Json);
        assert!(a.dry_run);

        // Flags win over the environment.
        let a = parse(&["--namespace", "z", "--leader-election=true"]).unwrap();
        assert_eq!(a.watched_namespaces(), ["z"]);
        assert!(a.leader_election);
    }

    /// The Lease a controller competes for is the flags' (the controller's name by default, a
    /// blank `--lease-name` too), and none without leader election; an install's scope names
    /// its namespaces only for a namespaced kind.
    #[test]
    fn lease_and_scope_come_from_the_flags() {
        if !in_child(
            "process::args::tests::lease_and_scope_come_from_the_flags",
            &[],
        ) {
            return;
        }
        let lease = |argv: &[&str]| parse(argv).unwrap().lease("service-scaler");
        let given = ["--lease-namespace", "ops", "--leader-election=true"];
        assert_eq!(
            lease(&given),
            Some(LeaseName {
                namespace: "ops".into(),
                name: "service-scaler".into(),
            })
        );
        let named = [&given[..], &["--lease-name", "ebb-prod"]].concat();
        assert_eq!(lease(&named).unwrap().name, "ebb-prod");
        let blank = [&given[..], &["--lease-name", " "]].concat();
        assert_eq!(lease(&blank).unwrap().name, "service-scaler");
        let off = ["--lease-namespace", "ops", "--leader-election=false"];
        assert_eq!(lease(&off), None);

        let a = parse(&["--namespace", "a,b", "--label-selector", "team=x"]).unwrap();
        assert_eq!(a.scope(true).namespaces, ["a", "b"]);
        assert_eq!(a.scope(true).label_selector.as_deref(), Some("team=x"));
        assert!(a.scope(false).namespaces.is_empty(), "cluster-scoped: all");
    }

    /// udaan's Deployments set `LABEL_SELECTOR`; it keeps working, and ebb's own name wins.
    #[test]
    fn udaans_label_selector_variable_still_works() {
        let env = [("LABEL_SELECTOR", "team=udaan")];
        if !in_child(
            "process::args::tests::udaans_label_selector_variable_still_works",
            &env,
        ) {
            return;
        }
        assert_eq!(parse(&[]).unwrap().label_selector(), Some("team=udaan"));
        let a = parse(&["--label-selector", "team=ebb"]).unwrap();
        assert_eq!(a.label_selector(), Some("team=ebb"));
    }

    #[test]
    fn empty_env_values_mean_unset() {
        let env = [
            ("EBB_NAMESPACES", ""),
            ("EBB_LABEL_SELECTOR", ""),
            ("LABEL_SELECTOR", ""),
            ("EBB_DRY_RUN", ""),
        ];
        if !in_child("process::args::tests::empty_env_values_mean_unset", &env) {
            return;
        }
        let a = parse(&[]).unwrap();
        assert!(a.watched_namespaces().is_empty());
        assert_eq!(a.label_selector(), None);
        assert!(!a.dry_run);
    }

    /// controller-runtime's and kube-controller-manager's names set the same fields.
    #[test]
    fn go_operator_flag_names_are_aliases() {
        let a = parse(&[
            "--leader-elect=false",
            "--leader-elect-resource-name",
            "my-lease",
            "--leader-elect-resource-namespace",
            "ops",
            "--metrics-bind-address",
            "127.0.0.1:9000",
            "--kubeconfig",
            "/tmp/k",
            "--context",
            "staging",
        ])
        .unwrap();
        assert!(!a.leader_election);
        assert_eq!(a.lease_name_or("ctl"), "my-lease");
        assert_eq!(a.lease_namespace, "ops");
        assert_eq!(a.metrics_addr, "127.0.0.1:9000".parse().unwrap());
        assert_eq!(
            a.cluster.kubeconfig.as_deref(),
            Some(std::path::Path::new("/tmp/k"))
        );
        assert_eq!(a.cluster.context.as_deref(), Some("staging"));
        // controller-runtime's names for the TLS directory and the probes' address.
        let served = parse(&[
            "--metrics-cert-path",
            "/certs",
            "--health-probe-bind-address",
            ":8081",
        ]);
        assert!(served.is_err(), "an address without a host is refused");
        let served = parse(&[
            "--metrics-cert-path",
            "/certs",
            "--health-probe-bind-address",
            "0.0.0.0:8081",
        ])
        .unwrap();
        assert_eq!(
            served.metrics_cert_dir.as_deref(),
            Some(std::path::Path::new("/certs"))
        );
        assert_eq!(served.health_addr, Some("0.0.0.0:8081".parse().unwrap()));
        let plain = parse(&[]).unwrap();
        assert_eq!((plain.metrics_cert_dir, plain.health_addr), (None, None));
        // A bare `--leader-elect` turns it on, as controller-runtime's flag does.
        assert!(parse(&["--leader-elect"]).unwrap().leader_election);
        assert!(!parse(&["--leader-election=false"]).unwrap().leader_election);
    }

    /// `--help` groups the flags: each common flag is under a heading.
    #[test]
    fn help_groups_the_flags() {
        let cmd = Cli::command();
        for arg in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
            assert!(
                arg.get_help_heading().is_some(),
                "{} has no heading",
                arg.get_id()
            );
        }
        let help = Cli::command().render_long_help().to_string();
        for heading in [CLUSTER, SCOPE, LEADER, SERVING, OUTPUT, WRITES] {
            assert!(
                help.contains(&format!("{heading}:")),
                "{heading} in\n{help}"
            );
        }
        assert!(help.contains("[alias: --leader-elect]"), "{help}");
        assert!(help.contains("[alias: --metrics-bind-address]"), "{help}");
    }

    #[test]
    fn rejects_bad_values() {
        assert!(parse(&["--log-format", "xml"]).is_err());
        assert!(parse(&["--metrics-addr", "localhost"]).is_err());
        assert!(parse(&["--leader-election=maybe"]).is_err());
    }

    #[test]
    fn every_flag_has_help() {
        let cmd = Cli::command();
        for arg in cmd.get_arguments() {
            assert!(arg.get_help().is_some(), "{} has no help", arg.get_id());
        }
    }
}
