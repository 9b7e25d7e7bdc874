//! `scaledown-window`: run the controller, or `plan` a decision offline.

use std::process::ExitCode;

use ebb_runtime::cli::About;
use scaledown_window::RunArgs;
use scaledown_window::plan::{PlanArgs, plan};

const ABOUT: About = About {
    name: scaledown_window::CONTROLLER_NAME,
    about: "Cluster scale-down only inside time windows (ScaleDownSchedule)",
    plan: "Whether a ScaleDownSchedule file allows scale-down at an instant, offline (no cluster)",
};

#[tokio::main]
async fn main() -> ExitCode {
    ebb_runtime::cli::main::<RunArgs, PlanArgs, _, _, _>(ABOUT, scaledown_window::run, plan).await
}
