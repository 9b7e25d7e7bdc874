//! Two installs of one controller whose scopes overlap would both write the same objects. Each
//! install publishes its scope on its leader Lease (label [`CONTROLLER_LABEL`], annotation
//! [`SCOPE_ANNOTATION`]); the leader of each looks at the other installs' Leases every
//! [`CHECK_EVERY`] and, while an older install whose scope overlaps its own is alive, stands down:
//! it keeps its Lease and its caches but writes nothing ([`Leader::stand_down`]), its `leader`
//! gauge reads 0 (so the charts' `EbbNoLeader` alert fires for it), its `overlapping_installs`
//! gauge counts the rivals, and it logs which install and what to change. The older install goes
//! on writing and reports the overlap in the same gauge and log.
//!
//! Scopes overlap unless their namespaces are disjoint (for a namespaced kind) or their label
//! selectors provably select different objects (both require one key to equal different values).
//! An install is alive while its Lease has a holder renewed within [`ALIVE_FOR`].

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, ListParams, Patch, PatchParams};
use kube::{Client, ResourceExt};
use prometheus_client::metrics::gauge::Gauge;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::clock::Clock;
use crate::lead::leader::{LEASE_DURATION_SECS, Leader};
use crate::shutdown::Shutdown;
use crate::time::from_k8s_time;

/// The Lease label naming the controller, on every ebb Lease.
pub const CONTROLLER_LABEL: &str = "scaling.ebb.dev/controller";
/// The Lease annotation holding the install's [`Scope`] as JSON.
pub const SCOPE_ANNOTATION: &str = "scaling.ebb.dev/scope";
/// How often the leader looks at the other installs' Leases.
pub const CHECK_EVERY: Duration = Duration::from_secs(30);
/// A Lease renewed this long ago still belongs to a running install.
pub const ALIVE_FOR: Duration = Duration::from_secs(2 * LEASE_DURATION_SECS);

/// What an install manages: `--namespace` (empty: all) and `--label-selector`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Scope {
    /// The watched namespaces; empty means all (or the kind is cluster-scoped).
    #[serde(default)]
    pub namespaces: Vec<String>,
    /// The label selector, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<String>,
}

impl Scope {
    /// Whether an object could be in both scopes.
    pub fn overlaps(&self, other: &Scope) -> bool {
        let namespaces = self.namespaces.is_empty()
            || other.namespaces.is_empty()
            || self.namespaces.iter().any(|n| other.namespaces.contains(n));
        namespaces
            && !disjoint(
                self.label_selector.as_deref(),
                other.label_selector.as_deref(),
            )
    }

    fn describe(&self) -> String {
        let namespaces = if self.namespaces.is_empty() {
            "all namespaces".to_owned()
        } else {
            format!("namespaces {}", self.namespaces.join(","))
        };
        match &self.label_selector {
            Some(selector) => format!("{namespaces}, selector {selector:?}"),
            None => format!("{namespaces}, no selector"),
        }
    }
}

/// The `key=value` (and `key==value`) requirements of a selector; other kinds are ignored.
fn equalities(selector: &str) -> BTreeMap<&str, &str> {
    selector
        .split(',')
        .filter_map(|term| {
            let term = term.trim();
            if term.contains("!=") {
                return None;
            }
            let (key, value) = term.split_once("==").or_else(|| term.split_once('='))?;
            Some((key.trim(), value.trim()))
        })
        .collect()
}

/// Whether no object can match both selectors: both require one key to equal different values.
fn disjoint(a: Option<&str>, b: Option<&str>) -> bool {
    let (Some(a), Some(b)) = (a, b) else {
        return false;
    };
    let b = equalities(b);
    equalities(a)
        .into_iter()
        .any(|(key, value)| b.get(key).is_some_and(|other| *other != value))
}

/// One install as its Lease shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Install {
    /// `namespace/name` of its Lease.
    pub lease: String,
    /// Its scope (none published: everything).
    pub scope: Scope,
    /// When its Lease was created: the older install keeps writing.
    pub since: Option<Timestamp>,
    /// Whether a holder renewed the Lease within [`ALIVE_FOR`] of now.
    pub alive: bool,
}

