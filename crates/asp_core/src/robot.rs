//! The robot as the skills and navigation see it: arm motion with MoveIt's semantics, a
//! gripper with `control_msgs/GripperCommand`'s, a base with Nav2 `NavigateToPose`'s, and
//! cameras. Each is a trait with two kinds of implementation: the embedded simulator
//! (in process) and ROS 2 action clients (against the simulator node or a real MoveIt 2 /
//! Nav2). Nothing here knows ROS; the codes mirror the upstream message constants.

use std::fmt;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
pub use tokio_util::sync::CancellationToken;

use crate::camera::RgbdFrame;
use crate::geometry::{FrameId, Isometry3, Pose2D, Real};

/// `moveit_msgs/MoveItErrorCodes` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[repr(i32)]
pub enum MoveItErrorCode {
    Success = 1,
    Undefined = 0,
    Failure = 99999,
    PlanningFailed = -1,
    InvalidMotionPlan = -2,
    MotionPlanInvalidatedByEnvironmentChange = -3,
    ControlFailed = -4,
    UnableToAquireSensorData = -5,
    TimedOut = -6,
    Preempted = -7,
    StartStateInCollision = -10,
    StartStateViolatesPathConstraints = -11,
    StartStateInvalid = -26,
    GoalInCollision = -12,
    GoalViolatesPathConstraints = -13,
    GoalConstraintsViolated = -14,
    GoalStateInvalid = -27,
    UnrecognizedGoalType = -28,
    InvalidGroupName = -15,
    InvalidGoalConstraints = -16,
    InvalidRobotState = -17,
    InvalidLinkName = -18,
    InvalidObjectName = -19,
    FrameTransformFailure = -21,
    CollisionCheckingUnavailable = -22,
    RobotStateStale = -23,
    SensorInfoStale = -24,
    CommunicationFailure = -25,
    Crash = -29,
    Abort = -30,
    NoIkSolution = -31,
}

impl MoveItErrorCode {
    const ALL: [MoveItErrorCode; 31] = [
        Self::Success,
        Self::Undefined,
        Self::Failure,
        Self::PlanningFailed,
        Self::InvalidMotionPlan,
        Self::MotionPlanInvalidatedByEnvironmentChange,
        Self::ControlFailed,
        Self::UnableToAquireSensorData,
        Self::TimedOut,
        Self::Preempted,
        Self::StartStateInCollision,
        Self::StartStateViolatesPathConstraints,
        Self::StartStateInvalid,
        Self::GoalInCollision,
        Self::GoalViolatesPathConstraints,
        Self::GoalConstraintsViolated,
        Self::GoalStateInvalid,
        Self::UnrecognizedGoalType,
        Self::InvalidGroupName,
        Self::InvalidGoalConstraints,
        Self::InvalidRobotState,
        Self::InvalidLinkName,
        Self::InvalidObjectName,
        Self::FrameTransformFailure,
        Self::CollisionCheckingUnavailable,
        Self::RobotStateStale,
        Self::SensorInfoStale,
        Self::CommunicationFailure,
        Self::Crash,
        Self::Abort,
        Self::NoIkSolution,
    ];

    pub fn code(self) -> i32 {
        self as i32
    }

    /// The enum for a wire value; unknown values map to `Failure`.
    pub fn from_code(code: i32) -> Self {
        Self::ALL
            .into_iter()
            .find(|c| c.code() == code)
            .unwrap_or(Self::Failure)
    }

    pub fn is_success(self) -> bool {
        self == Self::Success
    }

    /// The upstream constant name, e.g. `NO_IK_SOLUTION`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Success => "SUCCESS",
            Self::Undefined => "UNDEFINED",
            Self::Failure => "FAILURE",
            Self::PlanningFailed => "PLANNING_FAILED",
            Self::InvalidMotionPlan => "INVALID_MOTION_PLAN",
            Self::MotionPlanInvalidatedByEnvironmentChange => {
                "MOTION_PLAN_INVALIDATED_BY_ENVIRONMENT_CHANGE"
            }
            Self::ControlFailed => "CONTROL_FAILED",
            Self::UnableToAquireSensorData => "UNABLE_TO_AQUIRE_SENSOR_DATA",
            Self::TimedOut => "TIMED_OUT",
            Self::Preempted => "PREEMPTED",
            Self::StartStateInCollision => "START_STATE_IN_COLLISION",
            Self::StartStateViolatesPathConstraints => "START_STATE_VIOLATES_PATH_CONSTRAINTS",
            Self::StartStateInvalid => "START_STATE_INVALID",
            Self::GoalInCollision => "GOAL_IN_COLLISION",
            Self::GoalViolatesPathConstraints => "GOAL_VIOLATES_PATH_CONSTRAINTS",
            Self::GoalConstraintsViolated => "GOAL_CONSTRAINTS_VIOLATED",
            Self::GoalStateInvalid => "GOAL_STATE_INVALID",
            Self::UnrecognizedGoalType => "UNRECOGNIZED_GOAL_TYPE",
            Self::InvalidGroupName => "INVALID_GROUP_NAME",
            Self::InvalidGoalConstraints => "INVALID_GOAL_CONSTRAINTS",
            Self::InvalidRobotState => "INVALID_ROBOT_STATE",
            Self::InvalidLinkName => "INVALID_LINK_NAME",
            Self::InvalidObjectName => "INVALID_OBJECT_NAME",
            Self::FrameTransformFailure => "FRAME_TRANSFORM_FAILURE",
            Self::CollisionCheckingUnavailable => "COLLISION_CHECKING_UNAVAILABLE",
            Self::RobotStateStale => "ROBOT_STATE_STALE",
            Self::SensorInfoStale => "SENSOR_INFO_STALE",
            Self::CommunicationFailure => "COMMUNICATION_FAILURE",
            Self::Crash => "CRASH",
            Self::Abort => "ABORT",
            Self::NoIkSolution => "NO_IK_SOLUTION",
        }
    }
}

