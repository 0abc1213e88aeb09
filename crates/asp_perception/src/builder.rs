//! The ObjectMap builder (SPEC §1.1): segment → crop → embed → back-project → merge.
//!
//! Each keyframe goes through two stages:
//! 1. [`MapBuilder::detect`] runs the models: class-agnostic segmentation of the RGB
//!    image, then the image embedder on each segment's padded crop;
//! 2. [`MapBuilder::integrate`] does the geometry: masked depth back-projected with the
//!    intrinsics and camera pose, flying pixels and stray clusters removed, clouds
//!    voxel-downsampled, then merged into the map (ConceptGraphs' rule, below).
//!
//! Merging: a detection joins an existing object when BOTH their point clouds overlap
//! (the share of the smaller one's voxels that have a voxel of the other within
//! `merge.overlap_radius` is at least `merge.overlap_threshold`) AND their features agree
//! (cosine similarity at least `merge.feature_similarity`); among several such objects
//! the one with the highest overlap + similarity wins. Detections are processed largest
//! first and each joins the map before the next is compared, so the pieces of an
//! over-segmented object within one frame merge with each other; afterwards, objects
//! touched in this frame are merged pairwise under the same rule until none qualifies
//! (a detection can bridge two objects). On merge: clouds concatenated and
//! voxel-downsampled, features averaged weighted by observation counts, crops combined
//! and ranked by segment area with a border penalty, keeping the best
//! `crops.max_per_object`.

use std::collections::{HashMap, HashSet};
use std::hash::BuildHasher;
use std::sync::Arc;

use asp_config::ObjectMapConfig;
use asp_core::geometry::{FrameId, Point3, PointCloud, Real, VoxelKey};
use asp_core::image::{Mask, PixelRect};
use asp_core::map::{Crop, Object, ObjectId, ObjectMap, cosine_similarity, normalize};
use asp_core::models::{ImageEmbedder, ModelError, Segment, Segmenter};
use asp_core::{CoreError, RgbdFrame};
use serde::{Deserialize, Serialize};

use crate::PerceptionError;
use crate::filter::{MaskedView, largest_cluster, masked_cloud};
use crate::voxel::{FastSet, merge_downsampled, voxel_key_set};

/// One segment of a keyframe with its embedding: what the models produce.
#[derive(Debug, Clone, PartialEq)]
pub struct Detection {
    pub segment: Segment,
    /// Unit-length embedding of the segment's crop.
    pub features: Vec<f32>,
}

/// The model outputs for one keyframe.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyframeDetections {
    pub detections: Vec<Detection>,
    /// Segments the segmenter returned.
    pub segments: usize,
    /// Segments dropped as smaller than `crops.min_segment_area` (not embedded).
    pub dropped_small: usize,
}

/// What one keyframe did to the map.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct KeyframeReport {
    /// Index of the keyframe in this build.
    pub keyframe: u32,
    /// Segments the segmenter returned.
    pub segments: usize,
    /// Segments dropped as too small in the image.
    pub dropped_small: usize,
    /// Segments dropped because too few valid 3D points remained.
    pub dropped_sparse: usize,
    /// Objects this keyframe created (that still exist after merging).
    pub created: Vec<ObjectId>,
    /// Detections that joined an existing object.
    pub merged_detections: usize,
    /// Object pairs merged after integration.
    pub merged_objects: usize,
    /// Objects in the map afterwards.
    pub objects: usize,
}

/// Cached geometry of an object for fast merge tests: the occupied voxels of its cloud
/// and its bounds, kept in step with the cloud.
#[derive(Debug, Clone)]
struct Geometry {
    voxels: FastSet<VoxelKey>,
    lo: Point3,
    hi: Point3,
}

impl Geometry {
    fn of(cloud: &PointCloud, voxel: Real) -> Option<Geometry> {
        let (lo, hi) = cloud.aabb()?;
        Some(Geometry {
            voxels: voxel_key_set(cloud.points(), voxel),
            lo,
            hi,
        })
    }

