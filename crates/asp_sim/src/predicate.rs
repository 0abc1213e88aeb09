//! Task predicates a scenario states as its success condition or partial progress, all
//! evaluated geometrically on the simulator's state.

use asp_core::{Point3, Pose2D, Real};
use parry3d::bounding_volume::Aabb;
use parry3d::query::Ray;
use serde::{Deserialize, Serialize};

use crate::error::SimError;
use crate::world::{ObjectIdx, PartFunction, World};

/// A condition on the world and the robot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Predicate {
    /// `object` rests inside `container` (its centre within the container's box, not held).
    In {
        object: String,
        container: String,
    },
    /// `object` rests on `support`'s top surface (not held).
    On {
        object: String,
        support: String,
    },
    /// The gripper carries `object`.
    Held {
        object: String,
    },
    /// The gripper carries `object`, its fingers on `part` (a mug by its handle).
    HeldBy {
        object: String,
        part: String,
    },
    /// A link is open by at least `min` (metres or radians from its closed limit).
    Open {
        object: String,
        link: String,
        #[serde(default = "default_open")]
        min: Real,
    },
    /// A link is within `max` of its closed limit.
    Closed {
        object: String,
        link: String,
        #[serde(default = "default_closed")]
        max: Real,
    },
    /// A button or key was pressed at least `count` times.
    Pressed {
        object: String,
        part: String,
        #[serde(default = "one")]
        count: u32,
    },
    /// The object was pulled out of its holder.
    Removed {
        object: String,
    },
    /// The base centre is within `distance` of the object's centre (in the plane), and,
    /// with `facing_deg`, heads towards it within that angle.
    Near {
        object: String,
        distance: Real,
        #[serde(default)]
        facing_deg: Option<Real>,
    },
    /// The base centre lies in `area` (`[x_min, y_min, x_max, y_max]`, map frame: a
    /// room's extent from a generated building's truth), on the storey whose world is
    /// named `world` when one is given.
    BaseIn {
        area: [Real; 4],
        #[serde(default)]
        world: Option<String>,
    },
    /// The keys of `object` typed `text` (as a contiguous sequence).
    Typed {
        object: String,
        text: String,
    },
    /// The arm was asked to move its tool within `within` metres of the object.
    Attempted {
        object: String,
        #[serde(default = "default_attempt")]
        within: Real,
    },
    /// The object moved at least `distance` from where the scenario started it.
    Moved {
        object: String,
        #[serde(default = "default_moved")]
        distance: Real,
    },
    All(Vec<Predicate>),
    Any(Vec<Predicate>),
    Not(Box<Predicate>),
}

fn default_open() -> Real {
    0.1
}
fn default_closed() -> Real {
    0.01
}
fn one() -> u32 {
    1
}
fn default_attempt() -> Real {
    0.15
}
fn default_moved() -> Real {
    0.03
}

/// What predicates look at besides the world.
#[derive(Debug, Clone, Copy)]
pub struct RobotView<'a> {
    pub base: Pose2D,
    /// The object the gripper carries.
    pub held: Option<ObjectIdx>,
    /// The part of it the fingers closed on.
    pub held_part: Option<usize>,
    /// Tool goals the arm was asked to reach (map frame), in order.
    pub tool_goals: &'a [Point3],
    /// Object centres when the scenario started (for `moved`).
    pub start_centres: &'a [Point3],
}

