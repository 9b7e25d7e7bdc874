//! A controller as a type: what ebb needs to know of one to run it as a binary ([`main`]) and
//! in the simulator (`ebb-sim`'s `World::run`). A new controller declares it in its `lib.rs` with
//! [`controller!`](crate::controller!) (or implements [`Controller`] by hand); its `main.rs` is one
//! line, [`main!`](crate::main!)`(C)`.

use std::fmt::Display;
use std::future::Future;
use std::process::ExitCode;

pub use jiff::Timestamp;
pub use prometheus_client::registry::Registry;

use crate::CommonArgs;
use crate::cli::plan::{finish, finish_plan};
use crate::cli::{About, Command};
use crate::clock::{Clock as _, SystemClock};
use crate::execute::frame::Shared;
use crate::process::app::{self, AppError, Kind, Wiring};
use crate::process::cleanup;

/// One controller: its name and description, its flags, its own metrics, its watches and
/// reconcilers, its offline `plan`, and what `cleanup` undoes before an uninstall.
pub trait Controller: Sized + 'static {
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
    /// Why `plan` failed, and which exit status that is.
    type PlanError: crate::cli::plan::PlanFailure;
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

    /// The process, until SIGTERM or the loss of the Lease: [`run`] unless the controller
    /// starts something of its own first (stackable-scaler binds its webhook's port).
    fn run(args: Self::Args) -> impl Future<Output = Result<(), RunError>> {
        async { Ok(run::<Self>(args).await?) }
    }

    /// `plan`: decides offline at `now` (read once at the binary's edge).
    ///
    /// # Errors
    /// The controller's own.
    fn plan(args: &Self::PlanArgs, now: Timestamp) -> Result<String, Self::PlanError>;

    /// `cleanup`: what an uninstall undoes first, one line per object (see [`cleanup::run`]).
    fn clean(
        shared: Shared,
        args: Self::Args,
        leave: cleanup::Leave,
    ) -> impl Future<Output = Result<Vec<String>, Self::CleanError>>;
}

/// Why a controller's process ended badly.
pub type RunError = Box<dyn std::error::Error + Send + Sync>;

/// The process of controller `C` as every controller runs it ([`app::run`]): the process edges,
/// then [`Controller::controllers`].
///
/// # Errors
/// Whatever [`app::run`] fails with.
pub async fn run<C: Controller>(args: C::Args) -> Result<(), AppError> {
    app::run(C::ABOUT.name, C::KIND, args, C::metrics, C::controllers).await
}

/// Declares a controller's names, all derived from the one given: `CONTROLLER_NAME` (binary,
/// chart, Lease, Event reporter, metric prefix) and `FIELD_MANAGER` (`ebb-<name>`, the field
/// manager of every write).
#[macro_export]
macro_rules! controller_names {
    ($name:literal) => {
        /// The controller's name: binary, chart, Lease, Event reporter, metric prefix.
        pub const CONTROLLER_NAME: &str = $name;
        /// The field manager of every write: `ebb-` and the controller's name.
        pub const FIELD_MANAGER: &str = concat!("ebb-", $name);
    };
}

/// A controller binary's `main.rs`, whole: a `main` that runs [`main`] for controller
/// `$controller` on a multi-threaded tokio runtime. The binaries keep the system allocator
/// (docs/decisions.md, "Memory per object").
///
/// ```ignore
/// ebb_runtime::main!(service_scaler::ServiceScalerController);
/// ```
#[macro_export]
macro_rules! main {
    ($controller:ty) => {
        fn main() -> ::std::process::ExitCode {
            $crate::process::controller::block_on::<$controller>()
        }
    };
}

/// [`main`] on a multi-threaded tokio runtime, as `#[tokio::main]` builds one.
pub fn block_on<C: Controller>() -> ExitCode {
    match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime.block_on(main::<C>()),
        Err(error) => {
            eprintln!("error: starting the async runtime: {error}");
            ExitCode::FAILURE
        }
    }
}

