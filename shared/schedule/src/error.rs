//! The one error type of this crate.

/// Why a schedule, window, duration or time zone was rejected.
///
/// Every message names the problem and quotes the offending text, so a caller only has to prefix
/// the field path (`spec.timeRangeSpec[2].from: ...`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScheduleError {
    /// A duration such as `90m`, `10h` or `1h30m` could not be parsed.
    #[error("invalid duration {input:?}: {reason}")]
    Duration {
        /// The text as given.
        input: String,
        /// What is wrong with it.
        reason: String,
    },

    /// A five-field cron expression could not be parsed.
    #[error("invalid cron expression {input:?}: {reason}")]
    Cron {
        /// The expression as given.
        input: String,
        /// What is wrong with it.
        reason: String,
    },

    /// A wall-clock time (`HH:MM`, optionally with a UTC offset) could not be parsed.
    #[error("invalid time of day {input:?}: {reason}")]
    TimeOfDay {
        /// The text as given.
        input: String,
        /// What is wrong with it.
        reason: String,
    },

    /// An RFC 3339 date-time could not be parsed.
    #[error("invalid date-time {input:?}: {reason}")]
    DateTime {
        /// The text as given.
        input: String,
        /// What is wrong with it.
        reason: String,
    },

    /// The name is not an IANA time zone known to the time zone data in use.
    #[error("unknown time zone {0:?}: expected an IANA name such as \"Europe/Zurich\" or \"UTC\"")]
    UnknownTimeZone(String),

    /// The time zone data holds the name, but its rules cannot be read.
    #[error("the time zone data for {name:?} cannot be read: {reason}")]
    UnreadableTimeZone {
        /// The zone asked for.
        name: String,
        /// What is wrong with its data.
        reason: String,
    },

    /// A day of the week could not be parsed.
    #[error("invalid day of the week {0:?}: expected one of Mon, Tue, Wed, Thu, Fri, Sat, Sun")]
    Weekday(String),

    /// A list of days was given but empty.
    #[error("the list of days is empty: leave it out to mean every day")]
    NoDays,

    /// An excluded date (or date range) could not be parsed.
    #[error("invalid excluded date {input:?}: {reason}")]
    ExcludedDate {
        /// The text as given.
        input: String,
        /// What is wrong with it.
        reason: String,
    },

    /// A window names a holiday calendar that does not exist.
    #[error("HolidayCalendar {name:?} not found")]
    CalendarNotFound {
        /// The calendar's name.
        name: String,
    },

    /// A holiday calendar a window names holds a date that does not parse.
    #[error("HolidayCalendar {name:?}: {reason}")]
    CalendarInvalid {
        /// The calendar's name.
        name: String,
        /// What is wrong with it.
        reason: String,
    },

    /// A one-off window does not end after it starts.
    #[error("the window ends before it starts: to {to:?} is not after from {from:?}")]
    EndNotAfterStart {
        /// The start as given.
        from: String,
        /// The end as given.
        to: String,
    },
}

impl ScheduleError {
    pub(crate) fn duration(input: &str, reason: impl Into<String>) -> Self {
        Self::Duration {
            input: input.to_owned(),
            reason: reason.into(),
        }
    }

    pub(crate) fn cron(input: &str, reason: impl Into<String>) -> Self {
        Self::Cron {
            input: input.to_owned(),
            reason: reason.into(),
        }
    }

    pub(crate) fn time_of_day(input: &str, reason: impl Into<String>) -> Self {
        Self::TimeOfDay {
            input: input.to_owned(),
            reason: reason.into(),
        }
    }

    pub(crate) fn date_time(input: &str, reason: impl Into<String>) -> Self {
        Self::DateTime {
            input: input.to_owned(),
            reason: reason.into(),
        }
    }
}
