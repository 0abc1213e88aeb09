//! Suite files: a name, a description, the scenario files to run and parameter
//! overrides applied on top of the configuration for every scenario of the suite.
//!
//! ```yaml
//! name: mobile
//! description: "…"
//! scenarios:                 # relative to the config folder (the parent of suites/)
//!   - scenarios/mobile/open_cabinet.yaml
//! parameters:                # `asp --set` syntax: node.key[.sub…]: value
//!   agent_node.mobile: true
//! ```
//!
//! Precedence when a suite runs: built-in defaults < parameter files < the suite's
//! `parameters` < the caller's overrides (`asp eval --set`, `--llm`).

use std::path::{Path, PathBuf};

use asp_config::{ConfigLoader, LoadedConfig};
use asp_sim::scenario::{RobotStart, Scenario, Study};
use serde::{Deserialize, Serialize};
use serde_yaml_ng::{Mapping, Value};

use crate::error::EvalError;

/// A suite file as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuiteSpec {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// Where the robot starts in every scenario, instead of each scenario's own
    /// `robot` (the default world's suite starts where `asp run` does).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<RobotStart>,
    /// Scenario files, relative to the config folder.
    pub scenarios: Vec<String>,
    /// Overrides for every scenario, in file order: `node.key: value`.
    #[serde(default)]
    pub parameters: Mapping,
    /// Overrides for the scenarios of one world and its tours, after `parameters` (a suite over two
    /// worlds: the apartment's survey poses are not the tabletop's): world file as the
    /// scenarios name it → `node.key: value`.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub world_parameters: std::collections::BTreeMap<String, Mapping>,
    /// A tour before the goals: the robot explores each scenario's world once per run,
    /// recording its views, and every episode on that world starts with the building
    /// memory built from the recording (the robot saw the building yesterday).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tour: Option<TourSpec>,
}

/// How a suite's tours go (`tour:`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TourSpec {
    /// Where the robot starts exploring. The world toured is the scenario's as written,
    /// before its `setup` (what moved since the tour moved after it).
    pub start: RobotStart,
    /// Overrides for the tour only, after the suite's (the exploration's budget).
    #[serde(default)]
    pub parameters: Mapping,
}

/// A loaded suite: every scenario loaded and every parameter checked.
#[derive(Debug, Clone)]
pub struct Suite {
    pub file: PathBuf,
    pub spec: SuiteSpec,
    pub scenarios: Vec<Scenario>,
    /// `parameters` in the loader's override syntax, `node.key=value`, in file order.
    pub overrides: Vec<String>,
    /// `tour.parameters` as overrides.
    pub tour_overrides: Vec<String>,
    /// `world_parameters` as overrides, by world file.
    pub world_overrides: std::collections::BTreeMap<String, Vec<String>>,
}

/// The folder suites are looked up in: `<config_dir>/suites`.
pub fn suites_dir(config_dir: &Path) -> PathBuf {
    config_dir.join("suites")
}

