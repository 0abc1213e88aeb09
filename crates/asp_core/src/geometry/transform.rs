use std::fmt;

use serde::{Deserialize, Serialize};

use super::{Isometry3, Point3, Real, Vector3};
use crate::CoreError;

/// The name of a coordinate frame, as in TF (`map`, `base_link`, `camera_color_optical_frame`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct FrameId(String);

impl FrameId {
    pub fn new(name: impl Into<String>) -> Self {
        FrameId(name.into())
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
    /// The map (world) frame every ObjectMap lives in.
    pub fn map() -> Self {
        FrameId::new("map")
    }
}

impl fmt::Display for FrameId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for FrameId {
    fn from(s: &str) -> Self {
        FrameId::new(s)
    }
}

/// A rigid transform that maps coordinates expressed in `child` into `parent`
/// (TF's `parent → child` transform): `p_parent = iso * p_child`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Transform {
    pub parent: FrameId,
    pub child: FrameId,
    pub iso: Isometry3,
}

impl Transform {
    pub fn new(parent: impl Into<FrameId>, child: impl Into<FrameId>, iso: Isometry3) -> Self {
        Self {
            parent: parent.into(),
            child: child.into(),
            iso,
        }
    }

    pub fn identity(frame: impl Into<FrameId>) -> Self {
        let f = frame.into();
        Self::new(f.clone(), f, Isometry3::identity())
    }

    /// `child → parent` becomes `parent → child`.
    pub fn inverse(&self) -> Transform {
        Transform::new(self.child.clone(), self.parent.clone(), self.iso.inverse())
    }

    /// Chains `self: a → b` with `next: b → c` into `a → c`; fails when the frames do not meet.
    pub fn then(&self, next: &Transform) -> Result<Transform, CoreError> {
        if self.child != next.parent {
            return Err(CoreError::FrameMismatch {
                expected: self.child.to_string(),
                found: next.parent.to_string(),
            });
        }
        Ok(Transform::new(
            self.parent.clone(),
            next.child.clone(),
            self.iso * next.iso,
        ))
    }

    pub fn apply(&self, p: &Point3) -> Point3 {
        self.iso * p
    }

    pub fn apply_vector(&self, v: &Vector3) -> Vector3 {
        self.iso * v
    }
}

impl From<String> for FrameId {
    fn from(s: String) -> Self {
        FrameId(s)
    }
}

/// A planar pose on the floor: position in metres and heading `theta` in radians about +z.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Pose2D {
    pub x: Real,
    pub y: Real,
    pub theta: Real,
}

impl Pose2D {
    pub const fn new(x: Real, y: Real, theta: Real) -> Self {
        Self { x, y, theta }
    }

    /// The 3D isometry of this pose on the floor plane z = 0.
    pub fn to_isometry(&self) -> Isometry3 {
        Isometry3::new(Vector3::new(self.x, self.y, 0.0), Vector3::z() * self.theta)
    }

    /// The planar part of a 3D pose (its yaw about +z).
    pub fn from_isometry(iso: &Isometry3) -> Self {
        let (_, _, yaw) = iso.rotation.euler_angles();
        Self::new(iso.translation.x, iso.translation.y, yaw)
    }

    pub fn distance_to(&self, other: &Pose2D) -> Real {
        ((self.x - other.x).powi(2) + (self.y - other.y).powi(2)).sqrt()
    }

    /// How far the two headings are apart, in [0, π].
    pub fn turn_to(&self, other: &Pose2D) -> Real {
        let d = (self.theta - other.theta).rem_euclid(std::f32::consts::TAU);
        d.min(std::f32::consts::TAU - d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_relative_eq;
    use std::f32::consts::FRAC_PI_2;

    #[test]
    fn headings_are_compared_the_short_way_round() {
        let p = |theta| Pose2D::new(0.0, 0.0, theta);
        let pi = std::f32::consts::PI;
        assert!((p(0.1).turn_to(&p(-0.1)) - 0.2).abs() < 1e-6);
        assert!((p(pi - 0.1).turn_to(&p(-pi + 0.1)) - 0.2).abs() < 1e-5);
        assert!((p(0.0).turn_to(&p(pi)) - pi).abs() < 1e-6);
        assert!(p(0.3).turn_to(&p(0.3 + std::f32::consts::TAU)) < 1e-5);
    }

    #[test]
    fn chain_and_inverse() {
        let map_base = Transform::new(
            "map",
            "base_link",
            Isometry3::new(Vector3::new(1.0, 0.0, 0.0), Vector3::z() * FRAC_PI_2),
        );
        let base_cam = Transform::new("base_link", "camera", Isometry3::translation(0.0, 0.0, 1.0));
        let map_cam = map_base.then(&base_cam).unwrap();
        assert_eq!(map_cam.parent.as_str(), "map");
        assert_eq!(map_cam.child.as_str(), "camera");
        let p = map_cam.apply(&Point3::new(1.0, 0.0, 0.0));
        // camera x axis maps to map +y after the 90° yaw, offset by the base position
        assert_relative_eq!(p, Point3::new(1.0, 1.0, 1.0), epsilon = 1e-6);
        let back = map_cam.inverse().apply(&p);
        assert_relative_eq!(back, Point3::new(1.0, 0.0, 0.0), epsilon = 1e-6);
        let err = base_cam.then(&map_base).unwrap_err();
        assert!(err.to_string().contains("camera"), "{err}");
    }

    #[test]
    fn pose2d_round_trip() {
        let p = Pose2D::new(1.5, -2.0, 0.7);
        let q = Pose2D::from_isometry(&p.to_isometry());
        assert_relative_eq!(q.x, p.x);
        assert_relative_eq!(q.y, p.y);
        assert_relative_eq!(q.theta, p.theta, epsilon = 1e-6);
        assert_relative_eq!(p.distance_to(&Pose2D::new(1.5, 1.0, 0.0)), 3.0);
    }
}
