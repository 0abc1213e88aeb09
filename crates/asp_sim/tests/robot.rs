//! The simulated robot through its `asp_core::robot` traits: MoveIt, GripperCommand and
//! Nav2 semantics and error codes, cancellation, cameras that follow the robot, TF and
//! joint states, determinism.
#![allow(clippy::unwrap_used)]

use std::f32::consts::PI;
use std::path::PathBuf;
use std::sync::Arc;

use asp_core::robot::{
    ArmMotion, BaseNavigation, CancellationToken, FrameSource, Gripper, GripperGoal, MotionKind,
    MoveItErrorCode, NavErrorCode, PoseGoal, RobotError, TerminalStatus,
};
use asp_core::{FrameId, Isometry3, Pose2D, Transform};
use asp_kinematics::{RobotModel, Xarm6};
use asp_sim::render::DepthNoise;
use asp_sim::{SimRobot, SimSettings, load_world};
use nalgebra::{Translation3, UnitQuaternion};

fn config() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../config")
}

fn model() -> Arc<dyn RobotModel> {
    Arc::new(Xarm6::on_base().unwrap())
}

fn tabletop(settings: SimSettings) -> SimRobot {
    let w = load_world(config().join("worlds/tabletop.yaml")).unwrap();
    SimRobot::new(w, model(), settings, Pose2D::new(0.0, -2.0, 0.0)).unwrap()
}

fn apartment() -> SimRobot {
    let w = load_world(config().join("worlds/apartment.yaml")).unwrap();
    SimRobot::new(
        w,
        model(),
        SimSettings::default(),
        Pose2D::new(1.0, 3.6, 0.0),
    )
    .unwrap()
}

fn goal(frame: &str, x: f32, y: f32, z: f32) -> PoseGoal {
    PoseGoal {
        frame: FrameId::new(frame),
        target: Isometry3::from_parts(
            Translation3::new(x, y, z),
            UnitQuaternion::from_euler_angles(PI, 0.0, 0.0),
        ),
        kind: MotionKind::FreeSpace,
        position_tolerance: 0.002,
        orientation_tolerance: 0.02,
        velocity_scaling: 0.5,
        acceleration_scaling: 0.5,
        allowed_contacts: Vec::new(),
    }
}

#[tokio::test]
async fn arm_reaches_pose_goals_in_map_base_and_arm_frames() {
    let sim = tabletop(SimSettings::default());
    let c = CancellationToken::new();
    let out = sim.move_to_pose(&goal("map", 0.55, -2.1, 0.7), &c).await;
    assert!(out.code.is_success(), "{out:?}");
    let p = sim.tool_pose(&FrameId::map()).await.unwrap();
    assert!((p.translation.vector - nalgebra::Vector3::new(0.55, -2.1, 0.7)).norm() < 0.003);
    // the same point in base_link and link_base
    let in_base = sim.tool_pose(&FrameId::new("base_link")).await.unwrap();
    assert!((in_base.translation.vector - nalgebra::Vector3::new(0.55, -0.1, 0.7)).norm() < 0.003);
    let in_arm = sim.tool_pose(&FrameId::new("link_base")).await.unwrap();
    assert!((in_arm.translation.vector - nalgebra::Vector3::new(0.38, -0.1, 0.15)).norm() < 0.003);
    let out = sim
        .move_to_pose(&goal("link_base", 0.3, 0.1, 0.2), &c)
        .await;
    assert!(out.code.is_success(), "{out:?}");
    let p = sim.tool_pose(&FrameId::map()).await.unwrap();
    assert!((p.translation.vector - nalgebra::Vector3::new(0.47, -1.9, 0.75)).norm() < 0.003);
    assert!(sim.sim_time() > 0.0, "motions take simulated time");
    assert!(sim.move_to_named("home", &c).await.code.is_success());
    assert!(matches!(
        sim.tool_pose(&FrameId::new("elsewhere")).await,
        Err(RobotError::UnknownFrame(_))
    ));
}

