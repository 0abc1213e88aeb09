//! The Stretch's motion through stretch_core's trajectory server: the goals a plan
//! becomes ([`asp_kinematics::Stretch::driver_goals`]) are checked, all of them, against
//! the joint limits and the driver's rules before the first is sent, then sent one after
//! the other as `control_msgs/action/FollowJointTrajectory` goals on
//! `/stretch_controller/follow_joint_trajectory` (position mode). A goal the driver ends
//! with an error code stops the rest; a cancel cancels the goal in flight and sends
//! nothing more.

use asp_core::robot::CancellationToken;
use asp_kinematics::stretch::{ROTATE_BASE, TRANSLATE_BASE};
use asp_kinematics::{DriverGoal, JointSpec};
use tracing::{debug, info};

use crate::action::ActionClient;
use crate::msg::TerminalState;
use crate::msg::builtin_interfaces::Duration;
use crate::msg::control_msgs::{
    FollowJointTrajectory, FollowJointTrajectoryFeedback, FollowJointTrajectoryGoal,
    FollowJointTrajectoryResult,
};
use crate::msg::trajectory_msgs::{JointTrajectory, JointTrajectoryPoint};
use crate::{Node, RosError};

/// stretch_core's trajectory action in position mode.
pub const STRETCH_CONTROLLER_ACTION: &str = "/stretch_controller/follow_joint_trajectory";

/// Shortest time given for one goal's point, seconds (a tiny move still takes the
/// driver's acceleration ramp).
const MIN_GOAL_S: f64 = 0.5;

/// Why a Stretch motion did not (all) happen.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StretchMotionError {
    /// Nothing was sent: a goal names a joint the plan does not have.
    #[error("goal {goal}: unknown joint {joint:?} (the plan's joints: {known})")]
    UnknownJoint {
        goal: usize,
        joint: String,
        known: String,
    },
    /// Nothing was sent: a position (an increment for the base) outside its limits or
    /// not a number.
    #[error("goal {goal}: {joint} = {value} is outside [{lower}, {upper}]")]
    OutOfLimits {
        goal: usize,
        joint: String,
        value: f64,
        lower: f64,
        upper: f64,
    },
    /// Nothing was sent: a goal the driver refuses by its rules (the base's turn and
    /// drive together or beside other joints, a joint twice, names and positions of
    /// different lengths).
    #[error("goal {goal}: {reason}")]
    Malformed { goal: usize, reason: String },
    /// The driver ended goal `goal` (0-based) without reaching it; the goals before it
    /// were done.
    #[error("goal {goal} failed in the driver: {code_name} ({code}): {message}")]
    Driver {
        goal: usize,
        code: i32,
        code_name: &'static str,
        message: String,
    },
    /// Cancelled: `done` goals had finished, the one in flight was cancelled.
    #[error("cancelled after {done} goal(s)")]
    Cancelled { done: usize },
    /// The driver could not be reached or stopped answering.
    #[error("goal {goal}: {message}")]
    Transport { goal: usize, message: String },
}

/// The name of a FollowJointTrajectory error code.
pub fn error_code_name(code: i32) -> &'static str {
    match code {
        FollowJointTrajectoryResult::SUCCESSFUL => "SUCCESSFUL",
        FollowJointTrajectoryResult::INVALID_GOAL => "INVALID_GOAL",
        FollowJointTrajectoryResult::INVALID_JOINTS => "INVALID_JOINTS",
        FollowJointTrajectoryResult::OLD_HEADER_TIMESTAMP => "OLD_HEADER_TIMESTAMP",
        FollowJointTrajectoryResult::PATH_TOLERANCE_VIOLATED => "PATH_TOLERANCE_VIOLATED",
        FollowJointTrajectoryResult::GOAL_TOLERANCE_VIOLATED => "GOAL_TOLERANCE_VIOLATED",
        _ => "unknown error code",
    }
}

