//! Shared helpers of the integration tests (asp_simulation's tests use them too).
#![allow(dead_code, clippy::unwrap_used)]

use std::path::PathBuf;

use asp_config::{ConfigLoader, LoadedConfig};

pub fn config_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../config")
}

/// The shipped configuration with data under `data` and `overrides` on top.
pub fn config(data: &tempfile::TempDir, overrides: &[&str]) -> LoadedConfig {
    let mut l = ConfigLoader::new()
        .dir(config_dir())
        .unwrap()
        .set(&format!("/**.paths.data_dir={}", data.path().display()))
        .unwrap();
    for o in overrides {
        l = l.set(o).unwrap();
    }
    l.load().unwrap()
}

/// The process's log on stderr, as a node's console shows it, when `RUST_LOG` is set
/// (`RUST_LOG=info cargo test ... -- --nocapture`): what a hung test was doing.
pub fn logs() {
    if std::env::var_os("RUST_LOG").is_some() {
        asp_runtime::init_tracing();
    }
}

/// A DDS domain no other test of this process uses (and, through the process id, most
/// likely no other process either).
pub fn fresh_domain() -> u16 {
    use std::sync::atomic::{AtomicU16, Ordering};
    static NEXT: AtomicU16 = AtomicU16::new(0);
    let base = 23 + (std::process::id() % 17) as u16 * 11;
    let n = NEXT.fetch_add(1, Ordering::SeqCst);
    10 + (base + n) % 220
}

/// DDS settings for tests: patient discovery (2 shared cores, several processes).
pub fn dds_settings(
    domain: u16,
    mapping: asp_ros::transport::ServiceMapping,
) -> asp_ros::TransportSettings {
    asp_ros::TransportSettings {
        domain_id: domain,
        service_mapping: mapping,
        discovery_timeout: std::time::Duration::from_secs(60),
        call_timeout: std::time::Duration::from_secs(150),
    }
}

/// `ros2 lifecycle set <node> <label>`: the transition by label, its id left 0 as the
/// CLI's service call leaves it; whether the node made it.
pub async fn lifecycle_set(me: &asp_ros::Node, node: &str, label: &str) -> bool {
    use asp_ros::msg::lifecycle_msgs::{ChangeState, ChangeStateRequest, Transition};
    me.client::<ChangeState>(&format!("{node}/change_state"))
        .unwrap()
        .call(ChangeStateRequest {
            transition: Transition {
                id: 0,
                label: label.into(),
            },
        })
        .await
        .unwrap()
        .success
}
