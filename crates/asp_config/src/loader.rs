use std::collections::HashMap;
use std::path::{Path, PathBuf};

use garde::Validate;
use serde_yaml_ng::{Mapping, Value};

use crate::error::{ConfigError, Origin};
use crate::{AspConfig, LoadedConfig};

const ALL_NODES: &str = "/**";
const PARAMS: &str = "ros__parameters";

/// Builds an [`AspConfig`] from defaults, parameter files and overrides.
#[derive(Debug, Default)]
pub struct ConfigLoader {
    layers: Vec<(Origin, Mapping)>,
    sources: Vec<PathBuf>,
    config_dir: Option<PathBuf>,
}

impl ConfigLoader {
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads every `*.yaml` file directly inside `dir`, in name order, and makes `dir`
    /// the config folder that relative world and scenario paths refer to.
    pub fn dir(mut self, dir: impl AsRef<Path>) -> Result<Self, ConfigError> {
        let dir = dir.as_ref();
        let io = |e: std::io::Error| ConfigError::Io {
            file: dir.to_path_buf(),
            message: e.to_string(),
        };
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(io)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "yaml" || x == "yml"))
            .collect();
        files.sort();
        self.config_dir = Some(dir.to_path_buf());
        for f in files {
            self = self.file(f)?;
        }
        Ok(self)
    }

    /// Reads one parameter file on top of what was read so far.
    pub fn file(mut self, path: impl AsRef<Path>) -> Result<Self, ConfigError> {
        let path = path.as_ref().to_path_buf();
        let text = std::fs::read_to_string(&path).map_err(|e| ConfigError::Io {
            file: path.clone(),
            message: e.to_string(),
        })?;
        let value: Value = serde_yaml_ng::from_str(&text).map_err(|e| ConfigError::Syntax {
            file: path.clone(),
            message: e.to_string(),
        })?;
        let origin = Origin::File(path.clone());
        let layer = normalise_file(&origin, value)?;
        self.layers.push((origin, layer));
        self.sources.push(path);
        Ok(self)
    }

    /// Applies `node.key.sub=value` (YAML value; `/**.` or `common.` for shared keys).
    pub fn set(mut self, spec: &str) -> Result<Self, ConfigError> {
        let origin = Origin::Override(spec.to_owned());
        let (key, raw) = spec.split_once('=').ok_or_else(|| ConfigError::Layout {
            origin: origin.clone(),
            key: spec.to_owned(),
            problem: "expected KEY=VALUE, e.g. agent_node.llm.backend=openai".into(),
        })?;
        let value: Value = serde_yaml_ng::from_str(raw).map_err(|e| ConfigError::InvalidValue {
            origin: origin.clone(),
            key: key.to_owned(),
            value: raw.to_owned(),
            problem: format!("not a YAML value: {e}"),
        })?;
        let key = key.trim();
        let key = key
            .strip_prefix("common.")
            .map_or(key.to_owned(), |rest| format!("{ALL_NODES}.{rest}"));
        let mut segments: Vec<&str> = if let Some(rest) = key.strip_prefix(&format!("{ALL_NODES}."))
        {
            std::iter::once(ALL_NODES).chain(rest.split('.')).collect()
        } else {
            key.split('.').collect()
        };
        if segments.len() < 2 || segments.iter().any(|s| s.is_empty()) {
            return Err(ConfigError::Layout {
                origin,
                key,
                problem: "expected NODE.KEY[.SUBKEY…]".into(),
            });
        }
        check_node_name(&origin, segments[0])?;
        let mut tree = value;
        while segments.len() > 1 {
            let Some(last) = segments.pop() else { break };
            let mut m = Mapping::new();
            m.insert(Value::String(last.to_owned()), tree);
            tree = Value::Mapping(m);
        }
        let mut layer = Mapping::new();
        layer.insert(Value::String(segments[0].to_owned()), tree);
        self.layers.push((origin, layer));
        Ok(self)
    }

    /// Merges the layers, type-checks and range-checks the result.
    pub fn load(self) -> Result<LoadedConfig, ConfigError> {
        let mut merged = Mapping::new();
        let mut origins: HashMap<String, Origin> = HashMap::new();
        for (origin, layer) in &self.layers {
            record_origins(&Value::Mapping(layer.clone()), "", origin, &mut origins);
            deep_merge(&mut merged, layer.clone());
        }
        let merged = Value::Mapping(merged);
        let origin_of = |key: &str| -> Origin {
            // the deepest recorded prefix of the key tells who set it
            let mut k = key.to_owned();
            loop {
                if let Some(o) = origins.get(&k) {
                    return o.clone();
                }
                match k.rfind(['.', '[']) {
                    Some(i) => k.truncate(i),
                    None => return Origin::Default,
                }
            }
        };

        let config: AspConfig = serde_path_to_error::deserialize(merged.clone()).map_err(|e| {
            let path = e.path().to_string();
            let message = e.inner().to_string();
            if let Some(field) = unknown_field(&message) {
                let key = if path.ends_with(&field) || path == "?" {
                    path.clone()
                } else {
                    format!("{path}.{field}")
                };
                ConfigError::UnknownKey {
                    origin: origin_of(&key),
                    value: describe(lookup(&merged, &key)),
                    expected: message
                        .split_once(", ")
                        .map_or("check the spelling".to_owned(), |(_, rest)| rest.to_owned()),
                    key,
                }
            } else {
                ConfigError::InvalidValue {
                    origin: origin_of(&path),
                    value: describe(lookup(&merged, &path)),
                    key: path,
                    problem: message,
                }
            }
        })?;

        if let Err(report) = config.validate() {
            let errors: Vec<ConfigError> = report
                .iter()
                .map(|(path, err)| {
                    // garde names the Rust field; the files call that section `/**`
                    let key = path.to_string();
                    let key = match key.strip_prefix("common") {
                        Some(rest) => format!("{ALL_NODES}{rest}"),
                        None => key,
                    };
                    ConfigError::InvalidValue {
                        origin: origin_of(&key),
                        value: describe(lookup(&merged, &key)),
                        key,
                        problem: err.message().to_owned(),
                    }
                })
                .collect();
            return Err(match errors.len() {
                1 => errors
                    .into_iter()
                    .next()
                    .unwrap_or(ConfigError::Several(vec![])),
                _ => ConfigError::Several(errors),
            });
        }

        let config_dir = self.config_dir.unwrap_or_else(|| {
            self.sources
                .first()
                .and_then(|f| f.parent().map(Path::to_path_buf))
                .unwrap_or_else(|| PathBuf::from("config"))
        });
        let root = config_dir
            .parent()
            .map(Path::to_path_buf)
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or_else(|| PathBuf::from("."));
        Ok(LoadedConfig {
            config,
            config_dir,
            root,
            sources: self.sources,
        })
    }
}

