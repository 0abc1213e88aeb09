//! The ASP ROS 2 nodes.
//!
//! The nodes' logic lives in `asp_system` behind typed ports ([`asp_system::ports`]);
//! this crate puts those ports on ROS 2:
//!
//! - a **server adapter** per port serves any implementation of it on a [`Node`]
//!   ([`map::serve_object_map`], [`affordance::serve_affordances`],
//!   [`skill::serve_skills`], [`goto::serve_go_to`], [`verifier::serve_verifier`]);
//! - a **client adapter** per port implements the port over a [`Node`]
//!   ([`map::ObjectMapClient`], [`affordance::AffordanceClient`],
//!   [`skill::SkillClient`], [`goto::GoToClient`], [`verifier::VerifierClient`]): a
//!   cancelled token becomes an action cancel request, a transport failure a
//!   [`ServiceError`](asp_system::ServiceError) of the right kind;
//! - the robot side: the planning scene ([`scene`]), the occupancy grid ([`grid`]),
//!   the cameras as a [`FrameSource`](asp_core::robot::FrameSource) ([`camera`]), the
//!   and the e-stop ([`estop`]);
//! - the nodes themselves ([`nodes`]), each a function from configuration and a
//!   [`Transport`](asp_ros::Transport) to a running node, wrapped by one thin binary
//!   each; [`graph`] starts all of them in one process; [`launch`] starts the binaries as
//!   separate processes.
//!
//! ## Interfaces: typed headline fields plus a JSON payload
//!
//! The node-to-node interfaces (`asp_interfaces`, see `crates/asp_ros/interfaces/`)
//! carry the fields a person or another ROS program needs in typed form — keys, skill,
//! success, and an `asp_interfaces/Failure` (kind, source code, retryable, needs remap,
//! message) — and the port's full serde type as a `*_json` string. Why:
//!
//! - the domain types (skill reports, affordance reports with their evidence, commit
//!   requests) are large and still evolving; mirroring each in `.msg` files would freeze
//!   them or make every change a change of the wire protocol in two places;
//! - JSON keeps `ros2 topic echo /asp/verdicts` and `ros2 service call` readable
//!   without our types;
//! - the verifier's commit digest is computed over the request's canonical JSON
//!   ([`asp_verify::CommitRequest::digest`]), so the executor and the verifier judge
//!   exactly the same bytes, and a request that went through JSON keeps its digest.
//!
//! The large parts (camera images, point clouds of the robot's own sensors) travel as
//! standard ROS messages (`sensor_msgs/Image`, `CameraInfo`, `/tf`), as a real robot's
//! drivers publish them.
//!
//! [`Node`]: asp_ros::Node

pub mod affordance;
pub mod agent;
pub mod args;
pub mod camera;
mod error;
pub mod estop;
pub mod goto;
pub mod graph;
pub mod grid;
pub mod launch;
pub mod map;
pub mod names;
pub mod nodes;
pub mod params;
pub mod process;
pub mod request_file;
pub mod rosout;
pub mod run;
pub mod scene;
pub mod skill;
pub mod supervision;
pub mod verifier;
pub mod wire;

pub use error::NodeError;

/// Aborts a background task when dropped (a node's listeners end with the node).
#[derive(Debug)]
pub struct AbortOnDrop(pub tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
