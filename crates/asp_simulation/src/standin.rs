//! The simulation's VLM: the stand-in server (`asp_vlm_standin`) over a simulation's
//! rendered frames; the simulation's web: the search server (`asp_web_standin`) over the
//! corpus of concepts no detector knows; and the configuration that points this
//! process's nodes at both.

use std::net::SocketAddr;
use std::sync::Arc;

use asp_config::LoadedConfig;
use asp_sim::SimRobot;
use asp_vlm_standin::{FrameLog, StandInModels, VlmStandIn};
use asp_web_standin::{ConceptErrors, Corpus, CorpusVlm, WebStandIn};
use tracing::info;

use crate::SimulationError;

/// Starts the stand-in of `sim_node.vlm_standin` (when enabled) on the frames `sim`
/// renders from now on. Its models are the simulated ones, with the error settings of
/// `object_map_node.simulation`, `affordance_node.simulated_models` and
/// `verifier_node.outcome.simulated_*`; the memory describer has its default error model,
/// seeded by `object_map_node.simulation.seed`.
pub async fn start_vlm_standin(
    cfg: &LoadedConfig,
    sim: &SimRobot,
) -> Result<Option<VlmStandIn>, SimulationError> {
    let c = &cfg.config;
    let s = &c.sim_node.vlm_standin;
    if !s.enabled {
        return Ok(None);
    }
    let bad = SimulationError::StandIn;
    let bind: SocketAddr = s
        .bind
        .parse()
        .map_err(|e| bad(format!("bind {:?}: {e}", s.bind)))?;
    let models = standin_models(cfg)?;
    let frames = Arc::new(FrameLog::new(s.frames_kept));
    let log = Arc::clone(&frames);
    sim.set_frame_tap(Some(Arc::new(move |f: &asp_core::RgbdFrame| {
        log.record_frame(f)
    })));
    let server = VlmStandIn::start(bind, frames, models)
        .await
        .map_err(|e| bad(format!("cannot listen on {bind}: {e}")))?;
    info!(url = %server.base_url(), "the simulation's VLM stand-in is serving");
    Ok(Some(server))
}

/// The simulated models the stand-in answers with.
fn standin_models(cfg: &LoadedConfig) -> Result<StandInModels, SimulationError> {
    let c = &cfg.config;
    let text = asp_perception::factory::text_embedder(cfg).map_err(|e| {
        SimulationError::StandIn(format!("the retrieval stand-in's text embedder: {e}"))
    })?;
    let mut retrieval = asp_perception::factory::simulated_retrieval_vlm(cfg, &text);
    let mut concept: Option<Arc<dyn asp_core::models::ConceptVlm>> = None;
    if let Some(corpus) = web_corpus(cfg)? {
        // the corpus's concepts are what the detector never learnt: it sees their looks
        retrieval = retrieval.with_unknown_names(
            corpus
                .concepts()
                .iter()
                .flat_map(|k| std::iter::once(&k.name).chain(&k.aliases)),
        );
        let w = &c.sim_node.web_standin;
        concept = Some(Arc::new(CorpusVlm::new(
            Arc::new(corpus),
            ConceptErrors {
                keyword: w.keyword_error_rate,
                replacement: w.replacement_error_rate,
                seed: c.object_map_node.simulation.seed,
            },
        )));
    }
    Ok(StandInModels {
        retrieval: Arc::new(retrieval),
        affordance: Arc::new(asp_system::models::simulated_affordance_vlm(c)),
        outcome: Arc::new(asp_system::models::simulated_outcome_vlm(c)),
        memory: Arc::new(asp_perception::factory::simulated_memory_vlm(cfg)),
        concept,
    })
}

/// The corpus of `sim_node.web_standin` (when enabled).
fn web_corpus(cfg: &LoadedConfig) -> Result<Option<Corpus>, SimulationError> {
    let w = &cfg.config.sim_node.web_standin;
    if !w.enabled {
        return Ok(None);
    }
    Corpus::load(cfg.config_path(&w.corpus))
        .map(Some)
        .map_err(|e| SimulationError::StandIn(format!("sim_node.web_standin.corpus: {e}")))
}

/// Starts the search server of `sim_node.web_standin` (when enabled) on its corpus.
pub async fn start_web_standin(cfg: &LoadedConfig) -> Result<Option<WebStandIn>, SimulationError> {
    let Some(corpus) = web_corpus(cfg)? else {
        return Ok(None);
    };
    let bind: SocketAddr = cfg.config.sim_node.web_standin.bind.parse().map_err(|e| {
        SimulationError::StandIn(format!(
            "sim_node.web_standin.bind {:?}: {e}",
            cfg.config.sim_node.web_standin.bind
        ))
    })?;
    let concepts = corpus.concepts().len();
    let server = WebStandIn::start(bind, corpus).await.map_err(|e| {
        SimulationError::StandIn(format!("web search: cannot listen on {bind}: {e}"))
    })?;
    info!(url = %server.base_url(), concepts, "the simulation's web search is serving");
    Ok(Some(server))
}

/// A stand-in on 127.0.0.1 for frames that were recorded in simulation rather than
/// rendered now (`asp memory build --bag`): whoever asks records each frame's ground
/// truth in its [`VlmStandIn::frames`] first.
pub async fn start_recording_standin(cfg: &LoadedConfig) -> Result<VlmStandIn, SimulationError> {
    let frames = Arc::new(FrameLog::new(cfg.config.sim_node.vlm_standin.frames_kept));
    let bind = SocketAddr::from(([127, 0, 0, 1], 0));
    VlmStandIn::start(bind, frames, standin_models(cfg)?)
        .await
        .map_err(|e| SimulationError::StandIn(format!("cannot listen on {bind}: {e}")))
}

/// `cfg` with `agent_node.vlm` pointed at `standin` (no key), for the nodes of this
/// process; unchanged without one.
pub fn pointed_at(cfg: &LoadedConfig, standin: Option<&VlmStandIn>) -> LoadedConfig {
    let mut cfg = cfg.clone();
    if let Some(s) = standin {
        cfg.config.agent_node.vlm.base_url = s.base_url();
        cfg.config.agent_node.vlm.api_key_env = String::new();
    }
    cfg
}

/// `cfg` with `object_map_node.concepts.web_search` pointed at `web`, for the nodes of
/// this process; unchanged without one.
pub fn searching_on(cfg: LoadedConfig, web: Option<&WebStandIn>) -> LoadedConfig {
    let mut cfg = cfg;
    if let Some(w) = web {
        cfg.config.object_map_node.concepts.web_search.base_url = w.base_url();
    }
    cfg
}
