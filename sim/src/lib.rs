//! `ebb-sim`: how ebb's controllers behave over a day or a week, from the same code that runs in
//! the cluster (issue #13).
//!
//! The simulator runs each controller's real reconciler against `ebb_testkit::FakeApi` on a
//! virtual clock; everything else in the cluster is one of the small actors here. Each actor is
//! pure state stepped at explicit instants (no clock, no I/O, no RNG of its own): the simulation
//! loop hands it `now` and, where it draws, the scenario's seeded [`Dice`], so the same scenario
//! always gives the same result.
//!
//! - [`hpa`]: the HorizontalPodAutoscaler controller's replica formula and default behaviour.
//! - [`provisioners`]: a pool of provisioner pods, one job per pod at a time, and a queue.
//! - [`babylon`]: Babylon/Poolboy: seats (claims) created when `spec.count` grows, provisioned
//!   after a drawn duration, a share failing; users take ready seats or wait.
//! - [`users`]: when users arrive (a burst, a ramp, a list).
//! - [`cluster`]: the cluster-version operator's upgrades and a cluster autoscaler that removes
//!   idle nodes only while scale-down is enabled.
//! - [`hooks`]: hook Jobs that take time or fail.

pub mod babylon;
pub mod chart;
pub mod clock;
pub mod cluster;
pub mod draw;
pub mod hooks;
pub mod hpa;
pub mod provisioners;
pub mod report;
pub mod run;
pub mod scaledown_window;
pub mod scenario;
pub mod service_scaler;
pub mod stackable_scaler;
pub mod sweep;
pub mod users;
pub mod workshop_scaler;
pub mod world;

pub use clock::VirtualClock;
pub use draw::{Dice, Spread};

use serde_json::Value;

use crate::chart::Chart;
use crate::report::Timeline;

/// What one simulation produced.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The scenario's name.
    pub name: String,
    /// The controllers' writes and the actors' key events.
    pub timeline: Timeline,
    /// The figures, by name.
    pub summary: Value,
    /// The charts of the main series.
    pub charts: Vec<Chart>,
}
