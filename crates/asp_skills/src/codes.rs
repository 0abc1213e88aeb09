//! What a failed motion means to the agent: every MoveIt error code maps to a failure
//! kind, whether retrying may help, whether object positions are unknown afterwards
//! (SPEC §1.7 remapping) and a hint that says what to try. The executor's own failures
//! (refusals, e-stop, verifier verdicts, nothing held) have codes of their own, above
//! 1000 so they never collide with MoveIt's (negative, 0, 1, 99999) or Nav2's (0–299).

use asp_core::robot::MoveItErrorCode;
use asp_core::{Failure, FailureKind};

/// The executor's own failure codes (`Failure::code`).
pub mod ours {
    /// The skill is not on `/**.safety.allowed_skills`.
    pub const SKILL_NOT_ALLOWED: i32 = 1001;
    /// An end-effector target lies outside `/**.safety.workspace`.
    pub const OUTSIDE_WORKSPACE: i32 = 1002;
    /// A velocity/acceleration scaling or gripper effort above its cap.
    pub const ABOVE_LIMIT: i32 = 1003;
    /// The e-stop is engaged, or was engaged during the skill.
    pub const ESTOP: i32 = 1004;
    /// The request is malformed (empty cloud, missing affordance, nothing held, …).
    pub const INVALID_REQUEST: i32 = 1005;
    /// No grasp or pose candidate survived the geometric checks.
    pub const NO_CANDIDATE: i32 = 1006;
    /// The verifier refused the commit.
    pub const COMMIT_REJECTED: i32 = 1010;
    /// The verifier judged the outcome unsuccessful (or could not tell).
    pub const OUTCOME_NOT_SUCCEEDED: i32 = 1011;
    /// The gripper closed on nothing after a grasp-type skill.
    pub const NOTHING_HELD: i32 = 1012;
    /// The robot or the verifier did not answer.
    pub const COMMUNICATION: i32 = 1013;
    /// The caller cancelled the skill.
    pub const CANCELLED: i32 = 1014;
    /// A push reached something but the verifier did not see the part pressed: maybe
    /// another key was, and a press cannot be undone (the goal can no longer be
    /// confirmed). Retryable.
    pub const PRESS_UNCONFIRMED: i32 = 1015;
    /// Before a grasp, a fresh view saw the object's place free: it is not where the map
    /// has it (nothing moved; retrieve it again).
    pub const NOT_THERE: i32 = 1016;
}

/// How the agent should read one MoveIt error code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodeFeedback {
    pub code: MoveItErrorCode,
    pub kind: FailureKind,
    /// Calling the skill again (after the hinted action) may succeed.
    pub retryable: bool,
    /// Object positions are unknown afterwards: rebuild the map.
    pub needs_remap: bool,
    /// What happened and what to try, for the model.
    pub hint: &'static str,
}

impl CodeFeedback {
    /// The machine-readable failure.
    pub fn failure(&self) -> Failure {
        let mut f = Failure::new(self.kind).with_code(self.code.code());
        f.retryable = self.retryable;
        f.needs_remap = self.needs_remap;
        f
    }
}

