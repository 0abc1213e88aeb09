//! The action client: goals, feedback, status, cancel and results.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use super::{ClientPorts, GoalRequest, GoalState};
use crate::RosError;
use crate::msg::action_msgs::{CancelGoalRequest, CancelGoalResponse, GoalInfo, GoalStatusArray};
use crate::msg::builtin_interfaces::Time;
use crate::msg::unique_identifier_msgs::UUID;
use crate::msg::{RosAction, TerminalState};
use crate::transport::mailbox::Mailbox;
use crate::transport::{Node, wait_until};

const FEEDBACK_DEPTH: usize = 64;

/// The end of a goal as the client sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct GoalResult<R> {
    pub state: TerminalState,
    pub result: R,
}

struct Slot<A: RosAction> {
    feedback: Arc<Mailbox<A::Feedback>>,
    status: watch::Sender<GoalState>,
}

type Slots<A> = Arc<Mutex<HashMap<UUID, Slot<A>>>>;

fn lock<A: RosAction>(slots: &Slots<A>) -> MutexGuard<'_, HashMap<UUID, Slot<A>>> {
    slots.lock().unwrap_or_else(|e| e.into_inner())
}

struct Inner<A: RosAction> {
    name: String,
    port: Box<dyn super::ActionClientPort<A>>,
    slots: Slots<A>,
    node: Node,
    router: JoinHandle<()>,
}

impl<A: RosAction> Drop for Inner<A> {
    fn drop(&mut self) {
        self.router.abort();
    }
}

/// A client of one action. Cheap to clone.
/// How long [`GoalHandle::feedback`] waits, once a goal is terminal, for feedback that
/// the terminal status overtook.
pub const FEEDBACK_GRACE: Duration = Duration::from_millis(250);

pub struct ActionClient<A: RosAction> {
    inner: Arc<Inner<A>>,
}

impl<A: RosAction> Clone for ActionClient<A> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
        }
    }
}

impl<A: RosAction> std::fmt::Debug for ActionClient<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ActionClient")
            .field("action", &self.inner.name)
            .finish()
    }
}

impl<A: RosAction> ActionClient<A> {
    pub(crate) fn start(name: String, ports: ClientPorts<A>, node: Node) -> Self {
        let slots: Slots<A> = Arc::new(Mutex::new(HashMap::new()));
        let router = tokio::spawn(route(
            ports.feedback.clone(),
            ports.status.clone(),
            slots.clone(),
        ));
        Self {
            inner: Arc::new(Inner {
                name,
                port: ports.port,
                slots,
                node,
                router,
            }),
        }
    }

    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// Whether the server's services and topics are matched.
    pub fn is_server_ready(&self) -> bool {
        self.inner.port.server_ready()
    }

    /// Waits for the server (bounded by the discovery timeout).
    pub async fn wait_for_server(&self) -> Result<(), RosError> {
        let name = self.inner.name.clone();
        wait_until(
            || format!("action server {name} ({})", A::type_name()),
            self.inner.node.settings().discovery_timeout,
            || self.inner.port.server_ready(),
        )
        .await
    }

    fn short_timeout(&self) -> Duration {
        self.inner.node.settings().discovery_timeout
    }

    /// Sends a goal and waits for the server to accept it; a rejection is
    /// [`RosError::GoalRejected`].
    pub async fn send_goal(&self, goal: A::Goal) -> Result<GoalHandle<A>, RosError> {
        self.wait_for_server().await?;
        let id = UUID::random();
        let feedback = Arc::new(Mailbox::new(FEEDBACK_DEPTH));
        let (status_tx, status_rx) = watch::channel(GoalState::Unknown);
        lock(&self.inner.slots).insert(
            id,
            Slot {
                feedback: feedback.clone(),
                status: status_tx,
            },
        );
        let mut handle = GoalHandle {
            id,
            stamp: Time::default(),
            client: self.clone(),
            feedback,
            status: status_rx,
            feedback_drained: false,
        };
        let request = GoalRequest { goal_id: id, goal };
        let response =
            match tokio::time::timeout(self.short_timeout(), self.inner.port.send_goal(request))
                .await
            {
                Ok(r) => r?,
                Err(_) => {
                    return Err(RosError::Timeout {
                        what: format!("sending a goal to {}", self.inner.name),
                        timeout_s: self.short_timeout().as_secs_f64(),
                    });
                }
            };
        if !response.accepted {
            return Err(RosError::GoalRejected {
                action: self.inner.name.clone(),
                reason: String::new(),
            });
        }
        if let Some(slot) = lock(&self.inner.slots).get(&id) {
            slot.status.send_if_modified(|s| {
                let change = *s == GoalState::Unknown;
                if change {
                    *s = GoalState::Accepted;
                }
                change
            });
        }
        info!(action = %self.inner.name, goal = %id, "goal accepted");
        handle.stamp = response.stamp;
        Ok(handle)
    }

