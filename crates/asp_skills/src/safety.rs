//! Safety in code (ARCHITECTURE "Safety"): every limit of `/**.safety` that concerns the
//! arm is checked here before any goal is sent — the skill must be allowed, every
//! end-effector target must lie in the workspace box (expressed in the arm base frame),
//! and no velocity/acceleration scaling or gripper effort may exceed its cap. A refusal
//! names the limit, its key and the offending value; nothing moves.

use std::fmt;

use asp_config::sections::common::SafetyConfig;
use asp_core::{Failure, FailureKind, Point3, Skill, Transform};
use serde::{Deserialize, Serialize};

use crate::codes::ours;

/// Why the executor refused a skill before anything moved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "refusal", rename_all = "snake_case")]
pub enum Refusal {
    SkillNotAllowed {
        skill: Skill,
        allowed: Vec<Skill>,
    },
    /// A scaling or effort above its cap.
    AboveLimit {
        /// The requested quantity, e.g. `velocity_scaling`.
        what: String,
        value: f64,
        /// The cap's key under `/**.safety`.
        cap_key: String,
        cap: f64,
    },
    /// An end-effector target outside the workspace box.
    OutsideWorkspace {
        /// Which goal, e.g. `pre-grasp`.
        stage: String,
        /// The target in the map and in the arm base frame, metres.
        in_map: [f64; 3],
        in_arm_base: [f64; 3],
        min: [f64; 3],
        max: [f64; 3],
    },
    /// The e-stop is engaged.
    EStop,
    /// The request cannot be executed as given.
    InvalidRequest {
        problem: String,
    },
}

impl Refusal {
    /// The machine-readable failure; none of these is fixed by retrying the same call.
    pub fn failure(&self) -> Failure {
        match self {
            Self::SkillNotAllowed { .. } => {
                Failure::new(FailureKind::NotAllowed).with_code(ours::SKILL_NOT_ALLOWED)
            }
            Self::AboveLimit { .. } => {
                Failure::new(FailureKind::NotAllowed).with_code(ours::ABOVE_LIMIT)
            }
            // moving the base (go_to) can bring the target into the box
            Self::OutsideWorkspace { .. } => Failure::new(FailureKind::NotAllowed)
                .with_code(ours::OUTSIDE_WORKSPACE)
                .retryable(),
            Self::EStop => Failure::new(FailureKind::Cancelled).with_code(ours::ESTOP),
            Self::InvalidRequest { .. } => {
                Failure::new(FailureKind::InvalidArgument).with_code(ours::INVALID_REQUEST)
            }
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::SkillNotAllowed { skill, allowed } => {
                let names: Vec<&str> = allowed.iter().map(|s| s.name()).collect();
                write!(
                    f,
                    "skill {skill} is not on /**.safety.allowed_skills ({}); nothing moved",
                    names.join(", ")
                )
            }
            Self::AboveLimit {
                what,
                value,
                cap_key,
                cap,
            } => write!(
                f,
                "{what} {value} exceeds /**.safety.{cap_key} = {cap}; nothing moved"
            ),
            Self::OutsideWorkspace {
                stage,
                in_map,
                in_arm_base,
                min,
                max,
            } => write!(
                f,
                "the {stage} target at [{:.3}, {:.3}, {:.3}] m (map) is at [{:.3}, {:.3}, {:.3}] m in the arm base, outside /**.safety.workspace [{:?} .. {:?}]; nothing moved: go_to the object to bring it closer",
                in_map[0],
                in_map[1],
                in_map[2],
                in_arm_base[0],
                in_arm_base[1],
                in_arm_base[2],
                min,
                max
            ),
            Self::EStop => write!(f, "the e-stop is engaged: no skill runs until it is reset"),
            Self::InvalidRequest { problem } => write!(f, "invalid skill request: {problem}"),
        }
    }
}

/// The arm limits of `/**.safety`.
#[derive(Debug, Clone, PartialEq)]
pub struct SafetyGuard {
    safety: SafetyConfig,
}

impl SafetyGuard {
    pub fn new(safety: SafetyConfig) -> Self {
        Self { safety }
    }

    pub fn config(&self) -> &SafetyConfig {
        &self.safety
    }

    pub fn check_skill(&self, skill: Skill) -> Result<(), Refusal> {
        if self.safety.allowed_skills.contains(&skill) {
            Ok(())
        } else {
            Err(Refusal::SkillNotAllowed {
                skill,
                allowed: self.safety.allowed_skills.clone(),
            })
        }
    }

