//! The joint of an articulated part, estimated from the part's and the object's point
//! clouds, in the order of SPEC §5.2's taxonomy: joint type, then axis, then (revolute)
//! origin and limit.
//!
//! - The front surface is the plane of the object's points around the handle; its
//!   outward normal `n` is the pull direction.
//! - Type: a handle whose long axis runs along the front's horizontal edge is a drawer
//!   pull (prismatic); one whose long axis is vertical is a door handle (revolute). A
//!   round knob is judged by where it sits: near a vertical edge of the front means a
//!   door, central means a drawer.
//! - Prismatic: axis `n`; travel from the depth of the object behind its front.
//! - Revolute: axis vertical through the front's edge farthest from the handle (doors
//!   hinge opposite their handle), sign such that opening moves the handle outwards;
//!   limit `articulation.door_angle`.

use asp_core::{Point3, Real, Vector3};
use serde::{Deserialize, Serialize};

use crate::geometry::{Principal, extent_along, horizontal, part_surface, without_part};

/// The estimated joint.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum JointKind {
    /// Slides along `axis` (unit, the opening direction).
    Prismatic { axis: Vector3, travel: Real },
    /// Turns about the vertical line through `origin`; positive angles about `axis` (unit)
    /// open.
    Revolute {
        origin: Point3,
        axis: Vector3,
        /// Horizontal distance from the hinge to the handle.
        radius: Real,
    },
}

/// A joint estimate with the evidence it rests on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JointEstimate {
    pub kind: JointKind,
    /// Outward normal of the front the part sits on.
    pub front_normal: Vector3,
    /// The handle's centroid.
    pub handle: Point3,
    /// Why this type was chosen, for logs and the agent.
    pub reason: String,
}

