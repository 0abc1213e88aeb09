//! `moveit_msgs`: everything the MoveGroup action (and ExecuteTrajectory) carries.
//!
//! Humble (moveit_msgs 2.2) differs from Jazzy (2.6) in three places, selected by the
//! distro feature: `MoveItErrorCodes` has no `message`/`source` strings and no
//! `UNDEFINED` constant, `MotionPlanRequest` names its Cartesian speed link
//! `cartesian_speed_end_effector_link`, and the ExecuteTrajectory goal has no
//! `controller_names`.

use super::Byte;
use super::builtin_interfaces::Duration;
use super::geometry_msgs::{
    Accel, Pose, PoseStamped, Quaternion, TransformStamped, Twist, Vector3,
};
use super::object_recognition_msgs::ObjectType;
use super::octomap_msgs::OctomapWithPose;
use super::sensor_msgs::{JointState, MultiDOFJointState};
use super::shape_msgs::{Mesh, Plane, SolidPrimitive};
use super::std_msgs::{ColorRGBA, Header};
use super::trajectory_msgs::{JointTrajectory, MultiDOFJointTrajectory};

#[cfg(feature = "jazzy")]
crate::ros_message! {
    /// The outcome code of a MoveIt request, with a message and its source (Jazzy).
    pub struct MoveItErrorCodes in moveit_msgs / msg {
        pub val: i32,
        pub message: String,
        pub source: String,
    }
    consts {
        SUCCESS: i32 = 1,
        UNDEFINED: i32 = 0,
        FAILURE: i32 = 99999,
        PLANNING_FAILED: i32 = -1,
        INVALID_MOTION_PLAN: i32 = -2,
        MOTION_PLAN_INVALIDATED_BY_ENVIRONMENT_CHANGE: i32 = -3,
        CONTROL_FAILED: i32 = -4,
        UNABLE_TO_AQUIRE_SENSOR_DATA: i32 = -5,
        TIMED_OUT: i32 = -6,
        PREEMPTED: i32 = -7,
        START_STATE_IN_COLLISION: i32 = -10,
        START_STATE_VIOLATES_PATH_CONSTRAINTS: i32 = -11,
        START_STATE_INVALID: i32 = -26,
        GOAL_IN_COLLISION: i32 = -12,
        GOAL_VIOLATES_PATH_CONSTRAINTS: i32 = -13,
        GOAL_CONSTRAINTS_VIOLATED: i32 = -14,
        GOAL_STATE_INVALID: i32 = -27,
        UNRECOGNIZED_GOAL_TYPE: i32 = -28,
        INVALID_GROUP_NAME: i32 = -15,
        INVALID_GOAL_CONSTRAINTS: i32 = -16,
        INVALID_ROBOT_STATE: i32 = -17,
        INVALID_LINK_NAME: i32 = -18,
        INVALID_OBJECT_NAME: i32 = -19,
        FRAME_TRANSFORM_FAILURE: i32 = -21,
        COLLISION_CHECKING_UNAVAILABLE: i32 = -22,
        ROBOT_STATE_STALE: i32 = -23,
        SENSOR_INFO_STALE: i32 = -24,
        COMMUNICATION_FAILURE: i32 = -25,
        CRASH: i32 = -29,
        ABORT: i32 = -30,
        NO_IK_SOLUTION: i32 = -31,
    }
}

