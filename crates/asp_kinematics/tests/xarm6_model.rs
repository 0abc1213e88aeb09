#![allow(clippy::unwrap_used)]
//! The xArm6 description: forward kinematics against values derived by hand from the
//! URDF, frames, gripper, collision geometry and named configurations.

use std::f64::consts::{FRAC_PI_2, PI};

use approx::assert_relative_eq;
use asp_kinematics::{RobotModel, Xarm6};
use nalgebra::{Point3, Vector3};

fn robot() -> Xarm6 {
    Xarm6::on_base().unwrap()
}

fn translation(robot: &dyn RobotModel, q: &[f64], link: &str) -> Vector3<f32> {
    robot.link_pose(q, link).unwrap().translation.vector
}

/// At zero, the URDF's offsets add up as follows (link_base frame): joint2 at
/// z = 0.267; link2 is turned −90° about x so its −y points up: joint3 at
/// (0.0535, 0, 0.267 + 0.2845); link4 flips the forearm down: joint4/5 at
/// (0.0535 + 0.0775, 0, 0.5515 − 0.3425); joint6 0.076 further out and 0.097 lower, its
/// z axis pointing down; the TCP 0.172 below the flange.
#[test]
fn forward_kinematics_at_zero_matches_the_urdf_by_hand() {
    let r = robot();
    let q = [0.0; 6];
    let e = 1e-6;
    assert_relative_eq!(
        translation(&r, &q, "link1"),
        Vector3::new(0.0, 0.0, 0.267),
        epsilon = e
    );
    assert_relative_eq!(
        translation(&r, &q, "link3"),
        Vector3::new(0.0535, 0.0, 0.5515),
        epsilon = e
    );
    assert_relative_eq!(
        translation(&r, &q, "link4"),
        Vector3::new(0.131, 0.0, 0.209),
        epsilon = e
    );
    assert_relative_eq!(
        translation(&r, &q, "link6"),
        Vector3::new(0.207, 0.0, 0.112),
        epsilon = e
    );
    let tool = r.tool_pose(&q);
    assert_relative_eq!(
        tool.translation.vector,
        Vector3::new(0.207, 0.0, -0.060),
        epsilon = e
    );
    // Tool z points down, x forward, y to the right: a half turn about x.
    assert_relative_eq!(tool.rotation * Vector3::z(), -Vector3::z(), epsilon = e);
    assert_relative_eq!(tool.rotation * Vector3::x(), Vector3::x(), epsilon = e);
    // link_poses and link_pose agree, and the tool frame is in the list.
    let all = r.link_poses(&q);
    let tcp = all.iter().find(|(n, _)| n == "link_tcp").unwrap().1;
    assert_relative_eq!(tcp.translation.vector, tool.translation.vector, epsilon = e);
}

#[test]
fn forward_kinematics_of_single_joints_by_hand() {
    let r = robot();
    let e = 1e-6;
    // Joint 1 turns everything about the base z axis.
    let tool = r.tool_pose(&[FRAC_PI_2, 0.0, 0.0, 0.0, 0.0, 0.0]);
    assert_relative_eq!(
        tool.translation.vector,
        Vector3::new(0.0, 0.207, -0.060),
        epsilon = e
    );
    // Joint 2 = −90° turns the folded arm forward about the shoulder (0, 0, 0.267):
    // the TCP offset (0.207, 0, −0.327) becomes (0.327, 0, 0.207); the tool points +x.
    let tool = r.tool_pose(&[0.0, -FRAC_PI_2, 0.0, 0.0, 0.0, 0.0]);
    assert_relative_eq!(
        tool.translation.vector,
        Vector3::new(0.327, 0.0, 0.474),
        epsilon = e
    );
    assert_relative_eq!(tool.rotation * Vector3::z(), Vector3::x(), epsilon = e);
    // Joint 6 spins the tool about its own axis: position unchanged, x turned.
    let tool = r.tool_pose(&[0.0, 0.0, 0.0, 0.0, 0.0, FRAC_PI_2]);
    assert_relative_eq!(
        tool.translation.vector,
        Vector3::new(0.207, 0.0, -0.060),
        epsilon = e
    );
    assert_relative_eq!(tool.rotation * Vector3::z(), -Vector3::z(), epsilon = e);
    assert_relative_eq!((tool.rotation * Vector3::x()).x, 0.0, epsilon = e);
    // Joint 4 at 180° turns the wrist about the forearm (vertical at zero): the flange
    // offset of 0.076 now points backwards from the wrist at x = 0.131.
    let tool = r.tool_pose(&[0.0, 0.0, 0.0, PI, 0.0, 0.0]);
    assert_relative_eq!(
        tool.translation.vector,
        Vector3::new(0.131 - 0.076, 0.0, -0.060),
        epsilon = e
    );
}

