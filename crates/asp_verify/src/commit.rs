//! The commit gate every skill passes before any motion (SPEC §6, ARCHITECTURE "only the
//! verifier declares success").
//!
//! A skill executor sends a [`CommitRequest`] (skill, object, target points in some frame,
//! and the evidence behind them). [`CommitGate::review`] answers with a serialisable
//! [`CommitVerdict`] (accept/reject, v, ω, ζ, μ, typed reasons and a corrective action)
//! and, only on acceptance, a [`CommitToken`].
//!
//! The token is the executor's licence to move: it has private fields, no public
//! constructor, and is neither `Clone` nor `Deserialize`, so code that needs one can only
//! get it from an accepting review or from [`CommitToken::redeem`], the wire path, which
//! re-checks a received verdict against the request (digest, acceptance) and re-runs the
//! review locally with the executor's own configuration.
//!
//! ```compile_fail
//! // a token cannot be built by hand …
//! let t = asp_verify::CommitToken { step: asp_verify::StepId(1) };
//! ```
//! ```compile_fail
//! // … nor copied, so one acceptance licenses one execution …
//! fn twice(t: asp_verify::CommitToken) -> (asp_verify::CommitToken, asp_verify::CommitToken) {
//!     (t.clone(), t)
//! }
//! ```
//! ```compile_fail
//! // … nor read off the wire unchecked.
//! let t: asp_verify::CommitToken = serde_json::from_str("{}").unwrap();
//! ```

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

use asp_config::sections::common::SafetyConfig;
use asp_config::sections::verifier::GateConfig;
use asp_core::skill::SkillTarget;
use asp_core::{EvidenceRecord, FrameId, ObjectKey, Point3, Skill, Transform};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::diagnostics::{DiagnosticsSummary, diagnose, verifier_score};
use crate::gate::{Deficiency, RetryAction, RetryContext, dominant_deficiency, targeted_retry};

/// Identifies one committed step: the verifier instance in the high 32 bits, a counter in
/// the low 32, so ids from a restarted verifier (a new instance id) do not collide.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct StepId(pub u64);

impl fmt::Display for StepId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "step-{:016x}", self.0)
    }
}

/// What a grounding found, as the affordance node reports it with an affordance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroundingSummary {
    pub omega: f64,
    pub zeta: f64,
    pub mu: f64,
    /// The v the harness computed; the gate recomputes it from ω, ζ, μ with its own
    /// weights and ignores this value for the decision.
    pub v: f64,
    pub skill_calls: u32,
    pub producers: Vec<String>,
}

/// The evidence behind a commit request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CommitEvidence {
    /// Whole-object skills (grasp, place, drop): the object's point count in the map.
    Object { points: usize },
    /// An affordance from the map: its `provenance.verifier_score`, which affordance
    /// detection sets only when the grounding committed.
    Affordance { verifier_score: Option<f64> },
    /// The diagnostics of a grounding; v is recomputed, the rule re-applied.
    Grounding(GroundingSummary),
    /// Raw evidence on a `width × height` view; the gate scores it itself.
    Records {
        records: Vec<EvidenceRecord>,
        width: u32,
        height: u32,
    },
    /// Nothing: only acceptable for no skill.
    None,
}

/// "May I commit?": the executor's question before any motion.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommitRequest {
    pub skill: Skill,
    pub object: ObjectKey,
    /// Frame of `targets` (e.g. `map`); transformed into the arm base for the workspace
    /// check.
    pub frame: FrameId,
    /// Target points and end-effector positions the motion will go to.
    pub targets: Vec<Point3>,
    pub evidence: CommitEvidence,
}

impl CommitRequest {
    /// SHA-256 of the request's canonical JSON, hex: binds a verdict to exactly this
    /// request. Numbers are written with 9 significant digits, so a request that went
    /// through a JSON round trip (where a float may come back one ulp off) has the same
    /// digest.
    pub fn digest(&self) -> String {
        let value = serde_json::to_value(self).unwrap_or(serde_json::Value::Null);
        let mut text = String::new();
        canonical(&value, &mut text);
        let hash = Sha256::digest(text.as_bytes());
        hash.iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// Writes `v` with sorted keys and floats at 9 significant digits.
fn canonical(v: &serde_json::Value, out: &mut String) {
    use serde_json::Value;
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => out.push_str(&i.to_string()),
            (_, Some(u), _) => out.push_str(&u.to_string()),
            (_, _, Some(f)) => out.push_str(&format!("{f:.8e}")),
            _ => out.push_str(&n.to_string()),
        },
        Value::String(s) => out.push_str(&serde_json::to_string(s).unwrap_or_default()),
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(x, out);
            }
            out.push(']');
        }
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&serde_json::to_string(k).unwrap_or_default());
                out.push(':');
                canonical(&m[k.as_str()], out);
            }
            out.push('}');
        }
    }
}