#[cfg(feature = "humble")]
crate::ros_message! {
    /// The outcome code of a MoveIt request (Humble: the code only).
    pub struct MoveItErrorCodes in moveit_msgs / msg {
        pub val: i32,
    }
    consts {
        SUCCESS: i32 = 1,
        FAILURE: i32 = 99999,
        PLANNING_FAILED: i32 = -1,
        INVALID_MOTION_PLAN: i32 = -2,
        MOTION_PLAN_INVALIDATED_BY_ENVIRONMENT_CHANGE: i32 = -3,
        CONTROL_FAILED: i32 = -4,
        UNABLE_TO_AQUIRE_SENSOR_DATA: i32 = -5,
        TIMED_OUT: i32 = -6,
        PREEMPTED: i32 = -7,
        START_STATE_IN_COLLISION: i32 = -10,
        START_STATE_VIOLATES_PATH_CONSTRAINTS: i32 = -11,
        START_STATE_INVALID: i32 = -26,
        GOAL_IN_COLLISION: i32 = -12,
        GOAL_VIOLATES_PATH_CONSTRAINTS: i32 = -13,
        GOAL_CONSTRAINTS_VIOLATED: i32 = -14,
        GOAL_STATE_INVALID: i32 = -27,
        UNRECOGNIZED_GOAL_TYPE: i32 = -28,
        INVALID_GROUP_NAME: i32 = -15,
        INVALID_GOAL_CONSTRAINTS: i32 = -16,
        INVALID_ROBOT_STATE: i32 = -17,
        INVALID_LINK_NAME: i32 = -18,
        INVALID_OBJECT_NAME: i32 = -19,
        FRAME_TRANSFORM_FAILURE: i32 = -21,
        COLLISION_CHECKING_UNAVAILABLE: i32 = -22,
        ROBOT_STATE_STALE: i32 = -23,
        SENSOR_INFO_STALE: i32 = -24,
        COMMUNICATION_FAILURE: i32 = -25,
        CRASH: i32 = -29,
        ABORT: i32 = -30,
        NO_IK_SOLUTION: i32 = -31,
    }
}

impl MoveItErrorCodes {
    /// A code with a message (the message is dropped on Humble, which has no field
    /// for it).
    pub fn new(val: i32, message: impl Into<String>) -> Self {
        let message = message.into();
        #[cfg(feature = "jazzy")]
        {
            Self {
                val,
                message,
                source: String::new(),
            }
        }
        #[cfg(feature = "humble")]
        {
            let _ = message;
            Self { val }
        }
    }

    /// The message, where the distro carries one.
    pub fn message(&self) -> &str {
        #[cfg(feature = "jazzy")]
        {
            &self.message
        }
        #[cfg(feature = "humble")]
        {
            ""
        }
    }
}

#[cfg(feature = "jazzy")]
crate::ros_message! {
    /// A motion planning request (Jazzy field names).
    pub struct MotionPlanRequest in moveit_msgs / msg {
        pub workspace_parameters: WorkspaceParameters,
        pub start_state: RobotState,
        pub goal_constraints: Vec<Constraints>,
        pub path_constraints: Constraints,
        pub trajectory_constraints: TrajectoryConstraints,
        pub reference_trajectories: Vec<GenericTrajectory>,
        pub pipeline_id: String,
        pub planner_id: String,
        pub group_name: String,
        pub num_planning_attempts: i32,
        pub allowed_planning_time: f64,
        pub max_velocity_scaling_factor: f64,
        pub max_acceleration_scaling_factor: f64,
        pub cartesian_speed_limited_link: String,
        pub max_cartesian_speed: f64,
    }
}

#[cfg(feature = "humble")]
crate::ros_message! {
    /// A motion planning request (Humble field names).
    pub struct MotionPlanRequest in moveit_msgs / msg {
        pub workspace_parameters: WorkspaceParameters,
        pub start_state: RobotState,
        pub goal_constraints: Vec<Constraints>,
        pub path_constraints: Constraints,
        pub trajectory_constraints: TrajectoryConstraints,
        pub reference_trajectories: Vec<GenericTrajectory>,
        pub pipeline_id: String,
        pub planner_id: String,
        pub group_name: String,
        pub num_planning_attempts: i32,
        pub allowed_planning_time: f64,
        pub max_velocity_scaling_factor: f64,
        pub max_acceleration_scaling_factor: f64,
        pub cartesian_speed_end_effector_link: String,
        pub max_cartesian_speed: f64,
    }
}

