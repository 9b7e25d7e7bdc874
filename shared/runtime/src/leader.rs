//! Leader election on a `coordination.k8s.io/v1` Lease (via kube-lease-manager), switchable off.
//!
//! Per the design: election gates writes, not watches. Every replica watches and keeps its caches
//! warm; only the leader writes (check [`Leader::is_leader`] before writing).
//!
//! A leader writes only while the Lease it last saw names it and is at least [`WRITE_MARGIN`]
//! from expiring: a leader cut off from the API server cannot renew, and stops writing before
//! any other replica could take the Lease over (no two writers, ever). It does not exit: it
//! keeps its caches and stays in the election, so once the server answers it renews (and
//! writes again) or follows the replica that took over. A single replica recovers without a
//! restart, and an outage never ends in CrashLoopBackOff.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::coordination::v1::Lease;
use kube::runtime::watcher;
use kube::{Api, Client};
use kube_lease_manager::{LeaseManager, LeaseManagerBuilder, LeaseManagerError};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::ApiContact;
use crate::args::CommonArgs;
use crate::shutdown::Shutdown;

/// How long a lease stays valid without renewal (seconds).
pub const LEASE_DURATION_SECS: u64 = 15;
/// How long before expiry the holder renews (seconds).
pub const LEASE_GRACE_SECS: u64 = 5;
/// How long before its Lease could expire a leader that has not renewed stops writing: room for
/// a write in flight and for clocks that differ between replicas.
pub const WRITE_MARGIN: Duration = Duration::from_secs(3);
/// How long shutdown waits for the lease to be released.
const RELEASE_TIMEOUT: Duration = Duration::from_secs(5);
/// Pause after a failed election step (the server is away): short, so the first step after it
/// answers again comes within a second of its return.
const ERROR_PAUSE: Duration = Duration::from_millis(500);

/// Why leader election could not start.
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
    /// No identity: neither `POD_NAME` nor a host name is available.
    #[error("cannot determine a leader-election identity: set POD_NAME")]
    NoIdentity,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Status {
    leading: bool,
    /// Another install manages the same objects ([`crate::overlap`]): write nothing.
    standing_down: bool,
    /// The election ended (shutdown) and the Lease was let go.
    ended: bool,
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
    fn with(leading: bool, disabled: bool) -> Self {
        let (status, _) = watch::channel(Status {
            leading,
            standing_down: false,
            ended: false,
        });
        Self {
            status: Arc::new(status),
            disabled,
        }
    }

    /// Election switched off (`--leader-election=false`): always the leader.
    pub fn disabled() -> Self {
        Self::with(true, true)
    }

    /// A replica that is not (yet) leading: it watches and decides but must not write.
    /// What a standby replica looks like, for reconciler tests of the follower path.
    pub fn following() -> Self {
        Self::with(false, false)
    }

    /// Whether this replica may write now: it holds a Lease that is not about to expire (or runs
    /// without election) and no older install manages the same objects.
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

    /// Waits until this replica may write. Returns `false` if the election ended first
    /// (shutdown), so callers can stop instead of waiting forever.
    pub async fn wait_until_leader(&self) -> bool {
        let mut rx = self.status.subscribe();
        match rx.wait_for(|s| s.writes() || s.ended).await {
            Ok(status) => status.writes(),
            // The sender lives in `self`, so the channel cannot close while we wait.
            Err(_) => false,
        }
    }

    /// Waits for the election to end (after a shutdown, with the lease released). With election
    /// disabled there is nothing to wait for and this returns at once.
    pub async fn join(&self) {
        if self.disabled {
            return;
        }
        let mut rx = self.status.subscribe();
        let _ = rx.wait_for(|s| s.ended).await;
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
        contact: &ApiContact,
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
            contact,
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
        contact: &ApiContact,
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
        let lease = format!("{lease_namespace}/{lease_name}");
        tracing::info!(%lease, %identity, "joined leader election");
        // The Lease as the server last showed it. kube-lease-manager alone looks at a lease held
        // by another replica again only when that lease would expire (up to
        // LEASE_DURATION_SECS): a lease released on SIGTERM would sit free that long. Watching
        // it wakes the election at every change, so a standby takes a released lease at once
        // (controller-runtime's release-on-cancel); and it tells the leader until when its
        // last renewal holds.
        let leases: Api<Lease> = Api::namespaced(client, lease_namespace);
        let (seen, seen_rx) = watch::channel(None);
        let by_name = watcher::Config::default().fields(&format!("metadata.name={lease_name}"));
        let changes = crate::contact::resilient(
            move || watcher(leases.clone(), by_name.clone()),
            contact,
            "Lease",
        );
        let stop = shutdown.clone();
        let now = contact.clone();
        tokio::spawn(async move {
            let mut changes = std::pin::pin!(changes);
            loop {
                tokio::select! {
                    () = stop.cancelled() => break,
                    event = changes.next() => match event {
                        Some(Ok(watcher::Event::Apply(l) | watcher::Event::InitApply(l))) => {
                            seen.send_replace(Some(Seen::of(&l, &now)));
                        }
                        Some(Ok(watcher::Event::Delete(_))) => {
                            seen.send_replace(None);
                        }
                        Some(_) => {}
                        None => break,
                    },
                }
            }
        });
        let (holds, holds_rx) = watch::channel(false);
        tokio::spawn(gate(
            contact.clone(),
            identity.to_owned(),
            seen_rx.clone(),
            holds_rx,
            lease.clone(),
            leader.status.clone(),
            shutdown.clone(),
        ));
        tokio::spawn(compete(
            election,
            manager,
            seen_rx,
            lease,
            holds,
            leader.status.clone(),
            shutdown,
        ));
        Ok(leader)
    }
}

