//! The motion planner: MoveIt 2's semantics for the simulator.
//!
//! - Free space (`MotionKind::FreeSpace`, RRT-Connect on the real robot): IK for the goal
//!   with a collision-checking validity filter, then a collision-checked straight
//!   joint-space interpolation; if that is blocked, a seeded RRT-Connect in joint space
//!   with shortcutting.
//! - Linear (`MotionKind::Linear`, Pilz `LIN`): the tool point follows a straight line
//!   (orientation slerped) in small steps, each step's IK seeded from the previous one,
//!   joint jumps and collisions checked.
//!
//! Failures carry MoveIt error codes: `INVALID_GOAL_CONSTRAINTS` (malformed request),
//! `FRAME_TRANSFORM_FAILURE`, `INVALID_ROBOT_STATE`/`START_STATE_INVALID`,
//! `START_STATE_IN_COLLISION`, `NO_IK_SOLUTION`, `GOAL_IN_COLLISION`, `PLANNING_FAILED`,
//! `INVALID_MOTION_PLAN` (a linear path that collides, as MoveIt's solution validation
//! reports it), `TIMED_OUT` and `PREEMPTED`.

mod rrt;
mod trajectory;

use std::time::Instant;

use asp_core::geometry::{FrameId, Isometry3};
use asp_core::robot::{CancellationToken, MotionKind, MotionOutcome, MoveItErrorCode, PoseGoal};
use parry3d::shape::SharedShape;
use serde::{Deserialize, Serialize};

use crate::collision::CollisionWorld;
use crate::error::IkError;
use crate::model::{IkOptions, LinkShape, RobotModel};
use crate::{Iso64, to_f32, to_f64};

pub use trajectory::{JointTrajectory, TrajectoryPoint};

/// Planner settings (the planning pipeline's parameters).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PlannerSettings {
    /// Largest joint change between two collision checks along a motion, radians.
    pub collision_resolution: f64,
    /// Largest joint-space step of one RRT-Connect extension, radians.
    pub rrt_range: f64,
    /// RRT-Connect iterations before `PLANNING_FAILED`.
    pub rrt_max_iterations: usize,
    /// Random shortcut attempts on a found path.
    pub shortcut_iterations: usize,
    /// Largest joint change between two points of the returned trajectory, radians.
    pub trajectory_resolution: f64,
    /// Step of the tool point along a linear motion, metres.
    pub linear_step: f64,
    /// Step of the tool rotation along a linear motion, radians.
    pub linear_angle_step: f64,
    /// Largest change of any joint between two steps of a linear motion, radians
    /// (MoveIt's jump threshold): more means the arm would flip through a singularity.
    pub linear_max_joint_jump: f64,
    /// Wall-clock budget of one request, seconds (`TIMED_OUT` beyond).
    pub max_planning_time_s: f64,
    /// Acceleration limit of joints whose description gives none, rad/s².
    pub default_max_acceleration: f64,
    /// Seed of every random choice (IK restarts, RRT samples, shortcuts).
    pub seed: u64,
    /// IK settings; a request's tolerances replace the two tolerances here for goals.
    pub ik: IkOptions,
}

impl Default for PlannerSettings {
    fn default() -> Self {
        Self {
            collision_resolution: 0.02,
            rrt_range: 0.5,
            rrt_max_iterations: 3000,
            shortcut_iterations: 80,
            trajectory_resolution: 0.05,
            linear_step: 0.005,
            linear_angle_step: 0.03,
            linear_max_joint_jump: 0.3,
            max_planning_time_s: 5.0,
            default_max_acceleration: 5.0,
            seed: 0,
            ik: IkOptions::default(),
        }
    }
}

/// An object held by the gripper: it moves with the tool and is checked for collisions
/// like a link (MoveIt's attached collision object).
#[derive(Debug, Clone)]
pub struct AttachedObject {
    /// The object's name in the scene: contacts between it and the robot, and the
    /// scene's own copy of it, are not collisions.
    pub name: String,
    pub shape: SharedShape,
    /// The object's pose in the tool frame.
    pub tool_from_object: Isometry3,
}

