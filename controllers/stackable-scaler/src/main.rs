//! `stackable-scaler`: the controller, or `stackable-scaler plan` offline.

use clap::{Parser, Subcommand};
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
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Some(Command::Plan(args)) => match plan(&args, chrono::Utc::now()) {
            Ok(output) => {
                print!("{output}");
                Ok(())
            }
            Err(error) => {
                eprintln!("error: {error}");
                std::process::exit(2);
            }
        },
        None => stackable_scaler::run(cli.run).await,
    }
}
