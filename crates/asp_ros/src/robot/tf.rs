//! A TF listener: the latest transform of every frame from `/tf` and `/tf_static`,
//! composed along the tree on lookup (no time travel or interpolation: ASP asks for
//! "where is it now").

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use asp_core::{FrameId, Isometry3, Transform};
use tracing::warn;

use crate::RosError;
use crate::convert;
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
}

#[derive(Debug, Default)]
struct Tree {
    /// child → (parent, parent_T_child)
    edges: HashMap<FrameId, Edge>,
}

impl Tree {
    fn insert(&mut self, tf: Transform) {
        if tf.parent == tf.child {
            return;
        }
        self.edges.insert(
            tf.child,
            Edge {
                parent: tf.parent,
                iso: tf.iso,
            },
        );
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
        let t1 = tokio::spawn(listen(dynamic, tree.clone()));
        let t2 = tokio::spawn(listen(statics, tree.clone()));
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
            tree.insert(tf);
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

async fn listen(mut sub: Subscription<TFMessage>, tree: Arc<RwLock<Tree>>) {
    while let Some(msg) = sub.recv().await {
        let mut parsed = Vec::with_capacity(msg.transforms.len());
        for t in &msg.transforms {
            match convert::transform(t) {
                Ok(tf) => parsed.push(tf),
                Err(e) => warn!(topic = sub.topic(), "ignoring a transform: {e}"),
            }
        }
        let mut tree = tree.write().unwrap_or_else(|e| e.into_inner());
        for tf in parsed {
            tree.insert(tf);
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
        tree.insert(Transform::new(
            "map",
            "base_link",
            Isometry3::new(
                Vector3::new(1.0, 0.0, 0.0),
                Vector3::z() * std::f32::consts::FRAC_PI_2,
            ),
        ));
        tree.insert(Transform::new(
            "base_link",
            "link_base",
            Isometry3::translation(0.0, 0.0, 0.5),
        ));
        tree.insert(Transform::new(
            "link_base",
            "link_tcp",
            Isometry3::translation(0.3, 0.0, 0.2),
        ));
        tree.insert(Transform::new(
            "base_link",
            "camera",
            Isometry3::translation(0.0, 0.1, 1.0),
        ));
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
