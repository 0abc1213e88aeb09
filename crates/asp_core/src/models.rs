//! The model interfaces perception and affordance detection are written against: a
//! class-agnostic segmenter, a promptable segmenter, image and text embedders, and the
//! three things we ask a vision-language model. Each has an ONNX or HTTP implementation
//! for real cameras and a simulated one driven by the simulator's ground truth.
//!
//! Segmenters and embedders are synchronous (CPU/GPU inference: call them from
//! `spawn_blocking` in async code); VLM questions are async (they go over HTTP).

use std::collections::BTreeMap;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::image::{Box2, DepthImage, LabelImage, Mask, PixelRect, RgbImage};
use crate::skill::Skill;

/// What the simulator knows about one object in view.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GtInstance {
    /// Instance id as drawn in [`GroundTruth::instance_ids`] (never 0).
    pub id: u32,
    /// The world file's name for it, e.g. `mug`.
    pub name: String,
    /// Free-text description, e.g. "a red ceramic mug with a handle".
    pub description: String,
    /// Furniture, walls, fixtures: what a VLM sees cannot be picked up.
    #[serde(default)]
    pub fixed: bool,
}

/// What the simulator knows about one part in view.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GtPart {
    /// Part id as drawn in [`GroundTruth::part_ids`] (never 0).
    pub id: u32,
    /// The instance it belongs to.
    pub instance: u32,
    /// Part name, e.g. "mug handle".
    pub name: String,
    /// Skills the part affords, e.g. `[grasp_part]` for a handle.
    pub skills: Vec<Skill>,
    /// Times the part (a button, a key) has been pressed so far: the state a simulated
    /// VLM compares between a before and an after view.
    #[serde(default)]
    pub presses: u32,
}

/// Per-pixel ground truth of a simulated image, for simulated models and for evaluation
/// only: no real camera has it, and no product decision may read it outside a simulated
/// model or an evaluation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroundTruth {
    /// Instance id per pixel, 0 for background.
    pub instance_ids: LabelImage,
    /// Part id per pixel, 0 where no part is visible.
    pub part_ids: LabelImage,
    pub instances: BTreeMap<u32, GtInstance>,
    pub parts: BTreeMap<u32, GtPart>,
}

/// The distinct labels of `pixels`. Labels come in long runs, so only a change of label
/// touches the set (collecting every pixel into it sorted the whole crop).
fn labels_present(pixels: &[u32]) -> std::collections::BTreeSet<u32> {
    let mut seen = std::collections::BTreeSet::new();
    let mut last = None;
    for &l in pixels {
        if last != Some(l) {
            seen.insert(l);
            last = Some(l);
        }
    }
    seen
}

impl GroundTruth {
    /// The ground truth of the sub-image `rect` (legends keep only what is visible there).
    pub fn crop(&self, rect: &PixelRect) -> GroundTruth {
        let b = rect.to_box();
        let (instance_ids, _) = self.instance_ids.crop(&b);
        let (part_ids, _) = self.part_ids.crop(&b);
        let seen_i = labels_present(instance_ids.pixels());
        let seen_p = labels_present(part_ids.pixels());
        GroundTruth {
            instances: self
                .instances
                .iter()
                .filter(|(id, _)| seen_i.contains(id))
                .map(|(k, v)| (*k, v.clone()))
                .collect(),
            parts: self
                .parts
                .iter()
                .filter(|(id, _)| seen_p.contains(id))
                .map(|(k, v)| (*k, v.clone()))
                .collect(),
            instance_ids,
            part_ids,
        }
    }

    /// The mask of one instance.
    pub fn instance_mask(&self, id: u32) -> Mask {
        Mask::from_label(&self.instance_ids, id)
    }

    /// The mask of one part.
    pub fn part_mask(&self, id: u32) -> Mask {
        Mask::from_label(&self.part_ids, id)
    }
}

