//! `unique_identifier_msgs`: the 16-byte UUID that names action goals.

crate::ros_message! {
    /// A universally unique identifier (RFC 4122 bytes).
    #[derive(Copy, Eq, Hash)]
    pub struct UUID in unique_identifier_msgs / msg {
        pub uuid: [u8; 16],
    }
}

crate::msg::register!(UUID);

impl UUID {
    /// A random (version 4) UUID.
    pub fn random() -> Self {
        Self {
            uuid: *uuid::Uuid::new_v4().as_bytes(),
        }
    }

    pub fn is_zero(&self) -> bool {
        self.uuid == [0; 16]
    }
}

impl std::fmt::Display for UUID {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", uuid::Uuid::from_bytes(self.uuid).as_hyphenated())
    }
}
