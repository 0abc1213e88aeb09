//! Re-detection on arrival (SPEC §1.6): a local object map from the current camera
//! frame, and the object found again in it with the same query, so that tabletop skills
//! act on geometry seen from where the robot stands (robust to mapping and localisation
//! error).

use asp_core::{ObjectId, ObjectMap, PointCloud};
use async_trait::async_trait;

/// The object found again in the local map.
#[derive(Debug, Clone, PartialEq)]
pub struct Relocalized {
    /// The local map built from the arrival frame.
    pub local_map: ObjectMap,
    /// The re-found object in it.
    pub object: ObjectId,
    /// Its cloud (map frame).
    pub object_cloud: PointCloud,
    /// Retrieval score of the match.
    pub score: f32,
    /// How far its centroid is from the remote map's, metres.
    pub shift: f32,
}

/// Re-detection did not give an answer about the object.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RelocalizeError {
    /// It could not run (no camera frame, a model error).
    #[error("re-detection failed: {0}")]
    Failed(String),
    /// The map no longer offers the object: closer looks saw something where the map
    /// had it and said it is not what the query asked for, or its key was forgotten
    /// (the message says which). Retrieval again is the way on.
    #[error("{0}")]
    NotIt(String),
}

/// Builds a local map from the current view and finds the object again.
#[async_trait]
pub trait Relocalizer: Send + Sync {
    /// Looks for `query` in a local map of `camera`'s current frame; among matches, the
    /// one nearest `previous` (the remote map's cloud) wins. `Ok(None)`: not found.
    async fn relocalize(
        &self,
        query: &str,
        previous: &PointCloud,
        camera: &str,
    ) -> Result<Option<Relocalized>, RelocalizeError>;
}