/// Checks every goal against `joints` (the plan's joints: base increments within the
/// base joints' limits, the others absolute within theirs) and stretch_core's rules.
pub fn check_goals(goals: &[DriverGoal], joints: &[JointSpec]) -> Result<(), StretchMotionError> {
    for (g, goal) in goals.iter().enumerate() {
        if goal.joint_names.len() != goal.positions.len() || goal.joint_names.is_empty() {
            return Err(StretchMotionError::Malformed {
                goal: g,
                reason: format!(
                    "{} joint names and {} positions",
                    goal.joint_names.len(),
                    goal.positions.len()
                ),
            });
        }
        let base = goal
            .joint_names
            .iter()
            .filter(|n| *n == ROTATE_BASE || *n == TRANSLATE_BASE)
            .count();
        if base > 0 && goal.joint_names.len() > 1 {
            return Err(StretchMotionError::Malformed {
                goal: g,
                reason: format!(
                    "{ROTATE_BASE} and {TRANSLATE_BASE} each go alone in a goal, got {:?}",
                    goal.joint_names
                ),
            });
        }
        for (i, (name, &value)) in goal.joint_names.iter().zip(&goal.positions).enumerate() {
            if goal.joint_names[..i].contains(name) {
                return Err(StretchMotionError::Malformed {
                    goal: g,
                    reason: format!("{name} is named twice"),
                });
            }
            let spec = joints.iter().find(|j| j.name == *name).ok_or_else(|| {
                StretchMotionError::UnknownJoint {
                    goal: g,
                    joint: name.clone(),
                    known: joints
                        .iter()
                        .map(|j| j.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                }
            })?;
            if !spec.contains(value, 1e-9) {
                return Err(StretchMotionError::OutOfLimits {
                    goal: g,
                    joint: name.clone(),
                    value,
                    lower: spec.lower,
                    upper: spec.upper,
                });
            }
        }
    }
    Ok(())
}

/// The FollowJointTrajectory goal of one driver goal: one point, timed by the slowest
/// joint at its velocity limit (`from` gives the absolute joints' present values by
/// name; a base increment is its own distance).
pub fn trajectory_goal(
    goal: &DriverGoal,
    joints: &[JointSpec],
    from: &dyn Fn(&str) -> Option<f64>,
) -> FollowJointTrajectoryGoal {
    let seconds = goal
        .joint_names
        .iter()
        .zip(&goal.positions)
        .filter_map(|(name, &target)| {
            let spec = joints.iter().find(|j| j.name == *name)?;
            let distance = if name == ROTATE_BASE || name == TRANSLATE_BASE {
                target.abs()
            } else {
                (target - from(name).unwrap_or(target)).abs()
            };
            Some(distance / spec.max_velocity.max(1e-6))
        })
        .fold(MIN_GOAL_S, f64::max);
    FollowJointTrajectoryGoal {
        trajectory: JointTrajectory {
            joint_names: goal.joint_names.clone(),
            points: vec![JointTrajectoryPoint {
                positions: goal.positions.clone(),
                time_from_start: Duration::from_secs_f64(seconds),
                ..Default::default()
            }],
            ..Default::default()
        },
        ..Default::default()
    }
}

/// A client of stretch_core's trajectory server for the plan's `joints`.
#[derive(Debug, Clone)]
pub struct StretchDriverArm {
    client: ActionClient<FollowJointTrajectory>,
    joints: Vec<JointSpec>,
}

impl StretchDriverArm {
    /// A client of `action` (stretch_core's is [`STRETCH_CONTROLLER_ACTION`]).
    pub fn new(node: &Node, action: &str, joints: Vec<JointSpec>) -> Result<Self, RosError> {
        Ok(Self {
            client: node.action_client::<FollowJointTrajectory>(action)?,
            joints,
        })
    }

    pub fn action_client(&self) -> &ActionClient<FollowJointTrajectory> {
        &self.client
    }

    /// Runs `goals` in order from the configuration `from` (the plan's joints, in
    /// order): all are checked before the first is sent.
    pub async fn execute(
        &self,
        goals: &[DriverGoal],
        from: &[f64],
        cancel: &CancellationToken,
    ) -> Result<(), StretchMotionError> {
        check_goals(goals, &self.joints)?;
        let mut present: Vec<(String, f64)> = self
            .joints
            .iter()
            .zip(from)
            .map(|(j, &v)| (j.name.clone(), v))
            .collect();
        for (g, goal) in goals.iter().enumerate() {
            if cancel.is_cancelled() {
                return Err(StretchMotionError::Cancelled { done: g });
            }
            let lookup = |name: &str| present.iter().find(|(n, _)| n == name).map(|(_, v)| *v);
            let request = trajectory_goal(goal, &self.joints, &lookup);
            debug!(goal = g, joints = ?goal.joint_names, positions = ?goal.positions, "stretch goal");
            let result = self
                .client
                .execute(request, cancel, |_: FollowJointTrajectoryFeedback| {})
                .await
                .map_err(|e| match e {
                    _ if cancel.is_cancelled() => StretchMotionError::Cancelled { done: g },
                    RosError::GoalRejected { .. } => StretchMotionError::Driver {
                        goal: g,
                        code: FollowJointTrajectoryResult::INVALID_GOAL,
                        code_name: "rejected",
                        message: e.to_string(),
                    },
                    other => StretchMotionError::Transport {
                        goal: g,
                        message: other.to_string(),
                    },
                })?;
            let code = result.result.error_code;
            match result.state {
                TerminalState::Canceled => return Err(StretchMotionError::Cancelled { done: g }),
                TerminalState::Succeeded if code == FollowJointTrajectoryResult::SUCCESSFUL => {}
                _ => {
                    return Err(StretchMotionError::Driver {
                        goal: g,
                        code,
                        code_name: error_code_name(code),
                        message: result.result.error_string,
                    });
                }
            }
            for (name, &v) in goal.joint_names.iter().zip(&goal.positions) {
                if let Some(slot) = present.iter_mut().find(|(n, _)| n == name) {
                    slot.1 = if name == ROTATE_BASE || name == TRANSLATE_BASE {
                        slot.1 + v
                    } else {
                        v
                    };
                }
            }
        }
        info!(goals = goals.len(), "stretch motion done");
        Ok(())
    }
}
