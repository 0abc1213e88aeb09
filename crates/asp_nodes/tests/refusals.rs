//! Bad goals over the ROS interfaces: agent_node alone on DDS, asked from a second
//! participant through `/asp/execute_goal` and `/asp/execute` (and its busy policy set
//! through its parameter services, the change told on `/rosout`). Each refusal class comes
//! back at once with its own error code and a message that describes the input without
//! repeating it, and the node keeps serving afterwards. No other node runs: a refused
//! goal never reaches the map, the skills or a model.
#![allow(clippy::unwrap_used)]

mod common;

use asp_core::robot::CancellationToken;
use asp_ros::msg::TerminalState;
use asp_ros::msg::asp_interfaces::{
    ExecuteGoal, ExecuteGoalAction, ExecuteGoalActionGoal, ExecuteGoalRequest, goal_refused,
};
use asp_ros::msg::rcl_interfaces::{
    DescribeParameters, DescribeParametersRequest, GetParameters, GetParametersRequest,
    ListParameters, ListParametersRequest, Log, Parameter, ParameterValue, SetParameters,
    SetParametersRequest, SetParametersResult, parameter_type,
};
use asp_ros::transport::ServiceMapping;
use asp_ros::{Node, Transport};

fn client_node(domain: u16) -> Node {
    Transport::dds(common::dds_settings(domain, ServiceMapping::Cyclone))
        .unwrap()
        .node("refusal_client")
        .unwrap()
}

