//! The fault matrix: every API call a scenario makes fails in turn with each [`FAULTS`] entry, and
//! the scenario must end where its clean run ended.
//!
//! A scenario is three closures: `build` sets up a fresh world (objects in the fake, a context),
//! `act` drives it through a trigger the way the controller would (reconciles, retried after a
//! failure, until a pass writes nothing: [`settle`]), and `outcome` reads the state that matters
//! (counts, fields, hook Jobs; never resourceVersions or Events, which are best-effort). The
//! matrix runs it once clean to learn its calls, then once per call and fault with that one
//! request failing, and checks:
//! - the run reached the same call at the same place (the scenario is deterministic);
//! - the outcome equals the clean one: converged, nothing done twice, nothing skipped;
//! - a failed reconcile's retry never comes sooner than a 429's `Retry-After`.
//!
//! It returns one [`Row`] per call, which [`table`] renders for the README.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use ebb_runtime::execute::frame::Requeue;
use ebb_runtime::execute::frame::{self, Context, Object, ReconcileError, Reconciler};
use ebb_runtime::watch::guard::Guarded;
use http::Method;
use serde_json::Value;

use crate::fake::RETRY_AFTER_SECONDS;
use crate::{FakeApi, Fault};

/// The faults every call meets: a conflict, throttling, a server error, no answer, and an
/// answer lost after the request took effect.
pub const FAULTS: [Fault; 5] = [
    Fault::Status(409),
    Fault::Status(429),
    Fault::Status(500),
    Fault::Timeout,
    Fault::TimeoutAfterApply,
];

/// How many reconciles [`settle`] allows before it calls the scenario stuck.
pub const SETTLE_LIMIT: usize = 8;

/// One reconcile of a scenario, as the controller's runtime would see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Attempt {
    /// It succeeded and wrote `writes` times.
    Done {
        /// Writes during the pass (Events excluded).
        writes: usize,
    },
    /// It failed; the error policy asked for `requeue`.
    Failed {
        /// The error's metric category.
        category: &'static str,
        /// What the frame's error policy answered.
        requeue: Requeue,
    },
}

/// Every reconcile of one run, in order.
#[derive(Clone, Debug, Default)]
pub struct Trace {
    /// The reconciles.
    pub attempts: Vec<Attempt>,
}

impl Trace {
    fn failures(&self) -> impl Iterator<Item = (&'static str, &Requeue)> {
        self.attempts.iter().filter_map(|a| match a {
            Attempt::Failed { category, requeue } => Some((*category, requeue)),
            Attempt::Done { .. } => None,
        })
    }
}

/// Reconciles the object `read` returns (fresh each time, as a watch would deliver it) through
/// the frame until a pass succeeds without writing and without meeting an API failure, recording
/// each into `trace`; a failed pass is retried as the controller would after its error policy's
/// delay. `None` from `read` (the object
/// is gone) ends it. Panics after [`SETTLE_LIMIT`] reconciles.
pub async fn settle<K: Object, R: Reconciler<K>>(
    fake: &FakeApi,
    ctx: &Arc<Context<R>>,
    read: impl Fn() -> Option<K>,
    trace: &mut Trace,
) {
    settle_with(fake, || ctx.clone(), read, trace).await;
}

/// [`settle`], asking `process` for the context of each reconcile: a test swaps in a fresh one
/// (a restarted process, its memory gone) when it likes.
pub async fn settle_with<K: Object, R: Reconciler<K>>(
    fake: &FakeApi,
    process: impl Fn() -> Arc<Context<R>>,
    read: impl Fn() -> Option<K>,
    trace: &mut Trace,
) {
    for _ in 0..SETTLE_LIMIT {
        let Some(object) = read() else { return };
        let ctx = process();
        let guard = Arc::new(Guarded(Ok(object)));
        let before = writes(fake);
        let seen = fake.requests().len();
        match frame::reconcile(guard.clone(), ctx.clone()).await {
            Ok(_) => {
                let writes = writes(fake) - before;
                trace.attempts.push(Attempt::Done { writes });
                // A pass that met a failure and carried on (a hook's Job read "asks again
                // later") is not quiet: the controller comes back to it.
                let failed = fake.requests()[seen..].iter().any(|r| {
                    r.status
                        .is_none_or(|s| !(200..300).contains(&s) && s != 404)
                });
                if writes == 0 && !failed {
                    return;
                }
            }
            Err(error) => {
                let requeue = frame::error_policy(guard.as_ref(), &error, &ctx);
                trace.attempts.push(Attempt::Failed {
                    category: error.category(),
                    requeue,
                });
            }
        }
    }
    panic!("no quiet pass after {SETTLE_LIMIT} reconciles: {trace:?}");
}

fn writes(fake: &FakeApi) -> usize {
    fake.writes()
        .iter()
        .filter(|r| !r.path.ends_with("/events"))
        .count()
}

/// One API call of a scenario and what each fault on it led to.
#[derive(Clone, Debug)]
pub struct Row {
    /// `METHOD /path` of the call.
    pub call: String,
    /// Per fault of [`FAULTS`], in order: how the run got past it.
    pub outcomes: Vec<String>,
}

