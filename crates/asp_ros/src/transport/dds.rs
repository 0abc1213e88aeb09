//! The DDS backend, on ros2-client and RustDDS.
//!
//! - One DDS participant (ros2-client `Context`) per node, with one ros2-client `Node`
//!   and its spinner task (which tracks endpoint matching). Within one participant
//!   RustDDS delivery is unreliable (a writer may publish before it matched a local
//!   reader, and the Fast DDS service mapping loses the request id), so nodes never
//!   share one; two nodes of one process talk over loopback like two processes.
//! - Subscriptions and service servers are read by one task each from ros2-client's
//!   async streams (a RustDDS reader keeps a single waker, so it has one consumer).
//! - Service clients and an action client's three internal clients send one request
//!   at a time each: ros2-client reads replies per call, so two calls in flight on one
//!   client could take each other's replies. Action results are fetched after the goal's
//!   status turned terminal, so that lock is held briefly.
//! - An action server's three request readers are registered with a mio poller on a
//!   small thread that hands requests to the transport-independent server (ros2-client
//!   only lends them by `&mut`, so they cannot be turned into streams side by side).
//! - Readiness ("matched") comes from the node's matching tables, which the spinner
//!   keeps; waiting for it avoids losing the first message after discovery.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use futures::{FutureExt, StreamExt};
use ros2_client::action::{
    ActionClientQosPolicies, ActionServerQosPolicies, FeedbackMessage, SendGoalRequest,
};
use ros2_client::{ActionTypeName, MessageTypeName, Name, NodeName, NodeOptions, ServiceTypeName};
use rustdds::mio1;
use tokio::sync::{mpsc, oneshot};
use tracing::{debug, info, warn};

use super::mailbox::Mailbox;
use super::qos::Qos;
use super::record::{self, OrphanResult, Recorded, RequestId, RequestRecord};
use super::settings::TransportSettings;
use super::{AbortOnDrop, ClientPort, Guard, PublisherPort, ServiceHandler, SubscriptionPort};
use crate::RosError;
use crate::action::{
    ActionClientPort, ClientPorts, FEEDBACK_QOS, GoalRequest, GoalResponse, Incoming,
    ResultResponse, STATUS_QOS, ServerPorts,
};
use crate::msg::action_msgs::{
    CancelGoalRequest, CancelGoalResponse, GoalInfo, GoalStatus, GoalStatusArray,
};
use crate::msg::builtin_interfaces::Time;
use crate::msg::unique_identifier_msgs::UUID;
use crate::msg::{Namespace, RosAction, RosMessage, RosService};

type RosNode = Arc<Mutex<ros2_client::Node>>;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// One ROS node with its own DDS participant and spinner.
pub(crate) struct DdsNode {
    node: RosNode,
    mapping: ros2_client::ServiceMapping,
    /// How long a reply waits for its client's response reader to match.
    reply_wait: Duration,
    _spinner: AbortOnDrop,
    // dropped last: the participant outlives the node's entities
    _context: ros2_client::Context,
}

fn ros_name(name: &str) -> Result<Name, RosError> {
    Name::parse(name).map_err(|e| RosError::InvalidName {
        name: name.to_string(),
        reason: e.to_string(),
    })
}

fn runtime() -> Result<tokio::runtime::Handle, RosError> {
    tokio::runtime::Handle::try_current().map_err(|_| {
        RosError::Config("the DDS transport must be used inside a tokio runtime".into())
    })
}

fn uuid_to_ros(id: UUID) -> ros2_client::unique_identifier_msgs::UUID {
    ros2_client::unique_identifier_msgs::UUID {
        uuid: uuid::Uuid::from_bytes(id.uuid),
    }
}

fn uuid_from_ros(id: ros2_client::unique_identifier_msgs::UUID) -> UUID {
    UUID {
        uuid: id.uuid.into_bytes(),
    }
}

fn time_to_ros(t: &Time) -> ros2_client::builtin_interfaces::Time {
    ros2_client::builtin_interfaces::Time::new(t.sec, t.nanosec)
}

fn time_from_ros(t: ros2_client::builtin_interfaces::Time) -> Time {
    let nanos = t.to_nanos();
    Time {
        sec: nanos.div_euclid(1_000_000_000) as i32,
        nanosec: nanos.rem_euclid(1_000_000_000) as u32,
    }
}

fn status_to_ros(code: i8) -> ros2_client::action_msgs::GoalStatusEnum {
    use ros2_client::action_msgs::GoalStatusEnum as E;
    match code {
        GoalStatus::STATUS_ACCEPTED => E::Accepted,
        GoalStatus::STATUS_EXECUTING => E::Executing,
        GoalStatus::STATUS_CANCELING => E::Canceling,
        GoalStatus::STATUS_SUCCEEDED => E::Succeeded,
        GoalStatus::STATUS_CANCELED => E::Canceled,
        GoalStatus::STATUS_ABORTED => E::Aborted,
        _ => E::Unknown,
    }
}

fn status_from_ros(s: ros2_client::action_msgs::GoalStatusEnum) -> i8 {
    s as i8
}

