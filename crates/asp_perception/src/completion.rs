//! A closer look that sees only part of an object, completed by what the map had of the
//! rest.
//!
//! A camera brought close to an object often sees part of it: a tall binder's top is
//! above the wrist camera's image, or behind its own gripper; the far side of anything
//! is behind its front. Replacing the map's cloud of the object with such a view's cloud
//! cuts the object there (a grasp planned on a binder whose cloud ends 8 cm below its
//! top puts the palm into it). The view is right about what it shows; about what it
//! cannot show, the map's earlier views stand:
//!
//! 1. The previous cloud's points that the view would show (in its image, in range, not
//!    behind a nearer surface) are its evidence about the same part; their centroid
//!    against the fresh cloud's gives the object's shift since then (the previous
//!    cloud's full centroid would not: the fresh view's part has another centroid).
//! 2. Shifted by it, the previous points the view cannot show are carried over — the
//!    ones connected to the fresh cloud through neighbours within `link_radius` (a
//!    neighbour the old segment had taken in, across a gap, stays out).
//!
//! The fresh view replaces the previous one where it sees; nothing is carried when the
//! view shows too little of the previous cloud to say where the object went.

use asp_core::RgbdFrame;
use asp_core::geometry::{Isometry3, Point3, PointCloud, Real, Transform, Vector3, VoxelKey};

use crate::voxel::{FastMap, FastSet, voxel_key};

/// Fewer previous points in view than this: no shift can be estimated, nothing is
/// carried.
pub const MIN_POINTS_SEEN: usize = 10;

/// How the fresh cloud was completed.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    /// The fresh cloud with the carried points appended.
    pub cloud: PointCloud,
    /// Previous points carried over.
    pub carried: usize,
    /// The object's shift since the previous cloud (zero when nothing could be said).
    pub shift: Vector3,
}

/// `fresh` (an object as `frame` shows it) completed by the points of `previous` (the
/// same object in the map) that `frame` cannot show; both clouds in the frame of
/// `frame.camera_pose`'s parent. `max_depth` and `occlusion_margin` as in
/// [`RgbdFrame::sees`]; a shift over `max_shift` (what the view shows of the old cloud
/// is not what it shows of the object) carries nothing.
pub fn complete_partial_view(
    fresh: &PointCloud,
    previous: &PointCloud,
    frame: &RgbdFrame,
    max_depth: Real,
    occlusion_margin: Real,
    link_radius: Real,
    max_shift: Real,
) -> Completion {
    let unchanged = || Completion {
        cloud: fresh.clone(),
        carried: 0,
        shift: Vector3::zeros(),
    };
    if fresh.frame != previous.frame || link_radius <= 0.0 {
        return unchanged();
    }
    let Some(fresh_centroid) = fresh.centroid() else {
        return unchanged();
    };
    let seen: Vec<&Point3> = previous
        .points()
        .iter()
        .filter(|p| frame.sees(p, max_depth, occlusion_margin))
        .collect();
    if seen.len() < MIN_POINTS_SEEN {
        return unchanged();
    }
    let seen_centroid =
        seen.iter().fold(Vector3::zeros(), |a, p| a + p.coords) / seen.len() as Real;
    let shift = fresh_centroid.coords - seen_centroid;
    if shift.norm() > max_shift {
        return unchanged();
    }
    let unseen: Vec<usize> = (0..previous.len())
        .filter(|&i| {
            let q = previous.points()[i] + shift;
            !frame.sees(&q, max_depth, occlusion_margin)
        })
        .collect();
    let linked = linked_to(
        fresh.points(),
        previous.points(),
        &unseen,
        shift,
        link_radius,
    );
    if linked.is_empty() {
        return Completion {
            shift,
            ..unchanged()
        };
    }
    let frame_id = previous.frame.clone();
    let along = Transform::new(
        frame_id.clone(),
        frame_id,
        Isometry3::translation(shift.x, shift.y, shift.z),
    );
    let Ok(carried) = previous.select(&linked).transformed(&along) else {
        return unchanged();
    };
    let mut cloud = fresh.clone();
    if cloud.extend(&carried).is_err() {
        return unchanged();
    }
    Completion {
        cloud,
        carried: linked.len(),
        shift,
    }
}