/// Sends `goal` to `/asp/execute` and returns its result, which must be an abort.
async fn aborted_action(
    me: &Node,
    goal: &str,
) -> asp_ros::msg::asp_interfaces::ExecuteGoalActionResult {
    let action = me
        .action_client::<ExecuteGoalAction>(asp_nodes::names::EXECUTE_ACTION)
        .unwrap();
    let result = action
        .execute(
            ExecuteGoalActionGoal { goal: goal.into() },
            &CancellationToken::new(),
            |_| {},
        )
        .await
        .unwrap();
    assert_eq!(
        result.state,
        TerminalState::Aborted,
        "{goal:?}: {:?}",
        result.result
    );
    result.result
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_refusal_class_has_its_code_and_the_node_keeps_serving() {
    let domain = common::fresh_domain();
    let data = tempfile::tempdir().unwrap();
    let cfg = common::config(&data, &["agent_node.limits.max_goal_chars=500"]);
    let server = Transport::dds(common::dds_settings(domain, ServiceMapping::Cyclone)).unwrap();
    let _agent = asp_nodes::agent::agent_node(&cfg, &server).await.unwrap();

    let me = client_node(domain);
    let service = me
        .client::<ExecuteGoal>(asp_nodes::names::EXECUTE_GOAL_SERVICE)
        .unwrap();
    let long = "pick up the red mug and put it on the shelf ".repeat(20);
    let cases: [(&str, &str, u16, &str); 9] = [
        ("empty", "", goal_refused::EMPTY, "empty"),
        ("whitespace", " \t\n  ", goal_refused::BLANK, "whitespace"),
        ("too long", &long, goal_refused::TOO_LONG, "at most 500"),
        (
            "control character",
            "open the drawer\u{1b}[2J",
            goal_refused::CONTROL_CHARACTER,
            "U+001B",
        ),
        (
            "no verb",
            "hello there, nice weather today",
            goal_refused::NO_VERB,
            "asks for an action",
        ),
        (
            "unsupported",
            "could you fold the laundry",
            goal_refused::UNSUPPORTED,
            "not one of the robot's skills",
        ),
        (
            "unsafe",
            "throw the mug at my brother",
            goal_refused::UNSAFE,
            "harm",
        ),
        ("no object", "open it", goal_refused::NO_OBJECT, "stand for"),
        // matched by meaning (the shipped MiniLM), too close to call: asked back
        (
            "unclear",
            "heft the bag",
            goal_refused::UNCLEAR,
            "did you mean \"grip\"",
        ),
    ];
    for (class, goal, code, says) in cases {
        let r = service
            .call(ExecuteGoalRequest {
                goal: goal.to_owned(),
            })
            .await
            .unwrap_or_else(|e| panic!("{class}: {e}"));
        assert!(!r.success, "{class}: {r:?}");
        assert_eq!(r.error_code, code, "{class}: {r:?}");
        assert!(r.error_msg.contains(says), "{class}: {}", r.error_msg);
        assert!(
            r.error_msg.len() < 400,
            "{class}: the message is {} bytes",
            r.error_msg.len()
        );
    }
    // the long goal is described, not repeated
    let r = service
        .call(ExecuteGoalRequest { goal: long.clone() })
        .await
        .unwrap();
    assert!(
        r.error_msg
            .contains(&format!("{} characters", long.chars().count()))
    );
    assert!(
        !r.error_msg.contains("put it on the shelf"),
        "{}",
        r.error_msg
    );

    // the action answers the same way: accepted, then aborted with the refusal's code
    let result = aborted_action(&me, "close\u{0}the door").await;
    assert_eq!(result.error_code, goal_refused::CONTROL_CHARACTER);
    assert!(!result.success);

    // and the service still answers after all of them
    let r = service
        .call(ExecuteGoalRequest { goal: "   ".into() })
        .await
        .unwrap();
    assert_eq!(r.error_code, goal_refused::BLANK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn goals_are_refused_while_the_estop_is_engaged_and_taken_again_after() {
    use asp_ros::msg::std_msgs::Bool;
    let domain = common::fresh_domain();
    let data = tempfile::tempdir().unwrap();
    let cfg = common::config(&data, &[]);
    let server = Transport::dds(common::dds_settings(domain, ServiceMapping::Cyclone)).unwrap();
    let agent = asp_nodes::agent::agent_node(&cfg, &server).await.unwrap();
    let me = client_node(domain);
    let button = me
        .publisher::<Bool>("/asp/estop", asp_nodes::estop::ESTOP_QOS)
        .unwrap();
    let service = me
        .client::<ExecuteGoal>(asp_nodes::names::EXECUTE_GOAL_SERVICE)
        .unwrap();
    let mut engaged = agent.estop();
    button.publish(Bool { data: true }).unwrap();
    engaged.wait_for(|e| *e).await.unwrap();
    let r = service
        .call(ExecuteGoalRequest {
            goal: "pick up the mug".into(),
        })
        .await
        .unwrap();
    assert_eq!(r.error_code, goal_refused::ESTOP, "{r:?}");
    assert!(
        r.error_msg.contains("e-stop (/asp/estop) is engaged"),
        "{}",
        r.error_msg
    );
    // the action says the same, as its result
    let result = aborted_action(&me, "pick up the mug").await;
    assert_eq!(result.error_code, goal_refused::ESTOP);
    // released: goals are read again (this one is refused for its own reason)
    button.publish(Bool { data: false }).unwrap();
    engaged.wait_for(|e| !*e).await.unwrap();
    let r = service
        .call(ExecuteGoalRequest {
            goal: "hello there".into(),
        })
        .await
        .unwrap();
    assert_eq!(r.error_code, goal_refused::NO_VERB, "{r:?}");
}

/// Forwards the ids of the goals that made a tool call.
struct Calls(tokio::sync::mpsc::UnboundedSender<String>);

impl asp_agent::EventSink for Calls {
    fn emit(&self, event: &asp_agent::AgentEvent) {
        if let asp_agent::AgentEvent::ToolCalled { goal_id, .. } = event {
            let _ = self.0.send(goal_id.clone());
        }
    }
}

/// agent_node alone on a fresh DDS domain, with a client participant and the goal id
/// of every tool call it starts.
struct LoneAgent {
    client: Node,
    domain: u16,
    cfg: asp_config::LoadedConfig,
    calls: tokio::sync::mpsc::UnboundedReceiver<String>,
    agent: asp_nodes::agent::AgentNode,
    _server: Transport,
    _data: tempfile::TempDir,
}

impl LoneAgent {
    async fn start() -> Self {
        Self::start_with(&[]).await
    }

    async fn start_with(overrides: &[&str]) -> Self {
        common::logs();
        let domain = common::fresh_domain();
        let data = tempfile::tempdir().unwrap();
        let cfg = common::config(&data, overrides);
        let server = Transport::dds(common::dds_settings(domain, ServiceMapping::Cyclone)).unwrap();
        let agent = asp_nodes::agent::agent_node(&cfg, &server).await.unwrap();
        let (tx, calls) = tokio::sync::mpsc::unbounded_channel();
        agent.watch(std::sync::Arc::new(Calls(tx)));
        Self {
            client: client_node(domain),
            domain,
            cfg,
            calls,
            agent,
            _server: server,
            _data: data,
        }
    }
}

/// One policy across the service and the action. agent_node runs alone, so every goal
/// that gets past the grammar waits in its first tool call for an object map that never
/// comes: it runs until something stops it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_newer_goal_preempts_the_running_one_whichever_way_each_came() {
    use asp_ros::msg::asp_interfaces::error_code;
    let mut lone = LoneAgent::start().await;
    let (me, calls) = (&lone.client, &mut lone.calls);
    let service = me
        .client::<ExecuteGoal>(asp_nodes::names::EXECUTE_GOAL_SERVICE)
        .unwrap();
    let action = me
        .action_client::<ExecuteGoalAction>(asp_nodes::names::EXECUTE_ACTION)
        .unwrap();

    // a service goal runs; an action goal preempts it
    let first = tokio::spawn(async move {
        service
            .call(ExecuteGoalRequest {
                goal: "pick up the mug".into(),
            })
            .await
            .unwrap()
    });
    assert_eq!(calls.recv().await.unwrap(), "srv-1");
    let cancel = CancellationToken::new();
    let second = {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            action
                .execute(
                    ExecuteGoalActionGoal {
                        goal: "pick up the cup".into(),
                    },
                    &cancel,
                    |_| {},
                )
                .await
                .unwrap()
        })
    };
    let r = first.await.unwrap();
    assert!(!r.success);
    assert_eq!(
        r.error_code,
        error_code(asp_core::FailureKind::Cancelled),
        "{r:?}"
    );
    assert!(
        r.error_msg.starts_with("preempted by a newer goal ("),
        "{}",
        r.error_msg
    );
    // the action goal runs now (its first call), and a cancel ends it as cancelled
    let id = calls.recv().await.unwrap();
    assert_ne!(id, "srv-1");
    assert!(r.error_msg.contains(&id), "{} names {id}", r.error_msg);
    cancel.cancel();
    let result = second.await.unwrap();
    assert_eq!(result.state, TerminalState::Canceled, "{:?}", result.result);
    assert_eq!(result.result.error_msg, "the goal was cancelled");
}

