//! The tour the exploration records is what the building memory is built from
//! (`asp memory build --bag`): a rosbag2 MCAP of the views, described by the VLM (here
//! the simulation's stand-in over HTTP, answering from the ground truth recorded in the
//! bag with its seeded errors), clustered, stored, and searched for objects.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;

use asp_agent::{AgentEvent, GoalReport, GoalStatus};
use asp_core::models::MemoryVlm;
use asp_core::robot::BaseNavigation;
use asp_core::{Recollection, ToolValue};
use asp_memory::building::{
    Affordance, BuildingMemory, EmbeddingJudge, Query, RetrievalParams, retrieve,
};
use asp_system::ObjectMapPort;
use asp_system::tour_memory::build_memory_from_bag;
use tokio_util::sync::CancellationToken;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_explored_tour_is_recorded_and_becomes_a_building_memory_that_finds_objects() {
    let data = tempfile::tempdir().unwrap();
    let mut cfg = common::oracle_config(&data);
    let m = &mut cfg.config.object_map_node.mapping;
    m.build_on_start = false;
    m.survey.clear();
    m.explore.enabled = true;
    m.explore.record = "tours/apartment.mcap".into();
    m.arm_poses = vec!["look".into()];
    m.cameras = vec!["head".into()];
    let (system, _) = common::start_on(&cfg, "mobile/dial_phone.yaml", false).await;
    system.map.rebuild(None).await.unwrap();
    let tour = system.map.exploration().await.unwrap();
    let (bag, recorded) = tour.recording.clone().unwrap();
    assert_eq!(bag, data.path().join("tours/apartment.mcap"));
    // six views at every stop (turning in place may end short of a view: fewer is no error)
    assert!(
        recorded >= 6 * tour.stops.len() - tour.stops.len(),
        "{recorded} views at {} stops",
        tour.stops.len()
    );
    let truth: Vec<(String, [f64; 3])> = system.sim.with_state(|s| {
        ["phone", "stapler"]
            .iter()
            .map(|n| {
                let c = s.world.object(n).unwrap().centroid();
                (
                    (*n).to_owned(),
                    [f64::from(c.x), f64::from(c.y), f64::from(c.z)],
                )
            })
            .collect()
    });
    drop(system);

    // the memory, from the bag alone
    assert!(asp_perception::replay::recorded_in_simulation(&bag).unwrap());
    let standin = asp_simulation::standin::start_recording_standin(&cfg)
        .await
        .unwrap();
    let vlm_cfg = asp_simulation::standin::pointed_at(&cfg, Some(&standin));
    let vlm: Arc<dyn MemoryVlm> =
        Arc::new(asp_llm::vlm::OpenAiVlm::from_config(&vlm_cfg.config.agent_node).unwrap());
    let log = Arc::clone(standin.frames());
    let models = asp_perception::factory::models(&cfg).unwrap();
    let mut progress = Vec::new();
    let report = build_memory_from_bag(
        &cfg,
        &bag,
        vlm,
        Arc::clone(&models.text_embedder),
        Arc::clone(&models.image_embedder),
        Some(Arc::new(move |f: &asp_core::RgbdFrame| log.record_frame(f))),
        &mut |n| progress.push(n),
    )
    .await
    .unwrap();
    eprintln!(
        "memory: {} views, {} objects ({} placed), levels {:?}",
        report.views, report.instances, report.placed, report.levels
    );
    assert_eq!(report.replay.with_ground_truth, report.replay.frames);
    // consecutive views are 60° apart or a stop away: every one is a keyframe
    assert_eq!(report.views, recorded);
    assert_eq!(progress, (1..=recorded).collect::<Vec<_>>());
    assert!(report.placed * 2 > report.instances, "{report:?}");
    assert!(!report.levels.is_empty(), "{report:?}");
    assert!(standin.answered() >= recorded);

    // stored: a fresh open finds the objects where the judge has them
    let memory = BuildingMemory::open(
        cfg.data_path(&cfg.config.agent_node.building_memory.database),
        &cfg.config.agent_node.building_memory.site,
    )
    .unwrap();
    let h = memory.hierarchy();
    assert_eq!(h.views.len(), recorded);
    for (name, at) in &truth {
        let query = format!("the {name}");
        let vector = models.text_embedder.embed_text(&query).unwrap();
        let found = retrieve(
            h,
            &Query {
                instruction: &query,
                text: &vector,
                visual: &vector,
                affordance: Some(Affordance::Pick),
                heights: None,
            },
            &RetrievalParams {
                top: 5,
                ..RetrievalParams::default()
            },
            &EmbeddingJudge,
        );
        let nearest = found
            .iter()
            .flat_map(|r| {
                let v = &h.views[r.view as usize];
                r.instances
                    .iter()
                    .filter_map(|&i| v.instances[i as usize].position)
            })
            .map(|p| ((p[0] - at[0]).powi(2) + (p[1] - at[1]).powi(2)).sqrt())
            .fold(f64::INFINITY, f64::min);
        assert!(
            nearest < 0.5,
            "{name} at {at:?}: the top views' objects are {nearest:.2} m away at best: {:?}",
            found
                .iter()
                .map(|r| &h.views[r.view as usize].description)
                .collect::<Vec<_>>()
        );
    }
    drop(memory);

    // a robot with no tour of its own this time, put in the living room: what the live
    // map lacks, object_retrieval finds where the memory saw it
    let mut fresh = cfg.clone();
    fresh.config.object_map_node.mapping.explore.enabled = false;
    fresh.config.object_map_node.mapping.explore.record = Default::default();
    fresh.config.agent_node.mobile = true;
    let (system, _) = common::start_on(&fresh, "mobile/dial_phone.yaml", false).await;
    let start = system.sim.base_pose().await.unwrap();
    // asked where it is, the agent answers from the memory (recall_memory), unmoved
    let report = system
        .agent
        .run_goal(
            "where_1",
            "Hey robot, where did you last see the red stapler?",
            CancellationToken::new(),
        )
        .await;
    eprintln!("answer: {}", report.summary);
    assert_eq!(report.status, GoalStatus::Completed, "{}", report.summary);
    let recalled = recollections(&report);
    assert_eq!(recalled.len(), 1, "one call, recall_memory: {report:?}");
    let best = &recalled[0].places[0];
    let stapler = truth[1].1;
    assert!(
        (best.position[0] - stapler[0]).hypot(best.position[1] - stapler[1]) < 0.5,
        "the memory's best place {best:?}, the stapler at {stapler:?}"
    );
    let d = (best.position[0] - f64::from(start.x)).hypot(best.position[1] - f64::from(start.y));
    assert!(
        best.distance_m.is_some_and(|m| (m - d).abs() < 0.05),
        "{best:?} from {start:?}"
    );
    assert!(
        report.summary.contains(&best.description),
        "{}",
        report.summary
    );
    // the office, as the memory learned it from what its zone saw (no labels)
    assert_eq!(best.looks_like.as_deref(), Some("office"), "{best:?}");
    let report = system
        .agent
        .run_goal(
            "where_2",
            "have you seen a purple unicorn?",
            CancellationToken::new(),
        )
        .await;
    assert!(
        matches!(report.status, GoalStatus::Failed { .. }),
        "{report:?}"
    );
    assert!(
        report.summary.contains("saw nothing like"),
        "{}",
        report.summary
    );
    let here = system.sim.base_pose().await.unwrap();
    assert!(start.distance_to(&here) < 0.01, "{start:?} → {here:?}");
    // never seen on the tour: nothing remembered, no drive (a sideways search and back)
    let found = system.map.retrieve("a purple unicorn").await.unwrap();
    assert!(found.keys.is_empty(), "{found:?}");
    let here = system.sim.base_pose().await.unwrap();
    assert!(start.distance_to(&here) < 0.2, "{start:?} → {here:?}");
    // the stapler, in the office: found by going where the tour saw it
    let found = system.map.retrieve("red stapler").await.unwrap();
    assert!(!found.keys.is_empty(), "{found:?}");
    let object = system.map.object(&found.keys[0]).await.unwrap();
    let c = object.object.point_cloud.centroid().unwrap();
    let stapler = truth[1].1;
    assert!(
        (f64::from(c.x) - stapler[0]).hypot(f64::from(c.y) - stapler[1]) < 0.3,
        "found {c:?}, the stapler is at {stapler:?}"
    );
    // from a pose the tour saw it from (the office is out of sight from the start)
    let at_stapler = system.sim.base_pose().await.unwrap();
    assert!(
        start.distance_to(&at_stapler) > 1.0,
        "{start:?} → {at_stapler:?}"
    );
    drop(system);
    let (system, _) = common::start_on(&fresh, "mobile/dial_phone.yaml", false).await;
    let start = system.sim.base_pose().await.unwrap();
    // the phone was taken away since the tour: the memory's place is looked at, found
    // empty, and the request fails rather than taking something else
    system.sim.with_state_mut(|s| {
        let i = s.world.index_of("phone").unwrap();
        s.world.objects[i].pose.translation.vector.x += 100.0;
    });
    let found = system.map.retrieve("desk telephone").await.unwrap();
    assert!(found.keys.is_empty(), "{found:?}");
    let here = system.sim.base_pose().await.unwrap();
    assert!(
        start.distance_to(&here) > 0.5 || (start.theta - here.theta).abs() > 0.3,
        "the base did not go to where the tour saw the phone: {start:?} → {here:?}"
    );
    // asked again, the memory leaves out the place found empty, and says so
    let said = system
        .map
        .recollect("desk telephone", &asp_core::Within::anywhere())
        .await
        .unwrap();
    assert!(said.note.contains("found empty left out"), "{said:?}");
    let phone = truth[0].1;
    let away_from_phone = |p: &[f64; 3]| (p[0] - phone[0]).hypot(p[1] - phone[1]) > 0.5;
    assert!(
        said.places.iter().all(|p| away_from_phone(&p.position)),
        "{said:?}"
    );
    drop(system);
    // the memory keeps it: the next robot passes over the phone's place before any drive
    let memory = BuildingMemory::open(
        cfg.data_path(&cfg.config.agent_node.building_memory.database),
        &cfg.config.agent_node.building_memory.site,
    )
    .unwrap();
    assert!(
        memory
            .vacated()
            .iter()
            .any(|v| !away_from_phone(&v.position)),
        "{:?}",
        memory
            .vacated()
            .iter()
            .map(|v| (&v.request, v.position))
            .collect::<Vec<_>>()
    );
    drop(memory);
    let (system, _) = common::start_on(&fresh, "mobile/dial_phone.yaml", false).await;
    let said = system
        .map
        .recollect("desk telephone", &asp_core::Within::anywhere())
        .await
        .unwrap();
    assert!(said.note.contains("found empty left out"), "{said:?}");
    assert!(
        said.places.iter().all(|p| away_from_phone(&p.position)),
        "{said:?}"
    );
    // and only requests like the phone's: the stapler is still remembered
    let stapler = system
        .map
        .recollect("red stapler", &asp_core::Within::anywhere())
        .await
        .unwrap();
    assert!(!stapler.places.is_empty(), "{stapler:?}");
    // "go to the kitchen": no polygon of it anywhere; the drive goes to what the
    // memory took the kitchen for, and finds it again on arrival
    let report = system
        .agent
        .run_goal("room_1", "go to the kitchen", CancellationToken::new())
        .await;
    eprintln!("to the kitchen: {}", report.summary);
    assert_eq!(report.status, GoalStatus::Completed, "{}", report.summary);
    assert!(
        report.summary.ends_with("go to the kitchen"),
        "{}",
        report.summary
    );
    let told = recollections(&report);
    assert!(
        told.first().is_some_and(|r| !r.room_landmarks.is_empty()),
        "{told:?}"
    );
    // the apartment's kitchen is east of the wall at x = 4
    let there = system.sim.base_pose().await.unwrap();
    assert!(there.x > 4.1, "the base stopped at {there:?}");
    drop(system);

    // a second open of another site is refused by name
    let err = BuildingMemory::open(
        cfg.data_path(&cfg.config.agent_node.building_memory.database),
        "another_building",
    )
    .unwrap_err();
    assert!(err.to_string().contains("another_building"), "{err}");
}

/// What the goal's `recall_memory` calls answered, in order.
fn recollections(report: &GoalReport) -> Vec<&Recollection> {
    report
        .events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolFinished { output, .. } => match &output.output {
                ToolValue::Recollection(r) => Some(r),
                _ => None,
            },
            _ => None,
        })
        .collect()
}