/// The indices among `candidates` (into `previous`, shifted by `shift`) reachable from
/// `fresh` in steps of at most about `radius`: voxels of that size, each linked to its 26
/// neighbours.
fn linked_to(
    fresh: &[Point3],
    previous: &[Point3],
    candidates: &[usize],
    shift: Vector3,
    radius: Real,
) -> Vec<usize> {
    let mut waiting: FastMap<VoxelKey, Vec<usize>> = FastMap::default();
    for &i in candidates {
        waiting
            .entry(voxel_key(&(previous[i] + shift), radius))
            .or_default()
            .push(i);
    }
    let mut reached: FastSet<VoxelKey> = fresh.iter().map(|p| voxel_key(p, radius)).collect();
    let mut frontier: Vec<VoxelKey> = reached.iter().copied().collect();
    let mut linked = Vec::new();
    while let Some(k) = frontier.pop() {
        for dx in -1..=1 {
            for dy in -1..=1 {
                for dz in -1..=1 {
                    let n = [k[0] + dx, k[1] + dy, k[2] + dz];
                    if let Some(found) = waiting.remove(&n) {
                        linked.extend(found);
                        if reached.insert(n) {
                            frontier.push(n);
                        }
                    }
                }
            }
        }
    }
    linked.sort_unstable();
    linked
}

#[cfg(test)]
mod tests {
    use super::*;
    use asp_core::camera::CameraIntrinsics;
    use asp_core::image::{DepthImage, RgbImage};

    /// A camera at the origin looking along +z (optical frame = map), 40×40 px with a
    /// 0.5 rad half-angle, its depth image a wall at `wall` m with a box of `near` m in
    /// the pixels `near_px` (columns and rows).
    fn camera(wall: f32, near: Option<(f32, [u32; 4])>) -> RgbdFrame {
        let intrinsics = CameraIntrinsics {
            width: 40,
            height: 40,
            fx: 20.0 / 0.5_f32.tan(),
            fy: 20.0 / 0.5_f32.tan(),
            cx: 20.0,
            cy: 20.0,
        };
        let depth: Vec<f32> = (0..40u32)
            .flat_map(|v| (0..40u32).map(move |u| (u, v)))
            .map(|(u, v)| match near {
                Some((d, [u0, u1, v0, v1])) if (u0..u1).contains(&u) && (v0..v1).contains(&v) => d,
                _ => wall,
            })
            .collect();
        let depth = DepthImage::from_vec(40, 40, depth).unwrap();
        RgbdFrame {
            rgb: RgbImage::filled(40, 40, [0, 0, 0]),
            depth,
            intrinsics,
            camera_pose: Transform::new("map", "camera", Isometry3::identity()),
            stamp: 0.0,
            ground_truth: None,
        }
    }

    /// A vertical sheet of points at depth `z`, x in [x0, x1], y in [y0, y1], 1 cm apart.
    fn sheet(x0: f32, x1: f32, y0: f32, y1: f32, z: f32) -> Vec<Point3> {
        let mut out = Vec::new();
        let n = |a: f32, b: f32| ((b - a) / 0.01).round() as i32;
        for i in 0..=n(x0, x1) {
            for j in 0..=n(y0, y1) {
                out.push(Point3::new(x0 + i as f32 * 0.01, y0 + j as f32 * 0.01, z));
            }
        }
        out
    }

    fn cloud(points: Vec<Point3>) -> PointCloud {
        PointCloud::new("map", points)
    }

    /// The image's edge at depth 1 m: tan(0.5) ≈ 0.546 m off the axis.
    const EDGE: f32 = 0.546;

