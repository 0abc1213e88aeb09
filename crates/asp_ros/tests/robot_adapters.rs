//! The robot-trait adapters end to end over DDS: the action clients (`MoveGroupArm`,
//! `GripperCommandClient`, `Nav2Base`) in one participant against the action servers
//! built from small in-test implementations of the traits in another. Checks that goals
//! arrive as sent (constraints, planners, collision matrix), that codes and results come
//! back, that limits stop goals before they are sent, and that cancelling the token
//! stops the motion on the other side.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use approx::assert_relative_eq;
use asp_config::sections::common::SafetyConfig;
use asp_config::sections::skills::MotionInterfaces;
use asp_core::robot::{
    ArmMotion, BaseNavigation, CancellationToken, Gripper, GripperGoal, GripperOutcome, MotionKind,
    MotionOutcome, MoveItErrorCode, NavErrorCode, NavOutcome, PoseGoal, RobotError, TerminalStatus,
};
use asp_core::{FrameId, Isometry3, Pose2D, Transform, Vector3};
use asp_ros::action::{ActionServerOptions, GoalContext, GoalHandler, GoalOutcome};
use asp_ros::convert;
use asp_ros::msg::builtin_interfaces::Time;
use asp_ros::msg::control_msgs::GripperCommandAction;
use asp_ros::msg::moveit_msgs::{
    AllowedCollisionEntry, AllowedCollisionMatrix, GetPlanningScene, GetPlanningSceneRequest,
    GetPlanningSceneResponse, MoveGroup, MoveGroupGoal, MoveGroupResult, PlanningScene,
    PlanningSceneComponents,
};
use asp_ros::msg::nav2_msgs::NavigateToPose;
use asp_ros::msg::tf2_msgs::TFMessage;
use asp_ros::robot::tf::TF_STATIC_QOS;
use asp_ros::robot::{
    ArmMotionHandler, GripperCommandClient, GripperHandler, MoveGroupArm, Nav2Base,
    NavigationHandler, TfBuffer,
};
use asp_ros::transport::ServiceMapping;
use asp_ros::{Node, Transport};
use async_trait::async_trait;

const TICK: Duration = Duration::from_millis(30);

/// Two DDS participants: the robot side (servers) and the product side (clients).
fn nodes() -> (Node, Node, (Transport, Transport)) {
    let (a, b) = common::dds_pair(ServiceMapping::FastDds);
    (a.node("robot").unwrap(), b.node("skills").unwrap(), (a, b))
}

#[derive(Debug, Clone, PartialEq)]
enum ArmCall {
    Pose(PoseGoal),
    Named(String),
}

/// An arm that takes `ticks` ticks per motion, refuses targets below z = 0 (no IK),
/// and stops when cancelled.
#[derive(Default)]
struct FakeArm {
    calls: Mutex<Vec<ArmCall>>,
    ticks: AtomicUsize,
    stopped_early: AtomicBool,
}

impl FakeArm {
    fn with_ticks(ticks: usize) -> Arc<Self> {
        let arm = Arc::new(Self::default());
        arm.ticks.store(ticks, Ordering::SeqCst);
        arm
    }

    async fn drive(&self, cancel: &CancellationToken) -> Option<MotionOutcome> {
        for _ in 0..self.ticks.load(Ordering::SeqCst) {
            tokio::select! {
                _ = cancel.cancelled() => {
                    self.stopped_early.store(true, Ordering::SeqCst);
                    return Some(MotionOutcome::failure(MoveItErrorCode::Preempted, "stopped"));
                }
                _ = tokio::time::sleep(TICK) => {}
            }
        }
        None
    }
}

#[async_trait]
impl ArmMotion for FakeArm {
    async fn move_to_pose(&self, goal: &PoseGoal, cancel: &CancellationToken) -> MotionOutcome {
        self.calls.lock().unwrap().push(ArmCall::Pose(goal.clone()));
        if goal.target.translation.z < 0.0 {
            return MotionOutcome::failure(MoveItErrorCode::NoIkSolution, "below the table");
        }
        self.drive(cancel)
            .await
            .unwrap_or_else(|| MotionOutcome::success(0.25))
    }

