//! The harness of API-server trouble (`ebb_e2e::apiserver`) does what it says: a second
//! kube-apiserver shares the main one's etcd and survives restarts with the data kept, a frozen
//! one holds requests until thawed, the main one restarts on request, and the documented
//! sequence makes a kube-rs watcher meet 410 Expired.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::LazyLock;
use std::time::{Duration, Instant};

use ebb_e2e::apiserver::{self, ApiServer};
use ebb_e2e::{Namespace, cluster};
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use kube::runtime::watcher;
use tokio::sync::{RwLock, mpsc};

/// The main server's restart breaks every other test's requests: it runs alone.
static MAIN: LazyLock<RwLock<()>> = LazyLock::new(|| RwLock::new(()));

fn config_map(name: &str) -> ConfigMap {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": name},
        "data": {"at": format!("{:?}", std::time::SystemTime::now())}
    }))
    .unwrap()
}

fn lines(path: &std::path::Path) -> usize {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .count()
}

#[tokio::test]
async fn extra_server_shares_etcd_and_keeps_data_across_restarts() {
    if !ebb_e2e::apiserver::restartable() {
        return;
    }
    let _shared = MAIN.read().await;
    let cluster = cluster();
    let main = cluster.client().await.unwrap();
    let ns = Namespace::create(&main, "apiserver-data").await.unwrap();
    let mut extra = ApiServer::start(cluster).await.unwrap();
    eprintln!(
        "figure: extra kube-apiserver start to /readyz 200: {:?}",
        extra.readiness().unwrap()
    );

    let through_extra: Api<ConfigMap> = Api::namespaced(extra.client().await.unwrap(), &ns.name);
    through_extra
        .create(&PostParams::default(), &config_map("made-through-extra"))
        .await
        .unwrap();
    let through_main: Api<ConfigMap> = Api::namespaced(main.clone(), &ns.name);
    through_main.get("made-through-extra").await.unwrap();
    let audited = lines(&extra.audit_log());
    assert!(audited > 0, "nothing in {}", extra.audit_log().display());

    let pid = extra.pid().unwrap();
    let before_kill = Instant::now();
    let ready = extra.restart().await.unwrap();
    assert!(ready > before_kill);
    assert_ne!(extra.pid(), Some(pid), "a new process");
    let readiness = extra.readiness().unwrap();
    eprintln!("figure: extra kube-apiserver restart to /readyz 200: {readiness:?}");
    // The process held is the API server: no wrapper left behind after its kill.
    assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists());

    let killed = {
        extra.kill().unwrap();
        Instant::now()
    };
    let ready = extra.start_again().await.unwrap();
    assert!(ready > killed);
    let through_extra: Api<ConfigMap> = Api::namespaced(extra.client().await.unwrap(), &ns.name);
    through_extra.get("made-through-extra").await.unwrap();
    // The audit log is appended to across restarts.
    assert!(lines(&extra.audit_log()) > audited);

    // An identity's kubeconfig retargeted: the same server, the same token.
    let retargeted = extra.retarget(&cluster.kubeconfig).unwrap();
    assert!(
        std::fs::read_to_string(&retargeted)
            .unwrap()
            .contains(&extra.url())
    );
    ns.delete(&main).await.unwrap();
}

#[tokio::test]
async fn a_frozen_server_holds_requests_until_thawed() {
    if !ebb_e2e::apiserver::restartable() {
        return;
    }
    let _shared = MAIN.read().await;
    let cluster = cluster();
    let main = cluster.client().await.unwrap();
    let ns = Namespace::create(&main, "apiserver-freeze").await.unwrap();
    let extra = ApiServer::start(cluster).await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(extra.client().await.unwrap(), &ns.name);
    api.create(&PostParams::default(), &config_map("before-freeze"))
        .await
        .unwrap();

    extra.freeze().unwrap();
    let request = tokio::spawn({
        let api = api.clone();
        async move { api.get("before-freeze").await }
    });
    tokio::time::sleep(Duration::from_secs(2)).await;
    if request.is_finished() {
        panic!(
            "a request through a frozen server finished: {:?}",
            request.await
        );
    }
    let thawed = Instant::now();
    let ready = extra.thaw().await.unwrap();
    let answered = tokio::time::timeout(Duration::from_secs(10), request)
        .await
        .expect("the held request finishes after the thaw")
        .unwrap();
    answered.unwrap();
    eprintln!(
        "figure: thaw to /readyz 200: {:?} ({:?})",
        ready - thawed,
        extra.readiness().unwrap()
    );
    ns.delete(&main).await.unwrap();
}

