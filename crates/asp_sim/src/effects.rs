//! What robot commands do to the world, as geometric consequences (never scripted per
//! scenario):
//!
//! - closing the gripper sweeps both finger pads towards each other; an object both pads
//!   meet is grasped (centred between them, as a coupled parallel gripper does), a part
//!   of a link (handle) or of a mounted object (plug) constrains the gripper to its joint;
//!   an object only grazed, or one a pad landed on, is pushed aside (seeded) and not held;
//! - opening releases the held object, which settles on whatever lies below it;
//! - at every step of a motion the held object follows the tool, a mounted object slides
//!   out along its axis and comes free past its release distance, a grasped or hooked
//!   handle drags its drawer or door along the joint, a tip pushing a link closes it, and
//!   a tip pushed into a button or key registers a press (and types the key's symbol).

use asp_core::{Isometry3, Point3, Real, Vector3};
use nalgebra::{Translation3, UnitQuaternion};
use parry3d::bounding_volume::BoundingVolume;
use parry3d::query::{Ray, intersection_test};
use parry3d::shape::Cuboid;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::world::{JointKind, ObjectIdx, PartFunction, World};

/// The gripper's finger geometry in the tool frame: the TCP lies between the fingertips,
/// +z points out of the gripper, the fingers close along y.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FingerGeometry {
    /// Widest finger gap, metres.
    pub max_opening: Real,
    /// Pad length along z, from the fingertips (z = 0) back towards the wrist.
    pub pad_length: Real,
    /// Pad width along x.
    pub pad_width: Real,
    /// Finger thickness along y.
    pub thickness: Real,
    /// Tool-frame z of the fingertips (the pads reach back from here by `pad_length`).
    pub tip_z: Real,
}

impl Default for FingerGeometry {
    fn default() -> Self {
        Self {
            max_opening: 0.085,
            pad_length: 0.04,
            pad_width: 0.02,
            thickness: 0.01,
            tip_z: 0.0,
        }
    }
}

impl FingerGeometry {
    /// Centre poses (tool frame) and half extents of the two finger boxes at `opening`.
    pub fn fingers(&self, opening: Real) -> [(Isometry3, Vector3); 2] {
        let half = Vector3::new(
            self.pad_width / 2.0,
            self.thickness / 2.0,
            self.pad_length / 2.0,
        );
        let y = opening / 2.0 + self.thickness / 2.0;
        let z = self.tip_z - self.pad_length / 2.0;
        [
            (Isometry3::translation(0.0, y, z), half),
            (Isometry3::translation(0.0, -y, z), half),
        ]
    }
}

/// What the gripper holds and how that constrains it.
#[derive(Debug, Clone, PartialEq)]
pub enum Grip {
    /// A free object that moves with the tool.
    Object {
        object: ObjectIdx,
        tool_to_object: Isometry3,
        /// The part the pads closed on, if any (a mug by its handle).
        part: Option<usize>,
    },
    /// An object seated in its holder, sliding out along its mount axis.
    Mounted {
        object: ObjectIdx,
        /// Tool position when the grip closed.
        start: Point3,
    },
    /// A link's handle: the joint follows the tool.
    Link {
        object: ObjectIdx,
        link: usize,
        /// Grip point in the link frame.
        anchor: Point3,
    },
    /// Part of something that does not move (a fixed object without a joint).
    Fixed { object: ObjectIdx },
}

impl Grip {
    pub fn object(&self) -> ObjectIdx {
        match self {
            Grip::Object { object, .. }
            | Grip::Mounted { object, .. }
            | Grip::Link { object, .. }
            | Grip::Fixed { object } => *object,
        }
    }

    /// The object is carried (it moves freely with the gripper).
    pub fn carries(&self) -> Option<ObjectIdx> {
        match self {
            Grip::Object { object, .. } => Some(*object),
            _ => None,
        }
    }

    /// The part the fingers hold: a carried object's part, or a handle.
    pub fn part(&self) -> Option<usize> {
        match self {
            Grip::Object { part, .. } => *part,
            _ => None,
        }
    }
}

/// The result of closing the fingers.
#[derive(Debug, Clone, PartialEq)]
pub struct CloseResult {
    /// Final finger gap.
    pub position: Real,
    /// The fingers stopped on something before the goal.
    pub stalled: bool,
    pub grip: Option<Grip>,
    /// An object pushed aside by a failed grasp.
    pub displaced: Option<ObjectIdx>,
}

