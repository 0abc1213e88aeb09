//! [`Gripper`] over `control_msgs/action/GripperCommand`, and GripperCommand served
//! from any [`Gripper`].

use std::sync::Arc;

use asp_config::sections::common::SafetyConfig;
use asp_core::robot::{CancellationToken, Gripper, GripperGoal, GripperOutcome, RobotError};
use async_trait::async_trait;

use super::ros_to_robot_error;
use crate::RosError;
use crate::action::{ActionClient, GoalContext, GoalHandler, GoalOutcome};
use crate::msg::TerminalState;
use crate::msg::control_msgs::{
    GripperCommand, GripperCommandAction, GripperCommandFeedback, GripperCommandGoal,
    GripperCommandResult,
};
use crate::transport::Node;

/// Checks a gripper goal against the typed limits.
pub fn check_gripper_goal(goal: &GripperGoal, safety: &SafetyConfig) -> Result<(), String> {
    if !(goal.position.is_finite() && goal.position >= 0.0) {
        return Err(format!(
            "gripper position {} must be a finger gap of at least 0 m",
            goal.position
        ));
    }
    if !(goal.max_effort.is_finite() && goal.max_effort > 0.0) {
        return Err(format!(
            "gripper max_effort {} must be a positive number of newtons",
            goal.max_effort
        ));
    }
    if f64::from(goal.max_effort) > safety.max_gripper_effort + 1e-9 {
        return Err(format!(
            "gripper max_effort {} N exceeds safety.max_gripper_effort {} N",
            goal.max_effort, safety.max_gripper_effort
        ));
    }
    Ok(())
}

fn outcome(r: &GripperCommandResult) -> GripperOutcome {
    GripperOutcome {
        position: r.position as f32,
        effort: r.effort as f32,
        stalled: r.stalled,
        reached_goal: r.reached_goal,
    }
}

/// [`Gripper`] through a GripperCommand action server (ros2_control's gripper
/// controller, or the sim node).
#[derive(Debug, Clone)]
pub struct GripperCommandClient {
    client: ActionClient<GripperCommandAction>,
    safety: SafetyConfig,
}

impl GripperCommandClient {
    pub fn new(node: &Node, action: &str, safety: &SafetyConfig) -> Result<Self, RosError> {
        Ok(Self {
            client: node.action_client::<GripperCommandAction>(action)?,
            safety: safety.clone(),
        })
    }

    pub fn action_client(&self) -> &ActionClient<GripperCommandAction> {
        &self.client
    }
}

#[async_trait]
impl Gripper for GripperCommandClient {
    async fn command(
        &self,
        goal: GripperGoal,
        cancel: &CancellationToken,
    ) -> Result<GripperOutcome, RobotError> {
        check_gripper_goal(&goal, &self.safety).map_err(RobotError::Rejected)?;
        let msg = GripperCommandGoal {
            command: GripperCommand {
                position: f64::from(goal.position),
                max_effort: f64::from(goal.max_effort),
            },
        };
        let result = self
            .client
            .execute(msg, cancel, |_f: GripperCommandFeedback| {})
            .await
            .map_err(|e| {
                if cancel.is_cancelled() {
                    RobotError::Cancelled
                } else {
                    ros_to_robot_error(e, self.client.name())
                }
            })?;
        match result.state {
            // both tell where the fingers stopped; `stalled`/`reached_goal` say why
            TerminalState::Succeeded | TerminalState::Aborted if !cancel.is_cancelled() => {
                Ok(outcome(&result.result))
            }
            _ => Err(RobotError::Cancelled),
        }
    }
}

/// Serves GripperCommand goals from a [`Gripper`].
pub struct GripperHandler {
    gripper: Arc<dyn Gripper>,
}

impl std::fmt::Debug for GripperHandler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("GripperHandler")
    }
}

impl GripperHandler {
    pub fn new(gripper: Arc<dyn Gripper>) -> Self {
        Self { gripper }
    }
}

#[async_trait]
impl GoalHandler<GripperCommandAction> for GripperHandler {
    fn validate(&self, goal: &GripperCommandGoal) -> Result<(), String> {
        let c = &goal.command;
        if c.position.is_finite() && c.max_effort.is_finite() && c.position >= 0.0 {
            Ok(())
        } else {
            Err(format!(
                "gripper command position {} / max_effort {} is not valid",
                c.position, c.max_effort
            ))
        }
    }

    async fn execute(
        &self,
        goal: GripperCommandGoal,
        ctx: GoalContext<GripperCommandAction>,
    ) -> GoalOutcome<GripperCommandResult> {
        let g = GripperGoal {
            position: goal.command.position as f32,
            max_effort: goal.command.max_effort as f32,
        };
        match self.gripper.command(g, ctx.cancellation()).await {
            Ok(o) => {
                let result = GripperCommandResult {
                    position: f64::from(o.position),
                    effort: f64::from(o.effort),
                    stalled: o.stalled,
                    reached_goal: o.reached_goal,
                };
                if ctx.is_cancelled() {
                    GoalOutcome::Canceled(result)
                } else if o.reached_goal || o.stalled {
                    GoalOutcome::Succeeded(result)
                } else {
                    GoalOutcome::Aborted(result)
                }
            }
            Err(RobotError::Cancelled) => ctx.stopped_outcome(),
            Err(e) => {
                tracing::warn!("gripper command failed: {e}");
                GoalOutcome::Aborted(GripperCommandResult::default())
            }
        }
    }
}
