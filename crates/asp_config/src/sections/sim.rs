//! `sim_node`: the embedded simulator standing in for the robot, Gazebo, MoveIt 2 and
//! Nav2.

use std::path::PathBuf;

use garde::Validate;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(default, deny_unknown_fields)]
pub struct SimConfig {
    /// World file, relative to the config folder. Default `worlds/tabletop.yaml`.
    #[garde(skip)]
    pub world: PathBuf,
    /// Seed of every random choice (noise, failed-grasp displacement). Default 0.
    #[garde(skip)]
    pub seed: u64,
    /// Simulated seconds per wall-clock second for motions; 0 runs motions as fast as
    /// possible. Default 0.
    #[garde(range(min = 0.0, max = 100.0))]
    pub real_time_factor: f64,
    #[garde(dive)]
    pub camera: SimCameraConfig,
}

impl Default for SimConfig {
    fn default() -> Self {
        Self {
            world: "worlds/tabletop.yaml".into(),
            seed: 0,
            real_time_factor: 0.0,
            camera: SimCameraConfig::default(),
        }
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
    /// Standard deviation of depth noise at 1 m, metres (grows with depth²). Default 0.
    #[garde(range(min = 0.0, max = 0.5))]
    pub depth_noise_std: f32,
    /// Share of depth pixels dropped to "no reading", [0, 1]. Default 0.
    #[garde(range(min = 0.0, max = 1.0))]
    pub depth_dropout: f32,
    /// Publishing rate of the sim node's camera topics, Hz. Default 5.
    #[garde(range(min = 0.1, max = 120.0))]
    pub rate_hz: f64,
}

impl Default for SimCameraConfig {
    fn default() -> Self {
        Self {
            width: 640,
            height: 480,
            hfov_deg: 69.0,
            depth_noise_std: 0.0,
            depth_dropout: 0.0,
            rate_hz: 5.0,
        }
    }
}