fn status_array_to_ros(a: &GoalStatusArray) -> ros2_client::action_msgs::GoalStatusArray {
    ros2_client::action_msgs::GoalStatusArray {
        status_list: a
            .status_list
            .iter()
            .map(|s| ros2_client::action_msgs::GoalStatus {
                goal_info: ros2_client::action_msgs::GoalInfo {
                    goal_id: uuid_to_ros(s.goal_info.goal_id),
                    stamp: time_to_ros(&s.goal_info.stamp),
                },
                status: status_to_ros(s.status),
            })
            .collect(),
    }
}

fn status_array_from_ros(a: ros2_client::action_msgs::GoalStatusArray) -> GoalStatusArray {
    GoalStatusArray {
        status_list: a
            .status_list
            .into_iter()
            .map(|s| GoalStatus {
                goal_info: GoalInfo {
                    goal_id: uuid_from_ros(s.goal_info.goal_id),
                    stamp: time_from_ros(s.goal_info.stamp),
                },
                status: status_from_ros(s.status),
            })
            .collect(),
    }
}

fn cancel_response_to_ros(r: &CancelGoalResponse) -> ros2_client::action_msgs::CancelGoalResponse {
    use ros2_client::action_msgs::CancelGoalResponseEnum as E;
    ros2_client::action_msgs::CancelGoalResponse {
        return_code: match r.return_code {
            CancelGoalResponse::ERROR_NONE => E::None,
            CancelGoalResponse::ERROR_UNKNOWN_GOAL_ID => E::UnknownGoal,
            CancelGoalResponse::ERROR_GOAL_TERMINATED => E::GoalTerminated,
            _ => E::Rejected,
        },
        goals_canceling: r
            .goals_canceling
            .iter()
            .map(|g| ros2_client::action_msgs::GoalInfo {
                goal_id: uuid_to_ros(g.goal_id),
                stamp: time_to_ros(&g.stamp),
            })
            .collect(),
    }
}

fn cancel_response_from_ros(r: ros2_client::action_msgs::CancelGoalResponse) -> CancelGoalResponse {
    CancelGoalResponse {
        return_code: r.return_code as i8,
        goals_canceling: r
            .goals_canceling
            .into_iter()
            .map(|g| GoalInfo {
                goal_id: uuid_from_ros(g.goal_id),
                stamp: time_from_ros(g.stamp),
            })
            .collect(),
    }
}

fn service_qos() -> ros2_client::QosProfile {
    Qos::default_reliable().to_ros2()
}

impl DdsNode {
    pub(crate) fn new(settings: &TransportSettings, name: &NodeName) -> Result<Self, RosError> {
        let rt = runtime()?;
        let context = ros2_client::Context::with_options(
            ros2_client::ContextOptions::new().domain_id(settings.domain_id),
        )
        .map_err(|e| RosError::dds(format!("joining DDS domain {}", settings.domain_id), e))?;
        let mut node = context
            .new_node(
                name.clone(),
                NodeOptions::new()
                    .enable_rosout(true)
                    .start_parameter_services(false),
            )
            .map_err(|e| {
                RosError::dds(format!("creating node {}", name.fully_qualified_name()), e)
            })?;
        let spinner = node
            .spinner()
            .map_err(|e| RosError::dds("starting the node spinner", e))?;
        let fq = name.fully_qualified_name();
        let task = rt.spawn(async move {
            if let Err(e) = spinner.spin().await {
                warn!(node = %fq, "spinner stopped: {e}");
            }
        });
        Ok(Self {
            node: Arc::new(Mutex::new(node)),
            mapping: settings.service_mapping.to_ros2(),
            reply_wait: settings.discovery_timeout,
            _spinner: AbortOnDrop(task),
            _context: context,
        })
    }

    fn topic<M: RosMessage>(&self, name: &str, qos: Qos) -> Result<rustdds::Topic, RosError> {
        if M::NAMESPACE != Namespace::Msg {
            return Err(RosError::Conversion(format!(
                "{} is part of a service or action, not a topic type",
                M::type_name()
            )));
        }
        lock(&self.node)
            .create_topic(
                &ros_name(name)?,
                MessageTypeName::new(M::PACKAGE, M::NAME),
                &qos.to_ros2(),
            )
            .map_err(|e| RosError::dds(format!("creating topic {name}"), e))
    }

    pub(crate) fn publisher<M: RosMessage>(
        &self,
        name: &str,
        qos: Qos,
    ) -> Result<Box<dyn PublisherPort<M>>, RosError> {
        let topic = self.topic::<M>(name, qos)?;
        let publisher = lock(&self.node)
            .create_publisher::<M>(&topic, Some(qos.to_ros2()))
            .map_err(|e| RosError::dds(format!("creating a publisher on {name}"), e))?;
        Ok(Box::new(DdsPublisher {
            publisher,
            node: self.node.clone(),
            topic: name.to_string(),
        }))
    }

