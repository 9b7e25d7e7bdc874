//! `ebb-sim`: how ebb's controllers behave over a day or a week, from the code that runs in the
//! cluster, on a simulated cluster and a virtual clock.

use std::process::ExitCode;

use clap::Parser;
use ebb_sim::run::{RunArgs, run};
use ebb_sim::sweep::{SweepArgs, sweep};

/// Simulate ebb's controllers over a scenario (examples/scenarios/*.yaml).
#[derive(Parser, Debug)]
#[command(name = "ebb-sim", version)]
enum Cli {
    /// Run one scenario: the timeline of writes and actors' events, a summary, and SVG charts.
    Run(RunArgs),
    /// Run one scenario over a grid of settings and name the cheapest whose waits stay in bound.
    Sweep(SweepArgs),
}

fn main() -> ExitCode {
    match Cli::parse() {
        Cli::Run(args) => ebb_runtime::cli::plan::finish("ebb-sim run", run(&args)),
        Cli::Sweep(args) => ebb_runtime::cli::plan::finish("ebb-sim sweep", sweep(&args)),
    }
}
