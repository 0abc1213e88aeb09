//! MoveIt's planning scene over ROS: [`PlanningSceneClient`] is the skill executor's
//! [`PlanningScenePort`] against move_group's `/apply_planning_scene` (a perceived
//! object's cloud becomes one collision object of boxes, one per occupied voxel);
//! [`object_points`] reads such an object back (the simulation's planning scene serves
//! the service with it).

use std::collections::BTreeSet;

use asp_core::{Point3, PointCloud, Real};
use asp_ros::Node;
use asp_ros::convert;
use asp_ros::msg::BoundedVec;
use asp_ros::msg::builtin_interfaces::Time;
use asp_ros::msg::geometry_msgs::Pose;
use asp_ros::msg::moveit_msgs::{
    ApplyPlanningScene, ApplyPlanningSceneRequest, CollisionObject, PlanningScene,
    PlanningSceneWorld, RobotState,
};
use asp_ros::msg::shape_msgs::SolidPrimitive;
use asp_ros::msg::std_msgs::Header;
use asp_ros::transport::{Client, RosClock};
use asp_system::skills::PlanningScenePort;
use async_trait::async_trait;
use tracing::debug;

use crate::NodeError;

/// The centres of the voxels of edge `voxel` that hold at least one point, in a fixed
/// order.
pub fn voxel_centres(points: &[Point3], voxel: Real) -> Vec<Point3> {
    let cells: BTreeSet<(i64, i64, i64)> = points
        .iter()
        .filter(|p| p.x.is_finite() && p.y.is_finite() && p.z.is_finite())
        .map(|p| {
            let c = |v: Real| (v / voxel).floor() as i64;
            (c(p.x), c(p.y), c(p.z))
        })
        .collect();
    let centre = |i: i64| (i as Real + 0.5) * voxel;
    cells
        .into_iter()
        .map(|(x, y, z)| Point3::new(centre(x), centre(y), centre(z)))
        .collect()
}

/// The collision object of `cloud`: one `voxel`-sided box per occupied voxel, in the
/// cloud's frame, stamped `stamp`, added (or replaced) under `id`.
pub fn collision_object(id: &str, cloud: &PointCloud, voxel: f64, stamp: Time) -> CollisionObject {
    let side = BoundedVec::new(vec![voxel; 3]).unwrap_or_default();
    let centres = voxel_centres(cloud.points(), voxel as Real);
    CollisionObject {
        header: Header::new(stamp, cloud.frame.as_str()),
        pose: Pose::default(),
        id: id.to_owned(),
        primitives: centres
            .iter()
            .map(|_| SolidPrimitive {
                r#type: SolidPrimitive::BOX,
                dimensions: side.clone(),
                ..SolidPrimitive::default()
            })
            .collect(),
        primitive_poses: centres
            .iter()
            .map(|c| Pose {
                position: convert::geometry::point(c),
                ..Pose::default()
            })
            .collect(),
        operation: CollisionObject::ADD,
        ..CollisionObject::default()
    }
}

/// A planning-scene diff holding `objects`.
pub fn scene_diff(objects: Vec<CollisionObject>) -> PlanningScene {
    PlanningScene {
        is_diff: true,
        robot_state: RobotState {
            is_diff: true,
            ..RobotState::default()
        },
        world: PlanningSceneWorld {
            collision_objects: objects,
            ..PlanningSceneWorld::default()
        },
        ..PlanningScene::default()
    }
}

/// [`PlanningScenePort`] over move_group's ApplyPlanningScene service.
#[derive(Debug)]
pub struct PlanningSceneClient {
    client: Client<ApplyPlanningScene>,
    voxel: f64,
    clock: RosClock,
}

impl PlanningSceneClient {
    /// A client of `service`; clouds become boxes of edge `voxel` metres.
    pub fn new(node: &Node, service: &str, voxel: f64) -> Result<Self, NodeError> {
        Ok(Self {
            client: node.client(service)?,
            voxel,
            clock: node.clock(),
        })
    }
}

#[async_trait]
impl PlanningScenePort for PlanningSceneClient {
    async fn apply(&self, id: &str, cloud: &PointCloud) -> Result<(), String> {
        let object = collision_object(id, cloud, self.voxel, self.clock.now());
        debug!(
            id,
            boxes = object.primitives.len(),
            "adding a collision object"
        );
        let r = self
            .client
            .call(ApplyPlanningSceneRequest {
                scene: scene_diff(vec![object]),
            })
            .await
            .map_err(|e| format!("{}: {e}", self.client.service()))?;
        if r.success {
            Ok(())
        } else {
            Err(format!("{} refused the diff", self.client.service()))
        }
    }
}

/// The points the simulator's planning scene keeps of a collision object: its primitive
/// and mesh-vertex positions, in the object's frame.
pub fn object_points(o: &CollisionObject) -> Result<Vec<Point3>, String> {
    let base = convert::isometry(&o.pose, "collision object pose").map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for p in &o.primitive_poses {
        let iso = convert::isometry(p, "primitive pose").map_err(|e| e.to_string())?;
        out.push(base * iso * Point3::origin());
    }
    for (m, p) in o.meshes.iter().zip(&o.mesh_poses) {
        let iso = base * convert::isometry(p, "mesh pose").map_err(|e| e.to_string())?;
        out.extend(
            m.vertices
                .iter()
                .map(|v| iso * Point3::new(v.x as Real, v.y as Real, v.z as Real)),
        );
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clouds_become_one_box_per_occupied_voxel() {
        let pts = vec![
            Point3::new(0.001, 0.001, 0.001),
            Point3::new(0.009, 0.002, 0.003), // same 1 cm voxel
            Point3::new(0.015, 0.0, 0.0),
            Point3::new(f32::NAN, 0.0, 0.0),
        ];
        let c = voxel_centres(&pts, 0.01);
        assert_eq!(c.len(), 2);
        assert!((c[0] - Point3::new(0.005, 0.005, 0.005)).norm() < 1e-6);
        assert!((c[1] - Point3::new(0.015, 0.005, 0.005)).norm() < 1e-6);
        let o = collision_object("mug_0", &PointCloud::new("map", pts), 0.01, Time::default());
        assert_eq!(o.primitives.len(), 2);
        assert_eq!(o.primitive_poses.len(), 2);
        assert_eq!(o.primitives[0].dimensions.as_slice(), [0.01; 3]);
        assert_eq!(o.header.frame_id, "map");
        // and back: the points a planning scene keeps are the box centres
        let back = object_points(&o).unwrap();
        assert!((back[1] - c[1]).norm() < 1e-6);
    }
}