    pub(crate) fn subscribe<M: RosMessage>(
        &self,
        name: &str,
        qos: Qos,
        mailbox: Arc<Mailbox<M>>,
    ) -> Result<Box<dyn SubscriptionPort>, RosError> {
        let topic = self.topic::<M>(name, qos)?;
        let subscription = Arc::new(
            lock(&self.node)
                .create_subscription::<M>(&topic, Some(qos.to_ros2()))
                .map_err(|e| RosError::dds(format!("subscribing to {name}"), e))?,
        );
        let task = runtime()?.spawn(pump(
            subscription.clone(),
            mailbox.clone(),
            name.to_string(),
            |m: M| m,
        ));
        Ok(Box::new(DdsSubscription {
            subscription,
            node: self.node.clone(),
            mailbox,
            _task: AbortOnDrop(task),
        }))
    }

    pub(crate) fn client<S: RosService>(
        &self,
        service: &str,
    ) -> Result<Box<dyn ClientPort<S>>, RosError> {
        let client = lock(&self.node)
            .create_client::<S::Request, S::Response>(
                self.mapping,
                &ros_name(service)?,
                &ServiceTypeName::new(S::PACKAGE, S::NAME),
                service_qos(),
                service_qos(),
            )
            .map_err(|e| RosError::dds(format!("creating a client of {service}"), e))?;
        Ok(Box::new(DdsClient::<S> {
            client,
            node: self.node.clone(),
            participant: self._context.domain_participant(),
            request_topic: format!("rq{service}Request"),
            one_at_a_time: tokio::sync::Mutex::new(()),
            name: service.to_string(),
        }))
    }

    pub(crate) fn serve<S: RosService>(
        &self,
        service: &str,
        handler: ServiceHandler<S>,
        recorded: Option<Recorded<S::Response>>,
    ) -> Result<Guard, RosError> {
        let server = Arc::new(
            lock(&self.node)
                .create_server::<S::Request, S::Response>(
                    self.mapping,
                    &ros_name(service)?,
                    &ServiceTypeName::new(S::PACKAGE, S::NAME),
                    service_qos(),
                    service_qos(),
                )
                .map_err(|e| RosError::dds(format!("serving {service}"), e))?,
        );
        let name = service.to_string();
        let (participant, reply_wait) = (self._context.domain_participant(), self.reply_wait);
        let reply_topic = format!("rr{service}Reply");
        let bad = BadRequests::new(name.clone(), self.mapping);
        let (record, orphans) = match recorded {
            Some(Recorded {
                record,
                orphans,
                orphan_answer,
            }) => (Some(record), Some((orphans, orphan_answer))),
            None => (None, None),
        };
        let rt = runtime()?;
        if let Some((orphans, answer)) = orphans {
            for id in orphans {
                let (server, record, name, answer, reply_topic) = (
                    server.clone(),
                    record.clone(),
                    name.clone(),
                    answer.clone(),
                    reply_topic.clone(),
                );
                let participant = participant.clone();
                rt.spawn(async move {
                    let send = async { Some(server.async_send_response(id.into(), answer).await) };
                    answer_orphan(&participant, &reply_topic, id, &name, record, send).await;
                });
            }
        }
        let task = rt.spawn(async move {
            let requests = server.receive_request_stream();
            futures::pin_mut!(requests);
            while let Some(next) = requests.next().await {
                match next {
                    Ok((id, request)) => {
                        let (server, handler, name, record) = (
                            server.clone(),
                            handler.clone(),
                            name.clone(),
                            record.clone(),
                        );
                        if let Some(record) = &record {
                            record.taken(&name, id.into(), None);
                        }
                        let (participant, reply_topic) = (participant.clone(), reply_topic.clone());
                        tokio::spawn(async move {
                            let response = handler(request).await;
                            client_reachable(&participant, &reply_topic, id, reply_wait, &name)
                                .await;
                            if let Err(e) = server.async_send_response(id, response).await {
                                warn!(service = %name, "could not send a reply: {e}");
                            }
                            if let Some(record) = record {
                                record.answered(&name, id.into());
                            }
                        });
                    }
                    Err(e) => bad.report("request", &e),
                }
            }
        });
        Ok(Box::new(AbortOnDrop(task)))
    }

