//! `asp_interfaces`: the project's own interfaces. Their `.msg/.srv/.action` files live
//! in `crates/asp_ros/interfaces/asp_interfaces/` (a ROS 2 package that `colcon build`
//! turns into rclpy/rclcpp types for `ros2 service call` and friends); a test checks
//! that these structs and those files agree field for field.
//!
//! Adding an interface: write the file, declare the struct(s) here with
//! `ros_message!` (and `ros_service!`/`ros_action!`), add them to `register!`.

use asp_core::{FailureKind, ObjectKey, State};

use super::builtin_interfaces::Time;
use super::geometry_msgs::TransformStamped;
use super::sensor_msgs::Image;
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
        let code = match reason {
            EndReason::Preempted
            | EndReason::Canceled
            | EndReason::EStop
            | EndReason::ClientLost
            | EndReason::Deactivated => error_code(FailureKind::Cancelled),
            EndReason::Shutdown | EndReason::HandlerFailed => error_code(FailureKind::Internal),
            // the node that ran it is down (it died): said as such
            EndReason::Restarted => goal_refused::NODE_DOWN,
        };
        ExecuteGoalActionResult {
            success: false,
            error_code: code,
            error_msg: message.to_string(),
            summary: String::new(),
        }
    }
}

crate::ros_message! {
    /// Why a call between ASP nodes failed; `error_code` 0 means no failure.
    pub struct Failure in asp_interfaces / msg {
        /// [`error_code`] of the failure kind; 0 on success.
        pub error_code: u16,
        /// The source's own code (MoveIt, Nav2 or an ASP skill code).
        pub code: i32,
        pub retryable: bool,
        pub needs_remap: bool,
        pub error_msg: String,
    }

    /// A verifier verdict, on `/asp/verdicts` (reliable, transient local).
    pub struct Verdict in asp_interfaces / msg {
        pub header: Header,
        /// `commit` or `outcome`.
        pub stage: String,
        pub step: u64,
        /// The skill (commit) or the verb (outcome).
        pub skill: String,
        pub object: String,
        pub passed: bool,
        pub message: String,
        /// `asp_verify::CommitVerdict` or `OutcomeVerdict` as JSON.
        pub verdict_json: String,
    }

    /// What the object map holds, latched on `/asp/object_map`.
    pub struct ObjectMapSummary in asp_interfaces / msg {
        pub header: Header,
        pub objects: u32,
        pub points: u32,
        pub keys: Vec<String>,
        pub key_ids: Vec<u32>,
    }

    /// SIMULATION ONLY: a simulated camera frame's ground truth.
    pub struct SimGroundTruth in asp_interfaces / msg {
        pub header: Header,
        pub instance_ids: Image,
        pub part_ids: Image,
        pub legend_json: String,
    }

    pub struct RetrieveObjectsRequest in asp_interfaces / srv as "RetrieveObjects_Request" {
        pub query: String,
        /// Only objects in this room; empty: anywhere.
        pub room: String,
        /// Only objects on this storey ("upstairs", "floor 2", asp_core::Storey); empty:
        /// any.
        pub storey: String,
        /// The storey a relative `storey` counts from: 0 (the default) the one the
        /// base stands on, N the elevator's N-th from the ground floor (1: the ground
        /// floor).
        pub storey_counted_from: u32,
    }

    pub struct RetrieveObjectsResponse in asp_interfaces / srv as "RetrieveObjects_Response" {
        pub success: bool,
        pub failure: Failure,
        pub keys: Vec<String>,
        pub retrieval_json: String,
    }

    pub struct RecallMemoryRequest in asp_interfaces / srv as "RecallMemory_Request" {
        pub query: String,
        /// Only places in this room; empty: anywhere.
        pub room: String,
        /// Only places on this storey; empty: any.
        pub storey: String,
    }

    pub struct RecallMemoryResponse in asp_interfaces / srv as "RecallMemory_Response" {
        pub success: bool,
        pub failure: Failure,
        pub consulted: bool,
        pub answer: String,
        pub recollection_json: String,
    }

    pub struct SpatialQueryRequest in asp_interfaces / srv as "SpatialQuery_Request" {
        pub relation: String,
        pub a: String,
        pub b: String,
    }

    pub struct SpatialQueryResponse in asp_interfaces / srv as "SpatialQuery_Response" {
        pub success: bool,
        pub failure: Failure,
        pub is_number: bool,
        pub number: f64,
        pub truth: bool,
    }

    pub struct GetObjectRequest in asp_interfaces / srv as "GetObject_Request" {
        pub key: String,
        pub with_crops: bool,
    }

    pub struct GetObjectResponse in asp_interfaces / srv as "GetObject_Response" {
        pub success: bool,
        pub failure: Failure,
        pub name: String,
        pub query: String,
        pub points: u32,
        pub object_json: String,
    }

    pub struct GetObjectMapRequest in asp_interfaces / srv as "GetObjectMap_Request" {
        pub with_crops: bool,
    }

    pub struct GetObjectMapResponse in asp_interfaces / srv as "GetObjectMap_Response" {
        pub success: bool,
        pub failure: Failure,
        pub objects: u32,
        pub snapshot_json: String,
    }

    pub struct RebuildMapRequest in asp_interfaces / srv as "RebuildMap_Request" {
        pub keep: String,
    }

    pub struct RebuildMapResponse in asp_interfaces / srv as "RebuildMap_Response" {
        pub success: bool,
        pub failure: Failure,
        pub objects: u32,
        pub keyframes: u32,
        pub kept_keys: Vec<String>,
    }

    pub struct RelocalizeRequest in asp_interfaces / srv as "Relocalize_Request" {
        pub key: String,
        pub camera: String,
    }

    pub struct RelocalizeResponse in asp_interfaces / srv as "Relocalize_Response" {
        pub success: bool,
        pub failure: Failure,
        pub found: bool,
        pub relocalized_json: String,
    }

    pub struct ObjectMovedRequest in asp_interfaces / srv as "ObjectMoved_Request" {
        pub key: String,
        pub x: f32,
        pub y: f32,
        pub z: f32,
    }

    pub struct ObjectMovedResponse in asp_interfaces / srv as "ObjectMoved_Response" {
        pub success: bool,
        pub failure: Failure,
    }

    pub struct CommitSkillRequest in asp_interfaces / srv as "CommitSkill_Request" {
        pub skill: String,
        pub object: String,
        pub request_json: String,
        pub has_to_arm_base: bool,
        pub to_arm_base: TransformStamped,
    }

    pub struct CommitSkillResponse in asp_interfaces / srv as "CommitSkill_Response" {
        pub accepted: bool,
        pub step: u64,
        pub message: String,
        pub verdict_json: String,
    }

    pub struct CheckOutcomeRequest in asp_interfaces / srv as "CheckOutcome_Request" {
        pub step: u64,
        pub verb: String,
        pub object: String,
        pub request_json: String,
    }

    pub struct CheckOutcomeResponse in asp_interfaces / srv as "CheckOutcome_Response" {
        pub succeeded: bool,
        pub message: String,
        pub verdict_json: String,
    }

    pub struct RenderCameraRequest in asp_interfaces / srv as "RenderCamera_Request" {
        pub ground_truth: bool,
    }

    pub struct RenderCameraResponse in asp_interfaces / srv as "RenderCamera_Response" {
        pub success: bool,
        pub error_msg: String,
        pub stamp: Time,
    }

    pub struct DetectAffordancesGoal in asp_interfaces / action as "DetectAffordances_Goal" {
        pub key: String,
        pub action: String,
        pub skills: Vec<String>,
    }

    pub struct DetectAffordancesResult in asp_interfaces / action as "DetectAffordances_Result" {
        pub success: bool,
        pub failure: Failure,
        pub parts: Vec<String>,
        pub skills: Vec<String>,
        pub report_json: String,
    }

    pub struct DetectAffordancesFeedback in asp_interfaces / action as "DetectAffordances_Feedback" {
        pub message: String,
    }

    pub struct ExecuteSkillGoal in asp_interfaces / action as "ExecuteSkill_Goal" {
        pub skill: String,
        pub object: String,
        pub request_json: String,
    }

    pub struct ExecuteSkillResult in asp_interfaces / action as "ExecuteSkill_Result" {
        pub success: bool,
        pub failure: Failure,
        pub holding: bool,
        pub message: String,
        pub reply_json: String,
    }

    pub struct ExecuteSkillFeedback in asp_interfaces / action as "ExecuteSkill_Feedback" {
        pub message: String,
    }

    pub struct GoToGoal in asp_interfaces / action as "GoTo_Goal" {
        pub key: String,
        pub action: String,
        pub carried_height: f32,
        pub carried_radius: f32,
    }

    pub struct GoToResult in asp_interfaces / action as "GoTo_Result" {
        pub arrived: bool,
        pub failure: Failure,
        pub message: String,
        pub reply_json: String,
    }

    pub struct GoToFeedback in asp_interfaces / action as "GoTo_Feedback" {
        pub message: String,
    }

    pub struct RideElevatorGoal in asp_interfaces / action as "RideElevator_Goal" {
        pub storey: u32,
    }

    pub struct RideElevatorResult in asp_interfaces / action as "RideElevator_Result" {
        pub success: bool,
        pub error_msg: String,
        pub storey: u32,
        pub height_m: f32,
    }

    pub struct RideElevatorFeedback in asp_interfaces / action as "RideElevator_Feedback" {
        pub state: String,
        pub storey: u32,
    }
}

