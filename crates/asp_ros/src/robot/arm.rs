//! [`ArmMotion`] over MoveIt 2's MoveGroup action, and MoveGroup served from any
//! [`ArmMotion`].
//!
//! A pose goal becomes one `Constraints` on the end-effector link: a position
//! constraint whose region is a sphere of radius `position_tolerance` around the
//! target, and an orientation constraint with `orientation_tolerance` on every axis.
//! Free-space motions ask the configured pipeline and planner (OMPL, RRTConnect);
//! `MotionKind::Linear` asks Pilz `LIN`. Objects the gripper may touch are allowed
//! against the configured touch links in the planning-scene diff's allowed collision
//! matrix, which is read from move_group first and extended (MoveIt replaces the whole
//! matrix with the one in a diff, so sending a partial one would drop the robot's own
//! disabled pairs). Named targets become joint constraints with the target's name.

use std::sync::Arc;
use std::time::Duration;

use asp_config::sections::common::SafetyConfig;
use asp_config::sections::skills::MotionInterfaces;
use asp_core::robot::{
    ArmMotion, CancellationToken, MotionKind, MotionOutcome, MoveItErrorCode, PoseGoal, RobotError,
};
use asp_core::{FrameId, Isometry3, Real};
use async_trait::async_trait;
use tracing::{debug, info, warn};

use super::ros_to_robot_error;
use super::tf::TfBuffer;
use crate::RosError;
use crate::action::{ActionClient, GoalContext, GoalHandler, GoalOutcome, GoalResult};
use crate::convert::geometry::{isometry, pose, unit_quaternion};
use crate::msg::TerminalState;
use crate::msg::builtin_interfaces::Time;
use crate::msg::geometry_msgs::{Pose, Quaternion, Vector3};
use crate::msg::moveit_msgs::{
    AllowedCollisionEntry, AllowedCollisionMatrix, BoundingVolume, Constraints, GetPlanningScene,
    GetPlanningSceneRequest, GetPlanningSceneResponse, JointConstraint, MotionPlanRequest,
    MoveGroup, MoveGroupFeedback, MoveGroupGoal, MoveGroupResult, MoveItErrorCodes,
    OrientationConstraint, PlanningOptions, PlanningScene, PlanningSceneComponents,
    PositionConstraint, RobotState, WorkspaceParameters,
};
use crate::msg::shape_msgs::SolidPrimitive;
use crate::msg::std_msgs::Header;
use crate::transport::{Client, Node, RosClock, wait_until};

/// Tolerance of named-target joint constraints, radians.
pub const JOINT_TOLERANCE: f64 = 0.01;
/// Half side of the planning workspace box around the goal frame's origin, metres.
pub const WORKSPACE_HALF_SIDE: f64 = 3.0;

/// Sets `allowed` for every pair (touch link, object) in a collision matrix, adding
/// missing names. A malformed matrix (rows and names of different lengths) is an error.
pub fn allow_contacts(
    acm: &mut AllowedCollisionMatrix,
    touch_links: &[String],
    objects: &[String],
) -> Result<(), RosError> {
    let n = acm.entry_names.len();
    if acm.entry_values.len() != n || acm.entry_values.iter().any(|r| r.enabled.len() != n) {
        return Err(RosError::Conversion(format!(
            "the planning scene's allowed collision matrix is malformed: {n} names, rows of lengths {:?}",
            acm.entry_values
                .iter()
                .map(|r| r.enabled.len())
                .collect::<Vec<_>>()
        )));
    }
    let mut index = |name: &String| -> usize {
        if let Some(i) = acm.entry_names.iter().position(|e| e == name) {
            return i;
        }
        acm.entry_names.push(name.clone());
        for row in &mut acm.entry_values {
            row.enabled.push(false);
        }
        let len = acm.entry_names.len();
        acm.entry_values.push(AllowedCollisionEntry {
            enabled: vec![false; len],
        });
        len - 1
    };
    let pairs: Vec<(usize, usize)> = touch_links
        .iter()
        .flat_map(|t| objects.iter().map(move |o| (t, o)))
        .map(|(t, o)| (index(t), index(o)))
        .collect();
    for (i, j) in pairs {
        acm.entry_values[i].enabled[j] = true;
        acm.entry_values[j].enabled[i] = true;
    }
    Ok(())
}

