//! drop, grasp_part, pinch_pull and hook_pull in the embedded simulator, each on the
//! scenario that needs it (the scenario's success predicate holds afterwards), and a
//! door opened along its arc about the estimated hinge.
#![allow(clippy::unwrap_used)]

mod support;

use asp_core::robot::CancellationToken;
use asp_core::{ObjectKey, Skill};
use asp_skills::{EStop, HeldObject, SkillRequest};
use asp_verify::Relation;
use support::*;

/// A request on `object` with `part` as the affordance, from the first camera (wrist,
/// then head) that sees both.
fn with_part(sim: &asp_sim::SimRobot, skill: Skill, object: &str, part: &str) -> SkillRequest {
    let cam = ["wrist", "head"]
        .into_iter()
        .find(|c| {
            let f = sim.render(c).unwrap();
            let gt = f.ground_truth.as_ref().unwrap();
            gt.instances.values().any(|i| i.name == object)
                && gt.parts.values().any(|p| p.name == part)
        })
        .unwrap_or_else(|| panic!("{object}/{part} seen by no camera"));
    request(sim, cam, skill, object).with_affordance(gt_affordance(sim, cam, object, part, skill))
}

/// Drives the base to where the arm can swing the metal cabinet's door along its arc.
async fn drive_in_front_of_the_cabinet(sim: &asp_sim::SimRobot) {
    let nav = asp_core::robot::BaseNavigation::navigate_to(
        sim,
        asp_core::Pose2D::new(2.554, 0.911, -0.8727),
        &CancellationToken::new(),
    )
    .await;
    assert_eq!(nav.status, asp_core::robot::TerminalStatus::Succeeded);
}

/// `open` on the metal cabinet with its door handle as the affordance.
fn open_the_door(sim: &asp_sim::SimRobot) -> SkillRequest {
    with_part(sim, Skill::Open, "metal_cabinet", "cabinet door handle")
}

/// The metal cabinet's door angle, radians.
fn door_angle(sim: &asp_sim::SimRobot) -> f32 {
    sim.with_state(|s| {
        let o = s.world.object("metal_cabinet").unwrap();
        o.links[o.link_index("door").unwrap()].position
    })
}

fn held(name: &str) -> HeldObject {
    HeldObject {
        key: ObjectKey::from_query(name, 0),
        name: format!("the {}", name.replace('_', " ")),
        scene_names: vec![name.into()],
        cloud: None,
    }
}

#[tokio::test]
async fn grasp_part_lifts_the_mug_by_its_handle() {
    let (sim, sc) = scenario("tabletop/mug_by_handle.yaml");
    let cfg = config();
    let estop = EStop::new();
    let ex = executor(&sim, &cfg, &estop);
    let r = ex
        .execute(
            with_part(&sim, Skill::GraspPart, "mug", "mug handle"),
            &CancellationToken::new(),
        )
        .await;
    assert!(r.succeeded(), "{:#?}", r.report());
    assert_eq!(r.report().holding, Some(true));
    // held by the handle, not the body
    assert!(sim.holds(&sc.spec.success));
}

/// The thumbtack sits in a vertical cork board: the simulator's planner refuses the first
/// pinch orientation and the executor moves on to the next, which pulls the tack out.
#[tokio::test]
async fn pinch_pull_removes_the_thumbtack_after_the_planner_refuses_the_first_pinch() {
    let (sim, sc) = scenario("tabletop/remove_thumbtack.yaml");
    let cfg = config();
    let estop = EStop::new();
    let ex = executor(&sim, &cfg, &estop);
    assert!(!sim.holds(&sc.spec.success));
    let r = ex
        .execute(
            with_part(&sim, Skill::PinchPull, "thumbtack", "thumbtack head"),
            &CancellationToken::new(),
        )
        .await;
    assert!(r.succeeded(), "{:#?}", r.report());
    assert!(sim.holds(&sc.spec.success), "the tack is out of the board");
    let rep = r.report();
    assert_eq!(rep.stats.attempts_tried, 2, "{rep:#?}");
    let first = rep.attempts[0].failed.as_deref().unwrap();
    let refused = [
        "NO_IK_SOLUTION",
        "PLANNING_FAILED",
        "GOAL_IN_COLLISION",
        "INVALID_MOTION_PLAN",
    ];
    assert!(refused.iter().any(|c| first.contains(c)), "{first}");
    assert!(rep.attempts[1].failed.is_none());
}