/// Runs `scenario`'s fault matrix (see the module docs) and returns one row per call of its clean
/// run. Panics, naming the call and the fault, on the first case that breaks a rule.
pub async fn fault_matrix<W>(
    scenario: &str,
    build: impl AsyncFn() -> (W, FakeApi),
    act: impl AsyncFn(&W, &mut Trace),
    outcome: impl Fn(&W) -> Value,
) -> Vec<Row> {
    let (world, fake) = build().await;
    fake.clear_requests();
    let mut clean_trace = Trace::default();
    act(&world, &mut clean_trace).await;
    let calls: Vec<(Method, String)> = fake
        .requests()
        .into_iter()
        .map(|r| (r.method, r.path))
        .collect();
    let expected = outcome(&world);
    assert!(
        clean_trace.failures().next().is_none(),
        "{scenario}: the clean run failed: {clean_trace:?}"
    );
    assert!(
        writes(&fake) > 0,
        "{scenario}: the clean run wrote nothing, so it tests no trigger"
    );

    let mut rows = Vec::new();
    for (n, (method, path)) in calls.iter().enumerate() {
        let call = format!("{method} {path}");
        let mut outcomes = Vec::new();
        for fault in FAULTS {
            let case = format!("{scenario}: call {n} ({call}) with {}", fault_name(fault));
            let (world, fake) = build().await;
            fake.clear_requests();
            fake.inject_nth(n, fault);
            let mut trace = Trace::default();
            act(&world, &mut trace).await;
            let seen = fake.requests();
            let hit = seen.get(n).map(|r| (&r.method, &r.path));
            assert_eq!(
                hit,
                Some((method, path)),
                "{case}: the run did not reach the same call"
            );
            assert_eq!(outcome(&world), expected, "{case}: a different outcome");
            if fault == Fault::Status(429)
                && let Some((_, requeue)) = trace.failures().next()
            {
                let asked = Duration::from_secs(RETRY_AFTER_SECONDS.into());
                assert!(
                    *requeue == Requeue::After(asked),
                    "{case}: retried after {requeue:?}, before the server's Retry-After"
                );
            }
            outcomes.push(describe(&trace, &clean_trace));
        }
        rows.push(Row { call, outcomes });
    }
    rows
}

/// The column heading of `fault`.
pub fn fault_name(fault: Fault) -> &'static str {
    match fault {
        Fault::Status(409) => "409",
        Fault::Status(429) => "429",
        Fault::Status(500) => "500",
        Fault::Status(_) => "status",
        Fault::Timeout => "timeout",
        Fault::TimeoutAfterApply => "lost answer",
    }
}

/// How a faulted run got past its fault: failed reconciles (and their categories) before it
/// settled, or absorbed within the reconcile.
fn describe(trace: &Trace, clean: &Trace) -> String {
    let failed: Vec<&str> = trace.failures().map(|(category, _)| category).collect();
    match failed.as_slice() {
        [] if trace.attempts.len() == clean.attempts.len() => "absorbed".to_owned(),
        [] => format!("+{} pass", trace.attempts.len() - clean.attempts.len()),
        [one] => format!("retry ({one})"),
        many => format!("{} retries ({})", many.len(), many.join(", ")),
    }
}

/// The rows of a scenario as a Markdown table, calls down, faults across.
pub fn table(scenario: &str, rows: &[Row]) -> String {
    let mut out = format!("### {scenario}\n\n| # | call |");
    for fault in FAULTS {
        let _ = write!(out, " {} |", fault_name(fault));
    }
    out.push_str("\n|---|---|");
    out.push_str(&"---|".repeat(FAULTS.len()));
    for (n, row) in rows.iter().enumerate() {
        let _ = write!(out, "\n| {} | `{}` |", n + 1, row.call);
        for outcome in &row.outcomes {
            let _ = write!(out, " {outcome} |");
        }
    }
    out.push('\n');
    out
}

/// The objects named `(apiVersion, kind, namespace, name)` as stored, without what moves on
/// every write whatever it says (`resourceVersion`, `managedFields`): an outcome to compare.
/// A missing object is `null`.
pub fn snapshot(fake: &FakeApi, objects: &[(&str, &str, &str, &str)]) -> Value {
    objects
        .iter()
        .map(|(api_version, kind, namespace, name)| {
            let mut object = fake
                .get_json(api_version, kind, namespace, name)
                .unwrap_or(Value::Null);
            if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.remove("resourceVersion");
                meta.remove("managedFields");
            }
            object
        })
        .collect()
}

/// Checks that `docs/faults/<file>.md` holds [`table`] of `rows`; with `EBB_BLESS=1` in the
/// environment it writes the file instead.
pub fn check_doc(file: &str, scenario: &str, rows: &[Row]) {
    let path = format!("{}/../../docs/faults/{file}.md", env!("CARGO_MANIFEST_DIR"));
    let text = table(scenario, rows);
    if std::env::var_os("EBB_BLESS").is_some() {
        if let Err(e) = std::fs::write(&path, &text) {
            panic!("writing {path}: {e}");
        }
        return;
    }
    let stored = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        stored == text,
        "{path} is not the fault matrix of {scenario}; run the test with EBB_BLESS=1 to update \
         it. Now:\n{text}"
    );
}
