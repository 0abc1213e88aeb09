//! The Hello Robot Stretch 3 as stretch_ros2 drives it: the mobile base's rotation and
//! translation are two more degrees of freedom of the arm, then the lift, the telescoping
//! arm (four segments moving as one `joint_arm`), and the dex wrist's yaw, pitch and
//! roll, down to `link_grasp_center`.
//!
//! Read from the robot's own URDF (the `hello-robot-stretch-urdf` package, installed by
//! `scripts/setup` and linked as `models/stretch3/`). A plan's configuration is
//! `[rotate_mobile_base, translate_mobile_base, joint_lift, joint_arm, joint_wrist_yaw,
//! joint_wrist_pitch, joint_wrist_roll]`; the base joints are relative to where the
//! plan starts (the base frame at that moment), the base first turning in place, then
//! driving along its new heading.
//!
//! [`Stretch::driver_goals`] turns a move between two configurations into the
//! FollowJointTrajectory goals stretch_core's `joint_trajectory_server` accepts in
//! position mode (checked against its `command_groups.py`): `rotate_mobile_base` and
//! `translate_mobile_base` are increments and never share a goal, the other joints are
//! absolute, and `joint_arm` is the telescope's whole extension.

use std::f64::consts::PI;
use std::path::Path;

use nalgebra::{Translation3, Unit, UnitQuaternion};

use crate::description::{JointKind, KinematicTree};
use crate::error::{DescriptionError, IkError};
use crate::ik::SerialChain;
use crate::model::{IkOptions, JointSpec, SolutionFilter};
use crate::{Iso64, Vec64};

/// The URDF of a Stretch 3 with the dex wrist and the SG3 gripper, under the models
/// folder (`models/` by default; `scripts/setup` links it).
pub const STRETCH3_URDF: &str = "stretch3/stretch_description_SE3_eoa_wrist_dw3_tool_sg3.urdf";

/// The base's turn in place (radians, an increment in stretch_core's position mode).
pub const ROTATE_BASE: &str = "rotate_mobile_base";
/// The base's drive along its heading (metres, an increment).
pub const TRANSLATE_BASE: &str = "translate_mobile_base";
/// The lift along the mast (metres).
pub const LIFT: &str = "joint_lift";
/// The telescoping arm's whole extension (metres): stretch_core's `joint_arm`.
pub const ARM: &str = "joint_arm";
/// The wrist's joints, as the URDF and the driver name them.
pub const WRIST: [&str; 3] = ["joint_wrist_yaw", "joint_wrist_pitch", "joint_wrist_roll"];
/// The URDF's four telescope segments that `joint_arm` moves together (a quarter each).
pub const TELESCOPES: [&str; 4] = [
    "joint_arm_l3",
    "joint_arm_l2",
    "joint_arm_l1",
    "joint_arm_l0",
];

/// What the URDF does not say about driving the Stretch.
#[derive(Debug, Clone, PartialEq)]
pub struct StretchSettings {
    /// Furthest the base may drive in one manipulation plan, metres either way
    /// (stretch_core's virtual base joint range is ±0.5 m).
    pub base_translation_limit: f64,
    /// Largest turn in place of one plan, radians either way.
    pub base_rotation_limit: f64,
    /// Base speeds for timing (m/s, rad/s): stretch_body's default base moves.
    pub base_speed: f64,
    pub base_turn_speed: f64,
    /// The tool frame (the gripper's grasp centre).
    pub tool_link: String,
}

impl Default for StretchSettings {
    fn default() -> Self {
        Self {
            base_translation_limit: 0.5,
            base_rotation_limit: PI,
            base_speed: 0.1,
            base_turn_speed: 0.3,
            tool_link: "link_grasp_center".into(),
        }
    }
}

/// One FollowJointTrajectory goal for stretch_core's `/stretch_controller` in position
/// mode: joint names and one target point.
#[derive(Debug, Clone, PartialEq)]
pub struct DriverGoal {
    pub joint_names: Vec<String>,
    pub positions: Vec<f64>,
}

/// The Stretch's manipulation chain, base included.
#[derive(Debug, Clone)]
pub struct Stretch {
    tree: KinematicTree,
    chain: SerialChain,
    joints: Vec<JointSpec>,
    tool_link: usize,
}

impl Stretch {
    /// Reads the Stretch's URDF file (its collision meshes beside it).
    pub fn from_urdf_file(
        path: &Path,
        settings: &StretchSettings,
    ) -> Result<Self, DescriptionError> {
        Self::new(KinematicTree::from_urdf_file(path)?, settings)
    }