impl Predicate {
    /// Checks that every object, part and link named exists in `world`.
    pub fn check(&self, world: &World) -> Result<(), SimError> {
        let obj = |name: &str| {
            world
                .index_of(name)
                .ok_or_else(|| SimError::UnknownObject(name.to_owned()))
        };
        match self {
            Predicate::In { object, container } => {
                obj(object)?;
                obj(container)?;
            }
            Predicate::On { object, support } => {
                obj(object)?;
                obj(support)?;
            }
            Predicate::Held { object }
            | Predicate::Near { object, .. }
            | Predicate::Attempted { object, .. }
            | Predicate::Moved { object, .. } => {
                obj(object)?;
            }
            Predicate::HeldBy { object, part } => {
                let o = &world.objects[obj(object)?];
                if o.part_index(part).is_none() {
                    return Err(SimError::UnknownMember {
                        object: object.clone(),
                        what: "part",
                        name: part.clone(),
                    });
                }
            }
            Predicate::Removed { object } => {
                let o = &world.objects[obj(object)?];
                if o.mount.is_none() {
                    return Err(SimError::UnknownMember {
                        object: object.clone(),
                        what: "mount",
                        name: "(any)".into(),
                    });
                }
            }
            Predicate::Open { object, link, .. } | Predicate::Closed { object, link, .. } => {
                let o = &world.objects[obj(object)?];
                if o.link_index(link).is_none() {
                    return Err(SimError::UnknownMember {
                        object: object.clone(),
                        what: "link",
                        name: link.clone(),
                    });
                }
            }
            Predicate::Pressed { object, part, .. } => {
                let o = &world.objects[obj(object)?];
                let ok = o.part_index(part).is_some_and(|p| {
                    matches!(
                        o.parts[p].function,
                        PartFunction::Button | PartFunction::Key
                    )
                });
                if !ok {
                    return Err(SimError::UnknownMember {
                        object: object.clone(),
                        what: "button or key",
                        name: part.clone(),
                    });
                }
            }
            Predicate::Typed { object, .. } => {
                let o = &world.objects[obj(object)?];
                if !o.parts.iter().any(|p| p.function == PartFunction::Key) {
                    return Err(SimError::UnknownMember {
                        object: object.clone(),
                        what: "key",
                        name: "(any)".into(),
                    });
                }
            }
            Predicate::BaseIn { area, .. } => {
                if !(area[0] < area[2] && area[1] < area[3]) {
                    return Err(SimError::BadPredicate(format!(
                        "base_in.area {area:?} is not [x_min, y_min, x_max, y_max] with min < max"
                    )));
                }
            }
            Predicate::All(ps) | Predicate::Any(ps) => {
                for p in ps {
                    p.check(world)?;
                }
            }
            Predicate::Not(p) => p.check(world)?,
        }
        Ok(())
    }

    /// The storeys (world names) the predicate's `base_in` terms name, for a scenario to
    /// check against its building's worlds.
    pub fn named_worlds(&self) -> Vec<&str> {
        match self {
            Predicate::BaseIn { world: Some(w), .. } => vec![w.as_str()],
            Predicate::All(ps) | Predicate::Any(ps) => {
                ps.iter().flat_map(Predicate::named_worlds).collect()
            }
            Predicate::Not(p) => p.named_worlds(),
            _ => Vec::new(),
        }
    }

    /// Evaluates the predicate; unknown names evaluate to false (use [`Predicate::check`]
    /// when loading).
    pub fn eval(&self, world: &World, robot: &RobotView<'_>) -> bool {
        let idx = |n: &str| world.index_of(n);
        match self {
            Predicate::In { object, container } => {
                let (Some(a), Some(b)) = (idx(object), idx(container)) else {
                    return false;
                };
                robot.held != Some(a) && is_in(world, a, b)
            }
            Predicate::On { object, support } => {
                let (Some(a), Some(b)) = (idx(object), idx(support)) else {
                    return false;
                };
                robot.held != Some(a) && is_on(world, a, b)
            }
            Predicate::Held { object } => idx(object).is_some_and(|a| robot.held == Some(a)),
            Predicate::HeldBy { object, part } => idx(object).is_some_and(|a| {
                robot.held == Some(a)
                    && robot.held_part.is_some()
                    && robot.held_part == world.objects[a].part_index(part)
            }),
            Predicate::Open { object, link, min } => {
                link_value(world, object, link).is_some_and(|(q, lower)| q - lower >= *min)
            }
            Predicate::Closed { object, link, max } => {
                link_value(world, object, link).is_some_and(|(q, lower)| q - lower <= *max)
            }
            Predicate::Pressed {
                object,
                part,
                count,
            } => world
                .object(object)
                .and_then(|o| o.part_index(part).map(|p| o.parts[p].presses))
                .is_some_and(|n| n >= *count),
            Predicate::Removed { object } => world
                .object(object)
                .and_then(|o| o.mount.as_ref())
                .is_some_and(|m| m.removed),
            Predicate::Near {
                object,
                distance,
                facing_deg,
            } => {
                let Some(o) = world.object(object) else {
                    return false;
                };
                let c = o.centroid();
                let (dx, dy) = (c.x - robot.base.x, c.y - robot.base.y);
                let close = (dx * dx + dy * dy).sqrt() <= *distance;
                let facing = facing_deg.is_none_or(|tol| {
                    let bearing = dy.atan2(dx);
                    angle_diff(bearing, robot.base.theta).abs() <= tol.to_radians()
                });
                close && facing
            }
            Predicate::BaseIn {
                area: [x0, y0, x1, y1],
                world: storey,
            } => {
                let b = &robot.base;
                storey.as_ref().is_none_or(|name| *name == world.name)
                    && (*x0..=*x1).contains(&b.x)
                    && (*y0..=*y1).contains(&b.y)
            }
            Predicate::Typed { object, text } => world
                .object(object)
                .is_some_and(|o| o.typed.contains(text.as_str())),
            Predicate::Attempted { object, within } => {
                let Some(o) = world.object(object) else {
                    return false;
                };
                let b = o.aabb();
                robot
                    .tool_goals
                    .iter()
                    .any(|g| aabb_distance(&b, g) <= *within)
            }
            Predicate::Moved { object, distance } => idx(object).is_some_and(|a| {
                robot
                    .start_centres
                    .get(a)
                    .is_some_and(|s| (world.objects[a].centroid() - s).norm() >= *distance)
            }),
            Predicate::All(ps) => ps.iter().all(|p| p.eval(world, robot)),
            Predicate::Any(ps) => ps.iter().any(|p| p.eval(world, robot)),
            Predicate::Not(p) => !p.eval(world, robot),
        }
    }
}