impl Install {
    /// The install a Lease stands for, at `now`.
    pub fn of(lease: &Lease, now: Timestamp) -> Self {
        let spec = lease.spec.clone().unwrap_or_default();
        let alive = spec.holder_identity.is_some_and(|h| !h.is_empty())
            && spec.renew_time.as_ref().is_some_and(|renewed| {
                // A MicroTime holds the same instant type as a Time.
                let renewed = from_k8s_time(&Time(renewed.0));
                std::time::Duration::try_from(now.duration_since(renewed))
                    .map_or(true, |age| age <= ALIVE_FOR)
            });
        let scope = lease
            .annotations()
            .get(SCOPE_ANNOTATION)
            .and_then(|s| serde_json::from_str(s).ok())
            .unwrap_or_default();
        Self {
            lease: format!(
                "{}/{}",
                lease.namespace().unwrap_or_default(),
                lease.name_any()
            ),
            scope,
            since: lease
                .metadata
                .creation_timestamp
                .as_ref()
                .map(from_k8s_time),
            alive,
        }
    }

    /// Whether this install came first (older Lease; the same instant: the smaller name).
    fn before(&self, other: &Install) -> bool {
        (self.since, &self.lease) < (other.since, &other.lease)
    }
}

/// The other live installs whose scope overlaps `me`'s, and whether `me` must stand down (one of
/// them came first).
pub fn rivals<'a>(me: &Install, others: &'a [Install]) -> (Vec<&'a Install>, bool) {
    let rivals: Vec<&Install> = others
        .iter()
        .filter(|o| o.lease != me.lease && o.alive && o.scope.overlaps(&me.scope))
        .collect();
    let stand_down = rivals.iter().any(|o| o.before(me));
    (rivals, stand_down)
}

/// What [`Watcher::run`] needs: this install's Lease and scope, and where to report.
pub struct Watcher {
    /// The API client.
    pub client: Client,
    /// The controller's name (the Leases' [`CONTROLLER_LABEL`]).
    pub controller: String,
    /// This install's Lease: namespace and name.
    pub lease_namespace: String,
    /// See `lease_namespace`.
    pub lease_name: String,
    /// This install's scope.
    pub scope: Scope,
    /// Made to stand down while an older install overlaps.
    pub leader: Leader,
    /// `overlapping_installs`: the live rivals.
    pub overlapping: Gauge,
    /// The source of "now" (how fresh a Lease is).
    pub clock: Arc<dyn Clock>,
    /// Ends the watch.
    pub shutdown: Shutdown,
}

