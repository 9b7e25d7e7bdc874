//! Which IANA time zone data a process reads its zones from, chosen once at start.
//!
//! The rule (docs/decisions.md, "Time-zone data"): the newest release wins, and the choice is
//! never an older release in silence.
//! - ebb bundles a release ([`ebb_schedule::BUNDLED_RELEASE`]).
//! - `--tz-data DIR` (`EBB_TZ_DATA`) names a zoneinfo directory, e.g. a mounted ConfigMap or an
//!   image with newer tzdata. It is used when its release is the bundled one or newer. When it is
//!   older, the bundled data is used and a warning says so. A directory that cannot be read, holds
//!   no zone, or does not say which release it holds (`+VERSION`, or the `# version` line of
//!   `tzdata.zi`) stops the process: ebb cannot tell whether it would go back in time.
//! - Without the flag, the system's zoneinfo (`$TZDIR`, else `/usr/share/zoneinfo`) is used when
//!   it says it holds a newer release than the bundled one; otherwise the bundled data is.
//!
//! What was chosen shows in the log line `time-zone data`, the `tzdata` label of
//! `ebb_<controller>_build_info` and the `plan` output of the controllers that read zones.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use ebb_schedule::BUNDLED_RELEASE;
use ebb_schedule::tzdata::{self, TzData, compare_releases, is_release};

/// The flag that points at newer time zone data.
#[derive(clap::Args, Debug, Clone, Default, PartialEq, Eq)]
pub struct TzArgs {
    /// A zoneinfo directory (TZif files, e.g. a mounted ConfigMap or Debian's tzdata) to read time
    /// zones from instead of the data ebb bundles, when it holds the same release or a newer one.
    /// Its release is read from `+VERSION` or the `# version` line of `tzdata.zi`.
    #[arg(
        help_heading = "Time zones",
        long = "tz-data",
        env = "EBB_TZ_DATA",
        value_name = "DIR"
    )]
    pub tz_data: Option<PathBuf>,
}

/// The system's zoneinfo directory when `$TZDIR` is not set.
pub const SYSTEM_ZONEINFO: &str = "/usr/share/zoneinfo";

/// Why the time zone data named cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TzError {
    /// The directory cannot be read.
    #[error("--tz-data {path}: cannot read it: {source}")]
    Read {
        /// The directory.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The directory holds no TZif file.
    #[error("--tz-data {0}: no time zone (TZif) file in it")]
    Empty(String),
    /// The directory does not say which release it holds.
    #[error(
        "--tz-data {0}: it does not say which tzdb release it holds (no +VERSION file and no \
         \"# version\" line in tzdata.zi), so ebb cannot tell whether it is older than the \
         {BUNDLED_RELEASE} it bundles"
    )]
    NoRelease(String),
    /// This process chose other data before.
    #[error("--tz-data {0}: this process already reads its time zones from other data")]
    AlreadyChosen(String),
}

/// A zoneinfo directory read from disk.
#[derive(Debug)]
pub struct Directory {
    /// Where it is.
    pub path: PathBuf,
    /// The release it says it holds (`None` when it says none, or something that is not one).
    pub release: Option<String>,
    /// TZif content by zone name (`America/Vancouver`).
    pub files: HashMap<String, Vec<u8>>,
}

/// What [`choose`] decided: the data to use, and what to say about it.
#[derive(Debug)]
pub struct Choice {
    /// The data.
    pub data: TzData,
    /// A warning to log: data that was offered and not used because it is older, or has no
    /// release.
    pub warning: Option<String>,
}

/// The rule of the module documentation, without I/O: `configured` is the `--tz-data` directory,
/// `system` the system's (if it could be read).
///
/// # Errors
/// [`TzError::NoRelease`] or [`TzError::Empty`] for a configured directory that cannot be used.
pub fn choose(configured: Option<Directory>, system: Option<Directory>) -> Result<Choice, TzError> {
    if let Some(dir) = configured {
        let shown = dir.path.display().to_string();
        if dir.files.is_empty() {
            return Err(TzError::Empty(shown));
        }
        let Some(release) = dir.release.clone() else {
            return Err(TzError::NoRelease(shown));
        };
        return Ok(if newer_or_same(&release) {
            Choice {
                data: TzData::from_files(release, dir.path, dir.files),
                warning: None,
            }
        } else {
            Choice {
                data: TzData::new_bundled(),
                warning: Some(format!(
                    "--tz-data {shown} holds tzdb {release}, older than the {BUNDLED_RELEASE} \
                     ebb bundles: using the bundled data"
                )),
            }
        });
    }
    let newer_system = system.filter(|dir| {
        !dir.files.is_empty()
            && dir
                .release
                .as_deref()
                .and_then(|r| compare_releases(r, BUNDLED_RELEASE))
                == Some(Ordering::Greater)
    });
    Ok(Choice {
        data: match newer_system {
            Some(Directory {
                path,
                release: Some(release),
                files,
            }) => TzData::from_files(release, path, files),
            _ => TzData::new_bundled(),
        },
        warning: None,
    })
}

/// Whether `release` is the bundled one or newer.
fn newer_or_same(release: &str) -> bool {
    compare_releases(release, BUNDLED_RELEASE).is_some_and(|o| o != Ordering::Less)
}

