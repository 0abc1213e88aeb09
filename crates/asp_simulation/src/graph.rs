//! The product node graph with a simulation in front of it: the sim node (and its VLM
//! stand-in) first, then the product nodes pointed at the stand-in as they would be at
//! a robot's model server — the same node code as on a robot.

use asp_config::LoadedConfig;
use asp_nodes::graph::{Graph, start_graph};
use asp_nodes::nodes::NodeOptions;
use asp_ros::Transport;
use asp_sim::SimRobot;

use crate::SimulationError;
use crate::node::{SimNode, start_sim_node};
use crate::standin::{pointed_at, searching_on};

/// The running product graph and the sim node it drives. Fields drop in order: the
/// product nodes first, the sim node (the robot they drive) last.
#[derive(Debug)]
pub struct SimGraph {
    pub product: Graph,
    pub sim: SimNode,
}

/// Starts the sim node over `sim` on `transport`, then the product nodes.
pub async fn start_sim_graph(
    cfg: &LoadedConfig,
    transport: &Transport,
    sim: SimRobot,
    options: &NodeOptions,
) -> Result<SimGraph, SimulationError> {
    let node = transport.node("sim_node")?;
    let sim = start_sim_node(cfg, &node, sim).await?;
    let cfg = searching_on(
        pointed_at(
            &crate::elevator::with_site_elevator(cfg, &sim.sim),
            sim.vlm_standin.as_ref(),
        ),
        sim.web_standin.as_ref(),
    );
    let product = start_graph(&cfg, transport, options).await?;
    Ok(SimGraph { product, sim })
}
