//! `visualization_msgs`: markers for RViz.

use super::builtin_interfaces::Duration;
use super::geometry_msgs::{Point, Pose, Vector3};
use super::sensor_msgs::CompressedImage;
use super::std_msgs::{ColorRGBA, Header};

crate::ros_message! {
    pub struct UVCoordinate in visualization_msgs / msg {
        pub u: f32,
        pub v: f32,
    }

    pub struct MeshFile in visualization_msgs / msg {
        pub filename: String,
        #[serde(with = "serde_bytes")]
        pub data: Vec<u8>,
    }

    pub struct Marker in visualization_msgs / msg {
        pub header: Header,
        pub ns: String,
        pub id: i32,
        pub r#type: i32,
        pub action: i32,
        pub pose: Pose,
        pub scale: Vector3,
        pub color: ColorRGBA,
        pub lifetime: Duration,
        pub frame_locked: bool,
        pub points: Vec<Point>,
        pub colors: Vec<ColorRGBA>,
        pub texture_resource: String,
        pub texture: CompressedImage,
        pub uv_coordinates: Vec<UVCoordinate>,
        pub text: String,
        pub mesh_resource: String,
        pub mesh_file: MeshFile,
        pub mesh_use_embedded_materials: bool,
    }
    consts {
        ARROW: i32 = 0,
        CUBE: i32 = 1,
        SPHERE: i32 = 2,
        CYLINDER: i32 = 3,
        LINE_STRIP: i32 = 4,
        LINE_LIST: i32 = 5,
        CUBE_LIST: i32 = 6,
        SPHERE_LIST: i32 = 7,
        POINTS: i32 = 8,
        TEXT_VIEW_FACING: i32 = 9,
        MESH_RESOURCE: i32 = 10,
        TRIANGLE_LIST: i32 = 11,
        #[cfg(feature = "jazzy")]
        ARROW_STRIP: i32 = 12,
        ADD: i32 = 0,
        MODIFY: i32 = 0,
        DELETE: i32 = 2,
        DELETEALL: i32 = 3,
    }

    pub struct MarkerArray in visualization_msgs / msg {
        pub markers: Vec<Marker>,
    }
}

crate::msg::register!(UVCoordinate, MeshFile, Marker, MarkerArray);
