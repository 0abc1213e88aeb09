//! The simulated robot in its world, behind a cloneable handle ([`SimRobot`]) that
//! implements the `asp_core::robot` traits: the only way other crates drive the sim.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use asp_config::SimConfig;
use asp_core::grid::OccupancyGrid;
use asp_core::robot::{
    ArmMotion, BaseNavigation, CancellationToken, FrameSource, Gripper, GripperGoal,
    GripperOutcome, MotionOutcome, MoveItErrorCode, NavErrorCode, NavOutcome, PoseGoal, RobotError,
    TerminalStatus,
};
use asp_core::{CameraIntrinsics, FrameId, Isometry3, Point3, Pose2D, Real, RgbdFrame, Transform};
use asp_kinematics::{
    AttachedObject, Collision, CollisionWorld, JointTrajectory, LinkShape, MotionPlanner,
    PlanRequest, PlannerSettings, RobotModel,
};
use async_trait::async_trait;
use parry3d::bounding_volume::BoundingVolume;
use parry3d::shape::{SharedShape, TypedShape};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::effects::{self, EffectParams, Event, FingerGeometry, Grip};
use crate::error::SimError;
use crate::history::{WorldHistory, WorldMark};
use crate::nav::{GridParams, NavMap};
use crate::predicate::{Predicate, RobotView};
use crate::render::{self, CameraView, DepthNoise, RenderItem};
use crate::scenario::Scenario;
use crate::scene::PlanningScene;
use crate::storeys::{BUILDING_FRAME, RideError, RideRefused, Site, Storeys, load_site};
use crate::world::{ObjectIdx, Prim, World};

/// Everything the simulator is tuned by (from [`SimConfig`]).
#[derive(Debug, Clone, PartialEq)]
pub struct SimSettings {
    pub seed: u64,
    pub real_time_factor: f64,
    pub width: u32,
    pub height: u32,
    pub hfov_deg: Real,
    pub noise: DepthNoise,
    /// Camera name → optical frame of the robot description.
    pub cameras: BTreeMap<String, String>,
    pub grid: GridParams,
    pub base_speed: Real,
    pub base_turn_rate: Real,
    pub control_period_s: Real,
    /// Localisation error drawn after each drive: (per axis, metres; heading, radians).
    pub localization_std: (Real, Real),
    /// Largest joint change per execution step, radians.
    pub joint_step: f64,
    pub gripper_speed: Real,
    pub effects: EffectParams,
    pub planner: PlannerSettings,
}

impl SimSettings {
    pub fn from_config(cfg: &SimConfig) -> Self {
        let c = &cfg.camera;
        Self {
            seed: cfg.seed,
            real_time_factor: cfg.real_time_factor,
            width: c.width,
            height: c.height,
            hfov_deg: c.hfov_deg,
            noise: DepthNoise {
                std_at_1m: c.depth_noise_std,
                dropout: c.depth_dropout,
                max_range: c.max_range,
            },
            cameras: c.frames.clone(),
            grid: GridParams {
                resolution: cfg.base.resolution,
                band: (cfg.base.obstacle_min_height, cfg.base.obstacle_max_height),
                footprint_radius: 0.0,
                footprint: Vec::new(),
                cost_distance: cfg.base.cost_distance,
                margin: 1.0,
            },
            base_speed: cfg.base.max_speed,
            base_turn_rate: cfg.base.max_turn_rate,
            control_period_s: cfg.base.control_period_s,
            localization_std: (
                cfg.base.localization_xy_std,
                cfg.base.localization_yaw_std_deg.to_radians(),
            ),
            joint_step: cfg.arm.execution_step_rad,
            gripper_speed: cfg.arm.gripper_speed,
            effects: EffectParams {
                min_contacts: cfg.effects.min_pad_contacts,
                slip_distance: cfg.effects.slip_distance,
                hook_margin: cfg.effects.hook_margin,
                displacement: (
                    cfg.effects.failed_grasp_displacement[0],
                    cfg.effects.failed_grasp_displacement[1],
                ),
                tip_z: 0.0,
            },
            planner: PlannerSettings {
                seed: cfg.seed,
                ..PlannerSettings::default()
            },
        }
    }
}

impl Default for SimSettings {
    fn default() -> Self {
        Self::from_config(&SimConfig::default())
    }
}

/// The robot's state in the world.
#[derive(Debug, Clone)]
pub struct RobotState {
    /// Where the base truly is.
    pub base: Pose2D,
    /// Where the robot believes it is, less where it is (x, y, heading): what every
    /// pose the robot reports carries. Zero until the first drive.
    pub localization_error: Pose2D,
    /// Arm joints, in the model's order.
    pub q: Vec<f64>,
    /// Finger gap, metres.
    pub opening: Real,
    pub grip: Option<Grip>,
}

/// World, robot and simulated time.
#[derive(Debug)]
pub struct SimState {
    pub world: World,
    pub robot: RobotState,
    /// Simulated seconds since start.
    pub time: f64,
    /// Every tool goal requested, map frame (for `attempted` predicates).
    pub tool_goals: Vec<Point3>,
    /// Motion commands that reached the robot: arm, gripper and base goals, counted
    /// before any check (what an e-stop test needs to be zero).
    pub motion_commands: u64,
    /// Object centres at the start (for `moved` predicates).
    pub start_centres: Vec<Point3>,
    /// What motions did, in order.
    pub events: Vec<Event>,
    /// Collision objects clients added (see [`crate::scene`]).
    pub planning_scene: PlanningScene,
    /// The world after each motion, once [`SimRobot::keep_history`] asked for it.
    pub history: Option<WorldHistory>,
    /// The building's other storeys, when the world is one storey of a building.
    pub storeys: Option<Storeys>,
    rng: ChaCha8Rng,
    /// Draws of the localisation error, apart from `rng` so that they change nothing
    /// else.
    localization_rng: ChaCha8Rng,
    frames: u64,
}