/// An image as a model sees it: colour, optionally registered depth, and — in simulation
/// only — ground truth for simulated models.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Observation {
    pub rgb: RgbImage,
    pub depth: Option<DepthImage>,
    pub ground_truth: Option<GroundTruth>,
}

impl Observation {
    pub fn width(&self) -> u32 {
        self.rgb.width()
    }
    pub fn height(&self) -> u32 {
        self.rgb.height()
    }

    /// The sub-observation `rect` (clamped), with depth and ground truth cut alike.
    pub fn crop(&self, rect: &PixelRect) -> Observation {
        let b = rect.to_box();
        Observation {
            rgb: self.rgb.crop(&b).0,
            depth: self.depth.as_ref().map(|d| d.crop(&b).0),
            ground_truth: self.ground_truth.as_ref().map(|g| g.crop(rect)),
        }
    }
}

/// A mask with the model's confidence in it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Segment {
    pub mask: Mask,
    /// In `[0, 1]`.
    pub score: f32,
}

/// A prompt for a promptable segmenter, in the observation's pixel coordinates.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Prompt {
    Box { bbox: Box2 },
    Point { x: f32, y: f32 },
    BoxAndPoint { bbox: Box2, x: f32, y: f32 },
}

/// A model failed or cannot run on this input.
#[derive(Debug, Clone, PartialEq, thiserror::Error, Serialize, Deserialize)]
pub enum ModelError {
    /// A simulated model was given an image without simulator ground truth.
    #[error(
        "{model} is simulated and needs simulator ground truth; configure a real backend for real cameras"
    )]
    MissingGroundTruth { model: String },
    #[error("invalid input to {model}: {problem}")]
    InvalidInput { model: String, problem: String },
    /// Loading or running the model failed (missing file, runtime error, HTTP error).
    #[error("{model} failed: {message}")]
    Backend { model: String, message: String },
    /// The model answered, but not in the expected form.
    #[error("{model} gave an unusable answer: {message}")]
    BadAnswer { model: String, message: String },
}

/// Class-agnostic "segment everything" (SAM-style automatic mask generation).
pub trait Segmenter: Send + Sync {
    fn segment(&self, image: &Observation) -> Result<Vec<Segment>, ModelError>;
}

/// Box/point-prompted segmentation (SAM-style decoder).
pub trait PromptableSegmenter: Send + Sync {
    fn segment_prompt(&self, image: &Observation, prompt: &Prompt) -> Result<Segment, ModelError>;
}

/// Image side of a vision-language embedding (CLIP-like); unit-length output.
pub trait ImageEmbedder: Send + Sync {
    fn dim(&self) -> usize;
    /// Embeds the region `mask` of `image` (the whole image when `None`).
    fn embed_image(&self, image: &Observation, mask: Option<&Mask>)
    -> Result<Vec<f32>, ModelError>;
}

/// Text side of the embedding, comparable with [`ImageEmbedder`] output; unit length.
pub trait TextEmbedder: Send + Sync {
    fn dim(&self) -> usize;
    fn embed_text(&self, text: &str) -> Result<Vec<f32>, ModelError>;
}

/// VLM question of `object_retrieval` (SPEC §1.3): is this object what the query asks for?
#[async_trait]
pub trait RetrievalVlm: Send + Sync {
    /// Looks at an object's best views and answers whether it matches `query`.
    async fn confirm(&self, query: &str, views: &[Observation]) -> Result<bool, ModelError>;
}

/// A (skill, part) pair a VLM proposes for an action (SPEC §1.5 step 1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AffordanceProposal {
    pub skill: Skill,
    pub part: String,
}

/// A part located in a view (SPEC §1.5 step 2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartLocation {
    pub bbox: Box2,
    /// In `[0, 1]`.
    pub confidence: f32,
}

