//! `affordance_node`: affordance detection (SPEC §1.5), the A-Harness router (§2.4) and
//! the two-tier memory (§2.3).

use std::path::PathBuf;

use garde::Validate;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate, Default)]
#[serde(default, deny_unknown_fields)]
pub struct AffordanceConfig {
    #[garde(skip)]
    pub models: AffordanceModelsConfig,
    #[garde(dive)]
    pub detection: DetectionConfig,
    #[garde(dive)]
    pub router: RouterConfig,
    #[garde(dive)]
    pub memory: MemoryConfig,
    #[garde(dive)]
    pub simulated_models: SimulatedModelsConfig,
}

/// The models affordance detection asks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AffordanceModelsConfig {
    /// Proposals and part boxes: `openai_compatible` (the VLM of `agent_node.vlm`; in
    /// simulation the sim's stand-in server) or `simulated` (the stand-in in process,
    /// simulator frames only). Default `openai_compatible`.
    pub vlm: crate::sections::perception::ModelBackend,
    /// Box-prompted part masks: `simulated` (from the simulator's ground truth) or `onnx`
    /// (the SAM encoder and decoder of `object_map_node.models`). Default `simulated`.
    pub segmenter: crate::sections::perception::ModelBackend,
}

impl Default for AffordanceModelsConfig {
    fn default() -> Self {
        Self {
            vlm: crate::sections::perception::ModelBackend::OpenaiCompatible,
            segmenter: crate::sections::perception::ModelBackend::Simulated,
        }
    }
}

/// Error model of the simulated VLM and segmenter used with the embedded simulator
/// (ground truth in, realistic mistakes out). Rates are per call and independent; each
/// call's draw is seeded from `seed` and the call's input, so a repeated input gives the
/// same answer (as a VLM at temperature 0 does) and a changed input (a zoomed crop, a
/// refined ROI) a fresh one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(default, deny_unknown_fields)]
pub struct SimulatedModelsConfig {
    /// Default 7.
    #[garde(skip)]
    pub seed: u64,
    /// `locate_part` reports nothing for a visible part. Default 0.05.
    #[garde(range(min = 0.0, max = 1.0))]
    pub miss_rate: f64,
    /// `locate_part` boxes another part or region of the object. Default 0.08.
    #[garde(range(min = 0.0, max = 1.0))]
    pub wrong_part_rate: f64,
    /// The box is shifted by 0.4–0.8 of its size. Default 0.08.
    #[garde(range(min = 0.0, max = 1.0))]
    pub gross_shift_rate: f64,
    /// The right box with a low confidence (0.2–0.45). Default 0.08.
    #[garde(range(min = 0.0, max = 1.0))]
    pub low_confidence_rate: f64,
    /// Standard deviation of each box edge, as a fraction of the box size. Default 0.06.
    #[garde(range(min = 0.0, max = 1.0))]
    pub box_jitter: f64,
    /// The segmenter returns the whole object instead of the prompted part (SAM's
    /// part/whole ambiguity). Default 0.08.
    #[garde(range(min = 0.0, max = 1.0))]
    pub ambiguity_rate: f64,
    /// Share of mask boundary pixels flipped. Default 0.05.
    #[garde(range(min = 0.0, max = 1.0))]
    pub boundary_noise: f64,
    /// `propose` puts a wrong pair first: the right part with a skill it affords that
    /// does not do the action (an `open` for a close), else another part of the object.
    /// Default 0.05.
    #[garde(range(min = 0.0, max = 1.0))]
    pub wrong_proposal_rate: f64,
}

