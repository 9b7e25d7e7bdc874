//! What every ebb controller binary needs, and nothing else.
//!
//! - [`frame`]: the reconcile frame every controller runs in ([`frame::Reconciler`], [`frame::Context`]).
//! - [`controller`]: a controller as a type ([`controller::Controller`]), and the one `main` of
//!   every controller binary ([`controller::main`]).
//! - [`cli`]: every binary's command line (run, or `plan` offline) and `main` ([`cli::main`]).
//! - [`app`]: [`app::run`], the start-up, [`app::Wiring`] and orderly end every controller's `run`
//!   shares.
//! - [`backoff`]: per-object exponential retry delays for `error_policy` ([`ErrorBackoff`]).
//! - [`args`]: the flags (and env fallbacks) every controller takes ([`CommonArgs`]).
//! - [`kubeconfig`]: which cluster to talk to (`--kubeconfig`, `--context`).
//! - [`telemetry`]: logging as text or JSON, filtered by `RUST_LOG`.
//! - [`server`]: one HTTP server for `/metrics`, `/healthz` and `/readyz`.
//! - [`metrics`]: reconcile counters and durations ([`ControllerMetrics`]).
//! - [`process_metrics`]: the standard `process_*` series (CPU, memory, file descriptors).
//! - [`shutdown`]: graceful shutdown on SIGTERM/SIGINT ([`Shutdown`]).
//! - [`guard`]: [`Guarded`](guard::Guarded) objects, so a malformed one cannot stall a watch and
//!   says which field is wrong.
//! - [`packed`]: [`Packed`](packed::Packed) objects, cached as their metadata and compact JSON.
//! - [`leader`]: leader election on a Lease, gating writes ([`LeaderElection`], [`Leader`]).
//! - [`clock`]: the injectable source of "now" ([`Clock`], [`SystemClock`], [`ManualClock`]).
//! - [`triggers`]: watches of related kinds that trigger only on what a controller reads of them.
//! - [`cache`]: caches of related kinds, filled by their watches, that reconciles read.
//! - [`calendars`]: the HolidayCalendars windows name, one watch per process.
//! - [`execute`]: the one executor that carries out a controller's [`ebb_core::Plan`].
//! - [`conditions`], [`time`], [`patch`], [`pause`]: `ebb-core`'s, re-exported (pure: no client).
//! - [`events`]: Kubernetes Events that never fail a reconcile ([`EventSink`]).
//! - [`plan`]: the offline `plan` subcommand's flag, manifest reading and exit ([`plan::OutputFormat`]).
//! - [`cleanup`]: `<controller> cleanup`, what an uninstall runs first.
//! - [`contact`]: the link to the API server: last answer, watches' retries, the server's return.
//! - [`requests`]: the client's requests by verb, resource and answer, with their latency.
//! - [`manifest`]: reading manifests offline as the API server would, for `plan`.
//! - [`metrics_auth`]: `--metrics-auth`, `/metrics` only for callers the API server vouches for.
//! - [`overlap`]: two installs of one controller whose scopes overlap.
//! - [`own_writes`]: the changes this process made itself, whose watch events a watch passes over.
//! - [`tls`]: TLS serving from a certificate directory, reloaded as it changes (`/metrics`, the
//!   webhook).
//! - [`tz`]: which time zone data the process reads (`--tz-data`).
//!
//! The modules import one another without a circle (`tests/modules.rs` keeps it so): what a
//! lower module needs lives in it (`cache::slim`, `guard::Object`, `kubeconfig::identity`,
//! `manifest::ManifestError`), and the module callers know re-exports it.
//!
//! Test doubles (the in-memory API server `FakeApi`, `RecordingEvents`) live in the `ebb-testkit`
//! crate, so nothing test-only is compiled into a controller binary.

pub mod app;
pub mod args;
pub mod backoff;
pub mod cache;
pub mod calendars;
pub mod cleanup;
pub mod cli;
pub mod clock;
pub mod contact;
pub mod controller;
pub mod events;
pub mod execute;
pub mod frame;
pub mod guard;
pub mod kubeconfig;
pub mod leader;
pub mod manifest;
pub mod metrics;
pub mod metrics_auth;
pub mod overlap;
pub mod own_writes;
pub mod packed;
pub mod plan;
pub mod process_metrics;
pub mod queue;
pub mod requests;
pub mod server;
pub mod shutdown;
pub mod telemetry;
pub mod tls;
pub mod triggers;
pub mod tz;

pub use ebb_core::{conditions, patch, pause, time};

pub use args::CommonArgs;
pub use backoff::{ErrorBackoff, object_key};
pub use clock::{Clock, ManualClock, SystemClock};
pub use conditions::{ConditionUpdate, find_condition, remove_condition, set_condition};
pub use contact::ApiContact;
pub use events::{EventKind, EventPublisher, EventSink, Notice};
pub use leader::{Leader, LeaderElection, LeaderError};
pub use metrics::ControllerMetrics;
pub use pause::{PAUSED_ANNOTATION, PAUSED_UNTIL_ANNOTATION, PauseState, pause_state};
pub use server::{Health, MetricsServer, serve};
pub use shutdown::Shutdown;
pub use telemetry::LogFormat;
pub use time::{from_k8s_time, rfc3339, to_k8s_time};
