//! The world file format (YAML), exactly as written on disk. Every struct rejects unknown
//! keys; [`super::load`] turns a parsed file into a validated [`super::World`].

use asp_core::Skill;
use serde::{Deserialize, Serialize};

/// A world file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorldSpec {
    /// Short name, e.g. `tabletop`.
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// A floor plane at z = 0 (rendered and used as the support of last resort).
    #[serde(default)]
    pub floor: Option<FloorSpec>,
    /// Extent of the 2D occupancy grid; derived from the fixed objects when absent.
    #[serde(default)]
    pub map: Option<MapSpec>,
    #[serde(default)]
    pub light: LightSpec,
    pub objects: Vec<ObjectSpec>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FloorSpec {
    /// Side lengths (x, y) in metres, centred on `center`.
    pub size: [f32; 2],
    #[serde(default)]
    pub center: [f32; 2],
    #[serde(default = "default_floor_color")]
    pub color: [u8; 3],
}

fn default_floor_color() -> [u8; 3] {
    [150, 150, 145]
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MapSpec {
    /// Lower-left corner (x, y) of the grid in the map frame, metres.
    pub origin: [f32; 2],
    /// Side lengths (x, y), metres.
    pub size: [f32; 2],
}

/// A directional light with an ambient term (Lambert shading).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LightSpec {
    /// Direction the light travels (towards the scene), map frame.
    #[serde(default = "default_light_dir")]
    pub direction: [f32; 3],
    /// Ambient share of the brightness, [0, 1].
    #[serde(default = "default_ambient")]
    pub ambient: f32,
}

fn default_light_dir() -> [f32; 3] {
    [0.3, 0.2, -1.0]
}
fn default_ambient() -> f32 {
    0.35
}

impl Default for LightSpec {
    fn default() -> Self {
        Self {
            direction: default_light_dir(),
            ambient: default_ambient(),
        }
    }
}

/// A pose: position and roll-pitch-yaw (radians, or degrees with `rpy_deg`).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PoseSpec {
    #[serde(default)]
    pub xyz: [f32; 3],
    #[serde(default)]
    pub rpy: Option<[f32; 3]>,
    #[serde(default)]
    pub rpy_deg: Option<[f32; 3]>,
}

/// One object of the world: furniture, walls and everything the robot may act on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ObjectSpec {
    /// Unique name (lowercase, digits, `_`), e.g. `red_mug`.
    pub name: String,
    /// Free-text description a person (or a VLM) would give, e.g. "a red mug with a handle".
    #[serde(default)]
    pub description: String,
    /// Furniture and walls: never moves as a whole, part of the occupancy grid.
    #[serde(default)]
    pub fixed: bool,
    /// Default colour of the object's shapes.
    #[serde(default = "default_object_color")]
    pub color: [u8; 3],
    /// The object frame in the map.
    #[serde(default)]
    pub pose: PoseSpec,
    /// The body's own geometry, in the object frame.
    #[serde(default)]
    pub shapes: Vec<ShapeSpec>,
    /// Named parts with their own geometry and skills (handles, buttons, plugs…).
    #[serde(default)]
    pub parts: Vec<PartSpec>,
    /// Grids of keys (keyboards, keypads); each key becomes a part.
    #[serde(default)]
    pub keypads: Vec<KeypadSpec>,
    /// Articulated links (drawers, doors, lids).
    #[serde(default)]
    pub links: Vec<LinkSpec>,
    /// The object sits in a holder it can be pulled out of (plug, thumbtack).
    #[serde(default)]
    pub mount: Option<MountSpec>,
}

fn default_object_color() -> [u8; 3] {
    [180, 180, 180]
}

