//! What the verifier is shown before and after a skill. The executor knows the gripper
//! (GripperCommand's result) and the tool pose; everything else about the world — where
//! the object and the place target are now, how far a drawer or door is open, whether a
//! device switched, the camera views for a VLM judge — comes from a [`SceneObserver`].
//!
//! Implementations: [`crate::perceive::PerceptionObserver`] looks again with the robot's
//! depth cameras (the same code on a robot and in simulation); tests may observe a
//! simulator's state directly. The executor never decides success from these itself: it
//! hands them to the verifier's outcome check.

use asp_core::models::Observation;
use asp_core::{Isometry3, ObjectKey, Point3, PointCloud, Real, Skill};
use asp_verify::{ArticulationState, JointTravel, PlaceOccupancy};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// Before or after the skill's motions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ObservePhase {
    Before,
    After,
}

/// What to look at. Serde, so that an observer can be served over ROS.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObserveRequest {
    pub phase: ObservePhase,
    pub skill: Skill,
    /// The object the skill acts on (for place/drop: the held object).
    pub object: ObjectKey,
    /// Names the scene knows the object by (planning-scene ids, simulator names).
    pub scene_names: Vec<String>,
    /// The object's last known cloud (map frame).
    pub object_cloud: PointCloud,
    /// The affordance's part cloud, when the skill acts on a part.
    pub part_cloud: Option<PointCloud>,
    /// The part's name, e.g. "drawer handle".
    pub part_name: Option<String>,
    /// Place/drop target.
    pub target: Option<(ObjectKey, Vec<String>, PointCloud)>,
    /// On or in the target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relation: Option<asp_verify::Relation>,
    /// The gripper holds the object (the observer may look near the tool).
    pub held: bool,
    /// How the skill means to move the part (open/close, pulls): the joint it estimated
    /// and the travel it commands along it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub part_motion: Option<PartMotion>,
    /// The tool centre point now (map frame): what a fresh view sees around it is the
    /// gripper, not the scene.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_position: Option<Point3>,
    /// After a skill that closed the fingers on the object and holds it: the rigid
    /// motion the tool made since (map frame, `tool_now * tool_at_close⁻¹`). The held
    /// object went through it too, so where its moved cloud lies is not its place left
    /// free (a binder lifted by less than its height still fills most of where it stood).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_motion: Option<Isometry3>,
}

/// A part's planned motion: its estimated joint and the commanded travel along it
/// (metres for a slide, radians for a hinge; positive opens).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PartMotion {
    pub joint: crate::articulation::JointKind,
    pub commanded: Real,
}

/// What was seen; `None` where nothing could be observed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Observed {
    pub object_cloud: Option<PointCloud>,
    pub target_cloud: Option<PointCloud>,
    pub articulation: Option<ArticulationState>,
    pub switch_on: Option<bool>,
    pub observation: Option<Observation>,
    /// The object's last known place as the fresh view sees it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prior_place: Option<PlaceOccupancy>,
    /// The part's measured travel along its joint (after the skill).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub joint_travel: Option<JointTravel>,
    /// Capture time of the newest frame the views came from (seconds, the frames'
    /// clock): what the verdict judged, for whoever checks it against the world then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_at: Option<f64>,
}

/// Observation failed (the camera did not answer, …).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("cannot observe {what}: {message}")]
pub struct ObserveError {
    pub what: String,
    pub message: String,
}

/// Observes the scene for the verifier.
#[async_trait]
pub trait SceneObserver: Send + Sync {
    async fn observe(&self, request: &ObserveRequest) -> Result<Observed, ObserveError>;
}

/// The observer of a robot without cameras the arm can use: it sees nothing, so outcome
/// checks have the gripper state and the tool pose only (`skill_executor_node.observer:
/// none`).
#[derive(Debug, Clone, Copy, Default)]
pub struct BlindObserver;

#[async_trait]
impl SceneObserver for BlindObserver {
    async fn observe(&self, _: &ObserveRequest) -> Result<Observed, ObserveError> {
        Ok(Observed::default())
    }
}
