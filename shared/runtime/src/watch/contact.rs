//! The process's link to the API server: when it last heard from it, whether its watches are
//! connected, how a watch waits after a failure, and what happens when the server comes back.
//!
//! Managed clusters restart their API servers on every control-plane upgrade. kube-runtime's
//! defaults made that cost minutes: its watch backoff (0.8 s doubling to 30 s, plus up to as much
//! again of jitter) grew while the server was away and reset only on the next event, a 410 from
//! the restarted server (its watch cache starts anew) and each 429 (warming up) slept it again,
//! and a reconcile that failed at a window edge backed off 1, 2, 4, 8, 16 s. Here:
//!
//! - every watch waits through [`resilient`]: a failure is retried after 0.2 s, 0.4 s ... at most
//!   0.5 s, each with up to as much again of jitter (so at most a second apart); while the server
//!   is *lost* (below) a failing watch waits [`LOST_RETRY`] instead, since the return wakes it
//!   at once: one probe knocks for the process, not every watch. The schedule starts over once
//!   the server has answered anything since; a 410 re-lists at once (kube's watcher has already dropped the stale
//!   version); a 429 waits what the server asked (1 s unless it said) and leaves the schedule as
//!   it was;
//! - every answer the client gets is recorded ([`client`]); a request that fails for want of the
//!   server makes it *lost*, and while it is lost the process asks the server's `/readyz` every
//!   quarter second or so ([`ApiContact::probe`]). Its first 200 is the *return* (not the first
//!   answer: a restarted kube-apiserver answers 403 until its RBAC caches have loaded, and 500
//!   from `/readyz` until its post-start hooks ran), and [`ApiContact::wake_ups`] makes each
//!   controller reconcile everything once, so an edge that passed while the server was away, or
//!   a reconcile that failed on the outage, is acted on as soon as the server is back, whatever
//!   its per-object backoff says. For [`FRESH_READS`] after a return a reconcile reads its object
//!   from the server rather than the cache ([`ApiContact::reads_fresh`]): a restarted server's
//!   watch caches of custom resources can take seconds longer than `/readyz` to serve the watch
//!   that would bring a change made during the outage;
//! - the metrics say when the process last heard from the server and how many of its watches are
//!   connected ([`ApiContact::register`]).

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use backon::BackoffBuilder;
use futures::{Stream, StreamExt};
use kube::runtime::watcher;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;
use tokio::sync::watch;

use crate::Clock;

/// The first wait after a watch failed.
pub const RETRY_FIRST: Duration = Duration::from_millis(200);
/// The longest wait between a watch's attempts, before jitter (which adds up to as much again).
pub const RETRY_CAP: Duration = Duration::from_millis(500);
/// How long without an answer before the process asks the server for its version, so that
/// `api_last_contact_timestamp_seconds` stays fresh on a quiet cluster (a watch's events do not
/// count as answers of their own: only the answer that opened the watch does).
pub const PROBE_AFTER: Duration = Duration::from_secs(60);
/// How long a failing watch waits while the server is lost: the probe asks `/readyz` meanwhile
/// and the return wakes the watch at once, so this only bounds a return that was missed.
pub const LOST_RETRY: Duration = Duration::from_secs(3);
/// How often `/readyz` is asked while the server is lost (plus up to as much again of jitter).
pub const READY_POLL: Duration = Duration::from_millis(200);
/// How long after a return reconciles read their object from the server.
pub const FRESH_READS: Duration = Duration::from_secs(30);
/// How long a 429 waits when the server did not say.
pub const TOO_MANY_REQUESTS_WAIT: Duration = Duration::from_secs(1);

/// What the process knows of its link to the API server. Clones share it.
#[derive(Clone)]
pub struct ApiContact {
    inner: Arc<Inner>,
}

struct Inner {
    clock: Arc<dyn Clock>,
    /// Unix time (milliseconds) of the last answer of any kind; 0 before the first.
    last_answer_ms: AtomicU64,
    /// Healthy answers so far: a watch that failed before the count moved has not seen the
    /// server answer since.
    healthy: AtomicU64,
    /// A request failed for want of the server since its last healthy answer.
    lost: AtomicBool,
    /// Told when the server is lost, so the probe starts asking `/readyz`.
    lost_now: tokio::sync::Notify,
    /// Unix time (milliseconds) of the last return; 0 before the first.
    returned_ms: AtomicU64,
    /// Bumped at each return.
    returns: watch::Sender<u64>,
    watches: Mutex<Vec<Weak<WatchLink>>>,
    /// Every request of the client, by verb, resource and answer.
    requests: crate::watch::requests::RequestMetrics,
}

