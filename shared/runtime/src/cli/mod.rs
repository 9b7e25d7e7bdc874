//! The command line every controller binary has: no subcommand runs the controller (its flags
//! `R`), `plan` decides for one manifest offline (flags `P`), `cleanup` undoes what the
//! controller set on others' objects before an uninstall ([`crate::cli::cleanup`]). A controller's
//! `main.rs` is one line, [`main!`](crate::main!), which reaches [`main`] through
//! [`crate::process::controller::main`]:
//!
//! ```ignore
//! ebb_runtime::main!(service_scaler::ServiceScalerController);
//! ```

pub mod cleanup;
pub mod manifest;
pub mod plan;
pub mod tz;

use std::fmt::Display;
use std::future::Future;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches};
use jiff::Timestamp;

use crate::CommonArgs;
use crate::cli::cleanup::{CleanupArgs, CleanupError};
use crate::lead::clock::{Clock, SystemClock};

use crate::cli::plan::{EXIT_STATUS, PlanFailure, finish, finish_plan};

/// Both ways to start a controller binary.
#[derive(clap::Parser, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Cli<R: clap::Args, P: clap::Args> {
    /// The controller's flags.
    #[command(flatten)]
    pub run: R,
    /// `plan` or `cleanup`, or nothing to run the controller.
    #[command(subcommand)]
    pub command: Option<Command<R, P>>,
}

/// The subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum Command<R: clap::Args, P: clap::Args> {
    /// Decide for one manifest, offline (no cluster).
    Plan(P),
    /// Before an uninstall: stop the controller, then remove what it set on others' objects and
    /// its finalizers (`--dry-run`: say what, write nothing).
    Cleanup(CleanupArgs<R>),
}

/// Describes a binary for `--help` and `--version`.
#[derive(Clone, Copy, Debug)]
pub struct About {
    /// The binary's (and controller's) name.
    pub name: &'static str,
    /// One line on what the controller does.
    pub about: &'static str,
    /// One line on what `plan` decides.
    pub plan: &'static str,
}

impl About {
    /// The clap command for `R` and `P`, named and described.
    pub fn command<R: clap::Args, P: clap::Args>(&self) -> clap::Command {
        Cli::<R, P>::command()
            .name(self.name)
            .bin_name(self.name)
            .about(self.about)
            .version(env!("CARGO_PKG_VERSION"))
            .mut_subcommand("plan", |c| c.about(self.plan).after_help(EXIT_STATUS))
    }

    /// Parses `args` (the program name first).
    pub fn parse_from<R, P, I, T>(&self, args: I) -> Result<Cli<R, P>, clap::Error>
    where
        R: clap::Args,
        P: clap::Args,
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        let mut command = self.command::<R, P>();
        let matches = command.try_get_matches_from_mut(args)?;
        Cli::<R, P>::from_arg_matches(&matches).map_err(|e| e.format(&mut command))
    }
}

/// Parses the process's arguments, then runs the controller, `plan` or `cleanup`, printing the
/// output or the error (`<name>: <error>`; a controller that fails says so in its
/// `--log-format`, see [`crate::serve::telemetry::fatal`]) and exiting accordingly. `plan` gets the wall-clock
/// instant (read here, at the binary's edge, once): the instant it decides at unless told another.
pub async fn main<R, P, Run, RunError, PlanError, Clean, Cleaned>(
    about: About,
    run: impl FnOnce(R) -> Run,
    plan: impl FnOnce(&P, Timestamp) -> Result<String, PlanError>,
    cleanup: Clean,
) -> ExitCode
where
    R: clap::Args + AsRef<CommonArgs>,
    P: clap::Args,
    Run: Future<Output = Result<(), RunError>>,
    RunError: Display,
    PlanError: PlanFailure,
    Clean: FnOnce(CleanupArgs<R>) -> Cleaned,
    Cleaned: Future<Output = Result<String, CleanupError>>,
{
    let cli = match about.parse_from::<R, P, _, _>(std::env::args_os()) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    match cli.command {
        Some(Command::Plan(args)) => finish_plan(
            &format!("{} plan", about.name),
            plan(&args, SystemClock.now()),
        ),
        Some(Command::Cleanup(args)) => {
            finish(&format!("{} cleanup", about.name), cleanup(args).await)
        }
        None => {
            let format = cli.run.as_ref().log_format;
            match run(cli.run).await {
                Ok(()) => ExitCode::SUCCESS,
                Err(error) => {
                    crate::serve::telemetry::fatal(format, about.name, &error);
                    ExitCode::FAILURE
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[derive(clap::Args, Debug, PartialEq)]
    struct Run {
        #[arg(long)]
        dry_run: bool,
    }

    #[derive(clap::Args, Debug, PartialEq)]
    struct Plan {
        #[arg(long)]
        file: String,
    }

    const ABOUT: About = About {
        name: "demo-scaler",
        about: "Scales demos.",
        plan: "Decide for one Demo file, offline (no cluster).",
    };

    #[test]
    fn no_subcommand_runs_and_plan_takes_its_own_flags() {
        let cli = ABOUT
            .parse_from::<Run, Plan, _, _>(["demo-scaler", "--dry-run"])
            .unwrap();
        assert_eq!(cli.run, Run { dry_run: true });
        assert!(cli.command.is_none());
        let cli = ABOUT
            .parse_from::<Run, Plan, _, _>(["demo-scaler", "plan", "--file", "x.yaml"])
            .unwrap();
        assert!(matches!(cli.command, Some(Command::Plan(Plan { file })) if file == "x.yaml"));
        // The controller's flags do not mix with plan's.
        assert!(
            ABOUT
                .parse_from::<Run, Plan, _, _>(["demo-scaler", "--dry-run", "plan", "--file", "x"])
                .is_err()
        );
    }

    #[test]
    fn cleanup_takes_the_controllers_flags_and_the_deployment_to_stop() {
        let cli = ABOUT
            .parse_from::<Run, Plan, _, _>([
                "demo-scaler",
                "cleanup",
                "--dry-run",
                "--stop-deployment",
                "ebb-demo-scaler",
            ])
            .unwrap();
        let Some(Command::Cleanup(args)) = cli.command else {
            panic!("not cleanup: {:?}", cli.command)
        };
        assert_eq!(args.run, Run { dry_run: true });
        assert_eq!(args.stop_deployment.as_deref(), Some("ebb-demo-scaler"));
        let help = ABOUT.command::<Run, Plan>().render_long_help().to_string();
        assert!(help.contains("cleanup"), "{help}");
    }

    #[test]
    fn help_names_the_binary_and_describes_both() {
        let help = ABOUT.command::<Run, Plan>().render_long_help().to_string();
        assert!(help.contains("Scales demos."), "{help}");
        assert!(help.contains("demo-scaler"), "{help}");
        assert!(help.contains("Decide for one Demo file"), "{help}");
        let plan = ABOUT
            .command::<Run, Plan>()
            .find_subcommand_mut("plan")
            .map(|plan| plan.render_long_help().to_string())
            .unwrap();
        assert!(
            plan.contains("Exit status: 0 every object planned; 1 an object is invalid"),
            "{plan}"
        );
        let version = ABOUT.command::<Run, Plan>().render_version();
        assert_eq!(
            version.trim(),
            format!("demo-scaler {}", env!("CARGO_PKG_VERSION"))
        );
    }
}
