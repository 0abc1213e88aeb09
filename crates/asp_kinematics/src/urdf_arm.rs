//! A serial arm with a parallel gripper, read from a URDF and its SRDF: the
//! [`RobotModel`] behind the xArm6 (and any arm described the same way).

use std::f64::consts::FRAC_PI_2;
use std::path::Path;

use asp_core::geometry::Isometry3;
use nalgebra::UnitQuaternion;
use parry3d::bounding_volume::BoundingVolume;
use parry3d::shape::SharedShape;

use crate::description::{Geometry, JointKind, KinematicTree, Srdf};
use crate::error::{DescriptionError, IkError};
use crate::ik::SerialChain;
use crate::model::{
    FingerGeometry, GripperSpec, IkOptions, JointFrame, JointSpec, LinkShape, RobotModel,
    SolutionFilter,
};
use crate::{Iso64, to_f32, to_f64};

/// The URDF (root `base_link`: mobile base, head camera, arm) shipped in `urdf/`.
pub const XARM6_ON_BASE_URDF: &str = include_str!("../../../urdf/xarm6_on_base.urdf");
/// Its SRDF.
pub const XARM6_ON_BASE_SRDF: &str = include_str!("../../../urdf/xarm6_on_base.srdf");
/// The arm alone (root `link_base`) with gripper and wrist camera.
pub const XARM6_URDF: &str = include_str!("../../../urdf/xarm6.urdf");
/// Its SRDF.
pub const XARM6_SRDF: &str = include_str!("../../../urdf/xarm6.srdf");

#[derive(Debug, Clone)]
struct ShapeTemplate {
    link: usize,
    /// The shape in its link's frame (URDF cylinders turned onto parry's y axis).
    local: Iso64,
    shape: SharedShape,
}

/// An arm (one SRDF chain group) with a parallel gripper below its last joint.
#[derive(Debug, Clone)]
pub struct UrdfArm {
    name: String,
    tree: KinematicTree,
    arm_base: usize,
    tool: usize,
    /// Tree joint index of each arm joint.
    active: Vec<usize>,
    joints: Vec<JointSpec>,
    chain: SerialChain,
    /// The arm base in the root frame.
    mount: Iso64,
    mount_inv: Iso64,
    /// Every tree joint's value when not driven by the arm or the gripper.
    defaults: Vec<f64>,
    finger_joint: Option<usize>,
    shapes: Vec<ShapeTemplate>,
    /// `ignore[a * n + b]`: link pair never checked for self-collision.
    ignore: Vec<bool>,
    named: Vec<(String, Vec<f64>)>,
    gripper: GripperSpec,
    footprint: Vec<[f64; 2]>,
}

impl UrdfArm {
    /// Reads a URDF and an SRDF file; `group` names the SRDF chain group of the arm.
    pub fn from_files(urdf: &Path, srdf: &Path, group: &str) -> Result<Self, DescriptionError> {
        let tree = KinematicTree::from_urdf_file(urdf)?;
        let srdf_doc = Srdf::from_file(srdf)?;
        Self::new(tree, &srdf_doc, group, &srdf.display().to_string())
    }

    /// Parses URDF and SRDF text (the names label errors).
    pub fn from_strs(
        urdf: &str,
        urdf_name: &str,
        srdf: &str,
        srdf_name: &str,
        group: &str,
    ) -> Result<Self, DescriptionError> {
        let tree = KinematicTree::from_urdf_str(urdf, urdf_name)?;
        let srdf_doc = Srdf::from_str(srdf, srdf_name)?;
        Self::new(tree, &srdf_doc, group, srdf_name)
    }

