//! A synthetic affordance-grounding set: simple rendered objects of the study's eight
//! categories with per-pixel instance and part labels, an instruction each, and the
//! ground-truth mask of the part that achieves it. Made in process from a seed, until the
//! embedded simulator generates the evaluation set.
//!
//! Each scene is a 160×120 RGB-D frame with the target object (random size, position,
//! colours, and layout where the category varies: handle side, plug socket, key, tack
//! position) and one distractor object; the sample's view is the target's crop padded by
//! 15 %, as the object map would hand it over.

use std::collections::BTreeMap;

use asp_core::models::{GroundTruth, GtInstance, GtPart, Observation};
use asp_core::{Box2, CameraIntrinsics, Image, LabelImage, Mask, PixelRect, Skill, Transform};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

pub const SCENE_WIDTH: u32 = 160;
pub const SCENE_HEIGHT: u32 = 120;

/// The study's object categories.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    Mug,
    Kettle,
    PowerStrip,
    Corkboard,
    Drawer,
    Cabinet,
    Keypad,
    DeskBell,
}

impl Category {
    pub const ALL: [Category; 8] = [
        Self::Mug,
        Self::Kettle,
        Self::PowerStrip,
        Self::Corkboard,
        Self::Drawer,
        Self::Cabinet,
        Self::Keypad,
        Self::DeskBell,
    ];

    /// How the agent would name the object.
    pub fn object_name(self) -> &'static str {
        match self {
            Self::Mug => "mug",
            Self::Kettle => "kettle",
            Self::PowerStrip => "power strip",
            Self::Corkboard => "corkboard",
            Self::Drawer => "drawer",
            Self::Cabinet => "cabinet",
            Self::Keypad => "keypad",
            Self::DeskBell => "desk bell",
        }
    }
}

/// What to render.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SceneSpec {
    pub category: Category,
    pub seed: u64,
}

impl SceneSpec {
    pub fn new(category: Category, seed: u64) -> Self {
        Self { category, seed }
    }
}

/// One evaluation sample.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroundingSample {
    pub id: String,
    pub category: Category,
    /// The object's crop with depth and ground truth.
    pub view: Observation,
    /// The object's segment in the view (what the object map provides).
    pub object_mask: Mask,
    pub object_name: String,
    pub action: String,
    /// The part that achieves the action, and its ground-truth mask in the view.
    pub part_name: String,
    pub truth: Mask,
    /// Intrinsics of the view (the scene camera's, cropped) and the `map → camera` pose.
    pub intrinsics: CameraIntrinsics,
    pub camera_pose: Transform,
}

struct Canvas {
    rgb: Image<[u8; 3]>,
    depth: Image<f32>,
    inst: LabelImage,
    part: LabelImage,
}

impl Canvas {
    fn paint(
        &mut self,
        inside: impl Fn(f32, f32) -> bool,
        rgb: [u8; 3],
        depth: f32,
        inst: u32,
        part: u32,
    ) {
        for y in 0..SCENE_HEIGHT {
            for x in 0..SCENE_WIDTH {
                if inside(x as f32 + 0.5, y as f32 + 0.5) {
                    if let Some(p) = self.rgb.get_mut(x, y) {
                        *p = rgb;
                    }
                    if let Some(p) = self.depth.get_mut(x, y) {
                        *p = depth;
                    }
                    if let Some(p) = self.inst.get_mut(x, y) {
                        *p = inst;
                    }
                    if let Some(p) = self.part.get_mut(x, y) {
                        *p = part;
                    }
                }
            }
        }
    }
}

fn rect(x0: f32, y0: f32, x1: f32, y1: f32) -> impl Fn(f32, f32) -> bool {
    move |x, y| x >= x0 && x < x1 && y >= y0 && y < y1
}

fn ellipse(cx: f32, cy: f32, rx: f32, ry: f32) -> impl Fn(f32, f32) -> bool {
    move |x, y| ((x - cx) / rx).powi(2) + ((y - cy) / ry).powi(2) <= 1.0
}

fn color(rng: &mut ChaCha8Rng) -> [u8; 3] {
    [
        rng.random_range(40..230),
        rng.random_range(40..230),
        rng.random_range(40..230),
    ]
}

struct Drawn {
    parts: Vec<(u32, String, Vec<Skill>)>,
    target_part: u32,
    action: String,
}

/// Where and as what an object is drawn: its box corner, size in pixels, instance id and
/// first part id.
struct Placement {
    x: f32,
    y: f32,
    size: f32,
    instance: u32,
    first_part: u32,
}

