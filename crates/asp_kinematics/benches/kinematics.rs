//! Inverse kinematics and motion planning figures for the xArm6 model.
//!
//! `cargo bench -p asp_kinematics --bench kinematics` prints one table. Every scenario
//! is seeded, so reruns solve the same problems.
#![allow(clippy::print_stdout, clippy::unwrap_used)]

use std::time::{Duration, Instant};

use asp_core::geometry::Isometry3;
use asp_core::robot::MotionKind;
use asp_kinematics::{
    CollisionWorld, EmptyWorld, IkOptions, MotionPlanner, PlanRequest, PlannerSettings, RobotModel,
    ShapeWorld, WorldObject, Xarm6,
};
use nalgebra::{Translation3, UnitQuaternion, Vector3};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

struct Row {
    what: String,
    n: usize,
    ok: usize,
    times: Vec<Duration>,
}

impl Row {
    fn print(&self) {
        let mut t = self.times.clone();
        t.sort();
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let mean = t.iter().map(|d| ms(*d)).sum::<f64>() / t.len().max(1) as f64;
        let pick = |p: f64| {
            t.get(((t.len() as f64 - 1.0) * p).round() as usize)
                .map_or(0.0, |d| ms(*d))
        };
        println!(
            "| {:<44} | {:>5} | {:>6.1}% | {:>9.3} | {:>9.3} | {:>9.3} |",
            self.what,
            self.n,
            100.0 * self.ok as f64 / self.n.max(1) as f64,
            mean,
            pick(0.5),
            pick(0.95)
        );
    }
}

fn down(x: f32, y: f32, z: f32) -> Isometry3 {
    Isometry3::from_parts(
        Translation3::new(x, y, z),
        UnitQuaternion::from_axis_angle(&Vector3::x_axis(), std::f32::consts::PI),
    )
}

fn random_q(r: &dyn RobotModel, rng: &mut ChaCha8Rng) -> Vec<f64> {
    r.joints()
        .iter()
        .map(|j| rng.random_range(j.lower..=j.upper))
        .collect()
}

fn ik_row(r: &dyn RobotModel, what: &str, opts: &IkOptions, n: usize) -> Row {
    let mut rng = ChaCha8Rng::seed_from_u64(42);
    let seed = r.named_configuration("home").unwrap();
    let mut row = Row {
        what: what.into(),
        n,
        ok: 0,
        times: Vec::new(),
    };
    for _ in 0..n {
        let target = r.tool_pose(&random_q(r, &mut rng));
        let t0 = Instant::now();
        let res = r.inverse(&target, &seed, opts);
        row.times.push(t0.elapsed());
        row.ok += usize::from(res.is_ok());
    }
    row
}

fn plan_row(
    r: &dyn RobotModel,
    world: &dyn CollisionWorld,
    what: &str,
    cases: &[(Vec<f64>, Isometry3)],
    kind: MotionKind,
    seeds: u64,
) -> Row {
    let mut row = Row {
        what: what.into(),
        n: 0,
        ok: 0,
        times: Vec::new(),
    };
    for seed in 0..seeds {
        let planner = MotionPlanner::new(PlannerSettings {
            seed,
            ..PlannerSettings::default()
        });
        for (start, goal) in cases {
            let request = PlanRequest {
                kind,
                ..PlanRequest::default()
            };
            let t0 = Instant::now();
            let res = planner.plan(r, world, start, goal, &request);
            row.times.push(t0.elapsed());
            row.n += 1;
            row.ok += usize::from(res.is_ok());
        }
    }
    row
}