    /// Builds the model from a parsed description.
    pub fn new(
        tree: KinematicTree,
        srdf: &Srdf,
        group: &str,
        srdf_name: &str,
    ) -> Result<Self, DescriptionError> {
        let structure = |message: String| DescriptionError::Structure {
            source_name: srdf_name.to_string(),
            message,
        };
        if !srdf.robot_name.is_empty() && srdf.robot_name != tree.name {
            return Err(structure(format!(
                "the SRDF is for robot {:?}, the URDF describes {:?}",
                srdf.robot_name, tree.name
            )));
        }
        let (_, base_name, tip_name) = srdf
            .chains
            .iter()
            .find(|(g, _, _)| g == group)
            .ok_or_else(|| structure(format!("no chain group named {group:?}")))?;
        let link_of = |name: &str| {
            tree.link(name).ok_or_else(|| DescriptionError::Link {
                source_name: srdf_name.to_string(),
                link: name.to_string(),
                message: "not a link of the URDF".into(),
            })
        };
        let arm_base = link_of(base_name)?;
        let tool = link_of(tip_name)?;
        let path = tree.path(arm_base, tool).ok_or_else(|| {
            structure(format!(
                "{tip_name:?} is not below {base_name:?} in the URDF"
            ))
        })?;

        // The mount: the root-to-arm-base path must be rigid.
        let mount_path = tree
            .path(tree.root, arm_base)
            .ok_or_else(|| structure(format!("{base_name:?} is not below the root")))?;
        let mut mount = Iso64::identity();
        for &j in &mount_path {
            let joint = &tree.joints[j];
            if joint.kind.is_movable() {
                return Err(DescriptionError::Joint {
                    source_name: srdf_name.to_string(),
                    joint: joint.name.clone(),
                    message: "joints between the root and the arm base must be fixed".into(),
                });
            }
            mount *= joint.origin;
        }

        // Arm joints and the chain.
        let mut active = Vec::new();
        let mut joints = Vec::new();
        let mut parts = Vec::new();
        let mut before = Iso64::identity();
        for &j in &path {
            let joint = &tree.joints[j];
            if !joint.kind.is_movable() {
                before *= joint.origin;
                continue;
            }
            if joint.mimic.is_some() {
                return Err(DescriptionError::Joint {
                    source_name: srdf_name.to_string(),
                    joint: joint.name.clone(),
                    message: "an arm joint cannot mimic another".into(),
                });
            }
            if joint.velocity <= 0.0 {
                return Err(DescriptionError::Joint {
                    source_name: srdf_name.to_string(),
                    joint: joint.name.clone(),
                    message: "an arm joint needs a positive velocity limit".into(),
                });
            }
            active.push(j);
            joints.push(joint.spec());
            parts.push((
                before * joint.origin,
                joint.axis,
                joint.kind != JointKind::Prismatic,
            ));
            before = Iso64::identity();
        }
        if active.is_empty() {
            return Err(structure(format!(
                "group {group:?} has no movable joint between {base_name:?} and {tip_name:?}"
            )));
        }
        let chain = SerialChain::new(
            parts
                .into_iter()
                .zip(&joints)
                .map(|((b, a, r), s)| (b, a, r, s))
                .collect(),
            before,
        );

        // Defaults of every other joint: 0 within the limits.
        let defaults: Vec<f64> = tree
            .joints
            .iter()
            .map(|j| {
                if j.kind.is_movable() {
                    0.0_f64.clamp(j.lower, j.upper)
                } else {
                    0.0
                }
            })
            .collect();

        // The gripper: movable joints below the last arm joint.
        let last_child = tree.joints[*active.last().unwrap_or(&0)].child;
        let mut finger_joints: Vec<usize> = (0..tree.joints.len())
            .filter(|&j| {
                tree.joints[j].kind.is_movable()
                    && !active.contains(&j)
                    && tree.is_descendant(tree.joints[j].child, last_child)
            })
            .collect();
        finger_joints.sort_by_key(|&j| tree.joints[j].mimic.is_some());
        let finger_joint = finger_joints
            .first()
            .copied()
            .filter(|&j| tree.joints[j].mimic.is_none());
        let touch_links: Vec<String> = tree
            .order
            .iter()
            .filter(|&&l| tree.is_descendant(l, last_child))
            .map(|&l| tree.links[l].name.clone())
            .collect();
        let finger_links: Vec<usize> = tree
            .order
            .iter()
            .copied()
            .filter(|&l| {
                finger_joints
                    .iter()
                    .any(|&j| tree.is_descendant(l, tree.joints[j].child))
            })
            .collect();

        // Collision shapes.
        let mut shapes = Vec::new();
        for (l, link) in tree.links.iter().enumerate() {
            for c in &link.collisions {
                let (local, shape) = match &c.geometry {
                    Geometry::Box { size } => (
                        c.origin,
                        SharedShape::cuboid(
                            (size[0] / 2.0) as f32,
                            (size[1] / 2.0) as f32,
                            (size[2] / 2.0) as f32,
                        ),
                    ),
                    Geometry::Cylinder { radius, length } => (
                        // parry's cylinders run along y, URDF's along z.
                        c.origin
                            * UnitQuaternion::from_axis_angle(
                                &nalgebra::Vector3::x_axis(),
                                FRAC_PI_2,
                            ),
                        SharedShape::cylinder((length / 2.0) as f32, *radius as f32),
                    ),
                    Geometry::Sphere { radius } => (c.origin, SharedShape::ball(*radius as f32)),
                    Geometry::Mesh { vertices } => {
                        let points: Vec<_> = vertices
                            .iter()
                            .map(|v| {
                                parry3d::math::Point::new(v[0] as f32, v[1] as f32, v[2] as f32)
                            })
                            .collect();
                        let hull = SharedShape::convex_hull(&points).ok_or_else(|| {
                            DescriptionError::Link {
                                source_name: tree.name.clone(),
                                link: link.name.clone(),
                                message: format!(
                                    "the convex hull of a {}-vertex collision mesh is degenerate",
                                    vertices.len()
                                ),
                            }
                        })?;
                        (c.origin, hull)
                    }
                };
                shapes.push(ShapeTemplate {
                    link: l,
                    local,
                    shape,
                });
            }
        }

        // Pairs never checked: rigidly joined links, each link and its nearest ancestor
        // with geometry, and the SRDF's list.
        let n = tree.links.len();
        let mut ignore = vec![false; n * n];
        let mut set = |a: usize, b: usize| {
            ignore[a * n + b] = true;
            ignore[b * n + a] = true;
        };
        let rigid: Vec<usize> = (0..n).map(|l| tree.rigid_root(l)).collect();
        for a in 0..n {
            set(a, a);
            for b in a + 1..n {
                if rigid[a] == rigid[b] {
                    set(a, b);
                }
            }
            if let Some(p) = tree.geometric_parent(a) {
                set(a, p);
            }
        }
        for (a, b, _) in &srdf.disabled_collisions {
            set(link_of(a)?, link_of(b)?);
        }

        // Named configurations of this group.
        let mut named = Vec::new();
        for gs in &srdf.group_states {
            let (state, values) = (&gs.name, &gs.values);
            if gs.group != group {
                continue;
            }
            let state_error = |message: String| DescriptionError::GroupState {
                source_name: srdf_name.to_string(),
                state: state.clone(),
                message,
            };
            let mut q = vec![f64::NAN; joints.len()];
            for (jn, v) in values {
                let i = joints.iter().position(|s| &s.name == jn).ok_or_else(|| {
                    state_error(format!("{jn:?} is not a joint of group {group:?}"))
                })?;
                if !joints[i].contains(*v, 1e-9) {
                    return Err(state_error(format!(
                        "{jn} = {v} is outside [{}, {}]",
                        joints[i].lower, joints[i].upper
                    )));
                }
                q[i] = *v;
            }
            if let Some(i) = q.iter().position(|v| v.is_nan()) {
                return Err(state_error(format!(
                    "joint {:?} has no value",
                    joints[i].name
                )));
            }
            named.push((state.clone(), q));
        }

        // The gripper description.
        let mut gripper = GripperSpec {
            name: srdf
                .end_effectors
                .iter()
                .find(|(_, parent, _)| parent == tip_name)
                .map(|(name, _, _)| name.clone())
                .unwrap_or_else(|| "gripper".into()),
            tool_frame: tip_name.clone(),
            finger_joints: finger_joints
                .iter()
                .map(|&j| tree.joints[j].name.clone())
                .collect(),
            finger_links: finger_links
                .iter()
                .map(|&l| tree.links[l].name.clone())
                .collect(),
            touch_links,
            min_gap: 0.0,
            max_gap: 0.0,
            max_effort: 0.0,
            max_speed: 0.0,
            finger: FingerGeometry {
                length: 0.0,
                width: 0.0,
                thickness: 0.0,
                center_z: 0.0,
                tip_z: 0.0,
            },
        };
        if let Some(fj) = finger_joint {
            let joint = &tree.joints[fj];
            gripper.min_gap = 2.0 * joint.lower;
            gripper.max_gap = 2.0 * joint.upper;
            gripper.max_effort = joint.effort;
            gripper.max_speed = 2.0 * joint.velocity;
            // The pad: the driven finger's first box, measured in the tool frame.
            let finger_link = joint.child;
            if let Some(c) = tree.links[finger_link].collisions.first()
                && let Geometry::Box { size } = c.geometry
            {
                let poses = tree.link_poses(&defaults);
                let in_tool = poses[tool].inverse() * poses[finger_link] * c.origin;
                let z = in_tool.translation.vector.z;
                // The box extent along the tool's z, x and y axes.
                let ext = |axis: usize| {
                    (0..3)
                        .map(|k| {
                            let mut e = nalgebra::Vector3::zeros();
                            e[k] = size[k];
                            let v = in_tool.rotation * e;
                            v[axis].abs()
                        })
                        .sum::<f64>()
                };
                gripper.finger = FingerGeometry {
                    length: ext(2),
                    width: ext(0),
                    thickness: ext(1),
                    center_z: z,
                    tip_z: z + ext(2) / 2.0,
                };
            }
        }

        // Footprint: the root link's collision boxes, projected on the floor.
        let footprint = if tree.root == arm_base {
            Vec::new()
        } else {
            footprint_of(&shapes, tree.root)
        };

        Ok(Self {
            name: tree.name.clone(),
            arm_base,
            tool,
            active,
            joints,
            chain,
            mount,
            mount_inv: mount.inverse(),
            defaults,
            finger_joint,
            shapes,
            ignore,
            named,
            gripper,
            footprint,
            tree,
        })
    }

