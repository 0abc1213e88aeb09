//! The ASP verifier (SPEC §2.5, §4.3, §5.1, §6): pure logic, no I/O.
//!
//! - [`diagnostics`]: A-Harness consistency ω, stability ζ, sufficiency μ and the score v.
//! - [`gate`]: the commit rule, the dominant deficiency and its targeted retry Γ(ℓ); an
//!   [`Acceptance`] proves an evidence set passed (memory write-back requires one).
//! - [`commit`]: the gate every skill passes before motion: [`CommitRequest`] →
//!   [`CommitVerdict`] + [`CommitToken`] (only on acceptance).
//! - [`outcome`]: the per-verb Yes/No question after a skill, geometric or by VLM; only
//!   a [`StepSuccess`] from the verifier lets a step count as succeeded.
//! - [`threshold`]: when to stop refinement loops.

pub mod commit;
pub mod diagnostics;
pub mod gate;
pub mod outcome;
pub mod threshold;

pub use commit::{
    CommitEvidence, CommitGate, CommitRequest, CommitToken, CommitVerdict, CorrectiveAction,
    GroundingSummary, RejectReason, Review, StepId, TokenError, execute_committed,
};
pub use diagnostics::{
    Diagnostics, DiagnosticsSummary, ProducerKind, diagnose, producer, sigmoid, verifier_score,
};
pub use gate::{
    Acceptance, CommitRule, Deficiency, Gaps, GateDecision, RetryAction, RetryContext,
    dominant_deficiency, targeted_retry,
};
pub use outcome::{
    Answer, ArticulationState, Check, GripperSnapshot, JointTravel, ObservedSpan, Outcome,
    OutcomeError, OutcomeMethod, OutcomeRequest, OutcomeVerdict, OutcomeVerifier, PlaceOccupancy,
    PlaceTarget, Relation, SIDE_EFFECT, Snapshot, StepSuccess, Verb, geometric_answer,
};
pub use threshold::{
    ComponentScores, RefinementResult, StopReason, ThresholdDecision, ThresholdVerifier,
};

/// Every error this crate returns.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum VerifyError {
    #[error(transparent)]
    Token(#[from] TokenError),
    #[error(transparent)]
    Outcome(#[from] OutcomeError),
}
