//! A TF listener: the latest transform of every frame from `/tf` and `/tf_static`,
//! composed along the tree on lookup (no time travel or interpolation: ASP asks for
//! "where is it now"). Each dynamic edge remembers the stamp it came with, so that a
//! consumer of stamped data (a camera frame) can wait until the tree is at least as new
//! as its data ([`TfBuffer::wait_for_fresh`]).

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use asp_core::{FrameId, Isometry3, Transform};
use tracing::warn;

use crate::RosError;
use crate::convert;
use crate::msg::builtin_interfaces::Time;
use crate::msg::tf2_msgs::TFMessage;
use crate::transport::{AbortOnDrop, Node, Qos, Subscription, wait_until};

/// The QoS of `/tf` (tf2's dynamic listener: reliable, volatile, depth 100).
pub const TF_QOS: Qos = Qos::default_reliable().with_depth(100);
/// The QoS of `/tf_static` (latched).
pub const TF_STATIC_QOS: Qos = Qos::latched().with_depth(100);

#[derive(Debug, Clone)]
struct Edge {
    parent: FrameId,
    iso: Isometry3,
    /// The stamp of a `/tf` edge; `None` for static edges (`/tf_static`, or inserted
    /// directly), which are always fresh.
    stamp: Option<Time>,
}

fn stamp_key(t: &Time) -> (i32, u32) {
    (t.sec, t.nanosec)
}

#[derive(Debug, Default)]
struct Tree {
    /// child → (parent, parent_T_child)
    edges: HashMap<FrameId, Edge>,
}

impl Tree {
    fn insert(&mut self, tf: Transform, stamp: Option<Time>) {
        if tf.parent == tf.child {
            return;
        }
        self.edges.insert(
            tf.child,
            Edge {
                parent: tf.parent,
                iso: tf.iso,
                stamp,
            },
        );
    }

    /// The oldest stamp of the dynamic edges between `frame` and `ancestor`; `None`
    /// when every edge on the way is static.
    fn oldest_stamp(&self, frame: &FrameId, ancestor: &FrameId) -> Option<Time> {
        let mut oldest: Option<Time> = None;
        let mut current = frame.clone();
        let mut steps = 0;
        while &current != ancestor && steps <= self.edges.len() {
            let Some(edge) = self.edges.get(&current) else {
                break;
            };
            if let Some(s) = edge.stamp
                && oldest.is_none_or(|o| stamp_key(&s) < stamp_key(&o))
            {
                oldest = Some(s);
            }
            current = edge.parent.clone();
            steps += 1;
        }
        oldest
    }

    /// The oldest stamp of the dynamic edges on the path between `parent` and `child`.
    fn path_stamp(&self, parent: &FrameId, child: &FrameId) -> Option<Time> {
        let up_child = self.chain(child);
        let up_parent = self.chain(parent);
        let anc = up_child
            .iter()
            .find(|(f, _)| up_parent.iter().any(|(g, _)| g == f))?
            .0
            .clone();
        match (
            self.oldest_stamp(child, &anc),
            self.oldest_stamp(parent, &anc),
        ) {
            (Some(a), Some(b)) => Some(if stamp_key(&a) < stamp_key(&b) { a } else { b }),
            (a, b) => a.or(b),
        }
    }

    /// `root_T_frame` for every ancestor on the way up, starting with the frame itself.
    fn chain(&self, frame: &FrameId) -> Vec<(FrameId, Isometry3)> {
        let mut out = vec![(frame.clone(), Isometry3::identity())];
        let mut current = frame.clone();
        let mut acc = Isometry3::identity();
        while let Some(edge) = self.edges.get(&current) {
            acc = edge.iso * acc;
            current = edge.parent.clone();
            if out.iter().any(|(f, _)| *f == current) {
                break; // a loop in the tree; stop climbing
            }
            out.push((current.clone(), acc));
        }
        out
    }

