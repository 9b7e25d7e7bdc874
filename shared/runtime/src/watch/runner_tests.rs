#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::sync::Mutex;

use futures::channel::mpsc;
use k8s_openapi::api::core::v1::ConfigMap;
use serde_json::json;

use super::*;
use crate::watch::packed::Whole;
use crate::watch::projected::ProjectedFeed;

fn config_map(name: &str) -> Packed<ConfigMap, Whole> {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "ns", "resourceVersion": "1"},
        "data": {"v": "1"},
    }))
    .unwrap()
}

/// What fills a test runner's cache.
type Feed = ProjectedFeed<Packed<ConfigMap, Whole>, Squeezed<ConfigMap>>;

/// A runner over a cache filled with `names`, its triggers fed by hand.
fn runner(
    names: &[&str],
    concurrency: usize,
) -> (Runner<ConfigMap>, Feed, mpsc::UnboundedSender<String>) {
    let mut cache = Projected::default();
    let mut feed = cache.scope::<Packed<ConfigMap, Whole>>(Squeezed::squeeze);
    feed.fill(names.iter().map(|name| config_map(name)));
    let (ask, asked) = mpsc::unbounded();
    let runner = Runner {
        cache,
        queue: Queue::handing(concurrency),
        triggers: Vec::new(),
        shutdown: futures::future::pending().boxed(),
        concurrency,
    }
    .reconcile_on(asked);
    (runner, feed, ask)
}

/// What the reconciles saw: how many ran at once at most, and each object's starts.
#[derive(Default)]
struct Log {
    running: usize,
    most: usize,
    starts: HashMap<String, Vec<tokio::time::Instant>>,
}

#[tokio::test(start_paused = true)]
async fn at_most_its_concurrency_at_once_and_an_object_never_twice_at_once() {
    let names = ["a", "b", "c", "d", "e"];
    let (runner, _feed, ask) = runner(&names, 2);
    let seen = Arc::new(Mutex::new(Log::default()));
    for name in names {
        ask.unbounded_send(format!("ns/{name}")).unwrap();
    }
    // Asked again while its first pass may run: runs once more, after it.
    ask.unbounded_send("ns/a".into()).unwrap();
    let record = seen.clone();
    let reconcile = move |object: Arc<Squeezed<ConfigMap>>| {
        let seen = record.clone();
        async move {
            let name = object.unsqueeze().unwrap().metadata.name.unwrap();
            {
                let mut seen = seen.lock().unwrap();
                seen.running += 1;
                seen.most = seen.most.max(seen.running);
                let starts = seen.starts.entry(name.clone()).or_default();
                starts.push(tokio::time::Instant::now());
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
            seen.lock().unwrap().running -= 1;
            // `a` comes back in a minute, once.
            let again = name == "a" && seen.lock().unwrap().starts["a"].len() < 3;
            Ok::<_, ()>(if again {
                Requeue::After(Duration::from_secs(60))
            } else {
                Requeue::AwaitChange
            })
        }
    };
    let run = runner.run(reconcile, |_, ()| Requeue::AwaitChange, |_| {}, |_| {});
    let _ = tokio::time::timeout(Duration::from_secs(300), run).await;
    let seen = seen.lock().unwrap();
    assert_eq!(seen.most, 2, "two at once at most");
    let a = &seen.starts["a"];
    assert!(a.len() >= 2, "{a:?}");
    assert!(a[1] - a[0] >= Duration::from_secs(1), "never twice at once");
    assert_eq!(a.len(), 3, "asked again, then requeued once");
    assert_eq!(
        a[2] - a[1],
        Duration::from_secs(60),
        "counted from the start"
    );
    for name in ["b", "c", "d", "e"] {
        assert_eq!(seen.starts[name].len(), 1, "{name}");
    }
}

#[tokio::test(start_paused = true)]
async fn an_object_gone_before_its_turn_is_told_and_a_failure_requeues_by_the_policy() {
    let (runner, _feed, ask) = runner(&["a"], 1);
    ask.unbounded_send("ns/gone".into()).unwrap();
    ask.unbounded_send("ns/a".into()).unwrap();
    let told = Arc::new(Mutex::new(Vec::new()));
    let record = told.clone();
    let passes = Arc::new(Mutex::new(Vec::new()));
    let counted = passes.clone();
    let reconcile = move |_: Arc<Squeezed<ConfigMap>>| {
        counted.lock().unwrap().push(tokio::time::Instant::now());
        async { Err::<Requeue, _>("down") }
    };
    let policy = |key: &str, error: &&str| {
        assert_eq!((key, *error), ("ns/a", "down"));
        Requeue::After(Duration::from_secs(5))
    };
    let run = runner.run(
        reconcile,
        policy,
        move |key| record.lock().unwrap().push(key.to_owned()),
        |_| {},
    );
    let _ = tokio::time::timeout(Duration::from_secs(12), run).await;
    assert_eq!(*told.lock().unwrap(), ["ns/gone"]);
    let passes = passes.lock().unwrap();
    assert_eq!(passes.len(), 3, "at 0, 5 and 10 s: {passes:?}");
    assert_eq!(passes[1] - passes[0], Duration::from_secs(5));
}

#[tokio::test(start_paused = true)]
async fn the_shutdown_lets_running_passes_finish_and_starts_none() {
    let (runner, _feed, ask) = runner(&["a", "b"], 1);
    let (stop, stopped) = futures::channel::oneshot::channel::<()>();
    let runner = runner.graceful_shutdown_on(stopped.map(drop));
    ask.unbounded_send("ns/a".into()).unwrap();
    ask.unbounded_send("ns/b".into()).unwrap();
    let finished = Arc::new(Mutex::new(Vec::new()));
    let record = finished.clone();
    let mut stop = Some(stop);
    let reconcile = move |object: Arc<Squeezed<ConfigMap>>| {
        // The shutdown comes while the first pass runs.
        if let Some(stop) = stop.take() {
            stop.send(()).unwrap();
        }
        let record = record.clone();
        async move {
            tokio::time::sleep(Duration::from_secs(1)).await;
            let name = object.unsqueeze().unwrap().metadata.name.unwrap();
            record.lock().unwrap().push(name);
            Ok::<_, ()>(Requeue::AwaitChange)
        }
    };
    let reconcile = std::sync::Mutex::new(reconcile);
    let run = runner.run(
        |object| (reconcile.lock().unwrap())(object),
        |_, ()| Requeue::AwaitChange,
        |_| {},
        |_| {},
    );
    tokio::time::timeout(Duration::from_secs(10), run)
        .await
        .expect("the run ends at the shutdown");
    assert_eq!(
        *finished.lock().unwrap(),
        ["a"],
        "a finished, b never started"
    );
}
