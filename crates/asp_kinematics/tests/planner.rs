#![allow(clippy::unwrap_used)]
//! The motion planner against a scene of boxes (a `ShapeWorld`): MoveIt's outcomes for
//! free-space and linear motions, held objects, the gripper opening, determinism.

use asp_core::geometry::{FrameId, Isometry3};
use asp_core::robot::{CancellationToken, MotionKind, MoveItErrorCode, PoseGoal};
use asp_kinematics::{
    AttachedObject, CollisionWorld, EmptyWorld, IkOptions, JointTrajectory, MotionPlanner,
    PlanRequest, PlannerSettings, RobotModel, ShapeWorld, WorldObject, Xarm6,
};
use nalgebra::{Translation3, UnitQuaternion, Vector3};
use parry3d::shape::SharedShape;

fn robot() -> Xarm6 {
    Xarm6::on_base().unwrap()
}

fn home(r: &dyn RobotModel) -> Vec<f64> {
    r.named_configuration("home").unwrap()
}

/// A tool pose pointing straight down (x ahead, fingers closing along the base's y).
fn down(x: f32, y: f32, z: f32) -> Isometry3 {
    Isometry3::from_parts(
        Translation3::new(x, y, z),
        UnitQuaternion::from_axis_angle(&Vector3::x_axis(), std::f32::consts::PI),
    )
}

fn configuration_at(r: &dyn RobotModel, pose: &Isometry3) -> Vec<f64> {
    r.inverse(pose, &home(r), &IkOptions::default()).unwrap()
}

/// Every configuration along the trajectory, at most `step` rad apart.
fn densely(t: &JointTrajectory, step: f64) -> Vec<Vec<f64>> {
    let mut out = vec![t.points[0].positions.clone()];
    for w in t.points.windows(2) {
        let (a, b) = (&w[0].positions, &w[1].positions);
        let d = a
            .iter()
            .zip(b)
            .map(|(x, y)| (y - x).abs())
            .fold(0.0, f64::max);
        let n = ((d / step).ceil() as usize).max(1);
        for k in 1..=n {
            let f = k as f64 / n as f64;
            out.push(a.iter().zip(b).map(|(x, y)| x + (y - x) * f).collect());
        }
    }
    out
}

fn collision_free(r: &dyn RobotModel, world: &dyn CollisionWorld, qs: &[Vec<f64>]) -> bool {
    qs.iter().all(|q| {
        let shapes = r.collision_shapes(q);
        world.first_collision(&shapes, &[]).is_none() && r.self_collision(&shapes).is_none()
    })
}

fn assert_reaches(r: &dyn RobotModel, t: &JointTrajectory, goal: &Isometry3, tolerance: f64) {
    let end = r.tool_pose(t.final_positions());
    let d = (end.translation.vector - goal.translation.vector).norm();
    assert!(f64::from(d) <= tolerance + 1e-5, "ends {d} m from the goal");
    assert!(f64::from(end.rotation.angle_to(&goal.rotation)) < 1e-2);
}

/// A wall in the plane y = 0 in front of the arm, 0.25 m high.
fn wall() -> ShapeWorld {
    ShapeWorld::default().with(WorldObject::cuboid(
        "wall",
        [0.38, 0.0, 0.05],
        [0.36, 0.04, 0.40],
    ))
}

#[test]
fn a_free_goal_gives_a_timed_trajectory_from_start_to_goal() {
    let r = robot();
    let start = home(&r);
    let goal = down(0.30, 0.25, 0.15);
    let request = PlanRequest {
        velocity_scaling: 0.5,
        ..PlanRequest::default()
    };
    let t = MotionPlanner::default()
        .plan(&r, &EmptyWorld, &start, &goal, &request)
        .unwrap();
    assert_eq!(t.joint_names.len(), 6);
    assert_eq!(t.points[0].positions, start);
    assert_reaches(&r, &t, &goal, request.position_tolerance);
    assert!(t.duration() > 0.0 && t.planning_time_s >= 0.0);
    for w in t.points.windows(2) {
        assert!(w[1].time_from_start > w[0].time_from_start);
    }
    // Velocities stay within half the limits.
    for p in &t.points {
        for (v, j) in p.velocities.iter().zip(r.joints()) {
            assert!(v.abs() <= 0.5 * j.max_velocity + 1e-9, "{v}");
        }
    }
    assert!(
        t.points
            .last()
            .unwrap()
            .velocities
            .iter()
            .all(|v| *v == 0.0)
    );
    // The arm is at the goal at the end of the trajectory.
    assert_eq!(t.sample(t.duration() + 1.0), t.final_positions());
}

