//! Skills as sequences of pose goals and gripper commands (pure geometry, no I/O).
//!
//! A [`SkillPlan`] is a ranked list of [`Attempt`]s (grasp candidates, place positions,
//! push orientations). The executor tries them in order: a step whose goal the planner
//! refuses before anything irreversible happened moves on to the next attempt.

use asp_config::sections::skills::SkillExecutorConfig;
use asp_core::robot::MotionKind;
use asp_core::{Isometry3, Point3, PointCloud, Real, Skill, Vector3};
use nalgebra::{Unit, UnitQuaternion};

use crate::articulation::{JointEstimate, JointKind, estimate_joint};
use crate::geometry::{
    Principal, extent_along, horizontal, part_surface, position, shifted, tool_axes, tool_pose,
    top_down, without_part,
};
use crate::grasp::{GraspCandidate, GraspParams, GraspScene, grasp_candidates};
use crate::placement::{
    UNKNOWN_HELD_RADIUS, footprint_radius, place_spots, point_bits, top_height,
};
use crate::request::SkillRequest;

/// Which planning-scene objects a motion may touch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Contacts {
    None,
    /// The target object.
    Target,
    /// The target and the held object.
    TargetAndHeld,
}

/// What to do when a motion step fails to plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OnFail {
    /// Try the next attempt (only while nothing irreversible happened).
    NextAttempt,
    /// The skill fails.
    Abort,
    /// Skip the rest of this step's group (a pull that stops where the arm can reach).
    EndGroup,
    /// Carry on (a retreat that is nice to have).
    Ignore,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Step {
    Move {
        label: String,
        target: Isometry3,
        kind: MotionKind,
        contacts: Contacts,
        on_fail: OnFail,
        group: u8,
    },
    Grip {
        label: &'static str,
        /// Finger gap goal, metres.
        position: Real,
        /// The fingers must end on something (grasp-type skills).
        check_hold: bool,
    },
    /// Back away `distance` metres along the tool's approach axis from wherever the arm
    /// is when the step runs (a pull or an arc may have stopped short of its plan),
    /// contact with the target allowed; a retreat that cannot plan is skipped.
    Retreat { label: &'static str, distance: Real },
}

impl Step {
    pub(crate) fn label(&self) -> &str {
        match self {
            Step::Move { label, .. } => label,
            Step::Grip { label, .. } | Step::Retreat { label, .. } => label,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Attempt {
    pub label: String,
    pub steps: Vec<Step>,
}

impl Attempt {
    /// Every pose goal's position, with its label.
    pub(crate) fn targets(&self) -> impl Iterator<Item = (&str, Point3)> {
        self.steps.iter().filter_map(|s| match s {
            Step::Move { label, target, .. } => Some((label.as_str(), position(target))),
            Step::Grip { .. } | Step::Retreat { .. } => None,
        })
    }
}

/// The label of a tip push's pressing motion (the executor reports contact when it ran).
pub(crate) const PRESS_STEP: &str = "push";

/// The plan of one skill.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SkillPlan {
    pub attempts: Vec<Attempt>,
    /// The point the skill acts on (object or part centroid).
    pub focus: Point3,
    /// How many candidates geometry produced before truncation to `grasp.candidates`.
    pub candidates_generated: usize,
    pub joint: Option<JointEstimate>,
    /// How the part is meant to move (open/close, hook pulls), for the observer's
    /// measurement of how far it did.
    pub part_motion: Option<crate::observe::PartMotion>,
    /// Lines for the report ("drawer: horizontal handle bar").
    pub notes: Vec<String>,
}

/// Why no plan could be made.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum PlanError {
    /// The request lacks what the skill needs.
    Invalid(String),
    /// Geometry found no usable pose.
    NoCandidate(String),
}

/// What planning needs besides the request.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PlanContext<'a> {
    pub cfg: &'a SkillExecutorConfig,
    pub grasp: GraspParams,
    /// The arm base in the map.
    pub arm_base: Point3,
    /// The tool pose now (map).
    pub tool: Isometry3,
    /// Held object: how far its bottom hangs below the tool point, metres.
    pub held_bottom_below_tool: Option<Real>,
}

fn mv(
    label: impl Into<String>,
    target: Isometry3,
    kind: MotionKind,
    contacts: Contacts,
    on_fail: OnFail,
) -> Step {
    Step::Move {
        label: label.into(),
        target,
        kind,
        contacts,
        on_fail,
        group: 0,
    }
}

fn grouped(mut s: Step, g: u8) -> Step {
    if let Step::Move { group, .. } = &mut s {
        *group = g;
    }
    s
}

fn grip(label: &'static str, position: Real, check_hold: bool) -> Step {
    Step::Grip {
        label,
        position,
        check_hold,
    }
}

/// Plans `req`.
pub(crate) fn plan(req: &SkillRequest, ctx: &PlanContext<'_>) -> Result<SkillPlan, PlanError> {
    if req.object_cloud.is_empty() {
        return Err(PlanError::Invalid(format!(
            "the point cloud of {} is empty",
            req.object
        )));
    }
    match req.skill {
        Skill::Grasp => grasp_plan(req, ctx, req.object_cloud.points(), &[], false),
        Skill::GraspPart => {
            let part = part_points(req)?;
            let rest = without_part(req.object_cloud.points(), part, 0.004);
            grasp_plan(req, ctx, part, &rest, true)
        }
        Skill::Place | Skill::Drop => place_plan(req, ctx),
        Skill::TipPush => tip_push_plan(req, ctx),
        Skill::PinchPull => pinch_pull_plan(req, ctx),
        Skill::HookPull => hook_pull_plan(req, ctx),
        Skill::Open | Skill::Close => articulation_plan(req, ctx),
    }
}

fn part_points(req: &SkillRequest) -> Result<&[Point3], PlanError> {
    match &req.affordance {
        Some(a) if !a.point_cloud.is_empty() => Ok(a.point_cloud.points()),
        Some(a) => Err(PlanError::Invalid(format!(
            "the affordance {:?} of {} has no points",
            a.part, req.object
        ))),
        None => Err(PlanError::Invalid(format!(
            "{} needs an affordance (part) of {}; run affordance detection (interact) first",
            req.skill, req.object
        ))),
    }
}

fn obstacle_points(req: &SkillRequest) -> Vec<Point3> {
    req.obstacles
        .as_ref()
        .map(|c| c.points().to_vec())
        .unwrap_or_default()
}

fn min_z(points: &[Point3]) -> Real {
    points.iter().map(|p| p.z).fold(Real::MAX, Real::min)
}

/// Obstacle points under the object's footprint (grown by this) count as its support.
const SUPPORT_FOOTPRINT_MARGIN: Real = 0.03;
/// Fewer support points than this are not a surface.
const MIN_SUPPORT_POINTS: usize = 5;

/// The height of the surface the object rests on, from the obstacle points (the scene
/// around it) under its footprint: a camera above sees an object's top, not its bottom,
/// so its lowest visible point is not where it stands. The object rests there only if
/// the hidden gap below what is seen is at most 1.5 times what is seen plus 1 cm (a ball
/// seen from above shows a bit less than its upper half): a plug in a wall socket high
/// above the table does not rest on the table. `None` without such a surface.
pub(crate) fn resting_support(req: &SkillRequest) -> Option<Real> {
    resting_surface(&req.object_cloud, req.obstacles.as_ref()?)
}

/// [`resting_support`] of a cloud among `obstacles` (the scene around it): the height
/// of the surface it stands on, if it stands on one.
pub fn resting_surface(object: &PointCloud, obstacles: &PointCloud) -> Option<Real> {
    let (lo, hi) = object.aabb()?;
    let m = SUPPORT_FOOTPRINT_MARGIN;
    let below: Vec<Real> = obstacles
        .points()
        .iter()
        .filter(|q| {
            q.x >= lo.x - m && q.x <= hi.x + m && q.y >= lo.y - m && q.y <= hi.y + m && q.z <= lo.z
        })
        .map(|q| q.z)
        .collect();
    if below.len() < MIN_SUPPORT_POINTS {
        return None;
    }
    let top = below.iter().copied().fold(Real::MIN, Real::max);
    let seen_height = hi.z - lo.z;
    (lo.z - top <= 1.5 * seen_height + 0.01).then_some(top)
}

/// Grasp candidates as attempts: pre-grasp, open, approach, close, (lift); the
/// candidates at the configured stand-off first, then, where `min_approach_distance` is
/// shorter, the same candidates at that one (a pre-grasp a few centimetres nearer the
/// object is what brings one at the edge of the arm's reach within it).
fn candidate_attempts(
    ctx: &PlanContext<'_>,
    candidates: &[GraspCandidate],
    lift: bool,
) -> Vec<Attempt> {
    let g = &ctx.cfg.grasp;
    let mut stand_offs = vec![g.approach_distance as Real];
    if g.min_approach_distance < g.approach_distance {
        stand_offs.push(g.min_approach_distance as Real);
    }
    let round = candidates.iter().take(g.candidates).enumerate();
    stand_offs
        .into_iter()
        .flat_map(|d| round.clone().map(move |(i, c)| (d, i, c)))
        .map(|(stand_off, i, c)| {
            let a = c.approach();
            let pre = shifted(&c.pose, -a * stand_off);
            let mut steps = vec![
                mv(
                    "pre-grasp",
                    pre,
                    MotionKind::FreeSpace,
                    Contacts::None,
                    OnFail::NextAttempt,
                ),
                grip("open", g.open_width as Real, false),
                mv(
                    "approach",
                    c.pose,
                    MotionKind::Linear,
                    Contacts::Target,
                    OnFail::NextAttempt,
                ),
                grip("close", 0.0, true),
            ];
            if lift {
                steps.push(mv(
                    "lift",
                    shifted(&c.pose, Vector3::z() * g.lift_height as Real),
                    MotionKind::Linear,
                    Contacts::Target,
                    OnFail::Abort,
                ));
            }
            Attempt {
                label: format!(
                    "grasp candidate {} ({:?}, width {:.3} m, {} contacts, score {:.2}, stand-off {:.2} m)",
                    i + 1,
                    c.kind,
                    c.width,
                    c.contacts,
                    c.score,
                    stand_off
                ),
                steps,
            }
        })
        .collect()
}

fn grasp_plan(
    req: &SkillRequest,
    ctx: &PlanContext<'_>,
    target: &[Point3],
    rest: &[Point3],
    part: bool,
) -> Result<SkillPlan, PlanError> {
    let avoid = obstacle_points(req);
    // a whole object rests on the surface found under it; a part (a handle) does not
    let support = resting_support(req);
    let scene = GraspScene {
        target,
        avoid: &avoid,
        attached: rest,
        support_z: support.unwrap_or_else(|| min_z(req.object_cloud.points())),
        rests_on_support: support.is_some() && !part,
        arm_base: ctx.arm_base,
    };
    let candidates = grasp_candidates(&scene, &ctx.grasp);
    let focus = Principal::of(target).map_or(Point3::origin(), |p| p.centroid);
    if candidates.is_empty() {
        return Err(PlanError::NoCandidate(format!(
            "no grasp fits {}{}: wider than the gripper's {:.3} m stroke, or no pose keeps the fingers clear of the rest of the scene",
            if part { "the part of " } else { "" },
            req.object,
            ctx.grasp.open_width
        )));
    }
    Ok(SkillPlan {
        attempts: candidate_attempts(ctx, &candidates, true),
        focus,
        candidates_generated: candidates.len(),
        joint: None,
        part_motion: None,
        notes: vec![format!("{} grasp candidates", candidates.len())],
    })
}

fn place_plan(req: &SkillRequest, ctx: &PlanContext<'_>) -> Result<SkillPlan, PlanError> {
    let g = &ctx.cfg.grasp;
    if req.held.is_none() {
        return Err(PlanError::Invalid(format!(
            "{} needs the held object; the gripper holds nothing the executor knows of",
            req.skill
        )));
    }
    let bottom = ctx.held_bottom_below_tool.ok_or_else(|| {
        PlanError::Invalid(format!(
            "{} needs the held object's geometry; it was not grasped by this executor",
            req.skill
        ))
    })?;
    let pts = req.object_cloud.points();
    let (lo, hi) = pts.iter().fold(
        (
            Point3::new(Real::MAX, Real::MAX, Real::MAX),
            Point3::new(Real::MIN, Real::MIN, Real::MIN),
        ),
        |(a, b), p| (a.inf(p), b.sup(p)),
    );
    // the top surface: a high percentile of the heights (robust to stray points)
    let top = top_height(pts).unwrap_or(hi.z);
    let cx = (lo.x + hi.x) / 2.0;
    let cy = (lo.y + hi.y) / 2.0;
    let reach = 0.25 * ((hi.x - lo.x).min(hi.y - lo.y)) / 2.0;
    let (_, y_now, z_now) = tool_axes(&ctx.tool);
    let yaw_now = if z_now.z < -0.7 {
        y_now.y.atan2(y_now.x)
    } else {
        0.0
    };
    let drop = req.skill == Skill::Drop;
    let release_z = top
        + bottom
        + if drop {
            g.drop_height as Real
        } else {
            g.place_clearance as Real
        };
    // on a wide surface, its free spots nearest the arm first (a desk's centre lies
    // 0.35 m past its front edge: out of reach with a bottle held above it); without a
    // free spot, the centre and around it, as into a bowl or a box, whose rim has none
    let spots = if drop {
        Vec::new()
    } else {
        let held = req.held.as_ref().and_then(|h| h.cloud.as_ref());
        let held_radius = held
            .and_then(|c| footprint_radius(c.points()))
            .unwrap_or(UNKNOWN_HELD_RADIUS);
        // the held object is no obstacle to where it goes, wherever the map has it
        let held_points: std::collections::HashSet<[u32; 3]> = held
            .map(|c| c.points().iter().map(point_bits).collect())
            .unwrap_or_default();
        let mut obstacles = obstacle_points(req);
        obstacles.retain(|p| !held_points.contains(&point_bits(p)));
        place_spots(pts, top, held_radius, &obstacles, ctx.arm_base)
    };
    // the object goes to a spot (the commit gate judges each, and the centre may be out
    // of the workspace from where a wide surface's front is in reach), or else about the
    // centre
    let on_spot = !spots.is_empty();
    let mut places: Vec<(Real, Real)> = spots;
    if !on_spot {
        places.push((cx, cy));
    }
    if !on_spot && reach > 0.01 {
        for k in 0..4 {
            let a = std::f32::consts::FRAC_PI_2 * k as Real;
            places.push((cx + reach * a.cos(), cy + reach * a.sin()));
        }
    }
    let first = places[0];
    let n_places = places.len();
    let mut attempts = Vec::new();
    for (x, y) in places {
        for dyaw in [0.0, std::f32::consts::FRAC_PI_2] {
            let p = Point3::new(x, y, release_z);
            let at = top_down(p, yaw_now + dyaw);
            let above = shifted(&at, Vector3::z() * g.approach_distance as Real);
            let steps = if drop {
                vec![
                    mv(
                        "above target",
                        at,
                        MotionKind::FreeSpace,
                        Contacts::None,
                        OnFail::NextAttempt,
                    ),
                    grip("release", g.open_width as Real, false),
                    mv(
                        "retreat",
                        above,
                        MotionKind::Linear,
                        Contacts::TargetAndHeld,
                        OnFail::Ignore,
                    ),
                ]
            } else {
                vec![
                    mv(
                        "above target",
                        above,
                        MotionKind::FreeSpace,
                        Contacts::None,
                        OnFail::NextAttempt,
                    ),
                    mv(
                        "lower",
                        at,
                        MotionKind::Linear,
                        Contacts::TargetAndHeld,
                        OnFail::NextAttempt,
                    ),
                    grip("release", g.open_width as Real, false),
                    mv(
                        "retreat",
                        above,
                        MotionKind::Linear,
                        Contacts::TargetAndHeld,
                        OnFail::Ignore,
                    ),
                ]
            };
            attempts.push(Attempt {
                label: format!(
                    "{} at ({:.3}, {:.3}), release at z {:.3}, yaw {:.0}°",
                    req.skill,
                    p.x,
                    p.y,
                    release_z,
                    (yaw_now + dyaw).to_degrees()
                ),
                steps,
            });
        }
    }
    Ok(SkillPlan {
        candidates_generated: attempts.len(),
        attempts,
        focus: Point3::new(first.0, first.1, top),
        joint: None,
        part_motion: None,
        notes: vec![format!(
            "target top at z {top:.3}; held object's bottom {bottom:.3} m below the tool; {}",
            if on_spot {
                format!("{} free spot(s) on it, the nearest first", n_places)
            } else {
                "about its centre".to_owned()
            }
        )],
    })
}

/// Yaw angles for pushes and pinches about their axis.
const PUSH_YAWS: [Real; 4] = [0.0, 0.785, 1.571, 2.356];

/// A push normal within 40° of vertical is taken as vertical (cos 40°).
const PRESS_VERTICAL_COS: Real = 0.766;

fn tip_push_plan(req: &SkillRequest, ctx: &PlanContext<'_>) -> Result<SkillPlan, PlanError> {
    let part = part_points(req)?;
    let a = &ctx.cfg.articulation;
    let g = &ctx.cfg.grasp;
    let s = part_surface(part, req.object_cloud.points(), a.surface_radius as Real)
        .ok_or_else(|| PlanError::Invalid("the part has no points".into()))?;
    // buttons and keys on a horizontal surface are pressed straight down: a normal
    // estimated from the few points a camera sees of a small part leans towards it, and
    // one pointing down is a top surface whose fit was tipped over by what rises beside
    // the part (a handset behind a keypad's top row): a camera above sees tops, and an
    // arm does not press a key from below
    let n = if s.normal.z.abs() > PRESS_VERTICAL_COS {
        Vector3::z()
    } else {
        s.normal
    };
    let (_, hi) = extent_along(part, &n).unwrap_or((0.0, 0.0));
    let c = s.part_centroid;
    let contact = c + n * (hi - c.coords.dot(&n));
    let tip = ctx.grasp.tip;
    let push = contact - n * a.push_depth as Real + n * tip;
    let pre = contact + n * (g.approach_distance as Real + tip);
    // a perpendicular to turn the fingers about the push axis
    let base = if n.x.abs() < 0.9 {
        Vector3::x()
    } else {
        Vector3::y()
    };
    let u = (base - n * n.dot(&base)).normalize();
    let w = n.cross(&u);
    let attempts = PUSH_YAWS
        .iter()
        .map(|&yaw| {
            let hint = u * yaw.cos() + w * yaw.sin();
            let at = tool_pose(push, -n, hint);
            let from = tool_pose(pre, -n, hint);
            Attempt {
                label: format!(
                    "push along {:.2?} with fingers at {:.0}°",
                    -n,
                    yaw.to_degrees()
                ),
                steps: vec![
                    mv(
                        "pre-push",
                        from,
                        MotionKind::FreeSpace,
                        Contacts::None,
                        OnFail::NextAttempt,
                    ),
                    grip("close fingers", 0.0, false),
                    mv(
                        PRESS_STEP,
                        at,
                        MotionKind::Linear,
                        Contacts::Target,
                        OnFail::NextAttempt,
                    ),
                    mv(
                        "retract",
                        from,
                        MotionKind::Linear,
                        Contacts::Target,
                        OnFail::Abort,
                    ),
                ],
            }
        })
        .collect();
    Ok(SkillPlan {
        attempts,
        focus: contact,
        candidates_generated: PUSH_YAWS.len(),
        joint: None,
        part_motion: None,
        notes: vec![format!(
            "push normal {:.2?} ({:?}), contact {:.3?}",
            n, s.source, contact
        )],
    })
}

/// The horizontal outward direction of a part, or the direction towards the arm.
fn pull_direction(
    req: &SkillRequest,
    ctx: &PlanContext<'_>,
    part: &[Point3],
) -> (Vector3, Point3, String) {
    let a = &ctx.cfg.articulation;
    let s = part_surface(part, req.object_cloud.points(), a.surface_radius as Real);
    let centroid = Principal::of(part).map_or(Point3::origin(), |p| p.centroid);
    match s.and_then(|s| horizontal(&s.normal).map(|h| (h, s))) {
        Some((h, s)) => (
            h,
            s.part_centroid,
            format!("pull axis {:.2?} from the part normal ({:?})", h, s.source),
        ),
        None => {
            let h = horizontal(&(ctx.arm_base - centroid)).unwrap_or_else(|| -Vector3::x());
            (
                h,
                centroid,
                format!("part normal is vertical; pulling towards the arm along {h:.2?}"),
            )
        }
    }
}

fn pinch_pull_plan(req: &SkillRequest, ctx: &PlanContext<'_>) -> Result<SkillPlan, PlanError> {
    let part = part_points(req)?;
    let cfg = ctx.cfg;
    let (n, c, note) = pull_direction(req, ctx, part);
    let (_, front) = extent_along(part, &n).unwrap_or((0.0, 0.0));
    let tip = ctx.grasp.tip;
    let at_tip = c + n * (front - c.coords.dot(&n) - cfg.articulation.pinch_depth as Real);
    let tcp = at_tip + n * tip;
    let approach = cfg.grasp.approach_distance as Real;
    let pull = cfg.articulation.pull_distance as Real;
    let lift = cfg.grasp.lift_height as Real;
    let mut attempts = Vec::new();
    for (name, hint) in [
        ("fingers closing sideways", Vector3::z().cross(&n)),
        ("fingers closing vertically", Vector3::z()),
    ] {
        let at = tool_pose(tcp, -n, hint);
        let (_, y, _) = tool_axes(&at);
        let (lo, hi) = extent_along(part, &y).unwrap_or((0.0, 0.0));
        if hi - lo > ctx.grasp.open_width - 2.0 * ctx.grasp.clearance {
            continue;
        }
        let mut steps = vec![
            mv(
                "pre-pinch",
                shifted(&at, n * approach),
                MotionKind::FreeSpace,
                Contacts::None,
                OnFail::NextAttempt,
            ),
            grip("open", cfg.grasp.open_width as Real, false),
            mv(
                "reach",
                at,
                MotionKind::Linear,
                Contacts::Target,
                OnFail::NextAttempt,
            ),
            grip("pinch", 0.0, true),
        ];
        // the pull in steps, ending at the last one the planner accepts: a plug comes
        // free within a few centimetres, and the full pull's end pose may fold the arm
        // into itself; a refused first step moved nothing and ends the skill
        let mut pull_motion = pull_steps(&at, n, pull, cfg.articulation.pull_step as Real, "pull");
        if let Some(Step::Move { on_fail, .. }) = pull_motion.first_mut() {
            *on_fail = OnFail::Abort;
        }
        steps.extend(pull_motion);
        // the pull already drew the part clear of its holder: the lift is a free-space
        // motion (with the part attached), since a straight line from a pinch at a wall
        // can cross a wrist singularity; where it cannot be planned the part stays where
        // the pull left it, still removed
        steps.push(mv(
            "lift",
            shifted(&at, n * pull + Vector3::z() * lift),
            MotionKind::FreeSpace,
            Contacts::Target,
            OnFail::Ignore,
        ));
        attempts.push(Attempt {
            label: format!("pinch with {name}"),
            steps,
        });
    }
    if attempts.is_empty() {
        return Err(PlanError::NoCandidate(format!(
            "the part of {} is wider than the gripper's stroke in both finger orientations",
            req.object
        )));
    }
    Ok(SkillPlan {
        candidates_generated: attempts.len(),
        attempts,
        focus: c,
        joint: None,
        part_motion: None,
        notes: vec![note],
    })
}

fn hook_pull_plan(req: &SkillRequest, ctx: &PlanContext<'_>) -> Result<SkillPlan, PlanError> {
    let part = part_points(req)?;
    let cfg = ctx.cfg;
    let a = &cfg.articulation;
    let surface = part_surface(part, req.object_cloud.points(), a.surface_radius as Real);
    let (n, c, note) = pull_direction(req, ctx, part);
    let (lo, hi) = extent_along(part, &n).unwrap_or((0.0, 0.0));
    // hook between the surface behind the handle and the handle's outer face
    let panel = surface
        .and_then(|s| s.surface_point)
        .map_or(lo, |p| p.coords.dot(&n));
    let hook_n = (panel.max(lo - 0.05) + hi) / 2.0;
    let tip_point = c + n * (hook_n - c.coords.dot(&n));
    let tip = ctx.grasp.tip;
    let tcp = tip_point + Vector3::z() * tip;
    let travel = match joint_for(req, ctx, part) {
        Some(JointEstimate {
            kind: JointKind::Prismatic { travel, .. },
            ..
        }) => travel,
        _ => a.pull_distance as Real,
    };
    let approach = cfg.grasp.approach_distance as Real;
    let lateral = Vector3::z().cross(&n);
    let mut attempts = Vec::new();
    for (name, hint) in [
        ("fingers across the pull", lateral),
        ("fingers along the pull", n),
    ] {
        let at = tool_pose(tcp, -Vector3::z(), hint);
        let mut steps = vec![
            mv(
                "above handle",
                shifted(&at, Vector3::z() * approach),
                MotionKind::FreeSpace,
                Contacts::None,
                OnFail::NextAttempt,
            ),
            grip("close fingers", 0.0, false),
            mv(
                "hook",
                at,
                MotionKind::Linear,
                Contacts::Target,
                OnFail::NextAttempt,
            ),
        ];
        steps.extend(pull_steps(&at, n, travel, a.pull_step as Real, "pull"));
        let end = shifted(&at, n * travel);
        steps.push(mv(
            "unhook",
            shifted(&end, Vector3::z() * approach),
            MotionKind::Linear,
            Contacts::Target,
            OnFail::Ignore,
        ));
        attempts.push(Attempt {
            label: format!("hook from above with {name}, pull {travel:.3} m"),
            steps,
        });
    }
    Ok(SkillPlan {
        candidates_generated: attempts.len(),
        attempts,
        focus: c,
        joint: None,
        part_motion: Some(crate::observe::PartMotion {
            joint: JointKind::Prismatic { axis: n, travel },
            commanded: travel,
        }),
        notes: vec![
            note,
            format!("hook {:.3} m out from the panel", hook_n - panel),
        ],
    })
}

/// A straight pull of `travel` along `dir` from `from`, in steps of at most `step`; each
/// step ends the group when it cannot be planned (the pull stops where it got to).
fn pull_steps(from: &Isometry3, dir: Vector3, travel: Real, step: Real, label: &str) -> Vec<Step> {
    let k = (travel / step.max(1e-3)).ceil().max(1.0) as usize;
    (1..=k)
        .map(|i| {
            grouped(
                mv(
                    format!("{label} {i}/{k}"),
                    shifted(from, dir * (travel * i as Real / k as Real)),
                    MotionKind::Linear,
                    Contacts::Target,
                    OnFail::EndGroup,
                ),
                1,
            )
        })
        .collect()
}

/// The joint of `part`. A prismatic joint whose depth the view does not show (a drawer
/// seen from the front) gets `max_open_travel`: "open" means fully open (the verifier
/// asks exactly that), and the pull runs in `pull_step` steps that end at the last one
/// the planner accepts, so the unknown end stop costs at most one step of overshoot.
fn joint_for(req: &SkillRequest, ctx: &PlanContext<'_>, part: &[Point3]) -> Option<JointEstimate> {
    let a = &ctx.cfg.articulation;
    estimate_joint(
        part,
        req.object_cloud.points(),
        a.surface_radius as Real,
        (
            a.open_travel_fraction as Real,
            a.max_open_travel as Real,
            a.max_open_travel as Real,
        ),
    )
}

fn articulation_plan(req: &SkillRequest, ctx: &PlanContext<'_>) -> Result<SkillPlan, PlanError> {
    let part = part_points(req)?;
    let cfg = ctx.cfg;
    let a = &cfg.articulation;
    let joint = joint_for(req, ctx, part).ok_or_else(|| {
        PlanError::NoCandidate(format!(
            "cannot estimate the joint of {}: its front is not a vertical surface",
            req.object
        ))
    })?;
    let rest = without_part(req.object_cloud.points(), part, 0.004);
    let avoid = obstacle_points(req);
    let scene = GraspScene {
        target: part,
        avoid: &avoid,
        attached: &rest,
        support_z: min_z(req.object_cloud.points()),
        rests_on_support: false,
        arm_base: ctx.arm_base,
    };
    let candidates = grasp_candidates(&scene, &ctx.grasp);
    if candidates.is_empty() {
        return Err(PlanError::NoCandidate(format!(
            "no grasp fits the handle of {}",
            req.object
        )));
    }
    let open = req.skill == Skill::Open;
    let mut attempts = candidate_attempts(ctx, &candidates, false);
    let approach = cfg.grasp.approach_distance as Real;
    for (att, cand) in attempts.iter_mut().zip(&candidates) {
        let motion: Vec<Step> = match joint.kind {
            JointKind::Prismatic { axis, travel } => {
                // how far an open drawer is out is not seen (its sides look like depth):
                // closing pushes up to `max_open_travel`; on a robot the end stop ends
                // the steps (the controller stalls), as the planner's refusal does
                let (dir, dist) = if open {
                    (axis, travel)
                } else {
                    (-axis, a.max_open_travel as Real)
                };
                pull_steps(
                    &cand.pose,
                    dir,
                    dist,
                    a.pull_step as Real,
                    if open { "pull" } else { "push" },
                )
            }
            JointKind::Revolute { origin, axis, .. } => {
                let sign = if open { 1.0 } else { -1.0 };
                let n = a.arc_waypoints;
                let total = a.door_angle as Real * sign;
                let unit = Unit::new_normalize(axis);
                (1..=n)
                    .map(|k| {
                        let th = total * k as Real / n as Real;
                        let rot = UnitQuaternion::from_axis_angle(&unit, th);
                        let p = origin + rot * (position(&cand.pose) - origin);
                        let pose = Isometry3::from_parts(
                            nalgebra::Translation3::from(p.coords),
                            rot * cand.pose.rotation,
                        );
                        grouped(
                            mv(
                                format!("arc {k}/{n} ({:.0}°)", th.to_degrees()),
                                pose,
                                MotionKind::Linear,
                                Contacts::Target,
                                OnFail::EndGroup,
                            ),
                            1,
                        )
                    })
                    .collect()
            }
        };
        att.steps.extend(motion);
        att.steps
            .push(grip("release", cfg.grasp.open_width as Real, false));
        // from where the motion ended, which is not its last waypoint when the arm's
        // reach ended the pull or the arc early
        att.steps.push(Step::Retreat {
            label: "back off",
            distance: approach,
        });
        att.label = format!("{} then {}", att.label, if open { "open" } else { "close" });
    }
    let focus = Principal::of(part).map_or(Point3::origin(), |p| p.centroid);
    Ok(SkillPlan {
        candidates_generated: candidates.len(),
        attempts,
        focus,
        notes: vec![format!("joint: {:?} ({})", joint.kind, joint.reason)],
        part_motion: Some(crate::observe::PartMotion {
            joint: joint.kind,
            commanded: match joint.kind {
                JointKind::Prismatic { travel, .. } if open => travel,
                JointKind::Prismatic { .. } => -(a.max_open_travel as Real),
                JointKind::Revolute { .. } => a.door_angle as Real * if open { 1.0 } else { -1.0 },
            },
        }),
        joint: Some(joint),
    })
}

/// The lowest point of a cloud (for the held object's bottom).
pub(crate) fn cloud_bottom(c: &PointCloud) -> Option<Real> {
    c.aabb().map(|(lo, _)| lo.z)
}

#[cfg(test)]
mod tests {
    use super::*;
    use asp_core::ObjectKey;

    /// The top cap of a ball of radius `r` centred at `c`, as a camera above sees it.
    fn cap(c: Point3, r: Real) -> Vec<Point3> {
        let mut out = Vec::new();
        for i in 0..12 {
            for j in 0..4 {
                let az = std::f32::consts::TAU * i as Real / 12.0;
                let el = 0.2 + 1.2 * j as Real / 3.0;
                out.push(Point3::new(
                    c.x + r * el.cos() * az.cos(),
                    c.y + r * el.cos() * az.sin(),
                    c.z + r * el.sin(),
                ));
            }
        }
        out
    }

    /// A table top at `z` around (x, y), 1 cm apart.
    fn table(x: Real, y: Real, z: Real) -> PointCloud {
        let mut pts = Vec::new();
        for i in -10..=10 {
            for j in -10..=10 {
                pts.push(Point3::new(x + 0.01 * i as Real, y + 0.01 * j as Real, z));
            }
        }
        PointCloud::new("map", pts)
    }

    fn request(object: Vec<Point3>, obstacles: Option<PointCloud>) -> SkillRequest {
        let mut r = SkillRequest::new(
            Skill::Grasp,
            ObjectKey::new("orange_0").unwrap(),
            "the orange",
            PointCloud::new("map", object),
        );
        r.obstacles = obstacles;
        r
    }

    /// A key whose fitted surface puts it on the underside (here: recessed 4 mm into a
    /// panel, so it "stands out" downwards) is still pressed from above.
    #[test]
    fn a_key_is_never_pressed_from_below() {
        use asp_core::{Affordance, AffordanceProvenance};
        let cfg = SkillExecutorConfig::default();
        let ctx = PlanContext {
            cfg: &cfg,
            grasp: GraspParams::new(&cfg.grasp, &cfg.gripper),
            arm_base: Point3::new(0.0, 0.0, 0.55),
            tool: Isometry3::identity(),
            held_bottom_below_tool: None,
        };
        let key: Vec<Point3> = (0..16)
            .map(|i| {
                Point3::new(
                    0.4 + 0.003 * (i % 4) as Real,
                    0.003 * (i / 4) as Real,
                    0.536,
                )
            })
            .collect();
        let panel = table(0.4, 0.0, 0.54);
        let mut object = panel.points().to_vec();
        object.extend(key.iter().copied());
        let mut req = request(object, None).with_affordance(Affordance {
            point_cloud: PointCloud::new("map", key),
            part: "key".into(),
            skill: Skill::TipPush,
            provenance: AffordanceProvenance {
                producers: Vec::new(),
                keyframes: Vec::new(),
                confidence: 1.0,
                verifier_score: None,
            },
        });
        req.skill = Skill::TipPush;
        let plan = plan(&req, &ctx).unwrap();
        for attempt in &plan.attempts {
            let targets: Vec<(&str, Point3)> = attempt.targets().collect();
            let pre = targets.iter().find(|(l, _)| *l == "pre-push").unwrap().1;
            let push = targets.iter().find(|(l, _)| *l == "push").unwrap().1;
            assert!(
                pre.z > push.z + 0.05,
                "{}: {pre:?} → {push:?}",
                attempt.label
            );
            assert!((pre.x - push.x).abs() < 1e-4 && (pre.y - push.y).abs() < 1e-4);
        }
    }

    /// Every grasp candidate at the configured stand-off, then each again at
    /// `min_approach_distance`: the second round's pre-grasps lie that much nearer the
    /// same grasps.
    #[test]
    fn grasps_are_tried_again_at_the_shorter_stand_off() {
        let ball = request(
            cap(Point3::new(0.4, 0.0, 0.537), 0.037),
            Some(table(0.4, 0.0, 0.5)),
        );
        let stand_offs = |cfg: &SkillExecutorConfig| -> Vec<(String, Point3, Real)> {
            let ctx = PlanContext {
                cfg,
                grasp: GraspParams::new(&cfg.grasp, &cfg.gripper),
                arm_base: Point3::new(0.0, 0.0, 0.55),
                tool: Isometry3::identity(),
                held_bottom_below_tool: None,
            };
            plan(&ball, &ctx)
                .unwrap()
                .attempts
                .iter()
                .map(|a| {
                    let t: Vec<(&str, Point3)> = a.targets().collect();
                    let pre = t.iter().find(|(l, _)| *l == "pre-grasp").unwrap().1;
                    let grasp = t.iter().find(|(l, _)| *l == "approach").unwrap().1;
                    (a.label.clone(), grasp, (pre - grasp).norm())
                })
                .collect()
        };
        let cfg = SkillExecutorConfig::default();
        assert!(cfg.grasp.min_approach_distance < cfg.grasp.approach_distance);
        let both = stand_offs(&cfg);
        let n = both.len() / 2;
        assert!(n >= 2 && both.len() == 2 * n, "{} attempts", both.len());
        for (first, second) in both[..n].iter().zip(&both[n..]) {
            assert!((first.2 - cfg.grasp.approach_distance as Real).abs() < 1e-4);
            assert!((second.2 - cfg.grasp.min_approach_distance as Real).abs() < 1e-4);
            assert!((first.1 - second.1).norm() < 1e-6, "the same grasp");
            assert!(second.0.contains("stand-off 0.04 m"), "{}", second.0);
        }
        // equal distances: one round
        let mut one = SkillExecutorConfig::default();
        one.grasp.min_approach_distance = one.grasp.approach_distance;
        assert_eq!(stand_offs(&one).len(), n);
    }

    #[test]
    fn a_ball_seen_from_above_rests_on_the_table_under_it() {
        let req = request(
            cap(Point3::new(0.4, 0.0, 0.537), 0.037),
            Some(table(0.4, 0.0, 0.5)),
        );
        let s = resting_support(&req).unwrap();
        assert!((s - 0.5).abs() < 1e-4, "{s}");
    }

    #[test]
    fn no_obstacles_or_a_far_surface_is_no_support() {
        let plug = cap(Point3::new(0.7, 1.9, 0.62), 0.012);
        assert_eq!(resting_support(&request(plug.clone(), None)), None);
        // a plug in a wall socket, 10 cm above the table: it does not rest on it
        assert_eq!(
            resting_support(&request(plug, Some(table(0.7, 1.9, 0.5)))),
            None
        );
        // a table beside the object, not under it, is no support either
        assert_eq!(
            resting_support(&request(
                cap(Point3::new(0.4, 0.0, 0.537), 0.037),
                Some(table(0.4, 0.5, 0.5))
            )),
            None
        );
    }
}
