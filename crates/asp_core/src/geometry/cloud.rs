use std::collections::{HashMap, HashSet};
use std::num::NonZeroUsize;

use kiddo::{ImmutableKdTree, SquaredEuclidean};
use nalgebra::{Matrix3, SymmetricEigen};
use serde::{Deserialize, Serialize};

use super::{FrameId, OrientedBox, Point3, Real, Transform, Vector3};
use crate::CoreError;
use crate::image::Rgb8;

/// Integer coordinates of a voxel: `floor(p / size)` per axis.
pub type VoxelKey = [i32; 3];

/// A point cloud expressed in a named frame, with optional per-point colours and normals
/// (when present they have one entry per point).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointCloud {
    pub frame: FrameId,
    points: Vec<Point3>,
    colors: Option<Vec<Rgb8>>,
    normals: Option<Vec<Vector3>>,
}

impl PointCloud {
    pub fn new(frame: impl Into<FrameId>, points: Vec<Point3>) -> Self {
        Self {
            frame: frame.into(),
            points,
            colors: None,
            normals: None,
        }
    }

    pub fn empty(frame: impl Into<FrameId>) -> Self {
        Self::new(frame, Vec::new())
    }

    /// Attaches one colour per point.
    pub fn with_colors(mut self, colors: Vec<Rgb8>) -> Result<Self, CoreError> {
        if colors.len() != self.points.len() {
            return Err(CoreError::AttributeLength {
                attribute: "colors",
                points: self.points.len(),
                len: colors.len(),
            });
        }
        self.colors = Some(colors);
        Ok(self)
    }

    /// Attaches one normal per point.
    pub fn with_normals(mut self, normals: Vec<Vector3>) -> Result<Self, CoreError> {
        if normals.len() != self.points.len() {
            return Err(CoreError::AttributeLength {
                attribute: "normals",
                points: self.points.len(),
                len: normals.len(),
            });
        }
        self.normals = Some(normals);
        Ok(self)
    }

