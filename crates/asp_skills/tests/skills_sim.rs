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

/// A place of the held apple in the bowl, the bowl as `camera` sees it.
fn apple_into_bowl(sim: &asp_sim::SimRobot, camera: &str) -> asp_skills::SkillRequest {
    request(sim, camera, Skill::Place, "bowl")
        .with_relation(Relation::In)
        .with_held(asp_skills::HeldObject {
            key: asp_core::ObjectKey::from_query("apple", 0),
            name: "the apple".into(),
            scene_names: vec!["apple".into()],
            cloud: None,
        })
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

    let r = ex.execute(apple_into_bowl(&sim, "wrist"), &cancel).await;
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
    // the map's cloud may be what is wrong: a retry works on a fresh look
    assert!(f.retryable && f.needs_remap, "{f:?}");
    assert_eq!(ex.command_counts().arm_goals, 0);
    assert_eq!(ex.command_counts().gripper_goals, 0);
    assert_eq!(robot_state(&sim), before);
}

/// A cloud 10 cm above the apple (a perception error, or a map from before someone took
/// the apple away): the look before the motion sees that place as free space, so the
/// grasp ends there, retryable after a new look, with nothing moved. (Before this check
/// every candidate closed on air in turn; on a map out of date the fingers closed on
/// whatever stood beside the place: an apple goal took the bowl's rim.)
#[tokio::test]
async fn a_grasp_where_a_fresh_view_sees_free_space_ends_before_any_motion() {
    let (sim, _) = scenario("tabletop/apple_in_bowl.yaml");
    let cfg = config();
    let estop = EStop::new();
    let ex = executor(&sim, &cfg, &estop);
    let apple_at = |sim: &asp_sim::SimRobot| {
        sim.with_state(|s| s.world.object("apple").map(|o| o.pose.translation.vector))
            .unwrap()
    };
    let (apple_before, robot_before) = (apple_at(&sim), robot_state(&sim));
    let mut req = request(&sim, "wrist", Skill::Grasp, "apple");
    let shifted: Vec<asp_core::Point3> = req
        .object_cloud
        .points()
        .iter()
        .map(|p| p + asp_core::Vector3::new(0.0, 0.0, 0.10))
        .collect();
    req.object_cloud = asp_core::PointCloud::new(req.object_cloud.frame.clone(), shifted);
    let r = ex.execute(req, &CancellationToken::new()).await;
    assert!(!r.succeeded(), "{:#?}", r.report());
    let f = r.failure().unwrap();
    assert_eq!(f.code, ours::NOT_THERE, "{:#?}", r.report());
    assert!(f.retryable && f.needs_remap, "{f:?}");
    assert!(
        r.report().message.contains("free space") && r.report().message.contains("nothing moved"),
        "{}",
        r.report().message
    );
    assert_eq!(ex.command_counts().arm_goals, 0);
    assert_eq!(ex.command_counts().gripper_goals, 0);
    assert_eq!(robot_state(&sim), robot_before);
    assert!(
        (apple_at(&sim) - apple_before).norm() < 1e-6,
        "the apple moved"
    );
    // the same request on the cloud where the apple is takes it
    let r = ex
        .execute(
            request(&sim, "wrist", Skill::Grasp, "apple"),
            &CancellationToken::new(),
        )
        .await;
    assert!(r.succeeded(), "{:#?}", r.report());
}

#[tokio::test]
async fn tip_push_rings_the_bell() {
    let (sim, sc) = scenario("tabletop/ring_bell.yaml");
    let cfg = config();
    let estop = EStop::new();
    let ex = executor(&sim, &cfg, &estop);
    let req = request(&sim, "wrist", Skill::TipPush, "desk_bell").with_affordance(gt_affordance(
        &sim,
        "wrist",
        "desk_bell",
        "bell button",
        Skill::TipPush,
    ));
    let r = ex.execute(req, &CancellationToken::new()).await;
    assert!(r.succeeded(), "{:#?}", r.report());
    assert!(succeeded(&sim, &sc), "the bell registered no press");
}

