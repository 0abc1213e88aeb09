//! One API for topics, services and actions, over two backends:
//!
//! - **DDS** ([`Transport::dds`]): real ROS 2 on the wire through ros2-client and
//!   RustDDS: ROS 2 topic and type naming, the Fast DDS or Cyclone service mapping,
//!   ROS 2 action protocol. Talks to rclcpp/rclpy nodes, MoveIt 2, Nav2 and Cyclone DDS.
//! - **In-process** ([`Transport::in_process`]): typed tokio channels with the same
//!   semantics (QoS matching, latching, keep-last depth, timeouts), for unit tests and
//!   for running the whole node graph in one process.
//!
//! ```no_run
//! # async fn demo() -> Result<(), asp_ros::RosError> {
//! use asp_ros::msg::std_msgs;
//! use asp_ros::transport::{Qos, Transport};
//! let transport = Transport::in_process();
//! let node = transport.node("talker")?;
//! let publisher = node.publisher::<std_msgs::String>("/chatter", Qos::default_reliable())?;
//! let mut sub = node.subscribe::<std_msgs::String>("/chatter", Qos::default_reliable())?;
//! publisher.publish(std_msgs::String { data: "hi".into() })?;
//! assert_eq!(sub.recv().await.unwrap().data, "hi");
//! # Ok(()) }
//! ```

mod clock;
mod dds;
mod local;
pub(crate) mod mailbox;
pub mod qos;
mod record;
pub mod settings;

use std::any::Any;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::future::BoxFuture;

pub use clock::{CLOCK_SUBSCRIPTION_QOS, RosClock};
pub use qos::{Durability, Qos, Reliability};
pub use record::{OrphanResult, Recorded, RequestId, RequestRecord, result_endpoint};
pub use settings::{ServiceMapping, TransportSettings};

use crate::RosError;
use crate::action::{ActionClient, ActionServer, ActionServerOptions, GoalHandler};
use crate::msg::{RosAction, RosMessage, RosService};
use mailbox::Mailbox;

/// A transport: DDS on one domain, or an in-process bus. Nodes made from one in-process
/// transport share its bus. Cheap to clone.
#[derive(Clone)]
pub struct Transport {
    kind: TransportKind,
    settings: Arc<TransportSettings>,
}

#[derive(Clone)]
enum TransportKind {
    Dds,
    Local(Arc<local::Bus>),
}

impl std::fmt::Debug for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self.kind {
            TransportKind::Dds => "dds",
            TransportKind::Local(_) => "in_process",
        };
        f.debug_struct("Transport")
            .field("kind", &kind)
            .field("settings", &self.settings)
            .finish()
    }
}

impl Transport {
    /// DDS on `settings.domain_id`: every node made from it is a DDS participant of its
    /// own (so nodes of one process reach each other as reliably as across processes).
    pub fn dds(settings: TransportSettings) -> Result<Self, RosError> {
        if settings.domain_id > settings::MAX_DOMAIN_ID {
            return Err(RosError::Config(format!(
                "domain id {} is out of range 0-{}",
                settings.domain_id,
                settings::MAX_DOMAIN_ID
            )));
        }
        Ok(Self {
            kind: TransportKind::Dds,
            settings: Arc::new(settings),
        })
    }

    /// DDS configured from `common.transport` and the environment.
    pub fn from_config(
        cfg: &asp_config::sections::common::TransportConfig,
    ) -> Result<Self, RosError> {
        Self::dds(TransportSettings::from_config(cfg)?)
    }

    /// A fresh in-process bus with default timeouts.
    pub fn in_process() -> Self {
        Self::in_process_with(TransportSettings::default())
    }

    /// A fresh in-process bus with the given timeouts (domain and mapping are unused).
    pub fn in_process_with(settings: TransportSettings) -> Self {
        Self {
            kind: TransportKind::Local(Arc::new(local::Bus::default())),
            settings: Arc::new(settings),
        }
    }

