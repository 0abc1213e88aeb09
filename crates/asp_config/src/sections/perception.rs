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
    #[garde(dive)]
    pub filter: CloudFilterConfig,
    #[garde(dive)]
    pub sam: SamConfig,
    #[garde(dive)]
    pub clip: ClipConfig,
    #[garde(dive)]
    pub simulation: PerceptionSimulationConfig,
    #[garde(dive)]
    pub replay: ReplayConfig,
    #[garde(dive)]
    pub mapping: MappingConfig,
    #[garde(dive)]
    pub concepts: ConceptsConfig,
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
    /// The text tower of the CLIP model whose image tower is `image_embedder_model`:
    /// needed for retrieval with `image_embedder: onnx` (both sides in one space).
    ClipOnnx,
    /// Hashed character n-grams: lexical only, needs no model file.
    Hashing,
}

/// Where ONNX Runtime runs a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExecutionProvider {
    /// The CPU (every onnxruntime build).
    Cpu,
    /// An NVIDIA GPU: needs the `onnxruntime-gpu` library and `asp_perception` built with
    /// its `cuda` feature; falls back to the CPU (with a warning) when CUDA cannot start.
    Cuda,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(default, deny_unknown_fields)]
pub struct PerceptionModels {
    /// The ONNX Runtime shared library (`libonnxruntime.so.1.31.x`), relative to
    /// `paths.models_dir`; `$ORT_DYLIB_PATH` wins when set. Default
    /// `onnxruntime/libonnxruntime.so` (a link made by `scripts/setup`).
    #[garde(skip)]
    pub onnxruntime_library: PathBuf,
    /// Default `cpu`.
    #[garde(skip)]
    pub execution_provider: ExecutionProvider,
    /// Class-agnostic segmenter. Default `simulated`.
    #[garde(skip)]
    pub segmenter: ModelBackend,
    /// SAM-style image encoder for `segmenter: onnx`, relative to `paths.models_dir`.
    /// Default `sam/encoder.onnx`.
    #[garde(skip)]
    pub segmenter_encoder: PathBuf,
    /// SAM-style prompt decoder for `segmenter: onnx`. Default `sam/decoder.onnx`.
    #[garde(skip)]
    pub segmenter_decoder: PathBuf,
    /// Image-text embedder for crops. Default `simulated`.
    #[garde(skip)]
    pub image_embedder: ModelBackend,
    /// CLIP-style image tower for `image_embedder: onnx`. Default `clip/visual.onnx`.
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
    /// CLIP text tower for `text_embedder: clip_onnx`. Default `clip/textual.onnx`.
    #[garde(skip)]
    pub clip_text_model: PathBuf,
    /// Its `tokenizer.json`. Default `clip/tokenizer.json`.
    #[garde(skip)]
    pub clip_text_tokenizer: PathBuf,
    /// The output holding the text embedding. Default `text_embeds`.
    #[garde(length(min = 1))]
    pub clip_text_output: String,
    /// Longest text in tokens (longer texts are truncated). Default 256, as
    /// sentence-transformers uses for all-MiniLM-L6-v2.
    #[garde(range(min = 8, max = 4096))]
    pub text_max_tokens: usize,
    /// Dimension of the `hashing` text embedder. Default 384 (MiniLM's).
    #[garde(range(min = 16, max = 8192))]
    pub hashing_dim: usize,
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
            onnxruntime_library: "onnxruntime/libonnxruntime.so".into(),
            execution_provider: ExecutionProvider::Cpu,
            segmenter: ModelBackend::Simulated,
            segmenter_encoder: "sam/encoder.onnx".into(),
            segmenter_decoder: "sam/decoder.onnx".into(),
            image_embedder: ModelBackend::Simulated,
            image_embedder_model: "clip/visual.onnx".into(),
            text_embedder: TextEmbedderBackend::MinilmOnnx,
            text_embedder_model: "minilm/model.onnx".into(),
            text_embedder_tokenizer: "minilm/tokenizer.json".into(),
            clip_text_model: "clip/textual.onnx".into(),
            clip_text_tokenizer: "clip/tokenizer.json".into(),
            clip_text_output: "text_embeds".into(),
            text_max_tokens: 256,
            hashing_dim: 384,
            vlm: ModelBackend::OpenaiCompatible,
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
    /// A voxel of one object counts as overlapping the other when the other has a point
    /// within this distance (ConceptGraphs' nearest-neighbour overlap, on the voxel
    /// grid), metres. Lets the two halves of an over-segmented object merge. Default 0.02.
    #[garde(range(min = 0.0, max = 0.5))]
    pub overlap_radius: f32,
}

