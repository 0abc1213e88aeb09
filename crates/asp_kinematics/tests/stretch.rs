//! The Stretch 3 from Hello Robot's own URDF (installed by scripts/setup): the chain the
//! planner uses against the URDF tree, inverse kinematics within the limits, and the
//! goals stretch_core's position mode accepts.
#![allow(clippy::unwrap_used)]

use std::f64::consts::PI;
use std::path::PathBuf;

use asp_kinematics::description::{Geometry, KinematicTree};
use asp_kinematics::stretch::{ARM, LIFT, ROTATE_BASE, STRETCH3_URDF, TRANSLATE_BASE, WRIST};
use asp_kinematics::{IkError, IkOptions, Iso64, Stretch, StretchSettings};
use nalgebra::{Matrix3, Translation3, UnitQuaternion, Vector3};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn urdf() -> PathBuf {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../models")
        .join(STRETCH3_URDF);
    assert!(
        path.exists(),
        "{} is missing: run scripts/setup (it installs hello-robot-stretch-urdf)",
        path.display()
    );
    path
}

fn stretch() -> Stretch {
    Stretch::from_urdf_file(&urdf(), &StretchSettings::default()).unwrap()
}

fn random_configuration(s: &Stretch, rng: &mut ChaCha8Rng) -> Vec<f64> {
    s.joints()
        .iter()
        .map(|j| rng.random_range(j.lower..=j.upper))
        .collect()
}

fn close(a: &Iso64, b: &Iso64) -> (f64, f64) {
    (
        (a.translation.vector - b.translation.vector).norm(),
        a.rotation.angle_to(&b.rotation),
    )
}

#[test]
fn the_chain_has_the_drivers_joints_with_the_urdfs_limits() {
    let s = stretch();
    let names: Vec<&str> = s.joints().iter().map(|j| j.name.as_str()).collect();
    assert_eq!(
        names,
        [
            ROTATE_BASE,
            TRANSLATE_BASE,
            LIFT,
            ARM,
            WRIST[0],
            WRIST[1],
            WRIST[2]
        ]
    );
    let lift = &s.joints()[2];
    assert_eq!((lift.lower, lift.upper), (0.0, 1.1));
    // four segments of 0.13 m each
    let arm = &s.joints()[3];
    assert!((arm.upper - 0.52).abs() < 1e-9, "{arm:?}");
    assert!(!arm.revolute && !lift.revolute);
    let yaw = &s.joints()[4];
    assert_eq!((yaw.lower, yaw.upper), (-1.75, 4.0));
    assert_eq!(s.joints()[1].upper, 0.5);
    // the URDF gives no accelerations: the planner's default applies
    assert!(s.joints().iter().all(|j| j.max_acceleration.is_none()));
}

/// The telescope as one joint, the base's turn and drive in front: the same tool pose as
/// the URDF's tree with each segment out by a quarter.
#[test]
fn the_chain_agrees_with_the_urdf_tree() {
    let s = stretch();
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    for _ in 0..200 {
        let q = random_configuration(&s, &mut rng);
        let (dp, dr) = close(&s.forward(&q), &s.tool_pose_in_tree(&q));
        assert!(dp < 1e-9 && dr < 1e-9, "{q:?}: {dp} m, {dr} rad");
    }
    // lifting raises the tool by as much, extending moves it sideways (the arm points
    // to the base's right, -y)
    let stow = [0.0, 0.0, 0.5, 0.1, 0.0, 0.0, 0.0];
    let mut up = stow;
    up[2] += 0.2;
    let d = s.forward(&up).translation.vector - s.forward(&stow).translation.vector;
    // (the URDF's 1.5708 for a right angle tilts the mast by 7 µrad)
    assert!((d - Vector3::new(0.0, 0.0, 0.2)).norm() < 1e-5, "{d:?}");
    let mut out = stow;
    out[3] += 0.2;
    let d = s.forward(&out).translation.vector - s.forward(&stow).translation.vector;
    assert!(
        (d.y + 0.2).abs() < 1e-3 && d.x.abs() < 1e-3 && d.z.abs() < 1e-3,
        "{d:?}"
    );
    // driving moves it along the heading the turn gave
    let mut drive = stow;
    drive[0] = PI / 2.0;
    drive[1] = 0.3;
    let turned = {
        let mut t = stow;
        t[0] = PI / 2.0;
        t
    };
    let d = s.forward(&drive).translation.vector - s.forward(&turned).translation.vector;
    assert!((d - Vector3::new(0.0, 0.3, 0.0)).norm() < 1e-6, "{d:?}");
}

#[test]
fn inverse_kinematics_reaches_poses_the_robot_can_take() {
    let s = stretch();
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let stow = [0.0, 0.0, 0.6, 0.05, 0.0, 0.0, 0.0];
    let opts = IkOptions::default();
    for _ in 0..40 {
        let q = random_configuration(&s, &mut rng);
        let target = s.forward(&q);
        let solution = s.inverse(&target, &stow, &opts, &|_| Ok(())).unwrap();
        let (dp, dr) = close(&s.forward(&solution), &target);
        assert!(
            dp <= opts.position_tolerance && dr <= opts.orientation_tolerance,
            "{q:?} -> {solution:?}: {dp} m, {dr} rad"
        );
        for (j, v) in s.joints().iter().zip(&solution) {
            assert!(j.contains(*v, 1e-9), "{} = {v} outside its limits", j.name);
        }
    }
}

