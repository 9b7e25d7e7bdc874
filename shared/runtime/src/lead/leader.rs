//! Leader election on a `coordination.k8s.io/v1` Lease, switchable off.
//!
//! Per the design: election gates writes, not watches. Every replica watches and keeps its caches
//! warm; only the leader writes (check [`Leader::is_leader`] before writing).
//!
//! The rules, as client-go's leader election has them, and what makes two writers impossible
//! whatever the replicas' wall clocks say and however late their watches are:
//! - **Every write of the Lease is conditional** on the `resourceVersion` this replica last saw:
//!   a renewal never overwrites another replica's take-over (it gets a 409, and the renewing
//!   replica stops writing at once), and of two replicas taking a free Lease one wins.
//! - **A leader writes for [`LEASE_DURATION_SECS`] less [`WRITE_MARGIN`] after it *sent* its
//!   last successful renewal**, measured on its own monotonic clock: neither the Lease's
//!   `renewTime` (a wall-clock reading) nor the watch of the Lease extends it.
//! - **A standby takes a held Lease only after it has seen it unchanged (same
//!   `resourceVersion`) for the Lease's duration**, again on its own monotonic clock. The
//!   renewal it saw was sent before it saw it, so it takes over at least [`WRITE_MARGIN`] after
//!   the old leader stopped writing. A wall clock running ahead changes nothing.
//!
//! A leader cut off from the API server thus stops writing before any other replica could take
//! over. It does not exit: it keeps its caches and stays in the election, renewing (and writing
//! again) or following once the server answers; a single replica recovers without a restart, and
//! an outage never ends in CrashLoopBackOff. No maintained crate for kube 5 does this
//! (kube-lease-manager renews without `resourceVersion` and judges expiry by wall clocks;
//! docs/decisions.md), hence this module.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::PostParams;
use kube::runtime::watcher;
use kube::{Api, Client};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::ApiContact;
use crate::shutdown::Shutdown;

/// How long a lease stays valid without renewal (seconds).
pub const LEASE_DURATION_SECS: u64 = 15;
/// How often the leader renews: three renewals fit in a Lease, so two may fail in a row.
pub const RENEW_EVERY: Duration = Duration::from_secs(5);
/// How long before its Lease could expire a leader that has not renewed stops writing: room for
/// a write in flight, and for monotonic clocks that run at slightly different rates.
pub const WRITE_MARGIN: Duration = Duration::from_secs(3);
/// How long shutdown waits for the lease to be released.
const RELEASE_TIMEOUT: Duration = Duration::from_secs(5);
/// The longest an election request may take, retries included (kube's client retries a 503 for
/// minutes): a renewal that lands later is no use, and shutdown must not wait for it.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// Pause after a failed election step (the server is slow or refused): short, so the first step
/// after it answers again comes within a second. While the server is lost (a request found no
/// server: [`ApiContact::is_lost`]) the step waits for its return instead, which the process's one
/// probe announces, or [`crate::watch::contact::LOST_RETRY`] at most: one knock for the process, not one
/// per task.
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
        source: kube::Error,
    },
    /// No identity: neither `POD_NAME` nor a host name is available.
    #[error("cannot determine a leader-election identity: set POD_NAME")]
    NoIdentity,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Status {
    leading: bool,
    /// Another install manages the same objects ([`crate::lead::overlap`]): write nothing.
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
    /// one's ([`crate::lead::overlap`]); the Lease is kept either way.
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

    /// Until `shutdown`: each time this replica starts to write (it took the Lease, or an
    /// overlapping install went away), asks every controller to reconcile everything once
    /// ([`ApiContact::wake_all`]). What it reconciled while it did not write, it decided on and
    /// left: a follower's pass does no per-object work and sets no timer.
    pub fn wake_on_writing(&self, contact: ApiContact, shutdown: Shutdown) {
        let mut status = self.status.subscribe();
        let mut writing = status.borrow_and_update().writes();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = shutdown.cancelled() => break,
                    changed = status.changed() => if changed.is_err() { break },
                }
                let now = status.borrow_and_update().writes();
                if now && !writing {
                    contact.wake_all();
                }
                writing = now;
            }
        });
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

