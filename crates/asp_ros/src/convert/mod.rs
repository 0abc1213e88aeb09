//! Conversions between ROS messages and `asp_core` types. Every fallible conversion
//! names the field or frame that was wrong.

pub mod cloud;
pub mod geometry;
pub mod grid;
pub mod image;
pub mod joints;
pub mod markers;

pub use cloud::{cloud, ros_cloud};
pub use geometry::{
    isometry, pose, pose_2d, pose_stamped_2d, tf_message, transform, transform_stamped, transforms,
};
pub use grid::{grid, ros_grid};
pub use image::{
    DepthEncoding, camera_info, depth_image, intrinsics, rgb_image, ros_depth_image, ros_rgb_image,
};
pub use joints::{joint_positions, joint_state};
pub use markers::{instance_color, map_cloud, map_markers};