/// Estimates the joint moving `part` (a handle) of `object`. `surface_radius` bounds
/// the front fitted around the handle; `travel` is `(fraction of the seen depth, cap,
/// fallback when no depth is seen)`.
pub fn estimate_joint(
    part: &[Point3],
    object: &[Point3],
    surface_radius: Real,
    travel: (Real, Real, Real),
) -> Option<JointEstimate> {
    let surface = part_surface(part, object, surface_radius)?;
    let n = horizontal(&surface.normal)?;
    let handle = surface.part_centroid;
    let lateral = Vector3::z().cross(&n);
    let pp = Principal::of(part)?;
    let rest = without_part(object, part, 0.004);
    // the front: object points within 3 cm of the fitted plane through the handle's base
    let plane_point = surface.surface_point.unwrap_or(handle);
    let front: Vec<Point3> = rest
        .iter()
        .filter(|p| (*p - plane_point).dot(&n).abs() < 0.03)
        .copied()
        .collect();
    let front_pts: &[Point3] = if front.len() >= 10 { &front } else { &rest };
    let (lat_lo, lat_hi) = extent_along(front_pts, &lateral).unwrap_or((0.0, 0.0));
    let h_lat = handle.coords.dot(&lateral);
    let width = lat_hi - lat_lo;
    let offset = if width > 1e-3 {
        (h_lat - (lat_lo + lat_hi) / 2.0) / (width / 2.0)
    } else {
        0.0
    };
    let long = pp.major();
    let elongated = pp.roundness() < 0.45;
    let vertical_bar = elongated && long.z.abs() > 0.7;
    let horizontal_bar = elongated && long.dot(&lateral).abs() > 0.7;
    let (revolute, reason) = if vertical_bar {
        (true, "vertical handle bar: a hinged door".to_owned())
    } else if horizontal_bar {
        (false, "horizontal handle bar: a drawer".to_owned())
    } else if offset.abs() > 0.5 {
        (
            true,
            format!(
                "knob {:.0}% of the way to the front's edge: a hinged door",
                offset.abs() * 100.0
            ),
        )
    } else {
        (false, "knob near the front's middle: a drawer".to_owned())
    };
    let kind = if revolute {
        // hinge at the edge opposite the handle, in the front plane
        let hinge_lat = if offset >= 0.0 { lat_lo } else { lat_hi };
        let plane_n = plane_point.coords.dot(&n);
        let origin = Point3::from(lateral * hinge_lat + n * plane_n + Vector3::z() * handle.z);
        let r = handle - origin;
        let r_h = Vector3::new(r.x, r.y, 0.0);
        // opening turns the handle outwards: (axis × r)·n > 0
        let axis = if Vector3::z().cross(&r_h).dot(&n) > 0.0 {
            Vector3::z()
        } else {
            -Vector3::z()
        };
        JointKind::Revolute {
            origin,
            axis,
            radius: r_h.norm(),
        }
    } else {
        let (frac, cap, fallback) = travel;
        // depth of the object behind the front, along -n
        let plane_n = plane_point.coords.dot(&n);
        let depth = rest
            .iter()
            .map(|p| plane_n - p.coords.dot(&n))
            .fold(0.0, Real::max);
        let t = if depth > 0.05 {
            (depth * frac).min(cap)
        } else {
            fallback.min(cap)
        };
        JointKind::Prismatic { axis: n, travel: t }
    };
    Some(JointEstimate {
        kind,
        front_normal: n,
        handle,
        reason,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_relative_eq;

    fn face(c: Point3, u: Vector3, v: Vector3, hu: Real, hv: Real, step: Real) -> Vec<Point3> {
        let mut out = Vec::new();
        let nu = (2.0 * hu / step).round() as i32;
        let nv = (2.0 * hv / step).round() as i32;
        for i in 0..=nu {
            for j in 0..=nv {
                out.push(c + u * (-hu + step * i as Real) + v * (-hv + step * j as Real));
            }
        }
        out
    }

    #[test]
    fn a_drawer_with_a_horizontal_bar_is_prismatic_towards_the_robot() {
        // drawer unit front at x = 0.49 facing -x, 0.3 deep, handle bar along y in front
        let mut obj = face(
            Point3::new(0.49, 2.8, 0.6),
            Vector3::y(),
            Vector3::z(),
            0.16,
            0.08,
            0.01,
        );
        obj.extend(face(
            Point3::new(0.64, 2.8, 0.68),
            Vector3::x(),
            Vector3::y(),
            0.15,
            0.16,
            0.02,
        ));
        let handle: Vec<Point3> = face(
            Point3::new(0.43, 2.8, 0.6),
            Vector3::y(),
            Vector3::z(),
            0.06,
            0.007,
            0.004,
        );
        obj.extend(handle.iter().copied());
        let j = estimate_joint(&handle, &obj, 0.08, (0.8, 0.25, 0.12)).unwrap();
        match j.kind {
            JointKind::Prismatic { axis, travel } => {
                assert_relative_eq!(axis, -Vector3::x(), epsilon = 0.05);
                // 0.3 m deep × 0.8
                assert!((travel - 0.24).abs() < 0.02, "{travel}");
            }
            other => panic!("{other:?} ({})", j.reason),
        }
    }

    #[test]
    fn a_door_with_a_vertical_bar_hinges_at_the_far_edge() {
        // cabinet door in the plane y = 0.46 facing +y, x from 2.8 to 3.4; handle near
        // x = 2.86: the hinge is at x = 3.4 and opening turns about -z
        let mut obj = face(
            Point3::new(3.1, 0.46, 0.45),
            Vector3::x(),
            Vector3::z(),
            0.3,
            0.43,
            0.02,
        );
        let handle: Vec<Point3> = face(
            Point3::new(2.86, 0.52, 0.55),
            Vector3::x(),
            Vector3::z(),
            0.007,
            0.07,
            0.004,
        );
        obj.extend(handle.iter().copied());
        let j = estimate_joint(&handle, &obj, 0.08, (0.8, 0.25, 0.12)).unwrap();
        assert_relative_eq!(j.front_normal, Vector3::y(), epsilon = 0.05);
        match j.kind {
            JointKind::Revolute {
                origin,
                axis,
                radius,
            } => {
                assert!((origin.x - 3.4).abs() < 0.03, "{origin:?}");
                assert!((origin.y - 0.46).abs() < 0.03, "{origin:?}");
                assert_relative_eq!(axis, -Vector3::z(), epsilon = 1e-6);
                assert!((radius - 0.54).abs() < 0.04, "{radius}");
                // a small opening turn moves the handle out (+y)
                let rot = nalgebra::UnitQuaternion::from_axis_angle(
                    &nalgebra::Unit::new_normalize(axis),
                    0.1,
                );
                let moved = origin + rot * (j.handle - origin);
                assert!(moved.y > j.handle.y);
            }
            other => panic!("{other:?}"),
        }
    }
}
