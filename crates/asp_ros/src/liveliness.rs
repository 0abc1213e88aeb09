//! Heartbeats and their watcher: how a node notices within a bound that another one died
//! or stopped answering, without waiting for DDS's participant lease (tens of seconds)
//! or for a call to time out (minutes).
//!
//! Every node publishes a `bond/msg/Status` under its own name at a fixed period
//! ([`Heartbeat`]); a clean shutdown says `active: false` once, so it is noticed at
//! once. A [`LivelinessMonitor`] follows the nodes it depends on: a node whose last
//! heartbeat is older than the timeout, that said it stopped, or that came back as
//! another instance (it restarted between two heartbeats) is reported lost, naming why.
//! The message is bond_core's, one way (no bond handshake), on its own topic, so that
//! `ros2 topic echo` reads it and a Nav2 lifecycle manager on the same graph is not
//! confused by it.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{broadcast, watch};
use tracing::{info, warn};

use crate::msg::bond::Status;
use crate::msg::builtin_interfaces::Time;
use crate::msg::std_msgs::Header;
use crate::transport::Publisher;
use crate::{Node, Qos, RosError};

/// Where heartbeats go and how often.
#[derive(Debug, Clone, PartialEq)]
pub struct HeartbeatSettings {
    pub topic: String,
    /// Between two heartbeats.
    pub period: Duration,
    /// Silence after which a node counts as lost.
    pub timeout: Duration,
}

impl HeartbeatSettings {
    fn qos() -> Qos {
        // reliable, volatile: a late joiner needs no old heartbeat; deep enough for a
        // dozen senders between two reads
        Qos::default_reliable().with_depth(64)
    }
}

/// A process-unique instance id: the pid and the start time.
fn instance_id() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{}-{nanos:x}", std::process::id())
}

/// How long the writer outlives the goodbye, so that DDS sends it.
const GOODBYE_LINGER: Duration = Duration::from_millis(500);

/// Publishes `node`'s heartbeat until dropped; the drop says `active: false`.
pub struct Heartbeat {
    publisher: Arc<Publisher<Status>>,
    template: Status,
    task: tokio::task::JoinHandle<()>,
    /// Say `active: false` when dropped.
    goodbye: bool,
}

impl std::fmt::Debug for Heartbeat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Heartbeat")
            .field("id", &self.template.id)
            .field("instance_id", &self.template.instance_id)
            .finish_non_exhaustive()
    }
}

impl Heartbeat {
    /// Starts `node`'s heartbeat (its fully qualified name is the bond id).
    pub fn start(node: &Node, settings: &HeartbeatSettings) -> Result<Self, RosError> {
        let publisher =
            Arc::new(node.publisher::<Status>(&settings.topic, HeartbeatSettings::qos())?);
        let template = Status {
            header: Header::default(),
            id: node.name().to_owned(),
            instance_id: instance_id(),
            active: true,
            heartbeat_timeout: settings.timeout.as_secs_f32(),
            heartbeat_period: settings.period.as_secs_f32(),
        };
        let (p, t, period) = (publisher.clone(), template.clone(), settings.period);
        let task = tokio::spawn(async move {
            let mut tick = tokio::time::interval(period);
            // a late tick is sent once, not as a burst
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let mut beat = t.clone();
                beat.header = Header::new(Time::now(), "");
                if let Err(e) = p.publish(beat) {
                    warn!(node = %t.id, "heartbeat: {e}");
                }
            }
        });
        Ok(Self {
            publisher,
            template,
            task,
            goodbye: true,
        })
    }
}

impl Heartbeat {
    /// Stops the heartbeat without a goodbye, as a killed process would (for tests of
    /// the watchers).
    pub fn silence(mut self) {
        self.goodbye = false;
    }
}

impl Drop for Heartbeat {
    fn drop(&mut self) {
        self.task.abort();
        if !self.goodbye {
            return;
        }
        let mut last = self.template.clone();
        last.header = Header::new(Time::now(), "");
        last.active = false;
        let _ = self.publisher.publish(last);
        // a writer deleted right after a write may never send it: keep it a moment
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            let publisher = self.publisher.clone();
            rt.spawn(async move {
                tokio::time::sleep(GOODBYE_LINGER).await;
                drop(publisher);
            });
        }
    }
}

/// What a watcher knows of one node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Peer {
    /// No heartbeat heard yet.
    Unheard,
    /// Heard within the timeout.
    Alive { instance: String },
    /// Was alive, then lost, for the reason given.
    Lost { why: String },
}

