//! The whole product node graph in one process: every node started on one
//! [`Transport`] — the in-process bus for tests and `asp run`, or DDS, where each node is
//! a participant of its own and reachable by any other ROS 2 program. The same node code
//! as the binaries, so what runs here runs on a robot (`asp_simulation` puts a sim node
//! in front of it).

use asp_config::LoadedConfig;
use asp_ros::Transport;
use tracing::info;

use crate::NodeError;
use crate::agent::{AgentNode, agent_node};
use crate::nodes::{
    AffordanceNode, GoToNode, NodeOptions, ObjectMapNode, SkillExecutorNode, VerifierNode,
    affordance_node, go_to_node, object_map_node, skill_executor_node, verifier_node,
};

/// Every running node; dropping it stops them all. Fields drop in order: the agent
/// first.
#[derive(Debug)]
pub struct Graph {
    pub agent: AgentNode,
    pub go_to: GoToNode,
    pub skill_executor: SkillExecutorNode,
    pub affordance: AffordanceNode,
    pub object_map: ObjectMapNode,
    pub verifier: VerifierNode,
}

/// Starts the product nodes on `transport`; the robot's MoveIt, Nav2, cameras and model
/// server must be reachable on it.
pub async fn start_graph(
    cfg: &LoadedConfig,
    transport: &Transport,
    options: &NodeOptions,
) -> Result<Graph, NodeError> {
    // together, as `asp launch` starts them: the nodes that move listen for a latched
    // e-stop at the same time
    let (verifier, object_map, affordance, skill_executor, go_to, agent) = tokio::try_join!(
        verifier_node(cfg, transport, options),
        object_map_node(cfg, transport),
        affordance_node(cfg, transport, options),
        skill_executor_node(cfg, transport),
        go_to_node(cfg, transport),
        agent_node(cfg, transport),
    )?;
    info!(
        transport = if transport.is_dds() {
            "dds"
        } else {
            "in_process"
        },
        "node graph running"
    );
    Ok(Graph {
        agent,
        go_to,
        skill_executor,
        affordance,
        object_map,
        verifier,
    })
}
