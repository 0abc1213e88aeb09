//! The ONNX vision backends (SAM-style segmenters, CLIP-style embedders) end to end —
//! loading, pre-processing, inference, post-processing — on small ONNX models generated
//! here with the real models' signatures (see support/onnx_gen.rs for what they compute).
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::Arc;

use asp_core::image::{Box2, Image, Mask, RgbImage};
use asp_core::map::cosine_similarity;
use asp_core::models::{
    ImageEmbedder, Observation, Prompt, PromptableSegmenter, Segmenter, TextEmbedder,
};
use asp_perception::onnx::{
    ClipOptions, ClipTextEmbedder, MaskGeneratorOptions, OnnxImageEmbedder, OnnxMaskGenerator,
    OnnxPromptableSegmenter, SamModel,
};
use support::onnx_gen;

const RED: [u8; 3] = [200, 30, 30];
const GREEN: [u8; 3] = [40, 190, 40];
const BLUE: [u8; 3] = [30, 40, 200];
const GREY: [u8; 3] = [128, 128, 128];

/// 160 × 120: grey, with a red, a green and a blue rectangle.
fn squares() -> (RgbImage, [Box2; 3]) {
    let boxes = [
        Box2::new(20.0, 20.0, 60.0, 60.0),
        Box2::new(90.0, 30.0, 130.0, 70.0),
        Box2::new(40.0, 80.0, 80.0, 110.0),
    ];
    let mut img = Image::filled(160, 120, GREY);
    for (b, c) in boxes.iter().zip([RED, GREEN, BLUE]) {
        for y in b.y0 as u32..b.y1 as u32 {
            for x in b.x0 as u32..b.x1 as u32 {
                *img.get_mut(x, y).unwrap() = c;
            }
        }
    }
    (img, boxes)
}

fn obs(rgb: RgbImage) -> Observation {
    Observation {
        rgb,
        depth: None,
        ground_truth: None,
    }
}

fn sam(dir: &std::path::Path) -> Arc<SamModel> {
    onnx_gen::sam_encoder(&dir.join("encoder.onnx"), 64);
    onnx_gen::sam_decoder(&dir.join("decoder.onnx"), 64);
    Arc::new(
        SamModel::load(
            &dir.join("encoder.onnx"),
            &dir.join("decoder.onnx"),
            &support::onnx_options(),
        )
        .unwrap(),
    )
}

fn iou(a: &Mask, b: &Mask) -> f32 {
    a.iou(b).unwrap()
}

#[test]
fn promptable_segmenter_follows_box_and_point_prompts() {
    let dir = tempfile::tempdir().unwrap();
    let model = sam(dir.path());
    assert_eq!(model.input_size(), 64);
    let seg = OnnxPromptableSegmenter::new(Arc::clone(&model), 0.0);
    let (img, boxes) = squares();
    let o = obs(img);
    // a point on the green rectangle → the green rectangle (the best of the three masks)
    let s = seg
        .segment_prompt(&o, &Prompt::Point { x: 110.0, y: 50.0 })
        .unwrap();
    let green = Mask::fill_box(160, 120, &boxes[1]);
    assert!(
        iou(&s.mask, &green) > 0.85,
        "green IoU {}",
        iou(&s.mask, &green)
    );
    assert!((s.score - 0.97).abs() < 1e-6);
    // a box over the left half of the red square and some background → the red pixels in
    // the box only
    let s = seg
        .segment_prompt(
            &o,
            &Prompt::Box {
                bbox: Box2::new(10.0, 10.0, 40.0, 70.0),
            },
        )
        .unwrap();
    let left_red = Mask::fill_box(160, 120, &Box2::new(20.0, 20.0, 40.0, 60.0));
    assert!(
        iou(&s.mask, &left_red) > 0.8,
        "box IoU {}",
        iou(&s.mask, &left_red)
    );
    // the blue rectangle through a box around it
    let s = seg
        .segment_prompt(
            &o,
            &Prompt::BoxAndPoint {
                bbox: boxes[2].padded(5.0),
                x: 60.0,
                y: 95.0,
            },
        )
        .unwrap();
    let blue = Mask::fill_box(160, 120, &boxes[2]);
    assert!(
        iou(&s.mask, &blue) > 0.85,
        "blue IoU {}",
        iou(&s.mask, &blue)
    );
}

#[test]
fn mask_generator_finds_each_region_once() {
    let dir = tempfile::tempdir().unwrap();
    let model = sam(dir.path());
    let (img, boxes) = squares();
    let options = MaskGeneratorOptions {
        points_per_side: 8,
        ..MaskGeneratorOptions::default()
    };
    let generator = OnnxMaskGenerator::new(Arc::clone(&model), options.clone());
    let segments = generator.segment(&obs(img.clone())).unwrap();
    // three rectangles and the background, each once (NMS removed the duplicates from
    // the many grid points on each; the 0.5-IoU masks were filtered)
    assert_eq!(
        segments.len(),
        4,
        "{:?}",
        segments.iter().map(|s| s.mask.area()).collect::<Vec<_>>()
    );
    for b in &boxes {
        let want = Mask::fill_box(160, 120, b);
        let best = segments
            .iter()
            .map(|s| iou(&s.mask, &want))
            .fold(0.0, f32::max);
        assert!(best > 0.85, "{b:?}: best IoU {best}");
    }
    assert!(segments.iter().all(|s| s.score >= 0.88));
    // the background covers 77 % of the image: gone when larger masks are dropped
    let strict = OnnxMaskGenerator::new(
        model,
        MaskGeneratorOptions {
            max_area_fraction: 0.5,
            ..options
        },
    );
    assert_eq!(strict.segment(&obs(img)).unwrap().len(), 3);
}

