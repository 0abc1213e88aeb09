//! Settings every node shares (`/**:` in the parameter files).

use std::path::{Path, PathBuf};

use asp_core::Skill;
use garde::Validate;
use serde::{Deserialize, Serialize};

/// Parameters under `/**: ros__parameters:`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Validate)]
#[serde(default, deny_unknown_fields)]
pub struct CommonConfig {
    #[garde(dive)]
    pub transport: TransportConfig,
    #[garde(dive)]
    pub frames: FramesConfig,
    #[garde(dive)]
    pub safety: SafetyConfig,
    #[garde(dive)]
    pub paths: PathsConfig,
    #[garde(dive)]
    pub cameras: CamerasConfig,
    #[garde(dive)]
    pub supervision: SupervisionConfig,
    /// Stamp with the simulation's time from `/clock` instead of the system clock (ROS
    /// 2's `use_sim_time`); `asp launch sim` and the sim launch file turn it on. Timeouts
    /// stay in wall time. Default false.
    #[garde(skip)]
    pub use_sim_time: bool,
}

/// Which DDS vendor's service mapping to speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RmwImplementation {
    /// Follow the `RMW_IMPLEMENTATION` environment variable (Fast DDS when unset), as
    /// every ROS 2 node does.
    FromEnvironment,
    /// `rmw_fastrtps_cpp`: Fast DDS request/reply headers.
    RmwFastrtpsCpp,
    /// `rmw_cyclonedds_cpp`: Cyclone DDS request/reply headers.
    RmwCycloneddsCpp,
}

/// How nodes talk to each other.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(default, deny_unknown_fields)]
pub struct TransportConfig {
    /// Service request/reply mapping. Default: `from_environment`.
    #[garde(skip)]
    pub rmw_implementation: RmwImplementation,
    /// DDS domain; `null` reads `ROS_DOMAIN_ID` (0 when unset). Range 0–232.
    #[garde(inner(range(max = 232)))]
    pub domain_id: Option<u16>,
    /// Seconds to wait for a service or action server to appear. Default 10.
    #[garde(range(min = 0.1, max = 600.0))]
    pub discovery_timeout_s: f64,
    /// Seconds to wait for a service reply or an action result before giving up on a
    /// node. Default 120 (a skill may take a while).
    #[garde(range(min = 0.1, max = 3600.0))]
    pub call_timeout_s: f64,
}

impl Default for TransportConfig {
    fn default() -> Self {
        Self {
            rmw_implementation: RmwImplementation::FromEnvironment,
            domain_id: None,
            discovery_timeout_s: 10.0,
            call_timeout_s: 120.0,
        }
    }
}

/// TF frame names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(default, deny_unknown_fields)]
pub struct FramesConfig {
    /// The fixed world frame maps are built in. Default `map`.
    #[garde(length(min = 1))]
    pub map: String,
    /// In a building of several storeys, the frame above every storey's map (z: height
    /// above the ground floor), published as `building → map` by whatever localises the
    /// robot on its storey (the simulator does). The building memory keeps what a tour
    /// saw in it when the recording has it, so that storeys stay apart. Default
    /// `building`.
    #[garde(length(min = 1))]
    pub building: String,
    /// The mobile base. Default `base_link`.
    #[garde(length(min = 1))]
    pub base: String,
    /// The arm's mounting frame, in which the workspace box is given. Default `link_base`
    /// (the xArm's base link).
    #[garde(length(min = 1))]
    pub arm_base: String,
    /// The tool centre point between the fingertips. Default `link_tcp`.
    #[garde(length(min = 1))]
    pub tool: String,
}

impl Default for FramesConfig {
    fn default() -> Self {
        Self {
            map: "map".into(),
            building: "building".into(),
            base: "base_link".into(),
            arm_base: "link_base".into(),
            tool: "link_tcp".into(),
        }
    }
}

/// Limits enforced in code before anything moves, by every node that can cause motion
/// (skill executor, verifier, go_to). The agent cannot change them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(default, deny_unknown_fields)]
pub struct SafetyConfig {
    /// Skills the executor may run; anything else is refused. Default: all nine.
    #[garde(length(min = 1))]
    pub allowed_skills: Vec<Skill>,
    /// End-effector targets must lie in this box, in `frames.arm_base`, metres.
    #[garde(dive)]
    pub workspace: WorkspaceBox,
    /// Largest MoveIt velocity scaling a skill may ask for, (0, 1]. Default 0.5.
    #[garde(range(min = 0.01, max = 1.0))]
    pub max_velocity_scaling: f64,
    /// Largest MoveIt acceleration scaling, (0, 1]. Default 0.5.
    #[garde(range(min = 0.01, max = 1.0))]
    pub max_acceleration_scaling: f64,
    /// Largest gripper effort in newtons. Default 40 (xArm gripper's rated range).
    #[garde(range(min = 1.0, max = 500.0))]
    pub max_gripper_effort: f64,
    /// Largest base speed in m/s. Default 0.5.
    #[garde(range(min = 0.01, max = 3.0))]
    pub max_base_speed: f64,
    /// Latched topic that stops every action server until reset. Default `/asp/estop`.
    #[garde(length(min = 1))]
    pub estop_topic: String,
    /// How long a node that moves the robot listens at start for an e-stop already
    /// latched on `estop_topic` before its first motion (DDS discovery of the button's
    /// publisher takes this long at most on a healthy network). Default 2 s.
    #[garde(range(min = 0.0, max = 30.0))]
    pub estop_settle_s: f64,
}

