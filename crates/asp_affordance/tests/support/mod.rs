//! Test models that read colours: a "VLM" that boxes the pixels of a colour in whatever
//! image it is given (so zoomed crops work), and a segmenter that returns colour regions,
//! each following a per-call script. They stand in for the models around the harness;
//! the harness, verifier, router and memory under test are the real ones.
#![allow(clippy::unwrap_used, dead_code)]

use std::sync::Mutex;

use asp_core::models::{
    AffordanceProposal, AffordanceVlm, ImageEmbedder, ModelError, Observation, PartLocation,
    Prompt, PromptableSegmenter, Segment, TextEmbedder,
};
use asp_core::{Box2, Image, Mask, Rgb8, Skill};
use async_trait::async_trait;

pub const BG: Rgb8 = [100, 100, 100];
pub const BODY: Rgb8 = [30, 60, 200];
pub const PART: Rgb8 = [220, 30, 30];
/// A small screw head left of the part: a wrong region a detector may box.
pub const SCREW: Rgb8 = [40, 200, 40];
pub const SIZE: u32 = 64;

/// A 64×64 view: a blue body [10, 54)² with a red part [40, 50) × [24, 40) and a green
/// screw [30, 36) × [26, 32).
pub fn view() -> Observation {
    let mut rgb = Image::filled(SIZE, SIZE, BG);
    for y in 10..54 {
        for x in 10..54 {
            *rgb.get_mut(x, y).unwrap() = if (40..50).contains(&x) && (24..40).contains(&y) {
                PART
            } else if (30..36).contains(&x) && (26..32).contains(&y) {
                SCREW
            } else {
                BODY
            };
        }
    }
    Observation {
        rgb,
        depth: Some(Image::filled(SIZE, SIZE, 0.8)),
        ground_truth: None,
    }
}

pub fn part_mask() -> Mask {
    Mask::fill_box(SIZE, SIZE, &Box2::new(40.0, 24.0, 50.0, 40.0))
}

pub fn object_mask() -> Mask {
    Mask::fill_box(SIZE, SIZE, &Box2::new(10.0, 10.0, 54.0, 54.0))
}

fn color_mask(obs: &Observation, colors: &[Rgb8]) -> Mask {
    Mask::from_image(obs.rgb.map(|p| colors.contains(p)))
}

fn color_box(obs: &Observation, color: Rgb8) -> Option<Box2> {
    color_mask(obs, &[color])
        .bounding_rect()
        .map(|r| r.to_box())
}

/// What the VLM does on one call.
#[derive(Debug, Clone, Copy)]
pub enum Locate {
    /// The part's box, with this confidence.
    Part(f32),
    /// The box of another colour's pixels (a wrong region).
    Color(Rgb8, f32),
    /// The part's box shifted by a fraction of its size.
    Shifted(f32, f32),
    Miss,
    Fail,
}

pub struct ColorVlm {
    script: Mutex<Vec<Locate>>,
    pub queries: Mutex<Vec<(String, u32)>>,
    proposals: Vec<AffordanceProposal>,
}

impl ColorVlm {
    pub fn new(script: Vec<Locate>) -> Self {
        Self {
            script: Mutex::new(script),
            queries: Mutex::new(Vec::new()),
            proposals: vec![AffordanceProposal {
                skill: Skill::TipPush,
                part: "red button".into(),
            }],
        }
    }
    pub fn calls(&self) -> usize {
        self.queries.lock().unwrap().len()
    }
}

#[async_trait]
impl AffordanceVlm for ColorVlm {
    async fn propose(
        &self,
        _: &str,
        _: &[Observation],
    ) -> Result<Vec<AffordanceProposal>, ModelError> {
        Ok(self.proposals.clone())
    }