    /// The kinematic tree behind the model.
    pub fn tree(&self) -> &KinematicTree {
        &self.tree
    }

    /// Whether the pair of links is skipped by [`RobotModel::self_collision`].
    pub fn is_collision_ignored(&self, a: &str, b: &str) -> Option<bool> {
        let n = self.tree.links.len();
        Some(self.ignore[self.tree.link(a)? * n + self.tree.link(b)?])
    }

    fn values(&self, q: &[f64], finger_gap: f64) -> Vec<f64> {
        debug_assert_eq!(q.len(), self.active.len(), "configuration length");
        let mut values = self.defaults.clone();
        for (&j, &v) in self.active.iter().zip(q) {
            values[j] = v;
        }
        if let Some(f) = self.finger_joint {
            values[f] = self.gripper.joint_for_gap(finger_gap);
        }
        values
    }

    /// Link poses in the arm base frame (f64), indexed like the tree's links.
    fn poses(&self, q: &[f64], finger_gap: f64) -> Vec<Iso64> {
        self.tree
            .link_poses(&self.values(q, finger_gap))
            .into_iter()
            .map(|p| self.mount_inv * p)
            .collect()
    }

    /// Extra IK seeds: the named configurations.
    fn seeds(&self) -> Vec<Vec<f64>> {
        self.named.iter().map(|(_, q)| q.clone()).collect()
    }
}

