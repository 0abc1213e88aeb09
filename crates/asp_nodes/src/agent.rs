//! agent_node: the agent over [`GraphBackend`], whose ports are the ROS clients of the
//! other nodes. Serves `/asp/execute_goal` (run a goal to the end) and the `/asp/execute`
//! action (one feedback message per tool call; cancel stops the running skill or
//! navigation), and publishes the symbolic state on `/asp/state` (latched) after every
//! tool call. One policy (`agent_node.when_busy`) holds for goals from the service and
//! the action alike: a new goal preempts the running one (as Nav2 does; the preempted
//! result names the newer goal) or is refused with code 24.
//!
//! It also watches the heartbeats of the nodes its goals need
//! ([`crate::supervision`]): one that dies ends the running goal at once with code 25
//! naming it, and the robot's motion goals are cancelled; a goal that arrives while one
//! is lost waits for it to come back (bounded), and `/asp/ready` says false meanwhile.
//!
//! A goal's `success` is the verifier's word, not the agent's: it is true only when the
//! agent completed the goal and the last outcome check passed
//! ([`asp_system::verified_success`]).

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use asp_agent::GoalGrammar;
use asp_agent::{Agent, AgentEvent, EventSink, GoalReport, GoalStatus, StateSink};
use asp_config::LoadedConfig;
use asp_config::sections::agent::WhenBusy;
use asp_core::robot::CancellationToken;
use asp_core::{FailureKind, State};
use asp_ros::action::{
    ActionServer, ActionServerOptions, BusyPolicy, ExternalGoals, GoalContext, GoalHandler,
    GoalOutcome,
};
use asp_ros::lifecycle::PrimaryState;
use asp_ros::liveliness::{LivelinessMonitor, Peer};
use asp_ros::msg::action_msgs::GoalInfo;
use asp_ros::msg::asp_interfaces::ObjectMapSummary;
use asp_ros::msg::asp_interfaces::{
    ExecuteGoal, ExecuteGoalAction, ExecuteGoalActionFeedback, ExecuteGoalActionGoal,
    ExecuteGoalActionResult, ExecuteGoalRequest, ExecuteGoalResponse, SymbolicState, error_code,
    goal_refused,
};
use asp_ros::msg::builtin_interfaces::Time;
use asp_ros::msg::std_msgs::{Bool, Header};
use asp_ros::msg::unique_identifier_msgs::UUID;
use asp_ros::params::ParamValue;
use asp_ros::transport::{Publisher, Recorded, RequestRecord, RosClock, ServiceServer};
use asp_ros::{Qos, Transport};
use asp_system::{GraphBackend, Journal, NavigationPort, verified_success};
use async_trait::async_trait;
use tokio::sync::{mpsc, watch};
use tracing::{info, warn};

use crate::affordance::AffordanceClient;
use crate::estop::EStopBinding;
use crate::goto::GoToClient;
use crate::map::ObjectMapClient;
use crate::names;
use crate::params::{Settable, StandardServices, serve_standard};
use crate::request_file::{OpenWork, RequestFile};
use crate::skill::SkillClient;
use crate::supervision::{RobotHold, heartbeat_settings, required_nodes};
use crate::{AbortOnDrop, NodeError};

/// Publishes the symbolic state on `/asp/state`.
struct StatePublisher {
    publisher: Publisher<SymbolicState>,
}

impl StateSink for StatePublisher {
    fn publish(&self, _goal_id: &str, state: &State) {
        let msg = SymbolicState::from_state(state, Header::new(self.publisher.now(), ""));
        if let Err(e) = self.publisher.publish(msg) {
            warn!("cannot publish {}: {e}", names::STATE_TOPIC);
        }
    }
}

/// `tool(key=value, …)` for feedback.
pub fn call_text(tool: &str, args: &serde_json::Value) -> String {
    format!("{tool}({})", asp_agent::args_text(args))
}

/// Routes the agent's events to the feedback of the goal they belong to.
#[derive(Default)]
struct FeedbackRouter {
    /// Stamps the feedback's state (the node's clock).
    clock: RosClock,
    goals: Mutex<HashMap<String, mpsc::UnboundedSender<ExecuteGoalActionFeedback>>>,
    calls: Mutex<HashMap<(String, u32), String>>,
    /// In-process watchers of every event (`asp run` prints them).
    watchers: Mutex<Vec<Arc<dyn EventSink>>>,
}

impl FeedbackRouter {
    fn register(&self, goal_id: &str) -> mpsc::UnboundedReceiver<ExecuteGoalActionFeedback> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.goals
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(goal_id.to_owned(), tx);
        rx
    }

    fn unregister(&self, goal_id: &str) {
        self.goals
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(goal_id);
        self.calls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .retain(|(g, _), _| g != goal_id);
    }
}

