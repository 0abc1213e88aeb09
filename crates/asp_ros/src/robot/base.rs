//! [`BaseNavigation`] over Nav2's NavigateToPose action, and NavigateToPose served from
//! any [`BaseNavigation`].

use std::sync::Arc;
use std::time::{Duration, Instant};

use asp_core::robot::{
    BaseNavigation, CancellationToken, NavErrorCode, NavOutcome, RobotError, TerminalStatus,
};
use asp_core::{FrameId, Pose2D};
use async_trait::async_trait;
use tracing::{debug, warn};

use super::ros_to_robot_error;
use super::tf::TfBuffer;
use crate::RosError;
use crate::action::{ActionClient, GoalContext, GoalHandler, GoalOutcome};
use crate::convert::geometry::{pose_2d, pose_stamped_2d};
use crate::msg::TerminalState;
use crate::msg::builtin_interfaces::{Duration as RosDuration, Time};
use crate::msg::nav2_msgs::{
    NavigateToPose, NavigateToPoseFeedback, NavigateToPoseGoal, NavigateToPoseResult, UNKNOWN_ERROR,
};
use crate::transport::{Node, RosClock};

/// How often a NavigateToPose server built on [`BaseNavigation`] publishes feedback.
pub const FEEDBACK_PERIOD: Duration = Duration::from_millis(200);

fn terminal(state: TerminalState) -> TerminalStatus {
    match state {
        TerminalState::Succeeded => TerminalStatus::Succeeded,
        TerminalState::Aborted => TerminalStatus::Aborted,
        TerminalState::Canceled => TerminalStatus::Canceled,
    }
}

/// [`BaseNavigation`] through Nav2 (or the sim node): goals in the map frame, the
/// base pose from TF.
#[derive(Debug, Clone)]
pub struct Nav2Base {
    client: ActionClient<NavigateToPose>,
    tf: TfBuffer,
    map_frame: FrameId,
    base_frame: FrameId,
    /// Stamps the goals (the node's time: simulated with `use_sim_time`).
    clock: RosClock,
}

impl Nav2Base {
    pub fn new(
        node: &Node,
        action: &str,
        tf: TfBuffer,
        map_frame: &str,
        base_frame: &str,
    ) -> Result<Self, RosError> {
        Ok(Self {
            client: node.action_client::<NavigateToPose>(action)?,
            tf,
            map_frame: FrameId::new(map_frame),
            base_frame: FrameId::new(base_frame),
            clock: node.clock(),
        })
    }

    pub fn action_client(&self) -> &ActionClient<NavigateToPose> {
        &self.client
    }

    fn failed(&self, error_code: NavErrorCode, error_msg: String, last: Pose2D) -> NavOutcome {
        NavOutcome {
            status: TerminalStatus::Aborted,
            error_code,
            error_msg,
            final_pose: last,
        }
    }
}

#[async_trait]
impl BaseNavigation for Nav2Base {
    async fn navigate_to(&self, goal: Pose2D, cancel: &CancellationToken) -> NavOutcome {
        let mut last = self
            .tf
            .lookup(&self.map_frame, &self.base_frame)
            .map_or(goal, |t| Pose2D::from_isometry(&t.iso));
        if !(goal.x.is_finite() && goal.y.is_finite() && goal.theta.is_finite()) {
            return self.failed(
                NavErrorCode::GoalOutsideMap,
                format!("navigation goal {goal:?} is not finite"),
                last,
            );
        }
        let msg = NavigateToPoseGoal {
            pose: pose_stamped_2d(&goal, self.map_frame.as_str(), self.clock.now()),
            behavior_tree: String::new(),
        };
        let result = self
            .client
            .execute(msg, cancel, |f: NavigateToPoseFeedback| {
                match pose_2d(&f.current_pose.pose, "navigation feedback") {
                    Ok(p) => last = p,
                    Err(e) => debug!("{e}"),
                }
            })
            .await;
        let final_pose = self
            .tf
            .lookup(&self.map_frame, &self.base_frame)
            .map_or(last, |t| Pose2D::from_isometry(&t.iso));
        match result {
            Ok(r) => {
                let status = terminal(r.state);
                let (code, text) = match r.result.error() {
                    Some((code, text)) => (NavErrorCode::from_code(code), text.to_string()),
                    None => (NavErrorCode::None, String::new()),
                };
                let error_msg = if text.is_empty() && status != TerminalStatus::Succeeded {
                    format!("navigation ended {status:?}")
                } else {
                    text
                };
                NavOutcome {
                    status,
                    error_code: if status == TerminalStatus::Succeeded {
                        NavErrorCode::None
                    } else {
                        code
                    },
                    error_msg,
                    final_pose,
                }
            }
            Err(e) if cancel.is_cancelled() => NavOutcome {
                status: TerminalStatus::Canceled,
                error_code: NavErrorCode::None,
                error_msg: e.to_string(),
                final_pose,
            },
            Err(e) => {
                let code = match e {
                    RosError::Timeout { .. } => NavErrorCode::ControllerTimedOut,
                    _ => NavErrorCode::PlannerUnknown,
                };
                self.failed(code, e.to_string(), final_pose)
            }
        }
    }

