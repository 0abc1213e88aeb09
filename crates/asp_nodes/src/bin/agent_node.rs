//! agent_node: language goals on `/asp/execute_goal` and `/asp/execute`, the symbolic
//! state on `/asp/state`.

use std::process::ExitCode;

fn main() -> ExitCode {
    asp_nodes::run::node_main("agent_node", |cfg, transport, _| async move {
        asp_nodes::agent::agent_node(&cfg, &transport).await
    })
}
