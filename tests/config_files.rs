//! Every file under `config/` is loaded by the loader for its kind, so a broken file (or
//! a file nobody reads) fails the build rather than a robot bring-up.
#![allow(clippy::unwrap_used)]

use asp_config::ConfigLoader;
use asp_sim::parse_world;
use asp_sim::scenario::Scenario;
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
            // a world, or a building's index with its storeys' worlds beside it
            match asp_sim::storeys::load_site(f).unwrap_or_else(|e| panic!("{e}")) {
                asp_sim::storeys::Site::World(_) => {}
                asp_sim::storeys::Site::Building { index, .. } => {
                    assert!(index.storeys.len() > 1, "{}", rel.display());
                }
            }
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
        } else if kind == "profiles" && rel.extension().is_some_and(|e| e == "yaml") {
            // error profiles: `parameters` in the `--set` syntax, applied on top of the
            // parameter files in config/
            let name = rel.file_stem().unwrap().to_string_lossy();
            let overrides =
                asp_runtime::profile_overrides(&config, &name).unwrap_or_else(|e| panic!("{e}"));
            assert!(!overrides.is_empty(), "{}", rel.display());
            asp_eval::suite::load_config(&config, &overrides)
                .unwrap_or_else(|e| panic!("{}: {e}", rel.display()));
        } else if kind == "goals" && rel.extension().is_some_and(|e| e == "yaml") {
            // the goal corpus (issue 15): every goal and plan parses, ids are unique
            let split =
                asp_agent::planner::corpus::Split::load(f).unwrap_or_else(|e| panic!("{e}"));
            assert!(!split.goals.is_empty(), "{}: no goals", rel.display());
        } else if kind == "goals" && rel.file_name().is_some_and(|n| n == "README.md") {
            // the corpus's format, for the people who write it
        } else if kind == "buildings" && rel.extension().is_some_and(|e| e == "yaml") {
            // building recipes (checked against the catalogue they name) and catalogues
            if rel.starts_with("buildings/recipes") {
                asp_sim::building::Recipe::load(f).unwrap_or_else(|e| panic!("{e}"));
            } else {
                asp_sim::building::Catalogue::load(f).unwrap_or_else(|e| panic!("{e}"));
            }
        } else if kind == "concepts" && rel.extension().is_some_and(|e| e == "yaml") {
            // the loopback search server's corpus (issue 17): it parses, and every
            // concept's shapes make a picture
            let corpus = asp_web_standin::Corpus::load(f).unwrap_or_else(|e| panic!("{e}"));
            for c in corpus.concepts() {
                asp_web_standin::render::picture(c, 0)
                    .unwrap_or_else(|e| panic!("{}: {e}", rel.display()));
            }
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

/// The named arm targets the nodes send to MoveGroup (as joint constraints) are the
/// SRDF's group states: the object map's mapping poses and the simulator's named poses
/// must be the same configurations, on a real MoveIt as in the simulator.
#[test]
fn named_targets_are_the_srdf_group_states() {
    let root = project_root();
    let cfg = ConfigLoader::new()
        .dir(root.join("config"))
        .and_then(ConfigLoader::load)
        .unwrap_or_else(|e| panic!("{e}"));
    let interfaces = &cfg.config.skill_executor_node.interfaces;
    let srdf = asp_kinematics::description::Srdf::from_file(&root.join("urdf/xarm6_on_base.srdf"))
        .unwrap_or_else(|e| panic!("{e}"));
    let mapping = &cfg.config.object_map_node.mapping.arm_poses;
    assert!(!mapping.is_empty());
    for name in mapping {
        assert!(
            interfaces.named_targets.contains_key(name),
            "mapping pose {name:?} is not a named target"
        );
    }
    for (name, values) in &interfaces.named_targets {
        let state = srdf
            .group_states
            .iter()
            .find(|g| &g.name == name)
            .unwrap_or_else(|| panic!("named target {name:?} is not in the SRDF"));
        for (joint, v) in interfaces.joint_names.iter().zip(values) {
            let s = state
                .values
                .iter()
                .find(|(j, _)| j == joint)
                .map(|(_, x)| *x)
                .unwrap_or_else(|| panic!("{name}: the SRDF has no {joint}"));
            assert!((s - v).abs() < 1e-6, "{name}.{joint}: config {v}, SRDF {s}");
        }
    }
}
