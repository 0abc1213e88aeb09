//! What stops a simulation from starting.

/// A simulation (its simulator, node, stand-ins or the product on top) could not start;
/// the message names the part.
#[derive(Debug, thiserror::Error)]
pub enum SimulationError {
    #[error("simulator: {0}")]
    Sim(#[from] asp_sim::SimError),
    #[error("robot model: {0}")]
    Model(String),
    #[error("sim_node.vlm_standin: {0}")]
    StandIn(String),
    #[error("{0}")]
    System(#[from] asp_system::SystemError),
    #[error("{0}")]
    Node(#[from] asp_nodes::NodeError),
    #[error("ROS: {0}")]
    Ros(#[from] asp_ros::RosError),
    #[error("perception models: {0}")]
    Perception(#[from] asp_perception::PerceptionError),
    #[error("{0}")]
    Service(#[from] asp_system::ServiceError),
    #[error("skill executor: {0}")]
    Skills(#[from] asp_skills::SkillError),
    #[error("agent: {0}")]
    Agent(#[from] asp_agent::AgentError),
    #[error("tour: {0}")]
    Tour(String),
}