/// The Lease a controller competes for: `--lease-namespace` and `--lease-name` (by default the
/// controller's name).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaseName {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
}

impl std::fmt::Display for LeaseName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// Starts leader election.
#[derive(Debug)]
pub struct LeaderElection;

impl LeaderElection {
    /// What `main` calls: election as the common flags configure it. Without a Lease
    /// (`--leader-election=false`) this is [`Leader::disabled`]; otherwise it competes for `lease`
    /// (`--lease-namespace`/`--lease-name`) as [`identity_from_env`].
    pub async fn elect(
        lease: Option<&LeaseName>,
        client: Client,
        contact: &ApiContact,
        shutdown: Shutdown,
    ) -> Result<Leader, LeaderError> {
        let Some(lease) = lease else {
            tracing::info!("leader election disabled: acting as leader");
            let leader = Leader::disabled();
            // It may still stand down for an overlapping install, and resume.
            leader.wake_on_writing(contact.clone(), shutdown);
            return Ok(leader);
        };
        let identity = identity_from_env()?;
        Self::start(
            client,
            &lease.namespace,
            &lease.name,
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
        let lease = format!("{lease_namespace}/{lease_name}");
        let election = Election {
            api: Api::namespaced(client, lease_namespace),
            name: lease_name.to_owned(),
            identity: identity.to_owned(),
            contact: contact.clone(),
            lease: lease.clone(),
        };
        let known = election
            .read_or_create()
            .await
            .map_err(|source| LeaderError::Setup {
                namespace: lease_namespace.to_owned(),
                name: lease_name.to_owned(),
                source,
            })?;
        let leader = Leader::following();
        leader.wake_on_writing(contact.clone(), shutdown.clone());
        tracing::info!(%lease, %identity, "joined leader election");
        // The Lease as the server last showed it, by watch. It only ever makes the election look
        // again sooner: a standby reads a released Lease at once (controller-runtime's
        // release-on-cancel), and a leader shown another holder stops writing at once. It never
        // lets anyone write: a late watch costs a hand-over's speed, never a second writer.
        let (seen, seen_rx) = watch::channel(None);
        let by_name = watcher::Config::default().fields(&format!("metadata.name={lease_name}"));
        let leases = election.api.clone();
        let changes = crate::watch::contact::resilient(
            move || watcher(leases.clone(), by_name.clone()),
            contact,
            "Lease",
        );
        let stop = shutdown.clone();
        tokio::spawn(async move {
            let mut changes = std::pin::pin!(changes);
            loop {
                tokio::select! {
                    () = stop.cancelled() => break,
                    event = changes.next() => match event {
                        Some(Ok(watcher::Event::Apply(l) | watcher::Event::InitApply(l))) => {
                            seen.send_replace(Some(Shown::Lease(Box::new(l))));
                        }
                        Some(Ok(watcher::Event::Delete(_))) => {
                            seen.send_replace(Some(Shown::Deleted));
                        }
                        Some(_) => {}
                        None => break,
                    },
                }
            }
        });
        let (fence, fence_rx) = watch::channel(None);
        tokio::spawn(gate(
            fence_rx,
            lease,
            leader.status.clone(),
            shutdown.clone(),
        ));
        tokio::spawn(election.compete(known, seen_rx, fence, leader.status.clone(), shutdown));
        Ok(leader)
    }
}

/// Who holds `lease` (`None`: nobody; a blank identity counts as nobody).
fn holder_of(lease: &Lease) -> Option<String> {
    lease
        .spec
        .as_ref()
        .and_then(|s| s.holder_identity.as_deref())
        .filter(|h| !h.is_empty())
        .map(str::to_owned)
}

/// What the watch of the Lease last showed.
#[derive(Clone, Debug)]
enum Shown {
    Lease(Box<Lease>),
    Deleted,
}

/// The Lease as this replica last read or wrote it, and since when (on its monotonic clock) it
/// has seen it so.
#[derive(Clone, Debug)]
struct Known {
    lease: Lease,
    since: Instant,
}

impl Known {
    fn version(&self) -> Option<&str> {
        self.lease.metadata.resource_version.as_deref()
    }

