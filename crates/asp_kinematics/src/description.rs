//! The robot description: a URDF read with `urdf-rs` into a kinematic tree, and the
//! MoveIt SRDF (planning group, named states, end effector, disabled collision pairs).

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::Path;

use nalgebra::{Translation3, Unit, UnitQuaternion};
use serde::Deserialize;

use crate::error::DescriptionError;
use crate::model::JointSpec;
use crate::{Iso64, Vec64};

/// How a joint moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JointKind {
    Fixed,
    Revolute,
    /// A revolute joint without position limits.
    Continuous,
    Prismatic,
}

impl JointKind {
    pub fn is_movable(self) -> bool {
        self != JointKind::Fixed
    }
}

/// Collision geometry of a link, in the link's frame (URDF conventions: cylinders along
/// their local z axis).
#[derive(Debug, Clone, PartialEq)]
pub enum Geometry {
    Box {
        size: [f64; 3],
    },
    Cylinder {
        radius: f64,
        length: f64,
    },
    Sphere {
        radius: f64,
    },
    /// A mesh file's vertices (scaled, in the link's frame); collision uses their convex
    /// hull, as MoveIt's FCL does for a mesh of one convex part.
    Mesh {
        vertices: Vec<[f64; 3]>,
    },
}

/// One collision element of a link.
#[derive(Debug, Clone, PartialEq)]
pub struct CollisionElement {
    pub origin: Iso64,
    pub geometry: Geometry,
}

#[derive(Debug, Clone)]
pub struct TreeLink {
    pub name: String,
    /// Index of the joint whose child this link is (`None` for the root).
    pub parent_joint: Option<usize>,
    pub child_joints: Vec<usize>,
    pub collisions: Vec<CollisionElement>,
}

#[derive(Debug, Clone)]
pub struct TreeJoint {
    pub name: String,
    pub kind: JointKind,
    pub parent: usize,
    pub child: usize,
    /// Child frame in the parent frame at joint value 0.
    pub origin: Iso64,
    pub axis: Unit<Vec64>,
    pub lower: f64,
    pub upper: f64,
    pub velocity: f64,
    pub effort: f64,
    /// From URDF 1.2 `acceleration`; infinite when not given.
    pub acceleration: f64,
    /// `(master joint index, multiplier, offset)`.
    pub mimic: Option<(usize, f64, f64)>,
}

impl TreeJoint {
    /// The child frame in the parent frame at joint value `q`.
    pub fn transform(&self, q: f64) -> Iso64 {
        match self.kind {
            JointKind::Fixed => self.origin,
            JointKind::Revolute | JointKind::Continuous => {
                self.origin * UnitQuaternion::from_axis_angle(&self.axis, q)
            }
            JointKind::Prismatic => self.origin * Translation3::from(self.axis.into_inner() * q),
        }
    }

    /// The joint as a planning-group joint: its limits, velocity and effort, and its
    /// acceleration when the URDF gives one.
    pub fn spec(&self) -> JointSpec {
        JointSpec {
            name: self.name.clone(),
            lower: self.lower,
            upper: self.upper,
            max_velocity: self.velocity,
            max_acceleration: self.acceleration.is_finite().then_some(self.acceleration),
            max_effort: self.effort,
            revolute: self.kind != JointKind::Prismatic,
        }
    }
}

/// A URDF as a tree of links and joints, links in breadth-first order from the root.
#[derive(Debug, Clone)]
pub struct KinematicTree {
    pub name: String,
    pub links: Vec<TreeLink>,
    pub joints: Vec<TreeJoint>,
    pub root: usize,
    /// Link indices, every parent before its children.
    pub order: Vec<usize>,
    link_index: HashMap<String, usize>,
    joint_index: HashMap<String, usize>,
    /// The URDF text this tree was read from (what `/robot_description` carries).
    urdf: String,
}

