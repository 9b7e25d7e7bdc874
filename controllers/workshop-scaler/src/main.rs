//! `workshop-scaler`: run the controller, or `plan` a decision offline.

use std::process::ExitCode;

use ebb_runtime::cli::About;
use workshop_scaler::RunArgs;
use workshop_scaler::plan::{PlanArgs, plan};

/// How `--help` and `--version` describe the binary.
const ABOUT: About = About {
    name: workshop_scaler::CONTROLLER_NAME,
    about: "Demand-driven, race-free scaling of Babylon WorkshopProvisions",
    plan: "Decide for one WorkshopProvision file, offline (no cluster)",
};

#[tokio::main]
async fn main() -> ExitCode {
    ebb_runtime::cli::main::<RunArgs, PlanArgs, _, _, _>(ABOUT, workshop_scaler::run, plan).await
}
