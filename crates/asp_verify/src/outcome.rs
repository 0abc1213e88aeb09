//! "Did it work?" after each skill: the VLA² per-verb Yes/No question (SPEC §4.3),
//! answered by a VLM on before/after observations when configured, otherwise by
//! geometric checks on the object map and the gripper state.
//!
//! A step counts as succeeded only through a [`StepSuccess`], which only
//! [`OutcomeVerifier::check`] makes (private fields, not `Clone`, not `Deserialize`), for
//! the step of the [`CommitToken`](crate::CommitToken) the executor presents.
//!
//! ```compile_fail
//! let s = asp_verify::StepSuccess { step: asp_verify::StepId(1) };
//! ```

use std::sync::Arc;

use asp_config::sections::verifier::{OutcomeBackend, OutcomeConfig};
use asp_core::models::{Observation, OutcomeVlm};
use asp_core::{ObjectKey, Point3, PointCloud, State, ToolOutput, ToolValue};
use serde::{Deserialize, Serialize};

use crate::commit::{CommitToken, StepId};

/// The closed verb set of VLA²'s planner (SPEC §4.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verb {
    PickUp,
    Place,
    Open,
    Close,
    TurnOn,
    TurnOff,
    /// A button or key pushed (tip_push), beyond VLA²'s six: pressing a key neither
    /// opens nor switches anything the verifier could see.
    Press,
}

/// "on" or "in" for place.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Relation {
    On,
    In,
}

/// Where a placed object should end up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlaceTarget {
    pub key: ObjectKey,
    pub name: String,
    pub relation: Relation,
}

/// What the gripper was doing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct GripperSnapshot {
    /// The gripper reports an object between its fingers (GripperCommand: stalled before
    /// closing fully).
    pub holding: bool,
    /// Tool centre point in the map frame.
    pub tool_position: Option<Point3>,
}

/// An articulated joint's state: a drawer's travel in metres or a door's angle in
/// radians, with its limits.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ArticulationState {
    pub position: f32,
    pub lower: f32,
    pub upper: f32,
}

/// How a fresh depth view sees the points where an object was last known to be: each
/// point is either still there (`present`: the view's depth matches it), seen through
/// (`vacated`: the view sees farther, so the space is free), or hidden behind something
/// nearer (`occluded`). Points out of every view count in none.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlaceOccupancy {
    pub present: u32,
    pub vacated: u32,
    pub occluded: u32,
    /// The object's points looked for, judged or not.
    #[serde(default)]
    pub points: u32,
}

impl PlaceOccupancy {
    /// Judged points enough to answer: `min_seen`, or half the object's points for an
    /// object smaller than that (a thumbtack is a few points), at least 3.
    pub fn enough(&self, min_seen: u32) -> bool {
        self.judged() >= min_seen.min(self.points / 2).max(3)
    }

    /// Points the view could judge (present or vacated).
    pub fn judged(&self) -> u32 {
        self.present + self.vacated
    }

    /// Share of the judged points that are free space now; `None` when none was judged.
    pub fn vacated_share(&self) -> Option<f32> {
        (self.judged() > 0).then(|| self.vacated as f32 / self.judged() as f32)
    }

    /// Whether the view sees the place as free space: at least `fraction` of the judged
    /// points are. `None` when too few were judged to tell ([`Self::enough`]).
    pub fn seen_free(&self, min_seen: u32, fraction: f32) -> Option<bool> {
        self.enough(min_seen)
            .then(|| self.vacated_share().is_some_and(|s| s >= fraction))
    }
}

/// How far the acted-on part was seen to move along its estimated joint (metres for a
/// slide, radians for a hinge; positive opens), and what the skill commanded.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct JointTravel {
    pub measured: f32,
    pub commanded: f32,
    /// Points of the moving part that matched the view at `measured`.
    pub support: u32,
}

/// The world before or after a step, as the verifier needs it. Clouds are in the map
/// frame; anything unknown is `None`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    /// The object as observed. After a place: the points that appeared on or in the
    /// target since before the skill (the placed object as a fresh view sees it).
    pub object_cloud: Option<PointCloud>,
    /// The place target (receptacle/support) cloud.
    pub target_cloud: Option<PointCloud>,
    pub gripper: GripperSnapshot,
    /// A joint's true state (a robot with joint encoders on its furniture, a test rig).
    pub articulation: Option<ArticulationState>,
    /// Switch state of a device, when observable (a smart plug, a test rig).
    pub switch_on: Option<bool>,
    /// Camera view, for the VLM.
    pub observation: Option<Observation>,
    /// The object's last known place as a fresh view sees it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prior_place: Option<PlaceOccupancy>,
    /// The acted-on part's measured travel along its joint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub joint_travel: Option<JointTravel>,
    /// A tip push reached the part: its pressing motion ran to its end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contact: Option<bool>,
    /// Capture time of the views this snapshot was made from (seconds, the cameras'
    /// clock).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_at: Option<f64>,
}

/// "Did it work?": asked after a skill with the step id of its commit token.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutcomeRequest {
    pub step: StepId,
    pub verb: Verb,
    pub object: ObjectKey,
    /// How to call the object in the question, e.g. "the red mug".
    pub object_name: String,
    /// For a press: the object the pressed part belongs to ("the keyboard"), asked
    /// about when the part was not seen pressed (was something else?).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// For place.
    pub target: Option<PlaceTarget>,
    pub before: Snapshot,
    pub after: Snapshot,
}

