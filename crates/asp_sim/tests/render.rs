//! Rendering sanity: depth of a known box at a known distance, instance and part ids of
//! the visible object, Lambert shading, noise statistics and determinism.
#![allow(clippy::unwrap_used)]

use asp_core::{CameraIntrinsics, FrameId, Point3};
use asp_sim::parse_world;
use asp_sim::render::{CameraView, DepthNoise, look_at, render, world_items};

const WORLD: &str = r#"
name: t
light: {direction: [0.0, 0.0, -1.0], ambient: 0.2}
objects:
  - name: crate
    description: a wooden crate
    color: [200, 100, 50]
    pose: {xyz: [2.0, 0.0, 0.0]}
    shapes:
      - box: {size: [0.2, 1.0, 1.0]}
    parts:
      - name: crate label
        skills: [grasp_part]
        shapes:
          - box: {size: [0.01, 0.2, 0.2]}
            at: {xyz: [-0.105, 0.0, 0.0]}
"#;

fn camera(w: u32, h: u32) -> CameraView {
    CameraView {
        intrinsics: CameraIntrinsics::from_hfov(w, h, 60f32.to_radians()),
        pose: look_at(Point3::origin(), Point3::new(1.0, 0.0, 0.0)),
        frame: FrameId::new("cam"),
    }
}

#[test]
fn a_box_face_one_point_nine_metres_away_reads_its_depth() {
    let world = parse_world(WORLD, "t.yaml").unwrap();
    let items = world_items(&world);
    let f = render(
        &world,
        &items,
        &camera(64, 48),
        &DepthNoise::default(),
        1.0,
        0.5,
        0,
    );
    f.validate().unwrap();
    // the crate's front face is at x = 1.9; the label is 1 cm proud of it
    let centre = *f.depth.get(32, 24).unwrap();
    assert!((centre - 1.89).abs() < 1e-3, "{centre}");
    let off_label = *f.depth.get(32, 10).unwrap();
    assert!((off_label - 1.9).abs() < 1e-3, "{off_label}");
    // the corner of the image sees nothing
    assert_eq!(*f.depth.get(0, 0).unwrap(), 0.0);
    let gt = f.ground_truth.as_ref().unwrap();
    assert_eq!(*gt.instance_ids.get(32, 10).unwrap(), 1);
    assert_eq!(gt.instances[&1].name, "crate");
    assert_eq!(gt.instances[&1].description, "a wooden crate");
    let part = *gt.part_ids.get(32, 24).unwrap();
    assert_ne!(part, 0);
    assert_eq!(gt.parts[&part].name, "crate label");
    assert_eq!(*gt.part_ids.get(32, 10).unwrap(), 0);
    assert_eq!(*gt.instance_ids.get(0, 0).unwrap(), 0);
    // back-projection lands on the face
    let mask = gt.instance_mask(1);
    let cloud = f.back_project(Some(&mask), 0.1, 10.0).unwrap();
    assert!(
        cloud.points().iter().all(|p| p.x > 1.885 && p.x < 1.905),
        "{:?}",
        &cloud.points()[..3]
    );
    assert_eq!(f.stamp, 0.5);
    assert_eq!(f.camera_pose.child.as_str(), "cam");
}

#[test]
fn surfaces_facing_the_light_are_brighter() {
    // light from above: the crate's top is lit, its front face only by ambient light
    let world = parse_world(WORLD, "t.yaml").unwrap();
    let items = world_items(&world);
    let view = CameraView {
        intrinsics: CameraIntrinsics::from_hfov(64, 48, 60f32.to_radians()),
        pose: look_at(Point3::new(0.5, 0.0, 1.5), Point3::new(2.0, 0.0, 0.3)),
        frame: FrameId::new("cam"),
    };
    let f = render(&world, &items, &view, &DepthNoise::default(), 1.0, 0.0, 0);
    let gt = f.ground_truth.as_ref().unwrap();
    let mut top = Vec::new();
    let mut front = Vec::new();
    for (x, y, &id) in gt.instance_ids.enumerate() {
        if id != 1 || *gt.part_ids.get(x, y).unwrap() != 0 {
            continue;
        }
        let d = *f.depth.get(x, y).unwrap();
        let red = f.rgb.get(x, y).unwrap()[0];
        // classify by the back-projected point: top face at z = 0.5
        let q = f.intrinsics.unproject(x as f32 + 0.5, y as f32 + 0.5, d);
        let w = f.camera_pose.iso * q;
        if (w.z - 0.5).abs() < 1e-3 {
            top.push(red);
        } else if (w.x - 1.9).abs() < 1e-3 {
            front.push(red);
        }
        if top.len() > 20 && front.len() > 20 {
            break;
        }
    }
    assert!(
        !top.is_empty() && !front.is_empty(),
        "top {} front {}",
        top.len(),
        front.len()
    );
    let mean = |v: &[u8]| v.iter().map(|&x| f32::from(x)).sum::<f32>() / v.len() as f32;
    // Lambert: top = 200·(0.2 + 0.8·1), front = 200·0.2
    assert!((mean(&top) - 200.0).abs() < 2.0, "{}", mean(&top));
    assert!((mean(&front) - 40.0).abs() < 2.0, "{}", mean(&front));
}

#[test]
fn noise_grows_with_depth_squared_and_is_seeded() {
    let world = parse_world(WORLD, "t.yaml").unwrap();
    let items = world_items(&world);
    let noise = DepthNoise {
        std_at_1m: 0.01,
        dropout: 0.2,
        max_range: 10.0,
    };
    let cam = camera(160, 120);
    let a = render(&world, &items, &cam, &noise, 1.0, 0.0, 7);
    let b = render(&world, &items, &cam, &noise, 1.0, 0.0, 7);
    let c = render(&world, &items, &cam, &noise, 1.0, 0.0, 8);
    assert_eq!(a, b, "same seed, same frame");
    assert_ne!(a.depth, c.depth, "another seed, other noise");
    let clean = render(&world, &items, &cam, &DepthNoise::default(), 1.0, 0.0, 7);
    let mut dropped = 0usize;
    let mut seen = 0usize;
    let mut sq = 0.0f64;
    let mut n = 0usize;
    for (i, (&d, &t)) in a
        .depth
        .pixels()
        .iter()
        .zip(clean.depth.pixels())
        .enumerate()
    {
        if t == 0.0 {
            assert_eq!(d, 0.0, "pixel {i}: no surface, no reading");
            continue;
        }
        seen += 1;
        if d == 0.0 {
            dropped += 1;
        } else {
            let e = f64::from((d - t) / (t * t));
            sq += e * e;
            n += 1;
        }
    }
    let share = dropped as f64 / seen as f64;
    assert!((share - 0.2).abs() < 0.03, "dropout share {share}");
    let std = (sq / n as f64).sqrt();
    assert!((std - 0.01).abs() < 0.001, "normalised std {std}");
}
