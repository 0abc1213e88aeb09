//! Loading behaviour: layout, precedence, and errors that name file, key and value.
#![allow(clippy::unwrap_used)] // test helpers may panic

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use asp_config::sections::agent::LlmBackend;
use asp_config::{AspConfig, ConfigError, ConfigLoader};
use garde::Validate;
use serde_yaml_ng::Value;

fn shipped_config_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config")
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// The message of the error loading `file` alone gives.
fn load_error(file: &Path) -> String {
    ConfigLoader::new()
        .file(file)
        .unwrap()
        .load()
        .unwrap_err()
        .to_string()
}

#[test]
fn defaults_are_valid() {
    AspConfig::default().validate().unwrap();
}

#[test]
fn every_shipped_parameter_file_loads() {
    let dir = shipped_config_dir();
    let loaded = AspConfig::load_dir(&dir).unwrap();
    let names: BTreeSet<String> = loaded
        .sources
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    for node in AspConfig::NODE_NAMES {
        assert!(
            names.contains(&format!("{node}.yaml")),
            "config/{node}.yaml is missing"
        );
    }
    assert!(names.contains("common.yaml"));
    // each file also loads on its own
    for f in &loaded.sources {
        ConfigLoader::new().file(f).unwrap().load().unwrap();
    }
}

fn leaf_paths(v: &Value, prefix: String, out: &mut BTreeSet<String>) {
    match v {
        Value::Mapping(m) => {
            for (k, v) in m {
                let k = k.as_str().unwrap().to_owned();
                let p = if prefix.is_empty() {
                    k
                } else {
                    format!("{prefix}.{k}")
                };
                leaf_paths(v, p, out);
            }
        }
        _ => {
            out.insert(prefix);
        }
    }
}

/// The shipped files are the documentation of the defaults: every key exists there with
/// its default value, so a new parameter cannot be added without documenting it.
#[test]
fn shipped_files_document_every_default() {
    let defaults = serde_yaml_ng::to_value(AspConfig::default()).unwrap();
    let mut default_keys = BTreeSet::new();
    leaf_paths(&defaults, String::new(), &mut default_keys);

    let mut shipped = serde_yaml_ng::Mapping::new();
    for entry in std::fs::read_dir(shipped_config_dir()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "yaml") {
            let v: Value =
                serde_yaml_ng::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            for (node, section) in v.as_mapping().unwrap() {
                shipped.insert(node.clone(), section["ros__parameters"].clone());
            }
        }
    }
    let shipped = Value::Mapping(shipped);
    let mut shipped_keys = BTreeSet::new();
    leaf_paths(&shipped, String::new(), &mut shipped_keys);
    let missing: Vec<_> = default_keys.difference(&shipped_keys).collect();
    assert!(
        missing.is_empty(),
        "keys without documentation in config/: {missing:?}"
    );

    let loaded = AspConfig::load_dir(shipped_config_dir()).unwrap();
    assert_eq!(
        loaded.config,
        AspConfig::default(),
        "shipped files must state the built-in defaults"
    );
}

#[test]
fn unknown_key_names_file_key_and_value() {
    let tmp = tempfile::tempdir().unwrap();
    let f = write(
        tmp.path(),
        "agent_node.yaml",
        "agent_node:\n  ros__parameters:\n    llm:\n      timeout_sec: 30\n",
    );
    let err = ConfigLoader::new().file(&f).unwrap().load().unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, ConfigError::UnknownKey { .. }), "{err:?}");
    assert!(msg.contains(&f.display().to_string()), "{msg}");
    assert!(msg.contains("agent_node.llm.timeout_sec"), "{msg}");
    assert!(msg.contains("30"), "{msg}");
    assert!(msg.contains("timeout_s"), "suggests the real keys: {msg}");
}

#[test]
fn out_of_range_names_file_key_and_value() {
    let tmp = tempfile::tempdir().unwrap();
    let f = write(
        tmp.path(),
        "v.yaml",
        "verifier_node:\n  ros__parameters:\n    gate:\n      delta: 1.7\n",
    );
    let msg = load_error(&f);
    assert!(msg.contains(&f.display().to_string()), "{msg}");
    assert!(msg.contains("verifier_node.gate.delta"), "{msg}");
    assert!(msg.contains("1.7"), "{msg}");
}

