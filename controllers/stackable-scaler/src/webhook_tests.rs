//! The admission decision on real AdmissionReview JSON, the HTTP handler, and TLS serving.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Mutex;

use ebb_crds::stackable::{ScalerStage, ScalerState, StackableScalerSpec, StackableScalerStatus};
use http::Request;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tower::ServiceExt;

use super::*;

fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/admission")
        .join(name);
    std::fs::read_to_string(path).unwrap()
}

fn parse(name: &str) -> AdmissionReview<DynamicObject> {
    serde_json::from_str(&fixture(name)).unwrap()
}

fn scaler_in(stage: ScalerStage) -> StackableScaler {
    let mut s = StackableScaler::new(
        "nifi-default",
        StackableScalerSpec {
            replicas: 3,
            hooks: None,
            stage_timeout_seconds: None,
        },
    );
    s.status = Some(StackableScalerStatus {
        replicas: 3,
        current_state: Some(ScalerState {
            stage,
            ..ScalerState::default()
        }),
        ..StackableScalerStatus::default()
    });
    s
}

/// A live-object lookup that answers from a fixed result and counts calls.
struct Live {
    answer: Result<Option<StackableScaler>, String>,
    calls: Mutex<Vec<(String, String)>>,
}

impl Live {
    fn new(answer: Result<Option<StackableScaler>, String>) -> Self {
        Self {
            answer,
            calls: Mutex::new(Vec::new()),
        }
    }
    fn stage(stage: ScalerStage) -> Self {
        Self::new(Ok(Some(scaler_in(stage))))
    }
}

impl LiveScalers for Live {
    async fn get(&self, namespace: &str, name: &str) -> Result<Option<StackableScaler>, String> {
        self.calls
            .lock()
            .unwrap()
            .push((namespace.to_owned(), name.to_owned()));
        self.answer.clone()
    }
}

async fn answer(live: &Live, name: &str) -> AdmissionResponse {
    review(live, parse(name)).await.response.unwrap()
}

#[test]
fn the_fixtures_classify() {
    let request =
        |name: &str| -> AdmissionRequest<DynamicObject> { parse(name).try_into().unwrap() };
    assert_eq!(
        examine(&request("update-replicas.json")),
        Check::ReplicasChange {
            namespace: "data".into(),
            name: "nifi-default".into(),
            from: Some(3),
            to: Some(5)
        }
    );
    assert!(matches!(
        examine(&request("scale-subresource.json")),
        Check::ReplicasChange {
            from: Some(3),
            to: Some(5),
            ..
        }
    ));
    assert!(matches!(
        examine(&request("update-hooks-only.json")),
        Check::Allow(_)
    ));
    assert!(matches!(examine(&request("create.json")), Check::Allow(_)));
}

#[tokio::test]
async fn replica_changes_are_allowed_in_idle_and_failed() {
    for stage in [ScalerStage::Idle, ScalerStage::Failed] {
        for name in ["update-replicas.json", "scale-subresource.json"] {
            let live = Live::stage(stage);
            let response = answer(&live, name).await;
            assert!(response.allowed, "{stage:?} {name}: {:?}", response.result);
            assert_eq!(
                live.calls.lock().unwrap().clone(),
                vec![("data".to_owned(), "nifi-default".to_owned())]
            );
        }
    }
}

#[tokio::test]
async fn replica_changes_are_denied_while_an_operation_is_in_flight() {
    for stage in [
        ScalerStage::PreScaling,
        ScalerStage::Scaling,
        ScalerStage::PostScaling,
    ] {
        for name in ["update-replicas.json", "scale-subresource.json"] {
            let response = answer(&Live::stage(stage), name).await;
            assert!(!response.allowed, "{stage:?} {name}");
            assert_eq!(response.result.code, 403);
            assert!(
                response.result.message.contains(stage.as_str()),
                "{}",
                response.result.message
            );
            assert!(
                response.result.message.contains("spec.replicas 3 -> 5"),
                "{}",
                response.result.message
            );
        }
    }
}

#[tokio::test]
async fn the_response_echoes_the_request_uid() {
    let response = answer(&Live::stage(ScalerStage::Scaling), "update-replicas.json").await;
    assert_eq!(response.uid, "705ab4f5-6393-11e8-b7cc-42010a800002");
}