    fn lookup(&self, parent: &FrameId, child: &FrameId) -> Option<Transform> {
        let up_child = self.chain(child); // (ancestor, ancestor_T_child)
        let up_parent = self.chain(parent); // (ancestor, ancestor_T_parent)
        for (anc, anc_t_child) in &up_child {
            if let Some((_, anc_t_parent)) = up_parent.iter().find(|(f, _)| f == anc) {
                return Some(Transform::new(
                    parent.clone(),
                    child.clone(),
                    anc_t_parent.inverse() * anc_t_child,
                ));
            }
        }
        None
    }
}

/// Keeps the latest TF tree. Cheap to clone.
#[derive(Clone)]
pub struct TfBuffer {
    tree: Arc<RwLock<Tree>>,
    node: Node,
    _tasks: Arc<(AbortOnDrop, AbortOnDrop)>,
}

impl std::fmt::Debug for TfBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.tree.read().map(|t| t.edges.len()).unwrap_or(0);
        f.debug_struct("TfBuffer").field("frames", &n).finish()
    }
}

impl TfBuffer {
    /// Subscribes to `/tf` and `/tf_static` on `node`.
    pub fn new(node: &Node) -> Result<Self, RosError> {
        let tree = Arc::new(RwLock::new(Tree::default()));
        let dynamic = node.subscribe::<TFMessage>("/tf", TF_QOS)?;
        let statics = node.subscribe::<TFMessage>("/tf_static", TF_STATIC_QOS)?;
        let t1 = tokio::spawn(listen(dynamic, tree.clone(), false));
        let t2 = tokio::spawn(listen(statics, tree.clone(), true));
        Ok(Self {
            tree,
            node: node.clone(),
            _tasks: Arc::new((AbortOnDrop(t1), AbortOnDrop(t2))),
        })
    }

    /// Adds transforms directly (as if received).
    pub fn insert(&self, transforms: impl IntoIterator<Item = Transform>) {
        let mut tree = self.tree.write().unwrap_or_else(|e| e.into_inner());
        for tf in transforms {
            tree.insert(tf, None);
        }
    }

    /// The latest `parent → child` transform (`p_parent = iso * p_child`).
    pub fn lookup(&self, parent: &FrameId, child: &FrameId) -> Result<Transform, RosError> {
        self.tree
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .lookup(parent, child)
            .ok_or_else(|| {
                RosError::Conversion(format!(
                    "no TF path from {parent:?} to {child:?} (is anyone publishing /tf?)"
                ))
            })
    }

    /// The newest stamp `/tf` has brought: the robot's "now" as its own clock tells it
    /// (`None` before the first dynamic transform).
    pub fn newest_stamp(&self) -> Option<Time> {
        self.tree
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .edges
            .values()
            .filter_map(|e| e.stamp)
            .max_by_key(stamp_key)
    }

    /// The latest `parent → child` transform, only if every dynamic edge on its path
    /// came with a stamp at or after `stamp` (static edges always qualify).
    pub fn lookup_fresh(
        &self,
        parent: &FrameId,
        child: &FrameId,
        stamp: &Time,
    ) -> Result<Transform, RosError> {
        let tree = self.tree.read().unwrap_or_else(|e| e.into_inner());
        let tf = tree.lookup(parent, child).ok_or_else(|| {
            RosError::Conversion(format!(
                "no TF path from {parent:?} to {child:?} (is anyone publishing /tf?)"
            ))
        })?;
        match tree.path_stamp(parent, child) {
            Some(s) if stamp_key(&s) < stamp_key(stamp) => Err(RosError::Conversion(format!(
                "TF from {parent:?} to {child:?} is from {:.6} s, older than {:.6} s",
                s.as_secs_f64(),
                stamp.as_secs_f64()
            ))),
            _ => Ok(tf),
        }
    }

    /// Waits (up to the discovery timeout, or `timeout`) until `parent → child` is known
    /// with every dynamic edge stamped at or after `stamp`: the tree as it was when data
    /// stamped `stamp` was taken, or newer.
    pub async fn wait_for_fresh(
        &self,
        parent: &FrameId,
        child: &FrameId,
        stamp: &Time,
        timeout: Option<Duration>,
    ) -> Result<Transform, RosError> {
        let timeout = timeout.unwrap_or(self.node.settings().discovery_timeout);
        wait_until(
            || {
                format!(
                    "TF from {parent} to {child} at {:.6} s or newer",
                    stamp.as_secs_f64()
                )
            },
            timeout,
            || self.lookup_fresh(parent, child, stamp).is_ok(),
        )
        .await?;
        self.lookup_fresh(parent, child, stamp)
    }