impl KinematicTree {
    /// Reads a URDF file.
    pub fn from_urdf_file(path: &Path) -> Result<Self, DescriptionError> {
        let text = std::fs::read_to_string(path).map_err(|e| DescriptionError::Read {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        Self::parse(&text, &path.display().to_string(), path.parent())
    }

    /// Parses URDF text; `source_name` names it in errors (a file name). Mesh geometry
    /// needs the file's folder: use [`KinematicTree::from_urdf_file`] for it.
    pub fn from_urdf_str(text: &str, source_name: &str) -> Result<Self, DescriptionError> {
        Self::parse(text, source_name, None)
    }

    fn parse(
        text: &str,
        source_name: &str,
        folder: Option<&Path>,
    ) -> Result<Self, DescriptionError> {
        let robot = urdf_rs::read_from_string(text).map_err(|e| DescriptionError::Urdf {
            source_name: source_name.to_string(),
            message: e.to_string(),
        })?;
        let mut tree = Self::from_urdf(&robot, source_name, folder)?;
        tree.urdf = text.to_owned();
        Ok(tree)
    }

    fn from_urdf(
        robot: &urdf_rs::Robot,
        source_name: &str,
        folder: Option<&Path>,
    ) -> Result<Self, DescriptionError> {
        let structure = |message: String| DescriptionError::Structure {
            source_name: source_name.to_string(),
            message,
        };
        let mut links = Vec::with_capacity(robot.links.len());
        let mut link_index = HashMap::new();
        for l in &robot.links {
            if link_index.insert(l.name.clone(), links.len()).is_some() {
                return Err(structure(format!("link {:?} is defined twice", l.name)));
            }
            let mut collisions = Vec::with_capacity(l.collision.len());
            for c in &l.collision {
                let geometry = convert_geometry(&c.geometry, folder).map_err(|message| {
                    DescriptionError::Link {
                        source_name: source_name.to_string(),
                        link: l.name.clone(),
                        message,
                    }
                })?;
                collisions.push(CollisionElement {
                    origin: pose_to_iso(&c.origin),
                    geometry,
                });
            }
            links.push(TreeLink {
                name: l.name.clone(),
                parent_joint: None,
                child_joints: Vec::new(),
                collisions,
            });
        }

        let mut joints = Vec::with_capacity(robot.joints.len());
        let mut joint_index = HashMap::new();
        for j in &robot.joints {
            let joint_error = |message: String| DescriptionError::Joint {
                source_name: source_name.to_string(),
                joint: j.name.clone(),
                message,
            };
            if joint_index.insert(j.name.clone(), joints.len()).is_some() {
                return Err(joint_error("defined twice".into()));
            }
            let parent = *link_index
                .get(&j.parent.link)
                .ok_or_else(|| joint_error(format!("unknown parent link {:?}", j.parent.link)))?;
            let child = *link_index
                .get(&j.child.link)
                .ok_or_else(|| joint_error(format!("unknown child link {:?}", j.child.link)))?;
            let kind = match j.joint_type {
                urdf_rs::JointType::Fixed => JointKind::Fixed,
                urdf_rs::JointType::Revolute => JointKind::Revolute,
                urdf_rs::JointType::Continuous => JointKind::Continuous,
                urdf_rs::JointType::Prismatic => JointKind::Prismatic,
                ref other => {
                    return Err(joint_error(format!(
                        "joint type {other:?} is not supported (fixed, revolute, continuous, prismatic)"
                    )));
                }
            };
            let axis = Vec64::new(j.axis.xyz[0], j.axis.xyz[1], j.axis.xyz[2]);
            // a fixed joint's axis means nothing (the Stretch's URDF writes "0 0 0")
            let axis = match Unit::try_new(axis, 1e-9) {
                Some(a) => a,
                None if kind == JointKind::Fixed => Vec64::z_axis(),
                None => {
                    return Err(joint_error(format!(
                        "axis {:?} has zero length",
                        j.axis.xyz.0
                    )));
                }
            };
            let (lower, upper) = match kind {
                JointKind::Continuous => (f64::NEG_INFINITY, f64::INFINITY),
                JointKind::Fixed => (0.0, 0.0),
                _ => (j.limit.lower, j.limit.upper),
            };
            if kind.is_movable() {
                if lower.partial_cmp(&upper).is_none_or(|o| o.is_gt()) {
                    return Err(joint_error(format!(
                        "limit lower {lower} is above upper {upper}"
                    )));
                }
                // zero: none given (a continuous wheel without <limit>, a finger the
                // driver moves on its own); a joint a plan drives must have one
                if !(j.limit.velocity >= 0.0 && j.limit.velocity.is_finite()) {
                    return Err(joint_error(format!(
                        "limit velocity must be finite and not negative, got {}",
                        j.limit.velocity
                    )));
                }
            }
            if let Some(existing) = links[child].parent_joint {
                return Err(structure(format!(
                    "link {:?} is the child of both {:?} and {:?}",
                    j.child.link,
                    joints_name(&joints, existing),
                    j.name
                )));
            }
            links[child].parent_joint = Some(joints.len());
            links[parent].child_joints.push(joints.len());
            joints.push(TreeJoint {
                name: j.name.clone(),
                kind,
                parent,
                child,
                origin: pose_to_iso(&j.origin),
                axis,
                lower,
                upper,
                velocity: j.limit.velocity,
                effort: j.limit.effort,
                acceleration: j.limit.acceleration,
                mimic: None,
            });
        }
        // Mimic joints, resolved once every joint is known.
        for (i, j) in robot.joints.iter().enumerate() {
            if let Some(m) = &j.mimic {
                let master = *joint_index
                    .get(&m.joint)
                    .ok_or_else(|| DescriptionError::Joint {
                        source_name: source_name.to_string(),
                        joint: j.name.clone(),
                        message: format!("mimics unknown joint {:?}", m.joint),
                    })?;
                joints[i].mimic =
                    Some((master, m.multiplier.unwrap_or(1.0), m.offset.unwrap_or(0.0)));
            }
        }

        let roots: Vec<usize> = (0..links.len())
            .filter(|&i| links[i].parent_joint.is_none())
            .collect();
        let root = match roots.as_slice() {
            [r] => *r,
            [] => return Err(structure("the URDF has no root link (a cycle?)".into())),
            many => {
                let names: Vec<&str> = many.iter().map(|&i| links[i].name.as_str()).collect();
                return Err(structure(format!(
                    "the URDF has several root links: {names:?}"
                )));
            }
        };
        let mut order = Vec::with_capacity(links.len());
        let mut queue = VecDeque::from([root]);
        while let Some(l) = queue.pop_front() {
            order.push(l);
            for &j in &links[l].child_joints {
                queue.push_back(joints[j].child);
            }
        }
        if order.len() != links.len() {
            return Err(structure("some links are not connected to the root".into()));
        }
        Ok(Self {
            name: robot.name.clone(),
            links,
            joints,
            root,
            order,
            link_index,
            joint_index,
            urdf: String::new(),
        })
    }

    /// The URDF text the tree was read from.
    pub fn urdf(&self) -> &str {
        &self.urdf
    }

    /// Each joint's child frame in its parent frame for the joint values `values` (one
    /// per tree joint; mimic joints follow their masters), indexed like `joints`.
    pub fn joint_transforms(&self, values: &[f64]) -> Vec<Iso64> {
        self.joints
            .iter()
            .enumerate()
            .map(|(j, joint)| {
                let q = match joint.mimic {
                    Some((master, mult, offset)) => values[master] * mult + offset,
                    None => values[j],
                };
                joint.transform(q)
            })
            .collect()
    }

    pub fn link(&self, name: &str) -> Option<usize> {
        self.link_index.get(name).copied()
    }

    pub fn joint(&self, name: &str) -> Option<usize> {
        self.joint_index.get(name).copied()
    }

    /// Joints from `from` down to `to` (which must be a descendant), in order.
    pub fn path(&self, from: usize, to: usize) -> Option<Vec<usize>> {
        let mut path = Vec::new();
        let mut link = to;
        while link != from {
            let j = self.links[link].parent_joint?;
            path.push(j);
            link = self.joints[j].parent;
        }
        path.reverse();
        Some(path)
    }

    /// Every link's pose in the root frame for the joint values `values` (one per tree
    /// joint; mimic joints are recomputed from their masters).
    pub fn link_poses(&self, values: &[f64]) -> Vec<Iso64> {
        let mut poses = vec![Iso64::identity(); self.links.len()];
        let local = self.joint_transforms(values);
        for &l in &self.order {
            if let Some(j) = self.links[l].parent_joint {
                poses[l] = poses[self.joints[j].parent] * local[j];
            }
        }
        poses
    }

    /// Whether `link` is `ancestor` or below it.
    pub fn is_descendant(&self, link: usize, ancestor: usize) -> bool {
        let mut l = link;
        loop {
            if l == ancestor {
                return true;
            }
            match self.links[l].parent_joint {
                Some(j) => l = self.joints[j].parent,
                None => return false,
            }
        }
    }

    /// The nearest link at or above `link` whose parent joint is movable (or the root):
    /// links with the same rigid root never move relative to each other.
    pub fn rigid_root(&self, link: usize) -> usize {
        let mut l = link;
        while let Some(j) = self.links[l].parent_joint {
            if self.joints[j].kind.is_movable() {
                return l;
            }
            l = self.joints[j].parent;
        }
        l
    }

    /// The nearest proper ancestor of `link` that has collision geometry.
    pub fn geometric_parent(&self, link: usize) -> Option<usize> {
        let mut l = link;
        while let Some(j) = self.links[l].parent_joint {
            l = self.joints[j].parent;
            if !self.links[l].collisions.is_empty() {
                return Some(l);
            }
        }
        None
    }
}

fn joints_name(joints: &[TreeJoint], i: usize) -> &str {
    joints.get(i).map(|j| j.name.as_str()).unwrap_or("?")
}

fn pose_to_iso(p: &urdf_rs::Pose) -> Iso64 {
    let t = Translation3::new(p.xyz[0], p.xyz[1], p.xyz[2]);
    // URDF rpy: fixed-axis roll about x, then pitch about y, then yaw about z.
    let r = UnitQuaternion::from_euler_angles(p.rpy[0], p.rpy[1], p.rpy[2]);
    Iso64::from_parts(t, r)
}

fn convert_geometry(g: &urdf_rs::Geometry, folder: Option<&Path>) -> Result<Geometry, String> {
    let positive = |what: &str, v: f64| {
        if v > 0.0 && v.is_finite() {
            Ok(v)
        } else {
            Err(format!(
                "collision {what} must be positive and finite, got {v}"
            ))
        }
    };
    match g {
        urdf_rs::Geometry::Box { size } => Ok(Geometry::Box {
            size: [
                positive("box size x", size[0])?,
                positive("box size y", size[1])?,
                positive("box size z", size[2])?,
            ],
        }),
        urdf_rs::Geometry::Cylinder { radius, length } => Ok(Geometry::Cylinder {
            radius: positive("cylinder radius", *radius)?,
            length: positive("cylinder length", *length)?,
        }),
        urdf_rs::Geometry::Sphere { radius } => Ok(Geometry::Sphere {
            radius: positive("sphere radius", *radius)?,
        }),
        urdf_rs::Geometry::Capsule { radius, length } => Err(format!(
            "capsule geometry (radius {radius}, length {length}) is not standard URDF; use a cylinder"
        )),
        urdf_rs::Geometry::Mesh { filename, scale } => {
            let scale = scale.as_ref().map_or([1.0; 3], |s| **s);
            for (axis, v) in ["x", "y", "z"].iter().zip(scale) {
                positive(&format!("mesh scale {axis}"), v)?;
            }
            let vertices = read_mesh(filename, folder)?;
            Ok(Geometry::Mesh {
                vertices: vertices
                    .into_iter()
                    .map(|v| [v[0] * scale[0], v[1] * scale[1], v[2] * scale[2]])
                    .collect(),
            })
        }
    }
}

/// The vertices of an STL mesh a URDF names, relative to the URDF's folder (or a
/// `file://` path). `package://` needs a ROS package index, which the embedded
/// description has none of: the Stretch's package writes its meshes relative.
fn read_mesh(filename: &str, folder: Option<&Path>) -> Result<Vec<[f64; 3]>, String> {
    if filename.starts_with("package://") {
        return Err(format!(
            "mesh {filename:?}: package:// paths are not resolved here; give the mesh relative to the URDF file"
        ));
    }
    let path = match filename.strip_prefix("file://") {
        Some(absolute) => std::path::PathBuf::from(absolute),
        None => match folder {
            Some(dir) => dir.join(filename),
            None => {
                return Err(format!(
                    "mesh {filename:?}: a mesh is read relative to the URDF file; load the description from its file"
                ));
            }
        },
    };
    let is_stl = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("stl"));
    if !is_stl {
        return Err(format!(
            "mesh {}: only STL collision meshes are read",
            path.display()
        ));
    }
    let mut file = std::fs::File::open(&path)
        .map_err(|e| format!("mesh {}: cannot open: {e}", path.display()))?;
    let mesh = stl_io::read_stl(&mut file)
        .map_err(|e| format!("mesh {}: not a readable STL file: {e}", path.display()))?;
    if mesh.vertices.len() < 4 {
        return Err(format!(
            "mesh {}: {} vertices do not enclose a volume",
            path.display(),
            mesh.vertices.len()
        ));
    }
    Ok(mesh
        .vertices
        .iter()
        .map(|v| [f64::from(v[0]), f64::from(v[1]), f64::from(v[2])])
        .collect())
}

/// A named joint configuration of a group (`<group_state>`).
#[derive(Debug, Clone, PartialEq)]
pub struct GroupState {
    pub name: String,
    pub group: String,
    pub values: Vec<(String, f64)>,
}

/// The parts of a MoveIt SRDF the planner uses.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Srdf {
    pub robot_name: String,
    /// Planning groups given as a chain: `(group, base_link, tip_link)`.
    pub chains: Vec<(String, String, String)>,
    /// Named joint configurations, in file order.
    pub group_states: Vec<GroupState>,
    /// `(end effector name, parent link, group)`.
    pub end_effectors: Vec<(String, String, String)>,
    /// Link pairs never checked against each other, with the reason given.
    pub disabled_collisions: Vec<(String, String, String)>,
}

