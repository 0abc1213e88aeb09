//! Robot models and motion planning for the embedded simulator: the stand-in for MoveIt 2.
//!
//! - [`RobotModel`]: an arm (planning group) with its gripper and carrier, read from a
//!   URDF and a MoveIt SRDF ([`UrdfArm`]; [`Xarm6`] is the UFactory xArm6 on the mobile
//!   base from `urdf/`). Forward kinematics of every link, damped-least-squares inverse
//!   kinematics within the joint limits, collision shapes (parry3d), self-collision,
//!   named configurations, the gripper.
//! - [`Stretch`]: the Hello Robot Stretch 3 from its own URDF, its base's turn and drive
//!   part of the manipulation chain, and the stretch_core goals a move becomes.
//! - [`CollisionWorld`]: what the simulator's scene answers (first collision of a set of
//!   link shapes); [`ShapeWorld`] is a plain implementation over named parry3d shapes.
//! - [`MotionPlanner`]: MoveIt's semantics for pose goals — IK, collision-checked joint
//!   interpolation, RRT-Connect with shortcutting (free space), Cartesian straight lines
//!   (Pilz `LIN`), time parameterisation, MoveIt error codes.
//!
//! Every pose is in the arm base frame (`link_base`); public poses use `asp_core`'s
//! `f32` [`Isometry3`](asp_core::geometry::Isometry3), the solver works in `f64`.

pub mod collision;
pub mod description;
pub mod error;
pub mod ik;
pub mod model;
pub mod planner;
pub mod stretch;
pub mod urdf_arm;

pub use collision::{Collision, CollisionWorld, EmptyWorld, ShapeWorld, WorldObject};
pub use error::{DescriptionError, IkError};
pub use model::{
    FingerGeometry, GripperSpec, IkOptions, JointFrame, JointSpec, LinkShape, RobotModel,
    SolutionFilter,
};
pub use planner::{
    AttachedObject, JointTrajectory, MotionPlanner, PlanError, PlanRequest, PlannerSettings,
    TrajectoryPoint,
};
pub use stretch::{DriverGoal, Stretch, StretchSettings};
pub use urdf_arm::{UrdfArm, Xarm6};

/// `f64` pose used inside the solver.
pub type Iso64 = nalgebra::Isometry3<f64>;
/// `f64` vector used inside the solver.
pub type Vec64 = nalgebra::Vector3<f64>;

/// `f64` → the workspace's `f32` pose.
pub fn to_f32(p: &Iso64) -> asp_core::geometry::Isometry3 {
    p.cast::<f32>()
}

/// The workspace's `f32` pose → `f64`.
pub fn to_f64(p: &asp_core::geometry::Isometry3) -> Iso64 {
    p.cast::<f64>()
}

// The model is shared between threads behind `Arc<dyn RobotModel>`.
const _: fn() = || {
    fn shareable<T: ?Sized + Send + Sync>() {}
    shareable::<dyn RobotModel>();
    shareable::<MotionPlanner>();
};