    /// When a holder that stopped renewing is gone for sure: the Lease's duration after this
    /// replica first saw it as it is.
    fn expires(&self) -> Instant {
        let seconds = self
            .lease
            .spec
            .as_ref()
            .and_then(|s| s.lease_duration_seconds)
            .and_then(|s| u64::try_from(s).ok())
            .unwrap_or(LEASE_DURATION_SECS);
        self.since + Duration::from_secs(seconds)
    }
}

/// What the election does next, from what it knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Next {
    /// This replica holds the Lease: renew it.
    Renew,
    /// Nobody holds it, or its holder has not renewed for its duration: take it.
    Take,
    /// Another replica holds it: look again when it would expire, or when it changes.
    Follow,
}

/// The Lease's identity and client; [`Election::compete`] runs the election loop.
struct Election {
    api: Api<Lease>,
    name: String,
    identity: String,
    contact: ApiContact,
    /// `namespace/name`, for logs.
    lease: String,
}

impl Election {
    /// The Lease as it is now, created (held by nobody) if missing.
    async fn read_or_create(&self) -> Result<Known, kube::Error> {
        within(self.read_or_create_now()).await
    }

    async fn read_or_create_now(&self) -> Result<Known, kube::Error> {
        let since = Instant::now();
        match self.api.get_opt(&self.name).await? {
            Some(lease) => Ok(Known { lease, since }),
            None => {
                let empty = Lease {
                    metadata: ObjectMeta {
                        name: Some(self.name.clone()),
                        ..ObjectMeta::default()
                    },
                    spec: Some(LeaseSpec::default()),
                };
                match self.api.create(&PostParams::default(), &empty).await {
                    Ok(lease) => Ok(Known { lease, since }),
                    // Another replica created it first.
                    Err(kube::Error::Api(s)) if s.code == 409 => {
                        let lease = self.api.get(&self.name).await?;
                        Ok(Known { lease, since })
                    }
                    Err(error) => Err(error),
                }
            }
        }
    }

    /// Reads the Lease again; `known.since` moves only if it changed.
    async fn reread(&self, known: &mut Known) -> Result<(), kube::Error> {
        let fresh = self.read_or_create().await?;
        if fresh.version() != known.version() {
            *known = fresh;
        }
        Ok(())
    }

    /// Takes in what the watch showed: a version this replica has not seen counts from now.
    /// (A late watch may show an older version: counting it from now only delays a take-over,
    /// and writing on it meets a 409.) A deleted Lease is created again.
    async fn take_in(&self, shown: Option<Shown>, known: &mut Known) -> Result<(), kube::Error> {
        match shown {
            Some(Shown::Lease(lease)) => {
                if lease.metadata.resource_version.as_deref() != known.version() {
                    *known = Known {
                        lease: *lease,
                        since: Instant::now(),
                    };
                }
                Ok(())
            }
            Some(Shown::Deleted) => self.reread(known).await,
            None => Ok(()),
        }
    }

    fn next(&self, known: &Known, now: Instant) -> Next {
        match holder_of(&known.lease) {
            Some(holder) if holder == self.identity => Next::Renew,
            None => Next::Take,
            Some(_) if known.expires() <= now => Next::Take,
            Some(_) => Next::Follow,
        }
    }

    /// `known` with this replica's claim (renewal or take-over), or with the claim let go
    /// (`None`). The times written are wall-clock readings for people; no replica goes by them.
    fn claimed(&self, known: &Known, claim: Option<Next>) -> Lease {
        let mut lease = known.lease.clone();
        let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
        let now = MicroTime(self.contact.now());
        let seconds = i32::try_from(LEASE_DURATION_SECS).unwrap_or(i32::MAX);
        match claim {
            Some(Next::Renew) => {
                spec.renew_time = Some(now);
                spec.lease_duration_seconds = Some(seconds);
            }
            Some(Next::Take | Next::Follow) => {
                spec.holder_identity = Some(self.identity.clone());
                spec.acquire_time = Some(now.clone());
                spec.renew_time = Some(now);
                spec.lease_duration_seconds = Some(seconds);
                spec.lease_transitions =
                    Some(spec.lease_transitions.unwrap_or(0).saturating_add(1));
            }
            None => {
                spec.holder_identity = None;
                spec.acquire_time = None;
                spec.renew_time = None;
                spec.lease_duration_seconds = None;
            }
        }
        lease
    }

