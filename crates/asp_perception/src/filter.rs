//! Cheap clean-up of back-projected segment clouds: a depth-edge filter on the mask
//! (flying pixels where the depth jumps) and a largest-cluster filter on the points (a
//! grid-accelerated DBSCAN with min_points 1, keeping the biggest component).

use std::collections::{HashMap, VecDeque};

use asp_core::geometry::{Point3, PointCloud, Real};
use asp_core::image::{DepthImage, Mask};

/// Clears mask pixels whose depth differs from a 4-neighbour's valid depth by more than
/// `ratio × depth`, and pixels without a valid reading. `ratio <= 0` only drops invalid
/// readings.
pub fn depth_edge_filter(mask: &Mask, depth: &DepthImage, ratio: f32) -> Mask {
    let (w, h) = (depth.width(), depth.height());
    let mut out = mask.clone();
    let valid = |d: f32| d.is_finite() && d > 0.0;
    for (x, y) in mask.set_pixels().collect::<Vec<_>>() {
        let d = depth.get(x, y).copied().unwrap_or(0.0);
        if !valid(d) {
            out.set(x, y, false);
            continue;
        }
        if ratio <= 0.0 {
            continue;
        }
        let limit = ratio * d;
        let neighbours = [
            (x.wrapping_sub(1), y),
            (x + 1, y),
            (x, y.wrapping_sub(1)),
            (x, y + 1),
        ];
        let jump = neighbours.iter().any(|&(nx, ny)| {
            nx < w
                && ny < h
                && depth
                    .get(nx, ny)
                    .is_some_and(|&n| valid(n) && (n - d).abs() > limit)
        });
        if jump {
            out.set(x, y, false);
        }
    }
    out
}

/// The points of the largest cluster, where two points are connected when they are at
/// most `radius` apart (single linkage). `radius <= 0` returns the cloud unchanged.
/// Ties between equally large clusters go to the one holding the lowest point index, so
/// the result is deterministic.
pub fn largest_cluster(cloud: &PointCloud, radius: Real) -> PointCloud {
    if radius <= 0.0 || cloud.len() < 2 {
        return cloud.clone();
    }
    let pts = cloud.points();
    let cell = |p: &Point3| -> [i32; 3] {
        [
            (p.x / radius).floor() as i32,
            (p.y / radius).floor() as i32,
            (p.z / radius).floor() as i32,
        ]
    };
    let mut grid: HashMap<[i32; 3], Vec<usize>> = HashMap::new();
    for (i, p) in pts.iter().enumerate() {
        grid.entry(cell(p)).or_default().push(i);
    }
    let r2 = radius * radius;
    let mut label = vec![usize::MAX; pts.len()];
    let mut best: (usize, usize) = (0, 0); // (size, label)
    let mut queue = VecDeque::new();
    for seed in 0..pts.len() {
        if label[seed] != usize::MAX {
            continue;
        }
        label[seed] = seed;
        queue.push_back(seed);
        let mut size = 0;
        while let Some(i) = queue.pop_front() {
            size += 1;
            let c = cell(&pts[i]);
            for dx in -1..=1 {
                for dy in -1..=1 {
                    for dz in -1..=1 {
                        let Some(members) = grid.get(&[c[0] + dx, c[1] + dy, c[2] + dz]) else {
                            continue;
                        };
                        for &j in members {
                            if label[j] == usize::MAX && (pts[j] - pts[i]).norm_squared() <= r2 {
                                label[j] = seed;
                                queue.push_back(j);
                            }
                        }
                    }
                }
            }
        }
        if size > best.0 {
            best = (size, seed);
        }
    }
    let keep: Vec<usize> = (0..pts.len()).filter(|&i| label[i] == best.1).collect();
    cloud.select(&keep)
}

#[cfg(test)]
mod tests {
    use super::*;
    use asp_core::image::{Box2, Image};

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
