//! skill_executor_node's port over ROS: [`serve_skills`] serves any [`SkillPort`] as the
//! ExecuteSkill action (a cancel request, a preemption or the e-stop cancels the running
//! skill's token, which stops its motion), [`SkillClient`] implements the port against it.

use std::sync::Arc;

use asp_core::robot::CancellationToken;
use asp_core::{Failure as CoreFailure, FailureKind};
use asp_ros::Node;
use asp_ros::action::{
    ActionClient, ActionServer, ActionServerOptions, GoalContext, GoalHandler, GoalOutcome,
};
use asp_ros::msg::asp_interfaces::{
    ExecuteSkill, ExecuteSkillFeedback, ExecuteSkillGoal, ExecuteSkillResult, Failure,
};
use asp_skills::{SkillReport, SkillRequest};
use asp_system::{ServiceError, SkillPort, SkillReply};
use async_trait::async_trait;

use crate::NodeError;
use crate::names;
use crate::wire::{failure_of, from_json, to_json, transport_error};

/// A reply for a request that never reached the executor (or whose answer was lost).
pub fn failed_reply(request: &SkillRequest, e: &ServiceError) -> SkillReply {
    SkillReply {
        succeeded: false,
        failure: Some(e.failure.clone()),
        report: SkillReport {
            skill: request.skill,
            object: request.object.clone(),
            holding: None,
            message: e.message.clone(),
            commit: None,
            outcome: None,
            stats: Default::default(),
            attempts: Vec::new(),
            placed_at: None,
        },
    }
}

/// The goal of a request.
pub fn goal_of(request: &SkillRequest) -> Result<ExecuteSkillGoal, ServiceError> {
    Ok(ExecuteSkillGoal {
        skill: request.skill.name().to_owned(),
        object: request.object.as_str().to_owned(),
        request_json: to_json(request, "the skill request")?,
    })
}

/// The result of a reply.
pub fn result_of(reply: &SkillReply) -> ExecuteSkillResult {
    let failure = match &reply.failure {
        Some(f) => Failure::from_core(f, reply.report.message.clone()),
        None if reply.succeeded => Failure::default(),
        None => Failure::from_core(
            &CoreFailure::new(FailureKind::Internal),
            reply.report.message.clone(),
        ),
    };
    match to_json(reply, "the skill reply") {
        Ok(reply_json) => ExecuteSkillResult {
            success: reply.succeeded,
            failure,
            holding: reply.report.holding.unwrap_or(false),
            message: reply.report.message.clone(),
            reply_json,
        },
        Err(e) => ExecuteSkillResult {
            failure: failure_of(&e),
            message: e.message,
            ..ExecuteSkillResult::default()
        },
    }
}

/// Runs ExecuteSkill goals on a [`SkillPort`].
pub struct SkillHandler {
    port: Arc<dyn SkillPort>,
}

impl std::fmt::Debug for SkillHandler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SkillHandler")
    }
}

#[async_trait]
impl GoalHandler<ExecuteSkill> for SkillHandler {
    async fn execute(
        &self,
        goal: ExecuteSkillGoal,
        ctx: GoalContext<ExecuteSkill>,
    ) -> GoalOutcome<ExecuteSkillResult> {
        let request: SkillRequest = match from_json(&goal.request_json, "the skill request") {
            Ok(r) => r,
            Err(e) => {
                return GoalOutcome::Aborted(ExecuteSkillResult {
                    failure: failure_of(&e),
                    message: e.message,
                    ..ExecuteSkillResult::default()
                });
            }
        };
        let _ = ctx.publish_feedback(ExecuteSkillFeedback {
            message: format!("{} on {}", request.skill, request.object),
        });
        let reply = self.port.execute(request, ctx.cancellation()).await;
        let result = result_of(&reply);
        if reply.succeeded {
            GoalOutcome::Succeeded(result)
        } else if ctx.is_cancelled() {
            GoalOutcome::Canceled(result)
        } else {
            GoalOutcome::Aborted(result)
        }
    }
}

/// Serves `port` as the ExecuteSkill action on `node`, behind `gates` (the e-stop, the
/// lifecycle, the client's liveliness: see [`ActionServerOptions`]).
pub fn serve_skills(
    node: &Node,
    port: Arc<dyn SkillPort>,
    gates: ActionServerOptions,
) -> Result<ActionServer<ExecuteSkill>, NodeError> {
    Ok(node.action_server(names::SKILL_ACTION, gates, SkillHandler { port })?)
}

/// [`SkillPort`] over skill_executor_node's ExecuteSkill action.
#[derive(Debug, Clone)]
pub struct SkillClient {
    client: ActionClient<ExecuteSkill>,
}

impl SkillClient {
    pub fn new(node: &Node) -> Result<Self, NodeError> {
        Ok(Self {
            client: node.action_client(names::SKILL_ACTION)?,
        })
    }
}

#[async_trait]
impl SkillPort for SkillClient {
    async fn execute(&self, request: SkillRequest, cancel: &CancellationToken) -> SkillReply {
        let goal = match goal_of(&request) {
            Ok(g) => g,
            Err(e) => return failed_reply(&request, &e),
        };
        let result = self
            .client
            .execute(goal, cancel, |_f: ExecuteSkillFeedback| {})
            .await;
        let r = match result {
            Ok(r) => r,
            Err(_) if cancel.is_cancelled() => {
                return failed_reply(&request, &ServiceError::cancelled("the skill"));
            }
            Err(e) => return failed_reply(&request, &transport_error(&e, names::SKILL_ACTION)),
        };
        if r.result.reply_json.is_empty() {
            // the server ended the goal itself (cancel, preemption, e-stop, shutdown)
            let e = crate::wire::service_error(&r.result.failure).unwrap_or_else(|| {
                ServiceError::internal(format!("the skill ended {:?} without a reply", r.state))
            });
            return failed_reply(&request, &e);
        }
        match from_json::<SkillReply>(&r.result.reply_json, "the skill reply") {
            Ok(reply) => reply,
            Err(e) => failed_reply(&request, &e),
        }
    }
}
