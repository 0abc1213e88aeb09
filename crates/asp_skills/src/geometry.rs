//! Point-cloud geometry the skills share: principal axes, the surface a part sits on and
//! its outward normal, tool orientations, and part/object separation.

use std::collections::HashSet;

use asp_core::geometry::{UnitQuaternion, VoxelKey, voxel_keys};
use asp_core::{Isometry3, Point3, Real, Vector3};
use nalgebra::{Matrix3, Rotation3, SymmetricEigen, Translation3};

/// Centroid, eigenvalues (largest first) and matching unit eigenvectors of `points`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Principal {
    pub centroid: Point3,
    pub values: [Real; 3],
    pub axes: [Vector3; 3],
}

impl Principal {
    /// `None` for fewer than one point.
    pub fn of(points: &[Point3]) -> Option<Self> {
        if points.is_empty() {
            return None;
        }
        let n = points.len() as Real;
        let c = points.iter().fold(Vector3::zeros(), |a, p| a + p.coords) / n;
        let mut cov = Matrix3::zeros();
        for p in points {
            let d = p.coords - c;
            cov += d * d.transpose();
        }
        let eig = SymmetricEigen::new(cov / n);
        let mut order = [0usize, 1, 2];
        order.sort_by(|&a, &b| {
            eig.eigenvalues[b]
                .total_cmp(&eig.eigenvalues[a])
                .then(a.cmp(&b))
        });
        let axis = |i: usize| canonical_sign(eig.eigenvectors.column(order[i]).into_owned());
        Some(Self {
            centroid: Point3::from(c),
            values: order.map(|i| eig.eigenvalues[i].max(0.0)),
            axes: [axis(0), axis(1), axis(2)],
        })
    }

    /// The smallest-variance axis (a plane's normal).
    pub fn normal(&self) -> Vector3 {
        self.axes[2]
    }

    /// The largest-variance axis (a bar's direction).
    pub fn major(&self) -> Vector3 {
        self.axes[0]
    }

    /// How flat the points are: smallest over middle eigenvalue (0 for a plane).
    pub fn flatness(&self) -> Real {
        if self.values[1] <= 1e-12 {
            1.0
        } else {
            self.values[2] / self.values[1]
        }
    }

    /// How elongated: middle over largest eigenvalue (0 for a line).
    pub fn roundness(&self) -> Real {
        if self.values[0] <= 1e-12 {
            1.0
        } else {
            self.values[1] / self.values[0]
        }
    }
}

/// Flips `v` so that its largest component is positive (a deterministic sign for
/// eigenvectors, whose sign is arbitrary).
fn canonical_sign(v: Vector3) -> Vector3 {
    let v = v.try_normalize(1e-12).unwrap_or_else(Vector3::z);
    let i = v.iamax();
    if v[i] < 0.0 { -v } else { v }
}

/// The horizontal part of `v`, normalised; `None` when `v` is (nearly) vertical.
pub fn horizontal(v: &Vector3) -> Option<Vector3> {
    Vector3::new(v.x, v.y, 0.0).try_normalize(1e-3)
}

/// Extent of `points` along `dir`: (min, max) of `p · dir`.
pub fn extent_along(points: &[Point3], dir: &Vector3) -> Option<(Real, Real)> {
    points
        .iter()
        .map(|p| p.coords.dot(dir))
        .fold(None, |acc, v| match acc {
            None => Some((v, v)),
            Some((lo, hi)) => Some((lo.min(v), hi.max(v))),
        })
}

/// Points of `object` that are not within about `voxel` of a point of `part` (the rest
/// of the object around a part).
pub fn without_part(object: &[Point3], part: &[Point3], voxel: Real) -> Vec<Point3> {
    if part.is_empty() {
        return object.to_vec();
    }
    let keys: HashSet<VoxelKey> = voxel_keys(part, voxel);
    object
        .iter()
        .filter(|p| {
            let k = [
                (p.x / voxel).floor() as i32,
                (p.y / voxel).floor() as i32,
                (p.z / voxel).floor() as i32,
            ];
            !(-1..=1).any(|dx| {
                (-1..=1)
                    .any(|dy| (-1..=1).any(|dz| keys.contains(&[k[0] + dx, k[1] + dy, k[2] + dz])))
            })
        })
        .copied()
        .collect()
}

/// The surface a part sits on and its outward normal.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PartSurface {
    /// Unit normal pointing out of the object, through the part.
    pub normal: Vector3,
    /// A point of the surface near the part (the support points' centroid), when the
    /// surface was seen.
    pub surface_point: Option<Point3>,
    /// The part's centroid.
    pub part_centroid: Point3,
    /// How the normal was found.
    pub source: NormalSource,
}

/// A part this far from the centroid of a curved surface around it stands out of it.
const MIN_STAND_OUT: Real = 0.005;