/// pinch_pull unplugs the power adapter. Where the pull's last step does not plan (the
/// full pull would fold the arm into itself) the pull ends at the step before, the plug
/// long free of its socket, and the skill still succeeds.
#[tokio::test]
async fn pinch_pull_unplugs_the_power_adapter_even_when_the_pull_is_cut_short() {
    use asp_core::robot::MoveItErrorCode;
    // goals: pre-pinch, reach, pull 1/3, pull 2/3, pull 3/3
    for refused in [None, Some(5)] {
        let (sim, sc) = scenario("tabletop/unplug_power_adapter.yaml");
        let cfg = config();
        let estop = EStop::new();
        let ex = match refused {
            None => executor(&sim, &cfg, &estop),
            Some(n) => {
                let arm = FailNthGoal::new(&sim, n, MoveItErrorCode::GoalInCollision);
                executor_with_arm(&sim, std::sync::Arc::new(arm), &cfg, &estop)
            }
        };
        let r = ex
            .execute(
                with_part(
                    &sim,
                    Skill::PinchPull,
                    "power_adapter",
                    "power adapter plug",
                ),
                &CancellationToken::new(),
            )
            .await;
        if refused.is_some() {
            let log = r.report().attempts.last().unwrap();
            assert!(
                log.completed.iter().any(|s| s == "pull 2/3")
                    && log
                        .completed
                        .iter()
                        .any(|s| s.starts_with("pull 3/3 stopped")),
                "{log:#?}"
            );
        }
        assert!(r.succeeded(), "refused {refused:?}: {:#?}", r.report());
        assert!(sim.holds(&sc.spec.success));
        assert_eq!(r.report().holding, Some(true));
    }
}

/// hook_pull: the closed fingers hook the drawer handle from above and pull along the
/// drawer's axis; the drawer opens without being grasped.
#[tokio::test]
async fn hook_pull_opens_the_drawer() {
    let (sim, sc) = scenario("tabletop/open_drawer.yaml");
    let cfg = config();
    let estop = EStop::new();
    let ex = executor(&sim, &cfg, &estop);
    let r = ex
        .execute(
            with_part(&sim, Skill::HookPull, "drawer_unit", "drawer handle"),
            &CancellationToken::new(),
        )
        .await;
    assert!(r.succeeded(), "{:#?}", r.report());
    assert!(sim.holds(&sc.spec.success));
    assert_eq!(
        ex.command_counts().gripper_goals,
        1,
        "only closing the fingers"
    );
    assert!(sim.with_state(|s| s.held()).is_none());
}

/// drop: the small ball, grasped, is let go above the basket and lands in it.
#[tokio::test]
async fn drop_puts_the_small_ball_in_the_basket() {
    let (sim, sc) = scenario("tabletop/small_ball_in_basket.yaml");
    let cfg = config();
    let estop = EStop::new();
    let ex = executor(&sim, &cfg, &estop);
    let r = ex
        .execute(
            request(&sim, "wrist", Skill::Grasp, "small_ball"),
            &CancellationToken::new(),
        )
        .await;
    assert!(r.succeeded(), "{:#?}", r.report());
    let drop = request(&sim, "wrist", Skill::Drop, "basket")
        .with_relation(Relation::In)
        .with_held(held("small_ball"));
    let r = ex.execute(drop, &CancellationToken::new()).await;
    assert!(r.succeeded(), "{:#?}", r.report());
    assert_eq!(r.report().holding, Some(false));
    assert!(ex.held_object().is_none());
    assert!(sim.holds(&sc.spec.success));
}

