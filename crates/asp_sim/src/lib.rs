//! The embedded simulator (issue 3): a kinematic, deterministic stand-in for the robot,
//! Gazebo, MoveIt 2 and Nav2, in the spirit of Nav2's loopback simulator.
//!
//! - [`world`]: YAML worlds of objects with shapes, parts, articulated links and mounts.
//! - [`render`]: RGB-D cameras by ray casting, with simulator ground truth.

pub mod building;
pub mod effects;
pub mod error;
pub mod history;
pub mod nav;
pub mod predicate;
pub mod render;
pub mod scenario;
pub mod scene;
pub mod sim;
pub mod storeys;
pub mod world;
mod yaml;

pub use error::SimError;
pub use sim::{FrameTap, ODOM_FRAME, RobotFrames, SimRobot, SimSettings, SimState};
pub use world::{World, load_world, parse_world};
