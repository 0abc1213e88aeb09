//! The time a node stamps its messages with, as rclcpp's ROS time: the system clock, or
//! with `use_sim_time` the simulation's time from `/clock` (zero until the first message
//! arrives).

use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use super::Subscription;
use super::qos::Qos;
use crate::msg::builtin_interfaces::Time;
use crate::msg::rosgraph_msgs::Clock;

/// The QoS rclcpp's time source subscribes `/clock` with: best effort, depth 1 (it
/// matches a reliable publisher too).
pub const CLOCK_SUBSCRIPTION_QOS: Qos = Qos::sensor().with_depth(1);

/// A node's clock. Cheap to clone; clones share the time source.
#[derive(Clone, Default)]
pub struct RosClock(Arc<ClockInner>);

#[derive(Default)]
struct ClockInner {
    /// Set once, when the node turns `use_sim_time` on.
    sim: OnceLock<Mutex<SimTime>>,
}

struct SimTime {
    clock: Subscription<Clock>,
    last: Time,
}

impl std::fmt::Debug for RosClock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RosClock")
            .field("sim_time", &self.is_sim_time())
            .finish()
    }
}

impl RosClock {
    /// The time now: the system's, or the last `/clock` message's on simulated time.
    pub fn now(&self) -> Time {
        let Some(sim) = self.0.sim.get() else {
            return Time::now();
        };
        let mut sim = sim.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(c) = sim.clock.latest() {
            // a simulator that restarts starts its time again: follow it, as rclcpp does
            sim.last = c.clock;
        }
        sim.last
    }

    /// Whether the clock follows `/clock`.
    pub fn is_sim_time(&self) -> bool {
        self.0.sim.get().is_some()
    }

    /// Follows `clock` from now on; a clock already on simulated time keeps its own.
    pub(crate) fn follow(&self, clock: Subscription<Clock>) {
        let _ = self.0.sim.set(Mutex::new(SimTime {
            clock,
            last: Time::default(),
        }));
    }
}
