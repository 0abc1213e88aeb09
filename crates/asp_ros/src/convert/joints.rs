//! Joint states as name → position maps.

use std::collections::BTreeMap;

use crate::RosError;
use crate::msg::builtin_interfaces::Time;
use crate::msg::sensor_msgs::JointState;
use crate::msg::std_msgs::Header;

/// Joint positions by name; mismatched lengths are an error.
pub fn joint_positions(msg: &JointState) -> Result<BTreeMap<String, f64>, RosError> {
    if msg.name.len() != msg.position.len() {
        return Err(RosError::Conversion(format!(
            "joint_states: {} names but {} positions",
            msg.name.len(),
            msg.position.len()
        )));
    }
    Ok(msg
        .name
        .iter()
        .cloned()
        .zip(msg.position.iter().copied())
        .collect())
}

pub fn joint_state(positions: &BTreeMap<String, f64>, stamp: Time) -> JointState {
    JointState {
        header: Header::new(stamp, ""),
        name: positions.keys().cloned().collect(),
        position: positions.values().copied().collect(),
        velocity: Vec::new(),
        effort: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joint_state_round_trip() {
        let m: BTreeMap<String, f64> =
            [("joint1".to_string(), 0.5), ("joint2".to_string(), -1.0)].into();
        let msg = joint_state(&m, Time::default());
        assert_eq!(joint_positions(&msg).unwrap(), m);
        let bad = JointState {
            position: vec![1.0],
            ..msg
        };
        assert!(
            joint_positions(&bad)
                .unwrap_err()
                .to_string()
                .contains("2 names but 1")
        );
    }
}