/// A change a watcher noticed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PeerEvent {
    /// `node` is heard (for the first time, or again after being lost or restarting).
    Up { node: String },
    /// `node` was alive and is not any more: `why` says how it was noticed.
    Lost { node: String, why: String },
}

/// Follows the heartbeats of a set of nodes.
pub struct LivelinessMonitor {
    peers: watch::Receiver<BTreeMap<String, Peer>>,
    events: broadcast::Sender<PeerEvent>,
    _task: AbortOnDrop,
}

struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl std::fmt::Debug for LivelinessMonitor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LivelinessMonitor")
            .field("peers", &*self.peers.borrow())
            .finish_non_exhaustive()
    }
}

/// The pure bookkeeping of a monitor: the last heartbeat of each watched node.
#[derive(Debug)]
struct Watch {
    timeout: Duration,
    peers: BTreeMap<String, (Peer, Option<Instant>)>,
    /// The instance each node had before its last restart: one that beats again was not
    /// a restart but a second process under the same name.
    replaced: BTreeMap<String, String>,
    /// Nodes two processes claim (another graph on the same domain): their beats keep
    /// them alive, whichever instance sends them, and they are not taken for restarts.
    duplicated: BTreeMap<String, Vec<String>>,
}

impl Watch {
    fn new(nodes: &[String], timeout: Duration) -> Self {
        Self {
            timeout,
            peers: nodes
                .iter()
                .map(|n| (n.clone(), (Peer::Unheard, None)))
                .collect(),
            replaced: BTreeMap::new(),
            duplicated: BTreeMap::new(),
        }
    }

    /// A heartbeat arrived at `now`: the events it implies.
    fn heard(&mut self, beat: &Status, now: Instant) -> Vec<PeerEvent> {
        let Some((peer, seen)) = self.peers.get_mut(&beat.id) else {
            return Vec::new();
        };
        let node = beat.id.clone();
        let mut out = Vec::new();
        if matches!(peer, Peer::Alive { .. })
            && let Some(instances) = self.duplicated.get_mut(&node)
        {
            if beat.active {
                if !instances.contains(&beat.instance_id) {
                    instances.push(beat.instance_id.clone());
                }
                *seen = Some(now);
                return out;
            }
            // one of them says goodbye: the other still holds the name
            instances.retain(|i| *i != beat.instance_id);
            match &instances[..] {
                [] => {
                    self.duplicated.remove(&node);
                }
                [remaining] => {
                    *peer = Peer::Alive {
                        instance: remaining.clone(),
                    };
                    self.duplicated.remove(&node);
                    return out;
                }
                _ => return out,
            }
        } else if let Peer::Alive { instance } = &*peer
            && beat.active
            && *instance != beat.instance_id
            && self.replaced.get(&node) == Some(&beat.instance_id)
        {
            // the "restarted" instance beats again: two processes share the name
            warn!(
                node = %node,
                "two processes claim this node name (instances {instance} and {}): is another \
                 graph running on this ROS_DOMAIN_ID? Their heartbeats are no longer told apart",
                beat.instance_id
            );
            self.duplicated.insert(
                node.clone(),
                vec![instance.clone(), beat.instance_id.clone()],
            );
            *seen = Some(now);
            return out;
        }
        match (&*peer, beat.active) {
            (Peer::Alive { .. }, false) => {
                *peer = Peer::Lost {
                    why: "it said it is shutting down".into(),
                };
                *seen = None;
                out.push(PeerEvent::Lost {
                    node,
                    why: "it said it is shutting down".into(),
                });
            }
            (_, false) => {}
            (Peer::Alive { instance }, true) if *instance != beat.instance_id => {
                // it died and came back between two checks: the old one is lost
                self.replaced.insert(node.clone(), instance.clone());
                out.push(PeerEvent::Lost {
                    node: node.clone(),
                    why: format!(
                        "it restarted (instance {instance} became {})",
                        beat.instance_id
                    ),
                });
                out.push(PeerEvent::Up { node });
                *peer = Peer::Alive {
                    instance: beat.instance_id.clone(),
                };
                *seen = Some(now);
            }
            (Peer::Alive { .. }, true) => *seen = Some(now),
            (Peer::Unheard | Peer::Lost { .. }, true) => {
                *peer = Peer::Alive {
                    instance: beat.instance_id.clone(),
                };
                *seen = Some(now);
                out.push(PeerEvent::Up { node });
            }
        }
        out
    }

