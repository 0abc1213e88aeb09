//! What every ASP binary does before its real work: set up `tracing` once (filtered by
//! `RUST_LOG`) and find and load the configuration.

use std::path::{Path, PathBuf};
use std::sync::Once;

use asp_config::{ConfigError, ConfigLoader, LoadedConfig};
use tracing_subscriber::EnvFilter;

/// The default filter when `RUST_LOG` is unset: our crates at `info`, others at `warn`.
pub const DEFAULT_LOG_FILTER: &str = "warn,asp=info,asp_core=info,asp_sim=info,asp_perception=info,\
asp_agent=info,asp_llm=info,asp_verify=info,asp_skills=info,asp_nav=info,asp_ros=info,\
asp_nodes=info,asp_cli=info,asp_eval=info,asp_memory=info,asp_affordance=info";

static TRACING: Once = Once::new();

/// Installs the global `tracing` subscriber: human-readable lines on stderr, filtered by
/// `RUST_LOG` (falling back to [`DEFAULT_LOG_FILTER`]). Safe to call more than once; only
/// the first call installs anything.
pub fn init_tracing() {
    init_tracing_with(DEFAULT_LOG_FILTER);
}

/// Like [`init_tracing`] with another filter when `RUST_LOG` is unset (a command that
/// prints its own trace keeps the log to warnings).
pub fn init_tracing_with(default_filter: &str) {
    TRACING.call_once(|| {
        let filter =
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default_filter));
        let _ = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(std::io::stderr)
            .with_target(true)
            .try_init();
    });
}

/// Environment variable naming the configuration folder.
pub const CONFIG_DIR_ENV: &str = "ASP_CONFIG_DIR";

/// The configuration folder to use: `explicit` if given, else `$ASP_CONFIG_DIR`, else
/// `./config` when it holds parameter files, else the `config/` of the source tree this
/// binary was built from.
pub fn find_config_dir(explicit: Option<&Path>) -> PathBuf {
    if let Some(dir) = explicit {
        return dir.to_path_buf();
    }
    if let Some(dir) = std::env::var_os(CONFIG_DIR_ENV) {
        return PathBuf::from(dir);
    }
    let local = PathBuf::from("config");
    if local.join("common.yaml").is_file() {
        return local;
    }
    built_in_config_dir()
}

/// The `config/` folder of the source tree this binary was built from.
pub fn built_in_config_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config")
}

/// Loads the configuration folder and applies `key=value` overrides.
pub fn load_config(dir: &Path, overrides: &[String]) -> Result<LoadedConfig, ConfigError> {
    let mut loader = ConfigLoader::new().dir(dir)?;
    for o in overrides {
        loader = loader.set(o)?;
    }
    loader.load()
}

/// The async runtime every binary runs its nodes and clients on: two worker threads
/// (the nodes wait on I/O; the heavy work runs in blocking tasks), timers and I/O on.
pub fn async_runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explicit_dir_wins_and_built_in_dir_exists() {
        let tmp = tempfile::tempdir().unwrap();
        assert_eq!(find_config_dir(Some(tmp.path())), tmp.path());
        assert!(built_in_config_dir().join("common.yaml").is_file());
    }

    #[test]
    fn load_with_overrides() {
        let cfg = load_config(
            &built_in_config_dir(),
            &["agent_node.limits.max_tool_calls=5".to_owned()],
        )
        .unwrap();
        assert_eq!(cfg.config.agent_node.limits.max_tool_calls, 5);
        let err = load_config(
            &built_in_config_dir(),
            &["agent_node.limits.max_tool_calls=0".to_owned()],
        )
        .unwrap_err();
        assert!(err.to_string().contains("max_tool_calls"), "{err}");
    }

    #[test]
    fn init_twice_is_harmless() {
        init_tracing();
        init_tracing();
        tracing::info!("tracing works");
    }
}