/// One motion request, with the goal already in the arm base frame.
#[derive(Debug, Clone)]
pub struct PlanRequest {
    pub kind: MotionKind,
    /// Metres.
    pub position_tolerance: f64,
    /// Radians.
    pub orientation_tolerance: f64,
    /// MoveIt's `max_velocity_scaling_factor`, in (0, 1].
    pub velocity_scaling: f64,
    /// MoveIt's `max_acceleration_scaling_factor`, in (0, 1].
    pub acceleration_scaling: f64,
    /// Scene objects the robot (and the held object) may touch on this motion.
    pub allowed_contacts: Vec<String>,
    pub attached: Option<AttachedObject>,
    /// Finger gap during the motion, metres; `None`: fully open.
    pub finger_gap: Option<f64>,
    /// Cancels planning (`PREEMPTED`).
    pub cancel: Option<CancellationToken>,
}

impl Default for PlanRequest {
    fn default() -> Self {
        Self {
            kind: MotionKind::FreeSpace,
            position_tolerance: 1e-3,
            orientation_tolerance: 1e-2,
            velocity_scaling: 1.0,
            acceleration_scaling: 1.0,
            allowed_contacts: Vec::new(),
            attached: None,
            finger_gap: None,
            cancel: None,
        }
    }
}

impl PlanRequest {
    /// The request part of a MoveGroup-style pose goal (its target and frame are
    /// resolved by [`MotionPlanner::plan_pose_goal`]).
    pub fn from_goal(goal: &PoseGoal) -> Self {
        Self {
            kind: goal.kind,
            position_tolerance: f64::from(goal.position_tolerance),
            orientation_tolerance: f64::from(goal.orientation_tolerance),
            velocity_scaling: f64::from(goal.velocity_scaling),
            acceleration_scaling: f64::from(goal.acceleration_scaling),
            allowed_contacts: goal.allowed_contacts.clone(),
            ..Self::default()
        }
    }
}

/// A failed request: MoveIt's code and a message naming what failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct PlanError {
    pub code: MoveItErrorCode,
    pub message: String,
}

impl PlanError {
    pub fn new(code: MoveItErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    /// The failure as the arm interface reports it.
    pub fn to_outcome(&self, planning_time_s: f64) -> MotionOutcome {
        MotionOutcome {
            code: self.code,
            message: self.message.clone(),
            planning_time_s,
        }
    }
}

/// Why a state is invalid.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Contact {
    World { link: String, object: String },
    SelfCollision(String, String),
}

impl std::fmt::Display for Contact {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Contact::World { link, object } => write!(f, "{link} touches {object:?}"),
            Contact::SelfCollision(a, b) => write!(f, "{a} touches {b} (self-collision)"),
        }
    }
}

/// State validity for one request: robot + held object against the scene and itself.
pub(crate) struct Checker<'a> {
    robot: &'a dyn RobotModel,
    world: &'a dyn CollisionWorld,
    allowed: Vec<String>,
    attached: Option<&'a AttachedObject>,
    touch_links: &'a [String],
    finger_gap: f64,
    pub(crate) checks: std::cell::Cell<usize>,
}

impl<'a> Checker<'a> {
    fn new(
        robot: &'a dyn RobotModel,
        world: &'a dyn CollisionWorld,
        request: &'a PlanRequest,
    ) -> Self {
        let mut allowed = request.allowed_contacts.clone();
        if let Some(a) = &request.attached {
            allowed.push(a.name.clone());
        }
        Self {
            robot,
            world,
            allowed,
            attached: request.attached.as_ref(),
            touch_links: &robot.gripper().touch_links,
            finger_gap: request.finger_gap.unwrap_or(robot.gripper().max_gap),
            checks: std::cell::Cell::new(0),
        }
    }

    /// The shapes checked at `q`: the links, then the held object.
    pub(crate) fn shapes(&self, q: &[f64]) -> Vec<LinkShape> {
        let mut shapes = self.robot.collision_shapes_with_gap(q, self.finger_gap);
        if let Some(a) = self.attached {
            shapes.push(LinkShape {
                link: a.name.clone(),
                pose: self.robot.tool_pose(q) * a.tool_from_object,
                shape: a.shape.clone(),
            });
        }
        shapes
    }

    pub(crate) fn check(&self, q: &[f64]) -> Result<(), Contact> {
        self.checks.set(self.checks.get() + 1);
        let shapes = self.shapes(q);
        if let Some(c) = self.world.first_collision(&shapes, &self.allowed) {
            return Err(Contact::World {
                link: c.link,
                object: c.object,
            });
        }
        let robot_shapes = if self.attached.is_some() {
            &shapes[..shapes.len() - 1]
        } else {
            &shapes[..]
        };
        if let Some((a, b)) = self.robot.self_collision(robot_shapes) {
            return Err(Contact::SelfCollision(a, b));
        }
        if let (Some(held), Some(obj)) = (self.attached, shapes.last()) {
            for s in robot_shapes {
                if self.touch_links.iter().any(|t| t == &s.link) {
                    continue;
                }
                let hit = parry3d::query::intersection_test(
                    &s.pose,
                    s.shape.as_ref(),
                    &obj.pose,
                    obj.shape.as_ref(),
                )
                .unwrap_or(true);
                if hit {
                    return Err(Contact::SelfCollision(s.link.clone(), held.name.clone()));
                }
            }
        }
        Ok(())
    }