/// Names of the suite files in `<config_dir>/suites`, sorted.
pub fn known_suites(config_dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(suites_dir(config_dir))
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml"))
                .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// The file `--suite` means: a path to an existing file (or anything that looks like a
/// path), else `<config_dir>/suites/<name>.yaml`.
pub fn resolve(arg: &str, config_dir: &Path) -> Result<PathBuf, EvalError> {
    let as_path = Path::new(arg);
    let looks_like_path = arg.contains(std::path::MAIN_SEPARATOR)
        || arg.contains('/')
        || as_path
            .extension()
            .is_some_and(|x| x == "yaml" || x == "yml");
    if as_path.is_file() || looks_like_path {
        return Ok(as_path.to_path_buf());
    }
    let file = suites_dir(config_dir).join(format!("{arg}.yaml"));
    if file.is_file() {
        Ok(file)
    } else {
        Err(EvalError::UnknownSuite {
            name: arg.to_owned(),
            looked_in: file,
            known: known_suites(config_dir),
        })
    }
}

/// The config folder a suite's scenario paths refer to: the parent of the nearest
/// `suites` folder above the file, else the file's own folder.
pub fn config_root_of(file: &Path) -> PathBuf {
    let mut dir = file.parent();
    while let Some(d) = dir {
        if d.file_name().is_some_and(|n| n == "suites") {
            return d.parent().map(Path::to_path_buf).unwrap_or_default();
        }
        dir = d.parent();
    }
    file.parent().map(Path::to_path_buf).unwrap_or_default()
}

/// A start pose (`entry` of `file`) with a finite base position and heading.
fn check_start(file: &Path, entry: &str, start: &RobotStart) -> Result<(), EvalError> {
    if start
        .base
        .iter()
        .chain([&start.heading_deg])
        .all(|v| v.is_finite())
    {
        Ok(())
    } else {
        Err(EvalError::suite(
            file,
            entry,
            format!("base pose must be finite, got {start:?}"),
        ))
    }
}

/// `value` as the right-hand side of a `key=value` override (YAML, one line where it can).
fn yaml_text(value: &Value) -> String {
    match value {
        Value::String(s) => {
            // quote what YAML would read as another type, keep plain words plain
            match serde_yaml_ng::from_str::<Value>(s) {
                Ok(Value::String(back)) if &back == s => s.clone(),
                _ => serde_json::to_string(s).unwrap_or_else(|_| s.clone()),
            }
        }
        other => serde_json::to_string(other)
            .unwrap_or_else(|_| serde_yaml_ng::to_string(other).unwrap_or_default())
            .trim_end()
            .to_owned(),
    }
}

impl Suite {
    /// Reads `file`, a suite file or a single scenario file (a one-scenario suite named
    /// after it; a `mobile` study gets `agent_node.mobile: true`). Every scenario is
    /// loaded and every parameter is checked against the built-in configuration.
    pub fn load(file: impl AsRef<Path>) -> Result<Suite, EvalError> {
        let file = file.as_ref();
        let text = std::fs::read_to_string(file).map_err(|e| EvalError::Io {
            file: file.to_path_buf(),
            message: e.to_string(),
        })?;
        let doc: Value = serde_yaml_ng::from_str(&text)
            .map_err(|e| EvalError::suite(file, "(top level)", format!("not YAML: {e}")))?;
        let is_scenario = doc.get("goal").is_some() && doc.get("scenarios").is_none();
        if is_scenario {
            return Self::single_scenario(file);
        }
        let de = serde_yaml_ng::Deserializer::from_str(&text);
        let spec: SuiteSpec = serde_path_to_error::deserialize(de).map_err(|e| {
            let path = e.path().to_string();
            let entry = if path.is_empty() || path == "." {
                "(top level)".to_owned()
            } else {
                path
            };
            EvalError::suite(file, entry, e.into_inner().to_string())
        })?;
        Self::from_spec(file, spec)
    }

    fn single_scenario(file: &Path) -> Result<Suite, EvalError> {
        let scenario = Scenario::load(file)?;
        let mut parameters = Mapping::new();
        if scenario.spec.study == Study::Mobile {
            parameters.insert(Value::String("agent_node.mobile".into()), Value::Bool(true));
        }
        let spec = SuiteSpec {
            name: scenario.spec.name.clone(),
            description: format!("the single scenario {}", file.display()),
            start: None,
            scenarios: vec![file.display().to_string()],
            parameters,
            world_parameters: Default::default(),
            tour: None,
        };
        let overrides = Self::check_parameters(file, &spec.parameters, "parameters")?;
        Ok(Suite {
            file: file.to_path_buf(),
            spec,
            scenarios: vec![scenario],
            overrides,
            tour_overrides: Vec::new(),
            world_overrides: Default::default(),
        })
    }

    /// A suite from an already parsed spec (`file` names it in errors and anchors its
    /// scenario paths).
    pub fn from_spec(file: &Path, spec: SuiteSpec) -> Result<Suite, EvalError> {
        if spec.name.trim().is_empty() {
            return Err(EvalError::suite(file, "name", "a suite needs a name"));
        }
        if spec.scenarios.is_empty() {
            return Err(EvalError::suite(
                file,
                "scenarios",
                "a suite needs at least one scenario file",
            ));
        }
        if let Some(start) = &spec.start {
            check_start(file, "start", start)?;
        }
        let root = config_root_of(file);
        let mut scenarios = Vec::with_capacity(spec.scenarios.len());
        for (i, entry) in spec.scenarios.iter().enumerate() {
            let at = format!("scenarios[{i}] ({entry})");
            if spec.scenarios[..i].contains(entry) {
                return Err(EvalError::suite(file, at, "listed twice"));
            }
            let path = root.join(entry);
            if !path.is_file() {
                return Err(EvalError::suite(
                    file,
                    at,
                    format!("no scenario file {}", path.display()),
                ));
            }
            let mut sc =
                Scenario::load(&path).map_err(|e| EvalError::suite(file, &at, e.to_string()))?;
            if let Some(start) = &spec.start {
                sc.spec.robot = start.clone();
            }
            if scenarios
                .iter()
                .any(|s: &Scenario| s.spec.name == sc.spec.name)
            {
                return Err(EvalError::suite(
                    file,
                    at,
                    format!("a second scenario named {:?}", sc.spec.name),
                ));
            }
            scenarios.push(sc);
        }
        let overrides = Self::check_parameters(file, &spec.parameters, "parameters")?;
        let tour_overrides = match &spec.tour {
            Some(t) => {
                check_start(file, "tour.start", &t.start)?;
                Self::check_parameters(file, &t.parameters, "tour.parameters")?
            }
            None => Vec::new(),
        };
        let mut world_overrides = std::collections::BTreeMap::new();
        for (world, parameters) in &spec.world_parameters {
            let entry = format!("world_parameters.{world}");
            if !scenarios.iter().any(|s| &s.spec.world == world) {
                return Err(EvalError::suite(
                    file,
                    entry,
                    "no scenario of the suite is on this world",
                ));
            }
            world_overrides.insert(
                world.clone(),
                Self::check_parameters(file, parameters, &entry)?,
            );
        }
        Ok(Suite {
            file: file.to_path_buf(),
            spec,
            scenarios,
            overrides,
            tour_overrides,
            world_overrides,
        })
    }

    /// The parameters as overrides, each checked on its own against the built-in
    /// defaults (unknown key, wrong type, out of range).
    fn check_parameters(
        file: &Path,
        parameters: &Mapping,
        entry: &str,
    ) -> Result<Vec<String>, EvalError> {
        let mut out = Vec::with_capacity(parameters.len());
        for (k, v) in parameters {
            let Some(key) = k.as_str() else {
                return Err(EvalError::suite(
                    file,
                    entry,
                    format!("keys are `node.key` strings, found {}", yaml_text(k)),
                ));
            };
            let at = format!("{entry}.{key}");
            let spec = format!("{key}={}", yaml_text(v));
            ConfigLoader::new()
                .set(&spec)
                .and_then(ConfigLoader::load)
                .map_err(|e| EvalError::suite(file, &at, e.to_string()))?;
            out.push(spec);
        }
        Ok(out)
    }

    /// The configuration of this suite's episodes: `config_dir`'s files, the suite's
    /// parameters, then `extra` overrides (the caller's, which win).
    pub fn config(&self, config_dir: &Path, extra: &[String]) -> Result<LoadedConfig, EvalError> {
        load_config(config_dir, &self.all_overrides(extra)).map_err(|source| EvalError::Config {
            context: format!("suite {} ({})", self.spec.name, self.file.display()),
            source: Box::new(source),
        })
    }

    /// The suite's overrides followed by `extra`.
    pub fn all_overrides(&self, extra: &[String]) -> Vec<String> {
        self.overrides.iter().chain(extra).cloned().collect()
    }

    /// The overrides of the episodes on `world`: the suite's, the world's, then `extra`.
    pub fn world_overrides(&self, world: &str, extra: &[String]) -> Vec<String> {
        self.overrides
            .iter()
            .chain(self.world_overrides.get(world).into_iter().flatten())
            .chain(extra)
            .cloned()
            .collect()
    }

    /// [`Self::config`] for the episodes on `world`.
    pub fn world_config(
        &self,
        config_dir: &Path,
        world: &str,
        extra: &[String],
    ) -> Result<LoadedConfig, EvalError> {
        load_config(config_dir, &self.world_overrides(world, extra)).map_err(|source| {
            EvalError::Config {
                context: format!(
                    "suite {} ({}), world {world}",
                    self.spec.name,
                    self.file.display()
                ),
                source: Box::new(source),
            }
        })
    }
}

/// `config_dir`'s parameter files with `overrides` applied in order.
pub fn load_config(
    config_dir: &Path,
    overrides: &[String],
) -> Result<LoadedConfig, asp_config::ConfigError> {
    let mut loader = ConfigLoader::new().dir(config_dir)?;
    for o in overrides {
        loader = loader.set(o)?;
    }
    loader.load()
}
