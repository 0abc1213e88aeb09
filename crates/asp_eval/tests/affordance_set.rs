//! The grounding evaluation on a small simulator-generated set (asp_sim renders the
//! tabletop and apartment objects; ground truth from the renderer).
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

use asp_affordance::eval::{EvalSample, run_modes, simulated_detector};
use asp_config::AspConfig;
use asp_config::sections::affordance::GroundingMode;
use asp_eval::affordance_set::{SimSetConfig, sim_set};

fn config_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../config")
}

fn small_set() -> SimSetConfig {
    SimSetConfig {
        width: 320,
        height: 240,
        ..SimSetConfig::standard(config_dir(), 3, 11)
    }
}

#[test]
fn the_simulator_set_is_deterministic_with_visible_parts_inside_their_objects() {
    let cfg = small_set();
    let a = sim_set(&cfg).unwrap();
    assert_eq!(a, sim_set(&cfg).unwrap());
    // both worlds, several objects, at most views_per_task views per task
    assert!(a.iter().any(|s| s.world == "tabletop") && a.iter().any(|s| s.world == "apartment"));
    for s in &a {
        assert!(s.truth.area() >= cfg.min_part_pixels, "{}", s.id);
        assert_eq!(
            (s.truth.width(), s.truth.height()),
            (s.view.width(), s.view.height())
        );
        // the ground-truth part lies on the object
        let (inter, _) = s.truth.intersection_union(&s.object_mask).unwrap();
        assert_eq!(inter, s.truth.area(), "{}", s.id);
        assert!(!s.action.is_empty());
        assert_eq!(s.intrinsics.width, s.view.width());
    }
    let n_drawer = a
        .iter()
        .filter(|s| s.action == "open the drawer unit")
        .count();
    assert!((1..=3).contains(&n_drawer), "{n_drawer}");
    // another seed gives other views
    let b = sim_set(&SimSetConfig { seed: 12, ..cfg }).unwrap();
    assert_ne!(a[0].viewpoint, b[0].viewpoint);
}

#[tokio::test]
async fn on_the_simulator_set_the_harness_beats_the_fixed_chain_on_giou() {
    let cfg = AspConfig::load_dir(config_dir()).unwrap();
    let detector = simulated_detector(&cfg).unwrap();
    let samples = sim_set(&small_set()).unwrap();
    assert!(samples.len() >= 30, "{} samples", samples.len());
    assert!(samples.iter().all(|s| !s.truth().is_empty()));
    let report = run_modes(&detector, &samples, "small sim set")
        .await
        .unwrap();
    let h = report.result(GroundingMode::Harness).unwrap();
    let f = report.result(GroundingMode::FixedChain).unwrap();
    assert!(
        h.metrics.giou > f.metrics.giou,
        "harness {:.4} vs fixed chain {:.4}\n{report}",
        h.metrics.giou,
        f.metrics.giou
    );
    // the fixed chain is one detection per sample; the harness spends more only on retries
    assert!((f.mean_skill_calls - 1.0).abs() < 1e-12);
    assert!(h.mean_skill_calls >= 1.0);
    // the table names every mode
    let table = report.to_string();
    for name in ["A-Harness", "verifier off", "fixed detect-then-segment"] {
        assert!(table.contains(name), "{table}");
    }
}
