//! `affordance_node`: affordance detection (SPEC §1.5), the A-Harness router (§2.4) and
//! the two-tier memory (§2.3).

use std::path::PathBuf;

use garde::Validate;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate, Default)]
#[serde(default, deny_unknown_fields)]
pub struct AffordanceConfig {
    #[garde(dive)]
    pub detection: DetectionConfig,
    #[garde(dive)]
    pub router: RouterConfig,
    #[garde(dive)]
    pub memory: MemoryConfig,
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
    /// Run the A-Harness loop (off: a fixed detect-then-segment chain). Default on.
    #[garde(skip)]
    pub harness: bool,
}

impl Default for DetectionConfig {
    fn default() -> Self {
        Self {
            crops: 3,
            multiview_iou: 0.2,
            voxel_size: 0.01,
            zoom: 2.0,
            refine_margin: 0.25,
            harness: true,
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
}

impl Default for MemoryConfig {
    fn default() -> Self {
        Self {
            database: "affordance_memory.redb".into(),
            common_sense_capacity: 1000,
            episodic_capacity: 80,
            top_n: 2,
        }
    }
}