impl fmt::Display for MoveItErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.name(), self.code())
    }
}

/// How the end effector travels to its goal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MotionKind {
    /// Any collision-free joint-space path (RRT-Connect on a real robot).
    FreeSpace,
    /// A straight Cartesian line of the tool point (Pilz `LIN` on a real robot): pushes,
    /// pulls and approaches.
    Linear,
}

/// A pose goal for the end effector (tool centre point), as MoveGroup takes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PoseGoal {
    /// The frame `target` is expressed in (usually `map` or the arm's base).
    pub frame: FrameId,
    /// Desired tool pose: +z of the tool points out of the gripper, +y across the fingers.
    pub target: Isometry3,
    pub kind: MotionKind,
    /// Metres.
    pub position_tolerance: Real,
    /// Radians.
    pub orientation_tolerance: Real,
    /// MoveIt's `max_velocity_scaling_factor`, in (0, 1].
    pub velocity_scaling: Real,
    /// MoveIt's `max_acceleration_scaling_factor`, in (0, 1].
    pub acceleration_scaling: Real,
    /// World objects the gripper may touch on this motion (the allowed collision matrix
    /// entries a grasp or push needs), by the names the planning scene knows them by.
    pub allowed_contacts: Vec<String>,
}

/// The end of one motion request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MotionOutcome {
    pub code: MoveItErrorCode,
    pub message: String,
    pub planning_time_s: f64,
}

impl MotionOutcome {
    pub fn success(planning_time_s: f64) -> Self {
        Self {
            code: MoveItErrorCode::Success,
            message: String::new(),
            planning_time_s,
        }
    }
    pub fn failure(code: MoveItErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            planning_time_s: 0.0,
        }
    }
}

/// The arm, through its motion planner.
#[async_trait]
pub trait ArmMotion: Send + Sync {
    /// Plans and executes a motion to `goal`. Returns when the motion ended, failed or was
    /// cancelled (then with `PREEMPTED` and the arm stopped where it was).
    async fn move_to_pose(&self, goal: &PoseGoal, cancel: &CancellationToken) -> MotionOutcome;

    /// Moves to a named joint configuration from the robot description (`home`, `stow`).
    async fn move_to_named(&self, name: &str, cancel: &CancellationToken) -> MotionOutcome;

    /// The current tool pose in `frame`.
    async fn tool_pose(&self, frame: &FrameId) -> Result<Isometry3, RobotError>;
}

/// A `control_msgs/GripperCommand` goal.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GripperGoal {
    /// Finger gap in metres.
    pub position: Real,
    /// Newtons.
    pub max_effort: Real,
}

/// A `control_msgs/GripperCommand` result.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GripperOutcome {
    pub position: Real,
    pub effort: Real,
    /// True when the fingers stopped on something before reaching the goal.
    pub stalled: bool,
    pub reached_goal: bool,
}

#[async_trait]
pub trait Gripper: Send + Sync {
    async fn command(
        &self,
        goal: GripperGoal,
        cancel: &CancellationToken,
    ) -> Result<GripperOutcome, RobotError>;
}

/// Nav2 error codes as `NavigateToPose` reports them (planner 2xx, controller 1xx).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[repr(u16)]
pub enum NavErrorCode {
    None = 0,
    ControllerUnknown = 100,
    InvalidController = 101,
    ControllerTfError = 102,
    InvalidPath = 103,
    PatienceExceeded = 104,
    FailedToMakeProgress = 105,
    NoValidControl = 106,
    ControllerTimedOut = 107,
    PlannerUnknown = 200,
    InvalidPlanner = 201,
    PlannerTfError = 202,
    StartOutsideMap = 203,
    GoalOutsideMap = 204,
    StartOccupied = 205,
    GoalOccupied = 206,
    PlannerTimeout = 207,
    NoValidPath = 208,
}

