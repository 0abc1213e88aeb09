//! World files: the shipped worlds load, and malformed worlds are refused with the file,
//! the entry and what is wrong.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

use asp_sim::world::PartFunction;
use asp_sim::{SimError, load_world, parse_world};

fn config() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../config")
}

#[test]
fn shipped_worlds_load_with_their_parts_and_links() {
    let w = load_world(config().join("worlds/tabletop.yaml")).unwrap();
    let mug = w.object("mug").unwrap();
    assert!(mug.part_index("mug handle").is_some());
    let kb = w.object("keyboard").unwrap();
    assert_eq!(
        kb.parts
            .iter()
            .filter(|p| p.function == PartFunction::Key)
            .count(),
        26
    );
    let du = w.object("drawer_unit").unwrap();
    assert_eq!(du.links[0].name, "drawer");
    assert!(w.object("power_adapter").unwrap().mount.is_some());
    // part ids are unique across the world
    let mut ids: Vec<u32> = w
        .objects
        .iter()
        .flat_map(|o| o.parts.iter().map(|p| p.gid))
        .collect();
    let n = ids.len();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), n);

    let a = load_world(config().join("worlds/apartment.yaml")).unwrap();
    for name in [
        "phone",
        "metal_cabinet",
        "egg_near",
        "egg_far",
        "tomato",
        "basket",
        "walls",
    ] {
        assert!(a.object(name).is_some(), "{name}");
    }
    assert_eq!(
        a.object("phone")
            .unwrap()
            .parts
            .iter()
            .filter(|p| p.function == PartFunction::Key)
            .count(),
        12
    );
}

fn invalid(text: &str) -> (String, String) {
    match parse_world(text, "worlds/broken.yaml").unwrap_err() {
        SimError::Invalid {
            file,
            entry,
            problem,
        } => {
            assert_eq!(file, PathBuf::from("worlds/broken.yaml"));
            (entry, problem)
        }
        other => panic!("expected Invalid, got {other:?}"),
    }
}

const HEAD: &str = "name: t\nobjects:\n";

#[test]
fn unknown_keys_name_the_object_and_key() {
    let (entry, problem) = invalid(&format!(
        "{HEAD}  - name: cup\n    shapes:\n      - box: {{size: [0.1, 0.1, 0.1]}}\n  - name: mug\n    shapes:\n      - cylindr: {{radius: 0.1, height: 0.1}}\n"
    ));
    assert!(
        entry.contains("objects[1] (mug)") && entry.contains("shapes[0]"),
        "{entry}"
    );
    assert!(problem.contains("cylindr"), "{problem}");
}

#[test]
fn wrong_types_name_the_path() {
    let (entry, problem) = invalid(&format!(
        "{HEAD}  - name: cup\n    color: [300, 0, 0]\n    shapes:\n      - box: {{size: [0.1, 0.1, 0.1]}}\n"
    ));
    assert!(entry.contains("objects[0] (cup).color"), "{entry}");
    assert!(problem.contains("300"), "{problem}");
}

#[test]
fn semantic_errors_name_entry_and_problem() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "  - name: cup\n    shapes:\n      - box: {size: [0.1, -0.1, 0.1]}\n",
            "objects[0] (cup).shapes[0]",
            "box size y",
        ),
        (
            "  - name: cup\n    shapes:\n      - {}\n",
            "objects[0] (cup).shapes[0]",
            "exactly one of",
        ),
        (
            "  - name: cup\n    shapes: [{sphere: {radius: 0.1}}]\n  - name: cup\n    shapes: [{sphere: {radius: 0.1}}]\n",
            "objects[1] (cup)",
            "duplicate object name",
        ),
        (
            "  - name: Cup\n    shapes: [{sphere: {radius: 0.1}}]\n",
            "objects[0] (Cup)",
            "invalid object name",
        ),
        ("  - name: cup\n", "objects[0] (cup)", "at least one shape"),
        (
            "  - name: plug\n    mount: {holder: strip, axis: [1, 0, 0]}\n    shapes: [{sphere: {radius: 0.1}}]\n",
            "objects[0] (plug).mount",
            "unknown holder object \"strip\"",
        ),
        (
            "  - name: bell\n    shapes: [{sphere: {radius: 0.1}}]\n    parts:\n      - name: button\n        function: button\n        shapes: [{sphere: {radius: 0.01}}]\n",
            "objects[0] (bell).parts[0] (button)",
            "press_axis",
        ),
        (
            "  - name: unit\n    links:\n      - name: drawer\n        joint: prismatic\n        axis: [1, 0, 0]\n        limits: [0.3, 0.1]\n        shapes: [{box: {size: [0.1, 0.1, 0.1]}}]\n",
            "objects[0] (unit).links[0] (drawer)",
            "lower < upper",
        ),
        (
            "  - name: unit\n    shapes: [{box: {size: [0.1, 0.1, 0.1]}}]\n    parts:\n      - name: knob\n        function: handle\n        shapes: [{sphere: {radius: 0.01}}]\n",
            "objects[0] (unit).parts[0] (knob)",
            "must belong to a link",
        ),
        (
            "  - name: thing\n    shapes:\n      - mesh: {vertices: [[0, 0, 0], [1, 0, 0], [0, 1, 0]], triangles: [[0, 1, 5]]}\n",
            "objects[0] (thing).shapes[0]",
            "out of range",
        ),
        (
            "  - name: thing\n    shapes:\n      - mesh: {file: meshes/missing.obj}\n",
            "objects[0] (thing).shapes[0]",
            "missing.obj",
        ),
        (
            "  - name: thing\n    pose: {rpy: [0, 0, 1], rpy_deg: [0, 0, 1]}\n    shapes: [{sphere: {radius: 0.1}}]\n",
            "objects[0] (thing).pose",
            "not both",
        ),
    ];
    for (objects, want_entry, want_problem) in cases {
        let (entry, problem) = invalid(&format!("{HEAD}{objects}"));
        assert_eq!(&entry, want_entry, "problem was: {problem}");
        assert!(
            problem.contains(want_problem),
            "{entry}: {problem} (wanted {want_problem})"
        );
    }
}

#[test]
fn obj_meshes_load_relative_to_the_world_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("meshes")).unwrap();
    std::fs::write(
        dir.path().join("meshes/tri.obj"),
        "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 1 2 3\nf 1 2 4\nf 1 3 4\nf 2 3 4\n",
    )
    .unwrap();
    let file = dir.path().join("w.yaml");
    std::fs::write(
        &file,
        "name: t\nobjects:\n  - name: tet\n    shapes:\n      - mesh: {file: meshes/tri.obj, scale: 0.1}\n",
    )
    .unwrap();
    let w = load_world(&file).unwrap();
    let b = w.objects[0].aabb();
    assert!((b.maxs.x - 0.1).abs() < 1e-6 && b.mins.x.abs() < 1e-6);
}
