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

/// Re-detection failed (camera, models).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("re-detection failed: {0}")]
pub struct RelocalizeError(pub String);

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
