//! The skill executor (SPEC §1.4): request → safety checks → plan → COMMIT → motions →
//! OUTCOME. See the crate notes for the guarantees.

use std::sync::{Arc, Mutex};

use asp_config::AspConfig;
use asp_config::sections::common::FramesConfig;
use asp_config::sections::skills::SkillExecutorConfig;
use asp_core::robot::{
    ArmMotion, CancellationToken, Gripper, GripperGoal, MotionKind, MoveItErrorCode, PoseGoal,
    RobotError,
};
use asp_core::{Failure, FailureKind, FrameId, Isometry3, ObjectKey, Real, Skill, Transform};
use asp_verify::{
    CommitEvidence, CommitRequest, CommitToken, CommitVerdict, CorrectiveAction, GripperSnapshot,
    Outcome, OutcomeRequest, PlaceTarget, RejectReason, Review, Snapshot,
};
use serde::{Deserialize, Serialize};
use tracing::{Instrument, debug, info, info_span, warn};

use crate::actuators::Actuators;
use crate::codes::{is_planning_refusal, moveit_feedback, ours};
use crate::error::SkillError;
use crate::estop::EStopListener;
use crate::geometry::position;
use crate::grasp::GraspParams;
use crate::observe::{ObservePhase, ObserveRequest, Observed, SceneObserver};
use crate::plan::{
    Contacts, OnFail, PRESS_STEP, PlanContext, PlanError, SkillPlan, Step, cloud_bottom, plan,
};
use crate::request::{
    AttemptLog, SkillReport, SkillRequest, SkillResult, our_failure, outcome_failure,
};
use crate::safety::{Refusal, SafetyGuard};
use crate::verifier::Verifier;

/// Counts of what one request did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ExecStats {
    /// Pose goals sent (one planner call each).
    pub planner_calls: u32,
    pub gripper_commands: u32,
    /// Candidate poses geometry produced.
    pub candidates: usize,
    /// Attempts (candidates) started.
    pub attempts_tried: usize,
    /// Planning time the planner reported, seconds.
    pub planning_time_s: f64,
}

/// What the executor remembers about the object in its gripper.
#[derive(Debug, Clone, PartialEq)]
struct HeldRecord {
    key: ObjectKey,
    /// How far the object's bottom hangs below the tool point.
    bottom_below_tool: Real,
    scene_names: Vec<String>,
}

/// The skill executor: see the crate documentation.
pub struct SkillExecutor {
    act: Actuators,
    verifier: Arc<dyn Verifier>,
    observer: Arc<dyn SceneObserver>,
    cfg: SkillExecutorConfig,
    frames: FramesConfig,
    safety: SafetyGuard,
    grasp: GraspParams,
    held: Mutex<Option<HeldRecord>>,
    busy: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for SkillExecutor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SkillExecutor")
            .field("act", &self.act)
            .field("frames", &self.frames)
            .finish_non_exhaustive()
    }
}

/// Why a run ended early, before the outcome check.
struct Stop {
    failure: Failure,
    message: String,
}

impl Stop {
    fn new(failure: Failure, message: impl Into<String>) -> Self {
        Self {
            failure,
            message: message.into(),
        }
    }
    fn refusal(r: &Refusal) -> Self {
        Self::new(r.failure(), r.to_string())
    }
}

impl SkillExecutor {
    /// An executor over the robot's arm and gripper, asking `verifier` and showing it what
    /// `observer` sees. The configured speeds and effort are checked against
    /// `/**.safety` here: a configuration above a cap is an error, not a clip.
    pub fn new(
        arm: Arc<dyn ArmMotion>,
        gripper: Arc<dyn Gripper>,
        verifier: Arc<dyn Verifier>,
        observer: Arc<dyn SceneObserver>,
        config: &AspConfig,
        estop: EStopListener,
    ) -> Result<Self, SkillError> {
        let cfg = config.skill_executor_node.clone();
        let s = &config.common.safety;
        for (key, value, cap_key, cap) in [
            (
                "motion.velocity_scaling",
                cfg.motion.velocity_scaling,
                "max_velocity_scaling",
                s.max_velocity_scaling,
            ),
            (
                "motion.acceleration_scaling",
                cfg.motion.acceleration_scaling,
                "max_acceleration_scaling",
                s.max_acceleration_scaling,
            ),
            (
                "grasp.effort",
                cfg.grasp.effort,
                "max_gripper_effort",
                s.max_gripper_effort,
            ),
        ] {
            if value > cap {
                return Err(SkillError::AboveCap {
                    key,
                    value,
                    cap_key,
                    cap,
                });
            }
        }
        if cfg.grasp.open_width <= 2.0 * cfg.grasp.width_clearance {
            return Err(SkillError::Invalid {
                key: "grasp.open_width",
                value: cfg.grasp.open_width.to_string(),
                problem: format!(
                    "must exceed twice grasp.width_clearance ({})",
                    cfg.grasp.width_clearance
                ),
            });
        }
        let grasp = GraspParams::new(&cfg.grasp, &cfg.gripper);
        Ok(Self {
            act: Actuators::new(arm, gripper, estop),
            verifier,
            observer,
            cfg,
            frames: config.common.frames.clone(),
            safety: SafetyGuard::new(s.clone()),
            grasp,
            held: Mutex::new(None),
            busy: tokio::sync::Mutex::new(()),
        })
    }

