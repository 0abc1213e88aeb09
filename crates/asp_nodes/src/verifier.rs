//! The verifier over ROS: [`serve_verifier`] serves any [`Verifier`] (verifier_node serves
//! `asp_skills::LocalVerifier`: the commit gate and the outcome checks) and publishes
//! every verdict on `/asp/verdicts`; [`VerifierClient`] is the skill executor's
//! [`Verifier`] against that server.
//!
//! The client never takes the verifier's word on trust: a received accepting verdict
//! becomes a [`CommitToken`] only through [`CommitToken::redeem`] (the verdict judged
//! exactly this request, by digest, and this side's own gate with the same typed limits
//! accepts it too), and a received outcome becomes a [`StepSuccess`] only through
//! [`StepSuccess::redeem`] against a token for a step this client committed.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use asp_core::Transform;
use asp_ros::convert;
use asp_ros::lifecycle::PrimaryState;
use asp_ros::msg::asp_interfaces::{
    CheckOutcome, CheckOutcomeRequest, CheckOutcomeResponse, CommitSkill, CommitSkillRequest,
    CommitSkillResponse, Verdict,
};
use asp_ros::msg::builtin_interfaces::Time;
use asp_ros::msg::std_msgs::Header;
use asp_ros::transport::{Client, Publisher, RosClock, ServiceServer};
use asp_ros::{Node, Qos};
use asp_skills::{Verifier, VerifierError};
use asp_verify::{
    CommitGate, CommitRequest, CommitToken, CommitVerdict, Outcome, OutcomeRequest, OutcomeVerdict,
    Review, StepId, StepSuccess,
};
use async_trait::async_trait;
use tokio::sync::watch;
use tracing::{info, warn};

use crate::NodeError;
use crate::names;

/// The QoS of `/asp/verdicts`: reliable, transient local, the last 100 verdicts for late
/// subscribers.
pub const VERDICTS_QOS: Qos = Qos::latched().with_depth(100);

/// How many committed steps a client remembers for redeeming their outcomes.
const REMEMBERED_COMMITS: usize = 64;

/// The topic message of a commit verdict, stamped `stamp`.
pub fn commit_message(v: &CommitVerdict, stamp: Time) -> Verdict {
    Verdict {
        header: Header::new(stamp, ""),
        stage: "commit".into(),
        step: v.step.0,
        skill: v.skill.name().into(),
        object: v.object.as_str().into(),
        passed: v.accepted,
        message: v.message.clone(),
        verdict_json: serde_json::to_string(v).unwrap_or_default(),
    }
}

/// The topic message of an outcome verdict, stamped `stamp`.
pub fn outcome_message(v: &OutcomeVerdict, stamp: Time) -> Verdict {
    Verdict {
        header: Header::new(stamp, ""),
        stage: "outcome".into(),
        step: v.step.0,
        skill: serde_json::to_value(v.verb)
            .ok()
            .and_then(|x| x.as_str().map(str::to_owned))
            .unwrap_or_default(),
        object: v.object.as_str().into(),
        passed: v.succeeded(),
        message: v.message.clone(),
        verdict_json: serde_json::to_string(v).unwrap_or_default(),
    }
}

/// Serves a verifier until dropped.
#[derive(Debug)]
pub struct VerifierServer {
    _commit: ServiceServer,
    _outcome: ServiceServer,
}

fn publish(p: &Publisher<Verdict>, v: Verdict) {
    if let Err(e) = p.publish(v) {
        warn!("cannot publish a verdict on {}: {e}", names::VERDICTS_TOPIC);
    }
}

/// Why a request is refused in the node's lifecycle state; `None` while active.
fn inactive(lifecycle: Option<&watch::Receiver<PrimaryState>>) -> Option<String> {
    let state = *lifecycle?.borrow();
    (state != PrimaryState::Active).then(|| {
        format!(
            "verifier_node is {state}, not active (lifecycle): it approves nothing until `ros2 lifecycle set /verifier_node activate`"
        )
    })
}

