//! Action semantics (Nav2-like) on both backends: the same scenarios run over the
//! in-process bus and over DDS between two participants. A test worker records what it
//! really did, so the tests see that cancelled and preempted work stopped.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use asp_core::FailureKind;
use asp_ros::action::{
    ActionClient, ActionServer, ActionServerOptions, BusyPolicy, GoalContext, GoalHandler,
    GoalOutcome, GoalState,
};
use asp_ros::msg::action_msgs::CancelGoalResponse;
use asp_ros::msg::asp_interfaces::{
    ExecuteGoalAction, ExecuteGoalActionFeedback, ExecuteGoalActionGoal, ExecuteGoalActionResult,
    error_code,
};
use asp_ros::msg::{EndReason, TerminalState};
use asp_ros::transport::ServiceMapping;
use asp_ros::{Node, RosError, Transport};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

const STEP: Duration = Duration::from_millis(150);
const WAIT: Duration = Duration::from_secs(20);

#[derive(Debug, Clone, PartialEq)]
enum Event {
    Started(String),
    Step(String, usize),
    Stopped(String, usize, Option<EndReason>),
    Finished(String),
}

/// Runs `;`-separated steps of `STEP` each; `fail` aborts, `panic` panics, an empty
/// goal is rejected.
#[derive(Clone, Default)]
struct Worker {
    log: Arc<Mutex<Vec<Event>>>,
}

impl Worker {
    fn events(&self) -> Vec<Event> {
        self.log.lock().unwrap().clone()
    }

    fn record(&self, e: Event) {
        self.log.lock().unwrap().push(e);
    }
}

#[async_trait::async_trait]
impl GoalHandler<ExecuteGoalAction> for Worker {
    fn validate(&self, goal: &ExecuteGoalActionGoal) -> Result<(), String> {
        if goal.goal.is_empty() {
            Err("empty goal".into())
        } else {
            Ok(())
        }
    }

    async fn execute(
        &self,
        goal: ExecuteGoalActionGoal,
        ctx: GoalContext<ExecuteGoalAction>,
    ) -> GoalOutcome<ExecuteGoalActionResult> {
        let id = goal.goal.clone();
        self.record(Event::Started(id.clone()));
        for (i, s) in goal.goal.split(';').enumerate() {
            self.record(Event::Step(id.clone(), i + 1));
            tokio::select! {
                _ = ctx.cancelled() => {
                    self.record(Event::Stopped(id.clone(), i + 1, ctx.stop_reason()));
                    return ctx.stopped_outcome();
                }
                _ = tokio::time::sleep(STEP) => {}
            }
            match s {
                "fail" => {
                    return GoalOutcome::Aborted(ExecuteGoalActionResult {
                        success: false,
                        error_code: error_code(FailureKind::Execution),
                        error_msg: format!("step {} failed", i + 1),
                        summary: String::new(),
                    });
                }
                "panic" => panic!("the worker panicked on purpose"),
                _ => {}
            }
            ctx.publish_feedback(ExecuteGoalActionFeedback {
                step: (i + 1) as u32,
                tool_call: s.to_string(),
                success: true,
                outcome: "ok".into(),
                ..ExecuteGoalActionFeedback::default()
            })
            .unwrap();
        }
        self.record(Event::Finished(id));
        GoalOutcome::Succeeded(ExecuteGoalActionResult {
            success: true,
            summary: format!("{} done", goal.goal),
            ..ExecuteGoalActionResult::default()
        })
    }
}

enum Backend {
    Local,
    Dds,
}

struct Setup {
    server_node: Node,
    client_node: Node,
    _transports: (Transport, Transport),
}

fn setup(backend: Backend) -> Setup {
    let (a, b) = match backend {
        Backend::Local => {
            let t = Transport::in_process_with(common::settings(0, ServiceMapping::FastDds));
            (t.clone(), t)
        }
        Backend::Dds => common::dds_pair(ServiceMapping::FastDds),
    };
    Setup {
        server_node: a.node("server").unwrap(),
        client_node: b.node("client").unwrap(),
        _transports: (a, b),
    }
}

impl Setup {
    /// A client of the action [`serve`] serves.
    fn client(&self) -> ActionClient<ExecuteGoalAction> {
        self.client_node
            .action_client::<ExecuteGoalAction>("/test/execute")
            .unwrap()
    }
}