impl RobotState {
    /// Where the robot believes its base is.
    pub fn believed_base(&self) -> Pose2D {
        let e = &self.localization_error;
        Pose2D::new(
            self.base.x + e.x,
            self.base.y + e.y,
            wrap(self.base.theta + e.theta),
        )
    }
}

impl SimState {
    /// A fresh localisation error of standard deviation `std` (per axis, heading).
    fn draw_localization_error(&mut self, std: (Real, Real)) -> Pose2D {
        let (xy, yaw) = std;
        if xy <= 0.0 && yaw <= 0.0 {
            return Pose2D::new(0.0, 0.0, 0.0);
        }
        let mut normal = || {
            // Box-Muller on two uniform draws in (0, 1]
            let u1: f64 = 1.0 - self.localization_rng.random::<f64>();
            let u2: f64 = self.localization_rng.random::<f64>();
            ((-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()) as Real
        };
        let (dx, dy, dt) = (normal(), normal(), normal());
        Pose2D::new(dx * xy, dy * xy, dt * yaw)
    }

    pub fn held(&self) -> Option<ObjectIdx> {
        self.robot.grip.as_ref().and_then(Grip::carries)
    }

    /// Keeps the world as it is now in the history, when one is kept.
    fn mark(&mut self) {
        if self.history.is_none() {
            return;
        }
        let mark = WorldMark {
            time: self.time,
            world: self.world.clone(),
            held: self.held(),
            held_part: self.robot.grip.as_ref().and_then(Grip::part),
        };
        if let Some(h) = &mut self.history {
            h.push(mark);
        }
    }

    pub fn view(&self) -> RobotView<'_> {
        RobotView {
            base: self.robot.base,
            held: self.held(),
            held_part: self.robot.grip.as_ref().and_then(Grip::part),
            tool_goals: &self.tool_goals,
            start_centres: &self.start_centres,
        }
    }
}

/// The odometry frame (REP 105).
pub const ODOM_FRAME: &str = "odom";

/// The robot's TF edges: those that move (`/tf`) and the fixed joints (`/tf_static`).
#[derive(Debug, Clone, Default)]
pub struct RobotFrames {
    pub moving: Vec<Transform>,
    pub fixed: Vec<Transform>,
}

/// A cloneable handle on one simulation.
#[derive(Clone)]
pub struct SimRobot {
    state: Arc<Mutex<SimState>>,
    model: Arc<dyn RobotModel>,
    planner: Arc<MotionPlanner>,
    settings: Arc<SimSettings>,
    /// Where the odometry frame starts: the base's start pose.
    odom_origin: Pose2D,
    fingers: FingerGeometry,
    arm_busy: Arc<tokio::sync::Mutex<()>>,
    base_busy: Arc<tokio::sync::Mutex<()>>,
    /// Told of every rendered frame (the simulation's model stand-ins keep them).
    frame_tap: Arc<Mutex<Option<FrameTap>>>,
}

/// Called with every frame the simulation renders, after rendering.
pub type FrameTap = Arc<dyn Fn(&RgbdFrame) + Send + Sync>;

impl std::fmt::Debug for SimRobot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimRobot")
            .field("model", &self.model.name())
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

fn footprint_radius(model: &dyn RobotModel) -> Real {
    model
        .footprint()
        .iter()
        .map(|p| (p[0] * p[0] + p[1] * p[1]).sqrt() as Real)
        .fold(0.0, Real::max)
}

impl SimRobot {
    /// A simulation of `model` in `world`, the base at `base`, the arm at its `home`
    /// configuration, the gripper open.
    pub fn new(
        world: World,
        model: Arc<dyn RobotModel>,
        mut settings: SimSettings,
        base: Pose2D,
    ) -> Result<Self, SimError> {
        if settings.grid.footprint_radius <= 0.0 {
            settings.grid.footprint_radius = footprint_radius(model.as_ref()).max(0.05);
            settings.grid.footprint = model
                .footprint()
                .iter()
                .map(|p| [p[0] as Real, p[1] as Real])
                .collect();
        }
        let g = model.gripper();
        let f = &g.finger;
        let fingers = FingerGeometry {
            max_opening: g.max_gap as Real,
            pad_length: f.length as Real,
            pad_width: f.width as Real,
            thickness: f.thickness as Real,
            tip_z: f.tip_z as Real,
        };
        settings.effects.tip_z = fingers.tip_z;
        let q = model
            .named_configuration("home")
            .unwrap_or_else(|| vec![0.0; model.dof()]);
        let start_centres = world.objects.iter().map(|o| o.centroid()).collect();
        let state = SimState {
            world,
            robot: RobotState {
                base,
                localization_error: Pose2D::new(0.0, 0.0, 0.0),
                q,
                opening: fingers.max_opening,
                grip: None,
            },
            time: 0.0,
            tool_goals: Vec::new(),
            motion_commands: 0,
            start_centres,
            events: Vec::new(),
            planning_scene: PlanningScene::default(),
            history: None,
            storeys: None,
            rng: effects::effect_rng(settings.seed),
            localization_rng: ChaCha8Rng::seed_from_u64(settings.seed ^ 0x10ca_112e),
            frames: 0,
        };
        let planner = MotionPlanner::new(settings.planner.clone());
        Ok(Self {
            state: Arc::new(Mutex::new(state)),
            model,
            planner: Arc::new(planner),
            settings: Arc::new(settings),
            odom_origin: base,
            fingers,
            arm_busy: Arc::new(tokio::sync::Mutex::new(())),
            frame_tap: Arc::new(Mutex::new(None)),
            base_busy: Arc::new(tokio::sync::Mutex::new(())),
        })
    }

