//! Requests a server took and has not answered yet, kept where they outlive the
//! process: a server whose process dies mid-request leaves its clients waiting for a
//! reply that will never come (ROS 2 services have no timeout of their own, and
//! rclpy's and rclcpp's clients wait forever). The node keeps a record of the open
//! requests ([`RequestRecord`]); the process that takes its place reads it and answers
//! each one ([`Recorded::orphans`]), so the client hears that the server restarted.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::msg::unique_identifier_msgs::UUID;

/// One request as the wire names it: the client's request writer and the request's
/// sequence number (`rmw_request_id_t`). A reply carrying it reaches the client that
/// sent the request, from any process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct RequestId {
    /// The GUID (GID) of the client's request writer.
    pub writer: [u8; 16],
    pub sequence: i64,
}

impl RequestId {
    /// The first half of the client's writer GUID, which names its process: every
    /// service mapping carries it (Cyclone's puts its own client id in the second).
    pub fn client_process(&self) -> [u8; 8] {
        let mut prefix = [0u8; 8];
        prefix.copy_from_slice(&self.writer[..8]);
        prefix
    }
}

impl std::fmt::Display for RequestId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for b in &self.writer {
            write!(f, "{b:02x}")?;
        }
        write!(f, "#{}", self.sequence)
    }
}

/// Told of every request a recorded server takes and of its answer; keeps them where
/// the next process of the node finds them (a file, a database).
pub trait RequestRecord: Send + Sync {
    /// A request to `endpoint` (a service name, or an action's
    /// `<action>/_action/get_result`) was taken; `goal` is the goal it asks about.
    fn taken(&self, endpoint: &str, id: RequestId, goal: Option<UUID>);
    /// The request was answered (or its answer sent); it is no longer open.
    fn answered(&self, endpoint: &str, id: RequestId);
    /// A goal of `action` was accepted: it is unfinished until [`Self::goal_ended`].
    fn goal_accepted(&self, action: &str, goal: UUID);
    fn goal_ended(&self, action: &str, goal: UUID);
}

/// A service server that records its requests and answers its previous process's.
pub struct Recorded<R> {
    pub record: Arc<dyn RequestRecord>,
    /// Requests a previous process took and never answered: each gets
    /// `orphan_answer` once its client is seen on the reply topic (or after a bounded
    /// wait), then is marked answered.
    pub orphans: Vec<RequestId>,
    pub orphan_answer: R,
}

impl<R> std::fmt::Debug for Recorded<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorded")
            .field("orphans", &self.orphans)
            .finish()
    }
}

/// A result request a previous process of an action server took for a goal it never
/// finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OrphanResult {
    pub id: RequestId,
    pub goal: UUID,
}

/// An action's result endpoint, as [`RequestRecord`] names it.
pub fn result_endpoint(action: &str) -> String {
    format!("{action}/_action/get_result")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_client_process_is_the_first_half_of_the_guid() {
        let mut writer = [0u8; 16];
        for (i, b) in writer.iter_mut().enumerate() {
            *b = i as u8;
        }
        let id = RequestId {
            writer,
            sequence: 7,
        };
        assert_eq!(id.client_process(), [0, 1, 2, 3, 4, 5, 6, 7]);
        assert!(id.to_string().ends_with("0c0d0e0f#7"), "{id}");
    }
}
