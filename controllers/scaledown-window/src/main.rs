//! `scaledown-window`: run the controller, `plan` a decision offline, or `cleanup` before an
//! uninstall.

use std::process::ExitCode;

use ebb_runtime::cli::{self, About};
use ebb_runtime::{app, cleanup};
use scaledown_window::metrics::Metrics;
use scaledown_window::plan::{PlanArgs, plan};
use scaledown_window::{CONTROLLER_NAME, KIND, RunArgs, clean, controllers};

const ABOUT: About = About {
    name: CONTROLLER_NAME,
    about: "Cluster scale-down only inside time windows (ScaleDownSchedule)",
    plan: "Whether a ScaleDownSchedule file allows scale-down at an instant, offline (no cluster)",
};

#[tokio::main]
async fn main() -> ExitCode {
    // Until SIGTERM/SIGINT or the loss of the leader Lease.
    let run = |args| app::run(CONTROLLER_NAME, KIND, args, Metrics::new, controllers);
    let cleanup = |args| cleanup::run(CONTROLLER_NAME, args, clean);
    cli::main::<RunArgs, PlanArgs, _, _, _, _, _>(ABOUT, run, plan, cleanup).await
}