#[derive(Debug, Deserialize)]
struct SrdfXml {
    #[serde(rename = "@name", default)]
    name: String,
    #[serde(rename = "group", default)]
    groups: Vec<GroupXml>,
    #[serde(rename = "group_state", default)]
    group_states: Vec<GroupStateXml>,
    #[serde(rename = "end_effector", default)]
    end_effectors: Vec<EndEffectorXml>,
    #[serde(rename = "disable_collisions", default)]
    disable_collisions: Vec<DisableXml>,
}

#[derive(Debug, Deserialize)]
struct GroupXml {
    #[serde(rename = "@name")]
    name: String,
    #[serde(rename = "chain", default)]
    chains: Vec<ChainXml>,
}

#[derive(Debug, Deserialize)]
struct ChainXml {
    #[serde(rename = "@base_link")]
    base_link: String,
    #[serde(rename = "@tip_link")]
    tip_link: String,
}

#[derive(Debug, Deserialize)]
struct GroupStateXml {
    #[serde(rename = "@name")]
    name: String,
    #[serde(rename = "@group")]
    group: String,
    #[serde(rename = "joint", default)]
    joints: Vec<JointValueXml>,
}

#[derive(Debug, Deserialize)]
struct JointValueXml {
    #[serde(rename = "@name")]
    name: String,
    #[serde(rename = "@value")]
    value: String,
}

