//! The robot path end to end: the product nodes as separate processes (the launcher
//! behind `asp launch robot`) with a robot's settings — cameras streaming (no render
//! service asked), the perception outcome observer, the VLM an OpenAI-compatible server
//! — against the sim node in this process over DDS, whose VLM stand-in is that server.
//! Each scenario's goal, sent to `/asp/execute` from here, must reach the scenario's
//! predicate on the simulator's state, and one shutdown stops every node cleanly.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::{Arc, Mutex};

use asp_core::robot::CancellationToken;
use asp_nodes::launch::{LaunchTarget, Launcher};
use asp_ros::Transport;
use asp_ros::msg::TerminalState;
use asp_ros::msg::asp_interfaces::{ExecuteGoalAction, ExecuteGoalActionGoal};
use asp_ros::transport::ServiceMapping;
use asp_sim::scenario::Scenario;
use asp_simulation::scenario_simulation;
use asp_simulation::start_sim_node;

/// How one scenario went on the robot path.
struct Outcome {
    /// The scenario's predicate holds on the simulator's state.
    world: bool,
    /// `/asp/execute` reported success.
    reported: bool,
    /// Questions the sim's VLM stand-in answered.
    vlm_answers: usize,
    logs: String,
}

/// Runs `scenario` (relative to the config folder) on the robot path with `overrides`
/// for every node (the sim node's too) and asserts the nodes' clean shutdown.
async fn robot_path(scenario: &str, overrides: &[String]) -> Outcome {
    let domain = common::fresh_domain();
    let data = tempfile::tempdir().unwrap();
    let data_set = format!("/**.paths.data_dir={}", data.path().display());
    let mut sim_overrides: Vec<&str> = overrides.iter().map(String::as_str).collect();
    // the cameras stream, as a robot's do
    sim_overrides.push("sim_node.camera.rate_hz=4.0");
    let cfg = common::config(&data, &sim_overrides);
    let sc = Scenario::load(common::config_dir().join(scenario)).unwrap();
    let sim = scenario_simulation(&cfg, &sc, None).unwrap();
    let t = Transport::dds(common::dds_settings(domain, ServiceMapping::FastDds)).unwrap();
    let sim_node = start_sim_node(&cfg, &t.node("sim_node").unwrap(), sim.clone())
        .await
        .unwrap();
    let vlm_url = sim_node
        .vlm_standin
        .as_ref()
        .expect("the sim node serves its VLM")
        .base_url();

    let mut args: Vec<String> = vec![
        "--config-dir".into(),
        common::config_dir().display().to_string(),
        "--set".into(),
        data_set,
        "--set".into(),
        "/**.transport.discovery_timeout_s=60".into(),
        "--set".into(),
        "/**.transport.call_timeout_s=300".into(),
        // the simulation's VLM is the nodes' model server, as a robot's would be
        "--set".into(),
        format!("agent_node.vlm.base_url={vlm_url}"),
        "--set".into(),
        "agent_node.vlm.api_key_env=\"\"".into(),
    ];
    // what `asp launch robot` implies: frames from the camera topics, never rendered
    for o in LaunchTarget::Robot
        .implied_overrides()
        .into_iter()
        .chain(overrides.iter().cloned())
    {
        args.push("--set".into());
        args.push(o);
    }
    let lines = Arc::new(Mutex::new(Vec::<(String, String)>::new()));
    let l = lines.clone();
    let launcher = Launcher::new(
        bin_dir(),
        args,
        Arc::new(move |node: &str, line: &str| {
            l.lock().unwrap().push((node.to_owned(), line.to_owned()));
        }),
    )
    .env("ROS_DOMAIN_ID", &domain.to_string())
    .env("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp")
    .env("RUST_LOG", "warn,asp_nodes=info,asp_ros::transport=info");
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let launched = tokio::spawn(async move {
        launcher
            .run(LaunchTarget::Robot, &[], async {
                let _ = stop_rx.await;
            })
            .await
    });

    let client = t
        .node("test_client")
        .unwrap()
        .action_client::<ExecuteGoalAction>("/asp/execute")
        .unwrap();
    let result = client
        .execute(
            ExecuteGoalActionGoal {
                goal: sc.spec.goal.clone(),
            },
            &CancellationToken::new(),
            |_| {},
        )
        .await;
    let _ = stop_tx.send(());
    let report = launched.await.unwrap().unwrap();
    let logs = lines
        .lock()
        .unwrap()
        .iter()
        .map(|(n, l)| format!("[{n}] {l}"))
        .collect::<Vec<_>>()
        .join("\n");
    let result = result.unwrap_or_else(|e| panic!("{scenario}: {e}\n{logs}"));
    // every node logged under its own name and stopped cleanly on SIGINT
    assert!(report.clean(), "{scenario}: {report:?}\n{logs}");
    assert_eq!(report.exits.len(), 6);
    for (node, _) in &report.exits {
        assert!(
            lines.lock().unwrap().iter().any(|(n, _)| n == node),
            "{scenario}: no output from {node}"
        );
    }
    Outcome {
        world: sim.holds(&sc.spec.success),
        reported: result.state == TerminalState::Succeeded && result.result.success,
        vlm_answers: sim_node.vlm_standin.as_ref().unwrap().answered(),
        logs,
    }
}

/// The scenario files of a suite.
fn suite(name: &str) -> Vec<String> {
    let text =
        std::fs::read_to_string(common::config_dir().join(format!("suites/{name}.yaml"))).unwrap();
    let doc: serde_yaml_ng::Value = serde_yaml_ng::from_str(&text).unwrap();
    doc["scenarios"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_robot_path_completes_the_tabletop_suite() {
    // the models do not err (the oracle profile): a miss is the robot path's fault
    let mut overrides = asp_runtime::profile_overrides(&common::config_dir(), "oracle").unwrap();
    overrides.push("agent_node.mobile=false".into());
    let scenarios = suite("tabletop");
    assert_eq!(scenarios.len(), 15);
    let mut missed = Vec::new();
    for scenario in &scenarios {
        let o = robot_path(scenario, &overrides).await;
        assert!(
            o.vlm_answers > 0,
            "{scenario}: the nodes never asked the VLM"
        );
        if !(o.world && o.reported) {
            missed.push(format!(
                "{scenario}: world {}, reported {}\n{}",
                o.world, o.reported, o.logs
            ));
        }
    }
    assert!(missed.is_empty(), "{}", missed.join("\n\n"));
}

/// The folder of this package's node binaries.
fn bin_dir() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_BIN_EXE_agent_node"))
        .parent()
        .unwrap()
        .to_path_buf()
}
