//! Simulator scenes for the executor tests: scenario loading, point clouds from rendered
//! frames with the simulator's ground-truth masks (the skills are under test, not
//! perception), and the executor with the product's perception observer.
#![allow(clippy::unwrap_used, dead_code)]

use std::path::PathBuf;
use std::sync::Arc;

use asp_config::AspConfig;
use asp_core::{Affordance, AffordanceProvenance, ObjectKey, PointCloud, RgbdFrame, Skill};
use asp_kinematics::{RobotModel, Xarm6};
use asp_sim::scenario::Scenario;
use asp_sim::{SimRobot, SimSettings};
use asp_skills::{EStop, LocalVerifier, SkillExecutor, SkillRequest};
use async_trait::async_trait;

pub fn config_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../config")
}

/// The shipped configuration with exact sensors and outcome VLM (the oracle profile):
/// these tests are about the skills, not about perception's errors.
pub fn config() -> AspConfig {
    let mut c = AspConfig::load_dir(config_dir()).unwrap().config;
    c.sim_node.camera.depth_noise_std = 0.0;
    c.sim_node.camera.depth_dropout = 0.0;
    c.verifier_node.outcome.simulated_error_rate = 0.0;
    c
}

pub fn model() -> Arc<dyn RobotModel> {
    Arc::new(Xarm6::on_base().unwrap())
}

/// A simulation as `file` (under config/scenarios) starts.
pub fn scenario(file: &str) -> (SimRobot, Scenario) {
    let sc = Scenario::load(config_dir().join("scenarios").join(file)).unwrap();
    let sim = SimRobot::for_scenario(&sc, model(), exact_sensors()).unwrap();
    (sim, sc)
}

/// The simulator's settings with exact sensors: these tests are about the skills (see
/// `config`).
pub fn exact_sensors() -> SimSettings {
    let mut cfg = asp_config::sections::sim::SimConfig::default();
    cfg.camera.depth_noise_std = 0.0;
    cfg.camera.depth_dropout = 0.0;
    SimSettings::from_config(&cfg)
}

/// Renders `camera` and back-projects the pixels `select` picks from the ground truth,
/// voxel-downsampled to 5 mm.
fn cloud_from(frame: &RgbdFrame, mask: &asp_core::Mask) -> PointCloud {
    frame
        .back_project(Some(mask), 0.05, 10.0)
        .unwrap()
        .voxel_downsample(0.005)
        .unwrap()
}

/// The instance id of world object `name` in a frame.
fn instance_id(frame: &RgbdFrame, name: &str) -> Option<u32> {
    let gt = frame.ground_truth.as_ref()?;
    gt.instances.values().find(|i| i.name == name).map(|i| i.id)
}

/// The object's cloud as `camera` sees it now (ground-truth instance mask).
pub fn object_cloud(sim: &SimRobot, camera: &str, name: &str) -> PointCloud {
    let frame = sim.render(camera).unwrap();
    let id = instance_id(&frame, name).unwrap_or_else(|| panic!("{name} not in view of {camera}"));
    let mask = frame.ground_truth.as_ref().unwrap().instance_mask(id);
    cloud_from(&frame, &mask)
}

/// A part's cloud as `camera` sees it now (ground-truth part mask).
pub fn part_cloud(sim: &SimRobot, camera: &str, object: &str, part: &str) -> PointCloud {
    let frame = sim.render(camera).unwrap();
    let gt = frame.ground_truth.as_ref().unwrap();
    let id = instance_id(&frame, object).unwrap_or_else(|| panic!("{object} not in view"));
    let pid = gt
        .parts
        .values()
        .find(|p| p.instance == id && p.name == part)
        .unwrap_or_else(|| panic!("{part} of {object} not in view of {camera}"))
        .id;
    cloud_from(&frame, &gt.part_mask(pid))
}

