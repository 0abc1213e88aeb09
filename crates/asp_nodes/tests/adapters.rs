//! The ROS adapters of the ports against small in-test implementations on the other side
//! (the in-process bus): failures keep their kind across the wire, cancelling
//! `/asp/execute` cancels the running skill, the e-stop topic aborts a skill and refuses
//! new ones until released, and the verifier client redeems only verdicts its own gate
//! agrees with.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use asp_config::sections::common::SafetyConfig;
use asp_config::sections::verifier::{GateConfig, OutcomeConfig};
use asp_core::robot::CancellationToken;
use asp_core::{FailureKind, FrameId, Object, ObjectId, ObjectKey, Point3, PointCloud, Skill};
use asp_nodes::estop::ESTOP_QOS;
use asp_nodes::map::{ObjectMapClient, serve_object_map};
use asp_nodes::skill::{SkillClient, serve_skills};
use asp_nodes::verifier::{VerifierClient, serve_verifier};
use asp_perception::Retrieval;
use asp_ros::action::{ActionServerOptions, GoalState};
use asp_ros::msg::asp_interfaces::{ExecuteGoalAction, ExecuteGoalActionGoal};
use asp_ros::msg::std_msgs::Bool;
use asp_ros::{Node, Transport};
use asp_skills::{LocalVerifier, SkillReport, SkillRequest, Verifier, VerifierError};
use asp_system::{
    AffordancePort, AffordanceQuery, MapObject, MapSnapshot, MapSummary, ObjectMapPort,
    RelocalizedObject, ServiceError, SkillPort, SkillReply, SpatialAnswer, SpatialQuery,
};
use asp_verify::{
    CommitEvidence, CommitGate, CommitRequest, GripperSnapshot, Outcome, OutcomeRequest,
    OutcomeVerifier, Snapshot, Verb,
};
use async_trait::async_trait;

const WAIT: Duration = Duration::from_secs(30);

fn key(s: &str) -> ObjectKey {
    ObjectKey::new(s).unwrap()
}

fn cube(z: f32) -> PointCloud {
    let mut pts = Vec::new();
    for i in 0..6 {
        for j in 0..6 {
            for k in 0..6 {
                pts.push(Point3::new(
                    0.4 + 0.01 * i as f32,
                    0.01 * j as f32,
                    z + 0.01 * k as f32,
                ));
            }
        }
    }
    PointCloud::new("map", pts)
}

/// A map that knows one mug.
struct OneMug;

#[async_trait]
impl ObjectMapPort for OneMug {
    async fn retrieve(&self, query: &str) -> Result<Retrieval, ServiceError> {
        Ok(Retrieval {
            query: query.to_owned(),
            keys: if query.contains("mug") {
                vec![key("mug_0")]
            } else {
                vec![]
            },
            candidates: vec![],
            room: None,
            storeys_counted_from: None,
        })
    }
    async fn recollect(
        &self,
        query: &str,
        within: &asp_core::Within,
    ) -> Result<asp_core::Recollection, ServiceError> {
        if within.room.as_deref() == Some("attic") {
            return Err(ServiceError::new(
                FailureKind::Perception,
                "cannot tell where the attic is",
            ));
        }
        Ok(asp_core::Recollection {
            query: query.to_owned(),
            room: within.room.clone(),
            storey: within.storey,
            consulted: true,
            places: vec![asp_core::RecalledObject {
                description: "red stapler".into(),
                position: [3.0, 1.0, 0.75],
                relevance: 0.8,
                distance_m: Some(3.2),
                looks_like: Some("office".into()),
                seen_with: vec!["wooden desk".into()],
            }],
            // what "go to the office" drives to: crosses the wire too
            room_landmarks: vec!["wooden desk".into()],
            note: String::new(),
        })
    }
    async fn spatial(&self, _: &SpatialQuery) -> Result<SpatialAnswer, ServiceError> {
        Ok(SpatialAnswer::Number(0.5))
    }
    async fn object(&self, k: &ObjectKey) -> Result<MapObject, ServiceError> {
        if k.as_str() != "mug_0" {
            return Err(ServiceError::unknown_object(k));
        }
        Ok(MapObject {
            key: k.clone(),
            query: "mug".into(),
            name: "the mug".into(),
            object: Object {
                id: ObjectId(0),
                point_cloud: cube(0.7),
                crops: vec![],
                features: vec![0.0; 4],
                observations: 1,
                affordances: vec![],
            },
            surroundings: Some(cube(0.7)),
        })
    }
    async fn rebuild(&self, _: Option<&ObjectKey>) -> Result<MapSummary, ServiceError> {
        Ok(MapSummary {
            objects: 1,
            keyframes: 1,
            kept_keys: vec![],
        })
    }
    async fn relocalize(
        &self,
        _: &ObjectKey,
        _: &str,
    ) -> Result<Option<RelocalizedObject>, ServiceError> {
        Ok(None)
    }
    async fn moved(&self, _: &ObjectKey, _: asp_core::Point3) -> Result<(), ServiceError> {
        Ok(())
    }
    async fn snapshot(&self) -> MapSnapshot {
        MapSnapshot {
            map: asp_core::ObjectMap::new(FrameId::map()),
            keys: Default::default(),
        }
    }
}