/// Grasp and slip tolerances.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EffectParams {
    /// Pad rays (per finger) that must touch an object to hold it.
    pub min_contacts: usize,
    /// How far the tool may stray from a constrained grip before it slips, metres.
    pub slip_distance: Real,
    /// Margin around a handle within which a tip hooks it, metres.
    pub hook_margin: Real,
    /// Displacement of a failed grasp: uniform in [min, max] metres.
    pub displacement: (Real, Real),
    /// Tool-frame z of the fingertips: the point that pushes buttons and hooks handles.
    pub tip_z: Real,
}

impl Default for EffectParams {
    fn default() -> Self {
        Self {
            min_contacts: 2,
            slip_distance: 0.03,
            hook_margin: 0.02,
            displacement: (0.02, 0.06),
            tip_z: 0.0,
        }
    }
}

/// Pad rays across the pad's width and along its length.
const PAD_SAMPLES_X: usize = 5;
const PAD_SAMPLES_Z: usize = 16;

/// Closes the fingers from `opening` towards `target` with the tool at `tool` (map).
pub fn close_gripper(
    world: &mut World,
    tool: &Isometry3,
    opening: Real,
    target: Real,
    fingers: &FingerGeometry,
    params: &EffectParams,
    rng: &mut ChaCha8Rng,
) -> CloseResult {
    let travel = ((opening - target) / 2.0).max(0.0);
    let nothing = CloseResult {
        position: target,
        stalled: false,
        grip: None,
        displaced: None,
    };
    if travel <= 0.0 {
        return nothing;
    }
    // per finger: for each pad sample, the first (object, geom, distance) met while closing
    #[derive(Clone, Copy)]
    struct Contact {
        object: ObjectIdx,
        geom: usize,
        dist: Real,
    }
    let mut per_finger: [Vec<Contact>; 2] = [Vec::new(), Vec::new()];
    for (f, side) in [1.0f32, -1.0].into_iter().enumerate() {
        for ix in 0..PAD_SAMPLES_X {
            for iz in 0..PAD_SAMPLES_Z {
                let x = (ix as Real / (PAD_SAMPLES_X - 1) as Real - 0.5) * fingers.pad_width * 0.9;
                let z = fingers.tip_z
                    - (0.01 + 0.98 * iz as Real / (PAD_SAMPLES_Z - 1) as Real) * fingers.pad_length;
                let origin = tool * Point3::new(x, side * opening / 2.0, z);
                let dir = tool.rotation * Vector3::new(0.0, -side, 0.0);
                let ray = Ray::new(origin, dir);
                if let Some(hit) = world.cast_ray(&ray, opening, |_| false)
                    && let Some(object) = hit.object
                {
                    per_finger[f].push(Contact {
                        object,
                        geom: hit.geom,
                        dist: hit.toi,
                    });
                }
            }
        }
    }
    // the object most pad rays of both fingers meet
    let mut best: Option<(ObjectIdx, usize, usize)> = None;
    for c in per_finger[0].iter().chain(per_finger[1].iter()) {
        let n0 = per_finger[0]
            .iter()
            .filter(|x| x.object == c.object)
            .count();
        let n1 = per_finger[1]
            .iter()
            .filter(|x| x.object == c.object)
            .count();
        if best.is_none_or(|(_, a, b)| n0.min(n1) > a.min(b)) {
            best = Some((c.object, n0, n1));
        }
    }
    let Some((object, n0, n1)) = best else {
        return nothing;
    };
    let d = |f: usize| {
        per_finger[f]
            .iter()
            .filter(|c| c.object == object)
            .map(|c| c.dist)
            .fold(Real::INFINITY, Real::min)
    };
    let (d_left, d_right) = (d(0), d(1));
    let landed_on = d_left <= 1e-4 || d_right <= 1e-4;
    let movable = !world.objects[object].fixed && world.objects[object].mount.is_none();
    if landed_on || n0.min(n1) < params.min_contacts {
        // a pad landed on it or only grazed it: pushed aside, nothing held
        let displaced = if movable {
            displace(world, object, tool, rng, params);
            Some(object)
        } else {
            None
        };
        return CloseResult {
            position: target,
            stalled: false,
            grip: None,
            displaced,
        };
    }
    let gap = opening - d_left - d_right;
    if gap <= target || d_left > travel + 1e-4 && d_right > travel + 1e-4 {
        return nothing;
    }
    // the first pad to touch pushes the object until the other one meets it
    let shift = (d_left - d_right) / 2.0;
    // which part did the pads meet?
    let touched_part = per_finger[0]
        .iter()
        .chain(per_finger[1].iter())
        .filter(|c| c.object == object)
        .min_by(|a, b| a.dist.total_cmp(&b.dist))
        .and_then(|c| {
            world.objects[object].geoms[c.geom]
                .part
                .map(|p| (p, c.geom))
        });
    let o = &world.objects[object];
    let link = touched_part.and_then(|(p, _)| o.parts[p].link).or_else(|| {
        per_finger[0]
            .iter()
            .find(|c| c.object == object)
            .and_then(|c| o.geoms[c.geom].link)
    });
    let grip = if let Some(link) = link {
        let anchor = o.frame_of(Some(link)).inverse() * Point3::from(tool.translation.vector);
        Grip::Link {
            object,
            link,
            anchor,
        }
    } else if o.fixed {
        Grip::Fixed { object }
    } else if o.mount.as_ref().is_some_and(|m| !m.removed) {
        Grip::Mounted {
            object,
            start: Point3::from(tool.translation.vector),
        }
    } else {
        let shift_world = tool.rotation * Vector3::new(0.0, shift, 0.0);
        let obj = &mut world.objects[object];
        obj.pose = Isometry3::from_parts(
            Translation3::from(obj.pose.translation.vector + shift_world),
            obj.pose.rotation,
        );
        Grip::Object {
            object,
            tool_to_object: tool.inverse() * obj.pose,
            part: touched_part.map(|(p, _)| p),
        }
    };
    CloseResult {
        position: gap.max(0.0),
        stalled: true,
        grip: Some(grip),
        displaced: None,
    }
}