/// The Lease as last seen: who holds it, and until when (on this process's monotonic clock) a
/// holder may write on it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Seen {
    holder: Option<String>,
    writable_until: Option<Instant>,
}

impl Seen {
    fn of(lease: &Lease, contact: &ApiContact) -> Self {
        let spec = lease.spec.clone().unwrap_or_default();
        let writable_until = match (spec.renew_time, spec.lease_duration_seconds) {
            (Some(renewed), Some(seconds)) => {
                let expires_ms = renewed.0.as_millisecond() + i64::from(seconds) * 1000
                    - i64::try_from(WRITE_MARGIN.as_millis()).unwrap_or(i64::MAX);
                let left_ms = expires_ms - contact.now().as_millisecond();
                Some(Instant::now() + Duration::from_millis(u64::try_from(left_ms).unwrap_or(0)))
            }
            _ => None,
        };
        Self {
            holder: spec.holder_identity,
            writable_until,
        }
    }

    /// Whether `identity` may write on this Lease at `now`.
    fn lets_write(&self, identity: &str, now: Instant) -> bool {
        self.holder.as_deref() == Some(identity) && self.writable_until.is_some_and(|t| now < t)
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

/// The election loop. kube-lease-manager acquires and renews the Lease and says whether this
/// replica holds it (`holds`); [`gate`] turns that into writing. A manager that says the Lease
/// went to another replica is replaced by a fresh one (this replica competes again); while
/// following, every change of the Lease looks again at once. On shutdown it stops writing and
/// releases the Lease.
async fn compete(
    election: Election,
    mut manager: LeaseManager,
    mut seen: watch::Receiver<Option<Seen>>,
    lease: String,
    holds: watch::Sender<bool>,
    status: Arc<watch::Sender<Status>>,
    shutdown: Shutdown,
) {
    let mut errors = 0u32;
    loop {
        let following = !*holds.borrow();
        tokio::select! {
            biased;
            () = shutdown.cancelled() => break,
            changed = manager.changed() => match changed {
                Ok(leading) => {
                    errors = 0;
                    holds.send_replace(leading);
                    if !leading {
                        // Lost to another replica: compete again with a manager that reads
                        // the Lease anew.
                        tracing::warn!(%lease, "another replica holds the lease");
                        if let Ok(fresh) = election.manager().await {
                            manager = fresh;
                        }
                    }
                }
                Err(error) => {
                    // The server is away or refused: keep competing after a short pause.
                    errors = errors.saturating_add(1);
                    if errors == 1 {
                        tracing::warn!(%lease, %error, "leader election step failed");
                    } else {
                        tracing::debug!(%lease, %error, "leader election step failed again");
                    }
                    tokio::time::sleep(ERROR_PAUSE).await;
                }
            },
            // The Lease changed (released, say): drop the step in flight, which may be sleeping
            // until the old holder's expiry, and look again with a manager that has read the
            // Lease anew (kube-lease-manager re-reads a Lease only once it believes it expired).
            // The holder is not interrupted: its own renewals change the Lease, and an
            // interrupted renewal would skip the re-read that tells it another replica took over.
            changed = seen.changed(), if following => {
                if changed.is_err() {
                    break;
                }
                match election.manager().await {
                    Ok(fresh) => manager = fresh,
                    Err(error) => tracing::debug!(%lease, %error, "re-reading the lease failed"),
                }
            }
        }
    }
    // Stop writing before anything else.
    holds.send_replace(false);
    status.send_modify(|s| s.leading = false);
    match tokio::time::timeout(RELEASE_TIMEOUT, manager.release()).await {
        Ok(Ok(())) => {}
        Ok(Err(error)) => tracing::warn!(%lease, %error, "releasing the lease failed"),
        Err(_) => tracing::warn!(%lease, "releasing the lease timed out"),
    }
    tracing::info!(%lease, "left leader election");
    status.send_modify(|s| s.ended = true);
}

/// Whether this replica writes: while the manager says it holds the Lease *and* the Lease last
/// seen names it and has not come within [`WRITE_MARGIN`] of expiring. A leader cut off from the
/// server cannot renew, so it stops writing at that fence; a renewal seen moves the fence.
///
/// The Lease seen is the watch's, so a take-over reaches this replica one watch event late.
/// Another replica takes a Lease only once it expired, long after this fence; the exception is
/// kube-lease-manager's release of an expired Lease followed by its lock (without
/// `resourceVersion`, as its renewals): a leader whose renewal landed between the two stops
/// writing when the release's event arrives, milliseconds after it.
async fn gate(
    contact: ApiContact,
    identity: String,
    mut seen: watch::Receiver<Option<Seen>>,
    mut holds: watch::Receiver<bool>,
    lease: String,
    status: Arc<watch::Sender<Status>>,
    shutdown: Shutdown,
) {
    loop {
        let view = seen.borrow_and_update().clone();
        let held = *holds.borrow_and_update();
        let now = Instant::now();
        let writes = held && view.as_ref().is_some_and(|v| v.lets_write(&identity, now));
        status.send_if_modified(|s| {
            if s.ended || s.leading == writes {
                return false;
            }
            if writes {
                tracing::info!(%lease, "leading: writing");
                // What was reconciled while following wrote nothing: look at everything again.
                contact.wake_all();
            } else {
                tracing::warn!(%lease, held, "not leading (lease not held or not renewed): writing nothing");
            }
            s.leading = writes;
            true
        });
        let fence = view
            .as_ref()
            .filter(|_| writes)
            .and_then(|v| v.writable_until)
            .unwrap_or_else(|| now + Duration::from_secs(3600));
        tokio::select! {
            () = shutdown.cancelled() => break,
            () = tokio::time::sleep_until(fence) => {}
            changed = seen.changed() => if changed.is_err() { break },
            changed = holds.changed() => if changed.is_err() { break },
        }
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
        leader.join().await;
    }
}

// Election against an API server (acquire, release, loss, setup errors) is tested in
// `ebb-testkit` (`shared/testkit/tests/leader.rs`), which owns the in-memory API server.
