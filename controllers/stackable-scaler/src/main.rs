//! `stackable-scaler`: the controller, or `stackable-scaler plan` offline.

use std::process::ExitCode;

use ebb_runtime::cli::About;
use stackable_scaler::plan::{PlanArgs, plan};
use stackable_scaler::{CONTROLLER_NAME, RunArgs};

/// What `--help` says.
const ABOUT: About = About {
    name: CONTROLLER_NAME,
    about: "StackableScaler: a /scale target for an HPA that runs hooks before and after the \
            workload's replicas change",
    plan: "Print the state machine's next step for a StackableScaler manifest (no cluster needed)",
};

#[tokio::main]
async fn main() -> ExitCode {
    ebb_runtime::cli::main::<RunArgs, PlanArgs, _, _, _>(ABOUT, stackable_scaler::run, plan).await
}