/// `when_busy: queue`: goals wait their turn in the order they came, whichever way
/// each came; none preempts another, and one cancelled while it waits ends at once
/// without ever running.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queued_goals_run_in_the_order_they_came_and_can_be_cancelled_while_waiting() {
    use asp_ros::msg::asp_interfaces::error_code;
    let mut lone = LoneAgent::start_with(&["agent_node.when_busy=queue"]).await;
    let mut waiting = lone.agent.waiting();
    let (me, calls) = (&lone.client, &mut lone.calls);
    let action = std::sync::Arc::new(
        me.action_client::<ExecuteGoalAction>(asp_nodes::names::EXECUTE_ACTION)
            .unwrap(),
    );
    // a client per goal: one client's calls go one at a time
    let send = |goal: &'static str| {
        let service = me
            .client::<ExecuteGoal>(asp_nodes::names::EXECUTE_GOAL_SERVICE)
            .unwrap();
        tokio::spawn(async move {
            service
                .call(ExecuteGoalRequest { goal: goal.into() })
                .await
                .unwrap()
        })
    };
    let send_action = |goal: &'static str, cancel: &CancellationToken| {
        let (action, cancel) = (action.clone(), cancel.clone());
        tokio::spawn(async move {
            action
                .execute(ExecuteGoalActionGoal { goal: goal.into() }, &cancel, |_| {})
                .await
                .unwrap()
        })
    };

    // a service goal runs; an action goal, then another service goal, wait behind it
    let first = send("pick up the mug");
    assert_eq!(calls.recv().await.unwrap(), "srv-1");
    let second_cancel = CancellationToken::new();
    let second = send_action("pick up the cup", &second_cancel);
    waiting.wait_for(|n| *n == 1).await.unwrap();
    let third = send("pick up the bowl");
    waiting.wait_for(|n| *n == 2).await.unwrap();
    // a fourth, cancelled through the action while it waits: it ends at once and
    // never runs
    let fourth = send("pick up the plate");
    waiting.wait_for(|n| *n == 3).await.unwrap();
    let r = action.cancel_goal(service_goal_id(3)).await.unwrap();
    assert_eq!(r.goals_canceling.len(), 1, "{r:?}");
    let r = fourth.await.unwrap();
    assert_eq!(
        r.error_code,
        error_code(asp_core::FailureKind::Cancelled),
        "{r:?}"
    );
    assert!(r.error_msg.contains("waited"), "{}", r.error_msg);
    waiting.wait_for(|n| *n == 2).await.unwrap();

    // the first ends (cancelled through the action, not preempted): the action goal is next
    let r = action.cancel_goal(service_goal_id(1)).await.unwrap();
    assert_eq!(r.goals_canceling.len(), 1, "{r:?}");
    let r = first.await.unwrap();
    assert_eq!(
        r.error_code,
        error_code(asp_core::FailureKind::Cancelled),
        "{r:?}"
    );
    assert!(r.error_msg.contains("cancel_goal"), "{}", r.error_msg);
    let id = calls.recv().await.unwrap();
    assert!(
        !id.starts_with("srv"),
        "the action goal came before srv-2: {id}"
    );
    second_cancel.cancel();
    let r = second.await.unwrap();
    assert_eq!(r.state, TerminalState::Canceled, "{:?}", r.result);
    // then the third
    assert_eq!(calls.recv().await.unwrap(), "srv-2");
    action.cancel_goal(service_goal_id(2)).await.unwrap();
    let r = third.await.unwrap();
    assert!(!r.success, "{r:?}");
    assert_eq!(*waiting.borrow(), 0);
}

