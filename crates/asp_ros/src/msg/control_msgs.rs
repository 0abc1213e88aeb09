//! `control_msgs`: the gripper command action (ros2_control's gripper controllers).

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

crate::ros_action! {
    /// `control_msgs/action/GripperCommand`.
    pub struct GripperCommandAction in control_msgs as "GripperCommand" {
        GripperCommandGoal, GripperCommandResult, GripperCommandFeedback
    }
}

crate::msg::register!(
    GripperCommand,
    GripperCommandGoal,
    GripperCommandResult,
    GripperCommandFeedback,
);