    pub(crate) fn action_server_ports<A: RosAction>(
        &self,
        action: &str,
        record: Option<Arc<dyn RequestRecord>>,
        orphans: &[OrphanResult],
    ) -> Result<ServerPorts<A>, RosError> {
        let qos = ActionServerQosPolicies {
            goal_service: service_qos(),
            result_service: service_qos(),
            cancel_service: service_qos(),
            feedback_publisher: FEEDBACK_QOS.to_ros2(),
            status_publisher: STATUS_QOS.to_ros2(),
        };
        let mut server = lock(&self.node)
            .create_action_server::<A::Goal, A::Result, A::Feedback>(
                self.mapping,
                &ros_name(action)?,
                &ActionTypeName::new(A::PACKAGE, A::NAME),
                qos,
            )
            .map_err(|e| RosError::dds(format!("creating action server {action}"), e))?;
        let (goals_tx, goals) = mpsc::unbounded_channel();
        let (cancels_tx, cancels) = mpsc::unbounded_channel();
        let (results_tx, results) = mpsc::unbounded_channel();
        let poll = mio1::Poll::new().map_err(|e| RosError::dds("creating a poller", e))?;
        let register = |source: &mut dyn mio1::event::Source, token: usize| {
            poll.registry()
                .register(source, mio1::Token(token), mio1::Interest::READABLE)
                .map_err(|e| RosError::dds(format!("registering action server {action}"), e))
        };
        register(server.goal_server(), 0)?;
        register(server.cancel_server(), 1)?;
        register(server.result_server(), 2)?;
        let waker = Arc::new(
            mio1::Waker::new(poll.registry(), mio1::Token(3))
                .map_err(|e| RosError::dds("creating a waker", e))?,
        );
        let server = Arc::new(server);
        let stop = Arc::new(AtomicBool::new(false));
        let rt = runtime()?;
        let endpoint = record::result_endpoint(action);
        // the previous process's open result requests: asked of the server's goal
        // table (which holds their goals as ended) once each client is seen
        for orphan in orphans.iter().copied() {
            let (server, results, record, endpoint) = (
                server.clone(),
                results_tx.clone(),
                record.clone(),
                endpoint.clone(),
            );
            let participant = self._context.domain_participant();
            rt.spawn(async move {
                let reply_topic = format!("rr{endpoint}Reply");
                let send = async {
                    let (reply, rx) = oneshot::channel::<ResultResponse<A::Result>>();
                    let asked = Incoming {
                        request: orphan.goal,
                        reply,
                    };
                    results.send(asked).ok()?;
                    let r = rx.await.ok()?;
                    let response = ros2_client::action::GetResultResponse {
                        status: status_to_ros(r.status),
                        result: r.result,
                    };
                    Some(server.send_result(orphan.id.into(), response))
                };
                answer_orphan(
                    &participant,
                    &reply_topic,
                    orphan.id,
                    &endpoint,
                    record,
                    send,
                )
                .await;
            });
        }
        let reactor = ActionReactor::<A> {
            server: server.clone(),
            goals: goals_tx,
            cancels: cancels_tx,
            results: results_tx,
            rt,
            name: action.to_string(),
            bad: BadRequests::new(action.to_string(), self.mapping),
            record,
            result_endpoint: endpoint,
            participant: self._context.domain_participant(),
            reply_wait: self.reply_wait,
        };
        let thread_stop = stop.clone();
        std::thread::Builder::new()
            .name("asp-action".into())
            .spawn(move || reactor.run(poll, &thread_stop))
            .map_err(|e| RosError::dds("starting the action server thread", e))?;
        let (fb_server, st_server, name_fb, name_st) = (
            server.clone(),
            server.clone(),
            action.to_string(),
            action.to_string(),
        );
        Ok(ServerPorts {
            goals,
            cancels,
            results,
            feedback: Arc::new(move |id, feedback| {
                fb_server
                    .send_feedback(uuid_to_ros(id), feedback)
                    .map_err(|e| RosError::dds(format!("feedback of {name_fb}"), e))
            }),
            status: Box::new(move |array| {
                st_server
                    .send_goal_statuses(status_array_to_ros(&array))
                    .map_err(|e| RosError::dds(format!("status of {name_st}"), e))
            }),
            guard: Box::new(ReactorGuard { stop, waker }),
        })
    }

    pub(crate) fn action_client_ports<A: RosAction>(
        &self,
        action: &str,
    ) -> Result<ClientPorts<A>, RosError> {
        let qos = ActionClientQosPolicies {
            goal_service: service_qos(),
            result_service: service_qos(),
            cancel_service: service_qos(),
            feedback_subscription: FEEDBACK_QOS.to_ros2(),
            status_subscription: STATUS_QOS.to_ros2(),
        };
        let client = Arc::new(
            lock(&self.node)
                .create_action_client::<A::Goal, A::Result, A::Feedback>(
                    self.mapping,
                    &ros_name(action)?,
                    &ActionTypeName::new(A::PACKAGE, A::NAME),
                    qos,
                )
                .map_err(|e| RosError::dds(format!("creating action client {action}"), e))?,
        );
        let feedback = Arc::new(Mailbox::new(FEEDBACK_QOS.depth));
        let status = Arc::new(Mailbox::new(4));
        let rt = runtime()?;
        let name = action.to_string();
        let fb_task = rt.spawn({
            let (client, feedback, name) = (client.clone(), feedback.clone(), name.clone());
            async move {
                let stream = client.feedback_subscription().async_stream();
                futures::pin_mut!(stream);
                while let Some(next) = stream.next().await {
                    match next {
                        Ok((
                            FeedbackMessage {
                                goal_id,
                                feedback: f,
                            },
                            _,
                        )) => feedback.push((uuid_from_ros(goal_id), f)),
                        Err(e) => warn!(action = %name, "bad feedback message: {e}"),
                    }
                }
            }
        });
        let st_task = rt.spawn({
            let (client, status, name) = (client.clone(), status.clone(), name.clone());
            async move {
                let stream = client.all_statuses_stream();
                futures::pin_mut!(stream);
                while let Some(next) = stream.next().await {
                    match next {
                        Ok(array) => status.push(status_array_from_ros(array)),
                        Err(e) => warn!(action = %name, "bad status message: {e}"),
                    }
                }
            }
        });
        Ok(ClientPorts {
            port: Box::new(DdsActionClient::<A> {
                client,
                node: self.node.clone(),
                participant: self._context.domain_participant(),
                locks: Default::default(),
                name,
                _tasks: (AbortOnDrop(fb_task), AbortOnDrop(st_task)),
            }),
            feedback,
            status,
        })
    }
}

