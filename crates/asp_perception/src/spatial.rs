//! Spatial tools (SPEC §1.3): plain operations on object point clouds and centroids,
//! answered in the robot's frame.
//!
//! The robot's pose is `base`: the transform `map → base_link` (`parent` = the map
//! frame, `child` = the base frame), as TF gives it. The base frame follows REP 103: +x
//! forward, +y left, +z up.
//!
//! - [`distance_to`]: horizontal distance from the base origin to the object's centroid
//!   (the distance the base would drive; height does not count), metres.
//! - [`distance_between`]: 3D distance between the two centroids, metres.
//! - [`left_of`]`(a, b)`: seen from the robot, `a` is to the left of `b`: the bearing of
//!   `a`'s centroid (`atan2(y, x)` in the base frame) exceeds the bearing of `b`'s, the
//!   difference taken in (−π, π]. This is what the robot's camera shows as left, also for
//!   objects at different distances. [`right_of`]`(a, b)` is `left_of(b, a)`. Two objects
//!   at the same bearing are neither left nor right of each other.
//! - [`size_of`]: the gravity-aligned oriented bounding box of the object's points: the
//!   footprint rectangle along the principal axes of the points' horizontal positions,
//!   and the vertical extent. Extents are (length ≥ width, height), metres.

use asp_core::CoreError;
use asp_core::geometry::{OrientedBox, Point3, Real, Transform, UnitQuaternion, Vector3};
use asp_core::map::{ObjectId, ObjectMap};
use nalgebra::{Matrix2, SymmetricEigen};
use serde::{Deserialize, Serialize};

use crate::PerceptionError;

fn object_points(map: &ObjectMap, id: ObjectId) -> Result<&[Point3], PerceptionError> {
    let object = map
        .get(id)
        .ok_or_else(|| PerceptionError::UnknownObject(id.to_string()))?;
    if object.point_cloud.is_empty() {
        return Err(PerceptionError::EmptyObject(id.to_string()));
    }
    Ok(object.point_cloud.points())
}

/// The object's centroid in the map frame.
pub fn centroid(map: &ObjectMap, id: ObjectId) -> Result<Point3, PerceptionError> {
    let pts = object_points(map, id)?;
    let sum = pts.iter().fold(Vector3::zeros(), |a, p| a + p.coords);
    Ok(Point3::from(sum / pts.len() as Real))
}

fn check_base(map: &ObjectMap, base: &Transform) -> Result<(), PerceptionError> {
    if base.parent != map.frame {
        return Err(CoreError::FrameMismatch {
            expected: map.frame.to_string(),
            found: base.parent.to_string(),
        }
        .into());
    }
    Ok(())
}

/// The object's centroid in the base frame.
pub fn centroid_in_base(
    map: &ObjectMap,
    id: ObjectId,
    base: &Transform,
) -> Result<Point3, PerceptionError> {
    check_base(map, base)?;
    Ok(base.iso.inverse_transform_point(&centroid(map, id)?))
}

/// Horizontal distance from the robot base to the object's centroid, metres.
pub fn distance_to(
    map: &ObjectMap,
    id: ObjectId,
    base: &Transform,
) -> Result<Real, PerceptionError> {
    let c = centroid_in_base(map, id, base)?;
    Ok((c.x * c.x + c.y * c.y).sqrt())
}

/// 3D distance between the centroids of two objects, metres.
pub fn distance_between(
    map: &ObjectMap,
    a: ObjectId,
    b: ObjectId,
) -> Result<Real, PerceptionError> {
    Ok((centroid(map, a)? - centroid(map, b)?).norm())
}

fn bearing(map: &ObjectMap, id: ObjectId, base: &Transform) -> Result<Real, PerceptionError> {
    let c = centroid_in_base(map, id, base)?;
    Ok(c.y.atan2(c.x))
}

/// Whether `a` is left of `b` as the robot sees them (see the module docs).
pub fn left_of(
    map: &ObjectMap,
    a: ObjectId,
    b: ObjectId,
    base: &Transform,
) -> Result<bool, PerceptionError> {
    let mut d = bearing(map, a, base)? - bearing(map, b, base)?;
    // wrap into (−π, π]
    while d <= -std::f32::consts::PI {
        d += 2.0 * std::f32::consts::PI;
    }
    while d > std::f32::consts::PI {
        d -= 2.0 * std::f32::consts::PI;
    }
    Ok(d > 1e-6)
}

