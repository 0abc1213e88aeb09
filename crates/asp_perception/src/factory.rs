//! The configured backends, built from `object_map_node.models` (what the
//! object_map_node and `asp map` call).
//!
//! | key | `simulated` | `onnx` / `minilm_onnx` | other |
//! |---|---|---|---|
//! | `segmenter` | [`SimulatedSegmenter`] | [`OnnxMaskGenerator`] (SAM encoder + decoder) | — |
//! | `image_embedder` | [`SimulatedImageEmbedder`] (text embedder on descriptions) | [`OnnxImageEmbedder`] (CLIP image tower) | — |
//! | `text_embedder` | — | [`MiniLmTextEmbedder`] | `clip_onnx`: [`ClipTextEmbedder`]; `hashing`: [`HashingTextEmbedder`] |
//! | `vlm` | [`SimulatedRetrievalVlm`] | — | `openai_compatible`: built by the LLM crate; the caller passes the VLM to [`retriever`] |

use std::sync::Arc;

use asp_config::LoadedConfig;
use asp_config::sections::perception::{ModelBackend, TextEmbedderBackend};
use asp_core::models::{ImageEmbedder, RetrievalVlm, Segmenter, TextEmbedder};

use crate::PerceptionError;
use crate::builder::MapBuilder;
use crate::hashing::HashingTextEmbedder;
use crate::onnx::{
    ClipTextEmbedder, MiniLmTextEmbedder, OnnxImageEmbedder, OnnxMaskGenerator, OnnxOptions,
    SamModel,
};
use crate::retrieval::ObjectRetriever;
use crate::simulated::{
    SimulatedImageEmbedder, SimulatedMemoryParams, SimulatedMemoryVlm, SimulatedRetrievalVlm,
    SimulatedSegmenter,
};

/// The models perception runs on.
#[derive(Clone)]
pub struct PerceptionModels {
    pub segmenter: Arc<dyn Segmenter>,
    pub image_embedder: Arc<dyn ImageEmbedder>,
    pub text_embedder: Arc<dyn TextEmbedder>,
}

impl std::fmt::Debug for PerceptionModels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PerceptionModels")
            .field("text_dim", &self.text_embedder.dim())
            .field("image_dim", &self.image_embedder.dim())
            .finish_non_exhaustive()
    }
}

/// ONNX Runtime settings from the configuration.
pub fn onnx_options(cfg: &LoadedConfig) -> OnnxOptions {
    let m = &cfg.config.object_map_node.models;
    OnnxOptions {
        library: cfg.model_path(&m.onnxruntime_library),
        threads: m.intra_op_threads as usize,
        provider: m.execution_provider,
    }
}

/// The configured text embedder.
pub fn text_embedder(cfg: &LoadedConfig) -> Result<Arc<dyn TextEmbedder>, PerceptionError> {
    let m = &cfg.config.object_map_node.models;
    Ok(match m.text_embedder {
        TextEmbedderBackend::Hashing => Arc::new(HashingTextEmbedder::new(m.hashing_dim)),
        TextEmbedderBackend::MinilmOnnx => Arc::new(MiniLmTextEmbedder::load(
            &cfg.model_path(&m.text_embedder_model),
            &cfg.model_path(&m.text_embedder_tokenizer),
            m.text_max_tokens,
            &onnx_options(cfg),
        )?),
        TextEmbedderBackend::ClipOnnx => Arc::new(ClipTextEmbedder::load(
            &cfg.model_path(&m.clip_text_model),
            &cfg.model_path(&m.clip_text_tokenizer),
            &m.clip_text_output,
            m.text_max_tokens,
            &onnx_options(cfg),
        )?),
    })
}

/// The configured text embedder when it embeds meaning (MiniLM, CLIP), `None` for the
/// lexical `hashing` one: what the offline goal grammar matches unknown words with.
pub fn semantic_text_embedder(
    cfg: &LoadedConfig,
) -> Result<Option<Arc<dyn TextEmbedder>>, PerceptionError> {
    match cfg.config.object_map_node.models.text_embedder {
        TextEmbedderBackend::Hashing => Ok(None),
        _ => text_embedder(cfg).map(Some),
    }
}

/// The configured class-agnostic segmenter.
pub fn segmenter(cfg: &LoadedConfig) -> Result<Arc<dyn Segmenter>, PerceptionError> {
    let node = &cfg.config.object_map_node;
    let m = &node.models;
    match m.segmenter {
        ModelBackend::Simulated => Ok(Arc::new(SimulatedSegmenter::new(node.simulation.clone()))),
        ModelBackend::Onnx => {
            let sam = SamModel::load(
                &cfg.model_path(&m.segmenter_encoder),
                &cfg.model_path(&m.segmenter_decoder),
                &onnx_options(cfg),
            )?;
            Ok(Arc::new(OnnxMaskGenerator::new(
                Arc::new(sam),
                (&node.sam).into(),
            )))
        }
        ModelBackend::OpenaiCompatible => Err(PerceptionError::config(
            "object_map_node.models.segmenter",
            "openai_compatible is not a segmenter; use simulated or onnx",
        )),
    }
}

