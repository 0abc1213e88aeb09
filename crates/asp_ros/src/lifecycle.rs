//! Managed nodes (REP-2006, "node lifecycle"): the state machine `ros2 lifecycle` and
//! Nav2's lifecycle manager drive, served as `<node>/change_state`, `get_state`,
//! `get_available_states`, `get_available_transitions` and `get_transition_graph`, with
//! every step announced on `<node>/transition_event`.
//!
//! [`StateMachine`] is the pure part: rcl_lifecycle's default machine (its ids and
//! labels), a request's label taking precedence over its id as in rclcpp. A transition
//! runs through its transition state (`activating`, …) to its goal state; the node's
//! work needs no callbacks to refuse: its only effect is the state, which the node
//! follows through [`Lifecycle::watch`] (an inactive node refuses goals and holds the
//! robot).

use std::sync::{Arc, Mutex};

use tokio::sync::watch;
use tracing::{info, warn};

use crate::msg::lifecycle_msgs::{
    ChangeState, ChangeStateRequest, ChangeStateResponse, GetAvailableStates,
    GetAvailableStatesRequest, GetAvailableStatesResponse, GetAvailableTransitions,
    GetAvailableTransitionsRequest, GetAvailableTransitionsResponse, GetState, GetStateRequest,
    GetStateResponse, State as StateMsg, Transition as TransitionMsg, TransitionDescription,
    TransitionEvent,
};
use crate::transport::{Publisher, ServiceServer};
use crate::{Node, Qos, RosError};

/// A primary state of a managed node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrimaryState {
    Unconfigured,
    Inactive,
    Active,
    Finalized,
}

impl PrimaryState {
    pub const ALL: [Self; 4] = [
        Self::Unconfigured,
        Self::Inactive,
        Self::Active,
        Self::Finalized,
    ];

    pub fn id(self) -> u8 {
        match self {
            Self::Unconfigured => StateMsg::PRIMARY_STATE_UNCONFIGURED,
            Self::Inactive => StateMsg::PRIMARY_STATE_INACTIVE,
            Self::Active => StateMsg::PRIMARY_STATE_ACTIVE,
            Self::Finalized => StateMsg::PRIMARY_STATE_FINALIZED,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Self::Unconfigured => "unconfigured",
            Self::Inactive => "inactive",
            Self::Active => "active",
            Self::Finalized => "finalized",
        }
    }

    pub fn to_msg(self) -> StateMsg {
        state(self.id(), self.label())
    }

    /// The state a configuration names (`unconfigured`, `inactive`, `active`).
    pub fn from_label(label: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.label() == label)
    }
}

impl std::fmt::Display for PrimaryState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.label())
    }
}

fn state(id: u8, label: &str) -> StateMsg {
    StateMsg {
        id,
        label: label.to_owned(),
    }
}

fn transition(id: u8, label: &str) -> TransitionMsg {
    TransitionMsg {
        id,
        label: label.to_owned(),
    }
}

