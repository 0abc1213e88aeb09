//! The command line every node binary takes, ours and the part of ROS 2's that matters
//! for `ros2 launch`:
//!
//! ```text
//! <node> [--config-dir DIR] [--set KEY=VALUE]… [--no-memory] [--scenario FILE]
//!        [--ros-args [--params-file FILE]… [-p NAME:=VALUE]… [-r …] [--log-level …]]
//! ```
//!
//! Precedence: built-in defaults < the configuration folder's files < `--params-file`s
//! (in order) < `-p` (this node's parameters) < `--set`. Remappings and log levels are
//! accepted and ignored with a warning (names come from the configuration; `RUST_LOG`
//! sets the log level).

use std::path::PathBuf;

use asp_config::{ConfigLoader, LoadedConfig};

use crate::NodeError;

/// A node binary's arguments.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NodeArgs {
    pub config_dir: Option<PathBuf>,
    pub params_files: Vec<PathBuf>,
    /// `KEY=VALUE` overrides in the order they apply (`-p` first, then `--set`).
    pub overrides: Vec<String>,
    /// Run without the affordance memory database (affordance_node).
    pub no_memory: bool,
    /// Start the simulation as this scenario file sets it up (sim_node).
    pub scenario: Option<PathBuf>,
    /// Arguments accepted but not used, for a warning.
    pub ignored: Vec<String>,
    pub help: bool,
}

impl NodeArgs {
    /// Parses the arguments (without the program name) of node `node`.
    pub fn parse(node: &str, args: impl IntoIterator<Item = String>) -> Result<Self, NodeError> {
        let mut out = Self::default();
        let mut sets = Vec::new();
        let mut params = Vec::new();
        let mut it = args.into_iter();
        let mut ros = false;
        let value = |it: &mut dyn Iterator<Item = String>, flag: &str| {
            it.next()
                .ok_or_else(|| NodeError::Args(format!("{flag} needs a value")))
        };
        while let Some(a) = it.next() {
            if ros {
                match a.as_str() {
                    "--" => ros = false,
                    "--params-file" => out.params_files.push(value(&mut it, &a)?.into()),
                    "-p" | "--param" => {
                        let p = value(&mut it, &a)?;
                        let (name, v) = p.split_once(":=").ok_or_else(|| {
                            NodeError::Args(format!("parameter {p:?} is not NAME:=VALUE"))
                        })?;
                        params.push(format!("{node}.{name}={v}"));
                    }
                    "-r" | "--remap" | "--log-level" | "-e" | "--enclave" => {
                        let v = value(&mut it, &a)?;
                        out.ignored.push(format!("{a} {v}"));
                    }
                    "--ros-args" => {}
                    other => out.ignored.push(other.to_owned()),
                }
                continue;
            }
            if let Some(v) = a.strip_prefix("--config-dir=") {
                out.config_dir = Some(v.into());
                continue;
            }
            if let Some(v) = a.strip_prefix("--set=") {
                sets.push(v.to_owned());
                continue;
            }
            match a.as_str() {
                "--ros-args" => ros = true,
                "--config-dir" => out.config_dir = Some(value(&mut it, &a)?.into()),
                "--set" => sets.push(value(&mut it, &a)?),
                "--no-memory" => out.no_memory = true,
                "--scenario" => out.scenario = Some(value(&mut it, &a)?.into()),
                "-h" | "--help" => out.help = true,
                other => {
                    return Err(NodeError::Args(format!(
                        "unknown argument {other:?} (see --help)"
                    )));
                }
            }
        }
        out.overrides = params;
        out.overrides.extend(sets);
        Ok(out)
    }

    /// The usage text of node `node`.
    pub fn usage(node: &str) -> String {
        format!(
            "usage: {node} [--config-dir DIR] [--set KEY=VALUE]... [--no-memory] [--scenario FILE]\n\
             \x20      [--ros-args [--params-file FILE]... [-p NAME:=VALUE]...]\n\
             The configuration folder defaults to $ASP_CONFIG_DIR, ./config or the source tree's\n\
             config/. ROS_DOMAIN_ID and RMW_IMPLEMENTATION select the DDS domain and mapping."
        )
    }

    /// The configuration these arguments describe.
    pub fn load(&self) -> Result<LoadedConfig, NodeError> {
        let dir = asp_runtime::find_config_dir(self.config_dir.as_deref());
        let mut loader = ConfigLoader::new().dir(dir)?;
        for f in &self.params_files {
            loader = loader.file(f)?;
        }
        for o in &self.overrides {
            loader = loader.set(o)?;
        }
        Ok(loader.load()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn ours_and_ros_arguments() {
        let a = NodeArgs::parse(
            "go_to_node",
            args(&[
                "--set",
                "go_to_node.radius=1.0",
                "--ros-args",
                "-r",
                "__node:=go",
                "--params-file",
                "/tmp/p.yaml",
                "-p",
                "radius:=0.9",
                "--",
                "--config-dir=/cfg",
                "--no-memory",
            ]),
        )
        .unwrap();
        assert_eq!(a.config_dir, Some(PathBuf::from("/cfg")));
        assert_eq!(a.params_files, [PathBuf::from("/tmp/p.yaml")]);
        // -p applies before --set, so --set wins
        assert_eq!(
            a.overrides,
            ["go_to_node.radius=0.9", "go_to_node.radius=1.0"]
        );
        assert!(a.no_memory && !a.help);
        assert_eq!(a.ignored, ["-r __node:=go"]);
        let e = NodeArgs::parse("x", args(&["--bogus"])).unwrap_err();
        assert!(e.to_string().contains("--bogus"), "{e}");
        assert!(NodeArgs::parse("x", args(&["--ros-args", "-p", "radius"])).is_err());
        assert!(NodeArgs::parse("x", args(&["--set"])).is_err());
    }

    #[test]
    fn overrides_reach_the_configuration() {
        let a = NodeArgs::parse(
            "go_to_node",
            args(&[
                "--config-dir",
                asp_runtime::built_in_config_dir().to_str().unwrap(),
                "--ros-args",
                "-p",
                "radius:=0.95",
            ]),
        )
        .unwrap();
        assert_eq!(a.load().unwrap().config.go_to_node.radius, 0.95);
        let bad = NodeArgs::parse("go_to_node", args(&["--ros-args", "-p", "radius:=-3"])).unwrap();
        assert!(bad.load().unwrap_err().to_string().contains("radius"));
    }
}