#[test]
fn a_goal_out_of_reach_gives_no_ik_solution() {
    let r = robot();
    let e = MotionPlanner::default()
        .plan(
            &r,
            &EmptyWorld,
            &home(&r),
            &down(1.1, 0.0, 0.2),
            &PlanRequest::default(),
        )
        .unwrap_err();
    assert_eq!(e.code, MoveItErrorCode::NoIkSolution, "{e}");
    assert!(e.message.contains("1.100"), "{e}");
}

#[test]
fn a_goal_inside_an_obstacle_gives_goal_in_collision() {
    let r = robot();
    let world = ShapeWorld::default().with(WorldObject::cuboid(
        "crate",
        [0.30, 0.25, 0.15],
        [0.2, 0.2, 0.2],
    ));
    let e = MotionPlanner::default()
        .plan(
            &r,
            &world,
            &home(&r),
            &down(0.30, 0.25, 0.15),
            &PlanRequest::default(),
        )
        .unwrap_err();
    assert_eq!(e.code, MoveItErrorCode::GoalInCollision, "{e}");
    assert!(e.message.contains("crate"), "{e}");
    // The same goal is fine when the crate may be touched (a grasp of it).
    let request = PlanRequest {
        allowed_contacts: vec!["crate".into()],
        ..PlanRequest::default()
    };
    assert!(
        MotionPlanner::default()
            .plan(&r, &world, &home(&r), &down(0.30, 0.25, 0.15), &request)
            .is_ok()
    );
}

#[test]
fn a_start_inside_an_obstacle_gives_start_state_in_collision() {
    let r = robot();
    let world = ShapeWorld::default().with(WorldObject::cuboid(
        "shelf",
        [0.30, 0.0, 0.30],
        [0.1, 0.1, 0.05],
    ));
    let e = MotionPlanner::default()
        .plan(
            &r,
            &world,
            &home(&r),
            &down(0.30, 0.25, 0.15),
            &PlanRequest::default(),
        )
        .unwrap_err();
    assert_eq!(e.code, MoveItErrorCode::StartStateInCollision, "{e}");
    assert!(e.message.contains("shelf"), "{e}");
}

#[test]
fn a_wall_between_start_and_goal_is_planned_around() {
    let r = robot();
    let world = wall();
    let start = configuration_at(&r, &down(0.30, -0.25, 0.15));
    let goal = down(0.30, 0.25, 0.15);
    let t = MotionPlanner::default()
        .plan(&r, &world, &start, &goal, &PlanRequest::default())
        .unwrap();
    assert_reaches(&r, &t, &goal, PlanRequest::default().position_tolerance);
    // The straight joint-space motion would cut through the wall...
    let straight = JointTrajectory::from_path(
        r.joints(),
        &[start.clone(), t.final_positions().to_vec()],
        1.0,
        1.0,
        5.0,
        0.0,
    );
    assert!(!collision_free(&r, &world, &densely(&straight, 0.005)));
    // ...the plan goes around it: free at a resolution four times finer than the
    // planner's own checks.
    assert!(collision_free(&r, &world, &densely(&t, 0.005)));
}

#[test]
fn the_same_seed_gives_the_same_trajectory() {
    let r = robot();
    let world = wall();
    let start = configuration_at(&r, &down(0.30, -0.25, 0.15));
    let goal = down(0.30, 0.25, 0.15);
    let plan = |seed| {
        let planner = MotionPlanner::new(PlannerSettings {
            seed,
            ..PlannerSettings::default()
        });
        let t = planner
            .plan(&r, &world, &start, &goal, &PlanRequest::default())
            .unwrap();
        (t.points.clone(), t.duration())
    };
    assert_eq!(plan(1), plan(1));
    assert_eq!(plan(2), plan(2));
}