    /// Asks the server to cancel every goal.
    pub async fn cancel_all(&self) -> Result<CancelGoalResponse, RosError> {
        self.cancel_request(UUID::default(), Time::default()).await
    }

    /// Asks the server to cancel goal `goal_id`: one this client sent, or one the server
    /// knows by that id from elsewhere (a node's service goals).
    pub async fn cancel_goal(&self, goal_id: UUID) -> Result<CancelGoalResponse, RosError> {
        self.cancel_request(goal_id, Time::default()).await
    }

    async fn cancel_request(
        &self,
        goal_id: UUID,
        stamp: Time,
    ) -> Result<CancelGoalResponse, RosError> {
        let request = CancelGoalRequest {
            goal_info: GoalInfo { goal_id, stamp },
        };
        match tokio::time::timeout(self.short_timeout(), self.inner.port.cancel(request)).await {
            Ok(r) => r,
            Err(_) => Err(RosError::Timeout {
                what: format!("cancel request to {}", self.inner.name),
                timeout_s: self.short_timeout().as_secs_f64(),
            }),
        }
    }

    /// Runs a goal to its end: forwards feedback to `on_feedback`, turns a cancelled
    /// `cancel` token into a cancel request (and then waits, up to the discovery
    /// timeout, for the server to end the goal), and returns the terminal state and
    /// result. The whole goal is bounded by the call timeout.
    pub async fn execute(
        &self,
        goal: A::Goal,
        cancel: &CancellationToken,
        mut on_feedback: impl FnMut(A::Feedback) + Send,
    ) -> Result<GoalResult<A::Result>, RosError> {
        if cancel.is_cancelled() {
            return Err(RosError::Closed(format!(
                "{}: cancelled before the goal was sent",
                self.inner.name
            )));
        }
        let mut handle = self.send_goal(goal).await?;
        let mut deadline = Instant::now() + self.inner.node.settings().call_timeout;
        let mut cancel_sent = false;
        loop {
            while let Some(f) = handle.feedback.try_recv() {
                on_feedback(f);
            }
            if handle.state().is_terminal() {
                break;
            }
            tokio::select! {
                Some(f) = handle.feedback.recv() => on_feedback(f),
                changed = handle.status.changed() => {
                    if changed.is_err() {
                        return Err(RosError::Closed(format!("action client {}", self.inner.name)));
                    }
                }
                _ = cancel.cancelled(), if !cancel_sent => {
                    cancel_sent = true;
                    match handle.cancel().await {
                        Ok(r) => debug!(action = %self.inner.name, goal = %handle.id, code = r.return_code, "cancel sent"),
                        Err(e) => warn!(action = %self.inner.name, goal = %handle.id, "cancel request failed: {e}"),
                    }
                    deadline = deadline.min(Instant::now() + self.short_timeout());
                }
                _ = tokio::time::sleep_until(deadline) => {
                    let timeout_s = if cancel_sent {
                        self.short_timeout().as_secs_f64()
                    } else {
                        self.inner.node.settings().call_timeout.as_secs_f64()
                    };
                    return Err(RosError::Timeout {
                        what: format!(
                            "goal {} of {}{}",
                            handle.id,
                            self.inner.name,
                            if cancel_sent { " after the cancel request" } else { "" }
                        ),
                        timeout_s,
                    });
                }
            }
        }
        while let Some(f) = handle.feedback.try_recv() {
            on_feedback(f);
        }
        handle.fetch_result().await
    }
}

/// Routes feedback and status messages to the goals this client sent.
async fn route<A: RosAction>(
    feedback: Arc<Mailbox<(UUID, A::Feedback)>>,
    status: Arc<Mailbox<GoalStatusArray>>,
    slots: Slots<A>,
) {
    loop {
        tokio::select! {
            f = feedback.recv() => match f {
                Some((id, f)) => {
                    if let Some(slot) = lock(&slots).get(&id) {
                        slot.feedback.push(f);
                    }
                }
                None => break,
            },
            s = status.recv() => match s {
                Some(array) => {
                    let slots = lock(&slots);
                    for st in array.status_list {
                        if let Some(slot) = slots.get(&st.goal_info.goal_id) {
                            let new = GoalState::from_code(st.status);
                            slot.status.send_if_modified(|cur| {
                                let change = *cur != new && !cur.is_terminal() && new != GoalState::Unknown;
                                if change {
                                    *cur = new;
                                }
                                change
                            });
                        }
                    }
                }
                None => break,
            },
        }
    }
}