/// What a watcher yields, with when.
fn describe(item: &Result<watcher::Event<ConfigMap>, watcher::Error>) -> String {
    use kube::ResourceExt;
    match item {
        Ok(watcher::Event::Init) => "Init".into(),
        Ok(watcher::Event::InitApply(o)) => format!("InitApply {}", o.name_any()),
        Ok(watcher::Event::InitDone) => "InitDone".into(),
        Ok(watcher::Event::Apply(o)) => format!("Apply {}", o.name_any()),
        Ok(watcher::Event::Delete(o)) => format!("Delete {}", o.name_any()),
        Err(watcher::Error::WatchError(status)) => {
            format!("WatchError {} {}", status.code, status.message)
        }
        Err(e) => {
            // The innermost cause: "Connection refused", a status of the API server.
            let mut cause: &dyn std::error::Error = e;
            while let Some(source) = cause.source() {
                cause = source;
            }
            format!("{e} ({cause})")
        }
    }
}

/// A kube-rs watcher (no backoff) of the namespace's ConfigMaps through `client`.
fn watch(client: kube::Client, namespace: &str) -> mpsc::UnboundedReceiver<(Instant, String)> {
    let api: Api<ConfigMap> = Api::namespaced(client, namespace);
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut stream = watcher(api, watcher::Config::default()).boxed();
        while let Some(item) = stream.next().await {
            if tx.send((Instant::now(), describe(&item))).is_err() {
                break;
            }
        }
    });
    rx
}

/// Waits for an event matching `want`, returning everything seen up to it.
async fn until(
    rx: &mut mpsc::UnboundedReceiver<(Instant, String)>,
    timeout: Duration,
    want: impl Fn(&str) -> bool,
) -> Result<Vec<(Instant, String)>, Vec<(Instant, String)>> {
    let deadline = tokio::time::Instant::now() + timeout;
    let mut seen = Vec::new();
    loop {
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(Some((at, event))) => {
                let hit = want(&event);
                seen.push((at, event));
                if hit {
                    return Ok(seen);
                }
            }
            _ => return Err(seen),
        }
    }
}

