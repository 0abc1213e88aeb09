//! Affordance detection (SPEC §1.5) with the A-Harness evidence loop (SPEC §2).
//!
//! - [`detector::AffordanceDetector`]: proposals from the object's best crops, grounding
//!   per (skill, part) and view, lifting to 3D, multi-view merging, memory seeding and
//!   write-back. Entry point: [`AffordanceDetector::detect`] (an object map object) and
//!   [`AffordanceDetector::ground_view`] (one view).
//! - [`harness`]: the loop — detection, verifier diagnostics, commit or targeted retry
//!   within the budget, final fusion — and the verifier-off and fixed-chain modes.
//! - [`router`]: expected gain per cost, with an LLM advisor on near-ties and persistence.
//! - [`store`]: the evidence store with provenance.
//! - [`producers`]: pluggable imagination and web search (prior-based imagination ships).
//! - [`sim`]: simulated VLM and segmenter for the embedded simulator, with seeded errors.
//! - [`synthetic`], [`eval`]: an in-process synthetic set and the grounding metrics (the
//!   simulator-generated set is rendered by `asp_eval::affordance_set`).

pub mod detector;
pub mod eval;
pub mod harness;
pub mod producers;
pub mod router;
pub mod sim;
pub mod store;
pub mod synthetic;

pub use detector::{
    AffordanceDetector, AffordanceReport, DetectedAffordance, MemoryLink, PairReport, ViewGrounding,
};
pub use harness::{Grounding, GroundingTask, GroundingView, Harness, Models, StopCause};
pub use producers::{Imagination, ImaginationRequest, ImaginedRegion, PriorImagination, WebSearch};
pub use router::{AdvisorAnswer, AdvisorError, AdvisorRequest, Router, RouterAdvisor, RouterStats};
pub use sim::{SimulatedAffordanceVlm, SimulatedSegmenter};
pub use store::{EvidenceStore, SkillCall};

use asp_core::models::ModelError;

/// Errors of affordance detection; each names what failed.
#[derive(Debug, thiserror::Error)]
pub enum AffordanceError {
    /// A model is misconfigured or cannot run on this input (a failed call is not an
    /// error: it just adds no evidence).
    #[error(transparent)]
    Model(#[from] ModelError),
    #[error(transparent)]
    Memory(#[from] asp_memory::MemoryError),
    #[error(transparent)]
    Geometry(#[from] asp_core::CoreError),
    #[error("cannot lift the affordance of view {keyframe} to 3D: no {missing}")]
    CannotLift { keyframe: u32, missing: String },
    #[error(transparent)]
    Config(#[from] asp_config::ConfigError),
    #[error("cannot generate the simulator evaluation set from {what}: {reason}")]
    SimSet { what: String, reason: String },
    #[error("evaluation needs at least one sample")]
    EmptyEvaluation,
}
