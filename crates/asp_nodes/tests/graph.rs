//! The whole node graph in one process on the in-process bus: the sim node and every
//! product node, talking only through their ROS interfaces. A client sends the tabletop
//! scenario's goal to `/asp/execute` like any ROS program would; success is judged by
//! the scenario's predicate on the simulator's state, which no node reads.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use asp_core::robot::CancellationToken;
use asp_nodes::nodes::NodeOptions;
use asp_ros::msg::TerminalState;
use asp_ros::msg::asp_interfaces::{
    ExecuteGoalAction, ExecuteGoalActionFeedback, ExecuteGoalActionGoal, ObjectMapSummary,
    SymbolicState, Verdict,
};
use asp_ros::{Qos, Transport, TransportSettings};
use asp_sim::scenario::Scenario;
use asp_simulation::scenario_simulation;
use asp_simulation::start_sim_graph;
use asp_system::JournalEntry;
use common::{config, config_dir};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apple_goes_into_the_bowl_through_the_execute_action() {
    let data = tempfile::tempdir().unwrap();
    let cfg = config(&data, &[]);
    let sc = Scenario::load(config_dir().join("scenarios/tabletop/apple_in_bowl.yaml")).unwrap();
    let sim = scenario_simulation(&cfg, &sc, None).unwrap();
    let transport = Transport::in_process_with(TransportSettings {
        call_timeout: Duration::from_secs(900),
        ..TransportSettings::default()
    });
    let options = NodeOptions {
        memory: false,
        verifier_instance: Some(1),
    };
    let graph = start_sim_graph(&cfg, &transport, sim.clone(), &options)
        .await
        .unwrap();

    let me = transport.node("test_client").unwrap();
    let mut verdicts = me
        .subscribe::<Verdict>("/asp/verdicts", asp_nodes::verifier::VERDICTS_QOS)
        .unwrap();
    let client = me
        .action_client::<ExecuteGoalAction>("/asp/execute")
        .unwrap();
    let feedback = Arc::new(Mutex::new(Vec::<ExecuteGoalActionFeedback>::new()));
    let fb = feedback.clone();
    let result = client
        .execute(
            ExecuteGoalActionGoal {
                goal: sc.spec.goal.clone(),
            },
            &CancellationToken::new(),
            move |f| fb.lock().unwrap().push(f),
        )
        .await
        .unwrap();
    assert_eq!(
        result.state,
        TerminalState::Succeeded,
        "{:?}",
        result.result
    );
    assert!(result.result.success && result.result.error_code == 0);
    assert!(
        sim.holds(&sc.spec.success),
        "the goal succeeded but the apple is not in the bowl"
    );

    // one feedback message per tool call, in order, each naming its call
    let feedback = feedback.lock().unwrap().clone();
    assert!(feedback.len() >= 3, "{feedback:#?}");
    for (i, f) in feedback.iter().enumerate() {
        assert_eq!(f.step as usize, i + 1, "{feedback:#?}");
        assert!(f.tool_call.contains('('), "{}", f.tool_call);
    }
    let last = feedback.last().unwrap();
    assert!(
        last.success && last.state.held_object.is_empty(),
        "{last:?}"
    );

    // the latched state and map summary reach a late subscriber
    let mut state = me
        .subscribe::<SymbolicState>("/asp/state", Qos::latched())
        .unwrap();
    let s = state.recv_timeout(Duration::from_secs(10)).await.unwrap();
    assert_eq!(
        (s.held_object, s.inventory),
        (last.state.held_object.clone(), last.state.inventory.clone())
    );
    let mut map = me
        .subscribe::<ObjectMapSummary>("/asp/object_map", Qos::latched())
        .unwrap();
    let m = map.recv_timeout(Duration::from_secs(10)).await.unwrap();
    assert!(m.objects > 0 && !m.keys.is_empty(), "{m:?}");

    // every skill committed through the verifier node, whose verdicts were published
    let skills: Vec<_> = graph
        .product
        .agent
        .journal
        .entries()
        .into_iter()
        .filter_map(|e| match e {
            JournalEntry::Skill { reply, .. } => Some(reply),
            _ => None,
        })
        .collect();
    // the drop succeeded; a grasp whose place the held apple hid from the cameras is
    // "cannot tell" (a verification failure, never a motion failure), and the drop's
    // verification then shows the apple was held
    assert!(skills.last().is_some_and(|r| r.succeeded), "{skills:#?}");
    assert!(
        skills.iter().all(|r| r.succeeded
            || r.failure
                .as_ref()
                .is_some_and(|f| f.kind == asp_core::FailureKind::Verification)),
        "{skills:#?}"
    );
    let mut seen = Vec::new();
    while let Some(v) = verdicts.try_recv() {
        seen.push(v);
    }
    for r in skills.iter().filter(|r| r.succeeded) {
        let commit = r.report.commit.as_ref().unwrap();
        let outcome = r.report.outcome.as_ref().unwrap();
        assert!(commit.accepted && outcome.succeeded());
        assert_eq!(commit.step.0 >> 32, 1, "the verifier node's instance");
        assert!(
            seen.iter()
                .any(|v| v.stage == "commit" && v.step == commit.step.0 && v.passed),
            "commit {} not published: {seen:?}",
            commit.step
        );
        assert!(
            seen.iter()
                .any(|v| v.stage == "outcome" && v.step == outcome.step.0 && v.passed)
        );
    }
}

