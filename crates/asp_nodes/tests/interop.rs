//! An independent ROS 2 peer drives the real node graph: Eclipse Cyclone DDS from Python
//! (`tests/interop/cyclone_peer.py`, in the `.venv` that `scripts/setup` makes) calls
//! `/asp/execute_goal` with rmw_cyclonedds' service mapping on the graph running here
//! over DDS (sim node included), then reads the latched `/asp/state`. The goal succeeds
//! and the scenario's predicate holds on the simulator's state; what RViz would show of
//! the map (`/asp/markers`, `/asp/map_cloud`) agrees with the map's summary.
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
    python_peer_telling(domain, args, |_| {})
}

/// [`python_peer`], telling `on_event` each event as it comes.
fn python_peer_telling(
    domain: u16,
    args: &[&str],
    mut on_event: impl FnMut(&Value),
) -> (Vec<Value>, Option<i32>) {
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
            Ok(v) => {
                on_event(&v);
                events.push(v);
            }
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

    // what RViz shows of the map: one box and one label per map object, the keys as
    // labels, the objects' points in one cloud
    let (events, code) = tokio::task::spawn_blocking(move || python_peer(domain, &["map_view"]))
        .await
        .unwrap();
    assert_eq!(code, Some(0), "{events:?}");
    let event = |name: &str| events.iter().find(|e| e["event"] == name).unwrap();
    let (summary, markers, cloud) = (event("summary"), event("markers"), event("cloud"));
    let objects = summary["objects"].as_u64().unwrap();
    assert!(objects >= 2, "{summary}");
    assert_eq!(markers["actions"][0], 3, "DELETEALL first: {markers}");
    let boxes = markers["boxes"].as_array().unwrap();
    assert_eq!(boxes.len() as u64, objects, "{markers}");
    assert!(
        boxes.iter().all(|b| b["type"] == 1 && b["frame"] == "map"),
        "{markers}"
    );
    let labels = markers["labels"].as_object().unwrap();
    assert_eq!(labels.len() as u64, objects);
    for (key, id) in summary["keys"]
        .as_array()
        .unwrap()
        .iter()
        .zip(summary["key_ids"].as_array().unwrap())
    {
        assert_eq!(labels[&id.to_string()], *key, "{markers}");
    }
    assert!(
        labels
            .values()
            .any(|k| k.as_str().unwrap().starts_with("apple")),
        "{labels:?}"
    );
    assert_eq!(cloud["width"], summary["points"], "{cloud}");
    assert_eq!(cloud["frame"], "map");
    assert_eq!(cloud["fields"], serde_json::json!(["x", "y", "z", "rgb"]));
}

