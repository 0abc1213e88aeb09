//! `tf2_msgs`: the message on `/tf` and `/tf_static`.

use super::geometry_msgs::TransformStamped;

crate::ros_message! {
    pub struct TFMessage in tf2_msgs / msg {
        pub transforms: Vec<TransformStamped>,
    }
}

crate::msg::register!(TFMessage);
