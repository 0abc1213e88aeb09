//! sim_node: the embedded simulator serving exactly what a real robot stack would —
//! camera images, registered depth and camera info per camera, `/tf`, `/joint_states`,
//! the latched `/map`, MoveIt's MoveGroup action and planning-scene services, Nav2's
//! NavigateToPose and the gripper controller's GripperCommand — plus, clearly named as
//! simulation, the ground-truth images the simulated models read (`/sim/...`, like
//! Gazebo's segmentation camera). No product node reads the simulator's state: the
//! verifier looks with the cameras.
//!
//! Stamps are simulation time, made strictly increasing (two frames rendered at the same
//! simulated instant are a microsecond apart), so that a frame is identified by its
//! stamp and TF can be asked for "at least as new as this frame".

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use asp_config::LoadedConfig;
use asp_core::robot::{
    ArmMotion, BaseNavigation, CancellationToken, Gripper, GripperGoal, GripperOutcome,
    MotionOutcome, NavOutcome, PoseGoal, RobotError,
};
use asp_core::{FrameId, Isometry3, Pose2D};
use asp_ros::action::ActionServerOptions;
use asp_ros::convert;
use asp_ros::convert::DepthEncoding;
use asp_ros::msg::asp_interfaces::{
    RenderCamera, RenderCameraRequest, RenderCameraResponse, SimGroundTruth,
};
use asp_ros::msg::builtin_interfaces::Time;
use asp_ros::msg::control_msgs::GripperCommandAction;
use asp_ros::msg::moveit_msgs::{AllowedCollisionMatrix, GetPlanningScene, MoveGroup};
use asp_ros::msg::nav_msgs::OccupancyGrid as RosGrid;
use asp_ros::msg::nav2_msgs::NavigateToPose;
use asp_ros::msg::rosgraph_msgs::Clock;
use asp_ros::msg::sensor_msgs::{CameraInfo, Image as RosImage, JointState};
use asp_ros::msg::std_msgs::{Header, String as StringMsg};
use asp_ros::msg::tf2_msgs::TFMessage;
use asp_ros::robot::tf::{TF_QOS, TF_STATIC_QOS};
use asp_ros::robot::{ArmMotionHandler, GripperHandler, NavigationHandler, planning_scene_handler};
use asp_ros::transport::Publisher;
use asp_ros::{Node, Qos};
use asp_sim::SimRobot;
use async_trait::async_trait;
use tracing::{debug, info, warn};

use asp_nodes::camera::{CAMERA_QOS, ground_truth_message};
use asp_nodes::grid::MAP_QOS;
use asp_nodes::names::{self, CameraTopics};
use asp_nodes::{AbortOnDrop, NodeError};

use crate::SimulationError;

/// The simulation's clock: simulated time, strictly increasing across stamps.
#[derive(Debug)]
pub struct SimClock {
    sim: SimRobot,
    last: Mutex<(i32, u32)>,
}

impl SimClock {
    pub fn new(sim: SimRobot) -> Self {
        Self {
            sim,
            last: Mutex::new((0, 0)),
        }
    }

    /// A stamp at the current simulated time, at least 1 µs after the previous one.
    pub fn stamp(&self) -> Time {
        let now = Time::from_secs_f64(self.sim.sim_time());
        let mut last = self
            .last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let next = if (now.sec, now.nanosec) > *last {
            now
        } else {
            let ns = last.1 + 1_000;
            if ns >= 1_000_000_000 {
                Time {
                    sec: last.0 + 1,
                    nanosec: ns - 1_000_000_000,
                }
            } else {
                Time {
                    sec: last.0,
                    nanosec: ns,
                }
            }
        };
        *last = (next.sec, next.nanosec);
        next
    }
}

/// The QoS of `/clock` (reliable, volatile, depth 1: rclcpp's best-effort clock
/// subscription matches it, and so does a reliable one).
const CLOCK_QOS: Qos = Qos::default_reliable().with_depth(1);

/// Publishes the robot's state as a robot's own stack would: `/tf` (localisation,
/// odometry and the moving joints; the simulator's object poses are ground truth and stay
/// inside), `/tf_static` (the fixed joints, latched), `/robot_description` (the URDF,
/// latched), `/joint_states`, `/clock` (simulated time) and `/map` when it changed.
pub struct StatePublisher {
    sim: SimRobot,
    clock: Arc<SimClock>,
    tf: Publisher<TFMessage>,
    tf_static: Publisher<TFMessage>,
    robot_description: Publisher<StringMsg>,
    sim_time: Publisher<Clock>,
    joints: Publisher<JointState>,
    map: Publisher<RosGrid>,
    map_frame: String,
    last_grid: Mutex<Option<Vec<i8>>>,
}

