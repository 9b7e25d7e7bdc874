//! stackable-scaler as a process against a real API server: the hook state machine with Jobs
//! whose status the test writes (no Job controller runs), and the admission webhook registered
//! as the chart registers it and called by the API server through its Service's endpoints.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::TcpListener;
use std::time::Duration;

use ebb_crds::stackable::{ScalerStage, ScalerState};
use ebb_e2e::rbac::{apply, render};
use ebb_e2e::{Controller, Setup, cluster, eventually, tls, work_dir};
use jiff::Timestamp;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::batch::v1::Job;
use kube::ResourceExt;
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams};
use serde_json::{Value, json};

const CHART: &str = "stackable-scaler";

/// The scaler's `status.currentState`, read as the controller reads it (both wire forms).
fn state(scaler: &DynamicObject) -> Option<ScalerState> {
    serde_json::from_value(scaler.data["status"]["currentState"].clone()).ok()
}

fn stage(scaler: &DynamicObject) -> Option<&'static str> {
    state(scaler).map(|state| state.stage.as_str())
}

/// The names of the hook Jobs in the test's namespace.
async fn job_names(jobs: &Api<Job>) -> kube::Result<Vec<String>> {
    let list = jobs.list(&ListParams::default()).await?;
    Ok(list.items.iter().map(ResourceExt::name_any).collect())
}

/// Sets a StatefulSet's status as its controller would once `replicas` pods are ready.
async fn settle_workload(sets: &Api<StatefulSet>, name: &str, replicas: i32) {
    let generation = sets.get(name).await.unwrap().metadata.generation.unwrap();
    sets.patch_status(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {
            "replicas": replicas, "readyReplicas": replicas, "currentReplicas": replicas,
            "updatedReplicas": replicas, "availableReplicas": replicas,
            "observedGeneration": generation
        }})),
    )
    .await
    .unwrap();
}

/// Finishes a Job as the Job controller would: `Complete` (with `SuccessCriteriaMet`, which the
/// API server requires beside it) or `Failed` (with `FailureTarget`).
async fn finish_job(jobs: &Api<Job>, name: &str, succeed: bool) {
    let now = ebb_runtime::time::rfc3339(Timestamp::now());
    let condition = |type_: &str, reason: &str| {
        json!({"type": type_, "status": "True", "reason": reason, "message": reason,
               "lastProbeTime": now, "lastTransitionTime": now})
    };
    let status = if succeed {
        json!({"startTime": now, "completionTime": now, "succeeded": 1, "active": 0,
               "conditions": [condition("SuccessCriteriaMet", "CompletionsReached"),
                              condition("Complete", "CompletionsReached")]})
    } else {
        json!({"startTime": now, "failed": 1, "active": 0,
               "conditions": [condition("FailureTarget", "BackoffLimitExceeded"),
                              condition("Failed", "BackoffLimitExceeded")]})
    };
    jobs.patch_status(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"status": status})),
    )
    .await
    .unwrap_or_else(|e| panic!("finishing Job {name}: {e}"));
}

