//! The product nodes: each function starts one node on a [`Transport`] from the
//! configuration, wiring the node's logic (`asp_system`) to the ROS clients of the ports
//! and robot interfaces it needs, and serving its own port. The binaries call these; the
//! in-process graph ([`crate::graph`]) calls all of them on one transport.
//!
//! | node | serves | uses |
//! |---|---|---|
//! | object_map_node | `/asp/object_map/*`, `/asp/object_map` | cameras, TF, NavigateToPose, MoveGroup |
//! | affordance_node | `/asp/affordance/detect` | object_map_node |
//! | verifier_node | `/asp/verifier/*`, `/asp/verdicts` | — |
//! | skill_executor_node | `/asp/skill/execute` | MoveGroup, GripperCommand, planning scene, verifier_node, observer, e-stop |
//! | go_to_node | `/asp/go_to` | NavigateToPose, `/map`, object_map_node, affordance_node, e-stop |
//! | agent_node | `/asp/execute_goal`, `/asp/execute`, `/asp/state` | the four above |

use std::sync::Arc;
use std::time::Duration;

use asp_config::LoadedConfig;
use asp_config::sections::skills::ObserverBackend;
use asp_ros::Transport;
use asp_ros::action::{ActionServer, ActionServerOptions};
use asp_ros::msg::asp_interfaces::{DetectAffordances, ExecuteSkill, GoTo};
use asp_ros::robot::{GripperCommandClient, MoveGroupArm, Nav2Base, TfBuffer};
use asp_skills::{BlindObserver, LocalVerifier, PerceptionObserver, SceneObserver, SkillExecutor};
use asp_system::affordance::AffordanceService;
use asp_system::goto::GoToService;
use asp_system::map::MapService;
use asp_system::skills::SkillService;
use asp_system::{AffordancePort, ObjectMapPort};
use asp_verify::CommitGate;
use tracing::{info, warn};

use crate::affordance::{AffordanceClient, serve_affordances};
use crate::camera::RosCameras;
use crate::estop::EStopBinding;
use crate::goto::serve_go_to;
use crate::grid::MapTopicGrid;
use crate::map::{ObjectMapClient, ObjectMapServer, serve_object_map};
use crate::params::{StandardServices, serve_standard};
use crate::scene::PlanningSceneClient;
use crate::skill::serve_skills;
use crate::supervision::ClientWatch;
use crate::verifier::{VerifierClient, VerifierServer, serve_verifier};
use crate::{AbortOnDrop, NodeError};

/// Choices a binary or a test makes beyond the configuration.
#[derive(Debug, Clone)]
pub struct NodeOptions {
    /// Use the affordance memory database (`affordance_node.memory`); off for runs that
    /// must not depend on earlier ones.
    pub memory: bool,
    /// The verifier's instance number (the high half of its step ids); `None` picks one
    /// per process, so that a restarted verifier's steps do not collide.
    pub verifier_instance: Option<u32>,
}

impl Default for NodeOptions {
    fn default() -> Self {
        Self {
            memory: true,
            verifier_instance: None,
        }
    }
}

/// An instance number that differs between processes and starts.
fn fresh_instance() -> u32 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    std::process::id().rotate_left(16) ^ nanos
}

/// The running object_map_node.
pub struct ObjectMapNode {
    pub service: Arc<MapService>,
    pub server: ObjectMapServer,
    /// The survey drives and mapping poses stop on it.
    pub estop: EStopBinding,
    _build: Option<AbortOnDrop>,
    _explored: AbortOnDrop,
    _standard: StandardServices,
}

impl std::fmt::Debug for ObjectMapNode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectMapNode").finish_non_exhaustive()
    }
}

/// Starts object_map_node: the map service over the robot's cameras (TF for their
/// poses), Nav2 for the survey and the base pose, MoveIt for the mapping arm pose.
/// With `object_map_node.mapping.build_on_start` the map is built in the background (a
/// retrieval waits for it).
pub async fn object_map_node(
    cfg: &LoadedConfig,
    transport: &Transport,
) -> Result<ObjectMapNode, NodeError> {
    let c = &cfg.config;
    let node = transport.node("object_map_node")?;
    let standard = serve_standard(&node, cfg, "object_map_node", Vec::new())?;
    let frames = &c.common.frames;
    let tf = TfBuffer::new(&node)?;
    let mut cameras = c.object_map_node.mapping.cameras.clone();
    if !cameras.contains(&c.go_to_node.relocalize_camera) {
        cameras.push(c.go_to_node.relocalize_camera.clone());
    }
    let frame_source =
        RosCameras::new(&node, &c.common.cameras, tf.clone(), &frames.map, &cameras)?;
    let base = Nav2Base::new(
        &node,
        &c.go_to_node.navigate_action,
        tf.clone(),
        &frames.map,
        &frames.base,
    )?;
    let arm = MoveGroupArm::new(
        &node,
        &c.skill_executor_node.interfaces,
        &c.common.safety,
        tf,
    )?;
    let models = asp_perception::factory::models(cfg)?;
    let estop = EStopBinding::from_config(&node, c, transport, Some(standard.lifecycle()))?;
    let mut service = MapService::new(cfg, models, Arc::new(frame_source), Arc::new(base))?
        .with_arm(Arc::new(arm))
        .with_estop(estop.listener())
        .with_grounder(asp_system::models::concept_grounder(cfg)?);
    let elevator = &c.agent_node.building_memory.elevator;
    if !elevator.storeys.is_empty() {
        service = service.with_elevator(Arc::new(asp_ros::robot::RideElevatorClient::new(
            &node,
            &elevator.action,
        )?));
    }
    let service = Arc::new(service);
    let server = serve_object_map(&node, service.clone(), &frames.map)?;
    let explored = publish_explorations(&node, &service, &frames.map)?;
    let build = c.object_map_node.mapping.build_on_start.then(|| {
        let (s, summary) = (service.clone(), server.summary());
        let settled = estop.settled();
        AbortOnDrop(tokio::spawn(async move {
            // the survey moves the robot: not before a stop latched earlier is heard
            settled.await;
            match s.ensure_built().await {
                Ok(()) => info!("object map built"),
                Err(e) => {
                    warn!("building the map at start failed ({e}); the first retrieval tries again")
                }
            }
            summary.publish().await;
        }))
    });
    info!("object_map_node serving");
    Ok(ObjectMapNode {
        service,
        server,
        estop,
        _build: build,
        _explored: explored,
        _standard: standard,
    })
}

