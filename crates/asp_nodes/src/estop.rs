//! The e-stop topic (`/**.safety.estop_topic`, latched `std_msgs/Bool`) bound to
//! [`asp_skills::EStop`] in the nodes that cause motion (skill_executor_node,
//! go_to_node): `true` aborts the running motion and refuses new work until `false`. It
//! works without the agent: anyone (a button node, `ros2 topic pub`) may publish it.
//!
//! A stop latched before a node came up reaches it only once DDS discovery has matched
//! the button's publisher. Until then the node does not know the stop's state, so
//! [`EStopBinding::settled`] resolves only when a message arrived or
//! `safety.estop_settle_s` passed; what moves the robot waits for it before the first
//! motion.

use asp_ros::msg::std_msgs::Bool;
use asp_ros::{Node, Qos};
use asp_skills::{EStop, EStopListener};
use std::time::Duration;

use tokio::sync::watch;
use tracing::{info, warn};

use crate::{AbortOnDrop, NodeError};

/// The QoS of the e-stop topic: reliable, transient local, so a late node still sees an
/// engaged stop.
pub const ESTOP_QOS: Qos = Qos::latched();

/// The e-stop of one node, following the topic.
#[derive(Debug)]
pub struct EStopBinding {
    estop: EStop,
    engaged: watch::Receiver<bool>,
    settled: watch::Receiver<bool>,
    _task: AbortOnDrop,
}

impl EStopBinding {
    /// Subscribes to `topic` on `node`; the state counts as known once a message
    /// arrived or `settle` passed (zero where delivery needs no discovery: in process).
    pub fn new(node: &Node, topic: &str, settle: Duration) -> Result<Self, NodeError> {
        let mut sub = node.subscribe::<Bool>(topic, ESTOP_QOS)?;
        let estop = EStop::new();
        let (tx, rx) = watch::channel(false);
        let (settled_tx, settled) = watch::channel(false);
        let e = estop.clone();
        let name = topic.to_owned();
        let task = tokio::spawn(async move {
            let follow = |engaged: bool| {
                if engaged {
                    warn!(topic = %name, "e-stop engaged: motion stops, new goals are refused");
                }
                e.set(engaged);
                tx.send_replace(engaged);
            };
            match tokio::time::timeout(settle, sub.recv()).await {
                Ok(Some(msg)) => follow(msg.data),
                Ok(None) => {}
                Err(_) => info!(topic = %name, "no e-stop latched on the topic: released"),
            }
            settled_tx.send_replace(true);
            while let Some(msg) = sub.recv().await {
                follow(msg.data);
            }
        });
        Ok(Self {
            estop,
            engaged: rx,
            settled,
            _task: AbortOnDrop(task),
        })
    }

    /// The e-stop of a node on `transport`, as the configuration sets it: the topic, and
    /// the settle time over DDS (zero in process, where nothing needs discovering).
    pub fn from_config(
        node: &Node,
        cfg: &asp_config::AspConfig,
        transport: &asp_ros::Transport,
    ) -> Result<Self, NodeError> {
        let safety = &cfg.common.safety;
        let settle = if transport.is_dds() {
            Duration::from_secs_f64(safety.estop_settle_s)
        } else {
            Duration::ZERO
        };
        Self::new(node, &safety.estop_topic, settle)
    }

    /// Resolves once the stop's state is known (see the module's note).
    pub fn settled(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let mut rx = self.settled.clone();
        async move {
            let _ = rx.wait_for(|s| *s).await;
        }
    }

    /// The latch (to engage it from code as well).
    pub fn estop(&self) -> &EStop {
        &self.estop
    }

    /// For a motion component (the skill executor, go_to).
    pub fn listener(&self) -> EStopListener {
        self.estop.listener()
    }

    /// For an action server's options (`ActionServerOptions::estop`).
    pub fn watch(&self) -> watch::Receiver<bool> {
        self.engaged.clone()
    }
}
