//! The agent's tool backend over the node ports (SPEC §1.3): retrieval and spatial tools
//! go to the object map, `interact` to affordance detection and then the skill executor,
//! skills to the executor (part skills after detecting their part), `go_to` to
//! navigation, remapping to a map rebuild.
//!
//! It keeps a [`Journal`] of what every call found (retrievals, affordances, skill and
//! go_to reports) for episode reports; the agent's own events carry the verdicts.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use asp_affordance::{AffordanceReport, DetectedAffordance};
use asp_agent::{ActionReport, Found, ToolBackend, ToolContext, ToolFailure, ToolResult, Verdict};
use asp_core::{FailureKind, ObjectKey, Recollection, Skill, Within};
use asp_perception::Retrieval;
use asp_skills::{HeldObject, SkillReport, SkillRequest};
use asp_verify::Relation;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// Height assumed of a held object the map has no cloud of, metres (a mug, a bottle
/// lying down; a tall one standing is taller).
const UNKNOWN_CARRIED_HEIGHT: f32 = 0.15;

use crate::ports::{
    AffordancePort, AffordanceQuery, CarriedSize, GoToGoal, GoToReply, MapObject, MapSummary,
    NavigationPort, ObjectMapPort, ServiceError, SkillPort, SkillReply, SpatialAnswer,
    SpatialQuery,
};

/// What one backend call found, for episode reports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum JournalEntry {
    Retrieval {
        call_index: u32,
        retrieval: Retrieval,
    },
    Affordances {
        call_index: u32,
        object: ObjectKey,
        action: String,
        report: AffordanceReport,
    },
    Skill {
        call_index: u32,
        request: Box<SkillRequest>,
        reply: Box<SkillReply>,
    },
    GoTo {
        call_index: u32,
        goal: GoToGoal,
        reply: Box<GoToReply>,
    },
    Remap {
        call_index: u32,
        summary: MapSummary,
    },
    /// A fresh look at an object an action had failed on.
    Look {
        call_index: u32,
        found: Box<crate::ports::RelocalizedObject>,
    },
}

/// The entries of one or more goals, in call order: at most `capacity` of them, the
/// oldest dropped first (a node that runs all day must not grow).
#[derive(Debug, Clone)]
pub struct Journal(Arc<Mutex<JournalInner>>);

#[derive(Debug)]
struct JournalInner {
    entries: std::collections::VecDeque<JournalEntry>,
    capacity: usize,
    dropped: u64,
}

impl Default for Journal {
    fn default() -> Self {
        Self::with_capacity(Self::DEFAULT_CAPACITY)
    }
}

impl Journal {
    /// `agent_node.limits.journal_entries`' default.
    pub const DEFAULT_CAPACITY: usize = 1024;

    /// A journal that keeps the last `capacity` entries (at least one).
    pub fn with_capacity(capacity: usize) -> Self {
        Self(Arc::new(Mutex::new(JournalInner {
            entries: std::collections::VecDeque::new(),
            capacity: capacity.max(1),
            dropped: 0,
        })))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, JournalInner> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn push(&self, e: JournalEntry) {
        let mut j = self.lock();
        if j.entries.len() == j.capacity {
            j.entries.pop_front();
            j.dropped += 1;
        }
        j.entries.push_back(e);
    }

    /// The entries kept, oldest first.
    pub fn entries(&self) -> Vec<JournalEntry> {
        self.lock().entries.iter().cloned().collect()
    }

    /// How many old entries were dropped to stay within the capacity.
    pub fn dropped(&self) -> u64 {
        self.lock().dropped
    }

    pub fn clear(&self) {
        self.lock().entries.clear();
    }
}

/// The tool backend over the ports.
pub struct GraphBackend {
    map: Arc<dyn ObjectMapPort>,
    affordance: Arc<dyn AffordancePort>,
    skills: Arc<dyn SkillPort>,
    navigation: Option<Arc<dyn NavigationPort>>,
    journal: Journal,
    /// The camera a fresh look uses.
    look_camera: String,
    /// Objects an action failed on since they were last seen: the next action on one
    /// looks at it again first, so a retry works from new evidence, not the same view.
    stale: Mutex<BTreeSet<ObjectKey>>,
}

impl std::fmt::Debug for GraphBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GraphBackend")
            .field("navigation", &self.navigation.is_some())
            .finish_non_exhaustive()
    }
}

