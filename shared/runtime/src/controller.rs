//! A controller as a type: what ebb needs to know of one to run it as a binary ([`main`]) and
//! in the simulator (`ebb-sim`'s `World::run`). A new controller implements [`Controller`] on a
//! unit struct in its `lib.rs`; its `main.rs` is one call, `controller::main::<C>()`.

use std::fmt::Display;
use std::future::Future;
use std::process::ExitCode;

use jiff::Timestamp;
use prometheus_client::registry::Registry;

use crate::CommonArgs;
use crate::app::{self, AppError, Kind, Wiring};
use crate::cleanup;
use crate::cli::{self, About};
use crate::frame::Shared;

/// One controller: its name and description, its flags, its own metrics, its watches and
/// reconcilers, its offline `plan`, and what `cleanup` undoes before an uninstall.
pub trait Controller: 'static {
    /// How `--help` and `--version` describe the binary; `ABOUT.name` is the controller's name
    /// (`CONTROLLER_NAME`).
    const ABOUT: About;
    /// Whether its own kind is namespaced.
    const KIND: Kind;

    /// Its flags (the common ones among them).
    type Args: clap::Args + AsRef<CommonArgs> + Send + 'static;
    /// The flags of its `plan` subcommand.
    type PlanArgs: clap::Args;
    /// Its own metrics.
    type Metrics: Send + 'static;
    /// Why the process ended badly ([`AppError`] for a controller that runs as [`run`] does).
    type RunError: Display;
    /// Why `plan` failed.
    type PlanError: Display;
    /// Why `cleanup` failed.
    type CleanError: Display;

    /// Registers its own metrics.
    fn metrics(registry: &mut Registry) -> Self::Metrics;

    /// Its watches and reconciles on `wiring`, until the shutdown: what the binary runs once its
    /// process edges are up, and what the simulator runs on virtual time.
    fn controllers(
        args: Self::Args,
        wiring: Wiring,
        metrics: Self::Metrics,
    ) -> impl Future<Output = ()> + Send + 'static;

    /// The process, until SIGTERM or the loss of the Lease: [`run`] for most controllers.
    fn run(args: Self::Args) -> impl Future<Output = Result<(), Self::RunError>>;

    /// `plan`: decides offline at `now` (read once at the binary's edge).
    ///
    /// # Errors
    /// The controller's own.
    fn plan(args: &Self::PlanArgs, now: Timestamp) -> Result<String, Self::PlanError>;

    /// `cleanup`: what an uninstall undoes first, one line per object (see [`cleanup::run`]).
    fn clean(
        shared: Shared,
        args: Self::Args,
    ) -> impl Future<Output = Result<Vec<String>, Self::CleanError>>;
}

/// The process of controller `C` as every controller runs it ([`app::run`]): the process edges,
/// then [`Controller::controllers`].
///
/// # Errors
/// Whatever [`app::run`] fails with.
pub async fn run<C: Controller>(args: C::Args) -> Result<(), AppError> {
    app::run(C::ABOUT.name, C::KIND, args, C::metrics, C::controllers).await
}

/// A controller binary's whole `main`: parses the command line, then runs the controller, its
/// `plan` or its `cleanup` ([`cli::main`]).
pub async fn main<C: Controller>() -> ExitCode {
    let cleanup = |args| cleanup::run(C::ABOUT.name, args, C::clean);
    cli::main::<C::Args, C::PlanArgs, _, _, _, _, _>(C::ABOUT, C::run, C::plan, cleanup).await
}