impl NavErrorCode {
    const ALL: [NavErrorCode; 18] = [
        Self::None,
        Self::ControllerUnknown,
        Self::InvalidController,
        Self::ControllerTfError,
        Self::InvalidPath,
        Self::PatienceExceeded,
        Self::FailedToMakeProgress,
        Self::NoValidControl,
        Self::ControllerTimedOut,
        Self::PlannerUnknown,
        Self::InvalidPlanner,
        Self::PlannerTfError,
        Self::StartOutsideMap,
        Self::GoalOutsideMap,
        Self::StartOccupied,
        Self::GoalOccupied,
        Self::PlannerTimeout,
        Self::NoValidPath,
    ];

    pub fn code(self) -> u16 {
        self as u16
    }

    /// The enum for a wire value; unknown values map to the planner's `UNKNOWN`.
    pub fn from_code(code: u16) -> Self {
        Self::ALL
            .into_iter()
            .find(|c| c.code() == code)
            .unwrap_or(Self::PlannerUnknown)
    }
}

/// How an action goal ended (`action_msgs/GoalStatus` terminal states).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TerminalStatus {
    Succeeded,
    Aborted,
    Canceled,
}

/// The end of one navigation goal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NavOutcome {
    pub status: TerminalStatus,
    pub error_code: NavErrorCode,
    pub error_msg: String,
    /// Where the base ended up.
    pub final_pose: Pose2D,
}

/// The mobile base, through its navigation stack.
#[async_trait]
pub trait BaseNavigation: Send + Sync {
    /// Drives to `goal` (map frame). Cancelling stops the base where it is and returns
    /// `Canceled`.
    async fn navigate_to(&self, goal: Pose2D, cancel: &CancellationToken) -> NavOutcome;

    async fn base_pose(&self) -> Result<Pose2D, RobotError>;

    /// Where the map the base navigates in sits in `frame` (`frame → map`): in a
    /// building, its frame above each storey's map. `None` when nothing relates them.
    async fn map_in(&self, frame: &crate::FrameId) -> Option<crate::Isometry3> {
        let _ = frame;
        None
    }
}

/// A building's elevator (issue 16): a simulator's, or a site's elevator integration.
#[async_trait]
pub trait Elevator: Send + Sync {
    /// Rides from the storey whose elevator the base stands at to `storey`: `Ok` with
    /// the storey the base is on after, `Err` saying why not (the base where it was).
    async fn ride(&self, storey: u32, cancel: &CancellationToken) -> Result<u32, String>;
}

/// A source of posed RGB-D frames (a camera driver and TF).
#[async_trait]
pub trait FrameSource: Send + Sync {
    /// The latest frame of `camera` (e.g. `head`, `wrist`).
    async fn capture(&self, camera: &str) -> Result<RgbdFrame, RobotError>;
}

/// A failure to talk to the robot at all (as opposed to a motion that failed).
#[derive(Debug, Clone, PartialEq, thiserror::Error, Serialize, Deserialize)]
pub enum RobotError {
    #[error("no camera named {0:?}")]
    UnknownCamera(String),
    #[error("frame {0:?} is not known")]
    UnknownFrame(String),
    #[error("{what} did not answer within {timeout_s} s")]
    Timeout { what: String, timeout_s: f64 },
    #[error("the goal was rejected: {0}")]
    Rejected(String),
    #[error("cancelled")]
    Cancelled,
    #[error("{0}")]
    Other(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moveit_codes_match_upstream_values() {
        assert_eq!(MoveItErrorCode::NoIkSolution.code(), -31);
        assert_eq!(MoveItErrorCode::GoalInCollision.code(), -12);
        assert_eq!(
            MoveItErrorCode::from_code(-27),
            MoveItErrorCode::GoalStateInvalid
        );
        assert_eq!(MoveItErrorCode::from_code(12345), MoveItErrorCode::Failure);
        for c in MoveItErrorCode::ALL {
            assert_eq!(MoveItErrorCode::from_code(c.code()), c);
        }
        assert_eq!(
            MoveItErrorCode::NoIkSolution.to_string(),
            "NO_IK_SOLUTION (-31)"
        );
    }

    #[test]
    fn nav_codes_round_trip() {
        for c in NavErrorCode::ALL {
            assert_eq!(NavErrorCode::from_code(c.code()), c);
        }
        assert_eq!(NavErrorCode::NoValidPath.code(), 208);
        assert_eq!(NavErrorCode::from_code(9999), NavErrorCode::PlannerUnknown);
    }
}