impl OutcomeRequest {
    /// The VLA² question for the verb (SPEC §4.3).
    pub fn question(&self) -> String {
        let x = &self.object_name;
        match self.verb {
            Verb::PickUp => format!("Has {x} been grasped and lifted off any surface?"),
            Verb::Place => {
                let (rel, y) = match &self.target {
                    Some(t) => (
                        match t.relation {
                            Relation::On => "on",
                            Relation::In => "in",
                        },
                        t.name.as_str(),
                    ),
                    None => ("on", "its target"),
                };
                format!("Has {x} been placed {rel} {y} and is the gripper away?")
            }
            Verb::Open => format!("Has {x} been fully opened?"),
            Verb::Close => format!("Has {x} been fully closed?"),
            Verb::TurnOn => format!("Has {x} been turned on?"),
            Verb::TurnOff => format!("Has {x} been turned off?"),
            Verb::Press => format!("Has {x} been pressed?"),
        }
    }
}

/// Yes, no, or cannot tell from what was observed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    Yes,
    No,
    Unknown,
}

/// How the answer was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutcomeMethod {
    Geometric,
    Vlm,
}

/// One geometric test and its result (`None`: not measurable).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    pub name: String,
    pub passed: Option<bool>,
    pub detail: String,
}

/// The verifier's answer; published on the verdict topic.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutcomeVerdict {
    pub step: StepId,
    pub verb: Verb,
    pub object: ObjectKey,
    pub question: String,
    pub answer: Answer,
    pub method: OutcomeMethod,
    pub checks: Vec<Check>,
    /// One line for logs and the agent.
    pub message: String,
    /// Capture times of the views before and after the step (the cameras' clock), when
    /// they were seen: what the answer was about, for an evaluation to judge it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed: Option<ObservedSpan>,
}

/// When the views a verdict judged were captured: before and after the step, seconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ObservedSpan {
    pub before: f64,
    pub after: f64,
}

impl OutcomeVerdict {
    pub fn succeeded(&self) -> bool {
        self.answer == Answer::Yes
    }
}

/// Proof that the verifier declared a step succeeded.
#[derive(Debug, PartialEq, Eq)]
pub struct StepSuccess {
    step: StepId,
    verb: Verb,
    object: ObjectKey,
}

impl StepSuccess {
    pub fn step(&self) -> StepId {
        self.step
    }
    pub fn verb(&self) -> Verb {
        self.verb
    }
    pub fn object(&self) -> &ObjectKey {
        &self.object
    }

    /// The wire path: a success from a received verdict, for the step this side
    /// committed (the token it executed with), only when the verdict says yes and all of
    /// its checks that could be measured passed.
    ///
    /// The verdict must name the token's object, except for a place/drop step: its token
    /// licenses the motion onto the target, while its question is about the placed (held)
    /// object; the step id binds the two.
    pub fn redeem(
        verdict: &OutcomeVerdict,
        token: &CommitToken,
    ) -> Result<StepSuccess, OutcomeError> {
        let placing = verdict.verb == Verb::Place
            && matches!(
                token.skill(),
                asp_core::Skill::Place | asp_core::Skill::Drop
            );
        if verdict.step != token.step() || (&verdict.object != token.object() && !placing) {
            return Err(OutcomeError::WrongStep {
                expected: token.step(),
                found: verdict.step,
            });
        }
        if verdict.answer != Answer::Yes || verdict.checks.iter().any(|c| c.passed == Some(false)) {
            return Err(OutcomeError::NotSucceeded {
                step: verdict.step,
                message: verdict.message.clone(),
            });
        }
        Ok(StepSuccess {
            step: verdict.step,
            verb: verdict.verb,
            object: verdict.object.clone(),
        })
    }

    /// The only way to report a skill as successful to the agent.
    pub fn tool_output(self, state: State, feedback_msg: impl Into<String>) -> ToolOutput {
        ToolOutput::ok(ToolValue::State(state), feedback_msg)
    }
}

/// Why an outcome cannot count as success.
#[derive(Debug, Clone, PartialEq, thiserror::Error, Serialize, Deserialize)]
pub enum OutcomeError {
    #[error("the outcome verdict is for {found}, the committed step is {expected}")]
    WrongStep { expected: StepId, found: StepId },
    #[error("{step} did not succeed: {message}")]
    NotSucceeded { step: StepId, message: String },
}

/// The outcome of a check: the verdict, plus the success proof when it succeeded.
#[derive(Debug, PartialEq)]
pub enum Outcome {
    Succeeded {
        success: StepSuccess,
        verdict: OutcomeVerdict,
    },
    NotSucceeded(OutcomeVerdict),
}

impl Outcome {
    pub fn verdict(&self) -> &OutcomeVerdict {
        match self {
            Outcome::Succeeded { verdict, .. } | Outcome::NotSucceeded(verdict) => verdict,
        }
    }
}

/// What a press verdict says when the push pressed something other than its part: the
/// goal it belongs to can no longer be confirmed (a wrong key stays typed).
pub const SIDE_EFFECT: &str = "something else was pressed";

/// Answers outcome requests.
#[derive(Clone)]
pub struct OutcomeVerifier {
    cfg: OutcomeConfig,
    vlm: Option<Arc<dyn OutcomeVlm>>,
}

impl std::fmt::Debug for OutcomeVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutcomeVerifier")
            .field("cfg", &self.cfg)
            .field("vlm", &self.vlm.is_some())
            .finish()
    }
}

impl OutcomeVerifier {
    /// `vlm` is used when `cfg.backend` is `vlm` and both snapshots carry observations.
    pub fn new(cfg: OutcomeConfig, vlm: Option<Arc<dyn OutcomeVlm>>) -> Self {
        Self { cfg, vlm }
    }

