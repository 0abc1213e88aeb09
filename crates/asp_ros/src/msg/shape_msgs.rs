//! `shape_msgs`: primitive shapes, meshes and planes of collision objects and regions.

use super::BoundedVec;
use super::geometry_msgs::{Point, Polygon};

crate::ros_message! {
    /// A box, sphere, cylinder, cone or prism; `dimensions` are indexed by the
    /// `BOX_X` … constants.
    pub struct SolidPrimitive in shape_msgs / msg {
        pub r#type: u8,
        pub dimensions: BoundedVec<f64, 3>,
        pub polygon: Polygon,
    }
    consts {
        BOX: u8 = 1,
        SPHERE: u8 = 2,
        CYLINDER: u8 = 3,
        CONE: u8 = 4,
        PRISM: u8 = 5,
        BOX_X: u8 = 0,
        BOX_Y: u8 = 1,
        BOX_Z: u8 = 2,
        SPHERE_RADIUS: u8 = 0,
        CYLINDER_HEIGHT: u8 = 0,
        CYLINDER_RADIUS: u8 = 1,
        CONE_HEIGHT: u8 = 0,
        CONE_RADIUS: u8 = 1,
        PRISM_HEIGHT: u8 = 0,
    }

    pub struct MeshTriangle in shape_msgs / msg {
        pub vertex_indices: [u32; 3],
    }

    pub struct Mesh in shape_msgs / msg {
        pub triangles: Vec<MeshTriangle>,
        pub vertices: Vec<Point>,
    }

    /// `ax + by + cz + d = 0`.
    pub struct Plane in shape_msgs / msg {
        pub coef: [f64; 4],
    }
}

crate::msg::register!(SolidPrimitive, MeshTriangle, Mesh, Plane);

impl SolidPrimitive {
    /// A sphere of `radius` metres.
    pub fn sphere(radius: f64) -> Self {
        Self {
            r#type: Self::SPHERE,
            dimensions: BoundedVec::new(vec![radius]).unwrap_or_default(),
            polygon: Polygon::default(),
        }
    }
}