fn displace(
    world: &mut World,
    object: ObjectIdx,
    tool: &Isometry3,
    rng: &mut ChaCha8Rng,
    params: &EffectParams,
) {
    let (lo, hi) = params.displacement;
    let dist = lo + (hi - lo) * rng.random::<f32>();
    let sign = if rng.random::<bool>() { 1.0 } else { -1.0 };
    let mut push = tool.rotation * Vector3::new(0.0, sign, 0.0);
    push.z = 0.0;
    let push = if push.norm() < 1e-3 {
        Vector3::new(sign, 0.0, 0.0)
    } else {
        push.normalize()
    };
    let yaw = (rng.random::<f32>() - 0.5) * 1.0;
    let o = &mut world.objects[object];
    let c = o.centroid();
    let turn = Isometry3::from_parts(
        Translation3::from(c.coords + push * dist),
        UnitQuaternion::from_euler_angles(0.0, 0.0, yaw),
    ) * Isometry3::translation(-c.x, -c.y, -c.z);
    o.pose = turn * o.pose;
    settle(world, object, &|_| false);
}

/// Lets `object` fall straight down onto whatever is below it, upright again about its
/// original orientation (keeping its heading), ignoring the objects `skip` selects.
pub fn settle(world: &mut World, object: ObjectIdx, skip: &dyn Fn(ObjectIdx) -> bool) {
    // upright: remove roll and pitch relative to the rest orientation kept at load
    let o = &world.objects[object];
    let before = o.aabb();
    let rot = o.pose.rotation;
    let up = rot * Vector3::z();
    let tilt = UnitQuaternion::rotation_between(&up, &Vector3::z())
        .unwrap_or_else(UnitQuaternion::identity);
    let upright = if up.z < 0.5 { rot } else { tilt * rot };
    let c = before.center();
    let o = &mut world.objects[object];
    let centre_local = o.pose.inverse() * c;
    let new_rot_pose = Isometry3::from_parts(Translation3::identity(), upright);
    let moved_centre = new_rot_pose * centre_local;
    o.pose = Isometry3::from_parts(Translation3::from(c.coords - moved_centre.coords), upright);
    let b = world.objects[object].aabb();
    // support height under the footprint
    let mut support = Real::NEG_INFINITY;
    let n = 5;
    for i in 0..n {
        for j in 0..n {
            let fx = 0.1 + 0.8 * i as Real / (n - 1) as Real;
            let fy = 0.1 + 0.8 * j as Real / (n - 1) as Real;
            let x = b.mins.x + (b.maxs.x - b.mins.x) * fx;
            let y = b.mins.y + (b.maxs.y - b.mins.y) * fy;
            let ray = Ray::new(Point3::new(x, y, b.mins.z + 1e-3), -Vector3::z());
            if let Some(hit) = world.cast_ray(&ray, 100.0, |k| k == object || skip(k)) {
                support = support.max(b.mins.z + 1e-3 - hit.toi);
            }
        }
    }
    if !support.is_finite() {
        support = if world.floor.is_some() { 0.0 } else { b.mins.z };
    }
    let dz = support - b.mins.z;
    let o = &mut world.objects[object];
    o.pose = Isometry3::from_parts(
        Translation3::from(o.pose.translation.vector + Vector3::new(0.0, 0.0, dz)),
        o.pose.rotation,
    );
}