/// A scale-down runs its pre-hook Job, which the test completes; the workload is scaled and the
/// scaler returns to Idle. While the hook runs, a `/scale` write is refused by the admission
/// webhook (registered as the chart registers it, reached through its Service's endpoints). A
/// second scale-down whose hook fails stops in Failed, and the retry annotation starts a new
/// attempt.
#[tokio::test]
async fn hooks_run_as_jobs_and_the_webhook_guards_scale_writes() {
    // The API server calls the webhook at an endpoint of its Service, and endpoints may not be
    // loopback addresses: the local process needs a test-host address (e2e/isolated makes one in
    // a private network namespace). On any other cluster the API server cannot reach a local
    // process at all, and the scenario runs without the webhook.
    let host_ip = std::env::var("EBB_E2E_HOST_IP")
        .ok()
        .filter(|ip| !ip.is_empty());
    let host_ip = match host_ip {
        Some(ip) if cluster().local => Some(ip),
        _ => {
            assert!(
                !cluster().local,
                "EBB_E2E_HOST_IP is unset: run the suite through e2e/isolated (make e2e)"
            );
            println!("note: the webhook part needs the local control plane; hooks only here");
            None
        }
    };
    let setup_probe = Setup::new(CHART, "e2e-sk", true, &[]).await.unwrap();
    let ns = setup_probe.namespace.clone();
    let admin = setup_probe.admin.clone();
    let release = setup_probe.identity.release.clone();
    let service = format!("{release}-webhook");

    let mut webhook_args: Vec<String> = Vec::new();
    let mut webhook_cert = None;
    if let Some(host_ip) = &host_ip {
        // The webhook's serving certificate, as cert-manager would issue it.
        let cert = tls::serving_cert(
            &[
                format!("{service}.{ns}.svc"),
                format!("{service}.{ns}.svc.cluster.local"),
            ],
            &work_dir().join(format!("{release}-webhook-certs")),
        )
        .unwrap();
        let sets = [
            "webhook.enabled=true".to_owned(),
            "webhook.failurePolicy=Fail".to_owned(),
            format!("webhook.tls.caBundle={}", cert.ca_bundle()),
            "webhook.tls.secretName=webhook-certs".to_owned(),
            format!("watchNamespaces[0]={ns}"),
        ];
        let sets: Vec<&str> = sets.iter().map(String::as_str).collect();
        // The webhook's Service and ValidatingWebhookConfiguration, exactly as the chart renders them.
        for doc in render(CHART, &release, &ns, &sets).unwrap() {
            if matches!(
                doc["kind"].as_str(),
                Some("Service" | "ValidatingWebhookConfiguration")
            ) && doc["metadata"]["name"]
                .as_str()
                .is_some_and(|n| n.starts_with(&release))
                && (doc["kind"] != "Service" || doc["metadata"]["name"] == json!(service))
            {
                apply(&admin, &doc).await.unwrap();
            }
        }
        // No endpoints controller runs: publish the local process as the Service's endpoint.
        let port = TcpListener::bind(format!("{host_ip}:0"))
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        apply(
            &admin,
            &json!({
                "apiVersion": "v1", "kind": "Endpoints",
                "metadata": {"name": service, "namespace": ns},
                "subsets": [{"addresses": [{"ip": host_ip}], "ports": [{"name": "webhook", "port": port, "protocol": "TCP"}]}]
            }),
        )
        .await
        .unwrap();
        apply(
            &admin,
            &json!({
                "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                "metadata": {"name": format!("{service}-local"), "namespace": ns,
                             "labels": {"kubernetes.io/service-name": service}},
                "addressType": "IPv4",
                "endpoints": [{"addresses": [host_ip], "conditions": {"ready": true}}],
                "ports": [{"name": "webhook", "port": port, "protocol": "TCP"}]
            }),
        )
        .await
        .unwrap();
        webhook_args = vec![
            "--enable-webhook".into(),
            "--webhook-addr".into(),
            format!("{host_ip}:{port}"),
            "--webhook-cert-dir".into(),
            cert.dir.to_string_lossy().into_owned(),
        ];
        webhook_cert = Some((cert, host_ip.clone(), port));
    }

    // The workload and its scaler (owned by it, as Stackable's operators create them).
    let statefulsets: Api<StatefulSet> = Api::namespaced(admin.clone(), &ns);
    let setup = setup_probe;
    setup
        .apply(json!({
            "apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "nifi-node-default"},
            "spec": {
                "replicas": 3, "serviceName": "nifi",
                "selector": {"matchLabels": {"app": "nifi"}},
                "template": {"metadata": {"labels": {"app": "nifi"}},
                             "spec": {"containers": [{"name": "nifi", "image": "nifi:2"}]}}
            }
        }))
        .await
        .unwrap();
    settle_workload(&statefulsets, "nifi-node-default", 3).await;
    let sts = statefulsets.get("nifi-node-default").await.unwrap();
    // The hook's pod template has no restartPolicy: ebb must give it one the API server accepts.
    let scaler_doc = |replicas: i64| -> Value {
        json!({
            "apiVersion": "autoscaling.stackable.tech/v1alpha1", "kind": "StackableScaler",
            "metadata": {"name": "nifi", "ownerReferences": [{
                "apiVersion": "apps/v1", "kind": "StatefulSet", "name": "nifi-node-default",
                "uid": sts.uid().unwrap(), "controller": true
            }]},
            "spec": {"replicas": replicas, "hooks": {"preScale": {"timeoutSeconds": 600, "template": {
                "spec": {"backoffLimit": 0, "template": {"spec": {"containers": [{
                    "name": "offload", "image": "nifi-tools:1", "command": ["/bin/offload"]}]}}}}}}}
        })
    };
    setup.apply(scaler_doc(3)).await.unwrap();

    let mut args = vec!["--namespace", ns.as_str(), "--leader-election=false"];
    args.extend(webhook_args.iter().map(String::as_str));
    let mut controller =
        Controller::ready("stackable-scaler", &setup.identity, "sk-0", &args).await;

    let scalers: Api<DynamicObject> = setup
        .dynamic("autoscaling.stackable.tech", "v1alpha1", "StackableScaler")
        .await
        .unwrap();
    let jobs: Api<Job> = Api::namespaced(admin.clone(), &ns);
    let wait_stage = |want: &'static str| {
        let scalers = scalers.clone();
        async move {
            eventually(Duration::from_secs(20), || async {
                let s = scalers.get("nifi").await.ok()?;
                (stage(&s) == Some(want)).then_some(s)
            })
            .await
        }
    };
    let idle = wait_stage("Idle")
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", controller.log_tail()));
    assert_eq!(
        idle.data["status"]["replicas"],
        json!(3),
        "seeded from the workload, never 0"
    );

    // Scale down to 2 (as an HPA would, through /scale): the pre-hook Job starts.
    let scale = |replicas: i64| {
        let scalers = scalers.clone();
        async move {
            scalers
                .patch_scale(
                    "nifi",
                    &PatchParams::default(),
                    &Patch::Merge(json!({"spec": {"replicas": replicas}})),
                )
                .await
        }
    };
    scale(2).await.unwrap();
    wait_stage("PreScaling")
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", controller.log_tail()));
    let job = eventually(Duration::from_secs(15), || async {
        jobs.list(&ListParams::default())
            .await
            .ok()?
            .items
            .into_iter()
            .next()
    })
    .await
    .unwrap_or_else(|e| panic!("no hook Job: {e}\n{}", controller.log_tail()));
    let pod = job.spec.as_ref().unwrap().template.spec.as_ref().unwrap();
    assert_eq!(pod.restart_policy.as_deref(), Some("Never"));
    let env: Vec<String> = pod.containers[0]
        .env
        .iter()
        .flatten()
        .map(|e| e.name.clone())
        .collect();
    assert!(
        env.iter().any(|e| e.starts_with("EBB_")),
        "the hook learns its context: {env:?}"
    );

    // Mid-transition, the API server asks the webhook, which refuses a /scale write.
    let refused = scale(4)
        .await
        .expect_err("a /scale write during PreScaling must be refused");
    let message = refused.to_string();
    assert!(
        message.contains("admission webhook") && message.contains("denied"),
        "refused by the webhook: {message}"
    );

    // kill -9 mid-hook and a restart: the hook Job is neither repeated nor skipped.
    controller.kill().unwrap();
    let controller = Controller::ready("stackable-scaler", &setup.identity, "sk-1", &args).await;
    ebb_e2e::settle(Duration::from_secs(4), || async {
        let names = job_names(&jobs).await?;
        anyhow::ensure!(
            names == [job.name_any()],
            "after a restart the hook ran again: {names:?}"
        );
        Ok(())
    })
    .await
    .unwrap();
    let scaler = scalers.get("nifi").await.unwrap();
    assert_eq!(
        stage(&scaler),
        Some("PreScaling"),
        "still waiting for the same hook"
    );

    // The hook completes; the workload is scaled, settles, and the scaler returns to Idle.
    finish_job(&jobs, &job.name_any(), true).await;
    eventually(Duration::from_secs(20), || async {
        let sts = statefulsets.get("nifi-node-default").await.ok()?;
        (sts.spec?.replicas == Some(2)).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("workload not scaled: {e}\n{}", controller.log_tail()));
    settle_workload(&statefulsets, "nifi-node-default", 2).await;
    let idle = wait_stage("Idle")
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", controller.log_tail()));
    assert_eq!(idle.data["status"]["replicas"], json!(2));

    // The serving certificate renewed by the same CA (as cert-manager renews a leaf of the
    // chart's own CA) while writes go on, every other one a /scale write (at the count it has:
    // the webhook is asked all the same): the caBundle needs no change, so none is refused
    // (failurePolicy Fail: a write that could not reach the webhook, or skipped it, would be).
    if let Some((cert, host_ip, port)) = &webhook_cert {
        let writes = async {
            for tick in 0..40 {
                let written = if tick % 2 == 0 {
                    scale(2).await.map(drop)
                } else {
                    let tick = json!({"metadata": {"annotations": {"e2e/tick": tick.to_string()}}});
                    scalers
                        .patch("nifi", &PatchParams::default(), &Patch::Merge(tick))
                        .await
                        .map(drop)
                };
                written.unwrap_or_else(|e| panic!("write {tick} across the renewal refused: {e}"));
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        };
        let renew = async {
            tokio::time::sleep(Duration::from_millis(500)).await;
            cert.renew().unwrap();
        };
        futures::join!(writes, renew);
        // The API server may keep its connection (and the old certificate) open: a handshake of
        // our own, trusting the unchanged caBundle, gets the renewed certificate.
        let name = format!("{service}.{ns}.svc");
        let port = i32::from(*port);
        ebb_e2e::https_get((host_ip.as_str(), port), "/", None, (&cert.ca_pem, &name))
            .await
            .unwrap_or_else(|e| {
                panic!("the renewed certificate is not trusted by the caBundle: {e}")
            });
        let log = std::fs::read_to_string(&controller.log).unwrap_or_default();
        assert!(
            log.contains("reloaded the certificate"),
            "the webhook kept its old certificate:\n{}",
            controller.log_tail()
        );
    }

    // A second scale-down whose hook fails: Failed, until a person asks for a retry.
    scale(1).await.unwrap();
    let first = eventually(Duration::from_secs(20), || async {
        let names: Vec<String> = job_names(&jobs)
            .await
            .ok()?
            .into_iter()
            .filter(|n| *n != job.name_any())
            .collect();
        names.into_iter().next()
    })
    .await
    .unwrap_or_else(|e| panic!("no second hook Job: {e}\n{}", controller.log_tail()));
    finish_job(&jobs, &first, false).await;
    let failed = wait_stage("Failed")
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", controller.log_tail()));
    // Written in Stackable's PR's tagged form.
    let written = &failed.data["status"]["currentState"]["stage"];
    assert_eq!(written["stage"], json!("failed"), "{written}");
    assert_eq!(
        written["details"]["failedAt"],
        json!("preScaling"),
        "{written}"
    );
    assert!(written["details"]["reason"].is_string(), "{written}");
    assert_eq!(
        state(&failed).and_then(|s| s.failed_in),
        Some(ScalerStage::PreScaling)
    );
    assert_eq!(
        statefulsets
            .get("nifi-node-default")
            .await
            .unwrap()
            .spec
            .unwrap()
            .replicas,
        Some(2)
    );

    scalers
        .patch(
            "nifi",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"annotations": {"autoscaling.stackable.tech/retry": "true"}}}),
            ),
        )
        .await
        .unwrap();
    let retry = eventually(Duration::from_secs(20), || async {
        let names: Vec<String> = job_names(&jobs)
            .await
            .ok()?
            .into_iter()
            .filter(|n| *n != job.name_any() && *n != first)
            .collect();
        names.into_iter().next()
    })
    .await
    .unwrap_or_else(|e| {
        panic!(
            "the retry started no new attempt: {e}\n{}",
            controller.log_tail()
        )
    });
    let annotated = scalers.get("nifi").await.unwrap();
    assert!(
        !annotated
            .annotations()
            .contains_key("autoscaling.stackable.tech/retry"),
        "the retry annotation is stripped"
    );
    assert_ne!(retry, first, "a retry is a new attempt with a new Job name");
    finish_job(&jobs, &retry, true).await;
    eventually(Duration::from_secs(20), || async {
        let sts = statefulsets.get("nifi-node-default").await.ok()?;
        (sts.spec?.replicas == Some(1)).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e}\n{}", controller.log_tail()));
    settle_workload(&statefulsets, "nifi-node-default", 1).await;
    wait_stage("Idle")
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", controller.log_tail()));

    controller.stop().await;
}