/// A top-down grasp 0.55 m to the robot's right on a 0.75 m table: the gripper pointing
/// down (`link_grasp_center`'s x axis is the approach, its y axis across the fingers).
#[test]
fn a_top_down_grasp_beside_the_robot() {
    let s = stretch();
    let down = UnitQuaternion::from_matrix(&Matrix3::from_columns(&[
        -Vector3::z(),
        Vector3::x(),
        -Vector3::y(),
    ]));
    let target = Iso64::from_parts(Translation3::new(0.05, -0.55, 0.78), down);
    let stow = [0.0, 0.0, 0.6, 0.05, 0.0, 0.0, 0.0];
    // the wrist's pitch stops at -1.57, 0.8 mrad short of straight down
    let opts = IkOptions {
        orientation_tolerance: 0.005,
        ..IkOptions::default()
    };
    let q = s.inverse(&target, &stow, &opts, &|_| Ok(())).unwrap();
    let (dp, _) = close(&s.forward(&q), &target);
    assert!(dp < 1e-3, "{q:?}");
    // the wrist pitched all the way down, the tool's approach axis pointing at the floor
    assert!(q[5] < -1.5, "{q:?}");
    let approach = s.forward(&q).rotation * Vector3::x();
    assert!(approach.z < -0.999, "{approach:?}");
    // a filter that refuses every solution is reported as such
    let e = s
        .inverse(&target, &stow, &opts, &|_| {
            Err("in collision with the table".into())
        })
        .unwrap_err();
    assert!(
        matches!(&e, IkError::AllRejected { reason, .. } if reason.contains("table")),
        "{e}"
    );
}

#[test]
fn a_target_beyond_the_mast_is_refused() {
    let s = stretch();
    let stow = [0.0, 0.0, 0.6, 0.05, 0.0, 0.0, 0.0];
    let high = Iso64::translation(0.0, -0.4, 2.5);
    let opts = IkOptions {
        max_attempts: 8,
        ..IkOptions::default()
    };
    let e = s.inverse(&high, &stow, &opts, &|_| Ok(())).unwrap_err();
    assert!(matches!(e, IkError::NoSolution { .. }), "{e}");
    let bad = Iso64::translation(f64::NAN, 0.0, 0.5);
    assert!(matches!(
        s.inverse(&bad, &stow, &opts, &|_| Ok(())),
        Err(IkError::InvalidTarget(_))
    ));
}

/// stretch_core (position mode) takes the base's turn and drive as increments, one per
/// goal, never both in one; the arm's joints absolute, the telescope as `joint_arm`.
#[test]
fn a_move_becomes_the_goals_stretch_core_accepts() {
    let s = stretch();
    let stow = [0.0, 0.0, 0.2, 0.0, 3.0, 0.0, 0.0];
    let reach = [0.3, 0.2, 0.8, 0.35, 0.0, -1.0, 0.0];
    let goals = s.driver_goals(&stow, &reach);
    let names: Vec<Vec<&str>> = goals
        .iter()
        .map(|g| g.joint_names.iter().map(String::as_str).collect())
        .collect();
    assert_eq!(
        names,
        vec![
            vec![ROTATE_BASE],
            vec![TRANSLATE_BASE],
            vec![LIFT, ARM, WRIST[0], WRIST[1]],
        ],
        "{goals:?}"
    );
    assert!((goals[0].positions[0] - 0.3).abs() < 1e-9);
    assert!((goals[1].positions[0] - 0.2).abs() < 1e-9);
    assert_eq!(goals[2].positions, vec![0.8, 0.35, 0.0, -1.0]);
    for g in &goals {
        assert_eq!(g.joint_names.len(), g.positions.len());
        let base = g
            .joint_names
            .iter()
            .filter(|n| *n == ROTATE_BASE || *n == TRANSLATE_BASE)
            .count();
        assert!(base == 0 || g.joint_names.len() == 1, "{g:?}");
    }
    // back: the arm retracts before the base moves, and the base returns by driving
    // backwards along its heading, then turning back
    let back = s.driver_goals(&reach, &stow);
    assert_eq!(back[0].joint_names[0], LIFT);
    assert_eq!(back[1].joint_names, vec![TRANSLATE_BASE.to_string()]);
    assert!((back[1].positions[0] + 0.2).abs() < 1e-9, "{back:?}");
    assert_eq!(back[2].joint_names, vec![ROTATE_BASE.to_string()]);
    assert!((back[2].positions[0] + 0.3).abs() < 1e-9, "{back:?}");
    // nothing to do, no goal
    assert!(s.driver_goals(&stow, &stow).is_empty());
}

/// The Stretch's collision geometry is meshes beside the URDF; read as text, with no
/// folder to find them in, the mesh is named in the error.
#[test]
fn collision_meshes_are_read_beside_the_urdf() {
    let path = urdf();
    let tree = KinematicTree::from_urdf_file(&path).unwrap();
    let base = &tree.links[tree.link("base_link").unwrap()];
    let Some(Geometry::Mesh { vertices }) = base.collisions.first().map(|c| &c.geometry) else {
        panic!("base_link's collision is not a mesh: {:?}", base.collisions);
    };
    // the base is about 0.34 m wide
    let width = vertices.iter().map(|v| v[1]).fold(f64::MIN, f64::max)
        - vertices.iter().map(|v| v[1]).fold(f64::MAX, f64::min);
    assert!(width > 0.25 && width < 0.45, "{width}");
    let text = std::fs::read_to_string(&path).unwrap();
    let e = KinematicTree::from_urdf_str(&text, "stretch.urdf")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("base_link") && e.contains("relative to the URDF file"),
        "{e}"
    );
}