    /// Checks the straight joint-space motion `a → b` (not `a` itself) at `resolution`;
    /// on a collision returns the fraction of the motion and the contact.
    pub(crate) fn check_motion(
        &self,
        a: &[f64],
        b: &[f64],
        resolution: f64,
    ) -> Result<(), (f64, Contact)> {
        let steps = motion_steps(a, b, resolution);
        let mut q = vec![0.0; a.len()];
        for k in 1..=steps {
            let f = k as f64 / steps as f64;
            for i in 0..a.len() {
                q[i] = a[i] + (b[i] - a[i]) * f;
            }
            self.check(&q).map_err(|c| (f, c))?;
        }
        Ok(())
    }
}

pub(crate) fn motion_steps(a: &[f64], b: &[f64], resolution: f64) -> usize {
    let d = a
        .iter()
        .zip(b)
        .map(|(x, y)| (y - x).abs())
        .fold(0.0, f64::max);
    ((d / resolution).ceil() as usize).max(1)
}

/// The planner; one instance serves any number of requests (it holds only settings).
#[derive(Debug, Clone, Default)]
pub struct MotionPlanner {
    pub settings: PlannerSettings,
}

/// Deadline and cancellation of one request.
pub(crate) struct Budget<'a> {
    started: Instant,
    limit_s: f64,
    cancel: Option<&'a CancellationToken>,
}

impl Budget<'_> {
    pub(crate) fn check(&self) -> Result<(), PlanError> {
        if self.cancel.is_some_and(|c| c.is_cancelled()) {
            return Err(PlanError::new(
                MoveItErrorCode::Preempted,
                "planning was cancelled",
            ));
        }
        let elapsed = self.started.elapsed().as_secs_f64();
        if elapsed > self.limit_s {
            return Err(PlanError::new(
                MoveItErrorCode::TimedOut,
                format!("no plan within the planning time of {} s", self.limit_s),
            ));
        }
        Ok(())
    }

    fn elapsed(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }
}

impl MotionPlanner {
    pub fn new(settings: PlannerSettings) -> Self {
        Self { settings }
    }

    /// Plans a motion of the tool to `goal_in_arm_base` from `start`.
    pub fn plan(
        &self,
        robot: &dyn RobotModel,
        world: &dyn CollisionWorld,
        start: &[f64],
        goal_in_arm_base: &Isometry3,
        request: &PlanRequest,
    ) -> Result<JointTrajectory, PlanError> {
        let budget = self.budget(request);
        validate_request(request)?;
        validate_pose(goal_in_arm_base)?;
        validate_start(robot, start)?;
        let checker = Checker::new(robot, world, request);
        check_start(&checker, start)?;
        budget.check()?;
        let path = match request.kind {
            MotionKind::FreeSpace => {
                self.free_space(robot, &checker, start, goal_in_arm_base, request, &budget)?
            }
            MotionKind::Linear => {
                self.linear(robot, &checker, start, goal_in_arm_base, request, &budget)?
            }
        };
        Ok(self.timed(robot, &path, request, budget.elapsed()))
    }

    /// Plans a free-space motion to a joint configuration (`move_to_named`).
    pub fn plan_to_configuration(
        &self,
        robot: &dyn RobotModel,
        world: &dyn CollisionWorld,
        start: &[f64],
        goal: &[f64],
        request: &PlanRequest,
    ) -> Result<JointTrajectory, PlanError> {
        let budget = self.budget(request);
        validate_request(request)?;
        validate_start(robot, start)?;
        if goal.len() != robot.dof() {
            return Err(PlanError::new(
                MoveItErrorCode::InvalidGoalConstraints,
                format!(
                    "the goal has {} joint values, the arm has {} joints",
                    goal.len(),
                    robot.dof()
                ),
            ));
        }
        for (j, &v) in robot.joints().iter().zip(goal) {
            if !j.contains(v, 1e-9) {
                return Err(PlanError::new(
                    MoveItErrorCode::InvalidGoalConstraints,
                    format!(
                        "goal {} = {v} is outside [{}, {}]",
                        j.name, j.lower, j.upper
                    ),
                ));
            }
        }
        let checker = Checker::new(robot, world, request);
        check_start(&checker, start)?;
        if let Err(c) = checker.check(goal) {
            return Err(PlanError::new(
                MoveItErrorCode::GoalInCollision,
                format!("the goal configuration collides: {c}"),
            ));
        }
        budget.check()?;
        let path = self.connect(&checker, start, goal, &budget)?;
        Ok(self.timed(robot, &path, request, budget.elapsed()))
    }

