use std::fmt;
use std::path::PathBuf;

/// Where a configuration value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    File(PathBuf),
    Override(String),
    Default,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::File(p) => write!(f, "{}", p.display()),
            Origin::Override(spec) => write!(f, "override `{spec}`"),
            Origin::Default => f.write_str("built-in defaults"),
        }
    }
}

/// A configuration problem. Every variant names where it is (file or override), the key
/// and, where there is one, the offending value.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfigError {
    #[error("{}: cannot read: {message}", file.display())]
    Io { file: PathBuf, message: String },
    #[error("{}: not valid YAML: {message}", file.display())]
    Syntax { file: PathBuf, message: String },
    #[error("{origin}: {key}: {problem}")]
    Layout {
        origin: Origin,
        key: String,
        problem: String,
    },
    #[error("{origin}: unknown key `{key}` (value {value}); {expected}")]
    UnknownKey {
        origin: Origin,
        key: String,
        value: String,
        expected: String,
    },
    #[error("{origin}: `{key}` = {value}: {problem}")]
    InvalidValue {
        origin: Origin,
        key: String,
        value: String,
        problem: String,
    },
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
    Several(Vec<ConfigError>),
}
