//! The map builder on keyframes rendered by the embedded simulator (asp_sim) from the
//! tabletop world (config/worlds/tabletop.yaml), through the simulated segmenter and
//! image embedder with the real MiniLM text embedder: the objects of the scene are
//! recovered (precision/recall against the simulator's ground truth), and merging puts
//! deliberately over-segmented objects back together.
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::Arc;

use asp_core::models::{Segmenter, TextEmbedder};
use asp_eval::map_quality::{
    MapQualityConfig, MapQualityReport, ViewPlan, map_quality, plan_views, render_keyframes,
};
use asp_perception::SimulatedSegmenter;
use asp_sim::World;

fn tabletop() -> World {
    asp_sim::load_world(support::root().join("config/worlds/tabletop.yaml")).unwrap()
}

fn text() -> Arc<dyn TextEmbedder> {
    Arc::new(support::minilm())
}

fn config() -> MapQualityConfig {
    MapQualityConfig {
        timing_rounds: 1,
        ..Default::default()
    }
}

fn matched(r: &MapQualityReport, name: &str) -> bool {
    r.per_object
        .iter()
        .any(|o| o.name == name && o.matched.is_some())
}

#[test]
fn the_tabletop_sweep_recovers_every_object() {
    let world = tabletop();
    let r = map_quality(&world, &config(), text()).unwrap();
    eprintln!("{}", r.summary());
    // the sweep sees the whole table: every object of the world is in view
    assert_eq!(r.gt_objects, world.objects.len(), "{r:#?}");
    assert!(r.keyframes >= 10, "{} keyframes", r.keyframes);
    assert_eq!((r.width, r.height), (640, 480));
    // one map object per object, each matching its ground truth
    assert_eq!(r.objects, r.gt_objects, "{r:#?}");
    assert_eq!(r.unmatched_objects, 0, "{r:#?}");
    assert_eq!((r.precision, r.recall), (1.0, 1.0), "{r:#?}");
    for o in &r.per_object {
        let m = o.matched.as_ref().unwrap();
        assert!(m.iou >= 0.5, "{}: IoU {}", o.name, m.iou);
        assert_eq!(m.gt_name, o.name);
    }
    assert!(r.fps > 0.0 && r.integrate_cpu_ms > 0.0);
}

#[test]
fn merging_fixes_over_segmented_objects_on_simulator_frames() {
    let world = tabletop();
    let mut cfg = config();
    cfg.object_map.simulation.over_segmentation = 1.0;
    // the segmenter really splits every object in two
    let frames = render_keyframes(&world, &cfg).unwrap();
    let seg = SimulatedSegmenter::new(cfg.object_map.simulation.clone());
    let gt = frames[0].ground_truth.as_ref().unwrap();
    let segments = seg.segment(&frames[0].observation()).unwrap();
    assert!(gt.instances.len() >= 4);
    assert_eq!(segments.len(), 2 * gt.instances.len());

    // merging by overlap (with the proximity radius) AND feature similarity joins the
    // halves again: the mug, the apple, ... each come back as one object
    let merged = map_quality(&world, &cfg, text()).unwrap();
    eprintln!("over-segmented, merging on: {}", merged.summary());
    for name in ["mug", "apple", "bowl", "keyboard", "kettle", "drawer_unit"] {
        assert!(matched(&merged, name), "{name}: {merged:#?}");
    }
    // (measured: 22 objects for 22, precision and recall 0.95; the thumbtack, a few
    // pixels across, is the one missed: its halves are too small to match alone)
    assert!(merged.recall >= 0.9, "{merged:#?}");
    assert!(merged.precision >= 0.9, "{merged:#?}");

    // without the proximity radius the halves share no voxel and stay apart: the map has
    // far more objects than the scene and most of them match nothing
    cfg.object_map.merge.overlap_radius = 0.0;
    cfg.object_map.merge.overlap_threshold = 0.5;
    let apart = map_quality(&world, &cfg, text()).unwrap();
    eprintln!("over-segmented, halves kept apart: {}", apart.summary());
    assert!(apart.objects > merged.objects + 10, "{apart:#?}");
    assert!(apart.precision < 0.7, "{apart:#?}");
    assert!(
        apart.unmatched_objects >= merged.unmatched_objects + 15,
        "{apart:#?}"
    );
}

#[test]
fn the_sweep_follows_the_row_of_objects_and_bad_plans_are_named() {
    let world = tabletop();
    let views = plan_views(&world, &ViewPlan::default()).unwrap();
    // the table runs along y, the robot stands on the -x side at the head camera height
    for v in &views {
        assert!(v.eye[0] < 0.1 && v.target[0] > 0.4, "{v:?}");
        assert!((v.eye[2] - 1.37).abs() < 1e-6);
        assert!(v.target[2] > 0.5 && v.target[2] < 0.7, "{v:?}");
    }
    let ys: Vec<f32> = views.iter().map(|v| v.eye[1]).collect();
    assert!(
        ys.windows(2)
            .all(|w| w[1] > w[0] && w[1] - w[0] <= 0.4 + 1e-5),
        "{ys:?}"
    );
    assert!(ys[0] < -2.0 && *ys.last().unwrap() > 2.5, "{ys:?}");

    let err = plan_views(
        &world,
        &ViewPlan::Sweep {
            standoff: 0.4,
            eye_height: 1.3,
            spacing: 0.0,
            max_object_extent: 1.5,
        },
    )
    .unwrap_err();
    assert!(err.to_string().contains("spacing"), "{err}");
    let err = plan_views(&world, &ViewPlan::Views(vec![])).unwrap_err();
    assert!(err.to_string().contains("views"), "{err}");
    let mut cfg = config();
    cfg.timing_rounds = 0;
    let err = map_quality(&world, &cfg, text()).unwrap_err();
    assert!(err.to_string().contains("timing_rounds"), "{err}");
}
