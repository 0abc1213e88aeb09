//! The action server state machine (see the module documentation of [`crate::action`]).

use std::collections::HashMap;
use std::future::Future;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::{oneshot, watch};
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, debug, info, info_span, warn};

use super::{
    FeedbackSink, GoalRequest, GoalResponse, GoalState, Incoming, ResultResponse, ServerPorts,
};
use crate::RosError;
use crate::lifecycle::PrimaryState;
use crate::msg::action_msgs::{
    CancelGoalRequest, CancelGoalResponse, GoalInfo, GoalStatus, GoalStatusArray,
};
use crate::msg::builtin_interfaces::Time;
use crate::msg::unique_identifier_msgs::UUID;
use crate::msg::{EndReason, RosAction};
use crate::transport::{OrphanResult, RequestRecord, RosClock};

/// What the server does with a new goal while another one runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BusyPolicy {
    /// Accept it and stop the running goal (which ends ABORTED), as Nav2 does.
    Preempt,
    /// Reject it.
    Reject,
    /// Accept it; it starts when the goals accepted before it have ended (ACCEPTED
    /// until then, and cancellable).
    Queue,
}

/// Goals run outside the action server that its cancel requests reach too: a node's
/// service goals, so that `cancel_goal` stops whatever the node runs. A request naming
/// no goal and no time cancels them all, one with a time those accepted at or before
/// it, one with an id the goal of that id.
pub trait ExternalGoals: Send + Sync {
    /// Cancels the goals selected (`goal_id` and `before` both absent: all of them)
    /// and says which, with the time each was accepted.
    fn cancel(&self, goal_id: Option<UUID>, before: Option<Time>) -> Vec<GoalInfo>;
}

/// Server behaviour.
#[derive(Clone)]
pub struct ActionServerOptions {
    /// The busy policy, read at each new goal (a node may change it while serving).
    pub busy: watch::Receiver<BusyPolicy>,
    /// How long finished goals (and their results) are kept. ROS 2's default is 15 min.
    pub result_timeout: Duration,
    /// The most finished goals kept (oldest forgotten first), whatever their age: a
    /// robot taking a goal a second for 15 min would otherwise keep 900 results and
    /// publish them all in every status array.
    pub max_finished_goals: usize,
    /// While `true`, new goals are rejected; turning `true` aborts the running goal.
    pub estop: Option<watch::Receiver<bool>>,
    /// How long the server waits for handlers to stop when it shuts down.
    pub shutdown_grace: Duration,
    /// Goals outside the server that cancel requests reach too.
    pub external: Option<Arc<dyn ExternalGoals>>,
    /// Changes each time the node that sends the goals is lost (its heartbeat): the
    /// running goals stop (ABORTED, [`EndReason::ClientLost`]), so that work nobody
    /// supervises does not run on. New goals are taken as usual.
    pub client_lost: Option<watch::Receiver<u64>>,
    /// The node's lifecycle (REP-2006): while not active, new goals are rejected;
    /// leaving the active state stops the running goals ([`EndReason::Deactivated`]).
    pub lifecycle: Option<watch::Receiver<PrimaryState>>,
    /// Told of every goal accepted and ended and every result request taken and
    /// answered (DDS only), so that the node's next process can end the goals this
    /// one leaves unfinished and answer the requests it leaves open.
    pub record: Option<Arc<dyn RequestRecord>>,
    /// Goals a previous process of this server accepted and never finished: kept as
    /// ended ABORTED ([`EndReason::Restarted`]), in the status array (clients that
    /// follow it then ask for the result) and for result requests.
    pub orphaned_goals: Vec<UUID>,
    /// Result requests the previous process took and never answered: their goals are
    /// kept as the orphaned goals are, and each request is answered once its client
    /// is seen.
    pub orphaned_results: Vec<OrphanResult>,
}

