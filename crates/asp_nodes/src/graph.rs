//! The whole node graph in one process: every node (the sim node too, when given a
//! simulation) started on one [`Transport`] — the in-process bus for tests and `asp run`,
//! or DDS, where each node is a participant of its own and reachable by any other ROS 2
//! program. The same node code as the binaries, so what runs here runs on a robot.

use asp_config::LoadedConfig;
use asp_ros::Transport;
use asp_sim::SimRobot;
use tracing::info;

use crate::NodeError;
use crate::agent::{AgentNode, agent_node};
use crate::nodes::{
    AffordanceNode, GoToNode, NodeOptions, ObjectMapNode, SkillExecutorNode, VerifierNode,
    affordance_node, go_to_node, object_map_node, skill_executor_node, verifier_node,
};
use crate::sim::{SimNode, start_sim_node};

/// Every running node; dropping it stops them all. Fields drop in order: the agent
/// first, the sim node (the robot the others drive) last.
#[derive(Debug)]
pub struct Graph {
    pub agent: AgentNode,
    pub go_to: GoToNode,
    pub skill_executor: SkillExecutorNode,
    pub affordance: AffordanceNode,
    pub object_map: ObjectMapNode,
    pub verifier: VerifierNode,
    pub sim: Option<SimNode>,
}

/// Starts the product nodes on `transport` — and first the sim node over `sim`, when
/// given (without it the robot's own MoveIt, Nav2 and cameras must be on the transport).
pub async fn start_graph(
    cfg: &LoadedConfig,
    transport: &Transport,
    sim: Option<SimRobot>,
    options: &NodeOptions,
) -> Result<Graph, NodeError> {
    let sim = match sim {
        Some(s) => {
            let node = transport.node("sim_node")?;
            Some(start_sim_node(cfg, &node, s).await?)
        }
        None => None,
    };
    // the nodes ask the simulation's VLM as they would a robot's model server
    let cfg =
        &asp_system::standin::pointed_at(cfg, sim.as_ref().and_then(|s| s.vlm_standin.as_ref()));
    let verifier = verifier_node(cfg, transport, options).await?;
    let object_map = object_map_node(cfg, transport).await?;
    let affordance = affordance_node(cfg, transport, options).await?;
    let skill_executor = skill_executor_node(cfg, transport).await?;
    let go_to = go_to_node(cfg, transport).await?;
    let agent = agent_node(cfg, transport).await?;
    info!(
        transport = if transport.is_dds() {
            "dds"
        } else {
            "in_process"
        },
        sim = sim.is_some(),
        "node graph running"
    );
    Ok(Graph {
        agent,
        go_to,
        skill_executor,
        affordance,
        object_map,
        verifier,
        sim,
    })
}
