#![allow(clippy::unwrap_used)]
//! Inverse kinematics of the xArm6: round trips from random in-limit configurations,
//! unreachable targets, validity filters, bad input and determinism.

use asp_core::geometry::Isometry3;
use asp_kinematics::{IkError, IkOptions, RobotModel, Xarm6};
use nalgebra::{Translation3, UnitQuaternion, Vector3};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn random_configuration(robot: &dyn RobotModel, rng: &mut ChaCha8Rng) -> Vec<f64> {
    robot
        .joints()
        .iter()
        .map(|j| rng.random_range(j.lower..=j.upper))
        .collect()
}

#[test]
fn random_reachable_poses_round_trip_within_tolerance_and_limits() {
    let r = Xarm6::on_base().unwrap();
    let opts = IkOptions::default();
    let home = r.named_configuration("home").unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let n = 60;
    let mut solved = 0;
    for _ in 0..n {
        let q = random_configuration(&r, &mut rng);
        let target = r.tool_pose(&q);
        let Ok(s) = r.inverse(&target, &home, &opts) else {
            continue;
        };
        solved += 1;
        assert!(
            r.joints().iter().zip(&s).all(|(j, v)| j.contains(*v, 0.0)),
            "{s:?}"
        );
        let got = r.tool_pose(&s);
        let dp = (got.translation.vector - target.translation.vector).norm();
        let dr = got.rotation.angle_to(&target.rotation);
        // f32 poses: allow their rounding on top of the solver's tolerance.
        assert!(f64::from(dp) <= opts.position_tolerance + 1e-5, "{dp}");
        assert!(f64::from(dr) <= opts.orientation_tolerance + 1e-4, "{dr}");
    }
    // Restarts make the numerical solver as good as complete on reachable poses.
    assert!(solved >= n * 95 / 100, "{solved}/{n}");
}

#[test]
fn a_seed_at_the_answer_returns_that_answer() {
    let r = Xarm6::on_base().unwrap();
    let q = [0.3, -0.4, -1.2, 0.5, 1.1, -0.7];
    let s = r
        .inverse(&r.tool_pose(&q), &q, &IkOptions::default())
        .unwrap();
    for (a, b) in q.iter().zip(&s) {
        assert!((a - b).abs() < 1e-3, "{q:?} vs {s:?}");
    }
}

#[test]
fn targets_out_of_reach_have_no_solution() {
    let r = Xarm6::on_base().unwrap();
    let home = r.named_configuration("home").unwrap();
    let down = UnitQuaternion::from_axis_angle(&Vector3::x_axis(), std::f32::consts::PI);
    let far = Isometry3::from_parts(Translation3::new(1.2, 0.0, 0.3), down);
    match r.inverse(&far, &home, &IkOptions::default()) {
        Err(IkError::NoSolution {
            best_position_error,
            attempts,
            ..
        }) => {
            assert!(best_position_error > 0.3, "{best_position_error}");
            assert_eq!(attempts, IkOptions::default().max_attempts);
        }
        other => panic!("{other:?}"),
    }
    assert!(!r.is_reachable(&far, &IkOptions::default()));
    let near = Isometry3::from_parts(Translation3::new(0.35, 0.1, 0.2), down);
    assert!(r.is_reachable(&near, &IkOptions::default()));
}

#[test]
fn a_filter_that_rejects_every_solution_is_reported() {
    let r = Xarm6::on_base().unwrap();
    let home = r.named_configuration("home").unwrap();
    let target = r.tool_pose(&home);
    let opts = IkOptions {
        max_attempts: 5,
        ..IkOptions::default()
    };
    match r.inverse_filtered(&target, &home, &opts, &|_| Err("in the way".into())) {
        Err(IkError::AllRejected { solutions, reason }) => {
            assert!(solutions >= 1);
            assert_eq!(reason, "in the way");
        }
        other => panic!("{other:?}"),
    }
    // A filter that only accepts elbow configurations with joint 1 turned away makes
    // the solver search other seeds; the answer still reaches the target.
    let only_positive_j4 = |q: &[f64]| {
        if q[3] > 1.0 {
            Ok(())
        } else {
            Err("j4".to_string())
        }
    };
    let opts = IkOptions {
        max_attempts: 64,
        ..IkOptions::default()
    };
    let s = r
        .inverse_filtered(&target, &home, &opts, &only_positive_j4)
        .unwrap();
    assert!(s[3] > 1.0);
    let got = r.tool_pose(&s);
    assert!((got.translation.vector - target.translation.vector).norm() < 2e-4);
}

#[test]
fn invalid_targets_and_seeds_are_rejected() {
    let r = Xarm6::on_base().unwrap();
    let home = r.named_configuration("home").unwrap();
    let nan = Isometry3::translation(f32::NAN, 0.0, 0.3);
    assert!(matches!(
        r.inverse(&nan, &home, &IkOptions::default()),
        Err(IkError::InvalidTarget(_))
    ));
    let target = r.tool_pose(&home);
    assert!(matches!(
        r.inverse(&target, &home[..5], &IkOptions::default()),
        Err(IkError::InvalidSeed(_))
    ));
    let mut bad = home.clone();
    bad[2] = f64::INFINITY;
    assert!(matches!(
        r.inverse(&target, &bad, &IkOptions::default()),
        Err(IkError::InvalidSeed(_))
    ));
}

#[test]
fn the_solver_is_deterministic_for_a_seed() {
    let r = Xarm6::on_base().unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let start = [0.0; 6];
    for _ in 0..10 {
        let q = random_configuration(&r, &mut rng);
        let target = r.tool_pose(&q);
        let opts = IkOptions {
            seed: 3,
            ..IkOptions::default()
        };
        assert_eq!(
            r.inverse(&target, &start, &opts),
            r.inverse(&target, &start, &opts)
        );
    }
}