impl std::fmt::Debug for ActionServerOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ActionServerOptions")
            .field("busy", &*self.busy.borrow())
            .field("result_timeout", &self.result_timeout)
            .field("max_finished_goals", &self.max_finished_goals)
            .field("estop", &self.estop.as_ref().map(|e| *e.borrow()))
            .field("shutdown_grace", &self.shutdown_grace)
            .field("external", &self.external.is_some())
            .field("client_lost", &self.client_lost.is_some())
            .field("lifecycle", &self.lifecycle.as_ref().map(|l| *l.borrow()))
            .field("record", &self.record.is_some())
            .field("orphaned_goals", &self.orphaned_goals.len())
            .field("orphaned_results", &self.orphaned_results.len())
            .finish()
    }
}

impl ActionServerOptions {
    /// These options with a busy policy that never changes.
    #[must_use]
    pub fn with_busy(mut self, policy: BusyPolicy) -> Self {
        self.busy = watch::channel(policy).1;
        self
    }
}

impl Default for ActionServerOptions {
    fn default() -> Self {
        Self {
            busy: watch::channel(BusyPolicy::Preempt).1,
            result_timeout: Duration::from_secs(900),
            max_finished_goals: 64,
            estop: None,
            shutdown_grace: Duration::from_secs(5),
            external: None,
            client_lost: None,
            lifecycle: None,
            record: None,
            orphaned_goals: Vec::new(),
            orphaned_results: Vec::new(),
        }
    }
}

/// How a goal handler ended a goal.
#[derive(Debug, Clone, PartialEq)]
pub enum GoalOutcome<R> {
    Succeeded(R),
    Aborted(R),
    /// The handler stopped because its token was cancelled. The goal ends CANCELED if a
    /// client asked to cancel it, ABORTED if it was preempted or stopped otherwise.
    Canceled(R),
}

/// Executes goals of one action.
#[async_trait]
pub trait GoalHandler<A: RosAction>: Send + Sync + 'static {
    /// Decides at once whether to accept a goal; `Err` rejects it with the reason
    /// (logged). Keep it quick: it runs before the client gets its answer.
    fn validate(&self, goal: &A::Goal) -> Result<(), String> {
        let _ = goal;
        Ok(())
    }

    /// Runs an accepted goal to its end. Must watch `ctx`'s cancellation and stop the
    /// real work when it fires.
    async fn execute(&self, goal: A::Goal, ctx: GoalContext<A>) -> GoalOutcome<A::Result>;
}

/// A goal handler made of a closure (see [`goal_fn`]).
pub struct FnHandler<A, F> {
    f: F,
    _a: PhantomData<fn() -> A>,
}

impl<A, F> std::fmt::Debug for FnHandler<A, F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FnHandler")
    }
}

/// A goal handler that runs `f(goal, ctx)` and accepts every goal.
pub fn goal_fn<A, F, Fut>(f: F) -> FnHandler<A, F>
where
    A: RosAction,
    F: Fn(A::Goal, GoalContext<A>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = GoalOutcome<A::Result>> + Send + 'static,
{
    FnHandler { f, _a: PhantomData }
}

#[async_trait]
impl<A, F, Fut> GoalHandler<A> for FnHandler<A, F>
where
    A: RosAction,
    F: Fn(A::Goal, GoalContext<A>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = GoalOutcome<A::Result>> + Send + 'static,
{
    async fn execute(&self, goal: A::Goal, ctx: GoalContext<A>) -> GoalOutcome<A::Result> {
        (self.f)(goal, ctx).await
    }
}

/// What a handler gets with its goal: the id, the cancellation token, the reason it
/// was stopped and a way to publish feedback.
pub struct GoalContext<A: RosAction> {
    id: UUID,
    action: Arc<str>,
    cancel: CancellationToken,
    reason: Arc<OnceLock<EndReason>>,
    feedback: FeedbackSink<A::Feedback>,
}

impl<A: RosAction> std::fmt::Debug for GoalContext<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GoalContext")
            .field("id", &self.id.to_string())
            .field("action", &self.action)
            .finish()
    }
}

impl<A: RosAction> GoalContext<A> {
    pub fn goal_id(&self) -> UUID {
        self.id
    }

    /// Cancelled when the goal must stop (cancel request, preemption, e-stop, shutdown).
    pub fn cancellation(&self) -> &CancellationToken {
        &self.cancel
    }

    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    pub async fn cancelled(&self) {
        self.cancel.cancelled().await
    }

    /// Why the goal was told to stop, once it was.
    pub fn stop_reason(&self) -> Option<EndReason> {
        self.reason.get().copied()
    }