impl Default for MergeConfig {
    fn default() -> Self {
        Self {
            overlap_threshold: 0.25,
            feature_similarity: 0.75,
            voxel_size: 0.01,
            overlap_radius: 0.02,
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
    /// Most questions per candidate, each on another set of its crops; the majority
    /// decides, and the questions stop once it is reached (3: a second look, and a third
    /// only when the first two disagree). A single wrong answer about one view then no
    /// longer loses an object or accepts a wrong one. Odd; 1 asks once. Default 3.
    #[garde(range(min = 1, max = 9), custom(odd))]
    pub confirm_votes: usize,
    /// A candidate whose image-text similarity to the query is below this is a weak
    /// match: it is confirmed only by a majority of all `confirm_votes` questions (each
    /// on another set of its crops), not by more yes than no among those its crops
    /// allow, so one answer about its only view cannot confirm it. A VLM says yes to
    /// an unlike object now and then, and across a building's many candidates one such
    /// answer takes the base to the wrong side of it. The scale is the embedder's: with
    /// the shipped realistic stand-ins, objects the VLM rightly confirmed scored
    /// 0.45–0.88 and wrong confirmations 0.01–0.24; calibrate it for a robot's
    /// embedder. 0 turns it off. Default 0.3.
    #[garde(range(min = 0.0, max = 1.0))]
    pub weak_similarity: f32,
    /// Re-detection from a new place (`go_to`'s arrival, a look before a skill) accepts
    /// an object found at most this far (metres) from where the map had it, and only
    /// when it is nearer to it than to any other object the same query found: a twin a
    /// hand's width away is not the object. Default 0.25 (a few drives' localisation
    /// drift).
    #[garde(range(min = 0.0, max = 5.0))]
    pub relocalize_max_shift: f32,
}

fn odd(v: &usize, _: &()) -> garde::Result {
    if v % 2 == 1 {
        Ok(())
    } else {
        Err(garde::Error::new(format!(
            "{v} can tie; use an odd number of questions"
        )))
    }
}

impl Default for RetrievalConfig {
    fn default() -> Self {
        Self {
            top_k: 3,
            crops_per_candidate: 2,
            confirm_with_vlm: true,
            confirm_votes: 3,
            weak_similarity: 0.3,
            relocalize_max_shift: 0.25,
        }
    }
}

/// Clean-up of back-projected segment clouds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(default, deny_unknown_fields)]
pub struct CloudFilterConfig {
    /// Drop mask pixels whose depth jumps by more than this fraction of their depth to a
    /// 4-neighbour (flying pixels at object edges); 0 turns the filter off. Default 0.05.
    #[garde(range(min = 0.0, max = 1.0))]
    pub depth_edge_ratio: f32,
    /// Keep only the largest cluster of voxels connected within this distance (a cheap
    /// DBSCAN); 0 keeps every point. Metres. Default 0.03.
    #[garde(range(min = 0.0, max = 1.0))]
    pub cluster_radius: f32,
    /// Segments with fewer points after filtering and downsampling are dropped (a 2 cm
    /// thumbtack head keeps about 4 voxels of 1 cm). Default 3.
    #[garde(range(min = 1, max = 100_000))]
    pub min_points: usize,
}

impl Default for CloudFilterConfig {
    fn default() -> Self {
        Self {
            depth_edge_ratio: 0.05,
            cluster_radius: 0.03,
            min_points: 3,
        }
    }
}

/// SAM-style automatic mask generation for `models.segmenter: onnx` (the settings of
/// SAM's `SamAutomaticMaskGenerator`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(default, deny_unknown_fields)]
pub struct SamConfig {
    /// Point prompts per image side (a grid of n×n). Default 16.
    #[garde(range(min = 1, max = 64))]
    pub points_per_side: u32,
    /// Masks whose predicted IoU is below this are dropped. Default 0.88.
    #[garde(range(min = 0.0, max = 1.0))]
    pub pred_iou_threshold: f32,
    /// Masks whose stability score is below this are dropped. Default 0.95.
    #[garde(range(min = 0.0, max = 1.0))]
    pub stability_score_threshold: f32,
    /// Logit offset for the stability score. Default 1.0.
    #[garde(range(min = 0.0, max = 10.0))]
    pub stability_score_offset: f32,
    /// Logit above which a pixel is in the mask. Default 0.0.
    #[garde(range(min = -10.0, max = 10.0))]
    pub mask_threshold: f32,
    /// Box IoU above which the lower-scoring of two masks is suppressed. Default 0.7.
    #[garde(range(min = 0.0, max = 1.0))]
    pub box_nms_threshold: f32,
    /// Masks covering more than this share of the image are dropped (walls, floors).
    /// Default 0.9.
    #[garde(range(min = 0.0, max = 1.0))]
    pub max_area_fraction: f32,
}

impl Default for SamConfig {
    fn default() -> Self {
        Self {
            points_per_side: 16,
            pred_iou_threshold: 0.88,
            stability_score_threshold: 0.95,
            stability_score_offset: 1.0,
            mask_threshold: 0.0,
            box_nms_threshold: 0.7,
            max_area_fraction: 0.9,
        }
    }
}

/// Pre-processing of the CLIP-style image tower for `models.image_embedder: onnx`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(default, deny_unknown_fields)]
pub struct ClipConfig {
    /// Input side in pixels when the model's input size is dynamic. Default 224.
    #[garde(range(min = 8, max = 2048))]
    pub image_size: u32,
    /// Per-channel mean (RGB, 0–1 scale). Default CLIP's [0.48145466, 0.4578275, 0.40821073].
    #[garde(skip)]
    pub mean: [f32; 3],
    /// Per-channel standard deviation. Default CLIP's [0.26862954, 0.26130258, 0.27577711].
    #[garde(custom(positive3))]
    pub std: [f32; 3],
    /// Paint pixels outside the segment with the mean colour before embedding (off:
    /// embed the padded crop as it is, as ConceptGraphs does). Default off.
    #[garde(skip)]
    pub mask_background: bool,
    /// The output holding the embedding; empty takes the model's first output. Default
    /// `image_embeds` (Hugging Face's CLIP export).
    #[garde(skip)]
    pub output: String,
}

impl Default for ClipConfig {
    fn default() -> Self {
        Self {
            image_size: 224,
            mean: [0.481_454_66, 0.457_827_5, 0.408_210_73],
            std: [0.268_629_54, 0.261_302_6, 0.275_777_1],
            mask_background: false,
            output: "image_embeds".into(),
        }
    }
}

fn positive3(v: &[f32; 3], _: &()) -> garde::Result {
    if v.iter().all(|x| x.is_finite() && *x > 0.0) {
        Ok(())
    } else {
        Err(garde::Error::new("every value must be a positive number"))
    }
}

/// Error model of the simulated segmenter, image embedder and retrieval VLM (used only
/// with `models.*: simulated`, on simulator frames).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(default, deny_unknown_fields)]
pub struct PerceptionSimulationConfig {
    /// Seed of every simulated model error. Default 0.
    #[garde(skip)]
    pub seed: u64,
    /// Probability that an instance's mask is split in two (over-segmentation). Default
    /// 0.1 (the realistic profile; `profiles/oracle.yaml` sets every error to 0).
    #[garde(range(min = 0.0, max = 1.0))]
    pub over_segmentation: f32,
    /// Probability that an instance's mask is merged with a touching neighbour's
    /// (under-segmentation). Default 0.05.
    #[garde(range(min = 0.0, max = 1.0))]
    pub under_segmentation: f32,
    /// Probability that each pixel on a mask boundary flips in or out. Default 0.05.
    #[garde(range(min = 0.0, max = 1.0))]
    pub boundary_noise: f32,
    /// Probability that a crop's feature is mixed with another object's description
    /// (a confused embedding). Default 0.05.
    #[garde(range(min = 0.0, max = 1.0))]
    pub confusion: f32,
    /// Weight of the other description in a confused feature, [0, 1]. Default 0.5.
    #[garde(range(min = 0.0, max = 1.0))]
    pub confusion_weight: f32,
    /// Standard deviation of Gaussian noise added to each feature component before
    /// normalising. Default 0.02.
    #[garde(range(min = 0.0, max = 1.0))]
    pub feature_noise: f32,
    /// Cosine similarity of query and object description above which the simulated VLM
    /// confirms even without every query word in the description. Default 0.8.
    #[garde(range(min = -1.0, max = 1.0))]
    pub vlm_similarity_threshold: f32,
    /// Probability that the simulated VLM flips its answer, drawn per set of views.
    /// Default 0.05.
    #[garde(range(min = 0.0, max = 1.0))]
    pub vlm_error_rate: f32,
}

impl Default for PerceptionSimulationConfig {
    fn default() -> Self {
        Self {
            seed: 0,
            over_segmentation: 0.1,
            under_segmentation: 0.05,
            boundary_noise: 0.05,
            confusion: 0.05,
            confusion_weight: 0.5,
            feature_noise: 0.02,
            vlm_similarity_threshold: 0.8,
            vlm_error_rate: 0.05,
        }
    }
}

/// Building a map offline from a rosbag2 MCAP recording (`asp map --bag`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(default, deny_unknown_fields)]
pub struct ReplayConfig {
    /// sensor_msgs/Image, rgb8/bgr8/rgba8/bgra8. Default `/camera/color/image_raw`.
    #[garde(length(min = 1))]
    pub rgb_topic: String,
    /// sensor_msgs/Image, 32FC1 (metres) or 16UC1 (millimetres), registered to the colour
    /// image. Default `/camera/aligned_depth_to_color/image_raw`.
    #[garde(length(min = 1))]
    pub depth_topic: String,
    /// sensor_msgs/CameraInfo of the colour camera. Default `/camera/color/camera_info`.
    #[garde(length(min = 1))]
    pub camera_info_topic: String,
    /// tf2_msgs/TFMessage topics. Default [/tf, /tf_static].
    #[garde(skip)]
    pub tf_topics: Vec<String>,
    /// Colour and depth images pair up when their stamps differ by at most this, seconds.
    /// Default 0.02.
    #[garde(range(min = 0.0, max = 1.0))]
    pub max_sync_offset_s: f64,
    /// How far a transform may be looked up outside the recorded TF stamps, seconds.
    /// Default 0.1.
    #[garde(range(min = 0.0, max = 10.0))]
    pub tf_tolerance_s: f64,
    /// A new keyframe needs the camera to move at least this far, metres ... Default 0.15.
    #[garde(range(min = 0.0, max = 100.0))]
    pub keyframe_min_translation: f32,
    /// ... or turn at least this much, degrees. Default 15.
    #[garde(range(min = 0.0, max = 360.0))]
    pub keyframe_min_rotation_deg: f32,
    /// Stop after this many keyframes; 0 reads the whole bag. Default 0.
    #[garde(range(max = 100_000))]
    pub max_keyframes: usize,
}

impl Default for ReplayConfig {
    fn default() -> Self {
        Self {
            rgb_topic: "/camera/color/image_raw".into(),
            depth_topic: "/camera/aligned_depth_to_color/image_raw".into(),
            camera_info_topic: "/camera/color/camera_info".into(),
            tf_topics: vec!["/tf".into(), "/tf_static".into()],
            max_sync_offset_s: 0.02,
            tf_tolerance_s: 0.1,
            keyframe_min_translation: 0.15,
            keyframe_min_rotation_deg: 15.0,
            max_keyframes: 0,
        }
    }
}

/// What the map is built from (SPEC §1.1): the robot's cameras where it stands (tabletop),
/// or a survey route through a building (mobile).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(default, deny_unknown_fields)]
pub struct MappingConfig {
    /// Cameras captured at each mapping pose. Default `[wrist]` (the tabletop view from
    /// the arm's home pose).
    #[garde(length(min = 1), inner(length(min = 1)))]
    pub cameras: Vec<String>,
    /// Base poses `[x, y, heading_deg]` (map frame) the robot drives to, in order, to map
    /// a building; it then drives back to where it started. Empty: map from where the
    /// robot stands. Default empty.
    #[garde(custom(finite_poses), custom(not_while_exploring(self.explore.enabled)))]
    pub survey: Vec<[f32; 3]>,
    /// Frontier exploration instead of a survey: the robot finds its own stops.
    #[garde(dive)]
    pub explore: ExploreConfig,
    /// Named arm configurations (SRDF group states) taken before capturing, so the arm
    /// is out of the way and the cameras see the workspace: the first for the first
    /// build, the next for each rebuild (a look from another viewpoint after a failure),
    /// cycling. Re-detection takes the current one. Empty: the arm stays where it is.
    /// Default `[home, look, look_left, look_right]`.
    #[garde(inner(length(min = 1)))]
    pub arm_poses: Vec<String>,
    /// The arm poses taken at each survey stop: `all` of them (a building survey looks
    /// around at every stop, so an object at the edge of one view is in another's), or
    /// `one`, the build's pose only. Without a survey a build always takes one.
    /// Default `all`.
    #[garde(skip)]
    pub survey_looks: SurveyLooks,
    /// Build the map when the node starts; off: on the first retrieval. Default on.
    #[garde(skip)]
    pub build_on_start: bool,
    /// Searching for an object no view has shown: the base steps sideways and looks.
    #[garde(dive)]
    pub search: SearchConfig,
}

/// When a retrieval matches nothing, even after looking around from where the base
/// stands, the base steps sideways (left of its heading, then right), `step` at a time
/// up to `reach` each way, looking from every arm pose at each stop, until the object
/// is in view; a step the base cannot reach ends that side. Found, the robot stays
/// there (nearer the object); not found, it drives back to where it started. The
/// e-stop engaged: no search. Rows of furniture (tables, counters, shelves) run along
/// the side the robot faces, so the next views are along it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(default, deny_unknown_fields)]
pub struct SearchConfig {
    /// Metres between stops: about the width the cameras see at working distance.
    /// Default 0.8.
    #[garde(range(min = 0.1, max = 5.0))]
    pub step: f32,
    /// How far each way, metres; 0: no search. Default 2.4.
    #[garde(range(min = 0.0, max = 50.0))]
    pub reach: f32,
    /// Still nothing: the base turns in place by each of these, degrees from where it
    /// faced (left positive), and looks: what lies beside or behind the robot, the far
    /// side of a room, which a search along one heading never faces. Empty: no turns.
    /// Default [90, 180, 270].
    #[garde(inner(range(min = -360.0, max = 360.0)))]
    pub turns_deg: Vec<f32>,
}

impl Default for SearchConfig {
    fn default() -> Self {
        Self {
            step: 0.8,
            reach: 2.4,
            turns_deg: vec![90.0, 180.0, 270.0],
        }
    }
}

impl SearchConfig {
    /// The sideways offsets of the stops, metres (left positive): left outwards, then
    /// right outwards.
    pub fn offsets(&self) -> Vec<f32> {
        if self.reach <= 0.0 {
            return Vec::new();
        }
        let n = ((self.reach / self.step) + 1e-3).floor() as usize;
        let side = |sign: f32| (1..=n).map(move |k| sign * k as f32 * self.step);
        side(1.0).chain(side(-1.0)).collect()
    }
}

impl Default for MappingConfig {
    fn default() -> Self {
        Self {
            cameras: vec!["wrist".into()],
            survey: Vec::new(),
            explore: ExploreConfig::default(),
            arm_poses: ["home", "look", "look_left", "look_right"]
                .map(String::from)
                .to_vec(),
            survey_looks: SurveyLooks::All,
            build_on_start: true,
            search: SearchConfig::default(),
        }
    }
}

/// The arm poses a map build takes at each survey stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SurveyLooks {
    /// Every pose of `mapping.arm_poses`, starting with the build's.
    All,
    /// The build's pose only (each rebuild takes the next).
    One,
}

/// A map build that explores (Yamauchi's frontiers): from where the robot stands it
/// looks round (`headings` base turns, each view captured by `camera` into a floor
/// occupancy grid and by the mapping cameras into the object map), drives to the
/// nearest frontier between known free floor and unknown space it can reach, and
/// repeats until no frontier is left within reach, `max_stops` or `max_travel_m` is
/// spent, or the e-stop; it then drives back to where it started. No stop is given by
/// hand, so the same build maps a world it has never seen.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(default, deny_unknown_fields)]
pub struct ExploreConfig {
    /// Explore at each build. Default off (map from where the robot stands).
    #[garde(skip)]
    pub enabled: bool,
    /// The depth camera the occupancy grid is built from (a mast camera sees the floor
    /// metres ahead). Default `head`.
    #[garde(length(min = 1))]
    pub camera: String,
    /// Views per stop, evenly round (six 60° views cover a 69° camera's circle).
    /// Default 6.
    #[garde(range(min = 1, max = 36))]
    pub headings: usize,
    /// Record the tour's views (the explore camera's colour, depth, camera info and
    /// pose on `/tf`) to this rosbag2 MCAP file, relative to `paths.data_dir`, for
    /// `asp memory build --bag`. Empty (default): no recording.
    #[garde(skip)]
    pub record: std::path::PathBuf,
    /// In a building, tour every storey of `agent_node.building_memory.elevator`: this
    /// one first, from where the robot stands, then each other storey in turn from its
    /// elevator spot (the base rides there), then back to this storey and to the start.
    /// The live map afterwards is this storey's; the recording holds every storey's
    /// views in the building's frame. Default off (this storey only).
    #[garde(skip)]
    pub every_storey: bool,
    /// Stops at most per storey, the start included. Default 24 (the apartment takes
    /// about 12).
    #[garde(range(min = 1, max = 1000))]
    pub max_stops: usize,
    /// Path length at most per storey, metres (the drive back not counted). Default 150.
    #[garde(range(min = 0.0, max = 10000.0))]
    pub max_travel_m: f32,
    /// Grid cell, metres. Default 0.1.
    #[garde(range(min = 0.02, max = 1.0))]
    pub resolution: f32,
    /// Side of the square mapped round the start, metres. Default 40.
    #[garde(range(min = 1.0, max = 400.0))]
    pub extent_m: f32,
    /// Depth used up to this range, metres. Default 4.
    #[garde(range(min = 0.5, max = 50.0))]
    pub max_range_m: f32,
    /// Points at most this high are floor, metres. Default 0.05.
    #[garde(range(min = 0.0, max = 0.5))]
    pub floor_max_height: f32,
    /// Points in this height band block the base, metres. Default 0.1 … 1.6.
    #[garde(range(min = 0.0, max = 3.0), custom(super::not_below(self.floor_max_height, "floor_max_height", true)))]
    pub obstacle_min_height: f32,
    #[garde(range(min = 0.0, max = 5.0), custom(super::not_below(self.obstacle_min_height, "obstacle_min_height", false)))]
    pub obstacle_max_height: f32,
    /// Points nearer the base centre than this are the robot itself (its arm in the
    /// camera's view), metres. Default 0.7.
    #[garde(range(min = 0.0, max = 5.0))]
    pub self_filter_radius_m: f32,
    /// Frontiers shorter than this are gaps in the readings, metres. Default 0.5.
    #[garde(range(min = 0.0, max = 10.0))]
    pub min_frontier_m: f32,
    /// Free floor this near an obstacle is not stood on (the base's radius), metres.
    /// Default 0.4.
    #[garde(range(min = 0.0, max = 3.0))]
    pub clearance_m: f32,
    /// Nearer an obstacle than this the base does not drive (its inscribed half-width and
    /// a margin); between this and `clearance_m` it passes without stopping (doorways),
    /// metres. Default 0.3.
    #[garde(range(min = 0.0, max = 3.0))]
    pub pass_clearance_m: f32,
    /// The base stops within this of a frontier, metres. Default 1.0.
    #[garde(range(min = 0.1, max = 10.0))]
    pub approach_m: f32,
    /// Every n-th depth pixel each way. Default 4.
    #[garde(range(min = 1, max = 64))]
    pub pixel_step: u32,
    /// When `camera` is also a mapping camera, its views add to the object map only what
    /// is within this range, metres: farther, an object is a few pixels of noisy depth,
    /// and a stop nearer it sees it better (the tour passes within a few metres of
    /// everything). Default 4.
    #[garde(range(min = 0.1, max = 50.0))]
    pub object_range_m: f32,
}

impl Default for ExploreConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            camera: "head".into(),
            headings: 6,
            record: std::path::PathBuf::new(),
            every_storey: false,
            max_stops: 24,
            max_travel_m: 150.0,
            resolution: 0.1,
            extent_m: 40.0,
            max_range_m: 4.0,
            floor_max_height: 0.05,
            obstacle_min_height: 0.1,
            obstacle_max_height: 1.6,
            self_filter_radius_m: 0.7,
            min_frontier_m: 0.5,
            clearance_m: 0.4,
            pass_clearance_m: 0.3,
            approach_m: 1.0,
            pixel_step: 4,
            object_range_m: 4.0,
        }
    }
}