/// The objects a collision matrix allows to touch any of `touch_links` (the inverse
/// of [`allow_contacts`]), in matrix order. Names in `robot_entries` (the robot's own
/// links, which its matrix lets touch the gripper) are not objects.
pub fn allowed_contacts(
    acm: &AllowedCollisionMatrix,
    touch_links: &[String],
    robot_entries: &[String],
) -> Vec<String> {
    let touch: Vec<usize> = acm
        .entry_names
        .iter()
        .enumerate()
        .filter(|(_, n)| touch_links.contains(n))
        .map(|(i, _)| i)
        .collect();
    acm.entry_names
        .iter()
        .enumerate()
        .filter(|(j, name)| {
            !touch_links.contains(name)
                && !robot_entries.contains(name)
                && touch.iter().any(|&i| {
                    acm.entry_values
                        .get(i)
                        .and_then(|r| r.enabled.get(*j))
                        .copied()
                        .unwrap_or(false)
                })
        })
        .map(|(_, n)| n.clone())
        .collect()
}

/// Checks a pose goal against the typed limits before anything is sent.
pub fn check_pose_goal(goal: &PoseGoal, safety: &SafetyConfig) -> Result<(), String> {
    let t = goal.target.translation.vector;
    if !(t.iter().all(|v| v.is_finite())
        && goal.target.rotation.coords.iter().all(|v| v.is_finite()))
    {
        return Err(format!("target pose {:?} is not finite", goal.target));
    }
    if goal.frame.as_str().is_empty() {
        return Err("the goal has no frame".into());
    }
    let positive = |v: Real| v.is_finite() && v > 0.0;
    if !positive(goal.position_tolerance) {
        return Err(format!(
            "position_tolerance {} must be a positive number of metres",
            goal.position_tolerance
        ));
    }
    if !positive(goal.orientation_tolerance) {
        return Err(format!(
            "orientation_tolerance {} must be a positive number of radians",
            goal.orientation_tolerance
        ));
    }
    let scaling = |what: &str, v: Real, max: f64| {
        if !(v.is_finite() && v > 0.0 && v <= 1.0) {
            return Err(format!("{what} {v} must lie in (0, 1]"));
        }
        if f64::from(v) > max + 1e-9 {
            return Err(format!("{what} {v} exceeds the safety limit {max}"));
        }
        Ok(())
    };
    scaling(
        "velocity_scaling",
        goal.velocity_scaling,
        safety.max_velocity_scaling,
    )?;
    scaling(
        "acceleration_scaling",
        goal.acceleration_scaling,
        safety.max_acceleration_scaling,
    )?;
    Ok(())
}

fn base_request(interfaces: &MotionInterfaces, frame: &str, stamp: Time) -> MotionPlanRequest {
    let s = WORKSPACE_HALF_SIDE;
    MotionPlanRequest {
        workspace_parameters: WorkspaceParameters {
            header: Header::new(stamp, frame),
            min_corner: Vector3 {
                x: -s,
                y: -s,
                z: -s,
            },
            max_corner: Vector3 { x: s, y: s, z: s },
        },
        start_state: RobotState {
            is_diff: true,
            ..RobotState::default()
        },
        group_name: interfaces.planning_group.clone(),
        num_planning_attempts: 1,
        allowed_planning_time: interfaces.planning_time_s,
        ..MotionPlanRequest::default()
    }
}

fn options(scene: PlanningScene) -> PlanningOptions {
    PlanningOptions {
        planning_scene_diff: scene,
        plan_only: false,
        ..PlanningOptions::default()
    }
}

fn empty_diff() -> PlanningScene {
    PlanningScene {
        is_diff: true,
        robot_state: RobotState {
            is_diff: true,
            ..RobotState::default()
        },
        ..PlanningScene::default()
    }
}

