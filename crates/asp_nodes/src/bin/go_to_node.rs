//! go_to_node: affordance-facing navigation through Nav2; stopped by the e-stop topic.

use std::process::ExitCode;

fn main() -> ExitCode {
    asp_nodes::run::node_main("go_to_node", |cfg, transport, _| async move {
        asp_nodes::nodes::go_to_node(&cfg, &transport).await
    })
}