    pub fn settings(&self) -> &TransportSettings {
        &self.settings
    }

    pub fn is_dds(&self) -> bool {
        matches!(self.kind, TransportKind::Dds)
    }

    /// A node named `name` in the root namespace.
    pub fn node(&self, name: &str) -> Result<Node, RosError> {
        self.node_in("/", name)
    }

    /// A node named `name` in `namespace` (relative names resolve against it).
    pub fn node_in(&self, namespace: &str, name: &str) -> Result<Node, RosError> {
        let node_name =
            ros2_client::NodeName::new(namespace, name).map_err(|e| RosError::InvalidName {
                name: format!("{namespace}/{name}"),
                reason: e.to_string(),
            })?;
        let kind = match &self.kind {
            TransportKind::Dds => NodeKind::Dds(dds::DdsNode::new(&self.settings, &node_name)?),
            TransportKind::Local(bus) => NodeKind::Local(local::LocalNode::new(bus.clone())),
        };
        Ok(Node {
            inner: Arc::new(NodeInner {
                namespace: node_name.namespace().to_string(),
                fq_name: node_name.fully_qualified_name(),
                kind,
                settings: self.settings.clone(),
                clock: RosClock::default(),
            }),
        })
    }
}

/// A ROS node: creates publishers, subscriptions, service clients and servers, action
/// clients and servers. Cheap to clone; entities keep working after the handle is
/// dropped as long as they live.
#[derive(Clone)]
pub struct Node {
    inner: Arc<NodeInner>,
}

struct NodeInner {
    namespace: String,
    fq_name: String,
    kind: NodeKind,
    settings: Arc<TransportSettings>,
    clock: RosClock,
}

enum NodeKind {
    Dds(dds::DdsNode),
    Local(local::LocalNode),
}

impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Node")
            .field("name", &self.inner.fq_name)
            .finish()
    }
}

impl Node {
    /// The fully qualified node name, e.g. `/agent_node`.
    pub fn name(&self) -> &str {
        &self.inner.fq_name
    }

    pub fn settings(&self) -> &TransportSettings {
        &self.inner.settings
    }

    /// The clock the node stamps its messages with (see [`Node::use_sim_time`]).
    pub fn clock(&self) -> RosClock {
        self.inner.clock.clone()
    }

    /// The node's time now: the system's, or the simulation's on simulated time.
    pub fn now(&self) -> crate::msg::builtin_interfaces::Time {
        self.inner.clock.now()
    }

    /// Puts the node on simulated time: its clock reads `/clock` from now on (ROS 2's
    /// `use_sim_time` parameter; each node follows `/clock` itself, as in rclcpp).
    pub fn use_sim_time(&self) -> Result<(), RosError> {
        if !self.inner.clock.is_sim_time() {
            let clock = self
                .subscribe::<crate::msg::rosgraph_msgs::Clock>("/clock", CLOCK_SUBSCRIPTION_QOS)?;
            self.inner.clock.follow(clock);
        }
        Ok(())
    }

    /// Resolves a topic, service or action name against the node's namespace and
    /// checks it against ROS 2's naming rules.
    pub fn resolve(&self, name: &str) -> Result<String, RosError> {
        let invalid = |reason: String| RosError::InvalidName {
            name: name.to_string(),
            reason,
        };
        let full = if name.starts_with('/') {
            name.to_string()
        } else if name.starts_with('~') {
            return Err(invalid("private (~) names are not supported".into()));
        } else if self.inner.namespace == "/" {
            format!("/{name}")
        } else {
            format!("{}/{name}", self.inner.namespace)
        };
        ros2_client::Name::parse(&full).map_err(|e| invalid(e.to_string()))?;
        Ok(full)
    }

