//! Cheap clean-up of back-projected segment clouds: a depth-edge filter on the mask
//! (flying pixels where the depth jumps) and a largest-cluster filter on the points (a
//! grid-accelerated DBSCAN with min_points 1, keeping the biggest component), and
//! [`masked_cloud`], which fuses the depth-edge filter, back-projection and voxel
//! downsampling into one pass over the pixels.

use asp_core::geometry::{Point3, PointCloud, Real, Transform, VoxelKey};
use asp_core::image::{DepthImage, Mask, RgbImage};
use asp_core::{CameraIntrinsics, CoreError};

use crate::voxel::{FastMap, VoxelAccumulator, floor_i32, voxel_key};

#[inline]
fn valid(d: f32) -> bool {
    d.is_finite() && d > 0.0
}

/// [`valid`] as two comparisons (NaN fails both), without short-circuit branches.
#[inline]
fn valid_fast(d: f32) -> bool {
    (d > 0.0) & (d < f32::INFINITY)
}

/// Whether pixel `i = (x, y)` with valid depth `d` differs from a 4-neighbour's valid
/// depth by more than `ratio × d` (`ratio > 0`). A neighbour outside the image reads as
/// 0, which is not a valid depth and so never differs. Branch-free.
#[inline]
fn depth_jump(depth: &[f32], w: usize, h: usize, x: usize, y: usize, d: f32, ratio: f32) -> bool {
    let limit = ratio * d;
    let i = y * w + x;
    let differs = |n: f32| valid(n) & ((n - d).abs() > limit);
    let left = if x > 0 { depth[i - 1] } else { 0.0 };
    let right = if x + 1 < w { depth[i + 1] } else { 0.0 };
    let up = if y > 0 { depth[i - w] } else { 0.0 };
    let down = if y + 1 < h { depth[i + w] } else { 0.0 };
    differs(left) | differs(right) | differs(up) | differs(down)
}

/// Clears mask pixels whose depth differs from a 4-neighbour's valid depth by more than
/// `ratio × depth`, and pixels without a valid reading. `ratio <= 0` only drops invalid
/// readings.
pub fn depth_edge_filter(mask: &Mask, depth: &DepthImage, ratio: f32) -> Mask {
    let (w, h) = (depth.width(), depth.height());
    let mut out = mask.clone();
    for (x, y) in mask.set_pixels().collect::<Vec<_>>() {
        let d = depth.get(x, y).copied().unwrap_or(0.0);
        if !valid(d) {
            out.set(x, y, false);
            continue;
        }
        if ratio <= 0.0 || x >= w || y >= h {
            continue;
        }
        if depth_jump(
            depth.pixels(),
            w as usize,
            h as usize,
            x as usize,
            y as usize,
            d,
            ratio,
        ) {
            out.set(x, y, false);
        }
    }
    out
}

/// The registered images of one segment's crop and where they were taken.
#[derive(Debug, Clone, Copy)]
pub struct MaskedView<'a> {
    pub rgb: &'a RgbImage,
    pub depth: &'a DepthImage,
    pub mask: &'a Mask,
    pub intrinsics: &'a CameraIntrinsics,
    /// `map → camera optical frame`.
    pub camera_pose: &'a Transform,
}

