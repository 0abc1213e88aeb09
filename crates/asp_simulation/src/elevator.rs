//! sim_node's elevator (`asp_interfaces/action/RideElevator` on
//! [`asp_nodes::names::ELEVATOR_RIDE_ACTION`]): in a building world, rides the base from
//! the storey it stands on to another (see [`asp_sim::storeys`]). On a robot the site's
//! elevator integration serves the same action.

use std::sync::Arc;

use asp_ros::action::{GoalContext, GoalHandler, GoalOutcome};
use asp_ros::msg::asp_interfaces::{
    RideElevator, RideElevatorFeedback, RideElevatorGoal, RideElevatorResult,
};
use asp_sim::SimRobot;
use asp_sim::storeys::RideError;
use async_trait::async_trait;
use tracing::{info, warn};

use crate::node::StatePublisher;

/// Serves rides on the simulation, publishing `/tf` and `/map` after each.
pub(crate) struct ElevatorHandler {
    pub(crate) sim: SimRobot,
    pub(crate) state: Arc<StatePublisher>,
}

#[async_trait]
impl GoalHandler<RideElevator> for ElevatorHandler {
    fn validate(&self, goal: &RideElevatorGoal) -> Result<(), String> {
        match self.sim.storey() {
            None => Err(RideError::NotInBuilding.to_string()),
            Some(_) => {
                let _ = goal;
                Ok(())
            }
        }
    }

    async fn execute(
        &self,
        goal: RideElevatorGoal,
        ctx: GoalContext<RideElevator>,
    ) -> GoalOutcome<RideElevatorResult> {
        let to = goal.storey as usize;
        let feedback = |state: &str, storey: usize| {
            let f = RideElevatorFeedback {
                state: state.to_owned(),
                storey: storey as u32,
            };
            if let Err(e) = ctx.publish_feedback(f) {
                warn!("elevator feedback: {e}");
            }
        };
        let ride = self
            .sim
            .ride_elevator(to, ctx.cancellation(), &feedback)
            .await;
        self.state.publish_state();
        self.state.publish_grid_if_changed();
        let (storey, height_m) = self.sim.storey().unwrap_or((0, 0.0));
        let result = |success: bool, error_msg: String| RideElevatorResult {
            success,
            error_msg,
            storey: storey as u32,
            height_m,
        };
        match ride {
            Ok(_) => {
                info!(storey, height_m, "the elevator arrived");
                GoalOutcome::Succeeded(result(true, String::new()))
            }
            Err(e @ RideError::Cancelled { .. }) => {
                GoalOutcome::Canceled(result(false, e.to_string()))
            }
            Err(e) => {
                warn!(to, "elevator ride refused: {e}");
                GoalOutcome::Aborted(result(false, e.to_string()))
            }
        }
    }
}
