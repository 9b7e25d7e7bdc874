//! `scaledown-window`: run the controller, or `plan` a decision offline.

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use scaledown_window::RunArgs;
use scaledown_window::plan::{PlanArgs, plan};

/// Cluster scale-down only inside time windows (ScaleDownSchedule).
#[derive(Parser, Debug)]
#[command(
    name = "scaledown-window",
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
    /// Whether a ScaleDownSchedule file allows scale-down at an instant, offline (no cluster).
    Plan(PlanArgs),
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Some(Command::Plan(args)) => {
            ebb_runtime::plan::finish("scaledown-window plan", plan(&args, chrono::Utc::now()))
        }
        None => match scaledown_window::run(cli.run).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("scaledown-window: {error:#}");
                ExitCode::FAILURE
            }
        },
    }
}