    /// A publisher on `topic`.
    pub fn publisher<M: RosMessage>(
        &self,
        topic: &str,
        qos: Qos,
    ) -> Result<Publisher<M>, RosError> {
        let topic = self.resolve(topic)?;
        let port = match &self.inner.kind {
            NodeKind::Dds(n) => n.publisher::<M>(&topic, qos)?,
            NodeKind::Local(n) => n.publisher::<M>(&topic, qos)?,
        };
        Ok(Publisher {
            port,
            topic,
            node: self.clone(),
        })
    }

    /// A subscription to `topic`, holding at most `qos.depth` unread messages (older
    /// ones are dropped first, as DDS keep-last history does).
    pub fn subscribe<M: RosMessage>(
        &self,
        topic: &str,
        qos: Qos,
    ) -> Result<Subscription<M>, RosError> {
        let topic = self.resolve(topic)?;
        let mailbox = Arc::new(Mailbox::new(qos.depth));
        let port = match &self.inner.kind {
            NodeKind::Dds(n) => n.subscribe::<M>(&topic, qos, mailbox.clone())?,
            NodeKind::Local(n) => n.subscribe::<M>(&topic, qos, mailbox.clone())?,
        };
        Ok(Subscription {
            mailbox,
            port,
            topic,
            node: self.clone(),
        })
    }

    /// A client of service `service`.
    pub fn client<S: RosService>(&self, service: &str) -> Result<Client<S>, RosError> {
        let service = self.resolve(service)?;
        let port = match &self.inner.kind {
            NodeKind::Dds(n) => n.client::<S>(&service)?,
            NodeKind::Local(n) => n.client::<S>(&service)?,
        };
        Ok(Client {
            port,
            service,
            node: self.clone(),
        })
    }

    /// Serves `service`: every request runs `handler` in its own task, so a slow
    /// request does not hold up others. Serving stops when the returned handle drops.
    pub fn serve<S, F, Fut>(&self, service: &str, handler: F) -> Result<ServiceServer, RosError>
    where
        S: RosService,
        F: Fn(S::Request) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = S::Response> + Send + 'static,
    {
        self.serve_with::<S, F, Fut>(service, None, handler)
    }

    /// Serves `service` as [`Self::serve`] does, telling `recorded.record` of every
    /// request taken and answered, and answering the requests a previous process of
    /// the node left open (`recorded.orphans`). In-process transports have no
    /// requests that outlive a process: there the record is not used.
    pub fn serve_recorded<S, F, Fut>(
        &self,
        service: &str,
        recorded: Recorded<S::Response>,
        handler: F,
    ) -> Result<ServiceServer, RosError>
    where
        S: RosService,
        F: Fn(S::Request) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = S::Response> + Send + 'static,
    {
        self.serve_with::<S, F, Fut>(service, Some(recorded), handler)
    }

    fn serve_with<S, F, Fut>(
        &self,
        service: &str,
        recorded: Option<Recorded<S::Response>>,
        handler: F,
    ) -> Result<ServiceServer, RosError>
    where
        S: RosService,
        F: Fn(S::Request) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = S::Response> + Send + 'static,
    {
        let service = self.resolve(service)?;
        let handler: ServiceHandler<S> = Arc::new(move |req| Box::pin(handler(req)));
        let guard = match &self.inner.kind {
            NodeKind::Dds(n) => n.serve::<S>(&service, handler, recorded)?,
            NodeKind::Local(n) => n.serve::<S>(&service, handler)?,
        };
        Ok(ServiceServer {
            _guard: guard,
            service,
        })
    }

    /// An action server for `action` with Nav2-like semantics (see [`crate::action`]).
    pub fn action_server<A, H>(
        &self,
        action: &str,
        mut options: ActionServerOptions,
        handler: H,
    ) -> Result<ActionServer<A>, RosError>
    where
        A: RosAction,
        H: GoalHandler<A>,
    {
        let action = self.resolve(action)?;
        let ports = match &self.inner.kind {
            NodeKind::Dds(n) => n.action_server_ports::<A>(
                &action,
                options.record.clone(),
                &options.orphaned_results,
            )?,
            NodeKind::Local(n) => {
                // nothing in-process outlives the process
                options.record = None;
                n.action_server_ports::<A>(&action)?
            }
        };
        Ok(ActionServer::start(
            action,
            self.name().to_owned(),
            ports,
            options,
            handler,
            self.clock(),
        ))
    }

