//! The executor's side of the verifier (SPEC §2.5, §4.3, §6): "may I commit?" before any
//! goal is sent, "did it work?" after. Only the verifier declares success.
//!
//! The answers carry `asp_verify`'s proof types: an accepting [`Review`] holds the
//! [`asp_verify::CommitToken`] without which the executor cannot move, a succeeding
//! [`Outcome`] holds the [`asp_verify::StepSuccess`] without which it cannot report
//! success. [`LocalVerifier`] runs the gate and the outcome checks in process; the ROS
//! client (next phase) calls the verifier node and turns the received verdicts into the
//! same types with [`asp_verify::CommitToken::redeem`] and
//! [`asp_verify::StepSuccess::redeem`], which re-check them locally.

use asp_config::AspConfig;
use asp_core::Transform;
use asp_core::models::OutcomeVlm;
use asp_verify::{CommitGate, CommitRequest, Outcome, OutcomeRequest, OutcomeVerifier, Review};
use async_trait::async_trait;
use std::sync::Arc;

/// The verifier could not be asked (as opposed to answering "no").
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum VerifierError {
    #[error("the verifier did not answer: {0}")]
    Unavailable(String),
    #[error("the verifier's answer could not be used: {0}")]
    BadAnswer(String),
}

/// What a skill executor asks the verifier.
#[async_trait]
pub trait Verifier: Send + Sync {
    /// Judges a commit request. `to_arm_base` maps the request's frame into the arm base
    /// (`parent` = arm base, `child` = the request's frame), for the workspace check.
    async fn commit(
        &self,
        request: &CommitRequest,
        to_arm_base: Option<&Transform>,
    ) -> Result<Review, VerifierError>;

    /// Answers the per-verb outcome question for a committed step.
    async fn outcome(&self, request: &OutcomeRequest) -> Result<Outcome, VerifierError>;
}

/// The verifier in process: `asp_verify`'s commit gate and outcome checks.
#[derive(Debug)]
pub struct LocalVerifier {
    gate: CommitGate,
    outcome: OutcomeVerifier,
}

impl LocalVerifier {
    pub fn new(gate: CommitGate, outcome: OutcomeVerifier) -> Self {
        Self { gate, outcome }
    }

    /// The verifier a configuration describes (`verifier_node` and `/**.safety`);
    /// `vlm` answers outcome questions when `verifier_node.outcome.backend` is `vlm`.
    pub fn from_config(
        config: &AspConfig,
        instance: u32,
        vlm: Option<Arc<dyn OutcomeVlm>>,
    ) -> Self {
        Self::new(
            CommitGate::from_config(config, instance),
            OutcomeVerifier::new(config.verifier_node.outcome.clone(), vlm),
        )
    }

    pub fn gate(&self) -> &CommitGate {
        &self.gate
    }
}

#[async_trait]
impl Verifier for LocalVerifier {
    async fn commit(
        &self,
        request: &CommitRequest,
        to_arm_base: Option<&Transform>,
    ) -> Result<Review, VerifierError> {
        Ok(self.gate.review(request, to_arm_base))
    }

    async fn outcome(&self, request: &OutcomeRequest) -> Result<Outcome, VerifierError> {
        Ok(self.outcome.check(request).await)
    }
}