/// Why a request was refused.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum RejectReason {
    SkillNotAllowed {
        skill: Skill,
        allowed: Vec<Skill>,
    },
    NoTargets,
    NonFiniteTarget {
        index: usize,
    },
    MissingTransform {
        from: String,
        to: String,
    },
    FrameMismatch {
        expected: String,
        found: String,
    },
    OutsideWorkspace {
        index: usize,
        point: [f64; 3],
        min: [f64; 3],
        max: [f64; 3],
    },
    /// The evidence does not pass the commit rule (or there is not enough of it).
    InsufficientEvidence {
        detail: String,
    },
    /// The evidence is of a kind that cannot justify this skill.
    WrongEvidence {
        skill: Skill,
        detail: String,
    },
}

impl fmt::Display for RejectReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::SkillNotAllowed { skill, allowed } => {
                let names: Vec<&str> = allowed.iter().map(|s| s.name()).collect();
                write!(
                    f,
                    "skill {skill} is not allowed (allowed: {})",
                    names.join(", ")
                )
            }
            Self::NoTargets => write!(f, "the request has no target points"),
            Self::NonFiniteTarget { index } => write!(f, "target {index} is not a finite point"),
            Self::MissingTransform { from, to } => {
                write!(
                    f,
                    "no transform from {from} into {to} to check the workspace"
                )
            }
            Self::FrameMismatch { expected, found } => {
                write!(
                    f,
                    "transform is for frame {found}, targets are in {expected}"
                )
            }
            Self::OutsideWorkspace {
                index,
                point,
                min,
                max,
            } => write!(
                f,
                "target {index} at [{:.3}, {:.3}, {:.3}] m is outside the workspace [{:?} .. {:?}]",
                point[0], point[1], point[2], min, max
            ),
            Self::InsufficientEvidence { detail } => write!(f, "insufficient evidence: {detail}"),
            Self::WrongEvidence { skill, detail } => {
                write!(f, "evidence cannot justify {skill}: {detail}")
            }
        }
    }
}

/// What the caller should do after a rejection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum CorrectiveAction {
    /// Ground the affordance again; the retry the verifier proposes for the dominant
    /// deficiency, when known.
    Reground {
        deficiency: Option<Deficiency>,
        retry: Option<RetryAction>,
    },
    /// Move the base so the target comes into reach: `towards` is the direction (arm base
    /// frame, unit, horizontal) from the arm to the farthest offending target.
    Reposition { towards: [f64; 3], excess_m: f64 },
    /// Use one of the allowed skills instead.
    ChooseAllowedSkill { allowed: Vec<Skill> },
    /// Look again and rebuild the map: the object has too little geometry.
    Remap,
    /// A system fault (missing transform): nothing the agent can fix by retrying.
    None,
}

/// The verifier's answer to a [`CommitRequest`]; published on the verdict topic.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommitVerdict {
    pub step: StepId,
    pub skill: Skill,
    pub object: ObjectKey,
    /// [`CommitRequest::digest`] of the request judged.
    pub request_digest: String,
    pub accepted: bool,
    /// Diagnostics the decision used, when the evidence carried them.
    pub diagnostics: Option<DiagnosticsSummary>,
    pub reasons: Vec<RejectReason>,
    pub corrective: Option<CorrectiveAction>,
    /// One line for logs and the agent's feedback.
    pub message: String,
}

/// The licence to execute one committed step. See the module notes: only an accepting
/// review or a checked redemption makes one.
#[derive(Debug, PartialEq, Eq)]
pub struct CommitToken {
    step: StepId,
    skill: Skill,
    object: ObjectKey,
    digest: String,
}

