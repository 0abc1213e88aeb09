//! Voxel-grid operations of the map builder's hot path, equal to asp_core's
//! [`PointCloud::voxel_downsample`] but cheaper:
//! - [`VoxelAccumulator`] downsamples points as they are produced (no full-resolution
//!   cloud is built), hashing with foldhash instead of SipHash (its caller,
//!   `filter::masked_cloud`, also skips the lookup when a pixel falls in the voxel of
//!   its left or upper neighbour);
//! - [`merge_downsampled`] merges two downsampled clouds by one pass over both in
//!   voxel-key order instead of re-voxelising their concatenation.
//!
//! Both produce bit-identical output to `voxel_downsample` on the same input sequence:
//! each voxel's sum is accumulated in the same order, from the same zero, and divided the
//! same way; the output is ordered by voxel key. Tests below check this against asp_core.

use std::collections::{HashMap, HashSet};

use asp_core::CoreError;
use asp_core::geometry::{FrameId, Point3, PointCloud, Real, Vector3, VoxelKey};
use asp_core::image::Rgb8;

/// A hash map with a fast, fixed-seed hasher (deterministic across runs).
pub(crate) type FastMap<K, V> = HashMap<K, V, foldhash::fast::FixedState>;
/// A hash set with a fast, fixed-seed hasher.
pub(crate) type FastSet<K> = HashSet<K, foldhash::fast::FixedState>;

/// `q.floor() as i32`, without a call to libm's `floorf` (x86-64 without SSE4.1 has no
/// rounding instruction): truncate, then step down when truncation rounded up. Equal for
/// every input, saturation and NaN (→ 0) included.
#[inline]
pub(crate) fn floor_i32(q: Real) -> i32 {
    let t = q as i32;
    if (t as Real) > q {
        t.saturating_sub(1)
    } else {
        t
    }
}

/// `floor(p / size)` per axis: asp_core's voxel key.
#[inline]
pub(crate) fn voxel_key(p: &Point3, size: Real) -> VoxelKey {
    [
        floor_i32(p.x / size),
        floor_i32(p.y / size),
        floor_i32(p.z / size),
    ]
}

/// A voxel key as one integer with the same (lexicographic) order, for cheap sorting.
#[inline]
pub(crate) fn ordered(key: &VoxelKey) -> u128 {
    let u = |v: i32| u128::from((v as u32) ^ 0x8000_0000);
    (u(key[0]) << 64) | (u(key[1]) << 32) | u(key[2])
}

/// The occupied voxel keys of `points` (asp_core's `voxel_keys`, with a faster hash).
pub(crate) fn voxel_key_set(points: &[Point3], size: Real) -> FastSet<VoxelKey> {
    let mut set = FastSet::with_capacity_and_hasher(points.len(), Default::default());
    set.extend(points.iter().map(|p| voxel_key(p, size)));
    set
}

const RECENT_BITS: u32 = 11;
const RECENT: usize = 1 << RECENT_BITS;

/// One voxel's running sums.
#[derive(Debug, Clone)]
struct Cell {
    key: VoxelKey,
    sum: Vector3,
    rgb: [u32; 3],
    n: u32,
}

impl Cell {
    fn new(key: VoxelKey) -> Self {
        Self {
            key,
            sum: Vector3::zeros(),
            rgb: [0; 3],
            n: 0,
        }
    }

    #[inline]
    fn add(&mut self, p: &Point3, rgb: &Rgb8) {
        self.sum += p.coords;
        for (sum, &ch) in self.rgb.iter_mut().zip(rgb) {
            *sum += u32::from(ch);
        }
        self.n += 1;
    }

    /// The voxel's mean point and colour, computed as `voxel_downsample` does.
    fn mean(&self) -> (Point3, Rgb8) {
        (
            Point3::from(self.sum / self.n as Real),
            self.rgb.map(|c| (c / self.n) as u8),
        )
    }
}

/// Downsamples a stream of coloured points onto a voxel grid: adding each point to the
/// cell of its [`voxel_key`] gives what
/// `PointCloud::new(frame, points).with_colors(colors)?.voxel_downsample(size)?` gives
/// for the same points in the same order.
#[derive(Debug)]
pub(crate) struct VoxelAccumulator {
    recent: Vec<(VoxelKey, u32)>,
    index: FastMap<VoxelKey, u32>,
    cells: Vec<Cell>,
}

impl VoxelAccumulator {
    /// Room for `cells` voxels before the index grows.
    pub(crate) fn with_capacity(cells: usize) -> Self {
        Self {
            index: FastMap::with_capacity_and_hasher(cells, Default::default()),
            cells: Vec::with_capacity(cells),
            recent: vec![([0; 3], u32::MAX); RECENT],
        }
    }

