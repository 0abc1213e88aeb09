//! SAM-style segmentation with two ONNX models: an image encoder run once per image and
//! a prompt decoder run per prompt, as in Segment Anything's official ONNX export.
//!
//! Expected signatures:
//! - encoder: one float input `[1, 3, S, S]` (the first input; SAM: S = 1024), output
//!   `image_embeddings` `[1, C, h, w]` (SAM: 256 × 64 × 64). Input: the image resized so
//!   its longest side is S (bilinear), normalised with SAM's pixel mean/std, zero-padded
//!   bottom-right to S × S.
//! - decoder: inputs `image_embeddings` `[1, C, h, w]`, `point_coords` `[1, N, 2]` (x, y
//!   in the resized S-frame, pixel-index units), `point_labels` `[1, N]` (1 foreground,
//!   0 background, 2/3 box top-left/bottom-right, -1 padding), `mask_input`
//!   `[1, 1, 4h, 4w]`, `has_mask_input` `[1]`, `orig_im_size` `[2]` (H, W); outputs
//!   `masks` `[1, K, H', W']` (logits) and `iou_predictions` `[1, K]`. `masks` may be at
//!   the original image size (the official export upscales inside the model) or at any
//!   other size covering the padded S × S frame (e.g. the 256 × 256 low-resolution
//!   masks): then they are upscaled as SAM's `postprocess_masks` does (bilinear to S × S,
//!   crop the unpadded part, bilinear to H × W).
//!
//! [`OnnxMaskGenerator`] is SAM's automatic mask generator on top: an n × n grid of
//! point prompts, masks filtered by predicted IoU and stability score, deduplicated by
//! box non-maximum suppression. [`OnnxPromptableSegmenter`] answers box/point prompts
//! with the best of the K masks.

use std::path::Path;
use std::sync::Arc;

use asp_core::image::{Box2, Image, Mask, RgbImage};
use asp_core::models::{ModelError, Observation, Prompt, PromptableSegmenter, Segment, Segmenter};

use super::{InputTensor, OnnxModel, OnnxOptions, TensorF32, fixed_hw};
use crate::preprocess::{resize_plane_bilinear, sam_input};

const ENCODER: &str = "SAM image encoder";
const DECODER: &str = "SAM prompt decoder";
const DECODER_INPUTS: [&str; 6] = [
    "image_embeddings",
    "point_coords",
    "point_labels",
    "mask_input",
    "has_mask_input",
    "orig_im_size",
];

/// The encoder and decoder of a SAM-style model.
#[derive(Debug)]
pub struct SamModel {
    encoder: OnnxModel,
    decoder: OnnxModel,
    encoder_input: String,
    size: u32,
    mask_input_shape: Vec<i64>,
}

/// One image through the encoder.
#[derive(Debug, Clone)]
pub struct ImageEncoding {
    embeddings: TensorF32,
    width: u32,
    height: u32,
    /// Size of the image inside the S × S frame.
    resized: (u32, u32),
}

/// Masks the decoder returned for one prompt: K planes of logits at the decoder's output
/// resolution, brought to the image size on demand (only for masks that pass filters).
#[derive(Debug, Clone)]
pub struct DecodedMasks {
    planes: Vec<Vec<f32>>,
    plane_size: (usize, usize),
    pub iou_predictions: Vec<f32>,
}

impl DecodedMasks {
    pub fn len(&self) -> usize {
        self.planes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.planes.is_empty()
    }
}

/// Logits at the image size and their mask.
fn threshold_mask(logits: &[f32], width: u32, height: u32, threshold: f32) -> Mask {
    let data = logits.iter().map(|&v| v > threshold).collect();
    match Image::from_vec(width, height, data) {
        Ok(img) => Mask::from_image(img),
        Err(_) => Mask::empty(width, height),
    }
}

impl SamModel {
    pub fn load(encoder: &Path, decoder: &Path, onnx: &OnnxOptions) -> Result<Self, ModelError> {
        let encoder = OnnxModel::load(ENCODER, encoder, onnx)?;
        let decoder = OnnxModel::load(DECODER, decoder, onnx)?;
        let input = encoder
            .inputs()
            .first()
            .ok_or_else(|| encoder.bad_model("has no inputs".into()))?
            .clone();
        let size = match fixed_hw(&input) {
            Some((h, w)) if h == w && input.shape.len() == 4 => h,
            _ => {
                return Err(encoder.bad_model(format!(
                    "input {} has shape {:?}; expected a fixed [1, 3, S, S]",
                    input.name, input.shape
                )));
            }
        };
        encoder.require_outputs(&["image_embeddings"])?;
        decoder.require_inputs(&DECODER_INPUTS)?;
        decoder.require_outputs(&["masks", "iou_predictions"])?;
        let mask_input_shape = decoder
            .input("mask_input")
            .map(|s| s.shape.clone())
            .unwrap_or_default();
        if mask_input_shape.len() != 4 || mask_input_shape.iter().any(|&d| d <= 0) {
            return Err(decoder.bad_model(format!(
                "input mask_input has shape {mask_input_shape:?}; expected a fixed [1, 1, 4h, 4w]"
            )));
        }
        Ok(Self {
            encoder,
            decoder,
            encoder_input: input.name,
            size,
            mask_input_shape,
        })
    }

