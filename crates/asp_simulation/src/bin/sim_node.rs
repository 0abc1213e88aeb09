//! sim_node: the embedded simulator serving what a robot stack would (camera topics, TF,
//! `/map`, MoveGroup, NavigateToPose, GripperCommand, planning scene) plus the sim-only
//! ground truth. `--scenario FILE` starts from a scenario's set-up instead of
//! `sim_node.world` and `sim_node.start_pose`.

use std::process::ExitCode;

use asp_simulation::SimulationError;

fn main() -> ExitCode {
    asp_nodes::run::node_main("sim_node", |cfg, transport, args| async move {
        let sim: asp_sim::SimRobot = match &args.scenario {
            Some(file) => {
                let sc = asp_sim::scenario::Scenario::load(cfg.config_path(file))
                    .map_err(SimulationError::from)?;
                asp_simulation::scenario_simulation(&cfg, &sc, None)?
            }
            None => asp_simulation::simulation(&cfg, None)?,
        };
        let node = transport.node("sim_node").map_err(SimulationError::from)?;
        asp_simulation::start_sim_node(&cfg, &node, sim).await
    })
}