    /// An action client for `action`.
    pub fn action_client<A: RosAction>(&self, action: &str) -> Result<ActionClient<A>, RosError> {
        let action = self.resolve(action)?;
        let ports = match &self.inner.kind {
            NodeKind::Dds(n) => n.action_client_ports::<A>(&action)?,
            NodeKind::Local(n) => n.action_client_ports::<A>(&action)?,
        };
        Ok(ActionClient::start(action, ports, self.clone()))
    }
}

pub(crate) type ServiceHandler<S> = Arc<
    dyn Fn(<S as RosService>::Request) -> BoxFuture<'static, <S as RosService>::Response>
        + Send
        + Sync,
>;

/// Keeps an entity of a backend alive.
pub(crate) type Guard = Box<dyn Any + Send + Sync>;

/// Aborts a task when dropped.
pub(crate) struct AbortOnDrop(pub tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

pub(crate) trait PublisherPort<M>: Send + Sync {
    fn publish(&self, msg: M) -> Result<(), RosError>;
    fn subscription_count(&self) -> usize;
}

pub(crate) trait SubscriptionPort: Send + Sync {
    fn publisher_count(&self) -> usize;
}

#[async_trait]
pub(crate) trait ClientPort<S: RosService>: Send + Sync {
    /// Sends the request and waits for its reply (without a time limit; the caller
    /// bounds it).
    async fn call(&self, request: S::Request) -> Result<S::Response, RosError>;
    /// Whether a server is matched (request and reply paths).
    fn server_ready(&self) -> bool;
}

/// Polls `ready` until it holds or `timeout` passes.
pub(crate) async fn wait_until(
    what: impl FnOnce() -> String,
    timeout: Duration,
    mut ready: impl FnMut() -> bool,
) -> Result<(), RosError> {
    const POLL: Duration = Duration::from_millis(20);
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if ready() {
            return Ok(());
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(RosError::NotDiscovered {
                what: what(),
                timeout_s: timeout.as_secs_f64(),
            });
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Publishes messages of type `M` on one topic.
pub struct Publisher<M> {
    port: Box<dyn PublisherPort<M>>,
    topic: String,
    node: Node,
}

impl<M> std::fmt::Debug for Publisher<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Publisher")
            .field("topic", &self.topic)
            .finish()
    }
}

impl<M: RosMessage> Publisher<M> {
    pub fn topic(&self) -> &str {
        &self.topic
    }

    /// The publishing node's time now, for the message's stamp.
    pub fn now(&self) -> crate::msg::builtin_interfaces::Time {
        self.node.now()
    }

    /// Publishes `msg`. With reliable QoS this may wait briefly for room in the send
    /// window; an error names the topic.
    pub fn publish(&self, msg: M) -> Result<(), RosError> {
        self.port.publish(msg)
    }

    /// Matched subscriptions (remote ones on DDS).
    pub fn subscription_count(&self) -> usize {
        self.port.subscription_count()
    }

    /// Waits until at least one subscription is matched, so that the next message
    /// is not lost to discovery (the discovery timeout bounds the wait).
    pub async fn wait_for_subscribers(&self) -> Result<(), RosError> {
        let topic = self.topic.clone();
        wait_until(
            || format!("a subscriber of {topic}"),
            self.node.settings().discovery_timeout,
            || self.port.subscription_count() > 0,
        )
        .await
    }
}

/// Receives messages of type `M` from one topic.
pub struct Subscription<M> {
    mailbox: Arc<Mailbox<M>>,
    port: Box<dyn SubscriptionPort>,
    topic: String,
    node: Node,
}

impl<M> std::fmt::Debug for Subscription<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscription")
            .field("topic", &self.topic)
            .finish()
    }
}

