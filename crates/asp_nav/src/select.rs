//! Choosing the base pose for go_to (SPEC §1.6).
//!
//! 1. The affordance direction `n`: the outward normal of the affordance point cloud,
//!    oriented away from the object's centroid and projected on the floor. A rod-like
//!    part (a handle bar) or a part facing up (a keypad, a button) has no usable
//!    horizontal normal; its direction is then the horizontal offset of the part from
//!    the object's centroid — the side of the object the part is on. A part in the top
//!    band of the object's height and over it (a button on a kettle's lid) is on top,
//!    not on a side: no direction (a cloud seen from one side has its centroid on that
//!    side, which put such a part "behind" the object, and the robot round the table).
//! 2. For a radius r (0.85 m first): `p_aff = c + r·n` around the object centroid `c`;
//!    candidates `p_k = c + r·(cos φ_k, sin φ_k)` at `angular_samples` steps, each with the
//!    heading that faces `c`.
//! 3. A candidate is discarded when its footprint (a disc of `footprint_radius`) covers a
//!    lethal cell (occupancy ≥ `lethal_cost`), an unknown cell (when
//!    `unknown_is_lethal`) or leaves the grid, or when the arm's mount ends up farther
//!    than `arm_reach` from the part (the object without one). Carrying an object to
//!    put down ([`CarryReach`]), it is discarded when the wrist cannot reach down onto
//!    the free spot of the object's top face the place skill tries first.
//! 4. Cost `F + λ_aff‖p − p_aff‖`, `F` the mean footprint occupancy in [0, 1]; the
//!    cheapest wins, ties going to the pose nearer the robot (the "go near" of the
//!    ablation, `λ_aff = 0`), then to the lower angle. Without an affordance, `p_aff`
//!    lies on the robot's side of the object: the side it was seen from, whose parts
//!    the cameras showed (behind a table, a cheaper cost map may offer the back of a
//!    drawer).
//! 5. No valid candidate: r relaxes by `radius_step`, alternately inwards and outwards,
//!    within `[min_radius, max_radius]`.
//!
//! When the affordance is a part to open (a door or drawer handle), its joint is
//! estimated as the skill will estimate it and the part's motion joins the choice
//! ([`PartSweep`]): a pose whose footprint the swinging leaf would hit is invalid, and
//! the share of the handle's path outside `[arm_min_reach, arm_reach]` of the mount adds
//! `part_motion.lambda_reach` × share to the cost. Without it, the pose nearest the
//! affordance side stands where an opening door's handle ends up (inside the arm's
//! folded reach, the leaf against the base).

use asp_config::GoToConfig;
use asp_config::sections::go_to::PartMotionConfig;
use asp_core::Skill;
use asp_core::geometry::polygon_contains;
use asp_core::grid::{OccupancyGrid, UNKNOWN};
use asp_core::{Point3, Pose2D, Real, Vector3};
use asp_skills::articulation::{JointEstimate, JointKind, estimate_joint};
use asp_skills::geometry::{Principal, horizontal};
use asp_skills::placement;
use serde::{Deserialize, Serialize};

/// Why a candidate pose was discarded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rejection {
    /// The footprint covers an occupied cell.
    Collision,
    /// The footprint covers an unknown cell.
    Unknown,
    /// The footprint leaves the grid.
    OutsideMap,
    /// The arm could not reach the part from there.
    OutOfReach,
    /// The part is so near the arm's mount that the arm would fold into itself.
    TooNear,
    /// The part's leaf would swing into the base's footprint.
    Swing,
}

/// Where an articulated part goes while a skill opens it, from its estimated joint.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PartSweep {
    /// The handle's path, start to end, evenly spaced.
    pub path: Vec<Point3>,
    /// Points the moving leaf (a door from its hinge to past its handle, a drawer's
    /// front) passes through.
    pub swept: Vec<Point3>,
}

impl PartSweep {
    const STEPS: usize = 8;

    /// The sweep of opening `joint` by `door_angle` (revolute) or its own travel
    /// (prismatic), the leaf reaching `leaf_margin` past the handle.
    pub fn opening(joint: &JointEstimate, door_angle: Real, leaf_margin: Real) -> Self {
        let h = joint.handle;
        let steps = Self::STEPS;
        match joint.kind {
            JointKind::Revolute { origin, axis, .. } => {
                let r0 = Vector3::new(h.x - origin.x, h.y - origin.y, 0.0);
                let len = r0.norm();
                if len < 1e-3 {
                    return Self::default();
                }
                let mut path = Vec::with_capacity(steps + 1);
                let mut swept = Vec::new();
                let up = if axis.z >= 0.0 { 1.0 } else { -1.0 };
                for i in 0..=steps {
                    let a = up * door_angle * i as Real / steps as Real;
                    let (sn, cs) = a.sin_cos();
                    let r = Vector3::new(cs * r0.x - sn * r0.y, sn * r0.x + cs * r0.y, 0.0);
                    path.push(Point3::new(origin.x + r.x, origin.y + r.y, h.z));
                    let reach = (len + leaf_margin) / len;
                    for k in 1..=6 {
                        let f = reach * k as Real / 6.0;
                        swept.push(Point3::new(origin.x + r.x * f, origin.y + r.y * f, h.z));
                    }
                }
                Self { path, swept }
            }
            JointKind::Prismatic { axis, travel } => {
                let path: Vec<Point3> = (0..=steps)
                    .map(|i| h + axis * (travel * i as Real / steps as Real))
                    .collect();
                Self {
                    swept: path.clone(),
                    path,
                }
            }
        }
    }

    /// The sweep of a part go_to drives to open (`Open`, `HookPull`), from the part's
    /// and the object's points; `None` for other skills, with `part_motion` off, or when
    /// the joint cannot be estimated (the skill will say so itself).
    pub fn for_skill(
        skill: Skill,
        part: &[Point3],
        object: &[Point3],
        cfg: &PartMotionConfig,
    ) -> Option<Self> {
        if !cfg.enabled || !matches!(skill, Skill::Open | Skill::HookPull) {
            return None;
        }
        let travel = cfg.drawer_travel as Real;
        let joint = estimate_joint(
            part,
            object,
            cfg.surface_radius as Real,
            (1.0, travel, travel),
        )?;
        Some(Self::opening(
            &joint,
            cfg.door_angle as Real,
            cfg.leaf_margin as Real,
        ))
    }