/// Moves messages from a ros2-client subscription into a mailbox.
async fn pump<T: serde::de::DeserializeOwned + 'static, U>(
    subscription: Arc<ros2_client::Subscription<T>>,
    mailbox: Arc<Mailbox<U>>,
    topic: String,
    map: impl Fn(T) -> U,
) {
    let stream = subscription.async_stream();
    futures::pin_mut!(stream);
    while let Some(next) = stream.next().await {
        match next {
            Ok((m, _info)) => mailbox.push(map(m)),
            Err(e) => warn!(topic = %topic, "could not read a message: {e}"),
        }
    }
    mailbox.close();
}

struct DdsPublisher<M: RosMessage> {
    publisher: ros2_client::Publisher<M>,
    node: RosNode,
    topic: String,
}

impl<M: RosMessage> PublisherPort<M> for DdsPublisher<M> {
    fn publish(&self, msg: M) -> Result<(), RosError> {
        self.publisher
            .publish(msg)
            .map_err(|e| RosError::dds(format!("publishing on {}", self.topic), e))
    }

    fn subscription_count(&self) -> usize {
        let node = lock(&self.node);
        // ros2-client logs an error when asked for the count of a writer that has not
        // matched anything yet; its wait future answers "matched?" quietly
        if self
            .publisher
            .wait_for_subscription(&node)
            .now_or_never()
            .is_some()
        {
            self.publisher.get_subscription_count(&node)
        } else {
            0
        }
    }
}

struct DdsSubscription<M: RosMessage> {
    subscription: Arc<ros2_client::Subscription<M>>,
    node: RosNode,
    mailbox: Arc<Mailbox<M>>,
    _task: AbortOnDrop,
}

impl<M: RosMessage> Drop for DdsSubscription<M> {
    fn drop(&mut self) {
        self.mailbox.close();
    }
}

impl<M: RosMessage> SubscriptionPort for DdsSubscription<M> {
    fn publisher_count(&self) -> usize {
        let node = lock(&self.node);
        if self
            .subscription
            .wait_for_publisher(&node)
            .now_or_never()
            .is_some()
        {
            self.subscription.get_publisher_count(&node)
        } else {
            0
        }
    }
}

struct DdsClient<S: RosService> {
    client: ros2_client::Client<S::Request, S::Response>,
    node: RosNode,
    /// To see which servers (readers of the request topic) the participant knows.
    participant: rustdds::DomainParticipant,
    /// The DDS topic of the requests (`rq/<service>Request`).
    request_topic: String,
    one_at_a_time: tokio::sync::Mutex<()>,
    name: String,
}

/// Requests a server cannot decode, said once per server with their likely cause: a
/// client on the other RMW's service mapping (rmw_cyclonedds_cpp puts a 16-byte header
/// in front of every payload, rmw_fastrtps_cpp does not). Later ones go to debug level,
/// so a mismatched peer does not flood the log.
pub(crate) struct BadRequests {
    what: String,
    mapping: ros2_client::ServiceMapping,
    said: AtomicBool,
}

impl BadRequests {
    pub(crate) fn new(what: String, mapping: ros2_client::ServiceMapping) -> Self {
        Self {
            what,
            mapping,
            said: AtomicBool::new(false),
        }
    }

    /// The RMW whose mapping this server uses, and the one a mismatched client likely
    /// runs.
    pub(crate) fn rmws(&self) -> (&'static str, &'static str) {
        match self.mapping {
            ros2_client::ServiceMapping::Enhanced => ("rmw_fastrtps_cpp", "rmw_cyclonedds_cpp"),
            _ => ("rmw_cyclonedds_cpp", "rmw_fastrtps_cpp"),
        }
    }

    /// Reports one request of `kind` that did not decode.
    pub(crate) fn report(&self, kind: &str, e: &dyn std::fmt::Display) {
        if self.said.swap(true, Ordering::SeqCst) {
            debug!(server = %self.what, "bad {kind}: {e}");
            return;
        }
        let (ours, theirs) = self.rmws();
        warn!(
            server = %self.what,
            "a {kind} does not decode with {ours}'s service mapping ({e}): the client most likely runs RMW_IMPLEMENTATION={theirs}; set /**.transport.rmw_implementation (or RMW_IMPLEMENTATION) the same on both sides. Said once; later ones are logged at debug level"
        );
    }
}

/// How often a waiting call looks for a new server, and how long it gives the request
/// writer to match one before sending again.
const NEW_SERVER_POLL: std::time::Duration = std::time::Duration::from_millis(250);
const MATCH_SETTLE: std::time::Duration = std::time::Duration::from_millis(300);

impl From<ros2_client::request_id::RmwRequestId> for RequestId {
    fn from(id: ros2_client::request_id::RmwRequestId) -> Self {
        Self {
            writer: id.writer_gid.to_bytes16(),
            sequence: id.sequence_number,
        }
    }
}