#[test]
fn several_range_errors_are_all_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let f = write(
        tmp.path(),
        "c.yaml",
        "/**:\n  ros__parameters:\n    safety:\n      workspace:\n        min: [0, 0, 0]\n        max: [1, -1, 1]\n      max_velocity_scaling: 3\n",
    );
    let err = ConfigLoader::new().file(&f).unwrap().load().unwrap_err();
    let msg = err.to_string();
    assert!(
        matches!(err, ConfigError::Several(ref v) if v.len() == 2),
        "{msg}"
    );
    assert!(msg.contains(&f.display().to_string()), "{msg}");
    assert!(msg.contains("/**.safety.workspace.max"), "{msg}");
    assert!(msg.contains("[1, -1, 1]"), "the value as written: {msg}");
    assert!(
        msg.contains("safety.max_velocity_scaling") && msg.contains('3'),
        "{msg}"
    );
}

#[test]
fn wrong_type_names_key_and_value() {
    let tmp = tempfile::tempdir().unwrap();
    let f = write(
        tmp.path(),
        "g.yaml",
        "go_to_node:\n  ros__parameters:\n    radius: far\n",
    );
    let msg = load_error(&f);
    assert!(
        msg.contains("go_to_node.radius") && msg.contains("far"),
        "{msg}"
    );
    let f = write(
        tmp.path(),
        "s.yaml",
        "/**:\n  ros__parameters:\n    safety:\n      allowed_skills: [grasp, teleport]\n",
    );
    let msg = load_error(&f);
    assert!(
        msg.contains("allowed_skills") && msg.contains("teleport"),
        "{msg}"
    );
}

#[test]
fn layout_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let f = write(tmp.path(), "n.yaml", "agnet_node:\n  ros__parameters: {}\n");
    let msg = ConfigLoader::new().file(&f).unwrap_err().to_string();
    assert!(
        msg.contains("agnet_node") && msg.contains("agent_node"),
        "{msg}"
    );
    let f = write(tmp.path(), "p.yaml", "agent_node:\n  llm: {}\n");
    let msg = ConfigLoader::new().file(&f).unwrap_err().to_string();
    assert!(
        msg.contains("agent_node.llm") && msg.contains("ros__parameters"),
        "{msg}"
    );
    let f = write(tmp.path(), "y.yaml", "agent_node: [\n");
    let err = ConfigLoader::new().file(&f).unwrap_err();
    assert!(matches!(err, ConfigError::Syntax { .. }), "{err:?}");
    let err = ConfigLoader::new()
        .file(tmp.path().join("missing.yaml"))
        .unwrap_err();
    assert!(err.to_string().contains("missing.yaml"), "{err}");
}

#[test]
fn later_files_and_overrides_win_and_errors_blame_the_right_origin() {
    let tmp = tempfile::tempdir().unwrap();
    let a = write(
        tmp.path(),
        "a.yaml",
        "agent_node:\n  ros__parameters:\n    llm:\n      backend: openai\n      model: small\n",
    );
    let b = write(
        tmp.path(),
        "b.yaml",
        "agent_node:\n  ros__parameters:\n    llm:\n      model: large\n",
    );
    let loaded = ConfigLoader::new()
        .file(&a)
        .unwrap()
        .file(&b)
        .unwrap()
        .set("agent_node.limits.max_tool_calls=7")
        .unwrap()
        .set("common.safety.max_base_speed=0.2")
        .unwrap()
        .load()
        .unwrap();
    let c = &loaded.config;
    assert_eq!(c.agent_node.llm.backend, LlmBackend::Openai);
    assert_eq!(c.agent_node.llm.model, "large");
    assert_eq!(c.agent_node.limits.max_tool_calls, 7);
    assert_eq!(c.common.safety.max_base_speed, 0.2);
    assert_eq!(
        c.agent_node.llm.timeout_s, 60.0,
        "untouched keys keep defaults"
    );

    // a bad override is blamed on the override, not on a file
    let msg = ConfigLoader::new()
        .file(&a)
        .unwrap()
        .set("agent_node.llm.timeout_s=-1")
        .unwrap()
        .load()
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("override `agent_node.llm.timeout_s=-1`") && msg.contains("-1"),
        "{msg}"
    );
    // a bad value in the second file is blamed on the second file
    let c2 = write(
        tmp.path(),
        "c.yaml",
        "agent_node:\n  ros__parameters:\n    llm:\n      temperature: 9\n",
    );
    let msg = ConfigLoader::new()
        .file(&a)
        .unwrap()
        .file(&c2)
        .unwrap()
        .load()
        .unwrap_err()
        .to_string();
    assert!(msg.starts_with(&c2.display().to_string()), "{msg}");
    assert!(ConfigLoader::new().set("no_equals_sign").is_err());
    assert!(ConfigLoader::new().set("bogus_node.x=1").is_err());
}