    /// Share of the path whose horizontal distance from `mount` is outside
    /// `[min, max]` (`max` 0: no upper bound).
    pub fn out_of_reach(&self, mount: [Real; 2], min: Real, max: Real) -> Real {
        if self.path.is_empty() {
            return 0.0;
        }
        let out = self
            .path
            .iter()
            .filter(|q| {
                let d = (q.x - mount[0]).hypot(q.y - mount[1]);
                d < min || (max > 0.0 && d > max)
            })
            .count();
        out as Real / self.path.len() as Real
    }

    /// Whether the leaf passes within `radius` of `p` (the base's footprint).
    pub fn hits(&self, p: [Real; 2], radius: Real) -> bool {
        self.swept
            .iter()
            .any(|q| (q.x - p[0]).hypot(q.y - p[1]) < radius)
    }
}

/// One candidate base pose.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    pub pose: Pose2D,
    pub radius: Real,
    /// Mean footprint occupancy, 0 (free) … 1 (occupied).
    pub footprint_cost: Real,
    /// ‖p − p_aff‖, 0 without an affordance direction.
    pub affordance_distance: Real,
    /// Share of the part's path (when opening one) outside the arm's reach from here.
    #[serde(default)]
    pub path_out_of_reach: Real,
    /// `footprint_cost + λ_aff · affordance_distance + λ_reach · path_out_of_reach`.
    pub cost: Real,
    /// Distance from the robot's current position.
    pub travel: Real,
    pub rejection: Option<Rejection>,
}

impl Candidate {
    pub fn valid(&self) -> bool {
        self.rejection.is_none()
    }
}

/// The chosen pose and how it was found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Selection {
    pub chosen: Candidate,
    /// Object centroid on the floor.
    pub centre: [Real; 2],
    /// The affordance direction `n` on the floor, when there is one.
    pub affordance_direction: Option<[Real; 2]>,
    /// `p_aff` at the chosen radius: along the affordance direction, or without one, on
    /// the robot's side of the object (the side its cameras saw).
    pub p_aff: Option<[Real; 2]>,
    /// Radii tried, in order; the last is the chosen one's.
    pub radii: Vec<Real>,
    /// Every candidate of the chosen radius.
    pub candidates: Vec<Candidate>,
    /// Candidates evaluated over all radii.
    pub evaluated: usize,
}

/// No pose could be chosen.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SelectionError {
    #[error("the object's point cloud is empty")]
    EmptyObject,
    #[error(
        "no valid base pose around the object at radii {radii:?} m: {collision} in collision, {unknown} on unknown cells, {outside} off the map, {reach} out of the arm's reach, {near} too near the arm's mount, {swing} in the way of the part's swing"
    )]
    NoValidPose {
        radii: Vec<Real>,
        collision: usize,
        unknown: usize,
        outside: usize,
        reach: usize,
        near: usize,
        swing: usize,
    },
}

/// What the selection works on.
#[derive(Debug, Clone, Copy)]
pub struct SelectionInput<'a> {
    pub grid: &'a OccupancyGrid,
    /// The object's points (map frame).
    pub object: &'a [Point3],
    /// The affordance's points, when one was detected.
    pub affordance: Option<&'a [Point3]>,
    /// The robot's current pose.
    pub robot: Pose2D,
    /// The part's motion, when go_to drives to open it.
    pub sweep: Option<&'a PartSweep>,
    /// The object the gripper carries, to put down on the object ([`CarryReach`]).
    pub carried: Option<Carried<'a>>,
    /// The skill there grasps the target (from above where it can): poses whose wrist
    /// reaches over its top come first ([`PickReach`]).
    pub pick: bool,
}

/// What the gripper carries to put down, and what stands around where it goes.
#[derive(Debug, Clone, Copy)]
pub struct Carried<'a> {
    /// Its height, metres: the tool works that much (and a little) above the face.
    pub height: Real,
    /// Its footprint radius, metres: the free spot it needs.
    pub radius: Real,
    /// The other objects' points around the receiving object.
    pub around: &'a [Point3],
}

/// Placing a carried object: the arm reaches down onto the nearest free spot of the
/// receiving object's top face (as the place skill finds them,
/// [`asp_skills::placement`]) with the object below the tool. The reach is the wrist
/// centre's sphere about the shoulder (the tool pointing down, the wrist `tool_length`
/// above the tool point): a desk's centre 0.35 m past its front edge, or even its front
/// at 0.6 m from the mount, is out of reach with a bottle held 1.05 m up.
#[derive(Debug, Clone)]
pub struct CarryReach {
    /// The free spots on the floor (the face's centre when none is free).
    spots: Vec<(Real, Real)>,
    /// Height of the wrist centre above the shoulder while putting down.
    wrist_above_shoulder: Real,
}

/// The tool point above the face beyond the carried object's height: the placing
/// clearance and the approach from above (skill_executor_node's `grasp.place_clearance`
/// and `grasp.approach_distance`, 0.02 + 0.05).
const PLACE_WORK_ABOVE: Real = 0.07;

impl CarryReach {
    pub fn new(object: &[Point3], carried: &Carried<'_>, cfg: &GoToConfig) -> Option<Self> {
        if cfg.arm_wrist_reach <= 0.0 || cfg.arm_shoulder_height <= 0.0 {
            return None;
        }
        let top = placement::top_height(object)?;
        let mut spots = placement::free_spots(object, top, carried.radius, carried.around);
        if spots.is_empty() {
            let face: Vec<&Point3> = object
                .iter()
                .filter(|p| p.z >= top - placement::FACE_BAND)
                .collect();
            let n = face.len() as Real;
            spots.push((
                face.iter().map(|p| p.x).sum::<Real>() / n,
                face.iter().map(|p| p.y).sum::<Real>() / n,
            ));
        }
        Some(Self {
            spots,
            wrist_above_shoulder: top
                + carried.height.max(0.0)
                + PLACE_WORK_ABOVE
                + cfg.tool_length
                - cfg.arm_shoulder_height,
        })
    }

    /// Whether the arm mounted at `mount` puts the object down on the face: the spot
    /// the place skill tries first within the wrist's reach.
    pub fn reaches(&self, mount: [Real; 2], wrist_reach: Real) -> bool {
        let order = |s: &(Real, Real)| placement::spot_order(*s, mount);
        let Some(first) = self
            .spots
            .iter()
            .min_by(|a, b| order(a).total_cmp(&order(b)))
        else {
            return false;
        };
        let out = (first.0 - mount[0]).hypot(first.1 - mount[1]);
        out.max(placement::SPOT_MIN_REACH)
            .hypot(self.wrist_above_shoulder)
            <= wrist_reach
    }
}

