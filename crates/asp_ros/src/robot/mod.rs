//! `asp_core::robot` traits over ROS 2: action clients that implement [`ArmMotion`],
//! [`Gripper`] and [`BaseNavigation`] against MoveIt 2, a gripper controller and Nav2
//! (or the sim node), and goal handlers that serve those actions from any
//! implementation of the traits, so the sim node and a real robot stack look the same.
//!
//! Every client checks its goal against the typed safety limits before sending it, and
//! turns a cancelled [`CancellationToken`](asp_core::robot::CancellationToken) into an
//! action cancel request.
//!
//! [`ArmMotion`]: asp_core::robot::ArmMotion
//! [`Gripper`]: asp_core::robot::Gripper
//! [`BaseNavigation`]: asp_core::robot::BaseNavigation

pub mod arm;
pub mod base;
pub mod elevator;
pub mod gripper;
pub mod stretch;
pub mod tf;

pub use arm::{ArmMotionHandler, MoveGroupArm, planning_scene_handler};
pub use base::{Nav2Base, NavigationHandler};
pub use elevator::RideElevatorClient;
pub use gripper::{GripperCommandClient, GripperHandler};
pub use stretch::StretchDriverArm;
pub use tf::TfBuffer;

use asp_core::robot::RobotError;

use crate::RosError;

pub(crate) fn ros_to_robot_error(e: RosError, what: &str) -> RobotError {
    match e {
        RosError::Timeout { timeout_s, .. } | RosError::NotDiscovered { timeout_s, .. } => {
            RobotError::Timeout {
                what: what.to_string(),
                timeout_s,
            }
        }
        RosError::GoalRejected { .. } => RobotError::Rejected(e.to_string()),
        other => RobotError::Other(other.to_string()),
    }
}