    pub fn config(&self) -> &SkillExecutorConfig {
        &self.cfg
    }

    /// Commands sent to the robot since construction.
    pub fn command_counts(&self) -> crate::actuators::CommandCounts {
        self.act.counts()
    }

    /// The key of the object the executor believes it holds.
    pub fn held_object(&self) -> Option<ObjectKey> {
        self.lock_held().as_ref().map(|h| h.key.clone())
    }

    /// Forgets the held object (the agent learned otherwise, e.g. after a remap).
    pub fn forget_held(&self) {
        *self.lock_held() = None;
    }

    fn lock_held(&self) -> std::sync::MutexGuard<'_, Option<HeldRecord>> {
        self.held
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Runs one skill. Skills run one at a time; `cancel` stops the motion in flight
    /// (as the e-stop does, without latching).
    pub async fn execute(&self, request: SkillRequest, cancel: &CancellationToken) -> SkillResult {
        let _busy = self.busy.lock().await;
        let span = info_span!("skill", skill = %request.skill, object = %request.object);
        self.run(request, cancel).instrument(span).await
    }

    async fn run(&self, req: SkillRequest, cancel: &CancellationToken) -> SkillResult {
        let start = self.act.counts();
        let mut report = SkillReport {
            skill: req.skill,
            object: req.object.clone(),
            holding: None,
            message: String::new(),
            commit: None,
            outcome: None,
            stats: ExecStats::default(),
            attempts: Vec::new(),
            placed_at: None,
        };
        let result = self.run_inner(&req, cancel, &mut report).await;
        let now = self.act.counts();
        report.stats.planner_calls = now.arm_goals - start.arm_goals;
        report.stats.gripper_commands = now.gripper_goals - start.gripper_goals;
        match result {
            Ok(success) => {
                report.message = format!(
                    "{} ({} planner calls, {} candidate(s) tried)",
                    report.message, report.stats.planner_calls, report.stats.attempts_tried
                );
                info!(stats = ?report.stats, "{}", report.message);
                SkillResult::Succeeded { success, report }
            }
            Err(stop) => {
                warn!(code = stop.failure.code, "{}", stop.message);
                report.message = stop.message;
                SkillResult::failed(stop.failure, report)
            }
        }
    }

