//! Grasp candidate generation per object, on the wrist view of each tabletop scenario's
//! object (ground-truth masks, 5 mm voxels), CPU time of the calling thread.
//!
//! Run: `cargo bench -p asp_skills --bench skills`
#![allow(clippy::unwrap_used, clippy::print_stdout)]

#[path = "../tests/support/mod.rs"]
mod support;

use asp_core::robot::ArmMotion;
use asp_core::{FrameId, Point3};
use asp_skills::grasp::{GraspParams, GraspScene, grasp_candidates};
use cpu_time::ThreadTime;

const REPS: usize = 30;

fn stats(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    let q = |p: f64| v[((v.len() - 1) as f64 * p).round() as usize];
    (mean, q(0.5), q(0.95))
}

fn main() {
    let cfg = support::config();
    let sk = &cfg.skill_executor_node;
    let params = GraspParams::new(&sk.grasp, &sk.gripper);
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    println!("grasp candidate generation (CPU time per call, {REPS} calls each)");
    println!(
        "{:<34} {:>7} {:>6} {:>9} {:>9} {:>9}",
        "scenario / object", "points", "cands", "mean ms", "p50 ms", "p95 ms"
    );
    for (file, object) in [
        ("tabletop/apple_in_bowl.yaml", "apple"),
        ("tabletop/banana_on_plate.yaml", "banana"),
        ("tabletop/small_ball_in_basket.yaml", "small_ball"),
        ("tabletop/left_cup_in_tray.yaml", "cup_left"),
        ("tabletop/mug_by_handle.yaml", "mug"),
        ("tabletop/apple_in_bowl.yaml", "plate"),
    ] {
        let (sim, _) = support::scenario(file);
        let cloud = support::object_cloud(&sim, "wrist", object);
        let arm_base = rt.block_on(async {
            let map = sim
                .tool_pose(&FrameId::new(cfg.common.frames.map.as_str()))
                .await
                .unwrap();
            let base = sim
                .tool_pose(&FrameId::new(cfg.common.frames.arm_base.as_str()))
                .await
                .unwrap();
            let m = map * base.inverse();
            Point3::from(m.translation.vector)
        });
        let target = cloud.points();
        let scene = GraspScene {
            target,
            avoid: &[],
            attached: &[],
            support_z: target.iter().map(|p| p.z).fold(f32::MAX, f32::min),
            rests_on_support: false,
            arm_base,
        };
        let mut times = Vec::with_capacity(REPS);
        let mut n = 0;
        for _ in 0..REPS {
            let t = ThreadTime::now();
            let c = grasp_candidates(&scene, &params);
            times.push(t.elapsed().as_secs_f64() * 1e3);
            n = std::hint::black_box(c).len();
        }
        let (mean, p50, p95) = stats(times);
        println!(
            "{:<34} {:>7} {:>6} {:>9.3} {:>9.3} {:>9.3}",
            format!(
                "{} / {object}",
                file.trim_start_matches("tabletop/")
                    .trim_end_matches(".yaml")
            ),
            target.len(),
            n,
            mean,
            p50,
            p95
        );
    }
    println!("command: cargo bench -p asp_skills --bench skills");
}