    /// The geometry of `cloud`, the merge of clouds with geometries `a` and `b` whose
    /// points all stayed in the voxels they were averaged in: the union of the voxel sets
    /// (the larger one reused).
    fn union(a: Geometry, b: Geometry, cloud: &PointCloud) -> Option<Geometry> {
        let (lo, hi) = cloud.aabb()?;
        let (mut big, small) = if a.voxels.len() >= b.voxels.len() {
            (a.voxels, b.voxels)
        } else {
            (b.voxels, a.voxels)
        };
        big.extend(small);
        Some(Geometry {
            voxels: big,
            lo,
            hi,
        })
    }

    fn boxes_near(&self, other: &Geometry, margin: Real) -> bool {
        (0..3).all(|i| self.lo[i] - margin <= other.hi[i] && other.lo[i] - margin <= self.hi[i])
    }
}

/// Share of the smaller voxel set's voxels that have a voxel of the other set within
/// `offsets` (a ball of voxel offsets); with the single offset 0 this is
/// `|A ∩ B| / min(|A|, |B|)`, asp_core's `voxel_overlap`.
fn near_overlap<S: BuildHasher>(
    a: &HashSet<VoxelKey, S>,
    b: &HashSet<VoxelKey, S>,
    offsets: &[[i32; 3]],
) -> Real {
    let (small, large) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    if small.is_empty() {
        return 0.0;
    }
    let near = small
        .iter()
        .filter(|v| {
            offsets
                .iter()
                .any(|o| large.contains(&[v[0] + o[0], v[1] + o[1], v[2] + o[2]]))
        })
        .count();
    near as Real / small.len() as Real
}

/// Voxel offsets within `radius` (centre to centre), nearest first.
fn ball_offsets(radius: Real, voxel: Real) -> Vec<[i32; 3]> {
    let r = (radius / voxel).max(0.0);
    let n = r.ceil() as i32;
    let mut out = Vec::new();
    for dx in -n..=n {
        for dy in -n..=n {
            for dz in -n..=n {
                let d2 = (dx * dx + dy * dy + dz * dz) as Real;
                if d2 <= r * r + 1e-6 {
                    out.push([dx, dy, dz]);
                }
            }
        }
    }
    out.sort_by_key(|o| o[0] * o[0] + o[1] * o[1] + o[2] * o[2]);
    out
}

/// What a [`MapBuilder`] built, taken out of it ([`MapBuilder::take`]).
pub struct BuiltMap {
    map: ObjectMap,
    geometry: HashMap<ObjectId, Geometry>,
    keyframes: u32,
}

impl std::fmt::Debug for BuiltMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BuiltMap")
            .field("frame", &self.map.frame)
            .field("objects", &self.map.len())
            .field("keyframes", &self.keyframes)
            .finish_non_exhaustive()
    }
}

/// Builds an [`ObjectMap`] from posed RGB-D keyframes, incrementally.
pub struct MapBuilder {
    config: ObjectMapConfig,
    segmenter: Arc<dyn Segmenter>,
    embedder: Arc<dyn ImageEmbedder>,
    map: ObjectMap,
    geometry: HashMap<ObjectId, Geometry>,
    offsets: Vec<[i32; 3]>,
    keyframes: u32,
}

impl std::fmt::Debug for MapBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MapBuilder")
            .field("frame", &self.map.frame)
            .field("objects", &self.map.len())
            .field("keyframes", &self.keyframes)
            .finish_non_exhaustive()
    }
}

impl MapBuilder {
    /// A builder for a map in `map_frame` (`common.frames.map`).
    pub fn new(
        config: &ObjectMapConfig,
        map_frame: impl Into<FrameId>,
        segmenter: Arc<dyn Segmenter>,
        embedder: Arc<dyn ImageEmbedder>,
    ) -> Result<Self, PerceptionError> {
        let voxel = config.merge.voxel_size;
        if !(voxel.is_finite() && voxel > 0.0) {
            return Err(PerceptionError::config(
                "object_map_node.merge.voxel_size",
                format!("must be a positive number of metres, got {voxel}"),
            ));
        }
        Ok(Self {
            offsets: ball_offsets(config.merge.overlap_radius, voxel),
            config: config.clone(),
            segmenter,
            embedder,
            map: ObjectMap::new(map_frame),
            geometry: HashMap::new(),
            keyframes: 0,
        })
    }