    /// The simulation a [`SimConfig`] describes, world path relative to `config_dir`.
    pub fn from_config(
        cfg: &SimConfig,
        config_dir: &Path,
        model: Arc<dyn RobotModel>,
    ) -> Result<Self, SimError> {
        let file = config_dir.join(&cfg.world);
        let base = Pose2D::new(
            cfg.start_pose[0],
            cfg.start_pose[1],
            cfg.start_pose[2].to_radians(),
        );
        match load_site(&file)? {
            Site::World(world) => Self::new(world, model, SimSettings::from_config(cfg), base),
            Site::Building { index, worlds } => {
                let (storeys, world) = Storeys::new(index, worlds, cfg.start_storey, &file)?;
                let robot = Self::new(world, model, SimSettings::from_config(cfg), base)?;
                robot.lock().storeys = Some(storeys);
                Ok(robot)
            }
        }
    }

    /// The storey the robot is on and its floor's height above the ground floor's
    /// (`None` outside a building).
    pub fn storey(&self) -> Option<(usize, Real)> {
        self.lock()
            .storeys
            .as_ref()
            .map(|s| (s.current, s.height_m()))
    }

    /// Rides the building's elevator to storey `to` (see [`crate::storeys`]): refused
    /// unless the base stands at the elevator's spot, the storey exists and the gripper
    /// holds nothing fixed in place. Takes `doors_s + travel_s_per_floor · |Δstorey|`
    /// of simulated time; `cancel` stops it only while the doors close (the first
    /// half of `doors_s`). The base comes out at the same spot of storey `to`, facing as
    /// it did, with what the gripper carries; localisation starts afresh on the new
    /// storey's map. `progress` is told each stage.
    pub async fn ride_elevator(
        &self,
        to: usize,
        cancel: &CancellationToken,
        progress: &(dyn Fn(&str, usize) + Send + Sync),
    ) -> Result<(usize, Real), RideError> {
        self.lock().motion_commands += 1;
        let _busy = self.base_busy.lock().await;
        let (from, seconds, closing) = {
            let s = self.lock();
            let storeys = s.storeys.as_ref().ok_or(RideError::NotInBuilding)?;
            let base = s.robot.believed_base();
            storeys.check_ride([base.x, base.y], to)?;
            if matches!(
                s.robot.grip,
                Some(Grip::Mounted { .. } | Grip::Link { .. } | Grip::Fixed { .. })
            ) {
                return Err(RideRefused::HoldsFixed.into());
            }
            let seconds = storeys.index.elevator_time_s(storeys.current, to);
            let closing = seconds.min(storeys.index.elevator.doors_s / 2.0);
            (storeys.current, seconds, f64::from(closing))
        };
        let period = f64::from(self.settings.control_period_s.max(1e-3));
        progress("doors closing", from);
        let (mut t, mut step) = (0.0, 0usize);
        let mut travelling = false;
        while t < f64::from(seconds) {
            if t < closing && cancel.is_cancelled() {
                self.lock().mark();
                return Err(RideError::Cancelled { storey: from });
            }
            if !travelling && t >= closing {
                travelling = true;
                progress("travelling", from);
            }
            let dt = period.min(f64::from(seconds) - t);
            self.lock().time += dt;
            t += dt;
            step += 1;
            self.pace(dt, step).await;
        }
        let arrived = {
            let mut s = self.lock();
            let st = &mut *s;
            let carried = st.held();
            let storeys = st.storeys.as_mut().ok_or(RideError::NotInBuilding)?;
            let moved = storeys.switch(&mut st.world, to, carried);
            if let (Some(Grip::Object { object, .. }), Some(j)) = (st.robot.grip.as_mut(), moved) {
                *object = j;
            }
            let [x, y] = storeys.elevator_xy();
            let height = storeys.height_m();
            let error = st.draw_localization_error(self.settings.localization_std);
            let at = Pose2D::new(x - error.x, y - error.y, st.robot.base.theta);
            st.robot.base = at;
            st.robot.localization_error = error;
            st.mark();
            (to, height)
        };
        progress("arrived", to);
        Ok(arrived)
    }

    /// A simulation set up as `scenario` starts.
    pub fn for_scenario(
        scenario: &Scenario,
        model: Arc<dyn RobotModel>,
        settings: SimSettings,
    ) -> Result<Self, SimError> {
        let robot = Self::new(
            scenario.world.clone(),
            model.clone(),
            settings,
            scenario.spec.robot.base_pose(),
        )?;
        let q = model
            .named_configuration(&scenario.spec.robot.arm)
            .ok_or_else(|| {
                SimError::invalid(
                    &scenario.file,
                    "robot.arm",
                    format!(
                        "unknown named configuration {:?}; the model knows {:?}",
                        scenario.spec.robot.arm,
                        model.named_configurations()
                    ),
                )
            })?;
        robot.lock().robot.q = q;
        if let Some(b) = &scenario.building {
            // the start storey's world is the scenario's own (the same edits)
            let (storeys, _) = Storeys::new(
                b.index.clone(),
                b.worlds.clone(),
                scenario.spec.robot.storey,
                &scenario.file,
            )?;
            robot.lock().storeys = Some(storeys);
        }
        Ok(robot)
    }

    fn lock(&self) -> MutexGuard<'_, SimState> {
        // a panic while holding the lock cannot leave the state half-written in a way
        // that matters more than losing the simulation; keep going with it
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `f` on the current state (read access for the sim node, tests, evaluation).
    pub fn with_state<T>(&self, f: impl FnOnce(&SimState) -> T) -> T {
        f(&self.lock())
    }