crate::ros_service! {
    /// `asp_interfaces/srv/RetrieveObjects`: `object_retrieval` on object_map_node.
    pub struct RetrieveObjects in asp_interfaces { RetrieveObjectsRequest, RetrieveObjectsResponse }
}
crate::ros_service! {
    /// `asp_interfaces/srv/RecallMemory`: `recall_memory` on object_map_node.
    pub struct RecallMemory in asp_interfaces { RecallMemoryRequest, RecallMemoryResponse }
}
crate::ros_service! {
    /// `asp_interfaces/srv/SpatialQuery`: a spatial question on object_map_node.
    pub struct SpatialQuery in asp_interfaces { SpatialQueryRequest, SpatialQueryResponse }
}
crate::ros_service! {
    /// `asp_interfaces/srv/GetObject`: an object of the map by key.
    pub struct GetObject in asp_interfaces { GetObjectRequest, GetObjectResponse }
}
crate::ros_service! {
    /// `asp_interfaces/srv/GetObjectMap`: the whole map and its keys.
    pub struct GetObjectMap in asp_interfaces { GetObjectMapRequest, GetObjectMapResponse }
}
crate::ros_service! {
    /// `asp_interfaces/srv/RebuildMap`: rebuild the map, keeping the held object.
    pub struct RebuildMap in asp_interfaces { RebuildMapRequest, RebuildMapResponse }
}
crate::ros_service! {
    /// `asp_interfaces/srv/Relocalize`: find an object again from where the robot stands.
    pub struct Relocalize in asp_interfaces { RelocalizeRequest, RelocalizeResponse }
}
crate::ros_service! {
    /// `asp_interfaces/srv/ObjectMoved`: the robot put an object somewhere else.
    pub struct ObjectMoved in asp_interfaces { ObjectMovedRequest, ObjectMovedResponse }
}
crate::ros_service! {
    /// `asp_interfaces/srv/CommitSkill`: the verifier's commit gate.
    pub struct CommitSkill in asp_interfaces { CommitSkillRequest, CommitSkillResponse }
}
crate::ros_service! {
    /// `asp_interfaces/srv/CheckOutcome`: the verifier's outcome check.
    pub struct CheckOutcome in asp_interfaces { CheckOutcomeRequest, CheckOutcomeResponse }
}
crate::ros_service! {
    /// `asp_interfaces/srv/RenderCamera`: SIMULATION ONLY, render a camera frame now.
    pub struct RenderCamera in asp_interfaces { RenderCameraRequest, RenderCameraResponse }
}

