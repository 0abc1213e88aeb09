//! Creating endpoints on a topic that already has many readers in the same participant
//! never stalls the participant.
//!
//! RustDDS's discovery thread tells the participant's event loop about every reader a
//! new local writer could match, through a channel of 32 slots, and it used to send
//! while holding the discovery database's read lock. The event loop reads the database
//! as it handles each message; once another thread waited for the write lock (creating
//! the next DataWriter or DataReader), std's RwLock held the event loop's read back,
//! the channel filled, and the three threads waited on each other for good. CI saw a
//! node hang at start this way (skill_executor_node creating its planning-scene client
//! while the participant matched its other endpoints). The vendored fix
//! (`vendor/README.md`) copies what it needs and drops the lock before sending.
//!
//! With that fixed, the same load showed a second fault: a DataReader's creation
//! handed it to the event loop with `try_send` on a channel of 100, and failed
//! ("sending on a full channel") while the event loop worked through a burst of
//! matches. It now waits for a slot, as a DataWriter's creation already did.
//!
//! The test is a watchdog over endpoint creation: it fails when no endpoint was created
//! for `STALL` (each takes milliseconds), and passes when all were. The hang needs a
//! participant notification queued ahead of a writer's burst, a matter of timing: one
//! round hung one time in three without the fix, so the test runs `ROUNDS` of them,
//! each on a fresh participant.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use asp_ros::msg::std_msgs::Bool;
use asp_ros::transport::ServiceMapping;
use asp_ros::transport::{Node, Publisher, Subscription};
use asp_ros::{Qos, Transport};

/// Readers on the crowded topic: each new writer there sends one notification per
/// reader, twice the channel's 32 slots.
const READERS: usize = 64;
/// Writers created on the crowded topic, and readers on other topics beside them.
const WRITERS: usize = 40;
/// Rounds, each with a fresh crowded participant.
const ROUNDS: usize = 6;
/// No endpoint created for this long means the participant is stuck.
const STALL: Duration = Duration::from_secs(30);

/// What a round made and keeps alive until it has been checked.
struct Round {
    readers: Vec<Subscription<Bool>>,
    writers: Vec<Publisher<Bool>>,
    elsewhere: Vec<Subscription<Bool>>,
    _peers: Vec<Node>,
}

/// One round on participant `crowded_<round>`: readers on its crowded topic, then
/// writers there (each matching every reader) with another participant joining before
/// every second one, while a second thread creates readers on other topics. Endpoints
/// are created on plain threads (as a node's start does) inside `runtime`; each one
/// counts in `created`.
fn round(
    transport: &Transport,
    round: usize,
    runtime: &tokio::runtime::Handle,
    created: &Arc<AtomicUsize>,
) -> Round {
    let _inside = runtime.enter();
    let node = transport.node(&format!("crowded_{round}")).unwrap();
    let crowded = format!("/crowded_{round}");
    let mut readers = Vec::new();
    for _ in 0..READERS {
        readers.push(
            node.subscribe::<Bool>(&crowded, Qos::default_reliable())
                .unwrap(),
        );
        created.fetch_add(1, Ordering::SeqCst);
    }
    let elsewhere = {
        let (node, created, runtime) = (node.clone(), created.clone(), runtime.clone());
        std::thread::spawn(move || {
            let _inside = runtime.enter();
            (0..WRITERS)
                .map(|i| {
                    let topic = format!("/elsewhere_{round}_{i}");
                    let r = node
                        .subscribe::<Bool>(&topic, Qos::default_reliable())
                        .unwrap();
                    created.fetch_add(1, Ordering::SeqCst);
                    r
                })
                .collect()
        })
    };
    let (mut writers, mut peers) = (Vec::new(), Vec::new());
    for i in 0..WRITERS {
        if i % 2 == 0 {
            // the crowded participant's event loop reads the database when discovery
            // tells it of another participant
            peers.push(transport.node(&format!("peer_{round}_{i}")).unwrap());
        }
        writers.push(
            node.publisher::<Bool>(&crowded, Qos::default_reliable())
                .unwrap(),
        );
        created.fetch_add(1, Ordering::SeqCst);
    }
    Round {
        readers,
        writers,
        elsewhere: elsewhere.join().unwrap(),
        _peers: peers,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_local_matches_do_not_stall_endpoint_creation() {
    let transport = Transport::dds(common::settings(
        common::fresh_domain(),
        ServiceMapping::FastDds,
    ))
    .unwrap();
    let created = Arc::new(AtomicUsize::new(0));
    let per_round = READERS + 2 * WRITERS;
    for r in 0..ROUNDS {
        let rounds = {
            let (transport, created) = (transport.clone(), created.clone());
            let runtime = tokio::runtime::Handle::current();
            std::thread::spawn(move || round(&transport, r, &runtime, &created))
        };
        let mut last = (created.load(Ordering::SeqCst), Instant::now());
        while !rounds.is_finished() {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let now = created.load(Ordering::SeqCst);
            if now != last.0 {
                last = (now, Instant::now());
            }
            assert!(
                last.1.elapsed() < STALL,
                "round {r}: endpoint creation stalled, {} of {per_round} endpoints created, none for {STALL:?}",
                now - r * per_round
            );
        }
        let made = rounds.join().unwrap();
        assert_eq!(
            (made.readers.len(), made.writers.len(), made.elsewhere.len()),
            (READERS, WRITERS, WRITERS)
        );
        assert_eq!(created.load(Ordering::SeqCst), (r + 1) * per_round);
        // the participant still works: every writer on the crowded topic matches its
        // readers
        let deadline = Instant::now() + STALL;
        while made
            .writers
            .iter()
            .any(|w| w.subscription_count() < READERS)
        {
            assert!(
                Instant::now() < deadline,
                "round {r}: writers matched {:?} of {READERS} readers",
                made.writers
                    .iter()
                    .map(|w| w.subscription_count())
                    .collect::<Vec<_>>()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}