/// The MoveGroup goal for a pose goal, stamped `stamp` (the node's time); `acm` is the
/// full matrix to send when the motion allows contacts.
pub fn pose_goal(
    goal: &PoseGoal,
    interfaces: &MotionInterfaces,
    acm: Option<AllowedCollisionMatrix>,
    stamp: Time,
) -> MoveGroupGoal {
    let frame = goal.frame.as_str();
    let target = pose(&goal.target);
    let position = PositionConstraint {
        header: Header::new(stamp, frame),
        link_name: interfaces.end_effector_link.clone(),
        target_point_offset: Vector3::default(),
        constraint_region: BoundingVolume {
            primitives: vec![SolidPrimitive::sphere(f64::from(goal.position_tolerance))],
            primitive_poses: vec![Pose {
                position: target.position.clone(),
                orientation: Quaternion::default(),
            }],
            ..BoundingVolume::default()
        },
        weight: 1.0,
    };
    let tol = f64::from(goal.orientation_tolerance);
    let orientation = OrientationConstraint {
        header: Header::new(stamp, frame),
        orientation: target.orientation.clone(),
        link_name: interfaces.end_effector_link.clone(),
        absolute_x_axis_tolerance: tol,
        absolute_y_axis_tolerance: tol,
        absolute_z_axis_tolerance: tol,
        parameterization: OrientationConstraint::XYZ_EULER_ANGLES,
        weight: 1.0,
    };
    let (pipeline, planner) = match goal.kind {
        MotionKind::FreeSpace => (
            &interfaces.free_space_pipeline,
            &interfaces.free_space_planner,
        ),
        MotionKind::Linear => (&interfaces.linear_pipeline, &interfaces.linear_planner),
    };
    let mut scene = empty_diff();
    if let Some(acm) = acm {
        scene.allowed_collision_matrix = acm;
    }
    MoveGroupGoal {
        request: MotionPlanRequest {
            goal_constraints: vec![Constraints {
                position_constraints: vec![position],
                orientation_constraints: vec![orientation],
                ..Constraints::default()
            }],
            pipeline_id: pipeline.clone(),
            planner_id: planner.clone(),
            max_velocity_scaling_factor: f64::from(goal.velocity_scaling),
            max_acceleration_scaling_factor: f64::from(goal.acceleration_scaling),
            ..base_request(interfaces, frame, stamp)
        },
        planning_options: options(scene),
    }
}

/// The MoveGroup goal for a named joint configuration, stamped `stamp`.
pub fn named_goal(
    name: &str,
    interfaces: &MotionInterfaces,
    velocity_scaling: f64,
    acceleration_scaling: f64,
    stamp: Time,
) -> Result<MoveGroupGoal, String> {
    let values = interfaces.named_targets.get(name).ok_or_else(|| {
        format!(
            "no named target {name:?}; configured: {:?}",
            interfaces.named_targets.keys().collect::<Vec<_>>()
        )
    })?;
    if values.len() != interfaces.joint_names.len() {
        return Err(format!(
            "named target {name:?} has {} values for {} joints",
            values.len(),
            interfaces.joint_names.len()
        ));
    }
    let joint_constraints = interfaces
        .joint_names
        .iter()
        .zip(values)
        .map(|(joint, &position)| JointConstraint {
            joint_name: joint.clone(),
            position,
            tolerance_above: JOINT_TOLERANCE,
            tolerance_below: JOINT_TOLERANCE,
            weight: 1.0,
        })
        .collect();
    Ok(MoveGroupGoal {
        request: MotionPlanRequest {
            goal_constraints: vec![Constraints {
                name: name.to_string(),
                joint_constraints,
                ..Constraints::default()
            }],
            pipeline_id: interfaces.free_space_pipeline.clone(),
            planner_id: interfaces.free_space_planner.clone(),
            max_velocity_scaling_factor: velocity_scaling,
            max_acceleration_scaling_factor: acceleration_scaling,
            ..base_request(interfaces, "", stamp)
        },
        planning_options: options(empty_diff()),
    })
}

/// What a MoveGroup goal asks for, as [`ArmMotion`] understands it.
#[derive(Debug, Clone, PartialEq)]
pub enum ArmTarget {
    Pose(PoseGoal),
    Named(String),
}

