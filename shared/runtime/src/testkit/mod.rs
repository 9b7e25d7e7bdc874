//! Test support for controllers (feature `testkit`): [`FakeApi`], an in-memory Kubernetes API
//! server behind a real `kube::Client`, and [`RecordingEvents`], an in-memory [`EventSink`].
//!
//! kube-fake-client needs kube 4, so ebb carries its own fake. A reconciler test looks like:
//!
//! ```no_run
//! # async fn demo() {
//! use ebb_runtime::testkit::{FakeApi, Matcher};
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
//! [`EventSink`]: crate::events::EventSink

mod events;
mod fake;
mod path;
mod selector;
mod store;

pub use events::{RecordedEvent, RecordingEvents};
pub use fake::{FAKE_EPOCH_SECONDS, FakeApi, Fault, InjectedTimeout, Matcher, RecordedRequest};
pub use store::{PatchKind, ScalePaths};

#[cfg(test)]
mod tests;
