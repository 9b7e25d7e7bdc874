//! Every interleaving of contending controller replicas, explored one after another.
//!
//! Each actor (a replica reconciling the same object) talks to the fake through its own client
//! ([`FakeApi::client_as`]). While an exploration runs, an actor's request waits at a gate until
//! every actor is either waiting there or done; then one waiting actor is let through, and it runs
//! on until its next request. Which one is a choice; [`explore`] makes every sequence of choices in
//! turn (depth first, as a stateless model checker does), so every ordering of the gated requests
//! is run exactly once, each in a fresh world, and the test checks the outcome of each.
//!
//! [`Gated::All`] gates every request (reads too): an actor's read can land between any two of
//! another's calls. [`Gated::Writes`] gates writes only; an actor's reads run as soon as it gets
//! there, so the contending writes are ordered every way while the space stays small enough for
//! three actors.

use std::collections::BTreeSet;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};

use futures::future::join_all;
use tokio::sync::Notify;

use crate::FakeApi;

/// Which requests take turns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gated {
    /// Every request.
    All,
    /// Writes (anything but GET and HEAD) only.
    Writes,
}

/// The turn-taking of one run.
#[derive(Debug)]
pub struct Gate {
    gated: Gated,
    state: Mutex<Turns>,
    moved: Notify,
}

#[derive(Debug, Default)]
struct Turns {
    /// Actors running between two gated requests.
    running: usize,
    /// Actors at the gate.
    waiting: BTreeSet<usize>,
    /// The choices to make, by index into the waiting actors (then the first).
    script: Vec<usize>,
    /// The choices made: (index, how many could go).
    taken: Vec<(usize, usize)>,
    /// Who went, with the request it made, in order.
    order: Vec<(usize, String)>,
}

impl Gate {
    fn new(gated: Gated, actors: usize, script: Vec<usize>) -> Self {
        Self {
            gated,
            state: Mutex::new(Turns {
                running: actors,
                script,
                ..Turns::default()
            }),
            moved: Notify::new(),
        }
    }

    fn turns(&self) -> std::sync::MutexGuard<'_, Turns> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Actor `actor` is at a request (`what`): waits until it is its turn.
    pub(crate) async fn turn(&self, actor: usize, write: bool, what: &str) {
        if self.gated == Gated::Writes && !write {
            return;
        }
        {
            let mut turns = self.turns();
            turns.running -= 1;
            turns.waiting.insert(actor);
            self.choose(&mut turns);
        }
        loop {
            let moved = self.moved.notified();
            tokio::pin!(moved);
            moved.as_mut().enable();
            {
                let mut turns = self.turns();
                if !turns.waiting.contains(&actor) {
                    turns.order.push((actor, what.to_owned()));
                    return;
                }
            }
            moved.await;
        }
    }

    fn finish(&self) {
        let mut turns = self.turns();
        turns.running -= 1;
        self.choose(&mut turns);
    }

    /// When nobody runs, lets the scripted waiting actor go.
    fn choose(&self, turns: &mut Turns) {
        if turns.running > 0 || turns.waiting.is_empty() {
            return;
        }
        let options: Vec<usize> = turns.waiting.iter().copied().collect();
        let index = turns
            .script
            .get(turns.taken.len())
            .copied()
            .unwrap_or(0)
            .min(options.len() - 1);
        turns.taken.push((index, options.len()));
        turns.waiting.remove(&options[index]);
        turns.running += 1;
        self.moved.notify_waiters();
    }
}

/// One explored interleaving: the actors' gated requests in the order they went.
#[derive(Clone, Debug)]
pub struct Schedule {
    /// (actor, `METHOD /path`), in order.
    pub order: Vec<(usize, String)>,
}

impl std::fmt::Display for Schedule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (actor, what) in &self.order {
            writeln!(f, "  replica {actor}: {what}")?;
        }
        Ok(())
    }
}

/// The most interleavings one exploration runs before it calls the space too large.
pub const LIMIT: usize = 50_000;