/// open_cabinet from a base pose in front of the handle (nearer than the one go_to picks
/// in the mobile suite, from where the arm's reach ends the arc at 34°): the executor
/// estimates a vertical hinge at the door's far edge and moves the handle along the arc
/// about it, waypoint by waypoint, until the arm's reach ends the arc; the door swings
/// past the scenario's 0.6 rad.
#[tokio::test]
async fn open_swings_the_cabinet_door_along_its_arc() {
    let (sim, sc) = scenario("mobile/open_cabinet.yaml");
    drive_in_front_of_the_cabinet(&sim).await;
    let cfg = config();
    let estop = EStop::new();
    let ex = executor(&sim, &cfg, &estop);
    let r = ex
        .execute(open_the_door(&sim), &CancellationToken::new())
        .await;
    let log = r.report().attempts.last().unwrap();
    let arcs = log
        .completed
        .iter()
        .filter(|s| s.starts_with("arc ") && !s.contains("stopped"))
        .count();
    assert!(arcs >= 4, "{log:#?}");
    let door = door_angle(&sim);
    assert!(door > 0.6, "door at {door} rad");
    assert!(sim.holds(&sc.spec.success));
    // the verifier saw the door's travel with the cameras, and agrees with the world
    let outcome = r.report().outcome.as_ref().unwrap();
    assert!(
        outcome
            .checks
            .iter()
            .any(|c| c.name == "joint_travel" && c.passed == Some(true)),
        "{outcome:#?}"
    );
    assert!(r.succeeded(), "{:#?}", r.report());
}

/// The arm's reach ends the door's arc early (the fourth arc waypoint does not plan): the
/// gripper lets go and backs off from where the arc stopped, not from where it would
/// have ended, so the arm leaves the handle and the next motion plans from a free start.
#[tokio::test]
async fn an_arc_that_stops_early_backs_off_from_where_it_stopped() {
    use asp_core::robot::{ArmMotion, MoveItErrorCode};
    let (sim, _) = scenario("mobile/open_cabinet.yaml");
    drive_in_front_of_the_cabinet(&sim).await;
    let cfg = config();
    let estop = EStop::new();
    // goals: pre-grasp, approach, arc 1, arc 2, arc 3, arc 4 (refused)
    let arm = std::sync::Arc::new(FailNthGoal::new(&sim, 6, MoveItErrorCode::NoIkSolution));
    let ex = executor_with_arm(&sim, arm, &cfg, &estop);
    let r = ex
        .execute(open_the_door(&sim), &CancellationToken::new())
        .await;
    let log = r.report().attempts.last().unwrap();
    assert!(
        log.completed
            .iter()
            .any(|s| s.starts_with("arc 4/8") && s.contains("stopped")),
        "{log:#?}"
    );
    let i_release = log.completed.iter().position(|s| s == "release").unwrap();
    assert_eq!(log.completed[i_release + 1], "back off", "{log:#?}");
    let door = door_angle(&sim);
    assert!(
        door > 0.3 && door < 0.6,
        "door at {door} rad after three arc steps"
    );
    // the cameras see a door opened less than half the commanded arc: not a success
    assert!(!r.succeeded(), "{:#?}", r.report());
    if let Some(outcome) = r.report().outcome.as_ref() {
        assert!(
            !outcome
                .checks
                .iter()
                .any(|c| c.name == "joint_travel" && c.passed == Some(true)),
            "{outcome:#?}"
        );
    }
    let home = sim.move_to_named("home", &CancellationToken::new()).await;
    assert!(home.code.is_success(), "{home:?}");
}

/// At the edge of its reach the arm cannot back off the whole approach distance, nor a
/// third of it: a quarter still takes the open fingers off the handle, so the next arm
/// motion (home, or a mapping pose) does not hook the handle and drag the door further
/// than the verifier measured.
#[tokio::test]
async fn a_short_back_off_leaves_the_handle_so_the_next_motion_does_not_drag_the_door() {
    use asp_core::robot::{ArmMotion, MoveItErrorCode};
    let (sim, _) = scenario("mobile/open_cabinet.yaml");
    drive_in_front_of_the_cabinet(&sim).await;
    let cfg = config();
    let estop = EStop::new();
    // goals: pre-grasp, approach, arc 1-3, arc 4 (refused), back off 10 cm and 3.3 cm
    // (refused), back off 2.5 cm
    let arm = FailNthGoal::new(&sim, 6, MoveItErrorCode::NoIkSolution).and_goals(&[7, 8]);
    let ex = executor_with_arm(&sim, std::sync::Arc::new(arm), &cfg, &estop);
    let r = ex
        .execute(open_the_door(&sim), &CancellationToken::new())
        .await;
    let log = r.report().attempts.last().unwrap();
    let i_release = log.completed.iter().position(|s| s == "release").unwrap();
    assert_eq!(log.completed[i_release + 1], "back off", "{log:#?}");
    let measured = door_angle(&sim);
    let home = sim.move_to_named("home", &CancellationToken::new()).await;
    assert!(home.code.is_success(), "{home:?}");
    let after = door_angle(&sim);
    // not dragged open; the arm may brush the door on its way home, no more
    assert!(
        after - measured < 0.02 && measured - after < 0.05,
        "the door moved from {measured} to {after} rad as the arm went home"
    );
}

