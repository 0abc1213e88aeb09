//! Poses, transforms and planar poses.

use asp_core::geometry::UnitQuaternion;
use asp_core::{FrameId, Isometry3, Pose2D, Real, Transform};
use nalgebra::{Quaternion as NQuaternion, Translation3};

use crate::RosError;
use crate::msg::builtin_interfaces::Time;
use crate::msg::geometry_msgs::{
    Point, Pose, PoseStamped, Quaternion, Transform as RosTransform, TransformStamped, Vector3,
};
use crate::msg::std_msgs::Header;
use crate::msg::tf2_msgs::TFMessage;

pub fn point(p: &asp_core::Point3) -> Point {
    Point {
        x: f64::from(p.x),
        y: f64::from(p.y),
        z: f64::from(p.z),
    }
}

pub fn vector3(v: &asp_core::Vector3) -> Vector3 {
    Vector3 {
        x: f64::from(v.x),
        y: f64::from(v.y),
        z: f64::from(v.z),
    }
}

pub fn quaternion(q: &UnitQuaternion) -> Quaternion {
    Quaternion {
        x: f64::from(q.i),
        y: f64::from(q.j),
        z: f64::from(q.k),
        w: f64::from(q.w),
    }
}

/// The unit quaternion of a message; a zero-length or non-finite one is an error naming
/// `what`.
pub fn unit_quaternion(q: &Quaternion, what: &str) -> Result<UnitQuaternion, RosError> {
    let norm = (q.x * q.x + q.y * q.y + q.z * q.z + q.w * q.w).sqrt();
    if !norm.is_finite() || norm < 1e-6 {
        return Err(RosError::Conversion(format!(
            "{what}: quaternion ({}, {}, {}, {}) is not a rotation",
            q.x, q.y, q.z, q.w
        )));
    }
    Ok(UnitQuaternion::from_quaternion(NQuaternion::new(
        q.w as Real,
        q.x as Real,
        q.y as Real,
        q.z as Real,
    )))
}

fn finite3(x: f64, y: f64, z: f64, what: &str) -> Result<Translation3<Real>, RosError> {
    if x.is_finite() && y.is_finite() && z.is_finite() {
        Ok(Translation3::new(x as Real, y as Real, z as Real))
    } else {
        Err(RosError::Conversion(format!(
            "{what}: position ({x}, {y}, {z}) is not finite"
        )))
    }
}

pub fn pose(iso: &Isometry3) -> Pose {
    Pose {
        position: Point {
            x: f64::from(iso.translation.x),
            y: f64::from(iso.translation.y),
            z: f64::from(iso.translation.z),
        },
        orientation: quaternion(&iso.rotation),
    }
}

pub fn isometry(p: &Pose, what: &str) -> Result<Isometry3, RosError> {
    let t = finite3(p.position.x, p.position.y, p.position.z, what)?;
    Ok(Isometry3::from_parts(
        t,
        unit_quaternion(&p.orientation, what)?,
    ))
}

pub fn ros_transform(iso: &Isometry3) -> RosTransform {
    RosTransform {
        translation: vector3(&iso.translation.vector),
        rotation: quaternion(&iso.rotation),
    }
}

pub fn isometry_of_transform(t: &RosTransform, what: &str) -> Result<Isometry3, RosError> {
    let tr = finite3(t.translation.x, t.translation.y, t.translation.z, what)?;
    Ok(Isometry3::from_parts(
        tr,
        unit_quaternion(&t.rotation, what)?,
    ))
}

/// `parent → child` as a TF message entry.
pub fn transform_stamped(tf: &Transform, stamp: Time) -> TransformStamped {
    TransformStamped {
        header: Header::new(stamp, tf.parent.as_str()),
        child_frame_id: tf.child.as_str().to_string(),
        transform: ros_transform(&tf.iso),
    }
}

pub fn transform(msg: &TransformStamped) -> Result<Transform, RosError> {
    let what = format!("transform {} → {}", msg.header.frame_id, msg.child_frame_id);
    if msg.header.frame_id.is_empty() || msg.child_frame_id.is_empty() {
        return Err(RosError::Conversion(format!("{what}: empty frame name")));
    }
    Ok(Transform::new(
        FrameId::new(msg.header.frame_id.trim_start_matches('/')),
        FrameId::new(msg.child_frame_id.trim_start_matches('/')),
        isometry_of_transform(&msg.transform, &what)?,
    ))
}

pub fn tf_message(transforms: &[Transform], stamp: Time) -> TFMessage {
    TFMessage {
        transforms: transforms
            .iter()
            .map(|t| transform_stamped(t, stamp))
            .collect(),
    }
}

pub fn transforms(msg: &TFMessage) -> Result<Vec<Transform>, RosError> {
    msg.transforms.iter().map(transform).collect()
}

/// A planar pose in `frame` (z = 0, yaw only).
pub fn pose_stamped_2d(p: &Pose2D, frame: &str, stamp: Time) -> PoseStamped {
    PoseStamped {
        header: Header::new(stamp, frame),
        pose: pose(&p.to_isometry()),
    }
}

/// The planar part (x, y, yaw) of a pose.
pub fn pose_2d(p: &Pose, what: &str) -> Result<Pose2D, RosError> {
    Ok(Pose2D::from_isometry(&isometry(p, what)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_relative_eq;
    use asp_core::Vector3 as V;

    #[test]
    fn pose_and_transform_round_trip() {
        let iso = Isometry3::new(V::new(1.0, -2.0, 0.5), V::new(0.3, -0.2, 1.1));
        let back = isometry(&pose(&iso), "test").unwrap();
        assert_relative_eq!(
            back.translation.vector,
            iso.translation.vector,
            epsilon = 1e-6
        );
        assert!(back.rotation.angle_to(&iso.rotation) < 1e-5);
        let tf = Transform::new("map", "base_link", iso);
        let msg = transform_stamped(&tf, Time::from_secs_f64(3.5));
        assert_eq!(msg.header.frame_id, "map");
        assert_eq!(msg.child_frame_id, "base_link");
        let back = transform(&msg).unwrap();
        assert_eq!(
            (back.parent.as_str(), back.child.as_str()),
            ("map", "base_link")
        );
        assert!(back.iso.rotation.angle_to(&iso.rotation) < 1e-5);
        let all = transforms(&tf_message(&[tf.clone(), tf.inverse()], Time::default())).unwrap();
        assert_eq!(all.len(), 2);
        assert_eq!(all[1].parent.as_str(), "base_link");
    }

    #[test]
    fn planar_pose_round_trip_and_bad_quaternion() {
        let p = Pose2D::new(2.0, 1.0, -2.5);
        let msg = pose_stamped_2d(&p, "map", Time::default());
        let q = pose_2d(&msg.pose, "goal").unwrap();
        assert_relative_eq!(q.x, 2.0);
        assert_relative_eq!(q.theta, -2.5, epsilon = 1e-5);
        let mut bad = msg.pose.clone();
        bad.orientation = Quaternion {
            x: 0.0,
            y: 0.0,
            z: 0.0,
            w: 0.0,
        };
        let e = isometry(&bad, "goal pose").unwrap_err().to_string();
        assert!(
            e.contains("goal pose") && e.contains("not a rotation"),
            "{e}"
        );
        bad.orientation = Quaternion::default();
        bad.position.x = f64::NAN;
        assert!(isometry(&bad, "goal pose").is_err());
    }
}
