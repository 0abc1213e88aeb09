//! go_to: choose the pose, drive there through Nav2 semantics, re-detect on arrival.

use std::sync::Arc;

use asp_config::GoToConfig;
use asp_core::grid::OccupancyGrid;
use asp_core::robot::{BaseNavigation, CancellationToken, NavOutcome, TerminalStatus};
use asp_core::{
    Affordance, Failure, FailureKind, ObjectKey, PointCloud, Skill, State, ToolOutput, ToolValue,
};
use asp_skills::EStopListener;
use tracing::{Instrument, info, info_span, warn};

use crate::codes::{nav_feedback, ours};
use crate::relocalize::{RelocalizeError, Relocalized, Relocalizer};
use crate::select::{Carried, PartSweep, PoseSelector, Selection, SelectionError, SelectionInput};

/// One go_to call.
#[derive(Debug, Clone, PartialEq)]
pub struct GoToRequest {
    pub object: ObjectKey,
    /// The retrieval query that found the object; re-detection uses it again.
    pub query: String,
    /// The object's cloud in the (remote) map.
    pub object_cloud: PointCloud,
    /// The affordance detected for the action, if any; `None` is plain "go near".
    pub affordance: Option<Affordance>,
    /// The occupancy grid (`go_to_node.map_topic`).
    pub grid: OccupancyGrid,
    /// The object the gripper holds, to put down on the target: its height and its
    /// footprint radius, metres.
    pub carried: Option<(asp_core::Real, asp_core::Real)>,
    /// The other objects' points around the object (where a carried object may go).
    pub surroundings: Option<PointCloud>,
}

/// What go_to did.
#[derive(Debug, Clone, PartialEq)]
pub struct GoToReport {
    pub selection: Option<Selection>,
    pub navigation: Option<NavOutcome>,
    pub relocalized: Option<Relocalized>,
    /// For the model.
    pub message: String,
}

/// go_to's answer.
#[derive(Debug, Clone, PartialEq)]
pub enum GoToResult {
    Arrived(GoToReport),
    Failed {
        failure: Failure,
        report: GoToReport,
    },
}

impl GoToResult {
    pub fn report(&self) -> &GoToReport {
        match self {
            Self::Arrived(r) | Self::Failed { report: r, .. } => r,
        }
    }

    pub fn arrived(&self) -> bool {
        matches!(self, Self::Arrived(_))
    }

    pub fn failure(&self) -> Option<&Failure> {
        match self {
            Self::Failed { failure, .. } => Some(failure),
            Self::Arrived(_) => None,
        }
    }

    /// The agent's tool output with `state`.
    pub fn tool_output(self, state: State) -> ToolOutput {
        match self {
            Self::Arrived(r) => ToolOutput::ok(ToolValue::State(state), r.message),
            Self::Failed { failure, report } => ToolOutput::fail(state, failure, report.message),
        }
    }
}

/// What a fresh look at an object go_to found nowhere to stand around said.
enum LookAgain {
    /// Too far to look at from here, or no re-detector.
    NotNear,
    /// Seen again, its cloud from the new view.
    Found(Relocalized),
    /// Closer looks said it is not what its query asked for (the map withdrew it).
    NotIt(String),
    /// Nothing learnt (not seen, or the look could not be taken): why.
    Unchanged(String),
}

/// go_to over a base and (optionally) a re-detector.
pub struct GoTo {
    base: Arc<dyn BaseNavigation>,
    selector: PoseSelector,
    estop: EStopListener,
    relocalizer: Option<Arc<dyn Relocalizer>>,
    cfg: GoToConfig,
}

impl std::fmt::Debug for GoTo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GoTo")
            .field("cfg", &self.cfg)
            .field("relocalizer", &self.relocalizer.is_some())
            .finish_non_exhaustive()
    }
}

fn fail(kind: FailureKind, code: i32) -> Failure {
    Failure::new(kind).with_code(code)
}

impl GoTo {
    pub fn new(
        base: Arc<dyn BaseNavigation>,
        cfg: &GoToConfig,
        estop: EStopListener,
        relocalizer: Option<Arc<dyn Relocalizer>>,
    ) -> Self {
        Self {
            base,
            selector: PoseSelector::new(cfg.clone()),
            estop,
            relocalizer,
            cfg: cfg.clone(),
        }
    }