    /// Keeps the world after every motion from now on, the last `capacity` of them (an
    /// evaluation's judge reads them with [`Self::world_at`]); marks the world now.
    pub fn keep_history(&self, capacity: usize) {
        let mut s = self.lock();
        s.history = Some(WorldHistory::new(capacity));
        s.mark();
    }

    /// The world at simulated `time`, when the history is kept and reaches back to it.
    pub fn world_at(&self, time: f64) -> Option<WorldMark> {
        self.lock().history.as_ref()?.at(time).cloned()
    }

    /// Runs `f` with write access: scenario set-up and tests only; robot actions go
    /// through the trait implementations.
    pub fn with_state_mut<T>(&self, f: impl FnOnce(&mut SimState) -> T) -> T {
        f(&mut self.lock())
    }

    /// Adds or replaces a collision object of the planning scene (MoveIt's
    /// `ApplyPlanningScene`): points in the map frame.
    pub fn apply_collision_object(&self, id: &str, points: &[Point3]) {
        let mut s = self.lock();
        let s = &mut *s;
        s.planning_scene.apply(&s.world, id, points);
    }

    /// Removes a collision object; `false` when there was none.
    pub fn remove_collision_object(&self, id: &str) -> bool {
        self.lock().planning_scene.remove(id)
    }

    /// The world objects `names` stand for (world names, or collision-object ids).
    pub fn resolve_scene_names(&self, names: &[String]) -> Vec<String> {
        let s = self.lock();
        s.planning_scene.resolve(&s.world, names)
    }

    pub fn model(&self) -> &Arc<dyn RobotModel> {
        &self.model
    }

    pub fn settings(&self) -> &SimSettings {
        &self.settings
    }

    pub fn fingers(&self) -> &FingerGeometry {
        &self.fingers
    }

    pub fn sim_time(&self) -> f64 {
        self.lock().time
    }

    /// Evaluates a predicate on the current state.
    pub fn holds(&self, p: &Predicate) -> bool {
        let s = self.lock();
        p.eval(&s.world, &s.view())
    }

    /// The scenario's score on the current state.
    pub fn score(&self, scenario: &Scenario) -> Real {
        let s = self.lock();
        scenario.score(&s.world, &s.view())
    }

    /// `map → link_base`.
    fn arm_base_in_map(&self, base: &Pose2D) -> Isometry3 {
        base.to_isometry() * self.model.mount()
    }

    /// Tool pose in the map for a base pose and joints.
    fn tool_in_map(&self, base: &Pose2D, q: &[f64]) -> Isometry3 {
        self.arm_base_in_map(base) * self.model.tool_pose(q)
    }

    /// The occupancy grid `/map` publishes (fixed and loose objects in the base's height
    /// band; the carried object excluded).
    pub fn occupancy_grid(&self) -> Result<OccupancyGrid, SimError> {
        Ok(self.nav_map()?.grid)
    }

    fn nav_map(&self) -> Result<NavMap, SimError> {
        let s = self.lock();
        let held = s.held();
        NavMap::build(&s.world, &self.settings.grid, |o| Some(o) == held)
    }

    /// The robot's frames as its own stack publishes them (REP 105 and
    /// robot_state_publisher): `map → odom` (localisation; odom's origin is where the base
    /// started), `odom → base` (odometry) and every joint of the description, parent link
    /// to child link. Object poses are ground truth and never leave the simulator.
    pub fn robot_frames(&self) -> RobotFrames {
        let s = self.lock();
        let base = self.model.base_frame();
        let odom_t_base =
            self.odom_origin.to_isometry().inverse() * s.robot.believed_base().to_isometry();
        let mut frames = RobotFrames {
            moving: vec![
                Transform::new(FrameId::map(), ODOM_FRAME, self.odom_origin.to_isometry()),
                Transform::new(ODOM_FRAME, base, odom_t_base),
            ],
            fixed: Vec::new(),
        };
        // in a building, the storey's map sits at its floor's height
        if let Some(storeys) = &s.storeys {
            frames.moving.push(Transform::new(
                BUILDING_FRAME,
                FrameId::map(),
                storeys.map_in_building(),
            ));
        }
        for j in self
            .model
            .joint_frames(&s.robot.q, f64::from(s.robot.opening))
        {
            let tf = Transform::new(j.parent.as_str(), j.child.as_str(), j.pose);
            if j.fixed {
                frames.fixed.push(tf);
            } else {
                frames.moving.push(tf);
            }
        }
        frames
    }

    /// Joint names and positions: the arm joints, then the finger joints.
    pub fn joint_states(&self) -> (Vec<String>, Vec<f64>) {
        let s = self.lock();
        let mut names: Vec<String> = self.model.joints().iter().map(|j| j.name.clone()).collect();
        let mut values = s.robot.q.clone();
        let g = self.model.gripper();
        for j in &g.finger_joints {
            names.push(j.clone());
            values.push(g.joint_for_gap(f64::from(s.robot.opening)));
        }
        (names, values)
    }

    /// Camera names this robot has.
    pub fn cameras(&self) -> Vec<String> {
        self.settings.cameras.keys().cloned().collect()
    }

    /// The intrinsics every camera renders with.
    pub fn intrinsics(&self) -> CameraIntrinsics {
        CameraIntrinsics::from_hfov(
            self.settings.width,
            self.settings.height,
            self.settings.hfov_deg.to_radians(),
        )
    }

