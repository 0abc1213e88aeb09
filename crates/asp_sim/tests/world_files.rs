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

#[test]
fn scenario_errors_name_file_entry_and_problem() {
    use asp_sim::scenario::Scenario;
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(root.path().join("scenarios/tabletop")).unwrap();
    std::fs::create_dir_all(root.path().join("worlds")).unwrap();
    std::fs::copy(
        config().join("worlds/tabletop.yaml"),
        root.path().join("worlds/tabletop.yaml"),
    )
    .unwrap();
    let file = root.path().join("scenarios/tabletop/s.yaml");
    let head = "name: s\nstudy: tabletop\ngoal: do it\nworld: worlds/tabletop.yaml\nrobot: {base: [0.0, 0.0]}\n";
    let case = |body: &str| {
        std::fs::write(&file, format!("{head}{body}")).unwrap();
        match Scenario::load(&file).unwrap_err() {
            SimError::Invalid {
                file: f,
                entry,
                problem,
            } => {
                assert_eq!(f, file);
                (entry, problem)
            }
            other => panic!("{other:?}"),
        }
    };
    let (e, p) = case("success:\n  in: {object: unicorn, container: bowl}\n");
    assert_eq!(e, "success");
    assert!(p.contains("unicorn"), "{p}");
    let (e, p) = case("success:\n  inside: {object: apple, container: bowl}\n");
    assert!(e.starts_with("success"), "{e}");
    assert!(p.contains("inside"), "{p}");
    let (e, p) = case(
        "success:\n  held: {object: apple}\npartial:\n  - score: 1.5\n    when:\n      held: {object: apple}\n",
    );
    assert_eq!(e, "partial[0]");
    assert!(p.contains("1.5"), "{p}");
    let (e, p) = case("success:\n  open: {object: drawer_unit, link: lid}\n");
    assert_eq!(e, "success");
    assert!(p.contains("lid"), "{p}");
    let (e, p) =
        case("success:\n  held: {object: apple}\nsetup:\n  move:\n    ghost: {xyz: [0, 0, 0]}\n");
    assert_eq!(e, "setup.move.ghost");
    assert!(p.contains("ghost"), "{p}");
    std::fs::write(
        &file,
        head.replace("worlds/tabletop.yaml", "worlds/none.yaml")
            + "success:\n  held: {object: apple}\n",
    )
    .unwrap();
    let e = Scenario::load(&file).unwrap_err().to_string();
    assert!(e.contains("s.yaml") && e.contains("none.yaml"), "{e}");
    // a well-formed one loads, with its setup applied
    std::fs::write(
        &file,
        format!("{head}setup:\n  move:\n    apple: {{xyz: [0.5, 0.0, 0.535]}}\n  remove: [orange]\nsuccess:\n  held: {{object: apple}}\n"),
    )
    .unwrap();
    let sc = Scenario::load(&file).unwrap();
    assert!(sc.world.object("orange").is_none());
    assert_eq!(sc.world.object("apple").unwrap().pose.translation.x, 0.5);
}
