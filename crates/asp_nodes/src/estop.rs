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
//!
//! The motion latch also holds while the node is not active (REP-2006 lifecycle,
//! `ros2 lifecycle set <node> deactivate`): deactivation stops motion as the e-stop
//! does, and activation releases what only it held.

use asp_ros::lifecycle::PrimaryState;
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
    _latch: AbortOnDrop,
}

/// Keeps the motion latch engaged while the e-stop is or the node is not active.
async fn hold_motion(
    latch: EStop,
    mut engaged: watch::Receiver<bool>,
    mut lifecycle: Option<watch::Receiver<PrimaryState>>,
) {
    loop {
        let stopped = *engaged.borrow_and_update();
        let state = lifecycle.as_mut().map(|l| *l.borrow_and_update());
        let inactive = state.is_some_and(|s| s != PrimaryState::Active);
        if inactive && !latch.is_engaged() {
            warn!(
                "the node is {}: motion stops until it is activated",
                state.map_or("?", PrimaryState::label)
            );
        }
        latch.set(stopped || inactive);
        tokio::select! {
            r = engaged.changed() => if r.is_err() { return },
            r = async {
                match lifecycle.as_mut() {
                    Some(l) => l.changed().await,
                    None => std::future::pending().await,
                }
            } => if r.is_err() { lifecycle = None },
        }
    }
}

impl EStopBinding {
    /// Subscribes to `topic` on `node`; the state counts as known once a message
    /// arrived or `settle` passed (zero where delivery needs no discovery: in process).
    /// With `lifecycle`, the motion latch holds while the node is not active too.
    pub fn new(
        node: &Node,
        topic: &str,
        settle: Duration,
        lifecycle: Option<watch::Receiver<PrimaryState>>,
    ) -> Result<Self, NodeError> {
        let mut sub = node.subscribe::<Bool>(topic, ESTOP_QOS)?;
        let estop = EStop::new();
        let (tx, rx) = watch::channel(false);
        let (settled_tx, settled) = watch::channel(false);
        let name = topic.to_owned();
        let e = estop.clone();
        let task = tokio::spawn(async move {
            let follow = |engaged: bool| {
                if engaged {
                    warn!(topic = %name, "e-stop engaged: motion stops, new goals are refused");
                    // at once, before anyone hears of it; a release goes through
                    // `hold_motion`, which also weighs the lifecycle
                    e.set(true);
                } else if *tx.borrow() {
                    info!(topic = %name, "e-stop released");
                }
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
        let latch = tokio::spawn(hold_motion(estop.clone(), rx.clone(), lifecycle));
        Ok(Self {
            estop,
            engaged: rx,
            settled,
            _task: AbortOnDrop(task),
            _latch: AbortOnDrop(latch),
        })
    }

    /// The e-stop of a node on `transport`, as the configuration sets it: the topic, and
    /// the settle time over DDS (zero in process, where nothing needs discovering).
    pub fn from_config(
        node: &Node,
        cfg: &asp_config::AspConfig,
        transport: &asp_ros::Transport,
        lifecycle: Option<watch::Receiver<PrimaryState>>,
    ) -> Result<Self, NodeError> {
        let safety = &cfg.common.safety;
        let settle = if transport.is_dds() {
            Duration::from_secs_f64(safety.estop_settle_s)
        } else {
            Duration::ZERO
        };
        Self::new(node, &safety.estop_topic, settle, lifecycle)
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
