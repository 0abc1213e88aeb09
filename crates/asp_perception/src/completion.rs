//! A closer look that sees only part of an object, completed by what the map had of its
//! top.
//!
//! A camera brought close to an object often sees it only up to some height: a tall
//! binder's top is above the wrist camera's image, or behind its own gripper. Replacing
//! the map's cloud of the object with such a view's cloud cuts the object there (a grasp
//! planned on a binder whose cloud ends 8 cm below its top puts the palm into it). The
//! view is right about what it shows; about what it cannot show above that, the map's
//! earlier views stand:
//!
//! 1. The previous cloud's points that the view would show (in its image, in range, not
//!    behind a nearer surface) are its evidence about the same part; their centroid
//!    against the fresh cloud's gives the object's shift since then (the previous
//!    cloud's full centroid would not: the fresh view's part has another centroid).
//! 2. Shifted by it, the previous points the view cannot show and that lie above the
//!    fresh cloud's top are carried over — the ones connected to the fresh cloud through
//!    neighbours within `link_radius` (a neighbour the old segment had taken in, across a
//!    gap, stays out).
//!
//! Only height is completed: the unseen far reaches of a desk's top are not known to be
//! free now (a place skill must choose its spot among what it sees), and a grasp needs
//! the object's top. Nothing is carried when the view shows too little of the previous
//! cloud to say where the object went.

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
/// same object in the map) that `frame` cannot show and that lie more than half
/// `link_radius` above the fresh cloud's highest point; both clouds in the frame of
/// `frame.camera_pose`'s parent, its z up (the map's). `max_depth` and
/// `occlusion_margin` as in [`RgbdFrame::sees`]; a shift over `max_shift` (what the view
/// shows of the old cloud is not what it shows of the object) carries nothing.
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
    let Some(seen_centroid) = seen_centroid(previous, frame, max_depth, occlusion_margin) else {
        return unchanged();
    };
    let shift = fresh_centroid - seen_centroid;
    if shift.norm() > max_shift {
        return unchanged();
    }
    let top = fresh
        .points()
        .iter()
        .map(|p| p.z)
        .fold(Real::MIN, Real::max);
    let unseen: Vec<usize> = (0..previous.len())
        .filter(|&i| {
            let q = previous.points()[i] + shift;
            q.z > top + link_radius / 2.0 && !frame.sees(&q, max_depth, occlusion_margin)
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

/// The centroid of the points of `previous` that `frame` would show (in its image, within
/// `max_depth`, not behind a surface the depth reads more than `occlusion_margin` nearer):
/// where a view's cloud of the same object should lie when it sees only part of it (a
/// 1.5 m stand from 0.75 m, the front of a box). `None` when fewer than
/// [`MIN_POINTS_SEEN`] are in view.
pub fn seen_centroid(
    previous: &PointCloud,
    frame: &RgbdFrame,
    max_depth: Real,
    occlusion_margin: Real,
) -> Option<Point3> {
    let (sum, n) = previous
        .points()
        .iter()
        .filter(|p| frame.sees(p, max_depth, occlusion_margin))
        .fold((Vector3::zeros(), 0usize), |(a, n), p| {
            (a + p.coords, n + 1)
        });
    (n >= MIN_POINTS_SEEN).then(|| Point3::from(sum / n as Real))
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

    /// A camera at the map's origin looking along +x (image right is −y, image down is
    /// −z), 40×40 px with a 0.5 rad half-angle; its depth a wall at `wall` m, with a
    /// nearer surface at `near.0` m over the image rows `near.1`.
    fn camera(wall: f32, near: Option<(f32, std::ops::Range<u32>)>) -> RgbdFrame {
        let f = 20.0 / 0.5_f32.tan();
        let intrinsics = CameraIntrinsics {
            width: 40,
            height: 40,
            fx: f,
            fy: f,
            cx: 20.0,
            cy: 20.0,
        };
        let depth: Vec<f32> = (0..40u32)
            .flat_map(|v| (0..40u32).map(move |u| (u, v)))
            .map(|(_, v)| match &near {
                Some((d, rows)) if rows.contains(&v) => *d,
                _ => wall,
            })
            .collect();
        let optical = Isometry3::face_towards(
            &Point3::origin(),
            &Point3::new(1.0, 0.0, 0.0),
            &Vector3::new(0.0, 0.0, -1.0),
        );
        RgbdFrame {
            rgb: RgbImage::filled(40, 40, [0, 0, 0]),
            depth: DepthImage::from_vec(40, 40, depth).unwrap(),
            intrinsics,
            camera_pose: Transform::new("map", "camera", optical),
            stamp: 0.0,
            ground_truth: None,
        }
    }

    /// An upright sheet of points facing the camera, 1 m ahead, y in [y0, y1] and
    /// height z in [z0, z1], 1 cm apart.
    fn sheet(y0: f32, y1: f32, z0: f32, z1: f32) -> Vec<Point3> {
        let n = |a: f32, b: f32| ((b - a) / 0.01).round() as i32;
        let mut out = Vec::new();
        for i in 0..=n(y0, y1) {
            for j in 0..=n(z0, z1) {
                out.push(Point3::new(1.0, y0 + i as f32 * 0.01, z0 + j as f32 * 0.01));
            }
        }
        out
    }

    fn cloud(points: Vec<Point3>) -> PointCloud {
        PointCloud::new("map", points)
    }

    fn complete(fresh: &PointCloud, previous: &PointCloud, frame: &RgbdFrame) -> Completion {
        complete_partial_view(fresh, previous, frame, 3.0, 0.05, 0.03, 0.25)
    }

    /// The image's upper edge 1 m ahead: tan(0.5) ≈ 0.546 m up.
    const EDGE: f32 = 0.546;

    #[test]
    fn the_top_above_the_image_is_carried_over_shifted_as_the_seen_part_moved() {
        // the map's binder reaches 0.2 m above the image; the close view sees the part
        // inside it, 2 cm to the side of where the map had it
        let previous = cloud(sheet(-0.1, 0.1, 0.3, EDGE + 0.2));
        let fresh = cloud(sheet(-0.08, 0.12, 0.3, EDGE - 0.01));
        let frame = camera(3.0, None);
        let c = complete(&fresh, &previous, &frame);
        assert!((c.shift.y - 0.02).abs() < 0.005, "shift {:?}", c.shift);
        assert!(
            c.shift.x.abs() < 1e-4 && c.shift.z.abs() < 0.005,
            "{:?}",
            c.shift
        );
        assert!(c.carried > 0);
        let (lo, hi) = c.cloud.aabb().unwrap();
        assert!(hi.z > EDGE + 0.19, "the top came back: {hi:?}");
        assert!(
            lo.y > -0.085 && hi.y < 0.125,
            "carried where the object went: {lo:?} {hi:?}"
        );
        // the fresh points stay first; the carried ones are all out of the view
        let carried = &c.cloud.points()[fresh.len()..];
        assert_eq!(c.carried, carried.len());
        assert!(carried.iter().all(|p| !frame.sees(p, 3.0, 0.05)));
    }

    #[test]
    fn what_the_view_shows_empty_is_not_carried() {
        // the map had the object 0.3 m wider, in plain view of this camera: the view's
        // word that nothing is there wins
        let previous = cloud(sheet(-0.4, 0.1, -0.1, 0.1));
        let fresh = cloud(sheet(-0.1, 0.1, -0.1, 0.1));
        let c = complete(&fresh, &previous, &camera(3.0, None));
        assert_eq!(c.carried, 0);
        assert_eq!(c.cloud.len(), fresh.len());
    }

    #[test]
    fn a_top_behind_the_gripper_is_carried_and_a_detached_piece_is_not() {
        // the gripper, 0.3 m from the lens, hides the image's upper rows (above about
        // 0.08 m up at 1 m); a piece of a neighbour the old segment had taken in, 0.2 m
        // beside the object and as high, is hidden too
        let previous_points: Vec<Point3> = sheet(-0.1, 0.1, -0.1, 0.2)
            .into_iter()
            .chain(sheet(-0.35, -0.3, 0.15, 0.2))
            .collect();
        let previous = cloud(previous_points);
        let fresh = cloud(sheet(-0.1, 0.1, -0.1, 0.08));
        let frame = camera(3.0, Some((0.3, 0..17)));
        let c = complete(&fresh, &previous, &frame);
        let (lo, hi) = c.cloud.aabb().unwrap();
        assert!(hi.z > 0.19, "the hidden top came back: {hi:?}");
        assert!(lo.y > -0.11, "the detached piece stayed out: {lo:?}");
    }

    #[test]
    fn a_surface_s_unseen_near_part_is_not_carried() {
        // a desk top 0.3 m below the lens, from 0.4 to 1.5 m ahead: the image's lower
        // edge cuts it 0.55 m ahead; the near strip it does not show is not known to be
        // free now, and lies no higher than what the view shows
        let top: Vec<Point3> = (0..=110)
            .flat_map(|i| (0..=20).map(move |j| (i, j)))
            .map(|(i, j)| Point3::new(0.4 + i as f32 * 0.01, -0.1 + j as f32 * 0.01, -0.3))
            .collect();
        let frame = camera(3.0, None);
        let seen: Vec<Point3> = top
            .iter()
            .filter(|p| frame.sees(p, 3.0, 0.05))
            .copied()
            .collect();
        assert!(seen.len() < top.len(), "the image's edge cuts the desk");
        let c = complete(&cloud(seen.clone()), &cloud(top), &frame);
        assert_eq!(c.carried, 0);
        assert_eq!(c.cloud.len(), seen.len());
    }

    #[test]
    fn the_seen_centroid_is_of_the_part_in_view() {
        // a stand 1.5 m wide, 1 m ahead, its left end 0.45 m past the image's edge
        // (tan 0.5 ≈ 0.546 m): a view of it shows 1.05 m of it, centred 0.23 m from the
        // whole's centre
        let stand = cloud(sheet(-0.5, 1.0, -0.1, 0.1));
        let frame = camera(3.0, None);
        let whole = stand.centroid().unwrap();
        let seen = seen_centroid(&stand, &frame, 3.0, 0.05).unwrap();
        let part = cloud(sheet(-0.5, EDGE, -0.1, 0.1)).centroid().unwrap();
        assert!((seen - part).norm() < 0.01, "{seen:?} against {part:?}");
        assert!((seen - whole).norm() > 0.2, "{seen:?} against {whole:?}");
        // out of range, or wholly above the image: nothing to tell
        assert_eq!(seen_centroid(&stand, &frame, 0.5, 0.05), None);
        let above = cloud(sheet(-0.1, 0.1, EDGE + 0.05, EDGE + 0.2));
        assert_eq!(seen_centroid(&above, &frame, 3.0, 0.05), None);
    }

    #[test]
    fn too_little_of_the_old_cloud_in_view_carries_nothing() {
        // the whole previous cloud lies above the image: no shift can be told
        let previous = cloud(sheet(-0.1, 0.1, EDGE + 0.05, EDGE + 0.2));
        let fresh = cloud(sheet(-0.1, 0.1, 0.3, EDGE - 0.01));
        let c = complete(&fresh, &previous, &camera(3.0, None));
        assert_eq!(c.carried, 0);
        assert_eq!(c.shift, Vector3::zeros());
        assert_eq!(c.cloud, fresh);
    }
}
