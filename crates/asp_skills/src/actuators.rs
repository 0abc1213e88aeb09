//! The only path from the executor to the arm and the gripper. Every command that can
//! move something takes a `&CommitToken`, which only the verifier's accepting review (or
//! a checked redemption of its verdict) can make; the robot handles are private to this
//! module, so no code in the executor can move the robot without a commit. Every
//! command is also tied to the e-stop: engaging it cancels the command in flight, and no
//! command starts while it is engaged.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use asp_core::robot::{
    ArmMotion, CancellationToken, Gripper, GripperGoal, GripperOutcome, MotionOutcome,
    MoveItErrorCode, PoseGoal, RobotError,
};
use asp_core::{FrameId, Isometry3};
use asp_verify::CommitToken;

use crate::estop::{EStopGuard, EStopListener};

/// How many commands were sent, by kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CommandCounts {
    /// Pose goals sent to the planner (each is one planner call).
    pub arm_goals: u32,
    /// Gripper goals sent.
    pub gripper_goals: u32,
}

/// The arm and the gripper behind the commit token and the e-stop.
pub struct Actuators {
    arm: Arc<dyn ArmMotion>,
    gripper: Arc<dyn Gripper>,
    estop: EStopListener,
    arm_goals: AtomicU32,
    gripper_goals: AtomicU32,
}

impl std::fmt::Debug for Actuators {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Actuators")
            .field("estop", &self.estop.is_engaged())
            .field("counts", &self.counts())
            .finish_non_exhaustive()
    }
}

impl Actuators {
    pub fn new(arm: Arc<dyn ArmMotion>, gripper: Arc<dyn Gripper>, estop: EStopListener) -> Self {
        Self {
            arm,
            gripper,
            estop,
            arm_goals: AtomicU32::new(0),
            gripper_goals: AtomicU32::new(0),
        }
    }

    /// Commands sent since construction.
    pub fn counts(&self) -> CommandCounts {
        CommandCounts {
            arm_goals: self.arm_goals.load(Ordering::Relaxed),
            gripper_goals: self.gripper_goals.load(Ordering::Relaxed),
        }
    }

    pub fn estop(&self) -> &EStopListener {
        &self.estop
    }

    /// The tool pose (reading moves nothing: no token needed).
    pub async fn tool_pose(&self, frame: &FrameId) -> Result<Isometry3, RobotError> {
        self.arm.tool_pose(frame).await
    }

    /// Sends a pose goal under the licence of `token`. Returns `PREEMPTED` when `cancel`
    /// or the e-stop stops it; refuses to send while the e-stop is engaged.
    pub async fn move_to_pose(
        &self,
        _licence: &CommitToken,
        goal: &PoseGoal,
        cancel: &CancellationToken,
    ) -> MotionOutcome {
        match self.arm_guard(cancel) {
            Ok(guard) => self.arm.move_to_pose(goal, guard.token()).await,
            Err(refused) => refused,
        }
    }

    /// Moves to a named configuration under the licence of `token`; stopped like
    /// [`Self::move_to_pose`].
    pub async fn move_to_named(
        &self,
        _licence: &CommitToken,
        name: &str,
        cancel: &CancellationToken,
    ) -> MotionOutcome {
        match self.arm_guard(cancel) {
            Ok(guard) => self.arm.move_to_named(name, guard.token()).await,
            Err(refused) => refused,
        }
    }

    /// The e-stop guard of one arm goal, counted; the refusal while it is engaged.
    fn arm_guard(&self, cancel: &CancellationToken) -> Result<EStopGuard, MotionOutcome> {
        if self.estop.is_engaged() {
            return Err(MotionOutcome::failure(
                MoveItErrorCode::Preempted,
                "e-stop engaged: the goal was not sent",
            ));
        }
        self.arm_goals.fetch_add(1, Ordering::Relaxed);
        Ok(self.estop.guard(cancel))
    }

    /// Sends a gripper goal under the licence of `token`.
    pub async fn gripper(
        &self,
        _licence: &CommitToken,
        goal: GripperGoal,
        cancel: &CancellationToken,
    ) -> Result<GripperOutcome, RobotError> {
        if self.estop.is_engaged() {
            return Err(RobotError::Cancelled);
        }
        let guard = self.estop.guard(cancel);
        self.gripper_goals.fetch_add(1, Ordering::Relaxed);
        self.gripper.command(goal, guard.token()).await
    }
}
