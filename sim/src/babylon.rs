//! Babylon and Poolboy for one WorkshopProvision: seats (a ResourceClaim and its
//! WorkshopUserAssignment) and the users who take them.
//!
//! - Raising `spec.count` creates one seat per new unit at once; each is provisioned after a
//!   duration drawn from [`Settings::provision`], and a [`Settings::failure_share`] of them
//!   fail instead (found out at the end of their provisioning, as Babylon's predicates do).
//!   Lowering the count removes nothing (Babylon does not take seats away).
//! - Every seat has its WorkshopUserAssignment from the start, so the workshop's utilization
//!   (`assigned / total`, what workshop-scaler reads) counts seats still provisioning.
//! - A user takes the oldest ready free seat; without one, the user waits for the next seat to
//!   become ready, first come first served, and the wait is recorded.

use std::collections::VecDeque;

use jiff::{SignedDuration, Timestamp};
use serde::Deserialize;

use crate::Dice;
use crate::draw::Spread;

/// How seats get provisioned.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Settings {
    /// How long a claim takes to provision.
    pub provision: Spread,
    /// The share of claims that fail (0 to 1).
    #[serde(default)]
    pub failure_share: f64,
}

/// One seat: a ResourceClaim with its WorkshopUserAssignment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seat {
    /// The claim's name.
    pub name: String,
    /// When provisioning ends (ready, or failed).
    pub settles_at: Timestamp,
    /// Whether provisioning fails.
    pub failed: bool,
    /// The user holding the seat.
    pub user: Option<u64>,
}

/// The state of a claim at an instant, as Babylon's status shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimState {
    /// Still provisioning.
    Provisioning,
    /// Ready for a user.
    Ready,
    /// Failed.
    Failed,
}

/// A user who got a seat.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seated {
    /// Which user.
    pub user: u64,
    /// When the user arrived.
    pub arrived: Timestamp,
    /// How long until a seat was theirs.
    pub waited: SignedDuration,
}

/// One WorkshopProvision's seats and users.
#[derive(Debug, Clone)]
pub struct Babylon {
    settings: Settings,
    prefix: String,
    seats: Vec<Seat>,
    waiting: VecDeque<(u64, Timestamp)>,
    seated: Vec<Seated>,
    now: Timestamp,
}

impl Babylon {
    /// No seats yet, at `now`; claims are named `<prefix>-<n>`.
    pub fn new(now: Timestamp, prefix: &str, settings: Settings) -> Self {
        Self {
            settings,
            prefix: prefix.to_owned(),
            seats: Vec::new(),
            waiting: VecDeque::new(),
            seated: Vec::new(),
            now,
        }
    }

    /// Every seat created so far.
    pub fn seats(&self) -> &[Seat] {
        &self.seats
    }

    /// Users who got a seat, in the order they got it.
    pub fn seated(&self) -> &[Seated] {
        &self.seated
    }

    /// Users still waiting, with when they arrived.
    pub fn waiting(&self) -> impl Iterator<Item = (u64, Timestamp)> + '_ {
        self.waiting.iter().copied()
    }

    /// `(assigned, total)` over the WorkshopUserAssignments: what workshop-scaler counts.
    pub fn assignments(&self) -> (u32, u32) {
        let assigned = self.seats.iter().filter(|s| s.user.is_some()).count();
        (count(assigned), count(self.seats.len()))
    }

    /// Each claim's state now.
    pub fn claims(&self) -> impl Iterator<Item = (&str, ClaimState)> + '_ {
        self.seats
            .iter()
            .map(|s| (s.name.as_str(), state(s, self.now)))
    }

    /// The provision's `spec.count` is `target` from `now`: new seats for the difference.
    pub fn set_count(&mut self, now: Timestamp, target: u32, dice: &mut Dice) {
        self.advance(now);
        while self.seats.len() < target as usize {
            let settles_at = now + dice.duration(&self.settings.provision);
            let failed = dice.chance(self.settings.failure_share);
            self.seats.push(Seat {
                name: format!("{}-{}", self.prefix, self.seats.len()),
                settles_at,
                failed,
                user: None,
            });
        }
    }

    /// User `user` arrives at `at` (not before the last look).
    pub fn arrive(&mut self, user: u64, at: Timestamp) {
        self.advance(at);
        self.waiting.push_back((user, at));
        self.seat_waiting(at);
    }

    /// Moves to `now`: seats settle and waiting users take them, in time order.
    pub fn advance(&mut self, now: Timestamp) {
        while let Some(at) = self
            .seats
            .iter()
            .map(|s| s.settles_at)
            .filter(|at| *at > self.now && *at <= now)
            .min()
        {
            self.now = at;
            self.seat_waiting(at);
        }
        self.now = self.now.max(now);
    }

    fn seat_waiting(&mut self, at: Timestamp) {
        while let Some(&(user, arrived)) = self.waiting.front() {
            let free = self
                .seats
                .iter_mut()
                .filter(|s| s.user.is_none() && state(s, at) == ClaimState::Ready)
                .min_by_key(|s| s.settles_at);
            let Some(seat) = free else {
                return;
            };
            seat.user = Some(user);
            self.waiting.pop_front();
            self.seated.push(Seated {
                user,
                arrived,
                waited: at.duration_since(arrived),
            });
        }
    }
}

fn state(seat: &Seat, now: Timestamp) -> ClaimState {
    match (seat.settles_at <= now, seat.failed) {
        (false, _) => ClaimState::Provisioning,
        (true, false) => ClaimState::Ready,
        (true, true) => ClaimState::Failed,
    }
}

fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
#[path = "babylon_tests.rs"]
mod tests;