#[test]
fn joints_limits_and_names_come_from_the_urdf() {
    let r = robot();
    assert_eq!(r.dof(), 6);
    let names: Vec<&str> = r.joints().iter().map(|j| j.name.as_str()).collect();
    assert_eq!(
        names,
        ["joint1", "joint2", "joint3", "joint4", "joint5", "joint6"]
    );
    let j2 = &r.joints()[1];
    assert_relative_eq!(j2.lower, -2.059);
    assert_relative_eq!(j2.upper, 2.0944);
    assert_relative_eq!(r.joints()[2].upper, 0.19198);
    assert_relative_eq!(r.joints()[4].lower, -1.69297);
    assert!(
        r.joints()
            .iter()
            .all(|j| (j.max_velocity - 2.14).abs() < 1e-12 && j.revolute)
    );
    assert_eq!(r.arm_base_frame(), "link_base");
    assert_eq!(r.base_frame(), "base_link");
    assert_eq!(r.tool_frame(), "link_tcp");
}

#[test]
fn the_arm_alone_and_the_arm_on_the_base_have_the_same_kinematics() {
    let on_base = robot();
    let alone = Xarm6::arm_only().unwrap();
    assert_eq!(alone.base_frame(), "link_base");
    assert!(alone.footprint().is_empty());
    assert_eq!(on_base.joints(), alone.joints());
    for q in [
        [0.3, -0.4, -1.2, 0.5, 1.1, -0.7],
        [0.0; 6],
        [-2.0, 0.5, -0.2, 2.5, -1.0, 3.0],
    ] {
        let a = on_base.tool_pose(&q);
        let b = alone.tool_pose(&q);
        assert_relative_eq!(a.translation.vector, b.translation.vector, epsilon = 1e-6);
        assert!(a.rotation.angle_to(&b.rotation) < 1e-6);
    }
    for name in ["home", "stow", "look", "look_left", "look_right"] {
        assert_eq!(
            on_base.named_configuration(name),
            alone.named_configuration(name)
        );
    }
    // The arm stands on its pedestal 0.55 m above the floor, 0.17 m ahead of the base
    // centre; the base link lies there, seen from the arm base.
    let mount = on_base.mount();
    assert_relative_eq!(
        mount.translation.vector,
        Vector3::new(0.17, 0.0, 0.55),
        epsilon = 1e-6
    );
    assert_relative_eq!(
        translation(&on_base, &[0.0; 6], "base_link"),
        Vector3::new(-0.17, 0.0, -0.55),
        epsilon = 1e-6
    );
}

#[test]
fn camera_optical_frames_follow_the_ros_convention() {
    let r = robot();
    let q = r.named_configuration("home").unwrap();
    for camera in ["head_camera", "wrist_camera"] {
        let link = r.link_pose(&q, &format!("{camera}_link")).unwrap();
        let optical = r.link_pose(&q, &format!("{camera}_optical_frame")).unwrap();
        // Optical +z forward (= link +x), +x right (= link −y), +y down (= link −z).
        assert_relative_eq!(
            optical.rotation * Vector3::z(),
            link.rotation * Vector3::x(),
            epsilon = 1e-6
        );
        assert_relative_eq!(
            optical.rotation * Vector3::x(),
            -(link.rotation * Vector3::y()),
            epsilon = 1e-6
        );
        assert_relative_eq!(
            optical.rotation * Vector3::y(),
            -(link.rotation * Vector3::z()),
            epsilon = 1e-6
        );
    }
    // The head camera looks ahead and down, from 1.37 m above the floor.
    let mount = r.mount();
    let head = mount * r.link_pose(&q, "head_camera_optical_frame").unwrap();
    assert_relative_eq!(head.translation.vector.z, 1.37, epsilon = 1e-5);
    let forward = head.rotation * Vector3::z();
    assert!(forward.x > 0.7 && forward.z < -0.5, "{forward:?}");
    // At home (tool pointing down) the wrist camera looks down too, next to the tool.
    let wrist = r.link_pose(&q, "wrist_camera_optical_frame").unwrap();
    assert!((wrist.rotation * Vector3::z()).z < -0.9);
    let tool = r.tool_pose(&q);
    assert!((wrist.translation.vector - tool.translation.vector).norm() < 0.25);
}

