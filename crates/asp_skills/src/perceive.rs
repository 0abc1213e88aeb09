//! The perception observer: before and after each skill it captures fresh depth frames
//! from the robot's cameras and judges them against what the skill acted on — the same
//! code on a robot and in simulation, reading nothing but images, depth, camera
//! intrinsics and poses (TF).
//!
//! Every judgement rests on one primitive, free-space reasoning along camera rays
//! ([`DepthView::classify`]): a map point projected into a depth image is **present** when
//! the reading there matches its depth, **vacated** when the camera sees farther (the ray
//! passes through where the point was, so that space is empty now), **occluded** when
//! something nearer hides it, and unseen out of view or without a reading. From it:
//!
//! - the object's last known place ([`Observed::prior_place`]): how many of its points are
//!   still there and how many are free space — a picked object has left its place, a
//!   missed grasp left it where it was;
//! - what appeared on a place target ([`Observed::object_cloud`] after place/drop): the
//!   points now on or in the target's box that the views before the skill saw as free
//!   space, minus the gripper (a self-filter around the tool centre point);
//! - how far a part moved along the joint the skill estimated
//!   ([`Observed::joint_travel`]): the travel at which the moved part's points (the part
//!   and the object around it) best match the view, searched along the joint;
//! - a crop of the view around the part or object ([`Observed::observation`]) for the
//!   VLM's before/after Yes/No question (SPEC §4.3), which geometry cannot answer for a
//!   pressed button.
//!
//! The tolerance grows with the square of the depth, as the noise of stereo and
//! structured-light cameras does.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use asp_config::sections::skills::ObserverPerceptionConfig;
use asp_core::image::DepthImage;
use asp_core::models::Observation;
use asp_core::robot::FrameSource;
use asp_core::{
    Box2, CameraIntrinsics, Isometry3, ObjectKey, Point3, PointCloud, Real, RgbdFrame, Skill,
    Vector3,
};
use asp_verify::{
    JointTravel, PlaceOccupancy, RefinementResult, ThresholdDecision, ThresholdVerifier,
};
use async_trait::async_trait;
use nalgebra::{Unit, UnitQuaternion};
use tracing::debug;

use crate::articulation::JointKind;
use crate::observe::{
    ObserveError, ObservePhase, ObserveRequest, Observed, PartMotion, SceneObserver,
};

/// Readings closer than this to the tolerance's floor are noise at any range, metres.
const MIN_TOLERANCE: Real = 0.003;
/// A point of a held object's old place within this many voxels of where its cloud moved
/// with the tool is the object now, not judged (see [`place_left_to_judge`]).
const HELD_COVER_VOXELS: Real = 1.5;
/// A view whose depth tolerance at a point is more than this many times the finest
/// view's does not outvote it (see [`classify_in`]).
const COARSER_VIEW: Real = 2.0;

/// What a depth view says about one map point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    /// The reading matches the point's depth.
    Present,
    /// The camera sees farther: the point's space is empty.
    Vacated,
    /// Something nearer hides the point.
    Occluded,
    /// Out of view, behind the camera, or no reading.
    Unseen,
}

/// One depth image with its camera, for free-space reasoning.
#[derive(Debug, Clone)]
pub struct DepthView {
    intrinsics: CameraIntrinsics,
    map_to_camera: Isometry3,
    camera_to_map: Isometry3,
    depth: DepthImage,
    tolerance_at_1m: Real,
}

impl DepthView {
    pub fn new(frame: &RgbdFrame, tolerance_at_1m: Real) -> Self {
        Self {
            intrinsics: frame.intrinsics,
            map_to_camera: frame.camera_pose.iso.inverse(),
            camera_to_map: frame.camera_pose.iso,
            depth: frame.depth.clone(),
            tolerance_at_1m,
        }
    }

    fn tolerance(&self, depth: Real) -> Real {
        (self.tolerance_at_1m * depth * depth).max(MIN_TOLERANCE)
    }

    /// The depth tolerance at a map point, from its distance along this camera's axis.
    fn tolerance_at(&self, p: &Point3) -> Real {
        self.tolerance((self.map_to_camera * p).z)
    }

    fn reading(&self, x: i64, y: i64) -> Option<Real> {
        if x < 0 || y < 0 {
            return None;
        }
        self.depth
            .get(x as u32, y as u32)
            .copied()
            .filter(|d| d.is_finite() && *d > 0.0)
    }

    /// The point (map frame) against this view: the readings of the 3×3 pixels around
    /// its projection decide, so a point on an edge is not called vacated by the
    /// background next to it.
    pub fn classify(&self, p: &Point3) -> Seen {
        let c = self.map_to_camera * p;
        let Some((u, v)) = self.intrinsics.project(&c) else {
            return Seen::Unseen;
        };
        if u < 0.0
            || v < 0.0
            || u >= self.intrinsics.width as Real
            || v >= self.intrinsics.height as Real
        {
            return Seen::Unseen;
        }
        let (x, y) = (u.floor() as i64, v.floor() as i64);
        let tol = self.tolerance(c.z);
        let (mut any, mut nearer) = (false, false);
        for dy in -1..=1 {
            for dx in -1..=1 {
                let Some(r) = self.reading(x + dx, y + dy) else {
                    continue;
                };
                any = true;
                if (r - c.z).abs() <= tol {
                    return Seen::Present;
                }
                nearer |= r < c.z - tol;
            }
        }
        match (any, nearer) {
            (false, _) => Seen::Unseen,
            (true, true) => Seen::Occluded,
            (true, false) => Seen::Vacated,
        }
    }