    async fn run_inner(
        &self,
        req: &SkillRequest,
        cancel: &CancellationToken,
        report: &mut SkillReport,
    ) -> Result<asp_verify::StepSuccess, Stop> {
        // 1. limits that need no geometry: e-stop, allowlist, speeds and force
        if self.act.estop().is_engaged() {
            return Err(Stop::refusal(&Refusal::EStop));
        }
        self.safety
            .check_skill(req.skill)
            .map_err(|r| Stop::refusal(&r))?;
        let o = &req.overrides;
        let velocity = o
            .velocity_scaling
            .unwrap_or(self.cfg.motion.velocity_scaling);
        let acceleration = o
            .acceleration_scaling
            .unwrap_or(self.cfg.motion.acceleration_scaling);
        let effort = o.gripper_effort.unwrap_or(self.cfg.grasp.effort);
        self.safety
            .check_motion(velocity, acceleration, effort)
            .map_err(|r| Stop::refusal(&r))?;

        // 2. where the arm is
        let map = FrameId::new(self.frames.map.as_str());
        let arm_base = FrameId::new(self.frames.arm_base.as_str());
        let tool_map = self.act.tool_pose(&map).await.map_err(robot_stop)?;
        let tool_base = self.act.tool_pose(&arm_base).await.map_err(robot_stop)?;
        let map_to_base = Transform::new(
            arm_base.clone(),
            map.clone(),
            tool_base * tool_map.inverse(),
        );
        let arm_base_in_map = position(&(tool_map * tool_base.inverse()));

        // 3. the plan
        let held_record = self.lock_held().clone();
        if matches!(req.skill, Skill::Place | Skill::Drop)
            && let (Some(h), Some(r)) = (&req.held, &held_record)
            && h.key != r.key
        {
            return Err(Stop::refusal(&Refusal::InvalidRequest {
                problem: format!(
                    "the request says the gripper holds {}, but it grasped {}",
                    h.key, r.key
                ),
            }));
        }
        let ctx = PlanContext {
            cfg: &self.cfg,
            grasp: self.grasp,
            arm_base: arm_base_in_map,
            tool: tool_map,
            held_bottom_below_tool: held_record.as_ref().map(|h| h.bottom_below_tool),
        };
        let mut skill_plan = match plan(req, &ctx) {
            Ok(p) => p,
            Err(PlanError::Invalid(problem)) => {
                return Err(Stop::refusal(&Refusal::InvalidRequest { problem }));
            }
            Err(PlanError::NoCandidate(msg)) => {
                // the map's cloud of it may be wrong (merged with a neighbour, seen in
                // part): a retry works on a fresh look
                return Err(Stop::new(
                    our_failure(FailureKind::Planning, ours::NO_CANDIDATE)
                        .retryable()
                        .needs_remap(),
                    format!("{msg}; nothing moved: try another part or object, or look again"),
                ));
            }
        };
        report.stats.candidates = skill_plan.candidates_generated;
        for n in &skill_plan.notes {
            debug!("{n}");
        }

        // 4. the workspace: drop attempts with a target outside the box
        let mut first_refusal: Option<Refusal> = None;
        skill_plan.attempts.retain(|a| {
            for (stage, p) in a.targets() {
                if let Err(r) = self.safety.check_target(stage, &p, &map_to_base) {
                    first_refusal.get_or_insert(r);
                    return false;
                }
            }
            true
        });
        if skill_plan.attempts.is_empty() {
            let r = first_refusal.unwrap_or_else(|| Refusal::InvalidRequest {
                problem: "no motion was planned".into(),
            });
            return Err(Stop::refusal(&r));
        }

        // 5. COMMIT, before any goal is sent
        let commit_request = self.commit_request(req, &skill_plan, &map);
        let review = self
            .verifier
            .commit(&commit_request, Some(&map_to_base))
            .await
            .map_err(|e| {
                Stop::new(
                    our_failure(FailureKind::Internal, ours::COMMUNICATION).retryable(),
                    format!("{e}; nothing moved"),
                )
            })?;
        report.commit = Some(review.verdict().clone());
        let token = match review {
            Review::Accepted { token, .. } => token,
            Review::Rejected(verdict) => return Err(commit_rejected(&verdict)),
        };
        if token.skill() != req.skill || !token.covers(&commit_request) {
            return Err(Stop::new(
                our_failure(FailureKind::Internal, ours::COMMIT_REJECTED),
                format!(
                    "the verifier's token ({} for {}) does not cover this request; nothing moved",
                    token.step(),
                    token.skill()
                ),
            ));
        }

        // 6. what the world looks like before
        let holding_before = held_record.is_some();
        let part_motion = skill_plan.part_motion;
        let before = self
            .snapshot(
                req,
                ObservePhase::Before,
                holding_before,
                part_motion,
                None,
                &map,
            )
            .await;

        // a fresh view that sees the place of the object to take as free space: the map
        // is out of date (it was taken away, or put back elsewhere); closing the fingers
        // there would take whatever stands beside it
        if !holding_before
            && matches!(
                req.skill,
                Skill::Grasp | Skill::GraspPart | Skill::PinchPull
            )
            && let Some(o) = before.prior_place.filter(|o| {
                let p = &self.cfg.perception;
                o.seen_free(p.min_seen_points, p.absent_fraction) == Some(true)
            })
        {
            return Err(not_there(req, o));
        }

        // 7. the motions, under the token
        let place_before = PlaceBefore {
            occupancy: before.prior_place,
            present: before.object_cloud.clone(),
        };
        let run = self
            .run_attempts(
                req,
                &token,
                &skill_plan,
                cancel,
                Motion {
                    effort,
                    velocity,
                    acceleration,
                },
                &place_before,
                &map_to_base,
                report,
            )
            .await?;
        report.holding = Some(run.holding);

        // 8. OUTCOME: only the verifier declares success
        let observe_after = || {
            self.snapshot(
                req,
                ObservePhase::After,
                run.holding,
                part_motion,
                run.closed_at_tool,
                &map,
            )
        };
        let mut after = observe_after().await;
        // a grasped object hangs over the place it left: when that hides the place from
        // every camera, the arm takes a pose from which they see it, and looks again
        let pose = &self.cfg.perception.verify_pose;
        let hidden = after
            .prior_place
            .is_some_and(|o| !o.enough(self.cfg.perception.min_seen_points));
        if hidden
            && run.holding
            && matches!(
                req.skill,
                Skill::Grasp | Skill::GraspPart | Skill::PinchPull
            )
            && !pose.is_empty()
        {
            let out = self.act.move_to_named(&token, pose, cancel).await;
            if out.code.is_success() {
                after = observe_after().await;
            } else if cancel.is_cancelled() || self.act.estop().is_engaged() {
                return Err(self.stopped(pose, true, cancel));
            } else {
                debug!("verify pose {pose}: {} {}", out.code, out.message);
            }
        }
        if req.skill == Skill::TipPush {
            // the pressing motion ran to its end (past the part's surface)
            after.contact = Some(report.attempts.last().is_some_and(|a| {
                a.failed.is_none() && a.completed.iter().any(|l| l == PRESS_STEP)
            }));
        }
        let after_contact = after.contact;
        let placed_at = matches!(req.skill, Skill::Place | Skill::Drop)
            .then(|| after.object_cloud.as_ref().and_then(|c| c.centroid()))
            .flatten();
        let outcome_req = self.outcome_request(req, &token, before, after);
        let outcome = self.verifier.outcome(&outcome_req).await.map_err(|e| {
            Stop::new(
                our_failure(FailureKind::Internal, ours::COMMUNICATION).retryable(),
                format!("{e}; the motion ran but its outcome is unknown"),
            )
        })?;
        report.outcome = Some(outcome.verdict().clone());
        // the gripper's content, whatever the verdict
        self.record_held(req, &run, holding_before);
        match outcome {
            Outcome::Succeeded { success, verdict } => {
                if success.step() != token.step() {
                    return Err(Stop::new(
                        our_failure(FailureKind::Internal, ours::OUTCOME_NOT_SUCCEEDED),
                        format!(
                            "the verifier answered for {}, not for the committed {}",
                            success.step(),
                            token.step()
                        ),
                    ));
                }
                report.message = format!(
                    "{} on {} done; the verifier confirms: \"{}\" yes",
                    req.skill, req.object, verdict.question
                );
                report.placed_at = placed_at.map(|p| [p.x, p.y, p.z]);
                Ok(success)
            }
            Outcome::NotSucceeded(verdict) => {
                if let Some((code, why)) = &run.blocked {
                    let fb = moveit_feedback(*code);
                    let mut failure = fb.failure();
                    failure.needs_remap |= run.touched;
                    return Err(Stop::new(
                        failure,
                        format!(
                            "{} on {}: the planner refused the motion's first step ({why}), so the part did not move; the verifier agrees: {}; the rest of the skill ran (let go, back off): {}",
                            req.skill, req.object, verdict.message, fb.hint
                        ),
                    ));
                }
                let side_effect = verdict
                    .checks
                    .iter()
                    .any(|c| c.name == "side_effect" && c.passed == Some(false));
                if after_contact == Some(true) && side_effect {
                    // the push pressed something else on the device (another key): a
                    // press cannot be undone, so the goal this step belongs to cannot be
                    // confirmed any more (see `asp_system::verified_success`), but
                    // trying again may still press the right part
                    return Err(Stop::new(
                        our_failure(FailureKind::Verification, ours::PRESS_UNCONFIRMED).retryable(),
                        format!(
                            "{} on {} pressed something else: the verifier did not see {} pressed: {}; what was pressed stays pressed",
                            req.skill, req.object, req.object_name, verdict.message
                        ),
                    ));
                }
                // a pick the cameras could not judge, with the object in the gripper,
                // moved nothing else: the map stands (a rebuild now would look past the
                // held object), and a later verified step can still show the pick
                let unjudged_pick = run.holding
                    && verdict.verb == asp_verify::Verb::PickUp
                    && verdict.answer == asp_verify::Answer::Unknown;
                let remap = run.touched && !unjudged_pick;
                Err(Stop::new(
                    outcome_failure(remap),
                    format!(
                        "{} on {} ran, but the verifier says it did not succeed: {}{}",
                        req.skill,
                        req.object,
                        verdict.message,
                        if remap {
                            "; objects may have moved: look again before retrying"
                        } else if unjudged_pick {
                            "; the gripper holds it, but the cameras could not see its place"
                        } else {
                            ""
                        }
                    ),
                ))
            }
        }
    }

