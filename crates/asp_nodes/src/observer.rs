//! SIMULATION ONLY: the verifier's before/after view of the acted-on objects from the
//! simulator's ground truth, like Gazebo's entity-state service. The sim node serves it
//! on `/sim/ground_truth/observe` ([`serve_sim_observer`]); the skill executor reaches it
//! with [`SimObserverClient`] when `skill_executor_node.observer` is `simulation`. A robot
//! has no such service: it re-observes with its cameras instead.

use std::sync::Arc;

use asp_ros::Node;
use asp_ros::msg::asp_interfaces::{SimObserve, SimObserveRequest, SimObserveResponse};
use asp_ros::transport::{Client, ServiceServer};
use asp_skills::{ObserveError, ObserveRequest, Observed, SceneObserver};
use async_trait::async_trait;

use crate::NodeError;
use crate::names;

/// Serves `observer` (the simulator's `asp_system::sim::SimObserver`) on `node`.
pub fn serve_sim_observer(
    node: &Node,
    observer: Arc<dyn SceneObserver>,
) -> Result<ServiceServer, NodeError> {
    Ok(node.serve::<SimObserve, _, _>(
        names::SIM_OBSERVE_SERVICE,
        move |req: SimObserveRequest| {
            let observer = observer.clone();
            async move {
                let fail = |error_msg: String| SimObserveResponse {
                    success: false,
                    error_msg,
                    observed_json: String::new(),
                };
                let request: ObserveRequest = match serde_json::from_str(&req.request_json) {
                    Ok(r) => r,
                    Err(e) => return fail(format!("the observe request is not valid: {e}")),
                };
                match observer.observe(&request).await {
                    Ok(seen) => match serde_json::to_string(&seen) {
                        Ok(observed_json) => SimObserveResponse {
                            success: true,
                            error_msg: String::new(),
                            observed_json,
                        },
                        Err(e) => fail(format!("cannot encode the observation: {e}")),
                    },
                    Err(e) => fail(e.to_string()),
                }
            }
        },
    )?)
}

/// [`SceneObserver`] over the sim node's ground-truth service.
#[derive(Debug)]
pub struct SimObserverClient {
    client: Client<SimObserve>,
}

impl SimObserverClient {
    pub fn new(node: &Node) -> Result<Self, NodeError> {
        Ok(Self {
            client: node.client(names::SIM_OBSERVE_SERVICE)?,
        })
    }
}

#[async_trait]
impl SceneObserver for SimObserverClient {
    async fn observe(&self, request: &ObserveRequest) -> Result<Observed, ObserveError> {
        let err = |message: String| ObserveError {
            what: request.object.to_string(),
            message,
        };
        let request_json = serde_json::to_string(request)
            .map_err(|e| err(format!("cannot encode the request: {e}")))?;
        let r = self
            .client
            .call(SimObserveRequest { request_json })
            .await
            .map_err(|e| err(format!("{}: {e}", names::SIM_OBSERVE_SERVICE)))?;
        if !r.success {
            return Err(err(r.error_msg));
        }
        serde_json::from_str(&r.observed_json)
            .map_err(|e| err(format!("the observation is not valid: {e}")))
    }
}

/// The observer of a robot without a re-observation pass: it sees nothing, so outcome
/// checks have the gripper state and the tool pose only
/// (`skill_executor_node.observer: none`).
#[derive(Debug, Clone, Copy, Default)]
pub struct BlindObserver;

#[async_trait]
impl SceneObserver for BlindObserver {
    async fn observe(&self, _: &ObserveRequest) -> Result<Observed, ObserveError> {
        Ok(Observed::default())
    }
}