    /// Map-frame points of every `step`-th pixel with a reading, passing `keep`.
    fn points(&self, step: u32, mut keep: impl FnMut(&Point3) -> bool) -> Vec<Point3> {
        let mut out = Vec::new();
        let step = step.max(1) as usize;
        let (w, h) = (self.depth.width() as usize, self.depth.height() as usize);
        let px = self.depth.pixels();
        for y in (0..h).step_by(step) {
            for x in (0..w).step_by(step) {
                let d = px[y * w + x];
                if !(d.is_finite() && d > 0.0) {
                    continue;
                }
                let p = self.camera_to_map
                    * self
                        .intrinsics
                        .unproject(x as Real + 0.5, y as Real + 0.5, d);
                if keep(&p) {
                    out.push(p);
                }
            }
        }
        out
    }
}

/// The views' joint verdict on a point. Among the views that read the point's depth
/// (present or vacated), those whose tolerance there is within [`COARSER_VIEW`] times the
/// finest one's decide, and present in any of them wins (an object still there is seen
/// by one camera even when another's reading is off). A far camera's coarse tolerance
/// cannot tell a thin object from the surface right behind it (a thumbtack's head from
/// its cork board): a near camera that sees the place vacated is believed over it. With
/// no depth read: occluded when any view has something nearer, else unseen.
pub fn classify_in(views: &[DepthView], p: &Point3) -> Seen {
    let mut judged: Vec<(Seen, Real)> = Vec::with_capacity(views.len());
    let mut occluded = false;
    for v in views {
        match v.classify(p) {
            s @ (Seen::Present | Seen::Vacated) => judged.push((s, v.tolerance_at(p))),
            Seen::Occluded => occluded = true,
            Seen::Unseen => {}
        }
    }
    let Some(finest) = judged.iter().map(|j| j.1).min_by(Real::total_cmp) else {
        return if occluded {
            Seen::Occluded
        } else {
            Seen::Unseen
        };
    };
    let present = judged
        .iter()
        .any(|(s, t)| *s == Seen::Present && *t <= COARSER_VIEW * finest);
    if present {
        Seen::Present
    } else {
        Seen::Vacated
    }
}

/// How the views see `points`.
pub fn occupancy(views: &[DepthView], points: &[Point3]) -> PlaceOccupancy {
    tally(points.iter().map(|p| classify_in(views, p)))
}

/// The counts of verdicts on an object's points.
fn tally(seen: impl Iterator<Item = Seen>) -> PlaceOccupancy {
    let mut o = PlaceOccupancy::default();
    for s in seen {
        o.points += 1;
        match s {
            Seen::Present => o.present += 1,
            Seen::Vacated => o.vacated += 1,
            Seen::Occluded => o.occluded += 1,
            Seen::Unseen => {}
        }
    }
    o
}

/// `p` moved by `q` along `joint` (metres along a slide, radians about a hinge).
pub fn move_along(joint: &JointKind, p: &Point3, q: Real) -> Point3 {
    match joint {
        JointKind::Prismatic { axis, .. } => p + axis * q,
        JointKind::Revolute { origin, axis, .. } => {
            let rot = UnitQuaternion::from_axis_angle(&Unit::new_normalize(*axis), q);
            origin + rot * (p - origin)
        }
    }
}

/// How the views see `moving` moved by `q` along `joint`.
fn seen_at(views: &[DepthView], moving: &[Point3], joint: &JointKind, q: Real) -> PlaceOccupancy {
    tally(
        moving
            .iter()
            .map(|p| classify_in(views, &move_along(joint, p, q))),
    )
}

/// The travel along `joint` whose moved points best match the views: present points less
/// vacated ones (a wrong travel puts points in free space), ties to the smaller travel,
/// searched from a little behind the start to a quarter past `commanded` in steps of
/// `step`.
fn best_fit(
    views: &[DepthView],
    moving: &[Point3],
    joint: &JointKind,
    commanded: Real,
    step: Real,
) -> Fit {
    let (lo, hi) = (
        commanded.min(0.0) * 1.25 - 2.0 * step,
        commanded.max(0.0) * 1.25 + 2.0 * step,
    );
    let n = ((hi - lo) / step).ceil().max(1.0) as usize;
    let mut best: Option<Fit> = None;
    for i in 0..=n {
        let q = lo + step * i as Real;
        let o = seen_at(views, moving, joint, q);
        let fit = Fit {
            travel: q,
            present: o.present,
            vacated: o.vacated,
        };
        let better = best.as_ref().is_none_or(|b| {
            fit.net() > b.net() || (fit.net() == b.net() && q.abs() < b.travel.abs())
        });
        if better {
            best = Some(fit);
        }
    }
    best.unwrap_or(Fit {
        travel: 0.0,
        present: 0,
        vacated: 0,
    })
}

/// How well one travel about one joint fits the views.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Fit {
    travel: Real,
    present: u32,
    vacated: u32,
}

impl Fit {
    fn net(&self) -> i64 {
        i64::from(self.present) - i64::from(self.vacated)
    }
}

/// The travel along `motion`'s joint that the views show the part to have made (the
/// part and what moves with it, `moving`, as they were before the skill).
///
/// Where the part is seen at its new place: the travel whose moved points best match
/// the views ([`best_fit`]). Where it is not (a door seen edge-on, or out of view once
/// open): how far along its path the space the part would fill is seen empty, from the
/// start outwards, stopping at the first position where the part is seen or too little
/// of the space is seen empty — a door that did not move is seen at the start, one that
/// stopped half-way is seen there.
pub fn measure_travel(
    views: &[DepthView],
    moving: &[Point3],
    motion: &PartMotion,
    step: Real,
    min_support: u32,
) -> JointTravel {
    let fit = best_fit(views, moving, &motion.joint, motion.commanded, step);
    travel_from_fit(fit, views, moving, motion, step, min_support)
}

/// Share of the moving points the best fit must place where the views show them for its
/// travel to count: a door is hundreds of points, and a fit that places a few dozen
/// (on the mobile cabinet: 22 of 423, reading 0.66 rad for a door at about 0.5, where
/// true fits place 28-80 %) has found some points that happen to line up, not the door.
const MIN_FIT_SHARE: f64 = 0.1;