/// The inverse of [`pose_goal`] and [`named_goal`]: what an [`ArmMotion`] behind a
/// MoveGroup server must do. `robot_acm` is the matrix the server's planning scene
/// reports (its entries are robot links, not objects). Goals it cannot express are an
/// error with the MoveIt code to report.
pub fn decode_goal(
    goal: &MoveGroupGoal,
    interfaces: &MotionInterfaces,
    robot_acm: &AllowedCollisionMatrix,
) -> Result<ArmTarget, (MoveItErrorCode, String)> {
    let req = &goal.request;
    let invalid = |msg: String| (MoveItErrorCode::InvalidGoalConstraints, msg);
    if !req.group_name.is_empty() && req.group_name != interfaces.planning_group {
        return Err((
            MoveItErrorCode::InvalidGroupName,
            format!(
                "planning group {:?} is not {:?}",
                req.group_name, interfaces.planning_group
            ),
        ));
    }
    if goal.planning_options.plan_only {
        return Err((
            MoveItErrorCode::Failure,
            "plan-only requests are not supported by this server".into(),
        ));
    }
    let [c] = req.goal_constraints.as_slice() else {
        return Err(invalid(format!(
            "expected one set of goal constraints, got {}",
            req.goal_constraints.len()
        )));
    };
    if c.position_constraints.is_empty() && c.orientation_constraints.is_empty() {
        if !c.name.is_empty() && !c.joint_constraints.is_empty() {
            return Ok(ArmTarget::Named(c.name.clone()));
        }
        return Err(invalid(
            "joint-space goals are supported only as named targets".into(),
        ));
    }
    let ([p], [o]) = (
        c.position_constraints.as_slice(),
        c.orientation_constraints.as_slice(),
    ) else {
        return Err(invalid(
            "a pose goal needs one position and one orientation constraint".into(),
        ));
    };
    if p.link_name != interfaces.end_effector_link || o.link_name != interfaces.end_effector_link {
        return Err((
            MoveItErrorCode::InvalidLinkName,
            format!(
                "constraints on {:?}/{:?}, expected {:?}",
                p.link_name, o.link_name, interfaces.end_effector_link
            ),
        ));
    }
    if p.header.frame_id != o.header.frame_id {
        return Err(invalid(format!(
            "position constraint in {:?} but orientation constraint in {:?}",
            p.header.frame_id, o.header.frame_id
        )));
    }
    let (Some(region), Some(center)) = (
        p.constraint_region.primitives.first(),
        p.constraint_region.primitive_poses.first(),
    ) else {
        return Err(invalid("the position constraint has no region".into()));
    };
    let dims = region.dimensions.as_slice();
    let tolerance = match (region.r#type, dims) {
        (SolidPrimitive::SPHERE, [r, ..]) => *r,
        (SolidPrimitive::BOX, [x, y, z]) => x.min(*y).min(*z) / 2.0,
        _ => {
            return Err(invalid(format!(
                "position region of type {} with dimensions {dims:?} is not a sphere or box",
                region.r#type
            )));
        }
    };
    let bad = |e: RosError| invalid(e.to_string());
    let offset = &p.target_point_offset;
    if offset.x != 0.0 || offset.y != 0.0 || offset.z != 0.0 {
        return Err(invalid("target_point_offset is not supported".into()));
    }
    let rotation = unit_quaternion(&o.orientation, "orientation constraint").map_err(bad)?;
    let position = isometry(
        &Pose {
            position: center.position.clone(),
            orientation: Quaternion::default(),
        },
        "position constraint",
    )
    .map_err(bad)?
    .translation;
    let kind = if req.pipeline_id == interfaces.linear_pipeline
        && req.planner_id == interfaces.linear_planner
    {
        MotionKind::Linear
    } else {
        MotionKind::FreeSpace
    };
    // MoveIt treats factors outside (0, 1] as 1
    let factor = |f: f64| {
        if f > 0.0 && f <= 1.0 { f as Real } else { 1.0 }
    };
    Ok(ArmTarget::Pose(PoseGoal {
        frame: FrameId::new(p.header.frame_id.as_str()),
        target: Isometry3::from_parts(position, rotation),
        kind,
        position_tolerance: tolerance as Real,
        orientation_tolerance: o
            .absolute_x_axis_tolerance
            .max(o.absolute_y_axis_tolerance)
            .max(o.absolute_z_axis_tolerance) as Real,
        velocity_scaling: factor(req.max_velocity_scaling_factor),
        acceleration_scaling: factor(req.max_acceleration_scaling_factor),
        allowed_contacts: allowed_contacts(
            &goal
                .planning_options
                .planning_scene_diff
                .allowed_collision_matrix,
            &interfaces.touch_links,
            &robot_acm.entry_names,
        ),
    }))
}

