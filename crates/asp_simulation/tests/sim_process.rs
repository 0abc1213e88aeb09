//! The sim_node binary in its own process, reached over DDS from this one as a robot's
//! drivers would be: the TF tree is the URDF's under `map → odom → base_link` with the
//! fixed joints latched on `/tf_static`, `/robot_description` carries the URDF and
//! `/clock` the simulated time; a camera frame rendered on request arrives with its
//! ground truth and the camera pose from TF at the frame's stamp; a MoveGroup goal moves
//! the arm and TF follows; SIGINT stops the node cleanly.
#![allow(clippy::unwrap_used)]

#[path = "../../asp_nodes/tests/common/mod.rs"]
mod common;

use std::process::{Command, Stdio};
use std::time::Duration;

use asp_core::FrameId;
use asp_core::robot::{ArmMotion, CancellationToken, FrameSource, MotionKind, PoseGoal};
use asp_nodes::camera::RosCameras;
use asp_ros::msg::rosgraph_msgs::Clock;
use asp_ros::msg::std_msgs::String as StringMsg;
use asp_ros::msg::tf2_msgs::TFMessage;
use asp_ros::robot::tf::{TF_QOS, TF_STATIC_QOS};
use asp_ros::robot::{MoveGroupArm, TfBuffer};
use asp_ros::transport::ServiceMapping;
use asp_ros::{Qos, Transport};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_node_binary_serves_frames_and_motion_across_processes() {
    let domain = common::fresh_domain();
    let data = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_sim_node"))
        .args([
            "--config-dir",
            common::config_dir().to_str().unwrap(),
            "--set",
            &format!("/**.paths.data_dir={}", data.path().display()),
            "--scenario",
            "scenarios/tabletop/apple_in_bowl.yaml",
        ])
        .env("ROS_DOMAIN_ID", domain.to_string())
        .env("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp")
        .stdin(Stdio::null())
        .spawn()
        .unwrap();

    let cfg = common::config(&data, &[]);
    let t = Transport::dds(common::dds_settings(domain, ServiceMapping::FastDds)).unwrap();
    let node = t.node("probe").unwrap();
    let tf = TfBuffer::new(&node).unwrap();
    let mut statics = node
        .subscribe::<TFMessage>("/tf_static", TF_STATIC_QOS)
        .unwrap();
    let mut description = node
        .subscribe::<StringMsg>("/robot_description", Qos::latched())
        .unwrap();
    let mut dynamic = node.subscribe::<TFMessage>("/tf", TF_QOS).unwrap();
    let mut clock = node
        .subscribe::<Clock>("/clock", Qos::default_reliable())
        .unwrap();
    let latched = Duration::from_secs(60);

    // the URDF, as robot_state_publisher would latch it
    let urdf = description.recv_timeout(latched).await.unwrap().data;
    assert!(urdf.contains("<robot") && urdf.contains("wrist_camera_optical_frame"));
    // fixed joints, latched, parented as in the URDF
    let fixed = statics.recv_timeout(latched).await.unwrap();
    let parent_of = |edges: &TFMessage, child: &str| {
        edges
            .transforms
            .iter()
            .find(|t| t.child_frame_id == child)
            .map(|t| t.header.frame_id.clone())
    };
    assert_eq!(
        parent_of(&fixed, "wrist_camera_optical_frame").as_deref(),
        Some("wrist_camera_link")
    );
    assert_eq!(
        parent_of(&fixed, "link_tcp").as_deref(),
        Some("xarm_gripper_base_link")
    );
    assert_eq!(
        parent_of(&fixed, "link1"),
        None,
        "a moving joint on /tf_static"
    );
    // the moving edges: localisation, odometry, joints by their parents
    let moving = dynamic.recv_timeout(latched).await.unwrap();
    assert_eq!(parent_of(&moving, "odom").as_deref(), Some("map"));
    assert_eq!(parent_of(&moving, "base_link").as_deref(), Some("odom"));
    assert_eq!(parent_of(&moving, "link2").as_deref(), Some("link1"));
    assert_eq!(parent_of(&moving, "link_tcp"), None, "a fixed joint on /tf");
    // simulated time moves forward
    let t0 = clock.recv_timeout(latched).await.unwrap().clock;
    let t1 = clock.recv_timeout(latched).await.unwrap().clock;
    assert!((t1.sec, t1.nanosec) > (t0.sec, t0.nanosec));
    let cams = RosCameras::new(
        &node,
        &cfg.config.common.cameras,
        tf.clone(),
        "map",
        &["wrist".to_string()],
    )
    .unwrap();
    let frame = cams.capture("wrist").await.unwrap();
    assert_eq!(
        (frame.rgb.width(), frame.rgb.height()),
        (
            cfg.config.sim_node.camera.width,
            cfg.config.sim_node.camera.height
        )
    );
    let gt = frame
        .ground_truth
        .as_ref()
        .expect("the simulator's ground truth");
    assert!(
        gt.instances.values().any(|i| i.name == "apple"),
        "{:?}",
        gt.instances.values().map(|i| &i.name).collect::<Vec<_>>()
    );
    assert_eq!(frame.camera_pose.parent.as_str(), "map");
    let depth_seen = frame.depth.pixels().iter().filter(|d| **d > 0.0).count();
    assert!(depth_seen > 1000, "{depth_seen} depth readings");

    // a second capture is a new frame with a later stamp
    let again = cams.capture("wrist").await.unwrap();
    assert!(again.stamp > frame.stamp);

    // MoveGroup over DDS moves the simulated arm; TF follows
    let arm = MoveGroupArm::new(
        &node,
        &cfg.config.skill_executor_node.interfaces,
        &cfg.config.common.safety,
        tf.clone(),
    )
    .unwrap();
    let before = arm.tool_pose(&FrameId::map()).await.unwrap();
    let base = FrameId::new("link_base");
    let mut target = arm.tool_pose(&base).await.unwrap();
    target.translation.vector.z += 0.05;
    let goal = PoseGoal {
        frame: base,
        target,
        kind: MotionKind::FreeSpace,
        position_tolerance: 0.005,
        orientation_tolerance: 0.05,
        velocity_scaling: 0.3,
        acceleration_scaling: 0.3,
        allowed_contacts: vec![],
    };
    let out = arm.move_to_pose(&goal, &CancellationToken::new()).await;
    assert!(out.code.is_success(), "{out:?}");
    let mut after = arm.tool_pose(&FrameId::map()).await.unwrap();
    for _ in 0..50 {
        if (after.translation.vector - before.translation.vector).norm() > 0.01 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        after = arm.tool_pose(&FrameId::map()).await.unwrap();
    }
    assert!(
        (after.translation.vector - before.translation.vector).norm() > 0.01,
        "the tool did not move from {before:?}"
    );

    // SIGINT stops it cleanly
    let pid = child.id().to_string();
    Command::new("kill").args(["-INT", &pid]).status().unwrap();
    let status = tokio::task::spawn_blocking(move || child.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(status.code(), Some(0));
}