    /// Answers the per-verb question for the step of `request`.
    pub async fn check(&self, request: &OutcomeRequest) -> Outcome {
        let question = request.question();
        let mut checks = Vec::new();
        let mut method = OutcomeMethod::Geometric;
        // whether a device switched is not geometry: with the geometric backend the VLM
        // still answers that question, next to the geometric checks (contact)
        let switch_unseen = matches!(request.verb, Verb::TurnOn | Verb::TurnOff | Verb::Press)
            && request.after.switch_on.is_none();
        let answer = if self.cfg.backend == OutcomeBackend::Vlm {
            match self.ask_vlm(request, &question, &mut checks).await {
                Some(a) => {
                    method = OutcomeMethod::Vlm;
                    a
                }
                None => {
                    let (a, geo) = geometric_answer(request, &self.cfg);
                    checks.extend(geo);
                    a
                }
            }
        } else {
            let (a, geo) = geometric_answer(request, &self.cfg);
            if switch_unseen && a != Answer::No {
                let mut vlm_checks = Vec::new();
                let vlm = self.ask_vlm(request, &question, &mut vlm_checks).await;
                // the unmeasurable switch check gives way to the VLM's answer
                checks.extend(geo.into_iter().filter(|c| c.name != "switch"));
                checks.extend(vlm_checks);
                if vlm == Some(Answer::No)
                    && request.verb == Verb::Press
                    && request.after.contact == Some(true)
                    && let Some(device) = &request.device
                {
                    checks.push(self.side_effect(request, device).await);
                }
                match vlm {
                    Some(v) => {
                        method = OutcomeMethod::Vlm;
                        v
                    }
                    None => Answer::Unknown,
                }
            } else {
                checks.extend(geo);
                a
            }
        };
        let failed: Vec<&str> = checks
            .iter()
            .filter(|c| c.passed == Some(false))
            .map(|c| c.detail.as_str())
            .collect();
        let message = match answer {
            Answer::Yes => format!("{}: {question} yes", request.step),
            Answer::No => format!("{}: {question} no: {}", request.step, failed.join("; ")),
            Answer::Unknown => format!(
                "{}: {question} cannot tell from what was observed",
                request.step
            ),
        };
        let verdict = OutcomeVerdict {
            step: request.step,
            verb: request.verb,
            object: request.object.clone(),
            question,
            answer,
            method,
            checks,
            message,
            observed: request
                .before
                .observed_at
                .zip(request.after.observed_at)
                .map(|(before, after)| ObservedSpan { before, after }),
        };
        if verdict.succeeded() {
            Outcome::Succeeded {
                success: StepSuccess {
                    step: request.step,
                    verb: request.verb,
                    object: request.object.clone(),
                },
                verdict,
            }
        } else {
            Outcome::NotSucceeded(verdict)
        }
    }
}

impl OutcomeVerifier {
    /// After a push that reached something but not its part: was anything on `device`
    /// other than the part pressed? Passes when not.
    async fn side_effect(&self, request: &OutcomeRequest, device: &str) -> Check {
        let q = format!(
            "Has anything on {device} other than {} been pressed?",
            request.object_name
        );
        let mut answer = Vec::new();
        let seen = match self.ask_vlm(request, &q, &mut answer).await {
            Some(Answer::Yes) => Some(true),
            Some(_) => Some(false),
            None => None,
        };
        Check {
            name: "side_effect".into(),
            passed: seen.map(|pressed| !pressed),
            detail: match seen {
                Some(true) => format!("{SIDE_EFFECT} on {device}"),
                Some(false) => format!("nothing on {device} was pressed"),
                None => format!("cannot tell whether anything on {device} was pressed"),
            },
        }
    }

    /// The VLM's Yes/No on the before/after views: `None` when there is no VLM, no views,
    /// or it failed twice (VLA² §4.2: retry once, then fall back). Records a "vlm" check.
    async fn ask_vlm(
        &self,
        request: &OutcomeRequest,
        question: &str,
        checks: &mut Vec<Check>,
    ) -> Option<Answer> {
        let (Some(vlm), Some(before), Some(after)) = (
            &self.vlm,
            &request.before.observation,
            &request.after.observation,
        ) else {
            checks.push(Check {
                name: "vlm".into(),
                passed: None,
                detail: "no outcome VLM or no before/after views".into(),
            });
            return None;
        };
        let mut last_err = None;
        for _ in 0..2 {
            match vlm.yes_no(question, before, after).await {
                Ok(yes) => {
                    checks.push(Check {
                        name: "vlm".into(),
                        passed: Some(yes),
                        detail: format!("VLM answered {}", if yes { "yes" } else { "no" }),
                    });
                    return Some(if yes { Answer::Yes } else { Answer::No });
                }
                Err(e) => last_err = Some(e),
            }
        }
        checks.push(Check {
            name: "vlm".into(),
            passed: None,
            detail: format!(
                "VLM failed twice ({})",
                last_err.map(|e| e.to_string()).unwrap_or_default()
            ),
        });
        None
    }
}

fn min_z(c: &PointCloud) -> Option<f32> {
    c.aabb().map(|(lo, _)| lo.z)
}

fn nearest_distance(p: &Point3, c: &PointCloud) -> Option<f32> {
    c.points().iter().map(|q| (q - p).norm()).reduce(f32::min)
}

fn check(name: &str, passed: Option<bool>, detail: String) -> Check {
    Check {
        name: name.into(),
        passed,
        detail,
    }
}