    pub fn config(&self) -> &ObjectMapConfig {
        &self.config
    }

    /// The map built so far.
    pub fn map(&self) -> &ObjectMap {
        &self.map
    }

    pub fn into_map(self) -> ObjectMap {
        self.map
    }

    /// Keyframes integrated so far.
    pub fn keyframes(&self) -> u32 {
        self.keyframes
    }

    /// Takes what was built so far out of the builder, which starts afresh as after
    /// [`Self::reset`]; [`Self::restore`] puts it back (a tour of another storey builds
    /// in between, in that storey's map).
    pub fn take(&mut self) -> BuiltMap {
        let fresh = ObjectMap::new(self.map.frame.clone());
        let built = BuiltMap {
            map: std::mem::replace(&mut self.map, fresh),
            geometry: std::mem::take(&mut self.geometry),
            keyframes: self.keyframes,
        };
        self.keyframes = 0;
        built
    }

    /// Puts back what [`Self::take`] took, replacing what was built since.
    pub fn restore(&mut self, built: BuiltMap) {
        self.map = built.map;
        self.geometry = built.geometry;
        self.keyframes = built.keyframes;
    }

    /// Forgets every object (a rebuild); ids restart.
    pub fn reset(&mut self) {
        self.map = ObjectMap::new(self.map.frame.clone());
        self.geometry.clear();
        self.keyframes = 0;
    }

    /// Forgets the objects `drop` picks (what a fresh look will see again); how many.
    pub fn forget(&mut self, mut drop: impl FnMut(&Object) -> bool) -> usize {
        let gone: Vec<ObjectId> = self
            .map
            .objects
            .iter()
            .filter(|o| drop(o))
            .map(|o| o.id)
            .collect();
        for id in &gone {
            self.map.remove(*id);
            self.geometry.remove(id);
        }
        gone.len()
    }

    /// Runs both stages on one keyframe.
    pub fn add_keyframe(&mut self, frame: &RgbdFrame) -> Result<KeyframeReport, PerceptionError> {
        let detections = self.detect(frame)?;
        self.integrate(frame, detections)
    }

    /// The padded crop rectangle of a segment's bounding box.
    fn crop_rect(&self, rect: &PixelRect, width: u32, height: u32) -> PixelRect {
        let p = self.config.crops.padding_px;
        PixelRect {
            x0: rect.x0.saturating_sub(p),
            y0: rect.y0.saturating_sub(p),
            x1: (rect.x1 + p).min(width),
            y1: (rect.y1 + p).min(height),
        }
    }

    /// Stage 1, the models: segments of the RGB image and an embedding of each segment's
    /// padded crop. Segments smaller than `crops.min_segment_area` are not embedded.
    pub fn detect(&self, frame: &RgbdFrame) -> Result<KeyframeDetections, PerceptionError> {
        frame.validate()?;
        let obs = frame.observation();
        let (w, h) = (frame.rgb.width(), frame.rgb.height());
        let segments = self.segmenter.segment(&obs)?;
        let total = segments.len();
        let mut dropped_small = 0;
        let mut detections = Vec::with_capacity(total);
        for segment in segments {
            if (segment.mask.width(), segment.mask.height()) != (w, h) {
                return Err(CoreError::MaskSize {
                    a: (segment.mask.width(), segment.mask.height()),
                    b: (w, h),
                }
                .into());
            }
            let area = segment.mask.area();
            let Some(rect) = segment.mask.bounding_rect() else {
                dropped_small += 1;
                continue;
            };
            if area < self.config.crops.min_segment_area {
                dropped_small += 1;
                continue;
            }
            let crop_rect = self.crop_rect(&rect, w, h);
            let crop = obs.crop(&crop_rect);
            let mask = segment.mask.crop(&crop_rect);
            let mut features = self.embedder.embed_image(&crop, Some(&mask))?;
            if features.len() != self.embedder.dim() {
                return Err(ModelError::BadAnswer {
                    model: "image embedder".into(),
                    message: format!(
                        "returned {} values but declares dimension {}",
                        features.len(),
                        self.embedder.dim()
                    ),
                }
                .into());
            }
            normalize(&mut features);
            detections.push(Detection { segment, features });
        }
        Ok(KeyframeDetections {
            detections,
            segments: total,
            dropped_small,
        })
    }