fn check_node_name(origin: &Origin, name: &str) -> Result<(), ConfigError> {
    if name == ALL_NODES || AspConfig::NODE_NAMES.contains(&name) {
        Ok(())
    } else {
        Err(ConfigError::Layout {
            origin: origin.clone(),
            key: name.to_owned(),
            problem: format!(
                "not a node of this workspace; expected `/**` or one of {}",
                AspConfig::NODE_NAMES.join(", ")
            ),
        })
    }
}

/// `{node: {ros__parameters: {...}}}` → `{node: {...}}`, rejecting anything else.
fn normalise_file(origin: &Origin, value: Value) -> Result<Mapping, ConfigError> {
    let top = match value {
        Value::Null => return Ok(Mapping::new()),
        Value::Mapping(m) => m,
        other => {
            return Err(ConfigError::Layout {
                origin: origin.clone(),
                key: "(top level)".into(),
                problem: format!(
                    "expected a mapping of node names, found {}",
                    describe(Some(&other))
                ),
            });
        }
    };
    let mut out = Mapping::new();
    for (k, v) in top {
        let name = k
            .as_str()
            .map(str::to_owned)
            .unwrap_or_else(|| describe(Some(&k)));
        check_node_name(origin, &name)?;
        let params = match v {
            Value::Null => Mapping::new(),
            Value::Mapping(mut m) => {
                let params = m.remove(PARAMS);
                if let Some((extra, _)) = m.into_iter().next() {
                    return Err(ConfigError::Layout {
                        origin: origin.clone(),
                        key: format!("{name}.{}", describe(Some(&extra))),
                        problem: format!("a node section holds only `{PARAMS}`"),
                    });
                }
                match params {
                    None | Some(Value::Null) => Mapping::new(),
                    Some(Value::Mapping(p)) => p,
                    Some(other) => {
                        return Err(ConfigError::Layout {
                            origin: origin.clone(),
                            key: format!("{name}.{PARAMS}"),
                            problem: format!(
                                "expected a mapping, found {}",
                                describe(Some(&other))
                            ),
                        });
                    }
                }
            }
            other => {
                return Err(ConfigError::Layout {
                    origin: origin.clone(),
                    key: name,
                    problem: format!("expected `{PARAMS}:`, found {}", describe(Some(&other))),
                });
            }
        };
        let slot = out
            .entry(Value::String(name))
            .or_insert_with(|| Value::Mapping(Mapping::new()));
        if let Value::Mapping(existing) = slot {
            deep_merge(existing, params);
        }
    }
    Ok(out)
}