impl CommitToken {
    pub fn step(&self) -> StepId {
        self.step
    }
    pub fn skill(&self) -> Skill {
        self.skill
    }
    pub fn object(&self) -> &ObjectKey {
        &self.object
    }
    /// Digest of the request this token licenses.
    pub fn request_digest(&self) -> &str {
        &self.digest
    }

    /// Whether this token licenses exactly `request`.
    pub fn covers(&self, request: &CommitRequest) -> bool {
        request.digest() == self.digest
    }

    /// The wire path: turns a verdict received from the verifier node into a token, after
    /// checking that it accepted, that it judged exactly `request`, and that this side's
    /// own gate (same typed limits) accepts the request too.
    pub fn redeem(
        verdict: &CommitVerdict,
        request: &CommitRequest,
        gate: &CommitGate,
        to_arm_base: Option<&Transform>,
    ) -> Result<CommitToken, TokenError> {
        if !verdict.accepted || !verdict.reasons.is_empty() {
            return Err(TokenError::Rejected {
                step: verdict.step,
                message: verdict.message.clone(),
            });
        }
        let digest = request.digest();
        if digest != verdict.request_digest
            || verdict.skill != request.skill
            || verdict.object != request.object
        {
            return Err(TokenError::RequestMismatch {
                step: verdict.step,
                expected: verdict.request_digest.clone(),
                found: digest,
            });
        }
        match gate.review(request, to_arm_base) {
            Review::Accepted { .. } => Ok(CommitToken {
                step: verdict.step,
                skill: request.skill,
                object: request.object.clone(),
                digest,
            }),
            Review::Rejected(local) => Err(TokenError::LocalReject {
                step: verdict.step,
                message: local.message,
            }),
        }
    }
}

/// Why a received verdict does not make a token.
#[derive(Debug, Clone, PartialEq, thiserror::Error, Serialize, Deserialize)]
pub enum TokenError {
    #[error("{step} was rejected by the verifier: {message}")]
    Rejected { step: StepId, message: String },
    #[error("the verdict for {step} judged request {expected}, not this one ({found})")]
    RequestMismatch {
        step: StepId,
        expected: String,
        found: String,
    },
    #[error("the verdict for {step} says accepted, but this side's limits reject it: {message}")]
    LocalReject { step: StepId, message: String },
}

/// The result of a review: a verdict, and a token exactly when it accepted.
#[derive(Debug, PartialEq)]
pub enum Review {
    Accepted {
        token: CommitToken,
        verdict: CommitVerdict,
    },
    Rejected(CommitVerdict),
}

impl Review {
    pub fn verdict(&self) -> &CommitVerdict {
        match self {
            Review::Accepted { verdict, .. } | Review::Rejected(verdict) => verdict,
        }
    }
    pub fn is_accepted(&self) -> bool {
        matches!(self, Review::Accepted { .. })
    }
    /// The token, or the rejecting verdict.
    pub fn into_token(self) -> Result<CommitToken, Box<CommitVerdict>> {
        match self {
            Review::Accepted { token, .. } => Ok(token),
            Review::Rejected(v) => Err(Box::new(v)),
        }
    }
}

/// The commit gate: the A-Harness rule on the evidence, plus the typed safety limits.
#[derive(Debug)]
pub struct CommitGate {
    gate: GateConfig,
    safety: SafetyConfig,
    arm_base: FrameId,
    instance: u32,
    counter: AtomicU64,
}

impl CommitGate {
    /// `arm_base` is the frame of `safety.workspace` (`/**.frames.arm_base`); `instance`
    /// distinguishes step ids across verifier restarts (a node passes a random value).
    pub fn new(
        gate: GateConfig,
        safety: SafetyConfig,
        arm_base: impl Into<FrameId>,
        instance: u32,
    ) -> Self {
        Self {
            gate,
            safety,
            arm_base: arm_base.into(),
            instance,
            counter: AtomicU64::new(0),
        }
    }

    /// The gate of a loaded configuration (verifier section, shared safety and frames).
    pub fn from_config(config: &asp_config::AspConfig, instance: u32) -> Self {
        Self::new(
            config.verifier_node.gate.clone(),
            config.common.safety.clone(),
            config.common.frames.arm_base.as_str(),
            instance,
        )
    }

    pub fn arm_base(&self) -> &FrameId {
        &self.arm_base
    }