/// VLM questions of affordance detection (SPEC §1.5).
#[async_trait]
pub trait AffordanceVlm: Send + Sync {
    /// Which (skill, part) pairs achieve `action` on the object in these views.
    async fn propose(
        &self,
        action: &str,
        views: &[Observation],
    ) -> Result<Vec<AffordanceProposal>, ModelError>;
    /// Where `part` is in `view`; `None` when it is not visible.
    async fn locate_part(
        &self,
        part: &str,
        view: &Observation,
    ) -> Result<Option<PartLocation>, ModelError>;
}

/// VLM question of outcome verification (SPEC §4.3): a yes/no judgement on the views
/// before and after a step.
#[async_trait]
pub trait OutcomeVlm: Send + Sync {
    async fn yes_no(
        &self,
        question: &str,
        before: &Observation,
        after: &Observation,
    ) -> Result<bool, ModelError>;
}

/// What an object seen on a tour lets the robot do (Affordance RAG, SPEC §3.1: pick and
/// place primary, open and close possible).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ViewAffordance {
    Pick,
    Place,
    Open,
    Close,
}

impl ViewAffordance {
    pub const ALL: [ViewAffordance; 4] = [
        ViewAffordance::Pick,
        ViewAffordance::Place,
        ViewAffordance::Open,
        ViewAffordance::Close,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ViewAffordance::Pick => "pick",
            ViewAffordance::Place => "place",
            ViewAffordance::Open => "open",
            ViewAffordance::Close => "close",
        }
    }
}

impl std::str::FromStr for ViewAffordance {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        ViewAffordance::ALL
            .into_iter()
            .find(|a| a.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| format!("affordance {s:?} is not one of pick, place, open, close"))
    }
}

/// One (affordance, score) of a seen object, score in [0, 1].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ViewAffordanceScore {
    pub affordance: ViewAffordance,
    pub score: f32,
}

/// An object a VLM found in a view, with what it affords (SPEC §3.1 levels 1–2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeenObject {
    /// "red metal mug".
    pub description: String,
    /// Where it is in the image, pixels.
    pub bbox: Box2,
    pub affordances: Vec<ViewAffordanceScore>,
}

/// A VLM's account of one tour image: the place and the objects in it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ViewDescription {
    /// "a kitchen with a counter, a sink and a kettle".
    pub description: String,
    pub objects: Vec<SeenObject>,
}

/// VLM question of memory construction (SPEC §3.1): what is in this tour image.
#[async_trait]
pub trait MemoryVlm: Send + Sync {
    /// Describes `view` and lists the objects it shows with their boxes and affordances.
    async fn describe_view(&self, view: &Observation) -> Result<ViewDescription, ModelError>;
}

/// Five concrete keywords for a thing the robot has no word for (SPEC §4.2), what a VLM
/// reads off pictures of it: "silver", "eight-sided jug", "aluminium", "small", "brews
/// coffee on a stove".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConceptKeywords {
    pub colour: String,
    pub shape: String,
    pub material: String,
    pub size: String,
    pub function: String,
}

impl ConceptKeywords {
    /// The five in one phrase, to search and match with: "silver, eight-sided jug, …".
    pub fn phrase(&self) -> String {
        [
            &self.colour,
            &self.shape,
            &self.material,
            &self.size,
            &self.function,
        ]
        .iter()
        .map(|s| s.trim())
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join(", ")
    }
}

/// What grounding an unknown word found (SPEC §4.2): the five keywords (vision memory)
/// and, when one fits, the known word that replaces it (replacement memory).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grounding {
    pub keywords: ConceptKeywords,
    pub replacement: Option<String>,
    /// The pages and pictures it was read from.
    pub sources: Vec<String>,
}

/// Where groundings are kept between goals and runs: a word grounded once costs no web
/// search the next time. Each write is whole or absent.
pub trait ConceptStore: Send + Sync {
    /// What `word` was grounded to, if it was.
    fn recall(&self, word: &str) -> Result<Option<Grounding>, String>;
    /// Keeps `word`'s keywords and where they were read (vision memory).
    fn remember_keywords(
        &self,
        word: &str,
        keywords: &ConceptKeywords,
        sources: &[String],
    ) -> Result<(), String>;
    /// Keeps the known word that replaced `word`, once it found something (replacement
    /// memory: a replacement that grounds nothing is not kept).
    fn remember_replacement(&self, word: &str, replacement: &str) -> Result<(), String>;
}

