//! [`NodeGraph`]: the system under test as the ROS node graph — the same node code as
//! `asp launch` (object_map_node, affordance_node, verifier_node, skill_executor_node,
//! go_to_node, agent_node and the sim node), each a node of its own on an in-process ROS
//! bus, so every request between them crosses the ROS interfaces and their adapters.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use asp_agent::{Agent, GoalReport};
use asp_config::LoadedConfig;
use asp_core::robot::CancellationToken;
use asp_nodes::nodes::NodeOptions;
use asp_ros::{Transport, TransportSettings};
use asp_sim::SimRobot;
use asp_simulation::{SimGraph, start_sim_graph};
use asp_system::map::MapService;
use asp_system::ports::{MapSnapshot, ObjectMapPort};
use asp_system::{Journal, JournalEntry};
use async_trait::async_trait;

use crate::runner::{Launcher, RunningSystem};

/// Starts the node graph on a fresh in-process bus per episode.
#[derive(Debug, Clone)]
pub struct NodeGraph {
    pub options: NodeOptions,
    /// Longest a call between nodes may take (a map build or a whole skill is one call).
    pub call_timeout: Duration,
}

impl Default for NodeGraph {
    /// Without the affordance memory, so episodes do not depend on earlier ones; a fixed
    /// verifier instance, so step ids (and traces) repeat from run to run.
    fn default() -> Self {
        Self {
            options: NodeOptions {
                memory: false,
                verifier_instance: Some(1),
            },
            call_timeout: Duration::from_secs(900),
        }
    }
}

struct RunningGraph {
    agent: Arc<Agent>,
    journal: Journal,
    map: Arc<MapService>,
    // the running nodes (kept alive; only the web stand-in's counters are read: a Mutex
    // makes them Sync), then the bus they talk over, dropped after them
    graph: Mutex<SimGraph>,
    _transport: Transport,
}

#[async_trait]
impl RunningSystem for RunningGraph {
    /// The goal goes to agent_node's agent, which drives the other nodes over the bus
    /// (what `/asp/execute` does, with the full report kept for judging).
    async fn run_goal(&self, goal_id: &str, goal: &str, cancel: CancellationToken) -> GoalReport {
        self.agent.run_goal(goal_id, goal, cancel).await
    }

    fn journal(&self) -> Vec<JournalEntry> {
        self.journal.entries()
    }

    async fn map(&self) -> MapSnapshot {
        self.map.snapshot().await
    }

    fn web_requests(&self) -> u32 {
        let graph = self.graph.lock().unwrap_or_else(|e| e.into_inner());
        graph
            .sim
            .web_standin
            .as_ref()
            .map_or(0, crate::runner::web_requests)
    }
}

#[async_trait]
impl Launcher for NodeGraph {
    async fn launch(
        &self,
        cfg: &LoadedConfig,
        sim: SimRobot,
    ) -> Result<Box<dyn RunningSystem>, String> {
        let transport = Transport::in_process_with(TransportSettings {
            call_timeout: self.call_timeout,
            ..TransportSettings::default()
        });
        let graph = start_sim_graph(cfg, &transport, sim, &self.options)
            .await
            .map_err(|e| format!("the node graph did not start: {e}"))?;
        Ok(Box::new(RunningGraph {
            agent: graph.product.agent.agent.clone(),
            journal: graph.product.agent.journal.clone(),
            map: graph.product.object_map.service.clone(),
            graph: Mutex::new(graph),
            _transport: transport,
        }))
    }
}