fn not_while_exploring(exploring: bool) -> impl FnOnce(&Vec<[f32; 3]>, &()) -> garde::Result {
    move |survey, _| {
        if exploring && !survey.is_empty() {
            Err(garde::Error::new(format!(
                "has {} poses while mapping.explore.enabled is true: exploration finds its own stops; set one or the other",
                survey.len()
            )))
        } else {
            Ok(())
        }
    }
}

fn finite_poses(v: &[[f32; 3]], _: &()) -> garde::Result {
    match v.iter().position(|p| p.iter().any(|x| !x.is_finite())) {
        None => Ok(()),
        Some(i) => Err(garde::Error::new(format!(
            "pose {i} has a value that is not a finite number"
        ))),
    }
}

/// Grounding words retrieval finds nothing for (SPEC §4.2, VLA²): web pictures of the
/// word, five keywords from the VLM server of `agent_node.vlm`, a search with the word
/// and keywords, then a replacement from `known_words`. What it learns is kept in
/// `database`, with the web search cache. A grounding that fails (no search server, the
/// model down) is logged and retrieval goes on with the words alone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(default, deny_unknown_fields)]
pub struct ConceptsConfig {
    /// Ground unknown words. Default true.
    #[garde(skip)]
    pub enabled: bool,
    /// Database file, relative to `paths.data_dir`. Default `concept_memory.redb`.
    #[garde(length(min = 1))]
    pub database: String,
    /// Search answers are reused this long, seconds. Default 7 days.
    #[garde(range(min = 0.0))]
    pub cache_max_age_s: f64,
    #[garde(dive)]
    pub web_search: WebSearchConfig,
    /// Pictures downloaded for the collage, at most. Default 4.
    #[garde(range(min = 1, max = 16))]
    pub pictures: usize,
    /// The collage's columns. Default 2.
    #[garde(range(min = 1, max = 8))]
    pub columns: u32,
    /// One collage cell, pixels (width, height). Default [160, 120].
    #[garde(custom(positive_cell))]
    pub cell: [u32; 2],
    /// Pages whose text the replacement question quotes, at most. Default 3.
    #[garde(range(max = 10))]
    pub pages: usize,
    /// Characters of each page quoted, at most. Default 400.
    #[garde(range(min = 1, max = 4000))]
    pub page_chars: usize,
    /// The words the detector knows; a replacement is one of them (empty: no
    /// replacement). Default [`KNOWN_WORDS`].
    #[garde(skip)]
    pub known_words: Vec<String>,
}