/// The configured image embedder; the simulated one embeds descriptions with `text`.
pub fn image_embedder(
    cfg: &LoadedConfig,
    text: &Arc<dyn TextEmbedder>,
) -> Result<Arc<dyn ImageEmbedder>, PerceptionError> {
    let node = &cfg.config.object_map_node;
    let m = &node.models;
    match m.image_embedder {
        ModelBackend::Simulated => Ok(Arc::new(SimulatedImageEmbedder::new(
            Arc::clone(text),
            node.simulation.clone(),
        ))),
        ModelBackend::Onnx => {
            let e = OnnxImageEmbedder::load(
                &cfg.model_path(&m.image_embedder_model),
                (&node.clip).into(),
                &onnx_options(cfg),
            )?;
            if e.dim() != text.dim() {
                return Err(PerceptionError::config(
                    "object_map_node.models.image_embedder_model",
                    format!(
                        "embeds in {} dimensions but the text embedder in {}: retrieval compares them, use the text tower of the same CLIP model",
                        e.dim(),
                        text.dim()
                    ),
                ));
            }
            Ok(Arc::new(e))
        }
        ModelBackend::OpenaiCompatible => Err(PerceptionError::config(
            "object_map_node.models.image_embedder",
            "openai_compatible is not an image embedder; use simulated or onnx",
        )),
    }
}

/// The simulated retrieval VLM with `object_map_node.simulation`'s error model (simulator
/// frames only): the `simulated` backend, and the simulation's VLM stand-in.
pub fn simulated_retrieval_vlm(
    cfg: &LoadedConfig,
    text: &Arc<dyn TextEmbedder>,
) -> SimulatedRetrievalVlm {
    SimulatedRetrievalVlm::new(
        Arc::clone(text),
        cfg.config.object_map_node.simulation.clone(),
    )
}

/// The simulated tour-image describer of memory construction (simulator frames only),
/// seeded by `object_map_node.simulation.seed`, with [`SimulatedMemoryParams`]'
/// default error model: the simulation's VLM stand-in.
pub fn simulated_memory_vlm(cfg: &LoadedConfig) -> SimulatedMemoryVlm {
    SimulatedMemoryVlm::new(SimulatedMemoryParams {
        seed: cfg.config.object_map_node.simulation.seed,
        ..SimulatedMemoryParams::default()
    })
}

/// The configured retrieval VLM; `None` for `openai_compatible`, which the LLM crate
/// builds.
pub fn retrieval_vlm(
    cfg: &LoadedConfig,
    text: &Arc<dyn TextEmbedder>,
) -> Result<Option<Arc<dyn RetrievalVlm>>, PerceptionError> {
    match cfg.config.object_map_node.models.vlm {
        ModelBackend::Simulated => Ok(Some(Arc::new(simulated_retrieval_vlm(cfg, text)))),
        ModelBackend::OpenaiCompatible => Ok(None),
        ModelBackend::Onnx => Err(PerceptionError::config(
            "object_map_node.models.vlm",
            "onnx is not a VLM backend; use simulated or openai_compatible",
        )),
    }
}

/// Every configured model.
pub fn models(cfg: &LoadedConfig) -> Result<PerceptionModels, PerceptionError> {
    let text_embedder = text_embedder(cfg)?;
    Ok(PerceptionModels {
        segmenter: segmenter(cfg)?,
        image_embedder: image_embedder(cfg, &text_embedder)?,
        text_embedder,
    })
}

/// A map builder in `common.frames.map` with the given models.
pub fn map_builder(
    cfg: &LoadedConfig,
    models: &PerceptionModels,
) -> Result<MapBuilder, PerceptionError> {
    MapBuilder::new(
        &cfg.config.object_map_node,
        cfg.config.common.frames.map.as_str(),
        Arc::clone(&models.segmenter),
        Arc::clone(&models.image_embedder),
    )
}

/// The retriever, confirming with `vlm` (see [`retrieval_vlm`]; the caller builds the
/// OpenAI-compatible one).
pub fn retriever(
    cfg: &LoadedConfig,
    models: &PerceptionModels,
    vlm: Option<Arc<dyn RetrievalVlm>>,
) -> Result<ObjectRetriever, PerceptionError> {
    ObjectRetriever::new(
        Arc::clone(&models.text_embedder),
        vlm,
        cfg.config.object_map_node.retrieval.clone(),
    )
}
