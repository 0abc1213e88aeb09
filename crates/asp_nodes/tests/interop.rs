//! An independent ROS 2 peer drives the real node graph: Eclipse Cyclone DDS from Python
//! (`tests/interop/cyclone_peer.py`, in the `.venv` that `scripts/setup` makes) calls
//! `/asp/execute_goal` with rmw_cyclonedds' service mapping on the graph running here
//! over DDS (sim node included), then reads the latched `/asp/state`. The goal succeeds
//! and the scenario's predicate holds on the simulator's state.
#![allow(clippy::unwrap_used)]

mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use asp_nodes::nodes::NodeOptions;
use asp_ros::Transport;
use asp_ros::transport::ServiceMapping;
use asp_sim::scenario::Scenario;
use asp_simulation::scenario_simulation;
use asp_simulation::start_sim_graph;
use serde_json::Value;

/// Runs the Cyclone peer to its end; its JSON event lines and exit code.
fn python_peer(domain: u16, args: &[&str]) -> (Vec<Value>, Option<i32>) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let python = root.join(".venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/setup (it installs the cyclonedds package the \
         interoperability test needs)",
        python.display()
    );
    let mut child = Command::new(python)
        .arg(root.join("tests/interop/cyclone_peer.py"))
        .args(args)
        .env("ROS_DOMAIN_ID", domain.to_string())
        .env("PEER_TIMEOUT", "600")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut events = Vec::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        match serde_json::from_str::<Value>(&line) {
            Ok(v) => events.push(v),
            Err(_) => eprintln!("[cyclone_peer] {line}"),
        }
    }
    (events, child.wait().unwrap().code())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cyclone_peer_runs_a_goal_on_the_graph() {
    let domain = common::fresh_domain();
    let data = tempfile::tempdir().unwrap();
    let cfg = common::config(&data, &[]);
    let sc =
        Scenario::load(common::config_dir().join("scenarios/tabletop/apple_in_bowl.yaml")).unwrap();
    let sim = scenario_simulation(&cfg, &sc, None).unwrap();
    let t = Transport::dds(common::dds_settings(domain, ServiceMapping::Cyclone)).unwrap();
    let options = NodeOptions {
        memory: false,
        verifier_instance: Some(7),
    };
    let _graph = start_sim_graph(&cfg, &t, sim.clone(), &options)
        .await
        .unwrap();

    let goal = sc.spec.goal.clone();
    let (events, code) = tokio::task::spawn_blocking(move || {
        python_peer(domain, &["call", "/asp/execute_goal", &goal])
    })
    .await
    .unwrap();
    assert_eq!(code, Some(0), "{events:?}");
    let r = events.iter().find(|e| e["event"] == "response").unwrap();
    assert_eq!(r["success"], true, "{r}");
    assert_eq!(r["error_code"], 0);
    assert!(!r["summary"].as_str().unwrap().is_empty());
    assert!(
        sim.holds(&sc.spec.success),
        "the goal succeeded but the apple is not in the bowl"
    );

    let (events, code) =
        tokio::task::spawn_blocking(move || python_peer(domain, &["state", "/asp/state"]))
            .await
            .unwrap();
    assert_eq!(code, Some(0), "{events:?}");
    let s = events.iter().find(|e| e["event"] == "state").unwrap();
    assert_eq!(s["held_object"], "");
    let inventory: Vec<&str> = s["inventory"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(
        inventory.iter().any(|k| k.starts_with("apple")),
        "{inventory:?}"
    );
}
