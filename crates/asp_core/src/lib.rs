//! The ASP domain model (SPEC §1–2), geometry and metrics: plain types with serde, no I/O
//! and no ROS. Every other crate speaks these types.

pub mod camera;
pub mod evidence;
pub mod geometry;
pub mod grid;
pub mod image;
pub mod map;
pub mod metrics;
pub mod models;
pub mod recall;
pub mod robot;
pub mod skill;
pub mod state;
pub mod storey;
pub mod web;

pub use camera::{CameraIntrinsics, RgbdFrame};
pub use evidence::{Cost, EvidencePayload, EvidenceRecord, EvidenceType, ProducerId};
pub use geometry::{FrameId, Isometry3, Point3, PointCloud, Pose2D, Real, Transform, Vector3};
pub use image::{Box2, DepthImage, Image, LabelImage, Mask, PixelRect, Rgb8, RgbImage};
pub use map::{Affordance, AffordanceProvenance, Crop, Object, ObjectId, ObjectMap};
pub use recall::{RecalledObject, Recollection};
pub use skill::{GripperPrecondition, Skill, SkillTarget};
pub use state::{Failure, FailureKind, ObjectKey, State, ToolOutput, ToolValue};
pub use storey::{FloorNumbering, Storey, Within};

/// Errors from constructing or combining core values; each names the offending value.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CoreError {
    #[error("an image of {width}×{height} needs {} pixels, got {len}", *width as usize * *height as usize)]
    ImageSize { width: u32, height: u32, len: usize },
    #[error("masks differ in size: {}×{} vs {}×{}", a.0, a.1, b.0, b.1)]
    MaskSize { a: (u32, u32), b: (u32, u32) },
    #[error("frame mismatch: expected {expected:?}, found {found:?}")]
    FrameMismatch { expected: String, found: String },
    #[error("{attribute} has {len} entries for {points} points")]
    AttributeLength {
        attribute: &'static str,
        points: usize,
        len: usize,
    },
    #[error(
        "invalid object key {0:?}: use lowercase letters, digits and '_', starting with a letter, at most 64 characters"
    )]
    InvalidObjectKey(String),
    #[error(
        "unknown skill {0:?}; known skills: grasp, place, drop, grasp_part, tip_push, pinch_pull, hook_pull, open, close"
    )]
    UnknownSkill(String),
    #[error("{0}")]
    InvalidArgument(String),
}
