//! The simulated cluster: an in-memory API server on virtual time, and the way a controller is
//! started on it exactly as its binary starts it (its flags, its `controllers` on a
//! [`Wiring`]).

use std::future::Future;
use std::sync::Arc;

use clap::Args;
use ebb_runtime::execute::frame::Shared;
use ebb_runtime::process::app::{WarmUp, Wiring};
use ebb_runtime::process::controller::Controller;
use ebb_runtime::{ApiContact, CommonArgs, ControllerMetrics, Health, Leader, Shutdown};
use ebb_testkit::{FakeApi, RecordedRequest, RecordingEvents};
use futures::FutureExt;
use jiff::Timestamp;
use prometheus_client::registry::Registry;
use serde_json::Value;

use crate::clock::VirtualClock;

/// Why a simulation cannot run.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// The scenario file is wrong.
    #[error("{path}: {message}")]
    Scenario {
        /// The file.
        path: String,
        /// What is wrong, naming the field.
        message: String,
    },
    /// A controller's flags do not parse.
    #[error("flags {flags:?}: {message}")]
    Flags {
        /// The flags given.
        flags: Vec<String>,
        /// clap's message.
        message: String,
    },
    /// A controller stopped before the end of the simulated span.
    #[error("{0} stopped before the end of the simulation")]
    Stopped(String),
}

/// The fake cluster, its virtual clock, and the metrics registry of the controllers on it.
pub struct World {
    /// The in-memory API server; its timestamps come from [`Self::clock`].
    pub fake: FakeApi,
    /// Virtual "now".
    pub clock: VirtualClock,
    /// The Events the controllers recorded.
    pub events: RecordingEvents,
    registry: Registry,
}

impl World {
    /// An empty cluster at `start`. Make it inside the runtime whose paused time drives it.
    pub fn new(start: Timestamp) -> Self {
        let clock = VirtualClock::starting_at(start);
        Self {
            fake: FakeApi::with_clock(clock),
            clock,
            events: RecordingEvents::new(),
            registry: Registry::default(),
        }
    }

    /// Stores `objects` as a user would have applied them.
    ///
    /// # Errors
    /// An object without `apiVersion`, `kind` or `metadata.name` (`path` names the file).
    pub fn apply(&self, path: &str, objects: &[Value]) -> Result<(), SimError> {
        for (i, object) in objects.iter().enumerate() {
            self.fake
                .try_insert(object.clone(), None)
                .map_err(|message| SimError::Scenario {
                    path: path.to_owned(),
                    message: format!("objects[{i}]: {message}"),
                })?;
        }
        Ok(())
    }

    /// What a controller named `name` runs on here: the fake's client, the virtual clock,
    /// recorded Events, a replica that leads (no election in a simulation), and `common`'s
    /// scope.
    pub fn wiring(&mut self, name: &str, common: &CommonArgs) -> Wiring {
        let warm_up = WarmUp::new(Health::new(), ApiContact::new(Arc::new(self.clock)));
        Wiring {
            shared: Shared {
                contact: warm_up.contact().clone(),
                client: self.fake.client(),
                clock: Arc::new(self.clock),
                events: Arc::new(self.events.clone()),
                metrics: ControllerMetrics::new(&mut self.registry, name),
                dry_run: common.dry_run,
                leader: Leader::disabled(),
                own_writes: ebb_runtime::watch::own_writes::OwnWrites::new(),
            },
            common: common.clone(),
            warm_up,
            shutdown: Shutdown::new(),
            retry_jitter: false,
        }
    }

    /// Controller `C` with `flags` on this world ([`Self::wiring`], its metrics in
    /// [`Self::registry`]): its watches and reconciles, which run until shut down.
    ///
    /// # Errors
    /// Flags the controller does not take.
    pub fn run<C: Controller>(
        &mut self,
        flags: &[&str],
    ) -> Result<impl Future<Output = ()> + Send + 'static + use<C>, SimError> {
        let args: C::Args = self::flags(flags)?;
        let wiring = self.wiring(C::ABOUT.name, args.as_ref());
        let metrics = C::metrics(&mut self.registry);
        Ok(C::controllers(args, wiring, metrics))
    }

    /// The registry controllers register their own metrics in.
    pub fn registry(&mut self) -> &mut Registry {
        &mut self.registry
    }

    /// Every write the controllers made (actors change the fake directly and make none), in
    /// order, each stamped with its virtual instant.
    pub fn writes(&self) -> Vec<RecordedRequest> {
        self.fake.writes()
    }
}

/// A controller's flags (`A`, its `RunArgs`) parsed from `flags` as its binary would.
///
/// # Errors
/// Flags the controller does not take.
pub fn flags<A: Args>(flags: &[&str]) -> Result<A, SimError> {
    let command = A::augment_args(clap::Command::new("sim").no_binary_name(true));
    let fail = |e: clap::Error| SimError::Flags {
        flags: flags.iter().map(ToString::to_string).collect(),
        message: e.to_string(),
    };
    let matches = command.try_get_matches_from(flags).map_err(fail)?;
    A::from_arg_matches(&matches).map_err(fail)
}

/// Drives `controllers` (which run until shut down) beside `driver` (the actors, which end with
/// the simulated span) and returns what `driver` returns.
///
/// # Errors
/// [`SimError::Stopped`] when the controllers end first.
pub async fn alongside<T>(
    name: &str,
    controllers: impl Future<Output = ()>,
    driver: impl Future<Output = T>,
) -> Result<T, SimError> {
    futures::select_biased! {
        out = Box::pin(driver).fuse() => Ok(out),
        () = Box::pin(controllers).fuse() => Err(SimError::Stopped(name.to_owned())),
    }
}

/// A write in a few words: `PATCH clusterautoscalers/default spec.scaleDown.enabled=false`.
pub fn describe(write: &RecordedRequest) -> String {
    let target = write
        .path
        .rsplit('/')
        .take(if write.path.ends_with("/status") {
            3
        } else {
            2
        })
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect::<Vec<_>>()
        .join("/");
    let mut leaves = Vec::new();
    if let Some(body) = &write.body {
        leaves_of(body, "", &mut leaves);
    }
    let status = match write.status {
        Some(code) if code >= 400 => format!(" -> {code}"),
        Some(_) => String::new(),
        None => " -> no answer".to_owned(),
    };
    format!("{} {target} {}{status}", write.method, leaves.join(" "))
        .trim_end()
        .to_owned()
}

/// `path=value` for each leaf of a write's body, leaving out what identifies the object.
fn leaves_of(value: &Value, path: &str, out: &mut Vec<String>) {
    const IDENTITY: [&str; 7] = [
        "apiVersion",
        "kind",
        "metadata.name",
        "metadata.namespace",
        "metadata.uid",
        "metadata.resourceVersion",
        "metadata.managedFields",
    ];
    if IDENTITY.contains(&path) {
        return;
    }
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (key, child) in map {
                let child_path = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                leaves_of(child, &child_path, out);
            }
        }
        // Lists of objects (conditions, next transitions) are counted, not spelled out.
        Value::Array(items) if items.iter().any(Value::is_object) => {
            out.push(format!("{path}=[{} items]", items.len()));
        }
        other => out.push(format!("{path}={other}")),
    }
}

#[cfg(test)]
#[path = "world_tests.rs"]
mod tests;