/// The geometric answer: Yes when every check passed, No when any failed, Unknown when
/// none failed but some could not be measured.
pub fn geometric_answer(req: &OutcomeRequest, cfg: &OutcomeConfig) -> (Answer, Vec<Check>) {
    let (before, after) = (&req.before, &req.after);
    let mut checks = Vec::new();
    match req.verb {
        Verb::PickUp => {
            checks.push(check(
                "holding",
                Some(after.gripper.holding),
                format!(
                    "gripper {} an object",
                    if after.gripper.holding {
                        "holds"
                    } else {
                        "does not hold"
                    }
                ),
            ));
            // it stood at its place before the skill: a place a fresh view already saw
            // as free space is not where the fingers found what they hold (the map was
            // out of date: something else was taken, a bowl's rim for an apple)
            if let Some((o, free)) = before.prior_place.and_then(|o| {
                o.seen_free(cfg.min_seen_points, cfg.left_place_fraction)
                    .map(|free| (o, free))
            }) {
                let share = o.vacated_share().unwrap_or(0.0);
                checks.push(check(
                    "was_there",
                    Some(!free),
                    format!(
                        "{:.0} % of the object's place was free space before the skill ({} of {} points judged; it was there below {:.0} %)",
                        share * 100.0,
                        o.vacated,
                        o.judged(),
                        cfg.left_place_fraction * 100.0
                    ),
                ));
            }
            let lift = match (
                before.object_cloud.as_ref().and_then(min_z),
                after.object_cloud.as_ref().and_then(min_z),
            ) {
                (Some(b), Some(a)) => {
                    let d = a - b;
                    check(
                        "lifted",
                        Some(d >= cfg.lift_height),
                        format!(
                            "object bottom rose {:.3} m (needs {:.3})",
                            d, cfg.lift_height
                        ),
                    )
                }
                _ => match after
                    .prior_place
                    .map(|o| (o, o.seen_free(cfg.min_seen_points, cfg.left_place_fraction)))
                {
                    Some((o, Some(free))) => {
                        let share = o.vacated_share().unwrap_or(0.0);
                        check(
                            "left_place",
                            Some(free),
                            format!(
                                "{:.0} % of the object's place is free space now ({} of {} points judged; needs {:.0} %)",
                                share * 100.0,
                                o.vacated,
                                o.judged(),
                                cfg.left_place_fraction * 100.0
                            ),
                        )
                    }
                    Some((o, None)) => check(
                        "left_place",
                        None,
                        format!(
                            "the object's place is hidden: {} points judged, {} occluded (needs {})",
                            o.judged(),
                            o.occluded,
                            cfg.min_seen_points
                        ),
                    ),
                    None => check("lifted", None, "object not seen before and after".into()),
                },
            };
            checks.push(lift);
        }
        Verb::Place => {
            checks.push(check(
                "released",
                Some(!after.gripper.holding),
                format!(
                    "gripper {}",
                    if after.gripper.holding {
                        "still holds an object"
                    } else {
                        "is open"
                    }
                ),
            ));
            let relation = req.target.as_ref().map_or(Relation::On, |t| t.relation);
            let placed = match (&after.object_cloud, &after.target_cloud) {
                (Some(obj), Some(tgt)) => match (obj.aabb(), obj.centroid(), tgt.aabb()) {
                    (Some((olo, _)), Some(oc), Some((tlo, thi))) => {
                        let tol = cfg.contact_tolerance;
                        let inside_xy = oc.x >= tlo.x - tol
                            && oc.x <= thi.x + tol
                            && oc.y >= tlo.y - tol
                            && oc.y <= thi.y + tol;
                        match relation {
                            Relation::On => {
                                let gap = olo.z - thi.z;
                                check(
                                    "on_target",
                                    Some(inside_xy && gap.abs() <= tol),
                                    format!(
                                        "object bottom {:.3} m from the target top, centre {} its footprint",
                                        gap,
                                        if inside_xy { "over" } else { "outside" }
                                    ),
                                )
                            }
                            Relation::In => {
                                // a fresh view sees an object in a container from above:
                                // its visible points may all lie at the rim, so its
                                // bottom, not its centre, must be below the rim
                                let inside_z = (oc.z >= tlo.z - tol && oc.z <= thi.z + tol)
                                    || (olo.z >= tlo.z - tol && olo.z <= thi.z + tol);
                                check(
                                    "in_target",
                                    Some(inside_xy && inside_z),
                                    format!(
                                        "object centre {} the target's bounds",
                                        if inside_xy && inside_z {
                                            "inside"
                                        } else {
                                            "outside"
                                        }
                                    ),
                                )
                            }
                        }
                    }
                    _ => check("on_target", None, "empty object or target cloud".into()),
                },
                _ => check(
                    "on_target",
                    None,
                    "object or target not seen after placing".into(),
                ),
            };
            checks.push(placed);
            let away = match (after.gripper.tool_position, &after.object_cloud) {
                (Some(tcp), Some(obj)) => match nearest_distance(&tcp, obj) {
                    Some(d) => check(
                        "gripper_away",
                        Some(d >= cfg.gripper_clearance),
                        format!(
                            "tool {:.3} m from the object (needs {:.3})",
                            d, cfg.gripper_clearance
                        ),
                    ),
                    None => check("gripper_away", None, "empty object cloud".into()),
                },
                _ => check(
                    "gripper_away",
                    None,
                    "tool position or object unknown".into(),
                ),
            };
            checks.push(away);
        }
        Verb::Open | Verb::Close => {
            let c = match after.articulation {
                Some(a) if a.upper > a.lower => {
                    let tol = cfg.articulation_tolerance * (a.upper - a.lower);
                    let (ok, limit) = if req.verb == Verb::Open {
                        (a.position >= a.upper - tol, a.upper)
                    } else {
                        (a.position <= a.lower + tol, a.lower)
                    };
                    check(
                        "articulation",
                        Some(ok),
                        format!(
                            "joint at {:.3}, limit {:.3}, tolerance {:.3}",
                            a.position, limit, tol
                        ),
                    )
                }
                Some(a) => check(
                    "articulation",
                    None,
                    format!("joint limits [{}, {}] are not a range", a.lower, a.upper),
                ),
                None => match after.joint_travel {
                    Some(t) if t.support >= cfg.min_seen_points && t.commanded.abs() > 1e-6 => {
                        let share = t.measured / t.commanded;
                        check(
                            "joint_travel",
                            Some(share >= cfg.min_travel_fraction),
                            format!(
                                "the part moved {:.3} along its joint, {:.0} % of the {:.3} commanded (needs {:.0} %; {} points matched)",
                                t.measured,
                                share * 100.0,
                                t.commanded,
                                cfg.min_travel_fraction * 100.0,
                                t.support
                            ),
                        )
                    }
                    Some(t) => check(
                        "joint_travel",
                        None,
                        format!(
                            "the part is not seen well enough: {} points matched (needs {})",
                            t.support, cfg.min_seen_points
                        ),
                    ),
                    None => check("articulation", None, "joint state not observed".into()),
                },
            };
            checks.push(c);
        }
        Verb::TurnOn | Verb::TurnOff | Verb::Press => {
            let want = req.verb != Verb::TurnOff;
            checks.push(match after.switch_on {
                Some(on) => check(
                    "switch",
                    Some(on == want),
                    format!("device is {}", if on { "on" } else { "off" }),
                ),
                None => check(
                    "switch",
                    None,
                    "switch state not observable; configure the outcome VLM".into(),
                ),
            });
            if let Some(reached) = after.contact {
                checks.push(check(
                    "contact",
                    Some(reached),
                    format!(
                        "the push {} the part",
                        if reached { "reached" } else { "did not reach" }
                    ),
                ));
            }
        }
    }
    let answer = if checks.iter().any(|c| c.passed == Some(false)) {
        Answer::No
    } else if checks.iter().all(|c| c.passed == Some(true)) {
        Answer::Yes
    } else {
        Answer::Unknown
    };
    (answer, checks)
}