fn serve(
    s: &Setup,
    worker: &Worker,
    options: ActionServerOptions,
) -> ActionServer<ExecuteGoalAction> {
    s.server_node
        .action_server::<ExecuteGoalAction, _>("/test/execute", options, worker.clone())
        .unwrap()
}

fn goal(text: &str) -> ExecuteGoalActionGoal {
    ExecuteGoalActionGoal { goal: text.into() }
}

/// Events of one goal.
fn of(events: &[Event], id: &str) -> Vec<Event> {
    events
        .iter()
        .filter(|e| match e {
            Event::Started(g) | Event::Step(g, _) | Event::Stopped(g, ..) | Event::Finished(g) => {
                g == id
            }
        })
        .cloned()
        .collect()
}

async fn success_with_feedback(backend: Backend) {
    let s = setup(backend);
    let worker = Worker::default();
    let _server = serve(&s, &worker, ActionServerOptions::default());
    let client = s.client();
    let mut handle = client.send_goal(goal("a;b;c")).await.unwrap();
    let mut steps = Vec::new();
    while let Some(f) = handle.feedback().await {
        steps.push((f.step, f.tool_call));
    }
    assert_eq!(
        steps,
        vec![(1, "a".to_string()), (2, "b".into()), (3, "c".into())]
    );
    let r = handle.result().await.unwrap();
    assert_eq!(r.state, TerminalState::Succeeded);
    assert!(r.result.success);
    assert_eq!(r.result.summary, "a;b;c done");
    assert_eq!(
        worker.events(),
        vec![
            Event::Started("a;b;c".into()),
            Event::Step("a;b;c".into(), 1),
            Event::Step("a;b;c".into(), 2),
            Event::Step("a;b;c".into(), 3),
            Event::Finished("a;b;c".into()),
        ]
    );
}

async fn rejected_at_once(backend: Backend) {
    let s = setup(backend);
    let worker = Worker::default();
    let _server = serve(&s, &worker, ActionServerOptions::default());
    let client = s.client();
    let e = client.send_goal(goal("")).await.unwrap_err();
    assert!(matches!(e, RosError::GoalRejected { .. }), "{e}");
    assert!(e.to_string().contains("/test/execute"), "{e}");
    assert!(worker.events().is_empty(), "rejected work must not start");
    // the server still takes the next goal
    let r = client
        .send_goal(goal("x"))
        .await
        .unwrap()
        .result()
        .await
        .unwrap();
    assert_eq!(r.state, TerminalState::Succeeded);
}

async fn cancel_stops_the_work(backend: Backend) {
    let s = setup(backend);
    let worker = Worker::default();
    let _server = serve(&s, &worker, ActionServerOptions::default());
    let client = s.client();
    let id = "a;b;c;d;e;f;g;h";
    let mut handle = client.send_goal(goal(id)).await.unwrap();
    let first = handle.feedback().await.unwrap();
    assert_eq!(first.step, 1);
    let response = handle.cancel().await.unwrap();
    assert_eq!(response.return_code, CancelGoalResponse::ERROR_NONE);
    assert_eq!(response.goals_canceling.len(), 1);
    assert_eq!(response.goals_canceling[0].goal_id, handle.id());
    let state = handle
        .wait_for_state(GoalState::Canceled, WAIT)
        .await
        .unwrap();
    assert_eq!(state, GoalState::Canceled);
    let again = handle.cancel().await.unwrap();
    assert_eq!(again.return_code, CancelGoalResponse::ERROR_GOAL_TERMINATED);
    let r = handle.result().await.unwrap();
    assert_eq!(r.state, TerminalState::Canceled);
    assert_eq!(r.result.error_code, error_code(FailureKind::Cancelled));
    // the work really stopped: no step after the stop, even a while later
    tokio::time::sleep(STEP * 3).await;
    let events = of(&worker.events(), id);
    let stop = events
        .iter()
        .position(|e| matches!(e, Event::Stopped(_, _, Some(EndReason::Canceled))))
        .unwrap_or_else(|| panic!("no stop in {events:?}"));
    assert_eq!(
        stop,
        events.len() - 1,
        "work went on after the cancel: {events:?}"
    );
    assert!(!events.contains(&Event::Finished(id.into())));
    let steps = events
        .iter()
        .filter(|e| matches!(e, Event::Step(..)))
        .count();
    assert!(steps < 8, "all steps ran: {events:?}");
}