/// A box around the goal with an opening in its lid wide enough for the wrist but not
/// for the gripper: the goal is valid, but no path leads into it.
fn ship_in_a_bottle() -> (ShapeWorld, Isometry3) {
    let (x, z) = (0.35_f32, 0.15_f32);
    let world = ShapeWorld::default()
        .with(WorldObject::cuboid(
            "floor",
            [x, 0.0, 0.11],
            [0.24, 0.24, 0.02],
        ))
        .with(WorldObject::cuboid(
            "front",
            [x + 0.12, 0.0, 0.22],
            [0.02, 0.24, 0.24],
        ))
        .with(WorldObject::cuboid(
            "back",
            [x - 0.12, 0.0, 0.22],
            [0.02, 0.24, 0.24],
        ))
        .with(WorldObject::cuboid(
            "left",
            [x, 0.12, 0.22],
            [0.24, 0.02, 0.24],
        ))
        .with(WorldObject::cuboid(
            "right",
            [x, -0.12, 0.22],
            [0.24, 0.02, 0.24],
        ))
        // The lid at z 0.335–0.345, with a 0.10 m square hole above the goal.
        .with(WorldObject::cuboid(
            "lid_front",
            [x + 0.085, 0.0, 0.34],
            [0.07, 0.24, 0.01],
        ))
        .with(WorldObject::cuboid(
            "lid_back",
            [x - 0.085, 0.0, 0.34],
            [0.07, 0.24, 0.01],
        ))
        .with(WorldObject::cuboid(
            "lid_left",
            [x, 0.085, 0.34],
            [0.10, 0.07, 0.01],
        ))
        .with(WorldObject::cuboid(
            "lid_right",
            [x, -0.085, 0.34],
            [0.10, 0.07, 0.01],
        ));
    (world, down(x, 0.0, z))
}

#[test]
fn an_unreachable_region_exhausts_rrt_connect() {
    let r = robot();
    let (world, goal) = ship_in_a_bottle();
    let start = configuration_at(&r, &down(0.30, 0.35, 0.40));
    let planner = MotionPlanner::new(PlannerSettings {
        rrt_max_iterations: 150,
        ..PlannerSettings::default()
    });
    // The goal itself is collision-free (IK finds a valid configuration)...
    let accept = |q: &[f64]| {
        let s = r.collision_shapes(q);
        match world.first_collision(&s, &[]).or(None) {
            Some(c) => Err(format!("{c:?}")),
            None => r
                .self_collision(&s)
                .map_or(Ok(()), |c| Err(format!("{c:?}"))),
        }
    };
    let opts = IkOptions {
        max_attempts: 64,
        ..IkOptions::default()
    };
    assert!(r.inverse_filtered(&goal, &start, &opts, &accept).is_ok());
    // ...but nothing leads there.
    let e = planner
        .plan(&r, &world, &start, &goal, &PlanRequest::default())
        .unwrap_err();
    assert_eq!(e.code, MoveItErrorCode::PlanningFailed, "{e}");
    assert!(e.message.contains("150 iterations"), "{e}");
}

#[test]
fn a_linear_motion_follows_a_straight_line() {
    let r = robot();
    let start = home(&r);
    let from = r.tool_pose(&start);
    let goal = down(0.38, 0.05, 0.12);
    let request = PlanRequest {
        kind: MotionKind::Linear,
        ..PlanRequest::default()
    };
    let t = MotionPlanner::default()
        .plan(&r, &EmptyWorld, &start, &goal, &request)
        .unwrap();
    assert_reaches(&r, &t, &goal, request.position_tolerance);
    let a = from.translation.vector;
    let b = goal.translation.vector;
    let dir = (b - a).normalize();
    let mut time = 0.0;
    while time <= t.duration() {
        let p = r.tool_pose(&t.sample(time));
        let v = p.translation.vector - a;
        let off_line = (v - dir * v.dot(&dir)).norm();
        assert!(off_line < 1e-3, "{off_line} m off the line at t = {time}");
        assert!(p.rotation.angle_to(&goal.rotation) < 1e-2);
        time += 0.02;
    }
}