/// The MoveIt-level outcome of a finished MoveGroup goal.
pub fn motion_outcome(result: &GoalResult<MoveGroupResult>, cancelled: bool) -> MotionOutcome {
    let code = MoveItErrorCode::from_code(result.result.error_code.val);
    let message = result.result.error_code.message().to_string();
    let planning_time_s = result.result.planning_time;
    match result.state {
        TerminalState::Succeeded if code.is_success() => MotionOutcome {
            code,
            message,
            planning_time_s,
        },
        _ if cancelled || result.state == TerminalState::Canceled => MotionOutcome {
            code: MoveItErrorCode::Preempted,
            message: if message.is_empty() {
                "cancelled".into()
            } else {
                message
            },
            planning_time_s,
        },
        state => {
            // a failed goal must not report success
            let code = if code.is_success() {
                MoveItErrorCode::Failure
            } else {
                code
            };
            let message = if message.is_empty() {
                format!("MoveGroup goal ended {state:?} with {code}")
            } else {
                message
            };
            MotionOutcome {
                code,
                message,
                planning_time_s,
            }
        }
    }
}

/// [`ArmMotion`] through a MoveGroup action server (MoveIt 2's move_group, or the sim
/// node).
#[derive(Debug, Clone)]
pub struct MoveGroupArm {
    client: ActionClient<MoveGroup>,
    scene: Arc<Client<GetPlanningScene>>,
    interfaces: MotionInterfaces,
    safety: SafetyConfig,
    tf: TfBuffer,
    /// Stamps the goals (the node's time: simulated with `use_sim_time`).
    clock: RosClock,
    /// Where the last successful pose goal left the tool, until TF has shown it.
    arrival: Arc<std::sync::Mutex<Option<Arrival>>>,
}

/// A pose goal's result can reach this client before the `/tf` message carrying the
/// end state does (a busy machine, another DDS path): the next tool pose waits, bounded,
/// until TF agrees with the goal, so that a step planned from "where the arm is now"
/// does not start from where it was.
#[derive(Debug, Clone)]
struct Arrival {
    frame: FrameId,
    target: Isometry3,
    tolerance: f32,
}

/// How long a tool pose waits for TF to show a finished motion's end state.
const ARRIVAL_WAIT: Duration = Duration::from_secs(2);

impl MoveGroupArm {
    /// A client of `interfaces.move_group_action`; goals are checked against `safety`.
    pub fn new(
        node: &Node,
        interfaces: &MotionInterfaces,
        safety: &SafetyConfig,
        tf: TfBuffer,
    ) -> Result<Self, RosError> {
        Ok(Self {
            client: node.action_client::<MoveGroup>(&interfaces.move_group_action)?,
            scene: Arc::new(node.client::<GetPlanningScene>(&interfaces.planning_scene_service)?),
            interfaces: interfaces.clone(),
            safety: safety.clone(),
            tf,
            clock: node.clock(),
            arrival: Arc::default(),
        })
    }

    fn set_arrival(&self, arrival: Option<Arrival>) {
        *self
            .arrival
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = arrival;
    }

    pub fn action_client(&self) -> &ActionClient<MoveGroup> {
        &self.client
    }