/// A controller binary's whole `main`: parses the process's arguments, then runs the controller,
/// its `plan` or its `cleanup` ([`cleanup::run`]), printing the output or the error (`<name>:
/// <error>`; a controller that fails says so in its `--log-format`, see
/// [`crate::serve::telemetry::fatal`]) and exiting accordingly. `plan` gets the wall-clock instant
/// (read here, at the binary's edge, once): the instant it decides at unless told another.
pub async fn main<C: Controller>() -> ExitCode {
    let about = C::ABOUT;
    let cli = match about.parse_from::<C::Args, C::PlanArgs, _, _>(std::env::args_os()) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    match cli.command {
        Some(Command::Plan(args)) => finish_plan(
            &format!("{} plan", about.name),
            C::plan(&args, SystemClock.now()),
        ),
        Some(Command::Cleanup(args)) => finish(
            &format!("{} cleanup", about.name),
            cleanup::run(about.name, args, C::clean).await,
        ),
        None => {
            let format = cli.run.as_ref().log_format;
            match C::run(cli.run).await {
                Ok(()) => ExitCode::SUCCESS,
                Err(error) => {
                    crate::serve::telemetry::fatal(format, about.name, &error);
                    ExitCode::FAILURE
                }
            }
        }
    }
}

/// Declares a controller as a type: a unit struct implementing [`Controller`] from the names
/// every controller crate has at its root (docs/style.md, "Source"): `CONTROLLER_NAME`, `KIND`,
/// `RunArgs`, `controllers`, `metrics::Metrics` (its `new(registry)`), and `plan::PlanArgs`,
/// `plan::PlanError`, `plan::plan`. What differs is given: the two lines of `--help`, what
/// `cleanup` calls (a function of `(Shared, RunArgs, Leave)`, and its error type), and, where the process
/// starts something of its own first, its `run`.
///
/// ```ignore
/// ebb_runtime::controller! {
///     /// service-scaler as ebb runs it.
///     pub struct ServiceScalerController;
///     about: "Time-window overrides of HorizontalPodAutoscaler settings",
///     plan: "Decide for one ServiceScaler file at one instant, offline (no cluster)",
///     clean: clean => kube::Error,
/// }
/// ```
#[macro_export]
macro_rules! controller {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident;
        about: $about:expr,
        plan: $plan:expr,
        clean: $clean:expr => $clean_error:ty
        $(, run: $run:expr)? $(,)?
    ) => {
        $(#[$meta])*
        $vis struct $name;

        impl $crate::process::controller::Controller for $name {
            const ABOUT: $crate::cli::About = $crate::cli::About {
                name: CONTROLLER_NAME,
                about: $about,
                plan: $plan,
            };
            const KIND: $crate::process::app::Kind = KIND;

            type Args = RunArgs;
            type PlanArgs = plan::PlanArgs;
            type Metrics = metrics::Metrics;
            type PlanError = plan::PlanError;
            type CleanError = $clean_error;

            fn metrics(registry: &mut $crate::process::controller::Registry) -> metrics::Metrics {
                metrics::Metrics::new(registry)
            }

            fn controllers(
                args: RunArgs,
                wiring: $crate::process::app::Wiring,
                metrics: metrics::Metrics,
            ) -> impl ::std::future::Future<Output = ()> + Send + 'static {
                controllers(args, wiring, metrics)
            }

            $(
                async fn run(args: RunArgs) -> Result<(), $crate::process::controller::RunError> {
                    Ok(($run)(args).await?)
                }
            )?

            fn plan(
                args: &plan::PlanArgs,
                now: $crate::process::controller::Timestamp,
            ) -> Result<String, plan::PlanError> {
                plan::plan(args, now)
            }

            fn clean(
                shared: $crate::execute::frame::Shared,
                args: RunArgs,
                leave: $crate::process::cleanup::Leave,
            ) -> impl ::std::future::Future<Output = Result<Vec<String>, $clean_error>> {
                ($clean)(shared, args, leave)
            }
        }
    };
}