    fn commit_request(&self, req: &SkillRequest, p: &SkillPlan, map: &FrameId) -> CommitRequest {
        let mut targets = vec![p.focus];
        for a in &p.attempts {
            targets.extend(a.targets().map(|(_, t)| t));
        }
        let evidence = match req.skill {
            Skill::Grasp | Skill::Place | Skill::Drop => CommitEvidence::Object {
                points: req.object_cloud.len(),
            },
            _ => match (&req.grounding, &req.affordance) {
                (Some(g), _) => CommitEvidence::Grounding(g.clone()),
                (None, Some(a)) => CommitEvidence::Affordance {
                    verifier_score: a.provenance.verifier_score.map(f64::from),
                },
                (None, None) => CommitEvidence::None,
            },
        };
        CommitRequest {
            skill: req.skill,
            object: req.object.clone(),
            frame: map.clone(),
            targets,
            evidence,
        }
    }

    async fn snapshot(
        &self,
        req: &SkillRequest,
        phase: ObservePhase,
        holding: bool,
        part_motion: Option<crate::observe::PartMotion>,
        closed_at_tool: Option<Isometry3>,
        map: &FrameId,
    ) -> Snapshot {
        let tool_pose = self.act.tool_pose(map).await.ok();
        let tool_position = tool_pose.as_ref().map(position);
        // what the object in the fingers went through since they closed on it
        let held_motion = tool_pose
            .zip(closed_at_tool)
            .filter(|_| holding)
            .map(|(now, closed)| now * closed.inverse());
        let placing = matches!(req.skill, Skill::Place | Skill::Drop);
        let (object, scene_names, object_cloud) = match (&req.held, placing) {
            (Some(h), true) => (
                h.key.clone(),
                h.scene_names.clone(),
                h.cloud
                    .clone()
                    .unwrap_or_else(|| asp_core::PointCloud::empty(map.clone())),
            ),
            _ => (
                req.object.clone(),
                req.scene_names.clone(),
                req.object_cloud.clone(),
            ),
        };
        let observe = ObserveRequest {
            phase,
            skill: req.skill,
            object,
            scene_names,
            object_cloud,
            part_cloud: req.affordance.as_ref().map(|a| a.point_cloud.clone()),
            part_name: req.affordance.as_ref().map(|a| a.part.clone()),
            target: placing.then(|| {
                (
                    req.object.clone(),
                    req.scene_names.clone(),
                    req.object_cloud.clone(),
                )
            }),
            held: holding,
            part_motion,
            tool_position,
            held_motion,
            relation: placing.then_some(req.relation),
        };
        let seen = match self.observer.observe(&observe).await {
            Ok(s) => s,
            Err(e) => {
                warn!("{e}: the verifier gets no view of the scene");
                Observed::default()
            }
        };
        Snapshot {
            object_cloud: seen.object_cloud,
            target_cloud: seen.target_cloud,
            gripper: GripperSnapshot {
                holding,
                tool_position,
            },
            articulation: seen.articulation,
            switch_on: seen.switch_on,
            observation: seen.observation,
            prior_place: seen.prior_place,
            joint_travel: seen.joint_travel,
            contact: None,
            observed_at: seen.observed_at,
        }
    }