/// The id the action's cancel requests know service goal `n` by.
fn service_goal_id(n: u64) -> asp_ros::msg::unique_identifier_msgs::UUID {
    let mut uuid = [0u8; 16];
    uuid[..3].copy_from_slice(b"srv");
    uuid[8..].copy_from_slice(&n.to_be_bytes());
    asp_ros::msg::unique_identifier_msgs::UUID { uuid }
}

/// A goal sent through the service is stopped by the action's cancel request, as
/// `ros2 action` and any action client send it: cancel all, or the id the cancel
/// response gave it; the service's caller gets a cancelled result that says how.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_goals_are_cancelled_through_the_action() {
    use asp_ros::msg::action_msgs::CancelGoalResponse;
    use asp_ros::msg::asp_interfaces::error_code;
    let mut lone = LoneAgent::start().await;
    let (me, calls) = (&lone.client, &mut lone.calls);
    let service = std::sync::Arc::new(
        me.client::<ExecuteGoal>(asp_nodes::names::EXECUTE_GOAL_SERVICE)
            .unwrap(),
    );
    let action = me
        .action_client::<ExecuteGoalAction>(asp_nodes::names::EXECUTE_ACTION)
        .unwrap();
    let send = |goal: &'static str| {
        let service = service.clone();
        tokio::spawn(async move {
            service
                .call(ExecuteGoalRequest { goal: goal.into() })
                .await
                .unwrap()
        })
    };

    // cancel all: the running service goal is among the goals canceling
    let first = send("pick up the mug");
    assert_eq!(calls.recv().await.unwrap(), "srv-1");
    let r = action.cancel_all().await.unwrap();
    assert_eq!(r.return_code, CancelGoalResponse::ERROR_NONE, "{r:?}");
    assert_eq!(r.goals_canceling.len(), 1, "{r:?}");
    assert_eq!(&r.goals_canceling[0].goal_id.uuid[..3], b"srv");
    let answer = first.await.unwrap();
    assert!(!answer.success);
    assert_eq!(
        answer.error_code,
        error_code(asp_core::FailureKind::Cancelled),
        "{answer:?}"
    );
    assert!(
        answer.error_msg.contains("cancel_goal"),
        "{}",
        answer.error_msg
    );

    // by id: an id nobody knows is refused as unknown; the service goal's own id works
    let second = send("pick up the cup");
    assert_eq!(calls.recv().await.unwrap(), "srv-2");
    let mut unknown = r.goals_canceling[0].clone();
    unknown.goal_id.uuid[15] ^= 0xff;
    let r = action.cancel_goal(unknown.goal_id).await.unwrap();
    assert_eq!(
        r.return_code,
        CancelGoalResponse::ERROR_UNKNOWN_GOAL_ID,
        "{r:?}"
    );
    let mut id = unknown.goal_id;
    id.uuid[8..].copy_from_slice(&2u64.to_be_bytes());
    let r = action.cancel_goal(id).await.unwrap();
    assert_eq!(r.return_code, CancelGoalResponse::ERROR_NONE, "{r:?}");
    assert_eq!(r.goals_canceling[0].goal_id, id);
    let answer = second.await.unwrap();
    assert_eq!(
        answer.error_code,
        error_code(asp_core::FailureKind::Cancelled),
        "{answer:?}"
    );
    // nothing runs now: a cancel finds nothing to cancel
    let r = action.cancel_all().await.unwrap();
    assert_eq!(r.return_code, CancelGoalResponse::ERROR_REJECTED, "{r:?}");
}