#[cfg(test)]
mod tests {
    use super::*;
    use asp_core::models::ModelError;
    use asp_core::{Image, Point3};
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn cloud(center: [f32; 3], half: f32) -> PointCloud {
        let mut pts = Vec::new();
        for i in 0..5 {
            for j in 0..5 {
                for k in 0..5 {
                    let f = |n: i32| (n as f32 / 2.0 - 1.0) * half;
                    pts.push(Point3::new(
                        center[0] + f(i),
                        center[1] + f(j),
                        center[2] + f(k),
                    ));
                }
            }
        }
        PointCloud::new("map", pts)
    }

    fn snap(obj: Option<PointCloud>, holding: bool) -> Snapshot {
        Snapshot {
            object_cloud: obj,
            target_cloud: None,
            gripper: GripperSnapshot {
                holding,
                tool_position: None,
            },
            ..Snapshot::default()
        }
    }

    fn req(verb: Verb, before: Snapshot, after: Snapshot) -> OutcomeRequest {
        OutcomeRequest {
            step: StepId(42),
            verb,
            object: ObjectKey::new("mug_0").unwrap(),
            object_name: "the red mug".into(),
            device: None,
            target: None,
            before,
            after,
        }
    }

    fn geo() -> OutcomeVerifier {
        OutcomeVerifier::new(OutcomeConfig::default(), None)
    }

    /// A token from an accepting review of `skill` on `object`.
    fn token(skill: asp_core::Skill, object: &str) -> CommitToken {
        use crate::commit::{CommitEvidence, CommitGate, CommitRequest};
        let gate = CommitGate::new(
            asp_config::sections::verifier::GateConfig::default(),
            asp_config::sections::common::SafetyConfig::default(),
            "link_base",
            3,
        );
        let request = CommitRequest {
            skill,
            object: ObjectKey::new(object).unwrap(),
            frame: asp_core::FrameId::new("link_base"),
            targets: vec![Point3::new(0.3, 0.0, 0.1)],
            evidence: CommitEvidence::Object { points: 500 },
        };
        gate.review(&request, None).into_token().unwrap()
    }

    fn verdict_for(t: &CommitToken, verb: Verb, object: &str, answer: Answer) -> OutcomeVerdict {
        OutcomeVerdict {
            step: t.step(),
            verb,
            object: ObjectKey::new(object).unwrap(),
            question: String::new(),
            answer,
            method: OutcomeMethod::Geometric,
            checks: vec![],
            message: "m".into(),
            observed: None,
        }
    }

    #[test]
    fn received_verdicts_redeem_only_for_their_step_and_object() {
        use asp_core::Skill;
        let grasp = token(Skill::Grasp, "mug_0");
        let ok = verdict_for(&grasp, Verb::PickUp, "mug_0", Answer::Yes);
        let s = StepSuccess::redeem(&ok, &grasp).unwrap();
        assert_eq!((s.step(), s.object().as_str()), (grasp.step(), "mug_0"));
        let other = verdict_for(&grasp, Verb::PickUp, "bowl_0", Answer::Yes);
        assert!(matches!(
            StepSuccess::redeem(&other, &grasp),
            Err(OutcomeError::WrongStep { .. })
        ));
        let no = verdict_for(&grasp, Verb::PickUp, "mug_0", Answer::No);
        assert!(matches!(
            StepSuccess::redeem(&no, &grasp),
            Err(OutcomeError::NotSucceeded { .. })
        ));
        // a drop's token names the target; its verdict names the placed object
        let drop = token(Skill::Drop, "bowl_0");
        let placed = verdict_for(&drop, Verb::Place, "apple_0", Answer::Yes);
        assert_eq!(
            StepSuccess::redeem(&placed, &drop)
                .unwrap()
                .object()
                .as_str(),
            "apple_0"
        );
        // … but only for its own step
        let mut late = placed.clone();
        late.step = StepId(drop.step().0 + 1);
        assert!(StepSuccess::redeem(&late, &drop).is_err());
        // and a pick-up verdict about another object does not pass for a drop token
        let wrong_verb = verdict_for(&drop, Verb::PickUp, "apple_0", Answer::Yes);
        assert!(StepSuccess::redeem(&wrong_verb, &drop).is_err());
    }