/// Where a part normal came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NormalSource {
    /// A plane fitted to the object's points around the part (a door front, a lid).
    Surface,
    /// The direction the part stands out of a curved surface around it (a button on a
    /// dome): from the centroid of the surrounding points to the part's.
    StandOut,
    /// The mean of the part's own outward point normals (a plug, a knob on its own).
    Part,
}

/// The part's outward normal (SPEC §1.4: "from the point-cloud normal", oriented away
/// from the object centroid). Preferred: the plane of the object's points within
/// `radius` of the part (the surface the part is mounted on), oriented so the part
/// stands out of it, or when flush, away from the object centroid. Without enough
/// surrounding points: the mean of the part's point normals (local planes of
/// `k_neighbours` points), each oriented away from the object centroid. When the points
/// around are many but not flat (a dome), the direction the part stands out of them.
pub fn part_surface(part: &[Point3], object: &[Point3], radius: Real) -> Option<PartSurface> {
    let pp = Principal::of(part)?;
    let oc = Principal::of(object).map_or(pp.centroid, |p| p.centroid);
    let rest = without_part(object, part, 0.004);
    let around: Vec<Point3> = rest
        .iter()
        .filter(|p| (*p - pp.centroid).norm() <= radius)
        .copied()
        .collect();
    if around.len() >= 12
        && let Some(s) = Principal::of(&around)
        && s.flatness() < 0.35
    {
        let mut n = s.normal();
        let stand_out = (pp.centroid - s.centroid).dot(&n);
        if stand_out.abs() > 0.003 {
            if stand_out < 0.0 {
                n = -n;
            }
        } else if (s.centroid - oc).dot(&n) < 0.0 {
            n = -n;
        }
        return Some(PartSurface {
            normal: n,
            surface_point: Some(s.centroid),
            part_centroid: pp.centroid,
            source: NormalSource::Surface,
        });
    }
    // a curved surface around the part: the part stands out of it (a camera sees one
    // side of a small part, so its own normals lean towards the camera)
    if around.len() >= 12
        && let Some(s) = Principal::of(&around)
        && let Some(n) = (pp.centroid - s.centroid)
            .try_normalize(1e-6)
            .filter(|_| (pp.centroid - s.centroid).norm() > MIN_STAND_OUT)
    {
        return Some(PartSurface {
            normal: n,
            surface_point: Some(s.centroid),
            part_centroid: pp.centroid,
            source: NormalSource::StandOut,
        });
    }
    // the part on its own: average outward local normals
    let centre = if (pp.centroid - oc).norm() > 0.01 {
        oc
    } else {
        pp.centroid
    };
    let k = 8.min(part.len());
    let mut sum = Vector3::zeros();
    for p in part {
        let mut near: Vec<(Real, Point3)> =
            part.iter().map(|q| ((q - p).norm_squared(), *q)).collect();
        near.sort_by(|a, b| a.0.total_cmp(&b.0));
        let nb: Vec<Point3> = near.iter().take(k).map(|x| x.1).collect();
        let Some(local) = Principal::of(&nb) else {
            continue;
        };
        let mut n = local.normal();
        if (p - centre).dot(&n) < 0.0 {
            n = -n;
        }
        sum += n;
    }
    let normal = sum
        .try_normalize(1e-6)
        .or_else(|| (pp.centroid - oc).try_normalize(1e-6))
        .unwrap_or_else(Vector3::z);
    Some(PartSurface {
        normal,
        surface_point: None,
        part_centroid: pp.centroid,
        source: NormalSource::Part,
    })
}

/// A tool pose at `p` whose +z (out of the gripper) is `z_axis` and whose closing axis
/// (+y) is as close to `y_hint` as the perpendicularity allows.
pub fn tool_pose(p: Point3, z_axis: Vector3, y_hint: Vector3) -> Isometry3 {
    let z = z_axis.try_normalize(1e-9).unwrap_or_else(|| -Vector3::z());
    let mut y = y_hint - z * z.dot(&y_hint);
    if y.norm() < 1e-6 {
        let alt = if z.x.abs() < 0.9 {
            Vector3::x()
        } else {
            Vector3::y()
        };
        y = alt - z * z.dot(&alt);
    }
    let y = y.normalize();
    let x = y.cross(&z);
    let rot = Rotation3::from_matrix_unchecked(Matrix3::from_columns(&[x, y, z]));
    Isometry3::from_parts(
        Translation3::from(p.coords),
        UnitQuaternion::from_rotation_matrix(&rot),
    )
}

/// A top-down tool pose at `p` whose fingers close along the horizontal direction at
/// `yaw` (radians from the map's +x).
pub fn top_down(p: Point3, yaw: Real) -> Isometry3 {
    tool_pose(p, -Vector3::z(), Vector3::new(yaw.cos(), yaw.sin(), 0.0))
}

/// The tool's axes in the map: (x, y, z).
pub fn tool_axes(pose: &Isometry3) -> (Vector3, Vector3, Vector3) {
    (
        pose.rotation * Vector3::x(),
        pose.rotation * Vector3::y(),
        pose.rotation * Vector3::z(),
    )
}