/// The nodes a goal needs, as heartbeats from another participant (as their processes
/// would send them).
struct Heartbeats {
    beats: Vec<(String, asp_ros::liveliness::Heartbeat)>,
    _transport: Transport,
}

impl Heartbeats {
    fn start(lone: &LoneAgent) -> Self {
        let t = Transport::dds(common::dds_settings(lone.domain, ServiceMapping::Cyclone)).unwrap();
        let settings = asp_nodes::supervision::heartbeat_settings(&lone.cfg);
        let beats = asp_nodes::supervision::required_nodes(&lone.cfg)
            .into_iter()
            .map(|n| {
                let beat =
                    asp_ros::liveliness::Heartbeat::start(&t.node(&n).unwrap(), &settings).unwrap();
                (n, beat)
            })
            .collect();
        Self {
            beats,
            _transport: t,
        }
    }

    /// Node `name`'s heartbeat stops without a goodbye, as when its process is killed.
    fn kill(&mut self, name: &str) {
        let i = self.beats.iter().position(|(n, _)| n == name).unwrap();
        self.beats.remove(i).1.silence();
    }
}

/// `/asp/ready` tells a client when goals can be taken: not before object_map_node's
/// summary holds objects (a map with nothing in it is not built), not before every node
/// the goals need is heard, not while one of them is lost, and not while the e-stop is
/// engaged. Latched, so a client that joins late hears where things stand.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ready_is_said_once_the_map_is_built_and_while_the_estop_is_released() {
    use asp_nodes::names::{OBJECT_MAP_TOPIC, READY_TOPIC};
    use asp_ros::Qos;
    use asp_ros::msg::asp_interfaces::ObjectMapSummary;
    use asp_ros::msg::std_msgs::Bool;
    let lone = LoneAgent::start().await;
    let me = &lone.client;
    let mut ready = lone.agent.ready();
    let mut heard = me.subscribe::<Bool>(READY_TOPIC, Qos::latched()).unwrap();
    // the value published before anyone listened
    assert!(!heard.recv().await.unwrap().data);
    let map = me
        .publisher::<ObjectMapSummary>(OBJECT_MAP_TOPIC, Qos::latched())
        .unwrap();
    map.publish(ObjectMapSummary {
        objects: 0,
        ..Default::default()
    })
    .unwrap();
    map.publish(ObjectMapSummary {
        objects: 5,
        ..Default::default()
    })
    .unwrap();
    // built, but the nodes are not heard yet
    let mut beats = Heartbeats::start(&lone);
    ready.wait_for(|r| *r).await.unwrap();
    // each change is said once, in order, on the topic
    assert!(heard.recv().await.unwrap().data);
    // a node lost (no heartbeat for the timeout) is not ready; back, it is
    beats.kill("verifier_node");
    ready.wait_for(|r| !*r).await.unwrap();
    assert!(!heard.recv().await.unwrap().data);
    let t = Transport::dds(common::dds_settings(lone.domain, ServiceMapping::Cyclone)).unwrap();
    let _back = asp_ros::liveliness::Heartbeat::start(
        &t.node("verifier_node").unwrap(),
        &asp_nodes::supervision::heartbeat_settings(&lone.cfg),
    )
    .unwrap();
    ready.wait_for(|r| *r).await.unwrap();
    assert!(heard.recv().await.unwrap().data);
    let button = me
        .publisher::<Bool>("/asp/estop", asp_nodes::estop::ESTOP_QOS)
        .unwrap();
    button.publish(Bool { data: true }).unwrap();
    ready.wait_for(|r| !*r).await.unwrap();
    assert!(!heard.recv().await.unwrap().data);
    button.publish(Bool { data: false }).unwrap();
    ready.wait_for(|r| *r).await.unwrap();
    assert!(heard.recv().await.unwrap().data);
}