/// The voxel-downsampled cloud of the masked depth, after the depth-edge filter: equal to
/// `depth_edge_filter`, then `RgbdFrame::back_project` within `[min_depth, max_depth]`,
/// then `voxel_downsample(voxel_size)`, point for point, but in one pass over the pixels
/// and without materialising the filtered mask or the full-resolution cloud.
pub fn masked_cloud(
    view: &MaskedView<'_>,
    edge_ratio: f32,
    min_depth: Real,
    max_depth: Real,
    voxel_size: Real,
) -> Result<PointCloud, CoreError> {
    let (w, h) = (view.depth.width(), view.depth.height());
    for (what, size) in [
        ("rgb", (view.rgb.width(), view.rgb.height())),
        ("mask", (view.mask.width(), view.mask.height())),
        (
            "intrinsics",
            (view.intrinsics.width, view.intrinsics.height),
        ),
    ] {
        if size != (w, h) {
            return Err(CoreError::InvalidArgument(format!(
                "{what} is {}×{} but the depth image is {w}×{h}",
                size.0, size.1
            )));
        }
    }
    if !(voxel_size.is_finite() && voxel_size > 0.0) {
        return Err(CoreError::InvalidArgument(format!(
            "voxel size must be a positive number of metres, got {voxel_size}"
        )));
    }
    let (w, h) = (w as usize, h as usize);
    let (depth, rgb, mask) = (
        view.depth.pixels(),
        view.rgb.pixels(),
        view.mask.image().pixels(),
    );
    let to_map = PixelToMap::new(view.intrinsics, view.camera_pose);
    let mut acc = VoxelAccumulator::with_capacity(mask.iter().filter(|&&m| m).count() / 8);
    // per row: the pixels that pass (column, depth), then their map points and voxel
    // keys in a branch-free loop the compiler vectorises, then the accumulation
    let mut cols: Vec<u32> = Vec::with_capacity(w);
    let mut depths: Vec<f32> = Vec::with_capacity(w);
    let mut points: Vec<[f32; 3]> = Vec::with_capacity(w);
    let mut keys: Vec<VoxelKey> = Vec::with_capacity(w);
    // rows above the first and below the last read as invalid depth (never an edge)
    let invalid = vec![0.0f32; w];
    for y in 0..h {
        let row = y * w;
        let here = &depth[row..row + w];
        let up = if y > 0 {
            &depth[row - w..row]
        } else {
            &invalid
        };
        let down = if y + 1 < h {
            &depth[row + w..row + 2 * w]
        } else {
            &invalid
        };
        cols.clear();
        depths.clear();
        for (x, &m) in mask[row..row + w].iter().enumerate() {
            if !m {
                continue;
            }
            let d = here[x];
            if !(valid(d) && d >= min_depth && d <= max_depth) {
                continue;
            }
            if edge_ratio > 0.0 {
                // depth_jump on this row's slices
                let limit = edge_ratio * d;
                let differs = |n: f32| valid_fast(n) & ((n - d).abs() > limit);
                let left = if x > 0 { here[x - 1] } else { 0.0 };
                let right = if x + 1 < w { here[x + 1] } else { 0.0 };
                if differs(left) | differs(right) | differs(up[x]) | differs(down[x]) {
                    continue;
                }
            }
            cols.push(x as u32);
            depths.push(d);
        }
        let v = y as Real + 0.5;
        points.clear();
        points.extend(
            cols.iter()
                .zip(&depths)
                .map(|(&x, &d)| to_map.apply(x as Real + 0.5, v, d)),
        );
        keys.clear();
        keys.extend(points.iter().map(|p| {
            [
                floor_i32(p[0] / voxel_size),
                floor_i32(p[1] / voxel_size),
                floor_i32(p[2] / voxel_size),
            ]
        }));
        // consecutive pixels mostly fall in one voxel: skip the lookup then
        let mut left: Option<(VoxelKey, u32)> = None;
        for ((&x, p), &key) in cols.iter().zip(&points).zip(&keys) {
            let cell = match left {
                Some((k, c)) if k == key => c,
                _ => acc.cell(key),
            };
            acc.add_to(cell, &Point3::from(*p), &rgb[row + x as usize]);
            left = Some((key, cell));
        }
    }
    acc.finish(view.camera_pose.parent.clone())
}

/// `camera_pose.iso * intrinsics.unproject(u, v, d)` with nalgebra's exact sequence of
/// operations (unprojection, the unit quaternion's `v + 2w(q×v) + q×(2 q×v)` rotation
/// in nalgebra's grouping, then the translation), as plain `f32` arithmetic on
/// precomputed constants so that a loop over many pixels vectorises. Bit-identical to the
/// nalgebra expression (tested below).
#[derive(Debug, Clone, Copy)]
struct PixelToMap {
    cx: Real,
    cy: Real,
    fx: Real,
    fy: Real,
    q: [Real; 4],
    t: [Real; 3],
}

