//! Leader election on a `coordination.k8s.io/v1` Lease (via kube-lease-manager), switchable off.
//!
//! Per the design: election gates writes, not watches. Every replica watches and keeps its caches
//! warm; only the leader writes (check [`Leader::is_leader`] before writing). A replica that loses
//! the lease does not try to carry on: it triggers the [`Shutdown`] and [`Leader::join`] returns
//! [`LeaderError::LostLease`], so `main` exits non-zero and the restarted pod re-enters the election.
//!
//! While the API server is unreachable the lease cannot be renewed, and kube-lease-manager keeps the
//! last known state; writes fail in that situation anyway, and the first successful sync that shows
//! another holder ends the process.

use std::sync::Arc;
use std::time::Duration;

use kube::Client;
use kube_lease_manager::{LeaseManagerBuilder, LeaseManagerError};
use tokio::sync::watch;

use crate::args::CommonArgs;
use crate::shutdown::Shutdown;

/// How long a lease stays valid without renewal (seconds).
pub const LEASE_DURATION_SECS: u64 = 15;
/// How long before expiry the holder renews (seconds).
pub const LEASE_GRACE_SECS: u64 = 5;
/// How long shutdown waits for the lease to be released.
const RELEASE_TIMEOUT: Duration = Duration::from_secs(5);

/// Why leader election failed or ended.
#[derive(Debug, thiserror::Error)]
pub enum LeaderError {
    /// The Lease could not be read or created at start.
    #[error("cannot set up leader election on lease {namespace}/{name}: {source}")]
    Setup {
        /// Lease namespace.
        namespace: String,
        /// Lease name.
        name: String,
        /// What went wrong.
        #[source]
        source: LeaseManagerError,
    },
    /// This replica held the lease and lost it; the process should exit.
    #[error("lost the leader lease to another replica")]
    LostLease,
    /// The election task stopped on its own (not through shutdown).
    #[error("leader election stopped unexpectedly: {0}")]
    Stopped(String),
    /// No identity: neither `POD_NAME` nor a host name is available.
    #[error("cannot determine a leader-election identity: set POD_NAME")]
    NoIdentity,
}

/// How the election ended, kept as data so every `Leader` clone can report it.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Outcome {
    Released,
    LostLease,
    Stopped(String),
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Status {
    leading: bool,
    ended: Option<Outcome>,
}

/// This replica's view of leadership. Clones share it.
#[derive(Clone, Debug)]
pub struct Leader {
    status: Arc<watch::Sender<Status>>,
    disabled: bool,
}

impl Leader {
    /// Election switched off (`--leader-election=false`): always the leader.
    pub fn disabled() -> Self {
        let (status, _) = watch::channel(Status {
            leading: true,
            ended: None,
        });
        Self {
            status: Arc::new(status),
            disabled: true,
        }
    }

    /// A replica that is not (yet) leading: it watches and decides but must not write.
    /// What a standby replica looks like, for reconciler tests of the follower path.
    pub fn following() -> Self {
        let (status, _) = watch::channel(Status {
            leading: false,
            ended: None,
        });
        Self {
            status: Arc::new(status),
            disabled: false,
        }
    }

    /// Whether this replica may write now.
    pub fn is_leader(&self) -> bool {
        self.status.borrow().leading
    }

    /// Whether this replica held the lease and lost it.
    pub fn lost_lease(&self) -> bool {
        self.status.borrow().ended == Some(Outcome::LostLease)
    }

    /// Waits until this replica leads. Returns `false` if the election ended first (shutdown or
    /// loss), so callers can stop instead of waiting forever.
    pub async fn wait_until_leader(&self) -> bool {
        let mut rx = self.status.subscribe();
        match rx.wait_for(|s| s.leading || s.ended.is_some()).await {
            Ok(status) => status.leading,
            // The sender lives in `self`, so the channel cannot close while we wait.
            Err(_) => false,
        }
    }