/// The feedback for `code` (SUCCESS maps to an internal "not a failure" entry).
pub fn moveit_feedback(code: MoveItErrorCode) -> CodeFeedback {
    use FailureKind as K;
    use MoveItErrorCode as C;
    let (kind, retryable, needs_remap, hint) = match code {
        C::Success => (
            K::Internal,
            false,
            false,
            "the planner reported success; this is not a failure",
        ),
        C::NoIkSolution => (
            K::Planning,
            true,
            false,
            "the target is out of the arm's reach: go_to the object to get closer, or choose another part or object",
        ),
        C::PlanningFailed => (
            K::Planning,
            true,
            false,
            "no collision-free path to the target: clear the way or approach from another side (go_to), then retry",
        ),
        C::InvalidMotionPlan => (
            K::Planning,
            true,
            false,
            "the straight-line motion would collide or pass a singularity: retry from another side or another part",
        ),
        C::MotionPlanInvalidatedByEnvironmentChange => (
            K::Planning,
            true,
            true,
            "the scene changed while moving: look again (retrieve the object) and retry",
        ),
        C::ControlFailed => (
            K::Execution,
            false,
            true,
            "the arm controller failed during the motion; objects may have moved; check the robot before retrying",
        ),
        C::UnableToAquireSensorData => (
            K::Internal,
            true,
            false,
            "the planner had no sensor data; wait for the cameras and retry",
        ),
        C::TimedOut => (
            K::Planning,
            true,
            false,
            "planning timed out: retry, or approach the object from a clearer side",
        ),
        C::Preempted => (
            K::Cancelled,
            false,
            false,
            "the motion was stopped (cancel or e-stop); the arm stopped where it was",
        ),
        C::StartStateInCollision => (
            K::Planning,
            false,
            true,
            "the arm starts in contact with something; move it clear (home) before any skill",
        ),
        C::StartStateViolatesPathConstraints => (
            K::Planning,
            false,
            false,
            "the arm's start violates the path constraints; move it home first",
        ),
        C::StartStateInvalid => (
            K::Internal,
            false,
            false,
            "the arm's start state is invalid (joint limits); move it home first",
        ),
        C::GoalInCollision => (
            K::Planning,
            true,
            false,
            "the target pose collides with the scene: the object may be blocked; try another part, another object or another side",
        ),
        C::GoalViolatesPathConstraints => (
            K::Planning,
            false,
            false,
            "the target violates the path constraints of this motion; choose another skill",
        ),
        C::GoalConstraintsViolated => (
            K::Execution,
            true,
            false,
            "the arm did not end within the goal tolerance; retry",
        ),
        C::GoalStateInvalid => (
            K::Planning,
            true,
            false,
            "the target state is invalid for the arm; try another part or side",
        ),
        C::UnrecognizedGoalType => (
            K::Internal,
            false,
            false,
            "the planner does not accept this goal type: a configuration fault, not the agent's",
        ),
        C::InvalidGroupName => (
            K::Internal,
            false,
            false,
            "the planning group is unknown: check skill_executor_node.interfaces.planning_group",
        ),
        C::InvalidGoalConstraints => (
            K::Internal,
            false,
            false,
            "the pose goal was malformed (tolerances, scalings): a fault in the executor or its configuration",
        ),
        C::InvalidRobotState => (
            K::Internal,
            false,
            false,
            "the robot state sent to the planner is invalid; check the joint states",
        ),
        C::InvalidLinkName => (
            K::Internal,
            false,
            false,
            "the end-effector link is unknown: check skill_executor_node.interfaces.end_effector_link",
        ),
        C::InvalidObjectName => (
            K::Internal,
            false,
            true,
            "an object the motion may touch is not in the planning scene: rebuild the map and retry",
        ),
        C::FrameTransformFailure => (
            K::Internal,
            true,
            false,
            "a frame transform was missing (TF not ready); retry in a moment",
        ),
        C::CollisionCheckingUnavailable => (
            K::Internal,
            true,
            false,
            "collision checking is unavailable in the planner; retry when move_group is ready",
        ),
        C::RobotStateStale => (
            K::Internal,
            true,
            false,
            "the robot state is stale (no joint states); retry when the robot reports again",
        ),
        C::SensorInfoStale => (
            K::Internal,
            true,
            false,
            "the sensor information is stale; retry when the cameras report again",
        ),
        C::CommunicationFailure => (
            K::Internal,
            true,
            false,
            "the planner could not be reached; retry",
        ),
        C::Crash => (
            K::Internal,
            false,
            false,
            "the planner crashed; the motion stack needs attention",
        ),
        C::Abort => (
            K::Execution,
            false,
            true,
            "the motion was aborted; objects may have moved; look again before retrying",
        ),
        C::Undefined | C::Failure => (
            K::Execution,
            false,
            false,
            "the motion failed for an unknown reason; check the robot",
        ),
    };
    CodeFeedback {
        code,
        kind,
        retryable,
        needs_remap,
        hint,
    }
}

