//! Two processes over DDS: this test process and an `asp-ros-peer` child, on a domain of
//! their own, for a topic (both directions), a service (both service mappings) and an
//! action with feedback, cancel and preemption. The child reports what it really did.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use asp_ros::action::GoalState;
use asp_ros::msg::TerminalState;
use asp_ros::msg::action_msgs::CancelGoalResponse;
use asp_ros::msg::asp_interfaces::{
    ExecuteGoal, ExecuteGoalAction, ExecuteGoalActionGoal, ExecuteGoalRequest,
};
use asp_ros::msg::std_msgs;
use asp_ros::transport::ServiceMapping;
use asp_ros::{Qos, RosError, Transport};
use common::Peer;
use serde_json::Value;

const WAIT: Duration = Duration::from_secs(30);

fn transport(domain: u16, mapping: ServiceMapping) -> Transport {
    Transport::dds(common::settings(domain, mapping)).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn topic_from_this_process_to_another() {
    let domain = common::fresh_domain();
    let peer = Peer::spawn(
        domain,
        ServiceMapping::FastDds,
        &["listen", "--topic", "/mp/chatter", "--count", "3"],
    );
    peer.expect("ready", WAIT);
    let node = transport(domain, ServiceMapping::FastDds)
        .node("talker")
        .unwrap();
    let p = node
        .publisher::<std_msgs::String>("/mp/chatter", Qos::default_reliable())
        .unwrap();
    p.wait_for_subscribers().await.unwrap();
    for i in 0..3 {
        p.publish(std_msgs::String {
            data: format!("to the peer {i}"),
        })
        .unwrap();
    }
    let (events, status) = tokio::task::spawn_blocking(move || peer.finish(WAIT))
        .await
        .unwrap();
    let got: Vec<&str> = events
        .iter()
        .filter(|e| e["event"] == "received")
        .map(|e| e["data"].as_str().unwrap())
        .collect();
    assert_eq!(got, ["to the peer 0", "to the peer 1", "to the peer 2"]);
    assert_eq!(status, Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn topic_from_another_process_to_this_one() {
    let domain = common::fresh_domain();
    let node = transport(domain, ServiceMapping::FastDds)
        .node("listener")
        .unwrap();
    let mut sub = node
        .subscribe::<std_msgs::String>("/mp/latched", Qos::latched())
        .unwrap();
    let _peer = Peer::spawn(
        domain,
        ServiceMapping::FastDds,
        &[
            "talk",
            "--topic",
            "/mp/latched",
            "--count",
            "4",
            "--qos",
            "latched",
        ],
    );
    let mut got = Vec::new();
    while got.last().map(String::as_str) != Some("hello 3") {
        got.push(sub.recv_timeout(WAIT).await.unwrap().data);
    }
    assert!(got.contains(&"hello 3".to_string()), "{got:?}");
}

async fn service_call(mapping: ServiceMapping) {
    let domain = common::fresh_domain();
    let peer = Peer::spawn(
        domain,
        mapping,
        &["serve-goal", "--service", "/asp/execute_goal"],
    );
    peer.expect("serving", WAIT);
    let node = transport(domain, mapping).node("caller").unwrap();
    let client = node.client::<ExecuteGoal>("/asp/execute_goal").unwrap();
    let r = client
        .call(ExecuteGoalRequest {
            goal: "put the mug in the sink".into(),
        })
        .await
        .unwrap();
    assert!(r.success);
    assert_eq!(r.summary, "done: put the mug in the sink");
    let r = client
        .call(ExecuteGoalRequest { goal: " ".into() })
        .await
        .unwrap();
    assert!(!r.success);
    assert_eq!(r.error_msg, "the goal is empty");
    let (req, _) = peer.expect("request", WAIT);
    assert_eq!(req["goal"], "put the mug in the sink");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_across_processes_with_the_fast_dds_mapping() {
    service_call(ServiceMapping::FastDds).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_across_processes_with_the_cyclone_mapping() {
    service_call(ServiceMapping::Cyclone).await;
}

/// A client on the other RMW's service mapping gets no answer (its requests do not
/// decode), but the server says why once, naming the RMW the client most likely runs;
/// later bad requests go to debug level so a mismatched peer does not flood the log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_says_once_which_rmw_a_mismatched_client_runs() {
    let domain = common::fresh_domain();
    let peer = Peer::spawn_cmd(
        std::process::Command::new(env!("CARGO_BIN_EXE_asp-ros-peer"))
            .args(["serve-goal", "--service", "/asp/execute_goal"])
            .env("ROS_DOMAIN_ID", domain.to_string())
            .env("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp")
            .env("RUST_LOG", "warn,asp_ros::transport::dds=debug"),
        "asp-ros-peer serve-goal (Fast DDS mapping)",
    );
    peer.expect("serving", WAIT);
    let mut settings = common::settings(domain, ServiceMapping::Cyclone);
    // every call is expected to go unanswered; this only bounds each wait
    settings.call_timeout = Duration::from_secs(2);
    let node = Transport::dds(settings).unwrap().node("caller").unwrap();
    let client = node.client::<ExecuteGoal>("/asp/execute_goal").unwrap();
    const CALLS: usize = 3;
    for i in 0..CALLS {
        let r = client
            .call(ExecuteGoalRequest {
                goal: format!("put the mug in the sink {i}"),
            })
            .await;
        assert!(r.is_err(), "a mismatched request was answered: {r:?}");
    }
    let bad = |log: &[String]| {
        log.iter()
            .filter(|l| l.contains("does not decode") || l.contains("bad request"))
            .count()
    };
    let deadline = std::time::Instant::now() + WAIT;
    while bad(&peer.log()) < CALLS && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let log = peer.log();
    assert_eq!(bad(&log), CALLS, "{log:#?}");
    let said: Vec<&String> = log
        .iter()
        .filter(|l| l.contains("does not decode"))
        .collect();
    assert_eq!(said.len(), 1, "{log:#?}");
    assert!(
        said[0].contains("WARN")
            && said[0].contains("most likely runs RMW_IMPLEMENTATION=rmw_cyclonedds_cpp"),
        "{said:?}"
    );
    // nothing reached the handler
    assert!(
        std::iter::from_fn(|| peer.next(Duration::from_millis(200)))
            .all(|e| e["event"] != "request")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn this_process_serves_another_one() {
    let domain = common::fresh_domain();
    let node = transport(domain, ServiceMapping::FastDds)
        .node("server")
        .unwrap();
    let _server = node
        .serve::<ExecuteGoal, _, _>("/asp/execute_goal", |req: ExecuteGoalRequest| async move {
            asp_ros::msg::asp_interfaces::ExecuteGoalResponse {
                success: true,
                summary: format!("served {}", req.goal),
                ..Default::default()
            }
        })
        .unwrap();
    let peer = Peer::spawn(
        domain,
        ServiceMapping::FastDds,
        &[
            "call-goal",
            "--service",
            "/asp/execute_goal",
            "--goal",
            "wave",
        ],
    );
    let (events, status) = tokio::task::spawn_blocking(move || peer.finish(WAIT))
        .await
        .unwrap();
    let response = events.iter().find(|e| e["event"] == "response").unwrap();
    assert_eq!(response["summary"], "served wave");
    assert_eq!(status, Some(0));
}

fn events_of<'a>(events: &'a [Value], goal: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["goal"] == goal).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn action_across_processes_with_feedback_cancel_and_preemption() {
    let domain = common::fresh_domain();
    let peer = Peer::spawn(
        domain,
        ServiceMapping::FastDds,
        &[
            "action-server",
            "--action",
            "/asp/execute",
            "--step-ms",
            "150",
        ],
    );
    peer.expect("serving", WAIT);
    let node = transport(domain, ServiceMapping::FastDds)
        .node("client")
        .unwrap();
    let client = node
        .action_client::<ExecuteGoalAction>("/asp/execute")
        .unwrap();
    let goal = |g: &str| ExecuteGoalActionGoal { goal: g.into() };

    // runs to the end with one feedback per step
    let mut h = client.send_goal(goal("look; grasp; place")).await.unwrap();
    let mut steps = Vec::new();
    while let Some(f) = h.feedback().await {
        steps.push((f.step, f.tool_call, f.state.inventory.len()));
    }
    assert_eq!(
        steps,
        vec![
            (1, "look".into(), 1),
            (2, "grasp".into(), 2),
            (3, "place".into(), 3)
        ]
    );
    let r = h.result().await.unwrap();
    assert_eq!(r.state, TerminalState::Succeeded);
    assert_eq!(r.result.summary, "3 steps done");

    // rejected at once
    let e = client.send_goal(goal("  ")).await.unwrap_err();
    assert!(matches!(e, RosError::GoalRejected { .. }), "{e}");

    // cancel: CANCELING → CANCELED, and the peer's work stops
    let mut h = client.send_goal(goal("a;b;c;d;e;f;g;h;i;j")).await.unwrap();
    let cancelled_id = h.id().to_string();
    h.feedback().await.unwrap();
    let c = h.cancel().await.unwrap();
    assert_eq!(c.return_code, CancelGoalResponse::ERROR_NONE);
    assert_eq!(
        h.wait_for_state(GoalState::Canceled, WAIT).await.unwrap(),
        GoalState::Canceled
    );
    assert_eq!(h.result().await.unwrap().state, TerminalState::Canceled);

    // preemption: a second goal stops the first, which ends ABORTED
    let mut first = client
        .send_goal(goal("p1;p2;p3;p4;p5;p6;p7;p8"))
        .await
        .unwrap();
    let first_id = first.id().to_string();
    first.feedback().await.unwrap();
    let second = client.send_goal(goal("q1;q2")).await.unwrap();
    let second_id = second.id().to_string();
    assert_eq!(first.result().await.unwrap().state, TerminalState::Aborted);
    assert_eq!(
        second.result().await.unwrap().state,
        TerminalState::Succeeded
    );

    // what the peer really did
    drop(client);
    let (events, _) = tokio::task::spawn_blocking(move || peer.finish(Duration::from_secs(1)))
        .await
        .unwrap();
    let cancelled = events_of(&events, &cancelled_id);
    let stop = cancelled
        .iter()
        .position(|e| e["event"] == "stopped")
        .unwrap_or_else(|| panic!("{cancelled:?}"));
    assert_eq!(
        stop,
        cancelled.len() - 1,
        "work went on after the cancel: {cancelled:?}"
    );
    assert!(
        cancelled[stop]["reason"]
            .as_str()
            .unwrap()
            .contains("Canceled")
    );
    let first_stop = events
        .iter()
        .position(|e| e["goal"] == first_id.as_str() && e["event"] == "stopped")
        .unwrap();
    assert!(
        events[first_stop]["reason"]
            .as_str()
            .unwrap()
            .contains("Preempted")
    );
    let second_start = events
        .iter()
        .position(|e| e["goal"] == second_id.as_str() && e["event"] == "started")
        .unwrap();
    assert!(
        first_stop < second_start,
        "the new goal started before the old one stopped"
    );
    assert!(
        events
            .iter()
            .any(|e| e["goal"] == second_id.as_str() && e["event"] == "finished")
    );
}

/// A server that is killed (no goodbye) and started again as a new process: the same
/// client reaches the new one, also after a call that was in flight to the dead one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_reaches_a_restarted_server() {
    let domain = common::fresh_domain();
    let args = ["serve-goal", "--service", "/mp/restarted"];
    let first = Peer::spawn(domain, ServiceMapping::FastDds, &args);
    first.expect("serving", WAIT);
    let node = transport(domain, ServiceMapping::FastDds)
        .node("caller")
        .unwrap();
    let client = node.client::<ExecuteGoal>("/mp/restarted").unwrap();
    let r = client
        .call(ExecuteGoalRequest { goal: "one".into() })
        .await
        .unwrap();
    assert_eq!(r.summary, "done: one");
    drop(first);
    // a call to the dead server times out
    let e = client
        .call_with_timeout(
            ExecuteGoalRequest {
                goal: "lost".into(),
            },
            Duration::from_secs(1),
        )
        .await
        .unwrap_err();
    assert!(matches!(e, RosError::Timeout { .. }), "{e}");
    let second = Peer::spawn(domain, ServiceMapping::FastDds, &args);
    second.expect("serving", WAIT);
    let r = tokio::time::timeout(WAIT, client.call(ExecuteGoalRequest { goal: "two".into() }))
        .await
        .expect("no reply from the restarted server")
        .unwrap();
    assert_eq!(r.summary, "done: two");
}