    /// The chain from a loaded tree: the URDF's path from its root to the tool link must
    /// hold the lift, the four telescope segments and the three wrist joints, and no
    /// other moving joint.
    pub fn new(tree: KinematicTree, settings: &StretchSettings) -> Result<Self, DescriptionError> {
        let structure = |message: String| DescriptionError::Structure {
            source_name: tree.name.clone(),
            message,
        };
        let tool_link = tree
            .link(&settings.tool_link)
            .ok_or_else(|| structure(format!("no tool link {:?}", settings.tool_link)))?;
        let path = tree
            .path(tree.root, tool_link)
            .ok_or_else(|| structure(format!("{:?} is not below the root", settings.tool_link)))?;
        let limit = |what: &str, v: f64| {
            if v.is_finite() && v > 0.0 {
                Ok(v)
            } else {
                Err(structure(format!("{what} must be positive, got {v}")))
            }
        };
        let reach = limit("base_translation_limit", settings.base_translation_limit)?;
        let turn = limit("base_rotation_limit", settings.base_rotation_limit)?;
        let base_speed = limit("base_speed", settings.base_speed)?;
        let turn_speed = limit("base_turn_speed", settings.base_turn_speed)?;

        let mut joints = vec![
            JointSpec {
                name: ROTATE_BASE.into(),
                lower: -turn,
                upper: turn,
                max_velocity: turn_speed,
                max_acceleration: None,
                max_effort: 0.0,
                revolute: true,
            },
            JointSpec {
                name: TRANSLATE_BASE.into(),
                lower: -reach,
                upper: reach,
                max_velocity: base_speed,
                max_acceleration: None,
                max_effort: 0.0,
                revolute: false,
            },
        ];
        let mut parts: Vec<(Iso64, Unit<Vec64>, bool)> = vec![
            (Iso64::identity(), Vec64::z_axis(), true),
            (Iso64::identity(), Vec64::x_axis(), false),
        ];
        // fixed joints (and the telescope segments after the first) fold into the
        // transform before the next moving joint
        let mut folded = Iso64::identity();
        let mut telescope_axis: Option<Unit<Vec64>> = None;
        for &j in &path {
            let joint = &tree.joints[j];
            let before = folded * joint.origin;
            if let Some(k) = TELESCOPES.iter().position(|t| *t == joint.name) {
                if joint.kind != JointKind::Prismatic {
                    return Err(structure(format!("{} is not prismatic", joint.name)));
                }
                // the segments slide along one axis: moving the first by the whole
                // extension moves the tool as moving each by a quarter does
                let axis = before.rotation * joint.axis;
                match telescope_axis {
                    None if k == 0 => {
                        telescope_axis = Some(joint.axis);
                        parts.push((before, joint.axis, false));
                        joints.push(JointSpec {
                            name: ARM.into(),
                            lower: 4.0 * joint.lower,
                            upper: 4.0 * joint.upper,
                            ..joint.spec()
                        });
                        folded = Iso64::identity();
                    }
                    Some(first) if (axis.into_inner() - first.into_inner()).norm() < 1e-6 => {
                        folded = before;
                    }
                    _ => {
                        return Err(structure(format!(
                            "telescope segment {} does not slide along {} 's axis",
                            joint.name, TELESCOPES[0]
                        )));
                    }
                }
                continue;
            }
            if joint.kind == JointKind::Fixed {
                folded = before;
                continue;
            }
            let expected = joint.name == LIFT || WRIST.contains(&joint.name.as_str());
            if !expected {
                return Err(structure(format!(
                    "moving joint {} between the root and {} is not one of the Stretch's",
                    joint.name, settings.tool_link
                )));
            }
            if joint.velocity <= 0.0 {
                return Err(structure(format!(
                    "{} needs a positive velocity limit",
                    joint.name
                )));
            }
            let spec = joint.spec();
            parts.push((before, joint.axis, spec.revolute));
            joints.push(spec);
            folded = Iso64::identity();
        }
        let names: Vec<&str> = joints.iter().map(|j| j.name.as_str()).collect();
        let expected = [
            ROTATE_BASE,
            TRANSLATE_BASE,
            LIFT,
            ARM,
            WRIST[0],
            WRIST[1],
            WRIST[2],
        ];
        if names != expected {
            return Err(structure(format!(
                "the chain to {} has joints {names:?}, not {expected:?}",
                settings.tool_link
            )));
        }
        let chain = SerialChain::new(
            parts
                .into_iter()
                .zip(&joints)
                .map(|((before, axis, revolute), spec)| (before, axis, revolute, spec))
                .collect(),
            folded,
        );
        Ok(Self {
            tree,
            chain,
            joints,
            tool_link,
        })
    }

    /// The plan's joints, in configuration order.
    pub fn joints(&self) -> &[JointSpec] {
        &self.joints
    }

    /// The URDF tree (every link, the head and its camera included).
    pub fn tree(&self) -> &KinematicTree {
        &self.tree
    }

    /// The tool pose in the frame the base had where the plan starts.
    pub fn forward(&self, q: &[f64]) -> Iso64 {
        self.chain.forward(q)
    }

    /// Where the base stands after the plan's base joints, in the plan's start frame.
    pub fn base_pose(&self, q: &[f64]) -> Iso64 {
        let turn = UnitQuaternion::from_axis_angle(&Vec64::z_axis(), q[0]);
        Iso64::from_parts(Translation3::identity(), turn) * Translation3::new(q[1], 0.0, 0.0)
    }

