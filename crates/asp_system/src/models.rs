//! The VLMs and part segmenter the services ask, as the configuration names them. Every
//! `openai_compatible` backend is the VLM of `agent_node.vlm` (on a robot a model server;
//! in simulation the sim's stand-in server, see [`crate::standin`]); `simulated` is a
//! stand-in in process, which answers about simulator frames only.

use std::sync::Arc;

use asp_config::sections::perception::ModelBackend;
use asp_config::sections::verifier::OutcomeVlmBackend;
use asp_config::{AspConfig, LoadedConfig};
use asp_core::FailureKind;
use asp_core::models::{
    AffordanceVlm, OutcomeVlm, PromptableSegmenter, RetrievalVlm, TextEmbedder,
};
use asp_llm::OpenAiVlm;
use asp_perception::SimulatedOutcomeVlm;
use asp_perception::simulated::SimulatedRetrievalVlm;

use crate::ports::ServiceError;

fn config_error(key: &str, problem: impl std::fmt::Display) -> ServiceError {
    ServiceError::new(FailureKind::Internal, format!("{key}: {problem}"))
}

/// The OpenAI-compatible VLM of `agent_node.vlm`, for the backend `key` names.
fn openai_vlm(cfg: &AspConfig, key: &str) -> Result<Arc<OpenAiVlm>, ServiceError> {
    OpenAiVlm::from_config(&cfg.agent_node)
        .map(Arc::new)
        .map_err(|e| config_error(key, format!("openai_compatible: {e}")))
}

/// The retrieval VLM of `object_map_node.models.vlm`; `None` when retrieval does not
/// confirm with a VLM (`object_map_node.retrieval.confirm_with_vlm: false`).
pub fn retrieval_vlm(
    cfg: &LoadedConfig,
    text: &Arc<dyn TextEmbedder>,
) -> Result<Option<Arc<dyn RetrievalVlm>>, ServiceError> {
    let node = &cfg.config.object_map_node;
    if !node.retrieval.confirm_with_vlm {
        return Ok(None);
    }
    let key = "object_map_node.models.vlm";
    Ok(Some(match node.models.vlm {
        ModelBackend::OpenaiCompatible => openai_vlm(&cfg.config, key)?,
        ModelBackend::Simulated => Arc::new(SimulatedRetrievalVlm::new(
            Arc::clone(text),
            node.simulation.clone(),
        )),
        ModelBackend::Onnx => {
            return Err(config_error(
                key,
                "onnx is not a VLM backend; use openai_compatible or simulated",
            ));
        }
    }))
}

/// The affordance VLM of `affordance_node.models.vlm`.
pub fn affordance_vlm(cfg: &LoadedConfig) -> Result<Arc<dyn AffordanceVlm>, ServiceError> {
    let aff = &cfg.config.affordance_node;
    let key = "affordance_node.models.vlm";
    Ok(match aff.models.vlm {
        ModelBackend::OpenaiCompatible => openai_vlm(&cfg.config, key)?,
        ModelBackend::Simulated => Arc::new(asp_affordance::SimulatedAffordanceVlm::new(
            aff.simulated_models.clone(),
        )),
        ModelBackend::Onnx => {
            return Err(config_error(
                key,
                "onnx is not a VLM backend; use openai_compatible or simulated",
            ));
        }
    })
}

/// The box-prompted part segmenter of `affordance_node.models.segmenter`.
pub fn part_segmenter(cfg: &LoadedConfig) -> Result<Arc<dyn PromptableSegmenter>, ServiceError> {
    let aff = &cfg.config.affordance_node;
    let key = "affordance_node.models.segmenter";
    Ok(match aff.models.segmenter {
        ModelBackend::Simulated => Arc::new(asp_affordance::SimulatedSegmenter::new(
            aff.simulated_models.clone(),
        )),
        ModelBackend::Onnx => {
            let m = &cfg.config.object_map_node.models;
            let sam = asp_perception::onnx::SamModel::load(
                &cfg.model_path(&m.segmenter_encoder),
                &cfg.model_path(&m.segmenter_decoder),
                &asp_perception::factory::onnx_options(cfg),
            )
            .map_err(|e| config_error(key, format!("onnx: {e}")))?;
            Arc::new(asp_perception::onnx::OnnxPromptableSegmenter::new(
                Arc::new(sam),
                cfg.config.object_map_node.sam.mask_threshold,
            ))
        }
        ModelBackend::OpenaiCompatible => {
            return Err(config_error(
                key,
                "openai_compatible is not a segmenter; use simulated or onnx",
            ));
        }
    })
}

/// The outcome VLM of `verifier_node.outcome.vlm`: `None` for `none`.
pub fn outcome_vlm(cfg: &AspConfig) -> Result<Option<Arc<dyn OutcomeVlm>>, ServiceError> {
    let o = &cfg.verifier_node.outcome;
    Ok(match o.vlm {
        OutcomeVlmBackend::None => None,
        OutcomeVlmBackend::Simulated => Some(Arc::new(SimulatedOutcomeVlm::new(
            o.simulated_error_rate,
            o.simulated_seed,
        ))),
        OutcomeVlmBackend::OpenaiCompatible => Some(openai_vlm(cfg, "verifier_node.outcome.vlm")?),
    })
}
