//! skill_executor_node's logic (SPEC §1.4): the request's objects go into the planning
//! scene under their keys (so the motion may touch them), then the executor runs the
//! skill behind the verifier's commit gate and outcome check.

use std::sync::Arc;

use asp_core::PointCloud;
use asp_core::robot::CancellationToken;
use asp_skills::{SkillExecutor, SkillRequest};
use async_trait::async_trait;
use tracing::warn;

use crate::ports::{SkillPort, SkillReply};

/// MoveIt's planning scene as the executor uses it: perceived objects added as
/// collision objects by id, which pose goals then name as allowed contacts.
#[async_trait]
pub trait PlanningScenePort: Send + Sync {
    /// Adds or replaces collision object `id` with the points of `cloud` (map frame).
    async fn apply(&self, id: &str, cloud: &PointCloud) -> Result<(), String>;
}

/// The skill service.
pub struct SkillService {
    executor: SkillExecutor,
    scene: Arc<dyn PlanningScenePort>,
}

impl std::fmt::Debug for SkillService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SkillService")
            .field("executor", &self.executor)
            .finish_non_exhaustive()
    }
}

impl SkillService {
    pub fn new(executor: SkillExecutor, scene: Arc<dyn PlanningScenePort>) -> Self {
        Self { executor, scene }
    }

    pub fn executor(&self) -> &SkillExecutor {
        &self.executor
    }

    /// Puts the acted-on object into the planning scene under its scene name, from the
    /// map's latest view of it. The held object is not re-added: it travels with the
    /// gripper (MoveIt's attached object), while the map's view of it is where it was.
    /// A failure is logged: the motion is then planned without that contact allowed,
    /// which can only make it more cautious.
    async fn update_scene(&self, request: &SkillRequest) {
        let Some(id) = request.scene_names.first() else {
            return;
        };
        if request.object_cloud.is_empty() {
            return;
        }
        if let Err(e) = self.scene.apply(id, &request.object_cloud).await {
            warn!(id, "cannot add the object to the planning scene: {e}");
        }
    }
}

#[async_trait]
impl SkillPort for SkillService {
    async fn execute(&self, request: SkillRequest, cancel: &CancellationToken) -> SkillReply {
        self.update_scene(&request).await;
        self.executor.execute(request, cancel).await.into()
    }
}