    fn next_step(&self) -> StepId {
        let n = self.counter.fetch_add(1, Ordering::Relaxed) & 0xffff_ffff;
        StepId((u64::from(self.instance) << 32) | n)
    }

    /// Judges `request`. `to_arm_base` maps the request's frame into the arm base
    /// (`parent = arm_base`, `child = request.frame`); it may be `None` when the targets
    /// are already in the arm base.
    pub fn review(&self, request: &CommitRequest, to_arm_base: Option<&Transform>) -> Review {
        let step = self.next_step();
        let mut reasons = Vec::new();
        let mut corrective = None;

        if !self.safety.allowed_skills.contains(&request.skill) {
            reasons.push(RejectReason::SkillNotAllowed {
                skill: request.skill,
                allowed: self.safety.allowed_skills.clone(),
            });
            corrective = Some(CorrectiveAction::ChooseAllowedSkill {
                allowed: self.safety.allowed_skills.clone(),
            });
        }

        if let Some(c) = self.check_workspace(request, to_arm_base, &mut reasons) {
            corrective.get_or_insert(c);
        }

        let (diagnostics, evidence_fix) = self.check_evidence(request, &mut reasons);
        if let Some(c) = evidence_fix {
            corrective.get_or_insert(c);
        }

        let accepted = reasons.is_empty();
        let message = if accepted {
            match diagnostics {
                Some(d) => format!(
                    "{step}: commit {} on {} (v {:.2}, omega {:.2}, zeta {:.2}, mu {:.2})",
                    request.skill, request.object, d.v, d.omega, d.zeta, d.mu
                ),
                None => format!("{step}: commit {} on {}", request.skill, request.object),
            }
        } else {
            let why: Vec<String> = reasons.iter().map(ToString::to_string).collect();
            format!(
                "{step}: refuse {} on {}: {}",
                request.skill,
                request.object,
                why.join("; ")
            )
        };
        let verdict = CommitVerdict {
            step,
            skill: request.skill,
            object: request.object.clone(),
            request_digest: request.digest(),
            accepted,
            diagnostics,
            reasons,
            corrective: if accepted { None } else { corrective },
            message,
        };
        if accepted {
            Review::Accepted {
                token: CommitToken {
                    step,
                    skill: request.skill,
                    object: request.object.clone(),
                    digest: verdict.request_digest.clone(),
                },
                verdict,
            }
        } else {
            tracing::info!(step = %step, "{}", verdict.message);
            Review::Rejected(verdict)
        }
    }

    fn check_workspace(
        &self,
        request: &CommitRequest,
        to_arm_base: Option<&Transform>,
        reasons: &mut Vec<RejectReason>,
    ) -> Option<CorrectiveAction> {
        if request.targets.is_empty() {
            reasons.push(RejectReason::NoTargets);
            return Some(CorrectiveAction::Reground {
                deficiency: None,
                retry: None,
            });
        }
        let tf = if request.frame == self.arm_base {
            None
        } else {
            match to_arm_base {
                None => {
                    reasons.push(RejectReason::MissingTransform {
                        from: request.frame.to_string(),
                        to: self.arm_base.to_string(),
                    });
                    return Some(CorrectiveAction::None);
                }
                Some(tf) if tf.child != request.frame || tf.parent != self.arm_base => {
                    reasons.push(RejectReason::FrameMismatch {
                        expected: format!("{} -> {}", self.arm_base, request.frame),
                        found: format!("{} -> {}", tf.parent, tf.child),
                    });
                    return Some(CorrectiveAction::None);
                }
                Some(tf) => Some(tf),
            }
        };
        let ws = &self.safety.workspace;
        let mut worst: Option<([f64; 3], f64)> = None;
        for (index, p) in request.targets.iter().enumerate() {
            if !(p.x.is_finite() && p.y.is_finite() && p.z.is_finite()) {
                reasons.push(RejectReason::NonFiniteTarget { index });
                continue;
            }
            let q = tf.map_or(*p, |t| t.apply(p));
            let point = [f64::from(q.x), f64::from(q.y), f64::from(q.z)];
            if !ws.contains(point) {
                let excess = (0..3)
                    .map(|i| (ws.min[i] - point[i]).max(point[i] - ws.max[i]).max(0.0))
                    .fold(0.0, f64::max);
                if worst.is_none_or(|(_, e)| excess > e) {
                    worst = Some((point, excess));
                }
                reasons.push(RejectReason::OutsideWorkspace {
                    index,
                    point,
                    min: ws.min,
                    max: ws.max,
                });
            }
        }
        worst.map(|(p, excess)| {
            let n = p[0].hypot(p[1]).max(1e-9);
            CorrectiveAction::Reposition {
                towards: [p[0] / n, p[1] / n, 0.0],
                excess_m: excess,
            }
        })
    }