    /// The encoder's square input side S.
    pub fn input_size(&self) -> u32 {
        self.size
    }

    /// Runs the encoder on `image`.
    pub fn encode(&self, image: &RgbImage) -> Result<ImageEncoding, ModelError> {
        if image.width() == 0 || image.height() == 0 {
            return Err(ModelError::InvalidInput {
                model: ENCODER.into(),
                problem: "the image is empty".into(),
            });
        }
        let (data, resized) = sam_input(image, self.size);
        let s = i64::from(self.size);
        let embeddings = self
            .encoder
            .run(
                vec![(
                    self.encoder_input.as_str(),
                    InputTensor::F32(vec![1, 3, s, s], data),
                )],
                &["image_embeddings"],
            )?
            .remove(0);
        Ok(ImageEncoding {
            embeddings,
            width: image.width(),
            height: image.height(),
            resized,
        })
    }

    /// The resized-frame coordinates of a continuous image point (SAM's coordinates are
    /// pixel indices; a continuous coordinate `c` lies in pixel `c - 0.5`).
    fn to_frame(&self, enc: &ImageEncoding, x: f32, y: f32) -> (f32, f32) {
        let sx = enc.resized.0 as f32 / enc.width as f32;
        let sy = enc.resized.1 as f32 / enc.height as f32;
        ((x - 0.5) * sx, (y - 0.5) * sy)
    }

    /// Decodes one prompt: `points` are `(x, y, label)` in continuous image coordinates
    /// with SAM's labels (1 foreground, 0 background); `bbox` adds a box.
    pub fn decode(
        &self,
        enc: &ImageEncoding,
        points: &[(f32, f32, f32)],
        bbox: Option<&Box2>,
    ) -> Result<DecodedMasks, ModelError> {
        let mut coords = Vec::new();
        let mut labels = Vec::new();
        for &(x, y, l) in points {
            let (fx, fy) = self.to_frame(enc, x, y);
            coords.extend([fx, fy]);
            labels.push(l);
        }
        match bbox {
            Some(b) => {
                // box corners as pixel centres of the first and last covered pixel
                let (x0, y0) = self.to_frame(enc, b.x0 + 0.5, b.y0 + 0.5);
                let (x1, y1) = self.to_frame(enc, b.x1 - 0.5, b.y1 - 0.5);
                coords.extend([x0, y0, x1, y1]);
                labels.extend([2.0, 3.0]);
            }
            None => {
                // SAM's ONNX export expects a padding point when there is no box
                coords.extend([0.0, 0.0]);
                labels.push(-1.0);
            }
        }
        let n = labels.len() as i64;
        let mask_len: i64 = self.mask_input_shape.iter().product();
        let e = &enc.embeddings;
        let out = self.decoder.run(
            vec![
                (
                    "image_embeddings",
                    InputTensor::F32(e.shape.iter().map(|&d| d as i64).collect(), e.data.clone()),
                ),
                ("point_coords", InputTensor::F32(vec![1, n, 2], coords)),
                ("point_labels", InputTensor::F32(vec![1, n], labels)),
                (
                    "mask_input",
                    InputTensor::F32(self.mask_input_shape.clone(), vec![0.0; mask_len as usize]),
                ),
                ("has_mask_input", InputTensor::F32(vec![1], vec![0.0])),
                (
                    "orig_im_size",
                    InputTensor::F32(vec![2], vec![enc.height as f32, enc.width as f32]),
                ),
            ],
            &["masks", "iou_predictions"],
        )?;
        let (masks, ious) = (&out[0], &out[1]);
        if masks.shape.len() != 4 || masks.shape[0] != 1 {
            return Err(self.decoder.bad_model(format!(
                "returned masks of shape {:?}; expected [1, K, H, W]",
                masks.shape
            )));
        }
        let (k, mh, mw) = (masks.shape[1], masks.shape[2], masks.shape[3]);
        if ious.data.len() != k {
            return Err(self.decoder.bad_model(format!(
                "returned {} IoU predictions for {k} masks",
                ious.data.len()
            )));
        }
        let plane = mh * mw;
        Ok(DecodedMasks {
            planes: (0..k)
                .map(|i| masks.data[i * plane..(i + 1) * plane].to_vec())
                .collect(),
            plane_size: (mw, mh),
            iou_predictions: ious.data.clone(),
        })
    }

