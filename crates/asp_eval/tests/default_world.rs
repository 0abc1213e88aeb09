//! The default world as `asp run` and `asp launch sim` meet it (`suites/default_world`):
//! every object of it is the subject of a goal, each started from where `asp run` puts
//! the robot, most out of its first view. Each must succeed in at least one of three
//! seeded runs on the realistic profile (the judge reads the world; the system never
//! does). A scenario no run completes means an object the product cannot act on.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

use asp_eval::suite::resolve;
use asp_eval::{EvalSettings, InProcess, Quiet, Suite, run_suite};

fn config_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../config")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_object_of_the_default_world_can_be_the_subject_of_a_goal_that_succeeds() {
    let data = tempfile::tempdir().unwrap();
    let suite = Suite::load(resolve("default_world", &config_dir()).unwrap()).unwrap();
    let settings = EvalSettings {
        config_dir: config_dir(),
        overrides: vec![format!("common.paths.data_dir={}", data.path().display())],
        runs: 3,
        seed: Some(0),
        report_dir: None,
        concept_memory: Default::default(),
    };
    let r = run_suite(&suite, &settings, &InProcess::default(), &Quiet)
        .await
        .unwrap();
    assert_eq!(r.summary.per_scenario.len(), suite.scenarios.len());
    let never: Vec<String> = r
        .summary
        .per_scenario
        .iter()
        .filter(|s| s.successes == 0)
        .map(|s| {
            let why: Vec<String> = r
                .episodes
                .iter()
                .filter(|e| e.spec.scenario == s.scenario)
                .map(|e| e.summary.clone())
                .collect();
            format!("{}: {}", s.scenario, why.join(" | "))
        })
        .collect();
    println!(
        "default world: {}/{} episodes succeeded",
        r.summary.successes, r.summary.episodes
    );
    assert!(
        never.is_empty(),
        "no run succeeded for:\n{}",
        never.join("\n")
    );
}
