//! go_to's pose selection per query on the apartment's occupancy grid (the simulator's
//! 5 cm grid), CPU time of the calling thread: with the affordance (λ_aff = 1) and plain
//! "go near" (λ_aff = 0).
//!
//! Run: `cargo bench -p asp_nav --bench go_to`
#![allow(clippy::unwrap_used, clippy::print_stdout)]

#[path = "../tests/support/mod.rs"]
mod support;

use asp_core::robot::BaseNavigation;
use asp_nav::{PoseSelector, SelectionInput};
use asp_sim::SimSettings;
use cpu_time::ThreadTime;

const REPS: usize = 50;

fn stats(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    let q = |p: f64| v[((v.len() - 1) as f64 * p).round() as usize];
    (mean, q(0.5), q(0.95))
}

fn main() {
    let mut cfg = support::config().go_to_node;
    cfg.relocalize = false;
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    println!("go_to pose selection (CPU time per query, {REPS} queries each)");
    println!(
        "{:<52} {:>4} {:>6} {:>6} {:>9} {:>9} {:>9}",
        "scenario / object / part", "λ", "radii", "evals", "mean ms", "p50 ms", "p95 ms"
    );
    for (file, object, part) in [
        ("mobile/dial_phone.yaml", "phone", "phone key"),
        (
            "mobile/open_cabinet.yaml",
            "metal_cabinet",
            "cabinet door handle",
        ),
        ("mobile/stapler_to_kitchen.yaml", "stapler", ""),
        ("mobile/egg_near_tomato.yaml", "tomato", ""),
    ] {
        let sim = support::scenario(file, SimSettings::default());
        let (obj, aff) = if part.is_empty() {
            let o = sim.with_state(|s| support::sample(s.world.object(object).unwrap(), |_| true));
            (asp_core::PointCloud::new("map", o), None)
        } else {
            let (o, a) = support::clouds(&sim, object, part);
            (o, Some(a))
        };
        let grid = sim.occupancy_grid().unwrap();
        let robot = rt.block_on(sim.base_pose()).unwrap();
        for lambda in [cfg.lambda_aff, 0.0] {
            let sel = PoseSelector::new(cfg.clone()).with_lambda(lambda);
            let input = SelectionInput {
                grid: &grid,
                object: obj.points(),
                affordance: aff.as_ref().map(|a| a.points()),
                robot,
                sweep: None,
                carried: None,
                pick: false,
            };
            let mut times = Vec::with_capacity(REPS);
            let mut last = None;
            for _ in 0..REPS {
                let t = ThreadTime::now();
                let s = sel.select(&input);
                times.push(t.elapsed().as_secs_f64() * 1e3);
                last = Some(std::hint::black_box(s));
            }
            let s = last.unwrap().unwrap();
            let (mean, p50, p95) = stats(times);
            let name = file.trim_start_matches("mobile/").trim_end_matches(".yaml");
            println!(
                "{:<52} {:>4.1} {:>6} {:>6} {:>9.3} {:>9.3} {:>9.3}",
                format!(
                    "{name} / {object}{}",
                    if part.is_empty() {
                        String::new()
                    } else {
                        format!(" / {part}")
                    }
                ),
                lambda,
                s.radii.len(),
                s.evaluated,
                mean,
                p50,
                p95
            );
        }
    }
    let g = support::scenario("mobile/dial_phone.yaml", SimSettings::default())
        .occupancy_grid()
        .unwrap();
    println!(
        "grid: {} x {} cells of {} m; {} angular samples per radius",
        g.width, g.height, g.resolution, cfg.angular_samples
    );
    println!("command: cargo bench -p asp_nav --bench go_to");
}
