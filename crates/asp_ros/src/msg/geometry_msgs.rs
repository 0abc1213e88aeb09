//! `geometry_msgs`: points, poses, transforms and twists.

use super::std_msgs::Header;

crate::ros_message! {
    pub struct Point in geometry_msgs / msg {
        pub x: f64,
        pub y: f64,
        pub z: f64,
    }

    pub struct Point32 in geometry_msgs / msg {
        pub x: f32,
        pub y: f32,
        pub z: f32,
    }

    pub struct Vector3 in geometry_msgs / msg {
        pub x: f64,
        pub y: f64,
        pub z: f64,
    }

    /// A rotation; the default is the identity (`w = 1`), as upstream declares.
    pub struct Quaternion in geometry_msgs / msg {
        pub x: f64 = 0.0,
        pub y: f64 = 0.0,
        pub z: f64 = 0.0,
        pub w: f64 = 1.0,
    }

    pub struct Pose in geometry_msgs / msg {
        pub position: Point,
        pub orientation: Quaternion,
    }

    pub struct PoseStamped in geometry_msgs / msg {
        pub header: Header,
        pub pose: Pose,
    }

    pub struct Transform in geometry_msgs / msg {
        pub translation: Vector3,
        pub rotation: Quaternion,
    }

    /// `header.frame_id` is the parent, `child_frame_id` the child (TF convention).
    pub struct TransformStamped in geometry_msgs / msg {
        pub header: Header,
        pub child_frame_id: String,
        pub transform: Transform,
    }

    pub struct Twist in geometry_msgs / msg {
        pub linear: Vector3,
        pub angular: Vector3,
    }

    pub struct Accel in geometry_msgs / msg {
        pub linear: Vector3,
        pub angular: Vector3,
    }

    pub struct Wrench in geometry_msgs / msg {
        pub force: Vector3,
        pub torque: Vector3,
    }

    pub struct Polygon in geometry_msgs / msg {
        pub points: Vec<Point32>,
    }
}

crate::msg::register!(
    Point,
    Point32,
    Vector3,
    Quaternion,
    Pose,
    PoseStamped,
    Transform,
    TransformStamped,
    Twist,
    Accel,
    Wrench,
    Polygon,
);