    /// The robot's links as render items (instance 0).
    fn robot_items(&self, s: &SimState) -> Vec<RenderItem> {
        let arm_base = self.arm_base_in_map(&s.robot.base);
        self.model
            .collision_shapes_with_gap(&s.robot.q, f64::from(s.robot.opening))
            .into_iter()
            .filter_map(|ls| {
                prim_of(&ls.shape).map(|prim| RenderItem {
                    prim,
                    pose: arm_base * ls.pose,
                    color: [70, 72, 80],
                    instance: 0,
                    part: 0,
                })
            })
            .collect()
    }

    /// Sets (or, with `None`, removes) the tap every rendered frame is shown to; clones
    /// of this simulation share it.
    pub fn set_frame_tap(&self, tap: Option<FrameTap>) {
        *self.frame_tap.lock().unwrap_or_else(|p| p.into_inner()) = tap;
    }

    /// Renders camera `name` now.
    pub fn render(&self, name: &str) -> Result<RgbdFrame, RobotError> {
        let frame = self.render_untapped(name)?;
        let tap = self
            .frame_tap
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        if let Some(tap) = tap {
            tap(&frame);
        }
        Ok(frame)
    }

    fn render_untapped(&self, name: &str) -> Result<RgbdFrame, RobotError> {
        let frame = self
            .settings
            .cameras
            .get(name)
            .ok_or_else(|| RobotError::UnknownCamera(name.to_owned()))?
            .clone();
        let mut s = self.lock();
        let link = self
            .model
            .link_pose(&s.robot.q, &frame)
            .ok_or_else(|| RobotError::UnknownFrame(frame.clone()))?;
        let pose = self.arm_base_in_map(&s.robot.base) * link;
        // rendered from where the camera is, reported where the robot believes it is
        let believed = self.arm_base_in_map(&s.robot.believed_base()) * link;
        let mut items = render::world_items(&s.world);
        items.extend(self.robot_items(&s));
        s.frames += 1;
        let seed = self.settings.seed ^ s.frames.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let view = CameraView {
            intrinsics: self.intrinsics(),
            pose,
            frame: FrameId::new(frame),
        };
        let mut frame = render::render(
            &s.world,
            &items,
            &view,
            &self.settings.noise,
            1.0,
            s.time,
            seed,
        );
        frame.camera_pose.iso = believed;
        Ok(frame)
    }

    async fn pace(&self, dt: f64, step: usize) {
        let rtf = self.settings.real_time_factor;
        if rtf > 0.0 {
            tokio::time::sleep(std::time::Duration::from_secs_f64(dt / rtf)).await;
        } else if step.is_multiple_of(16) {
            tokio::task::yield_now().await;
        }
    }

    /// `goal.target` in the arm base frame, or the code MoveIt would give.
    fn goal_in_arm_base(&self, goal: &PoseGoal, base: &Pose2D) -> Result<Isometry3, MotionOutcome> {
        let f = goal.frame.as_str();
        if f == "map" {
            Ok(self.arm_base_in_map(base).inverse() * goal.target)
        } else if f == self.model.base_frame() {
            Ok(self.model.mount().inverse() * goal.target)
        } else if f == self.model.arm_base_frame() {
            Ok(goal.target)
        } else {
            Err(MotionOutcome::failure(
                MoveItErrorCode::FrameTransformFailure,
                format!(
                    "cannot transform goal frame {f:?}: known frames are map, {}, {}",
                    self.model.base_frame(),
                    self.model.arm_base_frame()
                ),
            ))
        }
    }

    async fn execute(
        &self,
        trajectory: &JointTrajectory,
        cancel: &CancellationToken,
    ) -> Result<(), MotionOutcome> {
        let duration = trajectory.duration();
        let points = &trajectory.points;
        let mut travel = 0.0f64;
        for w in points.windows(2) {
            let d = w[0]
                .positions
                .iter()
                .zip(&w[1].positions)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f64::max);
            travel += d;
        }
        let steps = ((travel / self.settings.joint_step).ceil() as usize)
            .max((duration / 0.05).ceil() as usize)
            .max(1);
        let dt = duration / steps as f64;
        for k in 1..=steps {
            if cancel.is_cancelled() {
                return Err(MotionOutcome::failure(
                    MoveItErrorCode::Preempted,
                    "motion cancelled; the arm stopped where it was",
                ));
            }
            let q = trajectory.sample(dt * k as f64);
            {
                let mut s = self.lock();
                let from = self.tool_in_map(&s.robot.base, &s.robot.q);
                let to = self.tool_in_map(&s.robot.base, &q);
                s.robot.q = q;
                let st = &mut *s;
                let events = effects::step_tool(
                    &mut st.world,
                    &mut st.robot.grip,
                    &from,
                    &to,
                    st.robot.opening,
                    &self.settings.effects,
                );
                st.events.extend(events);
                st.time += dt;
            }
            self.pace(dt, k).await;
        }
        Ok(())
    }

    async fn plan_and_execute(
        &self,
        goal_in_arm_base: Option<Isometry3>,
        joints: Option<Vec<f64>>,
        mut request: PlanRequest,
        cancel: &CancellationToken,
    ) -> MotionOutcome {
        let _busy = self.arm_busy.lock().await;
        let (world, base, q, grip, opening) = {
            let s = self.lock();
            // allowed contacts may name collision objects of the planning scene
            request.allowed_contacts = s
                .planning_scene
                .resolve(&s.world, &request.allowed_contacts);
            (
                s.world.clone(),
                s.robot.base,
                s.robot.q.clone(),
                s.robot.grip.clone(),
                s.robot.opening,
            )
        };
        let model = self.model.clone();
        let planner = self.planner.clone();
        let arm_base = self.arm_base_in_map(&base);
        let tool = arm_base * model.tool_pose(&q);
        let held = grip.as_ref().and_then(Grip::carries);
        request.attached = held.map(|h| attached_object(&world, h, &tool));
        request.finger_gap = Some(f64::from(opening));
        request.cancel = Some(cancel.clone());
        // a grip on a handle or a plug: the fingers touch what they hold
        if let Some(g) = &grip {
            let name = world.objects[g.object()].name.clone();
            if !request.allowed_contacts.contains(&name) {
                request.allowed_contacts.push(name);
            }
        }
        let result = tokio::task::spawn_blocking(move || {
            let scene = SceneCollision {
                world: &world,
                arm_base,
                skip: held,
            };
            match (goal_in_arm_base, joints) {
                (Some(goal), _) => planner.plan(model.as_ref(), &scene, &q, &goal, &request),
                (None, Some(j)) => {
                    planner.plan_to_configuration(model.as_ref(), &scene, &q, &j, &request)
                }
                (None, None) => {
                    planner.plan_to_configuration(model.as_ref(), &scene, &q, &q, &request)
                }
            }
        })
        .await;
        let trajectory = match result {
            Ok(Ok(t)) => t,
            Ok(Err(e)) => return MotionOutcome::failure(e.code, e.message),
            Err(join) => {
                return MotionOutcome::failure(
                    MoveItErrorCode::Crash,
                    format!("planner crashed: {join}"),
                );
            }
        };
        let planning_time = trajectory.planning_time_s;
        let executed = self.execute(&trajectory, cancel).await;
        self.lock().mark();
        match executed {
            Ok(()) => MotionOutcome::success(planning_time),
            Err(out) => out,
        }
    }
}