/// A node the running goal needs dies: the goal ends at once (not when some call times
/// out) with code 25 naming the node, whichever way it came.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_goal_ends_naming_the_node_that_died_under_it() {
    let mut lone = LoneAgent::start().await;
    let mut beats = Heartbeats::start(&lone);
    let me = lone.client.clone();
    // heard: the goal runs into its first tool call (waiting for a map that never comes)
    let mut peers_up = lone.agent.ready();
    let map = me
        .publisher::<asp_ros::msg::asp_interfaces::ObjectMapSummary>(
            asp_nodes::names::OBJECT_MAP_TOPIC,
            asp_ros::Qos::latched(),
        )
        .unwrap();
    map.publish(asp_ros::msg::asp_interfaces::ObjectMapSummary {
        objects: 3,
        ..Default::default()
    })
    .unwrap();
    peers_up.wait_for(|r| *r).await.unwrap();
    let service = me
        .client::<ExecuteGoal>(asp_nodes::names::EXECUTE_GOAL_SERVICE)
        .unwrap();
    let call = tokio::spawn(async move {
        service
            .call(ExecuteGoalRequest {
                goal: "put the apple in the bowl".into(),
            })
            .await
            .unwrap()
    });
    let first = lone.calls.recv().await.unwrap();
    beats.kill("skill_executor_node");
    let answer = call.await.unwrap();
    assert!(!answer.success);
    assert_eq!(
        answer.error_code,
        goal_refused::NODE_DOWN,
        "{answer:?} after {first}"
    );
    assert!(
        answer.error_msg.contains("/skill_executor_node")
            && answer.error_msg.contains("no heartbeat"),
        "{}",
        answer.error_msg
    );
}

