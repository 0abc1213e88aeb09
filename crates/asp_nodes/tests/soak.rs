//! The soak: the product nodes as separate processes (the launcher behind `asp launch`)
//! against the sim node in this process over DDS, taking goal after goal — 1,000 by
//! default (`ASP_SOAK_GOALS` sets another number) — through the service and the action
//! alike: goals that are refused (most: they cost little, so the soak fits in CI),
//! every 50th one that fails after a search (nothing matches; the search drives the
//! base sideways and maps more of the room), every 100th one that succeeds on the
//! simulator (every 20th in the first 200, so the nodes' caches of service requests
//! fill; the world is put back after each). The warm-up lasts until the object map has
//! held its size over a whole cycle of 100 goals: what the nodes hold grows with what
//! the robot has seen, which is no leak, and a reading taken before the searches mapped
//! the room would count that as one. Every node's resident memory is then read from
//! `/proc` after every goal that moved the robot and after every tenth goal, while the
//! map has its warmed-up size (a success remaps from the start pose), every 100 ms over
//! 3 s while the nodes settle, each node's lowest kept; each 50 goals give one reading: the lowest of
//! theirs (a leak raises that floor; a reading caught with frames in flight, or a heap
//! fragmented for a while until later goals reuse it, does not). The growth per 100 goals (a Theil–Sen
//! slope over those readings, so that no one reading decides) must stay under a bound,
//! for the six together and for each node. Beside resident memory it reads each node's
//! heap in use (what the node reports on `/diagnostics`; a leak raises it, the
//! allocator's holding of freed pages does not) and prints both slopes, the figures the
//! README reports. `ASP_SOAK_TRACE=<file>` writes every node's memory after every goal.
#![allow(clippy::unwrap_used)]

mod common;
#[path = "common/launched.rs"]
mod launched;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use asp_core::robot::CancellationToken;
use asp_nodes::launch::{LaunchTarget, Launcher, Respawn};
use asp_nodes::process::{DIAGNOSTICS_TOPIC, keys, reported, reporting_node};
use asp_ros::msg::TerminalState;
use asp_ros::msg::asp_interfaces::{
    ExecuteGoal, ExecuteGoalAction, ExecuteGoalActionGoal, ExecuteGoalRequest, ObjectMapSummary,
    goal_refused,
};
use asp_ros::msg::diagnostic_msgs::DiagnosticArray;
use asp_ros::msg::std_msgs::Bool;
use asp_ros::transport::ServiceMapping;
use asp_ros::{Qos, Transport};
use asp_sim::scenario::Scenario;
use asp_simulation::{scenario_simulation, start_sim_node};

/// Only stops a hung test; nothing is asserted about how long things take.
const HANG_GUARD: Duration = Duration::from_secs(300);
/// Goals with a success every 20th, first: caches, pools and allocator arenas fill.
const FILL: usize = 200;
/// The schedule after that repeats every this many goals (one success, two searches);
/// the warm-up ends at the first cycle's end after which the map's size did not change.
const CYCLE: usize = 100;
/// Memory readings after the warm-up, at least: 400 goals (each reading covers the
/// [`READ_EVERY`] goals before it). A slope over 200 goals is the allocator's noise (a
/// 600-goal run read object_map_node at 2.76 MiB per 100 goals; over 600 goals it was
/// -0.07).
const MIN_READINGS: usize = 8;
/// Goals between memory readings after the warm-up; each reading is the lowest of the
/// per-goal samples since the last. Two clean-clone CI runs of single samples every 50
/// goals read object_map_node at 1.18 and 1.20 MiB per 100 goals, its samples swinging
/// 241–254 MiB with nothing growing: which sample a reading hit decided the slope.
const READ_EVERY: usize = 50;
/// The most the six nodes together may grow per 100 goals after the warm-up. A leak of
/// the size the soak found before (agent_node's journal: ~67 KiB a goal) is 6.5 MiB.
/// Two clean-clone CI runs of the same schedule read -0.25 and 2.34 (least squares;
/// 1.70 Theil–Sen) with every node under its own limit: the six processes' resident
/// memory swings ±15 MiB between readings, so the sum's limit sits above that spread
/// and below any leak the soak has found.
const MAX_MIB_PER_100_GOALS: f64 = 3.0;
/// … and each of them (a leak in one must not hide behind another's shrinking cache).
const MAX_NODE_MIB_PER_100_GOALS: f64 = 1.0;