    async fn collision_matrix(
        &self,
        objects: &[String],
    ) -> Result<AllowedCollisionMatrix, RosError> {
        let scene = self
            .scene
            .call(GetPlanningSceneRequest {
                components: PlanningSceneComponents {
                    components: PlanningSceneComponents::ALLOWED_COLLISION_MATRIX,
                },
            })
            .await?
            .scene;
        let mut acm = scene.allowed_collision_matrix;
        allow_contacts(&mut acm, &self.interfaces.touch_links, objects)?;
        Ok(acm)
    }

    async fn run(&self, goal: MoveGroupGoal, cancel: &CancellationToken) -> MotionOutcome {
        let started = std::time::Instant::now();
        let result = self
            .client
            .execute(
                goal,
                cancel,
                |f: MoveGroupFeedback| debug!(state = %f.state, "move_group feedback"),
            )
            .await;
        match result {
            Ok(r) => {
                let outcome = motion_outcome(&r, cancel.is_cancelled());
                info!(code = %outcome.code, elapsed_s = started.elapsed().as_secs_f64(), "motion ended");
                outcome
            }
            Err(e) => ros_failure(e, cancel),
        }
    }
}

fn ros_failure(e: RosError, cancel: &CancellationToken) -> MotionOutcome {
    let code = match &e {
        _ if cancel.is_cancelled() => MoveItErrorCode::Preempted,
        RosError::Timeout { .. } => MoveItErrorCode::TimedOut,
        RosError::GoalRejected { .. } => MoveItErrorCode::Failure,
        _ => MoveItErrorCode::CommunicationFailure,
    };
    MotionOutcome::failure(code, e.to_string())
}

#[async_trait]
impl ArmMotion for MoveGroupArm {
    async fn move_to_pose(&self, goal: &PoseGoal, cancel: &CancellationToken) -> MotionOutcome {
        if let Err(msg) = check_pose_goal(goal, &self.safety) {
            return MotionOutcome::failure(MoveItErrorCode::InvalidGoalConstraints, msg);
        }
        let acm = if goal.allowed_contacts.is_empty() {
            None
        } else {
            match self.collision_matrix(&goal.allowed_contacts).await {
                Ok(acm) => Some(acm),
                Err(e) => {
                    return MotionOutcome::failure(
                        MoveItErrorCode::CommunicationFailure,
                        format!("reading the planning scene's collision matrix: {e}"),
                    );
                }
            }
        };
        let out = self
            .run(
                pose_goal(goal, &self.interfaces, acm, self.clock.now()),
                cancel,
            )
            .await;
        self.set_arrival(out.code.is_success().then(|| Arrival {
            frame: goal.frame.clone(),
            target: goal.target,
            tolerance: goal.position_tolerance,
        }));
        out
    }

    async fn move_to_named(&self, name: &str, cancel: &CancellationToken) -> MotionOutcome {
        self.set_arrival(None);
        match named_goal(
            name,
            &self.interfaces,
            self.safety.max_velocity_scaling,
            self.safety.max_acceleration_scaling,
            self.clock.now(),
        ) {
            Ok(goal) => self.run(goal, cancel).await,
            Err(msg) => MotionOutcome::failure(MoveItErrorCode::InvalidGoalConstraints, msg),
        }
    }

    async fn tool_pose(&self, frame: &FrameId) -> Result<Isometry3, RobotError> {
        let tool = FrameId::new(self.interfaces.end_effector_link.as_str());
        let arrival = self
            .arrival
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(a) = arrival {
            let near = 2.0 * a.tolerance + 0.002;
            let shown = wait_until(
                || {
                    format!(
                        "TF showing the tool where its last motion ended ({})",
                        a.frame
                    )
                },
                ARRIVAL_WAIT,
                || {
                    self.tf.lookup(&a.frame, &tool).is_ok_and(|t| {
                        (t.iso.translation.vector - a.target.translation.vector).norm() <= near
                    })
                },
            )
            .await;
            if let Err(e) = shown {
                warn!("{e}; using the newest TF");
            }
        }
        self.tf
            .wait_for(frame, &tool, None)
            .await
            .map(|t| t.iso)
            .map_err(|e| ros_to_robot_error(e, &format!("TF {frame} → {tool}")))
    }
}

