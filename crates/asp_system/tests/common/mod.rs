//! Shared helpers of the system tests.
#![allow(dead_code, clippy::unwrap_used)]

use std::path::PathBuf;

use asp_config::{ConfigLoader, LoadedConfig};
use asp_sim::scenario::Scenario;
use asp_simulation::{SimSystem, SystemOptions, scenario_simulation};

pub fn config_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../config")
}

/// The shipped configuration on the oracle profile (`config/profiles/oracle.yaml`),
/// data under `data`: these tests follow one seed through the system, so they use exact
/// stand-ins; `asp eval` measures the realistic profile over many seeds.
pub fn oracle_config(data: &tempfile::TempDir) -> LoadedConfig {
    let mut loader = ConfigLoader::new()
        .dir(config_dir())
        .unwrap()
        .set(&format!("/**.paths.data_dir={}", data.path().display()))
        .unwrap();
    for o in asp_runtime::profile_overrides(&config_dir(), "oracle").unwrap() {
        loader = loader.set(&o).unwrap();
    }
    loader.load().unwrap()
}

/// The system started on a simulation of scenario `file` (under `config/scenarios`),
/// with the affordance memory or without.
pub async fn start_on(cfg: &LoadedConfig, file: &str, memory: bool) -> (SimSystem, Scenario) {
    let sc = Scenario::load(config_dir().join("scenarios").join(file)).unwrap();
    let sim = scenario_simulation(cfg, &sc, None).unwrap();
    let options = SystemOptions {
        memory,
        ..SystemOptions::default()
    };
    let system = SimSystem::start(cfg, sim, &options, None, None)
        .await
        .unwrap();
    (system, sc)
}
