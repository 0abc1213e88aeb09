//! The simulated world: objects with geometry, parts, articulated links and mounts, and
//! the state robot actions change (poses, joint values, button presses, typed keys).

mod load;
pub mod shape;
pub mod spec;

use asp_core::{Isometry3, Point3, Real, Skill, Vector3};
use nalgebra::{Translation3, Unit, UnitQuaternion};
use parry3d::bounding_volume::{Aabb, BoundingVolume};
use parry3d::query::{Ray, RayCast};

pub use load::{load_world, load_world_adding, parse_world, world_from_spec};
pub use shape::Prim;
pub use spec::{JointKind, PartFunctionSpec as PartFunction, WorldSpec};

/// Index of an object in [`World::objects`].
pub type ObjectIdx = usize;

/// One piece of geometry of an object.
#[derive(Debug, Clone)]
pub struct Geom {
    pub prim: Prim,
    /// Pose in the owner's frame: the link's joint frame when `link` is set, else the
    /// object frame.
    pub local: Isometry3,
    pub link: Option<usize>,
    pub part: Option<usize>,
    pub color: [u8; 3],
}

/// A named part with its own geometry and the skills it affords.
#[derive(Debug, Clone)]
pub struct Part {
    pub name: String,
    /// Globally unique id (ground-truth part image), never 0.
    pub gid: u32,
    pub skills: Vec<Skill>,
    pub function: PartFunction,
    /// The link the part rides on.
    pub link: Option<usize>,
    /// Buttons and keys: push direction in the owner's frame.
    pub press_axis: Unit<Vector3>,
    pub travel: Real,
    pub symbol: Option<String>,
    /// How often the part was pressed.
    pub presses: u32,
    /// A tip is in it now (a press registers once per contact).
    pub pressed_now: bool,
}

/// An articulated link: a drawer, a door, a lid.
#[derive(Debug, Clone)]
pub struct Link {
    pub name: String,
    pub kind: JointKind,
    /// Joint frame in the object frame.
    pub origin: Isometry3,
    pub axis: Unit<Vector3>,
    pub lower: Real,
    pub upper: Real,
    pub position: Real,
}

impl Link {
    /// Transform of the link's geometry frame in the object frame at joint value `q`.
    pub fn transform_at(&self, q: Real) -> Isometry3 {
        let motion = match self.kind {
            JointKind::Prismatic => Isometry3::from_parts(
                Translation3::from(self.axis.into_inner() * q),
                UnitQuaternion::identity(),
            ),
            JointKind::Revolute => Isometry3::from_parts(
                Translation3::identity(),
                UnitQuaternion::from_axis_angle(&self.axis, q),
            ),
        };
        self.origin * motion
    }

    pub fn transform(&self) -> Isometry3 {
        self.transform_at(self.position)
    }

    /// Joint value as a share of its range, 0 closed … 1 fully open.
    pub fn fraction_open(&self) -> Real {
        ((self.position - self.lower) / (self.upper - self.lower)).clamp(0.0, 1.0)
    }
}

/// An object seated in a holder (plug in a power strip, thumbtack in a board).
#[derive(Debug, Clone)]
pub struct Mount {
    pub holder: ObjectIdx,
    /// Pull-out direction in the object frame.
    pub axis: Unit<Vector3>,
    pub release: Real,
    /// The pose it is seated at.
    pub seated: Isometry3,
    /// Pulled out of the holder.
    pub removed: bool,
}

/// An object of the world.
#[derive(Debug, Clone)]
pub struct Object {
    pub name: String,
    pub description: String,
    pub fixed: bool,
    pub color: [u8; 3],
    /// Object frame in the map.
    pub pose: Isometry3,
    pub geoms: Vec<Geom>,
    pub parts: Vec<Part>,
    pub links: Vec<Link>,
    pub mount: Option<Mount>,
    /// Symbols typed on this object's keys, in order.
    pub typed: String,
}

impl Object {
    /// Instance id of object `idx` in ground-truth images (never 0).
    pub fn instance_id(idx: ObjectIdx) -> u32 {
        idx as u32 + 1
    }

    /// The owner frame of geometry on `link` (or the object frame), in the map.
    pub fn frame_of(&self, link: Option<usize>) -> Isometry3 {
        match link {
            Some(l) => self.pose * self.links[l].transform(),
            None => self.pose,
        }
    }

    /// World pose of geometry `g`.
    pub fn geom_pose(&self, g: &Geom) -> Isometry3 {
        self.frame_of(g.link) * g.local
    }