    #[test]
    fn the_part_above_the_image_is_carried_over_shifted_as_the_seen_part_moved() {
        // the map's binder reaches 0.2 m past the image's lower edge (y grows downwards);
        // the close view sees the part inside the image, 2 cm to the right of before
        let previous = cloud(sheet(-0.1, 0.1, 0.3, EDGE + 0.2, 1.0));
        let fresh = cloud(sheet(-0.08, 0.12, 0.3, EDGE - 0.01, 1.0));
        let frame = camera(3.0, None);
        let c = complete_partial_view(&fresh, &previous, &frame, 3.0, 0.05, 0.03, 0.25);
        assert!((c.shift.x - 0.02).abs() < 0.005, "shift {:?}", c.shift);
        assert!(
            c.shift.y.abs() < 0.005 && c.shift.z.abs() < 1e-4,
            "{:?}",
            c.shift
        );
        assert!(c.carried > 0);
        let (lo, hi) = c.cloud.aabb().unwrap();
        assert!(
            hi.y > EDGE + 0.19,
            "the part below the image came back: {hi:?}"
        );
        assert!(
            lo.x > -0.085 && hi.x < 0.125,
            "carried where the object went: {lo:?} {hi:?}"
        );
        // nothing the view shows is carried: the fresh points stay, the rest lie outside
        let carried = &c.cloud.points()[fresh.len()..];
        assert_eq!(c.carried, carried.len());
        assert!(carried.iter().all(|p| !frame.sees(p, 3.0, 0.05)));
    }

    #[test]
    fn what_the_view_shows_empty_is_not_carried() {
        // the map had the object 0.3 m wider on the left, in plain view of this camera:
        // the view's word that nothing is there wins
        let previous = cloud(sheet(-0.4, 0.1, -0.1, 0.1, 1.0));
        let fresh = cloud(sheet(-0.1, 0.1, -0.1, 0.1, 1.0));
        let c = complete_partial_view(&fresh, &previous, &camera(3.0, None), 3.0, 0.05, 0.03, 0.25);
        assert_eq!(c.carried, 0);
        assert_eq!(c.cloud.len(), fresh.len());
    }

    #[test]
    fn a_part_behind_a_nearer_surface_is_carried_and_a_detached_one_is_not() {
        // the gripper (0.3 m from the camera) hides the object's upper rows; a second
        // patch of the old segment, 0.2 m beside the object and also hidden, is a
        // neighbour it had taken in
        let previous_points: Vec<Point3> = sheet(-0.1, 0.1, -0.2, 0.1, 1.0)
            .into_iter()
            .chain(sheet(0.3, 0.35, -0.2, -0.15, 1.0))
            .collect();
        let previous = cloud(previous_points);
        let fresh = cloud(sheet(-0.1, 0.1, -0.08, 0.1, 1.0));
        // rows above y = −0.06 m at 1 m, all columns: the near surface
        let rows = (20.0 + (-0.06 / 1.0) * (20.0 / 0.5_f32.tan())) as u32;
        let frame = camera(3.0, Some((0.3, [0, 40, 0, rows])));
        let c = complete_partial_view(&fresh, &previous, &frame, 3.0, 0.05, 0.03, 0.25);
        let (lo, hi) = c.cloud.aabb().unwrap();
        assert!(lo.y < -0.19, "the hidden upper part came back: {lo:?}");
        assert!(hi.x < 0.11, "the detached patch stayed out: {hi:?}");
    }

    #[test]
    fn too_little_of_the_old_cloud_in_view_carries_nothing() {
        // the whole previous cloud lies outside the image: no shift can be told
        let previous = cloud(sheet(EDGE + 0.05, EDGE + 0.2, -0.1, 0.1, 1.0));
        let fresh = cloud(sheet(0.3, EDGE - 0.01, -0.1, 0.1, 1.0));
        let c = complete_partial_view(&fresh, &previous, &camera(3.0, None), 3.0, 0.05, 0.03, 0.25);
        assert_eq!(c.carried, 0);
        assert_eq!(c.shift, Vector3::zeros());
        assert_eq!(c.cloud, fresh);
    }
}