/// Publishes each exploration's floor grid on [`crate::names::EXPLORED_GRID_TOPIC`] as the tour
/// ends.
fn publish_explorations(
    node: &asp_ros::Node,
    service: &MapService,
    frame: &str,
) -> Result<AbortOnDrop, NodeError> {
    let publisher = node.publisher::<asp_ros::msg::nav_msgs::OccupancyGrid>(
        crate::names::EXPLORED_GRID_TOPIC,
        crate::grid::MAP_QOS,
    )?;
    let mut tours = service.explorations();
    let frame = frame.to_owned();
    Ok(AbortOnDrop(tokio::spawn(async move {
        while tours.changed().await.is_ok() {
            let Some(tour) = tours.borrow_and_update().clone() else {
                continue;
            };
            let msg = asp_ros::convert::ros_grid(
                &tour.grid,
                &frame,
                asp_ros::msg::builtin_interfaces::Time::now(),
            );
            if let Err(e) = publisher.publish(msg) {
                warn!("cannot publish the explored grid: {e}");
            }
        }
    })))
}

/// The running affordance_node.
pub struct AffordanceNode {
    pub service: Arc<AffordanceService>,
    _server: ActionServer<DetectAffordances>,
    _standard: StandardServices,
}

impl std::fmt::Debug for AffordanceNode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AffordanceNode").finish_non_exhaustive()
    }
}

/// Starts affordance_node: detection with the A-Harness loop on the objects of
/// object_map_node, with the affordance memory when `options.memory`.
pub async fn affordance_node(
    cfg: &LoadedConfig,
    transport: &Transport,
    options: &NodeOptions,
) -> Result<AffordanceNode, NodeError> {
    let node = transport.node("affordance_node")?;
    let standard = serve_standard(&node, cfg, "affordance_node", Vec::new())?;
    let map: Arc<dyn ObjectMapPort> = Arc::new(ObjectMapClient::new(&node)?.with_crops(true));
    let memory = if options.memory {
        let models = asp_perception::factory::models(cfg)?;
        Some(asp_system::memory_link(cfg, &models)?)
    } else {
        None
    };
    let service = Arc::new(AffordanceService::from_config(cfg, map, memory)?);
    let server = serve_affordances(&node, service.clone(), Some(standard.lifecycle()))?;
    info!(memory = options.memory, "affordance_node serving");
    Ok(AffordanceNode {
        service,
        _server: server,
        _standard: standard,
    })
}

/// The running verifier_node.
#[derive(Debug)]
pub struct VerifierNode {
    pub instance: u32,
    _server: VerifierServer,
    _standard: StandardServices,
}

/// Starts verifier_node: the commit gate and the outcome checks of the configuration.
pub async fn verifier_node(
    cfg: &LoadedConfig,
    transport: &Transport,
    options: &NodeOptions,
) -> Result<VerifierNode, NodeError> {
    let node = transport.node("verifier_node")?;
    let standard = serve_standard(&node, cfg, "verifier_node", Vec::new())?;
    let instance = options.verifier_instance.unwrap_or_else(fresh_instance);
    let vlm = asp_system::models::outcome_vlm(&cfg.config)?;
    let verifier = Arc::new(LocalVerifier::from_config(&cfg.config, instance, vlm));
    let server = serve_verifier(&node, verifier, Some(standard.lifecycle()))?;
    info!(instance, "verifier_node serving");
    Ok(VerifierNode {
        instance,
        _server: server,
        _standard: standard,
    })
}

/// The running skill_executor_node.
pub struct SkillExecutorNode {
    pub service: Arc<SkillService>,
    pub estop: EStopBinding,
    _server: ActionServer<ExecuteSkill>,
    _standard: StandardServices,
    _client: ClientWatch,
}