async fn new_goal_preempts_the_running_one(backend: Backend) {
    let s = setup(backend);
    let worker = Worker::default();
    let _server = serve(&s, &worker, ActionServerOptions::default());
    let client = s.client();
    let (a, b) = ("a1;a2;a3;a4;a5;a6;a7;a8", "b1;b2");
    let mut first = client.send_goal(goal(a)).await.unwrap();
    first.feedback().await.unwrap();
    let second = client.send_goal(goal(b)).await.unwrap();
    let r1 = first.result().await.unwrap();
    assert_eq!(
        r1.state,
        TerminalState::Aborted,
        "a preempted goal ends ABORTED"
    );
    assert_eq!(r1.result.error_code, error_code(FailureKind::Cancelled));
    let r2 = second.result().await.unwrap();
    assert_eq!(r2.state, TerminalState::Succeeded);
    let events = worker.events();
    let a_stopped = events
        .iter()
        .position(|e| matches!(e, Event::Stopped(g, _, Some(EndReason::Preempted)) if g == a))
        .unwrap_or_else(|| panic!("{events:?}"));
    let b_started = events
        .iter()
        .position(|e| *e == Event::Started(b.into()))
        .unwrap();
    assert!(
        a_stopped < b_started,
        "the new goal started before the old one stopped: {events:?}"
    );
    assert!(!events.contains(&Event::Finished(a.into())));
}

async fn busy_server_rejects_when_configured(backend: Backend) {
    let s = setup(backend);
    let worker = Worker::default();
    let _server = serve(
        &s,
        &worker,
        ActionServerOptions::default().with_busy(BusyPolicy::Reject),
    );
    let client = s.client();
    let mut first = client.send_goal(goal("a;b;c")).await.unwrap();
    first.feedback().await.unwrap();
    let e = client.send_goal(goal("other")).await.unwrap_err();
    assert!(matches!(e, RosError::GoalRejected { .. }), "{e}");
    assert_eq!(
        first.result().await.unwrap().state,
        TerminalState::Succeeded
    );
    assert!(of(&worker.events(), "other").is_empty());
}

async fn busy_server_queues_when_configured(backend: Backend) {
    let s = setup(backend);
    let worker = Worker::default();
    let _server = serve(
        &s,
        &worker,
        ActionServerOptions::default().with_busy(BusyPolicy::Queue),
    );
    let client = s.client();
    let mut first = client
        .send_goal(goal("a1;a2;a3;a4;a5;a6;a7;a8"))
        .await
        .unwrap();
    first.feedback().await.unwrap();
    // (the first goal's remaining steps leave the cancel below a second to arrive)
    // accepted behind it, in order; the middle one is cancelled while it waits
    let second = client.send_goal(goal("b1")).await.unwrap();
    let third = client.send_goal(goal("c1")).await.unwrap();
    let fourth = client.send_goal(goal("d1")).await.unwrap();
    third.cancel().await.unwrap();
    let r3 = third.result().await.unwrap();
    assert_eq!(r3.state, TerminalState::Canceled);
    for handle in [first, second, fourth] {
        let r = handle.result().await.unwrap();
        assert_eq!(r.state, TerminalState::Succeeded, "{:?}", r.result);
    }
    let events = worker.events();
    assert!(
        of(&events, "c1").is_empty(),
        "a cancelled queued goal ran: {events:?}"
    );
    let order: Vec<&Event> = events
        .iter()
        .filter(|e| matches!(e, Event::Started(_) | Event::Finished(_)))
        .collect();
    assert_eq!(
        order,
        [
            &Event::Started("a1;a2;a3;a4;a5;a6;a7;a8".into()),
            &Event::Finished("a1;a2;a3;a4;a5;a6;a7;a8".into()),
            &Event::Started("b1".into()),
            &Event::Finished("b1".into()),
            &Event::Started("d1".into()),
            &Event::Finished("d1".into()),
        ],
        "queued goals run one at a time, first come first served"
    );
}

async fn failures_abort_with_a_code(backend: Backend) {
    let s = setup(backend);
    let worker = Worker::default();
    let _server = serve(&s, &worker, ActionServerOptions::default());
    let client = s.client();
    let r = client
        .send_goal(goal("a;fail;c"))
        .await
        .unwrap()
        .result()
        .await
        .unwrap();
    assert_eq!(r.state, TerminalState::Aborted);
    assert_eq!(r.result.error_code, error_code(FailureKind::Execution));
    assert_eq!(r.result.error_msg, "step 2 failed");
    let r = client
        .send_goal(goal("a;panic"))
        .await
        .unwrap()
        .result()
        .await
        .unwrap();
    assert_eq!(
        r.state,
        TerminalState::Aborted,
        "a panicking handler aborts its goal"
    );
    assert_eq!(r.result.error_code, error_code(FailureKind::Internal));
    assert!(
        r.result.error_msg.contains("handler failed"),
        "{}",
        r.result.error_msg
    );
    // the server survives both
    let r = client
        .send_goal(goal("ok"))
        .await
        .unwrap()
        .result()
        .await
        .unwrap();
    assert_eq!(r.state, TerminalState::Succeeded);
}

