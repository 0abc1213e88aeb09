//! Interoperability with an independent DDS implementation: Eclipse Cyclone DDS from
//! Python (`tests/interop/cyclone_peer.py`, run with the `.venv` that `scripts/setup`
//! makes) publishes to and subscribes from this process, calls an ExecuteGoal service
//! served here (rmw_cyclonedds' request header), and drives the ExecuteGoal action
//! served here, with feedback, result and cancel. A Cyclone client whose server died
//! mid-request hears so from the server's next process (its request record). Our
//! Stretch motion client drives a Cyclone stand-in for stretch_core's trajectory server.
//!
//! The Fast DDS service mapping cannot be spoken from Cyclone's Python API (it carries
//! the request id in an inline QoS parameter); it is covered between two of our own
//! processes in `multiprocess.rs`.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use asp_core::FailureKind;
use asp_ros::action::{ActionServerOptions, GoalContext, GoalOutcome, goal_fn};
use asp_ros::msg::asp_interfaces::{
    ExecuteGoal, ExecuteGoalAction, ExecuteGoalActionFeedback, ExecuteGoalActionGoal,
    ExecuteGoalActionResult, ExecuteGoalRequest, ExecuteGoalResponse, SymbolicState, error_code,
};
use asp_ros::msg::std_msgs;
use asp_ros::msg::unique_identifier_msgs::UUID;
use asp_ros::transport::{
    OrphanResult, Recorded, RequestId, RequestRecord, ServiceMapping, result_endpoint,
};
use asp_ros::{Node, Qos, Transport};
use common::Peer;
use serde_json::Value;

const WAIT: Duration = Duration::from_secs(40);

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The Cyclone DDS peer; a missing `.venv` fails the test with the fix.
fn python_peer(domain: u16, args: &[&str]) -> Peer {
    let root = repo_root();
    let python = root.join(".venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/setup (it installs the cyclonedds package the \
         interoperability test needs)",
        python.display()
    );
    let script = root.join("tests/interop/cyclone_peer.py");
    Peer::spawn_cmd(
        Command::new(python)
            .arg(script)
            .args(args)
            .env("ROS_DOMAIN_ID", domain.to_string())
            .env("PEER_TIMEOUT", "30"),
        &format!("cyclone_peer.py {}", args.join(" ")),
    )
}

fn node(domain: u16, name: &str) -> Node {
    Transport::dds(common::settings(domain, ServiceMapping::Cyclone))
        .unwrap()
        .node(name)
        .unwrap()
}

