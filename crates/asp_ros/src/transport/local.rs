//! The in-process backend: typed channels with DDS-like semantics. Topics match
//! publishers and subscriptions by the request/offer QoS rules, keep each latched
//! publisher's last `depth` messages for late subscribers, and drop the oldest unread
//! message when a subscriber falls `depth` behind. Services and actions are
//! request/reply channels; one server per name.

use std::any::{Any, TypeId};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use async_trait::async_trait;
use tokio::sync::{mpsc, oneshot};

use super::mailbox::Mailbox;
use super::qos::{Durability, Qos};
use super::{AbortOnDrop, ClientPort, Guard, PublisherPort, ServiceHandler, SubscriptionPort};
use crate::RosError;
use crate::action::{
    ActionClientPort, ClientPorts, FEEDBACK_QOS, GoalRequest, GoalResponse, Incoming,
    ResultResponse, STATUS_QOS, ServerPorts,
};
use crate::msg::action_msgs::{CancelGoal, CancelGoalRequest, CancelGoalResponse, GoalStatusArray};
use crate::msg::unique_identifier_msgs::UUID;
use crate::msg::{RosAction, RosMessage, RosService};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The shared bus of one in-process transport.
#[derive(Default)]
pub(crate) struct Bus {
    topics: Mutex<HashMap<String, TopicEntry>>,
    services: Mutex<HashMap<String, ServiceEntry>>,
    next_id: AtomicU64,
}

struct TopicEntry {
    type_name: String,
    type_id: TypeId,
    chan: Arc<dyn Any + Send + Sync>,
}

struct ServiceEntry {
    type_name: String,
    type_id: TypeId,
    sender: Box<dyn Any + Send + Sync>,
}

struct TopicChan<M> {
    state: Mutex<TopicState<M>>,
}

struct TopicState<M> {
    publishers: HashMap<u64, PubState<M>>,
    subscribers: HashMap<u64, SubState<M>>,
}

struct PubState<M> {
    qos: Qos,
    history: VecDeque<M>,
}

struct SubState<M> {
    qos: Qos,
    mailbox: Weak<Mailbox<M>>,
}

