//! `ebb-sim`: how ebb's controllers behave over a day or a week, from the code that runs in the
//! cluster, on a simulated cluster and a virtual clock.

use std::process::ExitCode;

use clap::Parser;
use ebb_sim::run::{RunArgs, run};

/// Simulate ebb's controllers over a scenario (examples/scenarios/*.yaml).
#[derive(Parser, Debug)]
#[command(name = "ebb-sim", version)]
enum Cli {
    /// Run one scenario: the timeline of writes and actors' events, a summary, and SVG charts.
    Run(RunArgs),
}

fn main() -> ExitCode {
    match Cli::parse() {
        Cli::Run(args) => ebb_runtime::plan::finish("ebb-sim run", run(&args)),
    }
}
