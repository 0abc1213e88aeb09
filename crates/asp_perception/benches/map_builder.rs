//! Map-builder throughput on 640×480 keyframes, excluding model inference, and MiniLM
//! query-embedding latency. Prints a table; run with
//! `cargo bench -p asp_perception --bench map_builder` (the optimised `bench` profile).
//!
//! What the map-builder figure includes: everything [`MapBuilder::integrate`] does for a
//! keyframe whose segments and embeddings are already computed — frame checks, masked
//! depth back-projection with the intrinsics and camera pose, the depth-edge filter,
//! voxel downsampling, the largest-cluster filter, the merge tests against the map,
//! merging (clouds, features, crops ranked and kept) and the post-integration pairwise
//! merges. What it excludes: model inference ([`MapBuilder::detect`]: the segmenter and
//! the image embedder, run once up front and fed to `integrate`), rendering the
//! keyframes, and copying the precomputed detections for each call (done outside the
//! timed span, because `integrate` takes them by value).
//!
//! The same figure on the embedded simulator's tabletop world, swept along the table,
//! with precision and recall against its objects, is `asp bench map`
//! (`asp_eval::map_quality`, which needs the simulator's ground truth).
//!
//! The work runs on this one thread. Each call is timed twice: by the thread's CPU clock
//! (`CLOCK_THREAD_CPUTIME_ID`: what one core spends, unaffected by other processes on a
//! shared machine) and by the wall clock (includes waiting for a core under load).
#![allow(clippy::unwrap_used, clippy::print_stdout)]

#[path = "../tests/support/mod.rs"]
mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use asp_config::ObjectMapConfig;
use asp_core::RgbdFrame;
use asp_core::models::TextEmbedder;
use asp_perception::eval::{ground_truth_objects, score_map};
use asp_perception::{KeyframeDetections, MapBuilder, SimulatedImageEmbedder, SimulatedSegmenter};
use rustix::time::{ClockId, clock_gettime};
use support::scene;

/// CPU time this thread has used.
fn thread_cpu() -> Duration {
    let t = clock_gettime(ClockId::ThreadCPUTime);
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// CPU time all threads of this process have used.
fn process_cpu() -> Duration {
    let t = clock_gettime(ClockId::ProcessCPUTime);
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// Per-call samples in milliseconds.
#[derive(Default)]
struct Samples {
    cpu: Vec<f64>,
    wall: Vec<f64>,
}

impl Samples {
    fn time<T>(&mut self, f: impl FnOnce() -> T) -> T {
        let (c0, w0) = (thread_cpu(), Instant::now());
        let out = f();
        let (w1, c1) = (w0.elapsed(), thread_cpu());
        self.cpu.push((c1 - c0).as_secs_f64() * 1e3);
        self.wall.push(w1.as_secs_f64() * 1e3);
        out
    }
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    s[s.len() / 2]
}

/// Integrates every keyframe `rounds` times, each round into a fresh map.
fn integrate_rounds(
    builder: &mut MapBuilder,
    frames: &[RgbdFrame],
    detections: &[KeyframeDetections],
    rounds: usize,
) -> Samples {
    let mut samples = Samples::default();
    for _ in 0..rounds {
        builder.reset();
        for (f, d) in frames.iter().zip(detections) {
            let d = d.clone();
            samples.time(|| builder.integrate(f, d).unwrap());
        }
    }
    samples
}

fn row(what: &str, s: &Samples) {
    let (cpu, wall) = (mean(&s.cpu), mean(&s.wall));
    println!(
        "| {what} | {:.1} frames/s ({cpu:.2} ms/frame, median {:.2}) | {:.1} frames/s ({wall:.2} ms/frame) |",
        1e3 / cpu,
        median(&s.cpu),
        1e3 / wall,
    );
}

fn main() {
    let text: Arc<dyn TextEmbedder> = Arc::new(support::minilm());
    let config = ObjectMapConfig::default();
    let k = scene::intrinsics(640, 480);
    let frames: Vec<_> = scene::tabletop_views()
        .iter()
        .enumerate()
        .map(|(i, p)| scene::render(&scene::tabletop(), p, k, 0.004, i as u64))
        .collect();
    // the same keyframes as a real camera delivers them: no simulator ground truth
    let camera_frames: Vec<_> = frames
        .iter()
        .map(|f| RgbdFrame {
            ground_truth: None,
            ..f.clone()
        })
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
    // model stage once (simulated segmenter + embedder): not part of the figures below
    let probe = make();
    let mut detect = Samples::default();
    let detections: Vec<_> = frames
        .iter()
        .map(|f| detect.time(|| probe.detect(f).unwrap()))
        .collect();

    let rounds = 25;
    let mut builder = make();
    integrate_rounds(&mut builder, &frames, &detections, 2); // warm-up
    let sim = integrate_rounds(&mut builder, &frames, &detections, rounds);
    let gt = ground_truth_objects(&frames, 0.1, 6.0, 64, 0.02).unwrap();
    let s = score_map(builder.map(), &gt, 0.02, 0.5).unwrap();
    let camera = integrate_rounds(&mut builder, &camera_frames, &detections, rounds);

    // MiniLM query embedding (ORT, intra-op threads 1: inference runs on this thread)
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
    let reps = 100;
    let mut one = Samples::default();
    let p0 = process_cpu();
    for i in 0..reps {
        one.time(|| e.embed_text(queries[i % queries.len()]).unwrap());
    }
    let one_process_cpu = (process_cpu() - p0).as_secs_f64() * 1e3 / reps as f64;
    let mut batch = Samples::default();
    for _ in 0..20 {
        batch.time(|| e.embed_batch(&queries).unwrap());
    }

    println!(
        "map builder: {} keyframes of 640×480 (tabletop, 4 mm depth noise at 1 m), {rounds} rounds each into a fresh map, one thread",
        frames.len()
    );
    println!("| measurement | one core (thread CPU time) | wall clock |");
    println!("|---|---|---|");
    row(
        "map builder `integrate`, simulator keyframes (crops keep ground truth), excluding model inference",
        &sim,
    );
    row(
        "map builder `integrate`, camera keyframes (no ground truth), excluding model inference",
        &camera,
    );
    println!(
        "| simulated segmenter + embedder per keyframe (model stage, not in the above) | {:.1} ms | {:.1} ms |",
        mean(&detect.cpu),
        mean(&detect.wall)
    );
    println!(
        "| MiniLM int8 query embedding (ORT, 1 intra-op thread), per query | {:.2} ms (median {:.2}; process CPU {one_process_cpu:.2}) | {:.2} ms |",
        mean(&one.cpu),
        median(&one.cpu),
        mean(&one.wall)
    );
    println!(
        "| MiniLM int8 batch of {} texts | {:.2} ms | {:.2} ms |",
        queries.len(),
        mean(&batch.cpu),
        mean(&batch.wall)
    );
    println!(
        "objects / ground truth after {} keyframes: {} / {} (precision {:.2}, recall {:.2})",
        frames.len(),
        s.objects,
        s.gt_objects,
        s.precision,
        s.recall
    );
}