/// A goal this client sent. Dropping it stops following the goal (it does not cancel
/// it).
pub struct GoalHandle<A: RosAction> {
    id: UUID,
    stamp: Time,
    client: ActionClient<A>,
    feedback: Arc<Mailbox<A::Feedback>>,
    status: watch::Receiver<GoalState>,
    /// The terminal status was seen and the grace for feedback still in flight passed.
    feedback_drained: bool,
}

impl<A: RosAction> std::fmt::Debug for GoalHandle<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GoalHandle")
            .field("action", &self.client.inner.name)
            .field("id", &self.id.to_string())
            .field("state", &*self.status.borrow())
            .finish()
    }
}

impl<A: RosAction> Drop for GoalHandle<A> {
    fn drop(&mut self) {
        lock(&self.client.inner.slots).remove(&self.id);
    }
}

impl<A: RosAction> GoalHandle<A> {
    pub fn id(&self) -> UUID {
        self.id
    }

    /// When the server accepted the goal.
    pub fn accepted_at(&self) -> &Time {
        &self.stamp
    }

    /// The latest status the server reported.
    pub fn state(&self) -> GoalState {
        *self.status.borrow()
    }

    /// The next feedback message; `None` once the goal has ended and no feedback is
    /// left.
    ///
    /// ROS 2 orders nothing across an action's feedback and status topics: the server
    /// publishes its last feedback before the terminal status, but the two travel on
    /// different readers, so the status can overtake it. Once the goal is terminal, the
    /// handle therefore waits up to [`FEEDBACK_GRACE`] for feedback still in flight
    /// before it reports the end.
    pub async fn feedback(&mut self) -> Option<A::Feedback> {
        loop {
            if let Some(f) = self.feedback.try_recv() {
                return Some(f);
            }
            if self.state().is_terminal() {
                if self.feedback_drained {
                    return None;
                }
                return match tokio::time::timeout(FEEDBACK_GRACE, self.feedback.recv()).await {
                    Ok(Some(f)) => Some(f),
                    Ok(None) | Err(_) => {
                        self.feedback_drained = true;
                        None
                    }
                };
            }
            tokio::select! {
                f = self.feedback.recv() => return f,
                changed = self.status.changed() => if changed.is_err() { return None },
            }
        }
    }

    /// Waits until the goal reaches `state` (or a terminal state), within `timeout`.
    pub async fn wait_for_state(
        &mut self,
        state: GoalState,
        timeout: Duration,
    ) -> Result<GoalState, RosError> {
        let what = format!(
            "goal {} of {} to reach {state:?}",
            self.id, self.client.inner.name
        );
        let reached = tokio::time::timeout(
            timeout,
            self.status.wait_for(|s| *s == state || s.is_terminal()),
        )
        .await;
        match reached {
            Ok(Ok(s)) => Ok(*s),
            Ok(Err(_)) => Err(RosError::Closed(format!(
                "action client {}",
                self.client.inner.name
            ))),
            Err(_) => Err(RosError::Timeout {
                what,
                timeout_s: timeout.as_secs_f64(),
            }),
        }
    }

    /// Asks the server to cancel this goal.
    pub async fn cancel(&self) -> Result<CancelGoalResponse, RosError> {
        self.client.cancel_request(self.id, Time::default()).await
    }

    /// Waits (up to the call timeout) for the goal to end and returns its result.
    pub async fn result(mut self) -> Result<GoalResult<A::Result>, RosError> {
        let timeout = self.client.inner.node.settings().call_timeout;
        self.wait_for_state(GoalState::Succeeded, timeout).await?;
        self.fetch_result().await
    }

    async fn fetch_result(&self) -> Result<GoalResult<A::Result>, RosError> {
        let timeout = self.client.short_timeout();
        let name = &self.client.inner.name;
        let response =
            match tokio::time::timeout(timeout, self.client.inner.port.get_result(self.id)).await {
                Ok(r) => r?,
                Err(_) => {
                    return Err(RosError::Timeout {
                        what: format!("result of goal {} of {name}", self.id),
                        timeout_s: timeout.as_secs_f64(),
                    });
                }
            };
        match GoalState::from_code(response.status).terminal() {
            Some(state) => Ok(GoalResult {
                state,
                result: response.result,
            }),
            None => Err(RosError::Conversion(format!(
                "{name}: result of goal {} came with non-terminal status {}",
                self.id, response.status
            ))),
        }
    }
}
