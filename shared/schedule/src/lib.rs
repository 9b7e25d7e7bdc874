//! The pure time-window engine shared by ebb's service-scaler and scaledown-window.
//!
//! Windows say when something is open; [`FirstMatch`] combines ordered windows where the first
//! open one wins (service-scaler's time ranges) and [`AnyOpen`] combines windows where any open
//! one makes the whole open (scaledown-window's schedules). Both answer "what holds at `t`?" and
//! "when does that change next?".
//!
//! There is no I/O and no clock here: every question takes the instant it is about
//! (`now: Timestamp`) as an argument, and nothing panics on any input.
//!
//! ```
//! use jiff::Timestamp;
//! use ebb_schedule::{AnyOpen, DEFAULT_HORIZON, FirstMatch, Window};
//!
//! // scaledown-window: weekday nights in Zurich, eleven hours from 20:00.
//! let nights = AnyOpen::new(vec![Window::cron("0 20 * * 1-5", "11h", Some("Europe/Zurich"))?]);
//! let friday_noon: Timestamp = "2026-03-27T11:00:00Z".parse()?;
//! assert!(!nights.is_open(friday_noon));
//! assert_eq!(nights.next_transition(friday_noon), Some("2026-03-27T19:00:00Z".parse()?));
//!
//! // service-scaler: the first matching range wins.
//! let ranges = FirstMatch::new(vec![
//!     Window::zoned_time("16:00+05:30", "00:00+05:30")?,
//!     Window::zoned_time("00:00+05:30", "08:00+05:30")?,
//! ]);
//! assert_eq!(ranges.matched_at("2026-03-27T12:00:00Z".parse()?), Some(0));
//! let next = ranges.transitions(friday_noon, 3, DEFAULT_HORIZON);
//! assert_eq!(next[0], ("2026-03-27T18:30:00Z".parse()?, Some(1)));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Windows
//! - [`Window::ZonedTime`]: daily between two `HH:MM` times at a fixed UTC offset
//!   (`16:00+05:30`), udaan's original kind.
//! - [`Window::ZonedDateTime`]: once, between two RFC 3339 instants.
//! - [`Window::LocalTime`]: daily between two `HH:MM` wall-clock times in an IANA zone, optionally
//!   only on some weekdays.
//! - [`Window::Cron`]: opens at each fire time of a standard five-field cron expression
//!   ([`CronSchedule`]) in an IANA zone, and stays open for a duration ([`parse_duration`]).
//!
//! All windows are half-open: open at `from`, closed at `to`. A daily window whose `to` is
//! earlier than its `from` wraps past midnight (`16:00` to `00:00` is open from 16:00 until
//! midnight; `22:00` to `06:00` overnight); `to` equal to `from` is a full 24 hours (for a window on
//! every day: always open). Overlapping or touching occurrences of one window are one open period.
//!
//! # Local time and daylight saving time
//! A local time means what a person looking at a wall clock in that zone would expect:
//!
//! 1. **Gap (spring forward).** A wall time that does not exist on a day because the clocks jump
//!    forward takes effect at the instant the gap ends. In Europe/Zurich on 2026-03-29 the clocks
//!    go from 02:00 to 03:00, so 02:30 that day means 03:00. This holds for a window's start, a
//!    window's end and a cron fire time alike. Several cron times inside the same gap fire once, at
//!    the end of the gap; a `LocalTime` window lying entirely inside the gap stays closed that day.
//! 2. **Fold (fall back).** A wall time that happens twice because the clocks go back means its
//!    first occurrence, the earlier instant. In Europe/Zurich on 2026-10-25 the clocks go from
//!    03:00 back to 02:00, so 02:30 that day means 02:30 summer time (00:30Z). This holds for
//!    window starts, window ends and cron fire times: `30 2 * * *` fires once that day, not twice,
//!    and the repeated hour brings no cron fires of its own.
//! 3. **Cron durations are elapsed time.** A `Cron` window with duration `11h` closes 11 real
//!    hours after it opens, whatever the clocks do in between.
//! 4. **`LocalTime` windows are bounded by the wall clock.** They open when the wall clock shows
//!    `from` and close when it shows `to`, by rules 1 and 2: `22:00`-`06:00` across a
//!    spring-forward night is open 7 real hours, across a fall-back night 9.
//! 5. **`ZonedTime` windows use a fixed UTC offset** and therefore never shift with DST.
//!
//! # Time zone data
//! Zones are read from the IANA time zone database in use: the newest release the package
//! registries carried when ebb was built ([`BUNDLED_RELEASE`]), or a zoneinfo directory the
//! process installed at start ([`tzdata::install`]; see ebb-runtime's `--tz-data`). Answers about
//! a zone are as right as that data: [`tzdata()`] says which release it is.
//!
//! # Cron dialect
//! See [`CronSchedule`]: the five fields of a Kubernetes CronJob, `0` and `7` both Sunday, names,
//! `@` macros, and day-of-month OR day-of-week when both are restricted.
//!
//! # Horizons
//! Transition previews look ahead a bounded time ([`DEFAULT_HORIZON`], 367 days: a year, a leap
//! day, and a day to spare for zones). `next_transition` on [`FirstMatch`] and [`AnyOpen`] looks
//! further when nothing changes within that time (see [`FirstMatch::next_transition`]).

#![warn(missing_docs)]

mod combine;
mod cron;
mod duration;
mod error;
mod excluded;
pub mod tzdata;
mod weekday;
mod window;
pub mod work;
mod zone;

pub use crate::combine::{AnyOpen, FirstMatch, OVERLAP_STEPS, Overlaps};
pub use crate::cron::CronSchedule;
pub use crate::duration::parse_duration;
pub use crate::error::ScheduleError;
pub use crate::excluded::{Calendars, ExcludedDays};
pub use crate::tzdata::{BUNDLED_RELEASE, TzData, TzSource, tzdata};
pub use crate::weekday::Weekdays;
pub use crate::window::{Interval, Window};
pub use crate::zone::{Zone, parse_time_zone};

/// How far ahead transition previews look by default, and how far a single window's open period is
/// followed before it counts as never ending: 367 days.
pub const DEFAULT_HORIZON: jiff::SignedDuration = jiff::SignedDuration::from_hours(367 * 24);