/// One transition a client can ask for: from `from` through the transition state
/// `via` to `to`, completed by the transition `done`.
#[derive(Debug, Clone, Copy)]
struct Edge {
    id: u8,
    label: &'static str,
    from: PrimaryState,
    via: (u8, &'static str),
    done: u8,
    to: PrimaryState,
}

/// rcl_lifecycle's default state machine, without its error paths (no callback here
/// fails).
const EDGES: [Edge; 7] = {
    use PrimaryState::{Active, Finalized, Inactive, Unconfigured};
    const CONFIGURING: (u8, &str) = (StateMsg::TRANSITION_STATE_CONFIGURING, "configuring");
    const CLEANINGUP: (u8, &str) = (StateMsg::TRANSITION_STATE_CLEANINGUP, "cleaningup");
    const SHUTTINGDOWN: (u8, &str) = (StateMsg::TRANSITION_STATE_SHUTTINGDOWN, "shuttingdown");
    const ACTIVATING: (u8, &str) = (StateMsg::TRANSITION_STATE_ACTIVATING, "activating");
    const DEACTIVATING: (u8, &str) = (StateMsg::TRANSITION_STATE_DEACTIVATING, "deactivating");
    [
        Edge {
            id: TransitionMsg::TRANSITION_CONFIGURE,
            label: "configure",
            from: Unconfigured,
            via: CONFIGURING,
            done: TransitionMsg::TRANSITION_ON_CONFIGURE_SUCCESS,
            to: Inactive,
        },
        Edge {
            id: TransitionMsg::TRANSITION_CLEANUP,
            label: "cleanup",
            from: Inactive,
            via: CLEANINGUP,
            done: TransitionMsg::TRANSITION_ON_CLEANUP_SUCCESS,
            to: Unconfigured,
        },
        Edge {
            id: TransitionMsg::TRANSITION_ACTIVATE,
            label: "activate",
            from: Inactive,
            via: ACTIVATING,
            done: TransitionMsg::TRANSITION_ON_ACTIVATE_SUCCESS,
            to: Active,
        },
        Edge {
            id: TransitionMsg::TRANSITION_DEACTIVATE,
            label: "deactivate",
            from: Active,
            via: DEACTIVATING,
            done: TransitionMsg::TRANSITION_ON_DEACTIVATE_SUCCESS,
            to: Inactive,
        },
        Edge {
            id: TransitionMsg::TRANSITION_UNCONFIGURED_SHUTDOWN,
            label: "shutdown",
            from: Unconfigured,
            via: SHUTTINGDOWN,
            done: TransitionMsg::TRANSITION_ON_SHUTDOWN_SUCCESS,
            to: Finalized,
        },
        Edge {
            id: TransitionMsg::TRANSITION_INACTIVE_SHUTDOWN,
            label: "shutdown",
            from: Inactive,
            via: SHUTTINGDOWN,
            done: TransitionMsg::TRANSITION_ON_SHUTDOWN_SUCCESS,
            to: Finalized,
        },
        Edge {
            id: TransitionMsg::TRANSITION_ACTIVE_SHUTDOWN,
            label: "shutdown",
            from: Active,
            via: SHUTTINGDOWN,
            done: TransitionMsg::TRANSITION_ON_SHUTDOWN_SUCCESS,
            to: Finalized,
        },
    ]
};

/// The label rcl gives the transitions that complete a transition state.
const SUCCESS_LABEL: &str = "transition_success";

/// The state machine of one managed node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateMachine {
    current: PrimaryState,
}

impl StateMachine {
    pub fn new(initial: PrimaryState) -> Self {
        Self { current: initial }
    }

    pub fn current(&self) -> PrimaryState {
        self.current
    }

    /// The transitions available from the current state, as `ros2 lifecycle list`
    /// shows them (goal: the transition state).
    pub fn available(&self) -> Vec<TransitionDescription> {
        EDGES
            .iter()
            .filter(|e| e.from == self.current)
            .map(Self::request_description)
            .collect()
    }

    /// Every transition, those that complete a transition state included.
    pub fn graph() -> Vec<TransitionDescription> {
        let mut out: Vec<TransitionDescription> =
            EDGES.iter().map(Self::request_description).collect();
        for e in &EDGES {
            let done = TransitionDescription {
                transition: transition(e.done, SUCCESS_LABEL),
                start_state: state(e.via.0, e.via.1),
                goal_state: e.to.to_msg(),
            };
            if !out.contains(&done) {
                out.push(done);
            }
        }
        out
    }

    /// Every state: the primary ones, then the transition states.
    pub fn states() -> Vec<StateMsg> {
        let mut out: Vec<StateMsg> = PrimaryState::ALL.iter().map(|s| s.to_msg()).collect();
        for e in &EDGES {
            let s = state(e.via.0, e.via.1);
            if !out.contains(&s) {
                out.push(s);
            }
        }
        out
    }

    fn request_description(e: &Edge) -> TransitionDescription {
        TransitionDescription {
            transition: transition(e.id, e.label),
            start_state: e.from.to_msg(),
            goal_state: state(e.via.0, e.via.1),
        }
    }

