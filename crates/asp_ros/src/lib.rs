//! ASP's ROS 2 layer, and the only crate that knows ROS.
//!
//! - [`msg`]: the project's own definitions of every ROS interface the nodes use
//!   (`asp_interfaces` plus the standard packages, per distro), with field lists that
//!   a test checks against upstream.
//! - [`transport`]: one API for topics, services and actions over two backends, real
//!   DDS (ros2-client on RustDDS, no ROS install needed) and in-process channels.
//! - [`action`]: action semantics like Nav2's, written once over either backend.
//! - [`params`]: ROS 2 parameters and their `rcl_interfaces` services.
//! - [`liveliness`]: heartbeats (`bond/msg/Status`) and a watcher that notices a dead
//!   node within its timeout.

pub mod action;
pub mod cdr;
pub mod convert;
mod error;
pub mod idl;
pub mod lifecycle;
pub mod liveliness;
pub mod msg;
pub mod params;
pub mod robot;
pub mod transport;

pub use error::RosError;
pub use transport::{Node, Qos, Transport, TransportSettings};