/// Something a motion step did.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    Pressed {
        object: ObjectIdx,
        part: usize,
    },
    Typed {
        object: ObjectIdx,
        symbol: String,
    },
    Removed {
        object: ObjectIdx,
    },
    Slipped {
        object: ObjectIdx,
    },
    Articulated {
        object: ObjectIdx,
        link: usize,
        position: Real,
    },
}

/// Advances the world by one small tool motion from `from` to `to` (map frame), the
/// fingers `opening` metres apart.
pub fn step_tool(
    world: &mut World,
    grip: &mut Option<Grip>,
    from: &Isometry3,
    to: &Isometry3,
    opening: Real,
    params: &EffectParams,
) -> Vec<Event> {
    let mut events = Vec::new();
    let tcp = Point3::from(to.translation.vector);
    let tip = to * Point3::new(0.0, 0.0, params.tip_z);
    let tip_from = from * Point3::new(0.0, 0.0, params.tip_z);
    let delta = tip - tip_from;
    match grip.clone() {
        Some(Grip::Object {
            object,
            tool_to_object,
            ..
        }) => {
            world.objects[object].pose = to * tool_to_object;
        }
        Some(Grip::Mounted { object, start }) => {
            let o = &mut world.objects[object];
            if let Some(m) = o.mount.as_mut() {
                let axis = m.seated.rotation * m.axis.into_inner();
                let d = tcp - start;
                let along = d.dot(&axis).max(0.0);
                let lateral = (d - axis * along).norm();
                o.pose = Isometry3::from_parts(
                    Translation3::from(m.seated.translation.vector + axis * along.min(m.release)),
                    m.seated.rotation,
                );
                if along >= m.release {
                    m.removed = true;
                    let pose = o.pose;
                    *grip = Some(Grip::Object {
                        object,
                        tool_to_object: to.inverse() * pose,
                        part: None,
                    });
                    events.push(Event::Removed { object });
                } else if lateral > params.slip_distance {
                    *grip = None;
                    events.push(Event::Slipped { object });
                }
            }
        }
        Some(Grip::Link {
            object,
            link,
            anchor,
        }) => {
            let q = drive_link(world, object, link, &anchor, &tcp, None);
            let o = &world.objects[object];
            let anchor_world = o.frame_of(Some(link)) * anchor;
            events.push(Event::Articulated {
                object,
                link,
                position: q,
            });
            if (anchor_world - tcp).norm() > params.slip_distance {
                *grip = None;
                events.push(Event::Slipped { object });
            }
        }
        Some(Grip::Fixed { object }) => {
            let _ = object;
        }
        None => {
            let fingers = Fingers {
                closing: to.rotation * Vector3::y(),
                approach: to.rotation * Vector3::z(),
                opening,
            };
            hook_and_push(world, &tip, &delta, &fingers, params, &mut events);
        }
    }
    press_buttons(world, &tip, &mut events);
    events
}

/// Sets the link's joint so that `anchor` (link frame) follows `target` as closely as the
/// joint allows; with `only` the joint may move only in that direction (+1 open, -1 close).
fn drive_link(
    world: &mut World,
    object: ObjectIdx,
    link: usize,
    anchor: &Point3,
    target: &Point3,
    only: Option<Real>,
) -> Real {
    let o = &mut world.objects[object];
    let l = &o.links[link];
    let joint_frame = o.pose * l.origin;
    let axis = joint_frame.rotation * l.axis.into_inner();
    let current = l.position;
    let wanted = match l.kind {
        JointKind::Prismatic => {
            let now = o.pose * l.transform() * anchor;
            current + (target - now).dot(&axis)
        }
        JointKind::Revolute => {
            let hinge = Point3::from(joint_frame.translation.vector);
            let now = o.pose * l.transform() * anchor;
            let proj = |p: &Point3| {
                let v = p - hinge;
                v - axis * v.dot(&axis)
            };
            let (a, b) = (proj(&now), proj(target));
            if a.norm() < 1e-4 || b.norm() < 1e-4 {
                current
            } else {
                let angle = a.cross(&b).dot(&axis).atan2(a.dot(&b));
                current + angle
            }
        }
    };
    let mut q = wanted.clamp(l.lower, l.upper);
    if let Some(dir) = only
        && (q - current) * dir < 0.0
    {
        q = current;
    }
    o.links[link].position = q;
    q
}