impl std::fmt::Debug for StatePublisher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StatePublisher").finish_non_exhaustive()
    }
}

impl StatePublisher {
    fn new(
        node: &Node,
        sim: SimRobot,
        clock: Arc<SimClock>,
        map_topic: &str,
        map_frame: &str,
    ) -> Result<Self, NodeError> {
        Ok(Self {
            sim,
            clock,
            tf: node.publisher("/tf", TF_QOS)?,
            tf_static: node.publisher("/tf_static", TF_STATIC_QOS)?,
            robot_description: node.publisher("/robot_description", Qos::latched())?,
            sim_time: node.publisher("/clock", CLOCK_QOS)?,
            joints: node.publisher("/joint_states", Qos::default_reliable())?,
            map: node.publisher(map_topic, MAP_QOS)?,
            map_frame: map_frame.to_owned(),
            last_grid: Mutex::new(None),
        })
    }

    /// `/tf` with `stamp`: the edges that move.
    pub fn publish_tf(&self, stamp: Time) {
        let msg = convert::tf_message(&self.sim.robot_frames().moving, stamp);
        if let Err(e) = self.tf.publish(msg) {
            warn!("/tf: {e}");
        }
    }

    /// The latched descriptions: `/tf_static` (fixed joints) and `/robot_description`.
    fn publish_descriptions(&self) {
        let stamp = self.clock.stamp();
        let statics = convert::tf_message(&self.sim.robot_frames().fixed, stamp);
        if let Err(e) = self.tf_static.publish(statics) {
            warn!("/tf_static: {e}");
        }
        let urdf = StringMsg {
            data: self.sim.model().urdf().to_owned(),
        };
        if let Err(e) = self.robot_description.publish(urdf) {
            warn!("/robot_description: {e}");
        }
    }

    /// `/clock`, `/tf` and `/joint_states` now.
    pub fn publish_state(&self) {
        let stamp = self.clock.stamp();
        if let Err(e) = self.sim_time.publish(Clock { clock: stamp }) {
            warn!("/clock: {e}");
        }
        self.publish_tf(stamp);
        let (names, values) = self.sim.joint_states();
        let positions: BTreeMap<String, f64> = names.into_iter().zip(values).collect();
        if let Err(e) = self.joints.publish(convert::joint_state(&positions, stamp)) {
            warn!("/joint_states: {e}");
        }
    }

    /// `/map`, when the grid differs from the last one published.
    pub fn publish_grid_if_changed(&self) {
        let grid = match self.sim.occupancy_grid() {
            Ok(g) => g,
            Err(e) => {
                warn!("no occupancy grid: {e}");
                return;
            }
        };
        let msg = convert::ros_grid(&grid, &self.map_frame, self.clock.stamp());
        let mut last = self
            .last_grid
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if last.as_ref() == Some(&msg.data) {
            return;
        }
        *last = Some(msg.data.clone());
        if let Err(e) = self.map.publish(msg) {
            warn!("/map: {e}");
        }
    }

    /// Everything that a motion may have changed.
    fn after_motion(&self) {
        self.publish_state();
        self.publish_grid_if_changed();
    }
}

/// The simulator's robot, publishing its state after every command (so that a client
/// reading TF after a motion's result sees where the motion ended).
#[derive(Debug, Clone)]
pub struct PublishingRobot {
    sim: SimRobot,
    state: Arc<StatePublisher>,
}

#[async_trait]
impl ArmMotion for PublishingRobot {
    async fn move_to_pose(&self, goal: &PoseGoal, cancel: &CancellationToken) -> MotionOutcome {
        let out = self.sim.move_to_pose(goal, cancel).await;
        self.state.after_motion();
        out
    }

    async fn move_to_named(&self, name: &str, cancel: &CancellationToken) -> MotionOutcome {
        let out = self.sim.move_to_named(name, cancel).await;
        self.state.after_motion();
        out
    }

    async fn tool_pose(&self, frame: &FrameId) -> Result<Isometry3, RobotError> {
        self.sim.tool_pose(frame).await
    }
}

#[async_trait]
impl Gripper for PublishingRobot {
    async fn command(
        &self,
        goal: GripperGoal,
        cancel: &CancellationToken,
    ) -> Result<GripperOutcome, RobotError> {
        let out = self.sim.command(goal, cancel).await;
        self.state.after_motion();
        out
    }
}