crate::ros_message! {
    pub struct WorkspaceParameters in moveit_msgs / msg {
        pub header: Header,
        pub min_corner: Vector3,
        pub max_corner: Vector3,
    }

    pub struct RobotState in moveit_msgs / msg {
        pub joint_state: JointState,
        pub multi_dof_joint_state: MultiDOFJointState,
        pub attached_collision_objects: Vec<AttachedCollisionObject>,
        pub is_diff: bool,
    }

    pub struct AttachedCollisionObject in moveit_msgs / msg {
        pub link_name: String,
        pub object: CollisionObject,
        pub touch_links: Vec<String>,
        pub detach_posture: JointTrajectory,
        pub weight: f64,
    }

    pub struct CollisionObject in moveit_msgs / msg {
        pub header: Header,
        pub pose: Pose,
        pub id: String,
        pub r#type: ObjectType,
        pub primitives: Vec<SolidPrimitive>,
        pub primitive_poses: Vec<Pose>,
        pub meshes: Vec<Mesh>,
        pub mesh_poses: Vec<Pose>,
        pub planes: Vec<Plane>,
        pub plane_poses: Vec<Pose>,
        pub subframe_names: Vec<String>,
        pub subframe_poses: Vec<Pose>,
        pub operation: Byte,
    }
    consts {
        ADD: Byte = Byte(0),
        REMOVE: Byte = Byte(1),
        APPEND: Byte = Byte(2),
        MOVE: Byte = Byte(3),
    }

    /// Goal or path constraints; all must hold.
    pub struct Constraints in moveit_msgs / msg {
        pub name: String,
        pub joint_constraints: Vec<JointConstraint>,
        pub position_constraints: Vec<PositionConstraint>,
        pub orientation_constraints: Vec<OrientationConstraint>,
        pub visibility_constraints: Vec<VisibilityConstraint>,
    }

    pub struct JointConstraint in moveit_msgs / msg {
        pub joint_name: String,
        pub position: f64,
        pub tolerance_above: f64,
        pub tolerance_below: f64,
        pub weight: f64,
    }

    /// `link_name` (offset by `target_point_offset`) must lie in `constraint_region`.
    pub struct PositionConstraint in moveit_msgs / msg {
        pub header: Header,
        pub link_name: String,
        pub target_point_offset: Vector3,
        pub constraint_region: BoundingVolume,
        pub weight: f64,
    }

    pub struct BoundingVolume in moveit_msgs / msg {
        pub primitives: Vec<SolidPrimitive>,
        pub primitive_poses: Vec<Pose>,
        pub meshes: Vec<Mesh>,
        pub mesh_poses: Vec<Pose>,
    }

    pub struct OrientationConstraint in moveit_msgs / msg {
        pub header: Header,
        pub orientation: Quaternion,
        pub link_name: String,
        pub absolute_x_axis_tolerance: f64,
        pub absolute_y_axis_tolerance: f64,
        pub absolute_z_axis_tolerance: f64,
        pub parameterization: u8,
        pub weight: f64,
    }
    consts {
        XYZ_EULER_ANGLES: u8 = 0,
        ROTATION_VECTOR: u8 = 1,
    }

    pub struct VisibilityConstraint in moveit_msgs / msg {
        pub target_radius: f64,
        pub target_pose: PoseStamped,
        pub cone_sides: i32,
        pub sensor_pose: PoseStamped,
        pub max_view_angle: f64,
        pub max_range_angle: f64,
        pub sensor_view_direction: u8,
        pub weight: f64,
    }
    consts {
        SENSOR_Z: u8 = 0,
        SENSOR_Y: u8 = 1,
        SENSOR_X: u8 = 2,
    }

    pub struct TrajectoryConstraints in moveit_msgs / msg {
        pub constraints: Vec<Constraints>,
    }

    pub struct GenericTrajectory in moveit_msgs / msg {
        pub header: Header,
        pub joint_trajectory: Vec<JointTrajectory>,
        pub cartesian_trajectory: Vec<CartesianTrajectory>,
    }

    pub struct CartesianTrajectory in moveit_msgs / msg {
        pub header: Header,
        pub tracked_frame: String,
        pub points: Vec<CartesianTrajectoryPoint>,
    }

    pub struct CartesianTrajectoryPoint in moveit_msgs / msg {
        pub point: CartesianPoint,
        pub time_from_start: Duration,
    }

    pub struct CartesianPoint in moveit_msgs / msg {
        pub pose: Pose,
        pub velocity: Twist,
        pub acceleration: Accel,
    }

    pub struct PlanningOptions in moveit_msgs / msg {
        pub planning_scene_diff: PlanningScene,
        pub plan_only: bool,
        pub look_around: bool,
        pub look_around_attempts: i32,
        pub max_safe_execution_cost: f64,
        pub replan: bool,
        pub replan_attempts: i32,
        pub replan_delay: f64,
    }

    pub struct PlanningScene in moveit_msgs / msg {
        pub name: String,
        pub robot_state: RobotState,
        pub robot_model_name: String,
        pub fixed_frame_transforms: Vec<TransformStamped>,
        pub allowed_collision_matrix: AllowedCollisionMatrix,
        pub link_padding: Vec<LinkPadding>,
        pub link_scale: Vec<LinkScale>,
        pub object_colors: Vec<ObjectColor>,
        pub world: PlanningSceneWorld,
        pub is_diff: bool,
    }

    /// Symmetric matrix of whether pairs of bodies may collide; `default_entry_*`
    /// apply to a body against everything not listed.
    pub struct AllowedCollisionMatrix in moveit_msgs / msg {
        pub entry_names: Vec<String>,
        pub entry_values: Vec<AllowedCollisionEntry>,
        pub default_entry_names: Vec<String>,
        pub default_entry_values: Vec<bool>,
    }

    pub struct AllowedCollisionEntry in moveit_msgs / msg {
        pub enabled: Vec<bool>,
    }

    pub struct LinkPadding in moveit_msgs / msg {
        pub link_name: String,
        pub padding: f64,
    }

    pub struct LinkScale in moveit_msgs / msg {
        pub link_name: String,
        pub scale: f64,
    }

    pub struct ObjectColor in moveit_msgs / msg {
        pub id: String,
        pub color: ColorRGBA,
    }

    pub struct PlanningSceneWorld in moveit_msgs / msg {
        pub collision_objects: Vec<CollisionObject>,
        pub octomap: OctomapWithPose,
    }

    pub struct RobotTrajectory in moveit_msgs / msg {
        pub joint_trajectory: JointTrajectory,
        pub multi_dof_joint_trajectory: MultiDOFJointTrajectory,
    }

    pub struct MoveGroupGoal in moveit_msgs / action as "MoveGroup_Goal" {
        pub request: MotionPlanRequest,
        pub planning_options: PlanningOptions,
    }

    pub struct MoveGroupResult in moveit_msgs / action as "MoveGroup_Result" {
        pub error_code: MoveItErrorCodes,
        pub trajectory_start: RobotState,
        pub planned_trajectory: RobotTrajectory,
        pub executed_trajectory: RobotTrajectory,
        pub planning_time: f64,
    }

    pub struct MoveGroupFeedback in moveit_msgs / action as "MoveGroup_Feedback" {
        pub state: String,
    }

    /// Which parts of the planning scene a GetPlanningScene request wants (bit mask).
    pub struct PlanningSceneComponents in moveit_msgs / msg {
        pub components: u32,
    }
    consts {
        SCENE_SETTINGS: u32 = 1,
        ROBOT_STATE: u32 = 2,
        ROBOT_STATE_ATTACHED_OBJECTS: u32 = 4,
        WORLD_OBJECT_NAMES: u32 = 8,
        WORLD_OBJECT_GEOMETRY: u32 = 16,
        OCTOMAP: u32 = 32,
        TRANSFORMS: u32 = 64,
        ALLOWED_COLLISION_MATRIX: u32 = 128,
        LINK_PADDING_AND_SCALING: u32 = 256,
        OBJECT_COLORS: u32 = 512,
    }

    pub struct GetPlanningSceneRequest in moveit_msgs / srv as "GetPlanningScene_Request" {
        pub components: PlanningSceneComponents,
    }

    pub struct GetPlanningSceneResponse in moveit_msgs / srv as "GetPlanningScene_Response" {
        pub scene: PlanningScene,
    }

    pub struct ExecuteTrajectoryResult in moveit_msgs / action as "ExecuteTrajectory_Result" {
        pub error_code: MoveItErrorCodes,
    }

    pub struct ExecuteTrajectoryFeedback in moveit_msgs / action as "ExecuteTrajectory_Feedback" {
        pub state: String,
    }
}

