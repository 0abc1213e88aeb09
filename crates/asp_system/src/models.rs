//! The models the verifier uses, as the configuration names them.

use std::sync::Arc;

use asp_config::AspConfig;
use asp_config::sections::verifier::OutcomeVlmBackend;
use asp_core::models::OutcomeVlm;
use asp_perception::SimulatedOutcomeVlm;

use crate::ports::ServiceError;

/// The outcome VLM of `verifier_node.outcome.vlm`: `None` for `none`.
pub fn outcome_vlm(cfg: &AspConfig) -> Result<Option<Arc<dyn OutcomeVlm>>, ServiceError> {
    let o = &cfg.verifier_node.outcome;
    Ok(match o.vlm {
        OutcomeVlmBackend::None => None,
        OutcomeVlmBackend::Simulated => Some(Arc::new(SimulatedOutcomeVlm::new(
            o.simulated_error_rate,
            o.simulated_seed,
        ))),
        OutcomeVlmBackend::OpenaiCompatible => Some(Arc::new(
            asp_llm::OpenAiVlm::from_config(&cfg.agent_node).map_err(|e| {
                ServiceError::new(
                    asp_core::FailureKind::Internal,
                    format!("verifier_node.outcome.vlm: openai_compatible: {e}"),
                )
            })?,
        )),
    })
}