    fn check_evidence(
        &self,
        request: &CommitRequest,
        reasons: &mut Vec<RejectReason>,
    ) -> (Option<DiagnosticsSummary>, Option<CorrectiveAction>) {
        let cfg = &self.gate;
        let reground = |d: Option<Deficiency>| CorrectiveAction::Reground {
            deficiency: d,
            retry: d.and_then(|d| {
                targeted_retry(
                    d,
                    &RetryContext {
                        familiar: true,
                        used: vec![],
                        available: RetryAction::ALL.to_vec(),
                    },
                )
            }),
        };
        let needs_part = request.skill.target() != SkillTarget::Object;
        let judge = |s: DiagnosticsSummary, reasons: &mut Vec<RejectReason>| {
            if s.v >= cfg.delta && s.omega >= cfg.floors.omega {
                None
            } else {
                let d = crate::diagnostics::Diagnostics {
                    omega: s.omega,
                    zeta: s.zeta,
                    mu: s.mu,
                    v: s.v,
                    hypothesis: Some(0),
                    omega_pair: None,
                    cross_scale_pairs: 0,
                    weights: vec![],
                    supports: vec![],
                    hypothesis_corroborated: true,
                };
                let (l, _) = dominant_deficiency(&d, cfg);
                reasons.push(RejectReason::InsufficientEvidence {
                    detail: format!(
                        "v {:.3} (needs {:.2}), omega {:.3} (floor {:.2}); dominant deficiency {}",
                        s.v,
                        cfg.delta,
                        s.omega,
                        cfg.floors.omega,
                        l.symbol()
                    ),
                });
                Some(reground(Some(l)))
            }
        };
        match &request.evidence {
            CommitEvidence::Object { points } => {
                if needs_part {
                    reasons.push(RejectReason::WrongEvidence {
                        skill: request.skill,
                        detail: "a part skill needs a grounded affordance, not a whole object"
                            .into(),
                    });
                    return (None, Some(reground(None)));
                }
                if *points < cfg.min_object_points {
                    reasons.push(RejectReason::InsufficientEvidence {
                        detail: format!(
                            "object has {points} map points, at least {} needed",
                            cfg.min_object_points
                        ),
                    });
                    return (None, Some(CorrectiveAction::Remap));
                }
                (None, None)
            }
            CommitEvidence::Affordance { verifier_score } => match verifier_score {
                Some(v) if *v >= cfg.delta => (None, None),
                Some(v) => {
                    reasons.push(RejectReason::InsufficientEvidence {
                        detail: format!("affordance verifier score {v:.3} < {:.2}", cfg.delta),
                    });
                    (None, Some(reground(None)))
                }
                None => {
                    reasons.push(RejectReason::InsufficientEvidence {
                        detail: "the affordance was never committed by the verifier".into(),
                    });
                    (None, Some(reground(None)))
                }
            },
            CommitEvidence::Grounding(g) => {
                let s = DiagnosticsSummary {
                    omega: g.omega,
                    zeta: g.zeta,
                    mu: g.mu,
                    v: verifier_score(g.omega, g.zeta, g.mu, cfg),
                };
                let fix = judge(s, reasons);
                (Some(s), fix)
            }
            CommitEvidence::Records {
                records,
                width,
                height,
            } => {
                let d = diagnose(records, *width, *height, cfg);
                if d.hypothesis.is_none() {
                    reasons.push(RejectReason::InsufficientEvidence {
                        detail: format!("no localised hypothesis in {} records", records.len()),
                    });
                    return (
                        Some(d.summary()),
                        Some(reground(Some(Deficiency::Sufficiency))),
                    );
                }
                let fix = judge(d.summary(), reasons);
                (Some(d.summary()), fix)
            }
            CommitEvidence::None => {
                reasons.push(RejectReason::InsufficientEvidence {
                    detail: "no evidence given".into(),
                });
                (None, Some(reground(None)))
            }
        }
    }
}

