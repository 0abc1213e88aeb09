//! affordance_node: affordance detection with the A-Harness loop and the affordance
//! memory (`--no-memory` runs without the database).

use std::process::ExitCode;

use asp_nodes::nodes::NodeOptions;

fn main() -> ExitCode {
    asp_nodes::run::node_main("affordance_node", |cfg, transport, args| async move {
        let options = NodeOptions {
            memory: !args.no_memory,
            ..NodeOptions::default()
        };
        asp_nodes::nodes::affordance_node(&cfg, &transport, &options).await
    })
}