impl PixelToMap {
    fn new(k: &CameraIntrinsics, pose: &Transform) -> Self {
        let q = pose.iso.rotation.quaternion().coords;
        let t = pose.iso.translation.vector;
        Self {
            cx: k.cx,
            cy: k.cy,
            fx: k.fx,
            fy: k.fy,
            q: [q[0], q[1], q[2], q[3]],
            t: [t[0], t[1], t[2]],
        }
    }

    #[inline(always)]
    fn apply(&self, u: Real, v: Real, depth: Real) -> [Real; 3] {
        // CameraIntrinsics::unproject
        let x = (u - self.cx) * depth / self.fx;
        let y = (v - self.cy) * depth / self.fy;
        let z = depth;
        // UnitQuaternion * Vector3: t = (q.v × p) * 2; c = q.v × t; t * w + c + p
        let [qx, qy, qz, qw] = self.q;
        let t0 = (qy * z - qz * y) * 2.0;
        let t1 = (qz * x - qx * z) * 2.0;
        let t2 = (qx * y - qy * x) * 2.0;
        let c0 = qy * t2 - qz * t1;
        let c1 = qz * t0 - qx * t2;
        let c2 = qx * t1 - qy * t0;
        // Translation * Point3: p + t
        [
            t0 * qw + c0 + x + self.t[0],
            t1 * qw + c1 + y + self.t[1],
            t2 * qw + c2 + z + self.t[2],
        ]
    }
}

/// The points of the largest cluster, where two points are connected when they are at
/// most `radius` apart (single linkage). `radius <= 0` returns the cloud unchanged.
/// Ties between equally large clusters go to the one holding the lowest point index, so
/// the result is deterministic.
///
/// Points are bucketed in cells of edge `radius` (neighbours lie in the 27 cells around);
/// a breadth-first search labels components, and each cell keeps a list of its still
/// unlabelled points, so a labelled point is never looked at again.
pub fn largest_cluster(cloud: &PointCloud, radius: Real) -> PointCloud {
    if radius <= 0.0 || cloud.len() < 2 {
        return cloud.clone();
    }
    let pts = cloud.points();
    let n = pts.len();
    let cell = |p: &Point3| -> [i32; 3] { voxel_key(p, radius) };
    // cells and the cell of each point
    let mut index: FastMap<[i32; 3], u32> = FastMap::default();
    let mut keys: Vec<[i32; 3]> = Vec::new();
    let mut cell_of = Vec::with_capacity(n);
    for p in pts {
        let k = cell(p);
        let c = *index.entry(k).or_insert_with(|| {
            keys.push(k);
            keys.len() as u32 - 1
        });
        cell_of.push(c);
    }
    // members of each cell, contiguous (counting sort); `live[c]` of them, at the front
    // of the cell's slice, are not labelled yet; `slot[i]` is point i's position
    let cells = keys.len();
    let mut start = vec![0u32; cells + 1];
    for &c in &cell_of {
        start[c as usize + 1] += 1;
    }
    for c in 0..cells {
        start[c + 1] += start[c];
    }
    let mut live: Vec<u32> = (0..cells).map(|c| start[c + 1] - start[c]).collect();
    let mut members = vec![0u32; n];
    let mut slot = vec![0u32; n];
    let mut fill = start.clone();
    for (i, &c) in cell_of.iter().enumerate() {
        let s = &mut fill[c as usize];
        members[*s as usize] = i as u32;
        slot[i] = *s;
        *s += 1;
    }
    // the occupied cells around each cell (itself included)
    let mut around_start = Vec::with_capacity(cells + 1);
    let mut around: Vec<u32> = Vec::with_capacity(cells * 9);
    for k in &keys {
        around_start.push(around.len());
        for dx in -1..=1 {
            for dy in -1..=1 {
                for dz in -1..=1 {
                    if let Some(&c) = index.get(&[k[0] + dx, k[1] + dy, k[2] + dz]) {
                        around.push(c);
                    }
                }
            }
        }
    }
    around_start.push(around.len());

    let r2 = radius * radius;
    let mut label = vec![u32::MAX; n];
    // labels point i and unlinks it from its cell's live list
    let mut take = |i: u32, seed: u32, label: &mut [u32], members: &mut [u32], live: &mut [u32]| {
        let c = cell_of[i as usize] as usize;
        let last = start[c] + live[c] - 1;
        let at = slot[i as usize];
        let other = members[last as usize];
        members.swap(at as usize, last as usize);
        slot[other as usize] = at;
        slot[i as usize] = last;
        live[c] -= 1;
        label[i as usize] = seed;
    };
    let mut best: (usize, u32) = (0, 0); // (size, label)
    let mut stack: Vec<u32> = Vec::new();
    for seed in 0..n as u32 {
        if label[seed as usize] != u32::MAX {
            continue;
        }
        take(seed, seed, &mut label, &mut members, &mut live);
        stack.push(seed);
        let mut size = 0;
        while let Some(i) = stack.pop() {
            size += 1;
            let p = pts[i as usize];
            let c = cell_of[i as usize] as usize;
            for &nc in &around[around_start[c]..around_start[c + 1]] {
                let nc = nc as usize;
                let mut k = start[nc];
                while k < start[nc] + live[nc] {
                    let j = members[k as usize];
                    if (pts[j as usize] - p).norm_squared() <= r2 {
                        // swaps the cell's last live point into slot k: look at k again
                        take(j, seed, &mut label, &mut members, &mut live);
                        stack.push(j);
                    } else {
                        k += 1;
                    }
                }
            }
        }
        if size > best.0 {
            best = (size, seed);
        }
    }
    let keep: Vec<usize> = (0..n).filter(|&i| label[i] == best.1).collect();
    cloud.select(&keep)
}

