//! affordance_node's logic (SPEC §1.5, §2): affordance detection with the A-Harness
//! loop on an object of the map, seeded by and written back to the two-tier memory.

use std::sync::Arc;

use asp_affordance::{
    AffordanceDetector, AffordanceReport, GroundingView, MemoryLink, Models, PriorImagination,
};
use asp_config::LoadedConfig;
use asp_core::FailureKind;
use asp_core::robot::CancellationToken;
use asp_memory::{AffordanceMemory, SeedFile};
use async_trait::async_trait;
use tracing::info;

use crate::ports::{AffordancePort, AffordanceQuery, ObjectMapPort, ServiceError};

/// The affordance detection service.
pub struct AffordanceService {
    detector: AffordanceDetector,
    map: Arc<dyn ObjectMapPort>,
}

impl std::fmt::Debug for AffordanceService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AffordanceService")
            .field("detector", &self.detector)
            .finish_non_exhaustive()
    }
}

/// Opens the affordance memory of `affordance_node.memory` (seeding an empty one with
/// the common-sense priors).
pub fn open_memory(cfg: &LoadedConfig) -> Result<AffordanceMemory, ServiceError> {
    let mem = &cfg.config.affordance_node.memory;
    let seed = SeedFile::load(&cfg.config_path(&mem.common_sense_seed))
        .map_err(|e| ServiceError::internal(format!("affordance memory seed: {e}")))?;
    AffordanceMemory::open(cfg.data_path(&mem.database), mem, &seed.priors)
        .map_err(|e| ServiceError::internal(format!("affordance memory: {e}")))
}

impl AffordanceService {
    pub fn new(detector: AffordanceDetector, map: Arc<dyn ObjectMapPort>) -> Self {
        Self { detector, map }
    }

    /// The detector with the models of `affordance_node.models` and the memory link when
    /// `memory` is given.
    pub fn from_config(
        cfg: &LoadedConfig,
        map: Arc<dyn ObjectMapPort>,
        memory: Option<MemoryLink>,
    ) -> Result<Self, ServiceError> {
        let aff = &cfg.config.affordance_node;
        let priors = SeedFile::load(&cfg.config_path(&aff.memory.common_sense_seed))
            .map_err(|e| ServiceError::internal(format!("affordance memory seed: {e}")))?
            .priors;
        let models = Models {
            vlm: crate::models::affordance_vlm(cfg)?,
            segmenter: crate::models::part_segmenter(cfg)?,
            imagination: Some(Arc::new(PriorImagination::new(priors))),
            web: None,
        };
        let detector =
            AffordanceDetector::new(models, aff, &cfg.config.verifier_node.gate, None, memory);
        Ok(Self::new(detector, map))
    }
}

#[async_trait]
impl AffordancePort for AffordanceService {
    async fn detect(
        &self,
        query: &AffordanceQuery,
        cancel: &CancellationToken,
    ) -> Result<AffordanceReport, ServiceError> {
        let object = self.map.object(&query.key).await?;
        let views: Vec<GroundingView> = object
            .object
            .crops
            .iter()
            .map(GroundingView::from_crop)
            .collect();
        if views.is_empty() {
            return Err(ServiceError::new(
                FailureKind::Perception,
                format!("the map has no view of {} to look for parts in", query.key),
            ));
        }
        let detection = self
            .detector
            .detect(&views, &object.query, &query.action, None);
        let mut report = tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(ServiceError::cancelled("affordance detection")),
            r = detection => r.map_err(|e| ServiceError::new(FailureKind::Grounding, e.to_string()))?,
        };
        if !query.skills.is_empty() {
            // wanted skills first, in the caller's order; the detector's order otherwise
            report.affordances.sort_by_key(|a| {
                query
                    .skills
                    .iter()
                    .position(|s| *s == a.affordance.skill)
                    .unwrap_or(query.skills.len())
            });
        }
        info!(
            object = %query.key,
            action = %query.action,
            found = report.affordances.len(),
            skill_calls = report.skill_calls,
            "affordances detected"
        );
        Ok(report)
    }
}

/// The affordance memory with the perception embedders that key its entries.
pub fn memory_link(
    cfg: &LoadedConfig,
    models: &asp_perception::PerceptionModels,
) -> Result<MemoryLink, crate::SystemError> {
    Ok(MemoryLink {
        memory: Arc::new(open_memory(cfg)?),
        image: models.image_embedder.clone(),
        text: models.text_embedder.clone(),
        top_n: cfg.config.affordance_node.memory.top_n,
    })
}