    pub fn points(&self) -> &[Point3] {
        &self.points
    }
    pub fn colors(&self) -> Option<&[Rgb8]> {
        self.colors.as_deref()
    }
    pub fn normals(&self) -> Option<&[Vector3]> {
        self.normals.as_deref()
    }
    pub fn len(&self) -> usize {
        self.points.len()
    }
    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }

    /// Expresses the cloud in `tf.parent`; the cloud must be in `tf.child`.
    pub fn transformed(&self, tf: &Transform) -> Result<PointCloud, CoreError> {
        if tf.child != self.frame {
            return Err(CoreError::FrameMismatch {
                expected: self.frame.to_string(),
                found: tf.child.to_string(),
            });
        }
        Ok(PointCloud {
            frame: tf.parent.clone(),
            points: self.points.iter().map(|p| tf.iso * p).collect(),
            colors: self.colors.clone(),
            normals: self
                .normals
                .as_ref()
                .map(|ns| ns.iter().map(|n| tf.iso * n).collect()),
        })
    }

    /// Appends `other` (same frame). Attributes survive only when both clouds have them.
    pub fn extend(&mut self, other: &PointCloud) -> Result<(), CoreError> {
        if other.frame != self.frame {
            return Err(CoreError::FrameMismatch {
                expected: self.frame.to_string(),
                found: other.frame.to_string(),
            });
        }
        let had_points = !self.points.is_empty();
        self.colors = match (self.colors.take(), &other.colors) {
            (Some(mut a), Some(b)) => {
                a.extend_from_slice(b);
                Some(a)
            }
            (None, Some(b)) if !had_points => Some(b.clone()),
            _ => None,
        };
        self.normals = match (self.normals.take(), &other.normals) {
            (Some(mut a), Some(b)) => {
                a.extend_from_slice(b);
                Some(a)
            }
            (None, Some(b)) if !had_points => Some(b.clone()),
            _ => None,
        };
        self.points.extend_from_slice(&other.points);
        Ok(())
    }

    /// The points (and their attributes) for which `keep` is true.
    pub fn filtered(&self, mut keep: impl FnMut(&Point3) -> bool) -> PointCloud {
        let idx: Vec<usize> = (0..self.points.len())
            .filter(|&i| keep(&self.points[i]))
            .collect();
        self.select(&idx)
    }

    /// The points at `indices`, in that order.
    pub fn select(&self, indices: &[usize]) -> PointCloud {
        PointCloud {
            frame: self.frame.clone(),
            points: indices.iter().map(|&i| self.points[i]).collect(),
            colors: self
                .colors
                .as_ref()
                .map(|c| indices.iter().map(|&i| c[i]).collect()),
            normals: self
                .normals
                .as_ref()
                .map(|n| indices.iter().map(|&i| n[i]).collect()),
        }
    }

    /// Mean of the points; `None` for an empty cloud.
    pub fn centroid(&self) -> Option<Point3> {
        if self.points.is_empty() {
            return None;
        }
        let sum = self
            .points
            .iter()
            .fold(Vector3::zeros(), |acc, p| acc + p.coords);
        Some(Point3::from(sum / self.points.len() as Real))
    }

    /// Axis-aligned bounds `(min, max)`; `None` for an empty cloud.
    pub fn aabb(&self) -> Option<(Point3, Point3)> {
        let first = *self.points.first()?;
        Some(
            self.points
                .iter()
                .fold((first, first), |(lo, hi), p| (lo.inf(p), hi.sup(p))),
        )
    }

    /// Covariance of the points about their centroid; `None` for an empty cloud.
    pub fn covariance(&self) -> Option<Matrix3<Real>> {
        let c = self.centroid()?;
        Some(covariance_about(self.points.iter(), &c))
    }

    /// Oriented bounding box from the principal axes of the points.
    pub fn oriented_bounding_box(&self) -> Option<OrientedBox> {
        OrientedBox::from_points(&self.points)
    }

    /// Replaces the points of each occupied voxel of edge `voxel_size` by their mean (and
    /// mean colour and normalised mean normal). The output is ordered by voxel key, so it
    /// does not depend on the input order.
    pub fn voxel_downsample(&self, voxel_size: Real) -> Result<PointCloud, CoreError> {
        check_voxel(voxel_size)?;
        #[derive(Default)]
        struct Acc {
            sum: Vector3,
            rgb: [u32; 3],
            normal: Vector3,
            n: u32,
        }
        let mut cells: HashMap<VoxelKey, Acc> = HashMap::new();
        for (i, p) in self.points.iter().enumerate() {
            let acc = cells.entry(voxel_key(p, voxel_size)).or_default();
            acc.sum += p.coords;
            if let Some(c) = &self.colors {
                for (sum, &ch) in acc.rgb.iter_mut().zip(&c[i]) {
                    *sum += u32::from(ch);
                }
            }
            if let Some(n) = &self.normals {
                acc.normal += n[i];
            }
            acc.n += 1;
        }
        let mut keys: Vec<VoxelKey> = cells.keys().copied().collect();
        keys.sort_unstable();
        let mut points = Vec::with_capacity(keys.len());
        let mut colors = Vec::with_capacity(keys.len());
        let mut normals = Vec::with_capacity(keys.len());
        for k in keys {
            let acc = &cells[&k];
            let n = acc.n as Real;
            points.push(Point3::from(acc.sum / n));
            colors.push(acc.rgb.map(|c| (c / acc.n) as u8));
            normals.push(acc.normal.try_normalize(1e-9).unwrap_or_else(Vector3::z));
        }
        Ok(PointCloud {
            frame: self.frame.clone(),
            points,
            colors: self.colors.as_ref().map(|_| colors),
            normals: self.normals.as_ref().map(|_| normals),
        })
    }

    /// Estimates a unit normal per point from the covariance of its `k` nearest neighbours
    /// (the eigenvector of the smallest eigenvalue), flipped to face `viewpoint`.
    pub fn estimate_normals(&mut self, k: usize, viewpoint: &Point3) {
        let normals = if self.points.len() < 3 {
            vec![Vector3::z(); self.points.len()]
        } else {
            let coords: Vec<[Real; 3]> = self.points.iter().map(|p| [p.x, p.y, p.z]).collect();
            let tree: ImmutableKdTree<Real, 3> = ImmutableKdTree::new_from_slice(&coords);
            let k = NonZeroUsize::new(k.clamp(3, self.points.len())).unwrap_or(NonZeroUsize::MIN);
            self.points
                .iter()
                .map(|p| {
                    let nn = tree.nearest_n::<SquaredEuclidean>(&[p.x, p.y, p.z], k);
                    let neigh: Vec<Point3> =
                        nn.iter().map(|n| self.points[n.item as usize]).collect();
                    let c = Point3::from(
                        neigh.iter().fold(Vector3::zeros(), |a, q| a + q.coords)
                            / neigh.len() as Real,
                    );
                    let mut normal = smallest_eigenvector(&covariance_about(neigh.iter(), &c));
                    if normal.dot(&(viewpoint - p)) < 0.0 {
                        normal = -normal;
                    }
                    normal
                })
                .collect()
        };
        self.normals = Some(normals);
    }

    /// The set of voxels of edge `voxel_size` that hold at least one point.
    pub fn occupied_voxels(&self, voxel_size: Real) -> Result<HashSet<VoxelKey>, CoreError> {
        check_voxel(voxel_size)?;
        Ok(voxel_keys(&self.points, voxel_size))
    }

    /// 3D IoU of two clouds on a voxel grid: |A ∩ B| / |A ∪ B| over occupied voxels.
    /// Two empty clouds have IoU 0 (there is nothing to agree on).
    pub fn voxel_iou(&self, other: &PointCloud, voxel_size: Real) -> Result<Real, CoreError> {
        let (inter, a, b) = self.voxel_counts(other, voxel_size)?;
        let union = a + b - inter;
        Ok(if union == 0 {
            0.0
        } else {
            inter as Real / union as Real
        })
    }

    /// Overlap on a voxel grid relative to the smaller cloud: |A ∩ B| / min(|A|, |B|).
    /// 1.0 when one cloud lies inside the other, so a part merges into its whole.
    pub fn voxel_overlap(&self, other: &PointCloud, voxel_size: Real) -> Result<Real, CoreError> {
        let (inter, a, b) = self.voxel_counts(other, voxel_size)?;
        let smaller = a.min(b);
        Ok(if smaller == 0 {
            0.0
        } else {
            inter as Real / smaller as Real
        })
    }

    fn voxel_counts(
        &self,
        other: &PointCloud,
        voxel_size: Real,
    ) -> Result<(usize, usize, usize), CoreError> {
        self.same_frame(other)?;
        let a = self.occupied_voxels(voxel_size)?;
        let b = other.occupied_voxels(voxel_size)?;
        Ok((a.intersection(&b).count(), a.len(), b.len()))
    }

    /// Share of this cloud's points that lie within `radius` of some point of `other`
    /// (the nearest-neighbour overlap of ConceptGraphs). 0 for an empty cloud.
    pub fn fraction_within(&self, other: &PointCloud, radius: Real) -> Result<Real, CoreError> {
        self.same_frame(other)?;
        if self.points.is_empty() || other.points.is_empty() {
            return Ok(0.0);
        }
        let near = within_radius(&self.points, &other.points, radius)
            .into_iter()
            .filter(|&n| n)
            .count();
        Ok(near as Real / self.points.len() as Real)
    }

    fn same_frame(&self, other: &PointCloud) -> Result<(), CoreError> {
        if self.frame == other.frame {
            Ok(())
        } else {
            Err(CoreError::FrameMismatch {
                expected: self.frame.to_string(),
                found: other.frame.to_string(),
            })
        }
    }
}