    /// MoveIt scalings and the gripper effort a skill would use.
    pub fn check_motion(
        &self,
        velocity_scaling: f64,
        acceleration_scaling: f64,
        gripper_effort: f64,
    ) -> Result<(), Refusal> {
        let s = &self.safety;
        let checks = [
            (
                "velocity_scaling",
                velocity_scaling,
                "max_velocity_scaling",
                s.max_velocity_scaling,
            ),
            (
                "acceleration_scaling",
                acceleration_scaling,
                "max_acceleration_scaling",
                s.max_acceleration_scaling,
            ),
            (
                "gripper effort (N)",
                gripper_effort,
                "max_gripper_effort",
                s.max_gripper_effort,
            ),
        ];
        for (what, value, cap_key, cap) in checks {
            // NaN and non-positive values are refused too
            if !(value.is_finite() && value > 0.0 && value <= cap) {
                return Err(Refusal::AboveLimit {
                    what: what.into(),
                    value,
                    cap_key: cap_key.into(),
                    cap,
                });
            }
        }
        Ok(())
    }

    /// Whether a point given in the arm base frame lies in the workspace box.
    pub fn in_workspace(&self, p_arm_base: &Point3) -> bool {
        let p = [
            f64::from(p_arm_base.x),
            f64::from(p_arm_base.y),
            f64::from(p_arm_base.z),
        ];
        p.iter().all(|v| v.is_finite()) && self.safety.workspace.contains(p)
    }

    /// Checks a map-frame end-effector target; `map_to_arm_base` maps map coordinates
    /// into the arm base (`parent` = arm base, `child` = map).
    pub fn check_target(
        &self,
        stage: &str,
        p_map: &Point3,
        map_to_arm_base: &Transform,
    ) -> Result<(), Refusal> {
        let q = map_to_arm_base.apply(p_map);
        if self.in_workspace(&q) {
            Ok(())
        } else {
            let ws = &self.safety.workspace;
            Err(Refusal::OutsideWorkspace {
                stage: stage.into(),
                in_map: [p_map.x, p_map.y, p_map.z].map(f64::from),
                in_arm_base: [q.x, q.y, q.z].map(f64::from),
                min: ws.min,
                max: ws.max,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use asp_core::Isometry3;

    #[test]
    fn limits_name_key_and_value() {
        let g = SafetyGuard::new(SafetyConfig::default());
        assert!(g.check_motion(0.3, 0.3, 30.0).is_ok());
        let r = g.check_motion(0.9, 0.3, 30.0).unwrap_err();
        let text = r.to_string();
        assert!(
            text.contains("velocity_scaling 0.9") && text.contains("max_velocity_scaling = 0.5"),
            "{text}"
        );
        let r = g.check_motion(0.3, 0.3, 45.0).unwrap_err();
        assert!(r.to_string().contains("max_gripper_effort = 40"), "{r}");
        assert!(g.check_motion(f64::NAN, 0.3, 30.0).is_err());
        assert!(g.check_motion(0.3, 0.0, 30.0).is_err());
        assert_eq!(r.failure().kind, FailureKind::NotAllowed);
        assert_eq!(r.failure().code, ours::ABOVE_LIMIT);
    }

    #[test]
    fn workspace_is_checked_in_the_arm_base() {
        let g = SafetyGuard::new(SafetyConfig::default());
        // arm base at (2, 0, 0.5) in the map: map → base subtracts it
        let tf = Transform::new("link_base", "map", Isometry3::translation(-2.0, 0.0, -0.5));
        assert!(
            g.check_target("grasp", &Point3::new(2.5, 0.0, 0.6), &tf)
                .is_ok()
        );
        let r = g
            .check_target("pre-grasp", &Point3::new(3.0, 0.0, 0.6), &tf)
            .unwrap_err();
        assert!(matches!(r, Refusal::OutsideWorkspace { .. }));
        let t = r.to_string();
        assert!(
            t.contains("pre-grasp") && t.contains("[1.000, 0.000, 0.100]"),
            "{t}"
        );
        assert!(r.failure().retryable);
    }

    #[test]
    fn skills_outside_the_allowlist_are_refused() {
        let g = SafetyGuard::new(SafetyConfig {
            allowed_skills: vec![Skill::Grasp],
            ..SafetyConfig::default()
        });
        assert!(g.check_skill(Skill::Grasp).is_ok());
        let r = g.check_skill(Skill::HookPull).unwrap_err();
        assert!(r.to_string().contains("hook_pull"), "{r}");
        assert_eq!(r.failure().code, ours::SKILL_NOT_ALLOWED);
    }
}