/// Serves `verifier`'s commit gate and outcome check on `node`, publishing every
/// verdict. While `lifecycle` is not active every request is refused: a deactivated
/// verifier commits no skill.
pub fn serve_verifier(
    node: &Node,
    verifier: Arc<dyn Verifier>,
    lifecycle: Option<watch::Receiver<PrimaryState>>,
) -> Result<VerifierServer, NodeError> {
    let verdicts = Arc::new(node.publisher::<Verdict>(names::VERDICTS_TOPIC, VERDICTS_QOS)?);

    let (v, p, l) = (verifier.clone(), verdicts.clone(), lifecycle.clone());
    let commit =
        node.serve::<CommitSkill, _, _>(names::COMMIT_SERVICE, move |req: CommitSkillRequest| {
            let (v, p, held) = (v.clone(), p.clone(), inactive(l.as_ref()));
            async move {
                let refuse = |message: String| CommitSkillResponse {
                    accepted: false,
                    step: 0,
                    message,
                    verdict_json: String::new(),
                };
                if let Some(why) = held {
                    warn!("commit refused: {why}");
                    return refuse(why);
                }
                let request: CommitRequest = match serde_json::from_str(&req.request_json) {
                    Ok(r) => r,
                    Err(e) => return refuse(format!("the commit request is not valid: {e}")),
                };
                let tf = if req.has_to_arm_base {
                    match convert::transform(&req.to_arm_base) {
                        Ok(t) => Some(t),
                        Err(e) => return refuse(format!("the arm-base transform: {e}")),
                    }
                } else {
                    None
                };
                let review = match v.commit(&request, tf.as_ref()).await {
                    Ok(r) => r,
                    Err(e) => return refuse(e.to_string()),
                };
                let verdict = review.verdict().clone();
                info!(step = %verdict.step, accepted = verdict.accepted, "{}", verdict.message);
                publish(&p, commit_message(&verdict, p.now()));
                CommitSkillResponse {
                    accepted: verdict.accepted,
                    step: verdict.step.0,
                    message: verdict.message.clone(),
                    verdict_json: serde_json::to_string(&verdict).unwrap_or_default(),
                }
            }
        })?;

    let (v, p, l) = (verifier, verdicts, lifecycle);
    let outcome = node.serve::<CheckOutcome, _, _>(
        names::OUTCOME_SERVICE,
        move |req: CheckOutcomeRequest| {
            let (v, p, held) = (v.clone(), p.clone(), inactive(l.as_ref()));
            async move {
                let refuse = |message: String| CheckOutcomeResponse {
                    succeeded: false,
                    message,
                    verdict_json: String::new(),
                };
                if let Some(why) = held {
                    warn!("outcome check refused: {why}");
                    return refuse(why);
                }
                let request: OutcomeRequest = match serde_json::from_str(&req.request_json) {
                    Ok(r) => r,
                    Err(e) => return refuse(format!("the outcome request is not valid: {e}")),
                };
                let verdict = match v.outcome(&request).await {
                    Ok(o) => o.verdict().clone(),
                    Err(e) => return refuse(e.to_string()),
                };
                info!(step = %verdict.step, succeeded = verdict.succeeded(), "{}", verdict.message);
                publish(&p, outcome_message(&verdict, p.now()));
                CheckOutcomeResponse {
                    succeeded: verdict.succeeded(),
                    message: verdict.message.clone(),
                    verdict_json: serde_json::to_string(&verdict).unwrap_or_default(),
                }
            }
        },
    )?;
    Ok(VerifierServer {
        _commit: commit,
        _outcome: outcome,
    })
}

/// What the client keeps of an accepted commit, to redeem the step's outcome.
struct Committed {
    verdict: CommitVerdict,
    request: CommitRequest,
    to_arm_base: Option<Transform>,
}

/// [`Verifier`] over verifier_node's services (see the module notes on redemption).
pub struct VerifierClient {
    commit: Client<CommitSkill>,
    outcome: Client<CheckOutcome>,
    gate: CommitGate,
    committed: Mutex<VecDeque<Committed>>,
    clock: RosClock,
}

impl std::fmt::Debug for VerifierClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VerifierClient")
            .field("gate", &self.gate)
            .finish_non_exhaustive()
    }
}

