//! What every controller's offline `plan` subcommand shares: the `--output` flag, the errors of
//! reading manifests ([`crate::cli::manifest`] reads them), instants shown in local zones, and the exit.

use std::fmt::Display;
use std::process::ExitCode;

use jiff::Timestamp;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Resource;
use serde::Serialize;
use serde::de::DeserializeOwned;

pub use crate::cli::manifest::ManifestError;
use crate::cli::manifest::{self, Input, Schema};
use crate::cli::tz::{TzArgs, TzError};

/// `--output` of `plan`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OutputFormat {
    /// A few lines for humans.
    #[default]
    Text,
    /// JSON: one answer as one object on one line; several as one `List` of them.
    Json,
    /// YAML: one answer as one document; several as one `List` of them.
    Yaml,
}

impl OutputFormat {
    /// `value` as JSON (one line) or YAML, with a trailing newline; `None` for text.
    pub fn structured<T: Serialize>(self, value: &T) -> Option<String> {
        match self {
            Self::Text => None,
            Self::Json => Some(json_line(value)),
            Self::Yaml => Some(yaml_document(value)),
        }
    }
}

/// The `--output` (`-o`) flag of `plan`, flattened into each controller's `PlanArgs`.
#[derive(clap::Args, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Output {
    /// Output format. json and yaml print one answer as one object, several as a `List`.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = OutputFormat::Text)]
    pub format: OutputFormat,
}

impl Output {
    /// `--output json`.
    pub const JSON: Self = Self {
        format: OutputFormat::Json,
    };
    /// `--output text`.
    pub const TEXT: Self = Self {
        format: OutputFormat::Text,
    };
    /// `--output yaml`.
    pub const YAML: Self = Self {
        format: OutputFormat::Yaml,
    };

    /// `value` alone as asked: one line of JSON, a YAML document, or what `text` makes of it.
    pub fn render<T: Serialize>(self, value: &T, text: impl FnOnce(&T) -> String) -> String {
        self.format.structured(value).unwrap_or_else(|| text(value))
    }

    /// An empty set of answers, to be [`Answers::push`]ed and printed by [`Answers::finish`].
    pub fn answers<T: Serialize>(self) -> Answers<T> {
        Answers {
            format: self.format,
            text: String::new(),
            items: Vec::new(),
        }
    }
}

/// The answers of one `plan` (one per object), printed together: the texts one after another,
/// or, as JSON or YAML, the one answer as an object and several as one `List`, which `jq`,
/// `yq` and `kubectl` take as a whole (not one line per object, as JSON was before). Each
/// answer keeps its fields in the order its type declares them.
#[derive(Debug)]
pub struct Answers<T> {
    format: OutputFormat,
    text: String,
    items: Vec<T>,
}

/// Several answers as one object: a `List`, as kubectl prints several objects.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct List<'a, T> {
    api_version: &'static str,
    kind: &'static str,
    items: &'a [T],
}

impl<T: Serialize> Answers<T> {
    /// Adds the answer `value`, whose text `text` makes (called only for text output).
    pub fn push(&mut self, value: T, text: impl FnOnce(&T) -> String) {
        match self.format {
            OutputFormat::Text => self.text.push_str(&text(&value)),
            OutputFormat::Json | OutputFormat::Yaml => self.items.push(value),
        }
    }

    /// What to print.
    pub fn finish(self) -> String {
        match self.items.as_slice() {
            [] => self.text,
            [one] => self.format.structured(one).unwrap_or_default(),
            items => {
                let list = List {
                    api_version: "v1",
                    kind: "List",
                    items,
                };
                self.format.structured(&list).unwrap_or_default()
            }
        }
    }
}

/// The flags of a `plan` that reads objects naming time zones: `--file`, `--at`, `--lenient`,
/// `--tz-data`, `--output`. Flattened into the controller's `PlanArgs`.
#[derive(clap::Args, Debug, Clone, PartialEq, Eq)]
pub struct ZonedArgs {
    /// `--file`, `--at`, `--lenient`.
    #[command(flatten)]
    pub input: Input,
    /// `--tz-data`.
    #[command(flatten)]
    pub tz: TzArgs,
    /// `--output`.
    #[command(flatten)]
    pub output: Output,
    /// HolidayCalendars the objects' windows name in `excludeCalendars` (a file as `--file`
    /// reads: one document, several, or a `List`, such as `kubectl get holidaycalendars -o
    /// yaml` prints). Without it, a window naming a calendar is invalid, as it is in a cluster
    /// without that calendar.
    #[arg(long = "calendars", value_name = "FILE")]
    pub calendars: Option<std::path::PathBuf>,
}

