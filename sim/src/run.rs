//! `ebb-sim run`: one scenario, start to end, as text or JSON, with its charts written as SVG.

use std::path::{Path, PathBuf};

use ebb_runtime::cli::plan::OutputFormat;
use serde_json::{Value, json};

use crate::Outcome;
use crate::scenario::Scenario;
use crate::world::SimError;

/// Flags of `ebb-sim run`.
#[derive(clap::Args, Debug, Clone)]
pub struct RunArgs {
    /// The scenario file (`examples/scenarios/*.yaml`).
    pub scenario: PathBuf,
    /// `text` (timeline and summary) or `json`.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub output: OutputFormat,
    /// Where the charts go, one SVG per chart named after the scenario.
    #[arg(long, default_value = "target/sim")]
    pub charts: PathBuf,
}

/// Why `ebb-sim` failed.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The scenario cannot be read or simulated.
    #[error(transparent)]
    Sim(#[from] SimError),
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    File {
        /// The file.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A chart could not be drawn.
    #[error(transparent)]
    Chart(#[from] crate::chart::ChartError),
}

/// Reads the scenario at `path`.
///
/// # Errors
/// An unreadable file or a wrong scenario.
pub fn read(path: &Path) -> Result<Scenario, RunError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| RunError::File {
        path: shown.clone(),
        source,
    })?;
    Ok(Scenario::parse(&shown, &text)?)
}

/// Simulates `scenario` on a current-thread runtime whose time is paused: no wall clock, no
/// second thread, so the same scenario always gives the same outcome.
///
/// # Errors
/// A scenario that cannot be simulated.
pub fn simulate(path: &str, scenario: &Scenario) -> Result<Outcome, SimError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .map_err(|e| SimError::Stopped(format!("the simulation's runtime: {e}")))?;
    runtime.block_on(dispatch(path, scenario))
}

async fn dispatch(path: &str, scenario: &Scenario) -> Result<Outcome, SimError> {
    if scenario.objects_of("ScaleDownSchedule").next().is_some() {
        return crate::scaledown_window::run(path, scenario).await;
    }
    if scenario.objects_of("StackableScaler").next().is_some() {
        return crate::stackable_scaler::run(path, scenario).await;
    }
    if scenario.actors.provisioners.is_some() {
        return crate::service_scaler::run(path, scenario).await;
    }
    if scenario.objects_of("WorkshopProvision").next().is_some() {
        return crate::workshop_scaler::run(path, scenario).await;
    }
    let kinds: Vec<&str> = scenario
        .objects
        .iter()
        .filter_map(|o| o.get("kind").and_then(Value::as_str))
        .collect();
    Err(SimError::Scenario {
        path: path.to_owned(),
        message: format!("no simulation for these objects yet: {kinds:?}"),
    })
}

/// `ebb-sim run`: simulates, writes the charts, and renders the outcome.
///
/// # Errors
/// A scenario that cannot be read or simulated, or a chart that cannot be written.
pub fn run(args: &RunArgs) -> Result<String, RunError> {
    let scenario = read(&args.scenario)?;
    let outcome = simulate(&args.scenario.display().to_string(), &scenario)?;
    let charts = write_charts(&outcome, &args.charts)?;
    Ok(render(&outcome, &charts, args.output))
}

fn write_charts(outcome: &Outcome, dir: &Path) -> Result<Vec<String>, RunError> {
    let io = |path: &Path| {
        let path = path.display().to_string();
        move |source| RunError::File { path, source }
    };
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let mut written = Vec::new();
    for (i, chart) in outcome.charts.iter().enumerate() {
        let suffix = if i == 0 {
            String::new()
        } else {
            format!("-{i}")
        };
        let file = dir.join(format!("{}{suffix}.svg", outcome.name));
        std::fs::write(&file, chart.svg()?).map_err(io(&file))?;
        written.push(file.display().to_string());
    }
    Ok(written)
}

/// The outcome as text (timeline, summary, charts), or JSON or YAML (the same, as one object).
pub fn render(outcome: &Outcome, charts: &[String], format: OutputFormat) -> String {
    let value = || {
        json!({
            "name": outcome.name,
            "summary": outcome.summary,
            "timeline": outcome.timeline,
            "charts": charts,
        })
    };
    match format {
        OutputFormat::Json => format!(
            "{}\n",
            serde_json::to_string_pretty(&value()).unwrap_or_default()
        ),
        OutputFormat::Yaml => ebb_runtime::cli::plan::yaml_document(&value()),
        OutputFormat::Text => {
            let mut out = format!("== {}\n\n-- timeline\n", outcome.name);
            out.push_str(&outcome.timeline.text());
            out.push_str("\n-- summary\n");
            if let Value::Object(figures) = &outcome.summary {
                for (name, value) in figures {
                    out.push_str(&format!("{name:<32} {value}\n"));
                }
            }
            for chart in charts {
                out.push_str(&format!("\nchart: {chart}\n"));
            }
            out
        }
    }
}
