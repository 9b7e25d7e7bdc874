//! `stackable-scaler`: the controller, or `stackable-scaler plan` offline.

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use ebb_runtime::plan::finish;
use stackable_scaler::RunArgs;
use stackable_scaler::plan::{PlanArgs, plan};

/// StackableScaler controller: HPA-driven scaling with pre/post hooks.
#[derive(Parser, Debug)]
#[command(name = "stackable-scaler", version, about)]
struct Cli {
    #[command(flatten)]
    run: RunArgs,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Print the state machine's next step for a StackableScaler manifest (no cluster needed).
    Plan(PlanArgs),
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        // `plan` decides at the wall-clock instant it is asked; the decision itself takes `now`.
        Some(Command::Plan(args)) => {
            finish("stackable-scaler plan", plan(&args, chrono::Utc::now()))
        }
        None => finish(
            "stackable-scaler",
            stackable_scaler::run(cli.run).await.map(|()| String::new()),
        ),
    }
}
