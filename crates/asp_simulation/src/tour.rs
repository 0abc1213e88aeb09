//! A tour before the goals (the `building` suite's "yesterday"): the robot explores a
//! simulated world on its own, recording its views to MCAP (`mapping.explore.record`),
//! and the building memory is built from that recording alone — the bag read back, each
//! view described by the VLM (the simulation's stand-in over HTTP), clustered and
//! stored — as `asp memory build --bag` builds it from a real robot's bag.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use asp_config::LoadedConfig;
use asp_core::models::MemoryVlm;
use asp_sim::SimRobot;
use asp_system::ObjectMapPort;
use asp_system::map::ExplorationEnd;
use asp_system::tour_memory::{FrameTap, TourMemoryReport, build_memory_from_bag};
use tracing::info;

use crate::{SimSystem, SimulationError, SystemOptions};

/// The bag a tour records to when `mapping.explore.record` names none (relative to
/// `paths.data_dir`).
pub const DEFAULT_TOUR_BAG: &str = "tour.mcap";

/// What a tour did and the memory built from it.
#[derive(Debug, Clone)]
pub struct TourMemory {
    /// Stops the exploration looked round at, metres driven between them, why it ended.
    pub stops: usize,
    pub travelled_m: f32,
    pub ended: ExplorationEnd,
    /// The storeys toured in order, with `mapping.explore.every_storey` in a building.
    pub storeys: Vec<usize>,
    /// Floor seen free, square metres.
    pub free_area_m2: f32,
    /// Seconds the tour took (wall clock, the simulation runs as fast as it can) and the
    /// memory build after it.
    pub tour_s: f64,
    pub build_s: f64,
    pub bag: PathBuf,
    pub memory: TourMemoryReport,
}

/// Explores `sim` from where its robot stands, recording the views, then builds
/// `agent_node.building_memory` (under `paths.data_dir`) from the recording. The
/// exploration settings are `cfg`'s (`object_map_node.mapping.explore`), switched on,
/// with no survey; the robot is left where the tour ended.
pub async fn tour_into_memory(
    cfg: &LoadedConfig,
    sim: SimRobot,
) -> Result<TourMemory, SimulationError> {
    let mut tour_cfg = cfg.clone();
    let mapping = &mut tour_cfg.config.object_map_node.mapping;
    mapping.explore.enabled = true;
    mapping.survey.clear();
    mapping.build_on_start = false;
    if mapping.explore.record.as_os_str().is_empty() {
        mapping.explore.record = DEFAULT_TOUR_BAG.into();
    }
    let started = Instant::now();
    let system = SimSystem::start(
        &tour_cfg,
        sim,
        &SystemOptions {
            memory: false,
            ..SystemOptions::default()
        },
        None,
        None,
    )
    .await?;
    system.map.rebuild(None).await?;
    let report = system
        .map
        .exploration()
        .await
        .ok_or_else(|| SimulationError::Tour("the map build did not explore".into()))?;
    drop(system);
    let tour_s = started.elapsed().as_secs_f64();
    let Some((bag, views)) = report.recording.clone() else {
        return Err(SimulationError::Tour(
            "the exploration recorded nothing".into(),
        ));
    };
    info!(
        stops = report.stops.len(),
        travelled_m = report.travelled_m,
        views,
        ended = ?report.ended,
        "tour recorded"
    );

    let started = Instant::now();
    let standin = crate::standin::start_recording_standin(cfg).await?;
    let vlm_cfg = crate::standin::pointed_at(cfg, Some(&standin));
    let vlm: Arc<dyn MemoryVlm> = Arc::new(
        asp_llm::vlm::OpenAiVlm::from_config(&vlm_cfg.config.agent_node)
            .map_err(|e| SimulationError::Tour(format!("agent_node.vlm: {e}")))?,
    );
    let log = Arc::clone(standin.frames());
    let tap: FrameTap = Arc::new(move |f: &asp_core::RgbdFrame| log.record_frame(f));
    let models = asp_perception::factory::models(cfg)?;
    let memory = build_memory_from_bag(
        cfg,
        &bag,
        vlm,
        Arc::clone(&models.text_embedder),
        Arc::clone(&models.image_embedder),
        Some(tap),
        &mut |_| {},
    )
    .await
    .map_err(|e| SimulationError::Tour(e.to_string()))?;
    Ok(TourMemory {
        stops: report.stops.len(),
        travelled_m: report.travelled_m,
        ended: report.ended,
        storeys: report.storeys.clone(),
        free_area_m2: report.free_area_m2,
        tour_s,
        build_s: started.elapsed().as_secs_f64(),
        bag,
        memory,
    })
}