/// Draws `category` at `at`.
fn draw(c: &mut Canvas, rng: &mut ChaCha8Rng, category: Category, at: &Placement) -> Drawn {
    let (ox, oy, s, inst, first_part) = (at.x, at.y, at.size, at.instance, at.first_part);
    let body = color(rng);
    let accent = color(rng);
    let d = rng.random_range(0.7f32..1.0);
    let p0 = first_part;
    let mut parts = Vec::new();
    let (target_part, action);
    match category {
        Category::Mug => {
            let (w, h) = (s, 1.1 * s);
            let right = rng.random_bool(0.5);
            let bw = 0.7 * w;
            let (bx0, hx) = if right {
                (ox, ox + bw)
            } else {
                (ox + w - bw, ox + w - bw)
            };
            c.paint(rect(bx0, oy, bx0 + bw, oy + h), body, d, inst, 0);
            let (cx, cy) = (hx, oy + 0.5 * h);
            let (ro, ri) = (0.3 * w, 0.17 * w);
            c.paint(
                move |x, y| {
                    let r = (x - cx).hypot(y - cy);
                    r <= ro && r >= ri && if right { x >= cx } else { x < cx }
                },
                body,
                d - 0.01,
                inst,
                p0,
            );
            parts.push((p0, "mug handle".into(), vec![Skill::GraspPart]));
            target_part = p0;
            action = "pick up the mug by its handle".into();
        }
        Category::Kettle => {
            let (w, h) = (s, s);
            c.paint(
                ellipse(ox + 0.5 * w, oy + 0.6 * h, 0.5 * w, 0.4 * h),
                body,
                d,
                inst,
                0,
            );
            let (cx, cy) = (ox + 0.5 * w, oy + 0.3 * h);
            c.paint(
                move |x, y| {
                    let r = ((x - cx) / (0.35 * w)).hypot((y - cy) / (0.28 * h));
                    (0.7..=1.0).contains(&r) && y <= cy
                },
                accent,
                d - 0.01,
                inst,
                p0,
            );
            let bx = rng.random_range(0.55f32..0.7);
            c.paint(
                rect(
                    ox + bx * w,
                    oy + 0.78 * h,
                    ox + (bx + 0.14) * w,
                    oy + 0.88 * h,
                ),
                accent,
                d - 0.02,
                inst,
                p0 + 1,
            );
            parts.push((p0, "kettle handle".into(), vec![Skill::GraspPart]));
            parts.push((p0 + 1, "kettle button".into(), vec![Skill::TipPush]));
            target_part = p0 + 1;
            action = "turn on the kettle".into();
        }
        Category::PowerStrip => {
            let (w, h) = (s, 0.3 * s);
            let top = oy + 0.35 * s;
            c.paint(rect(ox, top, ox + w, top + h), body, d, inst, 0);
            let k = rng.random_range(0..3) as f32;
            let px = ox + (0.08 + 0.25 * k) * w;
            c.paint(
                rect(px, top - 0.3 * s, px + 0.16 * w, top + 0.6 * h),
                accent,
                d - 0.03,
                inst,
                p0,
            );
            c.paint(
                rect(ox + 0.86 * w, top + 0.25 * h, ox + 0.96 * w, top + 0.75 * h),
                [200, 30, 30],
                d - 0.01,
                inst,
                p0 + 1,
            );
            parts.push((p0, "plug".into(), vec![Skill::PinchPull]));
            parts.push((p0 + 1, "power switch".into(), vec![Skill::TipPush]));
            target_part = p0;
            action = "unplug the plug from the power strip".into();
        }
        Category::Corkboard => {
            let (w, h) = (s, 0.75 * s);
            c.paint(rect(ox, oy, ox + w, oy + h), [170, 120, 70], d, inst, 0);
            let (tx, ty) = (
                ox + rng.random_range(0.15f32..0.85) * w,
                oy + rng.random_range(0.15f32..0.85) * h,
            );
            c.paint(
                ellipse(tx, ty, 0.06 * w, 0.06 * w),
                accent,
                d - 0.01,
                inst,
                p0,
            );
            parts.push((p0, "thumbtack".into(), vec![Skill::PinchPull]));
            target_part = p0;
            action = "pull out the thumbtack".into();
        }
        Category::Drawer => {
            let (w, h) = (s, 0.5 * s);
            c.paint(rect(ox, oy, ox + w, oy + h), body, d, inst, 0);
            let hw = rng.random_range(0.25f32..0.4);
            c.paint(
                rect(
                    ox + (0.5 - hw / 2.0) * w,
                    oy + 0.42 * h,
                    ox + (0.5 + hw / 2.0) * w,
                    oy + 0.56 * h,
                ),
                accent,
                d - 0.02,
                inst,
                p0,
            );
            parts.push((
                p0,
                "drawer handle".into(),
                vec![Skill::HookPull, Skill::GraspPart],
            ));
            target_part = p0;
            action = "open the drawer".into();
        }
        Category::Cabinet => {
            let (w, h) = (0.65 * s, s);
            c.paint(rect(ox, oy, ox + w, oy + h), body, d, inst, 0);
            let right = rng.random_bool(0.5);
            let hx = if right { 0.8 } else { 0.1 };
            c.paint(
                rect(
                    ox + hx * w,
                    oy + 0.35 * h,
                    ox + (hx + 0.09) * w,
                    oy + 0.65 * h,
                ),
                accent,
                d - 0.02,
                inst,
                p0,
            );
            parts.push((
                p0,
                "door handle".into(),
                vec![Skill::HookPull, Skill::GraspPart],
            ));
            target_part = p0;
            action = "open the cabinet door".into();
        }
        Category::Keypad => {
            let (w, h) = (0.8 * s, s);
            c.paint(rect(ox, oy, ox + w, oy + h), body, d, inst, 0);
            let key = 0.24 * w;
            let gap = (w - 3.0 * key) / 4.0;
            let vgap = (h - 4.0 * key) / 5.0;
            for n in 0..10u32 {
                let (col, row) = if n == 0 {
                    (1, 3)
                } else {
                    ((n - 1) % 3, (n - 1) / 3)
                };
                let kx = ox + gap + col as f32 * (key + gap);
                let ky = oy + vgap + row as f32 * (key + vgap);
                c.paint(
                    rect(kx, ky, kx + key, ky + key),
                    accent,
                    d - 0.01,
                    inst,
                    p0 + n,
                );
                parts.push((p0 + n, format!("key {n}"), vec![Skill::TipPush]));
            }
            let k = rng.random_range(0..10u32);
            target_part = p0 + k;
            action = format!("press key {k}");
        }
        Category::DeskBell => {
            let (w, h) = (s, 0.8 * s);
            c.paint(rect(ox, oy + 0.8 * h, ox + w, oy + h), accent, d, inst, 0);
            let (cx, cy) = (ox + 0.5 * w, oy + 0.8 * h);
            c.paint(
                move |x, y| {
                    y <= cy
                        && ((x - cx) / (0.42 * w)).powi(2) + ((y - cy) / (0.55 * h)).powi(2) <= 1.0
                },
                body,
                d - 0.01,
                inst,
                0,
            );
            c.paint(
                rect(ox + 0.45 * w, oy + 0.1 * h, ox + 0.55 * w, oy + 0.27 * h),
                accent,
                d - 0.02,
                inst,
                p0,
            );
            parts.push((p0, "bell plunger".into(), vec![Skill::TipPush]));
            target_part = p0;
            action = "ring the desk bell".into();
        }
    }
    Drawn {
        parts,
        target_part,
        action,
    }
}

