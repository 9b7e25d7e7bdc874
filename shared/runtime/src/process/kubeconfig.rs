//! Which cluster a controller, or its `cleanup`, talks to.
//!
//! In a pod nothing needs saying: the service account's token and the `kubernetes` Service are
//! used (kube's `Config::infer`, which reads `KUBECONFIG` or `~/.kube/config` first when one is
//! there). From a laptop, `--kubeconfig` names the file and `--context` the context in it, as
//! kubectl and controller-runtime take them.

use std::path::PathBuf;

use kube::config::{Config, KubeConfigOptions, Kubeconfig};

use crate::lead::leader::identity;

/// The `--help` heading of the flags that say which cluster to talk to, and how.
pub(crate) const CLUSTER: &str = "Cluster";

/// The one message of an error chain worth printing: the cause right under the top (kube's
/// "failed to infer config: in-cluster: (…), kubeconfig: (…)"), or the error itself.
pub(crate) fn innermost_summary(error: &(dyn std::error::Error + 'static)) -> String {
    error.source().unwrap_or(error).to_string()
}

/// `--kubeconfig` and `--context`.
#[derive(clap::Args, Debug, Clone, Default, PartialEq, Eq)]
pub struct ClusterArgs {
    /// A kubeconfig file to use instead of the service account of the pod (and of `KUBECONFIG`
    /// or ~/.kube/config).
    #[arg(help_heading = CLUSTER, long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,

    /// The kubeconfig context to use [default: the file's current-context].
    #[arg(help_heading = CLUSTER, long, value_name = "NAME")]
    pub context: Option<String>,
}

/// Why no client configuration could be made.
#[derive(Debug, thiserror::Error)]
pub enum ClusterConfigError {
    /// `--kubeconfig` or `--context` named something unusable.
    #[error("{what}: {reason}")]
    Kubeconfig {
        /// The flags as given (`--kubeconfig /x --context y`).
        what: String,
        /// Why, in kube's words (innermost cause).
        reason: String,
    },
    /// Neither flag was given, and neither a kubeconfig nor a pod's service account was found.
    #[error(
        "{0}; run in a pod with a service account, or name a kubeconfig file (--kubeconfig or \
         KUBECONFIG)"
    )]
    Infer(String),
}

impl ClusterArgs {
    /// The client configuration these flags ask for.
    ///
    /// # Errors
    /// [`ClusterConfigError`] naming the flag at fault, or why nothing was found.
    pub async fn config(&self) -> Result<Config, ClusterConfigError> {
        if self.kubeconfig.is_none() && self.context.is_none() {
            return Config::infer()
                .await
                .map_err(|e| ClusterConfigError::Infer(innermost_summary(&e)));
        }
        let options = KubeConfigOptions {
            context: self.context.clone(),
            ..KubeConfigOptions::default()
        };
        let config = match &self.kubeconfig {
            Some(path) => match Kubeconfig::read_from(path) {
                Ok(file) => Config::from_custom_kubeconfig(file, &options).await,
                Err(e) => Err(e),
            },
            None => Config::from_kubeconfig(&options).await,
        };
        config.map_err(|e| ClusterConfigError::Kubeconfig {
            what: self.describe(),
            reason: innermost_summary(&e),
        })
    }

    /// [`Self::config`], its requests saying who sends them ([`user_agent`]), each request sent
    /// once.
    ///
    /// kube's client retries a 429, 503 or 504 itself by default, up to 15 times over minutes
    /// (5 ms doubling, or the server's `Retry-After`), inside every layer ebb adds: the server's
    /// absence would reach [`crate::ApiContact`] minutes late, the retries would pass the
    /// client-side rate limit and the request count, a reconcile would hold its slot meanwhile,
    /// and a 504'd create would be sent again. ebb's own policy answers each failure instead: the
    /// frame's backoff (never sooner than a 429's `Retry-After`), the watches' retry.
    ///
    /// # Errors
    /// As [`Self::config`].
    pub async fn config_for(&self, program: &str) -> Result<Config, ClusterConfigError> {
        let mut config = self.config().await?;
        config.default_retry = false;
        let identity = identity();
        if let Ok(value) = http::HeaderValue::from_str(&user_agent(program, identity.as_deref())) {
            config.headers.push((http::header::USER_AGENT, value));
        }
        Ok(config)
    }

    fn describe(&self) -> String {
        let mut out = Vec::new();
        if let Some(path) = &self.kubeconfig {
            out.push(format!("--kubeconfig {}", path.display()));
        }
        if let Some(context) = &self.context {
            out.push(format!("--context {context}"));
        }
        out.join(" ")
    }
}