/// The free gripper's fingers, map frame.
struct Fingers {
    /// The direction the fingers close along (tool y).
    closing: Vector3,
    /// The direction the gripper points (tool z).
    approach: Vector3,
    /// Gap between the fingers, metres.
    opening: Real,
}

impl Fingers {
    /// Whether a handle `thickness` wide across the fingers passes between them as the
    /// tool moves by `delta`: open fingers around a bar slide off it along the tool's
    /// own axis (backing off after letting go) without catching it.
    fn slide_off(&self, thickness: Real, delta: &Vector3) -> bool {
        self.opening > thickness && delta.dot(&self.approach).abs() >= 0.9 * delta.norm()
    }
}

/// A free tip (no grip) hooks handles it moves away from their panel, unless open
/// fingers slide off them, and pushes links it presses into.
fn hook_and_push(
    world: &mut World,
    tcp: &Point3,
    delta: &Vector3,
    fingers: &Fingers,
    params: &EffectParams,
    events: &mut Vec<Event>,
) {
    if delta.norm() < 1e-7 {
        return;
    }
    let prev = tcp - delta;
    for oi in 0..world.objects.len() {
        if world.objects[oi].links.is_empty() {
            continue;
        }
        let reach = world.objects[oi].aabb().loosened(params.hook_margin + 0.05);
        if !reach.contains_local_point(tcp) {
            continue;
        }
        for li in 0..world.objects[oi].links.len() {
            let o = &world.objects[oi];
            let frame = o.frame_of(Some(li));
            let local_prev = frame.inverse() * prev;
            // opening direction at the tip, link frame
            let l = &o.links[li];
            let open_dir_local = match l.kind {
                JointKind::Prismatic => l.axis.into_inner(),
                JointKind::Revolute => {
                    // in the link frame the hinge passes through the origin along the axis
                    let r =
                        local_prev.coords - l.axis.into_inner() * local_prev.coords.dot(&l.axis);
                    if r.norm() < 1e-4 {
                        continue;
                    }
                    l.axis.cross(&r).normalize()
                }
            };
            let open_dir = frame.rotation * open_dir_local;
            let along = delta.dot(&open_dir);
            // hooked: inside a handle's margin but not in front of its outer face
            let mut hooked = false;
            for (pi, p) in o.parts.iter().enumerate() {
                if p.link != Some(li) || p.function != PartFunction::Handle {
                    continue;
                }
                let local = local_aabb_of_part(o, pi, li);
                let closing_local = frame.inverse_transform_vector(&fingers.closing);
                let size = local.maxs - local.mins;
                let thickness = size.dot(&closing_local.abs());
                if fingers.slide_off(thickness, delta) {
                    continue;
                }
                let grown = local.loosened(params.hook_margin);
                let outer = local
                    .vertices()
                    .iter()
                    .map(|v| v.coords.dot(&open_dir_local))
                    .fold(Real::NEG_INFINITY, Real::max);
                if grown.contains_local_point(&local_prev)
                    && local_prev.coords.dot(&open_dir_local) < outer
                {
                    hooked = true;
                }
            }
            // pushing: the tip is in the link's geometry (1 cm margin) and moves to close it
            let touching = o.geoms.iter().filter(|g| g.link == Some(li)).any(|g| {
                g.prim
                    .aabb(&o.geom_pose(g))
                    .loosened(0.01)
                    .contains_local_point(&prev)
            });
            let dir = if hooked && along > 0.0 {
                Some(1.0)
            } else if touching && along < 0.0 {
                Some(-1.0)
            } else {
                None
            };
            if let Some(dir) = dir {
                let anchor = local_prev;
                let q = drive_link(world, oi, li, &anchor, tcp, Some(dir));
                events.push(Event::Articulated {
                    object: oi,
                    link: li,
                    position: q,
                });
            }
        }
    }
}