    async fn move_to_named(&self, name: &str, cancel: &CancellationToken) -> MotionOutcome {
        self.calls.lock().unwrap().push(ArmCall::Named(name.into()));
        self.drive(cancel)
            .await
            .unwrap_or_else(|| MotionOutcome::success(0.1))
    }

    async fn tool_pose(&self, _frame: &FrameId) -> Result<Isometry3, RobotError> {
        Err(RobotError::Other("the fake arm has no tool pose".into()))
    }
}

/// Records every raw MoveGroup goal, then lets the adapter handle it.
struct Recording {
    inner: ArmMotionHandler,
    goals: Arc<Mutex<Vec<MoveGroupGoal>>>,
}

#[async_trait]
impl GoalHandler<MoveGroup> for Recording {
    async fn execute(
        &self,
        goal: MoveGroupGoal,
        ctx: GoalContext<MoveGroup>,
    ) -> GoalOutcome<MoveGroupResult> {
        self.goals.lock().unwrap().push(goal.clone());
        self.inner.execute(goal, ctx).await
    }
}

/// The robot's own allowed collision matrix (adjacent links may touch).
fn robot_acm() -> AllowedCollisionMatrix {
    AllowedCollisionMatrix {
        entry_names: vec!["link1".into(), "link2".into()],
        entry_values: vec![
            AllowedCollisionEntry {
                enabled: vec![false, true],
            },
            AllowedCollisionEntry {
                enabled: vec![true, false],
            },
        ],
        ..AllowedCollisionMatrix::default()
    }
}

struct ArmRig {
    arm: Arc<FakeArm>,
    goals: Arc<Mutex<Vec<MoveGroupGoal>>>,
    client: MoveGroupArm,
    interfaces: MotionInterfaces,
    robot: Node,
    _keep: (
        asp_ros::action::ActionServer<MoveGroup>,
        asp_ros::transport::ServiceServer,
        (Transport, Transport),
    ),
}

fn arm_rig(ticks: usize) -> ArmRig {
    let (robot, skills, transports) = nodes();
    let interfaces = MotionInterfaces::default();
    let arm = FakeArm::with_ticks(ticks);
    let goals = Arc::new(Mutex::new(Vec::new()));
    let server = robot
        .action_server::<MoveGroup, _>(
            &interfaces.move_group_action,
            ActionServerOptions::default(),
            Recording {
                inner: ArmMotionHandler::new(arm.clone(), &interfaces, robot_acm()),
                goals: goals.clone(),
            },
        )
        .unwrap();
    let scene = robot
        .serve::<GetPlanningScene, _, _>(
            &interfaces.planning_scene_service,
            |req: GetPlanningSceneRequest| async move {
                assert_eq!(
                    req.components.components,
                    PlanningSceneComponents::ALLOWED_COLLISION_MATRIX
                );
                GetPlanningSceneResponse {
                    scene: PlanningScene {
                        allowed_collision_matrix: robot_acm(),
                        ..PlanningScene::default()
                    },
                }
            },
        )
        .unwrap();
    let tf = TfBuffer::new(&skills).unwrap();
    let client = MoveGroupArm::new(&skills, &interfaces, &SafetyConfig::default(), tf).unwrap();
    ArmRig {
        arm,
        goals,
        client,
        interfaces,
        robot,
        _keep: (server, scene, transports),
    }
}