impl std::fmt::Debug for SkillExecutorNode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SkillExecutorNode").finish_non_exhaustive()
    }
}

/// Starts skill_executor_node: skills as MoveGroup pose goals and GripperCommand goals,
/// behind verifier_node's commit gate and outcome check, stopped by the e-stop topic.
pub async fn skill_executor_node(
    cfg: &LoadedConfig,
    transport: &Transport,
) -> Result<SkillExecutorNode, NodeError> {
    let c = &cfg.config;
    let node = transport.node("skill_executor_node")?;
    let standard = serve_standard(&node, cfg, "skill_executor_node", Vec::new())?;
    let interfaces = &c.skill_executor_node.interfaces;
    let tf = TfBuffer::new(&node)?;
    let arm = MoveGroupArm::new(&node, interfaces, &c.common.safety, tf.clone())?;
    let gripper = GripperCommandClient::new(&node, &interfaces.gripper_action, &c.common.safety)?;
    // received verdicts are re-checked with this side's own gate
    let verifier = VerifierClient::new(&node, CommitGate::from_config(c, 0))?;
    let observer: Arc<dyn SceneObserver> = match c.skill_executor_node.observer {
        ObserverBackend::Perception => {
            let p = &c.skill_executor_node.perception;
            let cameras = RosCameras::new(
                &node,
                &c.common.cameras,
                tf.clone(),
                &c.common.frames.map,
                &p.cameras,
            )?;
            Arc::new(PerceptionObserver::new(Arc::new(cameras), p.clone()))
        }
        ObserverBackend::None => Arc::new(BlindObserver),
    };
    let estop = EStopBinding::from_config(&node, c, transport, Some(standard.lifecycle()))?;
    let executor = SkillExecutor::new(
        Arc::new(arm),
        Arc::new(gripper),
        Arc::new(verifier),
        observer,
        c,
        estop.listener(),
    )?;
    let scene = PlanningSceneClient::new(
        &node,
        &interfaces.apply_planning_scene_service,
        interfaces.scene_voxel_size,
    )?;
    let service = Arc::new(SkillService::new(executor, Arc::new(scene)));
    let client = ClientWatch::new(&node, cfg, "agent_node")?;
    // no goal before a stop latched earlier is heard
    estop.settled().await;
    let server = serve_skills(
        &node,
        service.clone(),
        ActionServerOptions {
            estop: Some(estop.watch()),
            client_lost: Some(client.lost()),
            lifecycle: Some(standard.lifecycle()),
            ..ActionServerOptions::default()
        },
    )?;
    info!(observer = ?c.skill_executor_node.observer, "skill_executor_node serving");
    Ok(SkillExecutorNode {
        service,
        estop,
        _server: server,
        _standard: standard,
        _client: client,
    })
}

/// The running go_to_node.
pub struct GoToNode {
    pub service: Arc<GoToService>,
    pub estop: EStopBinding,
    _server: ActionServer<GoTo>,
    _standard: StandardServices,
    _client: ClientWatch,
}

impl std::fmt::Debug for GoToNode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GoToNode").finish_non_exhaustive()
    }
}

/// Starts go_to_node: affordance-facing base poses on the `/map` grid, driven to with
/// Nav2, stopped by the e-stop topic.
pub async fn go_to_node(cfg: &LoadedConfig, transport: &Transport) -> Result<GoToNode, NodeError> {
    let c = &cfg.config;
    let node = transport.node("go_to_node")?;
    let standard = serve_standard(&node, cfg, "go_to_node", Vec::new())?;
    let frames = &c.common.frames;
    let tf = TfBuffer::new(&node)?;
    let base = Nav2Base::new(
        &node,
        &c.go_to_node.navigate_action,
        tf,
        &frames.map,
        &frames.base,
    )?;
    let map: Arc<dyn ObjectMapPort> = Arc::new(ObjectMapClient::new(&node)?.with_crops(false));
    let affordance: Arc<dyn AffordancePort> = Arc::new(AffordanceClient::new(&node)?);
    let grid = MapTopicGrid::new(
        &node,
        &c.go_to_node.map_topic,
        Duration::from_secs_f64(c.common.transport.discovery_timeout_s),
    )?;
    let estop = EStopBinding::from_config(&node, c, transport, Some(standard.lifecycle()))?;
    let service = Arc::new(GoToService::new(
        Arc::new(base),
        map,
        affordance,
        Arc::new(grid),
        estop.listener(),
        &c.go_to_node,
    ));
    let client = ClientWatch::new(&node, cfg, "agent_node")?;
    // no goal before a stop latched earlier is heard
    estop.settled().await;
    let server = serve_go_to(
        &node,
        service.clone(),
        ActionServerOptions {
            estop: Some(estop.watch()),
            client_lost: Some(client.lost()),
            lifecycle: Some(standard.lifecycle()),
            ..ActionServerOptions::default()
        },
    )?;
    info!("go_to_node serving");
    Ok(GoToNode {
        service,
        estop,
        _server: server,
        _standard: standard,
        _client: client,
    })
}
