//! Heartbeats between two DDS participants (as two processes would be) and in one
//! process: the watcher hears a node come up, notices its goodbye at once, and notices
//! a node that goes silent without one after the timeout.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use asp_ros::Node;
use asp_ros::Transport;
use asp_ros::liveliness::{Heartbeat, HeartbeatSettings, LivelinessMonitor, PeerEvent};
use asp_ros::transport::ServiceMapping;
use tokio::sync::broadcast;

/// Bounds only against a hang; the timeout under test is the heartbeat's.
const GUARD: Duration = Duration::from_secs(60);

fn settings() -> HeartbeatSettings {
    HeartbeatSettings {
        topic: "/test/heartbeat".into(),
        period: Duration::from_millis(100),
        timeout: Duration::from_millis(600),
    }
}

async fn next_event(events: &mut broadcast::Receiver<PeerEvent>) -> PeerEvent {
    tokio::time::timeout(GUARD, events.recv())
        .await
        .expect("no liveliness event")
        .unwrap()
}

async fn up_goodbye_and_silence(sender: Node, watcher: Node) {
    let monitor = LivelinessMonitor::new(&watcher, &settings(), &["sender".to_owned()]).unwrap();
    let mut events = monitor.events();
    assert_eq!(monitor.missing(), vec!["/sender".to_owned()]);

    let beat = Heartbeat::start(&sender, &settings()).unwrap();
    assert_eq!(
        next_event(&mut events).await,
        PeerEvent::Up {
            node: "/sender".into()
        }
    );
    assert!(monitor.missing().is_empty());
    // a clean stop says goodbye: lost at once, naming why
    drop(beat);
    let lost = next_event(&mut events).await;
    assert!(
        matches!(&lost, PeerEvent::Lost { node, why } if node == "/sender" && why.contains("shutting down")),
        "{lost:?}"
    );

    // silence without a goodbye (a killed process): lost after the timeout
    let beat = Heartbeat::start(&sender, &settings()).unwrap();
    assert_eq!(
        next_event(&mut events).await,
        PeerEvent::Up {
            node: "/sender".into()
        }
    );
    beat.silence();
    let lost = next_event(&mut events).await;
    assert!(
        matches!(&lost, PeerEvent::Lost { node, why } if node == "/sender" && why.contains("no heartbeat")),
        "{lost:?}"
    );
    assert_eq!(monitor.missing(), vec!["/sender".to_owned()]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heartbeats_between_dds_participants() {
    let (a, b) = common::dds_pair(ServiceMapping::FastDds);
    up_goodbye_and_silence(a.node("sender").unwrap(), b.node("watcher").unwrap()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heartbeats_in_one_process() {
    let t = Transport::in_process_with(common::settings(0, ServiceMapping::FastDds));
    up_goodbye_and_silence(t.node("sender").unwrap(), t.node("watcher").unwrap()).await;
}
