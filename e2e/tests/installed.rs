//! Each chart as users install it: `helm install` onto a real node from the images `.ci/images`
//! built, in a namespace that enforces the `restricted` Pod Security Standard. The pods become
//! Ready through their own probes (on a plain-HTTP port of their own); `/metrics` answers through
//! the chart's Service (and, with `metrics.authenticated`, over TLS with the certificate of the
//! chart's Secret, only to a caller bound to the chart's metrics-reader role); an upgrade
//! to two replicas rolls the pods and one of the new ones leads; `helm uninstall` runs the
//! chart's default cleanup hook (`cleanup`) as a pod and leaves nothing of the release behind
//! (CRDs aside: `helm.sh/resource-policy: keep`); a second, namespaced install on the kept CRDs
//! comes up too. Figures: install to Ready, each pod's memory as the kubelet reports it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use ebb_e2e::helm::{Release, a_node, get, pod_memory, pod_ready as ready};
use ebb_e2e::rbac::{apply, token};
use ebb_e2e::{Namespace, eventually, node_cluster, unique};
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Event;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use kube::api::{Api, ListParams};
use kube::{Client, Resource};
use serde_json::json;

fn names<K: Resource>(items: &[K]) -> Vec<String> {
    items.iter().filter_map(|k| k.meta().name.clone()).collect()
}

/// The one Lease of the namespace (the controller's) and its holder, once one holds it.
async fn leader(admin: &Client, namespace: &str) -> Option<String> {
    let leases: Api<Lease> = Api::namespaced(admin.clone(), namespace);
    let list = leases.list(&ListParams::default()).await.ok()?;
    list.items
        .into_iter()
        .find_map(|l| l.spec.and_then(|s| s.holder_identity))
        .filter(|h| !h.is_empty())
}

/// `/metrics` through the release's Service: status and body.
async fn scrape(admin: &Client, release: &Release<'_>, bearer: Option<&str>) -> (u16, String) {
    let service = release.metrics_service(admin).await.unwrap();
    let spec = service.spec.unwrap();
    let ip = spec.cluster_ip.unwrap();
    let port = spec.ports.unwrap()[0].port;
    // kube-proxy programs a new Service's rules within a second or so.
    eventually(Duration::from_secs(30), || {
        let ip = ip.clone();
        async move { get(&ip, port, "/metrics", bearer).ok() }
    })
    .await
    .unwrap()
}

/// `/metrics` over TLS through the release's Service, verifying its certificate for the
/// Service's name against `ca_pem`, as a Prometheus with the chart's `tlsConfig` does.
async fn scrape_tls(
    admin: &Client,
    release: &Release<'_>,
    bearer: Option<&str>,
    ca_pem: &str,
) -> (u16, String) {
    let service = release.metrics_service(admin).await.unwrap();
    let name = format!(
        "{}.{}.svc",
        service.metadata.name.clone().unwrap(),
        release.namespace
    );
    let spec = service.spec.unwrap();
    let ip = spec.cluster_ip.unwrap();
    let port = spec.ports.unwrap()[0].port;
    eventually(Duration::from_secs(30), || {
        let (ip, name) = (ip.clone(), name.clone());
        async move {
            ebb_e2e::https_get((&ip, port), "/metrics", bearer, (ca_pem, &name))
                .await
                .ok()
        }
    })
    .await
    .unwrap()
}

