//! The crate's error type; every message names the topic, service, action, field or
//! value concerned.

/// Errors of the ROS layer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RosError {
    /// The DDS implementation refused an operation.
    #[error("DDS: {0}")]
    Dds(String),
    /// A topic, service, action or node name that ROS 2 does not accept.
    #[error("invalid ROS name {name:?}: {reason}")]
    InvalidName { name: String, reason: String },
    /// Two endpoints of one name with different types (in-process backend).
    #[error("{kind} {name} carries {existing}, not {requested}")]
    TypeMismatch {
        kind: &'static str,
        name: String,
        existing: String,
        requested: String,
    },
    /// A second server for a service or action name (in-process backend).
    #[error("{kind} {name} already has a server in this process")]
    DuplicateServer { kind: &'static str, name: String },
    /// Nobody answered on a service or action within the discovery timeout.
    #[error(
        "{what} did not appear within {timeout_s} s (is its server running, on the same ROS_DOMAIN_ID and RMW mapping?)"
    )]
    NotDiscovered { what: String, timeout_s: f64 },
    /// A request got no reply in time.
    #[error("{what}: no reply within {timeout_s} s")]
    Timeout { what: String, timeout_s: f64 },
    /// The action server rejected a goal.
    #[error("{action}: goal rejected{}", if reason.is_empty() { String::new() } else { format!(": {reason}") })]
    GoalRejected { action: String, reason: String },
    /// The other side or this side shut down.
    #[error("{0} is closed")]
    Closed(String),
    /// A message could not be converted to or from a domain type.
    #[error("{0}")]
    Conversion(String),
    /// Bad transport configuration (domain id, RMW name).
    #[error("transport configuration: {0}")]
    Config(String),
}

impl RosError {
    pub(crate) fn dds(context: impl std::fmt::Display, e: impl std::fmt::Display) -> Self {
        RosError::Dds(format!("{context}: {e}"))
    }
}