impl std::fmt::Debug for ApiContact {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiContact")
            .field("last_answer_ms", &self.inner.last_answer_ms)
            .field("lost", &self.inner.lost)
            .finish_non_exhaustive()
    }
}

/// How an answer of the API server counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// It served the request (any status but 429 and 5xx: a 404 or 409 is the server working).
    Healthy,
    /// It answered but could not serve (429 while warming up, 5xx): heard from, not back.
    Struggling,
}

impl Answer {
    /// How an HTTP status counts.
    pub fn of_status(status: u16) -> Self {
        if status == 429 || status >= 500 {
            Self::Struggling
        } else {
            Self::Healthy
        }
    }
}

impl ApiContact {
    /// Nothing heard yet; times come from `clock`.
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        let (returns, _) = watch::channel(0);
        Self {
            inner: Arc::new(Inner {
                clock,
                last_answer_ms: AtomicU64::new(0),
                healthy: AtomicU64::new(0),
                lost: AtomicBool::new(false),
                lost_now: tokio::sync::Notify::new(),
                returned_ms: AtomicU64::new(0),
                returns,
                watches: Mutex::new(Vec::new()),
                requests: crate::watch::requests::RequestMetrics::new(),
            }),
        }
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.inner.clock.now().as_millisecond()).unwrap_or(0)
    }

    /// Records an answer of the server.
    pub fn answered(&self, answer: Answer) {
        self.inner
            .last_answer_ms
            .fetch_max(self.now_ms(), Ordering::AcqRel);
        if answer == Answer::Healthy {
            self.inner.healthy.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// Records that a request failed for want of the server ([`unreachable`](fn@unreachable)): it is lost
    /// until its `/readyz` says 200 ([`ApiContact::probe`]).
    pub fn failed(&self) {
        if !self.inner.lost.swap(true, Ordering::AcqRel) {
            tracing::warn!("lost the API server; asking its /readyz until it is back");
            self.inner.lost_now.notify_one();
        }
    }

    /// The server is ready again: if it was lost, this is a return (every controller
    /// reconciles everything, reading its objects fresh for a while).
    pub fn server_ready(&self) {
        if self.inner.lost.swap(false, Ordering::AcqRel) {
            tracing::info!("the API server is back");
            self.inner
                .returned_ms
                .store(self.now_ms(), Ordering::Release);
            self.wake_all();
        }
    }

    /// Whether a reconcile should read its object from the server rather than its cache: for
    /// [`FRESH_READS`] after a return.
    pub fn reads_fresh(&self) -> bool {
        match self.inner.returned_ms.load(Ordering::Acquire) {
            0 => false,
            at => {
                let window = u64::try_from(FRESH_READS.as_millis()).unwrap_or(u64::MAX);
                self.now_ms().saturating_sub(at) < window
            }
        }
    }

    /// Records `error` of a request or a reconcile if it is one the server's absence explains
    /// ([`unreachable`](fn@unreachable)); says whether it was.
    pub fn failed_if_unreachable(&self, error: &(dyn std::error::Error + 'static)) -> bool {
        let unreachable = unreachable(error);
        if unreachable {
            self.failed();
        }
        unreachable
    }

    /// Whether a request failed for want of the server since its last healthy answer.
    pub fn is_lost(&self) -> bool {
        self.inner.lost.load(Ordering::Acquire)
    }

    /// The process's "now" (its [`Clock`]).
    pub fn now(&self) -> jiff::Timestamp {
        self.inner.clock.now()
    }

    /// Healthy answers so far.
    fn healthy_answers(&self) -> u64 {
        self.inner.healthy.load(Ordering::Acquire)
    }

    /// Unix time in seconds of the last answer, `None` before the first.
    pub fn last_answer(&self) -> Option<f64> {
        match self.inner.last_answer_ms.load(Ordering::Acquire) {
            0 => None,
            // Milliseconds since 1970 fit an f64 exactly.
            #[allow(clippy::cast_precision_loss)]
            ms => Some(ms as f64 / 1000.0),
        }
    }

    /// Asks every controller to reconcile everything once (see [`ApiContact::wake_ups`]): what
    /// a replica does when it starts to lead, since its reconciles as a follower wrote nothing.
    pub fn wake_all(&self) {
        self.inner.returns.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// One item per return of the server and per [`ApiContact::wake_all`] (several in quick
    /// succession may come as one): hand it to `Controller::reconcile_all_on`.
    pub fn wake_ups(&self) -> impl Stream<Item = ()> + Send + 'static {
        let mut receiver = self.inner.returns.subscribe();
        receiver.mark_unchanged();
        futures::stream::unfold(receiver, |mut receiver| async move {
            receiver.changed().await.ok()?;
            Some(((), receiver))
        })
    }

    /// What a client's `tower::util::MapResultLayer` calls with each result: records every
    /// answer and every failure to get one (see [`client`]).
    pub fn observer<B, E>(
        &self,
    ) -> impl FnOnce(Result<http::Response<B>, E>) -> Result<http::Response<B>, E>
    + Clone
    + Send
    + Sync
    + 'static {
        let contact = self.clone();
        move |result| {
            match &result {
                Ok(response) => contact.answered(Answer::of_status(response.status().as_u16())),
                Err(_) => contact.failed(),
            }
            result
        }
    }

    /// Until `shutdown`: while the server is lost, asks its `/readyz` every [`READY_POLL`] (with
    /// jitter) and declares it back at the first 200 ([`ApiContact::server_ready`]); otherwise
    /// asks for its version whenever it has not answered for [`PROBE_AFTER`], so a quiet process
    /// still knows, and says, whether it can reach the server.
    pub async fn probe(self, client: kube::Client, shutdown: crate::Shutdown) {
        let limit = PROBE_AFTER.as_secs_f64();
        loop {
            tokio::select! {
                () = shutdown.cancelled() => break,
                () = self.inner.lost_now.notified() => {}
                () = tokio::time::sleep(PROBE_AFTER / 2) => {}
            }
            let mut forbidden = 0u32;
            while self.is_lost() {
                match ready(&client).await {
                    Ready::Yes => {
                        self.server_ready();
                        break;
                    }
                    Ready::Forbidden => forbidden += 1,
                    Ready::No => forbidden = 0,
                }
                if forbidden >= FORBIDDEN_READYZ_LIMIT {
                    tracing::warn!(
                        "the API server refuses this process /readyz; taking its answers as ready"
                    );
                    self.server_ready();
                    break;
                }
                let pause = READY_POLL.mul_f64(1.0 + fastrand::f64());
                tokio::select! {
                    () = shutdown.cancelled() => return,
                    () = tokio::time::sleep(pause) => {}
                }
            }
            #[allow(clippy::cast_precision_loss)]
            let now = self.now().as_millisecond() as f64 / 1000.0;
            if self.last_answer().is_none_or(|last| now - last >= limit) {
                // The client's layer records the outcome.
                let _ = client.apiserver_version().await;
            }
        }
    }

    /// Registers `api_last_contact_timestamp_seconds`, `watches`, `watches_connected`,
    /// `api_requests_total` and `api_request_duration_seconds` into `registry` (a controller's
    /// part of it).
    pub fn register(&self, registry: &mut Registry) {
        registry.register_collector(Box::new(ContactMetrics {
            contact: self.clone(),
        }));
        self.inner.requests.register(registry);
    }

    fn link(&self) -> Arc<WatchLink> {
        let link = Arc::new(WatchLink {
            failed_at: Mutex::new(None),
        });
        let mut watches = self
            .inner
            .watches
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        watches.retain(|w| w.strong_count() > 0);
        watches.push(Arc::downgrade(&link));
        link
    }

    /// The running watches, and how many of them are connected: not failed, or failed before the
    /// server's last healthy answer (a watch starts again within a second of one).
    pub fn watches(&self) -> (usize, usize) {
        let healthy = self.healthy_answers();
        let watches = self
            .inner
            .watches
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let live: Vec<Arc<WatchLink>> = watches.iter().filter_map(Weak::upgrade).collect();
        let connected = live.iter().filter(|w| w.connected(healthy)).count();
        (live.len(), connected)
    }
}

/// One watch's state for `watches_connected`.
#[derive(Debug)]
struct WatchLink {
    /// The healthy-answer count when the watch last failed; `None` once it delivered again.
    failed_at: Mutex<Option<u64>>,
}

impl WatchLink {
    fn set(&self, failed_at: Option<u64>) {
        *self
            .failed_at
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = failed_at;
    }

    fn connected(&self, healthy: u64) -> bool {
        self.failed_at
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_none_or(|at| healthy > at)
    }
}

#[derive(Debug)]
struct ContactMetrics {
    contact: ApiContact,
}

impl Collector for ContactMetrics {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        if let Some(last) = self.contact.last_answer() {
            let gauge = ConstGauge::new(last);
            let metric = encoder.encode_descriptor(
                "api_last_contact_timestamp_seconds",
                "When this process last got an answer from the API server (Unix time)",
                None,
                gauge.metric_type(),
            )?;
            gauge.encode(metric)?;
        }
        let (watches, connected) = self.contact.watches();
        for (name, help, value) in [
            ("watches", "Watches this process runs", watches),
            (
                "watches_connected",
                "Watches that are connected to the API server (not failed since its last answer)",
                connected,
            ),
        ] {
            let gauge = ConstGauge::new(i64::try_from(value).unwrap_or(i64::MAX));
            let metric = encoder.encode_descriptor(name, help, None, gauge.metric_type())?;
            gauge.encode(metric)?;
        }
        Ok(())
    }
}