impl ZonedArgs {
    /// The HolidayCalendars of `--calendars` (none without it), held to their CRD's schema as
    /// `--file` is (`--lenient` applies to both); what is wrong is said as `program`.
    ///
    /// # Errors
    /// The file cannot be read, or is not HolidayCalendars.
    pub fn calendars(&self, program: &str) -> Result<ebb_schedule::Calendars, ManifestError> {
        let mut calendars = ebb_schedule::Calendars::new();
        let Some(file) = &self.calendars else {
            return Ok(calendars);
        };
        let input = Input {
            file: file.clone(),
            at: None,
            ..self.input.clone()
        };
        let schema = Schema::for_kind(ebb_crds::all_crds(), "HolidayCalendar");
        let read: Vec<ebb_crds::calendar::HolidayCalendar> =
            manifest::read(program, &input, &schema)?;
        for calendar in &read {
            calendars.insert(
                calendar.metadata.name.as_deref().unwrap_or_default(),
                &calendar.spec.dates,
            );
        }
        Ok(calendars)
    }

    /// What such a `plan` starts with: the zone data loaded (`--tz-data`, its warning said as
    /// `program`), the instant it decides at (`--at`, else `now`), and the objects of kind `K`
    /// of the input ([`crate::cli::manifest::read`]), held to the kind's CRD schema among `crds`.
    ///
    /// # Errors
    /// The zone data cannot be read, `--at` is not an instant, or the input cannot be read.
    pub fn read<K, E>(
        &self,
        program: &str,
        crds: Vec<CustomResourceDefinition>,
        now: Timestamp,
    ) -> Result<(Timestamp, Vec<K>), E>
    where
        K: Resource<DynamicType = ()> + DeserializeOwned,
        E: From<TzError> + From<ManifestError>,
    {
        let (at, read) = self.read_with::<K, E>(program, crds, now, &[])?;
        Ok((at, read.objects))
    }

    /// [`ZonedArgs::read`], keeping the objects of the kinds `also` names too (each held to its
    /// CRD's schema among `crds`; a kind without one, such as an HPA, takes every field), as
    /// JSON ([`manifest::parse_with`]).
    ///
    /// # Errors
    /// As [`ZonedArgs::read`].
    pub fn read_with<K, E>(
        &self,
        program: &str,
        crds: Vec<CustomResourceDefinition>,
        now: Timestamp,
        also: &[&str],
    ) -> Result<(Timestamp, manifest::Manifests<K>), E>
    where
        K: Resource<DynamicType = ()> + DeserializeOwned,
        E: From<TzError> + From<ManifestError>,
    {
        crate::cli::tz::load(&self.tz)?.warn(program);
        let at = self.input.at(now)?;
        let schema = Schema::for_kind(crds.clone(), &K::kind(&()));
        let also: Vec<(&str, Schema)> = also
            .iter()
            .map(|kind| (*kind, Schema::for_kind(crds.clone(), kind)))
            .collect();
        Ok((
            at,
            manifest::read_with(program, &self.input, &schema, &also)?,
        ))
    }

    /// The file read, as messages name it.
    pub fn path(&self) -> String {
        self.input.file.display().to_string()
    }
}

/// Why a `plan` failed, as its exit status tells a script or a pipeline ([`EXIT_STATUS`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// An object breaks a rule of its kind: a field its schema does not declare or of the wrong
    /// shape, a rule the controller holds it to, another kind under `--strict-kinds`. Exit 1.
    Invalid,
    /// The command line: a flag clap refuses, an `--at` that is not an instant, flags that
    /// contradict each other. Exit 2, clap's own status for usage errors.
    Usage,
    /// The input cannot be read: a missing file, text that is not YAML, no object of the kind
    /// in it, unusable `--tz-data`. Exit 3.
    Unreadable,
}

impl Failure {
    /// The exit status.
    pub const fn exit_code(self) -> u8 {
        match self {
            Self::Invalid => 1,
            Self::Usage => 2,
            Self::Unreadable => 3,
        }
    }
}

/// What every `plan --help` (and README) says of the exit status.
pub const EXIT_STATUS: &str = "Exit status: 0 every object planned; 1 an object is invalid \
(a field, a rule, another kind with --strict-kinds); 2 usage (a flag, --at); 3 the input cannot \
be read (no such file, not YAML, no object of the kind, --tz-data).";