impl From<RequestId> for ros2_client::request_id::RmwRequestId {
    fn from(id: RequestId) -> Self {
        Self {
            writer_gid: id.writer.into(),
            sequence_number: id.sequence,
        }
    }
}

/// How long an orphaned request's answer waits for its client to be discovered
/// before it is sent anyway (a client that is gone too never shows up; sent, the
/// answer then reaches nobody).
const ORPHAN_PATIENCE: Duration = Duration::from_secs(15);

/// Whether `participant` knows a reader of `reply_topic` in the process that sent
/// request `id` (so that a reply, sent on a volatile topic, can reach it).
fn client_known(
    participant: &rustdds::DomainParticipant,
    reply_topic: &str,
    id: RequestId,
) -> bool {
    participant.discovered_readers().into_iter().any(|r| {
        r.subscription_topic_data.topic_name() == reply_topic
            && r.reader_proxy.remote_reader_guid.to_bytes().as_ref()[..8] == id.client_process()
    })
}

/// Waits, looking every `poll`, until [`client_known`] and then [`MATCH_SETTLE`] for the
/// match; false when `patience` passed first.
async fn client_seen(
    participant: &rustdds::DomainParticipant,
    reply_topic: &str,
    id: RequestId,
    poll: Duration,
    patience: Duration,
) -> bool {
    let deadline = tokio::time::Instant::now() + patience;
    while !client_known(participant, reply_topic, id) {
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(poll).await;
    }
    tokio::time::sleep(MATCH_SETTLE).await;
    true
}

/// Answers request `id` a previous process of `endpoint`'s server left open: once its
/// client is seen, runs `send` (`None`: the server is gone, nothing was sent) and marks
/// the request answered in `record`.
async fn answer_orphan<E: std::fmt::Display>(
    participant: &rustdds::DomainParticipant,
    reply_topic: &str,
    id: RequestId,
    endpoint: &str,
    record: Option<Arc<dyn RequestRecord>>,
    send: impl std::future::Future<Output = Option<Result<(), E>>>,
) {
    if !client_seen(
        participant,
        reply_topic,
        id,
        NEW_SERVER_POLL,
        ORPHAN_PATIENCE,
    )
    .await
    {
        debug!(server = %endpoint, request = %id, "the client of an orphaned request was not seen: answering anyway");
    }
    match send.await {
        None => return,
        Some(Ok(())) => {
            info!(server = %endpoint, request = %id, "answered a request the previous process left open")
        }
        Some(Err(e)) => warn!(server = %endpoint, "could not answer an orphaned request: {e}"),
    }
    if let Some(record) = record {
        record.answered(endpoint, id);
    }
}

/// Waits until a reply can reach its client: `participant` knows the response reader
/// (on `reply_topic`) of the client that sent request `id`. Discovery runs each way on
/// its own, so a client that just appeared may have seen the server (and sent its
/// request) before the server has seen the client's reader; a reply written then goes
/// to no one (the writer is volatile) and the client waits for it until its call times
/// out. rmw_cyclonedds waits the same way. A known client costs one look; a new one
/// waits for discovery and then [`MATCH_SETTLE`] for the match, at most `bound` (a
/// client that left is not waited for longer than discovery may take; the reply then
/// goes out anyway). Only the first 8 bytes of the GUID prefix are compared: the
/// Cyclone service mapping carries no more.
async fn client_reachable(
    participant: &rustdds::DomainParticipant,
    reply_topic: &str,
    id: ros2_client::request_id::RmwRequestId,
    bound: Duration,
    service: &str,
) {
    let id = RequestId::from(id);
    if client_known(participant, reply_topic, id) {
        return;
    }
    if !client_seen(participant, reply_topic, id, REPLY_POLL, bound).await {
        warn!(
            service = %service,
            "the client's response reader was not discovered within {:.0} s: replying anyway",
            bound.as_secs_f64()
        );
    }
}

/// How often a reply looks for its client's response reader.
const REPLY_POLL: Duration = Duration::from_millis(20);

/// The servers `participant` knows of a service: the readers of its request topic.
fn servers(
    participant: &rustdds::DomainParticipant,
    request_topic: &str,
) -> std::collections::BTreeSet<rustdds::GUID> {
    participant
        .discovered_readers()
        .into_iter()
        .filter(|r| r.subscription_topic_data.topic_name() == request_topic)
        .map(|r| r.reader_proxy.remote_reader_guid)
        .collect()
}

/// Runs `call` (send a request, await its reply) and sends it again when a new server
/// appears before the reply. A server that restarted (killed, then started again) stays
/// matched until DDS's participant lease runs out, so a request may reach only the dead
/// one and be lost; sent again, it reaches the new one, as it would have had that one
/// been there (every server of a ROS 2 service receives every request).
async fn resend_to_new_servers<T, Fut>(
    participant: &rustdds::DomainParticipant,
    request_topic: &str,
    name: &str,
    mut call: impl FnMut() -> Fut,
) -> T
where
    Fut: std::future::Future<Output = T>,
{
    loop {
        let known = servers(participant, request_topic);
        let new_server = async {
            loop {
                tokio::time::sleep(NEW_SERVER_POLL).await;
                if servers(participant, request_topic)
                    .difference(&known)
                    .next()
                    .is_some()
                {
                    tokio::time::sleep(MATCH_SETTLE).await;
                    return;
                }
            }
        };
        tokio::select! {
            reply = call() => return reply,
            () = new_server => {
                info!(service = %name, "a new server appeared while a request waited for its reply: sending it again");
            }
        }
    }
}