impl Default for SafetyConfig {
    fn default() -> Self {
        Self {
            allowed_skills: Skill::ALL.to_vec(),
            workspace: WorkspaceBox::default(),
            max_velocity_scaling: 0.5,
            max_acceleration_scaling: 0.5,
            max_gripper_effort: 40.0,
            max_base_speed: 0.5,
            estop_topic: "/asp/estop".into(),
            estop_settle_s: 2.0,
        }
    }
}

/// An axis-aligned box `[min, max]` per axis, metres.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(default, deny_unknown_fields)]
#[garde(allow_unvalidated)]
pub struct WorkspaceBox {
    #[garde(custom(finite_xyz))]
    pub min: [f64; 3],
    #[garde(custom(finite_xyz), custom(above(&self.min)))]
    pub max: [f64; 3],
}

impl WorkspaceBox {
    pub fn contains(&self, p: [f64; 3]) -> bool {
        (0..3).all(|i| p[i] >= self.min[i] && p[i] <= self.max[i])
    }
}

impl Default for WorkspaceBox {
    /// The xArm6 reaches about 0.7 m; this box keeps targets in front of and beside the
    /// arm, above the mounting plate's lower edge and below a raised hand.
    fn default() -> Self {
        Self {
            min: [-0.75, -0.75, -0.45],
            max: [0.75, 0.75, 0.9],
        }
    }
}

fn finite_xyz(v: &[f64; 3], _: &()) -> garde::Result {
    if v.iter().all(|x| x.is_finite()) {
        Ok(())
    } else {
        Err(garde::Error::new(
            "every coordinate must be a finite number",
        ))
    }
}

fn above(min: &[f64; 3]) -> impl FnOnce(&[f64; 3], &()) -> garde::Result + '_ {
    move |max, _| {
        if (0..3).all(|i| max[i] > min[i]) {
            Ok(())
        } else {
            Err(garde::Error::new(format!(
                "must exceed min {min:?} on every axis"
            )))
        }
    }
}

/// Where the robot's cameras publish, for the nodes that take frames (object_map_node)
/// and the simulator that stands in for them (sim_node). Camera `<name>` publishes its
/// colour image, registered depth and camera info under `<topic_prefix><name>/`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(default, deny_unknown_fields)]
pub struct CamerasConfig {
    /// Prefix of every camera's namespace. Default `/`.
    #[garde(length(min = 1))]
    pub topic_prefix: String,
    /// Colour image (rgb8/bgr8/rgba8/bgra8), relative to the camera's namespace. Default
    /// `color/image_raw`.
    #[garde(length(min = 1))]
    pub image_topic: String,
    /// Depth registered to the colour image (32FC1 metres or 16UC1 millimetres). Default
    /// `aligned_depth_to_color/image_raw`.
    #[garde(length(min = 1))]
    pub depth_topic: String,
    /// Camera info of the colour image. Default `color/camera_info`.
    #[garde(length(min = 1))]
    pub info_topic: String,
    /// Subscribe reliably; `false` subscribes best-effort (sensor-data QoS), which also
    /// matches drivers that publish best-effort. Default `true`.
    #[garde(skip)]
    pub reliable: bool,
    /// Simulation: ask the simulator to render each frame (`/sim/<name>/render`), which
    /// keeps runs deterministic; `false` takes the next frame the camera publishes.
    /// Default `true`.
    #[garde(skip)]
    pub sim_render: bool,
    /// Seconds to wait for a frame (and the TF at its stamp). Default 10.
    #[garde(range(min = 0.1, max = 600.0))]
    pub frame_timeout_s: f64,
    /// Without `sim_render`: colour and depth stamps pair within this, seconds. Default
    /// 0.02.
    #[garde(range(min = 0.0, max = 1.0))]
    pub max_sync_offset_s: f64,
}

impl Default for CamerasConfig {
    fn default() -> Self {
        Self {
            topic_prefix: "/".into(),
            image_topic: "color/image_raw".into(),
            depth_topic: "aligned_depth_to_color/image_raw".into(),
            info_topic: "color/camera_info".into(),
            reliable: true,
            sim_render: true,
            frame_timeout_s: 10.0,
            max_sync_offset_s: 0.02,
        }
    }
}

