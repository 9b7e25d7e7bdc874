//! `ebb-sim sweep`: the same scenario over a grid of settings, and the cheapest setting that
//! keeps users' waits within a bound.
//!
//! `--vary NAME=LO..HI[:STEPS]` names a numeric field of the scenario's ebb objects by the end of
//! its path (`threshold`, `scaleFactor`, `timeRangeSpec[2].replicaSpec.hpa.minReplicas`); a name
//! that matches no field or several is an error that lists them. Each combination is one
//! simulation; the cost and the wait are figures of its summary, chosen per kind of scenario
//! (`--cost`, `--wait` take a summary path to choose others).

use std::path::PathBuf;

use ebb_runtime::cli::plan::OutputFormat;
use jiff::SignedDuration;
use serde::Serialize;
use serde_json::{Number, Value};

use crate::draw::Spread;
use crate::run::{RunError, read, simulate};
use crate::scenario::Scenario;
use crate::world::SimError;

/// Kinds whose numeric fields can be varied.
const EBB_KINDS: [&str; 6] = [
    "ServiceScaler",
    "ScaleDownSchedule",
    "StackableScaler",
    "WorkshopScalingPolicy",
    "Workshop",
    "WorkshopProvision",
];

/// Flags of `ebb-sim sweep`.
#[derive(clap::Args, Debug, Clone)]
pub struct SweepArgs {
    /// The scenario file.
    pub scenario: PathBuf,
    /// A field to vary and its range: `NAME=LO..HI` (4 values) or `NAME=LO..HI:STEPS`.
    #[arg(long = "vary", required = true, value_name = "NAME=LO..HI[:STEPS]")]
    pub vary: Vec<String>,
    /// The longest any user may wait (`0`, `90s`, `10m`).
    #[arg(long, default_value = "0")]
    pub max_wait: String,
    /// The summary figure that is the cost, as a path (`seatMinutes`,
    /// `withServiceScaler.replicaMinutes`) [default: by kind of scenario].
    #[arg(long)]
    pub cost: Option<String>,
    /// The summary figure that is the longest wait in seconds, as a path [default: by kind].
    #[arg(long)]
    pub wait: Option<String>,
    /// `text` (a table) or `json`.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub output: OutputFormat,
}

/// One field varied over its values.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    /// As the user named it.
    pub name: String,
    /// The object (index into the scenario's objects) and the path in it.
    pub object: usize,
    /// JSON pointer of the field in that object.
    pub pointer: String,
    /// The values, in order.
    pub values: Vec<Number>,
}

/// One simulation of the grid.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Row {
    /// The values, by the names given.
    pub setting: Vec<(String, Value)>,
    /// The cost figure.
    pub cost: f64,
    /// The longest wait, seconds.
    pub wait_seconds: f64,
    /// Whether the wait is within the bound.
    pub within: bool,
}

/// The grid's rows and the cheapest row within the bound.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Sweep {
    /// The cost's summary path.
    pub cost: String,
    /// The wait's summary path.
    pub wait: String,
    /// The bound, seconds.
    pub max_wait_seconds: i64,
    /// Every combination.
    pub rows: Vec<Row>,
    /// The cheapest within the bound, if any.
    pub cheapest: Option<Row>,
}

fn invalid(path: &str, message: String) -> RunError {
    RunError::Sim(SimError::Scenario {
        path: path.to_owned(),
        message,
    })
}

/// `ebb-sim sweep`.
///
/// # Errors
/// A wrong `--vary`, bound or figure, or a scenario that cannot be simulated.
pub fn sweep(args: &SweepArgs) -> Result<String, RunError> {
    let path = args.scenario.display().to_string();
    let scenario = read(&args.scenario)?;
    let bound = match serde_saphyr::from_str::<Spread>(&args.max_wait) {
        Ok(Spread::Fixed(d)) => d,
        _ => {
            return Err(invalid(
                &path,
                format!("--max-wait {:?} is not a duration", args.max_wait),
            ));
        }
    };
    let axes = args
        .vary
        .iter()
        .map(|v| axis(&scenario, v).map_err(|m| invalid(&path, format!("--vary {v}: {m}"))))
        .collect::<Result<Vec<_>, _>>()?;
    let (cost, wait) = figures(&scenario, args);
    let result = run_grid(&path, &scenario, &axes, &cost, &wait, bound)?;
    Ok(render(&result, args.output))
}

