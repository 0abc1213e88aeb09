//! `control_msgs`: the gripper command action (ros2_control's gripper controllers) and
//! FollowJointTrajectory (ros2_control's trajectory controllers, stretch_core's
//! `/stretch_controller`). The same in Humble and Jazzy.

use super::builtin_interfaces::Duration;
use super::std_msgs::Header;
use super::trajectory_msgs::{
    JointTrajectory, JointTrajectoryPoint, MultiDOFJointTrajectory, MultiDOFJointTrajectoryPoint,
};

crate::ros_message! {
    pub struct GripperCommand in control_msgs / msg {
        /// Finger gap, metres.
        pub position: f64,
        /// Newtons.
        pub max_effort: f64,
    }

    pub struct GripperCommandGoal in control_msgs / action as "GripperCommand_Goal" {
        pub command: GripperCommand,
    }

    pub struct GripperCommandResult in control_msgs / action as "GripperCommand_Result" {
        pub position: f64,
        pub effort: f64,
        pub stalled: bool,
        pub reached_goal: bool,
    }

    pub struct GripperCommandFeedback in control_msgs / action as "GripperCommand_Feedback" {
        pub position: f64,
        pub effort: f64,
        pub stalled: bool,
        pub reached_goal: bool,
    }
}

crate::ros_message! {
    pub struct JointTolerance in control_msgs / msg {
        pub name: String,
        pub position: f64,
        pub velocity: f64,
        pub acceleration: f64,
    }

    pub struct JointComponentTolerance in control_msgs / msg {
        pub joint_name: String,
        pub component: u16,
        pub position: f64,
        pub velocity: f64,
        pub acceleration: f64,
    }
    consts {
        X_AXIS: u16 = 1,
        Y_AXIS: u16 = 2,
        Z_AXIS: u16 = 3,
        TRANSLATION: u16 = 4,
        ROTATION: u16 = 5,
    }

    pub struct FollowJointTrajectoryGoal in control_msgs / action as "FollowJointTrajectory_Goal" {
        pub trajectory: JointTrajectory,
        pub multi_dof_trajectory: MultiDOFJointTrajectory,
        pub path_tolerance: Vec<JointTolerance>,
        pub component_path_tolerance: Vec<JointComponentTolerance>,
        pub goal_tolerance: Vec<JointTolerance>,
        pub component_goal_tolerance: Vec<JointComponentTolerance>,
        pub goal_time_tolerance: Duration,
    }

    pub struct FollowJointTrajectoryResult in control_msgs / action as "FollowJointTrajectory_Result" {
        pub error_code: i32,
        pub error_string: String,
    }
    consts {
        SUCCESSFUL: i32 = 0,
        INVALID_GOAL: i32 = -1,
        INVALID_JOINTS: i32 = -2,
        OLD_HEADER_TIMESTAMP: i32 = -3,
        PATH_TOLERANCE_VIOLATED: i32 = -4,
        GOAL_TOLERANCE_VIOLATED: i32 = -5,
    }

    pub struct FollowJointTrajectoryFeedback in control_msgs / action as "FollowJointTrajectory_Feedback" {
        pub header: Header,
        pub joint_names: Vec<String>,
        pub desired: JointTrajectoryPoint,
        pub actual: JointTrajectoryPoint,
        pub error: JointTrajectoryPoint,
        pub multi_dof_joint_names: Vec<String>,
        pub multi_dof_desired: MultiDOFJointTrajectoryPoint,
        pub multi_dof_actual: MultiDOFJointTrajectoryPoint,
        pub multi_dof_error: MultiDOFJointTrajectoryPoint,
    }
}

crate::ros_action! {
    /// `control_msgs/action/FollowJointTrajectory`.
    pub struct FollowJointTrajectory in control_msgs as "FollowJointTrajectory" {
        FollowJointTrajectoryGoal, FollowJointTrajectoryResult, FollowJointTrajectoryFeedback
    }
    // ros2_control's trajectory controller ends a cancelled goal SUCCESSFUL (the state
    // says CANCELED); a goal ended for any other reason did not reach its point
    fn result_for(reason, message) {
        use crate::msg::EndReason;
        let error_code = match reason {
            EndReason::Preempted | EndReason::Canceled => FollowJointTrajectoryResult::SUCCESSFUL,
            _ => FollowJointTrajectoryResult::PATH_TOLERANCE_VIOLATED,
        };
        FollowJointTrajectoryResult {
            error_code,
            error_string: message.to_owned(),
        }
    }
}

crate::ros_action! {
    /// `control_msgs/action/GripperCommand`.
    pub struct GripperCommandAction in control_msgs as "GripperCommand" {
        GripperCommandGoal, GripperCommandResult, GripperCommandFeedback
    }
}

crate::msg::register!(
    JointTolerance,
    JointComponentTolerance,
    FollowJointTrajectoryGoal,
    FollowJointTrajectoryResult,
    FollowJointTrajectoryFeedback,
    GripperCommand,
    GripperCommandGoal,
    GripperCommandResult,
    GripperCommandFeedback,
);
