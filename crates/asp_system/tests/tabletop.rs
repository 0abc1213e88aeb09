//! The whole system in process on the tabletop scenarios: the offline agent drives
//! perception, affordance detection, the verifier-gated skill executor and the simulator;
//! success is judged by the scenario's predicate on the simulator's state, which no part
//! of the system reads.
#![allow(clippy::unwrap_used)]

mod common;

use asp_agent::GoalStatus;
use asp_core::robot::CancellationToken;
use asp_sim::scenario::Scenario;
use asp_simulation::SimSystem;
use asp_system::JournalEntry;

use common::{oracle_config as config, start_on};

async fn run(file: &str) -> (SimSystem, Scenario, asp_agent::GoalReport) {
    let data = tempfile::tempdir().unwrap();
    let (system, sc) = start_on(&config(&data), file, false).await;
    let report = system
        .agent
        .run_goal("g1", &sc.spec.goal, CancellationToken::new())
        .await;
    (system, sc, report)
}

/// The agent reported the goal done and the scenario's success predicate holds.
fn assert_verified_success(
    system: &SimSystem,
    sc: &Scenario,
    report: &asp_agent::GoalReport,
    otherwise: &str,
) {
    assert_eq!(
        report.status,
        GoalStatus::Completed,
        "{:#?}",
        report.summary
    );
    assert!(system.sim.holds(&sc.spec.success), "{otherwise}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apple_goes_into_the_bowl() {
    let (system, sc, report) = run("tabletop/apple_in_bowl.yaml").await;
    assert_verified_success(
        &system,
        &sc,
        &report,
        "the agent reported success but the apple is not in the bowl",
    );
    // a grasp and a drop ran, each behind an accepted commit and a passed outcome check
    let skills: Vec<_> = system
        .journal
        .entries()
        .into_iter()
        .filter_map(|e| match e {
            JournalEntry::Skill { reply, .. } => Some(reply),
            _ => None,
        })
        .collect();
    assert!(skills.len() >= 2, "{skills:#?}");
    for r in skills.iter().filter(|r| r.succeeded) {
        assert!(r.report.commit.as_ref().is_some_and(|c| c.accepted));
        assert!(r.report.outcome.as_ref().is_some_and(|o| o.succeeded()));
    }
    // the map followed the apple into the bowl: after a rebuild its key names the
    // apple there, and a new apple query finds it under that key
    use asp_system::ObjectMapPort;
    let drop = skills.last().unwrap();
    let [x, y, z] = drop.report.placed_at.expect("a confirmed drop says where");
    let apple_key = report
        .final_state
        .inventory
        .iter()
        .find(|k| k.as_str().contains("apple"));
    let apple_key = apple_key.expect("the apple's key").clone();
    let summary = system.map.rebuild(None).await.unwrap();
    assert!(summary.kept_keys.contains(&apple_key), "{summary:?}");
    let found = system.map.retrieve("apple").await.unwrap();
    assert!(found.keys.contains(&apple_key), "{found:?}");
    let seen = system.map.object(&apple_key).await.unwrap();
    let c = seen.object.point_cloud.centroid().unwrap();
    let d = (c - asp_core::Point3::new(x, y, z)).norm();
    assert!(
        d < 0.05,
        "the apple's key names an object {d:.3} m from where it was put"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_power_adapter_is_unplugged_by_its_plug() {
    // a part skill: the plug is grounded on the adapter, then pinch-pulled out
    let (system, sc, report) = run("tabletop/unplug_power_adapter.yaml").await;
    assert_eq!(
        report.status,
        GoalStatus::Completed,
        "{:#?}",
        report.summary
    );
    assert!(system.sim.holds(&sc.spec.success));
    let pulled = system.journal.entries().into_iter().any(|e| match e {
        JournalEntry::Skill { reply, .. } => {
            reply.report.skill == asp_core::Skill::PinchPull
                && reply.report.commit.as_ref().is_some_and(|c| c.accepted)
        }
        _ => false,
    });
    assert!(pulled, "no committed pinch_pull in the journal");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mug_is_picked_up_by_its_handle() {
    // grasp_part: the handle is grounded and grasped at its bar, not at the centroid of
    // the U between its bars, and the mug's own earlier map entry (before it was re-found
    // from another view) is not taken for an obstacle in the fingers' way
    let (system, sc, report) = run("tabletop/mug_by_handle.yaml").await;
    assert_verified_success(
        &system,
        &sc,
        &report,
        "the agent reported success but the mug is not held by its handle",
    );
    let grasped = system.journal.entries().into_iter().any(|e| match e {
        JournalEntry::Skill { reply, .. } => {
            reply.report.skill == asp_core::Skill::GraspPart
                && reply.succeeded
                && reply.report.outcome.as_ref().is_some_and(|o| o.succeeded())
        }
        _ => false,
    });
    assert!(grasped, "no verified grasp_part in the journal");
}

/// The e-stop covers the map's own motions: engaged, a map build that would take the
/// mapping poses refuses to start and nothing moves; released, it builds.
#[tokio::test]
async fn the_estop_stops_the_mapping_poses() {
    let data = tempfile::tempdir().unwrap();
    let mut cfg = config(&data);
    cfg.config.object_map_node.mapping.build_on_start = false;
    let (system, _) = start_on(&cfg, "tabletop/apple_in_bowl.yaml", false).await;
    let sim = system.sim.clone();
    let joints = sim.joint_states().1;
    system.estop.engage();
    let e = system.map.ensure_built().await.unwrap_err();
    assert_eq!(e.failure.kind, asp_core::FailureKind::Cancelled, "{e:?}");
    assert_eq!(
        sim.joint_states().1,
        joints,
        "the arm moved under the e-stop"
    );
    system.estop.reset();
    system.map.ensure_built().await.unwrap();
    use asp_system::ObjectMapPort;
    assert!(!system.map.snapshot().await.map.objects.is_empty());
}
