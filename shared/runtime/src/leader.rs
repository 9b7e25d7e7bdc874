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

use futures::StreamExt;
use k8s_openapi::api::coordination::v1::Lease;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};
use kube_lease_manager::{LeaseManager, LeaseManagerBuilder, LeaseManagerError};
use tokio::sync::{Notify, watch};

use crate::args::CommonArgs;
use crate::shutdown::Shutdown;

/// How long a lease stays valid without renewal (seconds).
pub const LEASE_DURATION_SECS: u64 = 15;
/// How long before expiry the holder renews (seconds).
pub const LEASE_GRACE_SECS: u64 = 5;
/// How long shutdown waits for the lease to be released.
const RELEASE_TIMEOUT: Duration = Duration::from_secs(5);
/// Pause after a failed election step, times the number of failures in a row (at most 10).
const ERROR_PAUSE: Duration = Duration::from_millis(500);

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
    /// No identity: neither `POD_NAME` nor a host name is available.
    #[error("cannot determine a leader-election identity: set POD_NAME")]
    NoIdentity,
}

/// How the election ended, kept as data so every `Leader` clone can report it.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Outcome {
    Released,
    LostLease,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Status {
    leading: bool,
    /// Another install manages the same objects ([`crate::overlap`]): write nothing.
    standing_down: bool,
    ended: Option<Outcome>,
}

impl Status {
    fn writes(&self) -> bool {
        self.leading && !self.standing_down
    }
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
            standing_down: false,
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
            standing_down: false,
            ended: None,
        });
        Self {
            status: Arc::new(status),
            disabled: false,
        }
    }

    /// Whether this replica may write now: it holds the Lease (or runs without election) and no
    /// older install manages the same objects.
    pub fn is_leader(&self) -> bool {
        self.status.borrow().writes()
    }

    /// Stops (`true`) or resumes (`false`) writing while another install's scope overlaps this
    /// one's ([`crate::overlap`]); the Lease is kept either way.
    pub fn stand_down(&self, standing_down: bool) {
        self.status.send_if_modified(|s| {
            let changed = s.standing_down != standing_down;
            s.standing_down = standing_down;
            changed
        });
    }

    /// Whether this replica stands down for an overlapping install.
    pub fn is_standing_down(&self) -> bool {
        self.status.borrow().standing_down
    }

    /// Whether this replica held the lease and lost it.
    pub fn lost_lease(&self) -> bool {
        self.status.borrow().ended == Some(Outcome::LostLease)
    }

    /// Waits until this replica leads. Returns `false` if the election ended first (shutdown or
    /// loss), so callers can stop instead of waiting forever.
    pub async fn wait_until_leader(&self) -> bool {
        let mut rx = self.status.subscribe();
        match rx.wait_for(|s| s.writes() || s.ended.is_some()).await {
            Ok(status) => status.writes(),
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
        let election = Election {
            client: client.clone(),
            namespace: lease_namespace.to_owned(),
            name: lease_name.to_owned(),
            identity: identity.to_owned(),
        };
        let manager = election
            .manager()
            .await
            .map_err(|source| LeaderError::Setup {
                namespace: lease_namespace.to_owned(),
                name: lease_name.to_owned(),
                source,
            })?;
        let leader = Leader::following();
        let status = leader.status.clone();
        let lease = format!("{lease_namespace}/{lease_name}");
        tracing::info!(%lease, %identity, "joined leader election");
        // kube-lease-manager alone looks at a lease held by another replica again only when that
        // lease would expire (up to LEASE_DURATION_SECS): a lease released on SIGTERM would sit
        // free that long. Watching the Lease wakes the election at every change of it, so a
        // standby takes a released lease at once (controller-runtime's release-on-cancel).
        let leases: Api<Lease> = Api::namespaced(client, lease_namespace);
        let lease_changed = Arc::new(Notify::new());
        let changes = watcher(
            leases,
            watcher::Config::default().fields(&format!("metadata.name={lease_name}")),
        )
        .default_backoff();
        let notify = lease_changed.clone();
        let stop = shutdown.clone();
        tokio::spawn(async move {
            let mut changes = std::pin::pin!(changes);
            loop {
                tokio::select! {
                    () = stop.cancelled() => break,
                    event = changes.next() => match event {
                        Some(_) => notify.notify_one(),
                        None => break,
                    },
                }
            }
        });
        tokio::spawn(compete(
            election,
            manager,
            lease_changed,
            lease,
            status,
            shutdown,
        ));
        Ok(leader)
    }
}

