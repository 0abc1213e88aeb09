//! The building generator on the shipped recipe: the size issue 16 asks for, worlds the
//! simulator loads, objects resting on furniture inside their rooms, and the same
//! building from the same seed.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::path::PathBuf;

use asp_sim::building::{Recipe, generate, write};

fn recipe_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../config/buildings/recipes/three_floors.yaml")
}

#[test]
fn the_shipped_recipe_makes_a_building_of_the_asked_size() {
    let (recipe, catalogue) = Recipe::load(&recipe_path()).unwrap();
    assert!(
        catalogue.objects.len() >= 80,
        "{} categories",
        catalogue.objects.len()
    );
    let b = generate(&recipe, &catalogue);
    assert!(b.storeys.len() >= 3);
    assert!(b.truth.rooms.len() >= 30, "{} rooms", b.truth.rooms.len());
    let kinds: BTreeSet<&str> = b.truth.rooms.iter().map(|r| r.kind.as_str()).collect();
    assert!(kinds.len() >= 8, "{kinds:?}");
    let movable: Vec<_> = b.truth.objects.iter().filter(|o| !o.receptacle).collect();
    assert!(movable.len() >= 500, "{} objects", movable.len());
    let categories: BTreeSet<&str> = movable.iter().map(|o| o.category.as_str()).collect();
    assert!(
        categories.len() >= 60,
        "{} categories used",
        categories.len()
    );
    // descriptions vary: colours, materials and sizes are drawn per instance
    let descriptions: BTreeSet<&str> = movable.iter().map(|o| o.description.as_str()).collect();
    assert!(
        descriptions.len() * 10 >= movable.len() * 7,
        "{} distinct",
        descriptions.len()
    );
}

#[test]
fn every_object_rests_on_furniture_in_its_room() {
    let (recipe, catalogue) = Recipe::load(&recipe_path()).unwrap();
    let b = generate(&recipe, &catalogue);
    for o in b.truth.objects.iter().filter(|o| !o.receptacle) {
        let room = b.truth.rooms.iter().find(|r| r.id == o.room).unwrap();
        let [x0, y0, x1, y1] = room.bounds;
        assert!(
            (x0..=x1).contains(&o.position[0]) && (y0..=y1).contains(&o.position[1]),
            "{} at {:?} outside {:?}",
            o.name,
            o.position,
            room.bounds
        );
        let support = b.truth.objects.iter().find(|f| f.name == o.on).unwrap();
        assert!(support.receptacle && support.room == o.room);
        assert!(
            (support.position[2] - o.position[2]).abs() < 1e-5,
            "{} floats",
            o.name
        );
    }
}

#[test]
fn the_written_storeys_load_in_the_simulator() {
    let (recipe, catalogue) = Recipe::load(&recipe_path()).unwrap();
    let b = generate(&recipe, &catalogue);
    let dir = tempfile::tempdir().unwrap();
    let files = write(&b, dir.path()).unwrap();
    assert_eq!(files.len(), b.storeys.len() + 2);
    for k in 0..b.storeys.len() {
        let world = asp_sim::load_world(dir.path().join(format!("storey_{k}.yaml"))).unwrap();
        let expected = b.storeys[k].objects.len();
        assert_eq!(world.objects.len(), expected);
    }
    // the index a product reads holds no rooms
    let index = std::fs::read_to_string(dir.path().join("building.yaml")).unwrap();
    assert!(!index.contains("kitchen") && !index.contains("bounds"));
    assert!(b.index.elevator_time_s(0, 2) > b.index.elevator_time_s(0, 1));
    assert_eq!(b.index.elevator_time_s(1, 1), 0.0);
}

#[test]
fn a_seed_makes_one_building() {
    let (mut recipe, catalogue) = Recipe::load(&recipe_path()).unwrap();
    let a = generate(&recipe, &catalogue);
    assert_eq!(a, generate(&recipe, &catalogue));
    recipe.seed += 1;
    let b = generate(&recipe, &catalogue);
    assert_ne!(a.truth, b.truth);
}

#[test]
fn a_bad_recipe_is_refused_by_field() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(recipe_path())
        .unwrap()
        .replace(
            "catalogue: ../catalogue.yaml",
            &format!(
                "catalogue: {}",
                recipe_path()
                    .parent()
                    .unwrap()
                    .join("../catalogue.yaml")
                    .display()
            ),
        )
        .replace("room_kinds: [kitchen,", "room_kinds: [ballroom, kitchen,");
    let file = dir.path().join("bad.yaml");
    std::fs::write(&file, text).unwrap();
    let err = Recipe::load(&file).unwrap_err().to_string();
    assert!(
        err.contains("room_kinds") && err.contains("ballroom"),
        "{err}"
    );
}
