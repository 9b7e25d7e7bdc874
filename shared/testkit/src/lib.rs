//! Test support for ebb's controllers: [`FakeApi`], an in-memory Kubernetes API server behind a
//! real `kube::Client` (watches included, so kube's `watcher`, reflectors and `Controller` run
//! against it in-process), and [`RecordingEvents`], an in-memory [`EventSink`].
//!
//! It is its own crate, a dev-dependency only, so nothing of it is compiled into a controller
//! binary; it depends on `ebb-runtime` for the [`EventSink`] trait and the [`Clock`].
//! kube-fake-client needs kube 4, so ebb carries its own fake. A reconciler test looks like:
//!
//! ```no_run
//! # async fn demo() {
//! use ebb_testkit::{FakeApi, Matcher};
//! use k8s_openapi::api::apps::v1::Deployment;
//!
//! let fake = FakeApi::new();
//! fake.insert(serde_json::json!({
//!     "apiVersion": "apps/v1", "kind": "Deployment",
//!     "metadata": { "name": "web", "namespace": "shop" },
//!     "spec": { "replicas": 1 },
//! }));
//! fake.fail_next(Matcher::patch("/deployments/web"), 409);
//! let client = fake.client();
//! // ... run the reconciler with `client` ...
//! assert_eq!(fake.write_count(), 2);
//! let web: Deployment = fake.get("shop", "web").unwrap();
//! # let _ = web;
//! # }
//! ```
//!
//! [`EventSink`]: ebb_runtime::execute::events::EventSink
//! [`Clock`]: ebb_runtime::Clock

mod admission;
pub mod adversarial;
mod events;
mod fake;
mod harness;
pub mod interleave;
pub mod matrix;
mod path;
pub mod plan_cli;
mod selector;
mod store;
mod watch;
pub mod zones;

pub use events::{RecordedEvent, RecordingEvents};
pub use fake::{
    FAKE_EPOCH_SECONDS, FakeApi, FakeService, Fault, InjectedTimeout, Matcher, RETRY_AFTER_SECONDS,
    RecordedRequest, ResponseBody,
};
pub use harness::{Harness, Replica, utc};
pub use store::{PatchKind, ScalePaths};
pub use watch::{DEFAULT_BOOKMARK_INTERVAL, DEFAULT_WATCH_HISTORY, DEFAULT_WATCH_TIMEOUT};

#[cfg(test)]
mod tests;