#[test]
fn a_linear_motion_blocked_midway_is_an_invalid_motion_plan() {
    let r = robot();
    let post = ShapeWorld::default().with(WorldObject::cuboid(
        "post",
        [0.30, 0.0, 0.10],
        [0.04, 0.02, 0.20],
    ));
    let start = configuration_at(&r, &down(0.30, -0.2, 0.15));
    let goal = down(0.30, 0.2, 0.15);
    let request = PlanRequest {
        kind: MotionKind::Linear,
        ..PlanRequest::default()
    };
    let e = MotionPlanner::default()
        .plan(&r, &post, &start, &goal, &request)
        .unwrap_err();
    assert_eq!(e.code, MoveItErrorCode::InvalidMotionPlan, "{e}");
    assert!(e.message.contains("post"), "{e}");
    // The post stands near the middle of the line.
    let percent: f64 = e
        .message
        .split("collides at ")
        .nth(1)
        .and_then(|s| s.split('%').next())
        .unwrap()
        .parse()
        .unwrap();
    assert!((30.0..=70.0).contains(&percent), "{e}");
    // A free-space motion between the same poses goes over the post.
    let free = PlanRequest::default();
    let t = MotionPlanner::default()
        .plan(&r, &post, &start, &goal, &free)
        .unwrap();
    assert!(collision_free(&r, &post, &densely(&t, 0.005)));
}

#[test]
fn a_linear_motion_out_of_reach_gives_no_ik_solution() {
    let r = robot();
    let request = PlanRequest {
        kind: MotionKind::Linear,
        ..PlanRequest::default()
    };
    let e = MotionPlanner::default()
        .plan(&r, &EmptyWorld, &home(&r), &down(0.95, 0.0, 0.30), &request)
        .unwrap_err();
    assert_eq!(e.code, MoveItErrorCode::NoIkSolution, "{e}");
    assert!(e.message.contains("% of the way"), "{e}");
}

#[test]
fn a_linear_motion_into_an_obstacle_gives_goal_in_collision() {
    let r = robot();
    let table = ShapeWorld::default().with(WorldObject::cuboid(
        "table",
        [0.35, 0.0, 0.0],
        [0.5, 0.6, 0.1],
    ));
    let request = PlanRequest {
        kind: MotionKind::Linear,
        ..PlanRequest::default()
    };
    let e = MotionPlanner::default()
        .plan(&r, &table, &home(&r), &down(0.30, 0.0, 0.03), &request)
        .unwrap_err();
    assert_eq!(e.code, MoveItErrorCode::GoalInCollision, "{e}");
    assert!(e.message.contains("table"), "{e}");
}

#[test]
fn a_held_object_collides_like_a_link() {
    let r = robot();
    // A table whose top is at z = 0.08 and a 10 cm cube held between the fingers.
    let table = ShapeWorld::default().with(WorldObject::cuboid(
        "table",
        [0.42, 0.0, 0.03],
        [0.6, 0.8, 0.1],
    ));
    let cube = AttachedObject {
        name: "cube".into(),
        shape: SharedShape::cuboid(0.05, 0.05, 0.05),
        tool_from_object: Isometry3::translation(0.0, 0.0, 0.03),
    };
    let goal = down(0.30, 0.1, 0.12);
    let planner = MotionPlanner::default();
    // The bare gripper clears the table there.
    let bare = planner.plan(&r, &table, &home(&r), &goal, &PlanRequest::default());
    assert!(bare.is_ok(), "{bare:?}");
    let holding = PlanRequest {
        attached: Some(cube.clone()),
        finger_gap: Some(0.0),
        ..PlanRequest::default()
    };
    let e = planner
        .plan(&r, &table, &home(&r), &goal, &holding)
        .unwrap_err();
    assert_eq!(e.code, MoveItErrorCode::GoalInCollision, "{e}");
    assert!(
        e.message.contains("cube") && e.message.contains("table"),
        "{e}"
    );
    // Putting it down on the table is allowed when the table may be touched.
    let placing = PlanRequest {
        allowed_contacts: vec!["table".into()],
        ..holding
    };
    assert!(planner.plan(&r, &table, &home(&r), &goal, &placing).is_ok());
}