#[async_trait]
impl BaseNavigation for PublishingRobot {
    async fn navigate_to(&self, goal: Pose2D, cancel: &CancellationToken) -> NavOutcome {
        let out = self.sim.navigate_to(goal, cancel).await;
        self.state.after_motion();
        out
    }

    async fn base_pose(&self) -> Result<Pose2D, RobotError> {
        self.sim.base_pose().await
    }

    async fn map_in(&self, frame: &FrameId) -> Option<Isometry3> {
        self.sim.map_in(frame).await
    }
}

/// One simulated camera's publishers.
struct SimCamera {
    name: String,
    image: Publisher<RosImage>,
    depth: Publisher<RosImage>,
    info: Publisher<CameraInfo>,
    ground_truth: Publisher<SimGroundTruth>,
}

impl SimCamera {
    fn new(node: &Node, cfg: &LoadedConfig, name: &str) -> Result<Self, NodeError> {
        let topics = CameraTopics::new(&cfg.config.common.cameras, name);
        Ok(Self {
            name: name.to_owned(),
            image: node.publisher(&topics.image, CAMERA_QOS)?,
            depth: node.publisher(&topics.depth, CAMERA_QOS)?,
            info: node.publisher(&topics.info, CAMERA_QOS)?,
            ground_truth: node.publisher(&names::sim_ground_truth_topic(name), CAMERA_QOS)?,
        })
    }

    /// Renders a frame now and publishes it (TF first, with the same stamp).
    async fn render(
        &self,
        sim: &SimRobot,
        clock: &SimClock,
        state: &StatePublisher,
        with_ground_truth: bool,
    ) -> Result<Time, String> {
        let stamp = clock.stamp();
        state.publish_tf(stamp);
        let (s, name) = (sim.clone(), self.name.clone());
        let frame = tokio::task::spawn_blocking(move || s.render(&name))
            .await
            .map_err(|e| format!("the renderer crashed: {e}"))?
            .map_err(|e| e.to_string())?;
        let header = Header::new(stamp, frame.camera_pose.child.as_str());
        let publish = || -> Result<(), asp_ros::RosError> {
            self.image
                .publish(convert::ros_rgb_image(&frame.rgb, header.clone()))?;
            self.depth.publish(convert::ros_depth_image(
                &frame.depth,
                header.clone(),
                DepthEncoding::Meters32F,
            ))?;
            self.info
                .publish(convert::camera_info(&frame.intrinsics, header.clone()))?;
            if with_ground_truth && let Some(gt) = &frame.ground_truth {
                self.ground_truth
                    .publish(ground_truth_message(gt, header.clone()))?;
            }
            Ok(())
        };
        publish().map_err(|e| e.to_string())?;
        debug!(camera = %self.name, stamp = stamp.as_secs_f64(), "frame published");
        Ok(stamp)
    }
}

/// The running sim node; dropping it stops every server and publisher.
pub struct SimNode {
    pub sim: SimRobot,
    pub node: Node,
    /// The simulation's VLM (`sim_node.vlm_standin`), serving while the node runs.
    pub vlm_standin: Option<asp_vlm_standin::VlmStandIn>,
    /// The simulation's web search (`sim_node.web_standin`), serving while the node runs.
    pub web_standin: Option<asp_web_standin::WebStandIn>,
    _keep: Vec<Box<dyn std::any::Any + Send>>,
    _tasks: Vec<AbortOnDrop>,
}

impl std::fmt::Debug for SimNode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimNode")
            .field("node", &self.node)
            .finish_non_exhaustive()
    }
}