#[tokio::test]
async fn changes_that_keep_the_replicas_are_allowed_without_a_lookup() {
    for name in ["update-hooks-only.json", "create.json"] {
        let live = Live::stage(ScalerStage::Scaling);
        assert!(answer(&live, name).await.allowed, "{name}");
        assert!(
            live.calls.lock().unwrap().is_empty(),
            "{name}: no lookup needed"
        );
    }
}

#[tokio::test]
async fn a_lookup_error_or_a_missing_object_denies() {
    let response = answer(
        &Live::new(Err("connection refused".into())),
        "update-replicas.json",
    )
    .await;
    assert!(!response.allowed);
    assert!(
        response.result.message.contains("fails closed"),
        "{}",
        response.result.message
    );
    assert!(response.result.message.contains("connection refused"));
    let response = answer(&Live::new(Ok(None)), "scale-subresource.json").await;
    assert!(!response.allowed);
    assert!(response.result.message.contains("not found"));
}

#[tokio::test]
async fn unreadable_replicas_count_as_a_change() {
    let mut review_json: Value = serde_json::from_str(&fixture("update-replicas.json")).unwrap();
    review_json["request"]["object"]["spec"]["replicas"] = Value::String("five".into());
    let review_value: AdmissionReview<DynamicObject> = serde_json::from_value(review_json).unwrap();
    let response = review(&Live::stage(ScalerStage::Scaling), review_value)
        .await
        .response
        .unwrap();
    assert!(!response.allowed);
    assert!(
        response.result.message.contains("3 -> ?"),
        "{}",
        response.result.message
    );
}

#[tokio::test]
async fn the_handler_speaks_admission_review_json() {
    let app = router(Arc::new(Live::stage(ScalerStage::PreScaling)));
    let request = Request::post(PATH)
        .header("content-type", "application/json")
        .body(axum::body::Body::from(fixture("update-replicas.json")))
        .unwrap();
    let response = app.oneshot(request).await.unwrap();
    assert_eq!(response.status(), 200);
    let body = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    let json: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(json["apiVersion"], "admission.k8s.io/v1");
    assert_eq!(json["kind"], "AdmissionReview");
    assert_eq!(
        json["response"]["uid"],
        "705ab4f5-6393-11e8-b7cc-42010a800002"
    );
    assert_eq!(json["response"]["allowed"], false);
}

#[tokio::test]
async fn the_handler_rejects_garbage_as_invalid() {
    let app = router(Arc::new(Live::stage(ScalerStage::Idle)));
    let request = Request::post(PATH)
        .body(axum::body::Body::from("{not json"))
        .unwrap();
    let response = app.oneshot(request).await.unwrap();
    let body = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    let json: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(json["response"]["allowed"], false);
    assert!(
        json["response"]["status"]["message"]
            .as_str()
            .unwrap()
            .contains("cannot parse")
    );
}

/// The runtime's test certificate for `localhost` (`ebb_runtime::serve::tls` serves it).
fn cert_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/runtime/tests/fixtures/tls")
}

#[tokio::test]
async fn the_webhook_is_served_over_tls() {
    let config = tls_config(&cert_dir()).unwrap();
    let listener = TlsListener::bind("127.0.0.1:0".parse().unwrap(), config)
        .await
        .unwrap();
    let addr = listener.local();
    let shutdown = Shutdown::new();
    let server = tokio::spawn(serve(
        listener,
        Arc::new(Live::stage(ScalerStage::Scaling)),
        shutdown.clone(),
    ));

    let mut roots = tokio_rustls::rustls::RootCertStore::empty();
    for cert in
        tokio_rustls::rustls::pki_types::CertificateDer::pem_file_iter(cert_dir().join("ca.crt"))
            .unwrap()
    {
        roots.add(cert.unwrap()).unwrap();
    }
    let client_config = tokio_rustls::rustls::ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(client_config));
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let server_name = tokio_rustls::rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let mut tls = connector.connect(server_name, tcp).await.unwrap();
    let body = fixture("update-replicas.json");
    let request = format!(
        "POST {PATH} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    tls.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    let _ = tls.read_to_string(&mut response).await;
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(response.contains("\"allowed\":false"), "{response}");

    shutdown.trigger();
    tokio::time::timeout(std::time::Duration::from_secs(5), server)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
}

#[test]
fn a_missing_certificate_is_reported_with_its_directory() {
    let err = tls_config(Path::new("/nonexistent/certs")).unwrap_err();
    assert!(err.to_string().contains("/nonexistent/certs"), "{err}");
}
