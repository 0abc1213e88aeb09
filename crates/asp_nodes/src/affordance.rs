//! affordance_node's port over ROS: [`serve_affordances`] serves any [`AffordancePort`]
//! as the DetectAffordances action, [`AffordanceClient`] implements the port against it
//! (a cancelled token cancels the goal).

use std::sync::Arc;

use asp_affordance::AffordanceReport;
use asp_core::robot::CancellationToken;
use asp_core::{FailureKind, ObjectKey, Skill};
use asp_ros::Node;
use asp_ros::action::{
    ActionClient, ActionServer, ActionServerOptions, GoalContext, GoalHandler, GoalOutcome,
};
use asp_ros::lifecycle::PrimaryState;
use asp_ros::msg::TerminalState;
use asp_ros::msg::asp_interfaces::{
    DetectAffordances, DetectAffordancesFeedback, DetectAffordancesGoal, DetectAffordancesResult,
    Failure,
};
use asp_system::{AffordancePort, AffordanceQuery, ServiceError};
use async_trait::async_trait;
use tokio::sync::watch;

use crate::NodeError;
use crate::names;
use crate::wire::{failed_response, failure_of, from_json, to_json, transport_error};

/// The query of a goal; a bad key or skill name is an error naming it.
pub fn query_of(goal: &DetectAffordancesGoal) -> Result<AffordanceQuery, ServiceError> {
    let bad = |m: String| ServiceError::new(FailureKind::InvalidArgument, m);
    let key = ObjectKey::new(&goal.key)
        .map_err(|e| bad(format!("{:?} is not an object key: {e}", goal.key)))?;
    let skills = goal
        .skills
        .iter()
        .map(|s| {
            s.parse::<Skill>()
                .map_err(|e| bad(format!("{s:?} is not a skill: {e}")))
        })
        .collect::<Result<_, _>>()?;
    Ok(AffordanceQuery {
        key,
        action: goal.action.clone(),
        skills,
    })
}

/// The goal of a query.
pub fn goal_of(q: &AffordanceQuery) -> DetectAffordancesGoal {
    DetectAffordancesGoal {
        key: q.key.as_str().to_owned(),
        action: q.action.clone(),
        skills: q.skills.iter().map(|s| s.name().to_owned()).collect(),
    }
}

fn result_of(out: Result<AffordanceReport, ServiceError>) -> DetectAffordancesResult {
    let out = out.and_then(|r| Ok((to_json(&r, "the affordance report")?, r)));
    match out {
        Ok((report_json, r)) => DetectAffordancesResult {
            success: true,
            failure: Failure::default(),
            parts: r
                .affordances
                .iter()
                .map(|a| a.affordance.part.clone())
                .collect(),
            skills: r
                .affordances
                .iter()
                .map(|a| a.affordance.skill.name().to_owned())
                .collect(),
            report_json,
        },
        Err(e) => DetectAffordancesResult {
            failure: failure_of(&e),
            ..DetectAffordancesResult::default()
        },
    }
}

/// Runs DetectAffordances goals on an [`AffordancePort`].
pub struct DetectHandler {
    port: Arc<dyn AffordancePort>,
}

impl std::fmt::Debug for DetectHandler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DetectHandler")
    }
}

#[async_trait]
impl GoalHandler<DetectAffordances> for DetectHandler {
    async fn execute(
        &self,
        goal: DetectAffordancesGoal,
        ctx: GoalContext<DetectAffordances>,
    ) -> GoalOutcome<DetectAffordancesResult> {
        let out = match query_of(&goal) {
            Ok(q) => {
                let _ = ctx.publish_feedback(DetectAffordancesFeedback {
                    message: format!("detecting the parts of {} to {:?}", q.key, q.action),
                });
                self.port.detect(&q, ctx.cancellation()).await
            }
            Err(e) => Err(e),
        };
        let result = result_of(out);
        if ctx.is_cancelled() {
            GoalOutcome::Canceled(result)
        } else if result.success {
            GoalOutcome::Succeeded(result)
        } else {
            GoalOutcome::Aborted(result)
        }
    }
}

/// Serves `port` as the DetectAffordances action on `node`.
pub fn serve_affordances(
    node: &Node,
    port: Arc<dyn AffordancePort>,
    lifecycle: Option<watch::Receiver<PrimaryState>>,
) -> Result<ActionServer<DetectAffordances>, NodeError> {
    Ok(node.action_server(
        names::DETECT_ACTION,
        ActionServerOptions {
            lifecycle,
            ..ActionServerOptions::default()
        },
        DetectHandler { port },
    )?)
}

/// [`AffordancePort`] over affordance_node's DetectAffordances action.
#[derive(Debug, Clone)]
pub struct AffordanceClient {
    client: ActionClient<DetectAffordances>,
}

impl AffordanceClient {
    pub fn new(node: &Node) -> Result<Self, NodeError> {
        Ok(Self {
            client: node.action_client(names::DETECT_ACTION)?,
        })
    }
}

#[async_trait]
impl AffordancePort for AffordanceClient {
    async fn detect(
        &self,
        query: &AffordanceQuery,
        cancel: &CancellationToken,
    ) -> Result<AffordanceReport, ServiceError> {
        let result = self
            .client
            .execute(goal_of(query), cancel, |_f: DetectAffordancesFeedback| {})
            .await;
        if cancel.is_cancelled() {
            return Err(ServiceError::cancelled("affordance detection"));
        }
        let r = result.map_err(|e| transport_error(&e, names::DETECT_ACTION))?;
        if r.state == TerminalState::Canceled {
            return Err(ServiceError::cancelled("affordance detection"));
        }
        if let Some(e) = failed_response(r.result.success, &r.result.failure, "detection") {
            return Err(e);
        }
        from_json(&r.result.report_json, "the affordance report")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_round_trip_through_goals_and_bad_ones_are_named() {
        let q = AffordanceQuery {
            key: ObjectKey::new("drawer_0").unwrap(),
            action: "open the drawer".into(),
            skills: vec![Skill::HookPull, Skill::Open],
        };
        assert_eq!(query_of(&goal_of(&q)).unwrap(), q);
        let mut g = goal_of(&q);
        g.skills.push("juggle".into());
        let e = query_of(&g).unwrap_err();
        assert!(e.message.contains("juggle"), "{}", e.message);
        g.key = "Not A Key".into();
        assert_eq!(
            query_of(&g).unwrap_err().failure.kind,
            FailureKind::InvalidArgument
        );
    }
}
