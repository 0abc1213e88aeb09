//! Affordance-grounding evaluation on the synthetic set with the simulated models:
//! A-Harness (verifier on) vs verifier off vs the fixed detect-then-segment chain.
//!
//! cargo run --release -p asp_affordance --example grounding_eval -- [PER_CATEGORY] [SEED]
#![allow(clippy::print_stdout)]

use std::path::Path;
use std::sync::Arc;

use asp_affordance::eval::{evaluate, markdown_table};
use asp_affordance::synthetic::dataset;
use asp_affordance::{
    AffordanceDetector, Models, PriorImagination, SimulatedAffordanceVlm, SimulatedSegmenter,
};
use asp_config::AspConfig;
use asp_config::sections::affordance::GroundingMode;
use asp_memory::SeedFile;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let per_category: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(50);
    let seed: u64 = args.next().map(|a| a.parse()).transpose()?.unwrap_or(1000);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let cfg = AspConfig::load_dir(root.join("config"))?;
    let aff = &cfg.config.affordance_node;
    let priors = SeedFile::load(&cfg.config_path(&aff.memory.common_sense_seed))?.priors;
    let models = Models {
        vlm: Arc::new(SimulatedAffordanceVlm::new(aff.simulated_models.clone())),
        segmenter: Arc::new(SimulatedSegmenter::new(aff.simulated_models.clone())),
        imagination: Some(Arc::new(PriorImagination::new(priors))),
        web: None,
    };
    let detector = AffordanceDetector::new(models, aff, &cfg.config.verifier_node.gate, None, None);
    let samples = dataset(per_category, seed);
    println!(
        "{} synthetic samples ({per_category} per category, seed {seed}); simulated model errors: {:?}\n",
        samples.len(),
        aff.simulated_models
    );
    let mut results = Vec::new();
    for mode in [
        GroundingMode::Harness,
        GroundingMode::VerifierOff,
        GroundingMode::FixedChain,
    ] {
        results.push(evaluate(&detector, &samples, mode).await?);
    }
    println!("{}", markdown_table(&results));
    let (h, f) = (&results[0].ious, &results[2].ious);
    let better = h.iter().zip(f).filter(|(a, b)| **a > **b + 1e-9).count();
    let worse = h.iter().zip(f).filter(|(a, b)| **a + 1e-9 < **b).count();
    println!(
        "paired, harness vs fixed chain: better on {better}, worse on {worse}, equal on {} samples",
        h.len() - better - worse
    );
    Ok(())
}