#[cfg(test)]
mod tests {
    use super::*;
    use asp_core::RgbdFrame;
    use asp_core::geometry::{Isometry3, UnitQuaternion, Vector3};
    use asp_core::image::{Box2, Image};
    use nalgebra::Translation3;
    use rand::{RngExt, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn random_pose(rng: &mut ChaCha8Rng) -> Transform {
        let axis = Vector3::new(
            rng.random_range(-1.0..1.0),
            rng.random_range(-1.0..1.0),
            rng.random_range(-1.0..1.0),
        );
        let rotation = UnitQuaternion::from_scaled_axis(axis * 3.0);
        let translation = Translation3::new(
            rng.random_range(-3.0..3.0),
            rng.random_range(-3.0..3.0),
            rng.random_range(0.0..2.0),
        );
        Transform::new(
            "map",
            "camera",
            Isometry3::from_parts(translation, rotation),
        )
    }

    fn random_intrinsics(rng: &mut ChaCha8Rng, width: u32, height: u32) -> CameraIntrinsics {
        CameraIntrinsics {
            width,
            height,
            fx: rng.random_range(200.0..700.0),
            fy: rng.random_range(200.0..700.0),
            cx: rng.random_range(-50.0..width as f32 + 50.0),
            cy: rng.random_range(-50.0..height as f32 + 50.0),
        }
    }

    #[test]
    fn pixel_to_map_is_bit_identical_to_nalgebra() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        for _ in 0..200 {
            let pose = random_pose(&mut rng);
            let k = random_intrinsics(&mut rng, 640, 480);
            let m = PixelToMap::new(&k, &pose);
            for _ in 0..500 {
                let u = rng.random_range(0..640) as f32 + 0.5;
                let v = rng.random_range(0..480) as f32 + 0.5;
                let d = rng.random_range(0.05..8.0);
                let expected = pose.iso * k.unproject(u, v, d);
                let got = m.apply(u, v, d);
                for a in 0..3 {
                    assert_eq!(got[a].to_bits(), expected[a].to_bits(), "{u} {v} {d}");
                }
            }
        }
    }