    fn outcome_request(
        &self,
        req: &SkillRequest,
        token: &CommitToken,
        before: Snapshot,
        after: Snapshot,
    ) -> OutcomeRequest {
        let placing = matches!(req.skill, Skill::Place | Skill::Drop);
        let (object, mut object_name) = match (&req.held, placing) {
            (Some(h), true) => (h.key.clone(), h.name.clone()),
            _ => (req.object.clone(), req.object_name.clone()),
        };
        let mut device = None;
        if req.outcome_verb() == asp_verify::Verb::Press
            && let Some(a) = &req.affordance
        {
            // the question names what was pressed: "the h key of the keyboard"
            device = Some(object_name.clone());
            object_name = format!("the {} of {object_name}", a.part);
        }
        OutcomeRequest {
            step: token.step(),
            verb: req.outcome_verb(),
            object,
            object_name,
            device,
            target: placing.then(|| PlaceTarget {
                key: req.object.clone(),
                name: req.object_name.clone(),
                relation: req.relation,
            }),
            before,
            after,
        }
    }

    fn record_held(&self, req: &SkillRequest, run: &RunResult, held_before: bool) {
        let mut held = self.lock_held();
        if !run.holding {
            *held = None;
            return;
        }
        if let Some(tool_z) = run.closed_at_tool.map(|p| p.translation.vector.z)
            && !held_before
        {
            // an object lifted from a surface hangs down to where it stood, not only to
            // its lowest visible point
            let bottom = crate::plan::resting_support(req)
                .or_else(|| cloud_bottom(&req.object_cloud))
                .unwrap_or(tool_z);
            *held = Some(HeldRecord {
                key: req.object.clone(),
                bottom_below_tool: (tool_z - bottom).max(0.0),
                scene_names: req.scene_names.clone(),
            });
        }
    }

