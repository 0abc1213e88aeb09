//! The grounding evaluation on the synthetic set with the simulated models.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use asp_affordance::eval::{evaluate, markdown_table};
use asp_affordance::synthetic::dataset;
use asp_affordance::{
    AffordanceDetector, Models, PriorImagination, SimulatedAffordanceVlm, SimulatedSegmenter,
};
use asp_config::sections::affordance::{AffordanceConfig, GroundingMode, SimulatedModelsConfig};
use asp_config::sections::verifier::GateConfig;
use asp_memory::SeedFile;

fn detector(errors: SimulatedModelsConfig) -> AffordanceDetector {
    let seed = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../config/memory/common_sense_priors.yaml");
    let models = Models {
        vlm: Arc::new(SimulatedAffordanceVlm::new(errors.clone())),
        segmenter: Arc::new(SimulatedSegmenter::new(errors)),
        imagination: Some(Arc::new(PriorImagination::new(
            SeedFile::load(&seed).unwrap().priors,
        ))),
        web: None,
    };
    AffordanceDetector::new(
        models,
        &AffordanceConfig::default(),
        &GateConfig::default(),
        None,
        None,
    )
}

fn clean() -> SimulatedModelsConfig {
    SimulatedModelsConfig {
        miss_rate: 0.0,
        wrong_part_rate: 0.0,
        gross_shift_rate: 0.0,
        low_confidence_rate: 0.0,
        box_jitter: 0.0,
        ambiguity_rate: 0.0,
        boundary_noise: 0.0,
        ..SimulatedModelsConfig::default()
    }
}

#[tokio::test]
async fn error_free_models_ground_every_sample_exactly_in_every_mode() {
    let samples = dataset(2, 0);
    let d = detector(clean());
    for mode in [
        GroundingMode::Harness,
        GroundingMode::VerifierOff,
        GroundingMode::FixedChain,
    ] {
        let r = evaluate(&d, &samples, mode).await.unwrap();
        assert_eq!(r.metrics.samples, samples.len());
        assert_eq!(
            r.no_proposal, 0,
            "{mode:?}: every action has a matching part"
        );
        assert!(
            (r.metrics.giou - 1.0).abs() < 1e-9,
            "{mode:?}: gIoU {}",
            r.metrics.giou
        );
        assert_eq!(r.calls_histogram.values().sum::<usize>(), samples.len());
    }
    let fixed = evaluate(&d, &samples, GroundingMode::FixedChain)
        .await
        .unwrap();
    assert_eq!(fixed.mean_skill_calls, 1.0);
    let harness = evaluate(&d, &samples, GroundingMode::Harness)
        .await
        .unwrap();
    // a clean compact part commits with one call; a C-shaped mug handle fills about half
    // of its box, so ω stays near 0.5 and the harness spends its budget on it
    assert!(harness.commit_rate >= 0.75, "{}", harness.commit_rate);
    assert!(harness.mean_skill_calls >= 1.0 && harness.mean_skill_calls <= 3.0);
}

#[tokio::test]
async fn evaluation_with_errors_is_deterministic_and_within_budget() {
    let samples = dataset(3, 50);
    let d = detector(SimulatedModelsConfig::default());
    let a = evaluate(&d, &samples, GroundingMode::Harness)
        .await
        .unwrap();
    let b = evaluate(&d, &samples, GroundingMode::Harness)
        .await
        .unwrap();
    assert_eq!(a, b);
    assert!(
        a.calls_histogram
            .keys()
            .all(|&k| (1..=GateConfig::default().budget).contains(&k))
    );
    let off = evaluate(&d, &samples, GroundingMode::VerifierOff)
        .await
        .unwrap();
    assert!(
        off.mean_skill_calls > a.mean_skill_calls,
        "verifier off spends the whole budget"
    );
    assert_eq!(off.commit_rate, 0.0);
    let table = markdown_table(&[a, off]);
    assert_eq!(table.lines().count(), 4);
    assert!(table.contains("A-Harness"));
}
