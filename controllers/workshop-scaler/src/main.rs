//! `workshop-scaler`: run the controller, or `plan` a decision offline.

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use ebb_runtime::plan::finish;
use workshop_scaler::RunArgs;
use workshop_scaler::plan::{PlanArgs, plan};

/// Demand-driven, race-free scaling of Babylon WorkshopProvisions.
#[derive(Parser, Debug)]
#[command(
    name = "workshop-scaler",
    version,
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(flatten)]
    run: RunArgs,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Decide for one WorkshopProvision file, offline (no cluster).
    Plan(PlanArgs),
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Some(Command::Plan(args)) => finish("workshop-scaler plan", plan(&args)),
        None => finish(
            "workshop-scaler",
            workshop_scaler::run(cli.run).await.map(|()| String::new()),
        ),
    }
}