#[tokio::test]
async fn tip_push_without_a_part_is_refused_before_any_motion() {
    let (sim, _) = scenario("tabletop/ring_bell.yaml");
    let cfg = config();
    let estop = EStop::new();
    let ex = executor(&sim, &cfg, &estop);
    let before = robot_state(&sim);
    let r = ex
        .execute(
            request(&sim, "wrist", Skill::TipPush, "desk_bell"),
            &CancellationToken::new(),
        )
        .await;
    let f = r.failure().expect("refused");
    assert_eq!(f.code, ours::INVALID_REQUEST, "{:#?}", r.report());
    assert_eq!(ex.command_counts().arm_goals, 0);
    assert!(r.report().commit.is_none(), "refused before the commit");
    assert_eq!(robot_state(&sim), before);
}

/// Safety: every refusal happens before any goal is sent, with its own code.
#[tokio::test]
async fn safety_refusals_send_no_goal() {
    let (sim, _) = scenario("tabletop/apple_in_bowl.yaml");
    let before = robot_state(&sim);
    let estop = EStop::new();

    // not on the allowlist
    let mut cfg = config();
    cfg.common
        .safety
        .allowed_skills
        .retain(|s| *s != Skill::Grasp);
    let ex = executor(&sim, &cfg, &estop);
    let r = ex
        .execute(
            request(&sim, "wrist", Skill::Grasp, "apple"),
            &CancellationToken::new(),
        )
        .await;
    assert_eq!(r.failure().unwrap().code, ours::SKILL_NOT_ALLOWED);
    assert_eq!(r.failure().unwrap().kind, FailureKind::NotAllowed);

    // speed above the cap
    let cfg = config();
    let ex = executor(&sim, &cfg, &estop);
    let fast =
        request(&sim, "wrist", Skill::Grasp, "apple").with_overrides(asp_skills::MotionOverrides {
            velocity_scaling: Some(cfg.common.safety.max_velocity_scaling + 0.1),
            ..Default::default()
        });
    let r = ex.execute(fast, &CancellationToken::new()).await;
    assert_eq!(
        r.failure().unwrap().code,
        ours::ABOVE_LIMIT,
        "{}",
        r.report().message
    );
    assert!(r.report().message.contains("velocity_scaling"));
    let strong =
        request(&sim, "wrist", Skill::Grasp, "apple").with_overrides(asp_skills::MotionOverrides {
            gripper_effort: Some(cfg.common.safety.max_gripper_effort * 2.0),
            ..Default::default()
        });
    let r = ex.execute(strong, &CancellationToken::new()).await;
    assert_eq!(r.failure().unwrap().code, ours::ABOVE_LIMIT);

    // targets outside the workspace box
    let mut cfg = config();
    cfg.common.safety.workspace.max[0] = 0.2;
    let ex2 = executor(&sim, &cfg, &estop);
    let r = ex2
        .execute(
            request(&sim, "wrist", Skill::Grasp, "apple"),
            &CancellationToken::new(),
        )
        .await;
    assert_eq!(
        r.failure().unwrap().code,
        ours::OUTSIDE_WORKSPACE,
        "{}",
        r.report().message
    );

    // e-stop latched: refused; after reset the same request runs
    estop.engage();
    let r = ex
        .execute(
            request(&sim, "wrist", Skill::Grasp, "apple"),
            &CancellationToken::new(),
        )
        .await;
    assert_eq!(r.failure().unwrap().code, ours::ESTOP);
    assert_eq!(
        ex.command_counts().arm_goals + ex2.command_counts().arm_goals,
        0
    );
    assert_eq!(ex.command_counts().gripper_goals, 0);
    assert_eq!(robot_state(&sim), before, "nothing moved");
    estop.reset();
    let r = ex
        .execute(
            request(&sim, "wrist", Skill::Grasp, "apple"),
            &CancellationToken::new(),
        )
        .await;
    assert!(r.succeeded(), "{:#?}", r.report());
}

/// An arm that engages the e-stop as its `n`-th pose goal arrives, then forwards the
/// goal to the simulator with the executor's (now cancelled) token.
struct EStopOnGoal {
    sim: asp_sim::SimRobot,
    estop: EStop,
    n: u32,
    seen: std::sync::atomic::AtomicU32,
}

