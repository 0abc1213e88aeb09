//! `asp_interfaces`: the project's own interfaces. Their `.msg/.srv/.action` files live
//! in `crates/asp_ros/interfaces/asp_interfaces/` (a ROS 2 package that `colcon build`
//! turns into rclpy/rclcpp types for `ros2 service call` and friends); a test checks
//! that these structs and those files agree field for field.
//!
//! Adding an interface: write the file, declare the struct(s) here with
//! `ros_message!` (and `ros_service!`/`ros_action!`), add them to `register!`.

use asp_core::{FailureKind, ObjectKey, State};

use super::std_msgs::Header;
use crate::RosError;

crate::ros_message! {
    /// The agent's symbolic state, latched on `/asp/state`.
    pub struct SymbolicState in asp_interfaces / msg {
        pub header: Header,
        /// Empty when nothing is held.
        pub held_object: String,
        pub inventory: Vec<String>,
    }

    pub struct ExecuteGoalRequest in asp_interfaces / srv as "ExecuteGoal_Request" {
        pub goal: String,
    }

    pub struct ExecuteGoalResponse in asp_interfaces / srv as "ExecuteGoal_Response" {
        pub success: bool,
        /// 0 on success, otherwise [`error_code`] of the failure kind.
        pub error_code: u16,
        pub error_msg: String,
        pub summary: String,
    }

    pub struct ExecuteGoalActionGoal in asp_interfaces / action as "ExecuteGoal_Goal" {
        pub goal: String,
    }

    pub struct ExecuteGoalActionResult in asp_interfaces / action as "ExecuteGoal_Result" {
        pub success: bool,
        pub error_code: u16,
        pub error_msg: String,
        pub summary: String,
    }

    /// One tool call of the running goal.
    pub struct ExecuteGoalActionFeedback in asp_interfaces / action as "ExecuteGoal_Feedback" {
        /// 1-based index of the call within the goal.
        pub step: u32,
        /// The call as the agent made it, e.g. `grasp(obj_key="red_mug_0")`.
        pub tool_call: String,
        pub success: bool,
        /// The tool's feedback message.
        pub outcome: String,
        /// The symbolic state after the call.
        pub state: SymbolicState,
    }
}

crate::ros_service! {
    /// `asp_interfaces/srv/ExecuteGoal`: run a language goal to the end.
    pub struct ExecuteGoal in asp_interfaces { ExecuteGoalRequest, ExecuteGoalResponse }
}

crate::ros_action! {
    /// `asp_interfaces/action/ExecuteGoal`: the same with per-tool-call feedback and
    /// cancellation.
    pub struct ExecuteGoalAction in asp_interfaces as "ExecuteGoal" {
        ExecuteGoalActionGoal, ExecuteGoalActionResult, ExecuteGoalActionFeedback
    }
    fn result_for(reason, message) {
        use crate::msg::EndReason;
        let kind = match reason {
            EndReason::Preempted | EndReason::Canceled | EndReason::EStop => FailureKind::Cancelled,
            EndReason::Shutdown | EndReason::HandlerFailed => FailureKind::Internal,
        };
        ExecuteGoalActionResult {
            success: false,
            error_code: error_code(kind),
            error_msg: message.to_string(),
            summary: String::new(),
        }
    }
}

crate::msg::register!(
    SymbolicState,
    ExecuteGoalRequest,
    ExecuteGoalResponse,
    ExecuteGoalActionGoal,
    ExecuteGoalActionResult,
    ExecuteGoalActionFeedback,
);

const KINDS: [FailureKind; 13] = [
    FailureKind::UnknownTool,
    FailureKind::InvalidArgument,
    FailureKind::UnknownObject,
    FailureKind::Precondition,
    FailureKind::NotAllowed,
    FailureKind::Perception,
    FailureKind::Grounding,
    FailureKind::Planning,
    FailureKind::Execution,
    FailureKind::Navigation,
    FailureKind::Verification,
    FailureKind::Cancelled,
    FailureKind::Internal,
];

/// The `error_code` of an ExecuteGoal result for a failure kind: 1 `unknown_tool`,
/// 2 `invalid_argument`, 3 `unknown_object`, 4 `precondition`, 5 `not_allowed`,
/// 6 `perception`, 7 `grounding`, 8 `planning`, 9 `execution`, 10 `navigation`,
/// 11 `verification`, 12 `cancelled`, 13 `internal`; 0 means success.
pub fn error_code(kind: FailureKind) -> u16 {
    KINDS
        .iter()
        .position(|k| *k == kind)
        .map_or(13, |i| i as u16 + 1)
}

/// The failure kind of an ExecuteGoal `error_code`; `None` for 0 (success) and unknown
/// codes.
pub fn failure_kind(code: u16) -> Option<FailureKind> {
    KINDS.get(usize::from(code).checked_sub(1)?).copied()
}

impl SymbolicState {
    pub fn from_state(state: &State, header: Header) -> Self {
        Self {
            header,
            held_object: state
                .held_object
                .as_ref()
                .map(|k| k.as_str().to_string())
                .unwrap_or_default(),
            inventory: state
                .inventory
                .iter()
                .map(|k| k.as_str().to_string())
                .collect(),
        }
    }

    /// The domain state; an invalid key is an error naming it.
    pub fn to_state(&self) -> Result<State, RosError> {
        let key = |s: &str| {
            ObjectKey::new(s)
                .map_err(|e| RosError::Conversion(format!("asp_interfaces/SymbolicState: {e}")))
        };
        Ok(State {
            held_object: if self.held_object.is_empty() {
                None
            } else {
                Some(key(&self.held_object)?)
            },
            inventory: self
                .inventory
                .iter()
                .map(|s| key(s))
                .collect::<Result<_, _>>()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_codes_round_trip_and_zero_is_success() {
        for (i, k) in KINDS.iter().enumerate() {
            assert_eq!(error_code(*k), i as u16 + 1);
            assert_eq!(failure_kind(error_code(*k)), Some(*k));
        }
        assert_eq!(failure_kind(0), None);
        assert_eq!(failure_kind(99), None);
    }

    #[test]
    fn symbolic_state_round_trip_and_bad_key() {
        let mut s = State::default();
        s.add(ObjectKey::new("red_mug_0").unwrap());
        s.held_object = Some(ObjectKey::new("red_mug_0").unwrap());
        let m = SymbolicState::from_state(&s, Header::default());
        assert_eq!(m.held_object, "red_mug_0");
        assert_eq!(m.to_state().unwrap(), s);
        let bad = SymbolicState {
            inventory: vec!["Bad Key".into()],
            ..SymbolicState::default()
        };
        let e = bad.to_state().unwrap_err().to_string();
        assert!(e.contains("Bad Key"), "{e}");
    }
}