    /// Mask `k` of `decoded` as logits at the original image size (row-major `W × H`).
    pub fn image_logits(&self, enc: &ImageEncoding, decoded: &DecodedMasks, k: usize) -> Vec<f32> {
        let (w, h) = decoded.plane_size;
        self.to_image(enc, &decoded.planes[k], w, h)
    }

    /// Brings one plane of mask logits to the original image size.
    fn to_image(&self, enc: &ImageEncoding, plane: &[f32], w: usize, h: usize) -> Vec<f32> {
        let (ow, oh) = (enc.width as usize, enc.height as usize);
        if (w, h) == (ow, oh) {
            return plane.to_vec();
        }
        // SAM's postprocess_masks: to S × S, keep the unpadded part, to H × W
        let s = self.size as usize;
        let full = resize_plane_bilinear(plane, w, h, s, s);
        let (rw, rh) = (enc.resized.0 as usize, enc.resized.1 as usize);
        let mut cropped = Vec::with_capacity(rw * rh);
        for y in 0..rh {
            cropped.extend_from_slice(&full[y * s..y * s + rw]);
        }
        resize_plane_bilinear(&cropped, rw, rh, ow, oh)
    }
}

/// SAM's stability score: the IoU of the mask thresholded at `threshold + offset` with
/// the mask thresholded at `threshold - offset`.
pub fn stability_score(logits: &[f32], threshold: f32, offset: f32) -> f32 {
    let (mut inner, mut outer) = (0u64, 0u64);
    for &v in logits {
        inner += u64::from(v > threshold + offset);
        outer += u64::from(v > threshold - offset);
    }
    if outer == 0 {
        0.0
    } else {
        inner as f32 / outer as f32
    }
}

/// Greedy non-maximum suppression: keeps items in descending score order, dropping any
/// whose box IoU with a kept one exceeds `iou_threshold`. Returns the kept indices.
pub fn box_nms(boxes: &[Box2], scores: &[f32], iou_threshold: f32) -> Vec<usize> {
    let mut order: Vec<usize> = (0..boxes.len()).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
    let mut kept: Vec<usize> = Vec::new();
    for i in order {
        if kept
            .iter()
            .all(|&j| boxes[i].iou(&boxes[j]) <= iou_threshold)
        {
            kept.push(i);
        }
    }
    kept
}

/// Settings of automatic mask generation (`object_map_node.sam`).
#[derive(Debug, Clone, PartialEq)]
pub struct MaskGeneratorOptions {
    pub points_per_side: u32,
    pub pred_iou_threshold: f32,
    pub stability_score_threshold: f32,
    pub stability_score_offset: f32,
    pub mask_threshold: f32,
    pub box_nms_threshold: f32,
    pub max_area_fraction: f32,
}

impl From<&asp_config::sections::perception::SamConfig> for MaskGeneratorOptions {
    fn from(c: &asp_config::sections::perception::SamConfig) -> Self {
        Self {
            points_per_side: c.points_per_side,
            pred_iou_threshold: c.pred_iou_threshold,
            stability_score_threshold: c.stability_score_threshold,
            stability_score_offset: c.stability_score_offset,
            mask_threshold: c.mask_threshold,
            box_nms_threshold: c.box_nms_threshold,
            max_area_fraction: c.max_area_fraction,
        }
    }
}

impl Default for MaskGeneratorOptions {
    fn default() -> Self {
        (&asp_config::sections::perception::SamConfig::default()).into()
    }
}

/// SAM's automatic mask generator as a class-agnostic [`Segmenter`].
#[derive(Debug, Clone)]
pub struct OnnxMaskGenerator {
    model: Arc<SamModel>,
    options: MaskGeneratorOptions,
}

impl OnnxMaskGenerator {
    pub fn new(model: Arc<SamModel>, options: MaskGeneratorOptions) -> Self {
        Self { model, options }
    }

    /// The point grid: `(i + 0.5) / n` of the width and height, row by row.
    pub fn point_grid(&self, width: u32, height: u32) -> Vec<(f32, f32)> {
        let n = self.options.points_per_side.max(1);
        let mut points = Vec::with_capacity((n * n) as usize);
        for j in 0..n {
            for i in 0..n {
                points.push((
                    (i as f32 + 0.5) / n as f32 * width as f32,
                    (j as f32 + 0.5) / n as f32 * height as f32,
                ));
            }
        }
        points
    }
}