    async fn locate_part(
        &self,
        part: &str,
        view: &Observation,
    ) -> Result<Option<PartLocation>, ModelError> {
        self.queries
            .lock()
            .unwrap()
            .push((part.to_owned(), view.width()));
        let step = {
            let mut s = self.script.lock().unwrap();
            if s.len() > 1 { s.remove(0) } else { s[0] }
        };
        Ok(match step {
            Locate::Part(c) => color_box(view, PART).map(|bbox| PartLocation {
                bbox,
                confidence: c,
            }),
            Locate::Color(col, c) => color_box(view, col).map(|bbox| PartLocation {
                bbox,
                confidence: c,
            }),
            Locate::Shifted(f, c) => color_box(view, PART).map(|b| PartLocation {
                bbox: b.translated(f * b.width(), f * b.height()),
                confidence: c,
            }),
            Locate::Miss => None,
            Locate::Fail => {
                return Err(ModelError::Backend {
                    model: "color vlm".into(),
                    message: "scripted failure".into(),
                });
            }
        })
    }
}

/// What the segmenter does on one call.
#[derive(Debug, Clone, Copy)]
pub enum Seg {
    /// The red pixels.
    Part,
    /// The part grown by n pixels (a leaky boundary).
    Grown(u32),
    /// Body and part: the whole object.
    Whole,
    /// The prompt box filled (nothing matched).
    Filled,
}

pub struct ColorSegmenter {
    script: Mutex<Vec<Seg>>,
    pub prompts: Mutex<Vec<Prompt>>,
}

impl ColorSegmenter {
    pub fn new(script: Vec<Seg>) -> Self {
        Self {
            script: Mutex::new(script),
            prompts: Mutex::new(Vec::new()),
        }
    }
}

impl PromptableSegmenter for ColorSegmenter {
    fn segment_prompt(&self, image: &Observation, prompt: &Prompt) -> Result<Segment, ModelError> {
        self.prompts.lock().unwrap().push(*prompt);
        // point prompts (the final fusion) take the region under the point
        if let Prompt::BoxAndPoint { x, y, .. } | Prompt::Point { x, y } = prompt {
            let p = image.rgb.get(*x as u32, *y as u32).copied().unwrap_or(BG);
            let mask = if p == PART {
                color_mask(image, &[PART])
            } else if p == BODY {
                color_mask(image, &[PART, BODY])
            } else {
                Mask::empty(image.width(), image.height())
            };
            return Ok(Segment { mask, score: 0.9 });
        }
        let step = {
            let mut s = self.script.lock().unwrap();
            if s.len() > 1 { s.remove(0) } else { s[0] }
        };
        let mask = match step {
            Seg::Part => color_mask(image, &[PART]),
            Seg::Whole => color_mask(image, &[PART, BODY]),
            Seg::Filled => match prompt {
                Prompt::Box { bbox } => Mask::fill_box(image.width(), image.height(), bbox),
                _ => Mask::empty(image.width(), image.height()),
            },
            Seg::Grown(n) => {
                let part = color_mask(image, &[PART]);
                match part.bounding_rect() {
                    Some(r) => {
                        Mask::fill_box(image.width(), image.height(), &r.to_box().padded(n as f32))
                    }
                    None => part,
                }
            }
        };
        Ok(Segment { mask, score: 0.9 })
    }
}

/// Mean colour under the mask, unit length: a small real image embedding.
pub struct MeanColorEmbedder;

impl ImageEmbedder for MeanColorEmbedder {
    fn dim(&self) -> usize {
        3
    }
    fn embed_image(
        &self,
        image: &Observation,
        mask: Option<&Mask>,
    ) -> Result<Vec<f32>, ModelError> {
        let mut sum = [0f32; 3];
        for (x, y, p) in image.rgb.enumerate() {
            if mask.is_none_or(|m| m.get(x, y)) {
                for c in 0..3 {
                    sum[c] += f32::from(p[c]);
                }
            }
        }
        let n = sum.iter().map(|v| v * v).sum::<f32>().sqrt().max(1e-6);
        Ok(sum.iter().map(|v| v / n).collect())
    }
}

/// Hashed bag of words, unit length.
pub struct BagOfWords;

impl TextEmbedder for BagOfWords {
    fn dim(&self) -> usize {
        16
    }
    fn embed_text(&self, text: &str) -> Result<Vec<f32>, ModelError> {
        let mut v = [0f32; 16];
        for w in text.split_whitespace() {
            let h = w
                .bytes()
                .fold(7u32, |a, b| a.wrapping_mul(31).wrapping_add(u32::from(b)));
            v[(h % 16) as usize] += 1.0;
        }
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
        Ok(v.iter().map(|x| x / n).collect())
    }
}