    /// Runs the attempts in order until one completes. An attempt whose planning is
    /// refused before anything was touched gives way to the next; so does one whose
    /// fingers closed on nothing, once the arm has backed off along its approach and a
    /// fresh look sees the object still at its place: a graze that moved it ends the
    /// skill for a new look.
    #[allow(clippy::too_many_arguments)]
    async fn run_attempts(
        &self,
        req: &SkillRequest,
        token: &CommitToken,
        skill_plan: &SkillPlan,
        cancel: &CancellationToken,
        motion: Motion,
        place_before: &PlaceBefore,
        map_to_base: &Transform,
        report: &mut SkillReport,
    ) -> Result<RunResult, Stop> {
        let Motion {
            effort,
            velocity,
            acceleration,
        } = motion;
        let map = FrameId::new(self.frames.map.as_str());
        let held_names = self
            .lock_held()
            .as_ref()
            .map(|h| h.scene_names.clone())
            .unwrap_or_default();
        let contacts = |c: Contacts| -> Vec<String> {
            match c {
                Contacts::None => Vec::new(),
                Contacts::Target => req.scene_names.clone(),
                Contacts::TargetAndHeld => {
                    let mut v = req.scene_names.clone();
                    v.extend(held_names.iter().cloned());
                    v
                }
            }
        };
        let mut holding = self.lock_held().is_some();
        let mut touched = false;
        let mut closed_at_tool = None;
        let mut last_refusal: Option<(MoveItErrorCode, String)> = None;
        let mut missed = 0usize;
        let mut blocked: Option<(MoveItErrorCode, String)> = None;
        let total = skill_plan.attempts.len();
        'attempts: for (ai, attempt) in skill_plan.attempts.iter().enumerate() {
            report.stats.attempts_tried += 1;
            let mut log = AttemptLog {
                label: attempt.label.clone(),
                completed: Vec::new(),
                failed: None,
            };
            let mut skip_group: Option<u8> = None;
            // moves of the current group that ran (a pull refused at its first step
            // moved nothing: the part is blocked or locked)
            let mut group_done: (u8, usize) = (0, 0);
            let mut next_attempt = false;
            for step in &attempt.steps {
                debug!(attempt = ai + 1, step = step.label(), "step");
                match step {
                    Step::Move {
                        label,
                        target,
                        kind,
                        contacts: c,
                        on_fail,
                        group,
                    } => {
                        if *group != 0 && skip_group == Some(*group) {
                            continue;
                        }
                        let goal = PoseGoal {
                            frame: map.clone(),
                            target: *target,
                            kind: *kind,
                            position_tolerance: self.cfg.motion.position_tolerance as Real,
                            orientation_tolerance: self.cfg.motion.orientation_tolerance as Real,
                            velocity_scaling: velocity as Real,
                            acceleration_scaling: acceleration as Real,
                            allowed_contacts: contacts(*c),
                        };
                        if group_done.0 != *group {
                            group_done = (*group, 0);
                        }
                        let out = self.act.move_to_pose(token, &goal, cancel).await;
                        report.stats.planning_time_s += out.planning_time_s;
                        if out.code.is_success() {
                            if *c != Contacts::None {
                                touched = true;
                            }
                            group_done.1 += 1;
                            log.completed.push(label.clone());
                            continue;
                        }
                        if out.code == MoveItErrorCode::Preempted
                            || cancel.is_cancelled()
                            || self.act.estop().is_engaged()
                        {
                            log.failed = Some(format!("{label}: {}", out.code));
                            report.attempts.push(log);
                            return Err(self.stopped(label, touched, cancel));
                        }
                        let refusal = is_planning_refusal(out.code);
                        let why = format!("{label}: {} {}", out.code, out.message);
                        debug!(attempt = ai + 1, "{why}");
                        match on_fail {
                            OnFail::NextAttempt if refusal && !touched => {
                                last_refusal = Some((out.code, why.clone()));
                                log.failed = Some(why);
                                next_attempt = true;
                                break;
                            }
                            // a stepped pull/push that stalls after making progress
                            // met the part's end stop: the motion is done
                            OnFail::EndGroup
                                if refusal || (group_done.1 > 0 && is_stall(out.code)) =>
                            {
                                log.completed.push(format!("{label} stopped: {}", out.code));
                                skip_group = Some(*group);
                                if group_done.1 == 0 {
                                    blocked.get_or_insert((out.code, why));
                                }
                            }
                            OnFail::Ignore => {
                                log.completed.push(format!("{label} skipped: {}", out.code));
                            }
                            _ => {
                                log.failed = Some(why.clone());
                                report.attempts.push(log);
                                let fb = moveit_feedback(out.code);
                                let mut failure = fb.failure();
                                failure.needs_remap |= touched;
                                report.holding = Some(holding);
                                // closed on the object, then stopped (a lift that
                                // starts in contact): it is held all the same, and a
                                // place needs how far it hangs below the tool
                                if holding {
                                    let held_before = self.lock_held().is_some();
                                    let run = RunResult {
                                        holding,
                                        touched,
                                        closed_at_tool,
                                        blocked: None,
                                    };
                                    self.record_held(req, &run, held_before);
                                }
                                return Err(Stop::new(
                                    failure,
                                    format!(
                                        "{} on {} failed at {why}: {}",
                                        req.skill, req.object, fb.hint
                                    ),
                                ));
                            }
                        }
                    }
                    Step::Retreat { label, distance } => {
                        match self
                            .retreat(req, token, *distance, motion, map_to_base, cancel)
                            .await?
                        {
                            Ok(()) => log.completed.push((*label).to_owned()),
                            Err(why) => log.completed.push(format!("{label} skipped: {why}")),
                        }
                    }
                    Step::Grip {
                        label,
                        position: gap,
                        check_hold,
                    } => {
                        let goal = GripperGoal {
                            position: *gap,
                            max_effort: effort as Real,
                        };
                        let out = self.act.gripper(token, goal, cancel).await;
                        let out = match out {
                            Ok(o) => o,
                            Err(RobotError::Cancelled) => {
                                report.attempts.push(log);
                                return Err(self.stopped(label, touched, cancel));
                            }
                            Err(e) => {
                                report.attempts.push(log);
                                return Err(Stop::new(
                                    our_failure(FailureKind::Execution, ours::COMMUNICATION)
                                        .retryable(),
                                    format!("the gripper refused {label}: {e}"),
                                ));
                            }
                        };
                        if *check_hold {
                            touched = true;
                            let held = out.stalled
                                && f64::from(out.position) > self.cfg.gripper.min_held_gap;
                            if !held {
                                log.failed = Some(format!(
                                    "{label}: the fingers closed to {:.3} m on nothing",
                                    out.position
                                ));
                                report.attempts.push(log);
                                report.holding = Some(false);
                                missed += 1;
                                let recovery = self
                                    .back_off(req, token, motion, map_to_base, cancel)
                                    .await?;
                                let recovery = match recovery {
                                    BackOff::Clear => {
                                        self.object_shift(req, place_before, &map).await
                                    }
                                    other => other,
                                };
                                if recovery == BackOff::Unmoved && ai + 1 < total {
                                    // seen where it was: the graze changed nothing
                                    touched = false;
                                    continue 'attempts;
                                }
                                return Err(nothing_held(
                                    req,
                                    &format!("({})", recovery.describe(missed, total)),
                                ));
                            }
                            holding = true;
                            closed_at_tool = self.act.tool_pose(&map).await.ok();
                        } else if f64::from(*gap) > 1e-3 && holding {
                            // a release
                            touched = true;
                            holding = false;
                        }
                        log.completed.push((*label).to_owned());
                    }
                }
            }
            report.attempts.push(log);
            if !next_attempt {
                return Ok(RunResult {
                    holding,
                    touched,
                    closed_at_tool,
                    blocked,
                });
            }
            if ai + 1 == total {
                break;
            }
        }
        if missed > 0 {
            // a miss, then only refusals: the arm is back where the misses started
            return Err(nothing_held(
                req,
                &format!("in {missed} of {total} attempts and the planner refused the others"),
            ));
        }
        let (code, why) = last_refusal.unwrap_or((MoveItErrorCode::PlanningFailed, String::new()));
        let fb = moveit_feedback(code);
        Err(Stop::new(
            fb.failure(),
            format!(
                "{} on {}: the planner accepted none of {} grasp attempts (last: {why}); nothing was touched: {}",
                req.skill, req.object, total, fb.hint
            ),
        ))
    }

    /// After a miss: open the gripper and retreat in a straight line along the approach
    /// (back to the pre-grasp), contact with the target allowed, so that the arm does
    /// not stay with a finger on the object (every later plan would start in
    /// collision). A stop (cancel, e-stop) ends the skill as usual.
    async fn back_off(
        &self,
        req: &SkillRequest,
        token: &CommitToken,
        motion: Motion,
        map_to_base: &Transform,
        cancel: &CancellationToken,
    ) -> Result<BackOff, Stop> {
        let open = GripperGoal {
            position: self.cfg.grasp.open_width as Real,
            max_effort: motion.effort as Real,
        };
        match self.act.gripper(token, open, cancel).await {
            Ok(_) => {}
            Err(RobotError::Cancelled) => return Err(self.stopped("back off", true, cancel)),
            Err(e) => return Ok(BackOff::Stuck(format!("the gripper did not open: {e}"))),
        }
        let distance = self.cfg.grasp.approach_distance as Real;
        Ok(
            match self
                .retreat(req, token, distance, motion, map_to_base, cancel)
                .await?
            {
                Ok(()) => BackOff::Clear,
                Err(why) => BackOff::Stuck(why),
            },
        )
    }

    /// Moves the tool `distance` back along its approach axis (its −z) from where it
    /// is now, in a straight line, contact with the target allowed; where that does not
    /// plan (an arm at the edge of its reach after an arc), a third and then a quarter
    /// of it, which still take the fingertips off a handle: an open hand left around a
    /// handle would drag its door with the next arm motion. `Ok(Err(why))` when none
    /// plans or all would leave the workspace; a stop (cancel, e-stop) ends the skill.
    async fn retreat(
        &self,
        req: &SkillRequest,
        token: &CommitToken,
        distance: Real,
        motion: Motion,
        map_to_base: &Transform,
        cancel: &CancellationToken,
    ) -> Result<Result<(), String>, Stop> {
        let map = FrameId::new(self.frames.map.as_str());
        let mut why = String::new();
        for d in [distance, distance / 3.0, distance / 4.0] {
            // from where the arm is now: a line that failed while executing (a stall)
            // may have moved it part of the way
            let now = match self.act.tool_pose(&map).await {
                Ok(p) => p,
                Err(e) => return Ok(Err(format!("the tool pose is unknown: {e}"))),
            };
            let (_, _, z) = crate::geometry::tool_axes(&now);
            let target = crate::geometry::shifted(&now, -z * d);
            if let Err(r) = self
                .safety
                .check_target("back off", &position(&target), map_to_base)
            {
                why = r.to_string();
                continue;
            }
            let goal = PoseGoal {
                frame: map.clone(),
                target,
                kind: MotionKind::Linear,
                position_tolerance: self.cfg.motion.position_tolerance as Real,
                orientation_tolerance: self.cfg.motion.orientation_tolerance as Real,
                velocity_scaling: motion.velocity as Real,
                acceleration_scaling: motion.acceleration as Real,
                allowed_contacts: req.scene_names.clone(),
            };
            let out = self.act.move_to_pose(token, &goal, cancel).await;
            if out.code.is_success() {
                return Ok(Ok(()));
            }
            if out.code == MoveItErrorCode::Preempted
                || cancel.is_cancelled()
                || self.act.estop().is_engaged()
            {
                return Err(self.stopped("back off", true, cancel));
            }
            why = format!("{} {}", out.code, out.message);
        }
        Ok(Err(why))
    }

    /// Whether a fresh look sees the object still where the look before the skill saw
    /// it. When that look saw its place empty (the cloud was off: a perception error),
    /// the miss had nothing there to move.
    async fn object_shift(
        &self,
        req: &SkillRequest,
        before: &PlaceBefore,
        map: &FrameId,
    ) -> BackOff {
        match (before.occupancy, &before.present) {
            (Some(o), Some(seen)) if o.present >= MIN_JUDGED_AFTER_MISS => {
                let mut again = req.clone();
                again.object_cloud = seen.clone();
                let now = self
                    .snapshot(&again, ObservePhase::Before, false, None, None, map)
                    .await
                    .prior_place;
                match now {
                    Some(n) if n.enough(MIN_JUDGED_AFTER_MISS) => match n.vacated_share() {
                        Some(free) if free <= MOVED_AFTER_MISS => BackOff::Unmoved,
                        Some(free) => BackOff::Moved(free),
                        None => BackOff::Unseen,
                    },
                    _ => BackOff::Unseen,
                }
            }
            (Some(o), _) if o.enough(MIN_JUDGED_AFTER_MISS) => BackOff::Unmoved,
            _ => BackOff::Unseen,
        }
    }

    fn stopped(&self, step: &str, touched: bool, cancel: &CancellationToken) -> Stop {
        let (code, what) = if self.act.estop().is_engaged() {
            (
                ours::ESTOP,
                "the e-stop was engaged: the arm stopped where it was; reset the e-stop before any further skill",
            )
        } else if cancel.is_cancelled() {
            (
                ours::CANCELLED,
                "the skill was cancelled: the arm stopped where it was",
            )
        } else {
            (
                MoveItErrorCode::Preempted.code(),
                "the motion was preempted: the arm stopped where it was",
            )
        };
        let mut failure = our_failure(FailureKind::Cancelled, code);
        failure.needs_remap = touched;
        Stop::new(failure, format!("{what} (during {step})"))
    }
}