#[test]
fn the_finger_gap_decides_whether_the_pads_clear_an_object() {
    let r = robot();
    // A 2 cm wide post standing exactly between the pads at the goal.
    let post = ShapeWorld::default().with(WorldObject::cuboid(
        "post",
        [0.30, 0.2, 0.15],
        [0.01, 0.02, 0.06],
    ));
    let goal = down(0.30, 0.2, 0.15);
    let planner = MotionPlanner::default();
    let with_gap = |gap| PlanRequest {
        finger_gap: Some(gap),
        ..PlanRequest::default()
    };
    assert!(
        planner
            .plan(&r, &post, &home(&r), &goal, &with_gap(0.086))
            .is_ok()
    );
    assert!(
        planner
            .plan(&r, &post, &home(&r), &goal, &with_gap(0.03))
            .is_ok()
    );
    let e = planner
        .plan(&r, &post, &home(&r), &goal, &with_gap(0.0))
        .unwrap_err();
    assert_eq!(e.code, MoveItErrorCode::GoalInCollision, "{e}");
    assert!(e.message.contains("finger"), "{e}");
}

#[test]
fn malformed_requests_are_rejected_with_the_field_named() {
    let r = robot();
    let planner = MotionPlanner::default();
    let start = home(&r);
    let goal = down(0.30, 0.1, 0.2);
    let code = |request: &PlanRequest, goal: &Isometry3, start: &[f64]| {
        planner
            .plan(&r, &EmptyWorld, start, goal, request)
            .unwrap_err()
    };
    for v in [0.0, -0.5, 1.5, f64::NAN] {
        let e = code(
            &PlanRequest {
                velocity_scaling: v,
                ..PlanRequest::default()
            },
            &goal,
            &start,
        );
        assert_eq!(e.code, MoveItErrorCode::InvalidGoalConstraints);
        assert!(e.message.contains("velocity_scaling"), "{e}");
    }
    let e = code(
        &PlanRequest {
            acceleration_scaling: 2.0,
            ..PlanRequest::default()
        },
        &goal,
        &start,
    );
    assert!(
        e.code == MoveItErrorCode::InvalidGoalConstraints
            && e.message.contains("acceleration_scaling")
    );
    let e = code(
        &PlanRequest {
            position_tolerance: 0.0,
            ..PlanRequest::default()
        },
        &goal,
        &start,
    );
    assert!(
        e.code == MoveItErrorCode::InvalidGoalConstraints
            && e.message.contains("position_tolerance")
    );
    let nan_goal = Isometry3::translation(0.3, f32::NAN, 0.2);
    assert_eq!(
        code(&PlanRequest::default(), &nan_goal, &start).code,
        MoveItErrorCode::InvalidGoalConstraints
    );
    let e = code(&PlanRequest::default(), &goal, &start[..4]);
    assert_eq!(e.code, MoveItErrorCode::InvalidRobotState);
    let mut outside = start.clone();
    outside[1] = 2.5;
    let e = code(&PlanRequest::default(), &goal, &outside);
    assert!(
        e.code == MoveItErrorCode::StartStateInvalid && e.message.contains("joint2"),
        "{e}"
    );
}

#[test]
fn pose_goals_in_other_frames_are_transformed_or_rejected() {
    let r = robot();
    let planner = MotionPlanner::default();
    // The goal is given in the base frame; the arm base sits at the mount.
    let mount = r.mount();
    let in_base = mount * down(0.30, 0.1, 0.2);
    let goal = PoseGoal {
        frame: FrameId::new("base_link"),
        target: in_base,
        kind: MotionKind::FreeSpace,
        position_tolerance: 0.001,
        orientation_tolerance: 0.01,
        velocity_scaling: 0.3,
        acceleration_scaling: 0.3,
        allowed_contacts: vec![],
    };
    let lookup = |f: &FrameId| match f.as_str() {
        "base_link" => Some(mount.inverse()),
        "link_base" => Some(Isometry3::identity()),
        _ => None,
    };
    let t = planner
        .plan_pose_goal(&r, &EmptyWorld, &home(&r), &goal, &lookup)
        .unwrap();
    assert_reaches(&r, &t, &down(0.30, 0.1, 0.2), 0.001);
    let unknown = PoseGoal {
        frame: FrameId::new("moon"),
        ..goal.clone()
    };
    let e = planner
        .plan_pose_goal(&r, &EmptyWorld, &home(&r), &unknown, &lookup)
        .unwrap_err();
    assert_eq!(e.code, MoveItErrorCode::FrameTransformFailure);
    assert!(e.message.contains("moon"), "{e}");
    let too_fast = PoseGoal {
        velocity_scaling: 1.2,
        ..goal
    };
    let e = planner
        .plan_pose_goal(&r, &EmptyWorld, &home(&r), &too_fast, &lookup)
        .unwrap_err();
    assert_eq!(e.code, MoveItErrorCode::InvalidGoalConstraints);
}