    /// A fresh look at the object from where the base stands, when it is within
    /// `look_again_within` and a re-detector is configured.
    async fn look_again(&self, req: &GoToRequest) -> LookAgain {
        let Some(r) = self.relocalizer.as_ref().filter(|_| self.cfg.relocalize) else {
            return LookAgain::NotNear;
        };
        let (Ok(robot), Some(c)) = (self.base.base_pose().await, req.object_cloud.centroid())
        else {
            return LookAgain::NotNear;
        };
        let distance = (c.x - robot.x).hypot(c.y - robot.y);
        if distance > asp_core::Real::from(self.cfg.look_again_within) {
            return LookAgain::NotNear;
        }
        info!(
            distance,
            "no place to stand around the object: looking at it again from here"
        );
        match r
            .relocalize(&req.query, &req.object_cloud, &self.cfg.relocalize_camera)
            .await
        {
            Ok(Some(found)) => LookAgain::Found(found),
            Ok(None) => LookAgain::Unchanged(format!(
                "looked again from here, {distance:.1} m away, and did not see it"
            )),
            Err(RelocalizeError::NotIt(why)) => LookAgain::NotIt(why),
            Err(e) => LookAgain::Unchanged(format!("could not look again from here: {e}")),
        }
    }

    pub fn selector(&self) -> &PoseSelector {
        &self.selector
    }

    /// Chooses the pose for `req` from where the robot is now (moves nothing).
    pub async fn choose(
        &self,
        req: &GoToRequest,
    ) -> Result<Result<Selection, SelectionError>, Failure> {
        let robot = self.base.base_pose().await.map_err(|e| {
            warn!("cannot read the base pose: {e}");
            fail(FailureKind::Internal, ours::COMMUNICATION).retryable()
        })?;
        // plain "go near" (λ_aff = 0) uses nothing of the affordance
        let sweep = req
            .affordance
            .as_ref()
            .filter(|_| self.cfg.lambda_aff > 0.0)
            .and_then(|a| {
                PartSweep::for_skill(
                    a.skill,
                    a.point_cloud.points(),
                    req.object_cloud.points(),
                    &self.cfg.part_motion,
                )
            });
        let input = SelectionInput {
            grid: &req.grid,
            object: req.object_cloud.points(),
            affordance: req.affordance.as_ref().map(|a| a.point_cloud.points()),
            robot,
            sweep: sweep.as_ref(),
            carried: req.carried.map(|(height, radius)| Carried {
                height,
                radius,
                around: req.surroundings.as_ref().map_or(&[], |c| c.points()),
            }),
            // a grasp, or no part found (the object is then grasped whole)
            pick: req
                .affordance
                .as_ref()
                .is_none_or(|a| matches!(a.skill, Skill::Grasp | Skill::GraspPart)),
        };
        Ok(self.selector.select(&input))
    }

    /// Drives to a pose suited to the request; `cancel` (or the e-stop) stops the base.
    pub async fn go_to(&self, req: GoToRequest, cancel: &CancellationToken) -> GoToResult {
        let span = info_span!("go_to", object = %req.object);
        self.run(req, cancel).instrument(span).await
    }

