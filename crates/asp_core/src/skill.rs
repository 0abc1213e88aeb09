//! The skills the robot can run (SPEC §1.3–1.4).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::CoreError;

/// A motion primitive the skill executor knows how to turn into pose goals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Skill {
    /// Grasp the object anywhere.
    Grasp,
    /// Put the held object onto the target's top surface and let go.
    Place,
    /// Release the held object above the target.
    Drop,
    /// Grasp a part (handle) of the object.
    GraspPart,
    /// Push a part with the gripper tip along its normal (buttons, keys).
    TipPush,
    /// Pinch a part and pull it out horizontally (plugs, thumbtacks).
    PinchPull,
    /// Hook a part from above and pull (drawer handles).
    HookPull,
    /// Open an articulated part: a drawer along its axis, a door or lid about its hinge.
    Open,
    /// Close an articulated part.
    Close,
}

/// What a skill acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SkillTarget {
    /// The whole object's point cloud.
    Object,
    /// An affordance (part) point cloud found by affordance detection.
    Part,
    /// An articulated part with a joint (drawer, door, lid).
    Articulation,
}

/// What the gripper must hold before the skill runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GripperPrecondition {
    Empty,
    Holding,
}

impl Skill {
    pub const ALL: [Skill; 9] = [
        Skill::Grasp,
        Skill::Place,
        Skill::Drop,
        Skill::GraspPart,
        Skill::TipPush,
        Skill::PinchPull,
        Skill::HookPull,
        Skill::Open,
        Skill::Close,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Skill::Grasp => "grasp",
            Skill::Place => "place",
            Skill::Drop => "drop",
            Skill::GraspPart => "grasp_part",
            Skill::TipPush => "tip_push",
            Skill::PinchPull => "pinch_pull",
            Skill::HookPull => "hook_pull",
            Skill::Open => "open",
            Skill::Close => "close",
        }
    }

    pub fn target(self) -> SkillTarget {
        match self {
            Skill::Grasp | Skill::Place | Skill::Drop => SkillTarget::Object,
            Skill::GraspPart | Skill::TipPush | Skill::PinchPull | Skill::HookPull => {
                SkillTarget::Part
            }
            Skill::Open | Skill::Close => SkillTarget::Articulation,
        }
    }

    pub fn gripper_precondition(self) -> GripperPrecondition {
        match self {
            Skill::Place | Skill::Drop => GripperPrecondition::Holding,
            _ => GripperPrecondition::Empty,
        }
    }

    /// Whether the gripper should hold something after success; the executor checks it
    /// (SPEC §1.4: after grasp, grasp_part and pinch_pull).
    pub fn ends_holding(self) -> bool {
        matches!(self, Skill::Grasp | Skill::GraspPart | Skill::PinchPull)
    }

    /// Whether the skill needs affordance detection to find its target region.
    pub fn needs_affordance(self) -> bool {
        self.target() != SkillTarget::Object
    }
}

impl fmt::Display for Skill {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Skill {
    type Err = CoreError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Skill::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| CoreError::UnknownSkill(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_through_str_and_serde() {
        for s in Skill::ALL {
            assert_eq!(s.name().parse::<Skill>().unwrap(), s);
            let json = serde_json::to_string(&s).unwrap();
            assert_eq!(json, format!("\"{}\"", s.name()));
            assert_eq!(serde_json::from_str::<Skill>(&json).unwrap(), s);
        }
        let err = "teleport".parse::<Skill>().unwrap_err().to_string();
        assert!(
            err.contains("teleport") && err.contains("pinch_pull"),
            "{err}"
        );
    }

    #[test]
    fn preconditions_and_targets() {
        assert_eq!(
            Skill::Place.gripper_precondition(),
            GripperPrecondition::Holding
        );
        assert_eq!(
            Skill::Grasp.gripper_precondition(),
            GripperPrecondition::Empty
        );
        assert!(Skill::PinchPull.ends_holding() && !Skill::TipPush.ends_holding());
        assert!(Skill::HookPull.needs_affordance() && !Skill::Drop.needs_affordance());
        assert_eq!(Skill::Open.target(), SkillTarget::Articulation);
    }
}
