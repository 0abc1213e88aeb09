//! The fault matrix: the product nodes as separate processes (the launcher behind
//! `asp launch`, restarting a node that exits) against the sim node in this process over
//! DDS. Each product node in turn is killed (SIGKILL: no goodbye) in the middle of a
//! goal sent to `/asp/execute`:
//!
//! - a node the goal needs: the goal ends with code 25 and a message naming that node,
//!   and the robot stands still afterwards (its motion was cancelled);
//! - a node the goal does not need (go_to_node on a fixed base): the goal goes on;
//! - agent_node itself (first): the skill it sent stops and the robot stands still;
//!   the relaunched agent ends the dead one's goal for its client (ABORTED, code 25,
//!   naming agent_node, from the dead process's request record) and takes the goals
//!   after it.
//!
//! After each kill the launcher starts the node again, `/asp/ready` comes back, and the
//! next goal runs on the recovered graph; the last one must succeed.
#![allow(clippy::unwrap_used)]

mod common;
#[path = "common/launched.rs"]
mod launched;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use asp_core::robot::CancellationToken;
use asp_nodes::launch::{LaunchTarget, Launcher, Respawn};
use asp_ros::action::ActionClient;
use asp_ros::msg::TerminalState;
use asp_ros::msg::asp_interfaces::{ExecuteGoalAction, ExecuteGoalActionGoal, goal_refused};
use asp_ros::msg::std_msgs::Bool;
use asp_ros::transport::{ServiceMapping, Subscription};
use asp_ros::{Qos, Transport};
use asp_sim::SimRobot;
use asp_sim::scenario::Scenario;
use asp_simulation::{scenario_simulation, start_sim_node};

/// Bounds that only stop a hung test; nothing is asserted about how long things take.
const HANG_GUARD: Duration = Duration::from_secs(240);

/// Where the robot is: joint positions and the base pose.
fn robot_pose(sim: &SimRobot) -> (Vec<f64>, [f32; 3]) {
    sim.with_state(|s| {
        let b = &s.robot.base;
        (s.robot.q.clone(), [b.x, b.y, b.theta])
    })
}

/// Puts the world and the robot back as they were at `start` (a failed round may have
/// left the apple in the gripper).
fn restore(sim: &SimRobot, start: &(asp_sim::World, asp_sim::sim::RobotState)) {
    sim.with_state_mut(|s| {
        s.world = start.0.clone();
        s.robot = start.1.clone();
    });
}

/// Waits until agent_node says it is ready.
async fn ready(sub: &mut Subscription<Bool>, logs: &dyn Fn() -> String) {
    let waited = tokio::time::timeout(HANG_GUARD, async {
        loop {
            if sub.recv().await.is_some_and(|b| b.data) {
                return;
            }
        }
    })
    .await;
    assert!(
        waited.is_ok(),
        "agent_node never said it is ready\n{}",
        logs()
    );
}

/// Sends `goal`; resolves when its first feedback (the first tool call's end) arrives,
/// returning the goal's task.
async fn goal_under_way(
    client: &Arc<ActionClient<ExecuteGoalAction>>,
    goal: &str,
) -> tokio::task::JoinHandle<
    Result<
        asp_ros::action::GoalResult<asp_ros::msg::asp_interfaces::ExecuteGoalActionResult>,
        asp_ros::RosError,
    >,
> {
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let tx = Mutex::new(Some(tx));
    let (c, g) = (client.clone(), goal.to_owned());
    let task = tokio::spawn(async move {
        c.execute(
            ExecuteGoalActionGoal { goal: g },
            &CancellationToken::new(),
            move |_| {
                if let Some(tx) = tx.lock().unwrap().take() {
                    let _ = tx.send(());
                }
            },
        )
        .await
    });
    tokio::time::timeout(HANG_GUARD, rx)
        .await
        .expect("no feedback from the goal")
        .expect("the goal ended without feedback");
    task
}