    #[test]
    fn questions_follow_vla2() {
        let mut r = req(Verb::PickUp, snap(None, false), snap(None, false));
        assert_eq!(
            r.question(),
            "Has the red mug been grasped and lifted off any surface?"
        );
        r.verb = Verb::Place;
        r.target = Some(PlaceTarget {
            key: ObjectKey::new("bowl_0").unwrap(),
            name: "the bowl".into(),
            relation: Relation::In,
        });
        assert_eq!(
            r.question(),
            "Has the red mug been placed in the bowl and is the gripper away?"
        );
        r.verb = Verb::TurnOff;
        assert_eq!(r.question(), "Has the red mug been turned off?");
        r.verb = Verb::Open;
        assert_eq!(r.question(), "Has the red mug been fully opened?");
    }

    #[tokio::test]
    async fn pick_up_needs_holding_and_lift() {
        let before = snap(Some(cloud([0.5, 0.0, 0.05], 0.04)), false);
        let lifted = snap(Some(cloud([0.5, 0.0, 0.15], 0.04)), true);
        let out = geo()
            .check(&req(Verb::PickUp, before.clone(), lifted))
            .await;
        let Outcome::Succeeded { success, verdict } = out else {
            panic!("{out:?}")
        };
        assert_eq!(success.step(), StepId(42));
        assert_eq!(verdict.method, OutcomeMethod::Geometric);
        // holding, but the object only rose 1 cm
        let barely = snap(Some(cloud([0.5, 0.0, 0.06], 0.04)), true);
        let out = geo()
            .check(&req(Verb::PickUp, before.clone(), barely))
            .await;
        assert_eq!(out.verdict().answer, Answer::No);
        assert!(
            out.verdict().message.contains("rose 0.010"),
            "{}",
            out.verdict().message
        );
        // lifted, but nothing in the gripper (knocked up and away)
        let dropped = snap(Some(cloud([0.5, 0.0, 0.15], 0.04)), false);
        assert_eq!(
            geo()
                .check(&req(Verb::PickUp, before.clone(), dropped))
                .await
                .verdict()
                .answer,
            Answer::No
        );
        // object not seen after: cannot tell, and that is not success
        let unseen = snap(None, true);
        let out = geo().check(&req(Verb::PickUp, before, unseen)).await;
        assert_eq!(out.verdict().answer, Answer::Unknown);
        assert!(matches!(out, Outcome::NotSucceeded(_)));
    }

    #[tokio::test]
    async fn place_checks_support_release_and_clearance() {
        let table_top = 0.40;
        let plate = cloud([0.5, 0.0, table_top - 0.01], 0.01 / 1.0);
        let mut after = snap(Some(cloud([0.5, 0.0, table_top + 0.04], 0.04)), false);
        after.target_cloud = Some(plate.clone());
        after.gripper.tool_position = Some(Point3::new(0.5, 0.0, 0.60));
        let mut r = req(Verb::Place, snap(None, true), after.clone());
        r.target = Some(PlaceTarget {
            key: ObjectKey::new("plate_0").unwrap(),
            name: "the plate".into(),
            relation: Relation::On,
        });
        assert_eq!(geo().check(&r).await.verdict().answer, Answer::Yes);
        // gripper still touching the object
        r.after.gripper.tool_position = Some(Point3::new(0.5, 0.0, table_top + 0.09));
        let v = geo().check(&r).await.verdict().clone();
        assert_eq!(v.answer, Answer::No);
        assert!(
            v.checks
                .iter()
                .any(|c| c.name == "gripper_away" && c.passed == Some(false))
        );
        // object floating 10 cm above the plate
        r.after = after.clone();
        r.after.object_cloud = Some(cloud([0.5, 0.0, table_top + 0.14], 0.04));
        assert_eq!(geo().check(&r).await.verdict().answer, Answer::No);
        // beside the plate
        r.after = after;
        r.after.object_cloud = Some(cloud([0.8, 0.0, table_top + 0.04], 0.04));
        assert_eq!(geo().check(&r).await.verdict().answer, Answer::No);
    }

    #[tokio::test]
    async fn articulation_and_switch_checks() {
        let mut after = snap(None, false);
        after.articulation = Some(ArticulationState {
            position: 0.27,
            lower: 0.0,
            upper: 0.30,
        });
        let r = req(Verb::Open, snap(None, false), after.clone());
        assert_eq!(geo().check(&r).await.verdict().answer, Answer::Yes);
        let r = req(Verb::Close, snap(None, false), after.clone());
        assert_eq!(geo().check(&r).await.verdict().answer, Answer::No);
        after.articulation = Some(ArticulationState {
            position: 0.15,
            lower: 0.0,
            upper: 0.30,
        });
        let r = req(Verb::Open, snap(None, false), after.clone());
        assert_eq!(
            geo().check(&r).await.verdict().answer,
            Answer::No,
            "half open is not fully open"
        );
        after.switch_on = Some(true);
        assert_eq!(
            geo()
                .check(&req(Verb::TurnOn, snap(None, false), after.clone()))
                .await
                .verdict()
                .answer,
            Answer::Yes
        );
        assert_eq!(
            geo()
                .check(&req(Verb::TurnOff, snap(None, false), after.clone()))
                .await
                .verdict()
                .answer,
            Answer::No
        );
        after.switch_on = None;
        assert_eq!(
            geo()
                .check(&req(Verb::TurnOff, snap(None, false), after))
                .await
                .verdict()
                .answer,
            Answer::Unknown
        );
    }