#[async_trait]
impl<S: RosService> ClientPort<S> for DdsClient<S> {
    async fn call(&self, request: S::Request) -> Result<S::Response, RosError> {
        let _turn = self.one_at_a_time.lock().await;
        resend_to_new_servers(&self.participant, &self.request_topic, &self.name, || {
            self.client.async_call_service(request.clone())
        })
        .await
        .map_err(|e| RosError::dds(format!("calling {}", self.name), e))
    }

    fn server_ready(&self) -> bool {
        let node = lock(&self.node);
        self.client.wait_for_service(&node).now_or_never().is_some()
    }
}

#[derive(Default)]
struct ClientLocks {
    goal: tokio::sync::Mutex<()>,
    cancel: tokio::sync::Mutex<()>,
    result: tokio::sync::Mutex<()>,
}

struct DdsActionClient<A: RosAction> {
    client: Arc<ros2_client::ActionClient<A::Goal, A::Result, A::Feedback>>,
    node: RosNode,
    /// To send a request again when a new server appears (see
    /// [`resend_to_new_servers`]).
    participant: rustdds::DomainParticipant,
    locks: ClientLocks,
    name: String,
    _tasks: (AbortOnDrop, AbortOnDrop),
}

impl<A: RosAction> DdsActionClient<A> {
    /// The DDS request topic of one of the action's services (`send_goal`, …).
    fn request_topic(&self, service: &str) -> String {
        format!("rq{}/_action/{service}Request", self.name)
    }
}

#[async_trait]
impl<A: RosAction> ActionClientPort<A> for DdsActionClient<A> {
    async fn send_goal(&self, request: GoalRequest<A::Goal>) -> Result<GoalResponse, RosError> {
        let _turn = self.locks.goal.lock().await;
        let response = resend_to_new_servers(
            &self.participant,
            &self.request_topic("send_goal"),
            &self.name,
            || {
                self.client
                    .goal_client()
                    .async_call_service(SendGoalRequest {
                        goal_id: uuid_to_ros(request.goal_id),
                        goal: request.goal.clone(),
                    })
            },
        )
        .await
        .map_err(|e| RosError::dds(format!("sending a goal to {}", self.name), e))?;
        Ok(GoalResponse {
            accepted: response.accepted,
            stamp: time_from_ros(response.stamp),
        })
    }

    async fn cancel(&self, request: CancelGoalRequest) -> Result<CancelGoalResponse, RosError> {
        let _turn = self.locks.cancel.lock().await;
        let GoalInfo { goal_id, stamp } = request.goal_info;
        let response = resend_to_new_servers(
            &self.participant,
            &self.request_topic("cancel_goal"),
            &self.name,
            || {
                self.client
                    .async_cancel_goal(uuid_to_ros(goal_id), time_to_ros(&stamp))
            },
        )
        .await
        .map_err(|e| RosError::dds(format!("cancelling on {}", self.name), e))?;
        Ok(cancel_response_from_ros(response))
    }

    async fn get_result(&self, goal_id: UUID) -> Result<ResultResponse<A::Result>, RosError> {
        let _turn = self.locks.result.lock().await;
        let (status, result) = resend_to_new_servers(
            &self.participant,
            &self.request_topic("get_result"),
            &self.name,
            || self.client.async_request_result(uuid_to_ros(goal_id)),
        )
        .await
        .map_err(|e| RosError::dds(format!("fetching a result from {}", self.name), e))?;
        Ok(ResultResponse {
            status: status_from_ros(status),
            result,
        })
    }

    fn server_ready(&self) -> bool {
        let node = lock(&self.node);
        let c = &self.client;
        c.goal_client()
            .wait_for_service(&node)
            .now_or_never()
            .is_some()
            && c.cancel_client()
                .wait_for_service(&node)
                .now_or_never()
                .is_some()
            && c.result_client()
                .wait_for_service(&node)
                .now_or_never()
                .is_some()
            && c.feedback_subscription()
                .wait_for_publisher(&node)
                .now_or_never()
                .is_some()
            && c.status_subscription()
                .wait_for_publisher(&node)
                .now_or_never()
                .is_some()
    }
}

/// Stops an action server's reactor thread when dropped.
struct ReactorGuard {
    stop: Arc<AtomicBool>,
    waker: Arc<mio1::Waker>,
}

impl Drop for ReactorGuard {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Err(e) = self.waker.wake() {
            warn!("could not wake an action server thread to stop it: {e}");
        }
    }
}

type RosActionServer<A> = ros2_client::ActionServer<
    <A as RosAction>::Goal,
    <A as RosAction>::Result,
    <A as RosAction>::Feedback,
>;