/// The default `known_words`: household things an open-vocabulary detector names well.
pub const KNOWN_WORDS: &[&str] = &[
    "apple", "orange", "banana", "tomato", "egg", "bowl", "plate", "cup", "mug", "bottle",
    "kettle", "pan", "pot", "basket", "tray", "vase", "phone", "stapler", "keyboard", "bell",
    "ball", "box", "book", "toy", "can", "jar", "knife", "spoon", "remote", "pen", "notebook",
    "lamp", "towel", "brush", "scissors", "glasses", "shoe", "hat", "bag", "clock", "camera",
    "bread", "cheese",
];

fn positive_cell(cell: &[u32; 2], _: &()) -> garde::Result {
    if cell.iter().all(|v| (16..=1024).contains(v)) {
        Ok(())
    } else {
        Err(garde::Error::new(format!(
            "each side must be 16–1024 pixels, got {cell:?}"
        )))
    }
}

impl Default for ConceptsConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            database: "concept_memory.redb".into(),
            cache_max_age_s: 7.0 * 24.0 * 3600.0,
            web_search: WebSearchConfig::default(),
            pictures: 4,
            columns: 2,
            cell: [160, 120],
            pages: 3,
            page_chars: 400,
            known_words: KNOWN_WORDS.iter().map(|w| (*w).to_owned()).collect(),
        }
    }
}