impl EventSink for FeedbackRouter {
    fn emit(&self, event: &AgentEvent) {
        let watchers = self
            .watchers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        for w in &watchers {
            w.emit(event);
        }
        let mut calls = self
            .calls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match event {
            AgentEvent::ToolCalled {
                goal_id,
                index,
                tool,
                args,
                ..
            } => {
                calls.insert((goal_id.clone(), *index), call_text(tool, args));
            }
            AgentEvent::ToolFinished {
                goal_id,
                index,
                tool,
                output,
                state,
                ..
            } => {
                let tool_call = calls
                    .remove(&(goal_id.clone(), *index))
                    .unwrap_or_else(|| format!("{tool}(…)"));
                let feedback = ExecuteGoalActionFeedback {
                    step: *index,
                    tool_call,
                    success: output.success,
                    outcome: output.feedback_msg.clone(),
                    state: SymbolicState::from_state(state, Header::new(self.clock.now(), "")),
                };
                drop(calls);
                if let Some(tx) = self
                    .goals
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .get(goal_id)
                {
                    let _ = tx.send(feedback);
                }
            }
            _ => {}
        }
    }
}

/// What a goal's result says: success (verified), error code, error message, summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoalAnswer {
    pub success: bool,
    pub error_code: u16,
    pub error_msg: String,
    pub summary: String,
}

impl From<GoalAnswer> for ExecuteGoalResponse {
    fn from(a: GoalAnswer) -> Self {
        Self {
            success: a.success,
            error_code: a.error_code,
            error_msg: a.error_msg,
            summary: a.summary,
        }
    }
}

impl From<GoalAnswer> for ExecuteGoalActionResult {
    fn from(a: GoalAnswer) -> Self {
        Self {
            success: a.success,
            error_code: a.error_code,
            error_msg: a.error_msg,
            summary: a.summary,
        }
    }
}

/// The answer for a finished goal (see the module notes on success).
pub fn answer(report: &GoalReport) -> GoalAnswer {
    let last_failure = report.events.iter().rev().find_map(|e| match e {
        AgentEvent::ToolFinished { output, .. } if !output.success => {
            output.failure.as_ref().map(|f| f.kind)
        }
        _ => None,
    });
    let (success, kind, msg) = match &report.status {
        GoalStatus::Completed if verified_success(report) => (true, None, String::new()),
        GoalStatus::Completed => (
            false,
            Some(FailureKind::Verification),
            "the agent finished, but no outcome check of the verifier confirmed it".to_owned(),
        ),
        GoalStatus::Failed { error } => {
            use asp_agent::GoalErrorCode as C;
            if let Some(code) = refusal_code(error.code) {
                return GoalAnswer {
                    success: false,
                    error_code: code,
                    error_msg: error.message.clone(),
                    summary: report.summary.clone(),
                };
            }
            let kind = match error.code {
                C::Unplannable => FailureKind::InvalidArgument,
                C::ModelUnavailable | C::MalformedOutput | C::ModelGaveUp => {
                    last_failure.unwrap_or(FailureKind::Internal)
                }
                C::ToolCallCap | C::RetryLimit | C::SubtaskFailed => {
                    last_failure.unwrap_or(FailureKind::Internal)
                }
                C::GoalEmpty
                | C::GoalBlank
                | C::GoalTooLong
                | C::GoalControlCharacter
                | C::GoalNoVerb
                | C::GoalUnsupported
                | C::GoalUnsafe
                | C::GoalNoObject
                | C::GoalUnclear => FailureKind::InvalidArgument,
            };
            (false, Some(kind), error.message.clone())
        }
        GoalStatus::Cancelled => (
            false,
            Some(FailureKind::Cancelled),
            "the goal was cancelled".to_owned(),
        ),
    };
    GoalAnswer {
        success,
        error_code: kind.map_or(0, error_code),
        error_msg: msg,
        summary: report.summary.clone(),
    }
}

/// The ExecuteGoal `error_code` of a goal refused before planning; `None` for other
/// failures.
pub fn refusal_code(code: asp_agent::GoalErrorCode) -> Option<u16> {
    use asp_agent::GoalErrorCode as C;
    Some(match code {
        C::GoalEmpty => goal_refused::EMPTY,
        C::GoalBlank => goal_refused::BLANK,
        C::GoalTooLong => goal_refused::TOO_LONG,
        C::GoalControlCharacter => goal_refused::CONTROL_CHARACTER,
        C::GoalNoVerb => goal_refused::NO_VERB,
        C::GoalUnsupported => goal_refused::UNSUPPORTED,
        C::GoalUnsafe => goal_refused::UNSAFE,
        C::GoalNoObject => goal_refused::NO_OBJECT,
        C::GoalUnclear => goal_refused::UNCLEAR,
        _ => return None,
    })
}

/// The answer to a goal that arrives while the e-stop is engaged, if it is.
fn refused_while_stopped(estop: &watch::Receiver<bool>, topic: &str) -> Option<GoalAnswer> {
    (*estop.borrow()).then(|| GoalAnswer {
        success: false,
        error_code: goal_refused::ESTOP,
        error_msg: format!(
            "the e-stop ({topic}) is engaged: no goal starts until it is released (publish false)"
        ),
        summary: "refused: e-stop engaged".to_owned(),
    })
}

/// The answer to a goal that arrives while agent_node is not active (lifecycle).
fn refused_while_inactive(state: PrimaryState) -> Option<GoalAnswer> {
    (state != PrimaryState::Active).then(|| GoalAnswer {
        success: false,
        error_code: goal_refused::INACTIVE,
        error_msg: format!(
            "agent_node is {state}, not active (lifecycle): no goal starts until `ros2 lifecycle set /agent_node activate`"
        ),
        summary: format!("refused: agent_node is {state}"),
    })
}