#[async_trait::async_trait]
impl asp_core::robot::ArmMotion for EStopOnGoal {
    async fn move_to_pose(
        &self,
        goal: &asp_core::robot::PoseGoal,
        cancel: &CancellationToken,
    ) -> asp_core::robot::MotionOutcome {
        let k = self.seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        if k == self.n {
            self.estop.engage();
        }
        self.sim.move_to_pose(goal, cancel).await
    }
    async fn move_to_named(
        &self,
        name: &str,
        cancel: &CancellationToken,
    ) -> asp_core::robot::MotionOutcome {
        self.sim.move_to_named(name, cancel).await
    }
    async fn tool_pose(
        &self,
        frame: &asp_core::FrameId,
    ) -> Result<asp_core::Isometry3, asp_core::robot::RobotError> {
        self.sim.tool_pose(frame).await
    }
}

#[tokio::test]
async fn estop_aborts_the_active_motion_and_latches_until_reset() {
    use asp_core::robot::ArmMotion;
    let (sim, _) = scenario("tabletop/apple_in_bowl.yaml");
    let cfg = config();
    let estop = EStop::new();
    let arm = std::sync::Arc::new(EStopOnGoal {
        sim: sim.clone(),
        estop: estop.clone(),
        n: 2,
        seen: Default::default(),
    });
    let ex = executor_with_arm(&sim, arm.clone(), &cfg, &estop);
    let r = ex
        .execute(
            request(&sim, "wrist", Skill::Grasp, "apple"),
            &CancellationToken::new(),
        )
        .await;
    let f = r.failure().expect("aborted");
    assert_eq!(f.code, ours::ESTOP, "{:#?}", r.report());
    assert_eq!(f.kind, FailureKind::Cancelled);
    assert!(sim.with_state(|s| s.held()).is_none());
    // latched: the next skill is refused without a goal
    let goals = ex.command_counts().arm_goals;
    let r = ex
        .execute(
            request(&sim, "wrist", Skill::Grasp, "apple"),
            &CancellationToken::new(),
        )
        .await;
    assert_eq!(r.failure().unwrap().code, ours::ESTOP);
    assert_eq!(ex.command_counts().arm_goals, goals);
    let _ = arm.tool_pose(&asp_core::FrameId::map()).await.unwrap();
}

/// MoveIt codes on the executor's real failure path, table-driven: a goal of the apple
/// grasp answered with `code` (the rest by the simulator). Before anything is touched a
/// planning refusal moves on to the next candidate and the grasp succeeds; any other
/// code, or any code once the apple is touched, fails the skill with the code's
/// feedback in the agent's ToolOutput (kind, retry, remap, hint).
#[tokio::test]
async fn moveit_codes_map_to_tool_output_feedback_and_retry_decisions() {
    use asp_core::robot::MoveItErrorCode as C;
    use asp_skills::codes::{is_planning_refusal, moveit_feedback};
    // (goal that fails: 1 pre-grasp, 2 approach, 3 lift; code; next candidate tried?)
    let table = [
        (1, C::NoIkSolution, true),
        (1, C::PlanningFailed, true),
        (1, C::GoalInCollision, true),
        (2, C::InvalidMotionPlan, true),
        (2, C::TimedOut, true),
        (1, C::ControlFailed, false),
        (1, C::FrameTransformFailure, false),
        (1, C::InvalidGroupName, false),
        (2, C::Abort, false),
        (3, C::NoIkSolution, false),
        (3, C::ControlFailed, false),
    ];
    let cfg = config();
    let estop = EStop::new();
    for (n, code, next) in table {
        let (sim, _) = scenario("tabletop/apple_in_bowl.yaml");
        let arm = std::sync::Arc::new(FailNthGoal::new(&sim, n, code));
        let ex = executor_with_arm(&sim, arm, &cfg, &estop);
        let r = ex
            .execute(
                request(&sim, "wrist", Skill::Grasp, "apple"),
                &CancellationToken::new(),
            )
            .await;
        let case = format!("goal {n} answered {code:?}");
        assert_eq!(next, is_planning_refusal(code) && n < 3, "{case}: table");
        if next {
            assert!(r.succeeded(), "{case}: {:#?}", r.report());
            assert!(r.report().stats.attempts_tried >= 2, "{case}");
            let first = r.report().attempts[0].failed.as_deref().unwrap();
            assert!(first.contains(&code.to_string()), "{case}: {first}");
            continue;
        }
        assert_eq!(
            r.report().stats.attempts_tried,
            1,
            "{case}: no other candidate"
        );
        let fb = moveit_feedback(code);
        let touched = n >= 3; // the approach reached the apple and the fingers closed
        let out = r.tool_output(asp_core::State::default());
        assert!(!out.success, "{case}");
        let f = out.failure.as_ref().unwrap();
        assert_eq!(f.code, code.code(), "{case}");
        assert_eq!(f.kind, fb.kind, "{case}");
        assert_eq!(f.retryable, fb.retryable, "{case}");
        assert_eq!(f.needs_remap, fb.needs_remap || touched, "{case}");
        assert!(
            out.feedback_msg.contains(fb.hint),
            "{case}: {}",
            out.feedback_msg
        );
    }
}

