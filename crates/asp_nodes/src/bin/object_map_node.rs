//! object_map_node: the open-vocabulary object map, retrieval and spatial tools.

use std::process::ExitCode;

fn main() -> ExitCode {
    asp_nodes::run::node_main("object_map_node", |cfg, transport, _| async move {
        asp_nodes::nodes::object_map_node(&cfg, &transport).await
    })
}