    #[test]
    fn a_place_is_seen_free_only_from_enough_judged_points() {
        let o = |present, vacated, points| PlaceOccupancy {
            present,
            vacated,
            occluded: 0,
            points,
        };
        assert_eq!(o(4, 16, 40).seen_free(15, 0.6), Some(true));
        assert_eq!(o(10, 10, 40).seen_free(15, 0.6), Some(false));
        // at the line: free
        assert_eq!(o(8, 12, 40).seen_free(15, 0.6), Some(true));
        // 10 judged of 40: too few to tell, however free they are
        assert_eq!(o(0, 10, 40).seen_free(15, 0.6), None);
        // a small object: half its points are enough
        assert_eq!(o(0, 5, 9).seen_free(15, 0.6), Some(true));
    }

    #[tokio::test]
    async fn perceptual_checks_left_place_and_joint_travel() {
        // picked: the gripper holds it and most of its place is free space now
        let mut after = snap(None, true);
        after.prior_place = Some(PlaceOccupancy {
            present: 5,
            vacated: 45,
            occluded: 10,
            points: 80,
        });
        let r = req(Verb::PickUp, snap(None, false), after.clone());
        let v = geo().check(&r).await.verdict().clone();
        assert_eq!(v.answer, Answer::Yes, "{}", v.message);
        // the gripper holds something, but the object is still where it stood
        after.prior_place = Some(PlaceOccupancy {
            present: 40,
            vacated: 10,
            occluded: 0,
            points: 50,
        });
        let r = req(Verb::PickUp, snap(None, false), after.clone());
        assert_eq!(geo().check(&r).await.verdict().answer, Answer::No);
        // its place hidden: cannot tell, which is not a success
        after.prior_place = Some(PlaceOccupancy {
            present: 2,
            vacated: 3,
            occluded: 60,
            points: 65,
        });
        let r = req(Verb::PickUp, snap(None, false), after.clone());
        assert_eq!(geo().check(&r).await.verdict().answer, Answer::Unknown);
        // a thumbtack is a few points: most of them judged is enough
        after.prior_place = Some(PlaceOccupancy {
            present: 0,
            vacated: 7,
            occluded: 0,
            points: 9,
        });
        let r = req(Verb::PickUp, snap(None, false), after.clone());
        assert_eq!(geo().check(&r).await.verdict().answer, Answer::Yes);
        // the same, but a look before the skill already saw its place free: what the
        // gripper holds is not it (a map out of date)
        let mut before = snap(None, false);
        before.prior_place = Some(PlaceOccupancy {
            present: 1,
            vacated: 20,
            occluded: 0,
            points: 30,
        });
        let r = req(Verb::PickUp, before.clone(), after.clone());
        let v = geo().check(&r).await.verdict().clone();
        assert_eq!(v.answer, Answer::No, "{}", v.message);
        assert!(
            v.message.contains("free space before the skill"),
            "{}",
            v.message
        );
        // seen where the map had it before: the pick stands
        before.prior_place = Some(PlaceOccupancy {
            present: 20,
            vacated: 1,
            occluded: 0,
            points: 30,
        });
        let r = req(Verb::PickUp, before, after);
        assert_eq!(geo().check(&r).await.verdict().answer, Answer::Yes);

        // opened: the part moved most of the commanded travel along its joint
        let mut after = snap(None, false);
        after.joint_travel = Some(JointTravel {
            measured: 0.2,
            commanded: 0.25,
            support: 80,
        });
        let r = req(Verb::Open, snap(None, false), after.clone());
        assert_eq!(geo().check(&r).await.verdict().answer, Answer::Yes);
        after.joint_travel = Some(JointTravel {
            measured: 0.02,
            commanded: 0.25,
            support: 80,
        });
        let r = req(Verb::Open, snap(None, false), after.clone());
        assert_eq!(geo().check(&r).await.verdict().answer, Answer::No);
        // closing commands a negative travel
        after.joint_travel = Some(JointTravel {
            measured: -0.2,
            commanded: -0.25,
            support: 80,
        });
        let r = req(Verb::Close, snap(None, false), after.clone());
        assert_eq!(geo().check(&r).await.verdict().answer, Answer::Yes);
        // too few points matched anywhere: cannot tell
        after.joint_travel = Some(JointTravel {
            measured: 0.2,
            commanded: 0.25,
            support: 3,
        });
        let r = req(Verb::Open, snap(None, false), after);
        assert_eq!(geo().check(&r).await.verdict().answer, Answer::Unknown);
    }