/// Pictures in one image, a grid of equal cells, row by row (SPEC §4.2's collage): one
/// question about several web pictures.
#[derive(Debug, Clone, PartialEq)]
pub struct Collage {
    pub image: Observation,
    pub columns: u32,
    /// How many cells hold a picture (the last row may be short).
    pub pictures: u32,
    /// One cell's size, pixels.
    pub cell: (u32, u32),
}

/// Cells' background where a picture does not fill its cell.
const COLLAGE_BACKGROUND: [u8; 3] = [255, 255, 255];

impl Collage {
    /// `pictures` in cells of `cell` pixels, `columns` to a row. A picture of the cell's
    /// size is copied pixel for pixel; another is scaled (nearest pixel) to fit, centred.
    pub fn grid(pictures: &[RgbImage], columns: u32, cell: (u32, u32)) -> Option<Self> {
        let (cw, ch) = cell;
        if pictures.is_empty() || columns == 0 || cw == 0 || ch == 0 {
            return None;
        }
        let n = u32::try_from(pictures.len()).ok()?;
        let columns = columns.min(n);
        let rows = n.div_ceil(columns);
        let (w, h) = (columns * cw, rows * ch);
        let mut px = vec![COLLAGE_BACKGROUND; (w * h) as usize];
        for (i, p) in pictures.iter().enumerate() {
            let (pw, ph) = (p.width(), p.height());
            if pw == 0 || ph == 0 {
                continue;
            }
            let i = i as u32;
            let (x0, y0) = ((i % columns) * cw, (i / columns) * ch);
            // the scale that fits the cell, 1 for a picture of its size
            let scale = (cw as f32 / pw as f32).min(ch as f32 / ph as f32);
            let (sw, sh) = (
                ((pw as f32 * scale).round() as u32).clamp(1, cw),
                ((ph as f32 * scale).round() as u32).clamp(1, ch),
            );
            let (ox, oy) = (x0 + (cw - sw) / 2, y0 + (ch - sh) / 2);
            for y in 0..sh {
                let sy = ((y * ph) / sh).min(ph - 1);
                for x in 0..sw {
                    let sx = ((x * pw) / sw).min(pw - 1);
                    if let Some(v) = p.get(sx, sy) {
                        px[((oy + y) * w + ox + x) as usize] = *v;
                    }
                }
            }
        }
        let rgb = RgbImage::from_vec(w, h, px).ok()?;
        Some(Self {
            image: Observation {
                rgb,
                depth: None,
                ground_truth: None,
            },
            columns,
            pictures: n,
            cell,
        })
    }
}

/// VLM questions of grounding an unknown word (SPEC §4.2): what pictures of it show, and
/// which word the robot knows names the same kind of thing.
#[async_trait]
pub trait ConceptVlm: Send + Sync {
    /// Five keywords for what `word` names, from `collage` (web pictures of it).
    async fn keywords(&self, word: &str, collage: &Collage) -> Result<ConceptKeywords, ModelError>;

    /// The word of `known` that best names what `word` names, judged from `collage`,
    /// `keywords` and `web_text` (page excerpts, quoted as untrusted data); `None` when
    /// none fits. An answer outside `known` is an error, not a replacement.
    async fn replacement(
        &self,
        word: &str,
        collage: &Collage,
        keywords: &ConceptKeywords,
        web_text: &[String],
        known: &[String],
    ) -> Result<Option<String>, ModelError>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image::Image;