    /// A depth image of a tilted plane with noise, jumps, holes and invalid readings, a
    /// blob mask with ragged edges, random colours.
    fn random_view(rng: &mut ChaCha8Rng, w: u32, h: u32) -> (RgbImage, DepthImage, Mask) {
        let base: f32 = rng.random_range(0.3..4.0);
        let (gx, gy): (f32, f32) = (rng.random_range(-0.01..0.01), rng.random_range(-0.01..0.01));
        let depth: Vec<f32> = (0..w * h)
            .map(|i| {
                let (x, y) = ((i % w) as f32, (i / w) as f32);
                match rng.random_range(0..100) {
                    0 => 0.0,
                    1 => f32::NAN,
                    2 => f32::INFINITY,
                    3 => -1.0,
                    4..=8 => base * 1.5,
                    _ => base + gx * x + gy * y + rng.random_range(-0.01..0.01),
                }
            })
            .collect();
        let (cx, cy, r) = (w as f32 / 2.0, h as f32 / 2.0, w.min(h) as f32 / 2.5);
        let mask: Vec<bool> = (0..w * h)
            .map(|i| {
                let (x, y) = ((i % w) as f32 - cx, (i / w) as f32 - cy);
                (x * x + y * y).sqrt() < r + rng.random_range(-3.0..3.0)
            })
            .collect();
        let rgb: Vec<[u8; 3]> = (0..w * h).map(|_| rng.random()).collect();
        (
            Image::from_vec(w, h, rgb).unwrap(),
            Image::from_vec(w, h, depth).unwrap(),
            Mask::from_image(Image::from_vec(w, h, mask).unwrap()),
        )
    }

    #[test]
    fn masked_cloud_equals_filter_then_back_project_then_downsample() {
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        for case in 0..24 {
            let (w, h) = (rng.random_range(1..120), rng.random_range(1..90));
            let (rgb, depth, mask) = random_view(&mut rng, w, h);
            let intrinsics = random_intrinsics(&mut rng, w, h);
            let camera_pose = random_pose(&mut rng);
            let ratio = [0.0, 0.02, 0.05, 0.3][case % 4];
            let voxel = [0.002, 0.01, 0.05][case % 3];
            let (min, max) = (0.1, rng.random_range(1.0..6.0));
            let frame = RgbdFrame {
                rgb,
                depth,
                intrinsics,
                camera_pose,
                stamp: 0.0,
                ground_truth: None,
            };
            let filtered = depth_edge_filter(&mask, &frame.depth, ratio);
            let expected = frame
                .back_project(Some(&filtered), min, max)
                .unwrap()
                .voxel_downsample(voxel)
                .unwrap();
            let view = MaskedView {
                rgb: &frame.rgb,
                depth: &frame.depth,
                mask: &mask,
                intrinsics: &frame.intrinsics,
                camera_pose: &frame.camera_pose,
            };
            let got = masked_cloud(&view, ratio, min, max, voxel).unwrap();
            assert_eq!(
                got, expected,
                "case {case}: {w}×{h}, ratio {ratio}, voxel {voxel}"
            );
        }
        // a mask of another size is an error that names it
        let (rgb, depth, _) = random_view(&mut rng, 8, 6);
        let mask = Mask::empty(6, 8);
        let k = random_intrinsics(&mut rng, 8, 6);
        let pose = random_pose(&mut rng);
        let view = MaskedView {
            rgb: &rgb,
            depth: &depth,
            mask: &mask,
            intrinsics: &k,
            camera_pose: &pose,
        };
        let err = masked_cloud(&view, 0.05, 0.1, 6.0, 0.01).unwrap_err();
        assert!(err.to_string().contains("mask is 6×8"), "{err}");
        let ok_mask = Mask::empty(8, 6);
        let view = MaskedView {
            mask: &ok_mask,
            ..view
        };
        let err = masked_cloud(&view, 0.05, 0.1, 6.0, 0.0).unwrap_err();
        assert!(err.to_string().contains("voxel size"), "{err}");
    }

    /// The largest component by brute force: union-find over all pairs.
    fn largest_cluster_reference(cloud: &PointCloud, radius: Real) -> PointCloud {
        let pts = cloud.points();
        let n = pts.len();
        let mut parent: Vec<usize> = (0..n).collect();
        fn find(parent: &mut [usize], mut i: usize) -> usize {
            while parent[i] != i {
                parent[i] = parent[parent[i]];
                i = parent[i];
            }
            i
        }
        for i in 0..n {
            for j in i + 1..n {
                if (pts[j] - pts[i]).norm_squared() <= radius * radius {
                    let (a, b) = (find(&mut parent, i), find(&mut parent, j));
                    parent[a.max(b)] = a.min(b);
                }
            }
        }
        let roots: Vec<usize> = (0..n).map(|i| find(&mut parent, i)).collect();
        let mut size = vec![0usize; n];
        for &r in &roots {
            size[r] += 1;
        }
        // roots are the lowest index of their component: the first maximum wins ties
        let mut best = 0;
        for r in 0..n {
            if size[r] > size[best] {
                best = r;
            }
        }
        let keep: Vec<usize> = (0..n).filter(|&i| roots[i] == best).collect();
        cloud.select(&keep)
    }

