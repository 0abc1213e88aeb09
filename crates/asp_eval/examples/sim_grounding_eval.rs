//! Affordance-grounding evaluation on the simulator-generated set: objects of the
//! tabletop and apartment worlds rendered by `asp_sim` from seeded viewpoints, the
//! simulated VLM/segmenter driven by those frames; A-Harness (verifier on) vs verifier off
//! vs the fixed detect-then-segment chain.
//!
//! cargo run --release -p asp_eval --example sim_grounding_eval -- [VIEWS_PER_TASK] [SEED]
#![allow(clippy::print_stdout)]

use std::path::Path;

use asp_affordance::eval::{run_modes, simulated_detector};
use asp_config::AspConfig;
use asp_eval::affordance_set::{SimSetConfig, sim_set};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let views: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(12);
    let seed: u64 = args.next().map(|a| a.parse()).transpose()?.unwrap_or(1000);
    let config_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config");
    let cfg = AspConfig::load_dir(&config_dir)?;
    let set = SimSetConfig::standard(&config_dir, views, seed);
    let samples = sim_set(&set)?;
    let detector = simulated_detector(&cfg)?;
    let report = run_modes(
        &detector,
        &samples,
        format!(
            "simulator-generated set (tabletop + apartment, {views} views per task, seed {seed})"
        ),
    )
    .await?;
    println!(
        "simulated model errors: {:?}\n",
        cfg.config.affordance_node.simulated_models
    );
    println!("{report}");
    // per (object, part, instruction)
    let mut keys: Vec<(String, String)> = Vec::new();
    for s in &samples {
        let k = (s.object.clone(), s.action.clone());
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    println!(
        "| object | instruction | n | gIoU harness | gIoU verifier off | gIoU fixed chain | calls harness | committed harness |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let r = &report.results;
    for (object, action) in keys {
        let idx: Vec<usize> = samples
            .iter()
            .enumerate()
            .filter(|(_, s)| s.object == object && s.action == action)
            .map(|(i, _)| i)
            .collect();
        let n = idx.len() as f64;
        let mean = |m: usize| 100.0 * idx.iter().map(|&i| r[m].ious[i]).sum::<f64>() / n;
        let calls = idx.iter().map(|&i| f64::from(r[0].calls[i])).sum::<f64>() / n;
        let committed = idx.iter().filter(|&&i| r[0].committed[i]).count();
        println!(
            "| {object} | {action} | {} | {:.1} | {:.1} | {:.1} | {calls:.2} | {committed} |",
            idx.len(),
            mean(0),
            mean(1),
            mean(2),
        );
    }
    Ok(())
}