/// What the motions left behind.
/// Speed, acceleration and gripper effort of a skill's motions (checked against the
/// limits before any goal is sent).
#[derive(Debug, Clone, Copy)]
struct Motion {
    effort: f64,
    velocity: f64,
    acceleration: f64,
}

/// The object's place as the look before the skill saw it.
#[derive(Debug, Clone)]
struct PlaceBefore {
    occupancy: Option<asp_verify::PlaceOccupancy>,
    /// The object's points seen still there.
    present: Option<asp_core::PointCloud>,
}

/// Where a miss (fingers closed on nothing) left things.
#[derive(Debug, Clone, PartialEq)]
enum BackOff {
    /// Gripper open, arm backed off along the approach; the object not looked at.
    Clear,
    /// Clear, and the object is seen where it was before the skill.
    Unmoved,
    /// Clear, but this share of the object's place is free space now.
    Moved(f32),
    /// Clear, but the object could not be seen.
    Unseen,
    /// The gripper did not open or the arm could not back off: why.
    Stuck(String),
}

impl BackOff {
    fn describe(&self, missed: usize, total: usize) -> String {
        let tries = format!("attempt {missed} of {total}");
        match self {
            BackOff::Clear | BackOff::Unmoved => format!("{tries}; the arm backed off"),
            BackOff::Moved(free) => format!(
                "{tries}; the arm backed off and {:.0} % of the object's place is empty now: it moved",
                free * 100.0
            ),
            BackOff::Unseen => format!("{tries}; the arm backed off, the object is not seen"),
            BackOff::Stuck(why) => format!("{tries}; the arm could not back off: {why}"),
        }
    }
}

