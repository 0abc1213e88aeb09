//! 3D geometry on nalgebra and parry3d: framed point clouds and transforms, voxel
//! downsampling, normals, centroids, bounding boxes and point-cloud overlap.

mod cloud;
mod obb;
mod transform;

pub use cloud::{PointCloud, VoxelKey, voxel_keys, within_radius};
pub use obb::OrientedBox;
pub use transform::{FrameId, Pose2D, Transform};

/// Scalar type of all 3D geometry (parry3d's `f32` build).
pub type Real = f32;
pub type Point3 = nalgebra::Point3<Real>;
pub type Vector3 = nalgebra::Vector3<Real>;
pub type Isometry3 = nalgebra::Isometry3<Real>;
pub type UnitQuaternion = nalgebra::UnitQuaternion<Real>;

/// Whether the floor point `p` lies inside `polygon` (even-odd rule; a polygon of fewer
/// than three corners contains nothing).
pub fn polygon_contains(polygon: &[[Real; 2]], p: [Real; 2]) -> bool {
    let n = polygon.len();
    if n < 3 {
        return false;
    }
    let mut inside = false;
    let mut j = n - 1;
    for i in 0..n {
        let (a, b) = (polygon[i], polygon[j]);
        if (a[1] > p[1]) != (b[1] > p[1])
            && p[0] < (b[0] - a[0]) * (p[1] - a[1]) / (b[1] - a[1]) + a[0]
        {
            inside = !inside;
        }
        j = i;
    }
    inside
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_polygon_contains_its_inside_and_not_its_outside() {
        let base = [[0.3, 0.25], [-0.3, 0.25], [-0.3, -0.25], [0.3, -0.25]];
        assert!(polygon_contains(&base, [0.0, 0.0]));
        assert!(polygon_contains(&base, [0.29, -0.24]));
        assert!(!polygon_contains(&base, [0.31, 0.0]));
        assert!(!polygon_contains(&base, [0.0, 0.26]));
        assert!(!polygon_contains(&base[..2], [0.0, 0.25]));
    }
}