/// A stage that never converges does not freeze the scaler: past `stageTimeoutSeconds` it moves
/// to Failed with a reason naming what it waited for; after a retry, the abort annotation moves
/// the new attempt to Failed at once and is stripped.
#[tokio::test]
async fn a_stage_that_never_converges_fails_and_an_abort_fails_at_once() {
    let setup = Setup::new(CHART, "e2e-skt", true, &[]).await.unwrap();
    let ns = setup.namespace.clone();
    let admin = setup.admin.clone();
    let statefulsets: Api<StatefulSet> = Api::namespaced(admin.clone(), &ns);
    setup
        .apply(json!({
            "apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "kafka-broker"},
            "spec": {
                "replicas": 3, "serviceName": "kafka",
                "selector": {"matchLabels": {"app": "kafka"}},
                "template": {"metadata": {"labels": {"app": "kafka"}},
                             "spec": {"containers": [{"name": "kafka", "image": "kafka:3"}]}}
            }
        }))
        .await
        .unwrap();
    settle_workload(&statefulsets, "kafka-broker", 3).await;
    let sts = statefulsets.get("kafka-broker").await.unwrap();
    let doc = |timeout: i64| {
        json!({
            "apiVersion": "autoscaling.stackable.tech/v1alpha1", "kind": "StackableScaler",
            "metadata": {"name": "kafka", "ownerReferences": [{
                "apiVersion": "apps/v1", "kind": "StatefulSet", "name": "kafka-broker",
                "uid": sts.uid().unwrap(), "controller": true
            }]},
            "spec": {"replicas": 3, "stageTimeoutSeconds": timeout}
        })
    };
    setup.apply(doc(3)).await.unwrap();
    let args = ["--namespace", ns.as_str(), "--leader-election=false"];
    let controller = Controller::ready("stackable-scaler", &setup.identity, "skt-0", &args).await;
    let scalers: Api<DynamicObject> = setup
        .dynamic("autoscaling.stackable.tech", "v1alpha1", "StackableScaler")
        .await
        .unwrap();
    let wait_stage = |want: &'static str, within: u64| {
        let scalers = scalers.clone();
        async move {
            eventually(Duration::from_secs(within), || async {
                let s = scalers.get("kafka").await.ok()?;
                (stage(&s) == Some(want)).then_some(s)
            })
            .await
        }
    };
    wait_stage("Idle", 20)
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", controller.log_tail()));

    // Scale down to 2; the workload is written but never reports 2 ready replicas.
    scalers
        .patch_scale(
            "kafka",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 2}})),
        )
        .await
        .unwrap();
    let failed = wait_stage("Failed", 30)
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", controller.log_tail()));
    let failure = state(&failed).unwrap_or_default();
    assert_eq!(failure.failed_in, Some(ScalerStage::Scaling), "{failure:?}");
    let reason = failure.reason.unwrap_or_default();
    assert!(reason.contains("after 3s"), "names the deadline: {reason}");
    assert!(
        reason.contains("kafka-broker"),
        "names what it waited for: {reason}"
    );

    // A longer deadline and a retry: a new attempt, which the abort annotation fails at once.
    setup.apply(doc(600)).await.unwrap();
    let annotate = |key: &'static str| {
        let scalers = scalers.clone();
        async move {
            scalers
                .patch(
                    "kafka",
                    &PatchParams::default(),
                    &Patch::Merge(json!({"metadata": {"annotations": {key: "true"}}})),
                )
                .await
                .unwrap();
        }
    };
    annotate("autoscaling.stackable.tech/retry").await;
    wait_stage("Scaling", 20)
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", controller.log_tail()));
    annotate("autoscaling.stackable.tech/abort").await;
    let aborted = eventually(Duration::from_secs(20), || async {
        let s = scalers.get("kafka").await.ok()?;
        let reason = state(&s)?.reason?;
        let stripped = !s
            .annotations()
            .contains_key("autoscaling.stackable.tech/abort");
        (stage(&s) == Some("Failed") && reason.contains("aborted by annotation") && stripped)
            .then_some(s)
    })
    .await
    .unwrap_or_else(|e| panic!("{e}\n{}", controller.log_tail()));
    assert_eq!(
        state(&aborted).and_then(|s| s.failed_in),
        Some(ScalerStage::Scaling)
    );
    controller.stop().await;
}