/// Whether `a` is right of `b` as the robot sees them: `left_of(b, a)`.
pub fn right_of(
    map: &ObjectMap,
    a: ObjectId,
    b: ObjectId,
    base: &Transform,
) -> Result<bool, PerceptionError> {
    left_of(map, b, a, base)
}

/// The size of an object: extents of its gravity-aligned bounding box.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObjectSize {
    /// The longer horizontal side, metres.
    pub length: Real,
    /// The shorter horizontal side, metres.
    pub width: Real,
    /// Vertical extent, metres.
    pub height: Real,
    /// The box in the map frame: local x along the length, z up.
    pub bbox: OrientedBox,
}

impl ObjectSize {
    /// The largest extent, metres.
    pub fn max_extent(&self) -> Real {
        self.length.max(self.width).max(self.height)
    }
}

/// The gravity-aligned oriented bounding box of an object (see the module docs). The map
/// frame's +z must point up (REP 103).
pub fn size_of(map: &ObjectMap, id: ObjectId) -> Result<ObjectSize, PerceptionError> {
    let pts = object_points(map, id)?;
    let n = pts.len() as Real;
    let (mx, my) = pts.iter().fold((0.0, 0.0), |(x, y), p| (x + p.x, y + p.y));
    let (mx, my) = (mx / n, my / n);
    let mut cov = Matrix2::zeros();
    for p in pts {
        let d = nalgebra::Vector2::new(p.x - mx, p.y - my);
        cov += d * d.transpose();
    }
    let eig = SymmetricEigen::new(cov / n);
    let major = if eig.eigenvalues[0] >= eig.eigenvalues[1] {
        0
    } else {
        1
    };
    let axis = eig.eigenvectors.column(major).into_owned();
    let yaw = if axis.norm() > 1e-9 {
        axis.y.atan2(axis.x)
    } else {
        0.0
    };
    let (c, s) = (yaw.cos(), yaw.sin());
    let (mut lo, mut hi) = (Vector3::repeat(Real::MAX), Vector3::repeat(Real::MIN));
    for p in pts {
        let (dx, dy) = (p.x - mx, p.y - my);
        let local = Vector3::new(c * dx + s * dy, -s * dx + c * dy, p.z);
        lo = lo.inf(&local);
        hi = hi.sup(&local);
    }
    let ext = hi - lo;
    let mid = (hi + lo) / 2.0;
    let center = Point3::new(
        mx + c * mid.x - s * mid.y,
        my + s * mid.x + c * mid.y,
        mid.z,
    );
    let (length, width, yaw) = if ext.x >= ext.y {
        (ext.x, ext.y, yaw)
    } else {
        (ext.y, ext.x, yaw + std::f32::consts::FRAC_PI_2)
    };
    let bbox = OrientedBox {
        pose: asp_core::Isometry3::from_parts(
            center.coords.into(),
            UnitQuaternion::from_axis_angle(&Vector3::z_axis(), yaw),
        ),
        half_extents: Vector3::new(length, width, ext.z) / 2.0,
    };
    Ok(ObjectSize {
        length,
        width,
        height: ext.z,
        bbox,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use asp_core::geometry::{Isometry3, PointCloud};
    use asp_core::map::Object;
    use std::f32::consts::{FRAC_PI_2, FRAC_PI_6, PI};

    fn add(map: &mut ObjectMap, points: Vec<Point3>) -> ObjectId {
        let id = map.allocate_id();
        map.objects.push(Object {
            id,
            point_cloud: PointCloud::new("map", points),
            crops: vec![],
            features: vec![1.0],
            observations: 1,
            affordances: vec![],
        });
        id
    }

    fn at(x: f32, y: f32, z: f32) -> Vec<Point3> {
        // a symmetric pair of points: the centroid is (x, y, z)
        vec![Point3::new(x - 0.01, y, z), Point3::new(x + 0.01, y, z)]
    }

    #[test]
    fn distances_hand_computed() {
        let mut m = ObjectMap::new("map");
        let a = add(&mut m, at(3.0, 4.0, 0.8));
        let b = add(&mut m, at(3.0, 0.0, 0.0));
        let origin = Transform::identity("map");
        let base = Transform::new("map", "base_link", origin.iso);
        // horizontal 5 m; the 0.8 m height does not count
        assert!((distance_to(&m, a, &base).unwrap() - 5.0).abs() < 1e-5);
        // base at (3, 0) facing +y: a is 4 m ahead
        let moved = Transform::new(
            "map",
            "base_link",
            Isometry3::new(Vector3::new(3.0, 0.0, 0.0), Vector3::z() * FRAC_PI_2),
        );
        assert!((distance_to(&m, a, &moved).unwrap() - 4.0).abs() < 1e-5);
        // between centroids: sqrt(4² + 0.8²)
        let d = distance_between(&m, a, b).unwrap();
        assert!((d - (16.0f32 + 0.64).sqrt()).abs() < 1e-5, "{d}");
        // wrong frame and unknown object are errors naming them
        let wrong = Transform::new("odom", "base_link", Isometry3::identity());
        assert!(
            distance_to(&m, a, &wrong)
                .unwrap_err()
                .to_string()
                .contains("odom")
        );
        assert!(
            distance_to(&m, ObjectId(42), &base)
                .unwrap_err()
                .to_string()
                .contains("#42")
        );
    }

    #[test]
    fn left_and_right_from_the_robots_viewpoint() {
        let mut m = ObjectMap::new("map");
        // robot at the origin facing +x: +y is its left
        let near_left = add(&mut m, at(1.0, 0.1, 0.0)); // bearing atan(0.1) = 0.0997
        let far_right_of_it = add(&mut m, at(3.0, 0.2, 0.0)); // bearing atan(0.0667) = 0.0666
        let base = Transform::new("map", "base_link", Isometry3::identity());
        // larger y but smaller bearing: the camera shows it to the right
        assert!(left_of(&m, near_left, far_right_of_it, &base).unwrap());
        assert!(right_of(&m, far_right_of_it, near_left, &base).unwrap());
        assert!(!left_of(&m, far_right_of_it, near_left, &base).unwrap());
        // from (4, 0) facing -x: near_left is at (3, -0.1) in the base frame (bearing
        // -0.033), the other at (1, -0.2) (bearing -0.197): near_left is still left of it
        let turned = Transform::new(
            "map",
            "base_link",
            Isometry3::new(Vector3::new(4.0, 0.0, 0.0), Vector3::z() * PI),
        );
        assert!(left_of(&m, near_left, far_right_of_it, &turned).unwrap());
        // two objects side by side swap sides when the robot looks from the other side
        let a = add(&mut m, at(1.0, 0.5, 0.0));
        let b = add(&mut m, at(1.0, -0.5, 0.0));
        assert!(left_of(&m, a, b, &base).unwrap());
        let opposite = Transform::new(
            "map",
            "base_link",
            Isometry3::new(Vector3::new(2.0, 0.0, 0.0), Vector3::z() * PI),
        );
        assert!(right_of(&m, a, b, &opposite).unwrap());
        // same bearing: neither
        let behind = add(&mut m, at(2.0, 0.2, 0.0));
        assert!(!left_of(&m, near_left, behind, &base).unwrap());
        assert!(!right_of(&m, near_left, behind, &base).unwrap());
    }

    #[test]
    fn size_of_a_rotated_box() {
        // a 0.2 × 0.1 × 0.3 box of points yawed by 30°, centred at (1, 2, 0.5)
        let mut pts = Vec::new();
        let rot = Isometry3::new(Vector3::new(1.0, 2.0, 0.5), Vector3::z() * FRAC_PI_6);
        for i in 0..=10 {
            for j in 0..=10 {
                for k in 0..=10 {
                    let p = Point3::new(
                        -0.1 + 0.02 * i as f32,
                        -0.05 + 0.01 * j as f32,
                        -0.15 + 0.03 * k as f32,
                    );
                    pts.push(rot * p);
                }
            }
        }
        let mut m = ObjectMap::new("map");
        let id = add(&mut m, pts);
        let s = size_of(&m, id).unwrap();
        assert!((s.length - 0.2).abs() < 1e-4, "{s:?}");
        assert!((s.width - 0.1).abs() < 1e-4, "{s:?}");
        assert!((s.height - 0.3).abs() < 1e-4, "{s:?}");
        assert!((s.bbox.center() - Point3::new(1.0, 2.0, 0.5)).norm() < 1e-4);
        assert!((s.max_extent() - 0.3).abs() < 1e-4);
        // the box's x axis lies along the 30° direction (up to sign)
        let x = s.bbox.pose.rotation * Vector3::x();
        assert!((x.x.abs() - FRAC_PI_6.cos()).abs() < 1e-3, "{x:?}");
        let empty = add(&mut m, vec![]);
        assert!(size_of(&m, empty).is_err());
    }
}