fn tool_failure(e: ServiceError) -> ToolFailure {
    ToolFailure::new(e.failure.kind, e.message).with_failure(e.failure)
}

/// The words an action on a part skill is described with, for affordance detection.
fn action_for(skill: Skill, name: &str) -> String {
    match skill {
        Skill::Grasp | Skill::GraspPart => format!("pick up {name} by its handle"),
        Skill::TipPush => format!("press {name}"),
        Skill::PinchPull => format!("pull out {name}"),
        Skill::HookPull => format!("pull {name} open"),
        Skill::Open => format!("open {name}"),
        Skill::Close => format!("close {name}"),
        Skill::Place => format!("place something on {name}"),
        Skill::Drop => format!("drop something into {name}"),
    }
}

/// The verdicts of a skill report: the commit gate's and the outcome check's.
pub fn skill_verdicts(report: &SkillReport) -> Vec<Verdict> {
    let mut out = Vec::new();
    if let Some(c) = &report.commit {
        out.push(Verdict {
            stage: "gate".into(),
            check: format!("may {} commit on {}?", c.skill, c.object),
            passed: c.accepted,
            score: c.diagnostics.as_ref().map(|d| d.v),
            detail: c.message.clone(),
        });
    }
    if let Some(o) = &report.outcome {
        out.push(Verdict {
            stage: "outcome".into(),
            check: o.question.clone(),
            passed: o.succeeded(),
            score: None,
            detail: o.message.clone(),
        });
    }
    out
}

/// The check of a go_to that arrived: the cameras found the object again from where
/// the base stopped (re-detection on arrival), not the odometry's word alone.
pub fn arrival_verdict(obj: &ObjectKey, reply: &GoToReply) -> Verdict {
    let found = reply.relocalized.as_ref();
    Verdict {
        stage: ARRIVAL.into(),
        check: format!("is {obj} in view from where the base stopped?"),
        passed: found.is_some(),
        score: found.map(|f| f64::from(f.score)),
        detail: found.map_or_else(
            || "not found again on arrival".to_owned(),
            |f| {
                format!(
                    "found again {:.2} m from where the map had it (similarity {:.2})",
                    f.shift, f.score
                )
            },
        ),
    }
}

/// The stage of [`arrival_verdict`].
pub const ARRIVAL: &str = "arrival";

/// Whether a goal ended in a success the verifier confirmed: the agent completed it, at
/// least one step was checked (a skill's outcome where a skill ran, else a go_to's
/// arrival: going there was the goal), the last check passed and so did the last
/// outcome check (a drive after a failed place proves nothing of the place), and no push
/// pressed something else (a press cannot be undone: a wrong key stays typed), and no
/// choice the goal rests on was left unconfirmed (the only one found of "the cup on the
/// left"). The agent's own word ("SUCCESS") is not enough: only the verifier declares a
/// step succeeded.
pub fn verified_success(report: &asp_agent::GoalReport) -> bool {
    matches!(report.status, asp_agent::GoalStatus::Completed)
        && checks_confirm(&report.verdicts())
        && report.unconfirmed().is_empty()
}

/// The verdicts' part of [`verified_success`].
fn checks_confirm(verdicts: &[&Verdict]) -> bool {
    let outcomes = || verdicts.iter().filter(|v| v.stage == "outcome");
    let checks = || {
        verdicts
            .iter()
            .filter(|v| v.stage == "outcome" || v.stage == ARRIVAL)
    };
    // a skill ran (its commit was gated): its outcome is what the goal rests on
    let skilled = verdicts
        .iter()
        .any(|v| v.stage == "gate" || v.stage == "outcome");
    checks().next_back().is_some_and(|v| v.passed)
        && (!skilled || outcomes().next_back().is_some_and(|v| v.passed))
        && !outcomes().any(|v| v.detail.contains(asp_verify::SIDE_EFFECT))
}