/// Serves MoveGroup goals from an [`ArmMotion`] (the sim node's arm, or any other).
/// Serve [`planning_scene_handler`] with the same matrix on the planning-scene service,
/// so that clients can extend it.
pub struct ArmMotionHandler {
    arm: Arc<dyn ArmMotion>,
    interfaces: MotionInterfaces,
    robot_acm: AllowedCollisionMatrix,
}

impl std::fmt::Debug for ArmMotionHandler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArmMotionHandler")
            .field("group", &self.interfaces.planning_group)
            .finish()
    }
}

impl ArmMotionHandler {
    /// `robot_acm`: the robot's own allowed collision matrix (pairs of its links that
    /// may touch).
    pub fn new(
        arm: Arc<dyn ArmMotion>,
        interfaces: &MotionInterfaces,
        robot_acm: AllowedCollisionMatrix,
    ) -> Self {
        Self {
            arm,
            interfaces: interfaces.clone(),
            robot_acm,
        }
    }
}

/// A GetPlanningScene handler that reports `robot_acm` (the rest of the scene empty),
/// for a MoveGroup server built on [`ArmMotionHandler`].
pub fn planning_scene_handler(
    robot_acm: AllowedCollisionMatrix,
) -> impl Fn(GetPlanningSceneRequest) -> std::future::Ready<GetPlanningSceneResponse>
+ Send
+ Sync
+ 'static {
    move |_req| {
        std::future::ready(GetPlanningSceneResponse {
            scene: PlanningScene {
                allowed_collision_matrix: robot_acm.clone(),
                ..PlanningScene::default()
            },
        })
    }
}

fn moveit_result(outcome: &MotionOutcome) -> MoveGroupResult {
    MoveGroupResult {
        error_code: MoveItErrorCodes::new(outcome.code.code(), outcome.message.clone()),
        planning_time: outcome.planning_time_s,
        ..MoveGroupResult::default()
    }
}

