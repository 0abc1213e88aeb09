//! `sim_node`: the embedded simulator standing in for the robot, Gazebo, MoveIt 2 and
//! Nav2.

use std::collections::BTreeMap;
use std::path::PathBuf;

use garde::Validate;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(default, deny_unknown_fields)]
pub struct SimConfig {
    /// World file, relative to the config folder, or a building's index
    /// (`building.yaml` from `asp world generate`: its storeys joined by an elevator).
    /// Default `worlds/tabletop.yaml`.
    #[garde(skip)]
    pub world: PathBuf,
    /// In a building, the storey the robot starts on (0: the ground floor). Default 0.
    #[garde(range(max = 200))]
    pub start_storey: usize,
    /// Seed of every random choice (noise, failed-grasp displacement). Default 0.
    #[garde(skip)]
    pub seed: u64,
    /// Simulated seconds per wall-clock second for motions; 0 runs motions as fast as
    /// possible. Default 0.
    #[garde(range(min = 0.0, max = 100.0))]
    pub real_time_factor: f64,
    /// Where the base starts: x, y (metres, map frame) and heading (degrees). Default
    /// `[0, 0.4, 0]`, in front of the tabletop world's mug; scenarios set their own.
    #[garde(custom(finite3))]
    pub start_pose: [f32; 3],
    /// How often the sim node publishes `/tf` and `/joint_states`, Hz (it also publishes
    /// them after every motion and before every rendered frame). Default 10.
    #[garde(range(min = 0.1, max = 1000.0))]
    pub tf_rate_hz: f64,
    #[garde(dive)]
    pub camera: SimCameraConfig,
    #[garde(dive)]
    pub base: SimBaseConfig,
    #[garde(dive)]
    pub arm: SimArmConfig,
    #[garde(dive)]
    pub effects: SimEffectsConfig,
    #[garde(dive)]
    pub vlm_standin: VlmStandInConfig,
    #[garde(dive)]
    pub web_standin: WebStandInConfig,
}

/// The simulation's web: a SearXNG-compatible search server the sim starts on loopback,
/// serving a corpus of concepts no detector knows (pages of text, and pictures rendered
/// from the concepts' shapes and colours), so grounding unknown words
/// (`object_map_node.concepts`) needs no internet. The VLM stand-in answers the concept
/// questions about its pictures from the corpus, with `*_error_rate` errors; the
/// simulated detector and VLM do not know the corpus's words (they see the things'
/// looks, not their brand names).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(default, deny_unknown_fields)]
pub struct WebStandInConfig {
    /// Start it. Default true.
    #[garde(skip)]
    pub enabled: bool,
    /// Address to listen on; port 0 picks a free one (the nodes of the same process are
    /// pointed at it). Default `127.0.0.1:0`.
    #[garde(custom(socket_address))]
    pub bind: String,
    /// The corpus, relative to the config folder. Default `concepts/corpus.yaml`.
    #[garde(length(min = 1))]
    pub corpus: String,
    /// Chance that a keyword of the VLM stand-in's answer is another concept's (each of
    /// the five drawn alone, seeded by the collage). Default 0.05.
    #[garde(range(min = 0.0, max = 1.0))]
    pub keyword_error_rate: f64,
    /// Chance that its replacement word is another known word, or none. Default 0.05.
    #[garde(range(min = 0.0, max = 1.0))]
    pub replacement_error_rate: f64,
}

impl Default for WebStandInConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            bind: "127.0.0.1:0".into(),
            corpus: "concepts/corpus.yaml".into(),
            keyword_error_rate: 0.05,
            replacement_error_rate: 0.05,
        }
    }
}

/// The simulation's VLM: an OpenAI-compatible server the sim starts, answering from the
/// renderer's ground truth with the stand-ins' seeded errors (`object_map_node.simulation`,
/// `affordance_node.simulated_models`, `verifier_node.outcome.simulated_*`). The nodes
/// ask it through `agent_node.vlm`, as they ask a real VLM on a robot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(default, deny_unknown_fields)]
pub struct VlmStandInConfig {
    /// Start it. Default true.
    #[garde(skip)]
    pub enabled: bool,
    /// Address to listen on; port 0 picks a free one (the nodes of the same process are
    /// pointed at it). Default `127.0.0.1:0`.
    #[garde(custom(socket_address))]
    pub bind: String,
    /// Rendered frames kept to find a question's images in (each keeps its colour image,
    /// shared by frames with the same pixels, and its labels packed as runs). Default
    /// 512.
    #[garde(range(min = 1, max = 100000))]
    pub frames_kept: usize,
}