    /// Waits for the election to end and says why: `Ok` after a shutdown (lease released),
    /// [`LeaderError::LostLease`] if the lease was lost. With election disabled there is nothing
    /// to wait for and this returns `Ok` at once.
    pub async fn join(&self) -> Result<(), LeaderError> {
        if self.disabled {
            return Ok(());
        }
        let mut rx = self.status.subscribe();
        let ended = match rx.wait_for(|s| s.ended.is_some()).await {
            Ok(status) => status.ended.clone(),
            Err(_) => None,
        };
        match ended {
            Some(Outcome::Released) | None => Ok(()),
            Some(Outcome::LostLease) => Err(LeaderError::LostLease),
            Some(Outcome::Stopped(why)) => Err(LeaderError::Stopped(why)),
        }
    }
}

/// Starts leader election.
#[derive(Debug)]
pub struct LeaderElection;

impl LeaderElection {
    /// What `main` calls: election as configured by the common flags. With
    /// `--leader-election=false` this is [`Leader::disabled`]; otherwise it competes for the Lease
    /// `--lease-namespace`/`--lease-name` (default: `controller`) as [`identity_from_env`].
    pub async fn from_args(
        args: &CommonArgs,
        client: Client,
        controller: &str,
        shutdown: Shutdown,
    ) -> Result<Leader, LeaderError> {
        if !args.leader_election {
            tracing::info!("leader election disabled: acting as leader");
            return Ok(Leader::disabled());
        }
        let identity = identity_from_env()?;
        let lease_name = args.lease_name_or(controller);
        Self::start(
            client,
            &args.lease_namespace,
            &lease_name,
            &identity,
            shutdown,
        )
        .await
    }

    /// Ensures the Lease `lease_namespace/lease_name` exists and competes for it in the
    /// background as `identity`. Returns at once (not yet leading); watch [`Leader`] for the
    /// outcome. On `shutdown` the lease is released so another replica takes over quickly.
    pub async fn start(
        client: Client,
        lease_namespace: &str,
        lease_name: &str,
        identity: &str,
        shutdown: Shutdown,
    ) -> Result<Leader, LeaderError> {
        let manager = LeaseManagerBuilder::new(client, lease_name)
            .with_namespace(lease_namespace)
            .with_identity(identity)
            .with_duration(LEASE_DURATION_SECS)
            .with_grace(LEASE_GRACE_SECS)
            .build()
            .await
            .map_err(|source| LeaderError::Setup {
                namespace: lease_namespace.to_owned(),
                name: lease_name.to_owned(),
                source,
            })?;
        let leader = Leader::following();
        let status = leader.status.clone();
        let (mut changes, task) = manager.watch().await;
        let lease = format!("{lease_namespace}/{lease_name}");
        tracing::info!(%lease, %identity, "joined leader election");

        tokio::spawn(async move {
            let outcome = loop {
                tokio::select! {
                    () = shutdown.cancelled() => break Outcome::Released,
                    changed = changes.changed() => {
                        if changed.is_err() {
                            break Outcome::Stopped("lease manager task ended".to_owned());
                        }
                        let leading = *changes.borrow_and_update();
                        let was_leading = status.borrow().leading;
                        if leading {
                            tracing::info!(%lease, "acquired leadership");
                            status.send_modify(|s| s.leading = true);
                        } else if was_leading {
                            break Outcome::LostLease;
                        }
                    }
                }
            };
            // Stop writing before anything else.
            status.send_modify(|s| s.leading = false);
            // Dropping the receiver makes the manager release the lease (if still ours) and exit.
            drop(changes);
            match tokio::time::timeout(RELEASE_TIMEOUT, task).await {
                Ok(Ok(Ok(_))) => {}
                Ok(Ok(Err(error))) => tracing::warn!(%lease, %error, "releasing the lease failed"),
                Ok(Err(error)) => tracing::warn!(%lease, %error, "lease manager task failed"),
                Err(_) => tracing::warn!(%lease, "releasing the lease timed out"),
            }
            match &outcome {
                Outcome::Released => tracing::info!(%lease, "left leader election"),
                Outcome::LostLease => tracing::error!(%lease, "lost leadership; shutting down"),
                Outcome::Stopped(why) => {
                    tracing::error!(%lease, %why, "leader election stopped; shutting down")
                }
            }
            status.send_modify(|s| s.ended = Some(outcome));
            shutdown.trigger();
        });
        Ok(leader)
    }
}

/// The election identity: the pod name if set, else the host name. Blank values count as unset.
pub fn choose_identity(pod_name: Option<&str>, hostname: Option<&str>) -> Option<String> {
    [pod_name, hostname]
        .into_iter()
        .flatten()
        .map(str::trim)
        .find(|s| !s.is_empty())
        .map(str::to_owned)
}