#[async_trait]
impl GoalHandler<MoveGroup> for ArmMotionHandler {
    async fn execute(
        &self,
        goal: MoveGroupGoal,
        ctx: GoalContext<MoveGroup>,
    ) -> GoalOutcome<MoveGroupResult> {
        let target = match decode_goal(&goal, &self.interfaces, &self.robot_acm) {
            Ok(t) => t,
            Err((code, msg)) => {
                info!("refusing a MoveGroup goal: {msg}");
                return GoalOutcome::Aborted(moveit_result(&MotionOutcome::failure(code, msg)));
            }
        };
        let _ = ctx.publish_feedback(MoveGroupFeedback {
            state: "PLANNING".into(),
        });
        let outcome = match &target {
            ArmTarget::Pose(p) => self.arm.move_to_pose(p, ctx.cancellation()).await,
            ArmTarget::Named(n) => self.arm.move_to_named(n, ctx.cancellation()).await,
        };
        let _ = ctx.publish_feedback(MoveGroupFeedback {
            state: "IDLE".into(),
        });
        let result = moveit_result(&outcome);
        if outcome.code.is_success() {
            GoalOutcome::Succeeded(result)
        } else if ctx.is_cancelled() {
            GoalOutcome::Canceled(result)
        } else {
            GoalOutcome::Aborted(result)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use asp_core::Vector3 as V;

    fn goal() -> PoseGoal {
        PoseGoal {
            frame: FrameId::new("link_base"),
            target: Isometry3::new(V::new(0.3, 0.1, 0.2), V::new(0.0, 1.0, 0.0)),
            kind: MotionKind::FreeSpace,
            position_tolerance: 0.01,
            orientation_tolerance: 0.1,
            velocity_scaling: 0.3,
            acceleration_scaling: 0.3,
            allowed_contacts: vec![],
        }
    }

    #[test]
    fn collision_matrix_is_extended_not_replaced() {
        let mut acm = AllowedCollisionMatrix {
            entry_names: vec!["a".into(), "b".into()],
            entry_values: vec![
                AllowedCollisionEntry {
                    enabled: vec![false, true],
                },
                AllowedCollisionEntry {
                    enabled: vec![true, false],
                },
            ],
            ..AllowedCollisionMatrix::default()
        };
        let touch = vec!["finger".to_string(), "b".to_string()];
        allow_contacts(&mut acm, &touch, &["mug".into()]).unwrap();
        assert_eq!(acm.entry_names, ["a", "b", "finger", "mug"]);
        assert!(acm.entry_values.iter().all(|r| r.enabled.len() == 4));
        assert!(acm.entry_values[0].enabled[1], "existing pairs stay");
        assert!(acm.entry_values[2].enabled[3] && acm.entry_values[3].enabled[1]);
        assert!(!acm.entry_values[0].enabled[3]);
        let robot = vec!["a".to_string(), "b".to_string()];
        assert_eq!(allowed_contacts(&acm, &touch, &robot), ["mug"]);
        // without knowing the robot's links, a link allowed against a touch link looks
        // like an object
        assert_eq!(allowed_contacts(&acm, &touch, &[]), ["a", "mug"]);
        let mut bad = AllowedCollisionMatrix {
            entry_names: vec!["a".into()],
            ..AllowedCollisionMatrix::default()
        };
        assert!(allow_contacts(&mut bad, &touch, &["mug".into()]).is_err());
    }

    #[test]
    fn decode_refuses_what_arm_motion_cannot_do() {
        let i = MotionInterfaces::default();
        let mut g = pose_goal(&goal(), &i, None, Time::default());
        assert!(matches!(
            decode_goal(&g, &i, &AllowedCollisionMatrix::default()),
            Ok(ArmTarget::Pose(_))
        ));
        g.request.group_name = "other_arm".into();
        assert_eq!(
            decode_goal(&g, &i, &AllowedCollisionMatrix::default())
                .unwrap_err()
                .0,
            MoveItErrorCode::InvalidGroupName
        );
        let mut g = pose_goal(&goal(), &i, None, Time::default());
        g.planning_options.plan_only = true;
        assert!(
            decode_goal(&g, &i, &AllowedCollisionMatrix::default())
                .unwrap_err()
                .1
                .contains("plan-only")
        );
        let mut g = pose_goal(&goal(), &i, None, Time::default());
        g.request.goal_constraints[0].position_constraints[0].link_name = "link6".into();
        assert_eq!(
            decode_goal(&g, &i, &AllowedCollisionMatrix::default())
                .unwrap_err()
                .0,
            MoveItErrorCode::InvalidLinkName
        );
        let mut g = named_goal("home", &i, 0.5, 0.5, Time::default()).unwrap();
        assert_eq!(
            decode_goal(&g, &i, &AllowedCollisionMatrix::default()).unwrap(),
            ArmTarget::Named("home".into())
        );
        g.request.goal_constraints[0].name.clear();
        assert!(
            decode_goal(&g, &i, &AllowedCollisionMatrix::default()).is_err(),
            "unnamed joint goals are refused"
        );
        // MoveIt treats a zero scaling factor as 1
        let mut g = pose_goal(&goal(), &i, None, Time::default());
        g.request.max_velocity_scaling_factor = 0.0;
        let ArmTarget::Pose(p) = decode_goal(&g, &i, &AllowedCollisionMatrix::default()).unwrap()
        else {
            panic!()
        };
        assert_eq!(p.velocity_scaling, 1.0);
        assert_eq!(p.frame.as_str(), "link_base");
    }

    #[test]
    fn failed_goals_never_report_success() {
        let r = GoalResult {
            state: TerminalState::Aborted,
            result: MoveGroupResult {
                error_code: MoveItErrorCodes::new(MoveItErrorCodes::SUCCESS, ""),
                ..MoveGroupResult::default()
            },
        };
        assert_eq!(motion_outcome(&r, false).code, MoveItErrorCode::Failure);
        assert_eq!(motion_outcome(&r, true).code, MoveItErrorCode::Preempted);
        let ok = GoalResult {
            state: TerminalState::Succeeded,
            ..r
        };
        assert!(motion_outcome(&ok, false).code.is_success());
    }
}
