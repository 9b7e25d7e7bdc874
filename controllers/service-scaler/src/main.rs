//! `service-scaler`: run the controller, or `plan` a decision offline.

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use ebb_runtime::plan::finish;
use service_scaler::RunArgs;
use service_scaler::plan::{PlanArgs, plan};

/// Time-window overrides of HorizontalPodAutoscaler settings (udaan's ServiceScaler).
#[derive(Parser, Debug)]
#[command(
    name = "service-scaler",
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
    /// Decide for one ServiceScaler file at one instant, offline (no cluster).
    Plan(PlanArgs),
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Some(Command::Plan(args)) => finish("service-scaler plan", plan(&args)),
        None => finish(
            "service-scaler",
            service_scaler::run(cli.run).await.map(|()| String::new()),
        ),
    }
}