impl Watcher {
    /// Publishes this install's scope on its Lease, then, every [`CHECK_EVERY`] until shutdown,
    /// compares it with the other installs' and makes the leader stand down while an older one
    /// overlaps. A failed read changes nothing (logged).
    pub async fn run(self) {
        let Watcher {
            client,
            controller,
            lease_namespace,
            lease_name,
            scope,
            leader,
            overlapping,
            clock,
            shutdown,
        } = self;
        let mine: Api<Lease> = Api::namespaced(client.clone(), &lease_namespace);
        let publish = json!({"metadata": {
            "labels": {CONTROLLER_LABEL: controller},
            "annotations": {SCOPE_ANNOTATION: serde_json::to_string(&scope).unwrap_or_default()},
        }});
        if let Err(error) = mine
            .patch(
                &lease_name,
                &PatchParams::default(),
                &Patch::Merge(&publish),
            )
            .await
        {
            tracing::warn!(%error, "cannot publish this install's scope on its Lease");
        }
        let all: Api<Lease> = Api::all(client);
        let selected = ListParams::default().labels(&format!("{CONTROLLER_LABEL}={controller}"));
        let me_lease = format!("{lease_namespace}/{lease_name}");
        loop {
            match all.list(&selected).await {
                Ok(leases) => {
                    let now = clock.now();
                    let installs: Vec<Install> =
                        leases.items.iter().map(|l| Install::of(l, now)).collect();
                    let me = installs
                        .iter()
                        .find(|i| i.lease == me_lease)
                        .cloned()
                        .unwrap_or(Install {
                            lease: me_lease.clone(),
                            scope: scope.clone(),
                            since: None,
                            alive: true,
                        });
                    let (rivals, stand_down) = rivals(&me, &installs);
                    overlapping.set(i64::try_from(rivals.len()).unwrap_or(i64::MAX));
                    for rival in &rivals {
                        tracing::warn!(
                            this = %me.lease,
                            this_scope = %me.scope.describe(),
                            other = %rival.lease,
                            other_scope = %rival.scope.describe(),
                            standing_down = stand_down,
                            "another install of {controller} manages some of the same objects: \
                             the newer one writes nothing until their --namespace or \
                             --label-selector no longer overlap, or one is uninstalled"
                        );
                    }
                    if leader.is_standing_down() != stand_down {
                        tracing::warn!(stand_down, "overlap with an older install changed");
                    }
                    leader.stand_down(stand_down);
                }
                Err(error) => tracing::warn!(%error, "cannot list the other installs' Leases"),
            }
            tokio::select! {
                () = shutdown.cancelled() => return,
                () = tokio::time::sleep(CHECK_EVERY) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn scope(namespaces: &[&str], selector: Option<&str>) -> Scope {
        Scope {
            namespaces: namespaces.iter().map(|n| (*n).to_owned()).collect(),
            label_selector: selector.map(str::to_owned),
        }
    }

    #[test]
    fn scopes_overlap_unless_namespaces_or_selectors_keep_them_apart() {
        let all = scope(&[], None);
        assert!(all.overlaps(&all));
        assert!(all.overlaps(&scope(&["a"], Some("team=x"))));
        assert!(scope(&["a", "b"], None).overlaps(&scope(&["b"], None)));
        assert!(!scope(&["a"], None).overlaps(&scope(&["b"], None)));
        // Selectors: disjoint only when one key must equal different values.
        assert!(!scope(&[], Some("team=a")).overlaps(&scope(&[], Some("team==b"))));
        assert!(!scope(&[], Some("tier=web, team=a")).overlaps(&scope(&[], Some("team=b"))));
        assert!(scope(&[], Some("team=a")).overlaps(&scope(&[], Some("team=a,tier=web"))));
        assert!(scope(&[], Some("team=a")).overlaps(&scope(&[], Some("tier=web"))));
        assert!(scope(&[], Some("team!=a")).overlaps(&scope(&[], Some("team=b"))));
        assert!(scope(&[], Some("team in (a)")).overlaps(&scope(&[], Some("team=b"))));
    }

    fn lease(
        name: &str,
        created: &str,
        holder: Option<&str>,
        renewed: &str,
        scope: &Scope,
    ) -> Lease {
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "ebb", "creationTimestamp": created,
                         "annotations": {SCOPE_ANNOTATION: serde_json::to_string(scope).unwrap()}},
            "spec": {"holderIdentity": holder, "renewTime": renewed}
        }))
        .unwrap()
    }

    #[test]
    fn the_newer_of_two_live_overlapping_installs_stands_down() {
        let now: Timestamp = "2026-11-25T12:00:00Z".parse().unwrap();
        let all = scope(&[], None);
        let first = Install::of(
            &lease(
                "a",
                "2026-11-01T00:00:00Z",
                Some("a-0"),
                "2026-11-25T11:59:55Z",
                &all,
            ),
            now,
        );
        let second = Install::of(
            &lease(
                "b",
                "2026-11-20T00:00:00Z",
                Some("b-0"),
                "2026-11-25T11:59:58Z",
                &all,
            ),
            now,
        );
        assert!(first.alive && second.alive);
        let installs = vec![first.clone(), second.clone()];
        let (rivals_of_second, stands_down) = rivals(&second, &installs);
        assert_eq!((rivals_of_second.len(), stands_down), (1, true));
        let (rivals_of_first, stands_down) = rivals(&first, &installs);
        assert_eq!(
            (rivals_of_first.len(), stands_down),
            (1, false),
            "the older goes on"
        );

        // A released Lease (no holder) or one not renewed for ALIVE_FOR is no rival.
        let released = Install::of(
            &lease(
                "a",
                "2026-11-01T00:00:00Z",
                None,
                "2026-11-25T11:59:55Z",
                &all,
            ),
            now,
        );
        let gone = Install::of(
            &lease(
                "a",
                "2026-11-01T00:00:00Z",
                Some("a-0"),
                "2026-11-25T11:59:29Z",
                &all,
            ),
            now,
        );
        let just_alive = Install::of(
            &lease(
                "a",
                "2026-11-01T00:00:00Z",
                Some("a-0"),
                "2026-11-25T11:59:30Z",
                &all,
            ),
            now,
        );
        assert!(!released.alive && !gone.alive && just_alive.alive);
        assert!(!rivals(&second, &[released, gone, second.clone()]).1);

        // Disjoint scopes never stand down.
        let team_b = Install::of(
            &lease(
                "b",
                "2026-11-20T00:00:00Z",
                Some("b-0"),
                "2026-11-25T11:59:58Z",
                &scope(&[], Some("team=b")),
            ),
            now,
        );
        let team_a = Install::of(
            &lease(
                "a",
                "2026-11-01T00:00:00Z",
                Some("a-0"),
                "2026-11-25T11:59:58Z",
                &scope(&[], Some("team=a")),
            ),
            now,
        );
        assert_eq!(rivals(&team_b, &[team_a, team_b.clone()]).0.len(), 0);
    }
}