impl Segmenter for OnnxMaskGenerator {
    fn segment(&self, image: &Observation) -> Result<Vec<Segment>, ModelError> {
        let o = &self.options;
        let enc = self.model.encode(&image.rgb)?;
        let total = u64::from(image.width()) * u64::from(image.height());
        let mut candidates: Vec<(Mask, Box2, f32)> = Vec::new();
        for (x, y) in self.point_grid(image.width(), image.height()) {
            let decoded = self.model.decode(&enc, &[(x, y, 1.0)], None)?;
            for (k, &iou) in decoded.iou_predictions.iter().enumerate() {
                if iou < o.pred_iou_threshold {
                    continue;
                }
                let logits = self.model.image_logits(&enc, &decoded, k);
                let stability =
                    stability_score(&logits, o.mask_threshold, o.stability_score_offset);
                if stability < o.stability_score_threshold {
                    continue;
                }
                let mask = threshold_mask(&logits, enc.width, enc.height, o.mask_threshold);
                let area = mask.area();
                if area == 0 || area as f32 > o.max_area_fraction * total as f32 {
                    continue;
                }
                let Some(rect) = mask.bounding_rect() else {
                    continue;
                };
                candidates.push((mask, rect.to_box(), iou));
            }
        }
        let boxes: Vec<Box2> = candidates.iter().map(|c| c.1).collect();
        let scores: Vec<f32> = candidates.iter().map(|c| c.2).collect();
        let keep = box_nms(&boxes, &scores, o.box_nms_threshold);
        let mut taken: Vec<Option<(Mask, Box2, f32)>> = candidates.into_iter().map(Some).collect();
        Ok(keep
            .into_iter()
            .filter_map(|i| taken[i].take())
            .map(|(mask, _, score)| Segment {
                mask,
                score: score.clamp(0.0, 1.0),
            })
            .collect())
    }
}

/// SAM's prompt decoder as a [`PromptableSegmenter`]: the best of the K masks by
/// predicted IoU, thresholded at `mask_threshold`.
#[derive(Debug, Clone)]
pub struct OnnxPromptableSegmenter {
    model: Arc<SamModel>,
    mask_threshold: f32,
}

impl OnnxPromptableSegmenter {
    pub fn new(model: Arc<SamModel>, mask_threshold: f32) -> Self {
        Self {
            model,
            mask_threshold,
        }
    }
}

impl PromptableSegmenter for OnnxPromptableSegmenter {
    fn segment_prompt(&self, image: &Observation, prompt: &Prompt) -> Result<Segment, ModelError> {
        let enc = self.model.encode(&image.rgb)?;
        let decoded = match prompt {
            Prompt::Box { bbox } => self.model.decode(&enc, &[], Some(bbox))?,
            Prompt::Point { x, y } => self.model.decode(&enc, &[(*x, *y, 1.0)], None)?,
            Prompt::BoxAndPoint { bbox, x, y } => {
                self.model.decode(&enc, &[(*x, *y, 1.0)], Some(bbox))?
            }
        };
        let best = (0..decoded.iou_predictions.len())
            .max_by(|&a, &b| {
                decoded.iou_predictions[a]
                    .total_cmp(&decoded.iou_predictions[b])
                    .then(b.cmp(&a))
            })
            .ok_or_else(|| ModelError::BadAnswer {
                model: DECODER.into(),
                message: "the decoder returned no masks".into(),
            })?;
        let logits = self.model.image_logits(&enc, &decoded, best);
        Ok(Segment {
            mask: threshold_mask(&logits, enc.width, enc.height, self.mask_threshold),
            score: decoded.iou_predictions[best].clamp(0.0, 1.0),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stability_is_the_iou_of_two_thresholds() {
        let logits = [5.0, 0.5, -0.5, -5.0];
        // > 1: one pixel; > -1: three pixels
        assert!((stability_score(&logits, 0.0, 1.0) - 1.0 / 3.0).abs() < 1e-6);
        assert_eq!(stability_score(&[-9.0], 0.0, 1.0), 0.0);
    }

    #[test]
    fn nms_keeps_the_best_of_overlapping_boxes() {
        let boxes = [
            Box2::new(0.0, 0.0, 10.0, 10.0),
            Box2::new(1.0, 0.0, 11.0, 10.0), // IoU 9/11 with the first
            Box2::new(20.0, 20.0, 30.0, 30.0),
        ];
        assert_eq!(box_nms(&boxes, &[0.9, 0.95, 0.5], 0.7), vec![1, 2]);
        assert_eq!(box_nms(&boxes, &[0.9, 0.95, 0.5], 0.9), vec![1, 0, 2]);
    }
}
