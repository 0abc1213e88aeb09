//! `verifier_node`: the commit gate (SPEC §2.5), outcome checks (§4.3) and the threshold
//! verifier (§5.1).

use garde::Validate;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate, Default)]
#[serde(default, deny_unknown_fields)]
pub struct VerifierConfig {
    #[garde(dive)]
    pub gate: GateConfig,
    #[garde(dive)]
    pub outcome: OutcomeConfig,
    #[garde(dive)]
    pub threshold: ThresholdVerifierConfig,
}

/// The A-Harness commit rule: `v = α·ω + β·ζ + γ·σ(μ)`, commit iff `v ≥ δ ∧ ω ≥ ω_floor`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(default, deny_unknown_fields)]
pub struct GateConfig {
    /// Weight of consistency ω. Default 0.5.
    #[garde(range(min = 0.0, max = 1.0))]
    pub alpha: f64,
    /// Weight of stability ζ. Default 0.3.
    #[garde(range(min = 0.0, max = 1.0))]
    pub beta: f64,
    /// Weight of σ(sufficiency μ). Default 0.2.
    #[garde(range(min = 0.0, max = 1.0))]
    pub gamma: f64,
    /// Commit threshold δ on v. Default 0.8.
    #[garde(range(min = 0.0, max = 1.0))]
    pub delta: f64,
    /// Floors per diagnostic; the largest shortfall below its floor is the dominant
    /// deficiency that picks the retry.
    #[garde(dive)]
    pub floors: DiagnosticFloors,
    /// Initial sufficiency weights per evidence producer type.
    #[garde(dive)]
    pub weights: SufficiencyWeights,
    /// IoU at which another record corroborates a record (φ). Default 0.5.
    #[garde(range(min = 0.0, max = 1.0))]
    pub corroboration_iou: f64,
    /// Skill-call budget B per grounding. Default 3.
    #[garde(range(min = 1, max = 20))]
    pub budget: u32,
    /// A localiser (box/point producer) counts as confident for κ's "corroborated by a
    /// confident localiser" at this self-confidence. Default 0.5.
    #[garde(range(min = 0.0, max = 1.0))]
    pub confident_localizer: f64,
    /// A box and a mask are "in the same ROI" for ω when at least this share of the box
    /// lies inside both records' ROIs. Default 0.9.
    #[garde(range(min = 0.0, max = 1.0))]
    pub same_roi_coverage: f64,
    /// Whole-object skills (grasp, place, drop) need at least this many map points on the
    /// object to commit. Default 30.
    #[garde(range(min = 1, max = 1_000_000))]
    pub min_object_points: usize,
}