    /// The nodes silent for longer than the timeout at `now`.
    fn check(&mut self, now: Instant) -> Vec<PeerEvent> {
        let mut out = Vec::new();
        for (node, (peer, seen)) in &mut self.peers {
            if let (Peer::Alive { .. }, Some(at)) = (&*peer, *seen) {
                let silent = now.saturating_duration_since(at);
                if silent > self.timeout {
                    let why = format!(
                        "no heartbeat for {:.1} s (timeout {:.1} s)",
                        silent.as_secs_f64(),
                        self.timeout.as_secs_f64()
                    );
                    *peer = Peer::Lost { why: why.clone() };
                    *seen = None;
                    out.push(PeerEvent::Lost {
                        node: node.clone(),
                        why,
                    });
                }
            }
        }
        out
    }

    fn snapshot(&self) -> BTreeMap<String, Peer> {
        self.peers
            .iter()
            .map(|(n, (p, _))| (n.clone(), p.clone()))
            .collect()
    }
}

impl LivelinessMonitor {
    /// Watches `nodes` on `node`: names relative to `node`'s namespace or fully
    /// qualified; events and [`Self::peers`] name them fully qualified
    /// (`/skill_executor_node`), as `ros2 node list` does.
    pub fn new(
        node: &Node,
        settings: &HeartbeatSettings,
        nodes: &[String],
    ) -> Result<Self, RosError> {
        let mut sub = node.subscribe::<Status>(&settings.topic, HeartbeatSettings::qos())?;
        let nodes = nodes
            .iter()
            .map(|n| node.resolve(n))
            .collect::<Result<Vec<_>, _>>()?;
        let mut watch = Watch::new(&nodes, settings.timeout);
        let (peers_tx, peers) = watch::channel(watch.snapshot());
        let (events, _) = broadcast::channel(64);
        let tx = events.clone();
        // checked several times per period, so that a loss is seen soon after the timeout
        let every = (settings.period / 2).max(Duration::from_millis(20));
        let task = tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                let found = tokio::select! {
                    beat = sub.recv() => match beat {
                        Some(b) => watch.heard(&b, Instant::now()),
                        None => break,
                    },
                    _ = tick.tick() => watch.check(Instant::now()),
                };
                if found.is_empty() {
                    continue;
                }
                // the state first: whoever hears an event reads the state it led to
                peers_tx.send_replace(watch.snapshot());
                for e in found {
                    match &e {
                        PeerEvent::Up { node } => info!(node = %node, "heartbeat: up"),
                        PeerEvent::Lost { node, why } => {
                            warn!(node = %node, "heartbeat: lost ({why})")
                        }
                    }
                    let _ = tx.send(e);
                }
            }
        });
        Ok(Self {
            peers,
            events,
            _task: AbortOnDrop(task),
        })
    }

    /// What is known of every watched node now, changing as heartbeats come and go.
    pub fn peers(&self) -> watch::Receiver<BTreeMap<String, Peer>> {
        self.peers.clone()
    }

    /// Every change from now on.
    pub fn events(&self) -> broadcast::Receiver<PeerEvent> {
        self.events.subscribe()
    }

    /// Every loss from now on.
    pub fn losses(&self) -> Losses {
        Losses(self.events.subscribe())
    }

    /// The watched nodes not alive now (unheard or lost), by name.
    pub fn missing(&self) -> Vec<String> {
        missing(&self.peers.borrow())
    }
}

/// The losses a monitor notices, one at a time (see [`LivelinessMonitor::losses`]).
#[derive(Debug)]
pub struct Losses(broadcast::Receiver<PeerEvent>);

