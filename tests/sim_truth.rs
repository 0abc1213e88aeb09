//! The product reads no simulator truth: no crate that runs on a robot links the embedded
//! simulator (`asp_sim`), directly or through another crate of the workspace, outside its
//! tests (dev-dependencies).
//!
//! The simulation side is a short, named list: the crate that runs the product against
//! the simulator, the evaluation that judges against the world's truth, the tool that
//! starts both, and the web search stand-in. Everything else — every node binary a robot runs — must not reach
//! `asp_sim` through its library dependencies.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Crates allowed to link the simulator, and why.
const SIMULATION_SIDE: &[(&str, &str)] = &[
    ("asp_sim", "the simulator itself"),
    (
        "asp_simulation",
        "runs the product against the simulator: the sim node, the model stand-ins it starts, the in-process system",
    ),
    (
        "asp_eval",
        "the judge (the scenario's success predicate) and the benchmarks scored against the world's objects",
    ),
    ("asp_cli", "`asp run` and `asp eval` start a simulation"),
    (
        "asp_web_standin",
        "the simulation's web search: it renders the corpus concepts' pictures with the simulator's renderer and answers concept questions from the corpus's truth; a robot's nodes search a SearXNG instance through asp_web",
    ),
];

/// Names under `[dependencies]` (not dev- or build-dependencies) of a Cargo.toml.
fn library_dependencies(manifest: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_deps = false;
    for line in manifest.lines() {
        let t = line.trim();
        if t.starts_with('[') {
            in_deps = t == "[dependencies]";
            continue;
        }
        if in_deps && let Some((name, _)) = t.split_once('=') {
            // `asp_core.workspace = true` names asp_core
            let name = name.trim().split('.').next().unwrap_or_default();
            if !name.is_empty() && !name.starts_with('#') {
                out.push(name.to_owned());
            }
        }
    }
    out
}

/// Every workspace crate with its library dependencies on other workspace crates.
fn workspace_graph() -> BTreeMap<String, Vec<String>> {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates");
    let mut manifests = BTreeMap::new();
    for entry in std::fs::read_dir(&crates).unwrap() {
        let dir = entry.unwrap().path();
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        if let Ok(m) = std::fs::read_to_string(dir.join("Cargo.toml")) {
            manifests.insert(name, m);
        }
    }
    let names: BTreeSet<String> = manifests.keys().cloned().collect();
    manifests
        .into_iter()
        .map(|(name, m)| {
            let deps = library_dependencies(&m)
                .into_iter()
                .filter(|d| names.contains(d))
                .collect();
            (name, deps)
        })
        .collect()
}

/// The path from `from` to `to` through library dependencies, if there is one.
fn path_to(graph: &BTreeMap<String, Vec<String>>, from: &str, to: &str) -> Option<Vec<String>> {
    let mut seen = BTreeSet::new();
    let mut stack = vec![vec![from.to_owned()]];
    while let Some(path) = stack.pop() {
        let last = path.last().unwrap().clone();
        if last == to {
            return Some(path);
        }
        if !seen.insert(last.clone()) {
            continue;
        }
        for d in graph.get(&last).into_iter().flatten() {
            let mut p = path.clone();
            p.push(d.clone());
            stack.push(p);
        }
    }
    None
}

#[test]
fn no_product_crate_reaches_the_simulator() {
    let graph = workspace_graph();
    assert!(graph.contains_key("asp_sim") && graph.contains_key("asp_nodes"));
    let mut offenders = Vec::new();
    for name in graph.keys() {
        if SIMULATION_SIDE.iter().any(|(k, _)| k == name) {
            continue;
        }
        if let Some(path) = path_to(&graph, name, "asp_sim") {
            offenders.push(path.join(" → "));
        }
    }
    assert!(
        offenders.is_empty(),
        "product crates reach asp_sim through their library dependencies; product code must not read simulator truth:\n{}",
        offenders.join("\n")
    );
    // the list only names crates that exist
    for (k, _) in SIMULATION_SIDE {
        assert!(
            graph.contains_key(*k),
            "{k} is on the list but not in crates/"
        );
    }
}

#[test]
fn the_parser_reads_only_library_dependencies() {
    let m = "[package]\nname = \"x\"\n[dependencies]\na = \"1\"\nd.workspace = true\n# c = 1\n[dev-dependencies]\nb = \"1\"\n";
    assert_eq!(library_dependencies(m), ["a", "d"]);
}

#[test]
fn a_dependency_two_crates_away_is_found() {
    let g: BTreeMap<String, Vec<String>> = [
        ("a", vec!["b"]),
        ("b", vec!["c"]),
        ("c", vec![]),
        ("d", vec![]),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.into_iter().map(str::to_owned).collect()))
    .collect();
    assert_eq!(path_to(&g, "a", "c").unwrap(), ["a", "b", "c"]);
    assert!(path_to(&g, "d", "c").is_none());
}
