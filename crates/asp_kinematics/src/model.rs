//! The robot as the planner and the simulator see it: joints, kinematics, collision
//! geometry, named configurations and the gripper. One trait, so a Stretch can be added
//! next to the xArm6.

use std::fmt;

use asp_core::geometry::Isometry3;
use parry3d::shape::SharedShape;
use serde::{Deserialize, Serialize};

use crate::error::IkError;

/// One actuated joint of the arm, in planning-group order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JointSpec {
    pub name: String,
    /// Radians (revolute) or metres (prismatic).
    pub lower: f64,
    pub upper: f64,
    /// rad/s or m/s.
    pub max_velocity: f64,
    /// rad/s² or m/s²; `None` when the description gives none (the planner then uses its
    /// `default_max_acceleration`).
    pub max_acceleration: Option<f64>,
    /// N·m or N.
    pub max_effort: f64,
    /// Revolute (true) or prismatic (false).
    pub revolute: bool,
}

impl JointSpec {
    /// Whether `q` lies within the limits, allowing `tolerance` beyond them.
    pub fn contains(&self, q: f64, tolerance: f64) -> bool {
        q.is_finite() && q >= self.lower - tolerance && q <= self.upper + tolerance
    }
}

/// A collision shape of one link at some configuration, in the arm base frame.
#[derive(Debug, Clone)]
pub struct LinkShape {
    /// The link's name (or, for an object held by the gripper, the object's name).
    pub link: String,
    pub pose: Isometry3,
    pub shape: SharedShape,
}

/// The finger pads of a parallel gripper.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FingerGeometry {
    /// Pad extent along the tool z axis (out of the gripper), metres.
    pub length: f64,
    /// Pad extent along the tool x axis, metres.
    pub width: f64,
    /// Pad extent along the closing direction (tool y), metres.
    pub thickness: f64,
    /// Tool-frame z of the pad centre (negative: behind the tool centre point).
    pub center_z: f64,
    /// Tool-frame z of the fingertips.
    pub tip_z: f64,
}

/// A parallel gripper as `control_msgs/GripperCommand` drives it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GripperSpec {
    pub name: String,
    /// The tool centre point frame between the fingertips (+z out of the gripper,
    /// fingers closing along ±y).
    pub tool_frame: String,
    /// The driven finger joint first, then its mimics.
    pub finger_joints: Vec<String>,
    pub finger_links: Vec<String>,
    /// Links a held object may touch without that being a collision (MoveIt's
    /// `touch_links`): everything rigidly attached after the last arm joint.
    pub touch_links: Vec<String>,
    /// Finger gap when fully closed / fully open, metres.
    pub min_gap: f64,
    pub max_gap: f64,
    /// Largest gripping force, newtons.
    pub max_effort: f64,
    /// Largest speed of the gap, m/s.
    pub max_speed: f64,
    pub finger: FingerGeometry,
}

impl GripperSpec {
    /// The driven finger joint's value for a finger gap (each finger moves half of it).
    pub fn joint_for_gap(&self, gap: f64) -> f64 {
        gap.clamp(self.min_gap, self.max_gap) / 2.0
    }
    /// The finger gap for a value of the driven finger joint.
    pub fn gap_for_joint(&self, q: f64) -> f64 {
        (2.0 * q).clamp(self.min_gap, self.max_gap)
    }
}

/// Settings of numerical inverse kinematics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IkOptions {
    /// Largest accepted distance of the tool point from the target, metres.
    pub position_tolerance: f64,
    /// Largest accepted rotation between tool and target orientation, radians.
    pub orientation_tolerance: f64,
    /// Damped-least-squares iterations per seed.
    pub max_iterations: usize,
    /// Seeds tried in all: the caller's seed, the named configurations, then
    /// deterministic pseudo-random configurations within the limits.
    pub max_attempts: usize,
    /// Seed of the pseudo-random restarts (same seed, same answer).
    pub seed: u64,
}

impl Default for IkOptions {
    fn default() -> Self {
        Self {
            position_tolerance: 1e-4,
            orientation_tolerance: 1e-3,
            max_iterations: 100,
            max_attempts: 32,
            seed: 0,
        }
    }
}

/// One joint of the description as a frame edge, as robot_state_publisher sends it:
/// the child link in the parent link's frame.
#[derive(Debug, Clone, PartialEq)]
pub struct JointFrame {
    pub parent: String,
    pub child: String,
    /// `parent_T_child` at the joint's current value.
    pub pose: Isometry3,
    /// A fixed joint (`/tf_static`); the others move (`/tf`).
    pub fixed: bool,
}

/// A check the IK solver applies to each solution (e.g. "not in collision"); `Err`
/// carries the reason of a rejection.
pub type SolutionFilter<'a> = &'a dyn Fn(&[f64]) -> Result<(), String>;