    /// World bounding box of all geometry.
    pub fn aabb(&self) -> Aabb {
        self.aabb_where(|_| true)
    }

    /// World bounding box of the geometry `keep` selects (an empty box at the origin when
    /// none).
    pub fn aabb_where(&self, keep: impl Fn(&Geom) -> bool) -> Aabb {
        let mut out: Option<Aabb> = None;
        for g in self.geoms.iter().filter(|g| keep(g)) {
            let b = g.prim.aabb(&self.geom_pose(g));
            out = Some(match out {
                Some(a) => a.merged(&b),
                None => b,
            });
        }
        out.unwrap_or_else(|| {
            let p = Point3::from(self.pose.translation.vector);
            Aabb::new(p, p)
        })
    }

    /// Distance from a world point to the object's geometry (0 inside).
    pub fn distance_to(&self, p: &Point3) -> Real {
        self.geoms
            .iter()
            .map(|g| g.prim.distance(&self.geom_pose(g), p))
            .fold(Real::INFINITY, Real::min)
    }

    /// Centre of the object's bounding box.
    pub fn centroid(&self) -> Point3 {
        self.aabb().center()
    }

    /// Bounding box of one part's geometry.
    pub fn part_aabb(&self, part: usize) -> Aabb {
        self.aabb_where(|g| g.part == Some(part))
    }

    pub fn part_index(&self, name: &str) -> Option<usize> {
        self.parts.iter().position(|p| p.name == name)
    }

    pub fn link_index(&self, name: &str) -> Option<usize> {
        self.links.iter().position(|l| l.name == name)
    }
}

/// A floor plane at z = 0.
#[derive(Debug, Clone)]
pub struct Floor {
    pub size: [Real; 2],
    pub center: [Real; 2],
    pub color: [u8; 3],
}

/// Lambert lighting.
#[derive(Debug, Clone)]
pub struct Light {
    /// Unit vector towards the light.
    pub to_light: Unit<Vector3>,
    pub ambient: Real,
}

/// The world and its state.
#[derive(Debug, Clone)]
pub struct World {
    pub name: String,
    pub description: String,
    pub floor: Option<Floor>,
    /// Occupancy grid extent: origin (x, y) and size (x, y).
    pub map_extent: Option<([Real; 2], [Real; 2])>,
    pub light: Light,
    pub objects: Vec<Object>,
}

/// A ray hit on the world.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WorldHit {
    pub toi: Real,
    pub normal: Vector3,
    /// `None` for the floor.
    pub object: Option<ObjectIdx>,
    pub geom: usize,
}

impl World {
    pub fn index_of(&self, name: &str) -> Option<ObjectIdx> {
        self.objects.iter().position(|o| o.name == name)
    }

    pub fn object(&self, name: &str) -> Option<&Object> {
        self.objects.iter().find(|o| o.name == name)
    }

    /// Brute-force ray cast over every geom (for queries, not rendering), skipping the
    /// objects `skip` rejects.
    pub fn cast_ray(
        &self,
        ray: &Ray,
        max_toi: Real,
        skip: impl Fn(ObjectIdx) -> bool,
    ) -> Option<WorldHit> {
        let mut best: Option<WorldHit> = None;
        for (oi, o) in self.objects.iter().enumerate() {
            if skip(oi) {
                continue;
            }
            let limit = best.map_or(max_toi, |b| b.toi);
            if o.aabb().cast_local_ray(ray, limit, true).is_none() {
                continue;
            }
            for (gi, g) in o.geoms.iter().enumerate() {
                let limit = best.map_or(max_toi, |b| b.toi);
                if let Some((toi, normal)) = g.prim.cast_ray(&o.geom_pose(g), ray, limit) {
                    best = Some(WorldHit {
                        toi,
                        normal,
                        object: Some(oi),
                        geom: gi,
                    });
                }
            }
        }
        if let Some(f) = &self.floor
            && ray.dir.z < -1e-9
        {
            let t = -ray.origin.z / ray.dir.z;
            let p = ray.point_at(t);
            let inside = (p.x - f.center[0]).abs() <= f.size[0] / 2.0
                && (p.y - f.center[1]).abs() <= f.size[1] / 2.0;
            if t >= 0.0 && inside && best.is_none_or(|b| t < b.toi) && t <= max_toi {
                best = Some(WorldHit {
                    toi: t,
                    normal: Vector3::z(),
                    object: None,
                    geom: 0,
                });
            }
        }
        best
    }
}