/// The election identity of this process: env `POD_NAME` (set it from the downward API), else the
/// host name (a pod's host name is its name, too).
pub fn identity_from_env() -> Result<String, LeaderError> {
    let pod_name = std::env::var("POD_NAME").ok();
    let hostname = hostname::get().ok().and_then(|h| h.into_string().ok());
    choose_identity(pod_name.as_deref(), hostname.as_deref()).ok_or(LeaderError::NoIdentity)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_prefers_the_pod_name() {
        assert_eq!(
            choose_identity(Some("web-7d9f"), Some("node-1")),
            Some("web-7d9f".into())
        );
        assert_eq!(choose_identity(None, Some("node-1")), Some("node-1".into()));
        assert_eq!(
            choose_identity(Some("  "), Some(" node-1\n")),
            Some("node-1".into())
        );
        assert_eq!(choose_identity(Some(""), None), None);
        assert_eq!(choose_identity(None, None), None);
    }

    #[tokio::test]
    async fn disabled_always_leads() {
        let leader = Leader::disabled();
        assert!(leader.is_leader());
        assert!(leader.wait_until_leader().await);
        assert!(!leader.lost_lease());
        assert!(leader.join().await.is_ok());
    }
}

#[cfg(all(test, feature = "testkit"))]
mod election_tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::testkit::{FakeApi, Matcher};
    use k8s_openapi::api::coordination::v1::Lease;

    const PATIENCE: Duration = Duration::from_secs(300);

    fn holder(fake: &FakeApi) -> Option<String> {
        fake.get::<Lease>("ebb", "ctl")
            .and_then(|l| l.spec)
            .and_then(|s| s.holder_identity)
    }

    async fn elected(fake: &FakeApi, shutdown: &Shutdown) -> Leader {
        let leader = LeaderElection::start(fake.client(), "ebb", "ctl", "pod-a", shutdown.clone())
            .await
            .unwrap();
        assert!(
            tokio::time::timeout(PATIENCE, leader.wait_until_leader())
                .await
                .unwrap()
        );
        leader
    }

    // Paused time: kube-lease-manager sleeps until its renewal is due; Tokio skips the wait.
    #[tokio::test(start_paused = true)]
    async fn acquires_then_releases_on_shutdown() {
        let fake = FakeApi::new();
        let shutdown = Shutdown::new();
        let leader = elected(&fake, &shutdown).await;
        assert!(leader.is_leader());
        assert_eq!(holder(&fake).as_deref(), Some("pod-a"));

        shutdown.trigger();
        tokio::time::timeout(PATIENCE, leader.join())
            .await
            .unwrap()
            .unwrap();
        assert!(!leader.is_leader());
        assert!(!leader.lost_lease());
        assert_eq!(
            holder(&fake),
            None,
            "the lease is released for a fast hand-over"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn losing_the_lease_ends_the_process() {
        let fake = FakeApi::new();
        let shutdown = Shutdown::new();
        let leader = elected(&fake, &shutdown).await;

        // Another replica takes the lease over (e.g. after we stalled past its expiry).
        fake.modify::<Lease>("ebb", "ctl", |lease| {
            if let Some(spec) = lease.spec.as_mut() {
                spec.holder_identity = Some("pod-b".into());
            }
        });

        let result = tokio::time::timeout(PATIENCE, leader.join()).await.unwrap();
        assert!(matches!(result, Err(LeaderError::LostLease)), "{result:?}");
        assert!(leader.lost_lease());
        assert!(!leader.is_leader());
        assert!(shutdown.is_triggered());
        assert!(!leader.wait_until_leader().await);
        assert_eq!(
            holder(&fake).as_deref(),
            Some("pod-b"),
            "the new holder is left alone"
        );
    }

    #[tokio::test]
    async fn setup_errors_are_reported() {
        let fake = FakeApi::new();
        fake.fail_next(Matcher::get("/leases/ctl"), 403);
        let result =
            LeaderElection::start(fake.client(), "ebb", "ctl", "pod-a", Shutdown::new()).await;
        assert!(
            matches!(result, Err(LeaderError::Setup { .. })),
            "{result:?}"
        );
    }
}
