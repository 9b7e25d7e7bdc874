//! What every ebb controller binary needs, and nothing else.
//!
//! Six modules, by concern:
//! - [`process`]: the controller as a type ([`process::controller::Controller`], the one `main`
//!   of every binary), its flags ([`process::args`], [`CommonArgs`]), which cluster to talk to
//!   ([`process::kubeconfig`]), and [`process::app`]: the start-up, [`process::app::Wiring`] and
//!   the orderly end every controller's `run` shares.
//! - [`watch`]: what a pass reads and what runs it: caches kept to what rules read
//!   ([`watch::cache`], [`watch::packed`], [`watch::guard`]: a malformed object cannot stall a
//!   watch), the triggers of related kinds ([`watch::triggers`]), the HolidayCalendars
//!   ([`watch::calendars`]), the queue ([`watch::queue`]), the link to the API server
//!   ([`watch::contact`], [`watch::requests`]) and this process's own writes
//!   ([`watch::own_writes`]).
//! - [`execute`]: carrying out a controller's [`ebb_core::Plan`] ([`execute::execute`]), in the
//!   reconcile frame every controller runs in ([`execute::frame`]: [`execute::frame::Reconciler`],
//!   [`execute::frame::Context`]), with Events that never fail a pass ([`execute::events`]) and
//!   per-object backoff ([`execute::backoff`], [`ErrorBackoff`]).
//! - [`lead`]: leader election on a Lease ([`lead::leader`]), two installs whose scopes overlap
//!   ([`lead::overlap`]), graceful shutdown ([`lead::shutdown`]), the injectable clock
//!   ([`lead::clock`]).
//! - [`serve`]: one HTTP server for `/metrics`, `/healthz` and `/readyz` ([`serve::server`]), its
//!   authentication ([`serve::metrics_auth`]) and TLS ([`serve::tls`]), the reconcile and process
//!   metrics ([`serve::metrics`], [`serve::process_metrics`]), logging ([`serve::telemetry`]).
//! - [`cli`]: every binary's command line and `main` ([`cli::main`]), the offline `plan`
//!   ([`cli::plan`], reading manifests as the API server would: [`cli::manifest`]), the zone data
//!   (`--tz-data`, [`cli::tz`]) and `cleanup`, what an uninstall runs first ([`cli::cleanup`]).
//! - [`conditions`], [`time`], [`patch`], [`pause`]: `ebb-core`'s, re-exported (pure: no client).
//!
//! The modules import one another without a circle (`tests/modules.rs` keeps it so): what a
//! lower module needs lives in it (`watch::cache::slim`, `watch::guard::Object`,
//! `process::kubeconfig::identity`, `cli::manifest::ManifestError`), and the module callers know
//! re-exports it.
//!
//! Test doubles (the in-memory API server `FakeApi`, `RecordingEvents`) live in the `ebb-testkit`
//! crate, so nothing test-only is compiled into a controller binary.

pub mod cli;
pub mod execute;
pub mod lead;
pub mod process;
pub mod serve;
pub mod watch;

pub use ebb_core::{conditions, patch, pause, time};

pub use conditions::{ConditionUpdate, find_condition, remove_condition, set_condition};
pub use execute::backoff::{ErrorBackoff, object_key};
pub use execute::events::{EventKind, EventPublisher, EventSink, Notice};
pub use lead::clock::{Clock, ManualClock, SystemClock};
pub use lead::leader::{Leader, LeaderElection, LeaderError};
pub use lead::shutdown::Shutdown;
pub use pause::{PAUSED_ANNOTATION, PAUSED_UNTIL_ANNOTATION, PauseState, pause_state};
pub use process::args::CommonArgs;
pub use serve::metrics::ControllerMetrics;
pub use serve::server::{Health, MetricsServer, serve};
pub use serve::telemetry::LogFormat;
pub use time::{from_k8s_time, rfc3339, to_k8s_time};
pub use watch::contact::ApiContact;
