//! `stackable-scaler`: the controller, `stackable-scaler plan` offline, or `cleanup` before an
//! uninstall.

use std::process::ExitCode;

use ebb_runtime::cleanup;
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
    // Nothing of ebb's outlives it: cleanup only stops the controller.
    let clean = cleanup::nothing(
        "stackable-scaler keeps no finalizers, and its hook Jobs belong to their StackableScalers",
    );
    let cleanup = |args| cleanup::run(CONTROLLER_NAME, args, clean);
    ebb_runtime::cli::main::<RunArgs, PlanArgs, _, _, _, _, _>(
        ABOUT,
        stackable_scaler::run,
        plan,
        cleanup,
    )
    .await
}