impl Bus {
    fn id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    fn topic<M: Clone + Send + Sync + 'static>(
        &self,
        name: &str,
        type_name: &str,
    ) -> Result<Arc<TopicChan<M>>, RosError> {
        let mut topics = lock(&self.topics);
        let entry = topics
            .entry(name.to_string())
            .or_insert_with(|| TopicEntry {
                type_name: type_name.to_string(),
                type_id: TypeId::of::<M>(),
                chan: Arc::new(TopicChan::<M> {
                    state: Mutex::new(TopicState {
                        publishers: HashMap::new(),
                        subscribers: HashMap::new(),
                    }),
                }),
            });
        if entry.type_id != TypeId::of::<M>() {
            return Err(RosError::TypeMismatch {
                kind: "topic",
                name: name.to_string(),
                existing: entry.type_name.clone(),
                requested: type_name.to_string(),
            });
        }
        entry
            .chan
            .clone()
            .downcast::<TopicChan<M>>()
            .map_err(|_| RosError::Dds(format!("in-process topic {name}: channel type")))
    }

    pub(crate) fn publisher_raw<M: Clone + Send + Sync + 'static>(
        &self,
        name: &str,
        type_name: &str,
        qos: Qos,
    ) -> Result<LocalPublisher<M>, RosError> {
        let chan = self.topic::<M>(name, type_name)?;
        let id = self.id();
        lock(&chan.state).publishers.insert(
            id,
            PubState {
                qos,
                history: VecDeque::new(),
            },
        );
        Ok(LocalPublisher {
            chan,
            id,
            topic: name.to_string(),
        })
    }

    pub(crate) fn subscribe_raw<M: Clone + Send + Sync + 'static>(
        &self,
        name: &str,
        type_name: &str,
        qos: Qos,
        mailbox: Arc<Mailbox<M>>,
    ) -> Result<LocalSubscription<M>, RosError> {
        let chan = self.topic::<M>(name, type_name)?;
        let id = self.id();
        {
            let mut state = lock(&chan.state);
            // a latched subscriber gets the history of every latched publisher it matches
            if qos.durability == Durability::TransientLocal {
                for p in state.publishers.values() {
                    if qos.accepts(&p.qos) {
                        for m in &p.history {
                            mailbox.push(m.clone());
                        }
                    }
                }
            }
            state.subscribers.insert(
                id,
                SubState {
                    qos,
                    mailbox: Arc::downgrade(&mailbox),
                },
            );
        }
        Ok(LocalSubscription { chan, id, mailbox })
    }

    /// Registers a server for `name`; requests arrive on the returned receiver.
    pub(crate) fn serve_raw<Q: Send + 'static, P: Send + 'static>(
        self: &Arc<Self>,
        name: &str,
        type_name: &str,
    ) -> Result<(mpsc::UnboundedReceiver<Incoming<Q, P>>, ServiceRegistration), RosError> {
        let mut services = lock(&self.services);
        if let Some(existing) = services.get(name) {
            if existing.type_id != TypeId::of::<(Q, P)>() {
                return Err(RosError::TypeMismatch {
                    kind: "service",
                    name: name.to_string(),
                    existing: existing.type_name.clone(),
                    requested: type_name.to_string(),
                });
            }
            return Err(RosError::DuplicateServer {
                kind: "service",
                name: name.to_string(),
            });
        }
        let (tx, rx) = mpsc::unbounded_channel::<Incoming<Q, P>>();
        services.insert(
            name.to_string(),
            ServiceEntry {
                type_name: type_name.to_string(),
                type_id: TypeId::of::<(Q, P)>(),
                sender: Box::new(tx),
            },
        );
        Ok((
            rx,
            ServiceRegistration {
                bus: Arc::downgrade(self),
                name: name.to_string(),
            },
        ))
    }

    fn service_sender<Q: Send + 'static, P: Send + 'static>(
        &self,
        name: &str,
        type_name: &str,
    ) -> Result<Option<mpsc::UnboundedSender<Incoming<Q, P>>>, RosError> {
        let services = lock(&self.services);
        let Some(entry) = services.get(name) else {
            return Ok(None);
        };
        match entry
            .sender
            .downcast_ref::<mpsc::UnboundedSender<Incoming<Q, P>>>()
        {
            Some(tx) => Ok(Some(tx.clone())),
            None => Err(RosError::TypeMismatch {
                kind: "service",
                name: name.to_string(),
                existing: entry.type_name.clone(),
                requested: type_name.to_string(),
            }),
        }
    }

    /// Sends a request to the server of `name` and waits for the reply.
    pub(crate) async fn call_raw<Q: Send + 'static, P: Send + 'static>(
        &self,
        name: &str,
        type_name: &str,
        request: Q,
    ) -> Result<P, RosError> {
        let tx = self
            .service_sender::<Q, P>(name, type_name)?
            .ok_or_else(|| RosError::NotDiscovered {
                what: format!("service {name} ({type_name})"),
                timeout_s: 0.0,
            })?;
        let (reply, rx) = oneshot::channel();
        tx.send(Incoming { request, reply })
            .map_err(|_| RosError::Closed(format!("service {name}")))?;
        rx.await.map_err(|_| {
            RosError::Closed(format!("service {name} (the server dropped the request)"))
        })
    }

    fn has_server<Q: Send + 'static, P: Send + 'static>(&self, name: &str) -> bool {
        lock(&self.services)
            .get(name)
            .is_some_and(|e| e.type_id == TypeId::of::<(Q, P)>())
    }
}

/// Removes a service registration when dropped.
pub(crate) struct ServiceRegistration {
    bus: Weak<Bus>,
    name: String,
}

impl Drop for ServiceRegistration {
    fn drop(&mut self) {
        if let Some(bus) = self.bus.upgrade() {
            lock(&bus.services).remove(&self.name);
        }
    }
}

pub(crate) struct LocalPublisher<M> {
    chan: Arc<TopicChan<M>>,
    id: u64,
    topic: String,
}

impl<M: Clone + Send + Sync + 'static> LocalPublisher<M> {
    pub(crate) fn send(&self, msg: M) -> Result<(), RosError> {
        let mut state = lock(&self.chan.state);
        let Some(me) = state.publishers.get_mut(&self.id) else {
            return Err(RosError::Closed(format!("publisher on {}", self.topic)));
        };
        let offered = me.qos;
        if offered.durability == Durability::TransientLocal {
            if me.history.len() >= offered.depth.max(1) {
                me.history.pop_front();
            }
            me.history.push_back(msg.clone());
        }
        state
            .subscribers
            .retain(|_, s| s.mailbox.strong_count() > 0);
        for s in state.subscribers.values() {
            if s.qos.accepts(&offered)
                && let Some(mb) = s.mailbox.upgrade()
            {
                mb.push(msg.clone());
            }
        }
        Ok(())
    }

    fn matched(&self) -> usize {
        let state = lock(&self.chan.state);
        let Some(me) = state.publishers.get(&self.id) else {
            return 0;
        };
        state
            .subscribers
            .values()
            .filter(|s| s.mailbox.strong_count() > 0 && s.qos.accepts(&me.qos))
            .count()
    }
}

