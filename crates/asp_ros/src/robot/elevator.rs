//! [`Elevator`] over `asp_interfaces/action/RideElevator` (sim_node in a simulated
//! building; a site's elevator integration on a robot).

use asp_core::robot::{CancellationToken, Elevator};
use async_trait::async_trait;
use tracing::debug;

use crate::RosError;
use crate::action::ActionClient;
use crate::msg::TerminalState;
use crate::msg::asp_interfaces::{RideElevator, RideElevatorGoal};
use crate::transport::Node;

/// Rides through the RideElevator action.
#[derive(Debug, Clone)]
pub struct RideElevatorClient {
    client: ActionClient<RideElevator>,
}

impl RideElevatorClient {
    pub fn new(node: &Node, action: &str) -> Result<Self, RosError> {
        Ok(Self {
            client: node.action_client::<RideElevator>(action)?,
        })
    }
}

#[async_trait]
impl Elevator for RideElevatorClient {
    async fn ride(&self, storey: u32, cancel: &CancellationToken) -> Result<u32, String> {
        let r = self
            .client
            .execute(RideElevatorGoal { storey }, cancel, |f| {
                debug!(state = %f.state, storey = f.storey, "elevator");
            })
            .await
            .map_err(|e| format!("the elevator did not answer: {e}"))?;
        match r.state {
            TerminalState::Succeeded => Ok(r.result.storey),
            _ if r.result.error_msg.is_empty() => Err(format!("the ride ended {:?}", r.state)),
            _ => Err(r.result.error_msg),
        }
    }
}