/// The `User-Agent` of `program`'s requests: `ebb-<program>/<version> (<pod>)`, so the API
/// server's audit log tells one replica's requests from another's (client-go says
/// `<binary>/<version> (<os>/<arch>) kubernetes/<commit>`; the pod is what tells replicas apart).
/// Characters a header cannot carry become `_`.
pub fn user_agent(program: &str, pod: Option<&str>) -> String {
    let version = env!("CARGO_PKG_VERSION");
    let text = match pod {
        Some(pod) => format!("ebb-{program}/{version} ({pod})"),
        None => format!("ebb-{program}/{version}"),
    };
    text.chars()
        .map(|c| {
            if c.is_ascii_graphic() || c == ' ' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    const TWO_CONTEXTS: &str = r"
apiVersion: v1
kind: Config
current-context: prod
clusters:
- name: prod
  cluster: {server: 'https://prod.example:6443'}
- name: staging
  cluster: {server: 'https://staging.example:6443'}
users:
- name: me
  user: {token: abc}
contexts:
- name: prod
  context: {cluster: prod, user: me, namespace: shop}
- name: staging
  context: {cluster: staging, user: me}
";

    #[test]
    fn the_user_agent_names_the_program_and_the_pod() {
        let version = env!("CARGO_PKG_VERSION");
        assert_eq!(
            user_agent("service-scaler", Some("ebb-service-scaler-7d9f-x2k4")),
            format!("ebb-service-scaler/{version} (ebb-service-scaler-7d9f-x2k4)")
        );
        assert_eq!(
            user_agent("cleanup", None),
            format!("ebb-cleanup/{version}")
        );
        assert_eq!(
            user_agent("x", Some("p\u{e9}d\n")),
            format!("ebb-x/{version} (p_d_)")
        );
    }

    #[tokio::test]
    async fn requests_carry_the_user_agent() {
        let file = file();
        let config = args(file.path(), None)
            .config_for("service-scaler")
            .await
            .unwrap();
        let agent = config
            .headers
            .iter()
            .find(|(name, _)| name == http::header::USER_AGENT)
            .map(|(_, value)| value.to_str().unwrap().to_owned())
            .unwrap();
        assert!(agent.starts_with("ebb-service-scaler/"), "{agent}");
    }

    /// A 503 reaches the caller after one attempt: kube's own retry (15 attempts over minutes)
    /// would hide the server's absence from everything ebb layers around the client.
    #[tokio::test]
    async fn a_failed_request_is_sent_once() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let attempts = std::sync::Arc::new(AtomicUsize::new(0));
        let counted = attempts.clone();
        tokio::spawn(async move {
            let body = r#"{"kind":"Status","apiVersion":"v1","status":"Failure","code":503,"reason":"ServiceUnavailable","message":"away"}"#;
            while let Ok((mut stream, _)) = listener.accept().await {
                counted.fetch_add(1, Ordering::SeqCst);
                let mut request = vec![0; 4096];
                let _ = stream.read(&mut request).await;
                let answer = format!(
                    "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n\
                     content-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(answer.as_bytes()).await;
            }
        });
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(
            file.path(),
            TWO_CONTEXTS.replace(
                "https://prod.example:6443",
                &format!("http://127.0.0.1:{port}"),
            ),
        )
        .unwrap();
        let config = args(file.path(), None)
            .config_for("service-scaler")
            .await
            .unwrap();
        let client = kube::Client::try_from(config).unwrap();
        let api: kube::Api<k8s_openapi::api::core::v1::ConfigMap> =
            kube::Api::namespaced(client, "shop");
        let answer = tokio::time::timeout(std::time::Duration::from_secs(10), api.get("cm"))
            .await
            .expect("answered within 10 s, not retried for minutes");
        assert!(
            matches!(&answer, Err(kube::Error::Api(status)) if status.code == 503),
            "{answer:?}"
        );
        assert_eq!(attempts.load(Ordering::SeqCst), 1);
    }

    fn file() -> tempfile::NamedTempFile {
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), TWO_CONTEXTS).unwrap();
        file
    }

    fn args(path: &std::path::Path, context: Option<&str>) -> ClusterArgs {
        ClusterArgs {
            kubeconfig: Some(path.to_owned()),
            context: context.map(str::to_owned),
        }
    }

    #[tokio::test]
    async fn the_file_s_current_context_unless_one_is_named() {
        let file = file();
        let config = args(file.path(), None).config().await.unwrap();
        assert_eq!(config.cluster_url.to_string(), "https://prod.example:6443/");
        assert_eq!(config.default_namespace, "shop");

        let config = args(file.path(), Some("staging")).config().await.unwrap();
        assert_eq!(
            config.cluster_url.to_string(),
            "https://staging.example:6443/"
        );
        assert_eq!(config.default_namespace, "default");
    }

    #[tokio::test]
    async fn a_missing_file_or_context_is_named() {
        let file = file();
        let err = args(file.path(), Some("dev")).config().await.unwrap_err();
        let text = err.to_string();
        assert!(text.contains("--context dev"), "{text}");
        assert!(text.contains("dev"), "{text}");

        let err = args(std::path::Path::new("/nonexistent/kubeconfig"), None)
            .config()
            .await
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("--kubeconfig /nonexistent/kubeconfig: "),
            "{err}"
        );
    }
}
