//! The soak: the product nodes as separate processes (the launcher behind `asp launch`)
//! against the sim node in this process over DDS, taking goal after goal — 1,000 by
//! default (`ASP_SOAK_GOALS` sets another number) — through the service and the action
//! alike: goals that are refused (most: they cost little, so the soak fits in CI),
//! every 50th one that fails after a search (nothing matches), every 100th one that
//! succeeds on the simulator (the world is put back after it). Every node's
//! resident memory is read from `/proc` after a warm-up and at the end: the growth per
//! 100 goals must stay under a bound (it printed the figures the README reports).
#![allow(clippy::unwrap_used)]

mod common;
#[path = "common/launched.rs"]
mod launched;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use asp_core::robot::CancellationToken;
use asp_nodes::launch::{LaunchTarget, Launcher, Respawn};
use asp_ros::msg::TerminalState;
use asp_ros::msg::asp_interfaces::{
    ExecuteGoal, ExecuteGoalAction, ExecuteGoalActionGoal, ExecuteGoalRequest, ObjectMapSummary,
    goal_refused,
};
use asp_ros::msg::std_msgs::Bool;
use asp_ros::transport::ServiceMapping;
use asp_ros::{Qos, Transport};
use asp_sim::scenario::Scenario;
use asp_simulation::{scenario_simulation, start_sim_node};

/// Only stops a hung test; nothing is asserted about how long things take.
const HANG_GUARD: Duration = Duration::from_secs(300);
/// Goals before the first memory reading: caches, pools and allocator arenas fill.
const WARM_UP: usize = 200;
/// The most the six nodes together may grow per 100 goals after the warm-up. A leak of
/// the size the soak found before (agent_node's journal: ~67 KiB a goal) is 6.5 MiB.
const MAX_MIB_PER_100_GOALS: f64 = 1.5;

/// Resident memory of process `pid`, MiB.
fn rss_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap();
    kib / 1024.0
}

/// Every node's resident memory, MiB.
fn memory(launcher: &Launcher) -> BTreeMap<String, f64> {
    asp_nodes::launch::PRODUCT_NODES
        .iter()
        .map(|n| (n.to_string(), rss_mib(launcher.pid(n).unwrap())))
        .collect()
}

// Not flat yet: 500 goals measured 0.44 MiB per 100 goals for the six together, under the
// bound only because the two big nodes' camera caches swing by a MiB or so either way;
// the small ones grow about 1 MiB per 100 goals each, with time rather than goals
// (README, Results). It also takes ~11 min for 1,000 goals. Run it with
// `cargo test --release -p asp_nodes --test soak -- --ignored --nocapture`.
#[ignore = "memory still grows (about 1 MiB per 100 goals in each small node, see the README); run with --ignored"]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_goals_leave_memory_flat() {
    let goals: usize = std::env::var("ASP_SOAK_GOALS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    assert!(
        goals > WARM_UP,
        "ASP_SOAK_GOALS must exceed the warm-up ({WARM_UP})"
    );
    let domain = common::fresh_domain();
    let data = tempfile::tempdir().unwrap();
    let overrides = asp_runtime::profile_overrides(&common::config_dir(), "oracle").unwrap();
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
    // after the warm-up: the goal, every node's memory, the map's (objects, points)
    type Reading = (usize, BTreeMap<String, f64>, (u32, u32));
    let mut before: Option<Reading> = None;
    let began = Instant::now();
    let (mut succeeded, mut by_service) = (0, 0);
    for i in 0..goals {
        if i == WARM_UP {
            before = Some((i, memory(&launcher), map_size()));
        }
        let (goal, succeeds, refused) = if i % 100 == 99 {
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
        assert_eq!(success, succeeds, "goal {i} {goal:?}: {msg}\n{}", logs());
        if let Some(expected) = refused {
            assert_eq!(code, expected, "goal {i} {goal:?}: {msg}");
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
    }
    let elapsed = began.elapsed().as_secs_f64();
    let (from, before, map_before) = before.unwrap();
    let after = memory(&launcher);
    let map_after = map_size();
    let _ = stop_tx.send(());
    let report = launched.await.unwrap().unwrap();
    assert!(report.clean(), "{report:?}\n{}", logs());
    assert!(report.respawns.is_empty(), "{report:?}");

    let per_100 = |a: f64, b: f64| (b - a) / (goals - from) as f64 * 100.0;
    println!(
        "soak: {goals} goals ({succeeded} succeeded on the simulator, {by_service} through the service) in {elapsed:.0} s"
    );
    println!("node                  MiB at goal {from}   MiB at goal {goals}   MiB per 100 goals");
    for (node, b) in &before {
        let a = after[node];
        println!("{node:<20}  {b:>14.1}  {a:>15.1}  {:>18.2}", per_100(*b, a));
    }
    println!(
        "object map: {} objects, {} points at goal {from}; {} objects, {} points at goal {goals}",
        map_before.0, map_before.1, map_after.0, map_after.1
    );
    let (b, a) = (before.values().sum::<f64>(), after.values().sum::<f64>());
    let growth = per_100(b, a);
    println!("{:<20}  {b:>14.1}  {a:>15.1}  {growth:>18.2}", "all six");
    assert!(
        growth < MAX_MIB_PER_100_GOALS,
        "the nodes grew {growth:.2} MiB per 100 goals after the warm-up ({b:.1} → {a:.1} MiB)"
    );
}