/// `seen` as lines, offsets from `origin`, runs of the same event folded.
fn report(origin: Instant, seen: &[(Instant, String)]) -> String {
    let mut out = Vec::<(Instant, String, usize)>::new();
    for (at, event) in seen {
        match out.last_mut() {
            Some((_, last, n)) if last == event => *n += 1,
            _ => out.push((*at, event.clone(), 1)),
        }
    }
    out.iter()
        .map(|(at, event, n)| {
            let offset = at.saturating_duration_since(origin).as_secs_f64()
                - origin.saturating_duration_since(*at).as_secs_f64();
            format!(
                "  {offset:+.3}s {event}{}",
                if *n > 1 {
                    format!(" (x{n})")
                } else {
                    String::new()
                }
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

async fn watching(
    server: &ApiServer,
    main: &kube::Client,
    namespace: &str,
    marker: &str,
) -> mpsc::UnboundedReceiver<(Instant, String)> {
    let mut rx = watch(server.client().await.unwrap(), namespace);
    until(&mut rx, Duration::from_secs(30), |e| e == "InitDone")
        .await
        .expect("the watcher lists");
    // Written through the main server, seen through this one: the watch is running.
    Api::<ConfigMap>::namespaced(main.clone(), namespace)
        .create(&PostParams::default(), &config_map(marker))
        .await
        .unwrap();
    until(&mut rx, Duration::from_secs(30), |e| {
        e == format!("Apply {marker}")
    })
    .await
    .expect("the watcher sees a write");
    rx
}

/// The documented sequence (kill, a write elsewhere, compaction, start) has a kube-rs watcher
/// meet `WatchError` 410 and relist, with the watch cache and without; a freeze, writes and a
/// compaction followed by a thaw do not (printed, not asserted).
#[tokio::test]
async fn expire_watches_gives_a_watcher_410() {
    if !ebb_e2e::apiserver::restartable() {
        return;
    }
    let _shared = MAIN.read().await;
    let cluster = cluster();
    let main = cluster.client().await.unwrap();
    let ns = Namespace::create(&main, "apiserver-410").await.unwrap();
    let through_main: Api<ConfigMap> = Api::namespaced(main.clone(), &ns.name);

    for flags in [&[][..], &["--watch-cache=false"][..]] {
        let mut server = ApiServer::start_with(cluster, flags).await.unwrap();
        let mut rx = watching(&server, &main, &ns.name, &format!("seen-{}", flags.len())).await;
        let origin = Instant::now();
        let touched = format!("touched-{}", flags.len());
        let (revision, ready) = server
            .expire_watches(cluster, || async {
                through_main
                    .create(&PostParams::default(), &config_map(&touched))
                    .await?;
                Ok(())
            })
            .await
            .unwrap();
        let seen = until(&mut rx, Duration::from_secs(60), |e| {
            e.starts_with("WatchError 410")
        })
        .await;
        let relisted = until(&mut rx, Duration::from_secs(30), |e| e == "InitDone").await;
        eprintln!(
            "observed: expire_watches {flags:?}: compacted at {revision}, ready {:?} after the kill ({:?}); \
             the watcher (offsets from the kill):\n{}\n  then:\n{}",
            ready - origin,
            server.readiness().unwrap(),
            report(origin, seen.as_ref().unwrap_or_else(|s| s)),
            report(origin, relisted.as_ref().unwrap_or_else(|s| s)),
        );
        let Ok(seen) = seen else {
            panic!("no WatchError 410 through the server with {flags:?}");
        };
        let last = &seen.last().unwrap().1;
        // With the watch cache: "too old resource version: <theirs> (<cache's>)"; without:
        // "The resourceVersion for the provided watch is too old."
        assert!(last.contains("too old"), "{last}");
        let Ok(relisted) = relisted else {
            panic!("no relist after the 410 with {flags:?}");
        };
        assert!(
            relisted
                .iter()
                .any(|(_, e)| *e == format!("InitApply {touched}")),
            "the relist holds the write made while the server was down"
        );
    }

    // Observed, not asserted: a freeze while others write and etcd compacts, then a thaw.
    let server = ApiServer::start(cluster).await.unwrap();
    let mut rx = watching(&server, &main, &ns.name, "seen-freeze").await;
    let origin = Instant::now();
    server.freeze().unwrap();
    for i in 0..20 {
        through_main
            .create(
                &PostParams::default(),
                &config_map(&format!("while-frozen-{i}")),
            )
            .await
            .unwrap();
    }
    let revision = apiserver::compact(cluster).unwrap();
    server.thaw().await.unwrap();
    let seen = until(&mut rx, Duration::from_secs(10), |e| {
        e.starts_with("WatchError")
    })
    .await;
    eprintln!(
        "observed: freeze, 20 writes through the main server, compaction at {revision}, thaw: \
         {} (offsets from the freeze):\n{}",
        if seen.is_ok() {
            "a WatchError"
        } else {
            "no WatchError within 10 s"
        },
        report(origin, seen.as_ref().unwrap_or_else(|s| s)),
    );
    drop(server);
    ns.delete(&main).await.unwrap();
}

#[tokio::test]
async fn restart_main_keeps_data() {
    if !ebb_e2e::apiserver::restartable() {
        return;
    }
    let _alone = MAIN.write().await;
    let cluster = cluster();
    let main = cluster.client().await.unwrap();
    let ns = Namespace::create(&main, "apiserver-main").await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(main.clone(), &ns.name);
    api.create(&PostParams::default(), &config_map("before-restart"))
        .await
        .unwrap();
    let asked = Instant::now();
    let ready = apiserver::restart_main(cluster).unwrap();
    eprintln!(
        "figure: main kube-apiserver restart, SIGUSR1 to ready: {:?}",
        ready - asked
    );
    let main = cluster.client().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(main.clone(), &ns.name);
    api.get("before-restart").await.unwrap();
    ns.delete(&main).await.unwrap();
}
