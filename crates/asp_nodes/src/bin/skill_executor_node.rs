//! skill_executor_node: skills as MoveIt 2 pose goals and gripper commands, behind the
//! verifier; stopped by the e-stop topic.

use std::process::ExitCode;

fn main() -> ExitCode {
    asp_nodes::run::node_main("skill_executor_node", |cfg, transport, _| async move {
        asp_nodes::nodes::skill_executor_node(&cfg, &transport).await
    })
}
