//! The open-vocabulary scene map (SPEC §1.1): objects with geometry, semantics, crops and
//! lazily detected affordances.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::camera::CameraIntrinsics;
use crate::geometry::{FrameId, PointCloud, Real, Transform};
use crate::image::{DepthImage, Mask, PixelRect, RgbImage};
use crate::models::{GroundTruth, Observation};
use crate::skill::Skill;

/// A map-internal object identity, stable while the map is not rebuilt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ObjectId(pub u32);

impl fmt::Display for ObjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// One view of an object: the RGB and depth crops of its segment, cut from a keyframe.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Crop {
    pub rgb: RgbImage,
    pub depth: DepthImage,
    /// The segment inside the crop (crop-sized).
    pub mask: Mask,
    /// Where the crop was cut from its keyframe.
    pub source_rect: PixelRect,
    /// Intrinsics of the crop itself (the keyframe's, shifted).
    pub intrinsics: CameraIntrinsics,
    /// `map → camera` at capture.
    pub camera_pose: Transform,
    /// Index of the keyframe within the map build.
    pub keyframe: u32,
    /// Segment area in pixels.
    pub segment_area: u64,
    /// Whether the segment touches the keyframe's border (likely cut off).
    pub touches_border: bool,
    /// Simulator ground truth of the crop, for simulated models and evaluation only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ground_truth: Option<GroundTruth>,
}

impl Crop {
    /// The crop as a model input.
    pub fn observation(&self) -> Observation {
        Observation {
            rgb: self.rgb.clone(),
            depth: Some(self.depth.clone()),
            ground_truth: self.ground_truth.clone(),
        }
    }

    /// Ranking score (SPEC §1.1 step 4): segment area, multiplied by `border_penalty`
    /// (in `[0, 1]`) when the segment touches the image border.
    pub fn score(&self, border_penalty: Real) -> Real {
        let area = self.segment_area as Real;
        if self.touches_border {
            area * border_penalty
        } else {
            area
        }
    }
}

/// Where an affordance came from, so the verifier and the report can explain it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AffordanceProvenance {
    /// The producers (models, skills) whose evidence built it.
    pub producers: Vec<String>,
    /// Keyframes (views) it was seen in.
    pub keyframes: Vec<u32>,
    /// Detector confidence in `[0, 1]`.
    pub confidence: Real,
    /// Verifier score `v` at commit time, when it was gated.
    pub verifier_score: Option<Real>,
}

/// A part of an object the robot can act on with a skill (SPEC §1.1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Affordance {
    pub point_cloud: PointCloud,
    /// Free-text part name, e.g. "mug handle", "power adapter plug".
    pub part: String,
    pub skill: Skill,
    pub provenance: AffordanceProvenance,
}

/// An object of the map.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Object {
    pub id: ObjectId,
    /// Points in the map frame.
    pub point_cloud: PointCloud,
    /// Views, best first (see [`Crop::score`]).
    pub crops: Vec<Crop>,
    /// Vision-language embedding averaged over the merged observations, unit length.
    pub features: Vec<f32>,
    /// How many segments were merged into this object.
    pub observations: u32,
    /// Filled lazily by affordance detection.
    pub affordances: Vec<Affordance>,
}

impl Object {
    /// Folds the features of a new observation into the running average, weighting by
    /// the number of observations so far, and renormalises.
    pub fn merge_features(&mut self, other: &[f32], other_observations: u32) {
        if self.features.len() != other.len() {
            if self.features.is_empty() {
                self.features = other.to_vec();
            }
            return;
        }
        let (a, b) = (self.observations as f32, other_observations as f32);
        let total = (a + b).max(1.0);
        for (x, y) in self.features.iter_mut().zip(other) {
            *x = (*x * a + *y * b) / total;
        }
        normalize(&mut self.features);
    }

    /// Sorts crops best first and keeps at most `max_crops`.
    pub fn rank_crops(&mut self, border_penalty: Real, max_crops: usize) {
        self.crops.sort_by(|a, b| {
            b.score(border_penalty)
                .total_cmp(&a.score(border_penalty))
                .then(a.keyframe.cmp(&b.keyframe))
        });
        self.crops.truncate(max_crops);
    }
}

/// Scales `v` to unit length in place (a zero vector stays zero).
pub fn normalize(v: &mut [f32]) {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if n > 0.0 {
        v.iter_mut().for_each(|x| *x /= n);
    }
}

/// Cosine similarity; 0 when either vector is zero or the lengths differ.
pub fn cosine_similarity(a: &[f32], b: &[f32]) -> f32 {
    if a.len() != b.len() || a.is_empty() {
        return 0.0;
    }
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na * nb)
    }
}