fn angle_diff(a: Real, b: Real) -> Real {
    let d = (a - b).rem_euclid(std::f32::consts::TAU);
    if d > std::f32::consts::PI {
        d - std::f32::consts::TAU
    } else {
        d
    }
}

fn aabb_distance(b: &Aabb, p: &Point3) -> Real {
    let dx = (b.mins.x - p.x).max(p.x - b.maxs.x).max(0.0);
    let dy = (b.mins.y - p.y).max(p.y - b.maxs.y).max(0.0);
    let dz = (b.mins.z - p.z).max(p.z - b.maxs.z).max(0.0);
    (dx * dx + dy * dy + dz * dz).sqrt()
}

fn link_value(world: &World, object: &str, link: &str) -> Option<(Real, Real)> {
    let o = world.object(object)?;
    let l = &o.links[o.link_index(link)?];
    Some((l.position, l.lower))
}

/// The centre of `a`'s bottom lies inside `b`'s bounding box in `b`'s frame (its top
/// open by 2 cm): a tall cup standing in a shallow tray is in it.
pub fn is_in(world: &World, a: ObjectIdx, b: ObjectIdx) -> bool {
    let (oa, ob) = (&world.objects[a], &world.objects[b]);
    let box_a = oa.aabb();
    let bottom = Point3::new(box_a.center().x, box_a.center().y, box_a.mins.z + 0.005);
    let c = ob.pose.inverse() * bottom;
    let mut local: Option<Aabb> = None;
    for g in &ob.geoms {
        let bb = g.prim.aabb(&(ob.pose.inverse() * ob.geom_pose(g)));
        local = Some(match local {
            Some(x) => parry3d::bounding_volume::BoundingVolume::merged(&x, &bb),
            None => bb,
        });
    }
    let Some(l) = local else { return false };
    c.x >= l.mins.x
        && c.x <= l.maxs.x
        && c.y >= l.mins.y
        && c.y <= l.maxs.y
        && c.z >= l.mins.z
        && c.z <= l.maxs.z + 0.02
}

/// `a` rests on `b`: straight below `a`'s bottom centre the first thing is `b`, within
/// 1.5 cm, and `a` is not inside `b`'s walls.
pub fn is_on(world: &World, a: ObjectIdx, b: ObjectIdx) -> bool {
    let oa = &world.objects[a];
    let bb = oa.aabb();
    let c = bb.center();
    let mut votes = 0;
    for (dx, dy) in [
        (0.0, 0.0),
        (0.25, 0.0),
        (-0.25, 0.0),
        (0.0, 0.25),
        (0.0, -0.25),
    ] {
        let x = c.x + dx * (bb.maxs.x - bb.mins.x);
        let y = c.y + dy * (bb.maxs.y - bb.mins.y);
        let ray = Ray::new(
            Point3::new(x, y, bb.mins.z + 0.005),
            -nalgebra::Vector3::z(),
        );
        if let Some(hit) = world.cast_ray(&ray, 0.02, |k| k == a)
            && hit.object == Some(b)
        {
            votes += 1;
        }
    }
    votes >= 1 && (!is_in(world, a, b) || votes >= 3)
}