fn grasp_goal() -> PoseGoal {
    PoseGoal {
        frame: FrameId::new("link_base"),
        target: Isometry3::new(Vector3::new(0.4, -0.1, 0.25), Vector3::new(3.1, 0.0, 0.5)),
        kind: MotionKind::Linear,
        position_tolerance: 0.004,
        orientation_tolerance: 0.03,
        velocity_scaling: 0.2,
        acceleration_scaling: 0.1,
        allowed_contacts: vec!["red_mug_0".into()],
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pose_goals_arrive_as_sent_and_keep_the_collision_matrix() {
    let rig = arm_rig(2);
    let goal = grasp_goal();
    let outcome = rig
        .client
        .move_to_pose(&goal, &CancellationToken::new())
        .await;
    assert_eq!(outcome.code, MoveItErrorCode::Success, "{outcome:?}");
    assert_relative_eq!(outcome.planning_time_s, 0.25);
    // the trait implementation behind the server got the same goal
    let calls = rig.arm.calls.lock().unwrap().clone();
    let [ArmCall::Pose(got)] = calls.as_slice() else {
        panic!("{calls:?}")
    };
    assert_eq!(got.frame, goal.frame);
    assert_eq!(got.kind, MotionKind::Linear);
    assert_relative_eq!(
        got.target.translation.vector,
        goal.target.translation.vector,
        epsilon = 1e-6
    );
    assert!(got.target.rotation.angle_to(&goal.target.rotation) < 1e-5);
    assert_relative_eq!(got.position_tolerance, goal.position_tolerance);
    assert_relative_eq!(got.orientation_tolerance, goal.orientation_tolerance);
    assert_relative_eq!(got.velocity_scaling, goal.velocity_scaling);
    assert_relative_eq!(got.acceleration_scaling, goal.acceleration_scaling);
    assert_eq!(got.allowed_contacts, goal.allowed_contacts);
    // and the MoveGroup goal is what MoveIt expects
    let raw = rig.goals.lock().unwrap()[0].clone();
    let req = &raw.request;
    assert_eq!(req.group_name, "xarm6");
    assert_eq!(req.pipeline_id, rig.interfaces.linear_pipeline);
    assert_eq!(req.planner_id, "LIN");
    let c = &req.goal_constraints[0];
    assert_eq!(c.position_constraints[0].link_name, "link_tcp");
    assert_eq!(c.position_constraints[0].header.frame_id, "link_base");
    let sphere = &c.position_constraints[0].constraint_region.primitives[0];
    assert_eq!(
        sphere.r#type,
        asp_ros::msg::shape_msgs::SolidPrimitive::SPHERE
    );
    assert_relative_eq!(sphere.dimensions.as_slice()[0], 0.004, epsilon = 1e-9);
    assert!(raw.planning_options.planning_scene_diff.is_diff);
    assert!(!raw.planning_options.plan_only);
    // the robot's own matrix is kept, the touch links may touch the mug
    let acm = &raw
        .planning_options
        .planning_scene_diff
        .allowed_collision_matrix;
    let at = |a: &str, b: &str| {
        let i = acm.entry_names.iter().position(|n| n == a).unwrap();
        let j = acm.entry_names.iter().position(|n| n == b).unwrap();
        acm.entry_values[i].enabled[j]
    };
    assert!(at("link1", "link2") && at("link2", "link1"));
    assert!(at("left_finger", "red_mug_0") && at("red_mug_0", "right_finger"));
    assert!(!at("link1", "red_mug_0"));
    assert_eq!(
        acm.entry_names.len(),
        2 + rig.interfaces.touch_links.len() + 1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn planner_codes_come_back_and_limits_stop_goals_before_sending() {
    let rig = arm_rig(1);
    let mut below = grasp_goal();
    below.target.translation.z = -0.2;
    below.allowed_contacts.clear();
    let o = rig
        .client
        .move_to_pose(&below, &CancellationToken::new())
        .await;
    assert_eq!(o.code, MoveItErrorCode::NoIkSolution);
    #[cfg(feature = "jazzy")]
    assert_eq!(o.message, "below the table");
    // free-space goals use the OMPL pipeline and RRTConnect
    let mut free = grasp_goal();
    free.kind = MotionKind::FreeSpace;
    free.allowed_contacts.clear();
    let o = rig
        .client
        .move_to_pose(&free, &CancellationToken::new())
        .await;
    assert_eq!(o.code, MoveItErrorCode::Success);
    let raw = rig.goals.lock().unwrap().last().unwrap().clone();
    assert_eq!(raw.request.pipeline_id, "ompl");
    assert_eq!(raw.request.planner_id, "RRTConnectkConfigDefault");
    assert!(
        raw.planning_options
            .planning_scene_diff
            .allowed_collision_matrix
            .entry_names
            .is_empty()
    );
    let sent = rig.arm.calls.lock().unwrap().len();
    // over the safety limit of 0.5: refused here, never sent
    let mut fast = grasp_goal();
    fast.velocity_scaling = 0.9;
    let o = rig
        .client
        .move_to_pose(&fast, &CancellationToken::new())
        .await;
    assert_eq!(o.code, MoveItErrorCode::InvalidGoalConstraints);
    assert!(
        o.message.contains("0.9") && o.message.contains("0.5"),
        "{}",
        o.message
    );
    let mut nan = grasp_goal();
    nan.target.translation.x = f32::NAN;
    let o = rig
        .client
        .move_to_pose(&nan, &CancellationToken::new())
        .await;
    assert_eq!(o.code, MoveItErrorCode::InvalidGoalConstraints);
    let o = rig
        .client
        .move_to_named("dance", &CancellationToken::new())
        .await;
    assert_eq!(o.code, MoveItErrorCode::InvalidGoalConstraints);
    assert!(
        o.message.contains("dance") && o.message.contains("home"),
        "{}",
        o.message
    );
    assert_eq!(
        rig.arm.calls.lock().unwrap().len(),
        sent,
        "a refused goal was sent"
    );
    // named targets travel as joint constraints with the name
    let o = rig
        .client
        .move_to_named("home", &CancellationToken::new())
        .await;
    assert_eq!(o.code, MoveItErrorCode::Success);
    assert_eq!(
        rig.arm.calls.lock().unwrap().last().unwrap(),
        &ArmCall::Named("home".into())
    );
    let raw = rig.goals.lock().unwrap().last().unwrap().clone();
    assert_eq!(raw.request.goal_constraints[0].joint_constraints.len(), 6);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_the_token_stops_the_arm() {
    let rig = arm_rig(200);
    let token = CancellationToken::new();
    let t2 = token.clone();
    let arm = rig.arm.clone();
    tokio::spawn(async move {
        // cancel once the motion is under way on the robot side
        while arm.calls.lock().unwrap().is_empty() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        tokio::time::sleep(TICK * 2).await;
        t2.cancel();
    });
    let mut goal = grasp_goal();
    goal.allowed_contacts.clear();
    let o = rig.client.move_to_pose(&goal, &token).await;
    assert_eq!(o.code, MoveItErrorCode::Preempted, "{o:?}");
    assert!(
        rig.arm.stopped_early.load(Ordering::SeqCst),
        "the arm kept moving"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_pose_comes_from_tf() {
    let rig = arm_rig(1);
    let statics = rig
        .robot
        .publisher::<TFMessage>("/tf_static", TF_STATIC_QOS)
        .unwrap();
    let base_tcp = Transform::new(
        "link_base",
        "link_tcp",
        Isometry3::translation(0.3, 0.0, 0.4),
    );
    statics
        .publish(convert::tf_message(&[base_tcp], Time::now()))
        .unwrap();
    let pose = rig
        .client
        .tool_pose(&FrameId::new("link_base"))
        .await
        .unwrap();
    assert_relative_eq!(
        pose.translation.vector,
        Vector3::new(0.3, 0.0, 0.4),
        epsilon = 1e-6
    );

    // a motion's result that arrives before the TF of its end state: the next tool pose
    // is the end state, not the stale start
    let goal = PoseGoal {
        frame: FrameId::new("link_base"),
        target: Isometry3::translation(0.45, 0.1, 0.3),
        ..grasp_goal()
    };
    let out = rig
        .client
        .move_to_pose(&goal, &CancellationToken::new())
        .await;
    assert!(out.code.is_success(), "{out:?}");
    let late = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(400)).await;
        let end = Transform::new("link_base", "link_tcp", goal.target);
        statics
            .publish(convert::tf_message(&[end], Time::now()))
            .unwrap();
        statics
    });
    let pose = rig
        .client
        .tool_pose(&FrameId::new("link_base"))
        .await
        .unwrap();
    assert_relative_eq!(
        pose.translation.vector,
        Vector3::new(0.45, 0.1, 0.3),
        epsilon = 1e-6
    );
    drop(late.await.unwrap());
}

/// Closes on an object after `ticks` ticks (stalls when the goal is below 0.02 m).
#[derive(Default)]
struct FakeGripper {
    goals: Mutex<Vec<GripperGoal>>,
    stopped_early: AtomicBool,
}

#[async_trait]
impl Gripper for FakeGripper {
    async fn command(
        &self,
        goal: GripperGoal,
        cancel: &CancellationToken,
    ) -> Result<GripperOutcome, RobotError> {
        self.goals.lock().unwrap().push(goal);
        let ticks = if goal.position > 0.08 { 2 } else { 100 };
        for _ in 0..ticks {
            tokio::select! {
                _ = cancel.cancelled() => {
                    self.stopped_early.store(true, Ordering::SeqCst);
                    return Err(RobotError::Cancelled);
                }
                _ = tokio::time::sleep(TICK) => {}
            }
        }
        let stalled = goal.position < 0.02;
        Ok(GripperOutcome {
            position: if stalled { 0.031 } else { goal.position },
            effort: if stalled { goal.max_effort } else { 0.0 },
            stalled,
            reached_goal: !stalled,
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gripper_commands_results_limits_and_cancel() {
    let (robot, skills, _t) = nodes();
    let gripper = Arc::new(FakeGripper::default());
    let action = MotionInterfaces::default().gripper_action;
    let _server = robot
        .action_server::<GripperCommandAction, _>(
            &action,
            ActionServerOptions::default(),
            GripperHandler::new(gripper.clone()),
        )
        .unwrap();
    let client = GripperCommandClient::new(&skills, &action, &SafetyConfig::default()).unwrap();
    let open = client
        .command(
            GripperGoal {
                position: 0.085,
                max_effort: 10.0,
            },
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert!(open.reached_goal && !open.stalled);
    assert_relative_eq!(open.position, 0.085);
    // over safety.max_gripper_effort (40 N): refused before sending
    let e = client
        .command(
            GripperGoal {
                position: 0.0,
                max_effort: 80.0,
            },
            &CancellationToken::new(),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(e, RobotError::Rejected(ref m) if m.contains("80") && m.contains("40")),
        "{e}"
    );
    assert_eq!(gripper.goals.lock().unwrap().len(), 1);
    // closing on an object: cancelled half way, the fingers stop
    let token = CancellationToken::new();
    let t2 = token.clone();
    let g2 = gripper.clone();
    tokio::spawn(async move {
        while g2.goals.lock().unwrap().len() < 2 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        tokio::time::sleep(TICK * 2).await;
        t2.cancel();
    });
    let e = client
        .command(
            GripperGoal {
                position: 0.0,
                max_effort: 30.0,
            },
            &token,
        )
        .await
        .unwrap_err();
    assert_eq!(e, RobotError::Cancelled);
    assert!(gripper.stopped_early.load(Ordering::SeqCst));
}

/// Drives in a straight line at 1 m per 10 ticks; goals with x > 50 have no path.
struct FakeBase {
    pose: Mutex<Pose2D>,
    stopped_early: AtomicBool,
}

impl Default for FakeBase {
    fn default() -> Self {
        Self {
            pose: Mutex::new(Pose2D::new(0.0, 0.0, 0.0)),
            stopped_early: AtomicBool::new(false),
        }
    }
}

#[async_trait]
impl BaseNavigation for FakeBase {
    async fn navigate_to(&self, goal: Pose2D, cancel: &CancellationToken) -> NavOutcome {
        if goal.x > 50.0 {
            return NavOutcome {
                status: TerminalStatus::Aborted,
                error_code: NavErrorCode::NoValidPath,
                error_msg: "no path to the goal".into(),
                final_pose: *self.pose.lock().unwrap(),
            };
        }
        let start = *self.pose.lock().unwrap();
        let steps = ((start.distance_to(&goal) * 10.0).ceil() as usize).max(1);
        for i in 1..=steps {
            tokio::select! {
                _ = cancel.cancelled() => {
                    self.stopped_early.store(true, Ordering::SeqCst);
                    return NavOutcome {
                        status: TerminalStatus::Canceled,
                        error_code: NavErrorCode::None,
                        error_msg: String::new(),
                        final_pose: *self.pose.lock().unwrap(),
                    };
                }
                _ = tokio::time::sleep(TICK) => {}
            }
            let f = i as f32 / steps as f32;
            *self.pose.lock().unwrap() = Pose2D::new(
                start.x + (goal.x - start.x) * f,
                start.y + (goal.y - start.y) * f,
                goal.theta,
            );
        }
        NavOutcome {
            status: TerminalStatus::Succeeded,
            error_code: NavErrorCode::None,
            error_msg: String::new(),
            final_pose: goal,
        }
    }

    async fn base_pose(&self) -> Result<Pose2D, RobotError> {
        Ok(*self.pose.lock().unwrap())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn navigation_results_errors_and_cancel() {
    let (robot, skills, _t) = nodes();
    let base = Arc::new(FakeBase::default());
    let _server = robot
        .action_server::<NavigateToPose, _>(
            "/navigate_to_pose",
            ActionServerOptions::default(),
            NavigationHandler::new(base.clone(), "map"),
        )
        .unwrap();
    // the robot side publishes where the base is, as a real robot's localisation does
    let tf_pub = robot
        .publisher::<TFMessage>("/tf", asp_ros::robot::tf::TF_QOS)
        .unwrap();
    let b2 = base.clone();
    let _tf_task = tokio::spawn(async move {
        loop {
            let p = *b2.pose.lock().unwrap();
            let map_base = Transform::new("map", "base_link", p.to_isometry());
            let _ = tf_pub.publish(convert::tf_message(&[map_base], Time::now()));
            tokio::time::sleep(TICK).await;
        }
    });
    let tf = TfBuffer::new(&skills).unwrap();
    let client = Nav2Base::new(&skills, "/navigate_to_pose", tf, "map", "base_link").unwrap();
    client.base_pose().await.unwrap();
    let goal = Pose2D::new(1.0, 0.5, 1.2);
    let o = client.navigate_to(goal, &CancellationToken::new()).await;
    assert_eq!(o.status, TerminalStatus::Succeeded, "{o:?}");
    assert_eq!(o.error_code, NavErrorCode::None);
    assert!(o.final_pose.distance_to(&goal) < 0.2, "{o:?}");
    let o = client
        .navigate_to(Pose2D::new(99.0, 0.0, 0.0), &CancellationToken::new())
        .await;
    assert_eq!(o.status, TerminalStatus::Aborted);
    #[cfg(feature = "jazzy")]
    {
        assert_eq!(o.error_code, NavErrorCode::NoValidPath);
        assert_eq!(o.error_msg, "no path to the goal");
    }
    let token = CancellationToken::new();
    let t2 = token.clone();
    tokio::spawn(async move {
        tokio::time::sleep(TICK * 4).await;
        t2.cancel();
    });
    let o = client
        .navigate_to(Pose2D::new(-3.0, 2.0, 0.0), &token)
        .await;
    assert_eq!(o.status, TerminalStatus::Canceled, "{o:?}");
    assert!(base.stopped_early.load(Ordering::SeqCst));
    // it stopped short of the goal, where the robot says it is
    assert!(
        o.final_pose.distance_to(&Pose2D::new(-3.0, 2.0, 0.0)) > 1.0,
        "{o:?}"
    );
    let o = client
        .navigate_to(Pose2D::new(f32::NAN, 0.0, 0.0), &CancellationToken::new())
        .await;
    assert_eq!(o.status, TerminalStatus::Aborted);
    assert!(o.error_msg.contains("not finite"), "{}", o.error_msg);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn base_pose_comes_from_tf() {
    let (robot, skills, _t) = nodes();
    let tf_pub = robot
        .publisher::<TFMessage>("/tf", asp_ros::robot::tf::TF_QOS)
        .unwrap();
    let tf = TfBuffer::new(&skills).unwrap();
    let client = Nav2Base::new(&skills, "/navigate_to_pose", tf, "map", "base_link").unwrap();
    tf_pub.wait_for_subscribers().await.unwrap();
    let map_base = Transform::new(
        "map",
        "base_link",
        Pose2D::new(2.0, -1.0, 0.5).to_isometry(),
    );
    tf_pub
        .publish(convert::tf_message(&[map_base], Time::now()))
        .unwrap();
    let p = client.base_pose().await.unwrap();
    assert_relative_eq!(p.x, 2.0, epsilon = 1e-5);
    assert_relative_eq!(p.y, -1.0, epsilon = 1e-5);
    assert_relative_eq!(p.theta, 0.5, epsilon = 1e-5);
}