#[cfg(feature = "jazzy")]
crate::ros_message! {
    pub struct ExecuteTrajectoryGoal in moveit_msgs / action as "ExecuteTrajectory_Goal" {
        pub trajectory: RobotTrajectory,
        pub controller_names: Vec<String>,
    }
}

#[cfg(feature = "humble")]
crate::ros_message! {
    pub struct ExecuteTrajectoryGoal in moveit_msgs / action as "ExecuteTrajectory_Goal" {
        pub trajectory: RobotTrajectory,
    }
}

crate::ros_message! {
    pub struct ApplyPlanningSceneRequest in moveit_msgs / srv as "ApplyPlanningScene_Request" {
        pub scene: PlanningScene,
    }

    pub struct ApplyPlanningSceneResponse in moveit_msgs / srv as "ApplyPlanningScene_Response" {
        pub success: bool,
    }
}

crate::ros_service! {
    /// `moveit_msgs/srv/ApplyPlanningScene`: move_group's `/apply_planning_scene`, which
    /// applies a planning-scene diff (collision objects) and answers when it is in effect.
    pub struct ApplyPlanningScene in moveit_msgs { ApplyPlanningSceneRequest, ApplyPlanningSceneResponse }
}

crate::ros_service! {
    /// `moveit_msgs/srv/GetPlanningScene` (move_group's `/get_planning_scene`).
    pub struct GetPlanningScene in moveit_msgs { GetPlanningSceneRequest, GetPlanningSceneResponse }
}