fn footprint_of(shapes: &[ShapeTemplate], root: usize) -> Vec<[f64; 2]> {
    let mut min = [f64::INFINITY; 2];
    let mut max = [f64::NEG_INFINITY; 2];
    for s in shapes.iter().filter(|s| s.link == root) {
        let aabb = s.shape.compute_aabb(&to_f32(&s.local));
        for k in 0..2 {
            min[k] = min[k].min(f64::from(aabb.mins[k]));
            max[k] = max[k].max(f64::from(aabb.maxs[k]));
        }
    }
    if !min[0].is_finite() {
        return Vec::new();
    }
    vec![
        [min[0], min[1]],
        [max[0], min[1]],
        [max[0], max[1]],
        [min[0], max[1]],
    ]
}

impl RobotModel for UrdfArm {
    fn name(&self) -> &str {
        &self.name
    }

    fn joints(&self) -> &[JointSpec] {
        &self.joints
    }

    fn arm_base_frame(&self) -> &str {
        &self.tree.links[self.arm_base].name
    }

    fn base_frame(&self) -> &str {
        &self.tree.links[self.tree.root].name
    }

    fn tool_frame(&self) -> &str {
        &self.tree.links[self.tool].name
    }

    fn mount(&self) -> Isometry3 {
        to_f32(&self.mount)
    }