#[derive(Debug, Deserialize)]
struct EndEffectorXml {
    #[serde(rename = "@name")]
    name: String,
    #[serde(rename = "@parent_link")]
    parent_link: String,
    #[serde(rename = "@group")]
    group: String,
}

#[derive(Debug, Deserialize)]
struct DisableXml {
    #[serde(rename = "@link1")]
    link1: String,
    #[serde(rename = "@link2")]
    link2: String,
    #[serde(rename = "@reason", default)]
    reason: String,
}

impl Srdf {
    pub fn from_file(path: &Path) -> Result<Self, DescriptionError> {
        let text = std::fs::read_to_string(path).map_err(|e| DescriptionError::Read {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        Self::from_str(&text, &path.display().to_string())
    }

    /// Parses SRDF text; `source_name` names it in errors.
    pub fn from_str(text: &str, source_name: &str) -> Result<Self, DescriptionError> {
        let xml: SrdfXml = quick_xml::de::from_str(text).map_err(|e| DescriptionError::Srdf {
            source_name: source_name.to_string(),
            message: e.to_string(),
        })?;
        let mut group_states = Vec::with_capacity(xml.group_states.len());
        let mut seen = HashSet::new();
        for s in xml.group_states {
            if !seen.insert(s.name.clone()) {
                return Err(DescriptionError::GroupState {
                    source_name: source_name.to_string(),
                    state: s.name,
                    message: "defined twice".into(),
                });
            }
            let mut values = Vec::with_capacity(s.joints.len());
            for j in s.joints {
                let v: f64 = j
                    .value
                    .trim()
                    .parse()
                    .map_err(|_| DescriptionError::GroupState {
                        source_name: source_name.to_string(),
                        state: s.name.clone(),
                        message: format!("joint {:?} value {:?} is not a number", j.name, j.value),
                    })?;
                values.push((j.name, v));
            }
            group_states.push(GroupState {
                name: s.name,
                group: s.group,
                values,
            });
        }
        Ok(Srdf {
            robot_name: xml.name,
            chains: xml
                .groups
                .into_iter()
                .flat_map(|g| {
                    let name = g.name;
                    g.chains
                        .into_iter()
                        .map(move |c| (name.clone(), c.base_link, c.tip_link))
                })
                .collect(),
            group_states,
            end_effectors: xml
                .end_effectors
                .into_iter()
                .map(|e| (e.name, e.parent_link, e.group))
                .collect(),
            disabled_collisions: xml
                .disable_collisions
                .into_iter()
                .map(|d| (d.link1, d.link2, d.reason))
                .collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_relative_eq;

    const TWO_LINKS: &str = r#"<robot name="t">
      <link name="a"><collision><geometry><box size="1 1 1"/></geometry></collision></link>
      <link name="b"/>
      <link name="c"><collision><geometry><sphere radius="0.1"/></geometry></collision></link>
      <joint name="j1" type="revolute"><parent link="a"/><child link="b"/>
        <origin xyz="0 0 1" rpy="0 0 0"/><axis xyz="0 0 1"/>
        <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
      <joint name="j2" type="prismatic"><parent link="b"/><child link="c"/>
        <origin xyz="1 0 0" rpy="0 0 0"/><axis xyz="1 0 0"/>
        <limit lower="0" upper="0.5" effort="1" velocity="1"/></joint>
    </robot>"#;

    #[test]
    fn builds_a_tree_and_computes_poses() {
        let tree = KinematicTree::from_urdf_str(TWO_LINKS, "two_links.urdf").unwrap();
        assert_eq!(tree.links[tree.root].name, "a");
        let a = tree.link("a").unwrap();
        let c = tree.link("c").unwrap();
        assert_eq!(tree.path(a, c).unwrap().len(), 2);
        assert_eq!(tree.geometric_parent(c), Some(a));
        // j1 = 90° turns the arm b→c to +y; j2 = 0.25 slides c further along b's x.
        let poses = tree.link_poses(&[std::f64::consts::FRAC_PI_2, 0.25]);
        let p = poses[c].translation.vector;
        assert_relative_eq!(p, Vec64::new(0.0, 1.25, 1.0), epsilon = 1e-12);
    }

    /// A mesh is read beside the URDF file, scaled; what cannot be read names the mesh.
    #[test]
    fn collision_meshes_are_read_relative_to_the_urdf() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("meshes")).unwrap();
        let tetrahedron = "solid t\n\
            facet normal 0 0 -1\n outer loop\n vertex 0 0 0\n vertex 1 0 0\n vertex 0 1 0\n endloop\n endfacet\n\
            facet normal 0 -1 0\n outer loop\n vertex 0 0 0\n vertex 0 0 1\n vertex 1 0 0\n endloop\n endfacet\n\
            facet normal -1 0 0\n outer loop\n vertex 0 0 0\n vertex 0 1 0\n vertex 0 0 1\n endloop\n endfacet\n\
            facet normal 1 1 1\n outer loop\n vertex 1 0 0\n vertex 0 0 1\n vertex 0 1 0\n endloop\n endfacet\n\
            endsolid t\n";
        std::fs::write(dir.path().join("meshes/tet.STL"), tetrahedron).unwrap();
        let with = |mesh: &str| {
            let urdf = dir.path().join("robot.urdf");
            std::fs::write(&urdf, TWO_LINKS.replace(r#"<sphere radius="0.1"/>"#, mesh)).unwrap();
            KinematicTree::from_urdf_file(&urdf)
        };
        let tree = with(r#"<mesh filename="./meshes/tet.STL" scale="2 2 0.5"/>"#).unwrap();
        let c = &tree.links[tree.link("c").unwrap()];
        let Geometry::Mesh { vertices } = &c.collisions[0].geometry else {
            panic!("{:?}", c.collisions);
        };
        assert_eq!(vertices.len(), 4);
        let top = vertices.iter().map(|v| v[2]).fold(f64::MIN, f64::max);
        let side = vertices.iter().map(|v| v[0]).fold(f64::MIN, f64::max);
        assert_eq!((top, side), (0.5, 2.0));
        for (mesh, expect) in [
            (
                r#"<mesh filename="package://stretch/meshes/tet.STL"/>"#,
                "package://",
            ),
            (r#"<mesh filename="meshes/gone.STL"/>"#, "cannot open"),
            (r#"<mesh filename="meshes/tet.dae"/>"#, "only STL"),
            (
                r#"<mesh filename="meshes/tet.STL" scale="1 0 1"/>"#,
                "mesh scale y",
            ),
        ] {
            let e = with(mesh).unwrap_err().to_string();
            assert!(e.contains("\"c\"") && e.contains(expect), "{mesh}: {e}");
        }
    }

    #[test]
    fn errors_name_the_file_and_the_element() {
        let bad_parent = TWO_LINKS.replace(r#"<parent link="b"/>"#, r#"<parent link="zz"/>"#);
        let e = KinematicTree::from_urdf_str(&bad_parent, "robot.urdf").unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("robot.urdf") && msg.contains("j2") && msg.contains("zz"),
            "{msg}"
        );

        let mesh = TWO_LINKS.replace(r#"<sphere radius="0.1"/>"#, r#"<mesh filename="c.stl"/>"#);
        let msg = KinematicTree::from_urdf_str(&mesh, "robot.urdf")
            .unwrap_err()
            .to_string();
        assert!(msg.contains("\"c\"") && msg.contains("c.stl"), "{msg}");

        let inverted = TWO_LINKS.replace(r#"lower="0" upper="0.5""#, r#"lower="1" upper="0.5""#);
        let msg = KinematicTree::from_urdf_str(&inverted, "robot.urdf")
            .unwrap_err()
            .to_string();
        assert!(msg.contains("j2") && msg.contains("lower 1"), "{msg}");

        let msg = KinematicTree::from_urdf_str("<robot name=", "broken.urdf")
            .unwrap_err()
            .to_string();
        assert!(msg.contains("broken.urdf"), "{msg}");
    }

    #[test]
    fn parses_srdf_states_and_reports_bad_values() {
        let srdf = r#"<robot name="t">
          <group name="arm"><chain base_link="a" tip_link="c"/></group>
          <group_state name="home" group="arm"><joint name="j1" value="0.5"/><joint name="j2" value="0"/></group_state>
          <disable_collisions link1="a" link2="c" reason="Never"/>
          <end_effector name="hand" parent_link="c" group="hand"/>
        </robot>"#;
        let s = Srdf::from_str(srdf, "t.srdf").unwrap();
        assert_eq!(s.chains, vec![("arm".into(), "a".into(), "c".into())]);
        assert_eq!(s.group_states[0].values[0], ("j1".to_string(), 0.5));
        assert_eq!(s.disabled_collisions.len(), 1);
        assert_eq!(s.end_effectors[0].1, "c");

        let bad = srdf.replace(r#"value="0.5""#, r#"value="half""#);
        let msg = Srdf::from_str(&bad, "t.srdf").unwrap_err().to_string();
        assert!(
            msg.contains("home") && msg.contains("half") && msg.contains("t.srdf"),
            "{msg}"
        );
    }
}