impl VerifierClient {
    /// A client on `node` whose received verdicts are re-checked with `gate` (this
    /// side's own configuration: `CommitGate::from_config`).
    pub fn new(node: &Node, gate: CommitGate) -> Result<Self, NodeError> {
        Ok(Self {
            commit: node.client(names::COMMIT_SERVICE)?,
            outcome: node.client(names::OUTCOME_SERVICE)?,
            gate,
            committed: Mutex::new(VecDeque::new()),
            clock: node.clock(),
        })
    }

    fn remember(&self, c: Committed) {
        let mut q = self
            .committed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        q.push_back(c);
        while q.len() > REMEMBERED_COMMITS {
            q.pop_front();
        }
    }

    /// A token for step `step`, redeemed again from what was committed for it.
    fn token_for(&self, step: StepId) -> Result<CommitToken, VerifierError> {
        let q = self
            .committed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let c = q.iter().find(|c| c.verdict.step == step).ok_or_else(|| {
            VerifierError::BadAnswer(format!("{step} was not committed through this client"))
        })?;
        CommitToken::redeem(&c.verdict, &c.request, &self.gate, c.to_arm_base.as_ref())
            .map_err(|e| VerifierError::BadAnswer(e.to_string()))
    }
}

#[async_trait]
impl Verifier for VerifierClient {
    async fn commit(
        &self,
        request: &CommitRequest,
        to_arm_base: Option<&Transform>,
    ) -> Result<Review, VerifierError> {
        let request_json = serde_json::to_string(request)
            .map_err(|e| VerifierError::BadAnswer(format!("cannot encode the request: {e}")))?;
        let r = self
            .commit
            .call(CommitSkillRequest {
                skill: request.skill.name().into(),
                object: request.object.as_str().into(),
                request_json,
                has_to_arm_base: to_arm_base.is_some(),
                to_arm_base: to_arm_base
                    .map(|t| convert::transform_stamped(t, self.clock.now()))
                    .unwrap_or_default(),
            })
            .await
            .map_err(|e| VerifierError::Unavailable(format!("{}: {e}", names::COMMIT_SERVICE)))?;
        if r.verdict_json.is_empty() {
            return Err(VerifierError::BadAnswer(r.message));
        }
        let verdict: CommitVerdict = serde_json::from_str(&r.verdict_json)
            .map_err(|e| VerifierError::BadAnswer(format!("the commit verdict: {e}")))?;
        if !verdict.accepted {
            return Ok(Review::Rejected(verdict));
        }
        let token = CommitToken::redeem(&verdict, request, &self.gate, to_arm_base)
            .map_err(|e| VerifierError::BadAnswer(e.to_string()))?;
        self.remember(Committed {
            verdict: verdict.clone(),
            request: request.clone(),
            to_arm_base: to_arm_base.cloned(),
        });
        Ok(Review::Accepted { token, verdict })
    }

    async fn outcome(&self, request: &OutcomeRequest) -> Result<Outcome, VerifierError> {
        let request_json = serde_json::to_string(request)
            .map_err(|e| VerifierError::BadAnswer(format!("cannot encode the request: {e}")))?;
        let r = self
            .outcome
            .call(CheckOutcomeRequest {
                step: request.step.0,
                verb: serde_json::to_value(request.verb)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default(),
                object: request.object.as_str().into(),
                request_json,
            })
            .await
            .map_err(|e| VerifierError::Unavailable(format!("{}: {e}", names::OUTCOME_SERVICE)))?;
        if r.verdict_json.is_empty() {
            return Err(VerifierError::BadAnswer(r.message));
        }
        let verdict: OutcomeVerdict = serde_json::from_str(&r.verdict_json)
            .map_err(|e| VerifierError::BadAnswer(format!("the outcome verdict: {e}")))?;
        if verdict.step != request.step {
            return Err(VerifierError::BadAnswer(format!(
                "the outcome verdict is for {}, the question was for {}",
                verdict.step, request.step
            )));
        }
        if !verdict.succeeded() {
            return Ok(Outcome::NotSucceeded(verdict));
        }
        let token = self.token_for(request.step)?;
        let success = StepSuccess::redeem(&verdict, &token)
            .map_err(|e| VerifierError::BadAnswer(e.to_string()))?;
        Ok(Outcome::Succeeded { success, verdict })
    }
}