/// Renders one sample of `spec`.
pub fn render_scene(spec: &SceneSpec) -> GroundingSample {
    let mut rng = ChaCha8Rng::seed_from_u64(
        spec.seed
            .wrapping_mul(31)
            .wrapping_add(spec.category as u64),
    );
    let bg = [rng.random_range(90..140u8); 3];
    let mut c = Canvas {
        rgb: Image::filled(SCENE_WIDTH, SCENE_HEIGHT, bg),
        depth: Image::filled(SCENE_WIDTH, SCENE_HEIGHT, 1.2),
        inst: Image::filled(SCENE_WIDTH, SCENE_HEIGHT, 0),
        part: Image::filled(SCENE_WIDTH, SCENE_HEIGHT, 0),
    };
    // the distractor first, on the other half, so the target is drawn over any overlap
    let others: Vec<Category> = Category::ALL
        .iter()
        .copied()
        .filter(|k| *k != spec.category)
        .collect();
    let distractor = others[rng.random_range(0..others.len())];
    let left = rng.random_bool(0.5);
    let s = rng.random_range(55.0f32..75.0);
    let ds = rng.random_range(35.0f32..50.0);
    let (tx, dx) = if left {
        (rng.random_range(6.0f32..20.0), 110.0)
    } else {
        (rng.random_range(70.0f32..85.0), 4.0)
    };
    let ty = rng.random_range(6.0f32..(SCENE_HEIGHT as f32 - 1.1 * s - 4.0).max(7.0));
    let dy = rng.random_range(5.0f32..60.0);
    let dd = draw(
        &mut c,
        &mut rng,
        distractor,
        &Placement {
            x: dx,
            y: dy,
            size: ds,
            instance: 2,
            first_part: 100,
        },
    );
    let target = draw(
        &mut c,
        &mut rng,
        spec.category,
        &Placement {
            x: tx,
            y: ty,
            size: s,
            instance: 1,
            first_part: 1,
        },
    );

    let mut parts = BTreeMap::new();
    for (inst, drawn) in [(1u32, &target), (2, &dd)] {
        for (id, name, skills) in &drawn.parts {
            parts.insert(
                *id,
                GtPart {
                    id: *id,
                    instance: inst,
                    name: name.clone(),
                    skills: skills.clone(),
                    presses: 0,
                },
            );
        }
    }
    let instances = BTreeMap::from([
        (
            1,
            GtInstance {
                id: 1,
                name: spec.category.object_name().into(),
                description: format!("a {}", spec.category.object_name()),
                fixed: false,
            },
        ),
        (
            2,
            GtInstance {
                id: 2,
                name: distractor.object_name().into(),
                description: format!("a {}", distractor.object_name()),
                fixed: false,
            },
        ),
    ]);
    let gt = GroundTruth {
        instance_ids: c.inst,
        part_ids: c.part,
        instances,
        parts,
    };
    let full = Observation {
        rgb: c.rgb,
        depth: Some(c.depth),
        ground_truth: Some(gt),
    };
    let inst_rect = full
        .ground_truth
        .as_ref()
        .and_then(|g| g.instance_mask(1).bounding_rect())
        .unwrap_or(PixelRect {
            x0: 0,
            y0: 0,
            x1: SCENE_WIDTH,
            y1: SCENE_HEIGHT,
        });
    let pad = 0.15 * inst_rect.width().max(inst_rect.height()) as f32;
    let crop = inst_rect
        .to_box()
        .padded(pad)
        .to_pixel_rect(SCENE_WIDTH, SCENE_HEIGHT);
    let view = full.crop(&crop);
    let (object_mask, truth, part_name) = match &view.ground_truth {
        Some(g) => (
            g.instance_mask(1),
            g.part_mask(target.target_part),
            g.parts
                .get(&target.target_part)
                .map(|p| p.name.clone())
                .unwrap_or_default(),
        ),
        None => (Mask::empty(1, 1), Mask::empty(1, 1), String::new()),
    };
    let intrinsics =
        CameraIntrinsics::from_hfov(SCENE_WIDTH, SCENE_HEIGHT, 60f32.to_radians()).cropped(&crop);
    GroundingSample {
        id: format!(
            "{}_{}",
            spec.category.object_name().replace(' ', "_"),
            spec.seed
        ),
        category: spec.category,
        view,
        object_mask,
        object_name: spec.category.object_name().into(),
        action: target.action,
        part_name,
        truth,
        intrinsics,
        camera_pose: Transform::new("map", "camera", asp_core::Isometry3::identity()),
    }
}