/// The [`Failure`] of a result the server ended itself (cancel, preemption, e-stop,
/// shutdown).
fn stopped_failure(reason: crate::msg::EndReason, message: &str) -> Failure {
    use crate::msg::EndReason;
    let kind = match reason {
        EndReason::Preempted
        | EndReason::Canceled
        | EndReason::EStop
        | EndReason::ClientLost
        | EndReason::Deactivated => FailureKind::Cancelled,
        EndReason::Shutdown | EndReason::HandlerFailed | EndReason::Restarted => {
            FailureKind::Internal
        }
    };
    Failure {
        error_code: error_code(kind),
        code: 0,
        retryable: false,
        needs_remap: false,
        error_msg: message.to_string(),
    }
}

crate::ros_action! {
    /// `asp_interfaces/action/DetectAffordances`: affordance detection on affordance_node.
    pub struct DetectAffordances in asp_interfaces {
        DetectAffordancesGoal, DetectAffordancesResult, DetectAffordancesFeedback
    }
    fn result_for(reason, message) {
        DetectAffordancesResult {
            failure: stopped_failure(reason, message),
            ..DetectAffordancesResult::default()
        }
    }
}

crate::ros_action! {
    /// `asp_interfaces/action/ExecuteSkill`: one verifier-gated skill on
    /// skill_executor_node.
    pub struct ExecuteSkill in asp_interfaces {
        ExecuteSkillGoal, ExecuteSkillResult, ExecuteSkillFeedback
    }
    fn result_for(reason, message) {
        ExecuteSkillResult {
            failure: stopped_failure(reason, message),
            message: message.to_string(),
            ..ExecuteSkillResult::default()
        }
    }
}