/// Detection that finds nothing.
struct NoParts;

#[async_trait]
impl AffordancePort for NoParts {
    async fn detect(
        &self,
        q: &AffordanceQuery,
        _: &CancellationToken,
    ) -> Result<asp_affordance::AffordanceReport, ServiceError> {
        Err(ServiceError::new(
            FailureKind::Grounding,
            format!("no parts of {}", q.key),
        ))
    }
}

/// A skill that runs until it is cancelled, counting the requests that reached it.
#[derive(Default)]
struct EndlessSkill {
    calls: AtomicUsize,
    cancelled: AtomicUsize,
    started: tokio::sync::Notify,
}

#[async_trait]
impl SkillPort for EndlessSkill {
    async fn execute(&self, request: SkillRequest, cancel: &CancellationToken) -> SkillReply {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.started.notify_one();
        cancel.cancelled().await;
        self.cancelled.fetch_add(1, Ordering::SeqCst);
        SkillReply {
            succeeded: false,
            failure: Some(asp_core::Failure::new(FailureKind::Cancelled)),
            report: SkillReport {
                skill: request.skill,
                object: request.object,
                holding: None,
                message: "stopped".into(),
                commit: None,
                outcome: None,
                stats: Default::default(),
                attempts: vec![],
                placed_at: None,
            },
        }
    }
}

