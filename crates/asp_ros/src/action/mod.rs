//! ROS 2 actions with Nav2-like semantics, written once over any transport backend.
//!
//! Server ([`ActionServer`]):
//! - a goal is accepted or rejected at once ([`GoalHandler::validate`], the e-stop, the
//!   busy policy); duplicate goal ids are rejected;
//! - every accepted goal ends in exactly one terminal state, SUCCEEDED, ABORTED or
//!   CANCELED, with the result the handler returned (or [`RosAction::result_for`] when
//!   the server ended it itself), and result requests are answered then (immediately
//!   for finished goals, with status UNKNOWN for unknown ones);
//! - a cancel request moves the goal to CANCELING and cancels the
//!   [`CancellationToken`] handed to the handler, which must stop the real work; the
//!   goal becomes CANCELED when the handler returns [`GoalOutcome::Canceled`];
//! - a new goal preempts the running one ([`BusyPolicy::Preempt`], the default): the
//!   old goal's token is cancelled, it ends ABORTED, and the new goal starts only after
//!   the old handler has returned (one motion at a time); [`BusyPolicy::Reject`]
//!   refuses new goals while one runs;
//! - an engaged e-stop aborts the running goal and rejects new ones;
//! - `action_msgs/GoalStatusArray` is published on every transition, and finished
//!   goals are kept for [`ActionServerOptions::result_timeout`], the most recent
//!   [`ActionServerOptions::max_finished_goals`] of them at most.
//!
//! Client ([`ActionClient`]): sends goals, streams feedback, follows the goal's status,
//! cancels, and fetches the result once the goal is terminal.

mod client;
mod server;

use tokio::sync::{mpsc, oneshot};

pub use client::{ActionClient, GoalHandle, GoalResult};
pub use server::{
    ActionServer, ActionServerOptions, BusyPolicy, ExternalGoals, FnHandler, GoalContext,
    GoalHandler, GoalOutcome, goal_fn,
};

use crate::RosError;
use crate::msg::RosAction;
use crate::msg::action_msgs::{CancelGoalRequest, CancelGoalResponse, GoalStatus, GoalStatusArray};
use crate::msg::builtin_interfaces::Time;
use crate::msg::unique_identifier_msgs::UUID;
use crate::transport::Guard;
use crate::transport::mailbox::Mailbox;

/// The QoS of an action's status topic (rcl_action's default: reliable,
/// transient-local, depth 1).
pub const STATUS_QOS: crate::transport::Qos = crate::transport::Qos::latched();
/// The QoS of an action's feedback topic (reliable, volatile).
pub const FEEDBACK_QOS: crate::transport::Qos =
    crate::transport::Qos::default_reliable().with_depth(100);

/// The status of a goal (`action_msgs/GoalStatus` values).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GoalState {
    Unknown,
    Accepted,
    Executing,
    Canceling,
    Succeeded,
    Canceled,
    Aborted,
}

impl GoalState {
    pub fn code(self) -> i8 {
        match self {
            Self::Unknown => GoalStatus::STATUS_UNKNOWN,
            Self::Accepted => GoalStatus::STATUS_ACCEPTED,
            Self::Executing => GoalStatus::STATUS_EXECUTING,
            Self::Canceling => GoalStatus::STATUS_CANCELING,
            Self::Succeeded => GoalStatus::STATUS_SUCCEEDED,
            Self::Canceled => GoalStatus::STATUS_CANCELED,
            Self::Aborted => GoalStatus::STATUS_ABORTED,
        }
    }

    pub fn from_code(code: i8) -> Self {
        match code {
            GoalStatus::STATUS_ACCEPTED => Self::Accepted,
            GoalStatus::STATUS_EXECUTING => Self::Executing,
            GoalStatus::STATUS_CANCELING => Self::Canceling,
            GoalStatus::STATUS_SUCCEEDED => Self::Succeeded,
            GoalStatus::STATUS_CANCELED => Self::Canceled,
            GoalStatus::STATUS_ABORTED => Self::Aborted,
            _ => Self::Unknown,
        }
    }

    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Succeeded | Self::Canceled | Self::Aborted)
    }

    pub fn terminal(self) -> Option<crate::msg::TerminalState> {
        use crate::msg::TerminalState as T;
        match self {
            Self::Succeeded => Some(T::Succeeded),
            Self::Canceled => Some(T::Canceled),
            Self::Aborted => Some(T::Aborted),
            _ => None,
        }
    }
}

/// The `SendGoal` request of the action protocol.
#[derive(Debug, Clone)]
pub(crate) struct GoalRequest<G> {
    pub goal_id: UUID,
    pub goal: G,
}

/// The `SendGoal` response.
#[derive(Debug, Clone, Default)]
pub(crate) struct GoalResponse {
    pub accepted: bool,
    pub stamp: Time,
}

/// The `GetResult` response.
#[derive(Debug, Clone, Default)]
pub(crate) struct ResultResponse<R> {
    pub status: i8,
    pub result: R,
}

/// A request that arrived at a server, with the way to answer it.
#[derive(Debug)]
pub(crate) struct Incoming<Q, P> {
    pub request: Q,
    pub reply: oneshot::Sender<P>,
}

pub(crate) type FeedbackSink<F> =
    std::sync::Arc<dyn Fn(UUID, F) -> Result<(), RosError> + Send + Sync>;

/// What a backend hands the server: incoming requests and the way to publish.
pub(crate) struct ServerPorts<A: RosAction> {
    pub goals: mpsc::UnboundedReceiver<Incoming<GoalRequest<A::Goal>, GoalResponse>>,
    pub cancels: mpsc::UnboundedReceiver<Incoming<CancelGoalRequest, CancelGoalResponse>>,
    pub results: mpsc::UnboundedReceiver<Incoming<UUID, ResultResponse<A::Result>>>,
    pub feedback: FeedbackSink<A::Feedback>,
    pub status: Box<dyn Fn(GoalStatusArray) -> Result<(), RosError> + Send + Sync>,
    pub guard: Guard,
}

/// What a backend hands the client.
pub(crate) struct ClientPorts<A: RosAction> {
    pub port: Box<dyn ActionClientPort<A>>,
    pub feedback: std::sync::Arc<Mailbox<(UUID, A::Feedback)>>,
    pub status: std::sync::Arc<Mailbox<GoalStatusArray>>,
}

#[async_trait::async_trait]
pub(crate) trait ActionClientPort<A: RosAction>: Send + Sync {
    async fn send_goal(&self, request: GoalRequest<A::Goal>) -> Result<GoalResponse, RosError>;
    async fn cancel(&self, request: CancelGoalRequest) -> Result<CancelGoalResponse, RosError>;
    async fn get_result(&self, goal_id: UUID) -> Result<ResultResponse<A::Result>, RosError>;
    /// Whether the server's services and topics are all matched.
    fn server_ready(&self) -> bool;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn goal_state_codes_round_trip() {
        for s in [
            GoalState::Unknown,
            GoalState::Accepted,
            GoalState::Executing,
            GoalState::Canceling,
            GoalState::Succeeded,
            GoalState::Canceled,
            GoalState::Aborted,
        ] {
            assert_eq!(GoalState::from_code(s.code()), s);
            assert_eq!(s.is_terminal(), s.terminal().is_some());
        }
        assert_eq!(GoalState::from_code(42), GoalState::Unknown);
    }
}