/// One policy for goals from the service and the action alike
/// (`agent_node.when_busy`): a new goal preempts the running ones or is refused while
/// one runs. The agent runs one goal at a time; a preempted goal ends at its next
/// cancellation point (a tool call in flight is stopped), and its result names the goal
/// that preempted it.
struct GoalArbiter {
    /// `agent_node.when_busy`, settable while serving (`ros2 param set`).
    policy: watch::Receiver<WhenBusy>,
    running: Mutex<Vec<Admitted>>,
    /// Under `queue`: the waiting goals' order (the lock is fair).
    queue: tokio::sync::Mutex<()>,
    /// Told each time a goal stops running.
    ended: tokio::sync::Notify,
    /// How many goals wait for their turn (`queue`).
    waiting: watch::Sender<usize>,
    /// The service goals among them, for the action's cancel requests: id, what the
    /// requests know it by, and what stops its wait.
    queued: Mutex<Vec<(String, GoalInfo, CancellationToken)>>,
}

/// A goal let in: its cancellation (the caller's, and the arbiter's on preemption) and
/// who preempted it.
#[derive(Clone)]
struct Admitted {
    id: String,
    cancel: CancellationToken,
    preempted_by: Arc<Mutex<Option<String>>>,
    /// A service goal: the id and time the action's cancel requests know it by.
    service: Option<GoalInfo>,
    /// Cancelled by a request to the action's `cancel_goal`.
    cancel_requested: Arc<AtomicBool>,
    /// Ended from outside the goal (a node it needs died, agent_node was
    /// deactivated): the code and what happened.
    fault: Arc<watch::Sender<Option<(u16, String)>>>,
}

impl Admitted {
    /// Resolves with the code and what happened when the goal is ended from outside.
    async fn faulted(&self) -> (u16, String) {
        let mut rx = self.fault.subscribe();
        let what = rx
            .wait_for(Option::is_some)
            .await
            .map(|w| w.clone().unwrap_or_default());
        match what {
            Ok(what) => what,
            // the goal is gone: nothing will fault it
            Err(_) => std::future::pending().await,
        }
    }
}

/// The id a service goal is known by to the action's cancel requests: "srv" and its
/// number, so that it reads as what it is in a `cancel_goal` response.
fn service_goal_uuid(n: u64) -> UUID {
    let mut uuid = [0u8; 16];
    uuid[..3].copy_from_slice(b"srv");
    uuid[8..].copy_from_slice(&n.to_be_bytes());
    UUID { uuid }
}