/// The travel [`measure_travel`] reports given the best fit about `motion`'s joint.
fn travel_from_fit(
    fit: Fit,
    views: &[DepthView],
    moving: &[Point3],
    motion: &PartMotion,
    step: Real,
    min_support: u32,
) -> JointTravel {
    let cmd = motion.commanded;
    let placed_enough = f64::from(fit.present) >= MIN_FIT_SHARE * moving.len() as f64;
    if fit.present >= min_support && placed_enough {
        return JointTravel {
            measured: fit.travel,
            commanded: cmd,
            support: fit.present,
        };
    }
    // the part is not seen anywhere: how far along its path the space is empty
    let dir = if cmd < 0.0 { -1.0 } else { 1.0 };
    let steps = ((cmd.abs() * 1.25) / step).ceil() as usize;
    let (mut swept, mut support) = (0.0, 0);
    for i in 0..=steps {
        let q = dir * step * i as Real;
        let o = seen_at(views, moving, &motion.joint, q);
        // hidden positions say nothing either way; a seen part ends the sweep
        if o.vacated < min_support || (o.present as Real) > 0.2 * o.judged() as Real {
            break;
        }
        swept = q;
        support = o.vacated;
    }
    JointTravel {
        measured: swept,
        commanded: cmd,
        support,
    }
}

/// Share of the door's points a hinge moved from the estimate must place where the views
/// show them before it replaces the estimate (on the mobile cabinet, right hinges place
/// 20–60 %; a spurious one placed 48 of about 500).
const MIN_REFINED_SHARE: f64 = 0.2;

/// What the hinge search did: the hinge's offset from the estimate, the iterations, and
/// why it stopped.
#[derive(Debug, Clone, PartialEq)]
pub struct HingeRefinement {
    /// Offset of the chosen hinge from the estimated one, metres (horizontal).
    pub offset: Vector3,
    pub iterations: u32,
    /// The threshold verifier's reason, or why the search ended before it said stop.
    pub stopped: String,
}

/// [`measure_travel`] about a hinge refined against the after-views (SPEC §5.1–5.2):
/// the hinge estimated from the front before the skill is off by a few centimetres
/// where the front was seen at an angle, and a door turned about the wrong line lands
/// beside where the views show it. Each iteration moves the best hinge so far by
/// `hinge_step` along one horizontal direction (towards or away from the handle, or
/// across) and fits the travel about it ([`best_fit`]); the score, 0–10, is
/// `5 · (1 + (present − vacated) / points)`. `verifier` decides when to stop (a score at
/// its threshold, no improvement for its patience, its iteration cap); the search also
/// ends at a hinge none of whose four neighbours fits better. The travel is then
/// measured about the best hinge found. Slides, and `hinge_step` 0, are measured as
/// estimated.
pub fn measure_travel_refined(
    views: &[DepthView],
    moving: &[Point3],
    motion: &PartMotion,
    step: Real,
    min_support: u32,
    hinge_step: Real,
    verifier: &ThresholdVerifier,
) -> (JointTravel, Option<HingeRefinement>) {
    let JointKind::Revolute {
        origin,
        axis,
        radius,
    } = motion.joint
    else {
        return (
            measure_travel(views, moving, motion, step, min_support),
            None,
        );
    };
    if hinge_step <= 0.0 || moving.is_empty() {
        return (
            measure_travel(views, moving, motion, step, min_support),
            None,
        );
    }
    let centre = moving.iter().fold(Vector3::zeros(), |a, p| a + p.coords) / moving.len() as Real;
    let towards = Vector3::new(centre.x - origin.x, centre.y - origin.y, 0.0);
    let towards = if towards.norm() > 1e-6 {
        towards.normalize()
    } else {
        Vector3::x()
    };
    let across = Vector3::z().cross(&towards);
    let hinge_at = |offset: &Vector3| JointKind::Revolute {
        origin: origin + offset,
        axis,
        radius,
    };
    let points = moving.len().max(1) as f64;
    let score = |f: &Fit| (5.0 * (1.0 + f.net() as f64 / points)).clamp(0.0, 10.0);
    let fit_at =
        |offset: &Vector3| best_fit(views, moving, &hinge_at(offset), motion.commanded, step);

    let mut best_offset = Vector3::zeros();
    let estimated = fit_at(&best_offset);
    let mut best = estimated;
    let mut history = vec![RefinementResult {
        iteration: 1,
        score: score(&best),
        components: None,
    }];
    let directions = [towards, -towards, across, -across];
    let mut untried = directions.to_vec();
    let stopped = loop {
        if let ThresholdDecision::Stop { message, .. } = verifier.check(&history) {
            break message;
        }
        let Some(d) = untried.pop() else {
            break "no neighbouring hinge fits better".to_owned();
        };
        let offset = best_offset + d * hinge_step;
        let f = fit_at(&offset);
        history.push(RefinementResult {
            iteration: history.len() as u32 + 1,
            score: score(&f),
            components: None,
        });
        if f.net() > best.net() {
            best = f;
            best_offset = offset;
            // go on from the new hinge, not back to where it came from
            untried = directions
                .iter()
                .copied()
                .filter(|x| (x + d).norm() > 1e-6)
                .collect();
        }
    };
    // a hinge moved from the estimate must explain a good share of the door, not a few
    // points that happen to line up: otherwise the estimate stands
    let enough = (moving.len() as f64 * MIN_REFINED_SHARE).ceil() as u32;
    let (best_offset, best, stopped) = if best_offset != Vector3::zeros() && best.present < enough {
        (
            Vector3::zeros(),
            estimated,
            format!(
                "{stopped}; the best moved hinge placed only {} of {} points, so the estimate stands",
                best.present,
                moving.len()
            ),
        )
    } else {
        (best_offset, best, stopped)
    };
    let refined = PartMotion {
        joint: hinge_at(&best_offset),
        commanded: motion.commanded,
    };
    let travel = travel_from_fit(best, views, moving, &refined, step, min_support);
    debug!(
        offset_m = ?(best_offset.dot(&towards), best_offset.dot(&across)),
        iterations = history.len(),
        measured = travel.measured,
        present = best.present,
        vacated = best.vacated,
        points = moving.len(),
        "hinge refined: {stopped}"
    );
    (
        travel,
        Some(HingeRefinement {
            offset: best_offset,
            iterations: history.len() as u32,
            stopped,
        }),
    )
}

