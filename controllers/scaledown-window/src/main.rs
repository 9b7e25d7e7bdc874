//! `scaledown-window`: run the controller, or `plan` a decision offline.

use std::process::ExitCode;

use ebb_runtime::app;
use ebb_runtime::cli::{self, About};
use scaledown_window::metrics::Metrics;
use scaledown_window::plan::{PlanArgs, plan};
use scaledown_window::{CONTROLLER_NAME, RunArgs, controllers};

const ABOUT: About = About {
    name: CONTROLLER_NAME,
    about: "Cluster scale-down only inside time windows (ScaleDownSchedule)",
    plan: "Whether a ScaleDownSchedule file allows scale-down at an instant, offline (no cluster)",
};

#[tokio::main]
async fn main() -> ExitCode {
    // Until SIGTERM/SIGINT or the loss of the leader Lease.
    let run = |args| app::run(CONTROLLER_NAME, args, Metrics::new, controllers);
    cli::main::<RunArgs, PlanArgs, _, _, _>(ABOUT, run, plan).await
}