/// What the server's `/readyz` said.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ready {
    /// 200.
    Yes,
    /// 401 or 403: a restarted server says so until its RBAC caches have loaded; a cluster that
    /// does not let this process read `/readyz` (every authenticated user may, by default) says
    /// it for good.
    Forbidden,
    /// Anything else: not listening, 500 while its post-start hooks run, ...
    No,
}

/// Consecutive 401/403 answers of `/readyz` (several seconds' worth) after which the server
/// counts as ready: this process may not read it, and its answers are all there is to go by.
const FORBIDDEN_READYZ_LIMIT: u32 = 25;

async fn ready(client: &kube::Client) -> Ready {
    let Ok(request) = http::Request::get("/readyz").body(Vec::new()) else {
        return Ready::No;
    };
    match client.request_text(request).await {
        Ok(_) => Ready::Yes,
        Err(kube::Error::Api(status)) if matches!(status.code, 401 | 403) => Ready::Forbidden,
        Err(_) => Ready::No,
    }
}

/// A client-side limit on requests to the API server: `burst` requests per window of
/// `burst / qps` seconds (tower's `RateLimit`), so `qps` a second on average and at most `burst`
/// at once after a quiet spell. Requests past it wait their turn, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ApiRate {
    /// Requests a second, on average.
    pub qps: u32,
    /// Requests one window allows.
    pub burst: u32,
}

