//! verifier_node: the commit gate before every skill and the outcome check after it;
//! every verdict on `/asp/verdicts`.

use std::process::ExitCode;

use asp_nodes::nodes::NodeOptions;

fn main() -> ExitCode {
    asp_nodes::run::node_main("verifier_node", |cfg, transport, _| async move {
        asp_nodes::nodes::verifier_node(&cfg, &transport, &NodeOptions::default()).await
    })
}