crate::ros_action! {
    /// `moveit_msgs/action/MoveGroup`: plan (and execute) a motion plan request.
    pub struct MoveGroup in moveit_msgs { MoveGroupGoal, MoveGroupResult, MoveGroupFeedback }
    fn result_for(reason, message) {
        MoveGroupResult {
            error_code: MoveItErrorCodes::new(moveit_code_for(reason), message),
            ..MoveGroupResult::default()
        }
    }
}

crate::ros_action! {
    /// `moveit_msgs/action/ExecuteTrajectory`.
    pub struct ExecuteTrajectory in moveit_msgs {
        ExecuteTrajectoryGoal, ExecuteTrajectoryResult, ExecuteTrajectoryFeedback
    }
    fn result_for(reason, message) {
        ExecuteTrajectoryResult {
            error_code: MoveItErrorCodes::new(moveit_code_for(reason), message),
        }
    }
}

/// The MoveIt code for a goal the server ended itself.
fn moveit_code_for(reason: crate::msg::EndReason) -> i32 {
    use crate::msg::EndReason;
    match reason {
        EndReason::Preempted | EndReason::Canceled => MoveItErrorCodes::PREEMPTED,
        EndReason::EStop
        | EndReason::Shutdown
        | EndReason::ClientLost
        | EndReason::Deactivated
        | EndReason::Restarted => MoveItErrorCodes::ABORT,
        EndReason::HandlerFailed => MoveItErrorCodes::FAILURE,
    }
}

crate::msg::register!(
    MoveItErrorCodes,
    MotionPlanRequest,
    WorkspaceParameters,
    RobotState,
    AttachedCollisionObject,
    CollisionObject,
    Constraints,
    JointConstraint,
    PositionConstraint,
    BoundingVolume,
    OrientationConstraint,
    VisibilityConstraint,
    TrajectoryConstraints,
    GenericTrajectory,
    CartesianTrajectory,
    CartesianTrajectoryPoint,
    CartesianPoint,
    PlanningOptions,
    PlanningScene,
    AllowedCollisionMatrix,
    AllowedCollisionEntry,
    LinkPadding,
    LinkScale,
    ObjectColor,
    PlanningSceneWorld,
    RobotTrajectory,
    PlanningSceneComponents,
    GetPlanningSceneRequest,
    GetPlanningSceneResponse,
    ApplyPlanningSceneRequest,
    ApplyPlanningSceneResponse,
    MoveGroupGoal,
    MoveGroupResult,
    MoveGroupFeedback,
    ExecuteTrajectoryGoal,
    ExecuteTrajectoryResult,
    ExecuteTrajectoryFeedback,
);