/// The verdict of an affordance grounding (the A-Harness commit rule).
fn grounding_verdict(a: &DetectedAffordance, object: &ObjectKey) -> Verdict {
    Verdict {
        stage: "grounding".into(),
        check: format!(
            "is the {} of {object} grounded for {}?",
            a.affordance.part, a.affordance.skill
        ),
        passed: a.committed,
        score: Some(a.summary.v),
        detail: format!(
            "ω {:.2}, ζ {:.2}, μ {:.2}, {} skill call(s)",
            a.summary.omega, a.summary.zeta, a.summary.mu, a.summary.skill_calls
        ),
    }
}

impl GraphBackend {
    pub fn new(
        map: Arc<dyn ObjectMapPort>,
        affordance: Arc<dyn AffordancePort>,
        skills: Arc<dyn SkillPort>,
        navigation: Option<Arc<dyn NavigationPort>>,
    ) -> Self {
        Self {
            map,
            affordance,
            skills,
            navigation,
            journal: Journal::default(),
            look_camera: "wrist".into(),
            stale: Mutex::new(BTreeSet::new()),
        }
    }

    /// The camera a fresh look at an object uses (`object_map_node.mapping.cameras[0]`).
    pub fn with_look_camera(mut self, camera: impl Into<String>) -> Self {
        self.look_camera = camera.into();
        self
    }

    fn stale(&self) -> std::sync::MutexGuard<'_, BTreeSet<ObjectKey>> {
        self.stale
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Remembers that an action on `key` failed in a way another look may help with.
    fn note_failure<T>(&self, key: &ObjectKey, r: &ToolResult<T>) {
        if let Err(f) = r
            && !matches!(
                f.failure.kind,
                FailureKind::Cancelled
                    | FailureKind::Precondition
                    | FailureKind::NotAllowed
                    | FailureKind::InvalidArgument
                    | FailureKind::UnknownObject
            )
        {
            self.stale().insert(key.clone());
        }
    }

    /// Looks at `key` again when an action on it failed since it was last seen. A look
    /// that finds nothing keeps the old view (the action then works from that); looks
    /// that say the object is not what was asked for end the call (the map withdrew it).
    async fn refresh(&self, key: &ObjectKey, ctx: &ToolContext) -> ToolResult<()> {
        if !self.stale().remove(key) {
            return Ok(());
        }
        match self.map.relocalize(key, &self.look_camera).await {
            Ok(Some(found)) => {
                tracing::info!(object = %key, shift = found.shift, "looked at the object again");
                self.journal.push(JournalEntry::Look {
                    call_index: ctx.call_index,
                    found: Box::new(found),
                });
            }
            Ok(None) => tracing::info!(object = %key, "another look did not find the object"),
            Err(e) if e.failure.kind == FailureKind::UnknownObject => {
                return Err(tool_failure(e));
            }
            Err(e) => tracing::warn!(object = %key, "cannot look at the object again: {e}"),
        }
        Ok(())
    }

    /// Records into `journal` (shared with whoever writes the report).
    pub fn with_journal(mut self, journal: Journal) -> Self {
        self.journal = journal;
        self
    }

    pub fn journal(&self) -> &Journal {
        &self.journal
    }

    async fn object(&self, key: &ObjectKey) -> ToolResult<MapObject> {
        self.map.object(key).await.map_err(tool_failure)
    }

    async fn spatial(&self, q: SpatialQuery) -> ToolResult<SpatialAnswer> {
        self.map.spatial(&q).await.map_err(tool_failure)
    }