fn main() {
    let r = Xarm6::on_base().unwrap();
    let home = r.named_configuration("home").unwrap();
    let ik_start = |p: &Isometry3| r.inverse(p, &home, &IkOptions::default()).unwrap();

    println!("xArm6 kinematics and planning (times in ms)\n");
    println!(
        "| {:<44} | {:>5} | {:>7} | {:>9} | {:>9} | {:>9} |",
        "case", "n", "success", "mean", "median", "p95"
    );
    println!(
        "|{:-<46}|{:-<7}|{:-<9}|{:-<11}|{:-<11}|{:-<11}|",
        "", "", "", "", "", ""
    );

    let ik_accuracy;
    // Forward kinematics and one state check.
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let qs: Vec<Vec<f64>> = (0..2000).map(|_| random_q(&r, &mut rng)).collect();
    let mut row = Row {
        what: "FK: tool pose".into(),
        n: qs.len(),
        ok: qs.len(),
        times: Vec::new(),
    };
    for q in &qs {
        let t0 = Instant::now();
        std::hint::black_box(r.tool_pose(q));
        row.times.push(t0.elapsed());
    }
    row.print();
    let mut row = Row {
        what: "FK: all 24 link poses".into(),
        n: qs.len(),
        ok: qs.len(),
        times: Vec::new(),
    };
    for q in &qs {
        let t0 = Instant::now();
        std::hint::black_box(r.link_poses(q));
        row.times.push(t0.elapsed());
    }
    row.print();
    let table = ShapeWorld::default().with(WorldObject::cuboid(
        "table",
        [0.42, 0.0, 0.03],
        [0.6, 0.8, 0.1],
    ));
    let mut row = Row {
        what: "state check: shapes + self + 1 box (free %)".into(),
        n: qs.len(),
        ok: 0,
        times: Vec::new(),
    };
    for q in &qs {
        let t0 = Instant::now();
        let shapes = r.collision_shapes(q);
        let free =
            table.first_collision(&shapes, &[]).is_none() && r.self_collision(&shapes).is_none();
        row.times.push(t0.elapsed());
        row.ok += usize::from(free);
    }
    row.print();

    // IK over random reachable poses (FK of random in-limit configurations).
    let n = 1000;
    ik_row(
        &r,
        "IK: random reachable pose, 1 seed",
        &IkOptions {
            max_attempts: 1,
            ..IkOptions::default()
        },
        n,
    )
    .print();
    ik_row(
        &r,
        "IK: random reachable pose, up to 32 seeds",
        &IkOptions::default(),
        n,
    )
    .print();
    ik_row(
        &r,
        "IK: same, tolerance 1 mm / 0.01 rad",
        &IkOptions {
            position_tolerance: 1e-3,
            orientation_tolerance: 1e-2,
            ..IkOptions::default()
        },
        n,
    )
    .print();
    // How close the solutions get (the solver stops at 5 % of the tolerance).
    {
        let mut rng = ChaCha8Rng::seed_from_u64(42);
        let (mut pos, mut rot) = (Vec::new(), Vec::new());
        for _ in 0..n {
            let target = r.tool_pose(&random_q(&r, &mut rng));
            if let Ok(q) = r.inverse(&target, &home, &IkOptions::default()) {
                // Compare in f64: the f32 poses round at about 1e-7 m.
                let got = asp_kinematics::to_f64(&r.tool_pose(&q));
                let want = asp_kinematics::to_f64(&target);
                pos.push((got.translation.vector - want.translation.vector).norm());
                rot.push(got.rotation.angle_to(&want.rotation));
            }
        }
        let stats = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            (
                v.iter().sum::<f64>() / v.len() as f64,
                v[v.len() / 2],
                v[v.len() - 1],
            )
        };
        let (pm, pmed, pmax) = stats(&mut pos);
        let (rm, rmed, rmax) = stats(&mut rot);
        ik_accuracy = format!(
            "IK accuracy (default tolerance 0.1 mm / 1 mrad): position error mean {:.1} µm, median {:.1} µm, max {:.1} µm; \
             orientation error mean {:.3} mrad, median {:.3} mrad, max {:.3} mrad",
            pm * 1e6,
            pmed * 1e6,
            pmax * 1e6,
            rm * 1e3,
            rmed * 1e3,
            rmax * 1e3
        );
    }
    let unreachable = {
        let mut row = Row {
            what: "IK: unreachable pose (1.2 m away)".into(),
            n: 50,
            ok: 0,
            times: Vec::new(),
        };
        for _ in 0..row.n {
            let t0 = Instant::now();
            let res = r.inverse(&down(1.2, 0.0, 0.3), &home, &IkOptions::default());
            row.times.push(t0.elapsed());
            row.ok += usize::from(res.is_ok());
        }
        row
    };
    unreachable.print();

    // Free-space planning: tool-down goals over a 3 × 3 grid in front of the arm.
    let goals: Vec<Isometry3> = [0.25f32, 0.35, 0.45]
        .iter()
        .flat_map(|&x| {
            [-0.25f32, 0.0, 0.25]
                .into_iter()
                .map(move |y| down(x, y, 0.15))
        })
        .collect();
    let free: Vec<(Vec<f64>, Isometry3)> = goals.iter().map(|g| (home.clone(), *g)).collect();
    plan_row(
        &r,
        &EmptyWorld,
        "free space, no obstacle (home → 9 goals)",
        &free,
        MotionKind::FreeSpace,
        5,
    )
    .print();
    // With a wall between start and goal: the straight joint motion collides, RRT-Connect.
    let wall = ShapeWorld::default().with(WorldObject::cuboid(
        "wall",
        [0.38, 0.0, 0.05],
        [0.36, 0.04, 0.40],
    ));
    let around: Vec<(Vec<f64>, Isometry3)> = [0.15f32, 0.2]
        .iter()
        .map(|&z| (ik_start(&down(0.30, -0.25, z)), down(0.30, 0.25, z)))
        .collect();
    plan_row(
        &r,
        &wall,
        "free space, wall between (RRT-Connect)",
        &around,
        MotionKind::FreeSpace,
        10,
    )
    .print();
    // Linear approaches: 10 cm straight down from above each grid goal.
    let linear: Vec<(Vec<f64>, Isometry3)> = goals
        .iter()
        .map(|g| (ik_start(&(Isometry3::translation(0.0, 0.0, 0.10) * g)), *g))
        .collect();
    plan_row(
        &r,
        &EmptyWorld,
        "linear 10 cm approach (Pilz LIN stand-in)",
        &linear,
        MotionKind::Linear,
        1,
    )
    .print();
    println!("\n{ik_accuracy}");
}
