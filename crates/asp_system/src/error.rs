//! What stops a node's service from being built.

/// Building a service or the agent failed; the message names the part.
#[derive(Debug, thiserror::Error)]
pub enum SystemError {
    #[error("robot model: {0}")]
    Model(String),
    #[error("perception models: {0}")]
    Perception(#[from] asp_perception::PerceptionError),
    #[error("{0}")]
    Service(#[from] crate::ports::ServiceError),
    #[error("skill executor: {0}")]
    Skills(#[from] asp_skills::SkillError),
    #[error("agent: {0}")]
    Agent(#[from] asp_agent::AgentError),
    #[error("configuration: {0}")]
    Config(String),
}