    async fn number(&self, q: SpatialQuery) -> ToolResult<f64> {
        match self.spatial(q).await? {
            SpatialAnswer::Number(n) => Ok(n),
            SpatialAnswer::Truth(_) => Err(ToolFailure::new(
                FailureKind::Internal,
                "the map answered a truth value where a distance was asked",
            )),
        }
    }

    async fn truth(&self, q: SpatialQuery) -> ToolResult<bool> {
        match self.spatial(q).await? {
            SpatialAnswer::Truth(b) => Ok(b),
            SpatialAnswer::Number(_) => Err(ToolFailure::new(
                FailureKind::Internal,
                "the map answered a distance where a truth value was asked",
            )),
        }
    }

    async fn detect(
        &self,
        key: &ObjectKey,
        action: &str,
        skills: Vec<Skill>,
        ctx: &ToolContext,
    ) -> ToolResult<AffordanceReport> {
        let query = AffordanceQuery {
            key: key.clone(),
            action: action.to_owned(),
            skills,
        };
        let report = self
            .affordance
            .detect(&query, &ctx.cancel)
            .await
            .map_err(tool_failure)?;
        self.journal.push(JournalEntry::Affordances {
            call_index: ctx.call_index,
            object: key.clone(),
            action: action.to_owned(),
            report: report.clone(),
        });
        Ok(report)
    }

    /// The size of the held object as the map last saw it; seen from above, an object
    /// shows its top, so its height is from the surface it stood on.
    async fn carried_size(&self, held: &ObjectKey) -> CarriedSize {
        let unknown = CarriedSize {
            height: UNKNOWN_CARRIED_HEIGHT,
            radius: asp_skills::placement::UNKNOWN_HELD_RADIUS,
        };
        let Ok(o) = self.map.object(held).await else {
            return unknown;
        };
        let cloud = &o.object.point_cloud;
        let Some((lo, hi)) = cloud.aabb() else {
            return unknown;
        };
        let support = o
            .surroundings
            .as_ref()
            .and_then(|s| asp_skills::resting_surface(cloud, s))
            .unwrap_or(lo.z);
        CarriedSize {
            height: hi.z - support,
            radius: asp_skills::placement::footprint_radius(cloud.points())
                .unwrap_or(unknown.radius),
        }
    }

    /// The place/drop target's held object.
    async fn held(&self, ctx: &ToolContext) -> ToolResult<HeldObject> {
        let key = ctx.state.held_object.clone().ok_or_else(|| {
            ToolFailure::new(
                FailureKind::Precondition,
                "nothing is held: grasp an object before placing it",
            )
        })?;
        // the held object may have left the map (a rebuild keeps it, a lost key does not)
        let (name, cloud) = match self.map.object(&key).await {
            Ok(o) => (o.name, Some(o.object.point_cloud)),
            Err(_) => (format!("the {}", key.as_str().replace('_', " ")), None),
        };
        Ok(HeldObject {
            scene_names: vec![key.to_string()],
            key,
            name,
            cloud,
        })
    }

    /// A request for `skill` on `obj` with what the map knows of it.
    async fn request(
        &self,
        skill: Skill,
        obj: &MapObject,
        ctx: &ToolContext,
    ) -> ToolResult<SkillRequest> {
        let mut req = SkillRequest::new(
            skill,
            obj.key.clone(),
            obj.name.clone(),
            obj.object.point_cloud.clone(),
        )
        .with_scene_names([obj.key.to_string()]);
        req.obstacles = obj.surroundings.clone();
        if matches!(skill, Skill::Place | Skill::Drop) {
            req = req
                .with_held(self.held(ctx).await?)
                .with_relation(if skill == Skill::Drop {
                    Relation::In
                } else {
                    Relation::On
                });
        }
        Ok(req)
    }