    /// Stage 2, the geometry: back-projects, filters and merges the detections of
    /// `frame` into the map.
    pub fn integrate(
        &mut self,
        frame: &RgbdFrame,
        detections: KeyframeDetections,
    ) -> Result<KeyframeReport, PerceptionError> {
        frame.validate()?;
        if frame.camera_pose.parent != self.map.frame {
            return Err(CoreError::FrameMismatch {
                expected: self.map.frame.to_string(),
                found: frame.camera_pose.parent.to_string(),
            }
            .into());
        }
        let keyframe = self.keyframes;
        self.keyframes += 1;
        let mut report = KeyframeReport {
            keyframe,
            segments: detections.segments,
            dropped_small: detections.dropped_small,
            ..KeyframeReport::default()
        };
        let mut dets: Vec<(MaskExtent, Detection)> = detections
            .detections
            .into_iter()
            .map(|d| (MaskExtent::of(&d.segment.mask), d))
            .collect();
        // largest first; stable, so equal areas keep the segmenter's order
        dets.sort_by_key(|(e, _)| std::cmp::Reverse(e.area));
        let mut touched: Vec<ObjectId> = Vec::new();
        for (extent, det) in dets {
            let Some(candidate) = self.observe(frame, keyframe, det, &extent)? else {
                report.dropped_sparse += 1;
                continue;
            };
            let Some(geom) = Geometry::of(&candidate.point_cloud, self.config.merge.voxel_size)
            else {
                report.dropped_sparse += 1;
                continue;
            };
            match self.best_match(&candidate.features, &geom, None) {
                Some(target) => {
                    self.absorb(target, candidate, geom)?;
                    report.merged_detections += 1;
                    if !touched.contains(&target) {
                        touched.push(target);
                    }
                }
                None => {
                    let id = self.map.allocate_id();
                    let mut object = candidate;
                    object.id = id;
                    self.geometry.insert(id, geom);
                    self.map.objects.push(object);
                    report.created.push(id);
                    touched.push(id);
                }
            }
        }
        report.merged_objects = self.merge_touched(touched)?;
        report.created.retain(|id| self.map.get(*id).is_some());
        report.objects = self.map.len();
        tracing::debug!(
            keyframe,
            segments = report.segments,
            created = report.created.len(),
            merged = report.merged_detections,
            objects = report.objects,
            "keyframe integrated"
        );
        Ok(report)
    }

    /// One detection as a one-observation object (id not yet assigned); `None` when too
    /// few points remain after filtering.
    fn observe(
        &self,
        frame: &RgbdFrame,
        keyframe: u32,
        det: Detection,
        extent: &MaskExtent,
    ) -> Result<Option<Object>, PerceptionError> {
        let (w, h) = (frame.rgb.width(), frame.rgb.height());
        let mask = &det.segment.mask;
        let Some(rect) = extent.rect else {
            return Ok(None);
        };
        let crop_rect = self.crop_rect(&rect, w, h);
        let b = crop_rect.to_box();
        let crop_mask = mask.crop(&crop_rect);
        let rgb = frame.rgb.crop(&b).0;
        let depth = frame.depth.crop(&b).0;
        let intrinsics = frame.intrinsics.cropped(&crop_rect);
        let view = MaskedView {
            rgb: &rgb,
            depth: &depth,
            mask: &crop_mask,
            intrinsics: &intrinsics,
            camera_pose: &frame.camera_pose,
        };
        let cloud = masked_cloud(
            &view,
            self.config.filter.depth_edge_ratio,
            self.config.depth.min,
            self.config.depth.max,
            self.config.merge.voxel_size,
        )?;
        let cloud = largest_cluster(&cloud, self.config.filter.cluster_radius);
        if cloud.len() < self.config.filter.min_points {
            return Ok(None);
        }
        let crop = Crop {
            rgb,
            depth,
            mask: crop_mask,
            source_rect: crop_rect,
            intrinsics,
            camera_pose: frame.camera_pose.clone(),
            keyframe,
            segment_area: extent.area,
            touches_border: rect.touches_border(w, h),
            ground_truth: frame.ground_truth.as_ref().map(|g| g.crop(&crop_rect)),
        };
        Ok(Some(Object {
            id: ObjectId(u32::MAX),
            point_cloud: cloud,
            crops: vec![crop],
            features: det.features,
            observations: 1,
            affordances: Vec::new(),
        }))
    }