impl ApiRate {
    /// `qps` requests a second with bursts of `burst` (default twice `qps`); `None` when `qps`
    /// is 0 (no client-side limit).
    pub fn new(qps: u32, burst: Option<u32>) -> Option<Self> {
        (qps > 0).then(|| Self {
            qps,
            burst: burst.unwrap_or(qps.saturating_mul(2)).max(1),
        })
    }

    /// The window one burst of requests is spread over.
    pub fn window(&self) -> Duration {
        Duration::from_secs_f64(f64::from(self.burst) / f64::from(self.qps))
    }
}

/// A client for `config` whose every answer and failure `contact` records, and whose requests
/// it counts and times ([`crate::watch::requests`]); with `rate`, no faster than it allows.
///
/// # Errors
/// The configuration cannot make a client (its TLS settings, say).
pub fn client(
    config: kube::Config,
    contact: &ApiContact,
    rate: Option<ApiRate>,
) -> Result<kube::Client, kube::Error> {
    let layer = tower::util::MapResultLayer::new(contact.observer());
    Ok(kube::client::ClientBuilder::try_from(config)?
        .with_layer(&layer)
        .with_layer(&contact.inner.requests.layer())
        .with_layer(&rate_layer(rate))
        .build())
}

/// The layer that holds requests to `rate` (none: passes them on at once).
pub fn rate_layer(
    rate: Option<ApiRate>,
) -> tower::util::Either<tower::limit::RateLimitLayer, tower::layer::util::Identity> {
    tower::util::option_layer(
        rate.map(|r| tower::limit::RateLimitLayer::new(u64::from(r.burst), r.window())),
    )
}

