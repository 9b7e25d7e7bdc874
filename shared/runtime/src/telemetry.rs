//! Logging setup shared by every binary: `tracing` events to stderr as text or JSON lines.

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

/// Installs the global log subscriber. The filter comes from `RUST_LOG` and defaults to `info`.
///
/// Calling it again returns [`TelemetryError::AlreadyInitialised`] instead of panicking, so tests
/// and binaries can call it freely.
pub fn init(format: LogFormat) -> Result<(), TelemetryError> {
    let filter = EnvFilter::builder()
        .with_default_directive(LevelFilter::INFO.into())
        .from_env()?;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
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

#[cfg(test)]
mod tests {
    use super::*;

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