/// Scalers written in another form continue where they stood: one left `Failed` by an earlier ebb
/// release (`stage: Failed` with `failedIn` and `reason` beside it) and one written by Stackable's
/// PR (`stage: {stage: idle}`). The controller reads both, writes the PR's form from then on, and
/// carries each through a retry or a change of replicas.
#[tokio::test]
async fn scalers_stored_in_earlier_ebb_s_form_and_the_seed_pr_s_are_read_and_continued() {
    let setup = Setup::new(CHART, "e2e-skf", true, &[]).await.unwrap();
    let ns = setup.namespace.clone();
    let admin = setup.admin.clone();
    let statefulsets: Api<StatefulSet> = Api::namespaced(admin.clone(), &ns);
    let scalers: Api<DynamicObject> = setup
        .dynamic("autoscaling.stackable.tech", "v1alpha1", "StackableScaler")
        .await
        .unwrap();
    let now = ebb_runtime::time::rfc3339(Timestamp::now());
    let stored = [
        (
            "old",
            json!({"replicas": 3, "scaleEvent": 1, "previousReplicas": 3, "desiredReplicas": 2,
                   "currentState": {"stage": "Failed", "failedIn": "PreScaling",
                                    "reason": "written by an earlier ebb", "failureHook": "Done",
                                    "lastTransitionTime": now}}),
        ),
        (
            "pr",
            json!({"replicas": 3,
                   "currentState": {"stage": {"stage": "idle"}, "lastTransitionTime": now}}),
        ),
    ];
    for (name, status) in &stored {
        setup
            .apply(json!({
                "apiVersion": "apps/v1", "kind": "StatefulSet",
                "metadata": {"name": name},
                "spec": {
                    "replicas": 3, "serviceName": name,
                    "selector": {"matchLabels": {"app": name}},
                    "template": {"metadata": {"labels": {"app": name}},
                                 "spec": {"containers": [{"name": "app", "image": "app:1"}]}}
                }
            }))
            .await
            .unwrap();
        settle_workload(&statefulsets, name, 3).await;
        let sts = statefulsets.get(name).await.unwrap();
        setup
            .apply(json!({
                "apiVersion": "autoscaling.stackable.tech/v1alpha1", "kind": "StackableScaler",
                "metadata": {"name": name, "ownerReferences": [{
                    "apiVersion": "apps/v1", "kind": "StatefulSet", "name": name,
                    "uid": sts.uid().unwrap(), "controller": true
                }]},
                "spec": {"replicas": 3}
            }))
            .await
            .unwrap();
        // Stored as the other writer left it (the API server keeps either form).
        scalers
            .patch_status(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({ "status": status })),
            )
            .await
            .unwrap();
        let read = scalers.get(name).await.unwrap();
        assert_eq!(read.data["status"]["currentState"], status["currentState"]);
    }

    let args = ["--namespace", ns.as_str(), "--leader-election=false"];
    let controller = Controller::ready("stackable-scaler", &setup.identity, "skf-0", &args).await;
    let settle_at = |name: &'static str, replicas: i32| {
        let statefulsets = statefulsets.clone();
        async move {
            eventually(Duration::from_secs(20), || async {
                let sts = statefulsets.get(name).await.ok()?;
                (sts.spec?.replicas == Some(replicas)).then_some(())
            })
            .await?;
            settle_workload(&statefulsets, name, replicas).await;
            Ok::<(), anyhow::Error>(())
        }
    };
    let idle_at = |name: &'static str, replicas: i64| {
        let scalers = scalers.clone();
        async move {
            eventually(Duration::from_secs(20), || async {
                let s = scalers.get(name).await.ok()?;
                (s.data["status"]["currentState"]["stage"] == json!({"stage": "idle"})
                    && s.data["status"]["replicas"] == json!(replicas))
                .then_some(s)
            })
            .await
        }
    };

    // Earlier ebb's Failed is read as Failed: its conditions say so, from the fields of the old
    // form (a pass that changes only conditions writes only those; the stage keeps its form until
    // it changes). The retry then starts over from Idle.
    let failed_condition = |s: &DynamicObject| {
        s.data["status"]["conditions"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["type"] == json!("Failed")).cloned())
    };
    let failed = eventually(Duration::from_secs(20), || async {
        let s = scalers.get("old").await.ok()?;
        failed_condition(&s)
            .is_some_and(|c| c["status"] == json!("True"))
            .then_some(s)
    })
    .await;
    let failed = match failed {
        Ok(failed) => failed,
        Err(e) => {
            let now = scalers.get("old").await.map(|s| s.data);
            panic!("old: {e}\n{now:?}\n{}", controller.log_tail())
        }
    };
    let condition = failed_condition(&failed).unwrap_or_default();
    assert_eq!(condition["reason"], json!("PreScaling"), "{condition}");
    assert_eq!(
        condition["message"],
        json!("written by an earlier ebb"),
        "{condition}"
    );
    scalers
        .patch(
            "old",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"annotations": {"autoscaling.stackable.tech/retry": "true"}}}),
            ),
        )
        .await
        .unwrap();
    // idle_at reads the PR's form: the retry wrote it.
    idle_at("old", 3)
        .await
        .unwrap_or_else(|e| panic!("old after retry: {e}\n{}", controller.log_tail()));

    // Both then go through a change of replicas.
    for (name, to) in [("old", 4), ("pr", 2)] {
        scalers
            .patch_scale(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"replicas": to}})),
            )
            .await
            .unwrap();
        settle_at(name, to)
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}\n{}", controller.log_tail()));
        idle_at(name, i64::from(to))
            .await
            .unwrap_or_else(|e| panic!("{name} at {to}: {e}\n{}", controller.log_tail()));
    }
    controller.stop().await;
}

