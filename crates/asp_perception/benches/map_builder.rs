//! Map-builder throughput on 640×480 keyframes, excluding model inference, and MiniLM
//! latency. Prints a table; run with
//! `cargo bench -p asp_perception --bench map_builder`.
#![allow(clippy::unwrap_used, clippy::print_stdout)]

#[path = "../tests/support/mod.rs"]
mod support;

use std::sync::Arc;
use std::time::Instant;

use asp_config::ObjectMapConfig;
use asp_core::models::TextEmbedder;
use asp_perception::eval::{ground_truth_objects, score_map};
use asp_perception::{MapBuilder, SimulatedImageEmbedder, SimulatedSegmenter};
use support::scene;

fn main() {
    let text: Arc<dyn TextEmbedder> = Arc::new(support::minilm());
    let config = ObjectMapConfig::default();
    let k = scene::intrinsics(640, 480);
    let frames: Vec<_> = scene::tabletop_views()
        .iter()
        .enumerate()
        .map(|(i, p)| scene::render(&scene::tabletop(), p, k, 0.004, i as u64))
        .collect();
    let make = || {
        MapBuilder::new(
            &config,
            "map",
            Arc::new(SimulatedSegmenter::new(config.simulation.clone())),
            Arc::new(SimulatedImageEmbedder::new(
                Arc::clone(&text),
                config.simulation.clone(),
            )),
        )
        .unwrap()
    };
    // model stage once (simulated segmenter + embedder): not timed below
    let probe = make();
    let t = Instant::now();
    let detections: Vec<_> = frames.iter().map(|f| probe.detect(f).unwrap()).collect();
    let detect_ms = t.elapsed().as_secs_f64() * 1e3 / frames.len() as f64;
    // geometry stage: back-projection, filtering, downsampling, merging, crops
    let rounds = 25;
    let mut builder = make();
    let t = Instant::now();
    for _ in 0..rounds {
        builder.reset();
        for (f, d) in frames.iter().zip(&detections) {
            builder.integrate(f, d.clone()).unwrap();
        }
    }
    let n = (rounds * frames.len()) as f64;
    let secs = t.elapsed().as_secs_f64();
    let gt = ground_truth_objects(&frames, 0.1, 6.0, 64, 0.02).unwrap();
    let s = score_map(builder.map(), &gt, 0.02, 0.5).unwrap();
    // MiniLM latency
    let e = support::minilm();
    let queries = [
        "red mug",
        "the power adapter plugged into the wall socket",
        "blue bowl",
        "drawer handle",
    ];
    for q in queries {
        e.embed_text(q).unwrap();
    }
    let reps = 50;
    let t = Instant::now();
    for i in 0..reps {
        e.embed_text(queries[i % queries.len()]).unwrap();
    }
    let one_ms = t.elapsed().as_secs_f64() * 1e3 / reps as f64;
    let t = Instant::now();
    for _ in 0..10 {
        e.embed_batch(&queries).unwrap();
    }
    let batch_ms = t.elapsed().as_secs_f64() * 1e3 / 10.0;

    println!("| measurement | value |");
    println!("|---|---|");
    println!(
        "| map builder, 640×480 keyframes, excluding model inference (1 thread) | {:.1} frames/s ({:.2} ms/frame) |",
        n / secs,
        secs * 1e3 / n
    );
    println!(
        "| simulated segmenter + embedder per keyframe (model stage, not in the above) | {detect_ms:.1} ms |"
    );
    println!(
        "| objects / ground truth after {} keyframes | {} / {} (precision {:.2}, recall {:.2}) |",
        frames.len(),
        s.objects,
        s.gt_objects,
        s.precision,
        s.recall
    );
    println!("| MiniLM int8 query embedding (ORT, 1 thread) | {one_ms:.2} ms |");
    println!(
        "| MiniLM int8 batch of {} texts | {batch_ms:.2} ms |",
        queries.len()
    );
}
