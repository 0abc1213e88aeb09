//! `octomap_msgs`: part of MoveIt's planning scene world.

use super::geometry_msgs::Pose;
use super::std_msgs::Header;

crate::ros_message! {
    pub struct Octomap in octomap_msgs / msg {
        pub header: Header,
        pub binary: bool,
        pub id: String,
        pub resolution: f64,
        pub data: Vec<i8>,
    }

    pub struct OctomapWithPose in octomap_msgs / msg {
        pub header: Header,
        pub origin: Pose,
        pub octomap: Octomap,
    }
}

crate::msg::register!(Octomap, OctomapWithPose);
