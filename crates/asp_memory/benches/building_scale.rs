//! The building memory at scale (issue 16): build time, database size, and query time
//! excluding embedding, hierarchical against a flat scan, at 10k and 1M synthetic
//! views of 384-dimensional embeddings (MiniLM's size). CPU time of the calling thread,
//! one core.
//!
//! Views are generated as a tour would record them: storeys of rooms on a grid, each
//! room of one of eight kinds, each view describing the room and three of its objects
//! (embedded with the model-free hashing embedder), the image embedding the objects'
//! words with noise.
//!
//! Run: `cargo bench -p asp_memory --bench building_scale` (sizes: `ASP_BENCH_VIEWS=10000,1000000`).
#![allow(clippy::unwrap_used, clippy::print_stdout)]

use std::collections::HashMap;

use asp_core::models::TextEmbedder;
use asp_memory::building::{
    Affordance, AffordanceScore, BuildingMemory, ClusterParams, EmbeddingJudge, Hierarchy,
    Instance, KeywordSummariser, Query, RetrievalParams, View, flat_retrieve, retrieve,
};
use asp_perception::HashingTextEmbedder;
use cpu_time::ThreadTime;

const DIM: usize = 384;
const QUERIES: usize = 200;
const ROOM_KINDS: &[(&str, &[&str])] = &[
    (
        "kitchen",
        &[
            "kettle", "toaster", "mug", "plate", "counter", "fridge", "pan", "sink",
        ],
    ),
    (
        "bedroom",
        &[
            "bed",
            "pillow",
            "lamp",
            "nightstand",
            "wardrobe",
            "alarm clock",
            "slipper",
        ],
    ),
    (
        "office",
        &[
            "desk", "laptop", "thermos", "stapler", "monitor", "notebook", "chair",
        ],
    ),
    (
        "bathroom",
        &[
            "towel",
            "soap",
            "toothbrush",
            "mirror",
            "bathtub",
            "shampoo",
        ],
    ),
    (
        "living room",
        &[
            "sofa",
            "remote",
            "cushion",
            "coffee table",
            "vase",
            "magazine",
        ],
    ),
    (
        "laundry",
        &["basket", "detergent", "iron", "hanger", "washing machine"],
    ),
    (
        "dining room",
        &[
            "dining table",
            "candle",
            "wine glass",
            "napkin",
            "fruit bowl",
        ],
    ),
    (
        "storage",
        &["box", "shelf", "toolbox", "ladder", "paint can", "broom"],
    ),
];
const COLOURS: &[&str] = &["red", "blue", "green", "white", "black", "grey", "yellow"];

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
    fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[(self.next() * xs.len() as f64) as usize % xs.len()]
    }
}

/// `n` views: 24 views per 6 m room, rooms on a square grid per storey, storeys 3.5 m
/// apart, 30 rooms per storey.
fn tour(n: usize, e: &HashingTextEmbedder) -> Vec<View> {
    let mut rng = Rng(42);
    let mut cache: HashMap<String, Vec<f32>> = HashMap::new();
    let mut embed = |t: &str| {
        cache
            .entry(t.to_owned())
            .or_insert_with(|| e.embed_text(t).unwrap())
            .clone()
    };
    let per_room = 24;
    let rooms_per_storey = 30;
    let side = (rooms_per_storey as f64).sqrt().ceil() as usize;
    let mut views = Vec::with_capacity(n);
    let mut room = 0usize;
    while views.len() < n {
        let (kind, objects) = ROOM_KINDS[(room * 7 + room / 3) % ROOM_KINDS.len()];
        let storey = room / rooms_per_storey;
        let cell = room % rooms_per_storey;
        let centre = [(cell % side) as f64 * 8.0, (cell / side) as f64 * 8.0];
        // each room holds a few coloured objects of its kind
        let held: Vec<String> = (0..5)
            .map(|_| format!("{} {}", rng.pick(COLOURS), rng.pick(objects)))
            .collect();
        for _ in 0..per_room.min(n - views.len()) {
            let shown: Vec<&String> = (0..3).map(|_| rng.pick(&held)).collect();
            let description = format!(
                "a {kind} with a {}, a {} and a {}",
                shown[0], shown[1], shown[2]
            );
            let mut visual = embed(&format!("{} {} {}", shown[0], shown[1], shown[2]));
            for x in &mut visual {
                *x += (rng.next() as f32 - 0.5) * 0.02;
            }
            let position = [
                centre[0] + (rng.next() - 0.5) * 6.0,
                centre[1] + (rng.next() - 0.5) * 6.0,
                storey as f64 * 3.5 + 1.0 + rng.next() * 0.4,
            ];
            let instances = vec![Instance {
                description: shown[0].clone(),
                affordances: vec![AffordanceScore {
                    affordance: Affordance::Pick,
                    score: 0.5 + rng.next() as f32 * 0.5,
                }],
                position: Some(position),
                embedding: embed(shown[0]),
            }];
            views.push(View {
                source: format!("synthetic#{}", views.len()),
                position,
                yaw: rng.next() * std::f64::consts::TAU,
                regional: embed(&description),
                description,
                visual,
                instances,
            });
        }
        room += 1;
    }
    views
}