crate::ros_action! {
    /// `asp_interfaces/action/GoTo`: affordance-facing navigation on go_to_node.
    pub struct GoTo in asp_interfaces { GoToGoal, GoToResult, GoToFeedback }
    fn result_for(reason, message) {
        GoToResult {
            failure: stopped_failure(reason, message),
            message: message.to_string(),
            ..GoToResult::default()
        }
    }
}

crate::ros_action! {
    /// `asp_interfaces/action/RideElevator`: the building's elevator (the sim node in
    /// simulation; a site's elevator integration on a robot).
    pub struct RideElevator in asp_interfaces {
        RideElevatorGoal, RideElevatorResult, RideElevatorFeedback
    }
    fn result_for(reason, message) {
        let _ = reason;
        RideElevatorResult {
            error_msg: message.to_string(),
            ..RideElevatorResult::default()
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
    Failure,
    Verdict,
    ObjectMapSummary,
    SimGroundTruth,
    RetrieveObjectsRequest,
    RetrieveObjectsResponse,
    RecallMemoryRequest,
    RecallMemoryResponse,
    SpatialQueryRequest,
    SpatialQueryResponse,
    GetObjectRequest,
    GetObjectResponse,
    GetObjectMapRequest,
    GetObjectMapResponse,
    RebuildMapRequest,
    RebuildMapResponse,
    RelocalizeRequest,
    RelocalizeResponse,
    ObjectMovedRequest,
    ObjectMovedResponse,
    CommitSkillRequest,
    CommitSkillResponse,
    CheckOutcomeRequest,
    CheckOutcomeResponse,
    RenderCameraRequest,
    RenderCameraResponse,
    DetectAffordancesGoal,
    DetectAffordancesResult,
    DetectAffordancesFeedback,
    ExecuteSkillGoal,
    ExecuteSkillResult,
    ExecuteSkillFeedback,
    GoToGoal,
    GoToResult,
    GoToFeedback,
    RideElevatorGoal,
    RideElevatorResult,
    RideElevatorFeedback,
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

/// ExecuteGoal `error_code`s of goals refused before any planning or motion, after the
/// failure kinds' 1–13. The message describes the input without repeating it.
pub mod goal_refused {
    /// The goal is empty.
    pub const EMPTY: u16 = 14;
    /// The goal is only whitespace.
    pub const BLANK: u16 = 15;
    /// Longer than `agent_node.limits.max_goal_chars`.
    pub const TOO_LONG: u16 = 16;
    /// A control character other than tab and line breaks.
    pub const CONTROL_CHARACTER: u16 = 17;
    /// No word of the goal asks for an action.
    pub const NO_VERB: u16 = 18;
    /// The action is outside the robot's skills.
    pub const UNSUPPORTED: u16 = 19;
    /// The goal would harm someone or something.
    pub const UNSAFE: u16 = 20;
    /// The action has nothing to act on.
    pub const NO_OBJECT: u16 = 21;
    /// A verb was understood only approximately; the message asks "did you mean …?".
    pub const UNCLEAR: u16 = 22;
    /// The e-stop is engaged: no goal starts until it is released.
    pub const ESTOP: u16 = 23;
    /// Another goal runs and `agent_node.when_busy` is `reject`.
    pub const BUSY: u16 = 24;
    /// A node the goal needs is down (its heartbeat stopped): at acceptance when it did
    /// not come back within `common.supervision.node_wait_s`, or while the goal ran,
    /// which then ended with the robot's motion cancelled. The message names the node.
    pub const NODE_DOWN: u16 = 25;
    /// agent_node is not active (REP-2006 lifecycle): at acceptance, or mid-goal when it
    /// was deactivated, which ends the goal and cancels the robot's motion.
    pub const INACTIVE: u16 = 26;
}

/// The failure kind of an ExecuteGoal `error_code`; `None` for 0 (success) and unknown
/// codes.
pub fn failure_kind(code: u16) -> Option<FailureKind> {
    KINDS.get(usize::from(code).checked_sub(1)?).copied()
}

impl Failure {
    /// The failure of a domain error, with its message.
    pub fn from_core(failure: &asp_core::Failure, message: impl Into<String>) -> Self {
        Self {
            error_code: error_code(failure.kind),
            code: failure.code,
            retryable: failure.retryable,
            needs_remap: failure.needs_remap,
            error_msg: message.into(),
        }
    }

    /// Whether this says "no failure" (`error_code` 0).
    pub fn is_none(&self) -> bool {
        self.error_code == 0
    }

    /// The domain failure; `None` for `error_code` 0. An unknown code reads as an
    /// internal failure (a newer peer's kind this build does not know).
    pub fn to_core(&self) -> Option<asp_core::Failure> {
        if self.is_none() {
            return None;
        }
        Some(asp_core::Failure {
            kind: failure_kind(self.error_code).unwrap_or(FailureKind::Internal),
            code: self.code,
            retryable: self.retryable,
            needs_remap: self.needs_remap,
        })
    }
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
    fn failures_round_trip_and_unknown_codes_are_internal() {
        let f = asp_core::Failure::new(FailureKind::Planning)
            .with_code(-31)
            .retryable();
        let m = Failure::from_core(&f, "no IK solution");
        assert_eq!(m.error_code, 8);
        assert!(!m.is_none());
        assert_eq!(m.to_core(), Some(f));
        assert_eq!(Failure::default().to_core(), None);
        let odd = Failure {
            error_code: 77,
            ..Failure::default()
        };
        assert_eq!(odd.to_core().unwrap().kind, FailureKind::Internal);
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