/// REP-2006 on agent_node: deactivating it ends the running goal at once with code 26
/// (its robot motion cancelled, as for a dead node); goals are refused with code 26,
/// from the service and the action, naming how to activate it; `ready` says false;
/// activated, goals are read again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deactivated_agent_ends_its_goal_and_refuses_goals_until_activated() {
    use asp_ros::msg::lifecycle_msgs::{GetState, GetStateRequest};
    let mut lone = LoneAgent::start().await;
    let me = lone.client.clone();
    let service = me
        .client::<ExecuteGoal>(asp_nodes::names::EXECUTE_GOAL_SERVICE)
        .unwrap();
    let s = me
        .client::<ExecuteGoal>(asp_nodes::names::EXECUTE_GOAL_SERVICE)
        .unwrap();
    let call = tokio::spawn(async move {
        s.call(ExecuteGoalRequest {
            goal: "pick up the mug".into(),
        })
        .await
        .unwrap()
    });
    // running: in its first tool call, waiting for a map that never comes
    assert_eq!(lone.calls.recv().await.unwrap(), "srv-1");
    assert!(
        !common::lifecycle_set(&me, "/agent_node", "activate").await,
        "already active"
    );
    assert!(common::lifecycle_set(&me, "/agent_node", "deactivate").await);
    let answer = call.await.unwrap();
    assert!(!answer.success);
    assert_eq!(answer.error_code, goal_refused::INACTIVE, "{answer:?}");
    assert!(
        answer.error_msg.contains("agent_node was deactivated"),
        "{}",
        answer.error_msg
    );
    let state = me
        .client::<GetState>("/agent_node/get_state")
        .unwrap()
        .call(GetStateRequest::default())
        .await
        .unwrap();
    assert_eq!(state.current_state.label, "inactive");

    let r = service
        .call(ExecuteGoalRequest {
            goal: "pick up the cup".into(),
        })
        .await
        .unwrap();
    assert_eq!(r.error_code, goal_refused::INACTIVE, "{r:?}");
    assert!(
        r.error_msg
            .contains("ros2 lifecycle set /agent_node activate"),
        "{}",
        r.error_msg
    );
    let result = aborted_action(&me, "pick up the cup").await;
    assert_eq!(result.error_code, goal_refused::INACTIVE);
    assert!(!*lone.agent.ready().borrow());

    assert!(common::lifecycle_set(&me, "/agent_node", "activate").await);
    let r = service
        .call(ExecuteGoalRequest {
            goal: "hello there".into(),
        })
        .await
        .unwrap();
    assert_eq!(r.error_code, goal_refused::NO_VERB, "{r:?}");
}

fn string_value(s: &str) -> ParameterValue {
    ParameterValue {
        r#type: parameter_type::STRING,
        string_value: s.into(),
        ..Default::default()
    }
}

async fn set_parameter(me: &Node, name: &str, value: ParameterValue) -> SetParametersResult {
    let mut r = me
        .client::<SetParameters>("/agent_node/set_parameters")
        .unwrap()
        .call(SetParametersRequest {
            parameters: vec![Parameter {
                name: name.into(),
                value,
            }],
        })
        .await
        .unwrap();
    assert_eq!(r.results.len(), 1);
    r.results.remove(0)
}

