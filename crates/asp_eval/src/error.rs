//! Errors of the evaluation crate. Every message names the file, the entry and the
//! problem (or the scenario and run of an episode that could not be run).

use std::path::PathBuf;

/// Everything that can stop an evaluation before or while it runs.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    #[error("{}: cannot read: {message}", file.display())]
    Io { file: PathBuf, message: String },
    /// A suite file that does not parse or does not make sense.
    #[error("{}: {entry}: {problem}", file.display())]
    Suite {
        file: PathBuf,
        /// Where in the file, e.g. `scenarios[2]` or `parameters.agent_node.mobile`.
        entry: String,
        problem: String,
    },
    /// `--suite NAME` that names no suite file.
    #[error("unknown suite {name:?}: no file {}; known suites: {}", looked_in.display(), if known.is_empty() { "none".to_owned() } else { known.join(", ") })]
    UnknownSuite {
        name: String,
        looked_in: PathBuf,
        known: Vec<String>,
    },
    /// A scenario file that does not load.
    #[error("{0}")]
    Scenario(#[from] asp_sim::SimError),
    /// The configuration with the suite's parameters does not load.
    #[error("{context}: {source}")]
    Config {
        context: String,
        #[source]
        source: Box<asp_config::ConfigError>,
    },
    /// The system under test could not be started for an episode.
    #[error("scenario {scenario} (run {run}): cannot start the system: {message}")]
    Start {
        scenario: String,
        run: u32,
        message: String,
    },
    /// A results file that cannot be used for a replay.
    #[error("results {}: {problem}", file.display())]
    Results { file: PathBuf, problem: String },
    /// An image or report that could not be written.
    #[error("report: {0}")]
    Report(String),
}

impl EvalError {
    pub(crate) fn suite(
        file: impl Into<PathBuf>,
        entry: impl Into<String>,
        problem: impl Into<String>,
    ) -> Self {
        EvalError::Suite {
            file: file.into(),
            entry: entry.into(),
            problem: problem.into(),
        }
    }
}
