//! The executor's peak memory over a run of independent writes (issue 46): what a pass holds at
//! once, not what stays. A window edge over 10 000 Nodes is one plan of 10 000 writes; the
//! executor made every write's request before sending the first, 4 KB each unstarted, and
//! glibc kept the 42 MB peak resident after the edge. Each request is now made as a slot frees.
//!
//! One test: the allocator sees every thread of the binary.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use ebb_core::plan::{Category, Plan, Target, Write};
use ebb_runtime::execute::{Writer, execute};
use ebb_testkit::Harness;
use k8s_openapi::api::core::v1::{ConfigMap, ObjectReference};
use kube::Resource;
use peak_alloc::PeakAlloc;
use serde_json::json;

#[global_allocator]
static GLOBAL: PeakAlloc = PeakAlloc;

/// Writes in the run: enough that holding each one's request at once shows above the rest.
const N: usize = 2_000;

/// A fake holding ConfigMaps `cm-00000`.. and a plan of one independent merge to each.
fn fake_and_plan() -> (Harness, Plan<()>) {
    let h = Harness::new("2026-05-04T09:00:00Z", "demo");
    let subject: ObjectReference = ConfigMap::default().object_ref(&());
    let mut plan = Plan::new(subject, ());
    for i in 0..N {
        let name = format!("cm-{i:05}");
        h.fake.insert(ConfigMap {
            metadata: kube::api::ObjectMeta {
                name: Some(name.clone()),
                namespace: Some("ns".into()),
                ..Default::default()
            },
            ..Default::default()
        });
        let target = Target::named::<ConfigMap>(Some("ns"), &name);
        plan.writes.push(
            Write::merge(target, None, json!({"data": {"v": "2"}}), Category::Target).independent(),
        );
    }
    (h, plan)
}

/// Bytes `carry_out` held at its peak above both where it started and what it left: what it
/// held only while it ran.
async fn held_while_running(carry_out: impl Future<Output = ()>) -> usize {
    let before = GLOBAL.current_usage();
    GLOBAL.reset_peak_usage();
    carry_out.await;
    let kept = GLOBAL.current_usage().max(before);
    GLOBAL.peak_usage().saturating_sub(kept)
}

#[tokio::test(flavor = "current_thread")]
async fn a_run_of_independent_writes_holds_only_the_requests_in_flight() {
    // The same writes one after another by a plain writer: what the fake itself holds while
    // it answers them (its notes, its watch history), to compare with.
    let (h, plan) = fake_and_plan();
    let shared = h.shared(false);
    let one_by_one = held_while_running(async move {
        let mut writer = Writer::new(&shared.client, "ebb-demo");
        for write in &plan.writes {
            writer.write(write).await.unwrap();
        }
        // Gone by the end, as the executor's is.
        drop(plan);
    })
    .await;
    assert_eq!(h.fake.write_count(), N);

    let (h, plan) = fake_and_plan();
    let shared = h.shared(false);
    let executed = held_while_running(async {
        execute(plan, &shared, "ebb-demo", &()).await.unwrap();
    })
    .await;
    assert_eq!(h.fake.write_count(), N);

    // Beyond that: the requests in flight and each write's outcome until the run is over,
    // a few hundred bytes a write. Made all at once, the unstarted requests alone were over
    // 4 KB each (5 in a debug build).
    let per_write = executed.saturating_sub(one_by_one) / N;
    assert!(
        per_write < 1_000,
        "the run held {executed} bytes while it ran, writes one by one {one_by_one}: \
         {per_write} a write more"
    );
}
