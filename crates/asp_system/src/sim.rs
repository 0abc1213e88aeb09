//! The embedded simulator's planning scene, as MoveIt's: collision objects named by the
//! product's object keys. (The verifier sees the simulated world only through its
//! cameras: `asp_skills::PerceptionObserver`.)

use asp_core::PointCloud;
use asp_sim::SimRobot;
use async_trait::async_trait;

use crate::skills::PlanningScenePort;

#[async_trait]
impl PlanningScenePort for SimRobot {
    async fn apply(&self, id: &str, cloud: &PointCloud) -> Result<(), String> {
        self.apply_collision_object(id, cloud.points());
        Ok(())
    }
}