    /// Replaces the Lease with `lease`, on condition that it is still the version in `lease`.
    async fn put(&self, lease: &Lease) -> Result<Lease, kube::Error> {
        within(self.api.replace(&self.name, &PostParams::default(), lease)).await
    }

    /// The election loop: renew while holding, take the Lease when it is free or abandoned,
    /// follow otherwise. `fence` says until when this replica may write ([`gate`]). On shutdown
    /// it stops writing and releases the Lease.
    async fn compete(
        self,
        mut known: Known,
        mut seen: watch::Receiver<Option<Shown>>,
        fence: watch::Sender<Option<Instant>>,
        status: Arc<watch::Sender<Status>>,
        shutdown: Shutdown,
    ) {
        let lease = self.lease.clone();
        let mut errors = 0u32;
        loop {
            let now = Instant::now();
            let next = self.next(&known, now);
            if next == Next::Follow {
                // Nothing to write: wait for the holder's time to run out, or for a change.
                tokio::select! {
                    biased;
                    () = shutdown.cancelled() => break,
                    // Its time ran out: the take-over's conditional write says whether it
                    // really did not change meanwhile.
                    () = tokio::time::sleep_until(known.expires()) => {}
                    changed = seen.changed() => {
                        if changed.is_err() {
                            break;
                        }
                        let shown = seen.borrow_and_update().clone();
                        if let Err(error) = self.take_in(shown, &mut known).await {
                            tracing::debug!(%lease, %error, "re-reading the lease failed");
                            tokio::time::sleep(ERROR_PAUSE).await;
                        }
                    }
                }
                continue;
            }
            let sent = Instant::now();
            let claim = self.claimed(&known, Some(next));
            let answer = tokio::select! {
                biased;
                () = shutdown.cancelled() => break,
                answer = self.put(&claim) => answer,
            };
            match answer {
                Ok(written) => {
                    errors = 0;
                    if next == Next::Take {
                        tracing::info!(%lease, "took the lease");
                    }
                    known = Known {
                        lease: written,
                        since: sent,
                    };
                    let until = sent + Duration::from_secs(LEASE_DURATION_SECS) - WRITE_MARGIN;
                    fence.send_replace(Some(until));
                }
                Err(kube::Error::Api(s)) if matches!(s.code, 404 | 409) => {
                    // Someone else wrote (or deleted) the Lease since this replica read it: read
                    // it again and decide anew. A renewal that conflicts stops writing at once.
                    fence.send_replace(None);
                    if next == Next::Renew {
                        tracing::warn!(%lease, "the lease changed under this leader: writing nothing");
                    }
                    if let Err(error) = self.reread(&mut known).await {
                        tracing::debug!(%lease, %error, "re-reading the lease failed");
                        tokio::time::sleep(ERROR_PAUSE).await;
                    }
                    continue;
                }
                Err(error) => {
                    // The server is away or refused: try again after a short pause. The fence
                    // stands: a leader that cannot renew stops writing when it is reached.
                    errors = errors.saturating_add(1);
                    if errors == 1 {
                        tracing::warn!(%lease, %error, "leader election step failed");
                    } else {
                        tracing::debug!(%lease, %error, "leader election step failed again");
                    }
                    // Subscribed before asking whether the server is lost: a return in between
                    // still wakes this step.
                    let mut returns = std::pin::pin!(self.contact.wake_ups());
                    let pause = if self.contact.is_lost() {
                        crate::watch::contact::LOST_RETRY
                    } else {
                        ERROR_PAUSE
                    };
                    tokio::select! {
                        biased;
                        () = shutdown.cancelled() => break,
                        _ = returns.next() => {}
                        () = tokio::time::sleep(pause) => {}
                    }
                    continue;
                }
            }
            // Holding: renew on schedule. A watch showing another holder stops writing at once
            // and renews at once.
            let renew_at = Instant::now() + RENEW_EVERY;
            loop {
                tokio::select! {
                    biased;
                    () = shutdown.cancelled() => break,
                    () = tokio::time::sleep_until(renew_at) => break,
                    changed = seen.changed() => {
                        if changed.is_err() {
                            break;
                        }
                        let shown = seen.borrow_and_update().clone();
                        // Another holder, or none but the Lease gone. A Lease held by nobody is
                        // the version before this replica took it, shown late: only a holder
                        // lets go of a Lease.
                        let other = match &shown {
                            Some(Shown::Lease(l)) => {
                                holder_of(l).is_some_and(|h| h != self.identity)
                            }
                            Some(Shown::Deleted) => true,
                            None => false,
                        };
                        if other {
                            // Stop writing, and renew at once: the conditional write says whether
                            // the Lease really changed (a late watch may show an old version).
                            fence.send_replace(None);
                            tracing::warn!(%lease, "the lease was shown held by another replica");
                            break;
                        }
                    }
                }
            }
            if shutdown.is_triggered() {
                break;
            }
        }
        // Stop writing before anything else.
        fence.send_replace(None);
        status.send_modify(|s| s.leading = false);
        match tokio::time::timeout(RELEASE_TIMEOUT, self.release(known)).await {
            Ok(Ok(())) => {}
            Ok(Err(error)) => tracing::warn!(%lease, %error, "releasing the lease failed"),
            Err(_) => tracing::warn!(%lease, "releasing the lease timed out"),
        }
        tracing::info!(%lease, "left leader election");
        status.send_modify(|s| s.ended = true);
    }