/// `per_category` samples of every category, seeds `seed`, `seed + 1`, ….
pub fn dataset(per_category: usize, seed: u64) -> Vec<GroundingSample> {
    let mut out = Vec::new();
    for i in 0..per_category as u64 {
        for k in Category::ALL {
            out.push(render_scene(&SceneSpec::new(k, seed + i)));
        }
    }
    out
}

/// The bounding box of the object in its view.
pub fn object_box(sample: &GroundingSample) -> Box2 {
    sample.object_mask.bounding_rect().map_or(
        Box2::new(
            0.0,
            0.0,
            sample.view.width() as f32,
            sample.view.height() as f32,
        ),
        |r| r.to_box(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_category_renders_a_visible_target_part_inside_the_object() {
        for k in Category::ALL {
            for seed in 0..5 {
                let s = render_scene(&SceneSpec::new(k, seed));
                assert!(
                    s.truth.area() >= 12,
                    "{}: part of {} px",
                    s.id,
                    s.truth.area()
                );
                assert_eq!(
                    (s.truth.width(), s.truth.height()),
                    (s.view.width(), s.view.height())
                );
                // the part belongs to the object
                let gt = s.view.ground_truth.as_ref().unwrap();
                for (x, y) in s.truth.set_pixels() {
                    assert_eq!(*gt.instance_ids.get(x, y).unwrap(), 1);
                }
                assert!(s.object_mask.area() > s.truth.area());
                assert!(!s.action.is_empty() && !s.part_name.is_empty());
                assert_eq!(s.view.depth.as_ref().unwrap().width(), s.view.width());
            }
        }
    }

    #[test]
    fn rendering_is_deterministic_and_varies_with_the_seed() {
        let a = render_scene(&SceneSpec::new(Category::Mug, 4));
        assert_eq!(a, render_scene(&SceneSpec::new(Category::Mug, 4)));
        let b = render_scene(&SceneSpec::new(Category::Mug, 5));
        assert_ne!(a.truth, b.truth);
        assert_eq!(dataset(2, 0).len(), 16);
    }
}