fn deep_merge(base: &mut Mapping, overlay: Mapping) {
    for (k, v) in overlay {
        match (base.get_mut(&k), v) {
            (Some(Value::Mapping(b)), Value::Mapping(o)) => deep_merge(b, o),
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
}

fn record_origins(value: &Value, prefix: &str, origin: &Origin, out: &mut HashMap<String, Origin>) {
    if let Value::Mapping(m) = value {
        for (k, v) in m {
            let key = k
                .as_str()
                .map(str::to_owned)
                .unwrap_or_else(|| describe(Some(k)));
            let path = if prefix.is_empty() {
                key
            } else {
                format!("{prefix}.{key}")
            };
            out.insert(path.clone(), origin.clone());
            record_origins(v, &path, origin, out);
        }
    }
}

/// The field name in serde's "unknown field `x`, expected …" message.
fn unknown_field(message: &str) -> Option<String> {
    let rest = message.strip_prefix("unknown field `")?;
    Some(rest.split('`').next()?.to_owned())
}

/// Follows a dotted path with optional `[i]` indices (`/**` is one segment).
fn lookup<'a>(root: &'a Value, path: &str) -> Option<&'a Value> {
    let (first, rest) = match path.strip_prefix(ALL_NODES) {
        Some(rest) => (ALL_NODES, rest.trim_start_matches('.')),
        None => path.split_once('.').unwrap_or((path, "")),
    };
    let mut cur = root;
    let segments = std::iter::once(first).chain(rest.split('.').filter(|s| !s.is_empty()));
    for seg in segments {
        let (name, indices) = match seg.find('[') {
            Some(i) => (&seg[..i], &seg[i..]),
            None => (seg, ""),
        };
        if !name.is_empty() {
            cur = cur.as_mapping()?.get(name)?;
        }
        for idx in indices.split('[').filter(|s| !s.is_empty()) {
            let i: usize = idx.trim_end_matches(']').parse().ok()?;
            cur = cur.as_sequence()?.get(i)?;
        }
    }
    Some(cur)
}

/// A short, one-line (flow-style) rendering of a YAML value for error messages.
fn describe(value: Option<&Value>) -> String {
    fn render(v: &Value) -> String {
        match v {
            Value::Null => "null".into(),
            Value::Bool(b) => b.to_string(),
            Value::Number(n) => n.to_string(),
            Value::String(s) => s.clone(),
            Value::Sequence(items) => {
                format!(
                    "[{}]",
                    items.iter().map(render).collect::<Vec<_>>().join(", ")
                )
            }
            Value::Mapping(m) => format!(
                "{{{}}}",
                m.iter()
                    .map(|(k, v)| format!("{}: {}", render(k), render(v)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Value::Tagged(t) => format!("{} {}", t.tag, render(&t.value)),
        }
    }
    match value {
        None => "(not set: built-in default)".into(),
        Some(v) => {
            let s = render(v);
            if s.len() > 80 {
                format!("{}…", &s[..s.floor_char_boundary(80)])
            } else {
                s
            }
        }
    }
}
