//! `action_msgs`: the goal status and cancel service every ROS 2 action uses.

use super::builtin_interfaces::Time;
use super::unique_identifier_msgs::UUID;

crate::ros_message! {
    /// A goal's id and the time it was accepted.
    pub struct GoalInfo in action_msgs / msg {
        pub goal_id: UUID,
        pub stamp: Time,
    }

    pub struct GoalStatus in action_msgs / msg {
        pub goal_info: GoalInfo,
        pub status: i8,
    }
    consts {
        STATUS_UNKNOWN: i8 = 0,
        STATUS_ACCEPTED: i8 = 1,
        STATUS_EXECUTING: i8 = 2,
        STATUS_CANCELING: i8 = 3,
        STATUS_SUCCEEDED: i8 = 4,
        STATUS_CANCELED: i8 = 5,
        STATUS_ABORTED: i8 = 6,
    }

    pub struct GoalStatusArray in action_msgs / msg {
        pub status_list: Vec<GoalStatus>,
    }

    /// Cancel goals: a zero id and zero stamp cancel all; a zero id and a stamp cancel
    /// all accepted at or before it; an id cancels that goal (and, with a stamp, also
    /// those accepted at or before it).
    pub struct CancelGoalRequest in action_msgs / srv as "CancelGoal_Request" {
        pub goal_info: GoalInfo,
    }

    pub struct CancelGoalResponse in action_msgs / srv as "CancelGoal_Response" {
        pub return_code: i8,
        pub goals_canceling: Vec<GoalInfo>,
    }
    consts {
        ERROR_NONE: i8 = 0,
        ERROR_REJECTED: i8 = 1,
        ERROR_UNKNOWN_GOAL_ID: i8 = 2,
        ERROR_GOAL_TERMINATED: i8 = 3,
    }
}

crate::ros_service! {
    /// `action_msgs/srv/CancelGoal`.
    pub struct CancelGoal in action_msgs { CancelGoalRequest, CancelGoalResponse }
}

crate::msg::register!(
    GoalInfo,
    GoalStatus,
    GoalStatusArray,
    CancelGoalRequest,
    CancelGoalResponse
);