impl Default for VlmStandInConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            bind: "127.0.0.1:0".into(),
            frames_kept: 512,
        }
    }
}

fn socket_address(v: &str, _: &()) -> garde::Result {
    v.parse::<std::net::SocketAddr>().map(|_| ()).map_err(|e| {
        garde::Error::new(format!("{v:?} is not an address like 127.0.0.1:8790 ({e})"))
    })
}

impl Default for SimConfig {
    fn default() -> Self {
        Self {
            world: "worlds/tabletop.yaml".into(),
            start_storey: 0,
            seed: 0,
            real_time_factor: 0.0,
            start_pose: [0.0, 0.4, 0.0],
            tf_rate_hz: 10.0,
            camera: SimCameraConfig::default(),
            base: SimBaseConfig::default(),
            arm: SimArmConfig::default(),
            effects: SimEffectsConfig::default(),
            vlm_standin: VlmStandInConfig::default(),
            web_standin: WebStandInConfig::default(),
        }
    }
}

fn finite3(v: &[f32; 3], _: &()) -> garde::Result {
    if v.iter().all(|x| x.is_finite()) {
        Ok(())
    } else {
        Err(garde::Error::new("every value must be a finite number"))
    }
}

/// The mobile base: occupancy grid, planner and controller.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(default, deny_unknown_fields)]
pub struct SimBaseConfig {
    /// Occupancy grid cell size, metres. Default 0.05.
    #[garde(range(min = 0.01, max = 0.5))]
    pub resolution: f32,
    /// Geometry from this height up blocks the base, metres. Default 0.02.
    #[garde(range(min = 0.0, max = 1.0))]
    pub obstacle_min_height: f32,
    /// Geometry up to this height blocks the base, metres. Default 1.6.
    #[garde(range(min = 0.1, max = 3.0))]
    pub obstacle_max_height: f32,
    /// Beyond the footprint, path cost decays to zero over this distance, metres.
    /// Default 0.3.
    #[garde(range(min = 0.0, max = 2.0))]
    pub cost_distance: f32,
    /// Driving speed, m/s. Default 0.5.
    #[garde(range(min = 0.01, max = 3.0))]
    pub max_speed: f32,
    /// Turning rate, rad/s. Default 1.0.
    #[garde(range(min = 0.01, max = 6.0))]
    pub max_turn_rate: f32,
    /// Controller period (one simulation step of the base), seconds. Default 0.1.
    #[garde(range(min = 0.001, max = 1.0))]
    pub control_period_s: f32,
    /// Localisation error: after every drive the robot's belief of where it is (`/tf`
    /// map → base, the base pose, the cameras' poses) is off the truth by a fresh draw
    /// of this standard deviation per axis, metres — what AMCL against `/map` leaves. It
    /// stays until the next drive. Default 0.02.
    #[garde(range(min = 0.0, max = 1.0))]
    pub localization_xy_std: f32,
    /// … and of the heading, degrees. Default 1.0.
    #[garde(range(min = 0.0, max = 45.0))]
    pub localization_yaw_std_deg: f32,
}

impl Default for SimBaseConfig {
    fn default() -> Self {
        Self {
            localization_xy_std: 0.02,
            localization_yaw_std_deg: 1.0,
            resolution: 0.05,
            obstacle_min_height: 0.02,
            obstacle_max_height: 1.6,
            cost_distance: 0.3,
            max_speed: 0.5,
            max_turn_rate: 1.0,
            control_period_s: 0.1,
        }
    }
}