/// `ros2 param` against agent_node: its settings listed, read and described; the busy
/// policy set to reject (a bad value or a read-only parameter refused, saying why), after
/// which a goal is refused while another runs, from the service and the action alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_busy_set_to_reject_as_a_parameter_refuses_a_goal_while_another_runs() {
    asp_runtime::init_tracing();
    let mut lone = LoneAgent::start().await;
    let (me, calls) = (&lone.client, &mut lone.calls);
    let mut rosout = me
        .subscribe::<Log>("/rosout", asp_nodes::rosout::ROSOUT_QOS)
        .unwrap();

    let listed = me
        .client::<ListParameters>("/agent_node/list_parameters")
        .unwrap()
        .call(ListParametersRequest::default())
        .await
        .unwrap()
        .result
        .names;
    for name in ["when_busy", "safety.max_velocity_scaling", "use_sim_time"] {
        assert!(listed.iter().any(|n| n == name), "{name} not in {listed:?}");
    }
    let got = me
        .client::<GetParameters>("/agent_node/get_parameters")
        .unwrap()
        .call(GetParametersRequest {
            names: vec![
                "when_busy".into(),
                "safety.max_velocity_scaling".into(),
                "use_sim_time".into(),
            ],
        })
        .await
        .unwrap()
        .values;
    assert_eq!(got[0].string_value, "preempt");
    // the configured value (false unless simulated time is asked for)
    assert_eq!(got[2].r#type, parameter_type::BOOL);
    assert_eq!(got[2].bool_value, lone.cfg.config.common.use_sim_time);
    assert_eq!(got[1].r#type, parameter_type::DOUBLE);
    assert!(
        (got[1].double_value - lone.cfg.config.common.safety.max_velocity_scaling).abs() < 1e-12
    );
    let described = me
        .client::<DescribeParameters>("/agent_node/describe_parameters")
        .unwrap()
        .call(DescribeParametersRequest {
            names: vec!["when_busy".into(), "safety.max_velocity_scaling".into()],
        })
        .await
        .unwrap()
        .descriptors;
    assert!(!described[0].read_only && described[0].additional_constraints.contains("reject"));
    assert!(described[1].read_only);

    let refused = set_parameter(me, "when_busy", string_value("sometimes")).await;
    assert!(!refused.successful);
    assert!(
        refused
            .reason
            .contains("\"sometimes\" is not preempt, reject or queue"),
        "{}",
        refused.reason
    );
    let refused = set_parameter(
        me,
        "safety.max_velocity_scaling",
        ParameterValue {
            r#type: parameter_type::DOUBLE,
            double_value: 1.0,
            ..Default::default()
        },
    )
    .await;
    assert!(
        !refused.successful && refused.reason.contains("read-only"),
        "{refused:?}"
    );
    let set = set_parameter(me, "when_busy", string_value("reject")).await;
    assert!(set.successful, "{set:?}");
    // the node says so on /rosout, as on its console
    let said = tokio::time::timeout(std::time::Duration::from_secs(60), async {
        loop {
            let line = rosout.recv().await.unwrap();
            if line.msg.contains("agent_node.when_busy set") {
                return line;
            }
        }
    })
    .await
    .expect("the change on /rosout");
    assert_eq!((said.level, said.name.as_str()), (Log::INFO, "agent_node"));
    let service = std::sync::Arc::new(
        me.client::<ExecuteGoal>(asp_nodes::names::EXECUTE_GOAL_SERVICE)
            .unwrap(),
    );
    let running = {
        let service = service.clone();
        tokio::spawn(async move {
            service
                .call(ExecuteGoalRequest {
                    goal: "pick up the mug".into(),
                })
                .await
        })
    };
    assert_eq!(calls.recv().await.unwrap(), "srv-1");
    // a client has one call in flight at a time: the second comes from another peer
    let other = client_node(lone.domain);
    let r = other
        .client::<ExecuteGoal>(asp_nodes::names::EXECUTE_GOAL_SERVICE)
        .unwrap()
        .call(ExecuteGoalRequest {
            goal: "pick up the cup".into(),
        })
        .await
        .unwrap();
    assert_eq!(r.error_code, goal_refused::BUSY, "{r:?}");
    assert!(
        r.error_msg.contains("goal srv-1 is running"),
        "{}",
        r.error_msg
    );
    // the action the same
    let result = aborted_action(me, "pick up the cup").await;
    assert_eq!(result.error_code, goal_refused::BUSY, "{result:?}");
    running.abort();
}