    /// Plans to a named configuration of the robot description (`home`, `stow`, `look`).
    pub fn plan_to_named(
        &self,
        robot: &dyn RobotModel,
        world: &dyn CollisionWorld,
        start: &[f64],
        name: &str,
        request: &PlanRequest,
    ) -> Result<JointTrajectory, PlanError> {
        let goal = robot.named_configuration(name).ok_or_else(|| {
            PlanError::new(
                MoveItErrorCode::InvalidGoalConstraints,
                format!(
                    "no named configuration {name:?} (known: {})",
                    robot.named_configurations().join(", ")
                ),
            )
        })?;
        self.plan_to_configuration(robot, world, start, &goal, request)
    }

    /// Plans a MoveGroup-style pose goal: `arm_base_from_frame` gives the pose of a
    /// frame in the arm base frame (`None`: unknown frame → `FRAME_TRANSFORM_FAILURE`).
    pub fn plan_pose_goal(
        &self,
        robot: &dyn RobotModel,
        world: &dyn CollisionWorld,
        start: &[f64],
        goal: &PoseGoal,
        arm_base_from_frame: &dyn Fn(&FrameId) -> Option<Isometry3>,
    ) -> Result<JointTrajectory, PlanError> {
        let frame = arm_base_from_frame(&goal.frame).ok_or_else(|| {
            PlanError::new(
                MoveItErrorCode::FrameTransformFailure,
                format!(
                    "cannot transform the goal from frame {:?} to {:?}",
                    goal.frame.as_str(),
                    robot.arm_base_frame()
                ),
            )
        })?;
        validate_pose(&goal.target)?;
        let target = frame * goal.target;
        self.plan(robot, world, start, &target, &PlanRequest::from_goal(goal))
    }