/// Runs `actors` actors every way their `gated` requests can interleave, each time in a fresh
/// world from `build`; `act(world, actor, client)` is one actor's part, `check(world, schedule)`
/// asserts the outcome. Returns how many interleavings ran.
pub async fn explore<W, A, C>(
    actors: usize,
    gated: Gated,
    build: impl AsyncFn() -> (W, FakeApi),
    act: A,
    check: C,
) -> usize
where
    A: AsyncFn(&W, usize, kube::Client),
    C: Fn(&W, &Schedule),
{
    let mut script = Vec::new();
    for runs in 1..=LIMIT {
        let (world, fake) = build().await;
        let gate = Arc::new(Gate::new(gated, actors, script));
        fake.set_gate(Some(gate.clone()));
        let parts = (0..actors).map(|actor| {
            let gate = gate.clone();
            let part = act(&world, actor, fake.client_as(actor));
            finishing(part, gate)
        });
        join_all(parts).await;
        fake.set_gate(None);
        let (taken, order) = {
            let turns = gate.turns();
            (turns.taken.clone(), turns.order.clone())
        };
        check(&world, &Schedule { order });
        // The next script: the last choice that has an untried alternative, moved on by one.
        match taken
            .iter()
            .rposition(|(index, options)| index + 1 < *options)
        {
            Some(last) => {
                script = taken[..last].iter().map(|(index, _)| *index).collect();
                script.push(taken[last].0 + 1);
            }
            None => return runs,
        }
    }
    panic!("more than {LIMIT} interleavings");
}

async fn finishing(part: impl Future<Output = ()>, gate: Arc<Gate>) {
    part.await;
    gate.finish();
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::collections::HashSet;

    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::Api;
    use kube::api::{Patch, PatchParams};
    use serde_json::json;

    use super::*;

    type World = (Mutex<HashSet<String>>, FakeApi);

    fn world() -> (World, FakeApi) {
        let fake = FakeApi::new();
        fake.insert(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cm", "namespace": "ns"}, "data": {}}));
        ((Mutex::new(HashSet::new()), fake.clone()), fake)
    }

    fn record(seen: &Mutex<HashSet<String>>, schedule: &Schedule) {
        let order: Vec<String> = schedule
            .order
            .iter()
            .map(|(a, what)| format!("{a}:{what}"))
            .collect();
        assert!(
            seen.lock().unwrap().insert(order.join(",")),
            "twice:\n{schedule}"
        );
    }

    #[tokio::test]
    async fn every_ordering_of_two_actors_two_requests_each_runs_once() {
        let runs = explore(
            2,
            Gated::All,
            async || world(),
            async |_, _, client| {
                let maps: Api<ConfigMap> = Api::namespaced(client, "ns");
                maps.get("cm").await.unwrap();
                maps.get("cm").await.unwrap();
            },
            |(seen, _): &World, schedule| {
                assert_eq!(schedule.order.len(), 4);
                record(seen, schedule);
            },
        )
        .await;
        // (4 choose 2) orderings.
        assert_eq!(runs, 6);
    }

    #[tokio::test]
    async fn only_writes_take_turns_when_asked() {
        let runs = explore(
            3,
            Gated::Writes,
            async || world(),
            async |_, actor, client| {
                let maps: Api<ConfigMap> = Api::namespaced(client, "ns");
                maps.get("cm").await.unwrap();
                let patch = json!({"data": {"last": actor.to_string()}});
                maps.patch("cm", &PatchParams::default(), &Patch::Merge(patch))
                    .await
                    .unwrap();
            },
            |(seen, fake): &World, schedule| {
                record(seen, schedule);
                // The last writer in the schedule wins.
                let (last, _) = schedule.order.last().unwrap();
                let cm: ConfigMap = fake.get("ns", "cm").unwrap();
                assert_eq!(cm.data.unwrap()["last"], last.to_string());
            },
        )
        .await;
        // 3! orderings of the three writes.
        assert_eq!(runs, 6);
    }
}