    /// Runs the transition `requested` names (by label when it has one, as rclcpp
    /// does, else by id) and returns its steps as transition events; an unavailable
    /// one is an error naming the state and what is available.
    pub fn apply(&mut self, requested: &TransitionMsg) -> Result<Vec<TransitionEvent>, String> {
        let from = self.current;
        let edge = EDGES.iter().find(|e| {
            e.from == from
                && if requested.label.is_empty() {
                    e.id == requested.id
                } else {
                    e.label == requested.label
                }
        });
        let Some(edge) = edge else {
            let what = if requested.label.is_empty() {
                format!("transition id {}", requested.id)
            } else {
                format!("transition {:?}", requested.label)
            };
            let available: Vec<&str> = EDGES
                .iter()
                .filter(|e| e.from == from)
                .map(|e| e.label)
                .collect();
            return Err(format!(
                "{what} is not available in state {from} (available: {})",
                if available.is_empty() {
                    "none".to_owned()
                } else {
                    available.join(", ")
                }
            ));
        };
        self.current = edge.to;
        let now = now_ns();
        Ok(vec![
            TransitionEvent {
                timestamp: now,
                transition: transition(edge.id, edge.label),
                start_state: from.to_msg(),
                goal_state: state(edge.via.0, edge.via.1),
            },
            TransitionEvent {
                timestamp: now,
                transition: transition(edge.done, SUCCESS_LABEL),
                start_state: state(edge.via.0, edge.via.1),
                goal_state: edge.to.to_msg(),
            },
        ])
    }
}

fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// A node's lifecycle, served; dropping it stops the services.
#[derive(Debug)]
pub struct Lifecycle {
    state: watch::Receiver<PrimaryState>,
    _servers: Vec<ServiceServer>,
    /// Keeps an unmanaged node's state open (always active).
    _fixed: Option<watch::Sender<PrimaryState>>,
}

impl Lifecycle {
    /// The lifecycle of a node that is not managed: always active, no services.
    pub fn unmanaged() -> Self {
        let (tx, rx) = watch::channel(PrimaryState::Active);
        Self {
            state: rx,
            _servers: Vec::new(),
            _fixed: Some(tx),
        }
    }

    /// The state, to follow.
    pub fn watch(&self) -> watch::Receiver<PrimaryState> {
        self.state.clone()
    }

    pub fn current(&self) -> PrimaryState {
        *self.state.borrow()
    }
}