#[test]
fn the_gripper_is_a_parallel_gripper_with_its_tcp_between_the_pads() {
    let r = robot();
    let g = r.gripper();
    assert_eq!(g.name, "xarm_gripper");
    assert_eq!(g.tool_frame, "link_tcp");
    assert_eq!(g.finger_joints, ["left_finger_joint", "right_finger_joint"]);
    assert_relative_eq!(g.max_gap, 0.086);
    assert_relative_eq!(g.min_gap, 0.0);
    assert_relative_eq!(g.max_effort, 30.0);
    assert!(g.touch_links.iter().any(|l| l == "left_finger"));
    assert!(g.touch_links.iter().any(|l| l == "link6"));
    assert!(!g.touch_links.iter().any(|l| l == "link5"));
    // The TCP lies between the pads, just inside the fingertips.
    assert!(g.finger.center_z < 0.0 && g.finger.tip_z > 0.0 && g.finger.tip_z < 0.03);
    assert_relative_eq!(g.finger.thickness, 0.012, epsilon = 1e-9);
    assert_relative_eq!(g.joint_for_gap(0.05), 0.025);
    assert_relative_eq!(g.gap_for_joint(0.025), 0.05);
    assert_relative_eq!(g.joint_for_gap(1.0), 0.043);

    // The pads close along the tool's y axis: with a 40 mm gap, the inner faces lie
    // 20 mm either side of the TCP.
    let q = r.named_configuration("home").unwrap();
    let tool = r.tool_pose(&q);
    let poses = r.link_poses_with_gap(&q, 0.04);
    let left = poses.iter().find(|(n, _)| n == "left_finger").unwrap().1;
    assert_relative_eq!(
        (tool.inverse() * left).translation.vector,
        Vector3::new(0.0, 0.02, -0.172),
        epsilon = 1e-5
    );
    let shapes = r.collision_shapes_with_gap(&q, 0.04);
    for (finger, side) in [("left_finger", 1.0f32), ("right_finger", -1.0)] {
        let s = shapes.iter().find(|s| s.link == finger).unwrap();
        let aabb = s.shape.compute_aabb(&(tool.inverse() * s.pose));
        let inner = if side > 0.0 {
            aabb.mins.y
        } else {
            -aabb.maxs.y
        };
        assert_relative_eq!(inner, 0.02, epsilon = 1e-5);
        assert!(aabb.mins.z < 0.0 && aabb.maxs.z > 0.0);
    }
}

#[test]
fn named_configurations_are_within_limits_and_free_of_self_collision() {
    let r = robot();
    let mut names = r.named_configurations();
    names.sort();
    assert_eq!(names, ["home", "look", "look_left", "look_right", "stow"]);
    for name in &names {
        let q = r.named_configuration(name).unwrap();
        assert!(
            r.joints().iter().zip(&q).all(|(j, v)| j.contains(*v, 0.0)),
            "{name}"
        );
        assert_eq!(r.self_collision(&r.collision_shapes(&q)), None, "{name}");
    }
    assert!(r.named_configuration("dance").is_none());
    // home: tool pointing down, 0.30 m ahead of and above the arm base.
    let home = r.tool_pose(&r.named_configuration("home").unwrap());
    assert_relative_eq!(
        home.translation.vector,
        Vector3::new(0.30, 0.0, 0.30),
        epsilon = 2e-4
    );
    assert!((home.rotation * Vector3::z()).z < -0.999);
}

#[test]
fn stow_keeps_the_arm_over_the_base() {
    let r = robot();
    let q = r.named_configuration("stow").unwrap();
    let footprint = r.footprint();
    assert_eq!(footprint.len(), 4);
    let (min_x, max_x) = (footprint[0][0], footprint[2][0]);
    let (min_y, max_y) = (footprint[0][1], footprint[2][1]);
    assert_relative_eq!(max_x - min_x, 0.60, epsilon = 1e-6);
    assert_relative_eq!(max_y - min_y, 0.50, epsilon = 1e-6);
    let mount = r.mount();
    for s in r.collision_shapes(&q) {
        let aabb = s.shape.compute_aabb(&(mount * s.pose));
        let inside = f64::from(aabb.mins.x) >= min_x - 1e-6
            && f64::from(aabb.maxs.x) <= max_x + 1e-6
            && f64::from(aabb.mins.y) >= min_y - 1e-6
            && f64::from(aabb.maxs.y) <= max_y + 1e-6;
        assert!(inside, "{} sticks out of the footprint: {aabb:?}", s.link);
    }
}