/// A SearXNG instance's JSON API.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(default, deny_unknown_fields)]
pub struct WebSearchConfig {
    /// The instance, e.g. `http://127.0.0.1:8888`; in simulation the sim node's corpus
    /// server. Default `http://127.0.0.1:8888`.
    #[garde(length(min = 1))]
    pub base_url: String,
    /// Bound on one request, seconds. Default 5.
    #[garde(range(min = 0.1, max = 120.0))]
    pub timeout_s: f64,
    /// Further tries after a network fault or a 5xx/429. Default 1.
    #[garde(range(max = 5))]
    pub retries: u32,
    /// Wait before a retry, seconds. Default 0.2.
    #[garde(range(min = 0.0, max = 30.0))]
    pub retry_backoff_s: f64,
    /// Results kept per search. Default 8.
    #[garde(range(min = 1, max = 50))]
    pub max_results: usize,
    /// Largest answer or picture accepted, bytes. Default 4 MiB.
    #[garde(range(min = 1024))]
    pub max_download_bytes: usize,
}

impl Default for WebSearchConfig {
    fn default() -> Self {
        Self {
            base_url: "http://127.0.0.1:8888".into(),
            timeout_s: 5.0,
            retries: 1,
            retry_backoff_s: 0.2,
            max_results: 8,
            max_download_bytes: 4 << 20,
        }
    }
}
