//! `std_msgs`: headers and the few plain messages the nodes use.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::builtin_interfaces::Time;
use super::{Field, FieldType, Namespace, RosField, RosMessage};

crate::ros_message! {
    /// Stamp and frame of stamped data.
    pub struct Header in std_msgs / msg {
        pub stamp: Time,
        pub frame_id: std::string::String,
    }

    pub struct String in std_msgs / msg {
        pub data: std::string::String,
    }

    /// Used for the latched e-stop topic (`true`: stop every action server).
    pub struct Bool in std_msgs / msg {
        pub data: bool,
    }

    pub struct ColorRGBA in std_msgs / msg {
        pub r: f32,
        pub g: f32,
        pub b: f32,
        pub a: f32,
    }
}

crate::msg::register!(Header, String, Bool, ColorRGBA, Empty);

impl Header {
    pub fn new(stamp: Time, frame_id: impl Into<std::string::String>) -> Self {
        Self {
            stamp,
            frame_id: frame_id.into(),
        }
    }
}

/// `std_msgs/Empty`: no fields. ROS 2's IDL cannot express an empty struct, so every
/// RMW puts one `uint8 structure_needs_at_least_one_member` on the wire; this type does
/// the same so that it decodes what they send and they decode what it sends.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Empty;

impl Serialize for Empty {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u8(0)
    }
}

impl<'de> Deserialize<'de> for Empty {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        u8::deserialize(d).map(|_| Empty)
    }
}

impl ros2_client::Message for Empty {}

impl RosField for Empty {
    fn field_type() -> FieldType {
        FieldType::Message {
            package: "std_msgs",
            name: "Empty",
        }
    }
}

impl RosMessage for Empty {
    const PACKAGE: &'static str = "std_msgs";
    const NAMESPACE: Namespace = Namespace::Msg;
    const NAME: &'static str = "Empty";

    fn fields() -> Vec<Field> {
        Vec::new()
    }
}
