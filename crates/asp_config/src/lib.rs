//! Typed configuration for every ASP node.
//!
//! Files use the ROS 2 parameter-file layout, so the same file works with `ros2 launch`:
//!
//! ```yaml
//! agent_node:
//!   ros__parameters:
//!     llm:
//!       backend: openai
//! /**:                      # parameters every node shares
//!   ros__parameters:
//!     safety:
//!       max_base_speed: 0.3
//! ```
//!
//! Precedence: built-in defaults < files (in the order given; a folder's files in name
//! order) < `key=value` overrides. An unknown key, a value of the wrong type or a value
//! out of range is an error that names the file, the key and the value.

mod error;
mod loader;
pub mod sections;

use std::path::{Path, PathBuf};

use garde::Validate;
use serde::{Deserialize, Serialize};

pub use error::ConfigError;
pub use loader::ConfigLoader;
pub use sections::affordance::AffordanceConfig;
pub use sections::agent::AgentConfig;
pub use sections::common::CommonConfig;
pub use sections::go_to::GoToConfig;
pub use sections::perception::ObjectMapConfig;
pub use sections::sim::SimConfig;
pub use sections::skills::SkillExecutorConfig;
pub use sections::verifier::VerifierConfig;

/// The parameters of every node, as one value. Field names are the node names of the
/// parameter files; `common` is the `/**` section.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Validate)]
#[serde(default, deny_unknown_fields)]
pub struct AspConfig {
    #[serde(rename = "/**")]
    #[garde(dive)]
    pub common: CommonConfig,
    #[garde(dive)]
    pub object_map_node: ObjectMapConfig,
    #[garde(dive)]
    pub affordance_node: AffordanceConfig,
    #[garde(dive)]
    pub agent_node: AgentConfig,
    #[garde(dive)]
    pub verifier_node: VerifierConfig,
    #[garde(dive)]
    pub skill_executor_node: SkillExecutorConfig,
    #[garde(dive)]
    pub go_to_node: GoToConfig,
    #[garde(dive)]
    pub sim_node: SimConfig,
}

impl AspConfig {
    /// The node names a parameter file may use at its top level (plus `/**`).
    pub const NODE_NAMES: [&'static str; 7] = [
        "object_map_node",
        "affordance_node",
        "agent_node",
        "verifier_node",
        "skill_executor_node",
        "go_to_node",
        "sim_node",
    ];

    /// Defaults overlaid with every `*.yaml` file directly inside `dir` (sub-folders such
    /// as `worlds/` hold other kinds of files and are not read).
    pub fn load_dir(dir: impl AsRef<Path>) -> Result<LoadedConfig, ConfigError> {
        ConfigLoader::new().dir(dir)?.load()
    }
}

/// A validated configuration and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedConfig {
    pub config: AspConfig,
    /// The folder the parameter files were read from (worlds and scenarios are resolved
    /// against it).
    pub config_dir: PathBuf,
    /// The project root, the parent of `config_dir` (model and data paths are resolved
    /// against it).
    pub root: PathBuf,
    /// Files read, in order.
    pub sources: Vec<PathBuf>,
}

impl LoadedConfig {
    /// `path` if absolute, else relative to the config folder.
    pub fn config_path(&self, path: impl AsRef<Path>) -> PathBuf {
        join(&self.config_dir, path.as_ref())
    }

    /// A model file: absolute, or relative to `paths.models_dir` (itself relative to the
    /// project root).
    pub fn model_path(&self, path: impl AsRef<Path>) -> PathBuf {
        join(
            &join(&self.root, &self.config.common.paths.models_dir),
            path.as_ref(),
        )
    }

    /// A data file (databases, logs): absolute, or relative to the data folder
    /// ([`sections::common::PathsConfig::data_dir`]).
    pub fn data_path(&self, path: impl AsRef<Path>) -> PathBuf {
        join(
            &self.config.common.paths.data_dir(&self.root),
            path.as_ref(),
        )
    }
}

fn join(base: &Path, path: &Path) -> PathBuf {
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        base.join(path)
    }
}