/// Whether `error` (or an error in its chain of sources) says the API server could not be
/// reached: a transport failure (refused, reset, timed out, TLS), or 502, 503 or 504 (the
/// server, or a load balancer in front of it, with no server to hand the request to). Such a
/// failure is the server's absence, not the object's fault. Not a 429: that is a server under
/// load throttling, and reconciling everything at its "return" would add to the load; nor a
/// 500, which one request (a failing webhook, say) can earn on a working server.
pub fn unreachable(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut next = Some(error);
    while let Some(error) = next {
        if let Some(error) = error.downcast_ref::<kube::Error>() {
            return match error {
                kube::Error::Api(status) => matches!(status.code, 502..=504),
                kube::Error::HyperError(_)
                | kube::Error::Service(_)
                | kube::Error::HttpError(_)
                | kube::Error::ReadEvents(_) => true,
                _ => false,
            };
        }
        next = error.source();
    }
    false
}

/// The backoff of a `Controller`'s merged triggers: none. kube's default (0.8 s doubling to
/// 30 s) pauses *every* trigger of a controller after an error of any one of them; each watch
/// ebb hands a controller waits by itself ([`resilient`]), so the merge need not.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoPause;

impl Iterator for NoPause {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        Some(Duration::ZERO)
    }
}

impl kube::runtime::utils::Backoff for NoPause {
    fn reset(&mut self) {}
}

/// How a watch failure is retried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Retry {
    /// 410: kube's watcher has dropped the stale version and lists anew; nothing to wait for.
    Now,
    /// 429: what the server asked, without moving the schedule.
    After(Duration),
    /// Anything else: the next step of the schedule.
    Backoff,
}

fn retry_of(error: &watcher::Error) -> Retry {
    let status = match error {
        watcher::Error::WatchError(status) => Some((status.code, None)),
        watcher::Error::InitialListFailed(kube::Error::Api(status))
        | watcher::Error::WatchFailed(kube::Error::Api(status)) => Some((
            status.code,
            status.details.as_ref().map(|d| d.retry_after_seconds),
        )),
        // A watch that cannot start at its version keeps asking for that version (kube's
        // watcher): retrying at once would spin, so it waits like any other failure.
        _ => None,
    };
    match status {
        Some((410, _)) => Retry::Now,
        Some((429, asked)) => Retry::After(
            asked
                .filter(|s| *s > 0)
                .map_or(TOO_MANY_REQUESTS_WAIT, |s| Duration::from_secs(s.into())),
        ),
        _ => Retry::Backoff,
    }
}

/// The retry schedule of a watch: [`RETRY_FIRST`] doubling to [`RETRY_CAP`], each with jitter.
fn schedule() -> backon::ExponentialBackoff {
    backon::ExponentialBuilder::default()
        .with_min_delay(RETRY_FIRST)
        .with_max_delay(RETRY_CAP)
        .with_factor(2.0)
        .with_jitter()
        .without_max_times()
        .build()
}

struct Resilient<S, F> {
    /// Makes the watch anew: kube's watcher, which starts with a list.
    make: F,
    events: Pin<Box<S>>,
    contact: ApiContact,
    /// The server's returns ([`ApiContact::wake_ups`]).
    returns: watch::Receiver<u64>,
    link: Arc<WatchLink>,
    schedule: backon::ExponentialBackoff,
    /// The healthy-answer count at the last failure that moved the schedule.
    failed_at: Option<u64>,
    /// How long to wait before polling the watch again.
    pause: Option<Duration>,
    /// The watch failed and has not delivered since (logged once per outage).
    failing: bool,
    /// What is watched, for the logs.
    what: String,
}