/// The Cyclone peer presses the e-stop before any node exists, then looks at the graph
/// as a ROS user would: the /tf tree from the URDF (map → odom → base_link → … → the
/// tool, fixed joints on /tf_static), /robot_description, a node's parameters, and a goal
/// refused with the e-stop's code. Nothing the graph does at start (the map's survey
/// included) sends a single motion command to the simulator.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_estop_latched_before_launch_nothing_moves_and_a_ros_user_sees_why() {
    use asp_ros::msg::asp_interfaces::ObjectMapSummary;
    let domain = common::fresh_domain();
    let data = tempfile::tempdir().unwrap();
    let cfg = common::config(&data, &[]);
    let sc =
        Scenario::load(common::config_dir().join("scenarios/tabletop/apple_in_bowl.yaml")).unwrap();
    let sim = scenario_simulation(&cfg, &sc, None).unwrap();
    let (pressed_tx, pressed) = tokio::sync::oneshot::channel();
    let peer = tokio::task::spawn_blocking(move || {
        let mut pressed_tx = Some(pressed_tx);
        python_peer_telling(
            domain,
            &["robot_user", "/agent_node", "put the apple in the bowl"],
            |e| {
                if e["event"] == "estop"
                    && let Some(tx) = pressed_tx.take()
                {
                    let _ = tx.send(());
                }
            },
        )
    });
    pressed.await.expect("the peer pressed the e-stop");

    let t = Transport::dds(common::dds_settings(domain, ServiceMapping::Cyclone)).unwrap();
    let observer = t.node("observer").unwrap();
    let mut summaries = observer
        .subscribe::<ObjectMapSummary>(asp_nodes::names::OBJECT_MAP_TOPIC, asp_ros::Qos::latched())
        .unwrap();
    let options = NodeOptions {
        memory: false,
        verifier_instance: Some(7),
    };
    let _graph = start_sim_graph(&cfg, &t, sim.clone(), &options)
        .await
        .unwrap();
    let (events, code) = peer.await.unwrap();
    assert_eq!(code, Some(0), "{events:?}");
    let event = |name: &str| {
        events
            .iter()
            .find(|e| e["event"] == name)
            .unwrap_or_else(|| panic!("no {name} event in {events:?}"))
            .clone()
    };

    // the tree: every frame reaches map through one parent, the tool included
    let mut parent = std::collections::HashMap::new();
    for kind in ["tf_static", "tf"] {
        for edge in event(kind)["edges"].as_array().unwrap() {
            let (p, c) = (edge[0].as_str().unwrap(), edge[1].as_str().unwrap());
            let before = parent.insert(c.to_owned(), p.to_owned());
            assert!(
                before.is_none() || before.as_deref() == Some(p),
                "{c} has two parents"
            );
        }
    }
    assert_eq!(parent["odom"], "map");
    assert_eq!(parent["base_link"], "odom");
    let tool = &cfg.config.common.frames.tool;
    let mut chain = vec![tool.clone()];
    while let Some(p) = parent.get(chain.last().unwrap()) {
        chain.push(p.clone());
        assert!(chain.len() < 64, "a cycle: {chain:?}");
    }
    assert_eq!(chain.last().unwrap(), "map", "{chain:?}");
    assert!(
        chain.len() > 5,
        "the arm's links are in the tree: {chain:?}"
    );
    assert!(
        !event("tf_static")["edges"].as_array().unwrap().is_empty(),
        "fixed joints go on /tf_static"
    );
    let description = event("robot_description");
    assert_eq!(description["robot"], true, "{description}");
    // one type on /clock, ROS 2's (ros2-client's own reader declared Time: patched)
    let clock = event("clock_types");
    let types: std::collections::BTreeSet<&str> = ["writers", "readers"]
        .iter()
        .flat_map(|k| clock[k].as_array().unwrap())
        .map(|t| t.as_str().unwrap())
        .collect();
    assert_eq!(
        types,
        ["rosgraph_msgs::msg::dds_::Clock_"].into(),
        "{clock}"
    );
    assert!(
        clock["readers"].as_array().unwrap().len() >= 6
            && !clock["writers"].as_array().unwrap().is_empty(),
        "{clock}"
    );

    // parameters: listed and read, with their configured values
    let names = event("parameters")["names"].clone();
    for name in ["when_busy", "safety.estop_topic", "use_sim_time"] {
        assert!(
            names.as_array().unwrap().iter().any(|n| n == name),
            "{name} not in {names}"
        );
    }
    let values = event("values")["values"].clone();
    assert_eq!(values["safety.estop_topic"][4], "/asp/estop", "{values}");
    assert_eq!(
        values["safety.estop_settle_s"][3], cfg.config.common.safety.estop_settle_s,
        "{values}"
    );

    // the goal: refused, saying why
    let r = event("response");
    assert_eq!(r["success"], false);
    assert_eq!(
        r["error_code"],
        asp_ros::msg::asp_interfaces::goal_refused::ESTOP,
        "{r}"
    );
    assert!(r["error_msg"].as_str().unwrap().contains("e-stop"), "{r}");

    // the map's build at start has been tried (its summary follows the attempt), and
    // refused to survey
    let summary = tokio::time::timeout(std::time::Duration::from_secs(120), summaries.recv())
        .await
        .expect("the start-up build ends")
        .unwrap();
    assert_eq!(summary.objects, 0, "the map was built, so something moved");
    assert_eq!(
        sim.with_state(|s| s.motion_commands),
        0,
        "motion commands reached the simulator under the e-stop"
    );
}

/// `ros2 lifecycle` from an independent Cyclone DDS peer against agent_node: the state
/// and the transitions it offers, `set deactivate` (a goal is then refused with code 26,
/// naming how to activate it), `set activate`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cyclone_peer_manages_agent_node_as_ros2_lifecycle_does() {
    use asp_ros::msg::asp_interfaces::goal_refused;
    let domain = common::fresh_domain();
    let data = tempfile::tempdir().unwrap();
    let cfg = common::config(&data, &[]);
    let t = Transport::dds(common::dds_settings(domain, ServiceMapping::Cyclone)).unwrap();
    let agent = asp_nodes::agent::agent_node(&cfg, &t).await.unwrap();
    let (events, code) = tokio::task::spawn_blocking(move || {
        python_peer(domain, &["lifecycle", "/agent_node", "pick up the mug"])
    })
    .await
    .unwrap();
    assert_eq!(code, Some(0), "{events:?}");
    let event = |name: &str| {
        events
            .iter()
            .find(|e| e["event"] == name)
            .unwrap_or_else(|| panic!("no {name} event in {events:?}"))
            .clone()
    };
    assert_eq!(event("state")["label"], "active");
    assert_eq!(
        event("transitions")["labels"],
        serde_json::json!(["deactivate", "shutdown"])
    );
    let deactivated = event("deactivate");
    assert_eq!(deactivated["success"], true, "{deactivated}");
    assert_eq!(deactivated["label"], "inactive");
    let r = event("response");
    assert_eq!(r["error_code"], goal_refused::INACTIVE, "{r}");
    assert!(
        r["error_msg"]
            .as_str()
            .unwrap()
            .contains("ros2 lifecycle set /agent_node activate"),
        "{r}"
    );
    let activated = event("activate");
    assert_eq!(activated["success"], true, "{activated}");
    assert_eq!(activated["label"], "active");
    drop(agent);
}