/// For each of `points`, whether some point of `other` lies within `radius` of it
/// (nearest neighbours in a k-d tree over `other`); all false when `other` is empty.
pub fn within_radius(points: &[Point3], other: &[Point3], radius: Real) -> Vec<bool> {
    if other.is_empty() {
        return vec![false; points.len()];
    }
    let coords: Vec<[Real; 3]> = other.iter().map(|p| [p.x, p.y, p.z]).collect();
    let tree: ImmutableKdTree<Real, 3> = ImmutableKdTree::new_from_slice(&coords);
    let r2 = radius * radius;
    points
        .iter()
        .map(|p| {
            tree.nearest_one::<SquaredEuclidean>(&[p.x, p.y, p.z])
                .distance
                <= r2
        })
        .collect()
}

fn check_voxel(voxel_size: Real) -> Result<(), CoreError> {
    if voxel_size.is_finite() && voxel_size > 0.0 {
        Ok(())
    } else {
        Err(CoreError::InvalidArgument(format!(
            "voxel size must be a positive number of metres, got {voxel_size}"
        )))
    }
}

fn voxel_key(p: &Point3, size: Real) -> VoxelKey {
    [
        (p.x / size).floor() as i32,
        (p.y / size).floor() as i32,
        (p.z / size).floor() as i32,
    ]
}