/// Whether the code means the planner refused the goal before anything moved, so the
/// next candidate pose may be tried (MoveIt plans before it executes).
pub fn is_planning_refusal(code: MoveItErrorCode) -> bool {
    use MoveItErrorCode as C;
    matches!(
        code,
        C::NoIkSolution
            | C::PlanningFailed
            | C::InvalidMotionPlan
            | C::GoalInCollision
            | C::GoalStateInvalid
            | C::TimedOut
            | C::GoalViolatesPathConstraints
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table, as the agent relies on it: (code, kind, retryable, needs_remap).
    const EXPECTED: [(MoveItErrorCode, FailureKind, bool, bool); 31] = {
        use FailureKind as K;
        use MoveItErrorCode as C;
        [
            (C::Success, K::Internal, false, false),
            (C::Undefined, K::Execution, false, false),
            (C::Failure, K::Execution, false, false),
            (C::PlanningFailed, K::Planning, true, false),
            (C::InvalidMotionPlan, K::Planning, true, false),
            (
                C::MotionPlanInvalidatedByEnvironmentChange,
                K::Planning,
                true,
                true,
            ),
            (C::ControlFailed, K::Execution, false, true),
            (C::UnableToAquireSensorData, K::Internal, true, false),
            (C::TimedOut, K::Planning, true, false),
            (C::Preempted, K::Cancelled, false, false),
            (C::StartStateInCollision, K::Planning, false, true),
            (
                C::StartStateViolatesPathConstraints,
                K::Planning,
                false,
                false,
            ),
            (C::StartStateInvalid, K::Internal, false, false),
            (C::GoalInCollision, K::Planning, true, false),
            (C::GoalViolatesPathConstraints, K::Planning, false, false),
            (C::GoalConstraintsViolated, K::Execution, true, false),
            (C::GoalStateInvalid, K::Planning, true, false),
            (C::UnrecognizedGoalType, K::Internal, false, false),
            (C::InvalidGroupName, K::Internal, false, false),
            (C::InvalidGoalConstraints, K::Internal, false, false),
            (C::InvalidRobotState, K::Internal, false, false),
            (C::InvalidLinkName, K::Internal, false, false),
            (C::InvalidObjectName, K::Internal, false, true),
            (C::FrameTransformFailure, K::Internal, true, false),
            (C::CollisionCheckingUnavailable, K::Internal, true, false),
            (C::RobotStateStale, K::Internal, true, false),
            (C::SensorInfoStale, K::Internal, true, false),
            (C::CommunicationFailure, K::Internal, true, false),
            (C::Crash, K::Internal, false, false),
            (C::Abort, K::Execution, false, true),
            (C::NoIkSolution, K::Planning, true, false),
        ]
    };

    #[test]
    fn every_moveit_code_has_actionable_feedback() {
        let mut seen = std::collections::HashSet::new();
        for (code, kind, retryable, remap) in EXPECTED {
            assert!(seen.insert(code.code()), "{code} listed twice");
            let f = moveit_feedback(code);
            assert_eq!(
                (f.kind, f.retryable, f.needs_remap),
                (kind, retryable, remap),
                "{code}"
            );
            let failure = f.failure();
            assert_eq!(failure.code, code.code(), "{code}");
            assert_eq!(failure.kind, kind);
            assert_eq!((failure.retryable, failure.needs_remap), (retryable, remap));
            assert!(f.hint.len() > 20, "{code}: hint too short: {}", f.hint);
        }
        // every wire value round-trips into a code the table covers
        for v in -40..=2 {
            let c = MoveItErrorCode::from_code(v);
            assert!(seen.contains(&c.code()), "{v} -> {c} not in the table");
        }
        assert!(seen.contains(&99999));
        assert_eq!(seen.len(), 31);
    }

    #[test]
    fn hints_say_what_to_try() {
        assert!(
            moveit_feedback(MoveItErrorCode::NoIkSolution)
                .hint
                .contains("go_to")
        );
        assert!(
            moveit_feedback(MoveItErrorCode::InvalidGroupName)
                .hint
                .contains("planning_group")
        );
        assert!(
            moveit_feedback(MoveItErrorCode::MotionPlanInvalidatedByEnvironmentChange)
                .hint
                .contains("look again")
        );
    }

    #[test]
    fn planning_refusals_are_the_codes_where_nothing_moved() {
        use MoveItErrorCode as C;
        for c in [
            C::NoIkSolution,
            C::PlanningFailed,
            C::GoalInCollision,
            C::InvalidMotionPlan,
        ] {
            assert!(is_planning_refusal(c), "{c}");
        }
        for c in [
            C::ControlFailed,
            C::Preempted,
            C::Abort,
            C::Success,
            C::Crash,
        ] {
            assert!(!is_planning_refusal(c), "{c}");
        }
    }

    #[test]
    fn our_codes_do_not_collide_with_upstream() {
        for c in [
            ours::SKILL_NOT_ALLOWED,
            ours::OUTSIDE_WORKSPACE,
            ours::ABOVE_LIMIT,
            ours::ESTOP,
            ours::INVALID_REQUEST,
            ours::NO_CANDIDATE,
            ours::COMMIT_REJECTED,
            ours::OUTCOME_NOT_SUCCEEDED,
            ours::NOTHING_HELD,
            ours::COMMUNICATION,
            ours::CANCELLED,
        ] {
            assert!(c > 1000 && c < 2000);
            assert_eq!(MoveItErrorCode::from_code(c), MoveItErrorCode::Failure);
        }
    }
}
