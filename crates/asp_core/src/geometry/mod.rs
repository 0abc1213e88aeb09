//! 3D geometry on nalgebra and parry3d: framed point clouds and transforms, voxel
//! downsampling, normals, centroids, bounding boxes and point-cloud overlap.

mod cloud;
mod obb;
mod transform;

pub use cloud::{PointCloud, VoxelKey, voxel_keys};
pub use obb::OrientedBox;
pub use transform::{FrameId, Pose2D, Transform};

/// Scalar type of all 3D geometry (parry3d's `f32` build).
pub type Real = f32;
pub type Point3 = nalgebra::Point3<Real>;
pub type Vector3 = nalgebra::Vector3<Real>;
pub type Isometry3 = nalgebra::Isometry3<Real>;
pub type UnitQuaternion = nalgebra::UnitQuaternion<Real>;