async fn execute_turns_a_cancelled_token_into_a_cancel(backend: Backend) {
    let s = setup(backend);
    let worker = Worker::default();
    let _server = serve(&s, &worker, ActionServerOptions::default());
    let client = s.client();
    let token = CancellationToken::new();
    let mut seen = Vec::new();
    let t2 = token.clone();
    let r = client
        .execute(goal("a;b;c;d;e;f;g;h"), &token, |f| {
            seen.push(f.step);
            t2.cancel();
        })
        .await
        .unwrap();
    assert_eq!(r.state, TerminalState::Canceled);
    assert_eq!(seen.first(), Some(&1));
    assert!(seen.len() < 8);
}

async fn estop_aborts_and_rejects(backend: Backend) {
    let s = setup(backend);
    let worker = Worker::default();
    let (estop, estop_rx) = watch::channel(false);
    let _server = serve(
        &s,
        &worker,
        ActionServerOptions {
            estop: Some(estop_rx),
            ..ActionServerOptions::default()
        },
    );
    let client = s.client();
    let mut running = client.send_goal(goal("a;b;c;d;e;f")).await.unwrap();
    running.feedback().await.unwrap();
    estop.send(true).unwrap();
    let r = running.result().await.unwrap();
    assert_eq!(r.state, TerminalState::Aborted);
    assert!(
        worker
            .events()
            .iter()
            .any(|e| matches!(e, Event::Stopped(_, _, Some(EndReason::EStop))))
    );
    let e = client.send_goal(goal("x")).await.unwrap_err();
    assert!(matches!(e, RosError::GoalRejected { .. }), "{e}");
    estop.send(false).unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    let r = client
        .send_goal(goal("y"))
        .await
        .unwrap()
        .result()
        .await
        .unwrap();
    assert_eq!(r.state, TerminalState::Succeeded);
}

/// The node that sent the goal died: the running goal stops (nobody supervises it), and
/// the next goal is taken as usual.
async fn a_lost_client_stops_its_goals(backend: Backend) {
    let s = setup(backend);
    let worker = Worker::default();
    let (lost, lost_rx) = watch::channel(0u64);
    let _server = serve(
        &s,
        &worker,
        ActionServerOptions {
            client_lost: Some(lost_rx),
            ..ActionServerOptions::default()
        },
    );
    let client = s.client();
    let mut running = client.send_goal(goal("a;b;c;d;e;f")).await.unwrap();
    running.feedback().await.unwrap();
    lost.send_modify(|n| *n += 1);
    let r = running.result().await.unwrap();
    assert_eq!(r.state, TerminalState::Aborted);
    assert!(
        worker
            .events()
            .iter()
            .any(|e| matches!(e, Event::Stopped(_, _, Some(EndReason::ClientLost))))
    );
    let r = client
        .send_goal(goal("y"))
        .await
        .unwrap()
        .result()
        .await
        .unwrap();
    assert_eq!(r.state, TerminalState::Succeeded);
}

async fn shutdown_ends_running_goals(backend: Backend) {
    let s = setup(backend);
    let worker = Worker::default();
    let server = serve(&s, &worker, ActionServerOptions::default());
    let client = s.client();
    let mut running = client.send_goal(goal("a;b;c;d;e;f")).await.unwrap();
    running.feedback().await.unwrap();
    let waiter = tokio::spawn(async move { running.result().await });
    tokio::time::sleep(Duration::from_millis(20)).await;
    server.shutdown().await;
    let r = waiter.await.unwrap().unwrap();
    assert_eq!(r.state, TerminalState::Aborted);
    assert!(
        worker
            .events()
            .iter()
            .any(|e| matches!(e, Event::Stopped(_, _, Some(EndReason::Shutdown))))
    );
}

