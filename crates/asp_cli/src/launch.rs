//! `asp launch sim|robot`: the node graph as separate processes over DDS. `sim` starts
//! the sim node and every product node (DDS on loopback, or wherever `ROS_DOMAIN_ID` and
//! the network put them); `robot` starts the product nodes only, against a real robot's
//! MoveIt 2, Nav2, cameras and gripper controller (no render service, no ground-truth
//! observer). Every node's log lines are shown prefixed with its name; a node that exits
//! is started again (`common.supervision.respawn`, up to `max_respawns` times); Ctrl-C
//! stops them all (SIGINT, then SIGKILL after a grace period), and so does a node that
//! exits once too often.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use asp_nodes::launch::{LaunchTarget as Target, Launcher, Respawn};

use crate::{EXIT_CONFIG, EXIT_NOT_BUILT, GlobalArgs, LaunchTarget};

/// Environment variable naming the folder of the node binaries (default: beside `asp`).
pub const BIN_DIR_ENV: &str = "ASP_NODE_BIN_DIR";

fn bin_dir() -> PathBuf {
    if let Some(d) = std::env::var_os(BIN_DIR_ENV) {
        return PathBuf::from(d);
    }
    std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("."))
}

/// Launches `target`; exit 0 when every node stopped cleanly after Ctrl-C.
pub fn launch(global: &GlobalArgs, target: LaunchTarget) -> ExitCode {
    let target = match target {
        LaunchTarget::Sim => Target::Sim,
        LaunchTarget::Robot => Target::Robot,
    };
    // the nodes would each refuse a bad configuration; say it once, before starting any
    let dir = asp_runtime::find_config_dir(global.config_dir.as_deref());
    let mut overrides = target.implied_overrides();
    overrides.extend(global.overrides.iter().cloned());
    let respawn = match asp_runtime::load_config(&dir, &overrides) {
        Ok(cfg) => {
            // a simulated building: the nodes ride its elevator for recall
            if target == Target::Sim {
                match asp_simulation::elevator::elevator_override(&cfg, &dir) {
                    Ok(Some(o)) => overrides.push(o),
                    Ok(None) => {}
                    Err(e) => {
                        eprintln!("configuration error:\nsim_node.world: {e}");
                        return ExitCode::from(EXIT_CONFIG);
                    }
                }
            }
            Respawn::from_config(&cfg.config.common.supervision)
        }
        Err(e) => {
            eprintln!("configuration error:\n{e}");
            return ExitCode::from(EXIT_CONFIG);
        }
    };
    let mut args = vec!["--config-dir".to_owned(), dir.display().to_string()];
    for o in &overrides {
        args.push("--set".into());
        args.push(o.clone());
    }
    let sink = Arc::new(|node: &str, line: &str| {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "[{node}] {line}");
    });
    let launcher = Launcher::new(bin_dir(), args, sink).respawn(respawn);
    let missing = launcher.missing(target);
    if !missing.is_empty() {
        eprintln!(
            "asp launch: node binaries not found: {}\nbuild them with `cargo build -p asp_nodes -p asp_simulation` \
             (or point {BIN_DIR_ENV} at them). Nothing was run.",
            missing
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
        return ExitCode::from(EXIT_NOT_BUILT);
    }
    let runtime = match asp_runtime::async_runtime() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    eprintln!(
        "asp launch {}: starting {} (Ctrl-C stops them all)\n\
         send a goal with: ros2 action send_goal --feedback /asp/execute asp_interfaces/action/ExecuteGoal \"{{goal: 'put the apple in the bowl'}}\"",
        match target {
            Target::Sim => "sim",
            Target::Robot => "robot",
        },
        target.nodes().join(", ")
    );
    let report = runtime.block_on(launcher.run(target, &[], asp_nodes::run::shutdown_signal()));
    match report {
        Ok(r) if r.clean() => {
            eprintln!("asp launch: every node stopped");
            ExitCode::SUCCESS
        }
        Ok(r) => {
            for (node, code) in &r.respawns {
                eprintln!("asp launch: {node} exited ({code:?}) and was started again");
            }
            if let Some((node, code)) = &r.first_exit {
                eprintln!("asp launch: {node} exited ({code:?}); the others were stopped");
            }
            for (node, code) in &r.exits {
                if *code != Some(0) {
                    eprintln!("asp launch: {node} ended with {code:?}");
                }
            }
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("asp launch: {e}");
            ExitCode::FAILURE
        }
    }
}
