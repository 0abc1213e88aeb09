//! What every ASP binary does before its real work: set up `tracing` once (filtered by
//! `RUST_LOG`) and find and load the configuration.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Once, RwLock};

use asp_config::{ConfigError, ConfigLoader, LoadedConfig};
use tracing::field::{Field, Visit};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::util::SubscriberInitExt;

/// The default filter when `RUST_LOG` is unset: our crates at `info`, others at `warn`,
/// except ros2-client's warning on every request that comes without a related sample
/// identity (how requests under the FastDDS service mapping arrive): the request is
/// answered all the same, and a line per request buried the robot's log.
pub const DEFAULT_LOG_FILTER: &str = "warn,asp=info,asp_core=info,asp_sim=info,asp_perception=info,\
asp_agent=info,asp_llm=info,asp_verify=info,asp_skills=info,asp_nav=info,asp_ros=info,\
asp_nodes=info,asp_cli=info,asp_eval=info,asp_memory=info,asp_affordance=info,\
ros2_client::service::wrappers=error";

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
        let _ = tracing_subscriber::registry()
            .with(filter)
            .with(
                tracing_subscriber::fmt::layer()
                    .with_writer(std::io::stderr)
                    .with_target(true),
            )
            .with(TapLayer)
            .try_init();
    });
}

/// One log line as the console shows it, for a node's `/rosout`.
#[derive(Debug, Clone)]
pub struct LogRecord {
    pub level: tracing::Level,
    pub target: String,
    /// The message with the event's other fields after it (`key=value`).
    pub message: String,
    pub file: String,
    pub line: u32,
}

/// Receives every log line that passes the filter, once set.
pub type LogTap = Arc<dyn Fn(LogRecord) + Send + Sync>;

static TAPS: RwLock<Vec<(u64, LogTap)>> = RwLock::new(Vec::new());
static NEXT_TAP: AtomicU64 = AtomicU64::new(0);

/// Sends every log line to `tap` as well (a node's `/rosout`) until the guard drops.
pub fn add_log_tap(tap: LogTap) -> LogTapGuard {
    let id = NEXT_TAP.fetch_add(1, Ordering::Relaxed);
    TAPS.write()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push((id, tap));
    LogTapGuard(id)
}

/// Removes its tap when dropped.
#[derive(Debug)]
pub struct LogTapGuard(u64);

impl Drop for LogTapGuard {
    fn drop(&mut self) {
        TAPS.write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .retain(|(id, _)| *id != self.0);
    }
}

struct TapLayer;

#[derive(Default)]
struct Text(String);

impl Visit for Text {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        use std::fmt::Write;
        if field.name() == "message" {
            let rest = std::mem::take(&mut self.0);
            let _ = write!(self.0, "{value:?}{rest}");
        } else {
            let _ = write!(self.0, " {}={value:?}", field.name());
        }
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for TapLayer {
    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        let taps: Vec<LogTap> = TAPS
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .map(|(_, t)| t.clone())
            .collect();
        if taps.is_empty() {
            return;
        }
        let meta = event.metadata();
        let mut text = Text::default();
        event.record(&mut text);
        let record = LogRecord {
            level: *meta.level(),
            target: meta.target().to_owned(),
            message: text.0,
            file: meta.file().unwrap_or_default().to_owned(),
            line: meta.line().unwrap_or(0),
        };
        for tap in taps {
            tap(record.clone());
        }
    }
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

/// The overrides of profile `name`: its file's `parameters` (`node.key: value`), none
/// for `realistic` without a file.
pub fn profile_overrides(config_dir: &std::path::Path, name: &str) -> Result<Vec<String>, String> {
    let file = config_dir.join("profiles").join(format!("{name}.yaml"));
    if !file.exists() {
        return if name == "realistic" {
            Ok(Vec::new())
        } else {
            Err(format!("--profile {name}: no file {}", file.display()))
        };
    }
    let text = std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
    let doc: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(&text).map_err(|e| format!("{}: {e}", file.display()))?;
    let Some(params) = doc.get("parameters").and_then(|p| p.as_mapping()) else {
        return Err(format!("{}: needs a `parameters` mapping", file.display()));
    };
    params
        .iter()
        .map(|(k, v)| {
            let key = k
                .as_str()
                .ok_or_else(|| format!("{}: keys are `node.key` strings", file.display()))?;
            let value = serde_json::to_string(v).map_err(|e| format!("{key}: {e}"))?;
            Ok(format!("{key}={value}"))
        })
        .collect()
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
    fn the_oracle_profile_turns_every_simulated_error_off_and_realistic_is_the_default() {
        let dir = built_in_config_dir();
        assert!(profile_overrides(&dir, "realistic").unwrap().is_empty());
        let realistic = load_config(&dir, &[]).unwrap().config;
        let oracle = load_config(&dir, &profile_overrides(&dir, "oracle").unwrap())
            .unwrap()
            .config;
        // the shipped defaults err, the oracle does not
        let p = &realistic.object_map_node.simulation;
        assert!(p.vlm_error_rate > 0.0 && p.over_segmentation > 0.0);
        assert!(realistic.sim_node.camera.depth_noise_std > 0.0);
        assert!(realistic.verifier_node.outcome.simulated_error_rate > 0.0);
        let o = &oracle.object_map_node.simulation;
        assert_eq!(
            (o.vlm_error_rate, o.over_segmentation, o.under_segmentation),
            (0.0, 0.0, 0.0)
        );
        assert_eq!(oracle.sim_node.camera.depth_noise_std, 0.0);
        assert_eq!(oracle.affordance_node.simulated_models.miss_rate, 0.0);
        assert_eq!(oracle.verifier_node.outcome.simulated_error_rate, 0.0);
        // an unknown profile is an error naming the file it looked for
        let e = profile_overrides(&dir, "nonesuch").unwrap_err();
        assert!(e.contains("nonesuch.yaml"), "{e}");
    }

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
