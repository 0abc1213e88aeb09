//! Asking whether a server is there costs nothing lasting. ros2-client answers "is a
//! writer or reader matched?" through a discovery-event channel it registers with the
//! node first (so a match between the check and the registration is not missed), and
//! removed a closed channel only when it sent the next discovery event: on a graph that
//! no longer changes, every readiness check left its channel (~0.8 KiB) behind for
//! good. An action client checks five endpoints per goal, and a client waiting for its
//! server checks every 20 ms, so object_map_node grew by 0.7 MiB per 100 soak goals
//! (found with heaptrack; `vendor/README.md`).
//!
//! Memory is read as the bytes malloc has handed out (`mallinfo2`). One test in this
//! file: it owns the process's heap figure.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use asp_ros::msg::asp_interfaces::{ExecuteGoal, ExecuteGoalAction, ExecuteGoalResponse};
use asp_ros::msg::std_msgs::Bool;
use asp_ros::transport::ServiceMapping;
use asp_ros::{Qos, Transport};

/// Readiness checks of each kind.
const CHECKS: usize = 10_000;
/// What the checks may leave on the heap, all kinds together: they left 127 MiB before
/// the fix.
const HELD_MAX: usize = 4 * 1024 * 1024;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readiness_checks_leave_nothing_behind() {
    let domain = common::fresh_domain();
    let t = Transport::dds(common::settings(domain, ServiceMapping::FastDds)).unwrap();
    let node = t.node("readiness").unwrap();
    let _server = node
        .serve::<ExecuteGoal, _, _>("/readiness/served", |_| async {
            ExecuteGoalResponse::default()
        })
        .unwrap();
    let served = node.client::<ExecuteGoal>("/readiness/served").unwrap();
    tokio::time::timeout(Duration::from_secs(120), served.wait_for_service())
        .await
        .expect("the service in this node was never matched")
        .unwrap();
    let unserved = node.client::<ExecuteGoal>("/readiness/nobody").unwrap();
    let action = node
        .action_client::<ExecuteGoalAction>("/readiness/act")
        .unwrap();
    let topic = node
        .subscribe::<Bool>("/readiness/unpublished", Qos::latched())
        .unwrap();
    // one round first: whatever the first check sets up once is not what is measured
    let _ = (
        served.is_ready(),
        unserved.is_ready(),
        action.is_server_ready(),
    );
    let base = common::heap_in_use();
    for _ in 0..CHECKS {
        assert!(served.is_ready());
        assert!(!unserved.is_ready());
        assert!(!action.is_server_ready());
        assert_eq!(topic.publisher_count(), 0);
    }
    let held = common::heap_in_use().saturating_sub(base);
    assert!(
        held < HELD_MAX,
        "{CHECKS} readiness checks of each kind left {} KiB on the heap (at most {} KiB)",
        held >> 10,
        HELD_MAX >> 10
    );
}
