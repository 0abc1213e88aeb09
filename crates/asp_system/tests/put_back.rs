//! The world put back behind the product's back between goals (a person returning the
//! apple to where it started, the map still holding it in the bowl): every goal must
//! report what the world shows. Over processes with streaming cameras this once gave
//! verified successes with the apple untouched (the grasp closed on the bowl's rim where
//! the map had the apple); the skill executor now ends a grasp whose object a fresh view
//! does not see (skills_sim.rs stages that directly).
#![allow(clippy::unwrap_used)]

mod common;

use asp_agent::GoalStatus;
use asp_core::robot::CancellationToken;

use common::{oracle_config as config, start_on};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_goal_after_the_world_was_put_back_is_judged_on_the_world() {
    let data = tempfile::tempdir().unwrap();
    let (system, sc) = start_on(&config(&data), "tabletop/apple_in_bowl.yaml", true).await;
    let sim = system.sim.clone();
    let start = sim.with_state(|s| (s.world.clone(), s.robot.clone()));
    for round in 0..4 {
        let report = system
            .agent
            .run_goal(
                &format!("g{round}"),
                &sc.spec.goal,
                CancellationToken::new(),
            )
            .await;
        let holds = sim.holds(&sc.spec.success);
        assert_eq!(
            report.status == GoalStatus::Completed,
            holds,
            "round {round}: {:#?}",
            report.summary
        );
        sim.with_state_mut(|s| {
            s.world = start.0.clone();
            s.robot = start.1.clone();
        });
    }
}