/// Reads an action server's requests on its own thread.
struct ActionReactor<A: RosAction> {
    /// Told of the result requests taken and answered.
    record: Option<Arc<dyn RequestRecord>>,
    result_endpoint: String,
    server: Arc<RosActionServer<A>>,
    goals: mpsc::UnboundedSender<Incoming<GoalRequest<A::Goal>, GoalResponse>>,
    cancels: mpsc::UnboundedSender<Incoming<CancelGoalRequest, CancelGoalResponse>>,
    results: mpsc::UnboundedSender<Incoming<UUID, ResultResponse<A::Result>>>,
    rt: tokio::runtime::Handle,
    name: String,
    bad: BadRequests,
    /// For [`client_reachable`] before each reply.
    participant: rustdds::DomainParticipant,
    reply_wait: Duration,
}

impl<A: RosAction> ActionReactor<A> {
    fn run(self, mut poll: mio1::Poll, stop: &AtomicBool) {
        let mut events = mio1::Events::with_capacity(16);
        loop {
            // readiness is edge-triggered: drain everything after every wake-up (and
            // every half second, should an edge be missed)
            self.drain();
            if stop.load(Ordering::SeqCst) {
                debug!(action = %self.name, "action server thread stops");
                return;
            }
            if let Err(e) = poll.poll(&mut events, Some(Duration::from_millis(500)))
                && e.kind() != std::io::ErrorKind::Interrupted
            {
                warn!(action = %self.name, "action server poller failed: {e}");
                return;
            }
        }
    }

    fn drain(&self) {
        loop {
            match self.server.receive_goal() {
                Ok(Some((req_id, request))) => {
                    let (reply, rx) = oneshot::channel();
                    let incoming = Incoming {
                        request: GoalRequest {
                            goal_id: uuid_from_ros(request.goal_id),
                            goal: request.goal,
                        },
                        reply,
                    };
                    if self.goals.send(incoming).is_err() {
                        return;
                    }
                    let (server, name) = (self.server.clone(), self.name.clone());
                    let (participant, bound) = (self.participant.clone(), self.reply_wait);
                    self.rt.spawn(async move {
                        if let Ok(r) = rx.await {
                            let reply_topic = format!("rr{name}/_action/send_goalReply");
                            client_reachable(&participant, &reply_topic, req_id, bound, &name)
                                .await;
                            let response = ros2_client::action::SendGoalResponse {
                                accepted: r.accepted,
                                stamp: time_to_ros(&r.stamp),
                            };
                            if let Err(e) = server.send_goal_response(req_id, response) {
                                warn!(action = %name, "could not answer a goal: {e}");
                            }
                        }
                    });
                }
                Ok(None) => break,
                Err(e) => {
                    self.bad.report("goal request", &e);
                    break;
                }
            }
        }
        loop {
            match self.server.receive_cancel_request() {
                Ok(Some((req_id, request))) => {
                    let request: CancelGoalRequest = match crate::cdr::transcode(&request) {
                        Ok(r) => r,
                        Err(e) => {
                            self.bad.report("cancel request", &e);
                            continue;
                        }
                    };
                    let (reply, rx) = oneshot::channel();
                    if self.cancels.send(Incoming { request, reply }).is_err() {
                        return;
                    }
                    let (server, name) = (self.server.clone(), self.name.clone());
                    let (participant, bound) = (self.participant.clone(), self.reply_wait);
                    self.rt.spawn(async move {
                        if let Ok(r) = rx.await {
                            let reply_topic = format!("rr{name}/_action/cancel_goalReply");
                            client_reachable(&participant, &reply_topic, req_id, bound, &name)
                                .await;
                            if let Err(e) =
                                server.send_cancel_response(req_id, cancel_response_to_ros(&r))
                            {
                                warn!(action = %name, "could not answer a cancel request: {e}");
                            }
                        }
                    });
                }
                Ok(None) => break,
                Err(e) => {
                    self.bad.report("cancel request", &e);
                    break;
                }
            }
        }
        loop {
            match self.server.receive_result_request() {
                Ok(Some((req_id, request))) => {
                    let (reply, rx) = oneshot::channel();
                    let goal = uuid_from_ros(request.goal_id);
                    let incoming = Incoming {
                        request: goal,
                        reply,
                    };
                    if let Some(record) = &self.record {
                        record.taken(&self.result_endpoint, req_id.into(), Some(goal));
                    }
                    if self.results.send(incoming).is_err() {
                        return;
                    }
                    let (server, name) = (self.server.clone(), self.name.clone());
                    let (record, endpoint) = (self.record.clone(), self.result_endpoint.clone());
                    let (participant, bound) = (self.participant.clone(), self.reply_wait);
                    self.rt.spawn(async move {
                        if let Ok(r) = rx.await {
                            let reply_topic = format!("rr{endpoint}Reply");
                            client_reachable(&participant, &reply_topic, req_id, bound, &name)
                                .await;
                            let response = ros2_client::action::GetResultResponse {
                                status: status_to_ros(r.status),
                                result: r.result,
                            };
                            if let Err(e) = server.send_result(req_id, response) {
                                warn!(action = %name, "could not send a result: {e}");
                            }
                            if let Some(record) = record {
                                record.answered(&endpoint, req_id.into());
                            }
                        }
                    });
                }
                Ok(None) => break,
                Err(e) => {
                    self.bad.report("result request", &e);
                    break;
                }
            }
        }
    }
}