    /// Runs a request and turns the executor's reply into the agent's terms.
    async fn run(
        &self,
        req: SkillRequest,
        mut verdicts: Vec<Verdict>,
        ctx: &ToolContext,
    ) -> ToolResult<ActionReport> {
        let skill = req.skill;
        let put_down = req.held.as_ref().map(|h| h.key.clone());
        let reply = self.skills.execute(req.clone(), &ctx.cancel).await;
        // the map follows what the robot put down, so its key still names it later
        if reply.succeeded
            && let (Some(key), Some([x, y, z])) = (put_down, reply.report.placed_at)
            && let Err(e) = self.map.moved(&key, asp_core::Point3::new(x, y, z)).await
        {
            tracing::warn!(key = %key, "the map did not take the placed object's new place: {e}");
        }
        self.journal.push(JournalEntry::Skill {
            call_index: ctx.call_index,
            request: Box::new(req),
            reply: Box::new(reply.clone()),
        });
        verdicts.extend(skill_verdicts(&reply.report));
        let holding = reply.report.holding;
        if reply.succeeded {
            Ok(ActionReport {
                holding: holding.unwrap_or(ctx.state.held_object.is_some()),
                skill: Some(skill),
                message: reply.report.message,
                verdicts,
            })
        } else {
            let failure = reply
                .failure
                .unwrap_or_else(|| asp_core::Failure::new(FailureKind::Internal));
            let mut f = ToolFailure::new(failure.kind, reply.report.message).with_failure(failure);
            f.holding = holding;
            f.verdicts = verdicts;
            Err(f)
        }
    }