/// Picking up: a top-down grasp puts the wrist `tool_length` above the tool point, and
/// the tool point about level with the target's top (the pads close a few centimetres
/// below it; the pre-grasp at the minimum stand-off and the lift's end a few above). The
/// wrist centre's sphere about the shoulder then bounds how far out the target may lie:
/// a binder standing 0.28 m tall on a 0.75 m desk is out of reach from 0.58 m, where its
/// middle (the arm's usual `arm_reach`) is not. A preference, not a rule: where no pose
/// satisfies it (a side grasp may still reach), the selection falls back to
/// `arm_reach` alone.
#[derive(Debug, Clone, Copy)]
pub struct PickReach {
    /// Height of the wrist centre above the shoulder with the tool at the target's top.
    wrist_above_shoulder: Real,
}

impl PickReach {
    pub fn new(target: &[Point3], cfg: &GoToConfig) -> Option<Self> {
        if cfg.arm_wrist_reach <= 0.0 || cfg.arm_shoulder_height <= 0.0 {
            return None;
        }
        let top = placement::top_height(target)?;
        Some(Self {
            wrist_above_shoulder: top + cfg.tool_length - cfg.arm_shoulder_height,
        })
    }

    /// Whether the wrist reaches over the target's top `out` metres from the mount.
    pub fn reaches(&self, out: Real, wrist_reach: Real) -> bool {
        out.hypot(self.wrist_above_shoulder) <= wrist_reach
    }
}

/// What the arm must reach from a candidate pose.
struct Reach<'a> {
    /// The part (or the object) centroid.
    target: &'a Point3,
    carry: Option<&'a CarryReach>,
    pick: Option<&'a PickReach>,
}

/// go_to's pose selection with its settings.
#[derive(Debug, Clone, PartialEq)]
pub struct PoseSelector {
    cfg: GoToConfig,
}

/// Costs closer than this are a tie.
const TIE: Real = 1e-4;

/// Fewer points of an affordance part than this (1 cm voxels: a few square centimetres
/// seen) give it no side of its object.
pub const MIN_PART_POINTS_FOR_SIDE: usize = 6;

/// A part whose centroid lies in this top share of the object's height, over the
/// object (nearer its centroid horizontally than the object's farthest point), is on
/// top, not on a side: it has no side.
pub const TOP_BAND: Real = 0.15;

impl PoseSelector {
    pub fn new(cfg: GoToConfig) -> Self {
        Self { cfg }
    }

    pub fn config(&self) -> &GoToConfig {
        &self.cfg
    }

    /// The same selector with another λ_aff (0: plain "go near").
    pub fn with_lambda(mut self, lambda_aff: Real) -> Self {
        self.cfg.lambda_aff = lambda_aff;
        self
    }

    /// The affordance direction on the floor (see the module notes), unit length; `None`
    /// for a part of fewer than [`MIN_PART_POINTS_FOR_SIDE`] points.
    pub fn affordance_direction(
        object: &[Point3],
        part: &[Point3],
        seen_from: [Real; 2],
    ) -> Option<Vector3> {
        // a few voxels of part say nothing about its side: their offset from the object's
        // centroid is the segmentation's noise (a plug's two visible voxels)
        if part.len() < MIN_PART_POINTS_FOR_SIDE {
            return None;
        }
        let pp = Principal::of(part)?;
        let oc = Principal::of(object).map_or(pp.centroid, |p| p.centroid);
        let n = pp.normal();
        let flat = pp.flatness() < 0.3 && pp.roundness() > 0.2;
        if flat && Vector3::new(n.x, n.y, 0.0).norm() > 0.5 {
            // away from the object's centroid; where the part lies level with it (a
            // thumbtack's head is most of what is seen of it, a handle beside a drawer
            // front's centre), towards where it was seen from: a camera sees a surface
            // from its front
            let away = (pp.centroid - oc).dot(&n);
            let towards_view = Vector3::new(
                seen_from[0] - pp.centroid.x,
                seen_from[1] - pp.centroid.y,
                0.0,
            )
            .dot(&n);
            let flip = if away.abs() > 0.005 {
                away < 0.0
            } else {
                towards_view < 0.0
            };
            return horizontal(&if flip { -n } else { n });
        }
        let off = pp.centroid - oc;
        let off_h = Vector3::new(off.x, off.y, 0.0);
        if off_h.norm() < 0.01 {
            return None;
        }
        // a part on top, over the object (a button on a kettle's lid): any side reaches
        // it, and the offset is the view's bias (a cloud seen from one side has its
        // centroid on that side, so a centred part looks to lie behind it)
        let (z_lo, z_hi) = object
            .iter()
            .fold((Real::MAX, Real::MIN), |(a, b), q| (a.min(q.z), b.max(q.z)));
        let reach = object
            .iter()
            .map(|q| Vector3::new(q.x - oc.x, q.y - oc.y, 0.0).norm())
            .fold(0.0, Real::max);
        if pp.centroid.z >= z_hi - TOP_BAND * (z_hi - z_lo) && off_h.norm() < reach {
            return None;
        }
        horizontal(&off)
    }

    /// Radii in the order they are tried: r, r − s, r + s, r − 2s, … within the bounds.
    pub fn radii(&self) -> Vec<Real> {
        let c = &self.cfg;
        let mut out = vec![c.radius.clamp(c.min_radius, c.max_radius)];
        let mut k = 1;
        loop {
            let lo = c.radius - c.radius_step * k as Real;
            let hi = c.radius + c.radius_step * k as Real;
            let (lo_ok, hi_ok) = (lo >= c.min_radius - 1e-6, hi <= c.max_radius + 1e-6);
            if !lo_ok && !hi_ok {
                break;
            }
            if lo_ok {
                out.push(lo);
            }
            if hi_ok {
                out.push(hi);
            }
            k += 1;
        }
        out
    }