#[tokio::test]
async fn arm_failures_carry_moveit_codes() {
    let sim = tabletop(SimSettings::default());
    let c = CancellationToken::new();
    let code = |o: asp_core::robot::MotionOutcome| o.code;
    assert_eq!(
        code(sim.move_to_pose(&goal("map", 2.5, -2.0, 0.7), &c).await),
        MoveItErrorCode::NoIkSolution
    );
    // inside the table top
    assert_eq!(
        code(sim.move_to_pose(&goal("map", 0.5, -1.6, 0.47), &c).await),
        MoveItErrorCode::GoalInCollision
    );
    assert_eq!(
        code(sim.move_to_pose(&goal("nowhere", 0.5, 0.0, 0.7), &c).await),
        MoveItErrorCode::FrameTransformFailure
    );
    let mut bad = goal("map", 0.5, -2.0, 0.7);
    bad.velocity_scaling = 0.0;
    assert_eq!(
        code(sim.move_to_pose(&bad, &c).await),
        MoveItErrorCode::InvalidGoalConstraints
    );
    assert_eq!(
        code(sim.move_to_named("dance", &c).await),
        MoveItErrorCode::InvalidGoalConstraints
    );
    // a failed request leaves the arm where it was
    let home = sim.model().named_configuration("home").unwrap();
    assert_eq!(sim.with_state(|s| s.robot.q.clone()), home);
}

#[tokio::test(flavor = "current_thread")]
async fn cancelling_a_motion_stops_the_arm_where_it_is() {
    let sim = tabletop(SimSettings::default());
    let c = CancellationToken::new();
    let start = sim.tool_pose(&FrameId::map()).await.unwrap();
    let target = goal("map", 0.45, -2.3, 0.6);
    let task = {
        let sim = sim.clone();
        let c = c.clone();
        tokio::spawn(async move { sim.move_to_pose(&target, &c).await })
    };
    while sim.sim_time() < 0.2 {
        tokio::task::yield_now().await;
    }
    c.cancel();
    let out = task.await.unwrap();
    assert_eq!(out.code, MoveItErrorCode::Preempted, "{out:?}");
    let stopped = sim.tool_pose(&FrameId::map()).await.unwrap();
    let to_goal = (stopped.translation.vector - nalgebra::Vector3::new(0.45, -2.3, 0.6)).norm();
    let from_start = (stopped.translation.vector - start.translation.vector).norm();
    assert!(
        to_goal > 0.01 && from_start > 0.001,
        "{to_goal} {from_start}"
    );
    let t = sim.sim_time();
    tokio::task::yield_now().await;
    assert_eq!(sim.sim_time(), t, "nothing moves after the cancel");
}

#[tokio::test]
async fn gripper_command_semantics() {
    let sim = tabletop(SimSettings::default());
    let c = CancellationToken::new();
    let out = sim
        .command(
            GripperGoal {
                position: 0.0,
                max_effort: 10.0,
            },
            &c,
        )
        .await
        .unwrap();
    assert!(out.reached_goal && !out.stalled && out.position == 0.0);
    let out = sim
        .command(
            GripperGoal {
                position: 0.05,
                max_effort: 10.0,
            },
            &c,
        )
        .await
        .unwrap();
    assert!(out.reached_goal && (out.position - 0.05).abs() < 1e-6);
    for bad in [
        GripperGoal {
            position: 0.2,
            max_effort: 10.0,
        },
        GripperGoal {
            position: -0.01,
            max_effort: 10.0,
        },
        GripperGoal {
            position: 0.02,
            max_effort: 500.0,
        },
    ] {
        assert!(
            matches!(sim.command(bad, &c).await, Err(RobotError::Rejected(_))),
            "{bad:?}"
        );
    }
    // joint states carry the finger joints at half the gap each
    let (names, values) = sim.joint_states();
    assert_eq!(names.len(), 8);
    assert!((values[6] - 0.025).abs() < 1e-6, "{values:?}");
}

