//! `nav_msgs`: the occupancy grid on `/map`.

use super::builtin_interfaces::Time;
use super::geometry_msgs::Pose;
use super::std_msgs::Header;

crate::ros_message! {
    pub struct MapMetaData in nav_msgs / msg {
        pub map_load_time: Time,
        pub resolution: f32,
        pub width: u32,
        pub height: u32,
        pub origin: Pose,
    }

    /// Row-major cells from `info.origin`: 0 free … 100 occupied, -1 unknown.
    pub struct OccupancyGrid in nav_msgs / msg {
        pub header: Header,
        pub info: MapMetaData,
        pub data: Vec<i8>,
    }
}

crate::msg::register!(MapMetaData, OccupancyGrid);