/// The carried object as MoveIt's attached collision object.
fn attached_object(world: &World, object: ObjectIdx, tool_in_map: &Isometry3) -> AttachedObject {
    let o = &world.objects[object];
    let parts: Vec<(Isometry3, SharedShape)> = o
        .geoms
        .iter()
        .map(|g| (o.pose.inverse() * o.geom_pose(g), shared_of(&g.prim)))
        .collect();
    AttachedObject {
        name: o.name.clone(),
        shape: SharedShape::compound(parts),
        tool_from_object: tool_in_map.inverse() * o.pose,
    }
}

fn shared_of(p: &Prim) -> SharedShape {
    match p {
        Prim::Cuboid(c) => SharedShape::new(*c),
        Prim::Cylinder(c) => SharedShape::new(*c),
        Prim::Ball(b) => SharedShape::new(*b),
        Prim::Capsule(c) => SharedShape::new(*c),
        Prim::Mesh(m) => SharedShape::new(m.as_ref().clone()),
    }
}

fn prim_of(s: &SharedShape) -> Option<Prim> {
    match s.as_typed_shape() {
        TypedShape::Cuboid(c) => Some(Prim::Cuboid(*c)),
        TypedShape::Cylinder(c) => Some(Prim::Cylinder(*c)),
        TypedShape::Ball(b) => Some(Prim::Ball(*b)),
        TypedShape::Capsule(c) => Some(Prim::Capsule(*c)),
        TypedShape::TriMesh(m) => Some(Prim::Mesh(Arc::new(m.clone()))),
        _ => None,
    }
}

/// The world as the planner's collision scene: every object's geometry (except the
/// carried one, which the planner gets as attached shapes) and the floor, in the map;
/// robot shapes arrive in the arm base frame.
struct SceneCollision<'a> {
    world: &'a World,
    arm_base: Isometry3,
    skip: Option<ObjectIdx>,
}

/// Penetration tolerated between resting contacts (a held object on its support).
const CONTACT_TOLERANCE: Real = 0.002;

impl CollisionWorld for SceneCollision<'_> {
    fn first_collision(&self, shapes: &[LinkShape], allowed: &[String]) -> Option<Collision> {
        for s in shapes {
            let pose = self.arm_base * s.pose;
            let aabb = s.shape.compute_aabb(&pose);
            if self.world.floor.is_some()
                && aabb.mins.z < -CONTACT_TOLERANCE
                && !allowed.iter().any(|a| a == "floor")
            {
                return Some(Collision {
                    link: s.link.clone(),
                    object: "floor".into(),
                });
            }
            for (oi, o) in self.world.objects.iter().enumerate() {
                if Some(oi) == self.skip || o.name == s.link || allowed.iter().any(|a| a == &o.name)
                {
                    continue;
                }
                if !o.aabb().intersects(&aabb) {
                    continue;
                }
                for g in &o.geoms {
                    let gp = o.geom_pose(g);
                    if !g.prim.aabb(&gp).intersects(&aabb) {
                        continue;
                    }
                    let hit = match parry3d::query::contact(
                        &pose,
                        s.shape.as_ref(),
                        &gp,
                        g.prim.shape(),
                        0.0,
                    ) {
                        Ok(Some(c)) => c.dist < -CONTACT_TOLERANCE,
                        Ok(None) => false,
                        Err(_) => parry3d::query::intersection_test(
                            &pose,
                            s.shape.as_ref(),
                            &gp,
                            g.prim.shape(),
                        )
                        .unwrap_or(true),
                    };
                    if hit {
                        return Some(Collision {
                            link: s.link.clone(),
                            object: o.name.clone(),
                        });
                    }
                }
            }
        }
        None
    }
}