    /// Lets go of the Lease if this replica holds it, so a standby takes over at once.
    async fn release(&self, mut known: Known) -> Result<(), kube::Error> {
        loop {
            if self.next(&known, Instant::now()) != Next::Renew {
                return Ok(());
            }
            match self.put(&self.claimed(&known, None)).await {
                Ok(_) => return Ok(()),
                Err(kube::Error::Api(s)) if s.code == 409 => self.reread(&mut known).await?,
                Err(error) => return Err(error),
            }
        }
    }
}

/// `request`, failing after [`REQUEST_TIMEOUT`].
async fn within<T>(
    request: impl Future<Output = Result<T, kube::Error>>,
) -> Result<T, kube::Error> {
    tokio::time::timeout(REQUEST_TIMEOUT, request)
        .await
        .unwrap_or_else(|elapsed| Err(kube::Error::Service(Box::new(elapsed))))
}

/// Whether this replica writes: until the fence its last renewal set (none: not leading).
async fn gate(
    mut fence: watch::Receiver<Option<Instant>>,
    lease: String,
    status: Arc<watch::Sender<Status>>,
    shutdown: Shutdown,
) {
    loop {
        let until = *fence.borrow_and_update();
        let now = Instant::now();
        let writes = until.is_some_and(|t| now < t);
        status.send_if_modified(|s| {
            if s.ended || s.leading == writes {
                return false;
            }
            if writes {
                // Leader::wake_on_writing makes every controller look at everything again.
                tracing::info!(%lease, "leading: writing");
            } else {
                tracing::warn!(%lease, "not leading (lease not held or not renewed): writing nothing");
            }
            s.leading = writes;
            true
        });
        let wake = until
            .filter(|_| writes)
            .unwrap_or_else(|| now + Duration::from_secs(3600));
        tokio::select! {
            () = shutdown.cancelled() => break,
            () = tokio::time::sleep_until(wake) => {}
            changed = fence.changed() => if changed.is_err() { break },
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

/// This process's identity ([`choose_identity`] of env `POD_NAME` and the host name): the
/// leader election's, and the one its requests name
/// ([`crate::process::kubeconfig::user_agent`]).
pub fn identity() -> Option<String> {
    let pod_name = std::env::var("POD_NAME").ok();
    let hostname = hostname::get().ok().and_then(|h| h.into_string().ok());
    choose_identity(pod_name.as_deref(), hostname.as_deref())
}

/// The election identity of this process: env `POD_NAME` (set it from the downward API), else the
/// host name (a pod's host name is its name, too).
pub fn identity_from_env() -> Result<String, LeaderError> {
    identity().ok_or(LeaderError::NoIdentity)
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
