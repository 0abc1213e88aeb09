//! What the executor is asked, and what it answers.

use asp_core::{
    Affordance, Failure, FailureKind, ObjectKey, PointCloud, Real, Skill, State, ToolOutput,
};
use asp_verify::{CommitVerdict, GroundingSummary, OutcomeVerdict, Relation, StepSuccess, Verb};
use serde::{Deserialize, Serialize};

use crate::codes::ours;
use crate::executor::ExecStats;

/// The object in the gripper, for place and drop.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeldObject {
    pub key: ObjectKey,
    /// How to call it in the outcome question, e.g. "the apple".
    pub name: String,
    /// Names the planning scene knows it by.
    pub scene_names: Vec<String>,
    /// Its last known cloud (map frame), when the map still has one.
    pub cloud: Option<PointCloud>,
}

/// Per-request motion settings, each capped by `/**.safety` (a request above a cap is
/// refused, not clipped).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct MotionOverrides {
    pub velocity_scaling: Option<f64>,
    pub acceleration_scaling: Option<f64>,
    pub gripper_effort: Option<f64>,
}

/// One skill call (SPEC §1.3): the skill, the object it acts on, and the geometry and
/// evidence perception found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkillRequest {
    pub skill: Skill,
    /// The object (for place/drop: the target under the held object).
    pub object: ObjectKey,
    /// How to call it in the outcome question and messages, e.g. "the mug".
    pub object_name: String,
    /// Names the planning scene knows it by: the contacts a grasp or push may make.
    pub scene_names: Vec<String>,
    /// The object's points in the map frame.
    pub object_cloud: PointCloud,
    /// The affordance (part) for part and articulation skills.
    pub affordance: Option<Affordance>,
    /// The grounding diagnostics behind the affordance, for the commit gate; without it
    /// the gate judges the affordance by its recorded verifier score.
    pub grounding: Option<GroundingSummary>,
    /// Place/drop: the object in the gripper.
    pub held: Option<HeldObject>,
    /// Place/drop: on or in the target.
    pub relation: Relation,
    /// The outcome question's verb; by default the skill's (grasp → pick up, tip_push →
    /// turn on, hook_pull/open → open, …).
    pub verb: Option<Verb>,
    /// Other points the gripper must keep out of (the scene around the object).
    pub obstacles: Option<PointCloud>,
    pub overrides: MotionOverrides,
}

impl SkillRequest {
    /// A request with the defaults for everything but the essentials.
    pub fn new(
        skill: Skill,
        object: ObjectKey,
        object_name: impl Into<String>,
        object_cloud: PointCloud,
    ) -> Self {
        Self {
            skill,
            object,
            object_name: object_name.into(),
            scene_names: Vec::new(),
            object_cloud,
            affordance: None,
            grounding: None,
            held: None,
            relation: Relation::On,
            verb: None,
            obstacles: None,
            overrides: MotionOverrides::default(),
        }
    }

    pub fn with_scene_names(mut self, names: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.scene_names = names.into_iter().map(Into::into).collect();
        self
    }

    pub fn with_affordance(mut self, affordance: Affordance) -> Self {
        self.affordance = Some(affordance);
        self
    }

    pub fn with_grounding(mut self, grounding: GroundingSummary) -> Self {
        self.grounding = Some(grounding);
        self
    }

    pub fn with_held(mut self, held: HeldObject) -> Self {
        self.held = Some(held);
        self
    }

    pub fn with_relation(mut self, relation: Relation) -> Self {
        self.relation = relation;
        self
    }

    pub fn with_verb(mut self, verb: Verb) -> Self {
        self.verb = Some(verb);
        self
    }

    pub fn with_overrides(mut self, overrides: MotionOverrides) -> Self {
        self.overrides = overrides;
        self
    }

    /// The verb the outcome question uses.
    pub fn outcome_verb(&self) -> Verb {
        self.verb.unwrap_or(match self.skill {
            Skill::Grasp | Skill::GraspPart | Skill::PinchPull => Verb::PickUp,
            Skill::Place | Skill::Drop => Verb::Place,
            Skill::TipPush => Verb::Press,
            Skill::HookPull | Skill::Open => Verb::Open,
            Skill::Close => Verb::Close,
        })
    }
}

/// One candidate the executor tried.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttemptLog {
    pub label: String,
    /// Steps that ran to completion.
    pub completed: Vec<String>,
    /// The step that failed and why, if any.
    pub failed: Option<String>,
}

/// Everything the executor did for one request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkillReport {
    pub skill: Skill,
    pub object: ObjectKey,
    /// Whether the gripper holds something afterwards (`None`: unknown/unchanged).
    pub holding: Option<bool>,
    /// For the model: what happened and, on failure, what to try.
    pub message: String,
    pub commit: Option<CommitVerdict>,
    pub outcome: Option<OutcomeVerdict>,
    pub stats: ExecStats,
    pub attempts: Vec<AttemptLog>,
    /// After a confirmed place or drop: where the fresh view saw the placed object (the
    /// centroid of its points on or in the target, map frame), so the map can follow it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placed_at: Option<[Real; 3]>,
}

/// The executor's answer. Only [`SkillResult::Succeeded`] reports success, and it can
/// only be built with a [`StepSuccess`] from the verifier.
#[derive(Debug)]
pub enum SkillResult {
    Succeeded {
        success: StepSuccess,
        report: SkillReport,
    },
    Failed {
        failure: Failure,
        report: SkillReport,
    },
}

impl SkillResult {
    pub fn report(&self) -> &SkillReport {
        match self {
            Self::Succeeded { report, .. } | Self::Failed { report, .. } => report,
        }
    }

    pub fn succeeded(&self) -> bool {
        matches!(self, Self::Succeeded { .. })
    }

    /// The failure, when the skill failed.
    pub fn failure(&self) -> Option<&Failure> {
        match self {
            Self::Failed { failure, .. } => Some(failure),
            Self::Succeeded { .. } => None,
        }
    }

    /// The agent's tool output (SPEC §1.2), `state` being the symbolic state to report.
    pub fn tool_output(self, state: State) -> ToolOutput {
        match self {
            Self::Succeeded { success, report } => success.tool_output(state, report.message),
            Self::Failed { failure, report } => ToolOutput::fail(state, failure, report.message),
        }
    }

    pub(crate) fn failed(failure: Failure, report: SkillReport) -> Self {
        Self::Failed { failure, report }
    }
}

/// A failure of our own with its code.
pub(crate) fn our_failure(kind: FailureKind, code: i32) -> Failure {
    Failure::new(kind).with_code(code)
}

/// The failure when the verifier says the step did not succeed.
pub(crate) fn outcome_failure(needs_remap: bool) -> Failure {
    let mut f = our_failure(FailureKind::Verification, ours::OUTCOME_NOT_SUCCEEDED).retryable();
    f.needs_remap = needs_remap;
    f
}