    /// The outcome to return after stopping for [`Self::stop_reason`], with the result
    /// the action fills in for it ([`RosAction::result_for`]).
    pub fn stopped_outcome(&self) -> GoalOutcome<A::Result> {
        let reason = self.stop_reason().unwrap_or(EndReason::Canceled);
        let message = stop_message(reason);
        let result = A::result_for(reason, message);
        match reason {
            EndReason::Canceled => GoalOutcome::Canceled(result),
            _ => GoalOutcome::Aborted(result),
        }
    }

    /// Publishes feedback for this goal.
    pub fn publish_feedback(&self, feedback: A::Feedback) -> Result<(), RosError> {
        (self.feedback)(self.id, feedback)
    }
}

fn stop_message(reason: EndReason) -> &'static str {
    match reason {
        EndReason::Preempted => "preempted by a newer goal",
        EndReason::Canceled => "canceled on request",
        EndReason::EStop => "stopped by the e-stop",
        EndReason::Shutdown => "the action server shut down",
        EndReason::HandlerFailed => "the goal handler failed",
        EndReason::ClientLost => "stopped: the node that sent the goal died",
        EndReason::Deactivated => "stopped: the node was deactivated (lifecycle)",
        EndReason::Restarted => "ended: the server's process stopped while the goal ran",
    }
}

/// A running action server; dropping it shuts the server down (running goals end
/// ABORTED after their handlers stop).
pub struct ActionServer<A: RosAction> {
    name: String,
    shutdown: CancellationToken,
    task: Option<JoinHandle<()>>,
    _a: PhantomData<fn() -> A>,
}

impl<A: RosAction> std::fmt::Debug for ActionServer<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ActionServer")
            .field("name", &self.name)
            .finish()
    }
}

