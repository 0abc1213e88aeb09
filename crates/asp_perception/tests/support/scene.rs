//! Synthetic RGB-D keyframes with ground truth: axis-aligned boxes in the map frame,
//! ray-cast from posed pinhole cameras (depth, colour, instance ids), optional Gaussian
//! depth noise. Stands in for the embedded simulator's frames.

#![allow(dead_code)]

use std::collections::BTreeMap;

use asp_core::geometry::{Isometry3, Point3, Transform, UnitQuaternion, Vector3};
use asp_core::image::Image;
use asp_core::models::{GroundTruth, GtInstance};
use asp_core::{CameraIntrinsics, RgbdFrame};
use nalgebra::{Matrix3, Rotation3};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};

/// A box object.
#[derive(Debug, Clone)]
pub struct SceneBox {
    pub id: u32,
    pub name: &'static str,
    pub description: &'static str,
    pub min: [f32; 3],
    pub max: [f32; 3],
    pub color: [u8; 3],
}

pub fn tabletop() -> Vec<SceneBox> {
    let b = |id, name, description, min, max, color| SceneBox {
        id,
        name,
        description,
        min,
        max,
        color,
    };
    vec![
        b(
            1,
            "table",
            "a wooden dining table",
            [0.6, -0.6, 0.0],
            [1.4, 0.6, 0.7],
            [150, 110, 60],
        ),
        b(
            2,
            "mug",
            "a red ceramic mug with a handle",
            [0.8, -0.3, 0.7],
            [0.88, -0.22, 0.8],
            [200, 30, 30],
        ),
        b(
            3,
            "bowl",
            "a blue plastic bowl",
            [0.9, 0.0, 0.7],
            [1.06, 0.16, 0.76],
            [30, 40, 200],
        ),
        b(
            4,
            "apple",
            "a green apple",
            [1.1, -0.15, 0.7],
            [1.17, -0.08, 0.77],
            [40, 190, 40],
        ),
        b(
            5,
            "book",
            "a yellow paperback book",
            [0.75, 0.25, 0.7],
            [0.97, 0.4, 0.74],
            [230, 210, 40],
        ),
    ]
}

/// A camera at `eye` looking at `target` (optical frame: z forward, x right, y down).
pub fn look_at(eye: [f32; 3], target: [f32; 3]) -> Transform {
    let e = Vector3::from(eye);
    let z = (Vector3::from(target) - e).normalize();
    let x = z.cross(&Vector3::z()).normalize();
    let y = z.cross(&x);
    let rot = Rotation3::from_matrix_unchecked(Matrix3::from_columns(&[x, y, z]));
    Transform::new(
        "map",
        "camera_color_optical_frame",
        Isometry3::from_parts(e.into(), UnitQuaternion::from_rotation_matrix(&rot)),
    )
}

fn hit(b: &SceneBox, o: &Vector3, d: &Vector3) -> Option<f32> {
    let (mut t0, mut t1) = (0.0f32, f32::MAX);
    for i in 0..3 {
        if d[i].abs() < 1e-9 {
            if o[i] < b.min[i] || o[i] > b.max[i] {
                return None;
            }
            continue;
        }
        let (a, c) = ((b.min[i] - o[i]) / d[i], (b.max[i] - o[i]) / d[i]);
        t0 = t0.max(a.min(c));
        t1 = t1.min(a.max(c));
    }
    (t0 <= t1 && t1 > 0.0).then_some(t0)
}

/// Renders one keyframe. Background (the floor at z = 0 and beyond) has instance id 0.
pub fn render(
    boxes: &[SceneBox],
    pose: &Transform,
    intrinsics: CameraIntrinsics,
    depth_noise: f32,
    seed: u64,
) -> RgbdFrame {
    let (w, h) = (intrinsics.width, intrinsics.height);
    let mut rgb = Vec::with_capacity((w * h) as usize);
    let mut depth = Vec::with_capacity((w * h) as usize);
    let mut ids = Vec::with_capacity((w * h) as usize);
    let o = pose.iso.translation.vector;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let noise = Normal::new(0.0f32, depth_noise.max(1e-12)).unwrap();
    for v in 0..h {
        for u in 0..w {
            let ray_cam = intrinsics
                .unproject(u as f32 + 0.5, v as f32 + 0.5, 1.0)
                .coords;
            let d = pose.iso.rotation * ray_cam; // camera z = 1 per unit t
            let mut best: Option<(f32, &SceneBox)> = None;
            for b in boxes {
                if let Some(t) = hit(b, &o, &d)
                    && best.is_none_or(|(bt, _)| t < bt)
                {
                    best = Some((t, b));
                }
            }
            // the floor
            let floor = (d.z < -1e-6).then(|| -o.z / d.z);
            match (best, floor) {
                (Some((t, b)), f) if f.is_none_or(|f| t <= f) => {
                    let n = if depth_noise > 0.0 {
                        noise.sample(&mut rng) * t * t
                    } else {
                        0.0
                    };
                    depth.push(t + n);
                    rgb.push(b.color);
                    ids.push(b.id);
                }
                (_, Some(f)) if f < 8.0 => {
                    depth.push(f);
                    rgb.push([90, 90, 90]);
                    ids.push(0);
                }
                _ => {
                    depth.push(0.0);
                    rgb.push([0, 0, 0]);
                    ids.push(0);
                }
            }
        }
    }
    let instances: BTreeMap<u32, GtInstance> = boxes
        .iter()
        .map(|b| {
            (
                b.id,
                GtInstance {
                    id: b.id,
                    name: b.name.into(),
                    description: b.description.into(),
                    fixed: false,
                },
            )
        })
        .collect();
    let instance_ids = Image::from_vec(w, h, ids).unwrap();
    let visible: std::collections::BTreeSet<u32> = instance_ids.pixels().iter().copied().collect();
    RgbdFrame {
        rgb: Image::from_vec(w, h, rgb).unwrap(),
        depth: Image::from_vec(w, h, depth).unwrap(),
        intrinsics,
        camera_pose: pose.clone(),
        stamp: 0.0,
        ground_truth: Some(GroundTruth {
            part_ids: Image::filled(w, h, 0),
            instances: instances
                .into_iter()
                .filter(|(k, _)| visible.contains(k))
                .collect(),
            parts: BTreeMap::new(),
            instance_ids,
        }),
    }
}

pub fn intrinsics(w: u32, h: u32) -> CameraIntrinsics {
    CameraIntrinsics::from_hfov(w, h, 69f32.to_radians())
}

/// Views of the tabletop from around its front half.
pub fn tabletop_views() -> Vec<Transform> {
    vec![
        look_at([0.0, 0.0, 1.4], [1.0, 0.0, 0.72]),
        look_at([0.2, -0.7, 1.35], [1.0, 0.0, 0.72]),
        look_at([0.2, 0.7, 1.35], [1.0, 0.0, 0.72]),
        look_at([0.1, -0.3, 1.6], [0.95, 0.05, 0.72]),
    ]
}

pub fn point(x: f32, y: f32, z: f32) -> Point3 {
    Point3::new(x, y, z)
}
