//! What every controller's offline `plan` subcommand shares: the `--output` flag, reading one
//! custom resource from a YAML file with errors that name the file and the field, and the exit.

use std::fmt::Display;
use std::path::Path;
use std::process::ExitCode;

use kube::Resource;
use serde::Serialize;
use serde::de::DeserializeOwned;

/// `--output` of `plan`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OutputFormat {
    /// A few lines for humans.
    #[default]
    Text,
    /// One JSON object on one line.
    Json,
}

/// The `--output` flag of `plan`, flattened into each controller's `PlanArgs`.
#[derive(clap::Args, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Output {
    /// Output format.
    #[arg(long = "output", value_enum, default_value_t = OutputFormat::Text)]
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

    /// `value` as asked: one line of JSON, or what `text` makes of it.
    pub fn render<T: Serialize>(self, value: &T, text: impl FnOnce(&T) -> String) -> String {
        match self.format {
            OutputFormat::Json => json_line(value),
            OutputFormat::Text => text(value),
        }
    }
}

/// Why a manifest file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// The file cannot be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not one valid object of the expected kind.
    #[error("{path}: {message}")]
    Parse {
        /// The file.
        path: String,
        /// What is wrong, with the field (and line) where known.
        message: String,
    },
}

/// Reads `path` as one object of kind `K`: a file holding another kind is an error naming both,
/// and a field of the wrong shape is an error naming the field and line.
pub fn read_manifest<K>(path: &Path) -> Result<K, ManifestError>
where
    K: Resource<DynamicType = ()> + DeserializeOwned,
{
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| ManifestError::Read {
        path: shown.clone(),
        source,
    })?;
    parse_manifest(&shown, &text)
}

/// Parses `text` (read from `source`, named in errors) as one object of kind `K`.
pub fn parse_manifest<K>(source: &str, text: &str) -> Result<K, ManifestError>
where
    K: Resource<DynamicType = ()> + DeserializeOwned,
{
    let parse_error = |message: String| ManifestError::Parse {
        path: source.to_owned(),
        message,
    };
    let value: serde_json::Value =
        serde_norway::from_str(text).map_err(|e| parse_error(format!("not valid YAML: {e}")))?;
    let expected = K::kind(&());
    let found = value.get("kind").and_then(|k| k.as_str()).unwrap_or("");
    if found != expected {
        return Err(parse_error(format!(
            "kind: expected {expected}, got {found:?}"
        )));
    }
    // Parse the text again (not the Value) so errors carry serde_norway's field path and line.
    serde_norway::from_str(text).map_err(|e| parse_error(e.to_string()))
}

/// `value` as one line of JSON and a newline.
pub fn json_line<T: Serialize>(value: &T) -> String {
    // Plan outputs are structs of strings, numbers and booleans: serializing cannot fail.
    let mut line = serde_json::to_string(value).unwrap_or_default();
    line.push('\n');
    line
}

/// The end of `main` for `plan`: prints the output, or the error on stderr and exits non-zero.
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
    use k8s_openapi::api::core::v1::ConfigMap;

    fn file(text: &str) -> tempfile_path::TempFile {
        tempfile_path::TempFile::new(text)
    }

    /// A file in the target's temp dir, removed on drop (no extra dependency for one test).
    mod tempfile_path {
        pub struct TempFile(pub std::path::PathBuf);
        impl TempFile {
            pub fn new(text: &str) -> Self {
                use std::sync::atomic::{AtomicU32, Ordering};
                static N: AtomicU32 = AtomicU32::new(0);
                let path = std::env::temp_dir().join(format!(
                    "ebb-plan-{}-{}.yaml",
                    std::process::id(),
                    N.fetch_add(1, Ordering::Relaxed)
                ));
                std::fs::write(&path, text).unwrap();
                Self(path)
            }
        }
        impl Drop for TempFile {
            fn drop(&mut self) {
                let _ = std::fs::remove_file(&self.0);
            }
        }
    }

    #[test]
    fn reads_one_object_of_the_expected_kind() {
        let f = file("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {k: v}\n");
        let cm: ConfigMap = read_manifest(&f.0).unwrap();
        assert_eq!(cm.metadata.name.as_deref(), Some("a"));
    }

    #[test]
    fn errors_name_the_file_and_what_is_wrong() {
        let f = file("apiVersion: v1\nkind: Secret\nmetadata: {name: a}\n");
        let err = read_manifest::<ConfigMap>(&f.0).unwrap_err().to_string();
        assert!(
            err.contains("kind: expected ConfigMap, got \"Secret\""),
            "{err}"
        );
        assert!(err.contains(&f.0.display().to_string()), "{err}");

        let f = file("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: [1]\n");
        let err = read_manifest::<ConfigMap>(&f.0).unwrap_err().to_string();
        assert!(err.contains("data"), "{err}");

        let err = read_manifest::<ConfigMap>(Path::new("/nonexistent/x.yaml")).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("cannot read /nonexistent/x.yaml")
        );
    }

    #[test]
    fn json_is_one_line() {
        assert_eq!(json_line(&serde_json::json!({"a": 1})), "{\"a\":1}\n");
    }
}