/// Runs `execute` only with a token from an accepting review; a rejection returns its
/// verdict and `execute` never runs. The shape a skill executor's entry point takes.
pub fn execute_committed<T>(
    review: Review,
    execute: impl FnOnce(CommitToken) -> T,
) -> Result<T, Box<CommitVerdict>> {
    review.into_token().map(execute)
}

#[cfg(test)]
mod tests {
    use super::*;
    use asp_core::Isometry3;

    fn gate() -> CommitGate {
        CommitGate::new(
            GateConfig::default(),
            SafetyConfig::default(),
            "link_base",
            7,
        )
    }

    fn request(skill: Skill, targets: Vec<Point3>, evidence: CommitEvidence) -> CommitRequest {
        CommitRequest {
            skill,
            object: ObjectKey::new("mug_0").unwrap(),
            frame: FrameId::map(),
            targets,
            evidence,
        }
    }

    fn good_grounding() -> CommitEvidence {
        CommitEvidence::Grounding(GroundingSummary {
            omega: 0.9,
            zeta: 1.0,
            mu: 1.0,
            v: 0.0, // ignored: recomputed
            skill_calls: 1,
            producers: vec!["detector/vlm_box".into()],
        })
    }

    fn map_to_base() -> Transform {
        // the arm base sits at (1, 0, 0.5) in the map, not rotated: base = map − offset
        Transform::new("link_base", "map", Isometry3::translation(-1.0, 0.0, -0.5))
    }

    #[test]
    fn accepts_good_evidence_inside_the_workspace() {
        let g = gate();
        let req = request(
            Skill::GraspPart,
            vec![Point3::new(1.3, 0.1, 0.6)],
            good_grounding(),
        );
        let review = g.review(&req, Some(&map_to_base()));
        let v = review.verdict().clone();
        assert!(v.accepted, "{}", v.message);
        let d = v.diagnostics.unwrap();
        assert!((d.v - (0.45 + 0.3 + 0.2 * crate::diagnostics::sigmoid(1.0))).abs() < 1e-12);
        let token = review.into_token().unwrap();
        assert_eq!(token.step(), v.step);
        assert_eq!(token.step().0 >> 32, 7, "instance id in the high bits");
        assert!(token.covers(&req));
        // every review gets a fresh step id
        let second = g.review(&req, Some(&map_to_base()));
        assert_ne!(second.verdict().step, v.step);
    }

    #[test]
    fn rejects_targets_outside_the_workspace_with_a_reposition_hint() {
        let g = gate();
        // 2.0 m in front of the base (x = 3 in the map): 1.25 m past the box
        let req = request(
            Skill::GraspPart,
            vec![Point3::new(1.2, 0.0, 0.6), Point3::new(3.0, 0.0, 0.6)],
            good_grounding(),
        );
        let review = g.review(&req, Some(&map_to_base()));
        assert!(!review.is_accepted());
        let v = review.verdict();
        assert!(
            matches!(
                v.reasons[..],
                [RejectReason::OutsideWorkspace { index: 1, .. }]
            ),
            "{:?}",
            v.reasons
        );
        match &v.corrective {
            Some(CorrectiveAction::Reposition { towards, excess_m }) => {
                assert!((towards[0] - 1.0).abs() < 1e-6);
                assert!((excess_m - 1.25).abs() < 1e-5, "{excess_m}");
            }
            other => panic!("{other:?}"),
        }
        assert!(v.message.contains("outside the workspace"), "{}", v.message);
    }

    #[test]
    fn rejects_without_a_transform_or_with_the_wrong_one() {
        let g = gate();
        let req = request(
            Skill::GraspPart,
            vec![Point3::new(1.2, 0.0, 0.6)],
            good_grounding(),
        );
        let v = g.review(&req, None).verdict().clone();
        assert!(matches!(
            v.reasons[..],
            [RejectReason::MissingTransform { .. }]
        ));
        let wrong = Transform::new("link_base", "odom", Isometry3::identity());
        let v = g.review(&req, Some(&wrong)).verdict().clone();
        assert!(matches!(
            v.reasons[..],
            [RejectReason::FrameMismatch { .. }]
        ));
        // targets already in the arm base need no transform
        let mut base = req.clone();
        base.frame = FrameId::new("link_base");
        base.targets = vec![Point3::new(0.3, 0.0, 0.1)];
        assert!(g.review(&base, None).is_accepted());
    }

