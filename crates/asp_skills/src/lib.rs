//! The ASP skill executor (SPEC §1.4): object and affordance point clouds become
//! end-effector pose goals for a MoveIt-like planner, gated by the verifier.
//!
//! - [`SkillExecutor`]: the entry point. [`SkillExecutor::execute`] takes a
//!   [`SkillRequest`] and returns a [`SkillResult`] (which converts to the agent's
//!   [`asp_core::ToolOutput`]). It drives the arm through [`asp_core::robot::ArmMotion`]
//!   and the gripper through [`asp_core::robot::Gripper`], so the same code runs the
//!   embedded simulator in process and MoveIt 2 / a GripperCommand controller over ROS.
//! - [`Verifier`]: the executor's side of the verifier node — COMMIT before any goal is
//!   sent, OUTCOME after. [`LocalVerifier`] runs `asp_verify` in process. Motion needs an
//!   [`asp_verify::CommitToken`] (the robot interfaces are reachable only through it, see
//!   [`actuators`]); success needs an [`asp_verify::StepSuccess`].
//! - [`SceneObserver`]: what the verifier's outcome check is shown (object and target
//!   clouds, articulation and switch state, camera views) before and after a skill.
//! - [`safety`]: typed limits checked in code before anything moves (allowed skills,
//!   workspace box in the arm base frame, velocity/acceleration scaling, gripper effort).
//! - [`EStop`]: a latched emergency stop that aborts the active motion and refuses new
//!   skills until reset; the node binds it to `/**.safety.estop_topic`.
//! - [`codes`]: MoveIt error codes → feedback the agent can act on.
//! - [`grasp`], [`articulation`], [`geometry`]: the point-cloud geometry behind the skills
//!   (grasp candidates and ranking, joint estimation, part normals).

pub mod actuators;
pub mod articulation;
pub mod codes;
pub mod error;
pub mod estop;
pub mod executor;
pub mod geometry;
pub mod grasp;
pub mod observe;
pub mod perceive;
pub mod placement;
mod plan;
pub mod request;
pub mod safety;
pub mod verifier;

pub use error::SkillError;
pub use estop::{EStop, EStopGuard, EStopListener};
pub use executor::{ExecStats, SkillExecutor};
pub use observe::{
    BlindObserver, ObserveError, ObservePhase, ObserveRequest, Observed, PartMotion, SceneObserver,
};
pub use perceive::PerceptionObserver;
pub use plan::resting_surface;
pub use request::{
    AttemptLog, HeldObject, MotionOverrides, SkillReport, SkillRequest, SkillResult,
};
pub use safety::{Refusal, SafetyGuard};
pub use verifier::{LocalVerifier, Verifier, VerifierError};