    /// `interact` once: detect the affordances for the action, run the best one's skill.
    async fn interact_once(
        &self,
        obj: &ObjectKey,
        action: &str,
        ctx: &ToolContext,
    ) -> ToolResult<ActionReport> {
        let object = self.object(obj).await?;
        let report = self.detect(obj, action, Vec::new(), ctx).await?;
        let Some(best) = report.affordances.first() else {
            return Err(ToolFailure::new(
                FailureKind::Grounding,
                format!(
                    "found no part of {} to {action:?} (proposals: {}); look at it again or describe the action differently",
                    object.name,
                    report
                        .proposals
                        .iter()
                        .map(|p| format!("{} {}", p.skill, p.part))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
            .with_failure(asp_core::Failure::new(FailureKind::Grounding).retryable()));
        };
        let skill = best.affordance.skill;
        let verdicts = vec![grounding_verdict(best, obj)];
        let mut req = self.request(skill, &object, ctx).await?;
        if !matches!(skill, Skill::Grasp | Skill::Place | Skill::Drop) {
            req = req
                .with_affordance(best.affordance.clone())
                .with_grounding(best.summary.clone());
        }
        self.run(req, verdicts, ctx).await
    }

    /// A skill once: object skills on the map's view, part skills after detecting the
    /// part.
    async fn skill_once(
        &self,
        skill: Skill,
        obj: &ObjectKey,
        ctx: &ToolContext,
    ) -> ToolResult<ActionReport> {
        let object = self.object(obj).await?;
        match skill {
            Skill::Grasp | Skill::Place | Skill::Drop => {
                let req = self.request(skill, &object, ctx).await?;
                self.run(req, Vec::new(), ctx).await
            }
            _ => {
                let action = action_for(skill, &object.name);
                self.part_skill(skill, &object, &action, ctx).await
            }
        }
    }

    /// Detects the part for `skill` on `obj` and runs the skill on it.
    async fn part_skill(
        &self,
        skill: Skill,
        obj: &MapObject,
        action: &str,
        ctx: &ToolContext,
    ) -> ToolResult<ActionReport> {
        let report = self.detect(&obj.key, action, vec![skill], ctx).await?;
        let Some(found) = report
            .affordances
            .iter()
            .find(|a| a.affordance.skill == skill)
        else {
            let seen: Vec<String> = report
                .affordances
                .iter()
                .map(|a| format!("{} ({})", a.affordance.part, a.affordance.skill))
                .collect();
            return Err(ToolFailure::new(
                FailureKind::Grounding,
                format!(
                    "found no part of {} to {skill}{}; try interact with the action in words",
                    obj.name,
                    if seen.is_empty() {
                        String::new()
                    } else {
                        format!(" (found: {})", seen.join(", "))
                    }
                ),
            )
            .with_failure(asp_core::Failure::new(FailureKind::Grounding).retryable()));
        };
        let verdicts = vec![grounding_verdict(found, &obj.key)];
        let req = self
            .request(skill, obj, ctx)
            .await?
            .with_affordance(found.affordance.clone())
            .with_grounding(found.summary.clone());
        self.run(req, verdicts, ctx).await
    }
}

#[async_trait]
impl ToolBackend for GraphBackend {
    async fn object_retrieval(
        &self,
        query: &str,
        within: &Within,
        ctx: &ToolContext,
    ) -> ToolResult<Found> {
        let retrieval = self
            .map
            .retrieve_within(query, within)
            .await
            .map_err(tool_failure)?;
        let found = Found {
            keys: retrieval.keys.clone(),
            room: retrieval.room.clone(),
            storeys_counted_from: retrieval.storeys_counted_from,
        };
        self.journal.push(JournalEntry::Retrieval {
            call_index: ctx.call_index,
            retrieval,
        });
        Ok(found)
    }

    async fn recall_memory(
        &self,
        query: &str,
        within: &Within,
        _: &ToolContext,
    ) -> ToolResult<Recollection> {
        self.map
            .recollect(query, within)
            .await
            .map_err(tool_failure)
    }

    async fn distance_to(&self, obj: &ObjectKey, _: &ToolContext) -> ToolResult<f64> {
        self.number(SpatialQuery::DistanceTo { a: obj.clone() })
            .await
    }

    async fn distance_between(
        &self,
        a: &ObjectKey,
        b: &ObjectKey,
        _: &ToolContext,
    ) -> ToolResult<f64> {
        self.number(SpatialQuery::DistanceBetween {
            a: a.clone(),
            b: b.clone(),
        })
        .await
    }

    async fn left_of(&self, a: &ObjectKey, b: &ObjectKey, _: &ToolContext) -> ToolResult<bool> {
        self.truth(SpatialQuery::LeftOf {
            a: a.clone(),
            b: b.clone(),
        })
        .await
    }

    async fn right_of(&self, a: &ObjectKey, b: &ObjectKey, _: &ToolContext) -> ToolResult<bool> {
        self.truth(SpatialQuery::RightOf {
            a: a.clone(),
            b: b.clone(),
        })
        .await
    }

    async fn size_of(&self, obj: &ObjectKey, _: &ToolContext) -> ToolResult<f64> {
        self.number(SpatialQuery::SizeOf { a: obj.clone() }).await
    }

    async fn interact(
        &self,
        obj: &ObjectKey,
        action: &str,
        ctx: &ToolContext,
    ) -> ToolResult<ActionReport> {
        self.refresh(obj, ctx).await?;
        let r = self.interact_once(obj, action, ctx).await;
        self.note_failure(obj, &r);
        r
    }

    async fn go_to(
        &self,
        obj: &ObjectKey,
        action: &str,
        ctx: &ToolContext,
    ) -> ToolResult<ActionReport> {
        let Some(nav) = &self.navigation else {
            return Err(ToolFailure::new(
                FailureKind::NotAllowed,
                "this robot has no mobile base (agent_node.mobile is false)",
            ));
        };
        // carrying something to put down: the arm reaches less far out above a surface
        let carried = match &ctx.state.held_object {
            None => None,
            Some(held) => Some(self.carried_size(held).await),
        };
        let goal = GoToGoal {
            key: obj.clone(),
            action: action.to_owned(),
            carried,
        };
        let reply = nav.go_to(&goal, &ctx.cancel).await;
        self.journal.push(JournalEntry::GoTo {
            call_index: ctx.call_index,
            goal,
            reply: Box::new(reply.clone()),
        });
        if reply.arrived {
            Ok(ActionReport {
                holding: ctx.state.held_object.is_some(),
                skill: None,
                verdicts: vec![arrival_verdict(obj, &reply)],
                message: reply.message,
            })
        } else {
            let failure = reply
                .failure
                .unwrap_or_else(|| asp_core::Failure::new(FailureKind::Navigation));
            Err(ToolFailure::new(failure.kind, reply.message).with_failure(failure))
        }
    }

    async fn skill(
        &self,
        skill: Skill,
        obj: &ObjectKey,
        ctx: &ToolContext,
    ) -> ToolResult<ActionReport> {
        self.refresh(obj, ctx).await?;
        let r = self.skill_once(skill, obj, ctx).await;
        self.note_failure(obj, &r);
        r
    }

    async fn remap(&self, ctx: &ToolContext) -> ToolResult<()> {
        let summary = self
            .map
            .rebuild(ctx.state.held_object.as_ref())
            .await
            .map_err(tool_failure)?;
        // the rebuilt map is the fresh look (from the next mapping pose); looking once
        // more before the retry would spend the pose after it, and with two poses every
        // retry would work from the same view again. A kept (held) object was not seen
        // anew.
        self.stale().retain(|k| summary.kept_keys.contains(k));
        self.journal.push(JournalEntry::Remap {
            call_index: ctx.call_index,
            summary,
        });
        Ok(())
    }
}

#[cfg(test)]
mod verified_tests {
    use super::*;

    fn v(stage: &str, passed: bool) -> Verdict {
        Verdict {
            stage: stage.into(),
            check: String::new(),
            passed,
            score: None,
            detail: String::new(),
        }
    }

    fn confirm(vs: &[Verdict]) -> bool {
        checks_confirm(&vs.iter().collect::<Vec<_>>())
    }

    #[test]
    fn a_drive_alone_is_confirmed_by_its_arrival_a_skill_only_by_its_outcome() {
        // nothing checked: nothing confirmed
        assert!(!confirm(&[]));
        // "go to the sofa": found again on arrival, or not
        assert!(confirm(&[v(ARRIVAL, true)]));
        assert!(!confirm(&[v(ARRIVAL, false)]));
        // a pick: its outcome decides, whatever the approach's arrival said
        assert!(confirm(&[
            v(ARRIVAL, false),
            v("gate", true),
            v("outcome", true)
        ]));
        assert!(!confirm(&[
            v(ARRIVAL, true),
            v("gate", true),
            v("outcome", false)
        ]));
        // a gated skill whose outcome went unchecked is not confirmed by the drive
        assert!(!confirm(&[v(ARRIVAL, true), v("gate", true)]));
        // "pick up the cup and go to the table": both must hold
        assert!(confirm(&[
            v("gate", true),
            v("outcome", true),
            v(ARRIVAL, true)
        ]));
        assert!(!confirm(&[
            v("gate", true),
            v("outcome", true),
            v(ARRIVAL, false)
        ]));
        // a drive after a failed place proves nothing of the place
        assert!(!confirm(&[
            v("gate", true),
            v("outcome", false),
            v(ARRIVAL, true)
        ]));
    }
}

#[cfg(test)]
mod journal_tests {
    use super::*;
    use crate::ports::MapSummary;

    fn remap(i: u32) -> JournalEntry {
        JournalEntry::Remap {
            call_index: i,
            summary: MapSummary {
                objects: 0,
                keyframes: 0,
                kept_keys: Vec::new(),
            },
        }
    }

    #[test]
    fn the_journal_keeps_the_newest_entries_up_to_its_capacity() {
        let j = Journal::with_capacity(3);
        for i in 0..5 {
            j.push(remap(i));
        }
        let kept: Vec<u32> = j
            .entries()
            .iter()
            .map(|e| match e {
                JournalEntry::Remap { call_index, .. } => *call_index,
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(kept, [2, 3, 4]);
        assert_eq!(j.dropped(), 2);
        // clones share it
        let other = j.clone();
        other.push(remap(5));
        assert_eq!(j.entries().len(), 3);
    }
}
