//! `service-scaler`: run the controller, `plan` a decision offline, or `cleanup` before an
//! uninstall.

use std::process::ExitCode;

use ebb_runtime::cli::{self, About};
use ebb_runtime::{app, cleanup};
use service_scaler::metrics::Metrics;
use service_scaler::plan::{PlanArgs, plan};
use service_scaler::{CONTROLLER_NAME, KIND, RunArgs, clean, controllers};

/// How `--help` and `--version` describe the binary.
const ABOUT: About = About {
    name: CONTROLLER_NAME,
    about: "Time-window overrides of HorizontalPodAutoscaler settings (udaan's ServiceScaler)",
    plan: "Decide for one ServiceScaler file at one instant, offline (no cluster)",
};

#[tokio::main]
async fn main() -> ExitCode {
    // Until SIGTERM/SIGINT or the loss of the leader Lease.
    let run = |args| app::run(CONTROLLER_NAME, KIND, args, Metrics::new, controllers);
    let cleanup = |args| cleanup::run(CONTROLLER_NAME, args, clean);
    cli::main::<RunArgs, PlanArgs, _, _, _, _, _>(ABOUT, run, plan, cleanup).await
}