/// An error of a `plan`, and which [`Failure`] (exit status) it is.
pub trait PlanFailure: Display {
    /// Which failure this is.
    fn failure(&self) -> Failure;
}

/// Why a `plan` over objects naming time zones ([`ZonedArgs`]) cannot answer: its input, the
/// zone data, or an object breaking a rule (`I`, which names the field).
#[derive(Debug, thiserror::Error)]
pub enum ZonedPlanError<I: std::fmt::Debug + Display> {
    /// The file cannot be read, is not of the kind, or `--at` is not an instant.
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    /// `--tz-data` cannot be used.
    #[error(transparent)]
    TzData(#[from] TzError),
    /// An object breaks a rule.
    #[error("{path}: {invalid}")]
    Invalid {
        /// The file.
        path: String,
        /// The field and the rule.
        invalid: I,
    },
}

impl<I: std::fmt::Debug + Display> PlanFailure for ZonedPlanError<I> {
    fn failure(&self) -> Failure {
        match self {
            Self::Manifest(error) => error.failure(),
            Self::TzData(error) => error.failure(),
            Self::Invalid { .. } => Failure::Invalid,
        }
    }
}

impl PlanFailure for ManifestError {
    fn failure(&self) -> Failure {
        match self {
            Self::Read { .. } | Self::NotYaml { .. } | Self::Nothing { .. } => Failure::Unreadable,
            Self::At { .. } => Failure::Usage,
            Self::Parse { .. } => Failure::Invalid,
        }
    }
}

impl PlanFailure for TzError {
    fn failure(&self) -> Failure {
        Failure::Unreadable
    }
}

/// `t` on the wall clocks of `zones`, for text output beside the UTC instant:
/// ` (2026-11-26T08:00:00-07:00 America/Vancouver)`; empty for no zones.
pub fn local_times(t: jiff::Timestamp, zones: &[ebb_schedule::Zone]) -> String {
    let shown: Vec<String> = zones
        .iter()
        .filter_map(|zone| Some(format!("{} {}", zone.local_rfc3339(t)?, zone.name())))
        .collect();
    if shown.is_empty() {
        String::new()
    } else {
        format!(" ({})", shown.join(", "))
    }
}

/// The zones `names` name (each once, UTC left out: instants are shown in UTC anyway), in which
/// text output shows instants ([`local_times`]); names that are not zones are left out.
pub fn zones_named<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<ebb_schedule::Zone> {
    let mut names: Vec<&str> = names.into_iter().filter(|name| *name != "UTC").collect();
    names.sort_unstable();
    names.dedup();
    names
        .into_iter()
        .filter_map(|name| name.parse().ok())
        .collect()
}

/// `value` as a YAML document (ending in a newline).
pub fn yaml_document<T: Serialize>(value: &T) -> String {
    // As `json_line`: plan outputs serialize.
    let mut text = serde_saphyr::to_string(value).unwrap_or_default();
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text
}

/// `value` as one line of JSON and a newline.
pub fn json_line<T: Serialize>(value: &T) -> String {
    // Plan outputs are structs of strings, numbers and booleans: serializing cannot fail.
    let mut line = serde_json::to_string(value).unwrap_or_default();
    line.push('\n');
    line
}

/// The end of `main` for `plan`: prints the output, or the error on stderr and exits with its
/// [`Failure`]'s status.
pub fn finish_plan(program: &str, result: Result<String, impl PlanFailure>) -> ExitCode {
    let code = result.as_ref().err().map(|e| e.failure().exit_code());
    let exit = finish(program, result);
    code.map_or(exit, ExitCode::from)
}

/// The end of `main` for a subcommand: prints the output, or the error on stderr and exits
/// non-zero.
pub fn finish(program: &str, result: Result<String, impl Display>) -> ExitCode {
    match result {
        Ok(output) => {
            print!("{output}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("{program}: {error:#}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn json_is_one_line() {
        assert_eq!(json_line(&serde_json::json!({"a": 1})), "{\"a\":1}\n");
    }

    #[test]
    fn local_times_are_each_zone_s_wall_clock() {
        let t = "2026-11-26T15:00:00Z".parse().unwrap();
        let zones: Vec<ebb_schedule::Zone> = ["America/Vancouver", "Europe/Zurich"]
            .iter()
            .map(|z| z.parse().unwrap())
            .collect();
        assert_eq!(
            local_times(t, &zones),
            " (2026-11-26T08:00:00-07:00 America/Vancouver, 2026-11-26T16:00:00+01:00 Europe/Zurich)"
        );
        assert_eq!(local_times(t, &[]), "");
    }
}
