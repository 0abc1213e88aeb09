//! Tour images as memory views (SPEC §3.1 levels 1–3): the VLM's account of an image
//! becomes a [`View`] with its description and its objects' embedded as text (regional
//! semantics), the
//! whole image embedded (visual semantics), and each object placed in the map from the
//! depth inside its box.

use asp_core::RgbdFrame;
use asp_core::models::{ImageEmbedder, ModelError, Observation, TextEmbedder, ViewDescription};

use super::{Instance, View};

/// Depth readings an object needs inside the centre of its box to be placed.
const MIN_READINGS: usize = 5;

/// The view `frame` makes with `described` (the VLM's account of it); objects seen
/// further than `max_range_m` keep no position.
pub fn view_from_frame(
    frame: &RgbdFrame,
    source: String,
    described: &ViewDescription,
    text: &dyn TextEmbedder,
    image: &dyn ImageEmbedder,
    max_range_m: f32,
) -> Result<View, ModelError> {
    let observation = Observation {
        rgb: frame.rgb.clone(),
        depth: Some(frame.depth.clone()),
        ground_truth: frame.ground_truth.clone(),
    };
    let visual = image.embed_image(&observation, None)?;
    // regional semantics: what the VLM said of the image, its objects included
    let regional = text.embed_text(&super::described_text(
        &described.description,
        described.objects.iter().map(|o| o.description.as_str()),
    ))?;
    let mut instances = Vec::with_capacity(described.objects.len());
    for o in &described.objects {
        instances.push(Instance {
            description: o.description.clone(),
            affordances: o.affordances.clone(),
            position: place(frame, &o.bbox, max_range_m),
            embedding: text.embed_text(&o.description)?,
        });
    }
    let iso = frame.camera_pose.iso;
    let t = iso.translation.vector;
    // the optical axis (z) projected on the floor
    let axis = iso.rotation * asp_core::Vector3::z();
    Ok(View {
        source,
        position: [f64::from(t.x), f64::from(t.y), f64::from(t.z)],
        yaw: f64::from(axis.y).atan2(f64::from(axis.x)),
        description: described.description.clone(),
        regional,
        visual,
        instances,
    })
}

/// Where the object boxed by `bbox` is in the map: the median depth of the central half
/// of the box (the object, not what shows round its edges), at the box centre.
fn place(frame: &RgbdFrame, bbox: &asp_core::Box2, max_range_m: f32) -> Option<[f64; 3]> {
    let k = &frame.intrinsics;
    let (w, h) = (frame.depth.width(), frame.depth.height());
    let (cx, cy) = ((bbox.x0 + bbox.x1) / 2.0, (bbox.y0 + bbox.y1) / 2.0);
    let (hw, hh) = ((bbox.x1 - bbox.x0) / 4.0, (bbox.y1 - bbox.y0) / 4.0);
    let clamp = |v: f32, hi: u32| (v.max(0.0) as u32).min(hi.saturating_sub(1));
    let (x0, x1) = (clamp(cx - hw, w), clamp(cx + hw, w));
    let (y0, y1) = (clamp(cy - hh, h), clamp(cy + hh, h));
    let depth = frame.depth.pixels();
    let mut readings: Vec<f32> = (y0..=y1)
        .flat_map(|y| (x0..=x1).map(move |x| (x, y)))
        .map(|(x, y)| depth[(y * w + x) as usize])
        .filter(|d| d.is_finite() && *d > 0.05 && *d <= max_range_m)
        .collect();
    if readings.len() < MIN_READINGS {
        return None;
    }
    let mid = readings.len() / 2;
    let (_, &mut d, _) = readings.select_nth_unstable_by(mid, f32::total_cmp);
    let in_camera = asp_core::Point3::new((cx - k.cx) / k.fx * d, (cy - k.cy) / k.fy * d, d);
    let p = frame.camera_pose.iso * in_camera;
    Some([f64::from(p.x), f64::from(p.y), f64::from(p.z)])
}