impl<M: RosMessage> Subscription<M> {
    pub fn topic(&self) -> &str {
        &self.topic
    }

    /// The next message; `None` once the subscription can deliver no more.
    pub async fn recv(&mut self) -> Option<M> {
        self.mailbox.recv().await
    }

    /// The next message if one is waiting.
    pub fn try_recv(&mut self) -> Option<M> {
        self.mailbox.try_recv()
    }

    /// The newest waiting message, discarding older ones.
    pub fn latest(&mut self) -> Option<M> {
        self.mailbox.drain_latest()
    }

    /// The next message within `timeout`; an error names the topic.
    pub async fn recv_timeout(&mut self, timeout: Duration) -> Result<M, RosError> {
        match tokio::time::timeout(timeout, self.mailbox.recv()).await {
            Ok(Some(m)) => Ok(m),
            Ok(None) => Err(RosError::Closed(format!("subscription to {}", self.topic))),
            Err(_) => Err(RosError::Timeout {
                what: format!("waiting for a message on {}", self.topic),
                timeout_s: timeout.as_secs_f64(),
            }),
        }
    }

    /// Messages dropped because the reader fell more than `depth` behind.
    pub fn dropped(&self) -> u64 {
        self.mailbox.dropped()
    }

    /// Matched publishers.
    pub fn publisher_count(&self) -> usize {
        self.port.publisher_count()
    }

    /// Waits until at least one publisher is matched.
    pub async fn wait_for_publishers(&self) -> Result<(), RosError> {
        let topic = self.topic.clone();
        wait_until(
            || format!("a publisher of {topic}"),
            self.node.settings().discovery_timeout,
            || self.port.publisher_count() > 0,
        )
        .await
    }
}

/// Calls one service.
pub struct Client<S: RosService> {
    port: Box<dyn ClientPort<S>>,
    service: String,
    node: Node,
}

impl<S: RosService> std::fmt::Debug for Client<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("service", &self.service)
            .finish()
    }
}

impl<S: RosService> Client<S> {
    pub fn service(&self) -> &str {
        &self.service
    }

    /// Whether a server is matched right now.
    pub fn is_ready(&self) -> bool {
        self.port.server_ready()
    }

    /// Waits for a server (bounded by the discovery timeout).
    pub async fn wait_for_service(&self) -> Result<(), RosError> {
        let service = self.service.clone();
        wait_until(
            || format!("service {service} ({})", S::type_name()),
            self.node.settings().discovery_timeout,
            || self.port.server_ready(),
        )
        .await
    }

    /// Waits for a server, sends `request` and waits for the reply, within the
    /// discovery and call timeouts of the settings.
    pub async fn call(&self, request: S::Request) -> Result<S::Response, RosError> {
        self.call_with_timeout(request, self.node.settings().call_timeout)
            .await
    }

    /// Like [`Self::call`] with an explicit reply timeout.
    pub async fn call_with_timeout(
        &self,
        request: S::Request,
        timeout: Duration,
    ) -> Result<S::Response, RosError> {
        self.wait_for_service().await?;
        match tokio::time::timeout(timeout, self.port.call(request)).await {
            Ok(r) => r,
            Err(_) => Err(RosError::Timeout {
                what: format!("service {}", self.service),
                timeout_s: timeout.as_secs_f64(),
            }),
        }
    }
}

/// Serves a service until dropped.
pub struct ServiceServer {
    _guard: Guard,
    service: String,
}

impl std::fmt::Debug for ServiceServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceServer")
            .field("service", &self.service)
            .finish()
    }
}

impl ServiceServer {
    pub fn service(&self) -> &str {
        &self.service
    }
}
