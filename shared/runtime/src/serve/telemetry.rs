//! Logging setup shared by every binary: `tracing` events to stderr as text or JSON lines.
//!
//! Lines fit the pipe they go to: text carries ANSI colours only when stderr is a terminal (and
//! `NO_COLOR` is not set), and with `--log-format json` every line is JSON, the one that says why
//! the process exits included ([`fatal`]).

use std::fmt::Display;
use std::io::IsTerminal as _;

use tracing_subscriber::{EnvFilter, filter::LevelFilter};

/// How log lines are written.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LogFormat {
    /// Human-readable lines (the default; best for `kubectl logs`).
    #[default]
    Text,
    /// One JSON object per line (for log pipelines).
    Json,
}

/// Why logging could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// `RUST_LOG` is set but is not a valid filter.
    #[error("RUST_LOG is not a valid log filter: {0}")]
    InvalidFilter(#[from] tracing_subscriber::filter::FromEnvError),
    /// A global subscriber is already installed (e.g. `init` was called twice).
    #[error("logging is already initialised: {0}")]
    AlreadyInitialised(String),
}

/// kube's line per failed request, silenced (see [`init`]).
const KUBE_REQUEST_ERRORS: &str = "kube_client::client::builder=off";

/// Installs the global log subscriber. The filter comes from `RUST_LOG` and defaults to `info`.
/// kube's client logs every failed request at error level (`kube_client::client::builder`): while
/// the API server is away that was a dozen lines a second, each retry of each watch; they are off,
/// and the process says once that it lost the server and once that it is back
/// ([`crate::watch::contact`]).
///
/// Calling it again returns [`TelemetryError::AlreadyInitialised`] instead of panicking, so tests
/// and binaries can call it freely.
pub fn init(format: LogFormat) -> Result<(), TelemetryError> {
    let mut filter = EnvFilter::builder()
        .with_default_directive(LevelFilter::INFO.into())
        .from_env()?;
    // A constant (a test parses it).
    if let Ok(quiet) = KUBE_REQUEST_ERRORS.parse() {
        filter = filter.add_directive(quiet);
    }
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(colours(
            std::io::stderr().is_terminal(),
            std::env::var_os("NO_COLOR"),
        ));
    let installed = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .try_init(),
    };
    installed.map_err(|e| TelemetryError::AlreadyInitialised(e.to_string()))
}

/// Whether text lines get ANSI colours: only on a terminal, and not when `NO_COLOR` is set to
/// anything non-empty (no-color.org).
fn colours(terminal: bool, no_color: Option<std::ffi::OsString>) -> bool {
    terminal && no_color.is_none_or(|value| value.is_empty())
}

/// The line that says why a process exits, in the format its logs are in: `<program>: <error>`
/// as text, or one JSON object shaped as the JSON log lines are (`timestamp`, `level`,
/// `message`, `target`). Written straight to stderr, so it is there even when logging could not
/// be set up.
pub fn fatal_line(format: LogFormat, program: &str, error: &dyn Display, now: &str) -> String {
    match format {
        LogFormat::Text => format!("{program}: {error:#}"),
        LogFormat::Json => serde_json::json!({
            "timestamp": now,
            "level": "ERROR",
            "message": format!("{error:#}"),
            "target": program,
        })
        .to_string(),
    }
}

/// Prints [`fatal_line`] on stderr, stamped with the wall clock (as every log line is).
pub fn fatal(format: LogFormat, program: &str, error: &dyn Display) {
    use crate::clock::Clock as _;
    let now = format!("{:.6}", crate::clock::SystemClock.now());
    eprintln!("{}", fatal_line(format, program, error, &now));
}

#[cfg(test)]
mod tests {

    #[test]
    fn kubes_request_errors_directive_parses() {
        assert!(
            KUBE_REQUEST_ERRORS
                .parse::<tracing_subscriber::filter::Directive>()
                .is_ok()
        );
    }

    use super::*;

    #[test]
    fn colours_only_on_a_terminal_without_no_color() {
        assert!(colours(true, None));
        assert!(colours(true, Some("".into())));
        assert!(!colours(true, Some("1".into())));
        assert!(!colours(false, None));
    }

    #[test]
    fn the_fatal_line_is_in_the_log_format() {
        let error = "cannot reach the Kubernetes API: no kubeconfig";
        assert_eq!(
            fatal_line(LogFormat::Text, "service-scaler", &error, "t"),
            "service-scaler: cannot reach the Kubernetes API: no kubeconfig"
        );
        let line = fatal_line(
            LogFormat::Json,
            "service-scaler",
            &error,
            "2026-11-26T14:00:00Z",
        );
        let value: serde_json::Value = serde_json::from_str(&line).unwrap_or_default();
        assert_eq!(
            value,
            serde_json::json!({
                "timestamp": "2026-11-26T14:00:00Z",
                "level": "ERROR",
                "message": error,
                "target": "service-scaler",
            })
        );
        assert!(!line.contains('\n'));
    }

    #[test]
    fn second_init_reports_instead_of_panicking() {
        // The first call may also fail if another test installed a subscriber; either way no panic.
        let _ = init(LogFormat::Json);
        assert!(matches!(
            init(LogFormat::Text),
            Err(TelemetryError::AlreadyInitialised(_))
        ));
    }
}