/// Waits for a log line of `node` (its `[name]` prefix) holding `text` (log colours
/// stripped).
async fn heard(lines: &Mutex<Vec<String>>, node: &str, text: &str, logs: &dyn Fn() -> String) {
    let plain = |l: &str| {
        let mut out = String::new();
        let mut skip = false;
        for c in l.chars() {
            match (skip, c) {
                (_, '\u{1b}') => skip = true,
                (true, 'm') => skip = false,
                (true, _) => {}
                (false, c) => out.push(c),
            }
        }
        out
    };
    let found = tokio::time::timeout(HANG_GUARD, async {
        loop {
            if lines
                .lock()
                .unwrap()
                .iter()
                .any(|l| l.starts_with(node) && plain(l).contains(text))
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    assert!(found.is_ok(), "{node} never logged {text:?}\n{}", logs());
}

fn kill(pid: u32) {
    let status = std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// Waits for the launcher to run node `name` as a process other than `old`.
async fn restarted(launcher: &Launcher, name: &str, old: u32) -> u32 {
    tokio::time::timeout(HANG_GUARD, async {
        loop {
            if let Some(pid) = launcher.pid(name).filter(|p| *p != old) {
                return pid;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{name} was not started again"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_node_killed_mid_goal_ends_it_cleanly_and_the_graph_recovers() {
    let domain = common::fresh_domain();
    let data = tempfile::tempdir().unwrap();
    // the models do not err (the oracle profile): only the faults make goals fail
    let overrides = asp_runtime::profile_overrides(&common::config_dir(), "oracle").unwrap();
    let mut sim_overrides: Vec<&str> = overrides.iter().map(String::as_str).collect();
    sim_overrides.push("sim_node.camera.rate_hz=4.0");
    // motions take real time (not as fast as the machine goes), so the goal after the
    // kill outlasts the heartbeat timeout however fast the machine is
    sim_overrides.push("sim_node.real_time_factor=1.0");
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
    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let l = lines.clone();
    let launcher = Launcher::new(
        launched::bin_dir(),
        args,
        Arc::new(move |node: &str, line: &str| {
            // shown when the test fails (cargo test captures it otherwise)
            eprintln!("[{node}] {line}");
            l.lock().unwrap().push(format!("[{node}] {line}"));
        }),
    )
    .env("ROS_DOMAIN_ID", &domain.to_string())
    .env("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp")
    .env(
        "RUST_LOG",
        "warn,asp_nodes=info,asp_agent=info,asp_ros::liveliness=info,asp_ros::transport=info",
    )
    // a restart waits long enough that a restarted node cannot be what moves the robot
    // while the test checks that it stands still
    .respawn(Respawn {
        delay: Duration::from_secs(6),
        max: 2,
    });
    let logs = {
        let lines = lines.clone();
        move || lines.lock().unwrap().join("\n")
    };
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let run = launcher.clone();
    let launched = tokio::spawn(async move {
        run.run(LaunchTarget::Robot, &[], async {
            let _ = stop_rx.await;
        })
        .await
    });

    let test_node = t.node("fault_test").unwrap();
    let client = Arc::new(
        test_node
            .action_client::<ExecuteGoalAction>("/asp/execute")
            .unwrap(),
    );
    let mut ready_sub = test_node
        .subscribe::<Bool>("/asp/ready", Qos::latched())
        .unwrap();
    let goal = sc.spec.goal.clone();
    let start = sim.with_state(|s| (s.world.clone(), s.robot.clone()));

    // agent_node itself, mid-goal: the skill executor stops the skill it sent (nobody
    // supervises it any more), the robot stands still, and the relaunched agent takes
    // the goals below
    ready(&mut ready_sub, &logs).await;
    // a watcher notices the loss of a node it heard: wait until the skill executor has
    heard(
        &lines,
        "[skill_executor_node]",
        "heartbeat: up node=/agent_node",
        &logs,
    )
    .await;
    let orphan = goal_under_way(&client, &goal).await;
    let pid = launcher.pid("agent_node").unwrap();
    kill(pid);
    heard(
        &lines,
        "[skill_executor_node]",
        "the node that sends the goals died",
        &logs,
    )
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = robot_pose(&sim);
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        before,
        robot_pose(&sim),
        "the robot still moves without its agent"
    );
    restarted(&launcher, "agent_node", pid).await;
    // the client of the dead agent's goal hears from the new process (its request
    // record): the goal ended ABORTED, code 25, naming agent_node
    let result = tokio::time::timeout(HANG_GUARD, orphan)
        .await
        .unwrap_or_else(|_| panic!("the dead agent's goal never ended\n{}", logs()))
        .unwrap()
        .unwrap();
    assert_eq!(result.state, TerminalState::Aborted, "{result:?}");
    assert_eq!(
        result.result.error_code,
        goal_refused::NODE_DOWN,
        "{result:?}"
    );
    assert!(
        result
            .result
            .error_msg
            .contains("agent_node's process stopped"),
        "{:?}",
        result.result.error_msg
    );

    for victim in [
        "skill_executor_node",
        "verifier_node",
        "affordance_node",
        "object_map_node",
    ] {
        ready(&mut ready_sub, &logs).await;
        restore(&sim, &start);
        let task = goal_under_way(&client, &goal).await;
        let pid = launcher.pid(victim).unwrap();
        kill(pid);
        let result = tokio::time::timeout(HANG_GUARD, task)
            .await
            .unwrap_or_else(|_| panic!("{victim}: the goal never ended\n{}", logs()))
            .unwrap()
            .unwrap();
        assert_eq!(result.state, TerminalState::Aborted, "{victim}: {result:?}");
        assert_eq!(
            result.result.error_code,
            goal_refused::NODE_DOWN,
            "{victim}: {result:?}\n{}",
            logs()
        );
        assert!(
            result.result.error_msg.contains(victim),
            "{victim}: {:?}",
            result.result.error_msg
        );
        // the robot stands still: what moved for the dead node was cancelled
        tokio::time::sleep(Duration::from_millis(300)).await;
        let before = robot_pose(&sim);
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(before, robot_pose(&sim), "{victim}: the robot still moves");
        restarted(&launcher, victim, pid).await;
    }

    // a node this goal does not need (go_to_node on a fixed base): the goal goes on, and
    // succeeds on the graph every other node was restarted in
    ready(&mut ready_sub, &logs).await;
    restore(&sim, &start);
    let task = goal_under_way(&client, &goal).await;
    let pid = launcher.pid("go_to_node").unwrap();
    kill(pid);
    let result = tokio::time::timeout(HANG_GUARD, task)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_ne!(
        result.result.error_code,
        goal_refused::NODE_DOWN,
        "{result:?}"
    );
    restarted(&launcher, "go_to_node", pid).await;

    let _ = stop_tx.send(());
    let report = launched.await.unwrap().unwrap();
    let restarted: Vec<&str> = report.respawns.iter().map(|(n, _)| n.as_str()).collect();
    for node in [
        "skill_executor_node",
        "verifier_node",
        "affordance_node",
        "object_map_node",
        "go_to_node",
        "agent_node",
    ] {
        assert!(
            restarted.contains(&node),
            "{node} not restarted: {report:?}"
        );
    }
    assert!(report.first_exit.is_none(), "{report:?}");
}

/// A node binary that does not start serving within `common.supervision.start_timeout_s`
/// exits with status 75 (EX_TEMPFAIL), naming the setting, so that the launcher starts
/// it again instead of keeping a node that never serves. agent_node's start is held
/// here by the e-stop settle (30 s, nobody publishing the stop) past a 1 s timeout.
#[test]
fn a_node_that_does_not_start_serving_in_time_exits_to_be_started_again() {
    let data = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(launched::bin_dir().join("agent_node"))
        .args([
            "--config-dir".to_owned(),
            common::config_dir().display().to_string(),
            "--set".to_owned(),
            format!("/**.paths.data_dir={}", data.path().display()),
            "--set".to_owned(),
            "/**.supervision.start_timeout_s=1".to_owned(),
            "--set".to_owned(),
            "/**.safety.estop_settle_s=30".to_owned(),
        ])
        .env("ROS_DOMAIN_ID", common::fresh_domain().to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let log = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut stderr, &mut s).unwrap();
        s
    });
    let deadline = std::time::Instant::now() + HANG_GUARD;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            panic!("agent_node neither started nor exited");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let log = log.join().unwrap();
    assert_eq!(
        status.code(),
        Some(i32::from(asp_nodes::run::EXIT_START_TIMEOUT)),
        "{log}"
    );
    assert!(
        log.contains("did not start serving within 1 s")
            && log.contains("common.supervision.start_timeout_s"),
        "{log}"
    );
}