/// One primitive or mesh. Exactly one of the shape keys is given.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShapeSpec {
    /// A box with full side lengths `size`.
    #[serde(default, rename = "box")]
    pub cuboid: Option<BoxSpec>,
    /// A cylinder along its local z, centred on its frame.
    #[serde(default)]
    pub cylinder: Option<CylinderSpec>,
    #[serde(default)]
    pub sphere: Option<SphereSpec>,
    /// A capsule along its local z: `height` between the centres of its end spheres.
    #[serde(default)]
    pub capsule: Option<CylinderSpec>,
    /// An open-topped box (tray, drawer body, basket): a floor and four walls.
    #[serde(default)]
    pub open_box: Option<OpenBoxSpec>,
    /// An open-topped cylinder (bowl, cup, pan): a floor and a ring of wall segments.
    #[serde(default)]
    pub open_cylinder: Option<OpenCylinderSpec>,
    /// A triangle mesh from an OBJ file or inline.
    #[serde(default)]
    pub mesh: Option<MeshSpec>,
    /// Where the shape sits in its object (or link) frame. For open shapes the frame is
    /// at the centre of the floor's underside.
    #[serde(default)]
    pub at: PoseSpec,
    /// Colour override for this shape.
    #[serde(default)]
    pub color: Option<[u8; 3]>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BoxSpec {
    pub size: [f32; 3],
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CylinderSpec {
    pub radius: f32,
    pub height: f32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SphereSpec {
    pub radius: f32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenBoxSpec {
    /// Outer size (x, y, z).
    pub size: [f32; 3],
    /// Wall and floor thickness.
    #[serde(default = "default_wall")]
    pub wall: f32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenCylinderSpec {
    /// Outer radius.
    pub radius: f32,
    pub height: f32,
    #[serde(default = "default_wall")]
    pub wall: f32,
    /// Wall segments around the ring.
    #[serde(default = "default_segments")]
    pub segments: u32,
}

fn default_wall() -> f32 {
    0.005
}
fn default_segments() -> u32 {
    16
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MeshSpec {
    /// OBJ file, relative to the world file's folder.
    #[serde(default)]
    pub file: Option<String>,
    /// Inline vertices (x, y, z).
    #[serde(default)]
    pub vertices: Option<Vec<[f32; 3]>>,
    /// Inline triangles (indices into `vertices`).
    #[serde(default)]
    pub triangles: Option<Vec<[u32; 3]>>,
    #[serde(default = "one")]
    pub scale: f32,
}

fn one() -> f32 {
    1.0
}

/// What a part does when the robot acts on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PartFunctionSpec {
    /// Geometry only (a mug handle: grasping it grasps the object).
    #[default]
    None,
    /// A push button: a tip pushed `travel` into it along `press_axis` presses it.
    Button,
    /// A key of a keyboard or keypad: like a button, and it types its `symbol`.
    Key,
    /// A handle of an articulated link: grasping or hooking it and pulling moves the link.
    Handle,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PartSpec {
    /// Part name as a person would say it, e.g. "mug handle".
    pub name: String,
    /// Skills the part affords.
    #[serde(default)]
    pub skills: Vec<Skill>,
    #[serde(default)]
    pub function: PartFunctionSpec,
    /// Buttons and keys: the direction a push moves the part, in its frame.
    #[serde(default)]
    pub press_axis: Option<[f32; 3]>,
    /// Buttons and keys: how far past the surface a tip must go to register, metres.
    #[serde(default)]
    pub travel: Option<f32>,
    /// Keys: the symbol typed.
    #[serde(default)]
    pub symbol: Option<String>,
    /// Colour of the part's shapes (default: the object's).
    #[serde(default)]
    pub color: Option<[u8; 3]>,
    pub shapes: Vec<ShapeSpec>,
}

/// A grid of keys: `rows` of symbols, laid out from `at` (centre of the first key) along
/// +x (columns) and -y (rows) of the object frame.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeypadSpec {
    /// Part names are `"<prefix> <symbol>"`, e.g. `keypad 5`.
    pub prefix: String,
    /// Each string is one row of single-character symbols.
    pub rows: Vec<String>,
    /// Distance between key centres (x, y), metres.
    pub pitch: [f32; 2],
    /// Key cap size.
    pub key_size: [f32; 3],
    #[serde(default)]
    pub at: PoseSpec,
    #[serde(default = "default_key_travel")]
    pub travel: f32,
    #[serde(default)]
    pub color: Option<[u8; 3]>,
}

fn default_key_travel() -> f32 {
    0.003
}

/// The joint of an articulated link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JointKind {
    Prismatic,
    Revolute,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    /// e.g. `drawer`, `door`, `lid`.
    pub name: String,
    pub joint: JointKind,
    /// Joint frame in the object frame (the hinge line passes through it for revolute
    /// joints).
    #[serde(default)]
    pub origin: PoseSpec,
    /// Joint axis in the joint frame. Positive motion opens.
    pub axis: [f32; 3],
    /// `[lower, upper]` in metres or radians; `lower` is closed.
    pub limits: [f32; 2],
    /// Initial joint value.
    #[serde(default)]
    pub position: f32,
    /// Colour of the link's shapes.
    #[serde(default)]
    pub color: Option<[u8; 3]>,
    /// Geometry in the joint frame.
    #[serde(default)]
    pub shapes: Vec<ShapeSpec>,
    /// Parts riding on the link (its handle).
    #[serde(default)]
    pub parts: Vec<PartSpec>,
}

/// An object seated in a holder: it moves only along `axis` until pulled `release`
/// metres, then comes free.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MountSpec {
    /// The holder's object name (power strip, cork board).
    pub holder: String,
    /// Pull-out direction in the object frame.
    pub axis: [f32; 3],
    /// Distance along `axis` after which the object is free, metres.
    #[serde(default = "default_release")]
    pub release: f32,
}

fn default_release() -> f32 {
    0.015
}