    #[test]
    fn rejects_disallowed_skills() {
        let safety = SafetyConfig {
            allowed_skills: vec![Skill::Grasp, Skill::Place],
            ..SafetyConfig::default()
        };
        let g = CommitGate::new(GateConfig::default(), safety, "link_base", 1);
        let mut req = request(
            Skill::HookPull,
            vec![Point3::new(0.2, 0.0, 0.1)],
            good_grounding(),
        );
        req.frame = FrameId::new("link_base");
        let v = g.review(&req, None).verdict().clone();
        assert!(matches!(v.reasons[0], RejectReason::SkillNotAllowed { .. }));
        assert!(matches!(
            v.corrective,
            Some(CorrectiveAction::ChooseAllowedSkill { .. })
        ));
        assert!(v.message.contains("hook_pull"), "{}", v.message);
    }

    #[test]
    fn insufficient_evidence_proposes_the_targeted_retry() {
        let g = gate();
        let mut req = request(
            Skill::PinchPull,
            vec![Point3::new(0.2, 0.0, 0.1)],
            CommitEvidence::Grounding(GroundingSummary {
                omega: 0.45,
                zeta: 1.0,
                mu: 1.0,
                v: 0.99, // a lying summary does not help: v is recomputed
                skill_calls: 3,
                producers: vec![],
            }),
        );
        req.frame = FrameId::new("link_base");
        let v = g.review(&req, None).verdict().clone();
        assert!(!v.accepted);
        assert!(v.diagnostics.unwrap().v < 0.8);
        assert_eq!(
            v.corrective,
            Some(CorrectiveAction::Reground {
                deficiency: Some(Deficiency::Consistency),
                retry: Some(RetryAction::RefineSegment)
            })
        );
        // part skills cannot commit on whole-object evidence, object skills need points
        req.evidence = CommitEvidence::Object { points: 500 };
        assert!(matches!(
            g.review(&req, None).verdict().reasons[0],
            RejectReason::WrongEvidence { .. }
        ));
        req.skill = Skill::Grasp;
        assert!(g.review(&req, None).is_accepted());
        req.evidence = CommitEvidence::Object { points: 3 };
        assert_eq!(
            g.review(&req, None).verdict().corrective,
            Some(CorrectiveAction::Remap)
        );
        req.evidence = CommitEvidence::Affordance {
            verifier_score: None,
        };
        assert!(!g.review(&req, None).is_accepted());
        req.evidence = CommitEvidence::Affordance {
            verifier_score: Some(0.85),
        };
        assert!(g.review(&req, None).is_accepted());
    }

    #[test]
    fn verdicts_round_trip_as_json() {
        let g = gate();
        let req = request(
            Skill::GraspPart,
            vec![Point3::new(3.0, 0.0, 0.6)],
            good_grounding(),
        );
        let v = g.review(&req, Some(&map_to_base())).verdict().clone();
        let json = serde_json::to_string(&v).unwrap();
        let back: CommitVerdict = serde_json::from_str(&json).unwrap();
        // floats may come back one ulp off; everything else is exact
        assert_eq!(
            (
                back.step,
                &back.request_digest,
                back.accepted,
                &back.message
            ),
            (v.step, &v.request_digest, v.accepted, &v.message)
        );
        assert_eq!(back.corrective, v.corrective);
        // a request that made the round trip has the same digest, so the wire path works
        let mut g = req.clone();
        g.evidence = CommitEvidence::Grounding(GroundingSummary {
            omega: 0.1 + 0.2,
            zeta: 1.0 / 3.0,
            mu: std::f64::consts::PI,
            v: 0.7777777777777777,
            skill_calls: 2,
            producers: vec![],
        });
        let r: CommitRequest = serde_json::from_str(&serde_json::to_string(&g).unwrap()).unwrap();
        assert_eq!(r.digest(), g.digest());
        assert_ne!(g.digest(), req.digest());
    }
}