async fn install_upgrade_uninstall(chart: &str, short: &str) {
    let cluster = node_cluster();
    let admin = cluster.client().await.unwrap();
    let ns = Namespace::create_restricted(&admin, short).await.unwrap();
    let release = Release::new(cluster, chart, &unique(short), &ns.name);
    let build_info = format!("ebb_{}_build_info", chart.replace('-', "_"));

    // 1. The chart's defaults.
    let took = release
        .install(&[])
        .expect("helm install with the defaults");
    println!(
        "figure: {chart} helm install to Ready {} ms (defaults)",
        took.as_millis()
    );
    let deployment = release.deployment(&admin).await.unwrap();
    let wanted = deployment.spec.as_ref().unwrap().replicas.unwrap_or(1);
    let first = release.pods(&admin).await.unwrap();
    assert_eq!(first.len() as i32, wanted, "{:?}", names(&first));
    assert!(first.iter().all(ready), "every pod Ready by its own probes");
    let pod_names = names(&first);
    let holder = eventually(Duration::from_secs(60), || leader(&admin, &ns.name))
        .await
        .expect("a pod takes the Lease");
    assert!(
        pod_names.contains(&holder),
        "{holder} leads, not one of {pod_names:?}"
    );
    let (status, body) = scrape(&admin, &release, None).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains(&build_info), "{body}");
    let node = a_node(&admin).await.unwrap();
    let memory = eventually(Duration::from_secs(60), || {
        let admin = admin.clone();
        let (ns, pod, node) = (ns.name.clone(), holder.clone(), node.clone());
        // The kubelet's first figures for a new pod are zeros.
        async move {
            pod_memory(&admin, &node, &ns, &pod)
                .await
                .ok()
                .filter(|bytes| *bytes > 0)
        }
    })
    .await
    .expect("the kubelet reports the pod's memory");
    println!(
        "figure: {chart} pod memory (kubelet working set) {:.1} MiB",
        memory as f64 / 1048576.0
    );

    // 2. An upgrade: two replicas, authenticated metrics over TLS (the serving certificate in a
    // Secret, as cert-manager would leave it), JSON logs; the default cleanup on uninstall.
    let metrics_service = format!("{}-metrics", release.fullname());
    let cert = ebb_e2e::tls::serving_cert(
        &[
            format!("{metrics_service}.{}.svc", ns.name),
            format!("{metrics_service}.{}.svc.cluster.local", ns.name),
        ],
        &ebb_e2e::work_dir().join(format!("{}-metrics-certs", ns.name)),
    )
    .unwrap();
    let pem = |file: &str| std::fs::read_to_string(cert.dir.join(file)).unwrap();
    apply(
        &admin,
        &json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
                "metadata": {"name": "metrics-certs", "namespace": ns.name},
                "stringData": {"tls.crt": pem("tls.crt"), "tls.key": pem("tls.key"),
                               "ca.crt": cert.ca_pem}}),
    )
    .await
    .unwrap();
    let upgraded = [
        "replicas=2",
        "metrics.authenticated=true",
        "metrics.tls.secretName=metrics-certs",
        "logFormat=json",
    ];
    let took = release.upgrade(&upgraded).expect("helm upgrade");
    println!(
        "figure: {chart} helm upgrade to Ready {} ms",
        took.as_millis()
    );
    let second = eventually(Duration::from_secs(60), || {
        let admin = admin.clone();
        let release = &release;
        let old = pod_names.clone();
        async move {
            let pods = release.pods(&admin).await.ok()?;
            let rolled = pods.len() == 2
                && pods.iter().all(ready)
                && names(&pods).iter().all(|n| !old.contains(n));
            rolled.then_some(pods)
        }
    })
    .await
    .expect("the upgrade rolls the pods: two new ones, Ready");
    let new_names = names(&second);
    let holder = eventually(Duration::from_secs(60), || {
        let admin = admin.clone();
        let (ns, new_names) = (ns.name.clone(), new_names.clone());
        async move { leader(&admin, &ns).await.filter(|h| new_names.contains(h)) }
    })
    .await
    .expect("one of the new pods takes the Lease over");
    println!("{chart}: {holder} leads after the upgrade");
    // A scraper bound to the chart's metrics-reader ClusterRole, as a Prometheus would be.
    apply(
        &admin,
        &json!({"apiVersion": "v1", "kind": "ServiceAccount",
                "metadata": {"name": "prometheus", "namespace": ns.name}}),
    )
    .await
    .unwrap();
    let binding = format!("{}-prometheus", release.name);
    apply(
        &admin,
        &json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": binding},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                            "name": format!("{}-metrics-reader", release.fullname())},
                "subjects": [{"kind": "ServiceAccount", "name": "prometheus", "namespace": ns.name}]}),
    )
    .await
    .unwrap();
    let scraper = token(&admin, &ns.name, "prometheus").await.unwrap();
    let ca = cert.ca_pem.as_str();
    assert_eq!(
        scrape_tls(&admin, &release, None, ca).await.0,
        401,
        "no token"
    );
    let (status, body) = scrape_tls(&admin, &release, Some(&scraper), ca).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains(&build_info), "{body}");
    let bindings: Api<ClusterRoleBinding> = Api::all(admin.clone());
    bindings
        .delete(&binding, &Default::default())
        .await
        .unwrap();

    // 3. Uninstall: the cleanup Job runs as a pod first, then nothing of the release is left.
    release
        .uninstall()
        .expect("helm uninstall runs the cleanup hook");
    let events: Api<Event> = Api::namespaced(admin.clone(), &ns.name);
    let cleanup_job = format!("{}-cleanup", release.fullname());
    let completed = events.list(&ListParams::default()).await.unwrap();
    assert!(
        completed.items.iter().any(|e| {
            e.involved_object.kind.as_deref() == Some("Job")
                && e.involved_object.name.as_deref() == Some(&cleanup_job)
                && e.reason.as_deref() == Some("Completed")
        }),
        "the cleanup Job ran to completion: {:?}",
        completed
            .items
            .iter()
            .map(|e| format!("{:?} {:?}", e.involved_object.name, e.reason))
            .collect::<Vec<_>>()
    );
    let selector = release.selector();
    let left = |what: &str, names: Vec<String>| {
        assert!(names.is_empty(), "{what} left after uninstall: {names:?}");
    };
    let cluster_roles: Api<ClusterRole> = Api::all(admin.clone());
    left(
        "ClusterRoles",
        names(&cluster_roles.list(&selector).await.unwrap().items),
    );
    left(
        "ClusterRoleBindings",
        names(&bindings.list(&selector).await.unwrap().items),
    );
    let webhooks: Api<ValidatingWebhookConfiguration> = Api::all(admin.clone());
    left(
        "webhook configurations",
        names(&webhooks.list(&selector).await.unwrap().items),
    );
    let roles: Api<Role> = Api::namespaced(admin.clone(), &ns.name);
    left("Roles", names(&roles.list(&selector).await.unwrap().items));
    let role_bindings: Api<RoleBinding> = Api::namespaced(admin.clone(), &ns.name);
    left(
        "RoleBindings",
        names(&role_bindings.list(&selector).await.unwrap().items),
    );
    let leases: Api<Lease> = Api::namespaced(admin.clone(), &ns.name);
    left(
        "Leases",
        names(&leases.list(&ListParams::default()).await.unwrap().items),
    );
    eventually(Duration::from_secs(60), || {
        let admin = admin.clone();
        let release = &release;
        async move { release.pods(&admin).await.ok().filter(|p| p.is_empty()) }
    })
    .await
    .expect("the release's pods are gone");

    // 4. A second install on the CRDs the first one kept: namespaced, no leader election.
    let again = Release::new(cluster, chart, &unique(short), &ns.name);
    let watch = format!("watchNamespaces[0]={}", ns.name);
    let took = again
        .install(&[
            &watch,
            "leaderElection.enabled=false",
            "crds.install=false",
            "replicas=1",
        ])
        .expect("a namespaced install on the kept CRDs");
    println!(
        "figure: {chart} helm install to Ready {} ms (namespaced)",
        took.as_millis()
    );
    let (status, body) = scrape(&admin, &again, None).await;
    assert_eq!(status, 200, "{body}");
    again.uninstall().unwrap();
    ns.delete(&admin).await.unwrap();
}

#[tokio::test]
async fn service_scaler_installs_upgrades_and_uninstalls() {
    install_upgrade_uninstall("service-scaler", "inst-svc").await;
}

#[tokio::test]
async fn scaledown_window_installs_upgrades_and_uninstalls() {
    install_upgrade_uninstall("scaledown-window", "inst-sdw").await;
}

#[tokio::test]
async fn stackable_scaler_installs_upgrades_and_uninstalls() {
    install_upgrade_uninstall("stackable-scaler", "inst-stk").await;
}

#[tokio::test]
async fn workshop_scaler_installs_upgrades_and_uninstalls() {
    install_upgrade_uninstall("workshop-scaler", "inst-wks").await;
}