/// A node's memory, MiB: resident (read from `/proc`) and its heap in use (as the node
/// last reported it on `/diagnostics`).
#[derive(Debug, Clone, Copy)]
struct Memory {
    rss: f64,
    heap: f64,
}

impl Memory {
    /// Each measure's lower.
    fn min(self, other: Self) -> Self {
        Self {
            rss: self.rss.min(other.rss),
            heap: self.heap.min(other.heap),
        }
    }
}

/// Resident memory of process `pid`, MiB.
fn rss_mib(pid: u32) -> f64 {
    let bytes = asp_nodes::process::resident_of(pid).unwrap();
    bytes as f64 / (1024.0 * 1024.0)
}

/// Every node's memory; `heap`: the heap in use each node last reported.
fn memory(launcher: &Launcher, heap: &BTreeMap<String, f64>) -> BTreeMap<String, Memory> {
    asp_nodes::launch::PRODUCT_NODES
        .iter()
        .map(|n| {
            let m = Memory {
                rss: rss_mib(launcher.pid(n).unwrap()),
                heap: *heap
                    .get(*n)
                    .unwrap_or_else(|| panic!("{n} reported no process diagnostics")),
            };
            (n.to_string(), m)
        })
        .collect()
}

/// How long the soak lets the nodes settle after a goal that moved the robot, reading
/// their memory every [`SETTLE_EVERY`], and keeping each node's lowest: frames stream
/// in the whole time (object_map_node's resident memory swings 220–250 MiB from one
/// instant to the next with two frames in flight and freed pages that jemalloc returns
/// after 1 s), so one instant's reading is mostly which frames it caught. Two CI runs
/// of single readings failed on that swing alone (the heap in use flat).
const SETTLE: Duration = Duration::from_secs(3);
const SETTLE_EVERY: Duration = Duration::from_millis(100);

/// Every node's lowest memory over [`SETTLE`]; `heap` gives the heap in use as the
/// nodes last reported it (each reports once a second).
async fn settled(
    launcher: &Launcher,
    heap: &mut impl FnMut() -> BTreeMap<String, f64>,
) -> BTreeMap<String, Memory> {
    let until = Instant::now() + SETTLE;
    let mut lowest = memory(launcher, &heap());
    while Instant::now() < until {
        tokio::time::sleep(SETTLE_EVERY).await;
        for (node, m) in memory(launcher, &heap()) {
            lowest
                .entry(node)
                .and_modify(|l| *l = l.min(m))
                .or_insert(m);
        }
    }
    lowest
}

