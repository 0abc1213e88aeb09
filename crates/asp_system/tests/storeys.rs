//! A generated two-storey building: one tour from the ground floor explores both
//! storeys (riding the elevator up and back), recorded in the building's frame; the
//! memory built from it keeps the storeys apart, and a robot on the ground floor asked
//! for an object the tour saw upstairs drives to the elevator, rides up, and finds the
//! object where the tour saw it, also when the request keeps to a storey ("upstairs",
//! "floor 2").
#![allow(clippy::unwrap_used)]

mod common;

use asp_core::{Storey, Within};
use asp_memory::building::{BuildingMemory, PassOver, RecallScope, recall_request};
use asp_sim::building::{Recipe, generate, write};
use asp_simulation::tour::tour_into_memory;
use asp_simulation::{SimSystem, SystemOptions};
use asp_system::ObjectMapPort;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_object_seen_upstairs_is_fetched_by_riding_the_elevator() {
    // RUST_LOG=info shows the tour and the fetch
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
    let data = tempfile::tempdir().unwrap();
    let (mut recipe, catalogue) =
        Recipe::load(&common::config_dir().join("buildings/recipes/one_storey.yaml")).unwrap();
    recipe.floors = 2;
    recipe.rooms_per_side = 1;
    let building = generate(&recipe, &catalogue);
    let dir = data.path().join("building");
    write(&building, &dir).unwrap();

    let mut cfg = common::oracle_config(&data);
    cfg.config.sim_node.world = dir.join("building.yaml");
    cfg.config.agent_node.mobile = true;
    // the elevator's configuration comes from the simulated building's index
    assert!(
        cfg.config
            .agent_node
            .building_memory
            .elevator
            .storeys
            .is_empty()
    );
    let at_elevator = |storey: usize| {
        let [x, y] = building.index.storeys[storey].elevator_xy;
        [x, y, 0.0]
    };
    let m = &mut cfg.config.object_map_node.mapping;
    m.build_on_start = false;
    m.survey.clear();
    m.arm_poses = vec!["look".into()];
    m.cameras = vec!["head".into()];

    // one tour of both storeys from the ground floor, as `asp eval` tours
    let mut touring = cfg.clone();
    touring.config.sim_node.start_storey = 0;
    touring.config.sim_node.start_pose = at_elevator(0);
    let x = &mut touring.config.object_map_node.mapping.explore;
    x.record = "tours/building.mcap".into();
    x.every_storey = true;
    let sim = asp_simulation::simulation(&touring, None).unwrap();
    let tour = tour_into_memory(&touring, sim.clone()).await.unwrap();
    eprintln!(
        "tour: {} stops over storeys {:?}, {} views",
        tour.stops, tour.storeys, tour.memory.views
    );
    assert_eq!(tour.storeys, [0, 1]);
    // back where it started, on the ground floor
    assert_eq!(sim.storey(), Some((0, 0.0)));
    let [x0, y0, _] = at_elevator(0);
    let p = asp_core::robot::BaseNavigation::base_pose(&sim)
        .await
        .unwrap();
    assert!((p.x - x0).hypot(p.y - y0) < 0.3, "the tour ended at {p:?}");
    let models = asp_perception::factory::models(&cfg).unwrap();

    // the memory is in the building's frame: views on the ground floor and 3.5 m up,
    // none between
    let memory = BuildingMemory::open(
        cfg.data_path(&cfg.config.agent_node.building_memory.database),
        &cfg.config.agent_node.building_memory.site,
    )
    .unwrap();
    assert_eq!(memory.frame().unwrap().as_deref(), Some("building"));
    let views = &memory.hierarchy().views;
    let upstairs_views = views.iter().filter(|v| v.position[2] > 3.5).count();
    let downstairs_views = views.iter().filter(|v| v.position[2] < 2.0).count();
    assert_eq!(upstairs_views + downstairs_views, views.len());
    assert!(
        upstairs_views >= 36 && downstairs_views >= 36,
        "{downstairs_views} views downstairs, {upstairs_views} upstairs"
    );
    // an object of the upper storey the memory placed within half a metre of the truth,
    // the only one of its kind in the building (which of two reading glasses is the
    // yellow one is the live retrieval's question, not this test's), on furniture the
    // mapping cameras see over (at most 0.75 m high, as in the building suite)
    let height = f64::from(building.index.storeys[1].height_m);
    let on_furniture: Vec<_> = building
        .truth
        .objects
        .iter()
        .filter(|o| !o.on.is_empty())
        .collect();
    let (wanted, truth) = on_furniture
        .iter()
        .filter(|o| o.storey == 1 && o.position[2] < 0.9)
        .filter(|o| {
            on_furniture
                .iter()
                .filter(|p| p.category == o.category)
                .count()
                == 1
        })
        .find_map(|o| {
            let text = models.text_embedder.embed_text(&o.description).unwrap();
            let first = recall_request(
                memory.hierarchy(),
                &o.description,
                &text,
                RecallScope::default(),
                0.8,
                PassOver::default(),
                1,
            )
            .pop()?;
            let [x, y, z] = o.position.map(f64::from);
            let d = (first.position[0] - x).hypot(first.position[1] - y);
            (d < 0.5 && (first.position[2] - (z + height)).abs() < 0.5)
                .then(|| (o.description.clone(), [x, y]))
        })
        .expect("the tour placed no object of the upper storey where it is");
    drop(memory);
    eprintln!("fetching {wanted:?} at {truth:?} on storey 1");

    // a robot on the ground floor, at its elevator, with that memory
    let mut below = cfg.clone();
    below.config.sim_node.start_storey = 0;
    below.config.sim_node.start_pose = at_elevator(0);
    let sim = asp_simulation::simulation(&below, None).unwrap();
    let system = SimSystem::start(&below, sim, &SystemOptions::default(), None, None)
        .await
        .unwrap();
    assert_eq!(system.sim.storey(), Some((0, 0.0)));
    // storeys as requests name them, told without moving: "on floor 2" (the ground
    // floor is floor 1 by default) is upstairs, "this floor" is the ground floor's
    // places, and from the ground floor nothing is downstairs
    let floor_2 = Within::storey(Storey::Numbered(2));
    let up = system.map.recollect(&wanted, &floor_2).await.unwrap();
    assert!(
        !up.places.is_empty() && up.places.iter().all(|p| p.position[2] > height - 0.5),
        "{up:?}"
    );
    assert!(up.note.contains("kept to floor 2"), "{}", up.note);
    let here = Within::storey(Storey::Same);
    let same = system.map.recollect(&wanted, &here).await.unwrap();
    assert!(
        same.places.iter().all(|p| p.position[2] < height - 0.5),
        "{same:?}"
    );
    let below = Within::storey(Storey::Below);
    let e = system
        .map
        .retrieve_within(&wanted, &below)
        .await
        .unwrap_err();
    assert_eq!(e.failure.kind, asp_core::FailureKind::InvalidArgument);
    assert!(e.message.contains("no storey below"), "{}", e.message);
    assert_eq!(system.sim.storey(), Some((0, 0.0)), "no motion");
    // "the … upstairs": nothing in the ground floor's live map counts; the memory's
    // place upstairs is ridden to and the object found there
    let upstairs = Within::storey(Storey::Above);
    let found = system
        .map
        .retrieve_within(&wanted, &upstairs)
        .await
        .unwrap();
    assert!(
        found
            .room
            .as_deref()
            .is_some_and(|n| n.contains("upstairs (floor 2)")),
        "{found:?}"
    );
    assert!(!found.keys.is_empty(), "{found:?}");
    assert_eq!(
        system.sim.storey(),
        Some((1, 3.5)),
        "the base did not ride up"
    );
    // what was found is the wanted object: of the upper storey's objects, it is the
    // nearest to what the map found
    let object = system.map.object(&found.keys[0]).await.unwrap();
    let c = object.object.point_cloud.centroid().unwrap();
    let nearest = building
        .truth
        .objects
        .iter()
        .filter(|o| o.storey == 1 && !o.on.is_empty())
        .min_by(|a, b| {
            let d = |o: &asp_sim::building::ObjectTruth| {
                (o.position[0] - c.x).hypot(o.position[1] - c.y)
            };
            d(a).total_cmp(&d(b))
        })
        .unwrap();
    assert_eq!(
        nearest.description, wanted,
        "found {c:?}, nearest to {} at {:?}; {wanted} is at {truth:?}",
        nearest.name, nearest.position
    );
    assert!((f64::from(c.x) - truth[0]).hypot(f64::from(c.y) - truth[1]) < 0.5);

    // "upstairs" was counted from the ground floor; asked again from upstairs (a
    // retried pick), counted from there it is the same storey, now the base's own;
    // counted from where the base now stands there is none above
    assert_eq!(found.storeys_counted_from, Some(0));
    let again = Within {
        counted_from: found.storeys_counted_from,
        ..upstairs.clone()
    };
    let refound = system.map.retrieve_within(&wanted, &again).await.unwrap();
    assert!(!refound.keys.is_empty(), "{refound:?}");
    assert_eq!(system.sim.storey(), Some((1, 3.5)));
    let e = system
        .map
        .retrieve_within(&wanted, &upstairs)
        .await
        .unwrap_err();
    assert!(e.message.contains("no storey above"), "{}", e.message);
}