/// The default cost and wait figures for the kind of scenario.
fn figures(scenario: &Scenario, args: &SweepArgs) -> (String, String) {
    let (cost, wait) = if scenario.actors.provisioners.is_some() {
        (
            "withServiceScaler.replicaMinutes",
            "withServiceScaler.waits.maxSeconds",
        )
    } else if scenario.objects_of("WorkshopProvision").next().is_some() {
        ("seatMinutes", "waits.maxSeconds")
    } else if scenario.objects_of("ScaleDownSchedule").next().is_some() {
        ("nodeHours", "enabledOutsideWindowsSeconds")
    } else {
        ("secondsInStage.Failed", "secondsInStage.PreScaling")
    };
    (
        args.cost.clone().unwrap_or_else(|| cost.to_owned()),
        args.wait.clone().unwrap_or_else(|| wait.to_owned()),
    )
}

/// Parses `NAME=LO..HI[:STEPS]` and finds the one field NAME names.
pub fn axis(scenario: &Scenario, spec: &str) -> Result<Axis, String> {
    let (name, range) = spec
        .split_once('=')
        .ok_or("write NAME=LO..HI or NAME=LO..HI:STEPS")?;
    let (range, steps) = match range.split_once(':') {
        Some((r, s)) => (
            r,
            s.parse::<usize>()
                .map_err(|_| format!("{s:?} is not a count of steps"))?,
        ),
        None => (range, 4),
    };
    let (lo, hi) = range.split_once("..").ok_or("the range is LO..HI")?;
    let parse = |s: &str| {
        s.trim()
            .parse::<f64>()
            .map_err(|_| format!("{s:?} is not a number"))
    };
    let (lo_v, hi_v) = (parse(lo)?, parse(hi)?);
    if steps < 2 || hi_v < lo_v {
        return Err("the range needs LO <= HI and at least 2 steps".into());
    }
    let integers = !lo.contains('.') && !hi.contains('.');
    let mut values: Vec<Number> = (0..steps)
        .filter_map(|i| {
            let x = lo_v + (hi_v - lo_v) * i as f64 / (steps - 1) as f64;
            if integers {
                Some(Number::from(x.round() as i64))
            } else {
                Number::from_f64((x * 1000.0).round() / 1000.0)
            }
        })
        .collect();
    values.dedup();
    let mut found = Vec::new();
    for (i, object) in scenario.objects.iter().enumerate() {
        let kind = object
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if EBB_KINDS.contains(&kind) {
            leaves(object, "", &mut |path, pointer| {
                if ends_with_segment(path, name) {
                    found.push((i, pointer.to_owned(), format!("{kind}: {path}")));
                }
            });
        }
    }
    match found.as_slice() {
        [(object, pointer, _)] => Ok(Axis {
            name: name.to_owned(),
            object: *object,
            pointer: pointer.clone(),
            values,
        }),
        [] => Err(format!(
            "no numeric field of the ebb objects ends in {name:?}"
        )),
        many => Err(format!(
            "{name:?} names several fields, say which: {}",
            many.iter()
                .map(|m| m.2.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// Whether `path` ends with `name` at a segment boundary (after `.` or at the start, or `name`
/// starts with an index part itself).
fn ends_with_segment(path: &str, name: &str) -> bool {
    path == name
        || path
            .strip_suffix(name)
            .is_some_and(|head| head.ends_with('.') || name.starts_with('['))
}

/// Calls `found(path, pointer)` for each numeric leaf: `spec.timeRangeSpec[2].replicaSpec`,
/// `/spec/timeRangeSpec/2/replicaSpec`.
fn leaves(value: &Value, path: &str, found: &mut dyn FnMut(&str, &str)) {
    fn walk(value: &Value, path: &str, pointer: &str, found: &mut dyn FnMut(&str, &str)) {
        match value {
            Value::Object(map) => {
                for (k, v) in map {
                    let p = if path.is_empty() {
                        k.clone()
                    } else {
                        format!("{path}.{k}")
                    };
                    walk(v, &p, &format!("{pointer}/{k}"), found);
                }
            }
            Value::Array(items) => {
                for (i, v) in items.iter().enumerate() {
                    walk(v, &format!("{path}[{i}]"), &format!("{pointer}/{i}"), found);
                }
            }
            Value::Number(_) => found(path, pointer),
            _ => {}
        }
    }
    walk(value, path, "", found);
}

fn run_grid(
    path: &str,
    scenario: &Scenario,
    axes: &[Axis],
    cost: &str,
    wait: &str,
    bound: SignedDuration,
) -> Result<Sweep, RunError> {
    let mut rows = Vec::new();
    let mut index = vec![0usize; axes.len()];
    loop {
        let mut variant = scenario.clone();
        let mut setting = Vec::new();
        for (axis, &i) in axes.iter().zip(&index) {
            let value = Value::Number(axis.values[i].clone());
            if let Some(field) = variant.objects[axis.object].pointer_mut(&axis.pointer) {
                *field = value.clone();
            }
            setting.push((axis.name.clone(), value));
        }
        let outcome = simulate(path, &variant)?;
        let figure = |name: &str| -> Result<f64, RunError> {
            let pointer = format!("/{}", name.replace('.', "/"));
            outcome
                .summary
                .pointer(&pointer)
                .and_then(Value::as_f64)
                .ok_or_else(|| invalid(path, format!("the summary has no number at {name:?}")))
        };
        let (c, w) = (figure(cost)?, figure(wait)?);
        rows.push(Row {
            setting,
            cost: c,
            wait_seconds: w,
            within: w <= bound.as_secs() as f64,
        });
        // The next combination, the last axis fastest.
        let mut k = axes.len();
        loop {
            if k == 0 {
                let cheapest = rows
                    .iter()
                    .filter(|r| r.within)
                    .min_by(|a, b| a.cost.total_cmp(&b.cost))
                    .cloned();
                return Ok(Sweep {
                    cost: cost.to_owned(),
                    wait: wait.to_owned(),
                    max_wait_seconds: bound.as_secs(),
                    rows,
                    cheapest,
                });
            }
            k -= 1;
            index[k] += 1;
            if index[k] < axes[k].values.len() {
                break;
            }
            index[k] = 0;
        }
    }
}

fn setting_text(row: &Row) -> String {
    row.setting
        .iter()
        .map(|(n, v)| format!("{n}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The sweep as a table (or JSON).
pub fn render(sweep: &Sweep, format: OutputFormat) -> String {
    if let Some(structured) = format.structured(sweep) {
        return structured;
    }
    let mut out = String::new();
    let names: Vec<&str> = sweep
        .rows
        .first()
        .map(|r| r.setting.iter().map(|(n, _)| n.as_str()).collect())
        .unwrap_or_default();
    for name in &names {
        out.push_str(&format!("{name:<14} "));
    }
    out.push_str(&format!(
        "{:>14} {:>12}  within {}s\n",
        sweep.cost, "wait (s)", sweep.max_wait_seconds
    ));
    for row in &sweep.rows {
        for (_, v) in &row.setting {
            out.push_str(&format!("{:<14} ", v.to_string()));
        }
        out.push_str(&format!(
            "{:>14} {:>12}  {}\n",
            row.cost,
            row.wait_seconds,
            if row.within { "yes" } else { "no" }
        ));
    }
    match &sweep.cheapest {
        Some(row) => out.push_str(&format!(
            "\ncheapest within {}s: {} ({} {}, longest wait {}s)\n",
            sweep.max_wait_seconds,
            setting_text(row),
            sweep.cost,
            row.cost,
            row.wait_seconds
        )),
        None => out.push_str(&format!(
            "\nno setting keeps every wait within {}s\n",
            sweep.max_wait_seconds
        )),
    }
    out
}

#[cfg(test)]
#[path = "sweep_tests.rs"]
mod tests;