    /// The index of voxel `key`'s cell, created empty if new.
    #[inline]
    pub(crate) fn cell(&mut self, key: VoxelKey) -> u32 {
        // a small direct-mapped cache of recent voxels stays in L1; the index (as big
        // as the cloud) is only consulted on a miss
        let h = (key[0] as u32).wrapping_mul(0x9E37_79B1)
            ^ (key[1] as u32).wrapping_mul(0x85EB_CA77)
            ^ (key[2] as u32).wrapping_mul(0xC2B2_AE3D);
        let slot = (h >> (32 - RECENT_BITS)) as usize;
        let (k, c) = self.recent[slot];
        if c != u32::MAX && k == key {
            return c;
        }
        let next = self.cells.len() as u32;
        let i = *self.index.entry(key).or_insert(next);
        if i == next {
            self.cells.push(Cell::new(key));
        }
        self.recent[slot] = (key, i);
        i
    }

    /// Adds a point to cell `cell`, which must be the cell of the point's voxel.
    #[inline]
    pub(crate) fn add_to(&mut self, cell: u32, p: &Point3, rgb: &Rgb8) {
        self.cells[cell as usize].add(p, rgb);
    }

    /// The downsampled cloud, ordered by voxel key.
    pub(crate) fn finish(self, frame: FrameId) -> Result<PointCloud, CoreError> {
        // sort (key, index) packed in one integer: keys are unique, so an unstable sort
        // gives the one order
        let mut order: Vec<u128> = self
            .cells
            .iter()
            .enumerate()
            .map(|(i, c)| (ordered(&c.key) << 32) | i as u128)
            .collect();
        order.sort_unstable();
        let (points, colors): (Vec<Point3>, Vec<Rgb8>) = order
            .iter()
            .map(|&o| self.cells[(o & 0xffff_ffff) as usize].mean())
            .unzip();
        PointCloud::new(frame, points).with_colors(colors)
    }
}

/// The keys of `points`, if they are in non-decreasing order.
fn sorted_keys(points: &[Point3], size: Real) -> Option<Vec<VoxelKey>> {
    let keys: Vec<VoxelKey> = points.iter().map(|p| voxel_key(p, size)).collect();
    keys.windows(2).all(|w| w[0] <= w[1]).then_some(keys)
}

/// A merged cloud and whether each of its points lies in the voxel it was averaged in.
#[derive(Debug)]
pub(crate) struct Merged {
    pub cloud: PointCloud,
    /// True when every output point's voxel key is the key of the voxel it is the mean
    /// of; then the output's occupied voxels are exactly the union of the inputs'.
    pub keys_kept: bool,
}

