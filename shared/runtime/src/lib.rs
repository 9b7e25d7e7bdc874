//! What every ebb controller binary needs, and nothing else.
//!
//! Six groups by concern, on two modules everything stands on, each importing only what is listed
//! before it (`tests/modules.rs` keeps it so):
//! - [`clock`] and [`shutdown`]: the injectable clock a pass reads, and the one signal that ends
//!   the process's tasks.
//! - [`watch`]: what a pass reads and what runs it: caches kept to what rules read
//!   ([`watch::cache`], [`watch::packed`], [`watch::guard`]: a malformed object cannot stall a
//!   watch), the triggers of related kinds ([`watch::triggers`]), the HolidayCalendars
//!   ([`watch::calendars`]), the queue ([`watch::queue`]), the link to the API server
//!   ([`watch::contact`], [`watch::requests`]) and this process's own writes
//!   ([`watch::own_writes`]).
//! - [`lead`]: leader election on a Lease ([`lead::leader`]) and two installs whose scopes overlap
//!   ([`lead::overlap`]).
//! - [`serve`](mod@serve): one HTTP server for `/metrics`, `/healthz` and `/readyz` ([`serve::server`]), its
//!   authentication ([`serve::metrics_auth`]) and TLS ([`serve::tls`]), the reconcile and process
//!   metrics ([`serve::metrics`], [`serve::process_metrics`]), logging ([`serve::telemetry`]).
//! - [`execute`]: carrying out a controller's [`ebb_core::Plan`] ([`execute::execute`]), in the
//!   reconcile frame every controller runs in ([`execute::frame`]: [`execute::frame::Reconciler`],
//!   [`execute::frame::Context`]), with Events that never fail a pass ([`execute::events`]) and
//!   per-object backoff ([`execute::backoff`], [`ErrorBackoff`]).
//! - [`cli`]: every binary's command line ([`cli::Cli`]), the offline `plan` ([`cli::plan`],
//!   reading manifests as the API server would: [`cli::manifest`]) and the zone data (`--tz-data`,
//!   [`cli::tz`]).
//! - [`process`]: the controller as a type ([`process::controller::Controller`], and the one `main`
//!   of every binary, [`process::controller::main`]), its flags ([`process::args`],
//!   [`CommonArgs`]), which cluster to talk to ([`process::kubeconfig`]), [`process::app`]: the
//!   start-up, [`process::app::Wiring`] and the orderly end every controller's `run` shares, and
//!   [`process::cleanup`]: what an uninstall runs first.
//! - [`conditions`], [`time`], [`patch`], [`pause`]: `ebb-core`'s, re-exported (pure: no client).
//!
//! Modules import one another without a circle too: what a lower module needs lives in it
//! (`watch::cache::slim`, `watch::guard::Object`, `watch::queue::object_key`,
//! `lead::leader::identity`, `cli::manifest::ManifestError`), and the module callers know
//! re-exports it; what a lower group needs of a higher one is handed down as a value (the Lease
//! and scope from [`CommonArgs`], the calendars' gauge from [`ControllerMetrics`]).
//!
//! Test doubles (the in-memory API server `FakeApi`, `RecordingEvents`) live in the `ebb-testkit`
//! crate, so nothing test-only is compiled into a controller binary.

pub mod cli;
pub mod clock;
pub mod execute;
pub mod lead;
pub mod process;
pub mod serve;
pub mod shutdown;
pub mod watch;

pub use ebb_core::{conditions, patch, pause, time};

pub use clock::{Clock, ManualClock, SystemClock};
pub use conditions::{ConditionUpdate, find_condition, remove_condition, set_condition};
pub use execute::backoff::ErrorBackoff;
pub use execute::events::{EventKind, EventPublisher, EventSink, Notice};
pub use lead::leader::{Leader, LeaderElection, LeaderError};
pub use pause::{PAUSED_ANNOTATION, PAUSED_UNTIL_ANNOTATION, PauseState, pause_state};
pub use process::args::CommonArgs;
pub use serve::metrics::ControllerMetrics;
pub use serve::server::{Health, MetricsServer, serve};
pub use serve::telemetry::LogFormat;
pub use shutdown::Shutdown;
pub use time::{from_k8s_time, rfc3339, to_k8s_time};
pub use watch::contact::ApiContact;
pub use watch::queue::object_key;