    #[test]
    fn largest_cluster_equals_brute_force() {
        let mut rng = ChaCha8Rng::seed_from_u64(4);
        for case in 0..40 {
            // a few blobs of various sizes and spreads, shuffled together
            let blobs = rng.random_range(1..6);
            let mut pts = Vec::new();
            for _ in 0..blobs {
                let c = Point3::new(
                    rng.random_range(-0.5..0.5),
                    rng.random_range(-0.5..0.5),
                    rng.random_range(0.5..1.5),
                );
                let spread: f32 = rng.random_range(0.01..0.15);
                for _ in 0..rng.random_range(1..150) {
                    pts.push(
                        c + Vector3::new(
                            rng.random_range(-spread..spread),
                            rng.random_range(-spread..spread),
                            rng.random_range(-spread..spread),
                        ),
                    );
                }
            }
            let n = pts.len();
            for i in (1..n).rev() {
                pts.swap(i, rng.random_range(0..=i));
            }
            let colors: Vec<[u8; 3]> = (0..n).map(|_| rng.random()).collect();
            let cloud = PointCloud::new("map", pts).with_colors(colors).unwrap();
            let radius = [0.01, 0.02, 0.03, 0.05][case % 4];
            assert_eq!(
                largest_cluster(&cloud, radius),
                largest_cluster_reference(&cloud, radius),
                "case {case}"
            );
        }
        // equal sizes: the cluster holding the lowest index wins
        let pts = vec![
            Point3::new(1.0, 0.0, 0.0),
            Point3::new(0.0, 0.0, 0.0),
            Point3::new(0.01, 0.0, 0.0),
            Point3::new(1.01, 0.0, 0.0),
        ];
        let kept = largest_cluster(&PointCloud::new("map", pts), 0.02);
        assert_eq!(kept.points()[0], Point3::new(1.0, 0.0, 0.0));
        assert_eq!(kept.len(), 2);
    }

    #[test]
    fn depth_edges_and_holes_are_removed() {
        // 5×1 row: object at 1.0 m, then a jump to 2.0 m, one hole
        let depth = Image::from_vec(5, 1, vec![1.0, 1.0, 1.0, 2.0, 0.0]).unwrap();
        let mask = Mask::fill_box(5, 1, &Box2::new(0.0, 0.0, 5.0, 1.0));
        let f = depth_edge_filter(&mask, &depth, 0.05);
        // pixel 2 (next to the jump) and 3 (the far side) go, 4 has no reading
        assert_eq!(
            (0..5).map(|x| f.get(x, 0)).collect::<Vec<_>>(),
            vec![true, true, false, false, false]
        );
        // ratio 0 keeps edges but still drops the hole
        let f0 = depth_edge_filter(&mask, &depth, 0.0);
        assert_eq!(f0.area(), 4);
    }

    #[test]
    fn the_largest_cluster_survives() {
        let mut pts: Vec<Point3> = (0..10)
            .map(|i| Point3::new(i as f32 * 0.01, 0.0, 1.0))
            .collect();
        pts.extend((0..3).map(|i| Point3::new(0.5 + i as f32 * 0.01, 0.0, 1.0)));
        let cloud = PointCloud::new("map", pts);
        let kept = largest_cluster(&cloud, 0.015);
        assert_eq!(kept.len(), 10);
        assert!(kept.points().iter().all(|p| p.x < 0.2));
        // a radius bridging the gap keeps everything
        assert_eq!(largest_cluster(&cloud, 0.5).len(), 13);
        assert_eq!(largest_cluster(&cloud, 0.0).len(), 13);
    }
}
