//! The product reads no simulator truth: crates that run on a robot may depend on the
//! embedded simulator (`asp_sim`) only for their tests (dev-dependencies).
//!
//! The crates that still do in their library are listed with the reason; the list may only
//! shrink (issue 14 moves the simulator's node and stand-ins out of them).

use std::path::Path;

/// Crates whose library still links the simulator, and why.
const KNOWN: &[(&str, &str)] = &[
    (
        "asp_affordance",
        "its evaluation renders the simulator-generated set",
    ),
    (
        "asp_perception",
        "the map-quality benchmark renders keyframes",
    ),
    (
        "asp_system",
        "the in-process composition over the embedded simulator",
    ),
    ("asp_nodes", "sim_node lives beside the product nodes"),
    (
        "asp_eval",
        "the judge: it reads the scenario's success predicate",
    ),
    ("asp_cli", "`asp run` and `asp eval` start the simulator"),
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
            let name = name.trim();
            if !name.is_empty() && !name.starts_with('#') {
                out.push(name.to_owned());
            }
        }
    }
    out
}

#[test]
fn no_product_crate_links_the_simulator_beyond_the_known_list() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates");
    let mut linking = Vec::new();
    for entry in std::fs::read_dir(&crates).unwrap() {
        let dir = entry.unwrap().path();
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        if name == "asp_sim" {
            continue;
        }
        let Ok(manifest) = std::fs::read_to_string(dir.join("Cargo.toml")) else {
            continue;
        };
        if library_dependencies(&manifest)
            .iter()
            .any(|d| d == "asp_sim")
        {
            linking.push(name);
        }
    }
    linking.sort();
    let unexpected: Vec<&String> = linking
        .iter()
        .filter(|n| !KNOWN.iter().any(|(k, _)| k == n))
        .collect();
    assert!(
        unexpected.is_empty(),
        "these crates link asp_sim in their library; product code must not read simulator truth: {unexpected:?}"
    );
    let stale: Vec<&str> = KNOWN
        .iter()
        .map(|(k, _)| *k)
        .filter(|k| !linking.iter().any(|n| n == k))
        .collect();
    assert!(
        stale.is_empty(),
        "no longer linking asp_sim: take them off the known list: {stale:?}"
    );
    // the skill executor and the verifier, which judge success, are never on it
    for judge in ["asp_skills", "asp_verify", "asp_agent"] {
        assert!(!linking.iter().any(|n| n == judge), "{judge} links asp_sim");
    }
}

#[test]
fn the_parser_reads_only_library_dependencies() {
    let m = "[package]\nname = \"x\"\n[dependencies]\na = \"1\"\n# c = 1\n[dev-dependencies]\nb = \"1\"\n";
    assert_eq!(library_dependencies(m), vec!["a".to_owned()]);
}