/// What a lease manager is built from.
struct Election {
    client: Client,
    namespace: String,
    name: String,
    identity: String,
}

impl Election {
    /// A lease manager that has just read the Lease (and created it if missing).
    async fn manager(&self) -> Result<LeaseManager, LeaseManagerError> {
        LeaseManagerBuilder::new(self.client.clone(), &self.name)
            .with_namespace(&self.namespace)
            .with_identity(&self.identity)
            .with_duration(LEASE_DURATION_SECS)
            .with_grace(LEASE_GRACE_SECS)
            .build()
            .await
    }
}

/// The election loop: asks the lease manager for a change of leadership and, while following,
/// looks again at once whenever the Lease object changes; on shutdown it stops leading and
/// releases the lease. The leader is not interrupted: its own renewals change the Lease, and an
/// interrupted renewal would skip the re-read that tells it another replica took over.
async fn compete(
    election: Election,
    mut manager: LeaseManager,
    lease_changed: Arc<Notify>,
    lease: String,
    status: Arc<watch::Sender<Status>>,
    shutdown: Shutdown,
) {
    let mut errors = 0u32;
    let outcome = loop {
        let following = !status.borrow().leading;
        tokio::select! {
            biased;
            () = shutdown.cancelled() => break Outcome::Released,
            changed = manager.changed() => match changed {
                Ok(leading) => {
                    errors = 0;
                    let was_leading = status.borrow().leading;
                    if leading {
                        tracing::info!(%lease, "acquired leadership");
                        status.send_modify(|s| s.leading = true);
                    } else if was_leading {
                        break Outcome::LostLease;
                    }
                }
                Err(error) => {
                    // The API server is unreachable or refused: keep the last state (a leader
                    // cannot write then anyway) and try again after a pause.
                    errors = errors.saturating_add(1);
                    tracing::warn!(%lease, %error, "leader election step failed");
                    tokio::time::sleep(ERROR_PAUSE * errors.min(10)).await;
                }
            },
            // The Lease changed (released, say): drop the step in flight, which may be sleeping
            // until the old holder's expiry, and look again with a manager that has read the
            // Lease anew (kube-lease-manager re-reads a Lease only once it believes it expired).
            () = lease_changed.notified(), if following => match election.manager().await {
                Ok(fresh) => manager = fresh,
                Err(error) => tracing::warn!(%lease, %error, "re-reading the lease failed"),
            },
        }
    };
    // Stop writing before anything else.
    status.send_modify(|s| s.leading = false);
    if outcome == Outcome::Released {
        match tokio::time::timeout(RELEASE_TIMEOUT, manager.release()).await {
            Ok(Ok(())) => {}
            Ok(Err(error)) => tracing::warn!(%lease, %error, "releasing the lease failed"),
            Err(_) => tracing::warn!(%lease, "releasing the lease timed out"),
        }
    }
    match &outcome {
        Outcome::Released => tracing::info!(%lease, "left leader election"),
        Outcome::LostLease => tracing::error!(%lease, "lost leadership; shutting down"),
    }
    status.send_modify(|s| s.ended = Some(outcome));
    shutdown.trigger();
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

// Election against an API server (acquire, release, loss, setup errors) is tested in
// `ebb-testkit` (`shared/testkit/tests/leader.rs`), which owns the in-memory API server.