    async fn run(&self, req: GoToRequest, cancel: &CancellationToken) -> GoToResult {
        let mut report = GoToReport {
            selection: None,
            navigation: None,
            relocalized: None,
            message: String::new(),
        };
        let failed = |failure: Failure, mut report: GoToReport, message: String| {
            warn!(code = failure.code, "{message}");
            report.message = message;
            GoToResult::Failed { failure, report }
        };
        if self.estop.is_engaged() {
            return failed(
                fail(FailureKind::Cancelled, ours::ESTOP),
                report,
                "the e-stop is engaged: the base does not move until it is reset".into(),
            );
        }
        if req.object_cloud.is_empty() {
            return failed(
                fail(FailureKind::InvalidArgument, ours::INVALID_REQUEST),
                report,
                format!("the point cloud of {} is empty", req.object),
            );
        }
        let mut req = req;
        let selection = match self.choose(&req).await {
            Err(f) => {
                return failed(f, report, "cannot read the base pose; nothing moved".into());
            }
            Ok(Err(e)) => {
                // Nowhere to stand: what the map holds of the object may be wrong
                // (another object taken for it on one view, or its points run into
                // what stands behind it). A fresh look from here, when it is near,
                // settles that before the agent is told to give up on it.
                let no_pose = |note: &str| {
                    format!(
                        "go_to {}: {e}; nothing moved{note}: the object may be boxed in, try another object or look again",
                        req.object
                    )
                };
                let nowhere = |report, message| {
                    failed(
                        fail(FailureKind::Navigation, ours::NO_VALID_POSE).retryable(),
                        report,
                        message,
                    )
                };
                match self.look_again(&req).await {
                    LookAgain::NotNear => return nowhere(report, no_pose("")),
                    LookAgain::NotIt(why) => {
                        return failed(
                            fail(FailureKind::UnknownObject, ours::NOT_IT).retryable(),
                            report,
                            format!(
                                "go_to {}: {e}; looked at it again from here, and {why}",
                                req.object
                            ),
                        );
                    }
                    LookAgain::Unchanged(note) => {
                        return nowhere(report, no_pose(&format!(" ({note})")));
                    }
                    LookAgain::Found(found) => {
                        req.object_cloud = found.object_cloud.clone();
                        let shift = found.shift;
                        report.relocalized = Some(found);
                        match self.choose(&req).await {
                            Ok(Ok(s)) => {
                                info!(shift, "a fresh look moved the object; base pose chosen");
                                s
                            }
                            Err(f) => {
                                return failed(
                                    f,
                                    report,
                                    "cannot read the base pose; nothing moved".into(),
                                );
                            }
                            Ok(Err(again)) => {
                                return nowhere(
                                    report,
                                    format!(
                                        "go_to {}: {again}; nothing moved (looked at it again from here and found it {shift:.2} m from where the map had it, with no place to stand there either): the object may be boxed in, try another object",
                                        req.object
                                    ),
                                );
                            }
                        }
                    }
                }
            }
            Ok(Ok(s)) => s,
        };
        let goal = selection.chosen.pose;
        info!(
            x = goal.x,
            y = goal.y,
            theta = goal.theta,
            radius = selection.chosen.radius,
            affordance = selection.affordance_direction.is_some(),
            "base pose chosen"
        );
        report.selection = Some(selection);
        let guard = self.estop.guard(cancel);
        let nav = self.base.navigate_to(goal, guard.token()).await;
        drop(guard);
        report.navigation = Some(nav.clone());
        match nav.status {
            TerminalStatus::Succeeded => {}
            TerminalStatus::Canceled => {
                let (code, what) = if self.estop.is_engaged() {
                    (ours::ESTOP, "the e-stop was engaged")
                } else {
                    (ours::CANCELLED, "go_to was cancelled")
                };
                return failed(
                    fail(FailureKind::Cancelled, code),
                    report,
                    format!(
                        "{what}: the base stopped at ({:.2}, {:.2})",
                        nav.final_pose.x, nav.final_pose.y
                    ),
                );
            }
            TerminalStatus::Aborted => {
                let fb = nav_feedback(nav.error_code);
                return failed(
                    fb.failure(),
                    report,
                    format!(
                        "navigation to {} aborted: {:?} ({}) {}: {}",
                        req.object,
                        nav.error_code,
                        nav.error_code.code(),
                        nav.error_msg,
                        fb.hint
                    ),
                );
            }
        }
        let arrived = format!(
            "arrived at ({:.2}, {:.2}, {:.0}°) facing {} at {:.2} m{}",
            nav.final_pose.x,
            nav.final_pose.y,
            nav.final_pose.theta.to_degrees(),
            req.object,
            report.selection.as_ref().map_or(0.0, |s| s.chosen.radius),
            if report
                .selection
                .as_ref()
                .is_some_and(|s| s.affordance_direction.is_some())
            {
                ", on the affordance's side"
            } else {
                ""
            }
        );
        match (&self.relocalizer, self.cfg.relocalize) {
            (Some(r), true) => match r
                .relocalize(&req.query, &req.object_cloud, &self.cfg.relocalize_camera)
                .await
            {
                Ok(Some(found)) => {
                    report.message = format!(
                        "{arrived}; found {} again {:.2} m from where the map had it",
                        req.object, found.shift
                    );
                    report.relocalized = Some(found);
                    GoToResult::Arrived(report)
                }
                // not seen from here (the held object in front of the wrist camera, a
                // table too large for one frame): the base did arrive, and the map's
                // view stands; if the object did move, the skill that follows fails and
                // asks for a new look. Failing here left the agent driving to the same
                // pose again.
                Ok(None) => {
                    report.message = format!(
                        "{arrived}; {:?} was not found again from here, so the map's view of it is kept",
                        req.query
                    );
                    GoToResult::Arrived(report)
                }
                Err(RelocalizeError::NotIt(why)) => failed(
                    fail(FailureKind::UnknownObject, ours::NOT_IT).retryable(),
                    report,
                    format!("{arrived}, but {why}"),
                ),
                Err(e) => failed(
                    fail(FailureKind::Perception, ours::NOT_REFOUND).retryable(),
                    report,
                    format!("{arrived}, but {e}"),
                ),
            },
            _ => {
                report.message = arrived;
                GoToResult::Arrived(report)
            }
        }
    }
}