    #[tokio::test]
    async fn a_press_needs_contact_and_the_vlm_yes() {
        let scripted = |answers: Vec<Result<bool, ModelError>>| {
            OutcomeVerifier::new(
                OutcomeConfig::default(),
                Some(Arc::new(ScriptedVlm {
                    answers: std::sync::Mutex::new(answers),
                    asked: AtomicUsize::new(0),
                })),
            )
        };
        let mut before = snap(None, false);
        let mut after = snap(None, false);
        before.observation = Some(obs());
        after.observation = Some(obs());
        after.contact = Some(true);
        let r = req(Verb::Press, before.clone(), after.clone());
        assert_eq!(r.question(), "Has the red mug been pressed?");
        let v = scripted(vec![Ok(true)]).check(&r).await.verdict().clone();
        assert_eq!((v.answer, v.method), (Answer::Yes, OutcomeMethod::Vlm));
        assert!(v.checks.iter().any(|c| c.name == "contact"));
        assert_eq!(
            scripted(vec![Ok(false)]).check(&r).await.verdict().answer,
            Answer::No
        );
        // the push never reached the part: no, whatever a VLM would say
        after.contact = Some(false);
        let r = req(Verb::Press, before.clone(), after.clone());
        assert_eq!(
            scripted(vec![Ok(true)]).check(&r).await.verdict().answer,
            Answer::No
        );
        // not pressed: was anything else? a second question tells a wrong key from a
        // push on the housing
        after.contact = Some(true);
        let mut r = req(Verb::Press, before.clone(), after.clone());
        r.device = Some("the red mug".into());
        let v = scripted(vec![Ok(false), Ok(true)])
            .check(&r)
            .await
            .verdict()
            .clone();
        assert_eq!(v.answer, Answer::No);
        assert!(v.message.contains(SIDE_EFFECT), "{}", v.message);
        let v = scripted(vec![Ok(false), Ok(false)])
            .check(&r)
            .await
            .verdict()
            .clone();
        assert_eq!(v.answer, Answer::No);
        assert!(!v.message.contains(SIDE_EFFECT), "{}", v.message);
        assert!(
            v.checks
                .iter()
                .any(|c| c.name == "side_effect" && c.passed == Some(true))
        );
        // no VLM: the press cannot be seen
        let r = req(Verb::Press, before, after);
        assert_eq!(geo().check(&r).await.verdict().answer, Answer::Unknown);
    }

    /// A VLM that answers from a script and counts questions.
    struct ScriptedVlm {
        answers: std::sync::Mutex<Vec<Result<bool, ModelError>>>,
        asked: AtomicUsize,
    }

    #[async_trait::async_trait]
    impl OutcomeVlm for ScriptedVlm {
        async fn yes_no(
            &self,
            question: &str,
            _: &Observation,
            _: &Observation,
        ) -> Result<bool, ModelError> {
            assert!(question.contains("the red mug"), "{question}");
            self.asked.fetch_add(1, Ordering::SeqCst);
            self.answers.lock().unwrap().remove(0)
        }
    }

    fn obs() -> Observation {
        Observation {
            rgb: Image::filled(2, 2, [0, 0, 0]),
            depth: None,
            ground_truth: None,
        }
    }

    #[tokio::test]
    async fn vlm_backend_answers_and_falls_back_after_two_failures() {
        let cfg = OutcomeConfig {
            backend: OutcomeBackend::Vlm,
            ..OutcomeConfig::default()
        };
        let mut before = snap(Some(cloud([0.5, 0.0, 0.05], 0.04)), false);
        let mut after = snap(Some(cloud([0.5, 0.0, 0.15], 0.04)), true);
        before.observation = Some(obs());
        after.observation = Some(obs());
        let r = req(Verb::PickUp, before, after);
        // the VLM says no although the geometry says yes: the VLM is the configured judge
        let vlm = Arc::new(ScriptedVlm {
            answers: std::sync::Mutex::new(vec![Ok(false)]),
            asked: AtomicUsize::new(0),
        });
        let v = OutcomeVerifier::new(cfg.clone(), Some(vlm.clone()));
        let out = v.check(&r).await;
        assert_eq!(out.verdict().method, OutcomeMethod::Vlm);
        assert_eq!(out.verdict().answer, Answer::No);
        // failure, then success: one retry
        let vlm = Arc::new(ScriptedVlm {
            answers: std::sync::Mutex::new(vec![
                Err(ModelError::Backend {
                    model: "vlm".into(),
                    message: "timeout".into(),
                }),
                Ok(true),
            ]),
            asked: AtomicUsize::new(0),
        });
        let out = OutcomeVerifier::new(cfg.clone(), Some(vlm.clone()))
            .check(&r)
            .await;
        assert_eq!(vlm.asked.load(Ordering::SeqCst), 2);
        assert!(matches!(out, Outcome::Succeeded { .. }));
        // two failures: geometric fallback, which says yes here
        let err = || {
            Err(ModelError::Backend {
                model: "vlm".into(),
                message: "down".into(),
            })
        };
        let vlm = Arc::new(ScriptedVlm {
            answers: std::sync::Mutex::new(vec![err(), err()]),
            asked: AtomicUsize::new(0),
        });
        let out = OutcomeVerifier::new(cfg, Some(vlm)).check(&r).await;
        assert_eq!(out.verdict().method, OutcomeMethod::Geometric);
        assert_eq!(out.verdict().answer, Answer::Yes);
        assert!(out.verdict().checks[0].detail.contains("failed twice"));
    }

    #[test]
    fn verdict_serialises() {
        let v = OutcomeVerdict {
            step: StepId(3),
            verb: Verb::Place,
            object: ObjectKey::new("mug_0").unwrap(),
            question: "q".into(),
            answer: Answer::Unknown,
            method: OutcomeMethod::Geometric,
            checks: vec![check("x", None, "y".into())],
            message: "m".into(),
            observed: Some(ObservedSpan {
                before: 1.5,
                after: 4.25,
            }),
        };
        let json = serde_json::to_value(&v).unwrap();
        assert_eq!(json["answer"], "unknown");
        assert_eq!(serde_json::from_value::<OutcomeVerdict>(json).unwrap(), v);
    }
}
