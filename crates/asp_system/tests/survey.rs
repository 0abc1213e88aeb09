//! The map's survey through the apartment: what a build captures at each stop.
#![allow(clippy::unwrap_used)]

mod common;

use asp_config::LoadedConfig;
use asp_config::sections::perception::SurveyLooks;
use asp_core::robot::BaseNavigation;
use asp_sim::scenario::Scenario;
use asp_simulation::{SimSystem, SystemOptions, scenario_simulation};
use asp_system::ObjectMapPort;

use common::config_dir;

/// The oracle profile: the test counts views, so the models' errors stay out of it.
fn config(data: &tempfile::TempDir, looks: SurveyLooks) -> LoadedConfig {
    let mut cfg = common::oracle_config(data);
    let m = &mut cfg.config.object_map_node.mapping;
    m.build_on_start = false;
    // two stops facing the kitchen counter, whose two green apples lie 35 cm apart
    m.survey = vec![[6.8, 1.6, 0.0], [5.0, 2.9, 0.0]];
    m.arm_poses = ["look", "look_left", "look_right"]
        .map(String::from)
        .to_vec();
    m.survey_looks = looks;
    cfg
}

/// With `survey_looks: all` every stop adds a view per arm pose, and both apples (each
/// at the edge of the straight-ahead view) are in the map; with `one`, a view per stop.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_survey_looks_around_at_every_stop() {
    let sc = Scenario::load(config_dir().join("scenarios/mobile/double_pick_apples.yaml")).unwrap();
    for (looks, views) in [(SurveyLooks::All, 6), (SurveyLooks::One, 2)] {
        let data = tempfile::tempdir().unwrap();
        let cfg = config(&data, looks);
        let sim = scenario_simulation(&cfg, &sc, None).unwrap();
        let start = sim.base_pose().await.unwrap();
        let options = SystemOptions {
            memory: false,
            ..SystemOptions::default()
        };
        let system = SimSystem::start(&cfg, sim.clone(), &options, None, None)
            .await
            .unwrap();
        let summary = system.map.rebuild(None).await.unwrap();
        assert_eq!(summary.keyframes, views, "{looks:?}");
        if looks == SurveyLooks::All {
            let found = system.map.retrieve("green apple").await.unwrap();
            assert_eq!(found.keys.len(), 2, "{found:?}");
        }
        // the survey ends where it started
        let end = sim.base_pose().await.unwrap();
        assert!(start.distance_to(&end) < 0.05, "{start:?} → {end:?}");
    }
}
