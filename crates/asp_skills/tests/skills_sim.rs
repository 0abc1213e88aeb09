//! Each skill in the embedded simulator: succeeds on a scenario that needs it (the
//! scenario's own success predicate holds afterwards) and fails cleanly — the right code,
//! no motion sent — on one it cannot do.
#![allow(clippy::unwrap_used)]

mod support;

use asp_core::robot::CancellationToken;
use asp_core::{FailureKind, Skill};
use asp_skills::EStop;
use asp_skills::codes::ours;
use asp_verify::Relation;
use support::*;

/// The scenario's success predicate holds in the simulator now.
fn succeeded(sim: &asp_sim::SimRobot, sc: &asp_sim::scenario::Scenario) -> bool {
    sim.holds(&sc.spec.success)
}

#[tokio::test]
async fn grasp_then_place_puts_the_apple_in_the_bowl() {
    let (sim, sc) = scenario("tabletop/apple_in_bowl.yaml");
    let cfg = config();
    let estop = EStop::new();
    let ex = executor(&sim, &cfg, &estop);
    let cancel = CancellationToken::new();

    let grasp = request(&sim, "wrist", Skill::Grasp, "apple");
    let r = ex.execute(grasp, &cancel).await;
    assert!(r.succeeded(), "{:#?}", r.report());
    assert_eq!(r.report().holding, Some(true));
    assert!(sim.with_state(|s| s.held()).is_some());
    assert_eq!(ex.held_object().unwrap().as_str(), "apple_0");
    assert!(r.report().commit.as_ref().unwrap().accepted);
    assert!(r.report().outcome.is_some());

    let place = request(&sim, "wrist", Skill::Place, "bowl")
        .with_relation(Relation::In)
        .with_held(asp_skills::HeldObject {
            key: asp_core::ObjectKey::from_query("apple", 0),
            name: "the apple".into(),
            scene_names: vec!["apple".into()],
            cloud: None,
        });
    let r = ex.execute(place, &cancel).await;
    assert!(r.succeeded(), "{:#?}", r.report());
    assert_eq!(r.report().holding, Some(false));
    assert!(succeeded(&sim, &sc), "the scenario's success predicate");
}

#[tokio::test]
async fn grasp_of_a_flat_plate_wider_than_the_gripper_fails_without_motion() {
    let (sim, _) = scenario("tabletop/apple_in_bowl.yaml");
    let cfg = config();
    let estop = EStop::new();
    let ex = executor(&sim, &cfg, &estop);
    let before = robot_state(&sim);
    let r = ex
        .execute(
            request(&sim, "wrist", Skill::Grasp, "plate"),
            &CancellationToken::new(),
        )
        .await;
    assert!(!r.succeeded(), "{:#?}", r.report());
    let f = r.failure().unwrap();
    assert_eq!(f.code, ours::NO_CANDIDATE, "{:#?}", r.report());
    assert_eq!(f.kind, FailureKind::Planning);
    assert_eq!(ex.command_counts().arm_goals, 0);
    assert_eq!(ex.command_counts().gripper_goals, 0);
    assert_eq!(robot_state(&sim), before);
}
