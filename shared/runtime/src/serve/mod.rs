//! Serving: /healthz, /readyz and /metrics (with their authentication and TLS), the process and controller metrics, and logging.

pub mod metrics;
pub mod metrics_auth;
pub mod process_metrics;
pub mod server;
pub mod telemetry;
pub mod tls;
