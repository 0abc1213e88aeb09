//! Nav2's `NavigateToPose` error codes as feedback the agent can act on, and go_to's own
//! failure codes (above 1100, clear of Nav2's 0–299 and the skill executor's 1001–1099).

use asp_core::robot::NavErrorCode;
use asp_core::{Failure, FailureKind};

/// go_to's own codes (`Failure::code`).
pub mod ours {
    /// No collision-free pose on any circle between the smallest and largest radius.
    pub const NO_VALID_POSE: i32 = 1101;
    /// The e-stop is engaged or was engaged while driving.
    pub const ESTOP: i32 = 1102;
    /// The caller cancelled the navigation.
    pub const CANCELLED: i32 = 1103;
    /// The request is malformed (empty object cloud, a grid without cells, …).
    pub const INVALID_REQUEST: i32 = 1104;
    /// The base pose could not be read.
    pub const COMMUNICATION: i32 = 1105;
    /// Arrived, but the re-detection could not run (no camera frame, a model error).
    pub const NOT_REFOUND: i32 = 1106;
    /// Arrived, and closer looks said the object is not what was asked for: the map
    /// withdrew it from its query (retrieve again).
    pub const NOT_IT: i32 = 1107;
}

/// How the agent should read one Nav2 code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NavFeedback {
    pub code: NavErrorCode,
    pub kind: FailureKind,
    pub retryable: bool,
    pub needs_remap: bool,
    pub hint: &'static str,
}

impl NavFeedback {
    pub fn failure(&self) -> Failure {
        let mut f = Failure::new(self.kind).with_code(i32::from(self.code.code()));
        f.retryable = self.retryable;
        f.needs_remap = self.needs_remap;
        f
    }
}

/// The feedback for an aborted navigation with `code`.
pub fn nav_feedback(code: NavErrorCode) -> NavFeedback {
    use FailureKind as K;
    use NavErrorCode as C;
    let (kind, retryable, needs_remap, hint) = match code {
        C::None => (
            K::Navigation,
            true,
            false,
            "navigation aborted without a reason; retry go_to",
        ),
        C::ControllerUnknown => (
            K::Navigation,
            true,
            false,
            "the controller failed on the way; retry go_to",
        ),
        C::InvalidController => (
            K::Internal,
            false,
            false,
            "the navigation controller is misconfigured: a system fault, not the agent's",
        ),
        C::ControllerTfError => (
            K::Internal,
            true,
            false,
            "the controller lost a transform (TF); retry in a moment",
        ),
        C::InvalidPath => (
            K::Navigation,
            true,
            false,
            "the path was invalid for the controller; retry go_to",
        ),
        C::PatienceExceeded => (
            K::Navigation,
            true,
            false,
            "the base was blocked too long on the way; retry go_to once the way is clear",
        ),
        C::FailedToMakeProgress => (
            K::Navigation,
            true,
            false,
            "the base stopped making progress (blocked); retry go_to once the way is clear",
        ),
        C::NoValidControl => (
            K::Navigation,
            true,
            false,
            "the controller found no valid command (too tight a passage); retry go_to",
        ),
        C::ControllerTimedOut => (
            K::Navigation,
            true,
            false,
            "driving took too long; retry go_to",
        ),
        C::PlannerUnknown => (
            K::Navigation,
            true,
            false,
            "the path planner failed; retry go_to",
        ),
        C::InvalidPlanner => (
            K::Internal,
            false,
            false,
            "the path planner is misconfigured: a system fault, not the agent's",
        ),
        C::PlannerTfError => (
            K::Internal,
            true,
            false,
            "the planner lost a transform (TF); retry in a moment",
        ),
        C::StartOutsideMap => (
            K::Navigation,
            false,
            true,
            "the robot is outside the map: localisation is lost; relocalise before navigating",
        ),
        C::GoalOutsideMap => (
            K::Navigation,
            true,
            true,
            "the pose near the object is outside the map: the object's position may be wrong; look again",
        ),
        C::StartOccupied => (
            K::Navigation,
            false,
            false,
            "the robot stands in an occupied cell: move it clear before navigating",
        ),
        C::GoalOccupied => (
            K::Navigation,
            true,
            true,
            "the pose near the object is occupied now: look again, then retry go_to",
        ),
        C::PlannerTimeout => (
            K::Navigation,
            true,
            false,
            "path planning timed out; retry go_to",
        ),
        C::NoValidPath => (
            K::Navigation,
            true,
            false,
            "no path to the object: it may be unreachable from here (closed door, blocked room); try another object",
        ),
    };
    NavFeedback {
        code,
        kind,
        retryable,
        needs_remap,
        hint,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_nav2_code_has_actionable_feedback() {
        use FailureKind as K;
        use NavErrorCode as C;
        let table = [
            (C::None, K::Navigation, true, false),
            (C::ControllerUnknown, K::Navigation, true, false),
            (C::InvalidController, K::Internal, false, false),
            (C::ControllerTfError, K::Internal, true, false),
            (C::InvalidPath, K::Navigation, true, false),
            (C::PatienceExceeded, K::Navigation, true, false),
            (C::FailedToMakeProgress, K::Navigation, true, false),
            (C::NoValidControl, K::Navigation, true, false),
            (C::ControllerTimedOut, K::Navigation, true, false),
            (C::PlannerUnknown, K::Navigation, true, false),
            (C::InvalidPlanner, K::Internal, false, false),
            (C::PlannerTfError, K::Internal, true, false),
            (C::StartOutsideMap, K::Navigation, false, true),
            (C::GoalOutsideMap, K::Navigation, true, true),
            (C::StartOccupied, K::Navigation, false, false),
            (C::GoalOccupied, K::Navigation, true, true),
            (C::PlannerTimeout, K::Navigation, true, false),
            (C::NoValidPath, K::Navigation, true, false),
        ];
        let mut codes = std::collections::HashSet::new();
        for (code, kind, retryable, remap) in table {
            assert!(codes.insert(code.code()));
            let fb = nav_feedback(code);
            assert_eq!(
                (fb.kind, fb.retryable, fb.needs_remap),
                (kind, retryable, remap),
                "{code:?}"
            );
            let f = fb.failure();
            assert_eq!(f.code, i32::from(code.code()));
            assert!(fb.hint.len() > 20);
        }
        // every wire value maps into the table
        for v in 0..300u16 {
            assert!(codes.contains(&NavErrorCode::from_code(v).code()), "{v}");
        }
        assert!(nav_feedback(C::NoValidPath).hint.contains("unreachable"));
    }
}
