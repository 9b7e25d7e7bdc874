//! `--metrics-auth`: `/metrics` answers only a caller the API server vouches for, as
//! controller-runtime's authenticated metrics do. The caller's bearer token is checked with a
//! TokenReview; the user it names must be allowed `get` on the non-resource URL `/metrics`
//! (a SubjectAccessReview), which a cluster operator grants with a ClusterRole such as the
//! charts' `<release>-metrics-reader`. Answers are kept for [`CACHE_TTL`], so a scrape every 30 s
//! costs the API server two small requests a minute per scraper.
//!
//! Two things keep the metrics readable when they matter ([`Verdicts`]):
//! - **An outage**: a token the API server once vouched for keeps its verdict past its lifetime
//!   while the reviews that would renew it fail, so Prometheus still scrapes the controller that
//!   reports the API server unreachable (its alert needs the series it scrapes).
//! - **Strangers**: tokens never vouched for are reviewed at most [`REVIEW_BURST`] at once and
//!   [`REVIEW_RATE`] a second; past that the caller is told to come back (429) and the API
//!   server is not asked. Known callers are kept apart from strangers, so no flood of random
//!   tokens evicts the scraper's verdict: its scrapes cost no review within the lifetime.
//!
//! `/healthz` and `/readyz` stay open: the kubelet's probes carry no token.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::Client;
use kube::api::{Api, PostParams};

/// How long a verdict on one token is kept (while the API server answers).
pub const CACHE_TTL: Duration = Duration::from_secs(60);
/// At most this many callers the API server authenticated are remembered (a cluster has a few
/// scrapers); past it the one judged longest ago is forgotten.
const KNOWN_MAX: usize = 256;
/// At most this many tokens it refused are remembered; past it they are forgotten together.
const REFUSED_MAX: usize = 1024;
/// Reviews of tokens never vouched for that may start at once.
pub const REVIEW_BURST: u32 = 5;
/// Reviews of tokens never vouched for, per second, past the burst.
pub const REVIEW_RATE: u32 = 4;

/// What the API server said of a caller.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Authenticated and allowed `get /metrics`.
    Allowed,
    /// The token is not valid (401).
    Unauthenticated,
    /// Valid, but the user may not read `/metrics` (403), named for the log.
    Forbidden(String),
    /// Not asked: too many unknown tokens came at once (429); come back later.
    Throttled,
}

/// Decides whether a bearer token may read `/metrics`.
pub trait MetricsAuth: Send + Sync {
    /// The verdict on `token`, or why it could not be had (the API server's error).
    fn check<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Verdict, String>>;
}

/// One review of a token by the API server (TokenReview, then SubjectAccessReview).
pub trait Review: Send + Sync {
    /// The API server's verdict on `token`, or its error.
    fn review<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Verdict, String>>;
}

/// What was decided of tokens, by the hash of each, and the pace of reviews of strangers: the
/// rules of [`KubeAuth`] without the API server or a clock (`now` is given).
#[derive(Debug)]
pub struct Verdicts {
    ttl: Duration,
    /// Tokens the API server authenticated (allowed or forbidden), with when it said so.
    known: HashMap<u64, (Instant, Verdict)>,
    /// Tokens it did not authenticate, with when it said so.
    refused: HashMap<u64, Instant>,
    /// Reviews of strangers that may start now, and when the count was last topped up.
    tokens: f64,
    topped_up: Option<Instant>,
}

/// What [`Verdicts::lookup`] says to do for a token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Lookup {
    /// Answer this; no review.
    Known(Verdict),
    /// Ask the API server.
    Review,
    /// Answer [`Verdict::Throttled`]; no review.
    Throttled,
}

impl Verdicts {
    /// Verdicts kept `ttl` while the API server answers.
    pub fn new(ttl: Duration) -> Self {
        Self {
            ttl,
            known: HashMap::new(),
            refused: HashMap::new(),
            tokens: f64::from(REVIEW_BURST),
            topped_up: None,
        }
    }