    fn link_poses_with_gap(&self, q: &[f64], finger_gap: f64) -> Vec<(String, Isometry3)> {
        self.poses(q, finger_gap)
            .iter()
            .zip(&self.tree.links)
            .map(|(p, l)| (l.name.clone(), to_f32(p)))
            .collect()
    }

    fn joint_frames(&self, q: &[f64], finger_gap: f64) -> Vec<JointFrame> {
        let local = self.tree.joint_transforms(&self.values(q, finger_gap));
        self.tree
            .joints
            .iter()
            .zip(local)
            .map(|(j, pose)| JointFrame {
                parent: self.tree.links[j.parent].name.clone(),
                child: self.tree.links[j.child].name.clone(),
                pose: to_f32(&pose),
                fixed: !j.kind.is_movable(),
            })
            .collect()
    }

    fn urdf(&self) -> &str {
        self.tree.urdf()
    }

    fn link_pose(&self, q: &[f64], link: &str) -> Option<Isometry3> {
        let l = self.tree.link(link)?;
        Some(to_f32(&self.poses(q, self.gripper.max_gap)[l]))
    }

    fn tool_pose(&self, q: &[f64]) -> Isometry3 {
        to_f32(&self.chain.forward(q))
    }

    fn inverse_filtered(
        &self,
        target: &Isometry3,
        seed: &[f64],
        opts: &IkOptions,
        accept: SolutionFilter<'_>,
    ) -> Result<Vec<f64>, IkError> {
        let finite = target.translation.vector.iter().all(|v| v.is_finite())
            && target.rotation.coords.iter().all(|v| v.is_finite());
        if !finite {
            return Err(IkError::InvalidTarget(format!(
                "translation {:?}, rotation {:?}",
                target.translation.vector.as_slice(),
                target.rotation.coords.as_slice()
            )));
        }
        self.chain
            .inverse(&to_f64(target), seed, &self.seeds(), opts, accept)
    }

    fn collision_shapes_with_gap(&self, q: &[f64], finger_gap: f64) -> Vec<LinkShape> {
        let poses = self.poses(q, finger_gap);
        self.shapes
            .iter()
            .map(|s| LinkShape {
                link: self.tree.links[s.link].name.clone(),
                pose: to_f32(&(poses[s.link] * s.local)),
                shape: s.shape.clone(),
            })
            .collect()
    }

    fn self_collision(&self, shapes: &[LinkShape]) -> Option<(String, String)> {
        let n = self.tree.links.len();
        let index: Vec<Option<usize>> = shapes.iter().map(|s| self.tree.link(&s.link)).collect();
        let spheres: Vec<_> = shapes
            .iter()
            .map(|s| s.shape.compute_bounding_sphere(&s.pose))
            .collect();
        for a in 0..shapes.len() {
            let Some(la) = index[a] else { continue };
            for b in a + 1..shapes.len() {
                let Some(lb) = index[b] else { continue };
                if self.ignore[la * n + lb] || !spheres[a].intersects(&spheres[b]) {
                    continue;
                }
                let hit = parry3d::query::intersection_test(
                    &shapes[a].pose,
                    shapes[a].shape.as_ref(),
                    &shapes[b].pose,
                    shapes[b].shape.as_ref(),
                )
                .unwrap_or(true);
                if hit {
                    return Some((shapes[a].link.clone(), shapes[b].link.clone()));
                }
            }
        }
        None
    }

    fn ignored_collision_pairs(&self) -> Vec<(String, String)> {
        let n = self.tree.links.len();
        let geometric: Vec<usize> = (0..n)
            .filter(|&l| !self.tree.links[l].collisions.is_empty())
            .collect();
        let mut pairs = Vec::new();
        for (i, &a) in geometric.iter().enumerate() {
            for &b in &geometric[i + 1..] {
                if self.ignore[a * n + b] {
                    pairs.push((
                        self.tree.links[a].name.clone(),
                        self.tree.links[b].name.clone(),
                    ));
                }
            }
        }
        pairs
    }