/// The scene: objects in one frame (SPEC §1.1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObjectMap {
    pub frame: FrameId,
    pub objects: Vec<Object>,
    next_id: u32,
}

impl ObjectMap {
    pub fn new(frame: impl Into<FrameId>) -> Self {
        Self {
            frame: frame.into(),
            objects: Vec::new(),
            next_id: 0,
        }
    }

    /// A fresh id for a new object.
    pub fn allocate_id(&mut self) -> ObjectId {
        let id = ObjectId(self.next_id);
        self.next_id += 1;
        id
    }

    pub fn get(&self, id: ObjectId) -> Option<&Object> {
        self.objects.iter().find(|o| o.id == id)
    }

    pub fn get_mut(&mut self, id: ObjectId) -> Option<&mut Object> {
        self.objects.iter_mut().find(|o| o.id == id)
    }

    pub fn remove(&mut self, id: ObjectId) -> Option<Object> {
        let i = self.objects.iter().position(|o| o.id == id)?;
        Some(self.objects.remove(i))
    }

    pub fn len(&self) -> usize {
        self.objects.len()
    }

    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }

    /// The `k` objects whose features are most similar to `query` (unit text embedding),
    /// best first; ties are broken by id so the order is deterministic.
    pub fn top_k_by_similarity(&self, query: &[f32], k: usize) -> Vec<(ObjectId, f32)> {
        let mut scored: Vec<(ObjectId, f32)> = self
            .objects
            .iter()
            .map(|o| (o.id, cosine_similarity(&o.features, query)))
            .collect();
        scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        scored.truncate(k);
        scored
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::Point3;

    fn object(map: &mut ObjectMap, features: Vec<f32>) -> ObjectId {
        let id = map.allocate_id();
        map.objects.push(Object {
            id,
            point_cloud: PointCloud::new("map", vec![Point3::origin()]),
            crops: vec![],
            features,
            observations: 1,
            affordances: vec![],
        });
        id
    }

    #[test]
    fn top_k_orders_by_cosine_and_breaks_ties_by_id() {
        let mut m = ObjectMap::new("map");
        let a = object(&mut m, vec![1.0, 0.0]);
        let b = object(&mut m, vec![0.0, 1.0]);
        let c = object(&mut m, vec![1.0, 0.0]);
        let top = m.top_k_by_similarity(&[1.0, 0.0], 2);
        assert_eq!(top.iter().map(|t| t.0).collect::<Vec<_>>(), vec![a, c]);
        assert_eq!(m.top_k_by_similarity(&[0.0, 1.0], 1)[0].0, b);
        assert_eq!(m.top_k_by_similarity(&[1.0, 0.0], 10).len(), 3);
    }

    #[test]
    fn running_average_of_features() {
        let mut m = ObjectMap::new("map");
        let id = object(&mut m, vec![1.0, 0.0]);
        let o = m.get_mut(id).unwrap();
        o.merge_features(&[0.0, 1.0], 1);
        let s = std::f32::consts::FRAC_1_SQRT_2;
        assert!((o.features[0] - s).abs() < 1e-6 && (o.features[1] - s).abs() < 1e-6);
        assert!(cosine_similarity(&[1.0, 0.0], &[0.0, 0.0]) == 0.0);
        assert!(cosine_similarity(&[1.0], &[1.0, 0.0]) == 0.0);
    }

    #[test]
    fn crops_rank_by_area_with_border_penalty() {
        let crop = |area: u64, border: bool, kf: u32| Crop {
            rgb: crate::image::Image::filled(1, 1, [0, 0, 0]),
            depth: crate::image::Image::filled(1, 1, 0.0),
            mask: Mask::empty(1, 1),
            source_rect: PixelRect {
                x0: 0,
                y0: 0,
                x1: 1,
                y1: 1,
            },
            intrinsics: CameraIntrinsics::from_hfov(1, 1, 1.0),
            camera_pose: Transform::identity("map"),
            keyframe: kf,
            segment_area: area,
            touches_border: border,
            ground_truth: None,
        };
        let mut m = ObjectMap::new("map");
        let id = object(&mut m, vec![1.0]);
        let o = m.get_mut(id).unwrap();
        o.crops = vec![crop(100, false, 0), crop(300, true, 1), crop(200, false, 2)];
        o.rank_crops(0.5, 2);
        // 300 × 0.5 = 150 < 200, so the central view of 200 px wins
        assert_eq!(
            o.crops.iter().map(|c| c.keyframe).collect::<Vec<_>>(),
            vec![2, 1]
        );
        assert_eq!(m.remove(id).unwrap().id, id);
        assert!(m.is_empty());
    }
}