fn node(t: &Transport, name: &str) -> Node {
    t.node(name).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn map_failures_keep_their_kind_across_the_wire() {
    let t = Transport::in_process();
    let _server = serve_object_map(&node(&t, "map"), Arc::new(OneMug), "map").unwrap();
    let client = ObjectMapClient::new(&node(&t, "client"))
        .unwrap()
        .with_crops(false);
    let e = client.object(&key("bowl_0")).await.unwrap_err();
    assert_eq!(e.failure.kind, FailureKind::UnknownObject);
    assert!(e.message.contains("bowl_0"), "{}", e.message);
    let o = client.object(&key("mug_0")).await.unwrap();
    assert_eq!(
        (o.name.as_str(), o.object.point_cloud.len()),
        ("the mug", 216)
    );
    // what the gripper must keep out of crosses the wire with it
    assert_eq!(o.surroundings.map(|s| s.len()), Some(216));
    assert_eq!(
        client.retrieve("red mug").await.unwrap().keys,
        [key("mug_0")]
    );
    assert_eq!(
        client
            .spatial(&SpatialQuery::SizeOf { a: key("mug_0") })
            .await
            .unwrap(),
        SpatialAnswer::Number(0.5)
    );
    // what the building memory recalls crosses whole, its failures keep their kind
    let office = asp_core::Within::room("office");
    let recalled = client.recollect("stapler", &office).await.unwrap();
    assert_eq!(
        recalled,
        OneMug.recollect("stapler", &office).await.unwrap()
    );
    // a storey crosses as its name and arrives as the same typed value
    let upstairs = asp_core::Within {
        storey: Some(asp_core::Storey::Numbered(2)),
        ..office
    };
    let recalled = client.recollect("stapler", &upstairs).await.unwrap();
    assert_eq!(recalled.storey, Some(asp_core::Storey::Numbered(2)));
    assert_eq!(
        recalled,
        OneMug.recollect("stapler", &upstairs).await.unwrap()
    );
    let e = client
        .recollect("stapler", &asp_core::Within::room("attic"))
        .await
        .unwrap_err();
    assert_eq!(e.failure.kind, FailureKind::Perception);
    assert!(e.message.contains("attic"), "{}", e.message);
    // a server that is not there is a retryable internal failure, not a hang
    let lonely = Transport::in_process_with(asp_ros::TransportSettings {
        discovery_timeout: Duration::from_millis(200),
        ..asp_ros::TransportSettings::default()
    });
    let e = ObjectMapClient::new(&node(&lonely, "c"))
        .unwrap()
        .retrieve("mug")
        .await
        .unwrap_err();
    assert_eq!(e.failure.kind, FailureKind::Internal);
    assert!(e.failure.retryable && e.message.contains("/asp/object_map/retrieve"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_the_goal_cancels_the_running_skill() {
    let data = tempfile::tempdir().unwrap();
    let cfg = common::config(&data, &[]);
    let t = Transport::in_process();
    let n = node(&t, "robot_side");
    let _map = serve_object_map(&n, Arc::new(OneMug), "map").unwrap();
    let _aff = asp_nodes::affordance::serve_affordances(&n, Arc::new(NoParts), None).unwrap();
    let skill = Arc::new(EndlessSkill::default());
    let _skills = serve_skills(&n, skill.clone(), ActionServerOptions::default()).unwrap();
    let _agent = asp_nodes::agent::agent_node(&cfg, &t).await.unwrap();

    let client = node(&t, "user")
        .action_client::<ExecuteGoalAction>("/asp/execute")
        .unwrap();
    let mut goal = client
        .send_goal(ExecuteGoalActionGoal {
            goal: "pick up the mug".into(),
        })
        .await
        .unwrap();
    tokio::time::timeout(WAIT, skill.started.notified())
        .await
        .expect("the grasp reached the skill executor");
    goal.cancel().await.unwrap();
    let end = goal
        .wait_for_state(GoalState::Canceled, WAIT)
        .await
        .unwrap();
    assert_eq!(end, GoalState::Canceled);
    let r = goal.result().await.unwrap();
    assert!(!r.result.success);
    assert_eq!(
        r.result.error_code,
        asp_ros::msg::asp_interfaces::error_code(FailureKind::Cancelled)
    );
    assert_eq!(skill.calls.load(Ordering::SeqCst), 1);
    assert_eq!(
        skill.cancelled.load(Ordering::SeqCst),
        1,
        "the skill was stopped"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_estop_topic_aborts_a_skill_and_refuses_new_ones_until_released() {
    let t = Transport::in_process();
    let n = node(&t, "skill_executor");
    let estop =
        asp_nodes::estop::EStopBinding::new(&n, "/asp/estop", std::time::Duration::ZERO, None)
            .unwrap();
    let skill = Arc::new(EndlessSkill::default());
    let _server = serve_skills(
        &n,
        skill.clone(),
        ActionServerOptions {
            estop: Some(estop.watch()),
            ..ActionServerOptions::default()
        },
    )
    .unwrap();
    let client = Arc::new(SkillClient::new(&node(&t, "agent")).unwrap());
    let button = node(&t, "button")
        .publisher::<Bool>("/asp/estop", ESTOP_QOS)
        .unwrap();
    let request = SkillRequest::new(Skill::Grasp, key("mug_0"), "the mug", cube(0.7));

    let c = client.clone();
    let r = request.clone();
    let running = tokio::spawn(async move { c.execute(r, &CancellationToken::new()).await });
    tokio::time::timeout(WAIT, skill.started.notified())
        .await
        .unwrap();
    button.publish(Bool { data: true }).unwrap();
    let reply = tokio::time::timeout(WAIT, running).await.unwrap().unwrap();
    assert!(!reply.succeeded);
    assert_eq!(skill.cancelled.load(Ordering::SeqCst), 1);
    assert!(estop.estop().is_engaged());

    // latched: refused before it reaches the executor
    let reply = client
        .execute(request.clone(), &CancellationToken::new())
        .await;
    assert!(!reply.succeeded, "{reply:?}");
    assert_eq!(skill.calls.load(Ordering::SeqCst), 1);

    // released: work is accepted again
    button.publish(Bool { data: false }).unwrap();
    let mut rx = estop.watch();
    tokio::time::timeout(WAIT, rx.wait_for(|e| !*e))
        .await
        .unwrap()
        .unwrap();
    let cancel = CancellationToken::new();
    let c = client.clone();
    let k = cancel.clone();
    let again = tokio::spawn(async move { c.execute(request, &k).await });
    tokio::time::timeout(WAIT, skill.started.notified())
        .await
        .unwrap();
    cancel.cancel();
    let reply = tokio::time::timeout(WAIT, again).await.unwrap().unwrap();
    assert_eq!(reply.failure.map(|f| f.kind), Some(FailureKind::Cancelled));
    assert_eq!(skill.calls.load(Ordering::SeqCst), 2);
}

/// REP-2006: deactivating the skill executor stops its running skill and holds motion
/// (the latch the arm and gripper clients stop on) without the e-stop topic saying
/// anything; it refuses skills until activated; each step is announced.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deactivating_the_skill_executor_stops_its_skill_and_holds_motion_until_activated() {
    use asp_ros::lifecycle::{PrimaryState, serve_lifecycle};
    use asp_ros::msg::lifecycle_msgs::{
        GetAvailableTransitions, GetAvailableTransitionsRequest, GetState, GetStateRequest,
        TransitionEvent,
    };
    let t = Transport::in_process();
    let n = node(&t, "skill_executor");
    let lifecycle = serve_lifecycle(&n, PrimaryState::Active).unwrap();
    let estop = asp_nodes::estop::EStopBinding::new(
        &n,
        "/asp/estop",
        Duration::ZERO,
        Some(lifecycle.watch()),
    )
    .unwrap();
    let skill = Arc::new(EndlessSkill::default());
    let _server = serve_skills(
        &n,
        skill.clone(),
        ActionServerOptions {
            estop: Some(estop.watch()),
            lifecycle: Some(lifecycle.watch()),
            ..ActionServerOptions::default()
        },
    )
    .unwrap();
    let me = node(&t, "operator");
    let mut events = me
        .subscribe::<TransitionEvent>(
            "/skill_executor/transition_event",
            asp_ros::Qos::default_reliable().with_depth(10),
        )
        .unwrap();
    let client = Arc::new(SkillClient::new(&node(&t, "agent")).unwrap());
    let request = SkillRequest::new(Skill::Grasp, key("mug_0"), "the mug", cube(0.7));

    let (c, r) = (client.clone(), request.clone());
    let running = tokio::spawn(async move { c.execute(r, &CancellationToken::new()).await });
    tokio::time::timeout(WAIT, skill.started.notified())
        .await
        .unwrap();
    // not available while active: refused, nothing changes
    assert!(!common::lifecycle_set(&me, "/skill_executor", "configure").await);
    assert_eq!(lifecycle.current(), PrimaryState::Active);
    assert!(common::lifecycle_set(&me, "/skill_executor", "deactivate").await);
    let reply = tokio::time::timeout(WAIT, running).await.unwrap().unwrap();
    assert!(!reply.succeeded);
    assert_eq!(
        skill.cancelled.load(Ordering::SeqCst),
        1,
        "the skill stopped"
    );
    let latch = estop.listener();
    tokio::time::timeout(WAIT, latch.engaged()).await.unwrap();
    assert!(!*estop.watch().borrow(), "the e-stop topic said nothing");

    let state = me
        .client::<GetState>("/skill_executor/get_state")
        .unwrap()
        .call(GetStateRequest::default())
        .await
        .unwrap();
    assert_eq!(state.current_state.label, "inactive");
    let available = me
        .client::<GetAvailableTransitions>("/skill_executor/get_available_transitions")
        .unwrap()
        .call(GetAvailableTransitionsRequest::default())
        .await
        .unwrap();
    let labels: Vec<&str> = available
        .available_transitions
        .iter()
        .map(|d| d.transition.label.as_str())
        .collect();
    assert_eq!(labels, ["cleanup", "activate", "shutdown"]);
    let steps: Vec<(String, String)> = [events.recv().await.unwrap(), events.recv().await.unwrap()]
        .into_iter()
        .map(|e| (e.start_state.label, e.goal_state.label))
        .collect();
    assert_eq!(
        steps,
        [
            ("active".to_owned(), "deactivating".to_owned()),
            ("deactivating".to_owned(), "inactive".to_owned())
        ]
    );

    // inactive: refused before it reaches the executor
    let reply = client
        .execute(request.clone(), &CancellationToken::new())
        .await;
    assert!(!reply.succeeded, "{reply:?}");
    assert_eq!(skill.calls.load(Ordering::SeqCst), 1);

    // activated: the latch is released and skills are taken again
    assert!(common::lifecycle_set(&me, "/skill_executor", "activate").await);
    let held = estop.listener();
    tokio::time::timeout(WAIT, async {
        while held.is_engaged() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .unwrap();
    let cancel = CancellationToken::new();
    let (c, k) = (client.clone(), cancel.clone());
    let again = tokio::spawn(async move { c.execute(request, &k).await });
    tokio::time::timeout(WAIT, skill.started.notified())
        .await
        .unwrap();
    cancel.cancel();
    let reply = tokio::time::timeout(WAIT, again).await.unwrap().unwrap();
    assert_eq!(reply.failure.map(|f| f.kind), Some(FailureKind::Cancelled));
    assert_eq!(skill.calls.load(Ordering::SeqCst), 2);
}

fn commit_request(x: f32) -> CommitRequest {
    CommitRequest {
        skill: Skill::Grasp,
        object: key("mug_0"),
        frame: FrameId::new("link_base"),
        targets: vec![Point3::new(x, 0.0, 0.1)],
        evidence: CommitEvidence::Object { points: 500 },
    }
}

fn gate(safety: SafetyConfig, instance: u32) -> CommitGate {
    CommitGate::new(GateConfig::default(), safety, "link_base", instance)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_verifier_client_redeems_verdicts_and_refuses_one_its_gate_rejects() {
    let t = Transport::in_process();
    let verifier = LocalVerifier::new(
        gate(SafetyConfig::default(), 5),
        OutcomeVerifier::new(OutcomeConfig::default(), None),
    );
    let _server = serve_verifier(&node(&t, "verifier"), Arc::new(verifier), None).unwrap();
    let me = node(&t, "executor");
    let mut verdicts = me
        .subscribe::<asp_ros::msg::asp_interfaces::Verdict>(
            "/asp/verdicts",
            asp_nodes::verifier::VERDICTS_QOS,
        )
        .unwrap();
    let client = VerifierClient::new(&me, gate(SafetyConfig::default(), 0)).unwrap();

    let req = commit_request(0.3);
    let review = client.commit(&req, None).await.unwrap();
    let verdict = review.verdict().clone();
    let token = review.into_token().unwrap();
    assert_eq!(token.step(), verdict.step);
    assert_eq!(token.step().0 >> 32, 5, "the server's step id");
    assert!(token.covers(&req));

    let snap = |z: f32, holding: bool| Snapshot {
        object_cloud: Some(cube(z)),
        target_cloud: None,
        gripper: GripperSnapshot {
            holding,
            tool_position: None,
        },
        ..Snapshot::default()
    };
    let outcome = OutcomeRequest {
        step: token.step(),
        verb: Verb::PickUp,
        object: key("mug_0"),
        object_name: "the mug".into(),
        device: None,
        target: None,
        before: snap(0.7, false),
        after: snap(0.8, true),
    };
    match client.outcome(&outcome).await.unwrap() {
        Outcome::Succeeded { success, verdict } => {
            assert_eq!(success.step(), token.step());
            assert!(verdict.succeeded());
        }
        Outcome::NotSucceeded(v) => panic!("{v:?}"),
    }
    // not lifted: the verifier says no, and no success is made of it
    let failed = OutcomeRequest {
        after: snap(0.7, true),
        ..outcome.clone()
    };
    assert!(matches!(
        client.outcome(&failed).await.unwrap(),
        Outcome::NotSucceeded(_)
    ));
    // a step this client never committed cannot succeed through it
    let stranger = OutcomeRequest {
        step: asp_verify::StepId(token.step().0 + 100),
        ..outcome
    };
    assert!(matches!(
        client.outcome(&stranger).await,
        Err(VerifierError::BadAnswer(_))
    ));
    // every verdict went out on the topic
    let mut stages = Vec::new();
    while let Ok(v) = verdicts.recv_timeout(Duration::from_millis(500)).await {
        stages.push((v.stage, v.passed));
    }
    assert!(stages.contains(&("commit".to_string(), true)), "{stages:?}");
    assert!(stages.contains(&("outcome".to_string(), true)));
    assert!(stages.contains(&("outcome".to_string(), false)));

    // a verifier with looser limits accepts a target 3 m away; this side's gate does not
    let loose = SafetyConfig {
        workspace: asp_config::sections::common::WorkspaceBox {
            min: [-10.0; 3],
            max: [10.0; 3],
        },
        ..SafetyConfig::default()
    };
    let t2 = Transport::in_process();
    let _lax = serve_verifier(
        &node(&t2, "verifier"),
        Arc::new(LocalVerifier::new(
            gate(loose, 6),
            OutcomeVerifier::new(OutcomeConfig::default(), None),
        )),
        None,
    )
    .unwrap();
    let strict =
        VerifierClient::new(&node(&t2, "executor"), gate(SafetyConfig::default(), 0)).unwrap();
    match strict.commit(&commit_request(3.0), None).await {
        Err(VerifierError::BadAnswer(m)) => assert!(m.contains("reject"), "{m}"),
        other => panic!("a token from a verdict this side rejects: {other:?}"),
    }
}
