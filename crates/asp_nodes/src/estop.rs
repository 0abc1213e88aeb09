//! The e-stop topic (`/**.safety.estop_topic`, latched `std_msgs/Bool`) bound to
//! [`asp_skills::EStop`] in the nodes that cause motion (skill_executor_node,
//! go_to_node): `true` aborts the running motion and refuses new work until `false`. It
//! works without the agent: anyone (a button node, `ros2 topic pub`) may publish it.

use asp_ros::msg::std_msgs::Bool;
use asp_ros::{Node, Qos};
use asp_skills::{EStop, EStopListener};
use tokio::sync::watch;
use tracing::warn;

use crate::{AbortOnDrop, NodeError};

/// The QoS of the e-stop topic: reliable, transient local, so a late node still sees an
/// engaged stop.
pub const ESTOP_QOS: Qos = Qos::latched();

/// The e-stop of one node, following the topic.
#[derive(Debug)]
pub struct EStopBinding {
    estop: EStop,
    engaged: watch::Receiver<bool>,
    _task: AbortOnDrop,
}

impl EStopBinding {
    /// Subscribes to `topic` on `node`.
    pub fn new(node: &Node, topic: &str) -> Result<Self, NodeError> {
        let mut sub = node.subscribe::<Bool>(topic, ESTOP_QOS)?;
        let estop = EStop::new();
        let (tx, rx) = watch::channel(false);
        let e = estop.clone();
        let name = topic.to_owned();
        let task = tokio::spawn(async move {
            while let Some(msg) = sub.recv().await {
                if msg.data {
                    warn!(topic = %name, "e-stop engaged: motion stops, new goals are refused");
                }
                e.set(msg.data);
                tx.send_replace(msg.data);
            }
        });
        Ok(Self {
            estop,
            engaged: rx,
            _task: AbortOnDrop(task),
        })
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