/// `a.extend(b); a.voxel_downsample(size)` for two coloured clouds whose points are in
/// voxel-key order (what `voxel_downsample` produces): one merge pass over both, with
/// each voxel's points summed old-then-new as the concatenation would. `None` when the
/// shortcut does not apply (different frames, missing colours, normals, or points out of
/// key order because a mean was rounded onto a voxel boundary): the caller then takes
/// the general path.
pub(crate) fn merge_downsampled(a: &PointCloud, b: &PointCloud, size: Real) -> Option<Merged> {
    if a.frame != b.frame || a.normals().is_some() || b.normals().is_some() {
        return None;
    }
    let (ca, cb) = (a.colors()?, b.colors()?);
    let (pa, pb) = (a.points(), b.points());
    let ka = sorted_keys(pa, size)?;
    let kb = sorted_keys(pb, size)?;
    let mut points = Vec::with_capacity(pa.len() + pb.len());
    let mut colors = Vec::with_capacity(pa.len() + pb.len());
    let mut keys_kept = true;
    let (mut i, mut j) = (0, 0);
    while i < pa.len() || j < pb.len() {
        let key = match (ka.get(i), kb.get(j)) {
            (Some(x), Some(y)) => *x.min(y),
            (Some(x), None) => *x,
            (None, Some(y)) => *y,
            (None, None) => break,
        };
        let mut cell = Cell::new(key);
        while i < pa.len() && ka[i] == key {
            cell.add(&pa[i], &ca[i]);
            i += 1;
        }
        while j < pb.len() && kb[j] == key {
            cell.add(&pb[j], &cb[j]);
            j += 1;
        }
        let (p, c) = cell.mean();
        keys_kept &= voxel_key(&p, size) == key;
        points.push(p);
        colors.push(c);
    }
    let cloud = PointCloud::new(a.frame.clone(), points)
        .with_colors(colors)
        .ok()?;
    Some(Merged { cloud, keys_kept })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn random_cloud(rng: &mut ChaCha8Rng, n: usize, spread: Real) -> PointCloud {
        let points: Vec<Point3> = (0..n)
            .map(|_| {
                Point3::new(
                    rng.random_range(-spread..spread),
                    rng.random_range(-spread..spread),
                    rng.random_range(0.5..0.5 + spread),
                )
            })
            .collect();
        let colors: Vec<Rgb8> = (0..n).map(|_| rng.random()).collect();
        PointCloud::new("map", points).with_colors(colors).unwrap()
    }

    #[test]
    fn floor_without_libm_equals_floor() {
        let special = [
            0.0,
            -0.0,
            0.5,
            -0.5,
            1.0,
            -1.0,
            -1.0000001,
            0.99999994,
            -0.99999994,
            8388607.5,
            -8388607.5,
            2147483520.0,
            2147483648.0,
            -2147483648.0,
            -2147483904.0,
            1e30,
            -1e30,
            Real::INFINITY,
            Real::NEG_INFINITY,
            Real::NAN,
            Real::MIN_POSITIVE,
            -Real::MIN_POSITIVE,
        ];
        for q in special {
            assert_eq!(floor_i32(q), q.floor() as i32, "{q}");
        }
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        for _ in 0..100_000 {
            let q = Real::from_bits(rng.random());
            assert_eq!(floor_i32(q), q.floor() as i32, "{q}");
            let q: Real = rng.random_range(-300.0..300.0);
            assert_eq!(floor_i32(q), q.floor() as i32, "{q}");
        }
    }

    #[test]
    fn ordered_keys_sort_like_voxel_keys() {
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let mut keys: Vec<VoxelKey> = (0..2000)
            .map(|_| {
                let mut v = || match rng.random_range(0..4) {
                    0 => i32::MIN,
                    1 => i32::MAX,
                    _ => rng.random_range(-3..3),
                };
                [v(), v(), v()]
            })
            .collect();
        let mut by_u128 = keys.clone();
        keys.sort_unstable();
        by_u128.sort_unstable_by_key(ordered);
        assert_eq!(keys, by_u128);
    }

    #[test]
    fn accumulator_equals_core_voxel_downsample() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        for (n, spread, size) in [(1, 0.1, 0.01), (500, 0.05, 0.01), (4000, 0.3, 0.02)] {
            let cloud = random_cloud(&mut rng, n, spread);
            // a second pass over the same points, so voxels hold several of them
            let mut acc = VoxelAccumulator::with_capacity(0);
            for _ in 0..2 {
                for (p, c) in cloud.points().iter().zip(cloud.colors().unwrap()) {
                    let cell = acc.cell(voxel_key(p, size));
                    acc.add_to(cell, p, c);
                }
            }
            let mut twice = cloud.clone();
            twice.extend(&cloud).unwrap();
            let expected = twice.voxel_downsample(size).unwrap();
            assert!(expected.len() < 2 * n);
            assert_eq!(acc.finish("map".into()).unwrap(), expected);
        }
    }

    #[test]
    fn merging_downsampled_clouds_equals_downsampling_their_union() {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        for (na, nb, size) in [(300, 200, 0.01), (3000, 50, 0.02), (10, 2000, 0.02)] {
            let a = random_cloud(&mut rng, na, 0.1)
                .voxel_downsample(size)
                .unwrap();
            let b = random_cloud(&mut rng, nb, 0.1)
                .voxel_downsample(size)
                .unwrap();
            let merged = merge_downsampled(&a, &b, size).unwrap();
            let mut union = a.clone();
            union.extend(&b).unwrap();
            let expected = union.voxel_downsample(size).unwrap();
            assert_eq!(merged.cloud, expected);
            // the shared voxels really were averaged
            assert!(expected.len() < a.len() + b.len());
            if merged.keys_kept {
                let mut keys = voxel_key_set(a.points(), size);
                keys.extend(voxel_key_set(b.points(), size));
                assert_eq!(keys, voxel_key_set(expected.points(), size));
            }
        }
    }

    #[test]
    fn the_merge_shortcut_declines_what_it_cannot_do_exactly() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let a = random_cloud(&mut rng, 100, 0.1)
            .voxel_downsample(0.01)
            .unwrap();
        // not in key order
        let mut reversed: Vec<usize> = (0..a.len()).collect();
        reversed.reverse();
        assert!(merge_downsampled(&a.select(&reversed), &a, 0.01).is_none());
        // no colours
        let bare = PointCloud::new("map", a.points().to_vec());
        assert!(merge_downsampled(&a, &bare, 0.01).is_none());
        // another frame
        let mut odom = a.clone();
        odom.frame = "odom".into();
        assert!(merge_downsampled(&a, &odom, 0.01).is_none());
    }
}