/// `pose` moved by `d` (map frame), orientation kept.
pub fn shifted(pose: &Isometry3, d: Vector3) -> Isometry3 {
    Isometry3::from_parts(
        Translation3::from(pose.translation.vector + d),
        pose.rotation,
    )
}

/// The position of a pose.
pub fn position(pose: &Isometry3) -> Point3 {
    Point3::from(pose.translation.vector)
}

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_relative_eq;

    fn grid(center: Point3, u: Vector3, v: Vector3, half: Real, n: usize) -> Vec<Point3> {
        let mut out = Vec::new();
        for i in 0..n {
            for j in 0..n {
                let a = -half + 2.0 * half * i as Real / (n - 1) as Real;
                let b = -half + 2.0 * half * j as Real / (n - 1) as Real;
                out.push(center + u * a + v * b);
            }
        }
        out
    }

    #[test]
    fn principal_axes_of_a_bar() {
        let pts: Vec<Point3> = (0..50)
            .map(|i| Point3::new(0.0, 0.0, i as Real * 0.002))
            .chain((0..50).map(|i| Point3::new(0.001, 0.0, i as Real * 0.002)))
            .collect();
        let p = Principal::of(&pts).unwrap();
        assert_relative_eq!(p.major().z.abs(), 1.0, epsilon = 1e-3);
        assert!(p.roundness() < 0.01);
        assert!(Principal::of(&[]).is_none());
    }

    #[test]
    fn handle_normal_comes_from_the_door_it_sits_on() {
        // a door front in the plane y = 0.45 (normal +y), a vertical handle bar 5 cm in
        // front of it, off to the left: the normal is +y, not the centroid direction
        let mut door = grid(
            Point3::new(3.1, 0.45, 0.45),
            Vector3::x(),
            Vector3::z(),
            0.3,
            31,
        );
        let handle: Vec<Point3> = (0..15)
            .map(|i| Point3::new(2.86, 0.51, 0.48 + i as Real * 0.01))
            .collect();
        door.extend(handle.iter().copied());
        // the cabinet's body behind the door
        door.extend(grid(
            Point3::new(3.1, 0.25, 0.9),
            Vector3::x(),
            Vector3::y(),
            0.2,
            9,
        ));
        let s = part_surface(&handle, &door, 0.08).unwrap();
        assert_eq!(s.source, NormalSource::Surface);
        assert_relative_eq!(s.normal, Vector3::y(), epsilon = 0.05);
    }

    #[test]
    fn a_free_part_points_away_from_the_object_centre() {
        // a small cube's visible faces (front -x and top): the mean normal leans to -x, +z
        let mut part = grid(
            Point3::new(0.6, 0.0, 0.6),
            Vector3::y(),
            Vector3::z(),
            0.02,
            7,
        );
        part.extend(grid(
            Point3::new(0.62, 0.0, 0.62),
            Vector3::x(),
            Vector3::y(),
            0.02,
            7,
        ));
        let object = part.clone();
        let s = part_surface(&part, &object, 0.08).unwrap();
        assert_eq!(s.source, NormalSource::Part);
        let h = horizontal(&s.normal).unwrap();
        assert!(h.x < -0.9, "{h:?}");
        assert!(s.normal.z > 0.2, "{:?}", s.normal);
    }

    #[test]
    fn tool_poses_follow_the_convention() {
        let t = top_down(Point3::new(0.5, 0.0, 0.6), 0.0);
        let (_, y, z) = tool_axes(&t);
        assert_relative_eq!(z, -Vector3::z(), epsilon = 1e-6);
        assert_relative_eq!(y, Vector3::x(), epsilon = 1e-6);
        let s = tool_pose(Point3::origin(), Vector3::x(), Vector3::z());
        let (x, y, z) = tool_axes(&s);
        assert_relative_eq!(z, Vector3::x(), epsilon = 1e-6);
        assert_relative_eq!(y, Vector3::z(), epsilon = 1e-6);
        assert_relative_eq!(x, y.cross(&z), epsilon = 1e-6);
        // a hint along z falls back to a perpendicular
        let d = tool_pose(Point3::origin(), Vector3::z(), Vector3::z());
        let (_, y, _) = tool_axes(&d);
        assert!(y.z.abs() < 1e-6);
    }

    #[test]
    fn part_is_removed_from_the_object() {
        let object = vec![
            Point3::new(0.0, 0.0, 0.0),
            Point3::new(0.1, 0.0, 0.0),
            Point3::new(0.2, 0.0, 0.0),
        ];
        let part = vec![Point3::new(0.101, 0.0, 0.0)];
        let rest = without_part(&object, &part, 0.004);
        assert_eq!(rest.len(), 2);
        assert_eq!(extent_along(&object, &Vector3::x()), Some((0.0, 0.2)));
    }
}