/// Fewest points a thinned cloud keeps when the cloud has them (a thumbtack is a few
/// voxels of the default size).
const MIN_THINNED: usize = 64;

/// One point per `voxel` of `points`; finer voxels for a small object.
fn thin(points: &[Point3], voxel: Real) -> Vec<Point3> {
    let cloud = PointCloud::new("map", points.to_vec());
    let mut v = voxel;
    loop {
        let thinned = cloud
            .voxel_downsample(v)
            .map(|c| c.points().to_vec())
            .unwrap_or_else(|_| points.to_vec());
        if thinned.len() >= MIN_THINNED.min(points.len()) || v < 0.001 {
            return thinned;
        }
        v /= 2.0;
    }
}

/// Whether `p` is the gripper's (or the arm's above it) rather than the scene's.
fn is_gripper(p: &Point3, tool: Option<&Point3>, radius: Real) -> bool {
    let Some(t) = tool else { return false };
    let d = p - t;
    d.norm() <= radius || (d.xy().norm() <= radius && d.z > 0.0)
}

/// The points on or in the target's box that the views after the skill show and that
/// were not there before: seen as free space by a view before the skill, or — where the
/// held object and the gripper hid them then — off every surface the map knows of the
/// target (more than `voxel` from its cloud).
fn appeared(
    after: &[DepthView],
    before: &[DepthView],
    target: &PointCloud,
    on_top: bool,
    held_height: Real,
    tool: Option<&Point3>,
    cfg: &ObserverPerceptionConfig,
) -> Vec<Point3> {
    let Some((lo, hi)) = target.aabb() else {
        return Vec::new();
    };
    let margin = 0.03;
    // on a support only what is above its top counts (under a table the view changes
    // with the viewpoint); in a container, down to its bottom
    let floor = if on_top { hi.z } else { lo.z };
    let (zlo, zhi) = (floor - 0.02, hi.z + held_height + 0.05);
    let inside = |p: &Point3| {
        p.x >= lo.x - margin
            && p.x <= hi.x + margin
            && p.y >= lo.y - margin
            && p.y <= hi.y + margin
            && p.z >= zlo
            && p.z <= zhi
    };
    let voxel = cfg.voxel_size as Real;
    let key = |p: &Point3| {
        [
            (p.x / voxel).floor() as i32,
            (p.y / voxel).floor() as i32,
            (p.z / voxel).floor() as i32,
        ]
    };
    let known: std::collections::HashSet<[i32; 3]> = target.points().iter().map(key).collect();
    let off_target = |p: &Point3| {
        let k = key(p);
        !(-1..=1).any(|dx| {
            (-1..=1).any(|dy| (-1..=1).any(|dz| known.contains(&[k[0] + dx, k[1] + dy, k[2] + dz])))
        })
    };
    let mut out = Vec::new();
    for v in after {
        out.extend(v.points(cfg.pixel_step, |p| {
            inside(p)
                && !is_gripper(p, tool, cfg.self_filter_radius as Real)
                && match classify_in(before, p) {
                    Seen::Vacated => true,
                    Seen::Occluded => off_target(p),
                    Seen::Present | Seen::Unseen => false,
                }
        }));
    }
    thin(&out, voxel)
}

/// A crop of the view that best shows `focus`, for the VLM: the first view, in camera
/// order, that sees at least [`SHOWN_SHARE`] of its points (present, or their place left
/// free), else the one that sees most of them, else one it is in the field of view of.
/// Counting points rather than asking about the centroid: the centroid of a part seen
/// as a patch of a curved surface (a button on a kettle's lid) lies inside the object,
/// hidden from every camera.
///
/// `prefer` is the camera the view before the skill came from: after it, that camera is
/// asked first, so that the two views compared show the same side of the focus (a
/// part the wrist camera saw before a press may be hidden from the head camera, whose
/// view after it would then say nothing about the part).
fn view_of(
    frames: &[RgbdFrame],
    views: &[DepthView],
    focus: &[Point3],
    prefer: Option<usize>,
) -> Option<(usize, Observation)> {
    if focus.is_empty() {
        return None;
    }
    let shows = |s: Seen| matches!(s, Seen::Present | Seen::Vacated);
    let tallies: Vec<(usize, bool)> = views
        .iter()
        .map(|v| {
            let seen: Vec<Seen> = focus.iter().map(|p| v.classify(p)).collect();
            (
                seen.iter().filter(|s| shows(**s)).count(),
                seen.iter().any(|s| *s != Seen::Unseen),
            )
        })
        .collect();
    debug!(?tallies, points = focus.len(), "the focus in each camera");
    let enough = |i: usize| tallies[i].0 as f32 >= SHOWN_SHARE * focus.len() as f32;
    let most = (0..tallies.len())
        .filter(|&i| tallies[i].0 > 0)
        .max_by_key(|&i| (tallies[i].0, std::cmp::Reverse(i)));
    let pick = prefer
        .filter(|&i| i < tallies.len() && enough(i))
        .or_else(|| (0..tallies.len()).find(|&i| enough(i)))
        .or(most)
        .or_else(|| tallies.iter().position(|t| t.1))?;
    let (frame, view) = (&frames[pick], &views[pick]);
    let (w, h) = (
        frame.intrinsics.width as Real,
        frame.intrinsics.height as Real,
    );
    let mut bounds: Option<(Real, Real, Real, Real)> = None;
    for p in focus {
        if let Some((u, v)) = view.intrinsics.project(&(view.map_to_camera * p)) {
            let (u, v) = (u.clamp(0.0, w - 1.0), v.clamp(0.0, h - 1.0));
            bounds = Some(match bounds {
                None => (u, v, u, v),
                Some((a, b, c, d)) => (a.min(u), b.min(v), c.max(u), d.max(v)),
            });
        }
    }
    let (x0, y0, x1, y1) = bounds?;
    let pad = ((x1 - x0).max(y1 - y0) * 0.5).max(48.0);
    let rect = Box2 {
        x0: (x0 - pad).max(0.0),
        y0: (y0 - pad).max(0.0),
        x1: (x1 + pad).min(w),
        y1: (y1 + pad).min(h),
    }
    .to_pixel_rect(frame.intrinsics.width, frame.intrinsics.height);
    debug!(camera = pick, ?rect, "the view a verdict is asked on");
    let mut o = frame.observation().crop(&rect);
    // the VLM is shown colour; depth would only weigh down the request
    o.depth = None;
    Some((pick, o))
}