/// An affordance on a ground-truth part, marked as committed by the verifier (as the
/// affordance node marks a grounding that passed the commit rule).
pub fn gt_affordance(
    sim: &SimRobot,
    camera: &str,
    object: &str,
    part: &str,
    skill: Skill,
) -> Affordance {
    Affordance {
        point_cloud: part_cloud(sim, camera, object, part),
        part: part.into(),
        skill,
        provenance: AffordanceProvenance {
            producers: vec!["simulator ground truth".into()],
            keyframes: vec![0],
            confidence: 1.0,
            verifier_score: Some(1.0),
        },
    }
}

/// A request on world object `name` with its ground-truth cloud from `camera`.
pub fn request(sim: &SimRobot, camera: &str, skill: Skill, name: &str) -> SkillRequest {
    SkillRequest::new(
        skill,
        ObjectKey::from_query(name, 0),
        format!("the {}", name.replace('_', " ")),
        object_cloud(sim, camera, name),
    )
    .with_scene_names([name])
}

/// The executor on `sim` with the in-process verifier (its outcome VLM the simulated
/// one) and the product's perception observer over the simulator's cameras.
pub fn executor(sim: &SimRobot, cfg: &AspConfig, estop: &EStop) -> SkillExecutor {
    executor_with_arm(sim, Arc::new(sim.clone()), cfg, estop)
}

/// Joint values and tool pose: what "the robot did not move" compares.
pub fn robot_state(sim: &SimRobot) -> (Vec<f64>, [f32; 3]) {
    let (_, q) = sim.joint_states();
    let t = sim.with_state(|s| s.robot.base);
    (q, [t.x, t.y, t.theta])
}

/// The simulator's arm, except that its `n`-th pose goal (or each of `more`) ends with
/// `code` without moving (what a real controller answers when the arm is held back: the
/// simulator has no contact forces). Every other goal goes to the simulator.
pub struct FailNthGoal {
    pub sim: SimRobot,
    pub n: u32,
    pub more: Vec<u32>,
    pub code: asp_core::robot::MoveItErrorCode,
    pub seen: std::sync::atomic::AtomicU32,
}

impl FailNthGoal {
    pub fn new(sim: &SimRobot, n: u32, code: asp_core::robot::MoveItErrorCode) -> Self {
        Self {
            sim: sim.clone(),
            n,
            more: Vec::new(),
            code,
            seen: Default::default(),
        }
    }

    /// Also refuses the goals numbered in `more`.
    pub fn and_goals(mut self, more: &[u32]) -> Self {
        self.more = more.to_vec();
        self
    }
}

#[async_trait]
impl asp_core::robot::ArmMotion for FailNthGoal {
    async fn move_to_pose(
        &self,
        goal: &asp_core::robot::PoseGoal,
        cancel: &asp_core::robot::CancellationToken,
    ) -> asp_core::robot::MotionOutcome {
        let k = self.seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        if k == self.n || self.more.contains(&k) {
            return asp_core::robot::MotionOutcome::failure(self.code, "held back");
        }
        self.sim.move_to_pose(goal, cancel).await
    }
    async fn move_to_named(
        &self,
        name: &str,
        cancel: &asp_core::robot::CancellationToken,
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

/// The executor on `sim` with `arm` in place of the simulator's arm.
pub fn executor_with_arm(
    sim: &SimRobot,
    arm: Arc<dyn asp_core::robot::ArmMotion>,
    cfg: &AspConfig,
    estop: &EStop,
) -> SkillExecutor {
    let vlm = Arc::new(asp_perception::SimulatedOutcomeVlm::new(
        cfg.verifier_node.outcome.simulated_error_rate,
        cfg.verifier_node.outcome.simulated_seed,
    ));
    let observer = Arc::new(asp_skills::PerceptionObserver::new(
        Arc::new(sim.clone()),
        cfg.skill_executor_node.perception.clone(),
    ));
    SkillExecutor::new(
        arm,
        Arc::new(sim.clone()),
        Arc::new(LocalVerifier::from_config(cfg, 7, Some(vlm))),
        observer,
        cfg,
        estop.listener(),
    )
    .unwrap()
}
