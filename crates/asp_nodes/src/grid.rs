//! The occupancy grid from the latched `/map` topic (Nav2's map server, SLAM, or the sim
//! node), as go_to's [`GridSource`].

use std::sync::Arc;
use std::time::Duration;

use asp_core::grid::OccupancyGrid;
use asp_ros::convert;
use asp_ros::msg::nav_msgs::OccupancyGrid as RosGrid;
use asp_ros::{Node, Qos};
use asp_system::goto::GridSource;
use async_trait::async_trait;
use tokio::sync::watch;
use tracing::warn;

use crate::{AbortOnDrop, NodeError};

/// The QoS of `/map`: reliable, transient local (Nav2's map server).
pub const MAP_QOS: Qos = Qos::latched();

/// Keeps the latest grid of a `/map` topic.
#[derive(Debug)]
pub struct MapTopicGrid {
    latest: watch::Receiver<Option<Arc<OccupancyGrid>>>,
    topic: String,
    timeout: Duration,
    _task: AbortOnDrop,
}

impl MapTopicGrid {
    /// Subscribes to `topic`; [`GridSource::occupancy_grid`] waits up to `timeout` for
    /// the first grid.
    pub fn new(node: &Node, topic: &str, timeout: Duration) -> Result<Self, NodeError> {
        let mut sub = node.subscribe::<RosGrid>(topic, MAP_QOS)?;
        let (tx, rx) = watch::channel(None);
        let name = topic.to_owned();
        let task = tokio::spawn(async move {
            while let Some(msg) = sub.recv().await {
                match convert::grid(&msg) {
                    Ok(g) => {
                        tx.send_replace(Some(Arc::new(g)));
                    }
                    Err(e) => warn!(topic = %name, "ignoring an occupancy grid: {e}"),
                }
            }
        });
        Ok(Self {
            latest: rx,
            topic: topic.to_owned(),
            timeout,
            _task: AbortOnDrop(task),
        })
    }
}

#[async_trait]
impl GridSource for MapTopicGrid {
    async fn occupancy_grid(&self) -> Result<OccupancyGrid, String> {
        let mut rx = self.latest.clone();
        let got = tokio::time::timeout(self.timeout, rx.wait_for(Option::is_some)).await;
        match got {
            Ok(Ok(g)) => g
                .as_ref()
                .map(|g| (**g).clone())
                .ok_or_else(|| format!("no grid on {}", self.topic)),
            Ok(Err(_)) => Err(format!("the subscription to {} ended", self.topic)),
            Err(_) => Err(format!(
                "no occupancy grid on {} within {:.1} s (is a map server running?)",
                self.topic,
                self.timeout.as_secs_f64()
            )),
        }
    }
}