/// The share of a focus's points a view must see for it to show the focus.
const SHOWN_SHARE: f32 = 0.3;

/// The views of one object before a skill, and the camera whose view the verdict was
/// shown.
type ViewsBefore = (Vec<DepthView>, Option<usize>);

/// [`SceneObserver`] over the robot's depth cameras; see the module notes.
pub struct PerceptionObserver {
    frames: Arc<dyn FrameSource>,
    cfg: ObserverPerceptionConfig,
    /// The views before the skill on each object, for the comparison after it.
    before: Mutex<HashMap<ObjectKey, ViewsBefore>>,
}

impl std::fmt::Debug for PerceptionObserver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PerceptionObserver")
            .field("cfg", &self.cfg)
            .finish_non_exhaustive()
    }
}

impl PerceptionObserver {
    pub fn new(frames: Arc<dyn FrameSource>, cfg: ObserverPerceptionConfig) -> Self {
        Self {
            frames,
            cfg,
            before: Mutex::new(HashMap::new()),
        }
    }

    /// A frame from each configured camera; the cameras that fail are skipped.
    async fn capture(&self, what: &ObjectKey) -> Result<Vec<RgbdFrame>, ObserveError> {
        let mut frames = Vec::new();
        let mut errors = Vec::new();
        for cam in &self.cfg.cameras {
            match self.frames.capture(cam).await {
                Ok(f) => frames.push(f),
                Err(e) => errors.push(format!("{cam}: {e}")),
            }
        }
        if frames.is_empty() {
            return Err(ObserveError {
                what: what.to_string(),
                message: format!("no camera gave a frame ({})", errors.join("; ")),
            });
        }
        if !errors.is_empty() {
            debug!("observing {what} without {}", errors.join("; "));
        }
        Ok(frames)
    }

