//! `diagnostic_msgs`: what `/diagnostics` carries (rqt_robot_monitor, the diagnostic
//! aggregator and Foxglove read it). ASP's nodes report their process there.

use super::Byte;
use super::std_msgs::Header;

crate::ros_message! {
    /// One named value of a status.
    pub struct KeyValue in diagnostic_msgs / msg {
        pub key: String,
        pub value: String,
    }

    /// The state of one component: a level, a name (`node: part`), a line for people
    /// and the values behind it.
    pub struct DiagnosticStatus in diagnostic_msgs / msg {
        pub level: Byte,
        pub name: String,
        pub message: String,
        pub hardware_id: String,
        pub values: Vec<KeyValue>,
    }
    consts {
        OK: Byte = Byte(0),
        WARN: Byte = Byte(1),
        ERROR: Byte = Byte(2),
        STALE: Byte = Byte(3),
    }

    pub struct DiagnosticArray in diagnostic_msgs / msg {
        pub header: Header,
        pub status: Vec<DiagnosticStatus>,
    }
}

crate::msg::register!(KeyValue, DiagnosticStatus, DiagnosticArray);