impl<S, F: Fn() -> S> Resilient<S, F> {
    /// A failing watch, at the server's return, starts anew with a list: resumed at its old
    /// version it waits for the restarted server's watch cache of its kind, which served the 410
    /// up to 5 s after `/readyz` for custom resources, while a list is answered at once.
    fn anew(&mut self) {
        tracing::debug!(watch = %self.what, "the server is back: listing anew");
        self.events = Box::pin((self.make)());
        self.pause = None;
    }
}

/// The watch `make` makes (a kube watcher's stream, or one built on it), retried as the module
/// docs say: errors pass through (for logging), the stream waits after each before it asks
/// again, and a watch still failing when the server returns is made anew.
pub fn resilient<K, S, F>(
    make: F,
    contact: &ApiContact,
    what: &str,
) -> impl Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send + use<K, S, F>
where
    K: Send + 'static,
    S: Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send + 'static,
    F: Fn() -> S + Send + 'static,
{
    let mut returns = contact.inner.returns.subscribe();
    returns.mark_unchanged();
    let state = Resilient {
        events: Box::pin(make()),
        make,
        contact: contact.clone(),
        returns,
        link: contact.link(),
        schedule: schedule(),
        failed_at: None,
        pause: None,
        failing: false,
        what: what.to_owned(),
    };
    futures::stream::unfold(state, |mut s| async move {
        let item = loop {
            let failing = s.failing;
            if let Some(pause) = s.pause.take() {
                tokio::select! {
                    () = tokio::time::sleep(pause) => {}
                    changed = s.returns.changed(), if failing => {
                        if changed.is_ok() {
                            s.anew();
                        }
                    }
                }
                continue;
            }
            tokio::select! {
                biased;
                changed = s.returns.changed(), if failing => {
                    if changed.is_ok() {
                        s.anew();
                    }
                }
                item = s.events.next() => break item?,
            }
        };
        match &item {
            // kube's watcher says Init before it lists: not yet an answer.
            Ok(watcher::Event::Init) => {}
            Ok(_) => {
                if s.failing {
                    tracing::info!(watch = %s.what, "watch delivers again");
                }
                s.failing = false;
                s.failed_at = None;
                s.link.set(None);
                s.schedule = schedule();
            }
            Err(error) => {
                let healthy = s.contact.healthy_answers();
                s.link.set(Some(healthy));
                let retry = retry_of(error);
                if s.failing {
                    tracing::debug!(watch = %s.what, %error, ?retry, "watch failed again");
                } else {
                    tracing::warn!(watch = %s.what, %error, ?retry, "watch failed; retrying");
                    // Only a return after this failure makes the watch anew.
                    s.returns.mark_unchanged();
                }
                s.failing = true;
                s.pause = match retry {
                    Retry::Now => None,
                    Retry::After(asked) => Some(asked),
                    // The probe knocks for every watch, and the return wakes this one.
                    Retry::Backoff if s.contact.is_lost() => Some(LOST_RETRY),
                    Retry::Backoff => {
                        // The server answered since the last failure: a new outage starts the
                        // schedule over.
                        if s.failed_at.is_some_and(|at| at != healthy) {
                            s.schedule = schedule();
                        }
                        s.failed_at = Some(healthy);
                        s.schedule.next()
                    }
                };
            }
        }
        Some((item, s))
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::ManualClock;

    fn contact() -> ApiContact {
        ApiContact::new(Arc::new(ManualClock::new(
            "2026-11-26T12:00:00Z".parse().unwrap(),
        )))
    }

    fn status(code: u16) -> kube::core::Status {
        let mut s = kube::core::Status::failure("x", "y");
        s.code = code;
        s
    }

    fn api(code: u16) -> kube::Error {
        kube::Error::Api(Box::new(status(code)))
    }

    #[test]
    fn a_410_relists_at_once_a_429_waits_what_was_asked() {
        let gone = watcher::Error::WatchError(Box::new(status(410)));
        assert_eq!(retry_of(&gone), Retry::Now);
        assert_eq!(
            retry_of(&watcher::Error::InitialListFailed(api(429))),
            Retry::After(TOO_MANY_REQUESTS_WAIT)
        );
        let mut asked = status(429);
        asked.details =
            Some(serde_json::from_value(serde_json::json!({"retryAfterSeconds": 3})).unwrap());
        assert_eq!(
            retry_of(&watcher::Error::WatchFailed(kube::Error::Api(Box::new(
                asked
            )))),
            Retry::After(Duration::from_secs(3))
        );
        // A watch refused at its version asks for the same version again: not at once.
        assert_eq!(
            retry_of(&watcher::Error::WatchStartFailed(api(410))),
            Retry::Backoff
        );
        assert_eq!(
            retry_of(&watcher::Error::InitialListFailed(api(503))),
            Retry::Backoff
        );
    }

    #[test]
    fn the_schedule_is_short_capped_and_jittered() {
        let delays: Vec<Duration> = schedule().take(20).collect();
        // Up to as much again: backon's jitter multiplies in f32, so a draw just below 1 can
        // round to the whole delay again.
        assert!(delays[0] >= RETRY_FIRST && delays[0] <= RETRY_FIRST * 2);
        for delay in &delays[2..] {
            assert!(*delay >= RETRY_CAP && *delay <= RETRY_CAP * 2, "{delay:?}");
        }
        // Jitter: twenty waits at the cap are not all the same.
        assert!(delays[2..].windows(2).any(|w| w[0] != w[1]));
    }

    #[test]
    fn what_the_servers_absence_explains() {
        assert!(unreachable(&api(503)));
        assert!(unreachable(&api(502)));
        assert!(unreachable(&api(504)));
        assert!(!unreachable(&api(429)), "throttled, not away");
        assert!(
            !unreachable(&api(500)),
            "one request failed, not the server"
        );
        assert!(!unreachable(&api(409)));
        assert!(!unreachable(&api(404)));
        let service = kube::Error::Service("connection refused".into());
        assert!(unreachable(&service));
        #[derive(Debug, thiserror::Error)]
        #[error("write failed")]
        struct Wrapped(#[source] kube::Error);
        assert!(unreachable(&Wrapped(api(503))));
        assert!(!unreachable(&Wrapped(api(422))));
    }

    /// A restarted server answers (403 while its RBAC loads) before it is ready: only its
    /// `/readyz` ends the loss, once, and reads are fresh for a while after.
    #[tokio::test]
    async fn a_loss_ends_once_when_the_server_is_ready() {
        let clock = ManualClock::new("2026-11-26T12:00:00Z".parse().unwrap());
        let contact = ApiContact::new(Arc::new(clock.clone()));
        let mut returns = Box::pin(contact.wake_ups());
        assert_eq!(contact.last_answer(), None);
        contact.answered(Answer::Healthy);
        assert_eq!(contact.last_answer(), Some(1_795_694_400.0));
        contact.server_ready();
        assert!(!contact.reads_fresh(), "no return without a loss");
        contact.failed();
        contact.failed();
        contact.answered(Answer::Struggling);
        contact.answered(Answer::Healthy);
        assert!(contact.is_lost(), "an answer is not readiness");
        contact.server_ready();
        contact.server_ready();
        assert!(!contact.is_lost());
        assert!(contact.reads_fresh());
        clock.advance(jiff::SignedDuration::try_from(FRESH_READS).unwrap());
        assert!(!contact.reads_fresh());
        assert_eq!(returns.next().await, Some(()));
        let pending = tokio::time::timeout(Duration::from_millis(20), returns.next()).await;
        assert!(pending.is_err(), "one return, not one per answer");
    }

    #[tokio::test(start_paused = true)]
    async fn a_failing_watch_waits_and_counts_as_disconnected_until_the_server_answers() {
        let contact = contact();
        let items: Vec<Result<watcher::Event<u32>, watcher::Error>> = vec![
            Ok(watcher::Event::Init),
            Err(watcher::Error::InitialListFailed(api(503))),
            Ok(watcher::Event::Init),
            Err(watcher::Error::InitialListFailed(api(503))),
            Err(watcher::Error::WatchError(Box::new(status(410)))),
            Ok(watcher::Event::Apply(1)),
        ];
        let once = Mutex::new(Some(items));
        let make = move || {
            futures::stream::iter(
                once.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .take()
                    .unwrap_or_default(),
            )
        };
        let mut stream = Box::pin(resilient(make, &contact, "test"));
        let start = tokio::time::Instant::now();
        assert!(matches!(
            stream.next().await,
            Some(Ok(watcher::Event::Init))
        ));
        assert!(stream.next().await.unwrap().is_err());
        assert_eq!(contact.watches(), (1, 0));
        // The Init of the next attempt is not an answer: the schedule moves on.
        assert!(matches!(
            stream.next().await,
            Some(Ok(watcher::Event::Init))
        ));
        assert!(stream.next().await.unwrap().is_err());
        let waited = start.elapsed();
        assert!(
            waited >= RETRY_FIRST && waited <= RETRY_FIRST * 2,
            "{waited:?}"
        );
        assert_eq!(contact.watches(), (1, 0));
        // The server answers (the relist's request): the watch counts as connected again.
        contact.answered(Answer::Healthy);
        assert_eq!(contact.watches(), (1, 1));
        assert!(stream.next().await.unwrap().is_err());
        let gone = tokio::time::Instant::now();
        assert!(matches!(
            stream.next().await,
            Some(Ok(watcher::Event::Apply(1)))
        ));
        assert_eq!(gone.elapsed(), Duration::ZERO, "a 410 relists at once");
        assert_eq!(contact.watches(), (1, 1));
        drop(stream);
        assert_eq!(contact.watches(), (0, 0));
    }

    /// While the server is lost a failing watch leaves the knocking to the probe: it waits
    /// [`LOST_RETRY`], not the short schedule, and the return makes it anew at once.
    #[tokio::test(start_paused = true)]
    async fn a_watch_failing_while_the_server_is_lost_waits_for_its_return() {
        let contact = contact();
        let made = Arc::new(AtomicU64::new(0));
        let counter = made.clone();
        // Like kube's watcher, each poll after a failure tries again (and fails again).
        let make = move || {
            counter.fetch_add(1, Ordering::AcqRel);
            futures::stream::repeat_with(|| {
                Err::<watcher::Event<u64>, _>(watcher::Error::InitialListFailed(api(503)))
            })
        };
        contact.failed();
        let mut stream = Box::pin(resilient(make, &contact, "test"));
        assert!(stream.next().await.unwrap().is_err());
        let start = tokio::time::Instant::now();
        assert!(stream.next().await.unwrap().is_err());
        assert_eq!(
            start.elapsed(),
            LOST_RETRY,
            "one attempt per LOST_RETRY while lost"
        );
        let waiting = tokio::time::timeout(LOST_RETRY / 2, stream.next()).await;
        assert!(waiting.is_err(), "still waiting");
        assert_eq!(made.load(Ordering::Acquire), 1);
        let back = tokio::time::Instant::now();
        contact.server_ready();
        assert!(stream.next().await.unwrap().is_err());
        assert_eq!(
            back.elapsed(),
            Duration::ZERO,
            "the return wakes it at once"
        );
        assert_eq!(made.load(Ordering::Acquire), 2, "made anew at the return");
    }

    /// A watch that failed and hangs at its old version is made anew (a list) when the server
    /// returns, without waiting for the hung request.
    #[tokio::test(start_paused = true)]
    async fn a_failing_watch_starts_anew_at_the_return() {
        let contact = contact();
        let made = Arc::new(AtomicU64::new(0));
        let counter = made.clone();
        let make = move || {
            let n = counter.fetch_add(1, Ordering::AcqRel);
            let items: Vec<Result<watcher::Event<u64>, watcher::Error>> = if n == 0 {
                vec![Err(watcher::Error::WatchFailed(api(503)))]
            } else {
                vec![Ok(watcher::Event::Apply(n))]
            };
            futures::stream::iter(items).chain(futures::stream::pending())
        };
        let mut stream = Box::pin(resilient(make, &contact, "test"));
        assert!(stream.next().await.unwrap().is_err());
        contact.failed();
        let hung = tokio::time::timeout(Duration::from_secs(5), stream.next()).await;
        assert!(hung.is_err(), "the old watch hangs");
        contact.server_ready();
        assert!(matches!(
            stream.next().await,
            Some(Ok(watcher::Event::Apply(1)))
        ));
        assert_eq!(made.load(Ordering::Acquire), 2);
    }
}