#[test]
fn named_configurations_are_planned_in_joint_space() {
    let r = robot();
    let planner = MotionPlanner::default();
    let start = home(&r);
    let t = planner
        .plan_to_named(&r, &EmptyWorld, &start, "stow", &PlanRequest::default())
        .unwrap();
    assert_eq!(
        t.final_positions(),
        r.named_configuration("stow").unwrap().as_slice()
    );
    assert!(collision_free(&r, &EmptyWorld, &densely(&t, 0.005)));
    // Going where the arm already is: one point, no time.
    let t = planner
        .plan_to_named(&r, &EmptyWorld, &start, "home", &PlanRequest::default())
        .unwrap();
    assert_eq!(t.points.len(), 1);
    assert_eq!(t.duration(), 0.0);
    assert_eq!(t.sample(1.0), start);
    let e = planner
        .plan_to_named(&r, &EmptyWorld, &start, "dance", &PlanRequest::default())
        .unwrap_err();
    assert_eq!(e.code, MoveItErrorCode::InvalidGoalConstraints);
    assert!(
        e.message.contains("dance") && e.message.contains("home"),
        "{e}"
    );
    let e = planner
        .plan_to_configuration(
            &r,
            &EmptyWorld,
            &start,
            &[0.0, 3.0, 0.0, 0.0, 0.0, 0.0],
            &PlanRequest::default(),
        )
        .unwrap_err();
    assert_eq!(e.code, MoveItErrorCode::InvalidGoalConstraints);
    // A configuration that folds the wrist into the shoulder collides with the robot.
    let e = planner
        .plan_to_configuration(
            &r,
            &EmptyWorld,
            &start,
            &[0.0, 0.0, 0.0, 0.0, 3.1, 0.0],
            &PlanRequest::default(),
        )
        .unwrap_err();
    assert_eq!(e.code, MoveItErrorCode::GoalInCollision, "{e}");
    assert!(e.message.contains("self-collision"), "{e}");
}

#[test]
fn cancelled_and_overdue_requests_stop() {
    let r = robot();
    let cancel = CancellationToken::new();
    cancel.cancel();
    let request = PlanRequest {
        cancel: Some(cancel),
        ..PlanRequest::default()
    };
    let e = MotionPlanner::default()
        .plan(&r, &EmptyWorld, &home(&r), &down(0.30, 0.1, 0.2), &request)
        .unwrap_err();
    assert_eq!(e.code, MoveItErrorCode::Preempted);
    // A planning time far shorter than the IK and collision checks take.
    let world = wall();
    let start = configuration_at(&r, &down(0.30, -0.25, 0.15));
    let planner = MotionPlanner::new(PlannerSettings {
        max_planning_time_s: 1e-7,
        ..PlannerSettings::default()
    });
    let e = planner
        .plan(
            &r,
            &world,
            &start,
            &down(0.30, 0.25, 0.15),
            &PlanRequest::default(),
        )
        .unwrap_err();
    assert_eq!(e.code, MoveItErrorCode::TimedOut, "{e}");
    let outcome = e.to_outcome(0.1);
    assert_eq!(outcome.code, MoveItErrorCode::TimedOut);
}

#[test]
fn the_floor_under_the_base_never_touches_the_robot() {
    let r = robot();
    // The floor's top at z = 0 of the base frame, i.e. 0.55 m below the arm base.
    let floor = ShapeWorld::default().with(WorldObject::cuboid(
        "floor",
        [0.0, 0.0, -0.60],
        [6.0, 6.0, 0.10],
    ));
    for name in r.named_configurations() {
        let shapes = r.collision_shapes(&r.named_configuration(&name).unwrap());
        assert_eq!(floor.first_collision(&shapes, &[]), None, "{name}");
    }
    let t = MotionPlanner::default()
        .plan_to_named(&r, &floor, &home(&r), "stow", &PlanRequest::default())
        .unwrap();
    assert!(collision_free(&r, &floor, &densely(&t, 0.01)));
}