#[test]
fn paths_resolve_against_root_and_config_dir() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = tmp.path().join("config");
    std::fs::create_dir(&cfg).unwrap();
    write(
        &cfg,
        "common.yaml",
        "/**:\n  ros__parameters:\n    paths:\n      models_dir: weights\n",
    );
    let loaded = AspConfig::load_dir(&cfg).unwrap();
    assert_eq!(loaded.root, tmp.path());
    assert_eq!(
        loaded.model_path("minilm/model.onnx"),
        tmp.path().join("weights/minilm/model.onnx")
    );
    // the data folder is the user's unless set; a relative one is under the root
    let user = loaded.data_path("x.redb");
    assert!(
        user.is_absolute() && user.ends_with("asp/x.redb"),
        "{user:?}"
    );
    assert!(!user.starts_with(tmp.path()), "{user:?}");
    let set = |dir: &str| {
        let mut l = loaded.clone();
        l.config.common.paths.data_dir = Some(dir.into());
        l.data_path("x.redb")
    };
    assert_eq!(set("var"), tmp.path().join("var/x.redb"));
    assert_eq!(set("/srv/asp"), PathBuf::from("/srv/asp/x.redb"));
    assert_eq!(
        loaded.config_path("worlds/a.yaml"),
        cfg.join("worlds/a.yaml")
    );
    assert_eq!(
        loaded.model_path("/abs/m.onnx"),
        PathBuf::from("/abs/m.onnx")
    );
}

#[test]
fn the_search_steps_left_outwards_then_right_and_its_step_is_checked() {
    use asp_config::sections::perception::SearchConfig;
    let s = SearchConfig {
        step: 0.8,
        reach: 2.4,
        turns_deg: Vec::new(),
    };
    let off = s.offsets();
    let want = [0.8, 1.6, 2.4, -0.8, -1.6, -2.4];
    assert_eq!(off.len(), want.len(), "{off:?}");
    for (a, b) in off.iter().zip(want) {
        assert!((a - b).abs() < 1e-5, "{off:?}");
    }
    assert!(
        SearchConfig {
            reach: 0.0,
            ..s.clone()
        }
        .offsets()
        .is_empty()
    );
    assert_eq!(SearchConfig { reach: 1.0, ..s }.offsets(), [0.8, -0.8]);
    let msg = ConfigLoader::new()
        .set("object_map_node.mapping.search.step=0")
        .unwrap()
        .load()
        .unwrap_err()
        .to_string();
    assert!(msg.contains("object_map_node.mapping.search.step"), "{msg}");
    let msg = ConfigLoader::new()
        .set("object_map_node.mapping.search.turns_deg=[90, 400]")
        .unwrap()
        .load()
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("object_map_node.mapping.search.turns_deg"),
        "{msg}"
    );
}

#[test]
fn a_footprint_needs_three_corners_inside_its_circle() {
    let tmp = tempfile::tempdir().unwrap();
    let load = |footprint: &str| {
        let f = write(
            tmp.path(),
            "g.yaml",
            &format!("go_to_node:\n  ros__parameters:\n    footprint: {footprint}\n"),
        );
        ConfigLoader::new().file(&f).unwrap().load()
    };
    let msg = load("[[0.3, 0.25], [-0.3, 0.25]]").unwrap_err().to_string();
    assert!(msg.contains("go_to_node.footprint"), "{msg}");
    assert!(msg.contains("at least 3 corners"), "{msg}");
    // a corner 0.5 m out, beyond the 0.4 m footprint_radius
    let msg = load("[[0.5, 0.0], [-0.3, 0.25], [-0.3, -0.25]]")
        .unwrap_err()
        .to_string();
    assert!(msg.contains("go_to_node.footprint"), "{msg}");
    assert!(msg.contains("[0.5, 0.0]"), "{msg}");
    // none: the circle
    let cfg = load("[]").unwrap();
    assert!(cfg.config.go_to_node.footprint.is_empty());
}

#[test]
fn the_shorter_grasp_stand_off_is_at_most_the_stand_off() {
    let tmp = tempfile::tempdir().unwrap();
    let f = write(
        tmp.path(),
        "s.yaml",
        "skill_executor_node:\n  ros__parameters:\n    grasp:\n      approach_distance: 0.05\n      min_approach_distance: 0.08\n",
    );
    let msg = load_error(&f);
    assert!(
        msg.contains("skill_executor_node.grasp.min_approach_distance"),
        "{msg}"
    );
    assert!(
        msg.contains("0.08") && msg.contains("approach_distance (0.05)"),
        "{msg}"
    );
}
