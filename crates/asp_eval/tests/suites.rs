//! Suite files: every shipped suite loads with its scenarios and parameters, and broken
//! suites are refused with the file, the entry and the problem named.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use asp_eval::suite::{known_suites, resolve, suites_dir};
use asp_eval::{EvalError, Suite};

fn config_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../config")
}

fn scenario(rel: &str) -> String {
    config_dir()
        .join("scenarios")
        .join(rel)
        .display()
        .to_string()
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn every_suite_file_loads_with_its_scenarios_and_parameters() {
    let names = known_suites(&config_dir());
    assert!(
        names.contains(&"tabletop".to_owned()) && names.contains(&"mobile".to_owned()),
        "{names:?}"
    );
    for name in &names {
        let file = resolve(name, &config_dir()).unwrap();
        assert_eq!(file, suites_dir(&config_dir()).join(format!("{name}.yaml")));
        let suite = Suite::load(&file).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(&suite.spec.name, name, "a suite's name is its file's");
        assert_eq!(suite.scenarios.len(), suite.spec.scenarios.len());
        // the parameters apply on top of the shipped configuration
        let cfg = suite
            .config(&config_dir(), &[])
            .unwrap_or_else(|e| panic!("{e}"));
        // only the tabletop keeps the base still: the tabletop suite, and the tabletop
        // scenarios of a suite over two worlds
        for sc in &suite.scenarios {
            let cfg = suite
                .world_config(&config_dir(), &sc.spec.world, &[])
                .unwrap_or_else(|e| panic!("{e}"));
            let tabletop = name == "tabletop"
                || (!suite.spec.world_parameters.is_empty()
                    && sc.spec.world == "worlds/tabletop.yaml");
            assert_eq!(
                cfg.config.agent_node.mobile, !tabletop,
                "agent_node.mobile in suite {name}, scenario {}",
                sc.spec.name
            );
        }
        if suite.spec.world_parameters.is_empty() {
            assert_eq!(cfg.config.agent_node.mobile, name != "tabletop");
        }
        // a suite named after a study holds that study's scenarios
        if name == "tabletop" || name == "mobile" {
            for sc in &suite.scenarios {
                let study = serde_json::to_value(sc.spec.study).unwrap();
                assert_eq!(
                    study,
                    serde_json::json!(name),
                    "{} in suite {name}",
                    sc.spec.name
                );
            }
        }
    }
    // the default world's suite: the tabletop tasks, every one from where `asp run` starts
    let default_world = Suite::load(resolve("default_world", &config_dir()).unwrap()).unwrap();
    let cfg = default_world.config(&config_dir(), &[]).unwrap();
    let [x, y, heading] = cfg.config.sim_node.start_pose;
    for sc in &default_world.scenarios {
        let r = &sc.spec.robot;
        assert_eq!(
            (r.base[0], r.base[1], r.heading_deg),
            (x, y, heading),
            "{} starts at sim_node.start_pose",
            sc.spec.name
        );
    }
    let tabletop = Suite::load(resolve("tabletop", &config_dir()).unwrap()).unwrap();
    let on_disk = std::fs::read_dir(config_dir().join("scenarios/tabletop"))
        .unwrap()
        .count();
    assert_eq!(
        tabletop.scenarios.len(),
        on_disk,
        "every tabletop scenario is in the suite"
    );
    assert_eq!(
        default_world.spec.scenarios, tabletop.spec.scenarios,
        "the default world's suite walks every tabletop task"
    );
    // the caller's overrides win over the suite's
    // the building suite tours its world before the goals, with the tour's own camera
    let building = Suite::load(resolve("building", &config_dir()).unwrap()).unwrap();
    let tour = building.spec.tour.as_ref().unwrap();
    assert!(tour.start.base.iter().all(|v| v.is_finite()));
    assert!(
        building
            .tour_overrides
            .iter()
            .any(|o| o.starts_with("object_map_node.mapping.cameras=")),
        "{:?}",
        building.tour_overrides
    );
    // its goals across storeys load a building, and their world's tours ride to both
    let building_world = "worlds/two_storeys/building.yaml";
    let across: Vec<_> = building
        .scenarios
        .iter()
        .filter(|s| s.spec.world == building_world)
        .collect();
    assert!(across.len() >= 3);
    assert!(
        across
            .iter()
            .all(|s| s.building.as_ref().is_some_and(|b| b.worlds.len() == 2))
    );
    assert!(across.iter().any(|s| s.spec.robot.storey == 1));
    let cfg = building
        .world_config(&config_dir(), building_world, &[])
        .unwrap();
    assert!(cfg.config.object_map_node.mapping.explore.every_storey);
    let mobile = Suite::load(resolve("mobile", &config_dir()).unwrap()).unwrap();
    let cfg = mobile
        .config(&config_dir(), &["agent_node.mobile=false".into()])
        .unwrap();
    assert!(!cfg.config.agent_node.mobile);
}

#[test]
fn an_unknown_suite_name_lists_the_known_ones() {
    let e = resolve("tabeltop", &config_dir()).unwrap_err();
    assert!(matches!(e, EvalError::UnknownSuite { .. }), "{e:?}");
    let msg = e.to_string();
    assert!(msg.contains("tabeltop"), "{msg}");
    assert!(
        msg.contains("known suites: building, concepts, default_world, mobile, tabletop"),
        "{msg}"
    );
}

#[test]
fn a_scenario_file_is_a_one_scenario_suite_and_a_mobile_one_gets_the_base() {
    let s = Suite::load(scenario("mobile/open_cabinet.yaml")).unwrap();
    assert_eq!(s.scenarios.len(), 1);
    assert_eq!(s.spec.name, "open_cabinet");
    assert_eq!(s.overrides, vec!["agent_node.mobile=true".to_owned()]);
    let s = Suite::load(scenario("tabletop/apple_in_bowl.yaml")).unwrap();
    assert!(s.overrides.is_empty());
}

#[test]
fn malformed_suites_name_the_file_the_entry_and_the_problem() {
    let dir = tempfile::tempdir().unwrap();
    let apple = scenario("tabletop/apple_in_bowl.yaml");
    let cases: Vec<(&str, String, &[&str])> = vec![
        (
            "no_scenarios.yaml",
            "name: x\n".into(),
            &["missing field `scenarios`"],
        ),
        (
            "empty.yaml",
            "name: x\nscenarios: []\n".into(),
            &["scenarios", "at least one scenario"],
        ),
        (
            "typo.yaml",
            format!("name: x\nscenario: [{apple}]\n"),
            &["unknown field `scenario`"],
        ),
        (
            "missing.yaml",
            format!("name: x\nscenarios: [{apple}, nowhere/none.yaml]\n"),
            &["scenarios[1] (nowhere/none.yaml)", "no scenario file"],
        ),
        (
            "twice.yaml",
            format!("name: x\nscenarios: [{apple}, {apple}]\n"),
            &["scenarios[1]", "listed twice"],
        ),
        (
            "bad_key.yaml",
            format!("name: x\nscenarios: [{apple}]\nparameters:\n  agent_node.mobiel: true\n"),
            &["parameters.agent_node.mobiel", "mobiel"],
        ),
        (
            "bad_value.yaml",
            format!(
                "name: x\nscenarios: [{apple}]\nparameters:\n  agent_node.limits.max_tool_calls: lots\n"
            ),
            &["parameters.agent_node.limits.max_tool_calls", "lots"],
        ),
        (
            "bad_node.yaml",
            format!("name: x\nscenarios: [{apple}]\nparameters:\n  robot_node.speed: 1\n"),
            &["parameters.robot_node.speed", "not a node"],
        ),
        (
            "not_a_list.yaml",
            "name: x\nscenarios: apple.yaml\n".into(),
            &["scenarios", "invalid type"],
        ),
        (
            "other_world.yaml",
            format!(
                "name: x\nscenarios: [{apple}]\nworld_parameters:\n  worlds/apartment.yaml: {{agent_node.mobile: true}}\n"
            ),
            &["world_parameters.worlds/apartment.yaml", "no scenario"],
        ),
        (
            "bad_world_key.yaml",
            format!(
                "name: x\nscenarios: [{apple}]\nworld_parameters:\n  worlds/tabletop.yaml: {{agent_node.mobiel: true}}\n"
            ),
            &["world_parameters.worlds/tabletop.yaml.agent_node.mobiel"],
        ),
        (
            "nan_start.yaml",
            format!(
                "name: x\nstart: {{base: [.nan, 0.4], heading_deg: 0}}\nscenarios: [{apple}]\n"
            ),
            &["start", "must be finite"],
        ),
        (
            "inf_heading.yaml",
            format!(
                "name: x\nstart: {{base: [0, 0.4], heading_deg: .inf}}\nscenarios: [{apple}]\n"
            ),
            &["start", "must be finite"],
        ),
        (
            "tour_nan.yaml",
            format!("name: x\nscenarios: [{apple}]\ntour: {{start: {{base: [.nan, 0]}}}}\n"),
            &["tour.start", "must be finite"],
        ),
        (
            "tour_bad_key.yaml",
            format!(
                "name: x\nscenarios: [{apple}]\ntour:\n  start: {{base: [0, 0]}}\n  parameters:\n    object_map_node.mapping.explore.max_stop: 3\n"
            ),
            &[
                "tour.parameters.object_map_node.mapping.explore.max_stop",
                "max_stop",
            ],
        ),
        (
            "tour_no_start.yaml",
            format!("name: x\nscenarios: [{apple}]\ntour: {{parameters: {{}}}}\n"),
            &["tour", "missing field `start`"],
        ),
    ];
    for (name, text, needles) in cases {
        let file = write(dir.path(), name, &text);
        let e = Suite::load(&file).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains(&file.display().to_string()), "{name}: {msg}");
        for n in needles {
            assert!(msg.contains(n), "{name}: {msg:?} lacks {n:?}");
        }
    }
    // a broken scenario in a suite names the suite entry and the scenario's own problem
    let bad_scenario = write(
        dir.path(),
        "bad_scenario.yaml",
        "name: s\nstudy: tabletop\ngoal: \"\"\nworld: worlds/tabletop.yaml\nrobot: {base: [0, 0]}\nsuccess: {held: {object: apple}}\n",
    );
    // its world path is relative to its folder: give it the shipped worlds
    std::os::unix::fs::symlink(config_dir().join("worlds"), dir.path().join("worlds")).unwrap();
    let file = write(
        dir.path(),
        "with_bad_scenario.yaml",
        &format!("name: x\nscenarios: [{}]\n", bad_scenario.display()),
    );
    let msg = Suite::load(&file).unwrap_err().to_string();
    assert!(
        msg.contains("scenarios[0]") && msg.contains("goal") && msg.contains("needs a goal"),
        "{msg}"
    );
}
