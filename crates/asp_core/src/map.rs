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

    /// The crop as a model input about *its object*: models are told the object is the
    /// one in the centre of the view, but a segment's padded box can have another
    /// object in its centre (a table fragment around a bowl, an L-shaped segment). When
    /// the segment covers less than half of the crop's central half, the view is cut
    /// down to a window around the segment's deepest interior pixel, small enough that
    /// its central half is the segment's own.
    pub fn centred_observation(&self) -> Observation {
        let full = self.observation();
        let (w, h) = (self.mask.width(), self.mask.height());
        if w < 4 || h < 4 || self.centre_coverage() >= 0.5 {
            return full;
        }
        let Some((cx, cy, depth)) = self.mask.interior_point() else {
            return full;
        };
        // a window of half-side `depth` around the interior point fits in the crop (the
        // crop's border counts as outside), and its central half is all segment
        let side = (2 * depth).max(Self::MIN_FOCUS_SIDE).min(w.min(h));
        let x0 = cx.saturating_sub(side / 2).min(w - side);
        let y0 = cy.saturating_sub(side / 2).min(h - side);
        full.crop(&PixelRect {
            x0,
            y0,
            x1: x0 + side,
            y1: y0 + side,
        })
    }

    /// The smallest window [`Self::centred_observation`] cuts, in pixels.
    const MIN_FOCUS_SIDE: u32 = 24;

    /// Share of the crop's central half (the middle half of each side) the segment covers.
    pub fn centre_coverage(&self) -> f64 {
        let (w, h) = (self.mask.width(), self.mask.height());
        let (x0, x1, y0, y1) = (w / 4, w - w / 4, h / 4, h - h / 4);
        let area = u64::from(x1 - x0) * u64::from(y1 - y0);
        if area == 0 {
            return 0.0;
        }
        let set = (y0..y1)
            .flat_map(|y| (x0..x1).map(move |x| (x, y)))
            .filter(|&(x, y)| self.mask.get(x, y))
            .count();
        set as f64 / area as f64
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

    /// A `w × h` crop whose segment is `inside(x, y)`; each pixel's red channel is its
    /// column and green its row, so a sub-view tells where it was cut.
    fn crop_of(w: u32, h: u32, inside: impl Fn(u32, u32) -> bool) -> Crop {
        use crate::camera::CameraIntrinsics;
        use crate::image::Image;
        let mut mask = Mask::empty(w, h);
        let mut rgb = Vec::new();
        for y in 0..h {
            for x in 0..w {
                mask.set(x, y, inside(x, y));
                rgb.push([x as u8, y as u8, 0]);
            }
        }
        Crop {
            rgb: Image::from_vec(w, h, rgb).expect("size"),
            depth: Image::filled(w, h, 1.0),
            mask,
            source_rect: PixelRect {
                x0: 0,
                y0: 0,
                x1: w,
                y1: h,
            },
            intrinsics: CameraIntrinsics::from_hfov(w, h, 1.0),
            camera_pose: Transform::identity("map"),
            keyframe: 0,
            segment_area: 0,
            touches_border: false,
            ground_truth: None,
        }
    }

    #[test]
    fn a_segment_that_fills_its_centre_is_shown_whole() {
        let c = crop_of(80, 60, |x, y| (10..70).contains(&x) && (8..52).contains(&y));
        assert!(c.centre_coverage() > 0.99);
        assert_eq!(c.centred_observation(), c.observation());
    }

    /// A table fragment around a bowl: the padded box's centre is the hole, so the view
    /// is cut down to a window on the fragment itself.
    #[test]
    fn a_segment_around_a_hole_is_shown_from_its_own_interior() {
        let (w, h) = (120u32, 80u32);
        let c = crop_of(w, h, |x, y| {
            let (dx, dy) = (x as f64 - 60.0, y as f64 - 40.0);
            (dx * dx + dy * dy).sqrt() > 30.0
        });
        assert!(c.centre_coverage() < 0.5, "{}", c.centre_coverage());
        let v = c.centred_observation();
        assert!(
            v.width() < w && v.width() == v.height(),
            "{}×{}",
            v.width(),
            v.height()
        );
        // every pixel of the window's central half belongs to the segment
        let (s, x0, y0) = (v.width(), v.rgb.pixels()[0][0], v.rgb.pixels()[0][1]);
        for y in s / 4..s - s / 4 {
            for x in s / 4..s - s / 4 {
                assert!(
                    c.mask.get(u32::from(x0) + x, u32::from(y0) + y),
                    "({x}, {y}) of the window at ({x0}, {y0})"
                );
            }
        }
    }

    #[test]
    fn the_interior_point_is_deepest_inside_the_mask() {
        let c = crop_of(30, 20, |x, y| (2..12).contains(&x) && (3..13).contains(&y));
        let (x, y, d) = c.mask.interior_point().expect("some");
        assert_eq!(d, 5, "a 10×10 square is 5 deep at its centre");
        assert!((6..=7).contains(&x) && (7..=8).contains(&y), "({x}, {y})");
        assert_eq!(Mask::empty(4, 4).interior_point(), None);
        // the image border counts as outside
        let full = crop_of(5, 5, |_, _| true);
        assert_eq!(full.mask.interior_point(), Some((2, 2, 3)));
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
