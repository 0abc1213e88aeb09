//! `nav2_msgs`: the NavigateToPose action of Nav2's BT navigator.
//!
//! The result differs between distros: Jazzy reports `error_code` and `error_msg`,
//! Humble an empty result (`std_msgs/Empty result`).

use super::builtin_interfaces::Duration;
use super::geometry_msgs::PoseStamped;

/// The code a Jazzy result carries when the server ended the goal itself for a reason
/// Nav2's own codes do not cover (newer Nav2 names it `UNKNOWN`).
pub const UNKNOWN_ERROR: u16 = 9000;

crate::ros_message! {
    pub struct NavigateToPoseGoal in nav2_msgs / action as "NavigateToPose_Goal" {
        pub pose: PoseStamped,
        /// Empty: the navigator's default tree.
        pub behavior_tree: String,
    }

    pub struct NavigateToPoseFeedback in nav2_msgs / action as "NavigateToPose_Feedback" {
        pub current_pose: PoseStamped,
        pub navigation_time: Duration,
        pub estimated_time_remaining: Duration,
        pub number_of_recoveries: i16,
        pub distance_remaining: f32,
    }
}

#[cfg(feature = "jazzy")]
crate::ros_message! {
    /// Jazzy: a code (planner 2xx, controller 1xx, 0 success) and a message.
    pub struct NavigateToPoseResult in nav2_msgs / action as "NavigateToPose_Result" {
        pub error_code: u16,
        pub error_msg: String,
    }
    consts {
        NONE: u16 = 0,
    }
}

#[cfg(feature = "humble")]
crate::ros_message! {
    /// Humble: no error information, only the terminal status.
    pub struct NavigateToPoseResult in nav2_msgs / action as "NavigateToPose_Result" {
        pub result: super::std_msgs::Empty,
    }
}

impl NavigateToPoseResult {
    /// A result with `code` and `message` where the distro can carry them.
    pub fn with_error(code: u16, message: impl Into<String>) -> Self {
        let message = message.into();
        #[cfg(feature = "jazzy")]
        {
            Self {
                error_code: code,
                error_msg: message,
            }
        }
        #[cfg(feature = "humble")]
        {
            let _ = (code, message);
            Self::default()
        }
    }

    /// The error code and message, where the distro carries them.
    pub fn error(&self) -> Option<(u16, &str)> {
        #[cfg(feature = "jazzy")]
        {
            Some((self.error_code, &self.error_msg))
        }
        #[cfg(feature = "humble")]
        {
            None
        }
    }
}

crate::ros_action! {
    /// `nav2_msgs/action/NavigateToPose`.
    pub struct NavigateToPose in nav2_msgs {
        NavigateToPoseGoal, NavigateToPoseResult, NavigateToPoseFeedback
    }
    fn result_for(reason, message) {
        use crate::msg::EndReason;
        let code = match reason {
            EndReason::Preempted | EndReason::Canceled => 0,
            EndReason::EStop
            | EndReason::Shutdown
            | EndReason::HandlerFailed
            | EndReason::ClientLost
            | EndReason::Deactivated
            | EndReason::Restarted => UNKNOWN_ERROR,
        };
        NavigateToPoseResult::with_error(code, message)
    }
}

crate::msg::register!(
    NavigateToPoseGoal,
    NavigateToPoseResult,
    NavigateToPoseFeedback
);
