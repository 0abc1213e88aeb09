//! A concept's pictures: the simulator's renderer showing its shapes alone on a plain
//! surface, from a different side and against a different backdrop in each picture, as
//! the photos of a web image search differ.

use asp_core::{CameraIntrinsics, FrameId, Point3, RgbImage};
use asp_sim::render::{CameraView, DepthNoise, look_at, render, world_items};
use asp_sim::world::world_from_spec;
use serde_json::json;

use crate::corpus::Concept;

/// Pictures per concept an image search returns.
pub const PICTURES: usize = 4;
/// Their size, pixels.
pub const WIDTH: u32 = 160;
pub const HEIGHT: u32 = 120;

/// Surfaces the object stands on, one per picture.
const SURFACES: [[u8; 3]; PICTURES] = [
    [236, 234, 228],
    [150, 112, 74],
    [90, 96, 104],
    [205, 215, 200],
];

/// Picture `n` (0-based, below [`PICTURES`]) of `concept`.
pub fn picture(concept: &Concept, n: usize) -> Result<RgbImage, String> {
    let spec = serde_json::from_value(json!({
        "name": "picture",
        "floor": {"size": [3.0, 3.0], "center": [0.0, 0.0], "color": SURFACES[n % PICTURES]},
        "objects": [{
            "name": concept.slug(),
            "description": concept.name,
            "color": concept.color,
            "shapes": concept.shapes,
        }],
    }))
    .map_err(|e| format!("{:?}: {e}", concept.name))?;
    let world = world_from_spec(&spec, &format!("corpus concept {:?}", concept.name))
        .map_err(|e| e.to_string())?;
    let items = world_items(&world);
    // frame the object: its bounding box's centre, seen from far enough for all of it
    let (mut lo, mut hi) = ([f32::INFINITY; 3], [f32::NEG_INFINITY; 3]);
    for it in items.iter().filter(|it| it.instance != 0) {
        let b = it.prim.aabb(&it.pose);
        for k in 0..3 {
            lo[k] = lo[k].min(b.mins[k]);
            hi[k] = hi[k].max(b.maxs[k]);
        }
    }
    if !lo[0].is_finite() {
        return Err(format!("{:?} has no shape to show", concept.name));
    }
    let centre = Point3::new(
        (lo[0] + hi[0]) / 2.0,
        (lo[1] + hi[1]) / 2.0,
        (lo[2] + hi[2]) / 2.0,
    );
    let radius = (0..3).map(|k| (hi[k] - lo[k]).powi(2)).sum::<f32>().sqrt() / 2.0;
    let hfov = 50f32.to_radians();
    let distance = (radius / (hfov / 2.0).tan() * 1.5).max(0.15);
    let azimuth = (30.0 + 90.0 * n as f32).to_radians();
    let elevation = (25.0 + 10.0 * (n % 2) as f32).to_radians();
    let eye = centre
        + asp_core::Vector3::new(
            azimuth.cos() * elevation.cos(),
            azimuth.sin() * elevation.cos(),
            elevation.sin(),
        ) * distance;
    let view = CameraView {
        intrinsics: CameraIntrinsics::from_hfov(WIDTH, HEIGHT, hfov),
        pose: look_at(eye, centre),
        frame: FrameId::new("picture"),
    };
    let frame = render(
        &world,
        &items,
        &view,
        &DepthNoise::default(),
        1.0,
        0.0,
        n as u64,
    );
    Ok(frame.rgb)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corpus::Corpus;

    #[test]
    fn pictures_show_the_concept_in_its_colour_from_different_sides() {
        let c = Corpus::parse(
            r#"
concepts:
  - name: red brick
    keywords: {colour: red, shape: block, material: clay, size: small, function: building}
    replacement: box
    color: [200, 30, 30]
    shapes:
      - box: {size: [0.2, 0.1, 0.06]}
        at: {xyz: [0, 0, 0.03]}
    pages:
      - {title: Brick, url: "https://e.org/brick", content: "A red clay block."}
"#,
            "t.yaml",
        )
        .unwrap();
        let concept = &c.concepts()[0];
        let pics: Vec<RgbImage> = (0..PICTURES)
            .map(|n| picture(concept, n).unwrap())
            .collect();
        for p in &pics {
            assert_eq!((p.width(), p.height()), (WIDTH, HEIGHT));
            // a good share of the picture is the object: reddish pixels
            let red = p
                .pixels()
                .iter()
                .filter(|px| {
                    px[0] > 80
                        && u16::from(px[0]) > 2 * u16::from(px[1])
                        && u16::from(px[0]) > 2 * u16::from(px[2])
                })
                .count();
            let share = red as f32 / p.pixels().len() as f32;
            assert!(share > 0.05, "{share}");
        }
        assert_ne!(pics[0], pics[1]);
    }
}
