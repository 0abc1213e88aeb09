//! The services the nodes offer one another, as typed Rust traits.
//!
//! Each node's logic implements its port here ([`crate::map::MapService`] is the
//! object_map_node, [`crate::affordance::AffordanceService`] the affordance_node, …). The
//! agent's tool backend ([`crate::backend::GraphBackend`]) only sees the ports, so the
//! same backend drives the services in process or, through `asp_nodes`' ROS clients, in
//! other processes. Every request and reply is serde: the ROS layer carries them.

use asp_affordance::AffordanceReport;
use asp_core::robot::CancellationToken;
use asp_core::{
    Failure, FailureKind, Object, ObjectKey, ObjectMap, Point3, PointCloud, Pose2D, Skill, Within,
};
use asp_nav::Selection;
use asp_perception::Retrieval;
use asp_skills::{SkillReport, SkillRequest};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// A service call that failed: the failure (kind, code, retryable, needs remap) and a
/// message for the agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[error("{message}")]
pub struct ServiceError {
    pub failure: Failure,
    pub message: String,
}

impl ServiceError {
    pub fn new(kind: FailureKind, message: impl Into<String>) -> Self {
        Self {
            failure: Failure::new(kind),
            message: message.into(),
        }
    }

    pub fn with_failure(failure: Failure, message: impl Into<String>) -> Self {
        Self {
            failure,
            message: message.into(),
        }
    }

    /// A key the service does not know.
    pub fn unknown_object(key: &ObjectKey) -> Self {
        Self::new(
            FailureKind::UnknownObject,
            format!("{key} is not in the object map (retrieve it again)"),
        )
    }

    /// The service could not be reached or failed internally.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(FailureKind::Internal, message)
    }

    /// The call was cancelled.
    pub fn cancelled(what: &str) -> Self {
        Self::new(FailureKind::Cancelled, format!("{what} was cancelled"))
    }
}

/// An object of the map by its key, with what the other nodes need of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MapObject {
    pub key: ObjectKey,
    /// The retrieval query that first found it (re-detection uses it again).
    pub query: String,
    /// How messages and outcome questions call it, e.g. "the red mug".
    pub name: String,
    /// The object: map-frame cloud, best crops, features.
    pub object: Object,
    /// Points of the other map objects around it (its support, its neighbours): what
    /// the gripper must keep out of, and where the object stands.
    #[serde(default)]
    pub surroundings: Option<PointCloud>,
}

/// A spatial question about inventory objects (SPEC §1.3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "relation", rename_all = "snake_case")]
pub enum SpatialQuery {
    DistanceTo { a: ObjectKey },
    DistanceBetween { a: ObjectKey, b: ObjectKey },
    LeftOf { a: ObjectKey, b: ObjectKey },
    RightOf { a: ObjectKey, b: ObjectKey },
    SizeOf { a: ObjectKey },
}

/// The answer to a [`SpatialQuery`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SpatialAnswer {
    /// Metres.
    Number(f64),
    Truth(bool),
}

/// What a (re)build of the map did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MapSummary {
    pub objects: usize,
    pub keyframes: u32,
    /// Keys still valid afterwards (the held object's, when one was kept).
    pub kept_keys: Vec<ObjectKey>,
}

/// The map with the keys the agent knows its objects by.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MapSnapshot {
    pub map: ObjectMap,
    pub keys: std::collections::BTreeMap<ObjectKey, asp_core::ObjectId>,
}

/// An object found again from where the robot stands (SPEC §1.6).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RelocalizedObject {
    pub key: ObjectKey,
    /// The object's cloud in the local map (map frame); the map now holds it.
    pub cloud: PointCloud,
    /// Retrieval similarity of the match.
    pub score: f32,
    /// How far the centroid moved from the remote map's, metres.
    pub shift: f32,
    /// Objects in the local map.
    pub local_objects: usize,
}