/// Where models and persistent data live; relative paths are resolved against the
/// project root (the folder holding `config/`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(default, deny_unknown_fields)]
pub struct PathsConfig {
    /// Model files and the ONNX Runtime library installed by `scripts/setup`. Default
    /// `models`.
    #[garde(skip)]
    pub models_dir: PathBuf,
    /// Databases and logs that must survive restarts. Unset (the default): the user's
    /// data folder, `$XDG_DATA_HOME/asp` (`~/.local/share/asp`), so that what the robot
    /// learned survives a fresh checkout; `var` under the project root where the
    /// user has no home folder.
    #[garde(skip)]
    pub data_dir: Option<PathBuf>,
}

impl Default for PathsConfig {
    fn default() -> Self {
        Self {
            models_dir: "models".into(),
            data_dir: None,
        }
    }
}

impl PathsConfig {
    /// The data folder: `data_dir` if set (absolute, or relative to `root`), else the
    /// user's (XDG), else `root/var`.
    pub fn data_dir(&self, root: &Path) -> PathBuf {
        match &self.data_dir {
            Some(d) if d.is_absolute() => d.clone(),
            Some(d) => root.join(d),
            None => dirs::data_dir().map_or_else(|| root.join("var"), |d| d.join("asp")),
        }
    }
}

/// How a dead node is noticed and what `asp launch` does about it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(default, deny_unknown_fields)]
pub struct SupervisionConfig {
    /// Every node's heartbeat (`bond/msg/Status`, its node name as the bond id).
    /// Default `/asp/heartbeat`.
    #[garde(length(min = 1))]
    pub heartbeat_topic: String,
    /// Seconds between two heartbeats. Default 0.2.
    #[garde(range(min = 0.01, max = 10.0))]
    pub heartbeat_period_s: f64,
    /// Seconds of silence after which a node counts as dead: its goal ends naming it and
    /// the robot's motion goals are cancelled. At least three periods. Default 1.5.
    #[garde(custom(at_least_three_periods(self.heartbeat_period_s)))]
    pub heartbeat_timeout_s: f64,
    /// Seconds a goal that arrives while a node it needs is down waits for it to come
    /// back (`asp launch` restarts it) before it is refused with code 25. Default 15.
    #[garde(range(min = 0.0, max = 600.0))]
    pub node_wait_s: f64,
    /// `asp launch` starts a node again when it exits (otherwise it stops them all).
    /// Default true.
    #[garde(skip)]
    pub respawn: bool,
    /// Seconds `asp launch` waits before starting a node again. Default 1.
    #[garde(range(min = 0.0, max = 60.0))]
    pub respawn_delay_s: f64,
    /// Restarts of one node per launch; one more exit stops the launch. Default 5.
    #[garde(range(max = 1000))]
    pub max_respawns: u32,
    /// The lifecycle state (REP-2006) every node starts in. `active` (default): goals
    /// are taken at once, as under Nav2's lifecycle manager with `autostart`.
    /// `inactive` or `unconfigured`: nodes refuse goals and hold the robot until
    /// `ros2 lifecycle set <node> activate` (after `configure` from unconfigured).
    #[garde(skip)]
    pub initial_state: LifecycleStart,
    /// Seconds a node binary may take to start serving; past it the process exits with
    /// status 75 (EX_TEMPFAIL) so that `asp launch` starts it again, instead of a node
    /// that never serves. Default 120.
    #[garde(range(min = 1.0, max = 3600.0))]
    pub start_timeout_s: f64,
    /// Seconds between two reports of each node's process (resident memory, heap in
    /// use and held free, threads) on `/diagnostics` (`diagnostic_msgs/DiagnosticArray`,
    /// as rqt_robot_monitor reads it); 0: none. Default 1, diagnostic_updater's rate.
    #[garde(range(min = 0.0, max = 60.0))]
    pub diagnostics_period_s: f64,
    /// Seconds after which what a dead agent_node process left open (goals it ran,
    /// requests it had not answered) is dropped unanswered when the next one starts: a
    /// record that old is from an earlier session, whose clients have long gone, not
    /// from a crash a respawn follows. Default 3600.
    #[garde(range(min = 1.0, max = 2592000.0))]
    pub open_requests_max_age_s: f64,
}

/// The lifecycle state nodes start in (`common.supervision.initial_state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LifecycleStart {
    Unconfigured,
    Inactive,
    #[default]
    Active,
}

fn at_least_three_periods(period: f64) -> impl FnOnce(&f64, &()) -> garde::Result {
    move |timeout, _| {
        if !timeout.is_finite() || *timeout < 3.0 * period || *timeout > 60.0 {
            return Err(garde::Error::new(format!(
                "{timeout} s: must be at least three heartbeat periods ({} s) and at most 60 s",
                3.0 * period
            )));
        }
        Ok(())
    }
}

impl Default for SupervisionConfig {
    fn default() -> Self {
        Self {
            heartbeat_topic: "/asp/heartbeat".into(),
            heartbeat_period_s: 0.2,
            heartbeat_timeout_s: 1.5,
            node_wait_s: 15.0,
            respawn: true,
            respawn_delay_s: 1.0,
            max_respawns: 5,
            initial_state: LifecycleStart::Active,
            start_timeout_s: 120.0,
            diagnostics_period_s: 1.0,
            open_requests_max_age_s: 3600.0,
        }
    }
}
