//! The collision interface between planner and scene, and a plain scene of named shapes.

use asp_core::geometry::Isometry3;
use parry3d::bounding_volume::{Aabb, BoundingVolume};
use parry3d::shape::SharedShape;

use crate::model::LinkShape;

/// The first contact found between a robot link (or the held object) and a scene object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Collision {
    /// The link (or held object) of the robot.
    pub link: String,
    /// The scene object's name.
    pub object: String,
}

/// The planning scene as the planner queries it (implemented by the simulator's world).
pub trait CollisionWorld {
    /// The first of `shapes` (poses in the arm base frame) that intersects a scene
    /// object, skipping objects named in `allowed_contacts`; `None` when all are free.
    fn first_collision(
        &self,
        shapes: &[LinkShape],
        allowed_contacts: &[String],
    ) -> Option<Collision>;
}

/// A scene with nothing in it.
#[derive(Debug, Clone, Copy, Default)]
pub struct EmptyWorld;

impl CollisionWorld for EmptyWorld {
    fn first_collision(&self, _: &[LinkShape], _: &[String]) -> Option<Collision> {
        None
    }
}

/// A named rigid object of a [`ShapeWorld`].
#[derive(Debug, Clone)]
pub struct WorldObject {
    pub name: String,
    /// In the arm base frame.
    pub pose: Isometry3,
    pub shape: SharedShape,
    aabb: Aabb,
}

impl WorldObject {
    pub fn new(name: impl Into<String>, pose: Isometry3, shape: SharedShape) -> Self {
        let aabb = shape.compute_aabb(&pose);
        Self {
            name: name.into(),
            pose,
            shape,
            aabb,
        }
    }

    /// An axis-aligned box given by its centre and full size, metres.
    pub fn cuboid(name: impl Into<String>, center: [f32; 3], size: [f32; 3]) -> Self {
        Self::new(
            name,
            Isometry3::translation(center[0], center[1], center[2]),
            SharedShape::cuboid(size[0] / 2.0, size[1] / 2.0, size[2] / 2.0),
        )
    }
}

/// A static scene of named parry3d shapes, tested exactly (parry's intersection tests,
/// after a bounding-box check).
#[derive(Debug, Clone, Default)]
pub struct ShapeWorld {
    pub objects: Vec<WorldObject>,
}

impl ShapeWorld {
    pub fn new(objects: Vec<WorldObject>) -> Self {
        Self { objects }
    }

    pub fn with(mut self, object: WorldObject) -> Self {
        self.objects.push(object);
        self
    }
}

impl CollisionWorld for ShapeWorld {
    fn first_collision(
        &self,
        shapes: &[LinkShape],
        allowed_contacts: &[String],
    ) -> Option<Collision> {
        for s in shapes {
            let aabb = s.shape.compute_aabb(&s.pose);
            for o in &self.objects {
                if allowed_contacts.iter().any(|a| a == &o.name) || !aabb.intersects(&o.aabb) {
                    continue;
                }
                // A pair parry cannot test counts as touching: safe side.
                let hit = parry3d::query::intersection_test(
                    &s.pose,
                    s.shape.as_ref(),
                    &o.pose,
                    o.shape.as_ref(),
                )
                .unwrap_or(true);
                if hit {
                    return Some(Collision {
                        link: s.link.clone(),
                        object: o.name.clone(),
                    });
                }
            }
        }
        None
    }
}