impl Losses {
    /// The next node lost and why; `None` once the monitor is gone.
    pub async fn next(&mut self) -> Option<(String, String)> {
        loop {
            match self.0.recv().await {
                Ok(PeerEvent::Lost { node, why }) => return Some((node, why)),
                Ok(PeerEvent::Up { .. }) => {}
                Err(broadcast::error::RecvError::Lagged(n)) => {
                    warn!("liveliness: {n} events missed");
                }
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    }
}

/// The nodes of `peers` not alive.
pub fn missing(peers: &BTreeMap<String, Peer>) -> Vec<String> {
    peers
        .iter()
        .filter(|(_, p)| !matches!(p, Peer::Alive { .. }))
        .map(|(n, _)| n.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn beat(id: &str, instance: &str, active: bool) -> Status {
        Status {
            id: id.into(),
            instance_id: instance.into(),
            active,
            ..Status::default()
        }
    }

    #[test]
    fn silence_past_the_timeout_is_a_loss_and_a_heartbeat_brings_it_back() {
        let t0 = Instant::now();
        let mut w = Watch::new(&["a".into(), "b".into()], Duration::from_millis(1500));
        assert_eq!(
            w.heard(&beat("a", "1", true), t0),
            vec![PeerEvent::Up { node: "a".into() }]
        );
        // other nodes' heartbeats are not watched
        assert!(w.heard(&beat("zzz", "1", true), t0).is_empty());
        assert!(w.check(t0 + Duration::from_millis(1400)).is_empty());
        // never heard is not lost (it may still be starting)
        let lost = w.check(t0 + Duration::from_millis(1600));
        assert_eq!(lost.len(), 1);
        assert!(
            matches!(&lost[0], PeerEvent::Lost { node, why } if node == "a" && why.contains("no heartbeat for 1.6 s")),
            "{lost:?}"
        );
        assert_eq!(missing(&w.snapshot()), vec!["a".to_owned(), "b".to_owned()]);
        // lost once, not again on every check
        assert!(w.check(t0 + Duration::from_secs(5)).is_empty());
        let back = w.heard(&beat("a", "2", true), t0 + Duration::from_secs(6));
        assert_eq!(back, vec![PeerEvent::Up { node: "a".into() }]);
    }

    #[test]
    fn a_goodbye_or_a_new_instance_is_a_loss_at_once() {
        let t0 = Instant::now();
        let mut w = Watch::new(&["a".into()], Duration::from_secs(10));
        w.heard(&beat("a", "1", true), t0);
        let bye = w.heard(&beat("a", "1", false), t0);
        assert!(
            matches!(&bye[..], [PeerEvent::Lost { why, .. }] if why.contains("shutting down")),
            "{bye:?}"
        );
        w.heard(&beat("a", "2", true), t0);
        let restarted = w.heard(&beat("a", "3", true), t0);
        assert!(
            matches!(&restarted[..], [PeerEvent::Lost { why, .. }, PeerEvent::Up { .. }] if why.contains("restarted")),
            "{restarted:?}"
        );
        assert!(missing(&w.snapshot()).is_empty());
    }

    #[test]
    fn two_processes_under_one_name_are_said_once_not_taken_for_restarts() {
        let t0 = Instant::now();
        let ms = |n: u64| t0 + Duration::from_millis(n);
        let mut w = Watch::new(&["a".into()], Duration::from_millis(1500));
        w.heard(&beat("a", "1", true), t0);
        // the second process's first beat looks like a restart…
        let first = w.heard(&beat("a", "2", true), ms(100));
        assert!(matches!(
            &first[..],
            [PeerEvent::Lost { .. }, PeerEvent::Up { .. }]
        ));
        // …until the first one beats again: from then on, no more events either way
        for i in 0..20 {
            let instance = if i % 2 == 0 { "1" } else { "2" };
            let events = w.heard(&beat("a", instance, true), ms(200 + 100 * i));
            assert!(events.is_empty(), "beat {i}: {events:?}");
        }
        assert!(w.check(ms(2000)).is_empty());
        // either one keeps it alive; silence is still a loss
        w.heard(&beat("a", "2", true), ms(3000));
        assert!(w.check(ms(4000)).is_empty());
        assert!(matches!(&w.check(ms(5000))[..], [PeerEvent::Lost { .. }]));
        // one of them stops cleanly: the other still holds the name
        w.heard(&beat("a", "1", true), ms(5100));
        w.heard(&beat("a", "2", true), ms(5200));
        assert!(w.heard(&beat("a", "1", false), ms(5300)).is_empty());
        assert!(w.heard(&beat("a", "2", true), ms(5400)).is_empty());
        // a real restart is still one (a new instance, the old one silent)
        let mut r = Watch::new(&["b".into()], Duration::from_millis(1500));
        r.heard(&beat("b", "1", true), t0);
        assert_eq!(r.heard(&beat("b", "2", true), ms(100)).len(), 2);
        assert!(r.heard(&beat("b", "2", true), ms(200)).is_empty());
        assert_eq!(r.heard(&beat("b", "3", true), ms(300)).len(), 2);
    }
}
