//! `bond`: the heartbeat message of bond_core (what Nav2's lifecycle manager uses to
//! notice a dead node). ASP's nodes publish it one way, each under its node name, and
//! agent_node watches the others' (see `asp_ros::liveliness`).

use super::std_msgs::Header;

crate::ros_message! {
    /// One heartbeat: the bond (`id`), the sender's instance (changes on restart),
    /// whether it is still up, and the sender's period and timeout in seconds.
    pub struct Status in bond / msg {
        pub header: Header,
        pub id: String,
        pub instance_id: String,
        pub active: bool,
        pub heartbeat_timeout: f32,
        pub heartbeat_period: f32,
    }
}

crate::msg::register!(Status);
