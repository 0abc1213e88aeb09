//! `rosgraph_msgs`: simulated time on `/clock`.

use super::builtin_interfaces::Time;

crate::ros_message! {
    /// The simulation's time; nodes with `use_sim_time` read their clock from it.
    pub struct Clock in rosgraph_msgs / msg {
        pub clock: Time,
    }
}

crate::msg::register!(Clock);