/// A user allowed only StackableScalers (a Role granting `stackablescalers` and their `scale`,
/// nothing else) cannot get a Job to run as another ServiceAccount, with the controller's
/// default `--hook-service-accounts` (the chart's `hooks.serviceAccounts: [default]`): the API
/// server refuses them a Job of their own, and the StackableScaler they write with a hook that
/// names ServiceAccount `ops` fails naming it, without a Job and without touching the
/// StatefulSet. The user is impersonated, as `kubectl --as` does.
#[tokio::test]
async fn a_user_allowed_only_stackable_scalers_cannot_run_a_job_as_another_service_account() {
    let setup = Setup::new(CHART, "e2e-sku", true, &[]).await.unwrap();
    let ns = setup.namespace.clone();
    let admin = setup.admin.clone();
    for doc in [
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "ops"}}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
               "metadata": {"name": "scalers-only"},
               "rules": [{"apiGroups": ["autoscaling.stackable.tech"],
                          "resources": ["stackablescalers", "stackablescalers/scale"],
                          "verbs": ["*"]}]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
               "metadata": {"name": "scalers-only"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "scalers-only"},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}]}),
        json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "kafka-broker"},
               "spec": {"replicas": 3, "serviceName": "kafka",
                        "selector": {"matchLabels": {"app": "kafka"}},
                        "template": {"metadata": {"labels": {"app": "kafka"}},
                                     "spec": {"containers": [{"name": "kafka", "image": "kafka:3"}]}}}}),
    ] {
        setup.apply(doc).await.unwrap();
    }
    let statefulsets: Api<StatefulSet> = Api::namespaced(admin.clone(), &ns);
    settle_workload(&statefulsets, "kafka-broker", 3).await;
    let sts = statefulsets.get("kafka-broker").await.unwrap();

    let mut config = cluster().config().await.unwrap();
    config.auth_info.impersonate = Some("alice".into());
    let alice = kube::Client::try_from(config).unwrap();
    let pod_spec = json!({"serviceAccountName": "ops", "restartPolicy": "Never",
                          "containers": [{"name": "offload", "image": "tools:1"}]});
    let own_job: Job = serde_json::from_value(json!({
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "as-ops"},
        "spec": {"template": {"spec": pod_spec}}
    }))
    .unwrap();
    let refused = Api::<Job>::namespaced(alice.clone(), &ns)
        .create(&Default::default(), &own_job)
        .await;
    assert!(
        matches!(&refused, Err(kube::Error::Api(s)) if s.code == 403),
        "alice may not create Jobs: {refused:?}"
    );

    let resource = kube::discovery::ApiResource::from_gvk_with_plural(
        &kube::api::GroupVersionKind::gvk(
            "autoscaling.stackable.tech",
            "v1alpha1",
            "StackableScaler",
        ),
        "stackablescalers",
    );
    let as_alice: Api<DynamicObject> = Api::namespaced_with(alice, &ns, &resource);
    let scaler: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "autoscaling.stackable.tech/v1alpha1", "kind": "StackableScaler",
        "metadata": {"name": "kafka", "ownerReferences": [{
            "apiVersion": "apps/v1", "kind": "StatefulSet", "name": "kafka-broker",
            "uid": sts.uid().unwrap(), "controller": true
        }]},
        "spec": {"replicas": 3, "hooks": {"preScale": {"timeoutSeconds": 60, "template": {"spec": {
            "backoffLimit": 0, "template": {"spec": pod_spec}}}}}}
    }))
    .unwrap();
    as_alice.create(&Default::default(), &scaler).await.unwrap();
    let args = ["--namespace", ns.as_str(), "--leader-election=false"];
    let controller = Controller::ready(CHART, &setup.identity, "sku-0", &args).await;
    let stage_is = |want: &'static str| {
        let scalers = as_alice.clone();
        async move {
            eventually(Duration::from_secs(20), || async {
                let s = scalers.get("kafka").await.ok()?;
                (stage(&s) == Some(want)).then_some(s)
            })
            .await
        }
    };
    stage_is("Idle")
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", controller.log_tail()));
    as_alice
        .patch_scale(
            "kafka",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 2}})),
        )
        .await
        .unwrap();
    let failed = stage_is("Failed")
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", controller.log_tail()));
    let reason = state(&failed).and_then(|s| s.reason).unwrap_or_default();
    assert!(
        reason.contains("ServiceAccount \"ops\", which this install does not allow"),
        "{reason}"
    );
    let jobs: Api<Job> = Api::namespaced(admin.clone(), &ns);
    assert_eq!(job_names(&jobs).await.unwrap(), Vec::<String>::new());
    assert_eq!(
        statefulsets
            .get("kafka-broker")
            .await
            .unwrap()
            .spec
            .unwrap()
            .replicas,
        Some(3),
        "the StatefulSet is not touched"
    );
    controller.stop().await;
}
