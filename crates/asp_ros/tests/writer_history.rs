//! A latched (reliable, transient-local) publisher keeps only its History depth once
//! nothing waits for an ack: with no subscriber at all (a node's `/rosout`, depth 1,000,
//! that nobody echoes), and with only a best-effort subscriber (RViz or a sensor-QoS
//! subscription). Before the vendored RustDDS fix (`vendor/README.md`) it kept every
//! sample up to 8,192 of them: each node's memory grew with every log line for as long
//! as it ran. (A volatile one was already trimmed as it wrote.)
//!
//! A subscriber keeps its depth too: RustDDS's topic cache held 64 samples of every
//! topic a participant reads, whatever the depth (a node reading a camera at depth 5
//! held 64 frames), until the vendored ros2-client fix created ROS topics with resource
//! limits of their depth.
//!
//! Memory is read as the bytes malloc has handed out (`mallinfo2`), not the resident
//! size, which freed memory the allocator keeps would blur. One test in this file: it
//! owns the process's heap figure.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::{Duration, Instant};

use asp_ros::msg::std_msgs;
use asp_ros::transport::ServiceMapping;
use asp_ros::{Qos, Transport};

/// One phase: `samples` samples of `payload` bytes, and what the process may hold over
/// its starting heap once the Writer cleaned up.
struct Phase {
    what: &'static str,
    samples: usize,
    payload: usize,
    held_max: usize,
}

/// No subscriber: 64 MiB published (kept twice over, 128 MiB, before the fix).
const UNREAD: Phase = Phase {
    what: "no subscriber",
    samples: 256,
    payload: 256 * 1024,
    held_max: 16 * 1024 * 1024,
};
/// A best-effort subscriber in this process. Samples small enough not to be fragmented
/// (a best-effort reader drops fragments under a burst, and RustDDS keeps an incomplete
/// sample's buffer until the next fragment comes); its topic cache keeps up to 64 of
/// them. 6,000 samples are ~12 MiB kept before the fix.
const BEST_EFFORT: Phase = Phase {
    what: "a best-effort subscriber",
    samples: 6000,
    payload: 1000,
    held_max: 4 * 1024 * 1024,
};
/// A reliable subscriber at depth 10 in this process, of samples that fragment: 50 MiB
/// published. The topic cache kept 64 of them before the fix: 24 MiB held after
/// settling, against 10 MiB with it (the cache, the subscription's mailbox and the
/// Writer keep 10 each).
const RELIABLE: Phase = Phase {
    what: "a reliable subscriber",
    samples: 200,
    payload: 256 * 1024,
    held_max: 16 * 1024 * 1024,
};
/// The Writer cleans its history every 6 s; this only stops a hung test.
const BOUND: Duration = Duration::from_secs(90);

/// Latched: reliable, transient local, depth 1.
fn publisher(node: &asp_ros::Node, topic: &str) -> asp_ros::transport::Publisher<std_msgs::String> {
    node.publisher(topic, Qos::latched()).unwrap()
}

/// Publishes the phase's samples on `p`, then waits until the heap is back under the
/// phase's bound over `base`.
async fn publish_then_settle(
    p: &asp_ros::transport::Publisher<std_msgs::String>,
    base: usize,
    phase: &Phase,
) {
    let payload = "x".repeat(phase.payload);
    // a full send window refuses a sample after 100 ms: that one is not kept, and a few
    // of those do not change what is measured
    let mut refused = 0;
    for _ in 0..phase.samples {
        let sample = std_msgs::String {
            data: payload.clone(),
        };
        if p.publish(sample).is_err() {
            refused += 1;
        }
    }
    assert!(
        refused < phase.samples / 10,
        "{}: {refused} of {} samples refused",
        phase.what,
        phase.samples
    );
    let published = common::heap_in_use().saturating_sub(base);
    let start = Instant::now();
    loop {
        let held = common::heap_in_use().saturating_sub(base);
        if held < phase.held_max {
            break;
        }
        assert!(
            start.elapsed() < BOUND,
            "{}: the publisher still holds {} KiB over the start {} s after \
             publishing {} KiB (right after publishing: {} KiB)",
            phase.what,
            held >> 10,
            BOUND.as_secs(),
            (phase.samples * phase.payload) >> 10,
            published >> 10
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writers_and_readers_keep_their_depth() {
    let domain = common::fresh_domain();
    let t = Transport::dds(common::settings(domain, ServiceMapping::FastDds)).unwrap();
    let node = t.node("writer_history").unwrap();
    let unread = publisher(&node, "/wh/unread");
    let base = common::heap_in_use();
    publish_then_settle(&unread, base, &UNREAD).await;

    // a second participant subscribes best-effort, as a sensor-QoS subscriber does
    let other = Transport::dds(common::settings(domain, ServiceMapping::FastDds)).unwrap();
    let sub_node = other.node("best_effort_reader").unwrap();
    let _sub = sub_node
        .subscribe::<std_msgs::String>("/wh/sensor", Qos::sensor())
        .unwrap();
    let p = publisher(&node, "/wh/sensor");
    tokio::time::timeout(BOUND, p.wait_for_subscribers())
        .await
        .expect("the best-effort subscriber never matched")
        .unwrap();
    let base = common::heap_in_use();
    publish_then_settle(&p, base, &BEST_EFFORT).await;

    // a reliable subscriber in a second participant of this process
    let _reader = sub_node
        .subscribe::<std_msgs::String>("/wh/reliable", Qos::default_reliable())
        .unwrap();
    let p = node
        .publisher::<std_msgs::String>("/wh/reliable", Qos::default_reliable())
        .unwrap();
    tokio::time::timeout(BOUND, p.wait_for_subscribers())
        .await
        .expect("the reliable subscriber never matched")
        .unwrap();
    let base = common::heap_in_use();
    publish_then_settle(&p, base, &RELIABLE).await;
}
