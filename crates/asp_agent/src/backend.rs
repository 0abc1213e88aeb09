//! The robot side of the tools: what the agent asks of the map, perception and skills.
//!
//! The agent owns the symbolic state and every guard (unknown tools, arguments, keys
//! outside the inventory, skills outside `/**.safety.allowed_skills`, gripper
//! preconditions, retry and call limits); a [`ToolBackend`] is only reached by calls that
//! passed them. Implementations: the ROS nodes (object_map_node, affordance_node,
//! skill_executor, go_to_node) or the embedded simulator in the next phase;
//! [`crate::testing::TableWorld`] in tests and benchmarks.

use asp_core::{Failure, FailureKind, ObjectKey, Recollection, Skill, State, Within};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

/// What every backend call receives.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// The goal's id (the action goal id in agent_node).
    pub goal_id: String,
    /// 1-based index of the tool call within the goal.
    pub call_index: u32,
    /// The model's tool-call id (or `offline_<n>`).
    pub call_id: String,
    /// The symbolic state before the call.
    pub state: State,
    /// Cancelled when the goal is cancelled: stop the motion or navigation, then return
    /// (a [`FailureKind::Cancelled`] failure). The agent waits `limits.cancel_grace_s`
    /// for the return.
    pub cancel: CancellationToken,
}

/// A check the verifier made on a step (commit gate before, outcome check after).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// Which check: `gate` (may the skill commit?), `outcome` (did it work?), or another
    /// name the backend uses.
    pub stage: String,
    /// What was asked or measured, e.g. "has mug_0 been grasped and lifted?".
    pub check: String,
    pub passed: bool,
    /// A score where the check has one (gate value v, IoU, VLM confidence).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub detail: String,
}

/// The result of an action (interact, go_to, a skill) that completed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActionReport {
    /// Whether the gripper holds something afterwards, by the robot's own check. The
    /// agent sets `held_object` from it: holding after an action on `obj` with an empty
    /// gripper means holding `obj`; not holding means `None`.
    pub holding: bool,
    /// The skill that ran (interact and go_to pick theirs).
    pub skill: Option<Skill>,
    /// For the model, e.g. "grasped the mug by its handle".
    pub message: String,
    pub verdicts: Vec<Verdict>,
}

/// A backend call that failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolFailure {
    /// Kind, source code, retryable, and `needs_remap` (SPEC §1.7: object locations are
    /// unknown after it; the agent clears the inventory but the held object and rebuilds
    /// the map on the next object_retrieval).
    pub failure: Failure,
    /// For the model: what went wrong and what may help.
    pub message: String,
    /// The gripper afterwards, when known (`None`: unchanged).
    pub holding: Option<bool>,
    pub verdicts: Vec<Verdict>,
}

impl ToolFailure {
    pub fn new(kind: FailureKind, message: impl Into<String>) -> Self {
        Self {
            failure: Failure::new(kind),
            message: message.into(),
            holding: None,
            verdicts: Vec::new(),
        }
    }

    pub fn with_failure(mut self, failure: Failure) -> Self {
        self.failure = failure;
        self
    }

    pub fn holding(mut self, holding: bool) -> Self {
        self.holding = Some(holding);
        self
    }

    pub fn cancelled(message: impl Into<String>) -> Self {
        Self::new(FailureKind::Cancelled, message)
    }
}

/// Result of a backend call.
pub type ToolResult<T> = Result<T, ToolFailure>;

/// What `object_retrieval` found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Found {
    /// Keys of the confirmed objects, best first (possibly none).
    pub keys: Vec<ObjectKey>,
    /// For a request that named a room or a storey: whether it was kept to and as what,
    /// or why not ("the office was not checked: ..."), for the agent to read.
    pub room: Option<String>,
    /// For a request that named a storey relative to the robot's: the storey it was
    /// counted from (0: the ground floor), which the rest of the goal counts from.
    pub storeys_counted_from: Option<u32>,
}

/// The robot side of the agent's tools (SPEC §1.3). Every method gets keys that are in
/// the inventory and requests that passed the agent's guards; it must still enforce the
/// safety limits of the nodes it drives (allowed skills, workspace) itself.
#[async_trait]
pub trait ToolBackend: Send + Sync {
    /// Top-k retrieval with VLM confirmation (SPEC §1.3). Returns the keys of the
    /// confirmed objects, best first (possibly none). A backend makes keys with
    /// [`ObjectKey::from_query`] and keeps them stable for the same object while the map
    /// lives; it must keep the key of the held object valid across [`Self::remap`].
    /// With a room or a storey in `within`, only objects there count ("the desk in the
    /// office", "the phone upstairs"), and [`Found::room`] says whether it could be
    /// kept to.
    async fn object_retrieval(
        &self,
        query: &str,
        within: &Within,
        ctx: &ToolContext,
    ) -> ToolResult<Found>;

    /// What the building memory (the robot's tour) saw like `query`, within a room or
    /// on a storey when one is named: remembered places, best first. Never moves the
    /// robot. A backend without a building memory answers that it consulted none.
    async fn recall_memory(
        &self,
        query: &str,
        within: &Within,
        ctx: &ToolContext,
    ) -> ToolResult<Recollection> {
        let _ = (within, ctx);
        Ok(Recollection::unavailable(
            query,
            "this robot keeps no building memory",
        ))
    }

    /// Distance from the robot (the arm base on a tabletop, the base on a mobile robot)
    /// to the object's centroid, metres.
    async fn distance_to(&self, obj: &ObjectKey, ctx: &ToolContext) -> ToolResult<f64>;

    /// Distance between the two objects' centroids, metres.
    async fn distance_between(
        &self,
        a: &ObjectKey,
        b: &ObjectKey,
        ctx: &ToolContext,
    ) -> ToolResult<f64>;

    /// Whether `a` is left of `b` as seen from the robot.
    async fn left_of(&self, a: &ObjectKey, b: &ObjectKey, ctx: &ToolContext) -> ToolResult<bool>;

    /// Whether `a` is right of `b` as seen from the robot.
    async fn right_of(&self, a: &ObjectKey, b: &ObjectKey, ctx: &ToolContext) -> ToolResult<bool>;

    /// The object's size: the diagonal of its axis-aligned bounding box, metres.
    async fn size_of(&self, obj: &ObjectKey, ctx: &ToolContext) -> ToolResult<f64>;

    /// Affordance detection for `action`, skill choice and execution (SPEC §1.5).
    async fn interact(
        &self,
        obj: &ObjectKey,
        action: &str,
        ctx: &ToolContext,
    ) -> ToolResult<ActionReport>;

    /// Navigate to a pose suited to `action` on `obj` (SPEC §1.6; mobile robots).
    async fn go_to(
        &self,
        obj: &ObjectKey,
        action: &str,
        ctx: &ToolContext,
    ) -> ToolResult<ActionReport>;

    /// Runs `skill` on `obj` (for place/drop: the target under the held object). The
    /// agent has checked the gripper precondition.
    async fn skill(
        &self,
        skill: Skill,
        obj: &ObjectKey,
        ctx: &ToolContext,
    ) -> ToolResult<ActionReport>;

    /// Rebuilds the map from the home pose (SPEC §1.7). Called before the first
    /// object_retrieval after a failure with `needs_remap`.
    async fn remap(&self, ctx: &ToolContext) -> ToolResult<()>;
}
