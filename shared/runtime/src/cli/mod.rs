//! The command line every controller binary has: no subcommand runs the controller (its flags
//! `R`), `plan` decides for one manifest offline (flags `P`, [`plan`], reading manifests as the API
//! server would: [`manifest`]), `cleanup` undoes what the controller set on others' objects before
//! an uninstall ([`CleanupArgs`]; what it runs is the process's). `--tz-data` is [`tz`]'s. The
//! binary's `main` that parses it and runs what it asks for is the process's
//! ([`crate::process::controller::main`]).

pub mod manifest;
pub mod plan;
pub mod tz;

use clap::{CommandFactory, FromArgMatches};

use crate::cli::plan::EXIT_STATUS;

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

/// Flags of `<controller> cleanup`: the controller's own flags (which namespaces and objects,
/// which Lease, `--dry-run`) and the Deployment to stop first.
#[derive(clap::Args, Debug, Clone)]
pub struct CleanupArgs<R: clap::Args> {
    /// The controller's flags.
    #[command(flatten)]
    pub run: R,
    /// The controller's Deployment (in the Lease's namespace, `--lease-namespace`): scaled to 0,
    /// and its pods waited for until none is left, before anything is cleaned, so no replica
    /// writes again or takes the Lease back.
    #[arg(long, env = "EBB_STOP_DEPLOYMENT", value_name = "NAME")]
    pub stop_deployment: Option<String>,
    /// Keep what the controller put in force on others' objects (an HPA's scheduled settings, a
    /// hibernated workload at 0, a fleet member's schedule, a scale-down switch): only its
    /// finalizers and its Lease go. Without it every object gets its own values back.
    #[arg(long, env = "EBB_KEEP_SETTINGS")]
    pub keep_settings: bool,
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