    fn gt() -> GroundTruth {
        // 4×2 image: instance 1 on the left half, instance 2 on the right; part 5 of 1 at (0,0)
        let instance_ids = Image::from_vec(4, 2, vec![1, 1, 2, 2, 1, 1, 2, 2]).unwrap();
        let part_ids = Image::from_vec(4, 2, vec![5, 0, 0, 0, 0, 0, 0, 0]).unwrap();
        GroundTruth {
            instance_ids,
            part_ids,
            instances: [
                (
                    1,
                    GtInstance {
                        id: 1,
                        name: "mug".into(),
                        description: "a red mug".into(),
                        fixed: false,
                    },
                ),
                (
                    2,
                    GtInstance {
                        id: 2,
                        name: "bowl".into(),
                        description: "a blue bowl".into(),
                        fixed: false,
                    },
                ),
            ]
            .into(),
            parts: [(
                5,
                GtPart {
                    id: 5,
                    instance: 1,
                    name: "mug handle".into(),
                    skills: vec![Skill::GraspPart],
                    presses: 0,
                },
            )]
            .into(),
        }
    }

    #[test]
    fn a_collage_copies_pictures_of_its_cell_size_and_fits_others() {
        let red = Image::filled(4, 3, [255, 0, 0]);
        let blue = Image::filled(8, 3, [0, 0, 255]);
        let c = Collage::grid(&[red.clone(), blue, red], 2, (4, 3)).unwrap();
        assert_eq!((c.image.width(), c.image.height()), (8, 6));
        assert_eq!((c.columns, c.pictures), (2, 3));
        // the first cell is the red picture, pixel for pixel
        assert_eq!(
            c.image.rgb.crop(&Box2::new(0.0, 0.0, 4.0, 3.0)).0,
            Image::filled(4, 3, [255, 0, 0])
        );
        // the wide blue one is scaled to fit: 4×2 (1.5 rows round to 2), the rest white
        assert_eq!(c.image.rgb.get(5, 1), Some(&[0, 0, 255]));
        assert_eq!(c.image.rgb.get(5, 2), Some(&COLLAGE_BACKGROUND));
        // the last row's second cell is empty
        assert_eq!(c.image.rgb.get(6, 4), Some(&COLLAGE_BACKGROUND));
        assert!(Collage::grid(&[], 2, (4, 3)).is_none());
    }

    #[test]
    fn keywords_read_as_one_phrase() {
        let k = ConceptKeywords {
            colour: "silver".into(),
            shape: "eight-sided jug".into(),
            material: " ".into(),
            size: "small".into(),
            function: "brews coffee".into(),
        };
        assert_eq!(k.phrase(), "silver, eight-sided jug, small, brews coffee");
    }

    #[test]
    fn crop_keeps_only_visible_legend_entries() {
        let g = gt();
        let right = g.crop(&PixelRect {
            x0: 2,
            y0: 0,
            x1: 4,
            y1: 2,
        });
        assert_eq!(right.instances.keys().copied().collect::<Vec<_>>(), vec![2]);
        assert!(right.parts.is_empty());
        let left = g.crop(&PixelRect {
            x0: 0,
            y0: 0,
            x1: 2,
            y1: 2,
        });
        assert_eq!(left.parts.len(), 1);
        assert_eq!(g.instance_mask(1).area(), 4);
        assert_eq!(g.part_mask(5).area(), 1);
    }

    #[test]
    fn observation_crop_cuts_everything_alike() {
        let obs = Observation {
            rgb: Image::filled(4, 2, [1, 2, 3]),
            depth: Some(Image::filled(4, 2, 1.0)),
            ground_truth: Some(gt()),
        };
        let c = obs.crop(&PixelRect {
            x0: 1,
            y0: 0,
            x1: 3,
            y1: 1,
        });
        assert_eq!((c.width(), c.height()), (2, 1));
        assert_eq!(c.depth.as_ref().unwrap().width(), 2);
        assert_eq!(
            c.ground_truth.as_ref().unwrap().instance_ids.pixels(),
            &[1, 2]
        );
    }
}
