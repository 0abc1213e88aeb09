//! A CLIP-style image tower as an [`ImageEmbedder`].
//!
//! Expected signature (Hugging Face `CLIPVisionModelWithProjection` exported to ONNX, or
//! open_clip's visual tower): one float input `[1, 3, S, S]` (named `pixel_values` or
//! anything: the first input is used), one float output `[1, D]` (named by
//! `clip.output`, `image_embeds` by default; the first output when empty). Pre-processing:
//! bicubic resize of the shortest side to S, centre crop, scale to 0–1, normalise with
//! CLIP's mean/std. Post-processing: L2 normalisation.

use std::path::Path;

use asp_core::image::{Mask, RgbImage};
use asp_core::models::{ImageEmbedder, ModelError, Observation};

use super::{InputTensor, OnnxModel, OnnxOptions, fixed_hw};
use crate::preprocess::clip_input;

const MODEL: &str = "CLIP image embedder";

/// Pre-processing settings (`object_map_node.clip`).
#[derive(Debug, Clone, PartialEq)]
pub struct ClipOptions {
    /// Input side when the model's input is dynamic.
    pub image_size: u32,
    pub mean: [f32; 3],
    pub std: [f32; 3],
    /// Paint pixels outside the mask with the mean colour.
    pub mask_background: bool,
    /// Output to read; empty for the first.
    pub output: String,
}

impl From<&asp_config::sections::perception::ClipConfig> for ClipOptions {
    fn from(c: &asp_config::sections::perception::ClipConfig) -> Self {
        Self {
            image_size: c.image_size,
            mean: c.mean,
            std: c.std,
            mask_background: c.mask_background,
            output: c.output.clone(),
        }
    }
}

/// CLIP-style image embedder run by ONNX Runtime.
#[derive(Debug)]
pub struct OnnxImageEmbedder {
    model: OnnxModel,
    input: String,
    output: String,
    size: u32,
    dim: usize,
    options: ClipOptions,
}

impl OnnxImageEmbedder {
    pub fn load(path: &Path, options: ClipOptions, onnx: &OnnxOptions) -> Result<Self, ModelError> {
        let model = OnnxModel::load(MODEL, path, onnx)?;
        let input = model
            .inputs()
            .first()
            .ok_or_else(|| model.bad_model("has no inputs".into()))?
            .clone();
        if input.shape.len() != 4 || (input.shape[1] != 3 && input.shape[1] > 0) {
            return Err(model.bad_model(format!(
                "input {} has shape {:?}; expected [1, 3, S, S]",
                input.name, input.shape
            )));
        }
        let size = match fixed_hw(&input) {
            Some((h, w)) if h == w => h,
            Some((h, w)) => {
                return Err(model.bad_model(format!(
                    "input {} is {w}×{h}; a square input is expected",
                    input.name
                )));
            }
            None => options.image_size,
        };
        let output = if options.output.is_empty() {
            model
                .outputs()
                .first()
                .ok_or_else(|| model.bad_model("has no outputs".into()))?
                .clone()
        } else {
            model.require_outputs(&[options.output.as_str()])?;
            model
                .outputs()
                .iter()
                .find(|o| o.name == options.output)
                .cloned()
                .ok_or_else(|| model.bad_model(format!("has no output {:?}", options.output)))?
        };
        let dim = output
            .shape
            .last()
            .copied()
            .filter(|&d| d > 0)
            .ok_or_else(|| {
                model.bad_model(format!(
                    "output {} has no fixed embedding size: {:?}",
                    output.name, output.shape
                ))
            })? as usize;
        Ok(Self {
            model,
            input: input.name,
            output: output.name,
            size,
            dim,
            options,
        })
    }

    /// The square input side the model runs at.
    pub fn input_size(&self) -> u32 {
        self.size
    }

    /// Embeds an RGB image as it is.
    pub fn embed_rgb(&self, rgb: &RgbImage) -> Result<Vec<f32>, ModelError> {
        let data = clip_input(rgb, self.size, self.options.mean, self.options.std);
        let s = i64::from(self.size);
        let out = self
            .model
            .run(
                vec![(
                    self.input.as_str(),
                    InputTensor::F32(vec![1, 3, s, s], data),
                )],
                &[self.output.as_str()],
            )?
            .remove(0);
        if out.data.len() != self.dim {
            return Err(self.model.bad_model(format!(
                "returned {} of shape {:?}; expected [1, {}]",
                self.output, out.shape, self.dim
            )));
        }
        let mut v = out.data;
        if v.iter().any(|x| !x.is_finite()) {
            return Err(ModelError::BadAnswer {
                model: MODEL.into(),
                message: "the embedding has non-finite values".into(),
            });
        }
        asp_core::map::normalize(&mut v);
        Ok(v)
    }
}

impl ImageEmbedder for OnnxImageEmbedder {
    fn dim(&self) -> usize {
        self.dim
    }

    /// Without `mask_background` the whole given image is embedded: the map builder
    /// passes the padded crop around the segment, as ConceptGraphs does. With it, the
    /// mask's bounding box is cut out and the pixels outside the mask are painted with the
    /// normalisation mean (zero after normalising).
    fn embed_image(
        &self,
        image: &Observation,
        mask: Option<&Mask>,
    ) -> Result<Vec<f32>, ModelError> {
        let Some(mask) = mask else {
            return self.embed_rgb(&image.rgb);
        };
        if (mask.width(), mask.height()) != (image.width(), image.height()) {
            return Err(ModelError::InvalidInput {
                model: MODEL.into(),
                problem: format!(
                    "mask is {}×{} but the image is {}×{}",
                    mask.width(),
                    mask.height(),
                    image.width(),
                    image.height()
                ),
            });
        }
        let Some(rect) = mask.bounding_rect() else {
            return Err(ModelError::InvalidInput {
                model: MODEL.into(),
                problem: "the mask is empty".into(),
            });
        };
        let rect = if self.options.mask_background {
            rect
        } else {
            // the caller's crop already holds the context it wants around the segment
            asp_core::PixelRect {
                x0: 0,
                y0: 0,
                x1: image.width(),
                y1: image.height(),
            }
        };
        let (mut crop, _) = image.rgb.crop(&rect.to_box());
        if self.options.mask_background {
            let fill = self.options.mean.map(|m| (m * 255.0).round() as u8);
            let m = mask.crop(&rect);
            for (p, inside) in crop.pixels_mut().iter_mut().zip(m.image().pixels()) {
                if !inside {
                    *p = fill;
                }
            }
        }
        self.embed_rgb(&crop)
    }
}