impl Default for GateConfig {
    fn default() -> Self {
        Self {
            alpha: 0.5,
            beta: 0.3,
            gamma: 0.2,
            delta: 0.8,
            floors: DiagnosticFloors::default(),
            weights: SufficiencyWeights::default(),
            corroboration_iou: 0.5,
            budget: 3,
            confident_localizer: 0.5,
            same_roi_coverage: 0.9,
            min_object_points: 30,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(default, deny_unknown_fields)]
pub struct DiagnosticFloors {
    /// ω_floor. Default 0.5.
    #[garde(range(min = 0.0, max = 1.0))]
    pub omega: f64,
    /// Stability floor; also the ψ threshold of the weight modulation. Default 0.7.
    #[garde(range(min = 0.0, max = 1.0))]
    pub zeta: f64,
    /// Sufficiency floor. Default 0.5.
    #[garde(range(min = 0.0, max = 1.0))]
    pub mu: f64,
}

impl Default for DiagnosticFloors {
    fn default() -> Self {
        Self {
            omega: 0.5,
            zeta: 0.7,
            mu: 0.5,
        }
    }
}

/// `w_τ` before modulation (SPEC §2.5).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(default, deny_unknown_fields)]
pub struct SufficiencyWeights {
    /// Default 0.35.
    #[garde(range(min = 0.0, max = 1.0))]
    pub segmentation: f64,
    /// Default 0.30.
    #[garde(range(min = 0.0, max = 1.0))]
    pub detection: f64,
    /// Interaction imagination. Default 0.20.
    #[garde(range(min = 0.0, max = 1.0))]
    pub imagination: f64,
    /// Web search. Default 0.15.
    #[garde(range(min = 0.0, max = 1.0))]
    pub web: f64,
}

impl Default for SufficiencyWeights {
    fn default() -> Self {
        Self {
            segmentation: 0.35,
            detection: 0.30,
            imagination: 0.20,
            web: 0.15,
        }
    }
}

/// How "did it work?" is answered after a skill.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutcomeBackend {
    /// Geometric checks on the map and the gripper state.
    Geometric,
    /// The VLA² Yes/No question to the VLM, on before/after observations.
    Vlm,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(default, deny_unknown_fields)]
pub struct OutcomeConfig {
    /// Default `geometric`.
    #[garde(skip)]
    pub backend: OutcomeBackend,
    /// An object counts as lifted when it rose this far, metres. Default 0.02.
    #[garde(range(min = 0.0, max = 1.0))]
    pub lift_height: f32,
    /// Tolerance for "on"/"in" checks, metres. Default 0.03.
    #[garde(range(min = 0.0, max = 1.0))]
    pub contact_tolerance: f32,
    /// After place, the tool must be at least this far from the placed object, metres.
    /// Default 0.05.
    #[garde(range(min = 0.0, max = 1.0))]
    pub gripper_clearance: f32,
    /// "Fully" opened/closed: within this fraction of the joint range from the limit.
    /// Default 0.1.
    #[garde(range(min = 0.0, max = 0.5))]
    pub articulation_tolerance: f32,
    /// A picked object has left its place when at least this share of its last known
    /// points that a fresh view can judge are seen through (free space). Default 0.6.
    #[garde(range(min = 0.0, max = 1.0))]
    pub left_place_fraction: f32,
    /// Fewest points a fresh view must be able to judge before a perceptual check
    /// answers (fewer: "cannot tell"). Default 15.
    #[garde(range(min = 1, max = 100000))]
    pub min_seen_points: u32,
    /// An opened or closed part must be seen to have moved at least this share of the
    /// travel the skill commanded along its estimated joint. Default 0.5.
    #[garde(range(min = 0.0, max = 1.0))]
    pub min_travel_fraction: f32,
    /// Who answers the VLA² Yes/No question where geometry cannot see the outcome (a
    /// device switched on, a key pressed). Default `openai_compatible`.
    #[garde(skip)]
    pub vlm: OutcomeVlmBackend,
    /// Probability that the simulated outcome VLM answers wrongly (drawn per pair of
    /// images and question). Default 0.03.
    #[garde(range(min = 0.0, max = 1.0))]
    pub simulated_error_rate: f32,
    /// Seed of the simulated outcome VLM's errors. Default 0.
    #[garde(skip)]
    pub simulated_seed: u64,
}

/// The VLM of the outcome checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutcomeVlmBackend {
    /// A stand-in in process that reads the simulator's ground truth of the images it is
    /// shown and errs at `simulated_error_rate` (simulation only: fails on a real
    /// camera's images).
    Simulated,
    /// The VLM of `agent_node.vlm` (in simulation the sim's stand-in server, which errs
    /// at `simulated_error_rate`).
    #[default]
    OpenaiCompatible,
    /// No VLM: outcomes geometry cannot see are "cannot tell".
    None,
}

impl Default for OutcomeConfig {
    fn default() -> Self {
        Self {
            backend: OutcomeBackend::Geometric,
            lift_height: 0.02,
            contact_tolerance: 0.03,
            gripper_clearance: 0.05,
            articulation_tolerance: 0.1,
            left_place_fraction: 0.6,
            min_seen_points: 15,
            min_travel_fraction: 0.5,
            vlm: OutcomeVlmBackend::OpenaiCompatible,
            simulated_error_rate: 0.03,
            simulated_seed: 0,
        }
    }
}

/// When to stop refining (SPEC §5.1). Scores are on a 0–10 scale.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(default, deny_unknown_fields)]
pub struct ThresholdVerifierConfig {
    /// Default 7.5.
    #[garde(range(min = 0.0, max = 10.0))]
    pub overall: f64,
    /// Default 7.0.
    #[garde(range(min = 0.0, max = 10.0))]
    pub position: f64,
    /// Default 8.0.
    #[garde(range(min = 0.0, max = 10.0))]
    pub joint: f64,
    /// Default 10.
    #[garde(range(min = 1, max = 1000))]
    pub max_iterations: u32,
    /// Iterations without improvement before "converged". Default 3.
    #[garde(range(min = 1, max = 1000))]
    pub patience: u32,
    /// Decay the overall threshold over time. Default off.
    #[garde(skip)]
    pub adaptive: bool,
    /// Default 3.
    #[garde(range(min = 1, max = 1000))]
    pub adaptation_interval: u32,
    /// Default 0.95.
    #[garde(range(min = 0.01, max = 1.0))]
    pub decay: f64,
    /// Default 5.0.
    #[garde(range(min = 0.0, max = 10.0))]
    pub min_threshold: f64,
}

impl Default for ThresholdVerifierConfig {
    fn default() -> Self {
        Self {
            overall: 7.5,
            position: 7.0,
            joint: 8.0,
            max_iterations: 10,
            patience: 3,
            adaptive: false,
            adaptation_interval: 3,
            decay: 0.95,
            min_threshold: 5.0,
        }
    }
}