    /// Waits (up to the discovery timeout, or `timeout`) until `parent → child` is known.
    pub async fn wait_for(
        &self,
        parent: &FrameId,
        child: &FrameId,
        timeout: Option<Duration>,
    ) -> Result<Transform, RosError> {
        let timeout = timeout.unwrap_or(self.node.settings().discovery_timeout);
        wait_until(
            || format!("TF from {parent} to {child}"),
            timeout,
            || self.lookup(parent, child).is_ok(),
        )
        .await?;
        self.lookup(parent, child)
    }
}

async fn listen(mut sub: Subscription<TFMessage>, tree: Arc<RwLock<Tree>>, is_static: bool) {
    while let Some(msg) = sub.recv().await {
        let mut parsed = Vec::with_capacity(msg.transforms.len());
        for t in &msg.transforms {
            match convert::transform(t) {
                Ok(tf) => parsed.push((tf, (!is_static).then_some(t.header.stamp))),
                Err(e) => warn!(topic = sub.topic(), "ignoring a transform: {e}"),
            }
        }
        let mut tree = tree.write().unwrap_or_else(|e| e.into_inner());
        for (tf, stamp) in parsed {
            tree.insert(tf, stamp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_relative_eq;
    use asp_core::{Point3, Vector3};

    #[test]
    fn composes_along_the_tree() {
        let mut tree = Tree::default();
        let t = |s: i32| Some(Time { sec: s, nanosec: 0 });
        tree.insert(
            Transform::new(
                "map",
                "base_link",
                Isometry3::new(
                    Vector3::new(1.0, 0.0, 0.0),
                    Vector3::z() * std::f32::consts::FRAC_PI_2,
                ),
            ),
            t(5),
        );
        tree.insert(
            Transform::new(
                "base_link",
                "link_base",
                Isometry3::translation(0.0, 0.0, 0.5),
            ),
            None,
        );
        tree.insert(
            Transform::new(
                "link_base",
                "link_tcp",
                Isometry3::translation(0.3, 0.0, 0.2),
            ),
            t(7),
        );
        tree.insert(
            Transform::new("base_link", "camera", Isometry3::translation(0.0, 0.1, 1.0)),
            t(9),
        );
        // the oldest dynamic edge on a path is its stamp; static edges do not count
        assert_eq!(tree.path_stamp(&"map".into(), &"link_tcp".into()), t(5));
        assert_eq!(tree.path_stamp(&"camera".into(), &"link_tcp".into()), t(7));
        assert_eq!(
            tree.path_stamp(&"base_link".into(), &"link_base".into()),
            None
        );
        let map_tcp = tree.lookup(&"map".into(), &"link_tcp".into()).unwrap();
        // tcp at (0.3, 0, 0.7) in base_link, base rotated 90° at x = 1 → map (1, 0.3, 0.7)
        assert_relative_eq!(
            map_tcp.apply(&Point3::origin()),
            Point3::new(1.0, 0.3, 0.7),
            epsilon = 1e-5
        );
        // sideways: camera → tcp through base_link
        let cam_tcp = tree.lookup(&"camera".into(), &"link_tcp".into()).unwrap();
        assert_relative_eq!(
            cam_tcp.apply(&Point3::origin()),
            Point3::new(0.3, -0.1, -0.3),
            epsilon = 1e-5
        );
        let tcp_map = tree.lookup(&"link_tcp".into(), &"map".into()).unwrap();
        assert_relative_eq!(
            (tcp_map.iso * map_tcp.iso).translation.vector.norm(),
            0.0,
            epsilon = 1e-5
        );
        assert!(tree.lookup(&"map".into(), &"nowhere".into()).is_none());
        assert!(tree.lookup(&"map".into(), &"map".into()).is_some());
    }
}
