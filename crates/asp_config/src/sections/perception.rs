//! `object_map_node`: segmentation, embedding, merging and retrieval (SPEC §1.1, §1.3).

use std::path::PathBuf;

use garde::Validate;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate, Default)]
#[serde(default, deny_unknown_fields)]
pub struct ObjectMapConfig {
    #[garde(dive)]
    pub models: PerceptionModels,
    #[garde(dive)]
    pub merge: MergeConfig,
    #[garde(dive)]
    pub crops: CropConfig,
    #[garde(dive)]
    pub depth: DepthRange,
    #[garde(dive)]
    pub retrieval: RetrievalConfig,
}

/// Which implementation backs each model trait.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelBackend {
    /// Driven by the embedded simulator's ground truth, with configurable error.
    Simulated,
    /// An ONNX model run through ONNX Runtime.
    Onnx,
    /// A vision-language model behind an OpenAI-compatible endpoint (`agent_node.llm`).
    OpenaiCompatible,
}

/// The text embedder that turns queries (and, in simulation, object descriptions) into
/// vectors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TextEmbedderBackend {
    /// all-MiniLM-L6-v2 through ONNX Runtime (installed by `scripts/setup`).
    MinilmOnnx,
    /// Hashed character n-grams: lexical only, needs no model file.
    Hashing,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(default, deny_unknown_fields)]
pub struct PerceptionModels {
    /// Class-agnostic segmenter. Default `simulated`.
    #[garde(skip)]
    pub segmenter: ModelBackend,
    /// ONNX file for `segmenter: onnx`, relative to `paths.models_dir`.
    #[garde(skip)]
    pub segmenter_model: PathBuf,
    /// Image-text embedder for crops. Default `simulated`.
    #[garde(skip)]
    pub image_embedder: ModelBackend,
    /// ONNX file for `image_embedder: onnx`.
    #[garde(skip)]
    pub image_embedder_model: PathBuf,
    /// Text embedder. Default `minilm_onnx`.
    #[garde(skip)]
    pub text_embedder: TextEmbedderBackend,
    /// MiniLM ONNX file. Default `minilm/model.onnx`.
    #[garde(skip)]
    pub text_embedder_model: PathBuf,
    /// Its `tokenizer.json`. Default `minilm/tokenizer.json`.
    #[garde(skip)]
    pub text_embedder_tokenizer: PathBuf,
    /// VLM that confirms retrieval candidates and proposes affordances. Default
    /// `simulated`.
    #[garde(skip)]
    pub vlm: ModelBackend,
    /// Threads ONNX Runtime may use per session. Default 1.
    #[garde(range(min = 1, max = 64))]
    pub intra_op_threads: u32,
}

impl Default for PerceptionModels {
    fn default() -> Self {
        Self {
            segmenter: ModelBackend::Simulated,
            segmenter_model: "segmenter/model.onnx".into(),
            image_embedder: ModelBackend::Simulated,
            image_embedder_model: "image_embedder/model.onnx".into(),
            text_embedder: TextEmbedderBackend::MinilmOnnx,
            text_embedder_model: "minilm/model.onnx".into(),
            text_embedder_tokenizer: "minilm/tokenizer.json".into(),
            vlm: ModelBackend::Simulated,
            intra_op_threads: 1,
        }
    }
}

/// The ConceptGraphs merging rule: merge two objects when their geometry overlaps AND
/// their features agree (SPEC §1.1 step 3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(default, deny_unknown_fields)]
pub struct MergeConfig {
    /// Voxel overlap relative to the smaller object, in [0, 1]. Default 0.25.
    #[garde(range(min = 0.0, max = 1.0))]
    pub overlap_threshold: f32,
    /// Cosine similarity of features, in [-1, 1]. Default 0.75.
    #[garde(range(min = -1.0, max = 1.0))]
    pub feature_similarity: f32,
    /// Voxel edge for downsampling and overlap, metres. Default 0.01.
    #[garde(range(min = 0.001, max = 0.5))]
    pub voxel_size: f32,
}

impl Default for MergeConfig {
    fn default() -> Self {
        Self {
            overlap_threshold: 0.25,
            feature_similarity: 0.75,
            voxel_size: 0.01,
        }
    }
}

/// Crop bookkeeping (SPEC §1.1 step 4).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(default, deny_unknown_fields)]
pub struct CropConfig {
    /// Crops kept per object. Default 5.
    #[garde(range(min = 1, max = 100))]
    pub max_per_object: usize,
    /// Score multiplier for segments touching the image border, [0, 1]. Default 0.5.
    #[garde(range(min = 0.0, max = 1.0))]
    pub border_penalty: f32,
    /// Segments smaller than this many pixels are dropped. Default 64.
    #[garde(range(min = 1))]
    pub min_segment_area: u64,
    /// Pixels of context added around a segment's box when cropping. Default 8.
    #[garde(range(max = 256))]
    pub padding_px: u32,
}

impl Default for CropConfig {
    fn default() -> Self {
        Self {
            max_per_object: 5,
            border_penalty: 0.5,
            min_segment_area: 64,
            padding_px: 8,
        }
    }
}

/// Depth readings outside this range are ignored, metres.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(default, deny_unknown_fields)]
#[garde(allow_unvalidated)]
pub struct DepthRange {
    /// Default 0.1.
    #[garde(range(min = 0.0, max = 100.0))]
    pub min: f32,
    /// Default 6.0.
    #[garde(range(min = 0.0, max = 100.0), custom(greater_than(self.min)))]
    pub max: f32,
}

impl Default for DepthRange {
    fn default() -> Self {
        Self { min: 0.1, max: 6.0 }
    }
}

fn greater_than(min: f32) -> impl FnOnce(&f32, &()) -> garde::Result {
    move |v, _| {
        if *v > min {
            Ok(())
        } else {
            Err(garde::Error::new(format!(
                "must be greater than min ({min})"
            )))
        }
    }
}

/// `object_retrieval` (SPEC §1.3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(default, deny_unknown_fields)]
pub struct RetrievalConfig {
    /// Candidates ranked by cosine similarity before VLM confirmation. Default 3.
    #[garde(range(min = 1, max = 50))]
    pub top_k: usize,
    /// Crops shown to the VLM per candidate. Default 2.
    #[garde(range(min = 1, max = 10))]
    pub crops_per_candidate: usize,
    /// Ask the VLM to confirm each candidate (off: keep the top-k as they are). Default on.
    #[garde(skip)]
    pub confirm_with_vlm: bool,
}

impl Default for RetrievalConfig {
    fn default() -> Self {
        Self {
            top_k: 3,
            crops_per_candidate: 2,
            confirm_with_vlm: true,
        }
    }
}