    fn budget<'a>(&self, request: &'a PlanRequest) -> Budget<'a> {
        Budget {
            started: Instant::now(),
            limit_s: self.settings.max_planning_time_s,
            cancel: request.cancel.as_ref(),
        }
    }

    fn timed(
        &self,
        robot: &dyn RobotModel,
        path: &[Vec<f64>],
        request: &PlanRequest,
        elapsed: f64,
    ) -> JointTrajectory {
        let dense = densify(path, self.settings.trajectory_resolution);
        JointTrajectory::from_path(
            robot.joints(),
            &dense,
            request.velocity_scaling,
            request.acceleration_scaling,
            self.settings.default_max_acceleration,
            elapsed,
        )
    }

    fn goal_ik_options(&self, request: &PlanRequest) -> IkOptions {
        IkOptions {
            position_tolerance: request.position_tolerance,
            orientation_tolerance: request.orientation_tolerance,
            seed: self.settings.seed,
            ..self.settings.ik.clone()
        }
    }

    fn free_space(
        &self,
        robot: &dyn RobotModel,
        checker: &Checker<'_>,
        start: &[f64],
        goal: &Isometry3,
        request: &PlanRequest,
        budget: &Budget<'_>,
    ) -> Result<Vec<Vec<f64>>, PlanError> {
        let opts = self.goal_ik_options(request);
        let accept = |q: &[f64]| checker.check(q).map_err(|c| c.to_string());
        let goal_q = robot
            .inverse_filtered(goal, start, &opts, &accept)
            .map_err(|e| ik_failure(e, goal))?;
        budget.check()?;
        self.connect(checker, start, &goal_q, budget)
    }

    /// A collision-free joint path `start → goal`: straight if possible, else
    /// RRT-Connect and shortcutting.
    fn connect(
        &self,
        checker: &Checker<'_>,
        start: &[f64],
        goal: &[f64],
        budget: &Budget<'_>,
    ) -> Result<Vec<Vec<f64>>, PlanError> {
        if checker
            .check_motion(start, goal, self.settings.collision_resolution)
            .is_ok()
        {
            return Ok(vec![start.to_vec(), goal.to_vec()]);
        }
        let limits: Vec<(f64, f64)> = checker
            .robot
            .joints()
            .iter()
            .map(|j| {
                (
                    j.lower.max(-std::f64::consts::PI * 2.0),
                    j.upper.min(std::f64::consts::PI * 2.0),
                )
            })
            .collect();
        rrt::rrt_connect(checker, &limits, start, goal, &self.settings, budget)
    }

    fn linear(
        &self,
        robot: &dyn RobotModel,
        checker: &Checker<'_>,
        start: &[f64],
        goal: &Isometry3,
        request: &PlanRequest,
        budget: &Budget<'_>,
    ) -> Result<Vec<Vec<f64>>, PlanError> {
        let s = &self.settings;
        let from = to_f64(&robot.tool_pose(start));
        let to = to_f64(goal);
        let distance = (to.translation.vector - from.translation.vector).norm();
        let angle = from.rotation.angle_to(&to.rotation);
        let steps = ((distance / s.linear_step)
            .ceil()
            .max((angle / s.linear_angle_step).ceil()) as usize)
            .max(1);
        // Each step: IK from the previous configuration only (no restarts, which could
        // switch branch), tight tolerances so that the tool stays on the line; the goal
        // tolerance of the request applies to the last step.
        let step_opts = IkOptions {
            max_attempts: 1,
            max_iterations: s.ik.max_iterations.max(50),
            position_tolerance: s.ik.position_tolerance.min(request.position_tolerance),
            orientation_tolerance: s
                .ik
                .orientation_tolerance
                .min(request.orientation_tolerance),
            seed: s.seed,
        };
        let mut path = vec![start.to_vec()];
        for k in 1..=steps {
            if k % 16 == 0 {
                budget.check()?;
            }
            let f = k as f64 / steps as f64;
            let pose = interpolate(&from, &to, f);
            let prev = &path[path.len() - 1];
            let q = robot
                .inverse(&to_f32(&pose), prev, &step_opts)
                .map_err(|e| {
                    let p = pose.translation.vector;
                    PlanError::new(
                        MoveItErrorCode::NoIkSolution,
                        format!(
                            "the straight line leaves the arm's reach at {:.0}% of the way, at ({:.3}, {:.3}, {:.3}) in {}: {e}",
                            f * 100.0,
                            p.x,
                            p.y,
                            p.z,
                            robot.arm_base_frame()
                        ),
                    )
                })?;
            let (joint, jump) = q
                .iter()
                .zip(prev)
                .map(|(a, b)| (a - b).abs())
                .enumerate()
                .fold((0, 0.0), |m, (i, d)| if d > m.1 { (i, d) } else { m });
            if jump > s.linear_max_joint_jump {
                return Err(PlanError::new(
                    MoveItErrorCode::PlanningFailed,
                    format!(
                        "{} would jump {jump:.3} rad at {:.0}% of the straight line (limit {} rad): the line passes a singularity",
                        robot.joints()[joint].name,
                        f * 100.0,
                        s.linear_max_joint_jump
                    ),
                ));
            }
            path.push(q);
        }
        let last = &path[path.len() - 1];
        if let Err(c) = checker.check(last) {
            return Err(PlanError::new(
                MoveItErrorCode::GoalInCollision,
                format!("the goal pose collides: {c}"),
            ));
        }
        for k in 1..path.len() {
            if let Err((f, c)) =
                checker.check_motion(&path[k - 1], &path[k], s.collision_resolution)
            {
                let done = ((k - 1) as f64 + f) / (path.len() - 1) as f64;
                return Err(PlanError::new(
                    MoveItErrorCode::InvalidMotionPlan,
                    format!(
                        "the straight line collides at {:.0}% of the way: {c}",
                        done * 100.0
                    ),
                ));
            }
        }
        Ok(path)
    }
}

fn interpolate(a: &Iso64, b: &Iso64, f: f64) -> Iso64 {
    let t = a.translation.vector.lerp(&b.translation.vector, f);
    let r = a
        .rotation
        .try_slerp(&b.rotation, f, 1e-9)
        .unwrap_or(b.rotation);
    Iso64::from_parts(t.into(), r)
}

