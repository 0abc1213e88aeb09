//! `trajectory_msgs`: joint and multi-DOF trajectories.

use super::builtin_interfaces::Duration;
use super::geometry_msgs::{Transform, Twist};
use super::std_msgs::Header;

crate::ros_message! {
    pub struct JointTrajectoryPoint in trajectory_msgs / msg {
        pub positions: Vec<f64>,
        pub velocities: Vec<f64>,
        pub accelerations: Vec<f64>,
        pub effort: Vec<f64>,
        pub time_from_start: Duration,
    }

    pub struct JointTrajectory in trajectory_msgs / msg {
        pub header: Header,
        pub joint_names: Vec<String>,
        pub points: Vec<JointTrajectoryPoint>,
    }

    pub struct MultiDOFJointTrajectoryPoint in trajectory_msgs / msg {
        pub transforms: Vec<Transform>,
        pub velocities: Vec<Twist>,
        pub accelerations: Vec<Twist>,
        pub time_from_start: Duration,
    }

    pub struct MultiDOFJointTrajectory in trajectory_msgs / msg {
        pub header: Header,
        pub joint_names: Vec<String>,
        pub points: Vec<MultiDOFJointTrajectoryPoint>,
    }
}

crate::msg::register!(
    JointTrajectoryPoint,
    JointTrajectory,
    MultiDOFJointTrajectoryPoint,
    MultiDOFJointTrajectory,
);
