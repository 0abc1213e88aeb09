use std::path::PathBuf;

use asp_core::CoreError;
use asp_core::models::ModelError;

/// Errors of the perception crate; each names the file, key, topic or value at fault.
#[derive(Debug, thiserror::Error)]
pub enum PerceptionError {
    /// A model failed or rejected its input.
    #[error(transparent)]
    Model(#[from] ModelError),
    /// A geometry or image operation rejected its input.
    #[error(transparent)]
    Core(#[from] CoreError),
    /// A configured backend cannot be built.
    #[error("configuration {key}: {problem}")]
    Config { key: String, problem: String },
    /// A file could not be read.
    #[error("{}: {message}", path.display())]
    Io { path: PathBuf, message: String },
    /// A recording could not be replayed.
    #[error("replay of {}: {message}", path.display())]
    Replay { path: PathBuf, message: String },
    /// An object key or id that the map or the registry does not know.
    #[error("unknown object {0}")]
    UnknownObject(String),
    /// An object without points has no position or size.
    #[error("object {0} has no points")]
    EmptyObject(String),
}

impl PerceptionError {
    pub(crate) fn config(key: impl Into<String>, problem: impl Into<String>) -> Self {
        PerceptionError::Config {
            key: key.into(),
            problem: problem.into(),
        }
    }
}