/// Inserts points so that no joint changes more than `resolution` between two, and
/// drops repeated ones (a motion to where the arm already is has a single point).
fn densify(path: &[Vec<f64>], resolution: f64) -> Vec<Vec<f64>> {
    let mut out = Vec::new();
    for (i, q) in path.iter().enumerate() {
        if i == 0 {
            out.push(q.clone());
            continue;
        }
        let a = &path[i - 1];
        if a == q {
            continue;
        }
        let n = motion_steps(a, q, resolution);
        for k in 1..=n {
            let f = k as f64 / n as f64;
            out.push(a.iter().zip(q).map(|(x, y)| x + (y - x) * f).collect());
        }
    }
    out
}

fn ik_failure(e: IkError, goal: &Isometry3) -> PlanError {
    let p = goal.translation.vector;
    match e {
        IkError::AllRejected { solutions, reason } => PlanError::new(
            MoveItErrorCode::GoalInCollision,
            format!("every IK solution for the goal collides ({solutions} found; first: {reason})"),
        ),
        IkError::NoSolution { .. } => PlanError::new(
            MoveItErrorCode::NoIkSolution,
            format!(
                "the goal at ({:.3}, {:.3}, {:.3}) is out of reach: {e}",
                p.x, p.y, p.z
            ),
        ),
        IkError::InvalidTarget(m) => PlanError::new(MoveItErrorCode::InvalidGoalConstraints, m),
        IkError::InvalidSeed(m) => PlanError::new(MoveItErrorCode::InvalidRobotState, m),
    }
}

fn validate_request(r: &PlanRequest) -> Result<(), PlanError> {
    let invalid = |m: String| Err(PlanError::new(MoveItErrorCode::InvalidGoalConstraints, m));
    if !(r.velocity_scaling > 0.0 && r.velocity_scaling <= 1.0) {
        return invalid(format!(
            "velocity_scaling must be in (0, 1], got {}",
            r.velocity_scaling
        ));
    }
    if !(r.acceleration_scaling > 0.0 && r.acceleration_scaling <= 1.0) {
        return invalid(format!(
            "acceleration_scaling must be in (0, 1], got {}",
            r.acceleration_scaling
        ));
    }
    if !(r.position_tolerance > 0.0 && r.position_tolerance.is_finite()) {
        return invalid(format!(
            "position_tolerance must be positive, got {}",
            r.position_tolerance
        ));
    }
    if !(r.orientation_tolerance > 0.0 && r.orientation_tolerance.is_finite()) {
        return invalid(format!(
            "orientation_tolerance must be positive, got {}",
            r.orientation_tolerance
        ));
    }
    if let Some(g) = r.finger_gap
        && !(g >= 0.0 && g.is_finite())
    {
        return invalid(format!(
            "finger_gap must be a non-negative distance, got {g}"
        ));
    }
    Ok(())
}

fn validate_pose(p: &Isometry3) -> Result<(), PlanError> {
    let t = p.translation.vector;
    let q = p.rotation.coords;
    let finite = t.iter().chain(q.iter()).all(|v| v.is_finite());
    if !finite || (q.norm() - 1.0).abs() > 1e-3 {
        return Err(PlanError::new(
            MoveItErrorCode::InvalidGoalConstraints,
            format!(
                "the goal pose is not a valid pose: position ({}, {}, {}), orientation ({}, {}, {}, {})",
                t.x, t.y, t.z, q.x, q.y, q.z, q.w
            ),
        ));
    }
    Ok(())
}

fn validate_start(robot: &dyn RobotModel, start: &[f64]) -> Result<(), PlanError> {
    if start.len() != robot.dof() {
        return Err(PlanError::new(
            MoveItErrorCode::InvalidRobotState,
            format!(
                "the start state has {} joint values, the arm has {} joints",
                start.len(),
                robot.dof()
            ),
        ));
    }
    for (j, &v) in robot.joints().iter().zip(start) {
        if !v.is_finite() {
            return Err(PlanError::new(
                MoveItErrorCode::InvalidRobotState,
                format!("start {} is {v}", j.name),
            ));
        }
        // A little slack: controllers overshoot limits by tiny amounts.
        if !j.contains(v, 1e-3) {
            return Err(PlanError::new(
                MoveItErrorCode::StartStateInvalid,
                format!(
                    "start {} = {v} is outside [{}, {}]",
                    j.name, j.lower, j.upper
                ),
            ));
        }
    }
    Ok(())
}

fn check_start(checker: &Checker<'_>, start: &[f64]) -> Result<(), PlanError> {
    checker.check(start).map_err(|c| {
        PlanError::new(
            MoveItErrorCode::StartStateInCollision,
            format!("the start state collides: {c}"),
        )
    })
}
