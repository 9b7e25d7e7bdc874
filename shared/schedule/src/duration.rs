//! Durations written as `90m`, `10h`, `1h30m`, `45s`, `1h30m15s`.

use jiff::SignedDuration;

use crate::ScheduleError;

/// Parses a duration made of hours, minutes and seconds: `90m`, `10h`, `1h30m`, `45s`, `1h30m15s`.
///
/// Each of `h`, `m` and `s` may appear at most once, in that order, each after a whole number; at
/// least one must be present and the total must be longer than zero. Any number of minutes or seconds
/// is accepted (`90m` is an hour and a half). Signs, fractions, spaces and other units (`d`, `ms`)
/// are rejected, as is a total too large to represent.
///
/// # Errors
/// [`ScheduleError::Duration`] naming the problem and the text.
pub fn parse_duration(input: &str) -> Result<SignedDuration, ScheduleError> {
    let fail = |reason: String| ScheduleError::duration(input, reason);
    if input.is_empty() {
        return Err(fail(
            "it is empty; write hours, minutes and seconds such as 90m, 10h or 1h30m".into(),
        ));
    }
    if input.starts_with('-') {
        return Err(fail("a duration cannot be negative".into()));
    }

    let mut rest = input;
    let mut total: i64 = 0;
    // 0 = nothing yet, then 1 = h, 2 = m, 3 = s: units must strictly increase.
    let mut last_rank = 0;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let (number, tail) = rest.split_at(digits);
        let unit_len = tail
            .char_indices()
            .find(|(_, c)| c.is_ascii_digit())
            .map_or(tail.len(), |(i, _)| i);
        let (unit, after) = tail.split_at(unit_len);
        if number.is_empty() {
            return Err(fail(format!(
                "expected a whole number before {unit:?}; write hours, minutes and seconds such as 1h30m"
            )));
        }
        let (rank, seconds_per_unit) = match unit {
            "h" => (1, 3600),
            "m" => (2, 60),
            "s" => (3, 1),
            "" => {
                return Err(fail(format!(
                    "the number {number} has no unit; use h, m or s"
                )));
            }
            other => {
                return Err(fail(format!(
                    "unknown unit {other:?}; use h (hours), m (minutes) or s (seconds)"
                )));
            }
        };
        if rank <= last_rank {
            return Err(fail(
                "each of h, m and s may appear once, in that order (like 1h30m15s)".into(),
            ));
        }
        last_rank = rank;
        let too_long = || fail("it is too long".into());
        let value: i64 = number.parse().map_err(|_| too_long())?;
        total = value
            .checked_mul(seconds_per_unit)
            .and_then(|secs| total.checked_add(secs))
            .ok_or_else(too_long)?;
        rest = after;
    }
    if total == 0 {
        return Err(fail("a duration must be longer than zero".into()));
    }
    // The bound chrono's durations had (i64 milliseconds), kept so that what was accepted before
    // still is and nothing longer is.
    if total > i64::MAX / 1000 {
        return Err(fail("it is too long".into()));
    }
    Ok(SignedDuration::from_secs(total))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn accepts_hours_minutes_seconds_in_order() {
        let cases = [
            ("90m", 90 * 60),
            ("10h", 10 * 3600),
            ("1h30m", 5400),
            ("45s", 45),
            ("1h30m15s", 5415),
            ("1h15s", 3615),
            ("2m30s", 150),
            ("0h1m", 60),
            ("1h0m", 3600),
            ("0001h", 3600),
            ("100000h", 360_000_000),
        ];
        for (text, seconds) in cases {
            assert_eq!(
                parse_duration(text).unwrap(),
                SignedDuration::from_secs(seconds),
                "{text}"
            );
        }
    }

    #[test]
    fn rejects_malformed_durations_with_a_reason() {
        let cases = [
            ("", "empty"),
            ("0m", "longer than zero"),
            ("0h0m0s", "longer than zero"),
            ("-5m", "negative"),
            ("5", "no unit"),
            ("5d", "unknown unit \"d\""),
            ("10ms", "unknown unit \"ms\""),
            ("1.5h", "unknown unit \".\""),
            ("30m1h", "in that order"),
            ("1h1h", "in that order"),
            ("h", "whole number"),
            (" 5m", "whole number"),
            ("5m ", "unknown unit \"m \""),
            ("+5m", "whole number"),
            ("99999999999999999999h", "too long"),
            ("9223372036854775807s", "too long"),
            ("2562047788015216h", "too long"),
            ("5M", "unknown unit \"M\""),
        ];
        for (text, reason) in cases {
            let err = parse_duration(text).unwrap_err();
            let message = err.to_string();
            assert!(
                message.contains(reason) && message.contains(&format!("{text:?}")),
                "{text:?}: {message}"
            );
        }
    }
}
