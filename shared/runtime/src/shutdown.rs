//! Graceful shutdown: one token that every task watches.
//!
//! SIGTERM (Kubernetes stopping the pod), SIGINT (Ctrl-C), a lost leader lease or a fatal error all
//! trigger the same [`Shutdown`]; the controller loop, the HTTP server and leader election stop on it.

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Could not install the signal handlers.
#[derive(Debug, thiserror::Error)]
#[error("cannot listen for {signal}: {source}")]
pub struct ShutdownError {
    signal: &'static str,
    #[source]
    source: std::io::Error,
}

/// A cloneable shutdown trigger; all clones observe the same trigger.
#[derive(Clone, Debug, Default)]
pub struct Shutdown {
    token: CancellationToken,
}

impl Shutdown {
    /// A shutdown that has not been triggered.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks everything watching this shutdown to stop. Idempotent.
    pub fn trigger(&self) {
        self.token.cancel();
    }

    /// Whether shutdown has been triggered.
    pub fn is_triggered(&self) -> bool {
        self.token.is_cancelled()
    }

    /// Completes once shutdown is triggered (at once if it already was).
    pub async fn cancelled(&self) {
        self.token.cancelled().await;
    }

    /// The underlying token, for APIs that take one (e.g. `kube::runtime::Controller`'s
    /// `graceful_shutdown_on`).
    pub fn token(&self) -> CancellationToken {
        self.token.clone()
    }

    /// A new shutdown that triggers on SIGTERM or SIGINT. Must be called inside a Tokio runtime.
    pub fn on_signals() -> Result<Self, ShutdownError> {
        let shutdown = Self::new();
        shutdown.trigger_on_signals()?;
        Ok(shutdown)
    }

    /// Spawns a task that triggers this shutdown on SIGTERM or SIGINT; the task ends when the
    /// shutdown is triggered for any reason. Must be called inside a Tokio runtime.
    pub fn trigger_on_signals(&self) -> Result<JoinHandle<()>, ShutdownError> {
        // Register the handlers before spawning, so a failure is reported to the caller.
        let signals = Signals::install()?;
        let shutdown = self.clone();
        Ok(tokio::spawn(async move {
            tokio::select! {
                name = signals.recv() => {
                    tracing::info!(signal = name, "shutting down");
                    shutdown.trigger();
                }
                () = shutdown.cancelled() => {}
            }
        }))
    }
}

#[cfg(unix)]
struct Signals {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
}

#[cfg(unix)]
impl Signals {
    fn install() -> Result<Self, ShutdownError> {
        use tokio::signal::unix::{SignalKind, signal};
        let term = signal(SignalKind::terminate()).map_err(|source| ShutdownError {
            signal: "SIGTERM",
            source,
        })?;
        let int = signal(SignalKind::interrupt()).map_err(|source| ShutdownError {
            signal: "SIGINT",
            source,
        })?;
        Ok(Self { term, int })
    }

    async fn recv(mut self) -> &'static str {
        tokio::select! {
            _ = self.term.recv() => "SIGTERM",
            _ = self.int.recv() => "SIGINT",
        }
    }
}

#[cfg(not(unix))]
struct Signals;

#[cfg(not(unix))]
impl Signals {
    fn install() -> Result<Self, ShutdownError> {
        Ok(Self)
    }

    async fn recv(self) -> &'static str {
        // Without Ctrl-C support there is nothing to wait for but an explicit trigger.
        match tokio::signal::ctrl_c().await {
            Ok(()) => "Ctrl-C",
            Err(_) => std::future::pending::<&'static str>().await,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn clones_observe_the_trigger() {
        let shutdown = Shutdown::new();
        let other = shutdown.clone();
        assert!(!other.is_triggered());
        let waiter = tokio::spawn(async move { other.cancelled().await });
        shutdown.trigger();
        shutdown.trigger();
        tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .unwrap()
            .unwrap();
        assert!(shutdown.is_triggered());
        // Already triggered: completes at once.
        shutdown.cancelled().await;
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn signal_task_ends_when_triggered_otherwise() {
        let shutdown = Shutdown::new();
        let task = shutdown.trigger_on_signals().unwrap();
        shutdown.trigger();
        tokio::time::timeout(Duration::from_secs(5), task)
            .await
            .unwrap()
            .unwrap();
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn sigterm_triggers() {
        let shutdown = Shutdown::on_signals().unwrap();
        // The handler is installed, so this SIGTERM is caught instead of ending the test process.
        let sent = std::process::Command::new("kill")
            .args(["-TERM", &std::process::id().to_string()])
            .status();
        if !sent.is_ok_and(|s| s.success()) {
            eprintln!("skipping: no `kill` binary to send SIGTERM with");
            return;
        }
        tokio::time::timeout(Duration::from_secs(5), shutdown.cancelled())
            .await
            .unwrap();
    }
}