/// The fingers closed on the apple, then the lift was refused (its start state in
/// contact with what stood beside it): the grasp fails, the apple is held all the same,
/// and a place must know how far it hangs below the tool (it was refused as "not
/// grasped by this executor").
#[tokio::test]
async fn an_object_held_after_a_failed_lift_can_be_put_down() {
    use asp_core::robot::MoveItErrorCode as C;
    let (sim, sc) = scenario("tabletop/apple_in_bowl.yaml");
    let cfg = config();
    let estop = EStop::new();
    let arm = std::sync::Arc::new(FailNthGoal::new(&sim, 3, C::StartStateInCollision));
    let ex = executor_with_arm(&sim, arm, &cfg, &estop);
    let cancel = CancellationToken::new();
    let r = ex
        .execute(request(&sim, "wrist", Skill::Grasp, "apple"), &cancel)
        .await;
    assert!(!r.succeeded(), "{:#?}", r.report());
    assert_eq!(r.report().holding, Some(true));
    assert!(sim.with_state(|s| s.held()).is_some());
    // the wrist, still down at the apple, sees little of the bowl: the bowl as the head
    // camera sees it
    let r = ex.execute(apple_into_bowl(&sim, "head"), &cancel).await;
    assert!(r.succeeded(), "{:#?}", r.report());
    assert!(succeeded(&sim, &sc), "the scenario's success predicate");
}

/// A binder standing upright on the table, face-on to the robot (5.4 cm thick, 24 cm
/// wide, 28 cm tall): taller than the grasp lifts it, and thin across the line of sight.
fn binder_on_the_table() -> (asp_sim::SimRobot, asp_sim::scenario::Scenario) {
    let dir = config_dir();
    let tabletop = std::fs::read_to_string(dir.join("worlds/tabletop.yaml")).unwrap();
    // between the cups' zone and the balls' (nothing else within 0.3 m)
    let world = format!(
        "{tabletop}
  - name: binder
    description: a red ring binder
    color: [190, 30, 40]
    pose: {{xyz: [0.62, -0.8, 0.5]}}
    shapes:
      - box: {{size: [0.054, 0.24, 0.28]}}
        at: {{xyz: [0.0, 0.0, 0.14]}}
"
    );
    let world = asp_sim::parse_world(&world, dir.join("worlds/tabletop_binder.yaml")).unwrap();
    let file = dir.join("scenarios/tabletop/apple_in_bowl.yaml");
    let mut spec = asp_sim::scenario::Scenario::load(&file).unwrap().spec;
    spec.robot.base = [0.0, -0.8];
    let sc = asp_sim::scenario::Scenario::from_parts(&file, spec, world).unwrap();
    let sim = asp_sim::SimRobot::for_scenario(&sc, model(), exact_sensors()).unwrap();
    (sim, sc)
}

/// The grasp closes across the binder's thickness with room for its unseen back (centred
/// on the face the camera sees, every pre-grasp put a finger into the binder), lifts it,
/// and the verifier confirms it.
#[tokio::test]
async fn a_tall_binder_standing_face_on_is_grasped_and_confirmed_lifted() {
    let (sim, _) = binder_on_the_table();
    let cfg = config();
    let estop = EStop::new();
    let ex = executor(&sim, &cfg, &estop);
    let r = ex
        .execute(
            request(&sim, "wrist", Skill::Grasp, "binder"),
            &CancellationToken::new(),
        )
        .await;
    assert!(r.succeeded(), "{:#?}", r.report());
    assert_eq!(r.report().holding, Some(true));
    let held = sim.with_state(|s| s.held());
    assert!(
        held.is_some(),
        "the simulator has the binder in the gripper"
    );
}