#[tokio::test]
async fn navigation_codes_and_the_published_map() {
    let sim = apartment();
    let c = CancellationToken::new();
    let grid = sim.occupancy_grid().unwrap();
    assert_eq!(grid.resolution, 0.05);
    assert_eq!(grid.value_at(4.0, 1.0), Some(100), "kitchen wall");
    assert_eq!(grid.value_at(4.0, 3.0), Some(0), "kitchen door");
    let nav = |x, y| sim.navigate_to(Pose2D::new(x, y, 0.0), &c);
    let out = nav(20.0, 3.0).await;
    assert_eq!(
        (out.status, out.error_code),
        (TerminalStatus::Aborted, NavErrorCode::GoalOutsideMap)
    );
    let out = nav(6.0, 3.0).await;
    assert_eq!(
        out.error_code,
        NavErrorCode::GoalOccupied,
        "on the kitchen table"
    );
    assert_eq!(
        out.final_pose,
        Pose2D::new(1.0, 3.6, 0.0),
        "a refused goal does not move the base"
    );
    let out = nav(7.5, 5.9).await;
    assert!(
        matches!(out.error_code, NavErrorCode::GoalOccupied),
        "{out:?}"
    );
    let out = sim.navigate_to(Pose2D::new(6.0, 2.2, 1.0), &c).await;
    assert_eq!(out.status, TerminalStatus::Succeeded, "{out:?}");
    assert!(out.final_pose.distance_to(&Pose2D::new(6.0, 2.2, 0.0)) < 1e-4);
    assert!((out.final_pose.theta - 1.0).abs() < 1e-4);
    assert_eq!(sim.base_pose().await.unwrap(), out.final_pose);
    // a base in collision cannot start
    sim.with_state_mut(|s| s.robot.base = Pose2D::new(6.0, 2.9, 0.0));
    let out = nav(1.0, 3.6).await;
    assert_eq!(out.error_code, NavErrorCode::StartOccupied);
}

#[tokio::test(flavor = "current_thread")]
async fn cancelling_navigation_stops_the_base_where_it_is() {
    let sim = apartment();
    let c = CancellationToken::new();
    let task = {
        let sim = sim.clone();
        let c = c.clone();
        tokio::spawn(async move { sim.navigate_to(Pose2D::new(6.0, 2.2, 0.0), &c).await })
    };
    while sim.sim_time() < 3.0 {
        tokio::task::yield_now().await;
    }
    c.cancel();
    let out = task.await.unwrap();
    assert_eq!(out.status, TerminalStatus::Canceled);
    assert_eq!(out.error_code, NavErrorCode::None);
    let at = sim.base_pose().await.unwrap();
    assert_eq!(at, out.final_pose);
    assert!(at.distance_to(&Pose2D::new(1.0, 3.6, 0.0)) > 0.3, "{at:?}");
    assert!(at.distance_to(&Pose2D::new(6.0, 2.2, 0.0)) > 1.0, "{at:?}");
}

#[tokio::test]
async fn cameras_follow_the_base_and_the_arm() {
    let sim = tabletop(SimSettings::default());
    let c = CancellationToken::new();
    let head = sim.capture("head").await.unwrap();
    head.validate().unwrap();
    assert_eq!(head.camera_pose.parent.as_str(), "map");
    assert_eq!(head.camera_pose.child.as_str(), "head_camera_optical_frame");
    let gt = head.ground_truth.as_ref().unwrap();
    assert!(gt.instances.values().any(|i| i.name == "table"));
    sim.with_state_mut(|s| s.robot.base = Pose2D::new(0.0, -1.2, 0.0));
    let moved = sim.capture("head").await.unwrap();
    let d = moved.camera_pose.iso.translation.vector - head.camera_pose.iso.translation.vector;
    assert!(
        (d - nalgebra::Vector3::new(0.0, 0.8, 0.0)).norm() < 1e-4,
        "{d:?}"
    );
    let names: Vec<String> = moved
        .ground_truth
        .as_ref()
        .unwrap()
        .instances
        .values()
        .map(|i| i.name.clone())
        .collect();
    assert!(
        names.contains(&"cup_left".to_owned()) && names.contains(&"cup_right".to_owned()),
        "{names:?}"
    );

    let wrist = sim.capture("wrist").await.unwrap();
    assert!(
        sim.move_to_pose(&goal("map", 0.55, -1.2, 0.75), &c)
            .await
            .code
            .is_success()
    );
    let wrist2 = sim.capture("wrist").await.unwrap();
    assert!(
        (wrist2.camera_pose.iso.translation.vector - wrist.camera_pose.iso.translation.vector)
            .norm()
            > 0.05
    );
    // looking down from above the cups, the wrist camera sees them
    let seen = &wrist2.ground_truth.as_ref().unwrap().instances;
    assert!(seen.values().any(|i| i.name == "tray"), "{seen:?}");
    assert!(matches!(
        sim.capture("tail").await,
        Err(RobotError::UnknownCamera(_))
    ));
}