async fn finish(peer: Peer) -> Vec<Value> {
    let name = peer.name.clone();
    let (events, status) = tokio::task::spawn_blocking(move || peer.finish(WAIT))
        .await
        .unwrap();
    assert_eq!(status, Some(0), "{name} failed: {events:?}");
    events
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cyclone_publishes_to_us() {
    let domain = common::fresh_domain();
    let n = node(domain, "listener");
    let mut sub = n
        .subscribe::<std_msgs::String>("/interop/from_cyclone", Qos::default_reliable())
        .unwrap();
    let peer = python_peer(domain, &["pub", "/interop/from_cyclone", "3"]);
    for i in 0..3 {
        assert_eq!(
            sub.recv_timeout(WAIT).await.unwrap().data,
            format!("from cyclone {i}")
        );
    }
    finish(peer).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cyclone_subscribes_to_us() {
    let domain = common::fresh_domain();
    let n = node(domain, "talker");
    let p = n
        .publisher::<std_msgs::String>("/interop/to_cyclone", Qos::default_reliable())
        .unwrap();
    let peer = python_peer(domain, &["sub", "/interop/to_cyclone", "3"]);
    p.wait_for_subscribers().await.unwrap();
    // the peer's reader must know our writer too, or it drops what arrives first
    let peer = tokio::task::spawn_blocking(move || {
        peer.expect("ready", WAIT);
        peer
    })
    .await
    .unwrap();
    for i in 0..3 {
        p.publish(std_msgs::String {
            data: format!("from rust {i}"),
        })
        .unwrap();
    }
    let events = finish(peer).await;
    let got: Vec<&str> = events
        .iter()
        .filter(|e| e["event"] == "received")
        .map(|e| e["data"].as_str().unwrap())
        .collect();
    assert_eq!(got, ["from rust 0", "from rust 1", "from rust 2"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cyclone_calls_our_execute_goal_service() {
    let domain = common::fresh_domain();
    let n = node(domain, "agent");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let seen2 = seen.clone();
    let _server = n
        .serve::<ExecuteGoal, _, _>("/asp/execute_goal", move |req: ExecuteGoalRequest| {
            seen2.lock().unwrap().push(req.goal.clone());
            async move {
                ExecuteGoalResponse {
                    success: true,
                    error_code: 0,
                    error_msg: String::new(),
                    summary: format!("understood: {}", req.goal),
                }
            }
        })
        .unwrap();
    let peer = python_peer(
        domain,
        &["call", "/asp/execute_goal", "put the apple in the bowl"],
    );
    let events = finish(peer).await;
    let r = events.iter().find(|e| e["event"] == "response").unwrap();
    assert_eq!(r["success"], true);
    assert_eq!(r["error_code"], 0);
    assert_eq!(r["summary"], "understood: put the apple in the bowl");
    assert_eq!(*seen.lock().unwrap(), ["put the apple in the bowl"]);
}

/// Serves the ExecuteGoal action with `;`-separated steps of 150 ms, logging what ran.
fn serve_steps(
    n: &Node,
    log: Arc<Mutex<Vec<String>>>,
) -> asp_ros::action::ActionServer<ExecuteGoalAction> {
    let handler = goal_fn::<ExecuteGoalAction, _, _>(
        move |goal: ExecuteGoalActionGoal, ctx: GoalContext<ExecuteGoalAction>| {
            let log = log.clone();
            async move {
                let mut state = SymbolicState::default();
                for (i, step) in goal.goal.split(';').enumerate() {
                    log.lock().unwrap().push(format!("step {}", i + 1));
                    tokio::select! {
                        _ = ctx.cancelled() => {
                            log.lock().unwrap().push(format!("stopped at {}", i + 1));
                            return ctx.stopped_outcome();
                        }
                        _ = tokio::time::sleep(Duration::from_millis(150)) => {}
                    }
                    state.inventory.push(format!("thing_{i}"));
                    ctx.publish_feedback(ExecuteGoalActionFeedback {
                        step: (i + 1) as u32,
                        tool_call: step.to_string(),
                        success: true,
                        outcome: "ok".into(),
                        state: state.clone(),
                    })
                    .unwrap();
                }
                GoalOutcome::Succeeded(ExecuteGoalActionResult {
                    success: true,
                    error_code: 0,
                    error_msg: String::new(),
                    summary: "all done".into(),
                })
            }
        },
    );
    n.action_server::<ExecuteGoalAction, _>("/asp/execute", ActionServerOptions::default(), handler)
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cyclone_drives_our_action_to_success() {
    let domain = common::fresh_domain();
    let n = node(domain, "agent");
    let log = Arc::new(Mutex::new(Vec::new()));
    let _server = serve_steps(&n, log.clone());
    let peer = python_peer(domain, &["action", "/asp/execute", "look;grasp;place"]);
    let events = finish(peer).await;
    let accepted = events.iter().find(|e| e["event"] == "accepted").unwrap();
    assert_eq!(accepted["accepted"], true);
    let feedback: Vec<(u64, &str)> = events
        .iter()
        .filter(|e| e["event"] == "feedback")
        .map(|e| {
            (
                e["step"].as_u64().unwrap(),
                e["tool_call"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(feedback, [(1, "look"), (2, "grasp"), (3, "place")]);
    let last = events.iter().rfind(|e| e["event"] == "feedback").unwrap();
    assert_eq!(
        last["inventory"],
        serde_json::json!(["thing_0", "thing_1", "thing_2"])
    );
    let result = events.iter().find(|e| e["event"] == "result").unwrap();
    assert_eq!(result["status"], 4, "SUCCEEDED");
    assert_eq!(result["success"], true);
    assert_eq!(result["summary"], "all done");
    assert!(
        result["statuses"]
            .as_array()
            .unwrap()
            .contains(&serde_json::json!(4))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cyclone_cancels_our_action() {
    let domain = common::fresh_domain();
    let n = node(domain, "agent");
    let log = Arc::new(Mutex::new(Vec::new()));
    let _server = serve_steps(&n, log.clone());
    let peer = python_peer(
        domain,
        &["action", "/asp/execute", "a;b;c;d;e;f;g;h;i;j", "1"],
    );
    let events = finish(peer).await;
    let cancel = events.iter().find(|e| e["event"] == "cancel").unwrap();
    assert_eq!(cancel["return_code"], 0, "ERROR_NONE");
    assert_eq!(cancel["canceling"], 1);
    let result = events.iter().find(|e| e["event"] == "result").unwrap();
    assert_eq!(result["status"], 5, "CANCELED");
    assert_eq!(result["success"], false);
    assert_eq!(result["error_code"], error_code(FailureKind::Cancelled));
    // our side really stopped, and nothing ran after that
    tokio::time::sleep(Duration::from_millis(400)).await;
    let log = log.lock().unwrap().clone();
    let stop = log
        .iter()
        .position(|l| l.starts_with("stopped"))
        .unwrap_or_else(|| panic!("{log:?}"));
    assert_eq!(stop, log.len() - 1, "{log:?}");
    assert!(log.len() < 11, "{log:?}");
}

/// A request record kept in memory (a node keeps it in a file or a database).
#[derive(Default)]
#[allow(clippy::type_complexity)]
struct MemoryRecord(
    Mutex<Vec<(String, RequestId, Option<UUID>)>>,
    Mutex<Vec<(String, UUID)>>,
);

impl RequestRecord for MemoryRecord {
    fn taken(&self, endpoint: &str, id: RequestId, goal: Option<UUID>) {
        self.0.lock().unwrap().push((endpoint.to_owned(), id, goal));
    }
    fn answered(&self, endpoint: &str, id: RequestId) {
        self.0
            .lock()
            .unwrap()
            .retain(|(e, i, _)| !(e == endpoint && *i == id));
    }
    fn goal_accepted(&self, action: &str, goal: UUID) {
        self.1.lock().unwrap().push((action.to_owned(), goal));
    }
    fn goal_ended(&self, action: &str, goal: UUID) {
        self.1
            .lock()
            .unwrap()
            .retain(|(a, g)| !(a == action && *g == goal));
    }
}

impl MemoryRecord {
    fn open(&self) -> Vec<(String, RequestId, Option<UUID>)> {
        self.0.lock().unwrap().clone()
    }

    /// Waits until a request is open, as the server's process sees it.
    async fn first_open(&self) -> (String, RequestId, Option<UUID>) {
        for _ in 0..600 {
            if let Some(first) = self.open().into_iter().next() {
                return first;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("no request was recorded within 30 s");
    }
}

fn restarted_answer() -> ExecuteGoalResponse {
    ExecuteGoalResponse {
        success: false,
        error_code: 25,
        error_msg: "agent restarted while the goal ran".into(),
        summary: String::new(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cyclone_client_hears_that_the_service_restarted() {
    let domain = common::fresh_domain();
    let record = Arc::new(MemoryRecord::default());
    // the first process takes the request and never answers (it dies)
    let first = node(domain, "agent");
    let dead = first
        .serve_recorded::<ExecuteGoal, _, _>(
            "/asp/execute_goal",
            Recorded {
                record: record.clone(),
                orphans: Vec::new(),
                orphan_answer: restarted_answer(),
            },
            |_req: ExecuteGoalRequest| std::future::pending::<ExecuteGoalResponse>(),
        )
        .unwrap();
    let peer = python_peer(domain, &["call", "/asp/execute_goal", "wipe the table"]);
    let (endpoint, id, goal) = record.first_open().await;
    assert_eq!(endpoint, "/asp/execute_goal");
    assert_eq!(goal, None);
    drop(dead);
    drop(first);
    // the next process answers it from the record, and serves as usual
    let second = node(domain, "agent");
    let _server = second
        .serve_recorded::<ExecuteGoal, _, _>(
            "/asp/execute_goal",
            Recorded {
                record: record.clone(),
                orphans: vec![id],
                orphan_answer: restarted_answer(),
            },
            |_req: ExecuteGoalRequest| async { ExecuteGoalResponse::default() },
        )
        .unwrap();
    let events = finish(peer).await;
    let r = events.iter().find(|e| e["event"] == "response").unwrap();
    assert_eq!(r["success"], false);
    assert_eq!(r["error_code"], 25);
    assert_eq!(r["error_msg"], "agent restarted while the goal ran");
    for _ in 0..100 {
        if record.open().is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the orphan is still open: {:?}", record.open());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cyclone_action_client_gets_aborted_when_the_server_restarted() {
    let domain = common::fresh_domain();
    let record = Arc::new(MemoryRecord::default());
    let first = node(domain, "agent");
    let options = ActionServerOptions {
        record: Some(record.clone()),
        ..ActionServerOptions::default()
    };
    let hangs = goal_fn::<ExecuteGoalAction, _, _>(|_goal, _ctx| std::future::pending());
    let dead = first
        .action_server::<ExecuteGoalAction, _>("/asp/execute", options, hangs)
        .unwrap();
    let peer = python_peer(domain, &["action", "/asp/execute", "wipe the table"]);
    let (endpoint, id, goal) = record.first_open().await;
    assert_eq!(endpoint, result_endpoint("/asp/execute"));
    let goal = goal.expect("a result request names its goal");
    // the process dies: nothing ends the goal or answers the request
    std::mem::forget(dead);
    let second = node(domain, "agent");
    let options = ActionServerOptions {
        record: Some(record.clone()),
        orphaned_results: vec![OrphanResult { id, goal }],
        ..ActionServerOptions::default()
    };
    let _server = second
        .action_server::<ExecuteGoalAction, _>(
            "/asp/execute",
            options,
            goal_fn(|_goal, _ctx| std::future::pending()),
        )
        .unwrap();
    let events = finish(peer).await;
    let result = events.iter().find(|e| e["event"] == "result").unwrap();
    assert_eq!(result["status"], 6, "ABORTED: {result}");
    assert_eq!(result["success"], false);
    assert_eq!(result["error_code"], 25, "NODE_DOWN: {result}");
    assert!(
        result["error_msg"]
            .as_str()
            .unwrap()
            .contains("process stopped"),
        "{result}"
    );
}

/// Our Stretch motion client against a Cyclone stand-in for stretch_core's trajectory
/// server (its joint names and ranges, position mode): a move from the stowed arm to a
/// reach becomes a turn, a drive and the arm's joints, one goal each; a goal outside the
/// Stretch's limits, or a cancelled motion, sends nothing; a goal the driver ends with an
/// error code stops the motion there, naming the code.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_stretch_client_drives_a_cyclone_stretch_driver() {
    use asp_core::robot::CancellationToken;
    use asp_kinematics::stretch::{ARM, LIFT, ROTATE_BASE, STRETCH3_URDF, TRANSLATE_BASE, WRIST};
    use asp_kinematics::{DriverGoal, Stretch, StretchSettings};
    use asp_ros::robot::StretchDriverArm;
    use asp_ros::robot::stretch::{STRETCH_CONTROLLER_ACTION, StretchMotionError};

    let urdf = repo_root().join("models").join(STRETCH3_URDF);
    assert!(
        urdf.exists(),
        "{} is missing: run scripts/setup",
        urdf.display()
    );
    let stretch = Stretch::from_urdf_file(&urdf, &StretchSettings::default()).unwrap();
    let domain = common::fresh_domain();
    // five well-formed goals: four succeed, the fifth stops at GOAL_TOLERANCE_VIOLATED
    let peer = python_peer(
        domain,
        &["stretch_driver", STRETCH_CONTROLLER_ACTION, "0,0,0,0,-5"],
    );
    let n = node(domain, "skill_executor");
    let arm =
        StretchDriverArm::new(&n, STRETCH_CONTROLLER_ACTION, stretch.joints().to_vec()).unwrap();
    let cancel = CancellationToken::new();
    let stow = [0.0, 0.0, 0.2, 0.0, 3.0, 0.0, 0.0];
    let reach = [0.3, 0.2, 0.8, 0.35, 0.0, -1.0, 0.0];
    let goals = stretch.driver_goals(&stow, &reach);
    assert_eq!(goals.len(), 3);
    arm.execute(&goals, &stow, &cancel).await.unwrap();

    let too_high = [DriverGoal {
        joint_names: vec![LIFT.into()],
        positions: vec![1.4],
    }];
    let e = arm.execute(&too_high, &reach, &cancel).await.unwrap_err();
    assert!(
        matches!(&e, StretchMotionError::OutOfLimits { joint, .. } if joint == LIFT),
        "{e}"
    );
    let together = [DriverGoal {
        joint_names: vec![ROTATE_BASE.into(), TRANSLATE_BASE.into()],
        positions: vec![0.1, 0.1],
    }];
    let e = arm.execute(&together, &reach, &cancel).await.unwrap_err();
    assert!(matches!(e, StretchMotionError::Malformed { .. }), "{e}");
    // cancelled before it starts: nothing is sent
    let stopped = CancellationToken::new();
    stopped.cancel();
    let e = arm.execute(&goals, &reach, &stopped).await.unwrap_err();
    assert_eq!(e, StretchMotionError::Cancelled { done: 0 });

    // back to the stow: the arm retracts first (goal 0, succeeds), the drive back is
    // the fifth goal the driver sees, and it fails; the turn is never sent
    let back = stretch.driver_goals(&reach, &stow);
    let e = arm.execute(&back, &reach, &cancel).await.unwrap_err();
    match &e {
        StretchMotionError::Driver {
            goal,
            code,
            code_name,
            ..
        } => {
            assert_eq!(
                (*goal, *code, *code_name),
                (1, -5, "GOAL_TOLERANCE_VIOLATED")
            );
        }
        other => panic!("{other}"),
    }

    let events = finish(peer).await;
    let seen: Vec<(Vec<String>, Vec<f64>, f64, i64)> = events
        .iter()
        .filter(|e| e["event"] == "goal")
        .map(|e| {
            (
                serde_json::from_value(e["joint_names"].clone()).unwrap(),
                serde_json::from_value(e["positions"][0].clone()).unwrap(),
                e["time_from_start"].as_f64().unwrap(),
                e["code"].as_i64().unwrap(),
            )
        })
        .collect();
    let names: Vec<Vec<&str>> = seen
        .iter()
        .map(|(n, ..)| n.iter().map(String::as_str).collect())
        .collect();
    assert_eq!(
        names,
        vec![
            vec![ROTATE_BASE],
            vec![TRANSLATE_BASE],
            vec![LIFT, ARM, WRIST[0], WRIST[1]],
            vec![LIFT, ARM, WRIST[0], WRIST[1]],
            vec![TRANSLATE_BASE],
        ],
        "{events:?}"
    );
    assert!((seen[0].1[0] - 0.3).abs() < 1e-9 && (seen[1].1[0] - 0.2).abs() < 1e-9);
    assert_eq!(seen[2].1, vec![0.8, 0.35, 0.0, -1.0]);
    assert!((seen[4].1[0] + 0.2).abs() < 1e-9, "{:?}", seen[4]);
    // every goal passed the driver's own checks, each timed by its slowest joint
    assert_eq!(
        seen.iter().map(|s| s.3).collect::<Vec<_>>(),
        [0, 0, 0, 0, -5]
    );
    assert!(seen.iter().all(|s| s.2 >= 0.5), "{seen:?}");
    // the yaw's 3 rad at 1 rad/s is the slowest joint of the arm's goal
    assert!((seen[2].2 - 3.0).abs() < 1e-6, "{:?}", seen[2]);
}