/// A robot: an arm (the planning group, `dof()` joints from the arm base to the tool
/// frame), its gripper and whatever carries it. Every pose is in the arm base frame.
///
/// Configuration slices `q` must have `dof()` entries, in `joints()` order.
pub trait RobotModel: Send + Sync + fmt::Debug {
    fn name(&self) -> &str;

    /// The arm joints (the planning group), in order.
    fn joints(&self) -> &[JointSpec];

    fn dof(&self) -> usize {
        self.joints().len()
    }

    /// The frame of the arm's base (`link_base`), the frame of every pose here.
    fn arm_base_frame(&self) -> &str;

    /// The robot's root frame (`base_link` of the mobile base; the arm base when the
    /// arm stands alone).
    fn base_frame(&self) -> &str;

    /// The tool centre point frame (`link_tcp`).
    fn tool_frame(&self) -> &str;

    /// The arm base in the robot's root frame (the mount on the mobile base).
    fn mount(&self) -> Isometry3;

    /// Every link and frame of the description at `q` with the gripper fully open, in the
    /// arm base frame (links that do not move with the arm, such as the mobile base and
    /// its cameras, included).
    fn link_poses(&self, q: &[f64]) -> Vec<(String, Isometry3)> {
        self.link_poses_with_gap(q, self.gripper().max_gap)
    }

    /// As [`RobotModel::link_poses`], with the fingers `finger_gap` metres apart.
    fn link_poses_with_gap(&self, q: &[f64], finger_gap: f64) -> Vec<(String, Isometry3)>;

    /// Every joint of the description at `q` with the fingers `finger_gap` metres
    /// apart, as parent-to-child frame edges (the tree `/tf` and `/tf_static` carry).
    fn joint_frames(&self, q: &[f64], finger_gap: f64) -> Vec<JointFrame>;

    /// The URDF text of the description (`/robot_description`).
    fn urdf(&self) -> &str;

    /// One link's pose at `q` in the arm base frame; `None` for an unknown link.
    fn link_pose(&self, q: &[f64], link: &str) -> Option<Isometry3>;

    /// The tool centre point at `q`, in the arm base frame.
    fn tool_pose(&self, q: &[f64]) -> Isometry3;

    /// A configuration within the joint limits whose tool pose matches `target` within
    /// the tolerances of `opts`, preferring one near `seed`.
    fn inverse(
        &self,
        target: &Isometry3,
        seed: &[f64],
        opts: &IkOptions,
    ) -> Result<Vec<f64>, IkError> {
        self.inverse_filtered(target, seed, opts, &|_| Ok(()))
    }

    /// As [`RobotModel::inverse`], trying further seeds while `accept` rejects the
    /// solutions found (MoveIt's IK validity callback).
    fn inverse_filtered(
        &self,
        target: &Isometry3,
        seed: &[f64],
        opts: &IkOptions,
        accept: SolutionFilter<'_>,
    ) -> Result<Vec<f64>, IkError>;

    /// Whether any configuration within the limits reaches `target`.
    fn is_reachable(&self, target: &Isometry3, opts: &IkOptions) -> bool {
        let seed = self.named_configuration("home").unwrap_or_else(|| {
            self.joints()
                .iter()
                .map(|j| mid(j.lower, j.upper))
                .collect()
        });
        self.inverse(target, &seed, opts).is_ok()
    }

    /// Collision shapes of every link at `q` with the gripper fully open.
    fn collision_shapes(&self, q: &[f64]) -> Vec<LinkShape> {
        self.collision_shapes_with_gap(q, self.gripper().max_gap)
    }

    /// Collision shapes of every link at `q` with the fingers `finger_gap` metres apart.
    fn collision_shapes_with_gap(&self, q: &[f64], finger_gap: f64) -> Vec<LinkShape>;

    /// The first pair of links of `shapes` that touch, skipping pairs that may (adjacent
    /// or rigidly joined links, the SRDF's disabled pairs). Shapes whose `link` is not a
    /// link of this robot are ignored.
    fn self_collision(&self, shapes: &[LinkShape]) -> Option<(String, String)>;

    /// The link pairs (both with collision geometry) that
    /// [`RobotModel::self_collision`] skips, each pair once.
    fn ignored_collision_pairs(&self) -> Vec<(String, String)>;

    /// A named joint configuration (`home`, `stow`, `look`).
    fn named_configuration(&self, name: &str) -> Option<Vec<f64>>;

    /// The names [`RobotModel::named_configuration`] knows.
    fn named_configurations(&self) -> Vec<String>;

    fn gripper(&self) -> &GripperSpec;

    /// The mobile base's outline on the floor, counter-clockwise, in the root frame
    /// (metres); empty when the arm stands alone.
    fn footprint(&self) -> Vec<[f64; 2]>;
}

fn mid(lower: f64, upper: f64) -> f64 {
    match (lower.is_finite(), upper.is_finite()) {
        (true, true) => 0.5 * (lower + upper),
        _ => 0.0_f64.clamp(lower, upper),
    }
}