#[tokio::test]
async fn robot_frames_form_the_urdf_tree_under_map_and_odom() {
    let sim = tabletop(SimSettings::default());
    let frames = sim.robot_frames();
    let all: Vec<&Transform> = frames.moving.iter().chain(&frames.fixed).collect();
    // every frame has exactly one parent, and the tree is rooted at map
    let mut children: Vec<&str> = all.iter().map(|t| t.child.as_str()).collect();
    let n = children.len();
    children.sort();
    children.dedup();
    assert_eq!(children.len(), n, "a frame with two parents");
    assert!(all.iter().all(|t| t.child.as_str() != "map"));
    let parent_of = |child: &str| {
        all.iter()
            .find(|t| t.child.as_str() == child)
            .map(|t| t.parent.as_str().to_owned())
    };
    assert_eq!(parent_of("odom").as_deref(), Some("map"));
    assert_eq!(parent_of("base_link").as_deref(), Some("odom"));
    // links hang from their joints' parents, not from the base
    assert_eq!(parent_of("link2").as_deref(), Some("link1"));
    assert_eq!(
        parent_of("wrist_camera_optical_frame").as_deref(),
        Some("wrist_camera_link")
    );
    // no object (ground truth) among them
    assert!(parent_of("mug").is_none());
    // fixed joints are static, moving joints are not
    let is_fixed = |child: &str| frames.fixed.iter().any(|t| t.child.as_str() == child);
    assert!(is_fixed("link_base") && is_fixed("head_camera_optical_frame"));
    assert!(!is_fixed("link1") && !is_fixed("left_finger") && !is_fixed("base_link"));
    // composed from map to the tool, the chain is where the arm says its tool is
    let composed = map_t(&all, "link_tcp");
    let direct = sim.tool_pose(&FrameId::map()).await.unwrap();
    assert!((composed.translation.vector - direct.translation.vector).norm() < 1e-4);
    assert!(composed.rotation.angle_to(&direct.rotation) < 1e-3);
}

/// `map_T_frame`, climbing the edges from `frame` to `map`.
fn map_t(edges: &[&Transform], frame: &str) -> Isometry3 {
    let mut acc = Isometry3::identity();
    let mut current = frame.to_owned();
    while current != "map" {
        let e = edges
            .iter()
            .find(|t| t.child.as_str() == current)
            .unwrap_or_else(|| panic!("{current} has no parent"));
        acc = e.iso * acc;
        current = e.parent.as_str().to_owned();
    }
    acc
}

#[tokio::test]
async fn same_seed_same_frames() {
    let noisy = SimSettings {
        seed: 5,
        noise: DepthNoise {
            std_at_1m: 0.005,
            dropout: 0.05,
            max_range: 10.0,
        },
        width: 160,
        height: 120,
        ..SimSettings::default()
    };
    let a = tabletop(noisy.clone());
    let b = tabletop(noisy.clone());
    let c = tabletop(SimSettings { seed: 6, ..noisy });
    let (fa, fb, fc) = (
        a.capture("head").await.unwrap(),
        b.capture("head").await.unwrap(),
        c.capture("head").await.unwrap(),
    );
    assert_eq!(fa, fb);
    assert_ne!(fa.depth, fc.depth);
    assert_eq!(fa.rgb, fc.rgb, "the seed drives noise only");
    // successive frames get fresh noise
    let fa2 = a.capture("head").await.unwrap();
    assert_ne!(fa.depth, fa2.depth);
}

