//! go_to_node's port over ROS: [`serve_go_to`] serves any [`NavigationPort`] as the GoTo
//! action, [`GoToClient`] implements the port against it (a cancelled token cancels the
//! goal, which stops the base).

use std::sync::Arc;

use asp_core::FailureKind;
use asp_core::ObjectKey;
use asp_core::robot::CancellationToken;
use asp_ros::Node;
use asp_ros::action::{
    ActionClient, ActionServer, ActionServerOptions, GoalContext, GoalHandler, GoalOutcome,
};
use asp_ros::msg::asp_interfaces::GoToGoal as GoToGoalMsg;
use asp_ros::msg::asp_interfaces::{Failure, GoTo, GoToFeedback, GoToResult};
use asp_system::{CarriedSize, GoToGoal, GoToReply, NavigationPort, ServiceError};
use async_trait::async_trait;

use crate::NodeError;
use crate::names;
use crate::wire::{failure_of, from_json, service_error, to_json, transport_error};

/// A reply for a goal that never reached go_to (or whose answer was lost).
pub fn failed_reply(e: &ServiceError) -> GoToReply {
    GoToReply {
        arrived: false,
        failure: Some(e.failure.clone()),
        message: e.message.clone(),
        selection: None,
        final_pose: None,
        affordance_part: None,
        relocalized: None,
    }
}

/// The port's goal of an action goal.
pub fn goal_of(msg: &GoToGoalMsg) -> Result<GoToGoal, ServiceError> {
    let key = ObjectKey::new(&msg.key).map_err(|e| {
        ServiceError::new(
            FailureKind::InvalidArgument,
            format!("{:?} is not an object key: {e}", msg.key),
        )
    })?;
    for (name, v) in [
        ("carried_height", msg.carried_height),
        ("carried_radius", msg.carried_radius),
    ] {
        if !v.is_finite() || v < 0.0 {
            return Err(ServiceError::new(
                FailureKind::InvalidArgument,
                format!("{name} {v} is not a size (metres, 0 for nothing held)"),
            ));
        }
    }
    Ok(GoToGoal {
        key,
        action: msg.action.clone(),
        carried: (msg.carried_height > 0.0).then_some(CarriedSize {
            height: msg.carried_height,
            radius: msg.carried_radius,
        }),
    })
}

/// The result of a reply.
pub fn result_of(reply: &GoToReply) -> GoToResult {
    let failure = match &reply.failure {
        Some(f) => Failure::from_core(f, reply.message.clone()),
        None if reply.arrived => Failure::default(),
        None => Failure::from_core(
            &asp_core::Failure::new(FailureKind::Navigation),
            reply.message.clone(),
        ),
    };
    match to_json(reply, "the go_to reply") {
        Ok(reply_json) => GoToResult {
            arrived: reply.arrived,
            failure,
            message: reply.message.clone(),
            reply_json,
        },
        Err(e) => GoToResult {
            failure: failure_of(&e),
            message: e.message,
            ..GoToResult::default()
        },
    }
}

/// Runs GoTo goals on a [`NavigationPort`].
pub struct GoToHandler {
    port: Arc<dyn NavigationPort>,
}

impl std::fmt::Debug for GoToHandler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("GoToHandler")
    }
}

#[async_trait]
impl GoalHandler<GoTo> for GoToHandler {
    async fn execute(&self, goal: GoToGoalMsg, ctx: GoalContext<GoTo>) -> GoalOutcome<GoToResult> {
        let goal = match goal_of(&goal) {
            Ok(g) => g,
            Err(e) => return GoalOutcome::Aborted(result_of(&failed_reply(&e))),
        };
        let _ = ctx.publish_feedback(GoToFeedback {
            message: format!("going to {} to {:?}", goal.key, goal.action),
        });
        let reply = self.port.go_to(&goal, ctx.cancellation()).await;
        let result = result_of(&reply);
        if reply.arrived {
            GoalOutcome::Succeeded(result)
        } else if ctx.is_cancelled() {
            GoalOutcome::Canceled(result)
        } else {
            GoalOutcome::Aborted(result)
        }
    }
}

/// Serves `port` as the GoTo action on `node`, behind `gates` (the e-stop, the
/// lifecycle, the client's liveliness: see [`ActionServerOptions`]).
pub fn serve_go_to(
    node: &Node,
    port: Arc<dyn NavigationPort>,
    gates: ActionServerOptions,
) -> Result<ActionServer<GoTo>, NodeError> {
    Ok(node.action_server(names::GO_TO_ACTION, gates, GoToHandler { port })?)
}

/// [`NavigationPort`] over go_to_node's GoTo action.
#[derive(Debug, Clone)]
pub struct GoToClient {
    client: ActionClient<GoTo>,
}

impl GoToClient {
    pub fn new(node: &Node) -> Result<Self, NodeError> {
        Ok(Self {
            client: node.action_client(names::GO_TO_ACTION)?,
        })
    }
}

#[async_trait]
impl NavigationPort for GoToClient {
    async fn go_to(&self, goal: &GoToGoal, cancel: &CancellationToken) -> GoToReply {
        let msg = GoToGoalMsg {
            key: goal.key.as_str().to_owned(),
            action: goal.action.clone(),
            carried_height: goal.carried.map_or(0.0, |c| c.height),
            carried_radius: goal.carried.map_or(0.0, |c| c.radius),
        };
        let r = match self
            .client
            .execute(msg, cancel, |_f: GoToFeedback| {})
            .await
        {
            Ok(r) => r,
            Err(_) if cancel.is_cancelled() => {
                return failed_reply(&ServiceError::cancelled("go_to"));
            }
            Err(e) => return failed_reply(&transport_error(&e, names::GO_TO_ACTION)),
        };
        if r.result.reply_json.is_empty() {
            let e = service_error(&r.result.failure).unwrap_or_else(|| {
                ServiceError::internal(format!("go_to ended {:?} without a reply", r.state))
            });
            return failed_reply(&e);
        }
        from_json::<GoToReply>(&r.result.reply_json, "the go_to reply")
            .unwrap_or_else(|e| failed_reply(&e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(carried_height: f32, carried_radius: f32) -> GoToGoalMsg {
        GoToGoalMsg {
            key: "desk_0".into(),
            action: "place the held object on the desk".into(),
            carried_height,
            carried_radius,
        }
    }

    #[test]
    fn a_goal_carries_what_the_gripper_holds_and_refuses_sizes_that_are_none() {
        assert_eq!(goal_of(&msg(0.0, 0.0)).unwrap().carried, None);
        let g = goal_of(&msg(0.22, 0.035)).unwrap();
        assert_eq!(
            g.carried,
            Some(CarriedSize {
                height: 0.22,
                radius: 0.035
            })
        );
        for (h, r, field) in [
            (-0.1, 0.0, "carried_height"),
            (0.2, f32::NAN, "carried_radius"),
        ] {
            let e = goal_of(&msg(h, r)).unwrap_err();
            assert_eq!(e.failure.kind, FailureKind::InvalidArgument);
            assert!(e.message.contains(field), "{}", e.message);
        }
    }
}