impl GoalArbiter {
    fn new(policy: watch::Receiver<WhenBusy>) -> Self {
        Self {
            policy,
            running: Mutex::new(Vec::new()),
            queue: tokio::sync::Mutex::new(()),
            ended: tokio::sync::Notify::new(),
            waiting: watch::channel(0).0,
            queued: Mutex::new(Vec::new()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Admitted>> {
        self.running
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Lets goal `id` in under the policy (cancelled with `outer` too), or refuses it.
    /// Under `queue` it waits for its turn: after the goals that came before it.
    async fn admit(
        &self,
        id: &str,
        outer: &CancellationToken,
        service: Option<GoalInfo>,
    ) -> Result<Admitted, GoalAnswer> {
        if *self.policy.borrow() != WhenBusy::Queue
            && let Some(admitted) = self.try_admit(id, outer, service.clone())?
        {
            return Ok(admitted);
        }
        // `queue` (perhaps set just now): wait like the goals before
        let waiting = outer.child_token();
        if let Some(info) = &service {
            self.queued_goals()
                .push((id.to_owned(), info.clone(), waiting.clone()));
        }
        self.waiting.send_modify(|n| *n += 1);
        let admitted = self.wait_turn(id, &waiting, outer, service).await;
        self.waiting.send_modify(|n| *n -= 1);
        self.queued_goals().retain(|(q, _, _)| q != id);
        admitted
    }

    fn queued_goals(
        &self,
    ) -> std::sync::MutexGuard<'_, Vec<(String, GoalInfo, CancellationToken)>> {
        self.queued
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Under `queue`: waits until the goals before goal `id` have ended, or `waiting`
    /// is cancelled.
    async fn wait_turn(
        &self,
        id: &str,
        waiting: &CancellationToken,
        outer: &CancellationToken,
        service: Option<GoalInfo>,
    ) -> Result<Admitted, GoalAnswer> {
        let _turn = tokio::select! {
            turn = self.queue.lock() => turn,
            () = waiting.cancelled() => return Err(cancelled_in_queue()),
        };
        loop {
            let ended = self.ended.notified();
            tokio::pin!(ended);
            ended.as_mut().enable();
            if let Some(admitted) = self.try_admit(id, outer, service.clone())? {
                return Ok(admitted);
            }
            if let Some(other) = self.lock().first() {
                info!(goal = id, after = %other.id, "goal queued");
            }
            tokio::select! {
                () = ended => {}
                () = waiting.cancelled() => return Err(cancelled_in_queue()),
            }
        }
    }

    /// [`Self::admit`] now: `None` when the goal is to wait (`queue`, another runs).
    fn try_admit(
        &self,
        id: &str,
        outer: &CancellationToken,
        service: Option<GoalInfo>,
    ) -> Result<Option<Admitted>, GoalAnswer> {
        let mut running = self.lock();
        if let Some(other) = running.first() {
            let policy = *self.policy.borrow();
            match policy {
                WhenBusy::Queue => return Ok(None),
                WhenBusy::Reject => {
                    return Err(GoalAnswer {
                        success: false,
                        error_code: goal_refused::BUSY,
                        error_msg: format!(
                            "goal {} is running and agent_node.when_busy is reject: cancel it or wait for its result",
                            other.id
                        ),
                        summary: "refused: another goal runs".to_owned(),
                    });
                }
                WhenBusy::Preempt => {
                    for r in running.iter() {
                        *r.preempted_by
                            .lock()
                            .unwrap_or_else(std::sync::PoisonError::into_inner) =
                            Some(id.to_owned());
                        r.cancel.cancel();
                        info!(preempted = %r.id, by = id, "goal preempted");
                    }
                }
            }
        }
        let admitted = Admitted {
            id: id.to_owned(),
            cancel: outer.child_token(),
            preempted_by: Arc::new(Mutex::new(None)),
            service,
            cancel_requested: Arc::new(AtomicBool::new(false)),
            fault: Arc::new(watch::channel(None).0),
        };
        running.push(admitted.clone());
        Ok(Some(admitted))
    }

    /// Every running goal ends with `code` (a node the goals need died, agent_node was
    /// deactivated), its result saying `what`.
    fn end_all(&self, code: u16, what: &str) {
        for r in self.lock().iter() {
            r.fault.send_replace(Some((code, what.to_owned())));
            r.cancel.cancel();
            warn!(goal = %r.id, "goal ended: {what}");
        }
    }

    /// Goal `a` is no longer running.
    fn forget(&self, a: &Admitted) {
        self.lock().retain(|r| r.id != a.id);
        self.ended.notify_waiters();
    }

    /// Goal `a` ended: its answer, saying so when it was preempted or a node it needed
    /// died.
    fn finish(&self, a: &Admitted, mut answer: GoalAnswer) -> GoalAnswer {
        self.forget(a);
        let fault = a.fault.borrow().clone();
        if let Some((code, what)) = fault
            && !answer.success
        {
            return fault_answer(code, what, &answer.summary);
        }
        let by = a
            .preempted_by
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        if let Some(by) = by
            && !answer.success
            && answer.error_code == error_code(FailureKind::Cancelled)
        {
            answer.error_msg = format!("preempted by a newer goal ({by})");
            answer.summary = format!("preempted by {by}; {}", answer.summary);
        } else if a.cancel_requested.load(Ordering::SeqCst)
            && !answer.success
            && answer.error_code == error_code(FailureKind::Cancelled)
        {
            answer.error_msg = format!(
                "the goal was cancelled through {}/_action/cancel_goal",
                names::EXECUTE_ACTION
            );
        }
        answer
    }
}

/// The answer of a queued goal cancelled before its turn.
fn cancelled_in_queue() -> GoalAnswer {
    GoalAnswer {
        success: false,
        error_code: error_code(FailureKind::Cancelled),
        error_msg: "cancelled while it waited for the goals before it".to_owned(),
        summary: "cancelled before it started".to_owned(),
    }
}

/// The answer a previous process of agent_node owes a service client: it died while
/// the goal ran.
fn restarted_answer() -> GoalAnswer {
    GoalAnswer {
        success: false,
        error_code: goal_refused::NODE_DOWN,
        error_msg: "agent_node's process stopped while this goal ran and a new one took its \
                    place; what the robot did of the goal is unknown: look before sending it \
                    again"
            .to_owned(),
        summary: "ended: agent_node restarted".to_owned(),
    }
}

/// agent_node's request record (DDS only: in-process, the clients die with the node),
/// and what the previous process left open, in
/// `<data folder>/open_requests/domain_<id>/<namespace>/<node>.json`.
fn request_record(
    cfg: &LoadedConfig,
    transport: &Transport,
    node: &asp_ros::Node,
) -> Result<Option<(Arc<RequestFile>, OpenWork)>, NodeError> {
    if !transport.is_dds() {
        return Ok(None);
    }
    let path = cfg
        .data_path("open_requests")
        .join(format!("domain_{}", transport.settings().domain_id))
        .join(format!("{}.json", node.name().trim_start_matches('/')));
    let max_age = Duration::from_secs_f64(cfg.config.common.supervision.open_requests_max_age_s);
    let (file, left) = RequestFile::open(&path, max_age).map_err(|source| NodeError::Io {
        what: format!("the request record {}", path.display()),
        source,
    })?;
    if !left.is_empty() {
        warn!(
            requests = left.requests.len(),
            goals = left.goals.len(),
            "the previous agent_node process left goals unfinished: their clients are told it restarted"
        );
    }
    Ok(Some((file, left)))
}

/// The answer of a goal ended from outside with `code` (`what` says why).
fn fault_answer(code: u16, what: String, summary: &str) -> GoalAnswer {
    let why = if code == goal_refused::INACTIVE {
        "ended: agent_node was deactivated"
    } else {
        "ended: a node it needs died"
    };
    GoalAnswer {
        success: false,
        error_code: code,
        error_msg: what,
        summary: if summary.is_empty() {
            why.to_owned()
        } else {
            format!("{why}; {summary}")
        },
    }
}

/// Runs an admitted goal to its answer: the agent's, or at once when a node the goal
/// needs dies. The agent's cancellation of the tool in flight then finishes in the
/// background (a call to a dead server only ends at its timeout); the next goal waits
/// for it, as goals run one at a time. `None`: the goal ended on a fault.
async fn run_admitted(
    agent: Arc<Agent>,
    arbiter: Arc<GoalArbiter>,
    admitted: Admitted,
    id: String,
    goal: String,
) -> (Option<GoalStatus>, GoalAnswer) {
    let (a, arb) = (admitted.clone(), arbiter.clone());
    let work = tokio::spawn(async move {
        let report = agent.run_goal(id, &goal, a.cancel.clone()).await;
        let answer = arbiter.finish(&a, answer(&report));
        info!(goal = %report.goal, success = answer.success, "{}", report.summary);
        (report.status, answer)
    });
    tokio::select! {
        done = work => match done {
            Ok((status, answer)) => (Some(status), answer),
            Err(e) => (None, GoalAnswer {
                success: false,
                error_code: error_code(FailureKind::Internal),
                error_msg: format!("the goal's task ended: {e}"),
                summary: String::new(),
            }),
        },
        (code, what) = admitted.faulted() => {
            // over for its client: a goal after it is not refused as busy
            arb.forget(&admitted);
            (None, fault_answer(code, what, ""))
        }
    }
}

/// The action's cancel requests reach service goals too.
impl ExternalGoals for GoalArbiter {
    fn cancel(&self, goal_id: Option<UUID>, before: Option<Time>) -> Vec<GoalInfo> {
        let selected = |info: &GoalInfo| match (goal_id, before) {
            (None, None) => true,
            (id, stamp) => {
                id.is_some_and(|id| id == info.goal_id)
                    || stamp.is_some_and(|t| info.stamp.as_secs_f64() <= t.as_secs_f64())
            }
        };
        let mut out = Vec::new();
        for (id, info, waiting) in self.queued_goals().iter() {
            if selected(info) {
                waiting.cancel();
                info!(goal = %id, "queued service goal cancelled through the action");
                out.push(info.clone());
            }
        }
        let running = self.lock();
        for r in running.iter() {
            let Some(info) = &r.service else { continue };
            if selected(info) {
                r.cancel_requested.store(true, Ordering::SeqCst);
                r.cancel.cancel();
                info!(goal = %r.id, "service goal cancelled through the action");
                out.push(info.clone());
            }
        }
        out
    }
}

/// What a goal passes before it runs: the e-stop released, the nodes it needs up (a
/// lost one is waited for, up to `common.supervision.node_wait_s`), and the busy
/// policy.
struct Admission {
    estop: watch::Receiver<bool>,
    estop_topic: String,
    lifecycle: watch::Receiver<PrimaryState>,
    peers: watch::Receiver<BTreeMap<String, Peer>>,
    node_wait: Duration,
    arbiter: Arc<GoalArbiter>,
}

impl Admission {
    async fn admit(
        &self,
        id: &str,
        outer: &CancellationToken,
        service: Option<GoalInfo>,
    ) -> Result<Admitted, GoalAnswer> {
        if let Some(refused) = self.refused_now() {
            return Err(refused);
        }
        tokio::select! {
            back = nodes_back(self.peers.clone(), self.node_wait) => back?,
            () = outer.cancelled() => return Err(GoalAnswer {
                success: false,
                error_code: error_code(FailureKind::Cancelled),
                error_msg: "cancelled while it waited for a node to come back".to_owned(),
                summary: "cancelled before it started".to_owned(),
            }),
        }
        if let Some(refused) = self.refused_now() {
            return Err(refused);
        }
        let admitted = self.arbiter.admit(id, outer, service).await?;
        // a queued goal's turn may come after a stop or a deactivation
        if let Some(refused) = self.refused_now() {
            self.arbiter.forget(&admitted);
            return Err(refused);
        }
        Ok(admitted)
    }

    /// The refusal while the e-stop is engaged or agent_node is not active.
    fn refused_now(&self) -> Option<GoalAnswer> {
        refused_while_stopped(&self.estop, &self.estop_topic)
            .or_else(|| refused_while_inactive(*self.lifecycle.borrow()))
    }
}

/// The lost nodes of `peers` with how they were lost.
fn lost_nodes(peers: &BTreeMap<String, Peer>) -> Vec<String> {
    peers
        .iter()
        .filter_map(|(n, p)| match p {
            Peer::Lost { why } => Some(format!("{n} ({why})")),
            _ => None,
        })
        .collect()
}

/// Waits up to `wait` for every lost node to be back; the refusal names those that
/// are not. Nodes never heard are not waited for (a lone agent_node, a graph still
/// starting: their calls wait for discovery as before).
async fn nodes_back(
    mut peers: watch::Receiver<BTreeMap<String, Peer>>,
    wait: Duration,
) -> Result<(), GoalAnswer> {
    let deadline = tokio::time::Instant::now() + wait;
    let mut logged = false;
    loop {
        let lost = lost_nodes(&peers.borrow_and_update());
        if lost.is_empty() {
            return Ok(());
        }
        if !logged {
            info!(
                "a goal waits up to {:.0} s for {}",
                wait.as_secs_f64(),
                lost.join(", ")
            );
            logged = true;
        }
        if !matches!(
            tokio::time::timeout_at(deadline, peers.changed()).await,
            Ok(Ok(()))
        ) {
            return Err(GoalAnswer {
                success: false,
                error_code: goal_refused::NODE_DOWN,
                error_msg: format!(
                    "a node the goal needs is down and did not come back within {:.0} s: {}",
                    wait.as_secs_f64(),
                    lost.join(", ")
                ),
                summary: "refused: a node is down".to_owned(),
            });
        }
    }
}

/// Runs ExecuteGoal action goals on the agent.
struct ExecuteHandler {
    agent: Arc<Agent>,
    router: Arc<FeedbackRouter>,
    admission: Arc<Admission>,
}

#[async_trait]
impl GoalHandler<ExecuteGoalAction> for ExecuteHandler {
    async fn execute(
        &self,
        goal: ExecuteGoalActionGoal,
        ctx: GoalContext<ExecuteGoalAction>,
    ) -> GoalOutcome<ExecuteGoalActionResult> {
        let id = ctx.goal_id().to_string();
        let admitted = match self.admission.admit(&id, ctx.cancellation(), None).await {
            Ok(a) => a,
            Err(a) => {
                warn!("{}: {}", names::EXECUTE_ACTION, a.error_msg);
                return GoalOutcome::Aborted(ExecuteGoalActionResult::from(a));
            }
        };
        let mut feedback = self.router.register(&id);
        let run = async {
            let ended = run_admitted(
                self.agent.clone(),
                self.admission.arbiter.clone(),
                admitted,
                id.clone(),
                goal.goal,
            )
            .await;
            // the feedback queued before the end is forwarded, then forwarding stops
            self.router.unregister(&id);
            ended
        };
        let forward = async {
            while let Some(f) = feedback.recv().await {
                if let Err(e) = ctx.publish_feedback(f) {
                    warn!("{}: feedback: {e}", names::EXECUTE_ACTION);
                }
            }
        };
        let ((status, a), ()) = tokio::join!(run, forward);
        let result = ExecuteGoalActionResult::from(a);
        match status {
            Some(GoalStatus::Cancelled) => GoalOutcome::Canceled(result),
            _ if result.success => GoalOutcome::Succeeded(result),
            _ => GoalOutcome::Aborted(result),
        }
    }
}

/// The running agent_node.
pub struct AgentNode {
    pub agent: Arc<Agent>,
    /// What every backend call found (for reports and tests).
    pub journal: Journal,
    router: Arc<FeedbackRouter>,
    estop: EStopBinding,
    arbiter: Arc<GoalArbiter>,
    _service: ServiceServer,
    _action: ActionServer<ExecuteGoalAction>,
    _standard: StandardServices,
    ready: watch::Receiver<bool>,
    _ready_task: AbortOnDrop,
    _supervisor: AbortOnDrop,
    _monitor: LivelinessMonitor,
}

impl AgentNode {
    /// Whether goals can be taken now, as published on [`names::READY_TOPIC`].
    pub fn ready(&self) -> watch::Receiver<bool> {
        self.ready.clone()
    }

    /// Whether the e-stop is engaged, as this node last heard it.
    pub fn estop(&self) -> watch::Receiver<bool> {
        self.estop.watch()
    }

    /// How many goals wait for their turn (`agent_node.when_busy: queue`).
    pub fn waiting(&self) -> watch::Receiver<usize> {
        self.arbiter.waiting.subscribe()
    }

    /// Shows every event of every goal to `sink` too, from now on.
    pub fn watch(&self, sink: Arc<dyn EventSink>) {
        self.router
            .watchers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(sink);
    }
}

impl std::fmt::Debug for AgentNode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentNode")
            .field("agent", &self.agent)
            .finish_non_exhaustive()
    }
}

/// The offline goal grammar as configured: with the configured text embedder
/// (MiniLM) for words its lists do not know when `agent_node.planner.match_by_meaning`
/// is on and the embedder has meaning (not `hashing`).
pub fn goal_grammar(cfg: &LoadedConfig) -> Result<GoalGrammar, asp_perception::PerceptionError> {
    let planner = &cfg.config.agent_node.planner;
    let embedder = if planner.match_by_meaning {
        asp_perception::factory::semantic_text_embedder(cfg)?
    } else {
        None
    };
    Ok(GoalGrammar::from_config(planner, embedder)?)
}

/// Starts agent_node.
pub async fn agent_node(cfg: &LoadedConfig, transport: &Transport) -> Result<AgentNode, NodeError> {
    let c = &cfg.config;
    let node = transport.node("agent_node")?;
    let map = Arc::new(ObjectMapClient::new(&node)?.with_crops(false));
    let affordance = Arc::new(AffordanceClient::new(&node)?);
    let skills = Arc::new(SkillClient::new(&node)?);
    let navigation = if c.agent_node.mobile {
        Some(Arc::new(GoToClient::new(&node)?) as Arc<dyn NavigationPort>)
    } else {
        None
    };
    let journal = Journal::with_capacity(c.agent_node.limits.journal_entries as usize);
    let backend =
        GraphBackend::new(map, affordance, skills, navigation).with_journal(journal.clone());
    let state = Arc::new(StatePublisher {
        publisher: node.publisher::<SymbolicState>(names::STATE_TOPIC, Qos::latched())?,
    });
    state.publish("", &State::default());
    let router = Arc::new(FeedbackRouter {
        clock: node.clock(),
        ..FeedbackRouter::default()
    });
    let agent = Arc::new(
        Agent::from_config(c, Arc::new(backend))?
            .with_grammar(Arc::new(goal_grammar(cfg)?))
            .with_state_sink(state)
            .with_event_sink(router.clone()),
    );

    let counter = Arc::new(AtomicU64::new(0));
    let (when_busy, policy) = watch::channel(c.agent_node.when_busy);
    let (action_busy, action_policy) = watch::channel(busy_policy(c.agent_node.when_busy));
    let arbiter = Arc::new(GoalArbiter::new(policy));
    let standard = serve_standard(
        &node,
        cfg,
        "agent_node",
        vec![Settable {
            name: "when_busy",
            description: "what a goal that arrives while another runs does: preempt it, be refused with code 24, or wait its turn",
            constraints: "preempt, reject or queue",
            apply: Box::new(move |value| {
                let policy = match value {
                    ParamValue::String(s) => {
                        serde_json::from_value::<WhenBusy>(serde_json::json!(s))
                            .map_err(|_| format!("{s:?} is not preempt, reject or queue"))?
                    }
                    _ => return Err("a string: preempt, reject or queue".to_owned()),
                };
                when_busy.send_replace(policy);
                action_busy.send_replace(busy_policy(policy));
                info!(?policy, "agent_node.when_busy set");
                Ok(())
            }),
        }],
    )?;
    // goals are refused at acceptance while the e-stop is engaged or the node is not
    // active, saying so
    let estop = EStopBinding::from_config(&node, c, transport, Some(standard.lifecycle()))?;
    let estop_topic = c.common.safety.estop_topic.clone();
    // the nodes the goals need: a lost one ends the running goal and holds the robot;
    // so does deactivating agent_node
    let monitor = LivelinessMonitor::new(&node, &heartbeat_settings(cfg), &required_nodes(cfg))?;
    let supervisor = supervise(
        &monitor,
        standard.lifecycle(),
        arbiter.clone(),
        RobotHold::new(&node, cfg)?,
    );
    // no goal is taken before a stop latched earlier is heard
    estop.settled().await;
    let admission = Arc::new(Admission {
        estop: estop.watch(),
        estop_topic,
        lifecycle: standard.lifecycle(),
        peers: monitor.peers(),
        node_wait: Duration::from_secs_f64(c.common.supervision.node_wait_s),
        arbiter: arbiter.clone(),
    });
    // what a previous process of agent_node left open: its clients are told it died
    let record = request_record(cfg, transport, &node)?;
    let (a, adm, clock) = (agent.clone(), admission.clone(), node.clock());
    let serve_goal = move |req: ExecuteGoalRequest| {
        let (a, adm, n) = (
            a.clone(),
            adm.clone(),
            counter.fetch_add(1, Ordering::Relaxed) + 1,
        );
        let info = GoalInfo {
            goal_id: service_goal_uuid(n),
            stamp: clock.now(),
        };
        async move {
            let id = format!("srv-{n}");
            let admitted = match adm.admit(&id, &CancellationToken::new(), Some(info)).await {
                Ok(admitted) => admitted,
                Err(ans) => {
                    warn!("{}: {}", names::EXECUTE_GOAL_SERVICE, ans.error_msg);
                    return ExecuteGoalResponse::from(ans);
                }
            };
            let (_, ans) = run_admitted(a, adm.arbiter.clone(), admitted, id, req.goal).await;
            ExecuteGoalResponse::from(ans)
        }
    };
    let (record, left) = record.unzip();
    let left = left.unwrap_or_default();
    let service = match &record {
        Some(file) => node.serve_recorded::<ExecuteGoal, _, _>(
            names::EXECUTE_GOAL_SERVICE,
            Recorded {
                record: file.clone(),
                orphans: left.service_requests(&node.resolve(names::EXECUTE_GOAL_SERVICE)?),
                orphan_answer: ExecuteGoalResponse::from(restarted_answer()),
            },
            serve_goal,
        )?,
        None => node.serve::<ExecuteGoal, _, _>(names::EXECUTE_GOAL_SERVICE, serve_goal)?,
    };
    let execute_action = node.resolve(names::EXECUTE_ACTION)?;
    let action = node.action_server::<ExecuteGoalAction, _>(
        names::EXECUTE_ACTION,
        ActionServerOptions {
            // the action's own goals follow the same policy as the arbiter's
            busy: action_policy,
            // and its cancel requests reach the service's goals
            external: Some(arbiter.clone() as Arc<dyn ExternalGoals>),
            record: record.map(|file| file as Arc<dyn RequestRecord>),
            orphaned_goals: left.goals_of(&execute_action),
            orphaned_results: left.result_requests(&execute_action),
            ..ActionServerOptions::default()
        },
        ExecuteHandler {
            agent: agent.clone(),
            router: router.clone(),
            admission,
        },
    )?;
    let (ready, ready_task) =
        publish_ready(&node, estop.watch(), standard.lifecycle(), monitor.peers())?;
    info!(agent = ?agent.kind(), mobile = c.agent_node.mobile, "agent_node serving");
    Ok(AgentNode {
        agent,
        journal,
        router,
        estop,
        arbiter,
        _service: service,
        _action: action,
        _standard: standard,
        ready,
        _ready_task: ready_task,
        _supervisor: supervisor,
        _monitor: monitor,
    })
}

/// Ends the running goals and holds the robot when a node they need is lost or
/// agent_node leaves the active state (lifecycle).
fn supervise(
    monitor: &LivelinessMonitor,
    mut lifecycle: watch::Receiver<PrimaryState>,
    arbiter: Arc<GoalArbiter>,
    hold: RobotHold,
) -> AbortOnDrop {
    let mut losses = monitor.losses();
    AbortOnDrop(tokio::spawn(async move {
        loop {
            let (code, what) = tokio::select! {
                lost = losses.next() => {
                    let Some((node, why)) = lost else { break };
                    (goal_refused::NODE_DOWN, format!(
                        "{node} stopped ({why}): the goal ended and the robot's motion was cancelled"
                    ))
                }
                changed = lifecycle.changed() => {
                    if changed.is_err() {
                        break;
                    }
                    let state = *lifecycle.borrow_and_update();
                    if state == PrimaryState::Active {
                        continue;
                    }
                    (goal_refused::INACTIVE, format!(
                        "agent_node was deactivated (now {state}): the goal ended and the robot's motion was cancelled"
                    ))
                }
            };
            arbiter.end_all(code, &what);
            hold.hold(&what).await;
        }
    }))
}

/// How soon a refused `/asp/ready` sample is published again.
const READY_REPUBLISH: Duration = Duration::from_millis(50);
/// The longest wait between two tries.
const READY_REPUBLISH_MAX: Duration = Duration::from_secs(2);

/// Publishes [`names::READY_TOPIC`] (latched) on every change: true once
/// object_map_node's summary holds objects (the map is built) while the e-stop is
/// released, agent_node is active and every node the goals need is heard (heartbeats). Clients and launch
/// files wait for it before sending goals.
fn publish_ready(
    node: &asp_ros::Node,
    mut stopped: watch::Receiver<bool>,
    mut lifecycle: watch::Receiver<PrimaryState>,
    mut peers: watch::Receiver<BTreeMap<String, Peer>>,
) -> Result<(watch::Receiver<bool>, AbortOnDrop), NodeError> {
    let publisher = node.publisher::<Bool>(names::READY_TOPIC, Qos::latched())?;
    let mut maps = node.subscribe::<ObjectMapSummary>(names::OBJECT_MAP_TOPIC, Qos::latched())?;
    let (tx, rx) = watch::channel(false);
    let task = tokio::spawn(async move {
        let mut mapped = false;
        // what this process was told, and what went out on the topic: a publish that
        // fails (RustDDS refuses a write while the send window, 8,192 unacknowledged
        // samples, stays full for the max blocking time) is tried again until it goes
        // out, never dropped (a client would wait for it forever); the retries back
        // off to READY_REPUBLISH_MAX and the refusal is said once
        let (mut told, mut published) = (None, None);
        let mut retry_in = READY_REPUBLISH;
        loop {
            let ready = mapped
                && !*stopped.borrow_and_update()
                && *lifecycle.borrow_and_update() == PrimaryState::Active
                && asp_ros::liveliness::missing(&peers.borrow_and_update()).is_empty();
            if told != Some(ready) {
                info!(ready, "{}", names::READY_TOPIC);
                tx.send_replace(ready);
                told = Some(ready);
            }
            if published != Some(ready) {
                match publisher.publish(Bool { data: ready }) {
                    Ok(()) => {
                        published = Some(ready);
                        retry_in = READY_REPUBLISH;
                    }
                    Err(e) if retry_in == READY_REPUBLISH => {
                        warn!(
                            "{}: {e}; publishing it again until it goes out",
                            names::READY_TOPIC
                        );
                        retry_in *= 2;
                    }
                    Err(_) => retry_in = (retry_in * 2).min(READY_REPUBLISH_MAX),
                }
            }
            let unsent = published != Some(ready);
            tokio::select! {
                () = tokio::time::sleep(retry_in), if unsent => {}
                m = maps.recv() => match m {
                    Some(m) => mapped = m.objects > 0,
                    None => break,
                },
                r = stopped.changed() => if r.is_err() { break },
                r = lifecycle.changed() => if r.is_err() { break },
                r = peers.changed() => if r.is_err() { break },
            }
        }
    });
    Ok((rx, AbortOnDrop(task)))
}

/// The action server's form of `agent_node.when_busy`.
fn busy_policy(when_busy: WhenBusy) -> BusyPolicy {
    match when_busy {
        WhenBusy::Preempt => BusyPolicy::Preempt,
        WhenBusy::Reject => BusyPolicy::Reject,
        WhenBusy::Queue => BusyPolicy::Queue,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn call_text_lists_arguments() {
        let args = serde_json::json!({"obj_key": "apple_0"});
        assert_eq!(call_text("grasp", &args), "grasp(obj_key=\"apple_0\")");
        assert_eq!(call_text("remap", &serde_json::json!(null)), "remap(null)");
    }
}