/// Serves the lifecycle of `node`, starting in `initial`.
pub fn serve_lifecycle(node: &Node, initial: PrimaryState) -> Result<Lifecycle, RosError> {
    let base = node.name().trim_end_matches('/').to_owned();
    let at = |s: &str| format!("{base}/{s}");
    let events: Publisher<TransitionEvent> = node.publisher(
        &at("transition_event"),
        Qos::default_reliable().with_depth(10),
    )?;
    let machine = Arc::new(Mutex::new(StateMachine::new(initial)));
    let (tx, rx) = watch::channel(initial);
    let lock = |m: &Mutex<StateMachine>| *m.lock().unwrap_or_else(|e| e.into_inner());
    let mut servers = Vec::new();

    let m = machine.clone();
    let name = base.clone();
    servers.push(node.serve::<ChangeState, _, _>(
        &at("change_state"),
        move |req: ChangeStateRequest| {
            let applied = {
                let mut guard = m.lock().unwrap_or_else(|e| e.into_inner());
                let from = guard.current();
                guard
                    .apply(&req.transition)
                    .map(|steps| (from, guard.current(), steps))
            };
            let success = match applied {
                Ok((from, to, steps)) => {
                    info!(node = %name, "lifecycle: {from} → {to}");
                    tx.send_replace(to);
                    for step in steps {
                        if let Err(e) = events.publish(step) {
                            warn!(node = %name, "publishing a transition event: {e}");
                        }
                    }
                    true
                }
                Err(e) => {
                    warn!(node = %name, "lifecycle: {e}");
                    false
                }
            };
            async move { ChangeStateResponse { success } }
        },
    )?);
    let m = machine.clone();
    servers.push(
        node.serve::<GetState, _, _>(&at("get_state"), move |_: GetStateRequest| {
            let current_state = lock(&m).current().to_msg();
            async move { GetStateResponse { current_state } }
        })?,
    );
    servers.push(node.serve::<GetAvailableStates, _, _>(
        &at("get_available_states"),
        |_: GetAvailableStatesRequest| async {
            GetAvailableStatesResponse {
                available_states: StateMachine::states(),
            }
        },
    )?);
    let m = machine;
    servers.push(node.serve::<GetAvailableTransitions, _, _>(
        &at("get_available_transitions"),
        move |_: GetAvailableTransitionsRequest| {
            let available_transitions = lock(&m).available();
            async move {
                GetAvailableTransitionsResponse {
                    available_transitions,
                }
            }
        },
    )?);
    servers.push(node.serve::<GetAvailableTransitions, _, _>(
        &at("get_transition_graph"),
        |_: GetAvailableTransitionsRequest| async {
            GetAvailableTransitionsResponse {
                available_transitions: StateMachine::graph(),
            }
        },
    )?);
    Ok(Lifecycle {
        state: rx,
        _servers: servers,
        _fixed: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn by_label(label: &str) -> TransitionMsg {
        transition(0, label)
    }

    #[test]
    fn deactivate_then_activate_walks_through_the_transition_states() {
        let mut m = StateMachine::new(PrimaryState::Active);
        let steps = m.apply(&by_label("deactivate")).unwrap();
        assert_eq!(m.current(), PrimaryState::Inactive);
        assert_eq!(steps[0].start_state.label, "active");
        assert_eq!(steps[0].goal_state.label, "deactivating");
        assert_eq!(steps[0].transition.id, TransitionMsg::TRANSITION_DEACTIVATE);
        assert_eq!(
            steps[1].transition.id,
            TransitionMsg::TRANSITION_ON_DEACTIVATE_SUCCESS
        );
        assert_eq!(steps[1].goal_state.id, StateMsg::PRIMARY_STATE_INACTIVE);
        m.apply(&transition(TransitionMsg::TRANSITION_ACTIVATE, ""))
            .unwrap();
        assert_eq!(m.current(), PrimaryState::Active);
    }

    #[test]
    fn the_label_takes_precedence_and_shutdown_resolves_per_state() {
        // ros2 service call leaves the id 0 (create): the label decides
        let mut m = StateMachine::new(PrimaryState::Inactive);
        let steps = m.apply(&by_label("shutdown")).unwrap();
        assert_eq!(
            steps[0].transition.id,
            TransitionMsg::TRANSITION_INACTIVE_SHUTDOWN
        );
        assert_eq!(m.current(), PrimaryState::Finalized);
        let mut a = StateMachine::new(PrimaryState::Active);
        let steps = a.apply(&by_label("shutdown")).unwrap();
        assert_eq!(
            steps[0].transition.id,
            TransitionMsg::TRANSITION_ACTIVE_SHUTDOWN
        );
    }

    #[test]
    fn an_unavailable_transition_changes_nothing_and_says_what_is_available() {
        let mut m = StateMachine::new(PrimaryState::Active);
        let e = m.apply(&by_label("configure")).unwrap_err();
        assert!(
            e.contains("\"configure\"") && e.contains("state active"),
            "{e}"
        );
        assert!(e.contains("deactivate, shutdown"), "{e}");
        assert_eq!(m.current(), PrimaryState::Active);
        let e = m
            .apply(&transition(TransitionMsg::TRANSITION_ACTIVATE, ""))
            .unwrap_err();
        assert!(e.contains("transition id 3"), "{e}");
        let mut f = StateMachine::new(PrimaryState::Finalized);
        let e = f.apply(&by_label("activate")).unwrap_err();
        assert!(e.contains("available: none"), "{e}");
    }

    #[test]
    fn available_transitions_and_graph_are_those_of_rcl() {
        let m = StateMachine::new(PrimaryState::Unconfigured);
        let labels: Vec<String> = m
            .available()
            .into_iter()
            .map(|d| d.transition.label)
            .collect();
        assert_eq!(labels, ["configure", "shutdown"]);
        let graph = StateMachine::graph();
        // seven requests, five completions (one shared by the three shutdowns)
        assert_eq!(graph.len(), 12);
        assert!(graph.iter().any(|d| d.transition.id
            == TransitionMsg::TRANSITION_ON_ACTIVATE_SUCCESS
            && d.start_state.label == "activating"
            && d.goal_state.label == "active"));
        let states = StateMachine::states();
        assert_eq!(states.len(), 9);
        assert_eq!(
            PrimaryState::from_label("inactive"),
            Some(PrimaryState::Inactive)
        );
    }
}