/// The part's bounding box in its link's frame.
fn local_aabb_of_part(
    o: &crate::world::Object,
    part: usize,
    link: usize,
) -> parry3d::bounding_volume::Aabb {
    let mut out: Option<parry3d::bounding_volume::Aabb> = None;
    for g in o
        .geoms
        .iter()
        .filter(|g| g.part == Some(part) && g.link == Some(link))
    {
        let b = g.prim.aabb(&g.local);
        out = Some(match out {
            Some(a) => parry3d::bounding_volume::BoundingVolume::merged(&a, &b),
            None => b,
        });
    }
    out.unwrap_or_else(|| parry3d::bounding_volume::Aabb::new(Point3::origin(), Point3::origin()))
}

/// Registers presses of buttons and keys the tip is pushed into.
fn press_buttons(world: &mut World, tcp: &Point3, events: &mut Vec<Event>) {
    for oi in 0..world.objects.len() {
        let near = world.objects[oi]
            .aabb()
            .loosened(0.05)
            .contains_local_point(tcp);
        let o = &mut world.objects[oi];
        for pi in 0..o.parts.len() {
            let p = &o.parts[pi];
            if !matches!(p.function, PartFunction::Button | PartFunction::Key) {
                continue;
            }
            if !near {
                if p.pressed_now {
                    o.parts[pi].pressed_now = false;
                }
                continue;
            }
            let owner = o.frame_of(p.link);
            let local = owner.inverse() * tcp;
            let axis = p.press_axis.into_inner();
            // part geometry in the owner frame
            let corners: Vec<Point3> = o
                .geoms
                .iter()
                .filter(|g| g.part == Some(pi))
                .flat_map(|g| g.prim.aabb(&g.local).vertices())
                .collect();
            if corners.is_empty() {
                continue;
            }
            let surface = corners
                .iter()
                .map(|c| -c.coords.dot(&axis))
                .fold(Real::NEG_INFINITY, Real::max);
            let depth = surface - (-local.coords.dot(&axis));
            let (e1, e2) = perpendicular_basis(&axis);
            let within = |e: &Vector3| {
                let vals: Vec<Real> = corners.iter().map(|c| c.coords.dot(e)).collect();
                let (lo, hi) = vals
                    .iter()
                    .fold((Real::INFINITY, Real::NEG_INFINITY), |(a, b), v| {
                        (a.min(*v), b.max(*v))
                    });
                let x = local.coords.dot(e);
                x >= lo && x <= hi
            };
            let inside = within(&e1) && within(&e2);
            let travel = p.travel;
            if inside && depth >= travel * 0.5 && depth <= travel + 0.05 {
                if !p.pressed_now {
                    let part = &mut o.parts[pi];
                    part.pressed_now = true;
                    part.presses += 1;
                    events.push(Event::Pressed {
                        object: oi,
                        part: pi,
                    });
                    if part.function == PartFunction::Key
                        && let Some(s) = part.symbol.clone()
                    {
                        o.typed.push_str(&s);
                        events.push(Event::Typed {
                            object: oi,
                            symbol: s,
                        });
                    }
                }
            } else if !inside || depth < travel * 0.25 {
                o.parts[pi].pressed_now = false;
            }
        }
    }
}

fn perpendicular_basis(axis: &Vector3) -> (Vector3, Vector3) {
    let helper = if axis.x.abs() < 0.9 {
        Vector3::x()
    } else {
        Vector3::y()
    };
    let e1 = axis.cross(&helper).normalize();
    let e2 = axis.cross(&e1).normalize();
    (e1, e2)
}

/// A random stream for effects, derived from the simulation seed.
pub fn effect_rng(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed ^ 0x005e_edef_fec7)
}

/// The finger boxes at `tool` (map) intersect `object`'s geometry.
pub fn fingers_touch(
    world: &World,
    tool: &Isometry3,
    opening: Real,
    fingers: &FingerGeometry,
    object: ObjectIdx,
) -> bool {
    let o = &world.objects[object];
    fingers.fingers(opening).iter().any(|(at, half)| {
        let pose = tool * at;
        let b = Cuboid::new(*half);
        o.geoms
            .iter()
            .any(|g| intersection_test(&pose, &b, &o.geom_pose(g), g.prim.shape()).unwrap_or(false))
    })
}