/// The occupied voxel keys of `points` (voxel edge `size`, assumed positive).
pub fn voxel_keys(points: &[Point3], size: Real) -> HashSet<VoxelKey> {
    points.iter().map(|p| voxel_key(p, size)).collect()
}

fn covariance_about<'a>(points: impl Iterator<Item = &'a Point3>, c: &Point3) -> Matrix3<Real> {
    let mut cov = Matrix3::zeros();
    let mut n = 0usize;
    for p in points {
        let d = p - c;
        cov += d * d.transpose();
        n += 1;
    }
    if n > 0 { cov / n as Real } else { cov }
}

fn smallest_eigenvector(cov: &Matrix3<Real>) -> Vector3 {
    let eig = SymmetricEigen::new(*cov);
    let (mut best, mut best_val) = (0usize, Real::INFINITY);
    for i in 0..3 {
        if eig.eigenvalues[i] < best_val {
            best_val = eig.eigenvalues[i];
            best = i;
        }
    }
    eig.eigenvectors
        .column(best)
        .into_owned()
        .try_normalize(1e-12)
        .unwrap_or_else(Vector3::z)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::Isometry3;
    use approx::assert_relative_eq;

    fn grid(x0: Real, n: usize, step: Real) -> PointCloud {
        let mut pts = Vec::new();
        for i in 0..n {
            for j in 0..n {
                pts.push(Point3::new(x0 + i as Real * step, j as Real * step, 0.0));
            }
        }
        PointCloud::new("map", pts)
    }

    #[test]
    fn centroid_and_aabb() {
        let c = PointCloud::new(
            "map",
            vec![Point3::new(0.0, 0.0, 0.0), Point3::new(2.0, 4.0, -2.0)],
        );
        assert_eq!(c.centroid().unwrap(), Point3::new(1.0, 2.0, -1.0));
        let (lo, hi) = c.aabb().unwrap();
        assert_eq!(lo, Point3::new(0.0, 0.0, -2.0));
        assert_eq!(hi, Point3::new(2.0, 4.0, 0.0));
        assert!(PointCloud::empty("map").centroid().is_none());
    }

    #[test]
    fn voxel_downsample_averages_per_cell() {
        let c = PointCloud::new(
            "map",
            vec![
                Point3::new(0.01, 0.01, 0.01),
                Point3::new(0.03, 0.03, 0.03),
                Point3::new(0.51, 0.0, 0.0),
            ],
        )
        .with_colors(vec![[0, 0, 0], [100, 200, 50], [7, 7, 7]])
        .unwrap();
        let d = c.voxel_downsample(0.1).unwrap();
        assert_eq!(d.len(), 2);
        assert_relative_eq!(d.points()[0], Point3::new(0.02, 0.02, 0.02), epsilon = 1e-6);
        assert_eq!(d.colors().unwrap()[0], [50, 100, 25]);
        assert!(c.voxel_downsample(0.0).is_err());
        assert!(c.voxel_downsample(Real::NAN).is_err());
    }

    #[test]
    fn voxel_downsample_is_order_independent() {
        let c = grid(0.0, 10, 0.013);
        let mut rev = c.points().to_vec();
        rev.reverse();
        let r = PointCloud::new("map", rev);
        assert_eq!(
            c.voxel_downsample(0.05).unwrap().points().len(),
            r.voxel_downsample(0.05).unwrap().points().len()
        );
        for (a, b) in c
            .voxel_downsample(0.05)
            .unwrap()
            .points()
            .iter()
            .zip(r.voxel_downsample(0.05).unwrap().points())
        {
            assert_relative_eq!(a, b, epsilon = 1e-6);
        }
    }

    #[test]
    fn normals_of_a_plane_face_the_viewpoint() {
        let mut c = grid(0.0, 8, 0.01);
        c.estimate_normals(8, &Point3::new(0.0, 0.0, 1.0));
        for n in c.normals().unwrap() {
            assert_relative_eq!(*n, Vector3::z(), epsilon = 1e-4);
        }
        c.estimate_normals(8, &Point3::new(0.0, 0.0, -1.0));
        assert_relative_eq!(c.normals().unwrap()[5], -Vector3::z(), epsilon = 1e-4);
    }

    #[test]
    fn voxel_iou_and_overlap_hand_computed() {
        // 4×4 cells of 0.1 m each; b is shifted by two cells: 8 shared of 16 + 16 - 8
        let a = grid(0.05, 4, 0.1);
        let b = grid(0.25, 4, 0.1);
        assert_relative_eq!(a.voxel_iou(&b, 0.1).unwrap(), 8.0 / 24.0);
        assert_relative_eq!(a.voxel_overlap(&b, 0.1).unwrap(), 0.5);
        // a part inside its whole overlaps fully
        let part = grid(0.05, 2, 0.1);
        assert_relative_eq!(part.voxel_overlap(&a, 0.1).unwrap(), 1.0);
        assert_relative_eq!(part.voxel_iou(&a, 0.1).unwrap(), 4.0 / 16.0);
        let empty = PointCloud::empty("map");
        assert_eq!(empty.voxel_iou(&empty, 0.1).unwrap(), 0.0);
        assert!(a.voxel_iou(&PointCloud::empty("odom"), 0.1).is_err());
    }

    #[test]
    fn fraction_within_radius() {
        let a = grid(0.0, 4, 0.1);
        let b = grid(0.2, 4, 0.1);
        // a's columns x = 0.2, 0.3 coincide with b's points; x = 0.0, 0.1 are ≥ 0.1 away
        assert_relative_eq!(a.fraction_within(&b, 0.05).unwrap(), 0.5);
        assert_relative_eq!(a.fraction_within(&b, 0.21).unwrap(), 1.0);
    }

    #[test]
    fn transform_checks_frame() {
        let c = PointCloud::new("camera", vec![Point3::new(1.0, 0.0, 0.0)]);
        let tf = Transform::new("map", "camera", Isometry3::translation(0.0, 0.0, 2.0));
        let m = c.transformed(&tf).unwrap();
        assert_eq!(m.frame.as_str(), "map");
        assert_eq!(m.points()[0], Point3::new(1.0, 0.0, 2.0));
        assert!(m.transformed(&tf).is_err());
    }

    #[test]
    fn extend_keeps_attributes_only_when_both_have_them() {
        let mut a = PointCloud::new("map", vec![Point3::origin()])
            .with_colors(vec![[1, 2, 3]])
            .unwrap();
        let b = PointCloud::new("map", vec![Point3::new(1.0, 0.0, 0.0)]);
        a.extend(&b).unwrap();
        assert_eq!(a.len(), 2);
        assert!(a.colors().is_none());
        let mut e = PointCloud::empty("map");
        e.extend(
            &PointCloud::new("map", vec![Point3::origin()])
                .with_colors(vec![[9, 9, 9]])
                .unwrap(),
        )
        .unwrap();
        assert_eq!(e.colors().unwrap(), &[[9, 9, 9]]);
    }
}
