//! Errors of the simulator crate. Loading errors name the file, the entry and the problem.

use std::path::PathBuf;

/// Everything that can go wrong loading or driving the simulator.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SimError {
    #[error("{}: cannot read: {message}", file.display())]
    Io { file: PathBuf, message: String },
    /// A world, scenario or robot file that does not parse or does not make sense.
    #[error("{}: {entry}: {problem}", file.display())]
    Invalid {
        file: PathBuf,
        /// Where in the file, e.g. `objects[3] (mug).parts[0] (mug handle).shapes[0]`.
        entry: String,
        problem: String,
    },
    #[error("unknown object {0:?}")]
    UnknownObject(String),
    #[error("object {object:?} has no {what} {name:?}")]
    UnknownMember {
        object: String,
        what: &'static str,
        name: String,
    },
    /// A predicate whose values do not make sense (the message names the field).
    #[error("{0}")]
    BadPredicate(String),
    #[error("robot model: {0}")]
    Robot(String),
}

impl SimError {
    pub(crate) fn invalid(
        file: impl Into<PathBuf>,
        entry: impl Into<String>,
        problem: impl Into<String>,
    ) -> Self {
        SimError::Invalid {
            file: file.into(),
            entry: entry.into(),
            problem: problem.into(),
        }
    }
}
