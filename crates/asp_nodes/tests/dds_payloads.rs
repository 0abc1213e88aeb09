//! Large payloads cross DDS in every kind of exchange the nodes use — service requests
//! and replies (both service mappings) and action goals and results — not only topics.
//! The node interfaces carry JSON payloads of tens of kilobytes (objects with their
//! camera views, skill reports); each such sample is sent as several DATA_FRAG
//! submessages with inline QoS, which the patched rustdds gets right (vendor/README.md).
#![allow(clippy::unwrap_used)]

mod common;

use asp_core::robot::CancellationToken;
use asp_ros::action::{ActionServerOptions, GoalOutcome, goal_fn};
use asp_ros::msg::TerminalState;
use asp_ros::msg::asp_interfaces::{
    ExecuteGoal, ExecuteGoalAction, ExecuteGoalActionGoal, ExecuteGoalActionResult,
    ExecuteGoalRequest, ExecuteGoalResponse,
};
use asp_ros::transport::ServiceMapping;
use asp_ros::{Node, Transport};

/// Sizes around and well past one fragment.
const SIZES: [usize; 5] = [1_000, 1_300, 4_099, 65_537, 300_001];

fn nodes(mapping: ServiceMapping) -> (Node, Node) {
    let s = common::dds_settings(common::fresh_domain(), mapping);
    (
        Transport::dds(s.clone()).unwrap().node("server").unwrap(),
        Transport::dds(s).unwrap().node("client").unwrap(),
    )
}

/// A text of `n` characters that is not one repeated byte.
fn text(n: usize) -> String {
    (0..n).map(|i| char::from(b'a' + (i % 26) as u8)).collect()
}

async fn services(mapping: ServiceMapping) {
    let (a, b) = nodes(mapping);
    let _server = a
        .serve::<ExecuteGoal, _, _>("/payload", |r: ExecuteGoalRequest| async move {
            // the reply is as large as the request, and different
            ExecuteGoalResponse {
                summary: r.goal.chars().rev().collect(),
                error_code: (r.goal.len() % 1000) as u16,
                ..ExecuteGoalResponse::default()
            }
        })
        .unwrap();
    let client = b.client::<ExecuteGoal>("/payload").unwrap();
    for n in SIZES {
        let goal = text(n);
        let r = client
            .call(ExecuteGoalRequest { goal: goal.clone() })
            .await
            .unwrap_or_else(|e| panic!("{n} bytes over {mapping:?}: {e}"));
        assert_eq!(r.summary, goal.chars().rev().collect::<String>(), "{n}");
        assert_eq!(r.error_code as usize, n % 1000);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_service_requests_and_replies_with_the_fast_dds_mapping() {
    services(ServiceMapping::FastDds).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_service_requests_and_replies_with_the_cyclone_mapping() {
    services(ServiceMapping::Cyclone).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_action_goals_and_results() {
    let (a, b) = nodes(ServiceMapping::FastDds);
    let handler = goal_fn::<ExecuteGoalAction, _, _>(|g: ExecuteGoalActionGoal, _ctx| async move {
        GoalOutcome::Succeeded(ExecuteGoalActionResult {
            success: true,
            summary: format!("{}{}", g.goal, g.goal),
            ..ExecuteGoalActionResult::default()
        })
    });
    let _server = a
        .action_server::<ExecuteGoalAction, _>(
            "/payload_action",
            ActionServerOptions::default(),
            handler,
        )
        .unwrap();
    let client = b
        .action_client::<ExecuteGoalAction>("/payload_action")
        .unwrap();
    for n in [2_000, 120_000] {
        let goal = text(n);
        let r = client
            .execute(
                ExecuteGoalActionGoal { goal: goal.clone() },
                &CancellationToken::new(),
                |_| {},
            )
            .await
            .unwrap_or_else(|e| panic!("{n} bytes: {e}"));
        assert_eq!(r.state, TerminalState::Succeeded);
        assert_eq!(r.result.summary.len(), 2 * n);
        assert!(r.result.summary.starts_with(&goal));
    }
}