impl<M> Drop for LocalPublisher<M> {
    fn drop(&mut self) {
        lock(&self.chan.state).publishers.remove(&self.id);
    }
}

impl<M: RosMessage> PublisherPort<M> for LocalPublisher<M> {
    fn publish(&self, msg: M) -> Result<(), RosError> {
        self.send(msg)
    }

    fn subscription_count(&self) -> usize {
        self.matched()
    }
}

pub(crate) struct LocalSubscription<M> {
    chan: Arc<TopicChan<M>>,
    id: u64,
    mailbox: Arc<Mailbox<M>>,
}

impl<M> LocalSubscription<M> {
    fn matched(&self) -> usize {
        let state = lock(&self.chan.state);
        let Some(me) = state.subscribers.get(&self.id) else {
            return 0;
        };
        state
            .publishers
            .values()
            .filter(|p| me.qos.accepts(&p.qos))
            .count()
    }
}

impl<M> Drop for LocalSubscription<M> {
    fn drop(&mut self) {
        lock(&self.chan.state).subscribers.remove(&self.id);
        self.mailbox.close();
    }
}

impl<M: Send + Sync + 'static> SubscriptionPort for LocalSubscription<M> {
    fn publisher_count(&self) -> usize {
        self.matched()
    }
}

/// A node on the in-process bus.
pub(crate) struct LocalNode {
    bus: Arc<Bus>,
}

struct LocalClient<S: RosService> {
    bus: Arc<Bus>,
    name: String,
    _s: std::marker::PhantomData<fn() -> S>,
}

#[async_trait]
impl<S: RosService> ClientPort<S> for LocalClient<S> {
    async fn call(&self, request: S::Request) -> Result<S::Response, RosError> {
        self.bus
            .call_raw::<S::Request, S::Response>(&self.name, &S::type_name(), request)
            .await
    }

    fn server_ready(&self) -> bool {
        self.bus.has_server::<S::Request, S::Response>(&self.name)
    }
}

fn action_names(action: &str) -> [String; 5] {
    [
        format!("{action}/_action/send_goal"),
        format!("{action}/_action/cancel_goal"),
        format!("{action}/_action/get_result"),
        format!("{action}/_action/feedback"),
        format!("{action}/_action/status"),
    ]
}

impl LocalNode {
    pub(crate) fn new(bus: Arc<Bus>) -> Self {
        Self { bus }
    }

    pub(crate) fn publisher<M: RosMessage>(
        &self,
        topic: &str,
        qos: Qos,
    ) -> Result<Box<dyn PublisherPort<M>>, RosError> {
        Ok(Box::new(self.bus.publisher_raw::<M>(
            topic,
            &M::type_name(),
            qos,
        )?))
    }

    pub(crate) fn subscribe<M: RosMessage>(
        &self,
        topic: &str,
        qos: Qos,
        mailbox: Arc<Mailbox<M>>,
    ) -> Result<Box<dyn SubscriptionPort>, RosError> {
        Ok(Box::new(self.bus.subscribe_raw::<M>(
            topic,
            &M::type_name(),
            qos,
            mailbox,
        )?))
    }

    pub(crate) fn client<S: RosService>(
        &self,
        service: &str,
    ) -> Result<Box<dyn ClientPort<S>>, RosError> {
        // a server already there must have the same type
        self.bus
            .service_sender::<S::Request, S::Response>(service, &S::type_name())?;
        Ok(Box::new(LocalClient::<S> {
            bus: self.bus.clone(),
            name: service.to_string(),
            _s: std::marker::PhantomData,
        }))
    }

    pub(crate) fn serve<S: RosService>(
        &self,
        service: &str,
        handler: ServiceHandler<S>,
    ) -> Result<Guard, RosError> {
        let (mut rx, registration) = self
            .bus
            .serve_raw::<S::Request, S::Response>(service, &S::type_name())?;
        let task = tokio::spawn(async move {
            while let Some(Incoming { request, reply }) = rx.recv().await {
                let handler = handler.clone();
                tokio::spawn(async move {
                    let response = handler(request).await;
                    let _ = reply.send(response);
                });
            }
        });
        Ok(Box::new((registration, AbortOnDrop(task))))
    }