    fn lock_before(&self) -> std::sync::MutexGuard<'_, HashMap<ObjectKey, ViewsBefore>> {
        self.before
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[async_trait]
impl SceneObserver for PerceptionObserver {
    async fn observe(&self, r: &ObserveRequest) -> Result<Observed, ObserveError> {
        let frames = self.capture(&r.object).await?;
        let tol = self.cfg.depth_tolerance as Real;
        let views: Vec<DepthView> = frames.iter().map(|f| DepthView::new(f, tol)).collect();
        let voxel = self.cfg.voxel_size as Real;
        let object = thin(r.object_cloud.points(), voxel);
        let part = r.part_cloud.as_ref().map(|c| thin(c.points(), voxel));
        let focus: &[Point3] = match &part {
            Some(p) if !p.is_empty() => p,
            _ => &object,
        };
        // after the skill: the views before it, and the camera the verdict saw then
        let (before, prefer) = match r.phase {
            ObservePhase::Before => (Vec::new(), None),
            ObservePhase::After => self.lock_before().remove(&r.object).unwrap_or_default(),
        };
        let (camera, observation) = view_of(&frames, &views, focus, prefer).unzip();
        let mut out = Observed {
            observation,
            observed_at: frames.iter().map(|f| f.stamp).reduce(f64::max),
            ..Observed::default()
        };
        // the object's last known place; a held object is judged only after the skill
        // (before it, its place is the gripper's). A part skill judges the part's place:
        // the part is what the fingers took, and the object's cloud may hold some of
        // what it was pinned in (a thumbtack's cloud, some of the cork board around it)
        let place: &[Point3] = match (&part, r.skill) {
            (Some(p), Skill::PinchPull | Skill::GraspPart) if !p.is_empty() => p,
            _ => &object,
        };
        if !(r.held && r.phase == ObservePhase::Before) {
            let held_motion = match r.phase {
                ObservePhase::After if r.held => r.held_motion.as_ref(),
                _ => None,
            };
            let place = place_left_to_judge(place, held_motion, HELD_COVER_VOXELS * voxel);
            let place = place.as_slice();
            let seen: Vec<Seen> = place.iter().map(|p| classify_in(&views, p)).collect();
            let o = tally(seen.iter().copied());
            if r.phase == ObservePhase::Before && o.present > 0 {
                // what is still there, for "did a miss move it?"
                out.object_cloud = Some(PointCloud::new(
                    r.object_cloud.frame.clone(),
                    place
                        .iter()
                        .zip(&seen)
                        .filter(|(_, s)| **s == Seen::Present)
                        .map(|(p, _)| *p)
                        .collect(),
                ));
            }
            out.prior_place = Some(o);
        }
        match r.phase {
            ObservePhase::Before => {
                self.lock_before().insert(r.object.clone(), (views, camera));
            }
            ObservePhase::After => {
                if let Some((_, _, target)) = &r.target {
                    let held_height = r
                        .object_cloud
                        .aabb()
                        .map_or(0.15, |(lo, hi)| (hi.z - lo.z).max(0.02));
                    let new = appeared(
                        &views,
                        &before,
                        target,
                        r.relation != Some(asp_verify::Relation::In),
                        held_height,
                        r.tool_position.as_ref(),
                        &self.cfg,
                    );
                    out.target_cloud = Some(target.clone());
                    out.object_cloud =
                        (!new.is_empty()).then(|| PointCloud::new(target.frame.clone(), new));
                    // the held object's place before the skill was the gripper's
                    out.prior_place = None;
                }
                if let (Some(motion), Some(part)) = (&r.part_motion, &part) {
                    let radius = self.cfg.moving_radius as Real;
                    let mut moving = part.clone();
                    moving.extend(
                        object
                            .iter()
                            .filter(|p| part.iter().any(|q| (*p - q).norm() <= radius)),
                    );
                    let moving = thin(&moving, voxel);
                    let step = match motion.joint {
                        JointKind::Prismatic { .. } => self.cfg.travel_step_m,
                        JointKind::Revolute { .. } => self.cfg.travel_step_rad,
                    } as Real;
                    let (travel, _) = measure_travel_refined(
                        &views,
                        &moving,
                        motion,
                        step,
                        self.cfg.min_seen_points,
                        self.cfg.hinge_step_m as Real,
                        &ThresholdVerifier::new(self.cfg.hinge_refinement.clone()),
                    );
                    out.joint_travel = Some(travel);
                }
            }
        }
        Ok(out)
    }
}

/// The points of an object's old place a view can judge as left or not. A held object
/// went through the tool's motion since the fingers closed on it (`held_motion`): where
/// its moved points lie, within `reach`, is the object now, not its place left free (a
/// binder lifted by less than its height still fills most of where it stood). A held
/// object whose every point did not move farther than `reach` keeps all of its place to
/// judge: it is still there.
fn place_left_to_judge(
    place: &[Point3],
    held_motion: Option<&Isometry3>,
    reach: Real,
) -> Vec<Point3> {
    let Some(m) = held_motion else {
        return place.to_vec();
    };
    let moved: Vec<Point3> = place.iter().map(|q| m * q).collect();
    let all_moved_away = place
        .iter()
        .zip(&moved)
        .all(|(a, b)| (b - a).norm_squared() > reach * reach);
    if !all_moved_away {
        return place.to_vec();
    }
    let covered = asp_core::geometry::within_radius(place, &moved, reach);
    place
        .iter()
        .zip(covered)
        .filter(|(_, covered)| !covered)
        .map(|(p, _)| *p)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use asp_core::image::Image;
    use asp_core::{FrameId, RgbImage, Transform, Vector3};

    fn slide(axis: Vector3, travel: Real) -> JointKind {
        JointKind::Prismatic {
            axis: axis.normalize(),
            travel,
        }
    }

    /// A camera at the origin looking along +x of the map (optical +z = map +x), seeing a
    /// wall at `wall` metres, with a box of points in front of it when `object`.
    /// The optical frame (x right, y down, z forward) of a camera at the map's origin
    /// looking along +x (map x forward, y left, z up).
    fn looking_along_x() -> (nalgebra::Rotation3<Real>, Isometry3) {
        let rot = nalgebra::Rotation3::from_matrix_unchecked(nalgebra::Matrix3::new(
            0.0, 0.0, 1.0, //
            -1.0, 0.0, 0.0, //
            0.0, -1.0, 0.0,
        ));
        let iso = Isometry3::from_parts(
            nalgebra::Translation3::identity(),
            UnitQuaternion::from_rotation_matrix(&rot),
        );
        (rot, iso)
    }

    fn frame(wall: Real, object: Option<(Real, Real, Real)>) -> RgbdFrame {
        let intr = CameraIntrinsics::from_hfov(64, 48, 1.2);
        let (_, iso) = looking_along_x();
        let mut depth = Image::filled(64, 48, wall);
        if let Some((d, half_y, half_z)) = object {
            for y in 0..48u32 {
                for x in 0..64u32 {
                    let ray = intr.unproject(x as Real + 0.5, y as Real + 0.5, 1.0);
                    // map y = -optical x, map z = -optical y, at depth d
                    if (ray.x * d).abs() <= half_y && (ray.y * d).abs() <= half_z {
                        *depth.get_mut(x, y).unwrap() = d;
                    }
                }
            }
        }
        RgbdFrame {
            rgb: RgbImage::filled(64, 48, [0, 0, 0]),
            depth,
            intrinsics: intr,
            camera_pose: Transform::new(FrameId::map(), FrameId::new("cam"), iso),
            stamp: 0.0,
            ground_truth: None,
        }
    }

    fn face(x: Real, half: Real) -> Vec<Point3> {
        let mut v = Vec::new();
        for i in -3..=3 {
            for j in -3..=3 {
                v.push(Point3::new(
                    x,
                    half * i as Real / 3.0,
                    half * j as Real / 3.0,
                ));
            }
        }
        v
    }

    #[test]
    fn points_are_present_vacated_or_occluded() {
        let pts = face(1.0, 0.05);
        let there = DepthView::new(&frame(2.0, Some((1.0, 0.1, 0.1))), 0.01);
        let gone = DepthView::new(&frame(2.0, None), 0.01);
        let hidden = DepthView::new(&frame(2.0, Some((0.5, 0.3, 0.3))), 0.01);
        let o = occupancy(std::slice::from_ref(&there), &pts);
        assert_eq!((o.present, o.vacated), (pts.len() as u32, 0));
        let o = occupancy(std::slice::from_ref(&gone), &pts);
        assert_eq!((o.present, o.vacated), (0, pts.len() as u32));
        let o = occupancy(std::slice::from_ref(&hidden), &pts);
        assert_eq!(o.occluded, pts.len() as u32);
        // behind the camera or out of the image: not judged
        assert_eq!(there.classify(&Point3::new(-1.0, 0.0, 0.0)), Seen::Unseen);
        assert_eq!(there.classify(&Point3::new(1.0, 5.0, 0.0)), Seen::Unseen);
        // any view that still sees the point keeps it present
        assert_eq!(classify_in(&[gone, there], &pts[0]), Seen::Present);
    }

    #[test]
    fn a_lifted_object_is_judged_by_the_place_it_no_longer_fills() {
        // a face 10 cm tall at 1 m, held and lifted 4 cm: the view after shows it 4 cm
        // higher, so the top of its old place is still filled, by the object itself
        let pts = face(1.0, 0.05);
        let lift = Isometry3::translation(0.0, 0.0, 0.04);
        let intr = CameraIntrinsics::from_hfov(64, 48, 1.2);
        let mut after = frame(2.0, None);
        for y in 0..48u32 {
            for x in 0..64u32 {
                let ray = intr.unproject(x as Real + 0.5, y as Real + 0.5, 1.0);
                let z = -ray.y;
                if ray.x.abs() <= 0.06 && (-0.01..=0.09).contains(&z) {
                    *after.depth.get_mut(x, y).unwrap() = 1.0;
                }
            }
        }
        let view = [DepthView::new(&after, 0.01)];
        // judged whole, most of the old place is still filled: it reads as not left
        let whole = occupancy(&view, &pts);
        assert!(whole.vacated_share().unwrap() < 0.5, "{whole:?}");
        // judged where the moved object cannot be, it is free space
        let left = place_left_to_judge(&pts, Some(&lift), 0.015);
        assert!(!left.is_empty() && left.len() < pts.len());
        assert!(left.iter().all(|p| p.z < -0.02), "{left:?}");
        let o = occupancy(&view, &left);
        assert_eq!((o.vacated, o.present), (left.len() as u32, 0), "{o:?}");
        // without a motion, or with one that leaves the object where it was, all of the
        // place is judged
        assert_eq!(place_left_to_judge(&pts, None, 0.015), pts);
        let nudge = Isometry3::translation(0.0, 0.0, 0.01);
        assert_eq!(place_left_to_judge(&pts, Some(&nudge), 0.015), pts);
    }

    #[test]
    fn the_view_after_a_skill_comes_from_the_camera_of_the_view_before_it() {
        let pts = face(1.0, 0.05);
        let frames = [frame(2.0, Some((1.0, 0.1, 0.1))), frame(2.0, None)];
        let views: Vec<DepthView> = frames.iter().map(|f| DepthView::new(f, 0.01)).collect();
        // both show the focus (present, vacated): camera order picks the first
        assert_eq!(view_of(&frames, &views, &pts, None).unwrap().0, 0);
        // the camera of the view before is asked first
        assert_eq!(view_of(&frames, &views, &pts, Some(1)).unwrap().0, 1);
        // unless it no longer shows the focus (hidden behind something now)
        let hidden = [
            frame(2.0, Some((1.0, 0.1, 0.1))),
            frame(2.0, Some((0.5, 0.3, 0.3))),
        ];
        let views: Vec<DepthView> = hidden.iter().map(|f| DepthView::new(f, 0.01)).collect();
        assert_eq!(view_of(&hidden, &views, &pts, Some(1)).unwrap().0, 0);
        // or is not there at all
        assert_eq!(view_of(&hidden, &views, &pts, Some(7)).unwrap().0, 0);
    }

    #[test]
    fn a_near_view_that_sees_a_thin_object_gone_outvotes_a_coarse_one() {
        // a face 1 cm in front of a wall, removed: a fine camera reads the wall 1 cm
        // behind the point (vacated); a coarse one (5 cm tolerance) cannot tell
        let pts = face(1.0, 0.05);
        let fine_gone = DepthView::new(&frame(1.01, None), 0.005);
        let coarse = DepthView::new(&frame(1.01, None), 0.05);
        assert_eq!(coarse.classify(&pts[0]), Seen::Present);
        assert_eq!(fine_gone.classify(&pts[0]), Seen::Vacated);
        assert_eq!(
            classify_in(&[coarse.clone(), fine_gone], &pts[0]),
            Seen::Vacated
        );
        // the fine view still seeing it keeps it present, whatever the coarse one says
        let fine_there = DepthView::new(&frame(1.01, Some((1.0, 0.1, 0.1))), 0.005);
        let coarse_gone = DepthView::new(&frame(1.2, None), 0.05);
        assert_eq!(
            classify_in(&[coarse_gone, fine_there], &pts[0]),
            Seen::Present
        );
        // views alike in precision: present wins
        let other = DepthView::new(&frame(1.04, None), 0.03);
        assert_eq!(other.classify(&pts[0]), Seen::Vacated);
        assert_eq!(classify_in(&[coarse, other], &pts[0]), Seen::Present);
    }

    #[test]
    fn travel_is_found_along_the_joint() {
        // a drawer front 0.1 m wide at 1.0 m, pulled 0.15 m towards the camera (−x)
        let moving = face(1.0, 0.05);
        let motion = PartMotion {
            joint: slide(-Vector3::x(), 0.25),
            commanded: 0.25,
        };
        let opened = DepthView::new(&frame(2.0, Some((0.85, 0.05, 0.05))), 0.01);
        let t = measure_travel(std::slice::from_ref(&opened), &moving, &motion, 0.005, 15);
        assert!((t.measured - 0.15).abs() <= 0.011, "{t:?}");
        assert_eq!(t.support, moving.len() as u32);
        // not moved: the travel is zero
        let shut = DepthView::new(&frame(2.0, Some((1.0, 0.05, 0.05))), 0.01);
        let t = measure_travel(std::slice::from_ref(&shut), &moving, &motion, 0.005, 15);
        assert!(t.measured.abs() <= 0.011, "{t:?}");
    }

    #[test]
    fn a_fit_that_places_a_few_of_the_parts_points_is_not_a_measurement() {
        // a 30 cm drawer front pulled 0.15 m, but the view shows a 4 cm patch of it:
        // the few points there line up at 0.15 m, which says little about the front
        let moving = face(1.0, 0.15);
        let motion = PartMotion {
            joint: slide(-Vector3::x(), 0.25),
            commanded: 0.25,
        };
        let patch = DepthView::new(&frame(2.0, Some((0.85, 0.02, 0.02))), 0.01);
        let fit = best_fit(
            std::slice::from_ref(&patch),
            &moving,
            &motion.joint,
            0.25,
            0.005,
        );
        assert!((1..5).contains(&fit.present), "{fit:?}");
        let t = measure_travel(std::slice::from_ref(&patch), &moving, &motion, 0.005, 1);
        assert_ne!(t.support, fit.present, "the weak fit was taken: {t:?}");
    }

    /// A 160×120 camera at the origin looking along +x, seeing a wall at x = 2.5 and a
    /// door 0.4 m wide and 0.4 m tall whose closed face is the plane x = 1.5, hinged on the
    /// vertical line through `hinge` (its edge at y = hinge.y, the door reaching +0.4 m in
    /// y), opened by `angle` towards the camera.
    fn door_frame(hinge: Point3, angle: Real) -> RgbdFrame {
        let (w, h) = (160u32, 120u32);
        let intr = CameraIntrinsics::from_hfov(w, h, 1.2);
        let (rot, iso) = looking_along_x();
        let along = Vector3::new(-angle.sin(), angle.cos(), 0.0); // the door's width
        let normal = Vector3::z().cross(&along); // horizontal, across the door
        let mut depth = Image::filled(w, h, 2.5);
        for y in 0..h {
            for x in 0..w {
                let ray = intr.unproject(x as Real + 0.5, y as Real + 0.5, 1.0);
                let d = rot * ray.coords; // map frame, d.x = 1 (optical z)
                let denom = d.dot(&normal);
                if denom.abs() < 1e-6 {
                    continue;
                }
                let t = hinge.coords.dot(&normal) / denom;
                let p = d * t;
                let s = (p - hinge.coords).dot(&along);
                if t > 0.0 && (0.0..=0.4).contains(&s) && p.z.abs() <= 0.2 && p.x < 2.5 {
                    *depth.get_mut(x, y).unwrap() = p.x;
                }
            }
        }
        RgbdFrame {
            rgb: RgbImage::filled(w, h, [0, 0, 0]),
            depth,
            intrinsics: intr,
            camera_pose: Transform::new(FrameId::map(), FrameId::new("cam"), iso),
            stamp: 0.0,
            ground_truth: None,
        }
    }

    #[test]
    fn a_misplaced_hinge_is_refined_until_the_opened_door_fits() {
        let hinge = Point3::new(1.5, -0.3, 0.0);
        let angle = 0.6;
        let opened = DepthView::new(&door_frame(hinge, angle), 0.01);
        // the closed door's points, 2 cm apart
        let mut moving = Vec::new();
        for i in 0..=20 {
            for k in -10..=10 {
                moving.push(Point3::new(1.5, -0.3 + 0.02 * i as Real, 0.02 * k as Real));
            }
        }
        // the estimate put the hinge 6 cm towards the handle
        let estimated = PartMotion {
            joint: JointKind::Revolute {
                origin: Point3::new(1.5, -0.24, 0.0),
                axis: Vector3::z(),
                radius: 0.3,
            },
            commanded: 1.2,
        };
        let views = std::slice::from_ref(&opened);
        let plain = measure_travel(views, &moving, &estimated, 0.02, 15);
        let verifier = ThresholdVerifier::new(ObserverPerceptionConfig::default().hinge_refinement);
        let (refined, how) =
            measure_travel_refined(views, &moving, &estimated, 0.02, 15, 0.02, &verifier);
        let how = how.expect("a hinge is refined");
        assert!(
            (refined.measured - angle).abs() <= 0.03,
            "refined {refined:?}, {how:?}"
        );
        assert!(
            (plain.measured - angle).abs() > (refined.measured - angle).abs() + 0.02,
            "the estimated hinge alone: {plain:?}; refined: {refined:?}"
        );
        // it moved the hinge (to one about which the door fits: along the door's line a
        // hinge and an angle trade off) and said why it stopped
        assert!(how.offset.norm() >= 0.02, "{how:?}");
        assert!(how.iterations >= 2 && !how.stopped.is_empty(), "{how:?}");
        // slides are measured as estimated
        let slide_motion = PartMotion {
            joint: slide(-Vector3::x(), 0.25),
            commanded: 0.25,
        };
        assert!(
            measure_travel_refined(views, &moving, &slide_motion, 0.005, 15, 0.02, &verifier)
                .1
                .is_none()
        );
    }

    #[test]
    fn what_appeared_on_a_target_excludes_what_was_there_and_the_gripper() {
        let cfg = ObserverPerceptionConfig {
            pixel_step: 1,
            ..ObserverPerceptionConfig::default()
        };
        // the target: a slab standing at x = 1.5 (the wall at 2.0 is behind it)
        let target = PointCloud::new("map", face(1.5, 0.3));
        let before = vec![DepthView::new(&frame(2.0, None), 0.01)];
        let after = vec![DepthView::new(&frame(2.0, Some((1.49, 0.05, 0.05))), 0.01)];
        let new = appeared(&after, &before, &target, false, 0.1, None, &cfg);
        assert!(!new.is_empty());
        assert!(new.iter().all(|p| (p.x - 1.49).abs() < 0.01));
        // nothing changed: nothing appeared
        let same = appeared(&before, &before, &target, false, 0.1, None, &cfg);
        assert!(same.is_empty());
        // the same points next to the tool are the gripper
        let tool = Point3::new(1.49, 0.0, 0.0);
        let gripper = appeared(&after, &before, &target, false, 0.1, Some(&tool), &cfg);
        assert!(gripper.is_empty(), "{}", gripper.len());
    }
}
