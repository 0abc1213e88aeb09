//! What the tests that run the product nodes as processes share (faults, soak): the
//! node binaries' folder and the arguments the launcher gives them. Not in `mod.rs`,
//! which asp_simulation's tests include too and which has no node binaries there.

use asp_nodes::launch::LaunchTarget;

/// The folder of this package's node binaries; `ASP_PROFILE_BIN_DIR` names another
/// (wrappers that run some nodes under heaptrack, say, to find what the soak retains).
pub fn bin_dir() -> std::path::PathBuf {
    if let Ok(d) = std::env::var("ASP_PROFILE_BIN_DIR") {
        return d.into();
    }
    std::path::PathBuf::from(env!("CARGO_BIN_EXE_agent_node"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The arguments every node gets: the shipped configuration, data under `data`,
/// patient DDS waits (2 shared cores, seven processes), the sim node's VLM stand-in at
/// `vlm_url`, the robot target's settings, then `overrides`.
pub fn node_args(data: &tempfile::TempDir, vlm_url: &str, overrides: &[String]) -> Vec<String> {
    let mut args: Vec<String> = vec![
        "--config-dir".into(),
        crate::common::config_dir().display().to_string(),
    ];
    for o in [
        format!("/**.paths.data_dir={}", data.path().display()),
        "/**.transport.discovery_timeout_s=60".into(),
        "/**.transport.call_timeout_s=300".into(),
        format!("agent_node.vlm.base_url={vlm_url}"),
        "agent_node.vlm.api_key_env=\"\"".into(),
    ]
    .into_iter()
    .chain(LaunchTarget::Robot.implied_overrides())
    .chain(overrides.iter().cloned())
    {
        args.push("--set".into());
        args.push(o);
    }
    args
}