/// Reads a zoneinfo directory: every TZif file below it (not the `posix/` and `right/` copies,
/// nor `localtime`, `posixrules` or a mounted ConfigMap's `..data` entries) and its release.
///
/// # Errors
/// [`TzError::Read`] when the directory itself cannot be read.
pub fn read_directory(path: &Path) -> Result<Directory, TzError> {
    let read_error = |source| TzError::Read {
        path: path.display().to_string(),
        source,
    };
    let mut files = HashMap::new();
    let mut pending = vec![(path.to_path_buf(), String::new())];
    let mut first = true;
    while let Some((dir, prefix)) = pending.pop() {
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if first => return Err(read_error(e)),
            Err(_) => continue,
        };
        first = false;
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') || SKIPPED.contains(&name.as_str()) {
                continue;
            }
            let zone = format!("{prefix}{name}");
            let full = entry.path();
            // Follow links: a ConfigMap's files and tzdata's aliases are symbolic links.
            match std::fs::metadata(&full) {
                Ok(meta) if meta.is_dir() => pending.push((full, format!("{zone}/"))),
                Ok(meta) if meta.is_file() && is_tzif(&full) => {
                    if let Ok(content) = std::fs::read(&full) {
                        files.insert(zone, content);
                    }
                }
                _ => {}
            }
        }
    }
    Ok(Directory {
        path: path.to_path_buf(),
        release: release_of(path),
        files,
    })
}

/// Entries of a zoneinfo directory that are not zones of their own: copies with leap seconds or
/// POSIX names, and the machine's local zone.
const SKIPPED: [&str; 4] = ["posix", "right", "localtime", "posixrules"];

fn is_tzif(path: &Path) -> bool {
    let mut magic = [0u8; 4];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok()
        && &magic == b"TZif"
}

/// The release a zoneinfo directory says it holds: `+VERSION`, else `tzdata.zi`'s `# version`.
fn release_of(path: &Path) -> Option<String> {
    let from_version = std::fs::read_to_string(path.join("+VERSION"))
        .ok()
        .map(|text| text.trim().to_owned());
    let from_zi = || {
        let text = std::fs::read_to_string(path.join("tzdata.zi")).ok()?;
        let first = text.lines().next()?;
        Some(first.strip_prefix("# version")?.trim().to_owned())
    };
    from_version.or_else(from_zi).filter(|r| is_release(r))
}

/// The system's zoneinfo directory: `$TZDIR`, else [`SYSTEM_ZONEINFO`].
pub fn system_directory() -> PathBuf {
    std::env::var_os("TZDIR")
        .filter(|dir| !dir.is_empty())
        .map_or_else(|| PathBuf::from(SYSTEM_ZONEINFO), PathBuf::from)
}

/// Chooses this process's time zone data by the module's rule and installs it
/// ([`ebb_schedule::tzdata::install`]). A second call for the same choice returns the data
/// installed.
///
/// # Errors
/// [`TzError`] for a `--tz-data` directory that cannot be used.
pub fn load(args: &TzArgs) -> Result<Loaded, TzError> {
    let configured = args.tz_data.as_deref().map(read_directory).transpose()?;
    let system = if configured.is_none() {
        let dir = system_directory();
        // Only a release newer than the bundled one is worth reading every file for.
        release_of(&dir)
            .filter(|release| compare_releases(release, BUNDLED_RELEASE) == Some(Ordering::Greater))
            .and_then(|_| read_directory(&dir).ok())
    } else {
        None
    };
    let choice = choose(configured, system)?;
    let data = match tzdata::install(choice.data) {
        Ok(data) => data,
        Err(data) => {
            let installed = ebb_schedule::tzdata();
            if installed.release() != data.release() || installed.source() != data.source() {
                return Err(TzError::AlreadyChosen(
                    args.tz_data
                        .as_deref()
                        .map_or_else(|| "(none)".to_owned(), |p| p.display().to_string()),
                ));
            }
            installed
        }
    };
    Ok(Loaded {
        data,
        warning: choice.warning,
    })
}

/// The data [`load`] installed, and what it has to say about the choice.
#[derive(Debug)]
pub struct Loaded {
    /// The data zones are read from.
    pub data: &'static TzData,
    /// Data offered and not used (older than the bundled release).
    pub warning: Option<String>,
}

impl Loaded {
    /// Logs the choice (`time-zone data`, and the warning if any): a controller's start.
    pub fn log(&self) -> &'static TzData {
        if let Some(warning) = &self.warning {
            tracing::warn!(tzdata = self.data.release(), "{warning}");
        }
        tracing::info!(
            tzdata = self.data.release(),
            source = %self.data.source(),
            zones = self.data.len(),
            "time-zone data"
        );
        self.data
    }

    /// Prints the warning, if any, on stderr (`<program>: warning: ...`): `plan`, which logs
    /// nothing, must still not use older data in silence.
    pub fn warn(&self, program: &str) -> &'static TzData {
        if let Some(warning) = &self.warning {
            eprintln!("{program}: warning: {warning}");
        }
        self.data
    }
}

#[cfg(test)]
#[path = "tz_tests.rs"]
mod tests;