fn percentile(mut v: Vec<f64>, p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * p).round() as usize]
}

fn main() {
    let sizes: Vec<usize> = std::env::var("ASP_BENCH_VIEWS")
        .unwrap_or_else(|_| "10000,1000000".into())
        .split(',')
        .map(|s| s.trim().parse().unwrap())
        .collect();
    let e = HashingTextEmbedder::new(DIM);
    let params = ClusterParams::default();
    let summariser = KeywordSummariser::default();
    println!(
        "building memory at scale ({DIM}-d embeddings, CPU time of one thread, {QUERIES} queries)"
    );
    println!(
        "{:>9} {:>7} {:>10} {:>9} {:>11} {:>11} {:>11} {:>11}",
        "views",
        "levels",
        "build s",
        "db MiB",
        "hier p50 ms",
        "hier p95 ms",
        "flat p50 ms",
        "flat p95 ms"
    );
    for n in sizes {
        let views = tour(n, &e);
        let t = ThreadTime::now();
        let (h, db_mib) = if n <= 50_000 {
            // the whole path: clustering, summaries, and the database transaction
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("building.redb");
            let mut m = BuildingMemory::open(&path, "bench").unwrap();
            m.add_views(views, &params, &summariser, &e).unwrap();
            let h = m.hierarchy().clone();
            drop(m);
            let size = std::fs::metadata(&path).unwrap().len() as f64 / (1 << 20) as f64;
            (h, format!("{size:.1}"))
        } else {
            // in memory only: a million views are ~6 GiB of embeddings on disk
            (
                Hierarchy::build(views, &params, &summariser, &e).unwrap(),
                "—".to_owned(),
            )
        };
        let build_s = t.elapsed().as_secs_f64();
        let mut rng = Rng(7);
        let queries: Vec<(String, Vec<f32>)> = (0..QUERIES)
            .map(|_| {
                let (kind, objects) = rng.pick(ROOM_KINDS);
                let q = format!(
                    "the {} {} in the {kind}",
                    rng.pick(COLOURS),
                    rng.pick(objects)
                );
                let v = e.embed_text(&q).unwrap();
                (q, v)
            })
            .collect();
        let rp = RetrievalParams::default();
        let mut hier = Vec::new();
        let mut flat = Vec::new();
        for (text, v) in &queries {
            let q = Query {
                instruction: text,
                text: v,
                visual: v,
                affordance: Some(Affordance::Pick),
                heights: None,
            };
            let t = ThreadTime::now();
            let r = retrieve(&h, &q, &rp, &EmbeddingJudge);
            hier.push(t.elapsed().as_secs_f64() * 1e3);
            assert!(!r.is_empty());
            let t = ThreadTime::now();
            let r = flat_retrieve(&h, v, rp.top);
            flat.push(t.elapsed().as_secs_f64() * 1e3);
            assert!(!r.is_empty());
        }
        let level_sizes: Vec<String> = h.levels.iter().map(|l| l.len().to_string()).collect();
        println!(
            "{:>9} {:>7} {:>10.1} {:>9} {:>11.2} {:>11.2} {:>11.2} {:>11.2}   (levels 4..: {})",
            n,
            h.levels.len(),
            build_s,
            db_mib,
            percentile(hier.clone(), 0.5),
            percentile(hier, 0.95),
            percentile(flat.clone(), 0.5),
            percentile(flat, 0.95),
            level_sizes.join(" / ")
        );
    }
}
