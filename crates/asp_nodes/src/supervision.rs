//! Noticing a dead node and holding the robot safe when one dies (`common.supervision`).
//!
//! Every node publishes a heartbeat ([`asp_ros::liveliness::Heartbeat`], started with
//! its standard services). agent_node watches the nodes its goals need
//! ([`required_nodes`]); when one of them is lost it ends the running goal with a result
//! naming that node and calls [`RobotHold::hold`]: every goal on the robot's motion
//! actions (MoveIt's MoveGroup, Nav2's NavigateToPose) is cancelled through the
//! actions' standard `cancel_goal` service, so that a motion started by a node that
//! died does not run on unsupervised. The other way round, skill_executor_node and
//! go_to_node watch agent_node ([`ClientWatch`]) and stop the work it sent them when it
//! dies.

use std::time::Duration;

use asp_config::LoadedConfig;
use asp_ros::Node;
use asp_ros::liveliness::{HeartbeatSettings, LivelinessMonitor};
use asp_ros::msg::action_msgs::{CancelGoal, CancelGoalRequest, GoalInfo};
use asp_ros::transport::Client;
use tokio::sync::watch;
use tracing::{info, warn};

use crate::{AbortOnDrop, NodeError};

/// The heartbeat settings of the configuration.
pub fn heartbeat_settings(cfg: &LoadedConfig) -> HeartbeatSettings {
    let s = &cfg.config.common.supervision;
    HeartbeatSettings {
        topic: s.heartbeat_topic.clone(),
        period: Duration::from_secs_f64(s.heartbeat_period_s),
        timeout: Duration::from_secs_f64(s.heartbeat_timeout_s),
    }
}

/// The nodes agent_node's goals need: the four ports' servers and the verifier behind
/// the skill executor; go_to_node only when the agent drives the base
/// (`agent_node.mobile`).
pub fn required_nodes(cfg: &LoadedConfig) -> Vec<String> {
    let mut out: Vec<String> = [
        "verifier_node",
        "object_map_node",
        "affordance_node",
        "skill_executor_node",
    ]
    .map(String::from)
    .to_vec();
    if cfg.config.agent_node.mobile {
        out.push("go_to_node".into());
    }
    out
}

/// Cancels every goal of the robot's motion actions.
pub struct RobotHold {
    cancels: Vec<Client<CancelGoal>>,
}

impl std::fmt::Debug for RobotHold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RobotHold")
            .field(
                "actions",
                &self.cancels.iter().map(Client::service).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl RobotHold {
    /// Clients of the `cancel_goal` services of the configured MoveGroup and
    /// NavigateToPose actions.
    pub fn new(node: &Node, cfg: &LoadedConfig) -> Result<Self, NodeError> {
        let c = &cfg.config;
        let mut cancels = Vec::new();
        for action in [
            &c.skill_executor_node.interfaces.move_group_action,
            &c.go_to_node.navigate_action,
        ] {
            cancels.push(node.client::<CancelGoal>(&format!("{action}/_action/cancel_goal"))?);
        }
        Ok(Self { cancels })
    }

    /// Cancels every goal of every motion action (a zero id and stamp: all goals);
    /// returns how many goals the servers said they are cancelling. A server not on the
    /// graph has nothing to cancel.
    pub async fn hold(&self, why: &str) -> usize {
        let mut cancelled = 0;
        for client in &self.cancels {
            if !client.is_ready() {
                continue;
            }
            let request = CancelGoalRequest {
                goal_info: GoalInfo::default(),
            };
            match client
                .call_with_timeout(request, Duration::from_secs(2))
                .await
            {
                Ok(r) => {
                    if !r.goals_canceling.is_empty() {
                        info!(
                            service = client.service(),
                            goals = r.goals_canceling.len(),
                            "robot held: motion cancelled ({why})"
                        );
                    }
                    cancelled += r.goals_canceling.len();
                }
                Err(e) => warn!(service = client.service(), "cannot hold the robot: {e}"),
            }
        }
        cancelled
    }
}

/// Follows the heartbeat of the node that sends this node its goals: the count of times
/// it was lost, for [`asp_ros::action::ActionServerOptions::client_lost`].
pub struct ClientWatch {
    lost: watch::Receiver<u64>,
    _monitor: LivelinessMonitor,
    _task: AbortOnDrop,
}

impl std::fmt::Debug for ClientWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientWatch")
            .field("lost", &*self.lost.borrow())
            .finish_non_exhaustive()
    }
}

impl ClientWatch {
    /// Watches node `client` from `node`.
    pub fn new(node: &Node, cfg: &LoadedConfig, client: &str) -> Result<Self, NodeError> {
        let monitor = LivelinessMonitor::new(node, &heartbeat_settings(cfg), &[client.to_owned()])?;
        let mut losses = monitor.losses();
        let (tx, lost) = watch::channel(0u64);
        let task = tokio::spawn(async move {
            while losses.next().await.is_some() {
                tx.send_modify(|n| *n += 1);
            }
        });
        Ok(Self {
            lost,
            _monitor: monitor,
            _task: AbortOnDrop(task),
        })
    }

    /// Changes each time the client is lost.
    pub fn lost(&self) -> watch::Receiver<u64> {
        self.lost.clone()
    }
}
