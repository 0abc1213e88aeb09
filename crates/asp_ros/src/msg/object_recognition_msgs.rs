//! `object_recognition_msgs`: the object type field of MoveIt collision objects.

crate::ros_message! {
    pub struct ObjectType in object_recognition_msgs / msg {
        pub key: String,
        pub db: String,
    }
}

crate::msg::register!(ObjectType);
