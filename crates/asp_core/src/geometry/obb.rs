use nalgebra::{Matrix3, SymmetricEigen};
use serde::{Deserialize, Serialize};

use super::{Isometry3, Point3, Real, UnitQuaternion, Vector3};

/// A box with its own orientation: `pose` maps box coordinates to the cloud's frame and
/// the box spans `[-half_extents, +half_extents]` in box coordinates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OrientedBox {
    pub pose: Isometry3,
    pub half_extents: Vector3,
}

impl OrientedBox {
    /// The box aligned with the principal axes of `points` (largest variance first),
    /// tight around them; `None` without points.
    pub fn from_points(points: &[Point3]) -> Option<OrientedBox> {
        if points.is_empty() {
            return None;
        }
        let n = points.len() as Real;
        let mean = points.iter().fold(Vector3::zeros(), |a, p| a + p.coords) / n;
        let mut cov = Matrix3::zeros();
        for p in points {
            let d = p.coords - mean;
            cov += d * d.transpose();
        }
        let eig = SymmetricEigen::new(cov / n);
        let mut order = [0usize, 1, 2];
        order.sort_by(|&a, &b| eig.eigenvalues[b].total_cmp(&eig.eigenvalues[a]));
        let x = eig.eigenvectors.column(order[0]).into_owned();
        let y = eig.eigenvectors.column(order[1]).into_owned();
        let axes = orthonormal_frame(x, y);
        let rot = UnitQuaternion::from_matrix(&axes);
        let (mut lo, mut hi) = (Vector3::repeat(Real::MAX), Vector3::repeat(Real::MIN));
        for p in points {
            let local = axes.transpose() * (p.coords - mean);
            lo = lo.inf(&local);
            hi = hi.sup(&local);
        }
        let center_local = (lo + hi) / 2.0;
        let center = mean + axes * center_local;
        Some(OrientedBox {
            pose: Isometry3::from_parts(center.into(), rot),
            half_extents: (hi - lo) / 2.0,
        })
    }

    pub fn center(&self) -> Point3 {
        Point3::from(self.pose.translation.vector)
    }

    /// Full edge lengths.
    pub fn extents(&self) -> Vector3 {
        self.half_extents * 2.0
    }

    pub fn volume(&self) -> Real {
        let e = self.extents();
        e.x * e.y * e.z
    }

    /// Whether `p` lies inside (or on) the box.
    pub fn contains(&self, p: &Point3) -> bool {
        let local = self.pose.inverse_transform_point(p);
        (0..3).all(|i| local[i].abs() <= self.half_extents[i] + 1e-6)
    }

    /// The box as a parry3d shape and its pose, for collision queries.
    pub fn to_shape(&self) -> (Isometry3, parry3d::shape::Cuboid) {
        (self.pose, parry3d::shape::Cuboid::new(self.half_extents))
    }

    /// Whether the two boxes overlap (touching counts).
    pub fn intersects(&self, other: &OrientedBox) -> bool {
        let (pa, a) = self.to_shape();
        let (pb, b) = other.to_shape();
        parry3d::query::intersection_test(&pa, &a, &pb, &b).unwrap_or(false)
    }

    /// Smallest distance between the two boxes; 0 when they overlap.
    pub fn distance(&self, other: &OrientedBox) -> Real {
        let (pa, a) = self.to_shape();
        let (pb, b) = other.to_shape();
        parry3d::query::distance(&pa, &a, &pb, &b).unwrap_or(0.0)
    }

    /// The eight corners in the cloud's frame.
    pub fn corners(&self) -> [Point3; 8] {
        let h = self.half_extents;
        let mut out = [Point3::origin(); 8];
        for (i, c) in out.iter_mut().enumerate() {
            let s = |bit: usize| if i & bit == 0 { -1.0 } else { 1.0 };
            *c = self.pose * Point3::new(s(1) * h.x, s(2) * h.y, s(4) * h.z);
        }
        out
    }
}

/// A right-handed rotation matrix whose first two columns follow `x` and `y`.
fn orthonormal_frame(x: Vector3, y: Vector3) -> Matrix3<Real> {
    let x = x.try_normalize(1e-12).unwrap_or_else(Vector3::x);
    let y = (y - x * x.dot(&y)).try_normalize(1e-12).unwrap_or_else(|| {
        x.cross(&Vector3::z())
            .try_normalize(1e-12)
            .unwrap_or_else(Vector3::y)
    });
    let z = x.cross(&y);
    Matrix3::from_columns(&[x, y, z])
}

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_relative_eq;

    #[test]
    fn obb_of_a_rotated_box() {
        // a 0.4 × 0.2 × 0.1 box of points, rotated 30° about z and moved
        let iso = Isometry3::new(
            Vector3::new(1.0, 2.0, 0.5),
            Vector3::z() * std::f32::consts::FRAC_PI_6,
        );
        let mut pts = Vec::new();
        for i in 0..=8 {
            for j in 0..=4 {
                for k in 0..=2 {
                    let local = Point3::new(
                        -0.2 + 0.05 * i as Real,
                        -0.1 + 0.05 * j as Real,
                        -0.05 + 0.05 * k as Real,
                    );
                    pts.push(iso * local);
                }
            }
        }
        let obb = OrientedBox::from_points(&pts).unwrap();
        assert_relative_eq!(obb.center(), Point3::new(1.0, 2.0, 0.5), epsilon = 1e-4);
        assert_relative_eq!(obb.extents(), Vector3::new(0.4, 0.2, 0.1), epsilon = 1e-4);
        assert_relative_eq!(obb.volume(), 0.008, epsilon = 1e-5);
        for p in &pts {
            assert!(obb.contains(p));
        }
        assert!(!obb.contains(&Point3::new(1.0, 2.0, 0.7)));
        // the longest axis follows the box's rotated x axis (up to sign)
        let axis = obb.pose.rotation * Vector3::x();
        assert_relative_eq!(
            axis.dot(&(iso.rotation * Vector3::x())).abs(),
            1.0,
            epsilon = 1e-4
        );
        let rot = obb.pose.rotation.to_rotation_matrix();
        assert_relative_eq!(rot.matrix().determinant(), 1.0, epsilon = 1e-5);
        assert!(OrientedBox::from_points(&[]).is_none());
    }

    #[test]
    fn obb_collision_queries() {
        let unit = |x: Real| OrientedBox {
            pose: Isometry3::translation(x, 0.0, 0.0),
            half_extents: Vector3::new(0.5, 0.5, 0.5),
        };
        assert!(unit(0.0).intersects(&unit(0.9)));
        assert!(!unit(0.0).intersects(&unit(1.5)));
        assert_relative_eq!(unit(0.0).distance(&unit(1.5)), 0.5, epsilon = 1e-5);
        assert_eq!(unit(0.0).distance(&unit(0.5)), 0.0);
    }

    #[test]
    fn obb_of_a_single_point_is_degenerate_but_valid() {
        let obb = OrientedBox::from_points(&[Point3::new(1.0, 1.0, 1.0)]).unwrap();
        assert_eq!(obb.volume(), 0.0);
        assert!(obb.contains(&Point3::new(1.0, 1.0, 1.0)));
        assert_eq!(obb.corners().len(), 8);
    }
}