    /// What to do for token `key` at `now`: a verdict still in its lifetime is answered; a known
    /// caller's old verdict is reviewed again without limit (the review decides, or
    /// [`Self::failed`] keeps the old verdict); a stranger is reviewed within the pace, else
    /// throttled.
    pub fn lookup(&mut self, key: u64, now: Instant) -> Lookup {
        let fresh = |at: Instant| now.saturating_duration_since(at) < self.ttl;
        if let Some((at, verdict)) = self.known.get(&key) {
            return match fresh(*at) {
                true => Lookup::Known(verdict.clone()),
                false => Lookup::Review,
            };
        }
        if let Some(at) = self.refused.get(&key)
            && fresh(*at)
        {
            return Lookup::Known(Verdict::Unauthenticated);
        }
        self.top_up(now);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            Lookup::Review
        } else {
            Lookup::Throttled
        }
    }

    /// Keeps the API server's `verdict` on `key`, given at `now`.
    pub fn reviewed(&mut self, key: u64, verdict: &Verdict, now: Instant) {
        match verdict {
            Verdict::Allowed | Verdict::Forbidden(_) => {
                self.refused.remove(&key);
                if self.known.len() >= KNOWN_MAX
                    && !self.known.contains_key(&key)
                    && let Some(oldest) = self.known.iter().min_by_key(|(_, (at, _))| *at)
                {
                    let oldest = *oldest.0;
                    self.known.remove(&oldest);
                }
                self.known.insert(key, (now, verdict.clone()));
            }
            Verdict::Unauthenticated => {
                self.known.remove(&key);
                if self.refused.len() >= REFUSED_MAX {
                    self.refused.clear();
                }
                self.refused.insert(key, now);
            }
            Verdict::Throttled => {}
        }
    }

    /// The review of `key` failed (the API server is not answering): the verdict it last gave on
    /// that caller, however old, if it authenticated it.
    pub fn failed(&self, key: u64) -> Option<Verdict> {
        self.known.get(&key).map(|(_, verdict)| verdict.clone())
    }

    fn top_up(&mut self, now: Instant) {
        if let Some(last) = self.topped_up {
            let gained = now.saturating_duration_since(last).as_secs_f64() * f64::from(REVIEW_RATE);
            self.tokens = (self.tokens + gained).min(f64::from(REVIEW_BURST));
        }
        self.topped_up = Some(now);
    }
}

/// [`MetricsAuth`] by a [`Review`] (the API server's, [`ApiReview`]), its verdicts kept as
/// [`Verdicts`] says.
pub struct KubeAuth<R = ApiReview> {
    review: R,
    hasher: RandomState,
    verdicts: Mutex<Verdicts>,
}

impl KubeAuth {
    /// Asks the API server `client` talks to; verdicts kept `ttl`.
    pub fn new(client: Client, ttl: Duration) -> Self {
        Self::with_review(ApiReview { client }, ttl)
    }
}

impl<R: Review> KubeAuth<R> {
    /// Asks `review`; verdicts kept `ttl`.
    pub fn with_review(review: R, ttl: Duration) -> Self {
        Self {
            review,
            hasher: RandomState::new(),
            verdicts: Mutex::new(Verdicts::new(ttl)),
        }
    }

    fn verdicts(&self) -> std::sync::MutexGuard<'_, Verdicts> {
        self.verdicts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// [`MetricsAuth::check`] at `now`.
    pub async fn check_at(&self, token: &str, now: Instant) -> Result<Verdict, String> {
        let key = self.hasher.hash_one(token);
        let lookup = self.verdicts().lookup(key, now);
        match lookup {
            Lookup::Known(verdict) => Ok(verdict),
            Lookup::Throttled => Ok(Verdict::Throttled),
            Lookup::Review => match self.review.review(token).await {
                Ok(verdict) => {
                    self.verdicts().reviewed(key, &verdict, now);
                    Ok(verdict)
                }
                Err(error) => match self.verdicts().failed(key) {
                    Some(verdict) => {
                        tracing::debug!(%error, "cannot review a known /metrics caller; its last verdict stands");
                        Ok(verdict)
                    }
                    None => Err(error),
                },
            },
        }
    }
}

impl<R: Review> MetricsAuth for KubeAuth<R> {
    fn check<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Verdict, String>> {
        Box::pin(self.check_at(token, Instant::now()))
    }
}

/// [`Review`] by the API server `client` talks to.
pub struct ApiReview {
    client: Client,
}

impl ApiReview {
    async fn ask(&self, token: &str) -> Result<Verdict, kube::Error> {
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: Some(token.to_owned()),
                audiences: None,
            },
            ..TokenReview::default()
        };
        let reviewed = Api::<TokenReview>::all(self.client.clone())
            .create(&PostParams::default(), &review)
            .await?;
        let status = reviewed.status.unwrap_or_default();
        let Some(user) = status.user.filter(|_| status.authenticated == Some(true)) else {
            return Ok(Verdict::Unauthenticated);
        };
        let name = user.username.clone().unwrap_or_default();
        let access = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: user.username,
                groups: user.groups,
                uid: user.uid,
                extra: user.extra,
                non_resource_attributes: Some(NonResourceAttributes {
                    path: Some("/metrics".into()),
                    verb: Some("get".into()),
                }),
                ..SubjectAccessReviewSpec::default()
            },
            ..SubjectAccessReview::default()
        };
        let decided = Api::<SubjectAccessReview>::all(self.client.clone())
            .create(&PostParams::default(), &access)
            .await?;
        if decided.status.is_some_and(|s| s.allowed) {
            Ok(Verdict::Allowed)
        } else {
            Ok(Verdict::Forbidden(name))
        }
    }
}

