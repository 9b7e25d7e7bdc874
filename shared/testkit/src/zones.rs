//! Time zones whose rules test time code hardest, and the instants their clocks jump: what the
//! schedule engine's property tests draw from.

/// UTC, the three zones of the benchmarks, a 30-minute DST (Lord Howe), a southern-hemisphere
/// DST (Santiago) and a half-hour offset without DST (Kolkata).
pub const DST_ZONES: [&str; 7] = [
    "UTC",
    "Europe/Zurich",
    "America/New_York",
    "Australia/Sydney",
    "Australia/Lord_Howe",
    "Asia/Kolkata",
    "America/Santiago",
];

/// 2026's DST changes in [`DST_ZONES`] (UTC instants).
pub const DST_CHANGES: [&str; 10] = [
    "2026-03-29T01:00:00Z", // Europe/Zurich springs forward
    "2026-10-25T01:00:00Z", // Europe/Zurich falls back
    "2026-03-08T07:00:00Z", // America/New_York springs forward
    "2026-11-01T06:00:00Z", // America/New_York falls back
    "2026-04-04T16:00:00Z", // Australia/Sydney falls back
    "2026-10-03T16:00:00Z", // Australia/Sydney springs forward
    "2026-04-04T15:00:00Z", // Australia/Lord_Howe falls back (30 minutes)
    "2026-10-03T15:30:00Z", // Australia/Lord_Howe springs forward (30 minutes)
    "2026-04-05T03:00:00Z", // America/Santiago falls back
    "2026-09-06T04:00:00Z", // America/Santiago springs forward
];

/// A zone that skipped a whole day: Samoa went from UTC-10 to UTC+14 over 2011-12-30.
pub const SKIPPED_DAY_ZONE: &str = "Pacific/Apia";

/// When [`SKIPPED_DAY_ZONE`] skipped its day (UTC).
pub const SKIPPED_DAY: &str = "2011-12-30T10:00:00Z";
