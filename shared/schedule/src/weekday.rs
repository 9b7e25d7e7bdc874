//! Days of the week as users write them, and sets of them.

use std::fmt;

use jiff::civil::Weekday;

/// A set of weekdays (a `LocalTime` window's `days`).
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Weekdays(u8);

impl Weekdays {
    /// No day.
    pub const EMPTY: Self = Self(0);
    /// Every day.
    pub const ALL: Self = Self(0x7f);

    fn bit(day: Weekday) -> u8 {
        1 << day.to_monday_zero_offset()
    }

    /// Adds `day`.
    pub fn insert(&mut self, day: Weekday) {
        self.0 |= Self::bit(day);
    }

    /// Whether `day` is in the set.
    pub fn contains(self, day: Weekday) -> bool {
        self.0 & Self::bit(day) != 0
    }

    /// How many days the set holds.
    pub fn len(self) -> u32 {
        self.0.count_ones()
    }

    /// Whether the set holds no day.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
}

impl FromIterator<Weekday> for Weekdays {
    fn from_iter<I: IntoIterator<Item = Weekday>>(days: I) -> Self {
        let mut set = Self::EMPTY;
        for day in days {
            set.insert(day);
        }
        set
    }
}

impl fmt::Debug for Weekdays {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let days = (0..7)
            .filter_map(|i| Weekday::from_monday_zero_offset(i).ok())
            .filter(|day| self.contains(*day));
        f.debug_set().entries(days).finish()
    }
}

const NAMES: [(&str, &str, Weekday); 7] = [
    ("mon", "monday", Weekday::Monday),
    ("tue", "tuesday", Weekday::Tuesday),
    ("wed", "wednesday", Weekday::Wednesday),
    ("thu", "thursday", Weekday::Thursday),
    ("fri", "friday", Weekday::Friday),
    ("sat", "saturday", Weekday::Saturday),
    ("sun", "sunday", Weekday::Sunday),
];

/// A weekday written as its English name or its first three letters, in any case (`Mon`,
/// `monday`, `SUN`).
pub(crate) fn parse_weekday(text: &str) -> Option<Weekday> {
    NAMES
        .iter()
        .find(|(short, long, _)| {
            text.eq_ignore_ascii_case(short) || text.eq_ignore_ascii_case(long)
        })
        .map(|(_, _, day)| *day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_in_any_case_short_or_long() {
        assert_eq!(parse_weekday("Mon"), Some(Weekday::Monday));
        assert_eq!(parse_weekday("SUNDAY"), Some(Weekday::Sunday));
        assert_eq!(parse_weekday("thu"), Some(Weekday::Thursday));
        for bad in ["", "Mo", "Mond", "Funday", " Mon", "7"] {
            assert_eq!(parse_weekday(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_set_holds_what_was_put_in() {
        let set: Weekdays = [Weekday::Saturday, Weekday::Sunday].into_iter().collect();
        assert!(set.contains(Weekday::Sunday) && !set.contains(Weekday::Monday));
        assert_eq!(set.len(), 2);
        assert!(Weekdays::EMPTY.is_empty());
        assert_eq!(Weekdays::ALL.len(), 7);
        assert_eq!(format!("{set:?}"), "{Saturday, Sunday}");
    }
}