    /// The object that geometry `geom` with `features` should merge into, if any.
    fn best_match(
        &self,
        features: &[f32],
        geom: &Geometry,
        exclude: Option<ObjectId>,
    ) -> Option<ObjectId> {
        let m = &self.config.merge;
        let mut best: Option<(Real, ObjectId)> = None;
        for object in &self.map.objects {
            if Some(object.id) == exclude {
                continue;
            }
            let Some(g) = self.geometry.get(&object.id) else {
                continue;
            };
            if !g.boxes_near(geom, m.overlap_radius + m.voxel_size) {
                continue;
            }
            let similarity = cosine_similarity(&object.features, features);
            if similarity < m.feature_similarity {
                continue;
            }
            let overlap = near_overlap(&g.voxels, &geom.voxels, &self.offsets);
            if overlap < m.overlap_threshold {
                continue;
            }
            let score = overlap + similarity;
            if best.is_none_or(|(s, id)| score > s || (score == s && object.id < id)) {
                best = Some((score, object.id));
            }
        }
        best.map(|(_, id)| id)
    }

    /// Folds `other`, whose cloud has geometry `other_geom`, into object `target`.
    fn absorb(
        &mut self,
        target: ObjectId,
        other: Object,
        other_geom: Geometry,
    ) -> Result<(), PerceptionError> {
        let voxel = self.config.merge.voxel_size;
        let crops = &self.config.crops;
        let object = self
            .map
            .get_mut(target)
            .ok_or_else(|| PerceptionError::UnknownObject(target.to_string()))?;
        // the union of the two clouds, voxel-downsampled: one merge pass over both
        // (already downsampled, in voxel order) instead of re-voxelising everything
        let target_geom = self.geometry.remove(&target);
        let geometry = match merge_downsampled(&object.point_cloud, &other.point_cloud, voxel) {
            Some(merged) => {
                object.point_cloud = merged.cloud;
                match target_geom {
                    Some(g) if merged.keys_kept => {
                        Geometry::union(g, other_geom, &object.point_cloud)
                    }
                    _ => Geometry::of(&object.point_cloud, voxel),
                }
            }
            None => {
                let mut cloud = object.point_cloud.clone();
                cloud.extend(&other.point_cloud)?;
                object.point_cloud = cloud.voxel_downsample(voxel)?;
                Geometry::of(&object.point_cloud, voxel)
            }
        };
        object.merge_features(&other.features, other.observations);
        object.observations += other.observations;
        object.crops.extend(other.crops);
        object.rank_crops(crops.border_penalty, crops.max_per_object);
        object.affordances.extend(other.affordances);
        if let Some(g) = geometry {
            self.geometry.insert(target, g);
        }
        Ok(())
    }

    /// Merges objects touched in this keyframe with any object under the merge rule,
    /// until no pair qualifies; the older (lower) id survives. Returns the merges made.
    fn merge_touched(&mut self, mut pending: Vec<ObjectId>) -> Result<usize, PerceptionError> {
        let mut merges = 0;
        while let Some(id) = pending.pop() {
            let Some(object) = self.map.get(id) else {
                continue;
            };
            let Some(geom) = self.geometry.get(&id) else {
                continue;
            };
            let Some(other) = self.best_match(&object.features, geom, Some(id)) else {
                continue;
            };
            let (keep, gone) = if other < id { (other, id) } else { (id, other) };
            let removed = self
                .map
                .remove(gone)
                .ok_or_else(|| PerceptionError::UnknownObject(gone.to_string()))?;
            let gone_geom = self
                .geometry
                .remove(&gone)
                .ok_or_else(|| PerceptionError::UnknownObject(gone.to_string()))?;
            self.absorb(keep, removed, gone_geom)?;
            merges += 1;
            pending.retain(|p| *p != gone);
            pending.push(keep);
        }
        Ok(merges)
    }
}