#[test]
fn sam_rejects_models_with_the_wrong_signature() {
    let dir = tempfile::tempdir().unwrap();
    onnx_gen::sam_encoder(&dir.path().join("encoder.onnx"), 64);
    // a CLIP tower is no SAM decoder
    onnx_gen::clip_visual(&dir.path().join("clip.onnx"), Some(32), &[0.0; 12], 4);
    let err = SamModel::load(
        &dir.path().join("encoder.onnx"),
        &dir.path().join("clip.onnx"),
        &support::onnx_options(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("image_embeddings"), "{err}");
}

const W: [f32; 12] = [1.0, 0.0, 0.5, -1.0, 0.0, 1.0, 0.5, 2.0, 0.0, 0.0, -1.0, 0.5];

fn expected_embedding(c: [u8; 3], opts: &ClipOptions) -> Vec<f32> {
    let n: Vec<f32> = (0..3)
        .map(|i| (f32::from(c[i]) / 255.0 - opts.mean[i]) / opts.std[i])
        .collect();
    let mut e: Vec<f32> = (0..4)
        .map(|j| (0..3).map(|i| n[i] * W[i * 4 + j]).sum())
        .collect();
    asp_core::map::normalize(&mut e);
    e
}

fn clip_options(mask_background: bool) -> ClipOptions {
    (&asp_config::sections::perception::ClipConfig {
        mask_background,
        ..Default::default()
    })
        .into()
}

#[test]
fn clip_embedder_preprocesses_and_normalises() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("visual.onnx");
    onnx_gen::clip_visual(&path, Some(32), &W, 4);
    let opts = clip_options(false);
    let e = OnnxImageEmbedder::load(&path, opts.clone(), &support::onnx_options()).unwrap();
    assert_eq!((e.dim(), e.input_size()), (4, 32));
    // a flat colour embeds to normalise(normalised colour · W)
    let red = e
        .embed_image(&obs(Image::filled(50, 30, RED)), None)
        .unwrap();
    let want = expected_embedding(RED, &opts);
    for (a, b) in red.iter().zip(&want) {
        assert!((a - b).abs() < 1e-4, "{red:?} vs {want:?}");
    }
    // red left half, blue right half; the mask selects the red half
    let mut img = Image::filled(80, 40, RED);
    for y in 0..40 {
        for x in 40..80 {
            *img.get_mut(x, y).unwrap() = BLUE;
        }
    }
    let left = Mask::fill_box(80, 40, &Box2::new(0.0, 0.0, 40.0, 40.0));
    let masked =
        OnnxImageEmbedder::load(&path, clip_options(true), &support::onnx_options()).unwrap();
    let only_red = masked.embed_image(&obs(img.clone()), Some(&left)).unwrap();
    assert!(cosine_similarity(&only_red, &want) > 0.9999);
    // without mask_background the whole (padded) crop is seen: a red/blue mix
    let mixed = e.embed_image(&obs(img), Some(&left)).unwrap();
    let blue = expected_embedding(BLUE, &opts);
    assert!(cosine_similarity(&mixed, &want) < 0.999);
    assert!(cosine_similarity(&mixed, &blue) < 0.999);
    // a dynamic input size takes clip.image_size
    let dynamic = dir.path().join("dynamic.onnx");
    onnx_gen::clip_visual(&dynamic, None, &W, 4);
    let d = OnnxImageEmbedder::load(&dynamic, opts, &support::onnx_options()).unwrap();
    assert_eq!(d.input_size(), 224);
    let green = d
        .embed_image(&obs(Image::filled(10, 10, GREEN)), None)
        .unwrap();
    assert!(cosine_similarity(&green, &expected_embedding(GREEN, &clip_options(false))) > 0.9999);
}

#[test]
fn clip_text_tower_with_fixed_and_dynamic_lengths() {
    let dir = tempfile::tempdir().unwrap();
    let tokenizer = support::root().join("models/minilm/tokenizer.json");
    let (rows, dim) = (97i64, 4i64);
    let table: Vec<f32> = (0..rows * dim)
        .map(|i| ((i * 37 % 101) as f32 / 50.0) - 1.0)
        .collect();
    let expected = |ids: &[u32]| {
        let mut v = vec![0.0f32; dim as usize];
        for &id in ids {
            let r = (i64::from(id) % rows) as usize;
            for j in 0..dim as usize {
                v[j] += table[r * dim as usize + j] / ids.len() as f32;
            }
        }
        asp_core::map::normalize(&mut v);
        v
    };
    let ids = support::minilm().token_ids("a red mug").unwrap();
    for (name, seq) in [("dynamic.onnx", None), ("fixed.onnx", Some(16))] {
        let path = dir.path().join(name);
        onnx_gen::clip_textual(&path, seq, &table, rows, dim);
        let t = ClipTextEmbedder::load(
            &path,
            &tokenizer,
            "text_embeds",
            256,
            &support::onnx_options(),
        )
        .unwrap();
        assert_eq!(t.dim(), 4);
        let v = t.embed_text("a red mug").unwrap();
        let want = expected(&ids);
        for (a, b) in v.iter().zip(&want) {
            assert!((a - b).abs() < 1e-5, "{name}: {v:?} vs {want:?}");
        }
    }
}
