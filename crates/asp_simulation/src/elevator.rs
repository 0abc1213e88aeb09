//! sim_node's elevator (`asp_interfaces/action/RideElevator` on
//! [`asp_nodes::names::ELEVATOR_RIDE_ACTION`]): in a building world, rides the base from
//! the storey it stands on to another (see [`asp_sim::storeys`]). On a robot the site's
//! elevator integration serves the same action.

use std::sync::Arc;

use asp_config::LoadedConfig;
use asp_config::sections::agent::ElevatorStorey;
use asp_sim::building::BuildingIndex;

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

/// The elevator as a site sets it up for recall (`agent_node.building_memory.elevator
/// .storeys`), read from a simulated building's index: each storey's height and where
/// its elevator is.
pub fn elevator_storeys(index: &BuildingIndex) -> Vec<ElevatorStorey> {
    index
        .storeys
        .iter()
        .map(|s| ElevatorStorey {
            height_m: s.height_m,
            spot: s.elevator_xy,
        })
        .collect()
}

/// `cfg` with the simulated building's elevator set up for recall, when `sim` is a
/// building and the configuration names no storeys of its own (the nodes of this
/// process; `asp launch sim` passes [`elevator_override`] to its node processes).
pub fn with_site_elevator(cfg: &LoadedConfig, sim: &SimRobot) -> LoadedConfig {
    let mut cfg = cfg.clone();
    let elevator = &mut cfg.config.agent_node.building_memory.elevator;
    if elevator.storeys.is_empty()
        && let Some(index) = sim.with_state(|s| s.storeys.as_ref().map(|st| st.index.clone()))
    {
        elevator.storeys = elevator_storeys(&index);
    }
    cfg
}

/// The `--set` override that gives node processes the elevator of the building
/// `sim_node.world` names (`None` for a single world, or when the configuration sets
/// storeys of its own).
pub fn elevator_override(
    cfg: &LoadedConfig,
    config_dir: &std::path::Path,
) -> Result<Option<String>, asp_sim::SimError> {
    if !cfg
        .config
        .agent_node
        .building_memory
        .elevator
        .storeys
        .is_empty()
    {
        return Ok(None);
    }
    let file = config_dir.join(&cfg.config.sim_node.world);
    match asp_sim::storeys::load_site(&file)? {
        asp_sim::storeys::Site::World(_) => Ok(None),
        asp_sim::storeys::Site::Building { index, .. } => {
            let storeys: Vec<String> = elevator_storeys(&index)
                .iter()
                .map(|s| {
                    format!(
                        "{{height_m: {}, spot: [{}, {}]}}",
                        s.height_m, s.spot[0], s.spot[1]
                    )
                })
                .collect();
            Ok(Some(format!(
                "agent_node.building_memory.elevator.storeys=[{}]",
                storeys.join(", ")
            )))
        }
    }
}