#[cfg(test)]
mod tests {
    use super::*;
    use asp_core::geometry::{Isometry3, Transform, UnitQuaternion, Vector3};
    use asp_core::models::{SeenObject, ViewAffordance, ViewAffordanceScore};
    use asp_core::{Box2, CameraIntrinsics, Image, Mask};

    struct Constant;
    impl TextEmbedder for Constant {
        fn dim(&self) -> usize {
            2
        }
        fn embed_text(&self, t: &str) -> Result<Vec<f32>, ModelError> {
            Ok(vec![t.len() as f32, 1.0])
        }
    }
    impl ImageEmbedder for Constant {
        fn dim(&self) -> usize {
            2
        }
        fn embed_image(&self, _: &Observation, _: Option<&Mask>) -> Result<Vec<f32>, ModelError> {
            Ok(vec![0.0, 1.0])
        }
    }

    /// A camera at (1, 2, 1.5) looking along +y (optical z), a wall 2 m ahead with a box
    /// region at 1.2 m in the middle of the image.
    fn frame() -> RgbdFrame {
        let k = CameraIntrinsics {
            width: 40,
            height: 30,
            fx: 20.0,
            fy: 20.0,
            cx: 20.0,
            cy: 15.0,
        };
        let mut depth = vec![2.0f32; 40 * 30];
        for y in 10..20 {
            for x in 15..25 {
                depth[y * 40 + x] = 1.2;
            }
        }
        // optical z along map +y, optical x along map +x, optical y along map -z
        let rot = UnitQuaternion::from_basis_unchecked(&[
            Vector3::new(1.0, 0.0, 0.0),
            Vector3::new(0.0, 0.0, -1.0),
            Vector3::new(0.0, 1.0, 0.0),
        ]);
        RgbdFrame {
            rgb: Image::from_vec(40, 30, vec![[0, 0, 0]; 1200]).unwrap(),
            depth: Image::from_vec(40, 30, depth).unwrap(),
            intrinsics: k,
            camera_pose: Transform::new(
                "map",
                "camera",
                Isometry3::from_parts(Vector3::new(1.0, 2.0, 1.5).into(), rot),
            ),
            stamp: 0.0,
            ground_truth: None,
        }
    }

    #[test]
    fn objects_are_placed_from_the_depth_in_their_boxes() {
        let described = ViewDescription {
            description: "a hall".into(),
            objects: vec![
                SeenObject {
                    description: "red mug".into(),
                    // the box overhangs the near region; its centre half is all 1.2 m
                    bbox: Box2::new(13.0, 8.0, 27.0, 22.0),
                    affordances: vec![ViewAffordanceScore {
                        affordance: ViewAffordance::Pick,
                        score: 0.9,
                    }],
                },
                SeenObject {
                    description: "far sofa".into(),
                    bbox: Box2::new(0.0, 0.0, 10.0, 8.0),
                    affordances: Vec::new(),
                },
            ],
        };
        let view = view_from_frame(
            &frame(),
            "tour#0".into(),
            &described,
            &Constant,
            &Constant,
            1.5,
        )
        .unwrap();
        assert_eq!(view.position, [1.0, 2.0, 1.5]);
        assert!(
            (view.yaw - std::f64::consts::FRAC_PI_2).abs() < 1e-6,
            "{}",
            view.yaw
        );
        let mug = view.instances[0].position.unwrap();
        // box centre (20, 15) is the principal point: straight ahead, 1.2 m
        assert!(
            (mug[0] - 1.0).abs() < 1e-5
                && (mug[1] - 3.2).abs() < 1e-5
                && (mug[2] - 1.5).abs() < 1e-5,
            "{mug:?}"
        );
        assert_eq!(view.instances[0].score_for(ViewAffordance::Pick), Some(0.9));
        // the sofa's depth (2 m) is past the range: it keeps no position
        assert_eq!(view.instances[1].position, None);
        // the regional text names the objects after the description (the embedder
        // here gives a text's length): "a hall; red mug; far sofa"
        assert_eq!(view.regional, vec![25.0, 1.0]);
        assert_eq!(view.description, "a hall");
        assert_eq!(view.instances[1].embedding, vec![8.0, 1.0]);
    }
}