impl<A: RosAction> Drop for ActionServer<A> {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

impl<A: RosAction> ActionServer<A> {
    pub(crate) fn start<H: GoalHandler<A>>(
        name: String,
        node: String,
        ports: ServerPorts<A>,
        options: ActionServerOptions,
        handler: H,
        clock: RosClock,
    ) -> Self {
        let shutdown = CancellationToken::new();
        let span = info_span!("action_server", action = %name, r#type = %A::type_name());
        let task = tokio::spawn(
            run(
                name.clone(),
                node,
                ports,
                options,
                Arc::new(handler),
                shutdown.clone(),
                clock,
            )
            .instrument(span),
        );
        Self {
            name,
            shutdown,
            task: Some(task),
            _a: PhantomData,
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Stops the server and waits until every goal has ended.
    pub async fn shutdown(mut self) {
        self.shutdown.cancel();
        if let Some(task) = self.task.take()
            && let Err(e) = task.await
        {
            warn!(action = %self.name, "action server task failed: {e}");
        }
    }
}

struct Entry<A: RosAction> {
    seq: u64,
    stamp: Time,
    state: GoalState,
    cancel: CancellationToken,
    reason: Arc<OnceLock<EndReason>>,
    result: Option<A::Result>,
    waiters: Vec<oneshot::Sender<ResultResponse<A::Result>>>,
    finished_at: Option<Instant>,
}

struct Shared<A: RosAction> {
    name: Arc<str>,
    goals: Mutex<HashMap<UUID, Entry<A>>>,
    status: Box<dyn Fn(GoalStatusArray) -> Result<(), RosError> + Send + Sync>,
    feedback: FeedbackSink<A::Feedback>,
    result_timeout: Duration,
    max_finished_goals: usize,
    external: Option<Arc<dyn ExternalGoals>>,
    /// Told of goals accepted and ended.
    record: Option<Arc<dyn RequestRecord>>,
    /// The node serving the action, for messages.
    node: String,
    /// Stamps goals as accepted (the node's time: simulated with `use_sim_time`, so a
    /// client's cancel-by-stamp compares like with like).
    clock: RosClock,
    /// Keeps the transport endpoints alive while goals finish.
    _guard: crate::transport::Guard,
}

impl<A: RosAction> Shared<A> {
    fn lock(&self) -> MutexGuard<'_, HashMap<UUID, Entry<A>>> {
        self.goals.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn publish_status(&self) {
        let array = {
            let goals = self.lock();
            let mut list: Vec<(u64, GoalStatus)> = goals
                .iter()
                .map(|(id, e)| {
                    (
                        e.seq,
                        GoalStatus {
                            goal_info: GoalInfo {
                                goal_id: *id,
                                stamp: e.stamp,
                            },
                            status: e.state.code(),
                        },
                    )
                })
                .collect();
            list.sort_by_key(|(seq, _)| *seq);
            GoalStatusArray {
                status_list: list.into_iter().map(|(_, s)| s).collect(),
            }
        };
        if let Err(e) = (self.status)(array) {
            warn!(action = %self.name, "could not publish goal status: {e}");
        }
    }

    fn has_active(&self) -> Option<UUID> {
        self.lock()
            .iter()
            .find(|(_, e)| !e.state.is_terminal())
            .map(|(id, _)| *id)
    }

    /// Tells every unfinished goal to stop for `reason`.
    fn stop_active(&self, reason: EndReason) {
        let goals = self.lock();
        for (id, e) in goals.iter() {
            if !e.state.is_terminal() {
                let _ = e.reason.set(reason);
                e.cancel.cancel();
                debug!(action = %self.name, goal = %id, ?reason, "stopping goal");
            }
        }
    }

    fn set_executing(&self, id: &UUID) {
        let changed = {
            let mut goals = self.lock();
            match goals.get_mut(id) {
                Some(e) if e.state == GoalState::Accepted => {
                    e.state = GoalState::Executing;
                    true
                }
                _ => false,
            }
        };
        if changed {
            self.publish_status();
        }
    }

    fn state_of(&self, id: &UUID) -> Option<GoalState> {
        self.lock().get(id).map(|e| e.state)
    }

    /// Moves a goal to its terminal state and answers its result requests. A goal that
    /// already ended keeps its first terminal state.
    fn finish(&self, id: &UUID, state: GoalState, result: A::Result) {
        let waiters = {
            let mut goals = self.lock();
            let Some(e) = goals.get_mut(id) else {
                return;
            };
            if e.state.is_terminal() {
                warn!(action = %self.name, goal = %id, "goal already ended; ignoring {state:?}");
                return;
            }
            e.state = state;
            e.result = Some(result.clone());
            e.finished_at = Some(Instant::now());
            let waiters = std::mem::take(&mut e.waiters);
            forget_oldest_finished(&mut goals, self.max_finished_goals.max(1));
            waiters
        };
        info!(action = %self.name, goal = %id, ?state, "goal ended");
        if let Some(record) = &self.record {
            record.goal_ended(&self.name, *id);
        }
        for w in waiters {
            let _ = w.send(ResultResponse {
                status: state.code(),
                result: result.clone(),
            });
        }
        self.publish_status();
    }

    /// Enters the goals a previous process of the server left unfinished as ended
    /// ABORTED ([`EndReason::Restarted`]): their clients' result requests get that.
    fn keep_orphaned(&self, goals: &[UUID], results: &[OrphanResult]) {
        let reason = EndReason::Restarted;
        let message = format!(
            "ended: {}'s process stopped while the goal ran and a new one took its place; \
             what the robot did of the goal is unknown: look before sending it again",
            self.node
        );
        let mut orphaned: Vec<UUID> = Vec::new();
        for goal in goals.iter().copied().chain(results.iter().map(|r| r.goal)) {
            if !orphaned.contains(&goal) {
                orphaned.push(goal);
            }
        }
        let mut table = self.lock();
        for goal in &orphaned {
            table.entry(*goal).or_insert_with(|| Entry {
                seq: 0,
                stamp: self.clock.now(),
                state: GoalState::Aborted,
                cancel: CancellationToken::new(),
                reason: Arc::new(OnceLock::from(reason)),
                result: Some(A::result_for(reason, &message)),
                waiters: Vec::new(),
                finished_at: Some(Instant::now()),
            });
        }
        drop(table);
        if !orphaned.is_empty() {
            warn!(action = %self.name, goals = orphaned.len(), "the server's previous process left goals unfinished: they end ABORTED");
            if let Some(record) = &self.record {
                for goal in &orphaned {
                    record.goal_ended(&self.name, *goal);
                }
            }
        }
    }

    /// Forgets goals that finished longer than `result_timeout` ago, and the oldest
    /// finished ones beyond `max_finished_goals`.
    fn expire(&self) {
        let removed = {
            let mut goals = self.lock();
            let before = goals.len();
            let timeout = self.result_timeout;
            goals.retain(|_, e| e.finished_at.is_none_or(|t| t.elapsed() < timeout));
            forget_oldest_finished(&mut goals, self.max_finished_goals);
            before != goals.len()
        };
        if removed {
            self.publish_status();
        }
    }
}

/// Forgets the finished goals beyond the `keep` most recently finished.
fn forget_oldest_finished<A: RosAction>(goals: &mut HashMap<UUID, Entry<A>>, keep: usize) {
    let mut finished: Vec<(Instant, UUID)> = goals
        .iter()
        .filter_map(|(id, e)| e.finished_at.map(|t| (t, *id)))
        .collect();
    if finished.len() <= keep {
        return;
    }
    finished.sort_unstable_by_key(|(t, _)| *t);
    for (_, id) in &finished[..finished.len() - keep] {
        goals.remove(id);
    }
}

async fn run<A: RosAction, H: GoalHandler<A>>(
    name: String,
    node: String,
    ports: ServerPorts<A>,
    options: ActionServerOptions,
    handler: Arc<H>,
    shutdown: CancellationToken,
    clock: RosClock,
) {
    let ServerPorts {
        mut goals,
        mut cancels,
        mut results,
        feedback,
        status,
        guard,
    } = ports;
    let shared = Arc::new(Shared::<A> {
        name: name.as_str().into(),
        goals: Mutex::new(HashMap::new()),
        status,
        feedback,
        result_timeout: options.result_timeout,
        max_finished_goals: options.max_finished_goals,
        external: options.external.clone(),
        record: options.record.clone(),
        node,
        clock,
        _guard: guard,
    });
    shared.keep_orphaned(&options.orphaned_goals, &options.orphaned_results);
    shared.publish_status();
    let mut turns = Turns::default();
    let mut tasks = JoinSet::new();
    let mut estop = options.estop.clone();
    let mut client_lost = options.client_lost.clone();
    let mut lifecycle = options.lifecycle.clone();
    let mut seq = 0u64;
    let mut expiry = tokio::time::interval(Duration::from_secs(1).min(options.result_timeout));
    expiry.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => break,
            Some(incoming) = goals.recv() => {
                seq += 1;
                let refusal = if estop_engaged(&estop) {
                    Some("the e-stop is engaged".to_owned())
                } else {
                    inactive(&lifecycle)
                };
                on_goal(&shared, &handler, &options, refusal, incoming, seq, &mut turns,
                        &mut tasks);
            }
            Some(incoming) = cancels.recv() => on_cancel(&shared, incoming),
            Some(incoming) = results.recv() => on_result_request(&shared, incoming),
            engaged = estop_changed(&mut estop) => {
                if engaged {
                    warn!(action = %name, "e-stop engaged: stopping goals");
                    shared.stop_active(EndReason::EStop);
                }
            }
            lost = changed(&mut client_lost) => {
                if lost {
                    warn!(action = %name, "the node that sends the goals died: stopping its goals");
                    shared.stop_active(EndReason::ClientLost);
                }
            }
            left = left_active(&mut lifecycle) => {
                if left {
                    warn!(action = %name, "the node left the active state: stopping goals");
                    shared.stop_active(EndReason::Deactivated);
                }
            }
            _ = expiry.tick() => shared.expire(),
            Some(joined) = tasks.join_next(), if !tasks.is_empty() => {
                if let Err(e) = joined {
                    warn!(action = %name, "goal task failed: {e}");
                }
            }
            else => break,
        }
    }
    // shutting down: stop goals, let handlers return, end whatever did not
    shared.stop_active(EndReason::Shutdown);
    let grace = tokio::time::sleep(options.shutdown_grace);
    tokio::pin!(grace);
    while !tasks.is_empty() {
        tokio::select! {
            _ = tasks.join_next() => {}
            _ = &mut grace => {
                warn!(action = %name, "goal handlers did not stop within {:?}", options.shutdown_grace);
                tasks.abort_all();
                break;
            }
        }
    }
    let unfinished: Vec<UUID> = shared
        .lock()
        .iter()
        .filter(|(_, e)| !e.state.is_terminal())
        .map(|(id, _)| *id)
        .collect();
    for id in unfinished {
        let msg = stop_message(EndReason::Shutdown);
        shared.finish(
            &id,
            GoalState::Aborted,
            A::result_for(EndReason::Shutdown, msg),
        );
    }
    // clients fetch results once they see the terminal status: answer them a while
    // longer, and refuse new goals meanwhile
    let linger = tokio::time::sleep(options.shutdown_grace.min(RESULT_LINGER));
    tokio::pin!(linger);
    loop {
        tokio::select! {
            _ = &mut linger => break,
            Some(incoming) = results.recv() => on_result_request(&shared, incoming),
            Some(incoming) = cancels.recv() => on_cancel(&shared, incoming),
            Some(incoming) = goals.recv() => {
                info!(action = %name, "goal rejected: the server is shutting down");
                let _ = incoming.reply.send(GoalResponse { accepted: false, stamp: shared.clock.now() });
            }
            else => break,
        }
    }
}

/// How long a server that shuts down keeps answering result requests.
const RESULT_LINGER: Duration = Duration::from_secs(1);

/// Resolves with `true` when `rx` changes; never when there is none (a closed one is
/// dropped, and then never resolves either).
async fn changed(rx: &mut Option<watch::Receiver<u64>>) -> bool {
    match rx {
        Some(r) => {
            if r.changed().await.is_ok() {
                true
            } else {
                *rx = None;
                false
            }
        }
        None => std::future::pending().await,
    }
}

/// Why a goal is refused in the node's lifecycle state; `None` when active (or unmanaged).
fn inactive(lifecycle: &Option<watch::Receiver<PrimaryState>>) -> Option<String> {
    let state = *lifecycle.as_ref()?.borrow();
    (state != PrimaryState::Active).then(|| {
        format!("the node is {state}, not active (lifecycle): `ros2 lifecycle set <node> activate`")
    })
}

/// Resolves with `true` when the lifecycle changes to a state other than active (with
/// `false` on other changes); never when there is none.
async fn left_active(lifecycle: &mut Option<watch::Receiver<PrimaryState>>) -> bool {
    match lifecycle {
        Some(rx) => match rx.changed().await {
            Ok(()) => *rx.borrow_and_update() != PrimaryState::Active,
            Err(_) => {
                *lifecycle = None;
                std::future::pending().await
            }
        },
        None => std::future::pending().await,
    }
}

fn estop_engaged(estop: &Option<watch::Receiver<bool>>) -> bool {
    estop.as_ref().is_some_and(|rx| *rx.borrow())
}

/// Resolves with the new e-stop value when it changes; never when there is none.
async fn estop_changed(estop: &mut Option<watch::Receiver<bool>>) -> bool {
    match estop {
        Some(rx) => match rx.changed().await {
            Ok(()) => *rx.borrow_and_update(),
            Err(_) => {
                *estop = None;
                std::future::pending().await
            }
        },
        None => std::future::pending().await,
    }
}

/// The order goals execute in: the order they were accepted. Each goal's turn comes
/// when the goal accepted before it has ended (dropped its [`Turn`]). Taken when the
/// goal is accepted, not when its task first runs: spawned tasks start in any order.
#[derive(Debug, Default)]
struct Turns {
    last: Option<tokio::sync::oneshot::Receiver<()>>,
}

impl Turns {
    fn next(&mut self) -> Turn {
        let (done, next) = tokio::sync::oneshot::channel();
        Turn {
            after: self.last.replace(next),
            _done: done,
        }
    }
}

/// A goal's place in [`Turns`]: dropping it lets the next goal run.
#[derive(Debug)]
struct Turn {
    /// Resolves (with an error) when the goal before has ended.
    after: Option<tokio::sync::oneshot::Receiver<()>>,
    _done: tokio::sync::oneshot::Sender<()>,
}

impl Turn {
    /// Waits until the goals before have ended; cancel-safe.
    async fn wait(&mut self) {
        if let Some(before) = self.after.as_mut() {
            let _ = before.await;
        }
        self.after = None;
    }
}

#[allow(clippy::too_many_arguments)]
fn on_goal<A: RosAction, H: GoalHandler<A>>(
    shared: &Arc<Shared<A>>,
    handler: &Arc<H>,
    options: &ActionServerOptions,
    refusal: Option<String>,
    incoming: Incoming<GoalRequest<A::Goal>, GoalResponse>,
    seq: u64,
    turns: &mut Turns,
    tasks: &mut JoinSet<()>,
) {
    let Incoming { request, reply } = incoming;
    let GoalRequest { goal_id, goal } = request;
    let rejection = if shared.lock().contains_key(&goal_id) {
        Some("a goal with this id already exists".to_string())
    } else if refusal.is_some() {
        refusal
    } else if let Err(reason) = handler.validate(&goal) {
        Some(reason)
    } else {
        let busy = *options.busy.borrow();
        match (shared.has_active(), busy) {
            (Some(running), BusyPolicy::Reject) => Some(format!("busy with goal {running}")),
            (Some(_), BusyPolicy::Preempt) => {
                shared.stop_active(EndReason::Preempted);
                None
            }
            (Some(_), BusyPolicy::Queue) | (None, _) => None,
        }
    };
    if let Some(reason) = rejection {
        info!(action = %shared.name, goal = %goal_id, "goal rejected: {reason}");
        let _ = reply.send(GoalResponse {
            accepted: false,
            stamp: shared.clock.now(),
        });
        return;
    }
    let stamp = shared.clock.now();
    let cancel = CancellationToken::new();
    let reason = Arc::new(OnceLock::new());
    shared.lock().insert(
        goal_id,
        Entry {
            seq,
            stamp,
            state: GoalState::Accepted,
            cancel: cancel.clone(),
            reason: reason.clone(),
            result: None,
            waiters: Vec::new(),
            finished_at: None,
        },
    );
    info!(action = %shared.name, goal = %goal_id, "goal accepted");
    if let Some(record) = &shared.record {
        record.goal_accepted(&shared.name, goal_id);
    }
    let _ = reply.send(GoalResponse {
        accepted: true,
        stamp,
    });
    shared.publish_status();
    let ctx = GoalContext {
        id: goal_id,
        action: shared.name.clone(),
        cancel,
        reason,
        feedback: shared.feedback.clone(),
    };
    let span = info_span!("goal", id = %goal_id);
    tasks
        .spawn(run_goal(shared.clone(), handler.clone(), turns.next(), goal, ctx).instrument(span));
}

async fn run_goal<A: RosAction, H: GoalHandler<A>>(
    shared: Arc<Shared<A>>,
    handler: Arc<H>,
    mut turn: Turn,
    goal: A::Goal,
    ctx: GoalContext<A>,
) {
    let id = ctx.id;
    // one goal executes at a time: a preempting goal waits here until the previous
    // handler has returned, a queued one until those accepted before it have; a goal
    // cancelled while it waits ends at once
    let cancel = ctx.cancel.clone();
    tokio::select! {
        () = turn.wait() => {}
        () = cancel.cancelled() => {}
    }
    if ctx.is_cancelled() {
        // the goal after this one still waits for those before this one
        tokio::spawn(async move { turn.wait().await });
        let reason = ctx.stop_reason().unwrap_or(EndReason::Shutdown);
        let state = if reason == EndReason::Canceled {
            GoalState::Canceled
        } else {
            GoalState::Aborted
        };
        let msg = format!("{} before it started", stop_message(reason));
        shared.finish(&id, state, A::result_for(reason, &msg));
        return;
    }
    shared.set_executing(&id);
    // a separate task, so that a panicking handler ends its goal ABORTED
    let outcome = tokio::spawn({
        let handler = handler.clone();
        async move { handler.execute(goal, ctx).await }
    })
    .await;
    match outcome {
        Ok(GoalOutcome::Succeeded(r)) => shared.finish(&id, GoalState::Succeeded, r),
        Ok(GoalOutcome::Aborted(r)) => shared.finish(&id, GoalState::Aborted, r),
        Ok(GoalOutcome::Canceled(r)) => {
            let state = if shared.state_of(&id) == Some(GoalState::Canceling) {
                GoalState::Canceled
            } else {
                GoalState::Aborted
            };
            shared.finish(&id, state, r);
        }
        Err(e) => {
            let msg = format!("{}: {e}", stop_message(EndReason::HandlerFailed));
            warn!(action = %shared.name, goal = %id, "{msg}");
            shared.finish(
                &id,
                GoalState::Aborted,
                A::result_for(EndReason::HandlerFailed, &msg),
            );
        }
    }
}

fn on_cancel<A: RosAction>(
    shared: &Shared<A>,
    incoming: Incoming<CancelGoalRequest, CancelGoalResponse>,
) {
    let Incoming { request, reply } = incoming;
    let GoalInfo { goal_id, stamp } = request.goal_info;
    let id_given = !goal_id.is_zero();
    let stamp_given = !stamp.is_zero();
    let mut response = CancelGoalResponse {
        return_code: CancelGoalResponse::ERROR_NONE,
        goals_canceling: Vec::new(),
    };
    let external = shared.external.as_ref();
    {
        let mut goals = shared.lock();
        if id_given && !stamp_given && goals.get(&goal_id).is_some_and(|e| e.state.is_terminal()) {
            response.return_code = CancelGoalResponse::ERROR_GOAL_TERMINATED;
        }
        if response.return_code == CancelGoalResponse::ERROR_NONE {
            let stamp_secs = stamp.as_secs_f64();
            let mut matched: Vec<(u64, UUID)> = goals
                .iter()
                .filter(|(id, e)| {
                    let selected = (!id_given && !stamp_given)
                        || (id_given && **id == goal_id)
                        || (stamp_given && e.stamp.as_secs_f64() <= stamp_secs);
                    selected && matches!(e.state, GoalState::Accepted | GoalState::Executing)
                })
                .map(|(id, e)| (e.seq, *id))
                .collect();
            matched.sort_by_key(|(seq, _)| *seq);
            // an id alone that is none of this server's goals may be one of the node's
            // other goals (a service goal)
            let unknown_id = id_given && !stamp_given && !goals.contains_key(&goal_id);
            // the node's other goals the request selects, first: they were taken before
            // any of this server's goals that preempts them could start
            if let Some(x) = external
                && (unknown_id || !id_given || stamp_given)
            {
                response.goals_canceling =
                    x.cancel(id_given.then_some(goal_id), stamp_given.then_some(stamp));
            }
            for (_, id) in matched {
                if let Some(e) = goals.get_mut(&id) {
                    e.state = GoalState::Canceling;
                    let _ = e.reason.set(EndReason::Canceled);
                    e.cancel.cancel();
                    response.goals_canceling.push(GoalInfo {
                        goal_id: id,
                        stamp: e.stamp,
                    });
                }
            }
            if response.goals_canceling.is_empty() {
                response.return_code = if unknown_id {
                    CancelGoalResponse::ERROR_UNKNOWN_GOAL_ID
                } else {
                    CancelGoalResponse::ERROR_REJECTED
                };
            }
        }
    }
    info!(
        action = %shared.name,
        canceling = response.goals_canceling.len(),
        code = response.return_code,
        "cancel request"
    );
    let changed = !response.goals_canceling.is_empty();
    let _ = reply.send(response);
    if changed {
        shared.publish_status();
    }
}

fn on_result_request<A: RosAction>(
    shared: &Shared<A>,
    incoming: Incoming<UUID, ResultResponse<A::Result>>,
) {
    let Incoming { request: id, reply } = incoming;
    let mut goals = shared.lock();
    match goals.get_mut(&id) {
        None => {
            let _ = reply.send(ResultResponse {
                status: GoalStatus::STATUS_UNKNOWN,
                result: A::Result::default(),
            });
        }
        Some(e) => match (&e.result, e.state.is_terminal()) {
            (Some(result), true) => {
                let _ = reply.send(ResultResponse {
                    status: e.state.code(),
                    result: result.clone(),
                });
            }
            _ => e.waiters.push(reply),
        },
    }
}