    async fn base_pose(&self) -> Result<Pose2D, RobotError> {
        self.tf
            .wait_for(&self.map_frame, &self.base_frame, None)
            .await
            .map(|t| Pose2D::from_isometry(&t.iso))
            .map_err(|e| ros_to_robot_error(e, "the base pose"))
    }

    async fn map_in(&self, frame: &FrameId) -> Option<asp_core::Isometry3> {
        self.tf.lookup(frame, &self.map_frame).ok().map(|t| t.iso)
    }
}

/// Serves NavigateToPose goals from a [`BaseNavigation`], publishing the base pose as
/// feedback while it drives.
pub struct NavigationHandler {
    base: Arc<dyn BaseNavigation>,
    map_frame: String,
}

impl std::fmt::Debug for NavigationHandler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NavigationHandler")
            .field("map_frame", &self.map_frame)
            .finish()
    }
}

impl NavigationHandler {
    pub fn new(base: Arc<dyn BaseNavigation>, map_frame: &str) -> Self {
        Self {
            base,
            map_frame: map_frame.to_string(),
        }
    }
}

#[async_trait]
impl GoalHandler<NavigateToPose> for NavigationHandler {
    fn validate(&self, goal: &NavigateToPoseGoal) -> Result<(), String> {
        let frame = goal.pose.header.frame_id.trim_start_matches('/');
        if !frame.is_empty() && frame != self.map_frame {
            return Err(format!(
                "goal in frame {frame:?}; this server takes goals in {:?}",
                self.map_frame
            ));
        }
        pose_2d(&goal.pose.pose, "navigation goal")
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    async fn execute(
        &self,
        goal: NavigateToPoseGoal,
        ctx: GoalContext<NavigateToPose>,
    ) -> GoalOutcome<NavigateToPoseResult> {
        let target = match pose_2d(&goal.pose.pose, "navigation goal") {
            Ok(p) => p,
            Err(e) => {
                return GoalOutcome::Aborted(NavigateToPoseResult::with_error(
                    NavErrorCode::GoalOutsideMap.code(),
                    e.to_string(),
                ));
            }
        };
        let started = Instant::now();
        let drive = self.base.navigate_to(target, ctx.cancellation());
        tokio::pin!(drive);
        let mut tick = tokio::time::interval(FEEDBACK_PERIOD);
        let outcome = loop {
            tokio::select! {
                o = &mut drive => break o,
                _ = tick.tick() => {
                    if let Ok(p) = self.base.base_pose().await {
                        let f = NavigateToPoseFeedback {
                            current_pose: pose_stamped_2d(&p, &self.map_frame, Time::now()),
                            navigation_time: RosDuration::from(started.elapsed()),
                            estimated_time_remaining: RosDuration::default(),
                            number_of_recoveries: 0,
                            distance_remaining: p.distance_to(&target),
                        };
                        if let Err(e) = ctx.publish_feedback(f) {
                            warn!("navigation feedback: {e}");
                        }
                    }
                }
            }
        };
        // a last feedback with where the base ended up
        let _ = ctx.publish_feedback(NavigateToPoseFeedback {
            current_pose: pose_stamped_2d(&outcome.final_pose, &self.map_frame, Time::now()),
            navigation_time: RosDuration::from(started.elapsed()),
            estimated_time_remaining: RosDuration::default(),
            number_of_recoveries: 0,
            distance_remaining: outcome.final_pose.distance_to(&target),
        });
        let code = if outcome.status == TerminalStatus::Succeeded {
            0
        } else if outcome.error_code == NavErrorCode::None {
            UNKNOWN_ERROR
        } else {
            outcome.error_code.code()
        };
        let result = NavigateToPoseResult::with_error(code, outcome.error_msg.clone());
        match outcome.status {
            TerminalStatus::Succeeded => GoalOutcome::Succeeded(result),
            TerminalStatus::Aborted => GoalOutcome::Aborted(result),
            TerminalStatus::Canceled => GoalOutcome::Canceled(result),
        }
    }
}
