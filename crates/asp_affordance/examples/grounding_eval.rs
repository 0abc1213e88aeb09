//! Affordance-grounding evaluation on the synthetic set with the simulated models:
//! A-Harness (verifier on) vs verifier off vs the fixed detect-then-segment chain.
//!
//! cargo run --release -p asp_affordance --example grounding_eval -- [PER_CATEGORY] [SEED]
#![allow(clippy::print_stdout)]

use std::path::Path;
use std::sync::Arc;

use asp_affordance::eval::{ModeResult, evaluate, markdown_table};
use asp_affordance::synthetic::{Category, dataset};
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
    // paired: a sample counts when the IoU differs by more than 0.1 (boundary noise of
    // the two final segmentations alone moves it by a few hundredths)
    let (h, f) = (&results[0].ious, &results[2].ious);
    let better = h.iter().zip(f).filter(|(a, b)| **a > **b + 0.1).count();
    let worse = h.iter().zip(f).filter(|(a, b)| **a + 0.1 < **b).count();
    println!(
        "paired (|dIoU| > 0.1), harness vs fixed chain: better on {better}, worse on {worse} of {} samples\n",
        h.len()
    );
    println!(
        "| category | gIoU harness | gIoU verifier off | gIoU fixed chain | calls harness | committed harness |"
    );
    println!("|---|---|---|---|---|---|");
    for k in Category::ALL {
        let idx: Vec<usize> = samples
            .iter()
            .enumerate()
            .filter(|(_, s)| s.category == k)
            .map(|(i, _)| i)
            .collect();
        let mean = |r: &ModeResult| idx.iter().map(|&i| r.ious[i]).sum::<f64>() / idx.len() as f64;
        let calls = idx
            .iter()
            .map(|&i| f64::from(results[0].calls[i]))
            .sum::<f64>()
            / idx.len() as f64;
        let committed = idx.iter().filter(|&&i| results[0].committed[i]).count();
        println!(
            "| {} | {:.1} | {:.1} | {:.1} | {:.2} | {}/{} |",
            k.object_name(),
            100.0 * mean(&results[0]),
            100.0 * mean(&results[1]),
            100.0 * mean(&results[2]),
            calls,
            committed,
            idx.len()
        );
    }
    Ok(())
}