#[tokio::test]
async fn after_a_drive_the_robot_believes_it_is_where_it_was_sent_give_or_take_its_localisation() {
    let w = load_world(config().join("worlds/apartment.yaml")).unwrap();
    let settings = SimSettings {
        localization_std: (0.05, 0.05),
        seed: 4,
        ..SimSettings::default()
    };
    let sim = SimRobot::new(w, model(), settings, Pose2D::new(1.0, 3.6, 0.0)).unwrap();
    let c = CancellationToken::new();
    let truth = |sim: &SimRobot| sim.with_state(|s| s.robot.base);
    // before any drive the belief is the truth
    assert_eq!(sim.base_pose().await.unwrap(), truth(&sim));
    let goal = Pose2D::new(6.0, 2.2, 1.0);
    let out = sim.navigate_to(goal, &c).await;
    assert_eq!(out.status, TerminalStatus::Succeeded, "{out:?}");
    // the robot reports the goal; the base is off it by the drawn error
    let believed = sim.base_pose().await.unwrap();
    assert!(believed.distance_to(&goal) < 1e-4, "{believed:?}");
    assert!((believed.theta - goal.theta).abs() < 1e-4);
    let off = truth(&sim).distance_to(&goal);
    assert!(off > 1e-3 && off < 0.3, "{off}");
    // /tf and the cameras carry the belief: the head camera sits where the believed
    // base puts it, rendered from where it truly is
    let frames = sim.robot_frames();
    let edges: Vec<&Transform> = frames.moving.iter().chain(&frames.fixed).collect();
    let map_base = map_t(&edges, sim.model().base_frame());
    assert!((map_base.translation.vector.x - believed.x).abs() < 1e-4);
    assert!((map_base.translation.vector.y - believed.y).abs() < 1e-4);
    let frame = sim.capture("head").await.unwrap();
    let cam = frame.camera_pose.iso.translation.vector;
    let (bx, by) = (believed.x, believed.y);
    let t = truth(&sim);
    let radial = ((cam.x - bx).powi(2) + (cam.y - by).powi(2)).sqrt();
    let true_cam = {
        let s = sim.clone();
        s.with_state_mut(|st| st.robot.localization_error = Pose2D::new(0.0, 0.0, 0.0));
        let f = s.capture("head").await.unwrap();
        f.camera_pose.iso.translation.vector
    };
    let true_radial = ((true_cam.x - t.x).powi(2) + (true_cam.y - t.y).powi(2)).sqrt();
    assert!(
        (radial - true_radial).abs() < 1e-3,
        "{radial} vs {true_radial}"
    );
    assert!(((cam.x - true_cam.x).powi(2) + (cam.y - true_cam.y).powi(2)).sqrt() > 1e-3);
    // a second drive draws a new error; the same seed draws the same errors
    let first_error = sim.with_state(|s| s.robot.localization_error);
    let back = sim.navigate_to(Pose2D::new(1.0, 3.6, 0.0), &c).await;
    assert_eq!(back.status, TerminalStatus::Succeeded, "{back:?}");
    assert!(truth(&sim).distance_to(&Pose2D::new(1.0, 3.6, 0.0)) > 1e-3);
    assert_ne!(sim.with_state(|s| s.robot.localization_error), first_error);
}

#[tokio::test]
async fn without_localisation_error_the_belief_is_the_truth() {
    let w = load_world(config().join("worlds/apartment.yaml")).unwrap();
    let settings = SimSettings {
        localization_std: (0.0, 0.0),
        ..SimSettings::default()
    };
    let sim = SimRobot::new(w, model(), settings, Pose2D::new(1.0, 3.6, 0.0)).unwrap();
    let out = sim
        .navigate_to(Pose2D::new(6.0, 2.2, 1.0), &CancellationToken::new())
        .await;
    assert_eq!(out.status, TerminalStatus::Succeeded);
    assert_eq!(sim.with_state_mut(|s| s.robot.base), out.final_pose);
}
