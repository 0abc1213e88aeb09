//! The VLMs and part segmenter the services ask, as the configuration names them. Every
//! `openai_compatible` backend is the VLM of `agent_node.vlm` (on a robot a model server;
//! in simulation the sim's stand-in server, see [`crate::standin`]); `simulated` is a
//! stand-in in process, which answers about simulator frames only.

use std::sync::Arc;

use asp_affordance::SimulatedAffordanceVlm;
use asp_config::sections::perception::ModelBackend;
use asp_config::sections::verifier::OutcomeVlmBackend;
use asp_config::{AspConfig, LoadedConfig};
use asp_core::FailureKind;
use asp_core::models::{
    AffordanceVlm, OutcomeVlm, PromptableSegmenter, RetrievalVlm, TextEmbedder,
};
use asp_llm::OpenAiVlm;
use asp_perception::SimulatedOutcomeVlm;

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
    // an unusable backend is an error whether or not retrieval confirms
    let vlm = match node.models.vlm {
        ModelBackend::OpenaiCompatible if node.retrieval.confirm_with_vlm => {
            let vlm: Arc<dyn RetrievalVlm> = openai_vlm(&cfg.config, "object_map_node.models.vlm")?;
            Some(vlm)
        }
        // the error names the key
        _ => asp_perception::factory::retrieval_vlm(cfg, text)
            .map_err(|e| ServiceError::new(FailureKind::Internal, e.to_string()))?,
    };
    Ok(vlm.filter(|_| node.retrieval.confirm_with_vlm))
}

/// The simulated affordance VLM with `affordance_node.simulated_models`' error model
/// (simulator frames only): the `simulated` backend, and the simulation's VLM stand-in.
pub fn simulated_affordance_vlm(cfg: &AspConfig) -> SimulatedAffordanceVlm {
    SimulatedAffordanceVlm::new(cfg.affordance_node.simulated_models.clone())
}

/// The simulated outcome VLM with `verifier_node.outcome.simulated_*`: the `simulated`
/// backend, and the simulation's VLM stand-in.
pub fn simulated_outcome_vlm(cfg: &AspConfig) -> SimulatedOutcomeVlm {
    let o = &cfg.verifier_node.outcome;
    SimulatedOutcomeVlm::new(o.simulated_error_rate, o.simulated_seed)
}

/// The affordance VLM of `affordance_node.models.vlm`.
pub fn affordance_vlm(cfg: &LoadedConfig) -> Result<Arc<dyn AffordanceVlm>, ServiceError> {
    let key = "affordance_node.models.vlm";
    Ok(match cfg.config.affordance_node.models.vlm {
        ModelBackend::OpenaiCompatible => openai_vlm(&cfg.config, key)?,
        ModelBackend::Simulated => Arc::new(simulated_affordance_vlm(&cfg.config)),
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
        OutcomeVlmBackend::Simulated => Some(Arc::new(simulated_outcome_vlm(cfg))),
        OutcomeVlmBackend::OpenaiCompatible => Some(openai_vlm(cfg, "verifier_node.outcome.vlm")?),
    })
}

/// The grounder of words retrieval finds nothing for (`object_map_node.concepts`), or
/// `None` when it is off: its memory file (with the search cache) under the data folder,
/// the SearXNG client, and the VLM server of `agent_node.vlm` (whatever
/// `object_map_node.models.vlm` is: the concept questions are about web pictures, not
/// camera frames).
pub fn concept_grounder(
    cfg: &LoadedConfig,
) -> Result<Option<Arc<asp_perception::concepts::ConceptGrounder>>, ServiceError> {
    use asp_perception::concepts::{ConceptGrounder, GroundingSettings};
    let node = &cfg.config.object_map_node;
    let c = &node.concepts;
    if !c.enabled {
        return Ok(None);
    }
    let memory = asp_memory::concepts::ConceptMemory::open_shared(cfg.data_path(&c.database))
        .map_err(|e| config_error("object_map_node.concepts.database", e))?;
    let client = asp_web::SearxngClient::new(asp_web::SearxngSettings::from_config(&c.web_search))
        .map_err(|e| config_error("object_map_node.concepts.web_search", e))?;
    let search = asp_web::CachedSearch::new(
        client,
        memory.database(),
        std::time::Duration::from_secs_f64(c.cache_max_age_s),
    )
    .map_err(|e| config_error("object_map_node.concepts.database", e))?;
    let vlm = openai_vlm(&cfg.config, "object_map_node.concepts")?;
    Ok(Some(Arc::new(ConceptGrounder::new(
        Arc::new(search),
        vlm,
        memory,
        GroundingSettings::from_config(c),
    ))))
}