impl Default for SimulatedModelsConfig {
    fn default() -> Self {
        Self {
            seed: 7,
            miss_rate: 0.05,
            wrong_part_rate: 0.08,
            gross_shift_rate: 0.08,
            low_confidence_rate: 0.08,
            box_jitter: 0.06,
            ambiguity_rate: 0.08,
            boundary_noise: 0.05,
            wrong_proposal_rate: 0.05,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(default, deny_unknown_fields)]
pub struct DetectionConfig {
    /// Crops of the object shown to the VLM. Default 3.
    #[garde(range(min = 1, max = 10))]
    pub crops: usize,
    /// Affordances from different views merge when their 3D IoU exceeds this. Default 0.2.
    #[garde(range(min = 0.0, max = 1.0))]
    pub multiview_iou: f32,
    /// Voxel edge for the 3D IoU, metres. Default 0.01.
    #[garde(range(min = 0.001, max = 0.5))]
    pub voxel_size: f32,
    /// Zoom factor of the stability re-run. Default 2.
    #[garde(range(min = 1.0, max = 8.0))]
    pub zoom: f32,
    /// ROI growth when refining for consistency, as a fraction of the box size. Default 0.25.
    #[garde(range(min = 0.0, max = 2.0))]
    pub refine_margin: f32,
    /// How grounding runs. Default `harness`.
    #[garde(skip)]
    pub mode: GroundingMode,
    /// (skill, part) pairs grounded per view, in the VLM's order; the first that commits
    /// ends the view. Default 2.
    #[garde(range(min = 1, max = 10))]
    pub max_pairs: usize,
    /// Depth readings used when lifting a mask to 3D, metres. Default 0.1.
    #[garde(range(min = 0.0, max = 10.0))]
    pub min_depth: f32,
    /// Default 5.0.
    #[garde(range(min = 0.1, max = 50.0))]
    pub max_depth: f32,
}

/// How affordance grounding runs (SPEC §2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GroundingMode {
    /// The A-Harness loop: detect, verify, targeted retries within budget, final fusion.
    Harness,
    /// Verifier off: every available skill in a fixed order until the budget is spent,
    /// then the final fusion, no commit gate.
    VerifierOff,
    /// The fixed detect-then-segment chain: one detection, its box-prompted mask.
    FixedChain,
}

impl Default for DetectionConfig {
    fn default() -> Self {
        Self {
            crops: 3,
            multiview_iou: 0.2,
            voxel_size: 0.01,
            zoom: 2.0,
            refine_margin: 0.25,
            mode: GroundingMode::Harness,
            max_pairs: 2,
            min_depth: 0.1,
            max_depth: 5.0,
        }
    }
}

/// `u = argmax Δv̂(u)/ĉ(u)` (SPEC §2.4).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(default, deny_unknown_fields)]
pub struct RouterConfig {
    /// λ_ω. Default 1.0.
    #[garde(range(min = 0.0, max = 10.0))]
    pub lambda_omega: f64,
    /// λ_ζ. Default 0.8.
    #[garde(range(min = 0.0, max = 10.0))]
    pub lambda_zeta: f64,
    /// λ_μ. Default 0.6.
    #[garde(range(min = 0.0, max = 10.0))]
    pub lambda_mu: f64,
    /// Off-target discount η_off. Default 0.5.
    #[garde(range(min = 0.0, max = 1.0))]
    pub eta_off: f64,
    /// The top two actions count as a near-tie within this relative margin. Default 0.1.
    #[garde(range(min = 0.0, max = 1.0))]
    pub near_tie: f64,
    /// Ask the LLM after the same deficiency persists this many retries. Default 2.
    #[garde(range(min = 1, max = 20))]
    pub persistence: u32,
    /// Let the LLM break near-ties (off: take the first). Default on.
    #[garde(skip)]
    pub llm_fallback: bool,
    /// How much retrieved memories favour the actions they used: an action's expected
    /// gain is multiplied by `1 + memory_weight · prior`, prior ∈ [0, 1]. Default 0.5.
    #[garde(range(min = 0.0, max = 10.0))]
    pub memory_weight: f64,
}

impl Default for RouterConfig {
    fn default() -> Self {
        Self {
            lambda_omega: 1.0,
            lambda_zeta: 0.8,
            lambda_mu: 0.6,
            eta_off: 0.5,
            near_tie: 0.1,
            persistence: 2,
            llm_fallback: true,
            memory_weight: 0.5,
        }
    }
}

/// Two-tier memory (SPEC §2.3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(default, deny_unknown_fields)]
pub struct MemoryConfig {
    /// Database file, relative to `paths.data_dir`. Default `affordance_memory.redb`.
    #[garde(skip)]
    pub database: PathBuf,
    /// C_cs. Default 1000.
    #[garde(range(min = 1, max = 1_000_000))]
    pub common_sense_capacity: usize,
    /// C_tt. Default 80.
    #[garde(range(min = 1, max = 1_000_000))]
    pub episodic_capacity: usize,
    /// Entries retrieved to seed the router (N). Default 2.
    #[garde(range(min = 0, max = 100))]
    pub top_n: usize,
    /// Common-sense priors loaded into an empty memory on first open, relative to the
    /// config folder. Default `memory/common_sense_priors.yaml`.
    #[garde(skip)]
    pub common_sense_seed: PathBuf,
    /// Parameter samples an experience capsule keeps per parameter for its robust
    /// ranges. Default 32.
    #[garde(range(min = 1, max = 10_000))]
    pub capsule_samples: usize,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        Self {
            database: "affordance_memory.redb".into(),
            common_sense_capacity: 1000,
            episodic_capacity: 80,
            top_n: 2,
            common_sense_seed: "memory/common_sense_priors.yaml".into(),
            capsule_samples: 32,
        }
    }
}
