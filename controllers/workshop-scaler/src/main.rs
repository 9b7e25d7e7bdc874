//! `workshop-scaler`: run the controller, `plan` a decision offline, or `cleanup` before an
//! uninstall.

use std::process::ExitCode;

use ebb_runtime::cli::{self, About};
use ebb_runtime::{app, cleanup};
use workshop_scaler::metrics::Metrics;
use workshop_scaler::plan::{PlanArgs, plan};
use workshop_scaler::{CONTROLLER_NAME, KIND, RunArgs, controllers};

/// How `--help` and `--version` describe the binary.
const ABOUT: About = About {
    name: CONTROLLER_NAME,
    about: "Demand-driven, race-free scaling of Babylon WorkshopProvisions",
    plan: "Decide for one WorkshopProvision file, offline (no cluster)",
};

#[tokio::main]
async fn main() -> ExitCode {
    // Until SIGTERM/SIGINT or the loss of the leader Lease.
    let run = |args| app::run(CONTROLLER_NAME, KIND, args, Metrics::new, controllers);
    // Nothing of ebb's outlives it: cleanup only stops the controller.
    let clean = cleanup::nothing(
        "workshop-scaler keeps no finalizers, and what it writes on WorkshopProvisions \
         (spec.count, its status fields) is theirs to keep",
    );
    let cleanup = |args| cleanup::run(CONTROLLER_NAME, args, clean);
    cli::main::<RunArgs, PlanArgs, _, _, _, _, _>(ABOUT, run, plan, cleanup).await
}