/// Theil–Sen slope of `ys` over `xs` (the median of the pairs' slopes), per 100.
fn slope_per_100(xs: &[f64], ys: &[f64]) -> f64 {
    // Theil–Sen: the median of every pair's slope. One reading caught mid-burst (a
    // 631 MiB dip or a 663 MiB peak among 650s) moves a least-squares line by MiB per
    // 100 goals; the median of the pairs stays with the trend
    let mut slopes: Vec<f64> = Vec::new();
    for i in 0..xs.len() {
        for j in i + 1..xs.len() {
            if xs[j] != xs[i] {
                slopes.push((ys[j] - ys[i]) / (xs[j] - xs[i]));
            }
        }
    }
    if slopes.is_empty() {
        return 0.0;
    }
    slopes.sort_by(f64::total_cmp);
    let m = slopes.len() / 2;
    let median = if slopes.len().is_multiple_of(2) {
        (slopes[m - 1] + slopes[m]) / 2.0
    } else {
        slopes[m]
    };
    median * 100.0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_goals_leave_memory_flat() {
    let goals: usize = std::env::var("ASP_SOAK_GOALS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let least = FILL + 2 * CYCLE + (MIN_READINGS - 1) * READ_EVERY;
    assert!(
        goals >= least,
        "ASP_SOAK_GOALS={goals} leaves no room for the warm-up ({} goals at least) and {MIN_READINGS} readings after it: {least} goals at least",
        FILL + 2 * CYCLE
    );
    let domain = common::fresh_domain();
    let data = tempfile::tempdir().unwrap();
    let mut overrides = asp_runtime::profile_overrides(&common::config_dir(), "oracle").unwrap();
    // a search that finds nothing steps sideways; its turns in place would add only more
    // of the same motions and looks (5 min of CI) to what the soak measures
    overrides.push("object_map_node.mapping.search.turns_deg=[]".into());
    let mut sim_overrides: Vec<&str> = overrides.iter().map(String::as_str).collect();
    // a robot's cameras stream (the nodes do not ask the simulator for frames)
    sim_overrides.push("sim_node.camera.rate_hz=4.0");
    let cfg = common::config(&data, &sim_overrides);
    let sc =
        Scenario::load(common::config_dir().join("scenarios/tabletop/apple_in_bowl.yaml")).unwrap();
    let sim = scenario_simulation(&cfg, &sc, None).unwrap();
    let t = Transport::dds(common::dds_settings(domain, ServiceMapping::FastDds)).unwrap();
    let sim_node = start_sim_node(&cfg, &t.node("sim_node").unwrap(), sim.clone())
        .await
        .unwrap();
    let vlm_url = sim_node.vlm_standin.as_ref().unwrap().base_url();

    let args = launched::node_args(&data, &vlm_url, &overrides);
    // the last lines of every node, shown when the test fails
    let lines = Arc::new(Mutex::new(std::collections::VecDeque::<String>::new()));
    let l = lines.clone();
    let launcher = Launcher::new(
        launched::bin_dir(),
        args,
        Arc::new(move |node: &str, line: &str| {
            let mut l = l.lock().unwrap();
            l.push_back(format!("[{node}] {line}"));
            if l.len() > 400 {
                l.pop_front();
            }
        }),
    )
    .env("ROS_DOMAIN_ID", &domain.to_string())
    .env("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp")
    .env("RUST_LOG", "warn")
    .respawn(Respawn {
        delay: Duration::from_secs(1),
        max: 0,
    });
    let logs = {
        let lines = lines.clone();
        move || {
            lines
                .lock()
                .unwrap()
                .iter()
                .cloned()
                .collect::<Vec<_>>()
                .join("\n")
        }
    };
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let run = launcher.clone();
    let launched = tokio::spawn(async move {
        run.run(LaunchTarget::Robot, &[], async {
            let _ = stop_rx.await;
        })
        .await
    });

    let me = t.node("soak_test").unwrap();
    let action = me
        .action_client::<ExecuteGoalAction>("/asp/execute")
        .unwrap();
    let service = me
        .client::<ExecuteGoal>(asp_nodes::names::EXECUTE_GOAL_SERVICE)
        .unwrap();
    let mut ready = me.subscribe::<Bool>("/asp/ready", Qos::latched()).unwrap();
    // every node's heap in use, MiB, as it last reported it on /diagnostics (deep
    // enough for every node's reports over the longest goal)
    let mut diagnostics = me
        .subscribe::<DiagnosticArray>(DIAGNOSTICS_TOPIC, Qos::default_reliable().with_depth(200))
        .unwrap();
    let mut heap_reported: BTreeMap<String, f64> = BTreeMap::new();
    let mut heap = move || {
        while let Some(report) = diagnostics.try_recv() {
            for s in &report.status {
                if let (Some(node), Some(mib)) =
                    (reporting_node(s), reported(s, keys::HEAP_IN_USE_MIB))
                {
                    heap_reported.insert(node.to_owned(), mib);
                }
            }
        }
        heap_reported.clone()
    };
    // ASP_SOAK_TRACE=<file>: every node's memory after every goal, as CSV
    let mut trace = std::env::var_os("ASP_SOAK_TRACE").map(|f| {
        let mut w = std::io::BufWriter::new(std::fs::File::create(f).unwrap());
        use std::io::Write;
        writeln!(w, "goal,seconds,kind,node,rss_mib,heap_in_use_mib").unwrap();
        // (rows only for the goals after which the map had its warmed-up size)
        w
    });
    let mut map_summary = me
        .subscribe::<ObjectMapSummary>(asp_nodes::names::OBJECT_MAP_TOPIC, Qos::latched())
        .unwrap();
    // the map's size (objects, points) as last published
    let mut last_map = (0, 0);
    let mut map_size = move || {
        if let Some(m) = map_summary.latest() {
            last_map = (m.objects, m.points);
        }
        last_map
    };
    let waited = tokio::time::timeout(HANG_GUARD, async {
        while !ready.recv().await.is_some_and(|b| b.data) {}
    })
    .await;
    assert!(
        waited.is_ok(),
        "agent_node never said it is ready\n{}",
        logs()
    );
    let start = sim.with_state(|s| (s.world.clone(), s.robot.clone()));

    // the goals, in turn: (text, whether it succeeds, the refusal code if refused)
    let unknown = ("pick up the unicorn", false, None);
    let refusals = [
        ("   ", false, Some(goal_refused::BLANK)),
        ("hello there", false, Some(goal_refused::NO_VERB)),
        ("fold the laundry", false, Some(goal_refused::UNSUPPORTED)),
    ];
    // after the warm-up, every READ_EVERY goals: the goal, every node's memory, the
    // map's (objects, points)
    type Reading = (usize, BTreeMap<String, Memory>, (u32, u32));
    let mut readings: Vec<Reading> = Vec::new();
    // each node's lowest memory since the last reading, sampled after each goal
    let mut floor: Option<BTreeMap<String, Memory>> = None;
    // the map's size at every CYCLE-th goal, and the goal the warm-up ended at
    let mut map_by_cycle: Vec<(u32, u32)> = Vec::new();
    let mut warm_end: Option<usize> = None;
    // the map's size then: memory is sampled only while the map has it
    let mut warm_map: Option<(u32, u32)> = None;
    let began = Instant::now();
    let (mut succeeded, mut by_service) = (0, 0);
    // end-to-end time of each refusal, by goal and by the service or the action
    let mut refusal_ms: BTreeMap<(&str, &str), Vec<f64>> = BTreeMap::new();
    for i in 0..goals {
        if i.is_multiple_of(CYCLE) {
            let now = map_size();
            if warm_end.is_none() && i >= FILL + CYCLE && map_by_cycle.last() == Some(&now) {
                println!(
                    "soak: warm-up ends at goal {i}: the map held {} objects, {} points over the last {CYCLE} goals",
                    now.0, now.1
                );
                warm_end = Some(i);
                warm_map = Some(now);
            }
            map_by_cycle.push(now);
        }
        if warm_end.is_some_and(|w| i > w && (i - w).is_multiple_of(READ_EVERY))
            && let Some(lowest) = floor.take()
        {
            readings.push((i, lowest, map_size()));
        }
        let success_every = if i < FILL { 20 } else { CYCLE };
        let (goal, succeeds, refused) = if i % success_every == success_every - 1 {
            (sc.spec.goal.as_str(), true, None)
        } else if i % 50 == 24 {
            unknown
        } else {
            refusals[i % refusals.len()]
        };
        if i % 100 == 0 {
            println!("soak: goal {i} at {:.0} s", began.elapsed().as_secs_f64());
        }
        // the service and the action take turns
        let sent = Instant::now();
        let (success, code, msg) = if i % 2 == 0 {
            by_service += 1;
            let r = tokio::time::timeout(
                HANG_GUARD,
                service.call(ExecuteGoalRequest { goal: goal.into() }),
            )
            .await
            .unwrap_or_else(|_| panic!("goal {i} hung\n{}", logs()))
            .unwrap_or_else(|e| panic!("goal {i}: {e}\n{}", logs()));
            (r.success, r.error_code, r.error_msg)
        } else {
            let r = tokio::time::timeout(
                HANG_GUARD,
                action.execute(
                    ExecuteGoalActionGoal { goal: goal.into() },
                    &CancellationToken::new(),
                    |_| {},
                ),
            )
            .await
            .unwrap_or_else(|_| panic!("goal {i} hung\n{}", logs()))
            .unwrap_or_else(|e| panic!("goal {i}: {e}\n{}", logs()));
            assert_eq!(
                r.state == TerminalState::Succeeded,
                r.result.success,
                "goal {i}: {r:?}"
            );
            (r.result.success, r.result.error_code, r.result.error_msg)
        };
        let took = sent.elapsed().as_secs_f64() * 1e3;
        assert_eq!(success, succeeds, "goal {i} {goal:?}: {msg}\n{}", logs());
        if let Some(expected) = refused {
            assert_eq!(code, expected, "goal {i} {goal:?}: {msg}");
            let path = if i % 2 == 0 { "service" } else { "action" };
            refusal_ms.entry((goal, path)).or_default().push(took);
        }
        if refused.is_none() {
            let (objects, points) = map_size();
            println!(
                "soak: goal {i} {goal:?} (success {success}): map {objects} objects, {points} points"
            );
        }
        if succeeds {
            assert!(
                sim.holds(&sc.spec.success),
                "goal {i}: the apple is not in the bowl"
            );
            succeeded += 1;
            sim.with_state_mut(|s| {
                s.world = start.0.clone();
                s.robot = start.1.clone();
            });
        }
        // like with like: a success remaps from the start pose (a smaller map, 7 or 8
        // objects) until the next search maps the room again, and a node's memory
        // follows its map by MiB either way. After every goal that moved the robot and
        // after every tenth goal: 50 refusals take 0.1 s, so a look after each would be
        // one more look at the same moment, and the frames streaming in make each 3 s
        // window's floor differ by MiB (skill_executor_node 84–95 MiB, its heap flat)
        if warm_end.is_some() && (refused.is_none() || i % 10 == 4) && warm_map == Some(map_size())
        {
            let now = settled(&launcher, &mut heap).await;
            if let Some(w) = &mut trace {
                use std::io::Write;
                let kind = if succeeds {
                    "success"
                } else if refused.is_none() {
                    "search"
                } else {
                    "refusal"
                };
                for (node, m) in &now {
                    writeln!(
                        w,
                        "{i},{:.1},{kind},{node},{:.2},{:.2}",
                        began.elapsed().as_secs_f64(),
                        m.rss,
                        m.heap
                    )
                    .unwrap();
                }
            }
            match &mut floor {
                Some(lowest) => {
                    for (node, m) in now {
                        lowest
                            .entry(node)
                            .and_modify(|l| *l = l.min(m))
                            .or_insert(m);
                    }
                }
                None => floor = Some(now),
            }
        }
    }
    let elapsed = began.elapsed().as_secs_f64();
    if let Some(lowest) = floor.take() {
        readings.push((goals, lowest, map_size()));
    }
    assert!(
        warm_end.is_some(),
        "the object map never held its size over {CYCLE} goals in a world that does not change: (objects, points) at every {CYCLE}th goal {map_by_cycle:?}"
    );
    assert!(
        readings.len() >= MIN_READINGS,
        "the warm-up ended at goal {warm_end:?}, leaving {} memory readings of {goals} goals; set ASP_SOAK_GOALS higher",
        readings.len()
    );
    let _ = stop_tx.send(());
    let report = launched.await.unwrap().unwrap();
    assert!(report.clean(), "{report:?}\n{}", logs());
    assert!(report.respawns.is_empty(), "{report:?}");

    let xs: Vec<f64> = readings.iter().map(|r| r.0 as f64).collect();
    // one measure of one node (or of the six together) over the readings
    let series = |node: Option<&str>, measure: fn(&Memory) -> f64| -> Vec<f64> {
        readings
            .iter()
            .map(|r| match node {
                Some(n) => measure(&r.1[n]),
                None => r.1.values().map(measure).sum(),
            })
            .collect()
    };
    let rss = |m: &Memory| m.rss;
    let heap = |m: &Memory| m.heap;
    let (first, last) = (&readings[0], &readings[readings.len() - 1]);
    println!(
        "soak: {goals} goals ({succeeded} succeeded on the simulator, {by_service} through the service) in {elapsed:.0} s"
    );
    for ((goal, path), ms) in &mut refusal_ms {
        ms.sort_by(f64::total_cmp);
        let at = |q: f64| ms[((ms.len() - 1) as f64 * q).round() as usize];
        println!(
            "soak: {goal:?} refused through the {path}, end to end: p50 {:.1} ms, p90 {:.1} ms, max {:.1} ms ({} goals)",
            at(0.5),
            at(0.9),
            at(1.0),
            ms.len()
        );
    }
    println!(
        "MiB (resident | heap in use) at goal {} and at goal {goals}, and per 100 goals (slope over {} readings)",
        first.0,
        readings.len()
    );
    let row = |name: &str, node: Option<&str>| {
        let (r, h) = (series(node, rss), series(node, heap));
        println!(
            "{name:<20}  {:>7.1} {:>7.1} {:>6.2}  |  {:>7.1} {:>7.1} {:>6.2}",
            r[0],
            r[r.len() - 1],
            slope_per_100(&xs, &r),
            h[0],
            h[h.len() - 1],
            slope_per_100(&xs, &h)
        );
    };
    let mut grew = Vec::new();
    for node in asp_nodes::launch::PRODUCT_NODES {
        row(node, Some(node));
        let ys = series(Some(node), rss);
        let slope = slope_per_100(&xs, &ys);
        if slope >= MAX_NODE_MIB_PER_100_GOALS {
            grew.push(format!("{node} {slope:.2} ({ys:.1?})"));
        }
    }
    row("all six", None);
    let all = series(None, rss);
    let growth = slope_per_100(&xs, &all);
    println!(
        "object map: {} objects, {} points at goal {}; {} objects, {} points at goal {goals}",
        first.2.0, first.2.1, first.0, last.2.0, last.2.1
    );
    assert!(
        growth < MAX_MIB_PER_100_GOALS,
        "the nodes grew {growth:.2} MiB per 100 goals after the warm-up ({all:.1?} MiB)"
    );
    assert!(
        grew.is_empty(),
        "nodes grew {MAX_NODE_MIB_PER_100_GOALS} MiB per 100 goals or more after the warm-up: {}",
        grew.join("; ")
    );
}

#[test]
fn the_slope_is_per_100_goals() {
    let xs = [200.0, 250.0, 300.0, 350.0];
    assert!((slope_per_100(&xs, &[10.0, 10.5, 11.0, 11.5]) - 1.0).abs() < 1e-9);
    assert!(slope_per_100(&xs, &[10.0, 10.0, 10.0, 10.0]).abs() < 1e-9);
    // one reading caught mid-burst does not tilt it
    assert!(slope_per_100(&xs, &[10.0, 4.0, 10.0, 10.0]).abs() < 1e-9);
    assert!((slope_per_100(&xs, &[10.0, 10.5, 30.0, 11.5]) - 1.0).abs() < 1e-9);
}