    /// One value per URDF joint for `q` (the base joints left out: they move the root),
    /// the telescope split evenly over its four segments; `others` gives the joints the
    /// plan does not drive (head, fingers) by name, zero otherwise.
    pub fn tree_values(&self, q: &[f64], others: &[(&str, f64)]) -> Vec<f64> {
        let mut values = vec![0.0; self.tree.joints.len()];
        for (name, v) in others {
            if let Some(j) = self.tree.joint(name) {
                values[j] = *v;
            }
        }
        for (spec, &v) in self.joints.iter().zip(q).skip(2) {
            if spec.name == ARM {
                for t in TELESCOPES {
                    if let Some(j) = self.tree.joint(t) {
                        values[j] = v / 4.0;
                    }
                }
            } else if let Some(j) = self.tree.joint(&spec.name) {
                values[j] = v;
            }
        }
        values
    }

    /// The tool link's pose through the URDF tree (for checks against [`Self::forward`]).
    pub fn tool_pose_in_tree(&self, q: &[f64]) -> Iso64 {
        self.base_pose(q) * self.tree.link_poses(&self.tree_values(q, &[]))[self.tool_link]
    }

    /// A configuration reaching `target` (tool pose in the plan's start frame) within
    /// the joint limits, nearest the seed's turns; `accept` may veto a solution (a
    /// collision check). Seeds: `seed`, then the arm half out at the target's height on
    /// either side, then pseudo-random ones.
    pub fn inverse(
        &self,
        target: &Iso64,
        seed: &[f64],
        opts: &IkOptions,
        accept: SolutionFilter<'_>,
    ) -> Result<Vec<f64>, IkError> {
        let t = target.translation.vector;
        if !(t.iter().all(|v| v.is_finite())
            && target.rotation.coords.iter().all(|v| v.is_finite()))
        {
            return Err(IkError::InvalidTarget(format!("{target:?}")));
        }
        let mid = |i: usize| 0.5 * (self.joints[i].lower + self.joints[i].upper);
        let lift = t.z.clamp(self.joints[2].lower, self.joints[2].upper);
        let extra: Vec<Vec<f64>> = [0.0, PI / 2.0, -PI / 2.0, PI]
            .into_iter()
            .map(|turn| vec![turn, 0.0, lift, mid(3), 0.0, mid(5), 0.0])
            .collect();
        self.chain.inverse(target, seed, &extra, opts, accept)
    }

    /// The stretch_core goals that take the robot from `from` to `to`, in order: the
    /// arm first when it retracts (so the base never drives with it further out than it
    /// is), else the base first; the base turns to face where it drives, drives, and
    /// turns to its final heading, one increment per goal.
    pub fn driver_goals(&self, from: &[f64], to: &[f64]) -> Vec<DriverGoal> {
        const EPS: f64 = 1e-4;
        let mut base = Vec::new();
        let start = self.base_pose(from).translation.vector;
        let end = self.base_pose(to).translation.vector;
        let delta = end - start;
        let mut heading = from[0];
        let turn = |goals: &mut Vec<DriverGoal>, heading: &mut f64, towards: f64| {
            let d = wrap(towards - *heading);
            if d.abs() > EPS {
                goals.push(DriverGoal {
                    joint_names: vec![ROTATE_BASE.into()],
                    positions: vec![d],
                });
            }
            *heading = towards;
        };
        if delta.xy().norm() > EPS {
            let ahead = delta.y.atan2(delta.x);
            // drive forwards or backwards, whichever needs the smaller first turn
            let (face, distance) = if wrap(ahead - heading).abs() <= PI / 2.0 {
                (ahead, delta.xy().norm())
            } else {
                (ahead + PI, -delta.xy().norm())
            };
            turn(&mut base, &mut heading, face);
            base.push(DriverGoal {
                joint_names: vec![TRANSLATE_BASE.into()],
                positions: vec![distance],
            });
        }
        turn(&mut base, &mut heading, to[0]);
        let changed: Vec<usize> = (2..self.joints.len())
            .filter(|&i| (to[i] - from[i]).abs() > EPS)
            .collect();
        let arm = (!changed.is_empty()).then(|| DriverGoal {
            joint_names: changed
                .iter()
                .map(|&i| self.joints[i].name.clone())
                .collect(),
            positions: changed.iter().map(|&i| to[i]).collect(),
        });
        let retracting = to[3] < from[3] - EPS;
        match arm {
            Some(a) if retracting => std::iter::once(a).chain(base).collect(),
            Some(a) => base.into_iter().chain(std::iter::once(a)).collect(),
            None => base,
        }
    }
}

/// An angle in (-π, π].
fn wrap(a: f64) -> f64 {
    let w = a.rem_euclid(2.0 * PI);
    if w > PI { w - 2.0 * PI } else { w }
}