/// Arm and gripper execution.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(default, deny_unknown_fields)]
pub struct SimArmConfig {
    /// Largest joint change per simulation step while executing a trajectory, radians
    /// (effects such as button presses are checked at every step). Default 0.005.
    #[garde(range(min = 0.0005, max = 0.1))]
    pub execution_step_rad: f64,
    /// Finger speed, m/s. Default 0.1.
    #[garde(range(min = 0.001, max = 1.0))]
    pub gripper_speed: f32,
}

impl Default for SimArmConfig {
    fn default() -> Self {
        Self {
            execution_step_rad: 0.005,
            gripper_speed: 0.1,
        }
    }
}

/// How robot commands act on the world.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(default, deny_unknown_fields)]
#[garde(allow_unvalidated)]
pub struct SimEffectsConfig {
    /// Pad rays (of 25 per finger) that must meet an object for the grasp to hold.
    /// Default 2.
    #[garde(range(min = 1, max = 25))]
    pub min_pad_contacts: usize,
    /// How far the tool may stray from a handle or plug it grips before the grip slips,
    /// metres. Default 0.03.
    #[garde(range(min = 0.001, max = 0.5))]
    pub slip_distance: f32,
    /// Margin around a handle within which a free fingertip hooks it, metres. Default
    /// 0.02.
    #[garde(range(min = 0.0, max = 0.2))]
    pub hook_margin: f32,
    /// A failed grasp pushes the object this far, uniformly in [min, max] metres.
    /// Default [0.02, 0.06].
    #[garde(custom(ordered_range))]
    pub failed_grasp_displacement: [f32; 2],
}

impl Default for SimEffectsConfig {
    fn default() -> Self {
        Self {
            min_pad_contacts: 2,
            slip_distance: 0.03,
            hook_margin: 0.02,
            failed_grasp_displacement: [0.02, 0.06],
        }
    }
}

fn ordered_range(v: &[f32; 2], _: &()) -> garde::Result {
    if v[0].is_finite() && v[1].is_finite() && 0.0 <= v[0] && v[0] <= v[1] && v[1] <= 1.0 {
        Ok(())
    } else {
        Err(garde::Error::new(
            "must be [min, max] with 0 <= min <= max <= 1",
        ))
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(default, deny_unknown_fields)]
pub struct SimCameraConfig {
    /// Default 640.
    #[garde(range(min = 8, max = 4096))]
    pub width: u32,
    /// Default 480.
    #[garde(range(min = 8, max = 4096))]
    pub height: u32,
    /// Horizontal field of view, degrees. Default 69 (RealSense D435 colour).
    #[garde(range(min = 10.0, max = 170.0))]
    pub hfov_deg: f32,
    /// Standard deviation of depth noise at 1 m, metres (grows with depth²). Default
    /// 0.002 (a structured-light or stereo camera at 1 m).
    #[garde(range(min = 0.0, max = 0.5))]
    pub depth_noise_std: f32,
    /// Share of depth pixels dropped to "no reading", [0, 1]. Default 0.02.
    #[garde(range(min = 0.0, max = 1.0))]
    pub depth_dropout: f32,
    /// Periodic publishing rate of the sim node's camera topics, Hz; 0 renders only when
    /// asked (`/sim/<camera>/render`), which keeps runs deterministic (rendering noise is
    /// seeded per rendered frame). Default 0.
    #[garde(range(min = 0.0, max = 120.0))]
    pub rate_hz: f64,
    /// Depth readings beyond this are "no reading", metres. Default 10.
    #[garde(range(min = 0.5, max = 100.0))]
    pub max_range: f32,
    /// Camera name → optical frame of the robot description. Default `head` →
    /// `head_camera_optical_frame`, `wrist` → `wrist_camera_optical_frame`.
    #[garde(length(min = 1))]
    pub frames: BTreeMap<String, String>,
}

impl Default for SimCameraConfig {
    fn default() -> Self {
        Self {
            width: 640,
            height: 480,
            hfov_deg: 69.0,
            depth_noise_std: 0.002,
            depth_dropout: 0.02,
            rate_hz: 0.0,
            max_range: 10.0,
            frames: [
                ("head".to_owned(), "head_camera_optical_frame".to_owned()),
                ("wrist".to_owned(), "wrist_camera_optical_frame".to_owned()),
            ]
            .into(),
        }
    }
}
