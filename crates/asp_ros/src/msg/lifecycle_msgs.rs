//! `lifecycle_msgs`: the managed-node (REP-2006) states, transitions and services that
//! `ros2 lifecycle` and Nav2's lifecycle manager use. An empty request carries the one
//! `uint8 structure_needs_at_least_one_member` every RMW puts on the wire for it.

crate::ros_message! {
    /// A state: a primary one (1–4) or a transition state (10–15).
    pub struct State in lifecycle_msgs / msg {
        pub id: u8,
        pub label: String,
    }
    consts {
        PRIMARY_STATE_UNKNOWN: u8 = 0,
        PRIMARY_STATE_UNCONFIGURED: u8 = 1,
        PRIMARY_STATE_INACTIVE: u8 = 2,
        PRIMARY_STATE_ACTIVE: u8 = 3,
        PRIMARY_STATE_FINALIZED: u8 = 4,
        TRANSITION_STATE_CONFIGURING: u8 = 10,
        TRANSITION_STATE_CLEANINGUP: u8 = 11,
        TRANSITION_STATE_SHUTTINGDOWN: u8 = 12,
        TRANSITION_STATE_ACTIVATING: u8 = 13,
        TRANSITION_STATE_DEACTIVATING: u8 = 14,
        TRANSITION_STATE_ERRORPROCESSING: u8 = 15,
    }

    /// A transition; a request naming a `label` is looked up by it (the id is ignored).
    pub struct Transition in lifecycle_msgs / msg {
        pub id: u8,
        pub label: String,
    }
    consts {
        TRANSITION_CREATE: u8 = 0,
        TRANSITION_CONFIGURE: u8 = 1,
        TRANSITION_CLEANUP: u8 = 2,
        TRANSITION_ACTIVATE: u8 = 3,
        TRANSITION_DEACTIVATE: u8 = 4,
        TRANSITION_UNCONFIGURED_SHUTDOWN: u8 = 5,
        TRANSITION_INACTIVE_SHUTDOWN: u8 = 6,
        TRANSITION_ACTIVE_SHUTDOWN: u8 = 7,
        TRANSITION_DESTROY: u8 = 8,
        TRANSITION_ON_CONFIGURE_SUCCESS: u8 = 10,
        TRANSITION_ON_CONFIGURE_FAILURE: u8 = 11,
        TRANSITION_ON_CONFIGURE_ERROR: u8 = 12,
        TRANSITION_ON_CLEANUP_SUCCESS: u8 = 20,
        TRANSITION_ON_CLEANUP_FAILURE: u8 = 21,
        TRANSITION_ON_CLEANUP_ERROR: u8 = 22,
        TRANSITION_ON_ACTIVATE_SUCCESS: u8 = 30,
        TRANSITION_ON_ACTIVATE_FAILURE: u8 = 31,
        TRANSITION_ON_ACTIVATE_ERROR: u8 = 32,
        TRANSITION_ON_DEACTIVATE_SUCCESS: u8 = 40,
        TRANSITION_ON_DEACTIVATE_FAILURE: u8 = 41,
        TRANSITION_ON_DEACTIVATE_ERROR: u8 = 42,
        TRANSITION_ON_SHUTDOWN_SUCCESS: u8 = 50,
        TRANSITION_ON_SHUTDOWN_FAILURE: u8 = 51,
        TRANSITION_ON_SHUTDOWN_ERROR: u8 = 52,
        TRANSITION_ON_ERROR_SUCCESS: u8 = 60,
        TRANSITION_ON_ERROR_FAILURE: u8 = 61,
        TRANSITION_ON_ERROR_ERROR: u8 = 62,
        TRANSITION_CALLBACK_SUCCESS: u8 = 97,
        TRANSITION_CALLBACK_FAILURE: u8 = 98,
        TRANSITION_CALLBACK_ERROR: u8 = 99,
    }

    pub struct TransitionDescription in lifecycle_msgs / msg {
        pub transition: Transition,
        pub start_state: State,
        pub goal_state: State,
    }

    /// Published on `<node>/transition_event` at each step of a transition.
    pub struct TransitionEvent in lifecycle_msgs / msg {
        /// Nanoseconds since the epoch.
        pub timestamp: u64,
        pub transition: Transition,
        pub start_state: State,
        pub goal_state: State,
    }

    pub struct ChangeStateRequest in lifecycle_msgs / srv as "ChangeState_Request" {
        pub transition: Transition,
    }
    pub struct ChangeStateResponse in lifecycle_msgs / srv as "ChangeState_Response" {
        pub success: bool,
    }

    pub struct GetStateRequest in lifecycle_msgs / srv as "GetState_Request" {
        pub structure_needs_at_least_one_member: u8,
    }
    pub struct GetStateResponse in lifecycle_msgs / srv as "GetState_Response" {
        pub current_state: State,
    }

    pub struct GetAvailableStatesRequest in lifecycle_msgs / srv as "GetAvailableStates_Request" {
        pub structure_needs_at_least_one_member: u8,
    }
    pub struct GetAvailableStatesResponse in lifecycle_msgs / srv as "GetAvailableStates_Response" {
        pub available_states: Vec<State>,
    }

    pub struct GetAvailableTransitionsRequest in lifecycle_msgs / srv as "GetAvailableTransitions_Request" {
        pub structure_needs_at_least_one_member: u8,
    }
    pub struct GetAvailableTransitionsResponse in lifecycle_msgs / srv as "GetAvailableTransitions_Response" {
        pub available_transitions: Vec<TransitionDescription>,
    }
}

crate::ros_service! {
    /// `<node>/change_state`.
    pub struct ChangeState in lifecycle_msgs { ChangeStateRequest, ChangeStateResponse }
}
crate::ros_service! {
    /// `<node>/get_state`.
    pub struct GetState in lifecycle_msgs { GetStateRequest, GetStateResponse }
}
crate::ros_service! {
    /// `<node>/get_available_states`.
    pub struct GetAvailableStates in lifecycle_msgs {
        GetAvailableStatesRequest, GetAvailableStatesResponse
    }
}
crate::ros_service! {
    /// `<node>/get_available_transitions` and `<node>/get_transition_graph`.
    pub struct GetAvailableTransitions in lifecycle_msgs {
        GetAvailableTransitionsRequest, GetAvailableTransitionsResponse
    }
}

crate::msg::register!(
    State,
    Transition,
    TransitionDescription,
    TransitionEvent,
    ChangeStateRequest,
    ChangeStateResponse,
    GetStateRequest,
    GetStateResponse,
    GetAvailableStatesRequest,
    GetAvailableStatesResponse,
    GetAvailableTransitionsRequest,
    GetAvailableTransitionsResponse,
);
