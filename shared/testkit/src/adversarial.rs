//! The schedules the CRDs admit that cost the most to answer (issue 46): minute-level crons
//! restricted by day or month, 64 ranges, windows that chain into one long period, DST zones and
//! long exclusion runs. The engine's bench times each question on them and `cargo test` holds
//! each to an operation budget.

use ebb_schedule::{FirstMatch, Window};
use jiff::civil;

/// The most ranges a ServiceScaler's `timeRangeSpec` admits (its CRD's `maxItems`).
pub const MAX_RANGES: usize = 64;

/// `(name, schedule)` for each adversarial spec, as the controllers build them.
///
/// # Panics
/// If a spec here does not parse (a bug in this list).
#[allow(clippy::expect_used)]
pub fn first_matches() -> Vec<(&'static str, FirstMatch)> {
    let cron = |expr: &str, duration: &str, tz: &str| {
        Window::cron(expr, duration, Some(tz)).expect("an adversarial cron parses")
    };
    // 64 ranges, each minute-level and weekday-restricted, none overlapping another: the
    // overlap check must compare every pair.
    let sixty_four = (0..MAX_RANGES)
        .map(|i| {
            cron(
                &format!("{}/59 * * * 1-5", i % 60),
                "1m",
                "America/New_York",
            )
        })
        .collect();
    // Every other minute, each on one weekday: on the wall clock every pair meets, so only a
    // sweep of the year tells the pairs on different weekdays apart; there is not budget enough
    // for all of them.
    let weekdays = (0..MAX_RANGES)
        .map(|i| cron(&format!("*/2 * * * {}", i % 7), "1m", "Europe/Berlin"))
        .collect();
    // Minute-level, but only on days that rarely come (29 February, the 31st).
    let rare_days = vec![
        cron("* * 29 2 *", "1m", "Europe/London"),
        cron("*/5 * 31 * *", "1m", "Europe/London"),
        cron("* 3 * * 1", "30s", "Australia/Lord_Howe"),
    ];
    // Every minute, open two: one period for ever, found by chaining occurrences. Beside it a
    // minutely window in a DST zone whose periods break only at the changes.
    let chained = vec![
        cron("* * * * *", "2m", "America/New_York"),
        cron("* * * * 1-5", "61s", "Australia/Lord_Howe"),
    ];
    // A daily window excluded on every date of two years, one date at a time: nothing opens
    // for two years.
    let start = civil::date(2026, 1, 1);
    let dates: Vec<(civil::Date, civil::Date)> = (0..731)
        .filter_map(|d| start.checked_add(jiff::Span::new().days(d)).ok())
        .map(|d| (d, d))
        .collect();
    let excluded = vec![
        Window::local_time("09:00", "17:00", Some("Europe/Zurich"), None::<&[&str]>)
            .expect("a daily window parses")
            .excluding(dates.clone()),
        cron("*/2 * * * *", "1m", "America/Sao_Paulo").excluding(dates),
    ];
    // A one-off range that ends in 9999 beside a cron window whose occurrences chain (51 hours
    // from midnight, six days a week: open for ever). Whether the two meet needs the chaining
    // window's first open period after the range's start, not where that period ends (found by
    // the fuzzer: 0.3 s in a release build when the overlap check walked the chain to 9999).
    let forever = vec![
        cron("1 0 * * 0-5", "51h", "Europe/Zurich"),
        Window::zoned_date_time("2026-03-25T09:50:11Z", "9999-03-28T01:01:11Z")
            .expect("a one-off window parses"),
    ];
    vec![
        (
            "64 weekday minute crons (New York)",
            FirstMatch::new(sixty_four),
        ),
        (
            "64 minute crons, one weekday each",
            FirstMatch::new(weekdays),
        ),
        ("minute crons on rare days", FirstMatch::new(rare_days)),
        ("minutely crons that chain", FirstMatch::new(chained)),
        ("two years excluded day by day", FirstMatch::new(excluded)),
        (
            "a one-off range to 9999 beside a chaining cron",
            FirstMatch::new(forever),
        ),
    ]
}
