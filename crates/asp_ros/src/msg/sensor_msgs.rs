//! `sensor_msgs`: camera images and calibration, point clouds, joint states.

use super::geometry_msgs::{Transform, Twist, Wrench};
use super::std_msgs::Header;

crate::ros_message! {
    /// An uncompressed image; `data` holds `height` rows of `step` bytes.
    pub struct Image in sensor_msgs / msg {
        pub header: Header,
        pub height: u32,
        pub width: u32,
        pub encoding: String,
        pub is_bigendian: u8,
        pub step: u32,
        #[serde(with = "serde_bytes")]
        pub data: Vec<u8>,
    }

    pub struct CompressedImage in sensor_msgs / msg {
        pub header: Header,
        pub format: String,
        #[serde(with = "serde_bytes")]
        pub data: Vec<u8>,
    }

    pub struct RegionOfInterest in sensor_msgs / msg {
        pub x_offset: u32,
        pub y_offset: u32,
        pub height: u32,
        pub width: u32,
        pub do_rectify: bool,
    }

    /// Calibration of a pinhole camera: `k` intrinsics, `r` rectification, `p`
    /// projection, `d` distortion (row-major).
    pub struct CameraInfo in sensor_msgs / msg {
        pub header: Header,
        pub height: u32,
        pub width: u32,
        pub distortion_model: String,
        pub d: Vec<f64>,
        pub k: [f64; 9],
        pub r: [f64; 9],
        pub p: [f64; 12],
        pub binning_x: u32,
        pub binning_y: u32,
        pub roi: RegionOfInterest,
    }

    pub struct PointField in sensor_msgs / msg {
        pub name: String,
        pub offset: u32,
        pub datatype: u8,
        pub count: u32,
    }
    consts {
        INT8: u8 = 1,
        UINT8: u8 = 2,
        INT16: u8 = 3,
        UINT16: u8 = 4,
        INT32: u8 = 5,
        UINT32: u8 = 6,
        FLOAT32: u8 = 7,
        FLOAT64: u8 = 8,
    }

    pub struct PointCloud2 in sensor_msgs / msg {
        pub header: Header,
        pub height: u32,
        pub width: u32,
        pub fields: Vec<PointField>,
        pub is_bigendian: bool,
        pub point_step: u32,
        pub row_step: u32,
        #[serde(with = "serde_bytes")]
        pub data: Vec<u8>,
        pub is_dense: bool,
    }

    pub struct JointState in sensor_msgs / msg {
        pub header: Header,
        pub name: Vec<String>,
        pub position: Vec<f64>,
        pub velocity: Vec<f64>,
        pub effort: Vec<f64>,
    }

    pub struct MultiDOFJointState in sensor_msgs / msg {
        pub header: Header,
        pub joint_names: Vec<String>,
        pub transforms: Vec<Transform>,
        pub twist: Vec<Twist>,
        pub wrench: Vec<Wrench>,
    }
}

crate::msg::register!(
    Image,
    CompressedImage,
    RegionOfInterest,
    CameraInfo,
    PointField,
    PointCloud2,
    JointState,
    MultiDOFJointState,
);
