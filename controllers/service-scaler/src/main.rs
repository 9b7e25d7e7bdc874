//! `service-scaler`: run the controller, `plan` a decision offline, or `cleanup` before an uninstall.

#[tokio::main]
async fn main() -> std::process::ExitCode {
    ebb_runtime::controller::main::<service_scaler::ServiceScalerController>().await
}