    pub(crate) fn action_server_ports<A: RosAction>(
        &self,
        action: &str,
    ) -> Result<ServerPorts<A>, RosError> {
        let [send_goal, cancel_goal, get_result, feedback, status] = action_names(action);
        let ty = A::type_name();
        let (goals, r1) = self.bus.serve_raw::<GoalRequest<A::Goal>, GoalResponse>(
            &send_goal,
            &format!("{ty}_SendGoal"),
        )?;
        let (cancels, r2) = self
            .bus
            .serve_raw::<CancelGoalRequest, CancelGoalResponse>(
                &cancel_goal,
                &CancelGoal::type_name(),
            )?;
        let (results, r3) = self.bus.serve_raw::<UUID, ResultResponse<A::Result>>(
            &get_result,
            &format!("{ty}_GetResult"),
        )?;
        let feedback_pub = Arc::new(self.bus.publisher_raw::<(UUID, A::Feedback)>(
            &feedback,
            &format!("{ty}_FeedbackMessage"),
            FEEDBACK_QOS,
        )?);
        let status_pub = self.bus.publisher_raw::<GoalStatusArray>(
            &status,
            &GoalStatusArray::type_name(),
            STATUS_QOS,
        )?;
        Ok(ServerPorts {
            goals,
            cancels,
            results,
            feedback: Arc::new(move |id, f| feedback_pub.send((id, f))),
            status: Box::new(move |array| status_pub.send(array)),
            guard: Box::new((r1, r2, r3)),
        })
    }

    pub(crate) fn action_client_ports<A: RosAction>(
        &self,
        action: &str,
    ) -> Result<ClientPorts<A>, RosError> {
        let [send_goal, cancel_goal, get_result, feedback, status] = action_names(action);
        let ty = A::type_name();
        let feedback_box = Arc::new(Mailbox::new(FEEDBACK_QOS.depth));
        let status_box = Arc::new(Mailbox::new(4));
        let feedback_sub = self.bus.subscribe_raw::<(UUID, A::Feedback)>(
            &feedback,
            &format!("{ty}_FeedbackMessage"),
            FEEDBACK_QOS,
            feedback_box.clone(),
        )?;
        let status_sub = self.bus.subscribe_raw::<GoalStatusArray>(
            &status,
            &GoalStatusArray::type_name(),
            STATUS_QOS,
            status_box.clone(),
        )?;
        Ok(ClientPorts {
            port: Box::new(LocalActionClient::<A> {
                bus: self.bus.clone(),
                names: [send_goal, cancel_goal, get_result],
                type_name: ty,
                _subs: (feedback_sub, status_sub),
            }),
            feedback: feedback_box,
            status: status_box,
        })
    }
}

struct LocalActionClient<A: RosAction> {
    bus: Arc<Bus>,
    names: [String; 3],
    type_name: String,
    _subs: (
        LocalSubscription<(UUID, A::Feedback)>,
        LocalSubscription<GoalStatusArray>,
    ),
}

#[async_trait]
impl<A: RosAction> ActionClientPort<A> for LocalActionClient<A> {
    async fn send_goal(&self, request: GoalRequest<A::Goal>) -> Result<GoalResponse, RosError> {
        self.bus
            .call_raw(
                &self.names[0],
                &format!("{}_SendGoal", self.type_name),
                request,
            )
            .await
    }

    async fn cancel(&self, request: CancelGoalRequest) -> Result<CancelGoalResponse, RosError> {
        self.bus
            .call_raw(&self.names[1], &CancelGoal::type_name(), request)
            .await
    }

    async fn get_result(&self, goal_id: UUID) -> Result<ResultResponse<A::Result>, RosError> {
        self.bus
            .call_raw(
                &self.names[2],
                &format!("{}_GetResult", self.type_name),
                goal_id,
            )
            .await
    }

    fn server_ready(&self) -> bool {
        self.bus
            .has_server::<GoalRequest<A::Goal>, GoalResponse>(&self.names[0])
            && self
                .bus
                .has_server::<CancelGoalRequest, CancelGoalResponse>(&self.names[1])
            && self
                .bus
                .has_server::<UUID, ResultResponse<A::Result>>(&self.names[2])
    }
}