#[test]
fn self_collision_is_found_and_adjacent_links_are_skipped() {
    let r = robot();
    // Joint 5 folded all the way back drives the wrist into the shoulder.
    let folded = [0.0, 0.0, 0.0, 0.0, 3.1, 0.0];
    let hit = r.self_collision(&r.collision_shapes(&folded)).unwrap();
    assert!(hit.0 == "link1" || hit.1 == "link1", "{hit:?}");
    // Leaning far back puts the elbow into the pedestal.
    let hit = r
        .self_collision(&r.collision_shapes(&[0.0, 2.0, -0.5, 0.0, 0.0, 0.0]))
        .unwrap();
    assert!(
        hit.0 == "arm_mount_link" || hit.1 == "arm_mount_link",
        "{hit:?}"
    );
    // Links next to each other overlap at their joints by design and are skipped.
    let m = r.model();
    assert_eq!(m.is_collision_ignored("link2", "link3"), Some(true));
    assert_eq!(
        m.is_collision_ignored("link6", "xarm_gripper_base_link"),
        Some(true)
    );
    assert_eq!(m.is_collision_ignored("base_link", "mast_link"), Some(true));
    assert_eq!(
        m.is_collision_ignored("left_finger", "right_finger"),
        Some(true)
    );
    assert_eq!(m.is_collision_ignored("link2", "link4"), Some(false));
    assert_eq!(m.is_collision_ignored("link3", "base_link"), Some(false));
    assert_eq!(m.is_collision_ignored("nope", "link1"), None);
    // The list agrees with the checks: adjacent pairs in, distant pairs out.
    let pairs = r.ignored_collision_pairs();
    let listed = |a: &str, b: &str| {
        pairs
            .iter()
            .any(|(x, y)| (x == a && y == b) || (x == b && y == a))
    };
    assert!(listed("link2", "link3") && listed("left_finger", "right_finger"));
    assert!(!listed("link2", "link4") && !listed("link1", "link5"));
    for (a, b) in &pairs {
        assert_eq!(m.is_collision_ignored(a, b), Some(true));
    }
}

#[test]
fn collision_shapes_follow_their_links() {
    let r = robot();
    let q = [0.4, -0.3, -0.9, 0.2, 1.2, 0.5];
    let shapes = r.collision_shapes(&q);
    let poses = r.link_poses(&q);
    // Every link with geometry contributes; each shape lies near its link's origin.
    for link in [
        "base_link",
        "mast_link",
        "link1",
        "link2",
        "link3",
        "link4",
        "link5",
        "link6",
        "left_finger",
    ] {
        let s = shapes
            .iter()
            .find(|s| s.link == link)
            .unwrap_or_else(|| panic!("{link}"));
        let origin = poses.iter().find(|(n, _)| n == link).unwrap().1;
        let d = (s.pose.translation.vector - origin.translation.vector).norm();
        assert!(d < 0.6, "{link}: {d}");
    }
    // The upper arm's cylinder spans joint 2 to joint 3: both ends inside it.
    let upper = shapes.iter().find(|s| s.link == "link2").unwrap();
    let j2 = translation(&r, &q, "link2");
    let j3 = translation(&r, &q, "link3");
    for p in [j2 * 0.95 + j3 * 0.05, j2 * 0.05 + j3 * 0.95] {
        assert!(upper.shape.contains_point(&upper.pose, &Point3::from(p)));
    }
}

#[test]
fn loading_a_description_from_files_reports_the_file() {
    let dir = std::env::temp_dir().join(format!("asp_kinematics_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let urdf = dir.join("arm.urdf");
    let srdf = dir.join("arm.srdf");
    std::fs::write(&urdf, asp_kinematics::urdf_arm::XARM6_URDF).unwrap();
    std::fs::write(&srdf, asp_kinematics::urdf_arm::XARM6_SRDF).unwrap();
    let r = Xarm6::from_files(&urdf, &srdf).unwrap();
    assert_eq!(r.name(), "xarm6");
    // An SRDF state outside the joint limits names the file, the state and the joint.
    let bad = asp_kinematics::urdf_arm::XARM6_SRDF.replace(
        r#"<joint name="joint2" value="-0.6315"/>"#,
        r#"<joint name="joint2" value="-2.5"/>"#,
    );
    std::fs::write(&srdf, bad).unwrap();
    let msg = Xarm6::from_files(&urdf, &srdf).unwrap_err().to_string();
    assert!(
        msg.contains("arm.srdf") && msg.contains("home") && msg.contains("joint2"),
        "{msg}"
    );
    let missing = dir.join("missing.urdf");
    let msg = Xarm6::from_files(&missing, &srdf).unwrap_err().to_string();
    assert!(msg.contains("missing.urdf"), "{msg}");
    std::fs::remove_dir_all(&dir).unwrap();
}