/// An exploring object_map_node publishes the floor grid it built on
/// `/asp/object_map/explored` (latched, for RViz's Map display) when its tour ends:
/// through the graph, its drives go to the sim node's Nav2 action and its views come
/// from the camera topics.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exploring_map_publishes_the_grid_it_explored() {
    use asp_ros::msg::nav_msgs::OccupancyGrid;
    let data = tempfile::tempdir().unwrap();
    let cfg = config(
        &data,
        &[
            "object_map_node.mapping.explore.enabled=true",
            "object_map_node.mapping.cameras=[head, wrist]",
            "object_map_node.mapping.arm_poses=[look]",
        ],
    );
    let sc = Scenario::load(config_dir().join("scenarios/mobile/dial_phone.yaml")).unwrap();
    let sim = scenario_simulation(&cfg, &sc, None).unwrap();
    let transport = Transport::in_process_with(TransportSettings::default());
    let options = NodeOptions {
        memory: false,
        verifier_instance: Some(1),
    };
    let me = transport.node("test_client").unwrap();
    let mut grids = me
        .subscribe::<OccupancyGrid>(asp_nodes::names::EXPLORED_GRID_TOPIC, Qos::latched())
        .unwrap();
    let mut maps = me
        .subscribe::<ObjectMapSummary>(asp_nodes::names::OBJECT_MAP_TOPIC, Qos::latched())
        .unwrap();
    let _graph = start_sim_graph(&cfg, &transport, sim.clone(), &options)
        .await
        .unwrap();
    // the build on start explores the apartment; the grid comes when the tour ends
    let msg = grids.recv().await.unwrap();
    assert_eq!(msg.header.frame_id, cfg.config.common.frames.map.as_str());
    let grid = asp_ros::convert::grid(&msg).unwrap();
    let cells = |v: i8| grid.cells().iter().filter(|&&c| c == v).count() as f32;
    let free_m2 = cells(asp_core::grid::FREE) * grid.resolution * grid.resolution;
    // the apartment's three rooms hold about 44 m² of free floor
    assert!(free_m2 > 25.0, "{free_m2} m² free");
    assert!(cells(asp_core::grid::OCCUPIED) > 100.0);
    // the build ends back where it started (its summary comes after the drive back)
    loop {
        let summary = maps.recv().await.unwrap();
        if summary.objects > 0 {
            break;
        }
    }
    let end = asp_core::robot::BaseNavigation::base_pose(&sim)
        .await
        .unwrap();
    let start = asp_core::Pose2D::new(sc.spec.robot.base[0], sc.spec.robot.base[1], 0.0);
    assert!(end.distance_to(&start) < 0.1, "{end:?}");
}