/// A mask's area and tight bounding box, from one pass over its rows.
#[derive(Debug, Clone, Copy)]
struct MaskExtent {
    area: u64,
    rect: Option<PixelRect>,
}

impl MaskExtent {
    /// Equal to `(mask.area(), mask.bounding_rect())`.
    fn of(mask: &Mask) -> Self {
        let w = mask.width() as usize;
        let mut area = 0u64;
        let mut rect: Option<PixelRect> = None;
        if w == 0 {
            return Self { area, rect };
        }
        for (y, row) in mask.image().pixels().chunks_exact(w).enumerate() {
            // a counting loop vectorises; most rows of a segment mask are empty
            let n = row.iter().filter(|&&b| b).count();
            if n == 0 {
                continue;
            }
            area += n as u64;
            let first = row.iter().position(|&b| b).unwrap_or(0);
            let last = row.iter().rposition(|&b| b).unwrap_or(first);
            let (x0, x1, y) = (first as u32, last as u32 + 1, y as u32);
            let r = rect.get_or_insert(PixelRect {
                x0,
                y0: y,
                x1,
                y1: y + 1,
            });
            r.x0 = r.x0.min(x0);
            r.x1 = r.x1.max(x1);
            r.y1 = y + 1;
        }
        Self { area, rect }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use asp_core::geometry::Point3;

    fn cloud(points: &[(f32, f32, f32)]) -> PointCloud {
        PointCloud::new(
            "map",
            points
                .iter()
                .map(|&(x, y, z)| Point3::new(x, y, z))
                .collect(),
        )
    }

    #[test]
    fn near_overlap_with_zero_radius_is_core_voxel_overlap() {
        let a = cloud(&[
            (0.005, 0.0, 0.0),
            (0.015, 0.0, 0.0),
            (0.025, 0.0, 0.0),
            (0.035, 0.0, 0.0),
        ]);
        let b = cloud(&[(0.025, 0.0, 0.0), (0.035, 0.0, 0.0), (0.045, 0.0, 0.0)]);
        let va = asp_core::geometry::voxel_keys(a.points(), 0.01);
        let vb = asp_core::geometry::voxel_keys(b.points(), 0.01);
        let exact = near_overlap(&va, &vb, &ball_offsets(0.0, 0.01));
        assert!((exact - a.voxel_overlap(&b, 0.01).unwrap()).abs() < 1e-6);
        assert!((exact - 2.0 / 3.0).abs() < 1e-6);
        // two halves side by side: no shared voxel, but adjacent within 1 cm
        let left = cloud(&[(0.005, 0.0, 0.0), (0.015, 0.0, 0.0)]);
        let right = cloud(&[(0.025, 0.0, 0.0), (0.035, 0.0, 0.0)]);
        let vl = asp_core::geometry::voxel_keys(left.points(), 0.01);
        let vr = asp_core::geometry::voxel_keys(right.points(), 0.01);
        assert_eq!(near_overlap(&vl, &vr, &ball_offsets(0.0, 0.01)), 0.0);
        assert!((near_overlap(&vl, &vr, &ball_offsets(0.01, 0.01)) - 0.5).abs() < 1e-6);
        assert!((near_overlap(&vl, &vr, &ball_offsets(0.02, 0.01)) - 1.0).abs() < 1e-6);
    }

    #[test]
    fn ball_offsets_are_a_discrete_ball() {
        assert_eq!(ball_offsets(0.0, 0.01), vec![[0, 0, 0]]);
        // radius one voxel: centre + 6 face neighbours
        assert_eq!(ball_offsets(0.01, 0.01).len(), 7);
        // radius two voxels: 33 offsets
        assert_eq!(ball_offsets(0.02, 0.01).len(), 33);
    }
}
