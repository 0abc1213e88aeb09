//! The product against the embedded simulator (`asp_sim`).
//!
//! The product crates read only what a robot gives them; everything that needs the
//! simulator's truth to run the product in simulation lives here, so that the rule is a
//! dependency rule (`tests/sim_truth.rs` checks it):
//!
//! | module | what |
//! |---|---|
//! | [`node`] | sim_node: cameras, `/tf`, `/joint_states`, `/map`, MoveGroup, NavigateToPose, GripperCommand, the planning scene and a building's elevator, served over the simulator as a robot stack serves them, plus the sim-only ground-truth images |
//! | [`standin`] | the simulation's VLM: an OpenAI-compatible server over the rendered frames, answering with seeded per-image errors |
//! | [`scene`] | the simulator as MoveIt's planning scene and as the occupancy-grid source |
//! | [`graph`] | the product node graph with the sim node in front of it |
//! | [`system`] | everything in one process over one simulation, without ROS |

pub mod elevator;
mod error;
pub mod graph;
pub mod node;
pub mod scene;
pub mod standin;
pub mod system;
pub mod tour;

pub use error::SimulationError;
pub use graph::{SimGraph, start_sim_graph};
pub use node::{SimNode, start_sim_node};
pub use system::{SimSystem, SystemOptions, robot_model, scenario_simulation, simulation};