impl Review for ApiReview {
    fn review<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Verdict, String>> {
        Box::pin(async move { self.ask(token).await.map_err(|e| e.to_string()) })
    }
}

/// The bearer token of an `Authorization` header value, if it is one.
pub fn bearer(header: &str) -> Option<&str> {
    let (scheme, token) = header.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    /// An API server that vouches for the token "scraper", counts its reviews and can be down.
    #[derive(Default)]
    struct Server {
        reviews: AtomicUsize,
        down: AtomicBool,
    }

    impl Review for &Server {
        fn review<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Verdict, String>> {
            self.reviews.fetch_add(1, Ordering::SeqCst);
            Box::pin(async move {
                match (self.down.load(Ordering::SeqCst), token) {
                    (true, _) => Err("connection refused".to_owned()),
                    (false, "scraper") => Ok(Verdict::Allowed),
                    (false, _) => Ok(Verdict::Unauthenticated),
                }
            })
        }
    }

    fn check(auth: &KubeAuth<&Server>, token: &str, now: Instant) -> Result<Verdict, String> {
        futures::executor::block_on(auth.check_at(token, now))
    }

    /// 10 000 random tokens in 10 s, the scraper's token among them every 30 ms: at most 50
    /// reviews in all, none of them the scraper's after its first, which is always allowed.
    #[test]
    fn a_flood_of_strangers_costs_few_reviews_and_the_scraper_none() {
        let server = Server::default();
        let auth = KubeAuth::with_review(&server, CACHE_TTL);
        let start = Instant::now();
        assert_eq!(check(&auth, "scraper", start), Ok(Verdict::Allowed));
        let mut throttled = 0;
        for i in 0..10_000u64 {
            let now = start + Duration::from_millis(i);
            let token = format!("random-{:016x}", i.wrapping_mul(0x9e37_79b9_7f4a_7c15));
            match check(&auth, &token, now).unwrap() {
                Verdict::Throttled => throttled += 1,
                verdict => assert_eq!(verdict, Verdict::Unauthenticated),
            }
            if i % 30 == 0 {
                assert_eq!(check(&auth, "scraper", now), Ok(Verdict::Allowed));
            }
        }
        let reviews = server.reviews.load(Ordering::SeqCst);
        assert!(reviews <= 50, "{reviews} reviews");
        assert!(reviews > 1, "strangers are still reviewed at a pace");
        assert_eq!(throttled + reviews - 1, 10_000);
    }

    /// The scraper's verdict outlives its lifetime while the API server is down (each scrape
    /// asks again, and the old verdict stands); a stranger gets the error. Once the server is
    /// back, the verdict is renewed.
    #[test]
    fn a_known_callers_verdict_outlives_an_outage() {
        let server = Server::default();
        let ttl = Duration::from_secs(5);
        let auth = KubeAuth::with_review(&server, ttl);
        let start = Instant::now();
        assert_eq!(check(&auth, "scraper", start), Ok(Verdict::Allowed));
        server.down.store(true, Ordering::SeqCst);
        for seconds in [1, 6, 30, 600] {
            let now = start + Duration::from_secs(seconds);
            assert_eq!(
                check(&auth, "scraper", now),
                Ok(Verdict::Allowed),
                "{seconds} s"
            );
        }
        assert!(check(&auth, "stranger", start + Duration::from_secs(601)).is_err());
        server.down.store(false, Ordering::SeqCst);
        let reviews = server.reviews.load(Ordering::SeqCst);
        let later = start + Duration::from_secs(602);
        assert_eq!(check(&auth, "scraper", later), Ok(Verdict::Allowed));
        assert_eq!(server.reviews.load(Ordering::SeqCst), reviews + 1);
        // Renewed: no review within the lifetime from then.
        assert_eq!(
            check(&auth, "scraper", later + Duration::from_secs(4)),
            Ok(Verdict::Allowed)
        );
        assert_eq!(server.reviews.load(Ordering::SeqCst), reviews + 1);
    }

    /// A token the server refused is not reviewed again within the lifetime, and a refused
    /// verdict is never kept through an outage.
    #[test]
    fn a_refused_token_is_remembered_for_its_lifetime_only() {
        let server = Server::default();
        let auth = KubeAuth::with_review(&server, CACHE_TTL);
        let start = Instant::now();
        assert_eq!(check(&auth, "forged", start), Ok(Verdict::Unauthenticated));
        assert_eq!(
            check(&auth, "forged", start + Duration::from_secs(59)),
            Ok(Verdict::Unauthenticated)
        );
        assert_eq!(server.reviews.load(Ordering::SeqCst), 1);
        server.down.store(true, Ordering::SeqCst);
        assert!(check(&auth, "forged", start + Duration::from_secs(61)).is_err());
    }
}