/// Finished goals are kept up to `max_finished_goals`, the oldest forgotten first: the
/// status array lists the newest ones only (a robot that takes goal after goal keeps
/// no growing table of results).
async fn finished_goals_are_kept_up_to_the_bound(backend: Backend) {
    use asp_ros::msg::action_msgs::{GoalStatus, GoalStatusArray};
    let s = setup(backend);
    let worker = Worker::default();
    let _server = serve(
        &s,
        &worker,
        ActionServerOptions {
            max_finished_goals: 2,
            ..ActionServerOptions::default()
        },
    );
    let client = s.client();
    let mut ids = Vec::new();
    for text in ["a", "b", "c"] {
        let handle = client.send_goal(goal(text)).await.unwrap();
        ids.push(handle.id());
        let r = handle.result().await.unwrap();
        assert_eq!(r.state, TerminalState::Succeeded);
    }
    let mut status = s
        .client_node
        .subscribe::<GoalStatusArray>("/test/execute/_action/status", asp_ros::Qos::latched())
        .unwrap();
    // the array published when the last goal ended (a late reader of the latched
    // topic may get older ones first: the last goal running, two finished before it)
    let kept = tokio::time::timeout(WAIT, async {
        loop {
            let a = status.recv().await.unwrap();
            let last_ended = a
                .status_list
                .iter()
                .any(|g| g.goal_info.goal_id == ids[2] && g.status == GoalStatus::STATUS_SUCCEEDED);
            if last_ended {
                return a
                    .status_list
                    .iter()
                    .map(|g| g.goal_info.goal_id)
                    .collect::<Vec<_>>();
            }
        }
    })
    .await
    .expect("no status array with the last goal ended");
    assert_eq!(kept, ids[1..].to_vec(), "the two newest goals, in order");
}

macro_rules! both {
    ($($name:ident),* $(,)?) => {
        mod in_process {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(super::Backend::Local).await
                }
            )*
        }
        mod dds {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(super::Backend::Dds).await
                }
            )*
        }
    };
}

both!(
    success_with_feedback,
    rejected_at_once,
    cancel_stops_the_work,
    new_goal_preempts_the_running_one,
    busy_server_rejects_when_configured,
    busy_server_queues_when_configured,
    failures_abort_with_a_code,
    execute_turns_a_cancelled_token_into_a_cancel,
    estop_aborts_and_rejects,
    a_lost_client_stops_its_goals,
    shutdown_ends_running_goals,
    finished_goals_are_kept_up_to_the_bound,
);

/// A node on simulated time stamps what it accepts with the last `/clock` message: the
/// goal's `GoalInfo.stamp` in the status array is the simulation's time, not the wall
/// clock's (a client's cancel-by-stamp then compares like with like).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_on_simulated_time_stamps_goals_with_the_clock_topic() {
    use asp_ros::msg::action_msgs::GoalStatusArray;
    use asp_ros::msg::builtin_interfaces::Time;
    use asp_ros::msg::rosgraph_msgs::Clock;
    let s = setup(Backend::Dds);
    assert!(s.server_node.now().sec > 1_600_000_000, "the system clock");
    s.server_node.use_sim_time().unwrap();
    assert_eq!(s.server_node.now(), Time::default(), "zero until /clock");
    let clock = s
        .client_node
        .publisher::<Clock>("/clock", asp_ros::Qos::default_reliable().with_depth(1))
        .unwrap();
    clock.wait_for_subscribers().await.unwrap();
    let t = Time {
        sec: 1234,
        nanosec: 500_000_000,
    };
    // as a simulator does, again and again (the node's subscription is best effort)
    tokio::time::timeout(WAIT, async {
        while s.server_node.now() != t {
            clock.publish(Clock { clock: t }).unwrap();
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the node never read /clock");

    let worker = Worker::default();
    let _server = serve(&s, &worker, ActionServerOptions::default());
    let mut status = s
        .client_node
        .subscribe::<GoalStatusArray>("/test/execute/_action/status", asp_ros::Qos::latched())
        .unwrap();
    let handle = s.client().send_goal(goal("a")).await.unwrap();
    let id = handle.id();
    let stamp = tokio::time::timeout(WAIT, async {
        loop {
            let a = status.recv().await.unwrap();
            if let Some(g) = a.status_list.iter().find(|g| g.goal_info.goal_id == id) {
                return g.goal_info.stamp;
            }
        }
    })
    .await
    .expect("no status for the goal");
    assert_eq!(stamp, t);
    assert_eq!(
        handle.result().await.unwrap().state,
        TerminalState::Succeeded
    );
}
