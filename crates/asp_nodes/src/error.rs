//! The crate's error type: what stops a node from starting.

/// A node could not start; the message names the part.
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    #[error("ROS: {0}")]
    Ros(#[from] asp_ros::RosError),
    #[error("{0}")]
    System(#[from] asp_system::SystemError),
    #[error("{0}")]
    Service(#[from] asp_system::ServiceError),
    #[error("perception models: {0}")]
    Perception(#[from] asp_perception::PerceptionError),
    #[error("skill executor: {0}")]
    Skills(#[from] asp_skills::SkillError),
    #[error("agent: {0}")]
    Agent(#[from] asp_agent::AgentError),
    #[error("configuration: {0}")]
    Config(#[from] asp_config::ConfigError),
    #[error("command line: {0}")]
    Args(String),
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{0}")]
    Launch(String),
    #[error("parameters: {0}")]
    Parameters(String),
}
