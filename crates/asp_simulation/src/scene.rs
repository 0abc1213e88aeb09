//! The simulator as the robot's planning scene and map: MoveIt's `/apply_planning_scene`
//! served from the simulator's own planning scene (the collision objects the product
//! sends, named by its object keys), the same scene as the in-process skill executor's
//! [`PlanningScenePort`], and the simulator's occupancy grid as go_to's [`GridSource`].

use asp_core::PointCloud;
use asp_nodes::NodeError;
use asp_nodes::scene::object_points;
use asp_ros::Node;
use asp_ros::msg::moveit_msgs::{
    ApplyPlanningScene, ApplyPlanningSceneRequest, ApplyPlanningSceneResponse, CollisionObject,
    PlanningScene,
};
use asp_ros::transport::ServiceServer;
use asp_sim::SimRobot;
use asp_system::goto::GridSource;
use asp_system::skills::PlanningScenePort;
use async_trait::async_trait;
use tracing::warn;

/// The simulator's planning scene, as the in-process skill executor's port.
#[derive(Debug, Clone)]
pub struct SimPlanningScene(pub SimRobot);

#[async_trait]
impl PlanningScenePort for SimPlanningScene {
    async fn apply(&self, id: &str, cloud: &PointCloud) -> Result<(), String> {
        self.0.apply_collision_object(id, cloud.points());
        Ok(())
    }
}

/// The simulator's occupancy grid (what `/map` carries on a robot).
#[derive(Debug, Clone)]
pub struct SimGrid(pub SimRobot);

#[async_trait]
impl GridSource for SimGrid {
    async fn occupancy_grid(&self) -> Result<asp_core::grid::OccupancyGrid, String> {
        self.0.occupancy_grid().map_err(|e| e.to_string())
    }
}

/// Applies a planning-scene diff to the simulator; `Err` names what it could not take.
pub fn apply_to_sim(sim: &SimRobot, scene: &PlanningScene, map_frame: &str) -> Result<(), String> {
    for o in &scene.world.collision_objects {
        let frame = o.header.frame_id.trim_start_matches('/');
        match o.operation {
            op if op == CollisionObject::REMOVE => {
                sim.remove_collision_object(&o.id);
            }
            op if op == CollisionObject::ADD || op == CollisionObject::APPEND => {
                if !frame.is_empty() && frame != map_frame {
                    return Err(format!(
                        "collision object {:?} is in frame {frame:?}; the simulator takes {map_frame:?}",
                        o.id
                    ));
                }
                sim.apply_collision_object(&o.id, &object_points(o)?);
            }
            other => {
                return Err(format!(
                    "collision object {:?}: operation {} is not supported",
                    o.id, other.0
                ));
            }
        }
    }
    Ok(())
}

/// Serves `/apply_planning_scene` (or `service`) from the simulator's planning scene.
pub fn serve_sim_planning_scene(
    node: &Node,
    service: &str,
    sim: SimRobot,
    map_frame: &str,
) -> Result<ServiceServer, NodeError> {
    let map_frame = map_frame.to_owned();
    Ok(
        node.serve::<ApplyPlanningScene, _, _>(service, move |req: ApplyPlanningSceneRequest| {
            let result = apply_to_sim(&sim, &req.scene, &map_frame);
            if let Err(e) = &result {
                warn!("refusing a planning-scene diff: {e}");
            }
            std::future::ready(ApplyPlanningSceneResponse {
                success: result.is_ok(),
            })
        })?,
    )
}
