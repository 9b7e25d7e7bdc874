//! `service-scaler`: run the controller, or `plan` a decision offline.

use std::process::ExitCode;

use ebb_runtime::cli::About;
use service_scaler::RunArgs;
use service_scaler::plan::{PlanArgs, plan};

/// How `--help` and `--version` describe the binary.
const ABOUT: About = About {
    name: service_scaler::CONTROLLER_NAME,
    about: "Time-window overrides of HorizontalPodAutoscaler settings (udaan's ServiceScaler)",
    plan: "Decide for one ServiceScaler file at one instant, offline (no cluster)",
};

#[tokio::main]
async fn main() -> ExitCode {
    ebb_runtime::cli::main::<RunArgs, PlanArgs, _, _, _>(ABOUT, service_scaler::run, plan).await
}
