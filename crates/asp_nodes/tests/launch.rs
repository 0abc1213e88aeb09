//! The product nodes as separate processes (the launcher behind `asp launch robot`),
//! against the sim node in this process over DDS, as they would run against a robot's
//! MoveIt, Nav2 and cameras: the tabletop goal sent to `/asp/execute` from here puts the
//! apple in the bowl (the scenario's predicate on the simulator's state), and one
//! shutdown stops every node cleanly.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::{Arc, Mutex};

use asp_core::robot::CancellationToken;
use asp_nodes::launch::{LaunchTarget, Launcher};
use asp_nodes::sim::start_sim_node;
use asp_ros::Transport;
use asp_ros::msg::TerminalState;
use asp_ros::msg::asp_interfaces::{ExecuteGoalAction, ExecuteGoalActionGoal};
use asp_ros::transport::ServiceMapping;
use asp_sim::scenario::Scenario;
use asp_system::system::scenario_simulation;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn launched_product_nodes_put_the_apple_in_the_bowl() {
    let domain = common::fresh_domain();
    let data = tempfile::tempdir().unwrap();
    let data_set = format!("/**.paths.data_dir={}", data.path().display());
    let cfg = common::config(&data, &[]);
    let sc =
        Scenario::load(common::config_dir().join("scenarios/tabletop/apple_in_bowl.yaml")).unwrap();
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

    let lines = Arc::new(Mutex::new(Vec::<(String, String)>::new()));
    let l = lines.clone();
    let launcher = Launcher::new(
        common::bin_dir(),
        vec![
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
        ],
        Arc::new(move |node: &str, line: &str| {
            l.lock().unwrap().push((node.to_owned(), line.to_owned()));
        }),
    )
    .env("ROS_DOMAIN_ID", &domain.to_string())
    .env("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp")
    .env("RUST_LOG", "warn,asp_nodes=info");
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
    stop_tx.send(()).unwrap();
    let report = launched.await.unwrap().unwrap();
    let logs = || {
        lines
            .lock()
            .unwrap()
            .iter()
            .map(|(n, l)| format!("[{n}] {l}"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let result = result.unwrap_or_else(|e| panic!("{e}\n{}", logs()));
    assert_eq!(
        result.state,
        TerminalState::Succeeded,
        "{:?}\n{}",
        result.result,
        logs()
    );
    assert!(result.result.success);
    assert!(
        sim_node.vlm_standin.as_ref().unwrap().answered() > 0,
        "the nodes never asked the simulation's VLM"
    );
    assert!(
        sim.holds(&sc.spec.success),
        "the goal succeeded but the apple is not in the bowl"
    );
    // every node logged under its own name and stopped cleanly on SIGINT
    assert!(report.clean(), "{report:?}\n{}", logs());
    assert_eq!(report.exits.len(), 6);
    for (node, _) in &report.exits {
        assert!(
            lines.lock().unwrap().iter().any(|(n, _)| n == node),
            "no output from {node}"
        );
    }
}
