//! Quality-of-service presets. Both ends of a topic must use compatible presets: a
//! reliable subscription does not match a best-effort publisher, and a transient-local
//! (latched) subscription does not match a volatile publisher. Subscribing with
//! [`Qos::sensor`] matches every publisher.

use std::time::Duration;

/// Delivery guarantee.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reliability {
    BestEffort,
    Reliable,
}

/// Whether late subscribers get the last messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    Volatile,
    TransientLocal,
}

/// A QoS profile: reliability, durability and the keep-last depth.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Qos {
    pub reliability: Reliability,
    pub durability: Durability,
    /// History depth (keep last `depth` messages).
    pub depth: usize,
}

impl Qos {
    /// Reliable, volatile, depth 10: ROS 2's default for topics and services.
    pub const fn default_reliable() -> Self {
        Self {
            reliability: Reliability::Reliable,
            durability: Durability::Volatile,
            depth: 10,
        }
    }

    /// Reliable, transient-local, depth 1: state and maps (`/asp/state`, `/map`,
    /// `/tf_static`, the e-stop). A subscriber that joins later gets the last value.
    pub const fn latched() -> Self {
        Self {
            reliability: Reliability::Reliable,
            durability: Durability::TransientLocal,
            depth: 1,
        }
    }

    /// Best-effort, volatile, depth 5: camera streams and other sensor data, where a
    /// fresh message beats a retransmitted old one.
    pub const fn sensor() -> Self {
        Self {
            reliability: Reliability::BestEffort,
            durability: Durability::Volatile,
            depth: 5,
        }
    }

    /// The same profile with another depth (at least 1).
    pub const fn with_depth(mut self, depth: usize) -> Self {
        self.depth = if depth == 0 { 1 } else { depth };
        self
    }

    /// Whether a subscription with `self` receives from a publisher with `offered`
    /// (the DDS request/offer rules for reliability and durability).
    pub fn accepts(&self, offered: &Qos) -> bool {
        let reliability_ok = !(self.reliability == Reliability::Reliable
            && offered.reliability == Reliability::BestEffort);
        let durability_ok = !(self.durability == Durability::TransientLocal
            && offered.durability == Durability::Volatile);
        reliability_ok && durability_ok
    }

    /// The profile ros2-client takes. Reliable publishers wait up to 100 ms for room in
    /// the send window before reporting an error.
    pub(crate) fn to_ros2(self) -> ros2_client::QosProfile {
        use ros2_client::qos::{Durability as D, History, Reliability as R, WhenFull};
        let reliability = match self.reliability {
            Reliability::BestEffort => R::BestEffort,
            Reliability::Reliable => R::Reliable {
                when_full: WhenFull::Wait(Duration::from_millis(100)),
            },
        };
        let durability = match self.durability {
            Durability::Volatile => D::Volatile,
            Durability::TransientLocal => D::TransientLocal,
        };
        ros2_client::QosProfile::subscription_default()
            .reliability(reliability)
            .durability(durability)
            .history(History::KeepLast {
                depth: self.depth.max(1),
            })
    }
}

impl Default for Qos {
    fn default() -> Self {
        Self::default_reliable()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_offer_rules() {
        let (l, s, d) = (Qos::latched(), Qos::sensor(), Qos::default_reliable());
        assert!(l.accepts(&l));
        assert!(
            !l.accepts(&d),
            "latched subscriber needs a latched publisher"
        );
        assert!(
            !d.accepts(&s),
            "reliable subscriber needs a reliable publisher"
        );
        assert!(s.accepts(&l) && s.accepts(&d) && s.accepts(&s));
        assert!(d.accepts(&l));
        assert_eq!(Qos::sensor().with_depth(0).depth, 1);
    }
}