fn check_goal(goal: &PoseGoal) -> Result<(), MotionOutcome> {
    let finite = goal.target.translation.vector.iter().all(|v| v.is_finite())
        && goal.target.rotation.coords.iter().all(|v| v.is_finite());
    let ok = finite
        && goal.position_tolerance.is_finite()
        && goal.position_tolerance > 0.0
        && goal.orientation_tolerance.is_finite()
        && goal.orientation_tolerance > 0.0
        && goal.velocity_scaling > 0.0
        && goal.velocity_scaling <= 1.0
        && goal.acceleration_scaling > 0.0
        && goal.acceleration_scaling <= 1.0;
    if ok {
        Ok(())
    } else {
        Err(MotionOutcome::failure(
            MoveItErrorCode::InvalidGoalConstraints,
            format!(
                "invalid goal: target must be finite, tolerances positive and scalings in (0, 1]; got tolerances {}/{} scalings {}/{}",
                goal.position_tolerance,
                goal.orientation_tolerance,
                goal.velocity_scaling,
                goal.acceleration_scaling
            ),
        ))
    }
}

#[async_trait]
impl ArmMotion for SimRobot {
    async fn move_to_pose(&self, goal: &PoseGoal, cancel: &CancellationToken) -> MotionOutcome {
        self.lock().motion_commands += 1;
        if let Err(out) = check_goal(goal) {
            return out;
        }
        let (base, believed) = {
            let s = self.lock();
            (s.robot.base, s.robot.believed_base())
        };
        // a goal in `map` is where the robot believes it is: the arm moves relative to
        // the base it is on
        let target = match self.goal_in_arm_base(goal, &believed) {
            Ok(t) => t,
            Err(out) => return out,
        };
        let in_map = self.arm_base_in_map(&base) * target;
        self.lock()
            .tool_goals
            .push(Point3::from(in_map.translation.vector));
        let request = PlanRequest::from_goal(goal);
        self.plan_and_execute(Some(target), None, request, cancel)
            .await
    }

    async fn move_to_named(&self, name: &str, cancel: &CancellationToken) -> MotionOutcome {
        self.lock().motion_commands += 1;
        let Some(joints) = self.model.named_configuration(name) else {
            return MotionOutcome::failure(
                MoveItErrorCode::InvalidGoalConstraints,
                format!(
                    "unknown named configuration {name:?}; known: {:?}",
                    self.model.named_configurations()
                ),
            );
        };
        self.plan_and_execute(None, Some(joints), PlanRequest::default(), cancel)
            .await
    }

    async fn tool_pose(&self, frame: &FrameId) -> Result<Isometry3, RobotError> {
        let s = self.lock();
        let in_arm = self.model.tool_pose(&s.robot.q);
        let f = frame.as_str();
        if f == "map" {
            Ok(self.arm_base_in_map(&s.robot.believed_base()) * in_arm)
        } else if f == self.model.base_frame() {
            Ok(self.model.mount() * in_arm)
        } else if f == self.model.arm_base_frame() {
            Ok(in_arm)
        } else {
            Err(RobotError::UnknownFrame(f.to_owned()))
        }
    }
}

#[async_trait]
impl Gripper for SimRobot {
    async fn command(
        &self,
        goal: GripperGoal,
        cancel: &CancellationToken,
    ) -> Result<GripperOutcome, RobotError> {
        self.lock().motion_commands += 1;
        let g = self.model.gripper();
        let (lo, hi) = (g.min_gap as Real, g.max_gap as Real);
        if !(goal.position.is_finite() && goal.position >= lo - 1e-6 && goal.position <= hi + 1e-6)
        {
            return Err(RobotError::Rejected(format!(
                "gripper position {} m is outside [{lo}, {hi}] m",
                goal.position
            )));
        }
        if !(goal.max_effort.is_finite()
            && goal.max_effort >= 0.0
            && f64::from(goal.max_effort) <= g.max_effort)
        {
            return Err(RobotError::Rejected(format!(
                "gripper effort {} N is outside [0, {}] N",
                goal.max_effort, g.max_effort
            )));
        }
        if cancel.is_cancelled() {
            return Err(RobotError::Cancelled);
        }
        let target = goal.position.clamp(lo, hi);
        let (outcome, dt) = {
            let mut s = self.lock();
            let st = &mut *s;
            let start = st.robot.opening;
            if target < start - 1e-6 {
                if let Some(grip) = &st.robot.grip {
                    let _ = grip;
                    (
                        GripperOutcome {
                            position: start,
                            effort: goal.max_effort,
                            stalled: true,
                            reached_goal: false,
                        },
                        0.0,
                    )
                } else {
                    let tool = self.tool_in_map(&st.robot.base, &st.robot.q);
                    let r = effects::close_gripper(
                        &mut st.world,
                        &tool,
                        start,
                        target,
                        &self.fingers,
                        &self.settings.effects,
                        &mut st.rng,
                    );
                    st.robot.opening = r.position;
                    st.robot.grip = r.grip;
                    let dt = f64::from((start - r.position).abs() / self.settings.gripper_speed);
                    (
                        GripperOutcome {
                            position: r.position,
                            effort: if r.stalled { goal.max_effort } else { 0.0 },
                            stalled: r.stalled,
                            reached_goal: !r.stalled,
                        },
                        dt,
                    )
                }
            } else {
                if let Some(grip) = st.robot.grip.take()
                    && let Some(obj) = grip.carries()
                {
                    effects::settle(&mut st.world, obj, &|_| false);
                }
                st.robot.opening = target;
                (
                    GripperOutcome {
                        position: target,
                        effort: 0.0,
                        stalled: false,
                        reached_goal: true,
                    },
                    f64::from((target - start).abs() / self.settings.gripper_speed),
                )
            }
        };
        {
            let mut s = self.lock();
            s.time += dt;
            s.mark();
        }
        self.pace(dt, 0).await;
        Ok(outcome)
    }
}