    fn named_configuration(&self, name: &str) -> Option<Vec<f64>> {
        self.named
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, q)| q.clone())
    }

    fn named_configurations(&self) -> Vec<String> {
        self.named.iter().map(|(n, _)| n.clone()).collect()
    }

    fn gripper(&self) -> &GripperSpec {
        &self.gripper
    }

    fn footprint(&self) -> Vec<[f64; 2]> {
        self.footprint.clone()
    }
}

/// The UFactory xArm6 with the xArm Gripper, from the descriptions in `urdf/`.
#[derive(Debug, Clone)]
pub struct Xarm6(UrdfArm);

impl Xarm6 {
    /// The SRDF planning group of the arm.
    pub const GROUP: &'static str = "xarm6";

    /// The mobile manipulator: base, head camera, arm on its pedestal (`xarm6_on_base`).
    pub fn on_base() -> Result<Self, DescriptionError> {
        UrdfArm::from_strs(
            XARM6_ON_BASE_URDF,
            "urdf/xarm6_on_base.urdf",
            XARM6_ON_BASE_SRDF,
            "urdf/xarm6_on_base.srdf",
            Self::GROUP,
        )
        .map(Self)
    }

    /// The arm alone (root `link_base`).
    pub fn arm_only() -> Result<Self, DescriptionError> {
        UrdfArm::from_strs(
            XARM6_URDF,
            "urdf/xarm6.urdf",
            XARM6_SRDF,
            "urdf/xarm6.srdf",
            Self::GROUP,
        )
        .map(Self)
    }

    /// An xArm6 description on disk (e.g. one edited by a user).
    pub fn from_files(urdf: &Path, srdf: &Path) -> Result<Self, DescriptionError> {
        UrdfArm::from_files(urdf, srdf, Self::GROUP).map(Self)
    }

    /// The generic URDF model underneath.
    pub fn model(&self) -> &UrdfArm {
        &self.0
    }
}

impl RobotModel for Xarm6 {
    fn name(&self) -> &str {
        self.0.name()
    }
    fn joints(&self) -> &[JointSpec] {
        self.0.joints()
    }
    fn arm_base_frame(&self) -> &str {
        self.0.arm_base_frame()
    }
    fn base_frame(&self) -> &str {
        self.0.base_frame()
    }
    fn tool_frame(&self) -> &str {
        self.0.tool_frame()
    }
    fn mount(&self) -> Isometry3 {
        self.0.mount()
    }
    fn link_poses_with_gap(&self, q: &[f64], finger_gap: f64) -> Vec<(String, Isometry3)> {
        self.0.link_poses_with_gap(q, finger_gap)
    }
    fn joint_frames(&self, q: &[f64], finger_gap: f64) -> Vec<JointFrame> {
        self.0.joint_frames(q, finger_gap)
    }
    fn urdf(&self) -> &str {
        self.0.urdf()
    }
    fn link_pose(&self, q: &[f64], link: &str) -> Option<Isometry3> {
        self.0.link_pose(q, link)
    }
    fn tool_pose(&self, q: &[f64]) -> Isometry3 {
        self.0.tool_pose(q)
    }
    fn inverse_filtered(
        &self,
        target: &Isometry3,
        seed: &[f64],
        opts: &IkOptions,
        accept: SolutionFilter<'_>,
    ) -> Result<Vec<f64>, IkError> {
        self.0.inverse_filtered(target, seed, opts, accept)
    }
    fn collision_shapes_with_gap(&self, q: &[f64], finger_gap: f64) -> Vec<LinkShape> {
        self.0.collision_shapes_with_gap(q, finger_gap)
    }
    fn self_collision(&self, shapes: &[LinkShape]) -> Option<(String, String)> {
        self.0.self_collision(shapes)
    }
    fn ignored_collision_pairs(&self) -> Vec<(String, String)> {
        self.0.ignored_collision_pairs()
    }
    fn named_configuration(&self, name: &str) -> Option<Vec<f64>> {
        self.0.named_configuration(name)
    }
    fn named_configurations(&self) -> Vec<String> {
        self.0.named_configurations()
    }
    fn gripper(&self) -> &GripperSpec {
        self.0.gripper()
    }
    fn footprint(&self) -> Vec<[f64; 2]> {
        self.0.footprint()
    }
}