/// How often the kettle's power button was pressed.
fn kettle_presses(sim: &asp_sim::SimRobot) -> u32 {
    sim.with_state(|s| {
        let o = s.world.object("kettle").unwrap();
        o.parts[o.part_index("kettle power button").unwrap()].presses
    })
}

/// A press on the kettle's power button as a detector's mask gives it: the button with
/// the kettle's surface around it within `margin` (the realistic profile's mask boundary
/// noise and box jitter spill over the button's edge the same way).
fn dilated_part(sim: &asp_sim::SimRobot, margin: f32) -> SkillRequest {
    let mut r = with_part(sim, Skill::TipPush, "kettle", "kettle power button");
    let a = r.affordance.as_mut().unwrap();
    let button = a.point_cloud.points().to_vec();
    let spill = r
        .object_cloud
        .points()
        .iter()
        .filter(|p| button.iter().any(|b| (*p - b).norm() <= margin))
        .copied();
    let mut points = button.clone();
    points.extend(spill);
    a.point_cloud = asp_core::PointCloud::new(a.point_cloud.frame.clone(), points);
    r
}

/// The kettle pressed from where go_to leaves the base when the robot comes from the
/// default start (in front of the kettle, turned 10°), its button as a noisy mask gives
/// it. That patch of the lid's curved surface has its centroid inside the kettle: asked
/// about the centroid, every camera saw it hidden before and after the press, and the
/// verifier was shown the head camera's crop, where the arm stands before the button.
/// It said no, and the robot pressed again and again (the eval's kettle: pressed every
/// run, confirmed on 1 of 3). Views chosen by how many of the part's points they see
/// show the button before and after: one press, confirmed.
#[tokio::test]
async fn a_press_on_a_curved_lid_is_confirmed_from_the_camera_that_sees_the_button() {
    let (sim, _) = scenario("tabletop/turn_on_kettle.yaml");
    let nav = asp_core::robot::BaseNavigation::navigate_to(
        &sim,
        asp_core::Pose2D::new(-0.18, 1.57, (-10.0f32).to_radians()),
        &CancellationToken::new(),
    )
    .await;
    assert_eq!(nav.status, asp_core::robot::TerminalStatus::Succeeded);
    let out =
        asp_core::robot::ArmMotion::move_to_named(&sim, "look", &CancellationToken::new()).await;
    assert!(out.code.is_success(), "{out:?}");
    let request = dilated_part(&sim, 0.025);
    let button = request.affordance.as_ref().unwrap().point_cloud.clone();
    let centroid = button.centroid().unwrap();
    // the case this is about: the centroid is hidden from both cameras
    for camera in ["head", "wrist"] {
        let view = asp_skills::perceive::DepthView::new(&sim.render(camera).unwrap(), 0.012);
        assert_eq!(
            view.classify(&centroid),
            asp_skills::perceive::Seen::Occluded,
            "{camera}"
        );
    }
    let cfg = config();
    let estop = EStop::new();
    let ex = executor(&sim, &cfg, &estop);
    let r = ex.execute(request, &CancellationToken::new()).await;
    assert!(r.succeeded(), "{:#?}", r.report());
    assert_eq!(kettle_presses(&sim), 1, "{:#?}", r.report());
    let verdict = r.report().outcome.clone().unwrap();
    assert_eq!(verdict.answer, asp_verify::Answer::Yes, "{verdict:?}");
}
