//! Every file under `config/` is loaded by the loader for its kind, so a broken file (or
//! a file nobody reads) fails the build rather than a robot bring-up.
#![allow(clippy::unwrap_used)]

use asp_config::ConfigLoader;
use asp_sim::scenario::Scenario;
use asp_sim::{load_world, parse_world};
use asp_system_tests::{files_under, project_root};

#[test]
fn every_file_under_config_loads() {
    let config = project_root().join("config");
    let files = files_under(&config);
    assert!(!files.is_empty());
    let mut unknown = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(&config).unwrap();
        let kind = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy()
            .into_owned();
        if rel.components().count() == 1 {
            // node parameter files
            ConfigLoader::new()
                .file(f)
                .and_then(ConfigLoader::load)
                .unwrap_or_else(|e| panic!("{e}"));
        } else if kind == "worlds" && rel.extension().is_some_and(|e| e == "yaml") {
            load_world(f).unwrap_or_else(|e| panic!("{e}"));
        } else if kind == "worlds" && rel.extension().is_some_and(|e| e == "obj") {
            // meshes load through the world loader, relative to a world file in worlds/
            let mesh = rel.strip_prefix("worlds").unwrap().display().to_string();
            let text = format!(
                "name: m\nobjects:\n  - name: m\n    shapes:\n      - mesh: {{file: {mesh}}}\n"
            );
            parse_world(&text, config.join("worlds/mesh_check.yaml"))
                .unwrap_or_else(|e| panic!("{e}"));
        } else if kind == "scenarios" && rel.extension().is_some_and(|e| e == "yaml") {
            Scenario::load(f).unwrap_or_else(|e| panic!("{e}"));
        } else if kind == "suites" && rel.extension().is_some_and(|e| e == "yaml") {
            // evaluation suites: every scenario loads, and the suite's parameters apply on
            // top of the parameter files in config/
            let suite = asp_eval::Suite::load(f).unwrap_or_else(|e| panic!("{e}"));
            assert!(
                !suite.scenarios.is_empty(),
                "{}: no scenarios",
                rel.display()
            );
            asp_eval::suite::load_config(&config, &suite.overrides)
                .unwrap_or_else(|e| panic!("{}: {e}", rel.display()));
        } else if kind == "memory" {
            // common-sense priors seeded into the affordance memory
            asp_memory::SeedFile::load(f).unwrap_or_else(|e| panic!("{e}"));
        } else {
            // a folder of files no loader claims is a mistake
            unknown.push(format!("{kind}/…: {}", rel.display()));
        }
    }
    assert!(
        unknown.is_empty(),
        "files under config/ that no loader reads: {unknown:?}"
    );
}
