//! Benchmarks of the embedded simulator; prints a table. Run with
//! `cargo bench -p asp_sim --bench sim`.
#![allow(clippy::unwrap_used, clippy::print_stdout)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use cpu_time::ProcessTime;

use asp_core::Pose2D;
use asp_core::robot::{ArmMotion, CancellationToken, MotionKind, PoseGoal};
use asp_core::{FrameId, Isometry3};
use asp_kinematics::{RobotModel, Xarm6};
use asp_sim::nav::NavMap;
use asp_sim::render::DepthNoise;
use asp_sim::{SimRobot, SimSettings, load_world};
use nalgebra::{Translation3, UnitQuaternion};

fn config() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../config")
}

fn stats(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    (mean, v[v.len() / 2], v[v.len() - 1])
}

fn row(name: &str, samples: Vec<(f64, f64)>) {
    let n = samples.len();
    let (cpu, _, cpu_max) = stats(samples.iter().map(|s| s.0).collect());
    let (wall, _, _) = stats(samples.iter().map(|s| s.1).collect());
    println!("| {name:<56} | {n:>3} | {cpu:>8.2} | {cpu_max:>8.2} | {wall:>8.2} |");
}

/// (process CPU ms, wall ms) per call.
fn time_ms(n: usize, mut f: impl FnMut()) -> Vec<(f64, f64)> {
    f();
    (0..n)
        .map(|_| {
            let c = ProcessTime::now();
            let t = Instant::now();
            f();
            (
                c.elapsed().as_secs_f64() * 1e3,
                t.elapsed().as_secs_f64() * 1e3,
            )
        })
        .collect()
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let model: Arc<dyn RobotModel> = Arc::new(Xarm6::on_base().unwrap());
    println!(
        "| benchmark (single-threaded; CPU = process CPU time)      |   n | CPU ms mean | CPU max | wall ms |"
    );
    println!(
        "|----------------------------------------------------------|-----|----------|----------|----------|"
    );

    let tabletop = load_world(config().join("worlds/tabletop.yaml")).unwrap();
    for (label, noise) in [
        (
            "render head 640x480, tabletop, no noise",
            DepthNoise::default(),
        ),
        (
            "render head 640x480, tabletop, noise 0.005 + 2% dropout",
            DepthNoise {
                std_at_1m: 0.005,
                dropout: 0.02,
                max_range: 10.0,
            },
        ),
    ] {
        let settings = SimSettings {
            noise,
            ..SimSettings::default()
        };
        let sim = SimRobot::new(
            tabletop.clone(),
            model.clone(),
            settings,
            Pose2D::new(0.0, -2.0, 0.0),
        )
        .unwrap();
        row(
            label,
            time_ms(20, || {
                sim.render("head").unwrap();
            }),
        );
    }
    let sim = SimRobot::new(
        tabletop.clone(),
        model.clone(),
        SimSettings::default(),
        Pose2D::new(0.0, 0.4, 0.0),
    )
    .unwrap();
    row(
        "render wrist 640x480, tabletop",
        time_ms(20, || {
            sim.render("wrist").unwrap();
        }),
    );

    let apartment = load_world(config().join("worlds/apartment.yaml")).unwrap();
    let params = SimSettings::default().grid;
    let params = asp_sim::nav::GridParams {
        footprint_radius: 0.39,
        ..params
    };
    row(
        "occupancy grid + costmap, apartment 8.4x6.4 m @ 5 cm",
        time_ms(10, || {
            NavMap::build(&apartment, &params, |_| false).unwrap();
        }),
    );
    let map = NavMap::build(&apartment, &params, |_| false).unwrap();
    row(
        "A* living room -> kitchen table (apartment)",
        time_ms(20, || {
            map.plan(&Pose2D::new(1.0, 3.6, 0.0), &Pose2D::new(6.0, 2.2, 0.0))
                .unwrap();
        }),
    );
    row(
        "A* living room -> office cabinet (apartment)",
        time_ms(20, || {
            map.plan(&Pose2D::new(1.0, 3.6, 0.0), &Pose2D::new(2.45, 1.0, 0.0))
                .unwrap();
        }),
    );
    let sim = SimRobot::new(
        apartment.clone(),
        model.clone(),
        SimSettings::default(),
        Pose2D::new(1.0, 3.6, 0.0),
    )
    .unwrap();
    row(
        "render head 640x480, apartment",
        time_ms(10, || {
            sim.render("head").unwrap();
        }),
    );

    // arm: plan + execute a pick approach and return home, through ArmMotion
    let sim = SimRobot::new(
        tabletop,
        model.clone(),
        SimSettings::default(),
        Pose2D::new(0.0, -2.0, 0.0),
    )
    .unwrap();
    let c = CancellationToken::new();
    let goal = |x: f32, y: f32, z: f32, kind| PoseGoal {
        frame: FrameId::map(),
        target: Isometry3::from_parts(
            Translation3::new(x, y, z),
            UnitQuaternion::from_euler_angles(std::f32::consts::PI, 0.0, 0.0),
        ),
        kind,
        position_tolerance: 0.002,
        orientation_tolerance: 0.02,
        velocity_scaling: 0.5,
        acceleration_scaling: 0.5,
        allowed_contacts: vec!["apple".into()],
    };
    let mut free = Vec::new();
    let mut plan_wall = Vec::new();
    for _ in 0..10 {
        free.extend(time_ms(1, || {
            let out =
                rt.block_on(sim.move_to_pose(&goal(0.63, -2.0, 0.65, MotionKind::FreeSpace), &c));
            assert!(out.code.is_success(), "{out:?}");
            plan_wall.push((out.planning_time_s * 1e3, out.planning_time_s * 1e3));
            let out =
                rt.block_on(sim.move_to_pose(&goal(0.63, -2.0, 0.54, MotionKind::Linear), &c));
            assert!(out.code.is_success(), "{out:?}");
            assert!(rt.block_on(sim.move_to_named("home", &c)).code.is_success());
        }));
    }
    row(
        "arm: pre-grasp (RRT) + linear approach + home, executed",
        free,
    );
    row(
        "arm: free-space planning time as reported (wall)",
        plan_wall,
    );
}