fn wrap(a: Real) -> Real {
    let t = (a + std::f32::consts::PI).rem_euclid(std::f32::consts::TAU);
    t - std::f32::consts::PI
}

#[async_trait]
impl BaseNavigation for SimRobot {
    async fn navigate_to(&self, goal: Pose2D, cancel: &CancellationToken) -> NavOutcome {
        self.lock().motion_commands += 1;
        let _busy = self.base_busy.lock().await;
        let (start, believed_start) = {
            let s = self.lock();
            (s.robot.base, s.robot.believed_base())
        };
        let abort = |code, msg: String, at: Pose2D| NavOutcome {
            status: TerminalStatus::Aborted,
            error_code: code,
            error_msg: msg,
            final_pose: at,
        };
        if !(goal.x.is_finite() && goal.y.is_finite() && goal.theta.is_finite()) {
            return abort(
                NavErrorCode::GoalOutsideMap,
                format!("goal {goal:?} is not finite"),
                believed_start,
            );
        }
        let map = match self.nav_map() {
            Ok(m) => m,
            Err(e) => {
                return abort(NavErrorCode::PlannerUnknown, e.to_string(), believed_start);
            }
        };
        // the drive ends where the robot believes `goal` is, under the localisation it
        // will have there (a fresh error, as AMCL leaves it after moving)
        let (goal_true, error) = {
            let mut s = self.lock();
            let error = s.draw_localization_error(self.settings.localization_std);
            let goal_true = Pose2D::new(
                goal.x - error.x,
                goal.y - error.y,
                wrap(goal.theta - error.theta),
            );
            (goal_true, error)
        };
        let path = match map.plan(&start, &goal_true) {
            Ok(p) => p,
            Err(f) => return abort(f.code, f.message, believed_start),
        };
        self.lock().robot.localization_error = error;
        let period = self.settings.control_period_s;
        let v = self.settings.base_speed * period;
        let w = self.settings.base_turn_rate * period;
        let mut step = 0usize;
        // one motion primitive: turn to a heading, or drive towards a point
        let mut waypoints: Vec<(Option<(Real, Real)>, Option<Real>)> = Vec::new();
        for win in path.windows(2) {
            let (a, b) = (win[0], win[1]);
            if ((b.0 - a.0).powi(2) + (b.1 - a.1).powi(2)).sqrt() < 1e-4 {
                continue;
            }
            waypoints.push((None, Some((b.1 - a.1).atan2(b.0 - a.0))));
            waypoints.push((Some(b), None));
        }
        waypoints.push((None, Some(goal_true.theta)));
        for (point, heading) in waypoints {
            loop {
                if cancel.is_cancelled() {
                    let at = {
                        let mut s = self.lock();
                        s.mark();
                        s.robot.believed_base()
                    };
                    return NavOutcome {
                        status: TerminalStatus::Canceled,
                        error_code: NavErrorCode::None,
                        error_msg: "navigation cancelled; the base stopped".into(),
                        final_pose: at,
                    };
                }
                let done = {
                    let mut s = self.lock();
                    let st = &mut *s;
                    let mut pose = st.robot.base;
                    let done = if let Some(h) = heading {
                        let d = wrap(h - pose.theta);
                        if d.abs() <= w {
                            pose.theta = h;
                            true
                        } else {
                            pose.theta = wrap(pose.theta + w * d.signum());
                            false
                        }
                    } else if let Some((x, y)) = point {
                        let (dx, dy) = (x - pose.x, y - pose.y);
                        let dist = (dx * dx + dy * dy).sqrt();
                        if dist <= v {
                            pose.x = x;
                            pose.y = y;
                            true
                        } else {
                            pose.x += dx / dist * v;
                            pose.y += dy / dist * v;
                            false
                        }
                    } else {
                        true
                    };
                    let from = self.tool_in_map(&st.robot.base, &st.robot.q);
                    st.robot.base = pose;
                    let to = self.tool_in_map(&pose, &st.robot.q);
                    let events = effects::step_tool(
                        &mut st.world,
                        &mut st.robot.grip,
                        &from,
                        &to,
                        st.robot.opening,
                        &self.settings.effects,
                    );
                    st.events.extend(events);
                    st.time += f64::from(period);
                    done
                };
                step += 1;
                self.pace(f64::from(period), step).await;
                if done {
                    break;
                }
            }
        }
        let at = {
            let mut s = self.lock();
            s.mark();
            s.robot.believed_base()
        };
        NavOutcome {
            status: TerminalStatus::Succeeded,
            error_code: NavErrorCode::None,
            error_msg: String::new(),
            final_pose: at,
        }
    }

    async fn base_pose(&self) -> Result<Pose2D, RobotError> {
        Ok(self.lock().robot.believed_base())
    }

    async fn map_in(&self, frame: &FrameId) -> Option<Isometry3> {
        let s = self.lock();
        let storeys = s.storeys.as_ref()?;
        (frame.as_str() == BUILDING_FRAME).then(|| storeys.map_in_building())
    }
}

#[async_trait]
impl asp_core::robot::Elevator for SimRobot {
    async fn ride(&self, storey: u32, cancel: &CancellationToken) -> Result<u32, String> {
        self.ride_elevator(storey as usize, cancel, &|_, _| {})
            .await
            .map(|(at, _)| at as u32)
            .map_err(|e| e.to_string())
    }
}

#[async_trait]
impl FrameSource for SimRobot {
    async fn capture(&self, camera: &str) -> Result<RgbdFrame, RobotError> {
        let me = self.clone();
        let camera = camera.to_owned();
        tokio::task::spawn_blocking(move || me.render(&camera))
            .await
            .map_err(|e| RobotError::Other(format!("renderer crashed: {e}")))?
    }
}