/// object_map_node: the open-vocabulary map, retrieval and spatial tools.
#[async_trait]
pub trait ObjectMapPort: Send + Sync {
    /// `object_retrieval` (SPEC §1.3); builds the map first if it was never built.
    async fn retrieve(&self, query: &str) -> Result<Retrieval, ServiceError>;
    /// [`Self::retrieve`] among the objects in a room ("the desk in the office"), on a
    /// storey ("the phone upstairs"), or both, as the map tells rooms (the building
    /// memory's) and storeys (the elevator's); a map that cannot tell them says so.
    async fn retrieve_within(
        &self,
        query: &str,
        within: &Within,
    ) -> Result<Retrieval, ServiceError> {
        if within.is_anywhere() {
            return self.retrieve(query).await;
        }
        Err(ServiceError::new(
            FailureKind::InvalidArgument,
            format!(
                "this object map cannot tell rooms or storeys apart, so not {query:?}{within}; ask without where"
            ),
        ))
    }
    /// What the building memory (the robot's tour) saw like `query`, within a room or
    /// on a storey when one is named: places, best first, without moving the robot. A
    /// map without a building memory says it consulted none.
    async fn recollect(
        &self,
        query: &str,
        within: &Within,
    ) -> Result<asp_core::Recollection, ServiceError> {
        Ok(asp_core::Recollection {
            room: within.room.clone(),
            storey: within.storey,
            ..asp_core::Recollection::unavailable(query, "this object map keeps no building memory")
        })
    }
    async fn spatial(&self, query: &SpatialQuery) -> Result<SpatialAnswer, ServiceError>;
    async fn object(&self, key: &ObjectKey) -> Result<MapObject, ServiceError>;
    /// Rebuilds the map from the robot's cameras (SPEC §1.7). `keep` (the held object)
    /// stays as it was last seen; every other key goes to the new object found where its
    /// object was (and agrees with its features), or is forgotten.
    async fn rebuild(&self, keep: Option<&ObjectKey>) -> Result<MapSummary, ServiceError>;
    /// The robot put `key` down with its centroid at `to` (map frame), as a fresh view
    /// saw it after a confirmed place: the map keeps it there until it is seen again.
    async fn moved(&self, key: &ObjectKey, to: Point3) -> Result<(), ServiceError>;
    /// Takes the next mapping arm pose, builds a local map from `camera`'s frame, finds
    /// `key` again with its query (the match nearest its old cloud) and replaces its
    /// cloud and crops: a fresh look at one object. `Ok(None)`: not found. An
    /// `UnknownObject` error (retryable): closer looks said what stands where the map had
    /// it is not what its query asked for, and the map withdrew it (or the key is unknown).
    async fn relocalize(
        &self,
        key: &ObjectKey,
        camera: &str,
    ) -> Result<Option<RelocalizedObject>, ServiceError>;
    /// The whole map and its keys (for publishing and reports).
    async fn snapshot(&self) -> MapSnapshot;
}

/// An affordance detection request (SPEC §1.5).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AffordanceQuery {
    pub key: ObjectKey,
    /// The action in words, e.g. "unplug the power adapter".
    pub action: String,
    /// Skills the caller can use, best first; empty: any. Affordances with these skills
    /// are reported first.
    #[serde(default)]
    pub skills: Vec<Skill>,
}

/// affordance_node: affordance detection with the A-Harness loop.
#[async_trait]
pub trait AffordancePort: Send + Sync {
    async fn detect(
        &self,
        query: &AffordanceQuery,
        cancel: &CancellationToken,
    ) -> Result<AffordanceReport, ServiceError>;
}

/// The skill executor's answer, as it travels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkillReply {
    /// Only the verifier's outcome check sets this.
    pub succeeded: bool,
    pub failure: Option<Failure>,
    pub report: SkillReport,
}

impl From<asp_skills::SkillResult> for SkillReply {
    fn from(r: asp_skills::SkillResult) -> Self {
        Self {
            succeeded: r.succeeded(),
            failure: r.failure().cloned(),
            report: r.report().clone(),
        }
    }
}

/// skill_executor_node: skills through MoveIt-like motion, gated by the verifier.
#[async_trait]
pub trait SkillPort: Send + Sync {
    async fn execute(&self, request: SkillRequest, cancel: &CancellationToken) -> SkillReply;
}

/// The size of a held object, as go_to needs it to stand where the arm puts it down.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CarriedSize {
    /// From the surface it stood on to its top, metres.
    pub height: f32,
    /// Horizontal radius of its footprint, metres.
    pub radius: f32,
}

/// A go_to request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GoToGoal {
    pub key: ObjectKey,
    /// What the robot will do there, e.g. "dial 911 on the phone".
    pub action: String,
    /// The object the gripper holds, to put down there; `None` with the gripper empty.
    #[serde(default)]
    pub carried: Option<CarriedSize>,
}

/// What go_to did, as it travels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GoToReply {
    pub arrived: bool,
    pub failure: Option<Failure>,
    /// For the model.
    pub message: String,
    /// The chosen pose and why.
    pub selection: Option<Selection>,
    /// Where the base ended up.
    pub final_pose: Option<Pose2D>,
    /// The affordance the pose faces, if one was detected.
    pub affordance_part: Option<String>,
    /// The object found again on arrival.
    pub relocalized: Option<RelocalizedObject>,
}

/// go_to_node: affordance-facing navigation.
#[async_trait]
pub trait NavigationPort: Send + Sync {
    async fn go_to(&self, goal: &GoToGoal, cancel: &CancellationToken) -> GoToReply;
}