/// After a miss, the object counts as moved when more than this share of its place is
/// free space in a fresh view …
const MOVED_AFTER_MISS: f32 = 0.2;
/// … of at least this many judged points (fewer: not seen).
const MIN_JUDGED_AFTER_MISS: u32 = 10;

struct RunResult {
    holding: bool,
    /// Something was touched or gripped (object positions may have changed).
    touched: bool,
    /// The tool's pose when the fingers closed on the object (map frame).
    closed_at_tool: Option<Isometry3>,
    /// The planner refused the first move of a stepped motion (a pull, an arc): the
    /// part did not move (blocked, or its joint is not where we think).
    blocked: Option<(MoveItErrorCode, String)>,
}

/// Execution codes a controller gives when the arm is held back (an end stop).
fn is_stall(code: MoveItErrorCode) -> bool {
    matches!(
        code,
        MoveItErrorCode::ControlFailed | MoveItErrorCode::GoalConstraintsViolated
    )
}

/// The fingers closed on nothing (`how`: in which attempts, how the arm recovered):
/// retryable after a new look, since the object may have been pushed.
fn nothing_held(req: &SkillRequest, how: &str) -> Stop {
    Stop::new(
        our_failure(FailureKind::Execution, ours::NOTHING_HELD)
            .retryable()
            .needs_remap(),
        format!(
            "{} on {}: the gripper closed on nothing {how}; the object may have been pushed aside: look again (retrieve it) before retrying",
            req.skill, req.object
        ),
    )
}

/// The object was not where the map has it when looked at before the motion: nothing
/// moved; retryable after the map looks again.
fn not_there(req: &SkillRequest, o: asp_verify::PlaceOccupancy) -> Stop {
    Stop::new(
        our_failure(FailureKind::Perception, ours::NOT_THERE)
            .retryable()
            .needs_remap(),
        format!(
            "{} on {}: a fresh view sees {:.0} % of where the map has it as free space ({} of {} points judged): it is not there any more; nothing moved: retrieve it again",
            req.skill,
            req.object,
            o.vacated_share().unwrap_or(0.0) * 100.0,
            o.vacated,
            o.judged()
        ),
    )
}

fn robot_stop(e: RobotError) -> Stop {
    Stop::new(
        our_failure(FailureKind::Internal, ours::COMMUNICATION).retryable(),
        format!("cannot read the tool pose ({e}); nothing moved"),
    )
}

fn commit_rejected(v: &CommitVerdict) -> Stop {
    let mut kind = FailureKind::Verification;
    let mut retryable = true;
    for r in &v.reasons {
        match r {
            RejectReason::SkillNotAllowed { .. } => {
                kind = FailureKind::NotAllowed;
                retryable = false;
            }
            RejectReason::OutsideWorkspace { .. } => kind = FailureKind::NotAllowed,
            RejectReason::MissingTransform { .. } | RejectReason::FrameMismatch { .. } => {
                kind = FailureKind::Internal;
            }
            RejectReason::InsufficientEvidence { .. } | RejectReason::WrongEvidence { .. } => {
                if kind == FailureKind::Verification {
                    kind = FailureKind::Grounding;
                }
            }
            RejectReason::NoTargets | RejectReason::NonFiniteTarget { .. } => {
                kind = FailureKind::Internal;
                retryable = false;
            }
        }
    }
    let mut failure = our_failure(kind, ours::COMMIT_REJECTED);
    failure.retryable = retryable;
    let hint = match &v.corrective {
        Some(CorrectiveAction::Reground { .. }) => "ground the affordance again (interact)",
        Some(CorrectiveAction::Reposition { .. }) => "go_to the object to bring it into reach",
        Some(CorrectiveAction::ChooseAllowedSkill { .. }) => "use an allowed skill",
        Some(CorrectiveAction::Remap) => {
            failure.needs_remap = true;
            "look again: the object has too little geometry"
        }
        Some(CorrectiveAction::None) | None => "a system fault; retrying will not help",
    };
    Stop::new(
        failure,
        format!(
            "the verifier refused the commit: {}; nothing moved: {hint}",
            v.message
        ),
    )
}