    /// Chooses the base pose.
    pub fn select(&self, input: &SelectionInput<'_>) -> Result<Selection, SelectionError> {
        let oc = Principal::of(input.object)
            .ok_or(SelectionError::EmptyObject)?
            .centroid;
        let n = input.affordance.and_then(|a| {
            Self::affordance_direction(input.object, a, [input.robot.x, input.robot.y])
        });
        tracing::debug!(
            direction = ?n.map(|v| [v.x, v.y]),
            object_centroid = ?[oc.x, oc.y, oc.z],
            part_centroid = ?input.affordance.and_then(Principal::of).map(|p| [p.centroid.x, p.centroid.y, p.centroid.z]),
            part_points = input.affordance.map_or(0, <[Point3]>::len),
            "affordance direction"
        );
        // without an affordance, the side of the object the robot is on: the side its
        // cameras saw (a drawer's front, a cup's handle), not one a cheaper cost map
        // behind the table offers
        let side = n.or_else(|| {
            let v = Vector3::new(input.robot.x - oc.x, input.robot.y - oc.y, 0.0);
            (v.norm() > 1e-3).then(|| v.normalize())
        });
        let reach_target = input
            .affordance
            .and_then(Principal::of)
            .map_or(oc, |p| p.centroid);
        let carry = input
            .carried
            .and_then(|c| CarryReach::new(input.object, &c, &self.cfg));
        // picking up: poses whose wrist reaches over the target's top first, then (none
        // does) the arm's reach alone
        let pick = if input.pick && carry.is_none() {
            PickReach::new(input.affordance.unwrap_or(input.object), &self.cfg)
        } else {
            None
        };
        let passes: &[Option<&PickReach>] = match &pick {
            Some(p) => &[Some(p), None],
            None => &[None],
        };
        let disc = footprint_disc(input.grid.resolution, self.cfg.footprint_radius);
        let footprint = Footprint::new(&self.cfg, &disc);
        let mut counts = [0usize; 6];
        let mut radii = Vec::new();
        let mut evaluated = 0;
        for pick in passes {
            counts = [0; 6];
            radii.clear();
            for r in self.radii() {
                radii.push(r);
                let p_aff = side.map(|n| [oc.x + r * n.x, oc.y + r * n.y]);
                let reach = Reach {
                    target: &reach_target,
                    carry: carry.as_ref(),
                    pick: *pick,
                };
                let candidates: Vec<Candidate> = (0..self.cfg.angular_samples)
                    .map(|k| {
                        let phi =
                            std::f32::consts::TAU * k as Real / self.cfg.angular_samples as Real;
                        let p = [oc.x + r * phi.cos(), oc.y + r * phi.sin()];
                        self.candidate(input, &footprint, p, [oc.x, oc.y], r, p_aff, &reach)
                    })
                    .collect();
                evaluated += candidates.len();
                let best = candidates
                    .iter()
                    .enumerate()
                    .filter(|(_, c)| c.valid())
                    .min_by(|(i, a), (j, b)| {
                        if (a.cost - b.cost).abs() <= TIE {
                            a.travel.total_cmp(&b.travel).then(i.cmp(j))
                        } else {
                            a.cost.total_cmp(&b.cost)
                        }
                    })
                    .map(|(_, c)| c.clone());
                for c in &candidates {
                    match c.rejection {
                        Some(Rejection::Collision) => counts[0] += 1,
                        Some(Rejection::Unknown) => counts[1] += 1,
                        Some(Rejection::OutsideMap) => counts[2] += 1,
                        Some(Rejection::OutOfReach) => counts[3] += 1,
                        Some(Rejection::TooNear) => counts[4] += 1,
                        Some(Rejection::Swing) => counts[5] += 1,
                        None => {}
                    }
                }
                if let Some(chosen) = best {
                    return Ok(Selection {
                        chosen,
                        centre: [oc.x, oc.y],
                        affordance_direction: n.map(|n| [n.x, n.y]),
                        p_aff,
                        radii,
                        candidates,
                        evaluated,
                    });
                }
            }
        }
        Err(SelectionError::NoValidPose {
            radii,
            collision: counts[0],
            unknown: counts[1],
            outside: counts[2],
            reach: counts[3],
            near: counts[4],
            swing: counts[5],
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn candidate(
        &self,
        input: &SelectionInput<'_>,
        footprint: &Footprint<'_>,
        p: [Real; 2],
        c: [Real; 2],
        r: Real,
        p_aff: Option<[Real; 2]>,
        reach: &Reach<'_>,
    ) -> Candidate {
        let theta = (c[1] - p[1]).atan2(c[0] - p[0]);
        let pose = Pose2D::new(p[0], p[1], theta);
        let cells = footprint.cells(input.grid, &pose);
        let (footprint_cost, mut rejection) = self.footprint(input.grid, &cells);
        let [ox, oy] = self.cfg.arm_offset;
        let (s, co) = theta.sin_cos();
        let mount = [p[0] + co * ox - s * oy, p[1] + s * ox + co * oy];
        if rejection.is_none() {
            let d = (reach.target.x - mount[0]).hypot(reach.target.y - mount[1]);
            // carrying: a spot of the top face, not its centre, is what the arm must reach
            let out_of_reach = match reach.carry {
                Some(c) => !c.reaches(mount, self.cfg.arm_wrist_reach),
                None => {
                    (self.cfg.arm_reach > 0.0 && d > self.cfg.arm_reach)
                        || reach
                            .pick
                            .is_some_and(|p| !p.reaches(d, self.cfg.arm_wrist_reach))
                }
            };
            if out_of_reach {
                rejection = Some(Rejection::OutOfReach);
            } else if reach.carry.is_none() && d < self.cfg.arm_min_reach {
                rejection = Some(Rejection::TooNear);
            } else if input
                .sweep
                .is_some_and(|w| w.hits(p, self.cfg.footprint_radius))
            {
                rejection = Some(Rejection::Swing);
            }
        }
        let sweep_out = input.sweep.map_or(0.0, |w| {
            w.out_of_reach(mount, self.cfg.arm_min_reach, self.cfg.arm_reach)
        });
        let affordance_distance = p_aff.map_or(0.0, |a| (p[0] - a[0]).hypot(p[1] - a[1]));
        Candidate {
            pose,
            radius: r,
            footprint_cost,
            affordance_distance,
            path_out_of_reach: sweep_out,
            cost: footprint_cost
                + self.cfg.lambda_aff * affordance_distance
                + self.cfg.part_motion.lambda_reach * sweep_out,
            travel: (p[0] - input.robot.x).hypot(p[1] - input.robot.y),
            rejection,
        }
    }

    /// Mean occupancy under the footprint, and why the pose is invalid if it is.
    fn footprint(&self, grid: &OccupancyGrid, cells: &[(i64, i64)]) -> (Real, Option<Rejection>) {
        let mut sum = 0.0;
        let mut rejection = None;
        for &(i, j) in cells {
            match grid.get(i, j) {
                None => return (1.0, Some(Rejection::OutsideMap)),
                Some(UNKNOWN) => {
                    if self.cfg.unknown_is_lethal {
                        rejection.get_or_insert(Rejection::Unknown);
                    }
                    sum += 1.0;
                }
                Some(v) if v < 0 => sum += 1.0,
                Some(v) => {
                    if v >= self.cfg.lethal_cost {
                        rejection = Some(Rejection::Collision);
                    }
                    sum += Real::from(v) / 100.0;
                }
            }
        }
        (sum / cells.len().max(1) as Real, rejection)
    }
}

/// What the base covers on the grid: its outline polygon at the pose's heading, or the
/// circle of `footprint_radius` around it.
enum Footprint<'d> {
    Polygon {
        corners: Vec<[Real; 2]>,
        reach: Real,
    },
    Disc(&'d [(i64, i64)]),
}

impl<'d> Footprint<'d> {
    fn new(cfg: &GoToConfig, disc: &'d [(i64, i64)]) -> Self {
        if cfg.footprint.len() >= 3 {
            // Nav2's padFootprint: each coordinate moved away from the centre
            let pad = |v: Real| v + v.signum() * cfg.footprint_padding;
            let corners: Vec<[Real; 2]> = cfg
                .footprint
                .iter()
                .map(|c| [pad(c[0]), pad(c[1])])
                .collect();
            let reach = corners
                .iter()
                .map(|c| c[0].hypot(c[1]))
                .fold(0.0, Real::max);
            Footprint::Polygon { corners, reach }
        } else {
            Footprint::Disc(disc)
        }
    }

    /// The cells under the base at `pose` (the centre cell at least).
    fn cells(&self, grid: &OccupancyGrid, pose: &Pose2D) -> Vec<(i64, i64)> {
        let (ci, cj) = grid.world_to_cell(pose.x, pose.y);
        match self {
            Footprint::Disc(disc) => disc.iter().map(|(di, dj)| (ci + di, cj + dj)).collect(),
            Footprint::Polygon { corners, reach } => {
                let n = (reach / grid.resolution).ceil() as i64 + 1;
                let (sin, cos) = pose.theta.sin_cos();
                let mut out = Vec::new();
                for j in cj - n..=cj + n {
                    for i in ci - n..=ci + n {
                        let (x, y) = grid.cell_center(i, j);
                        let (dx, dy) = (x - pose.x, y - pose.y);
                        if polygon_contains(corners, [cos * dx + sin * dy, -sin * dx + cos * dy]) {
                            out.push((i, j));
                        }
                    }
                }
                if out.is_empty() {
                    out.push((ci, cj));
                }
                out
            }
        }
    }
}

/// Cell offsets whose centres lie within `radius` of a cell centre.
fn footprint_disc(resolution: Real, radius: Real) -> Vec<(i64, i64)> {
    let n = (radius / resolution).ceil() as i64;
    let mut out = Vec::new();
    for dj in -n..=n {
        for di in -n..=n {
            let d = ((di * di + dj * dj) as Real).sqrt() * resolution;
            if d <= radius {
                out.push((di, dj));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use asp_core::grid::{FREE, OCCUPIED};

    /// The selection for `object` on `grid`, the robot at (1, 3) facing +x, no
    /// affordance or sweep.
    fn from_the_west<'a>(grid: &'a OccupancyGrid, object: &'a [Point3]) -> SelectionInput<'a> {
        SelectionInput {
            grid,
            object,
            affordance: None,
            robot: Pose2D::new(1.0, 3.0, 0.0),
            sweep: None,
            carried: None,
            pick: false,
        }
    }

    fn room() -> OccupancyGrid {
        // 6 × 6 m free room with a wall along its north edge
        let mut g = OccupancyGrid::new(0.05, 120, 120, Pose2D::new(0.0, 0.0, 0.0), FREE).unwrap();
        for i in 0..120 {
            for j in 116..120 {
                g.set(i, j, OCCUPIED);
            }
        }
        g
    }

    fn blob(c: Point3, half: Real) -> Vec<Point3> {
        let mut v = Vec::new();
        for i in 0..5 {
            for j in 0..5 {
                for k in 0..5 {
                    let f = |n: i32| (n as Real / 2.0 - 1.0) * half;
                    v.push(Point3::new(c.x + f(i), c.y + f(j), c.z + f(k)));
                }
            }
        }
        v
    }

    /// No reach limit, the 0.4 m circle as the footprint (the outline has its own test).
    fn cfg() -> GoToConfig {
        GoToConfig {
            arm_reach: 0.0,
            footprint: Vec::new(),
            ..GoToConfig::default()
        }
    }

    /// A table `depth` deep (x) and 1.2 m wide (y) with its top at `top`, centred at
    /// (3, 3), occupying the grid under it.
    fn table(g: &mut OccupancyGrid, depth: Real, top: Real) -> Vec<Point3> {
        let (x0, x1) = (3.0 - depth / 2.0, 3.0 + depth / 2.0);
        let mut v = Vec::new();
        let n = (depth / 0.02).round() as i32;
        for i in 0..=n {
            for j in 0..=60 {
                v.push(Point3::new(
                    x0 + 0.02 * i as Real,
                    2.4 + 0.02 * j as Real,
                    top,
                ));
            }
        }
        let (i0, j0) = g.world_to_cell(x0, 2.4);
        let (i1, j1) = g.world_to_cell(x1, 3.6);
        for i in i0..=i1 {
            for j in j0..=j1 {
                g.set(i, j, OCCUPIED);
            }
        }
        v
    }

    /// A binder 0.26 m wide, 0.28 m tall, standing on a desk top at 0.75 m, `behind` m
    /// behind the west front edge of a 0.7 m-deep desk (centred at x = 3).
    fn binder_on_a_desk(behind: Real) -> (OccupancyGrid, Vec<Point3>) {
        let mut g = room();
        table(&mut g, 0.7, 0.75);
        let x = 3.0 - 0.35 + behind;
        let mut v = Vec::new();
        for j in 0..=13 {
            for k in 0..=14 {
                v.push(Point3::new(
                    x,
                    2.87 + 0.02 * j as Real,
                    0.75 + 0.02 * k as Real,
                ));
            }
        }
        (g, v)
    }

    #[test]
    fn picking_a_tall_object_stands_where_the_wrist_reaches_over_its_top() {
        let s = PoseSelector::new(GoToConfig::default());
        let mount = |p: &Pose2D| {
            let (sn, cs) = p.theta.sin_cos();
            [p.x + cs * 0.17, p.y + sn * 0.17]
        };
        let out = |p: &Pose2D, target: &[Point3]| {
            let c = Principal::of(target).unwrap().centroid;
            let m = mount(p);
            (c.x - m[0]).hypot(c.y - m[1])
        };
        let (g, binder) = binder_on_a_desk(0.155);
        let reach = PickReach::new(&binder, s.config()).unwrap();
        let plain = s.select(&from_the_west(&g, &binder)).unwrap();
        assert!(
            !reach.reaches(out(&plain.chosen.pose, &binder), 0.64),
            "the arm's horizontal reach alone would do: {:?}",
            plain.chosen
        );
        let pick = s
            .select(&SelectionInput {
                pick: true,
                ..from_the_west(&g, &binder)
            })
            .unwrap();
        let d = out(&pick.chosen.pose, &binder);
        assert!(reach.reaches(d, 0.64), "{d} m out: {:?}", pick.chosen);
        assert!(d >= 0.3, "not folded onto it: {d}");
        assert!(pick.chosen.radius < plain.chosen.radius);
        // a short object at the same place: its middle's reach is the limit, as before
        let flat: Vec<Point3> = binder.iter().filter(|p| p.z < 0.8).copied().collect();
        let short = s
            .select(&SelectionInput {
                pick: true,
                ..from_the_west(&g, &flat)
            })
            .unwrap();
        assert_eq!(
            short.chosen.pose,
            s.select(&from_the_west(&g, &flat)).unwrap().chosen.pose
        );
    }

    #[test]
    fn a_tall_object_no_pose_reaches_over_falls_back_to_the_arms_reach() {
        // 0.4 m behind the desk's edge: the base cannot come near enough for the wrist
        // to reach over its top; a side grasp may still, so go_to goes where it did
        let s = PoseSelector::new(GoToConfig::default());
        let (g, binder) = binder_on_a_desk(0.4);
        let plain = s.select(&from_the_west(&g, &binder)).unwrap();
        let pick = s
            .select(&SelectionInput {
                pick: true,
                ..from_the_west(&g, &binder)
            })
            .unwrap();
        assert_eq!(pick.chosen, plain.chosen);
        assert!(
            pick.evaluated > plain.evaluated,
            "the reaching poses were looked for first"
        );
    }

    #[test]
    fn carrying_an_object_to_a_surface_stands_where_the_arm_reaches_down_onto_it() {
        let s = PoseSelector::new(GoToConfig::default());
        let mount = |p: &Pose2D| {
            let (sn, cs) = p.theta.sin_cos();
            [p.x + cs * 0.17, p.y + sn * 0.17]
        };
        let bottle = |height| Carried {
            height,
            radius: 0.035,
            around: &[],
        };
        // a desk 1 m deep: its centre is out of the arm's horizontal reach from every
        // side the base fits, its front is not
        let mut g = room();
        let desk = table(&mut g, 1.0, 0.75);
        assert!(matches!(
            s.select(&from_the_west(&g, &desk)),
            Err(SelectionError::NoValidPose { .. })
        ));
        let carrying = SelectionInput {
            carried: Some(bottle(0.22)),
            ..from_the_west(&g, &desk)
        };
        let put = s.select(&carrying).unwrap();
        let reach = CarryReach::new(&desk, &bottle(0.22), s.config()).unwrap();
        assert!(
            reach.reaches(mount(&put.chosen.pose), 0.64),
            "{:?}",
            put.chosen
        );
        // a taller load on a 0.6 m-deep desk: poses the arm reaches the centre from
        // horizontally are out of reach above the desk
        let mut g = room();
        let desk = table(&mut g, 0.6, 0.75);
        let plain = s.select(&from_the_west(&g, &desk)).unwrap();
        let tall = SelectionInput {
            carried: Some(bottle(0.25)),
            ..from_the_west(&g, &desk)
        };
        let put = s.select(&tall).unwrap();
        let reach = CarryReach::new(&desk, &bottle(0.25), s.config()).unwrap();
        assert!(
            reach.reaches(mount(&put.chosen.pose), 0.64),
            "{:?}",
            put.chosen
        );
        assert!(
            plain
                .candidates
                .iter()
                .zip(&put.candidates)
                .any(|(a, b)| a.valid() && b.rejection == Some(Rejection::OutOfReach)),
            "the carry check changed nothing"
        );
        // the desk's west half taken by other things: the free spots are in its east
        // half, out of reach from the west with the tall load; the base goes round
        let clutter: Vec<Point3> = desk
            .iter()
            .filter(|p| p.x < 3.05)
            .map(|p| Point3::new(p.x, p.y, p.z + 0.1))
            .collect();
        let cluttered = SelectionInput {
            carried: Some(Carried {
                around: &clutter,
                ..bottle(0.25)
            }),
            ..from_the_west(&g, &desk)
        };
        let reach = CarryReach::new(&desk, &cluttered.carried.unwrap(), s.config()).unwrap();
        assert!(!reach.reaches(mount(&put.chosen.pose), 0.64));
        if let Ok(sel) = s.select(&cluttered) {
            assert!(
                reach.reaches(mount(&sel.chosen.pose), 0.64),
                "{:?}",
                sel.chosen
            );
            assert!(
                sel.chosen.pose.x > 3.0,
                "not from the east: {:?}",
                sel.chosen
            );
        }
        // a shelf 1.3 m up is out of reach with anything held above it: no pose
        let mut g = room();
        let shelf = table(&mut g, 0.6, 1.3);
        let high = SelectionInput {
            carried: Some(bottle(0.22)),
            ..from_the_west(&g, &shelf)
        };
        match s.select(&high) {
            Err(SelectionError::NoValidPose { reach, .. }) => assert!(reach > 0),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn radii_relax_alternately_within_bounds() {
        let s = PoseSelector::new(GoToConfig::default());
        let r = s.radii();
        let want = [
            0.85, 0.75, 0.95, 0.65, 1.05, 0.55, 1.15, 0.45, 1.25, 1.35, 1.45,
        ];
        assert_eq!(r.len(), want.len(), "{r:?}");
        for (a, b) in r.iter().zip(want) {
            assert!((a - b).abs() < 1e-5, "{r:?}");
        }
    }

    #[test]
    fn the_affordance_side_wins_and_go_near_takes_the_nearest() {
        let g = room();
        let object = blob(Point3::new(3.0, 3.0, 0.5), 0.1);
        // a part on the object's east side
        let part = blob(Point3::new(3.12, 3.0, 0.5), 0.02);
        let robot = Pose2D::new(1.0, 3.0, 0.0);
        let input = SelectionInput {
            grid: &g,
            object: &object,
            affordance: Some(&part),
            robot,
            sweep: None,
            carried: None,
            pick: false,
        };
        let s = PoseSelector::new(cfg()).select(&input).unwrap();
        let n = s.affordance_direction.unwrap();
        assert!(n[0] > 0.99, "{n:?}");
        let p = s.chosen.pose;
        assert!(
            (p.x - 3.85).abs() < 1e-3 && (p.y - 3.0).abs() < 1e-3,
            "{p:?}"
        );
        // facing the object: heading west
        assert!((p.theta.abs() - std::f32::consts::PI).abs() < 1e-3, "{p:?}");
        // go near: the side nearest the robot (west)
        let near = PoseSelector::new(cfg())
            .with_lambda(0.0)
            .select(&input)
            .unwrap();
        assert!(
            (near.chosen.pose.x - 2.15).abs() < 1e-3,
            "{:?}",
            near.chosen.pose
        );
        // without an affordance, same as go near
        let none = PoseSelector::new(cfg())
            .select(&SelectionInput {
                affordance: None,
                ..input
            })
            .unwrap();
        assert_eq!(none.chosen.pose, near.chosen.pose);
        assert!(none.affordance_direction.is_none());
    }

    #[test]
    fn a_button_on_top_has_no_side_though_a_one_sided_view_puts_it_behind() {
        // a kettle (radius 6 cm, 16 cm tall at x = 3, y = 3) seen from the west: only
        // its west half is in the cloud, whose centroid lies ~2.5 cm west of its axis
        let mut kettle = Vec::new();
        for k in 0..=12 {
            let a = std::f32::consts::FRAC_PI_2 + std::f32::consts::PI * k as Real / 12.0;
            for h in 0..=8 {
                let z = 0.5 + 0.02 * h as Real;
                kettle.push(Point3::new(3.0 + 0.06 * a.cos(), 3.0 + 0.06 * a.sin(), z));
            }
        }
        // the power button on the lid, on the axis
        let button = blob(Point3::new(3.0, 3.0, 0.665), 0.01);
        let seen_from = [1.0, 3.0];
        assert_eq!(
            PoseSelector::affordance_direction(&kettle, &button, seen_from),
            None
        );
        // a handle sticking out east at mid-height is a side
        let handle = blob(Point3::new(3.08, 3.0, 0.58), 0.01);
        let n = PoseSelector::affordance_direction(&kettle, &handle, seen_from).unwrap();
        assert!(n.x > 0.99, "{n:?}");
    }

    #[test]
    fn the_base_outline_lets_its_front_come_nearer_a_table_than_its_circle() {
        // a table from x = 2.6 to 3.2 along the whole room, a cup on it at x = 2.9
        let mut g = room();
        for i in 52..64 {
            for j in 0..116 {
                g.set(i, j, OCCUPIED);
            }
        }
        let object = blob(Point3::new(2.9, 3.0, 0.8), 0.03);
        let input = from_the_west(&g, &object);
        // the arm works 0.5 m from its mount: the base's centre within 0.67 m of the cup
        let reach = GoToConfig {
            arm_reach: 0.5,
            ..GoToConfig::default()
        };
        // the 0.60 × 0.50 m outline (padded 3 cm) facing the table: its front stops
        // 0.33 m ahead of the centre, at x = 2.58
        let s = PoseSelector::new(reach.clone()).select(&input).unwrap();
        let p = s.chosen.pose;
        assert!(
            (p.x - 2.25).abs() < 1e-3 && (p.y - 3.0).abs() < 1e-3 && p.theta.abs() < 1e-3,
            "{p:?}"
        );
        // the 0.4 m circle around it would overlap the table wherever the arm reaches
        let circle = PoseSelector::new(GoToConfig {
            footprint: Vec::new(),
            ..reach
        })
        .select(&input);
        assert!(
            matches!(circle, Err(SelectionError::NoValidPose { .. })),
            "{circle:?}"
        );
    }

    #[test]
    fn without_an_affordance_the_side_the_robot_saw_beats_a_cheaper_cost_map_behind() {
        // the floor west of x = 3 (where the robot stands) costs 20 of 100, east of it 0
        let mut g = room();
        for i in 0..60 {
            for j in 0..116 {
                g.set(i, j, 20);
            }
        }
        let object = blob(Point3::new(3.0, 3.0, 0.5), 0.1);
        let input = from_the_west(&g, &object);
        let s = PoseSelector::new(cfg()).select(&input).unwrap();
        assert!(s.chosen.pose.x < 3.0, "{:?}", s.chosen.pose);
        assert!(s.affordance_direction.is_none());
        let p_aff = s.p_aff.unwrap();
        assert!((p_aff[0] - 2.15).abs() < 1e-3, "{p_aff:?}");
        // plain go near (λ_aff = 0) takes the cheapest footprint, behind the object
        let near = PoseSelector::new(cfg())
            .with_lambda(0.0)
            .select(&input)
            .unwrap();
        assert!(near.chosen.pose.x > 3.0, "{:?}", near.chosen.pose);
    }

    #[test]
    fn a_part_that_sticks_out_towards_the_robot_is_not_worked_at_from_too_near() {
        let g = room();
        // an open door's handle bar 0.55 m out from the cabinet's centre, towards -y
        let object = blob(Point3::new(3.0, 3.0, 0.5), 0.05);
        let bar: Vec<Point3> = (0..20)
            .map(|k| Point3::new(3.0, 2.45, 0.4 + k as Real * 0.01))
            .collect();
        let input = SelectionInput {
            grid: &g,
            object: &object,
            affordance: Some(&bar),
            robot: Pose2D::new(3.0, 1.0, 0.0),
            sweep: None,
            carried: None,
            pick: false,
        };
        let mount_to_bar = |p: &Pose2D| {
            let (s, c) = p.theta.sin_cos();
            (3.0 - (p.x + 0.17 * c)).hypot(2.45 - (p.y + 0.17 * s))
        };
        // without the check the pose at p_aff, 0.13 m from the bar, wins
        let folded = PoseSelector::new(GoToConfig {
            arm_min_reach: 0.0,
            ..cfg()
        })
        .select(&input)
        .unwrap();
        assert!(
            mount_to_bar(&folded.chosen.pose) < 0.3,
            "{:?}",
            folded.chosen
        );
        let s = PoseSelector::new(cfg()).select(&input).unwrap();
        assert!(mount_to_bar(&s.chosen.pose) >= 0.3, "{:?}", s.chosen);
        assert!(
            s.candidates
                .iter()
                .any(|c| c.rejection == Some(Rejection::TooNear))
        );
    }

    #[test]
    fn colliding_poses_are_discarded_and_the_radius_relaxes() {
        let mut g = room();
        // a ring of obstacles 0.6–1.0 m around the object
        let c = (3.0, 3.0);
        for i in 0..120 {
            for j in 0..116 {
                let (x, y) = g.cell_center(i, j);
                let d = (x - c.0).hypot(y - c.1);
                if (0.6..=1.0).contains(&d) {
                    g.set(i, j, OCCUPIED);
                }
            }
        }
        let object = blob(Point3::new(3.0, 3.0, 0.5), 0.05);
        let s = PoseSelector::new(cfg())
            .select(&SelectionInput {
                grid: &g,
                object: &object,
                affordance: None,
                robot: Pose2D::new(0.5, 0.5, 0.0),
                sweep: None,
                carried: None,
                pick: false,
            })
            .unwrap();
        // every radius up to 1.35 m puts the 0.4 m footprint on the ring; 1.45 m clears it
        assert!((s.chosen.radius - 1.45).abs() < 1e-5, "{:?}", s.radii);
        assert_eq!(s.radii.len(), 11);
        // every candidate of an invalid radius was rejected for collision
        let err = PoseSelector::new(GoToConfig {
            max_radius: 1.0,
            min_radius: 0.8,
            ..cfg()
        })
        .select(&SelectionInput {
            grid: &g,
            object: &object,
            affordance: None,
            robot: Pose2D::new(0.5, 0.5, 0.0),
            sweep: None,
            carried: None,
            pick: false,
        })
        .unwrap_err();
        match err {
            SelectionError::NoValidPose { collision, .. } => assert!(collision > 0),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn reach_and_unknown_cells_invalidate_poses() {
        let mut g = room();
        // unknown everywhere west of x = 3
        for i in 0..60 {
            for j in 0..116 {
                g.set(i, j, UNKNOWN);
            }
        }
        let object = blob(Point3::new(3.5, 3.0, 0.5), 0.05);
        let input = from_the_west(&g, &object);
        let s = PoseSelector::new(cfg()).select(&input).unwrap();
        // nearest to the robot, but not on unknown cells
        assert!(s.chosen.pose.x - 0.4 >= 3.0 - 1e-3, "{:?}", s.chosen.pose);
        // reach 0.6 from a mount 0.17 ahead: 0.85 is too far, 0.75 is the first radius
        let s = PoseSelector::new(GoToConfig {
            arm_reach: 0.6,
            ..cfg()
        })
        .select(&input)
        .unwrap();
        assert!((s.chosen.radius - 0.75).abs() < 1e-5, "{}", s.chosen.radius);
        assert_eq!(s.radii.len(), 2);
    }

    #[test]
    fn rod_and_upward_parts_use_their_side_of_the_object() {
        let object = blob(Point3::new(0.0, 0.0, 0.5), 0.1);
        // a vertical bar on the -x side
        let bar: Vec<Point3> = (0..20)
            .map(|k| Point3::new(-0.12, 0.0, 0.4 + k as Real * 0.01))
            .collect();
        let n = PoseSelector::affordance_direction(&object, &bar, [0.0, 0.0]).unwrap();
        assert!(n.x < -0.99, "{n:?}");
        // an upward-facing flat keypad on the +y half of the top: on top, no side (the
        // SPEC's projected normal is zero; its offset may be the view's bias, and the
        // reach check turns away poses that cannot reach it)
        let mut pad = Vec::new();
        for i in 0..6 {
            for j in 0..4 {
                pad.push(Point3::new(
                    -0.05 + 0.02 * i as Real,
                    0.02 + 0.02 * j as Real,
                    0.6,
                ));
            }
        }
        assert_eq!(
            PoseSelector::affordance_direction(&object, &pad, [0.0, 0.0]),
            None
        );
        // the same keypad on a ledge sticking out beyond the +y side, at mid-height
        let ledge: Vec<Point3> = pad
            .iter()
            .map(|p| Point3::new(p.x, p.y + 0.12, 0.5))
            .collect();
        let n = PoseSelector::affordance_direction(&object, &ledge, [0.0, 0.0]).unwrap();
        assert!(n.y > 0.99, "{n:?}");
        // a vertical flat panel facing +x, centred on the object: its normal, not the
        // (zero) offset
        let mut panel = Vec::new();
        for i in 0..6 {
            for j in 0..6 {
                panel.push(Point3::new(
                    0.1,
                    -0.05 + 0.02 * i as Real,
                    0.45 + 0.02 * j as Real,
                ));
            }
        }
        let n = PoseSelector::affordance_direction(&object, &panel, [0.0, 0.0]).unwrap();
        assert!(n.x > 0.99, "{n:?}");
        // two voxels of a part beside the object's centroid: no side
        let speck = [Point3::new(-0.02, 0.01, 0.5), Point3::new(-0.02, 0.02, 0.5)];
        assert_eq!(
            PoseSelector::affordance_direction(&object, &speck, [0.0, 0.0]),
            None
        );
        // a flat part that is all that was seen of its object (a thumbtack's head on a
        // board): its normal's sign says nothing, the side it was seen from does
        let head: Vec<Point3> = panel.iter().map(|p| Point3::new(2.0, p.y, p.z)).collect();
        for (seen_from, sign) in [([0.0, 0.0], -1.0), ([4.0, 0.0], 1.0)] {
            let n = PoseSelector::affordance_direction(&head, &head, seen_from).unwrap();
            assert!(n.x * sign > 0.99, "seen from {seen_from:?}: {n:?}");
        }
    }

    #[test]
    fn a_drawer_pulls_its_handle_towards_the_base_and_out_of_its_reach() {
        let joint = JointEstimate {
            kind: JointKind::Prismatic {
                axis: Vector3::x(),
                travel: 0.25,
            },
            front_normal: Vector3::x(),
            handle: Point3::new(1.0, 0.0, 0.6),
            reason: String::new(),
        };
        let sweep = PartSweep::opening(&joint, 1.2, 0.08);
        assert_eq!(sweep.path.len(), PartSweep::STEPS + 1);
        assert!((sweep.path.last().unwrap().x - 1.25).abs() < 1e-5);
        // a mount 0.5 m in front of the closed drawer: the pulled handle comes within
        // 0.3 m for the last part of the path
        let out = sweep.out_of_reach([1.5, 0.0], 0.3, 0.6);
        assert!(out > 0.1 && out < 0.5, "{out}");
        assert_eq!(sweep.out_of_reach([1.8, 0.0], 0.3, 0.9), 0.0);
        assert!(sweep.hits([1.5, 0.0], 0.4));
        assert!(!sweep.hits([2.0, 0.0], 0.4));
    }
}
