//! `--metrics-auth`: `/metrics` answers only a caller the API server vouches for, as
//! controller-runtime's authenticated metrics do. The caller's bearer token is checked with a
//! TokenReview; the user it names must be allowed `get` on the non-resource URL `/metrics`
//! (a SubjectAccessReview), which a cluster operator grants with a ClusterRole such as the
//! charts' `<release>-metrics-reader`. Answers are kept for [`CACHE_TTL`], so a scrape every 30 s
//! costs the API server two small requests a minute per scraper.
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

/// How long a verdict on one token is kept.
pub const CACHE_TTL: Duration = Duration::from_secs(60);
/// At most this many tokens are remembered; past it the cache starts over.
const CACHE_MAX: usize = 1024;

/// What the API server said of a caller.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Authenticated and allowed `get /metrics`.
    Allowed,
    /// The token is not valid (401).
    Unauthenticated,
    /// Valid, but the user may not read `/metrics` (403), named for the log.
    Forbidden(String),
}

/// Decides whether a bearer token may read `/metrics`.
pub trait MetricsAuth: Send + Sync {
    /// The verdict on `token`, or why it could not be had (the API server's error).
    fn check<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Verdict, String>>;
}

/// [`MetricsAuth`] through the API server: TokenReview, then SubjectAccessReview, cached.
pub struct KubeAuth {
    client: Client,
    hasher: RandomState,
    cache: Mutex<HashMap<u64, (Instant, Verdict)>>,
}

impl KubeAuth {
    /// Asks the API server `client` talks to.
    pub fn new(client: Client) -> Self {
        Self {
            client,
            hasher: RandomState::new(),
            cache: Mutex::new(HashMap::new()),
        }
    }

    async fn review(&self, token: &str) -> Result<Verdict, kube::Error> {
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

impl MetricsAuth for KubeAuth {
    fn check<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Verdict, String>> {
        Box::pin(async move {
            let key = self.hasher.hash_one(token);
            let now = Instant::now();
            if let Some((at, verdict)) = self.cache_get(key)
                && now.duration_since(at) < CACHE_TTL
            {
                return Ok(verdict);
            }
            let verdict = self.review(token).await.map_err(|e| e.to_string())?;
            let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            if cache.len() >= CACHE_MAX {
                cache.clear();
            }
            cache.insert(key, (now, verdict.clone()));
            Ok(verdict)
        })
    }
}

impl KubeAuth {
    fn cache_get(&self, key: u64) -> Option<(Instant, Verdict)> {
        let cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        cache.get(&key).cloned()
    }
}

/// The bearer token of an `Authorization` header value, if it is one.
pub fn bearer(header: &str) -> Option<&str> {
    let (scheme, token) = header.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}