/// Starts the sim node on `node` over `sim`, with the simulation's VLM stand-in server
/// when `sim_node.vlm_standin.enabled` and its web search when
/// `sim_node.web_standin.enabled`.
pub async fn start_sim_node(
    cfg: &LoadedConfig,
    node: &Node,
    sim: SimRobot,
) -> Result<SimNode, SimulationError> {
    let vlm_standin = crate::standin::start_vlm_standin(cfg, &sim).await?;
    let web_standin = crate::standin::start_web_standin(cfg).await?;
    let c = &cfg.config;
    let interfaces = &c.skill_executor_node.interfaces;
    let map_frame = c.common.frames.map.as_str();
    let clock = Arc::new(SimClock::new(sim.clone()));
    let state = Arc::new(StatePublisher::new(
        node,
        sim.clone(),
        clock.clone(),
        &c.go_to_node.map_topic,
        map_frame,
    )?);
    let robot = Arc::new(PublishingRobot {
        sim: sim.clone(),
        state: state.clone(),
    });
    let mut keep: Vec<Box<dyn std::any::Any + Send>> = Vec::new();
    let mut tasks = Vec::new();
    keep.push(Box::new(asp_nodes::params::serve_standard_unmanaged(
        node, cfg, "sim_node",
    )?));

    // MoveIt: MoveGroup, the planning scene (read and apply)
    let robot_acm = AllowedCollisionMatrix::default();
    keep.push(Box::new(node.action_server::<MoveGroup, _>(
        &interfaces.move_group_action,
        ActionServerOptions::default(),
        ArmMotionHandler::new(robot.clone(), interfaces, robot_acm.clone()),
    )?));
    keep.push(Box::new(node.serve::<GetPlanningScene, _, _>(
        &interfaces.planning_scene_service,
        planning_scene_handler(robot_acm),
    )?));
    keep.push(Box::new(crate::scene::serve_sim_planning_scene(
        node,
        &interfaces.apply_planning_scene_service,
        sim.clone(),
        map_frame,
    )?));
    // the gripper controller and Nav2
    keep.push(Box::new(node.action_server::<GripperCommandAction, _>(
        &interfaces.gripper_action,
        ActionServerOptions::default(),
        GripperHandler::new(robot.clone()),
    )?));
    keep.push(Box::new(node.action_server::<NavigateToPose, _>(
        &c.go_to_node.navigate_action,
        ActionServerOptions::default(),
        NavigationHandler::new(robot.clone(), map_frame),
    )?));
    // a building's elevator
    if sim.storey().is_some() {
        keep.push(Box::new(
            node.action_server::<asp_ros::msg::asp_interfaces::RideElevator, _>(
                names::ELEVATOR_RIDE_ACTION,
                ActionServerOptions::default(),
                crate::elevator::ElevatorHandler {
                    sim: sim.clone(),
                    state: state.clone(),
                },
            )?,
        ));
    }

    // cameras: rendered on request, and periodically when asked to
    let mut cameras = Vec::new();
    for name in sim.cameras() {
        let cam = Arc::new(SimCamera::new(node, cfg, &name)?);
        let (s, k, st, cm) = (sim.clone(), clock.clone(), state.clone(), cam.clone());
        keep.push(Box::new(node.serve::<RenderCamera, _, _>(
            &names::sim_render_service(&name),
            move |req: RenderCameraRequest| {
                let (s, k, st, cm) = (s.clone(), k.clone(), st.clone(), cm.clone());
                async move {
                    // a reader that just appeared may not be matched yet
                    if let Err(e) = cm.image.wait_for_subscribers().await {
                        debug!("rendering without a matched reader: {e}");
                    }
                    match cm.render(&s, &k, &st, req.ground_truth).await {
                        Ok(stamp) => RenderCameraResponse {
                            success: true,
                            error_msg: String::new(),
                            stamp,
                        },
                        Err(error_msg) => RenderCameraResponse {
                            success: false,
                            error_msg,
                            stamp: Time::default(),
                        },
                    }
                }
            },
        )?));
        cameras.push(cam);
    }
    let rate = c.sim_node.camera.rate_hz;
    if rate > 0.0 {
        let (s, k, st) = (sim.clone(), clock.clone(), state.clone());
        tasks.push(AbortOnDrop(tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / rate));
            loop {
                tick.tick().await;
                for cam in &cameras {
                    if let Err(e) = cam.render(&s, &k, &st, true).await {
                        warn!(camera = %cam.name, "periodic frame: {e}");
                    }
                }
            }
        })));
    }

    // robot state: now, then periodically
    state.publish_descriptions();
    state.publish_state();
    state.publish_grid_if_changed();
    let st = state.clone();
    let period = Duration::from_secs_f64(1.0 / c.sim_node.tf_rate_hz);
    tasks.push(AbortOnDrop(tokio::spawn(async move {
        let mut tick = tokio::time::interval(period);
        loop {
            tick.tick().await;
            st.publish_state();
        }
    })));
    info!(
        cameras = ?sim.cameras(),
        move_group = %interfaces.move_group_action,
        navigate = %c.go_to_node.navigate_action,
        "sim node serving"
    );
    Ok(SimNode {
        sim,
        node: node.clone(),
        vlm_standin,
        web_standin,
        _keep: keep,
        _tasks: tasks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_strictly_increase_at_one_simulated_instant() {
        let cfg = asp_config::AspConfig::load_dir(asp_runtime::built_in_config_dir()).unwrap();
        let sim = crate::simulation(&cfg, None).unwrap();
        let clock = SimClock::new(sim);
        let a = clock.stamp();
        let b = clock.stamp();
        assert!((b.sec, b.nanosec) > (a.sec, a.nanosec));
        assert_eq!(b.nanosec - a.nanosec, 1_000);
    }
}
