//! object_map_node's port over ROS: [`serve_object_map`] serves any [`ObjectMapPort`],
//! [`ObjectMapClient`] implements the port against that server.

use std::sync::Arc;

use asp_core::{FailureKind, ObjectKey, Point3, Within};
use asp_perception::Retrieval;
use asp_ros::msg::asp_interfaces::{
    Failure, GetObject, GetObjectMap, GetObjectMapRequest, GetObjectMapResponse, GetObjectRequest,
    GetObjectResponse, ObjectMapSummary, ObjectMoved, ObjectMovedRequest, ObjectMovedResponse,
    RebuildMap, RebuildMapRequest, RebuildMapResponse, RecallMemory, RecallMemoryRequest,
    RecallMemoryResponse, Relocalize, RelocalizeRequest, RelocalizeResponse, RetrieveObjects,
    RetrieveObjectsRequest, RetrieveObjectsResponse, SpatialQuery as SpatialQuerySrv,
    SpatialQueryRequest, SpatialQueryResponse,
};
use asp_ros::msg::builtin_interfaces::Time;
use asp_ros::msg::sensor_msgs::PointCloud2;
use asp_ros::msg::std_msgs::Header;
use asp_ros::msg::visualization_msgs::MarkerArray;
use asp_ros::transport::{Client, Publisher, ServiceServer};
use asp_ros::{Node, Qos};
use asp_system::{
    MapObject, MapSnapshot, MapSummary, ObjectMapPort, RelocalizedObject, ServiceError,
    SpatialAnswer, SpatialQuery,
};
use async_trait::async_trait;
use tracing::warn;

use crate::NodeError;
use crate::names;
use crate::wire::{failed_response, failure_of, from_json, to_json, transport_error};

/// Serves an object map port on a node until dropped.
pub struct ObjectMapServer {
    _servers: Vec<ServiceServer>,
    summary: SummaryPublisher,
}

impl std::fmt::Debug for ObjectMapServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectMapServer").finish_non_exhaustive()
    }
}

impl ObjectMapServer {
    /// What publishes the map summary (after a build outside a service call).
    pub fn summary(&self) -> SummaryPublisher {
        self.summary.clone()
    }
}

/// Publishes what the map holds on [`names::OBJECT_MAP_TOPIC`], and for RViz its
/// objects' boxes and labels on [`names::MARKERS_TOPIC`] and their points on
/// [`names::MAP_CLOUD_TOPIC`] (all latched).
#[derive(Clone)]
pub struct SummaryPublisher {
    port: Arc<dyn ObjectMapPort>,
    publisher: Arc<Publisher<ObjectMapSummary>>,
    markers: Arc<Publisher<MarkerArray>>,
    cloud: Arc<Publisher<PointCloud2>>,
    frame: String,
}

impl std::fmt::Debug for SummaryPublisher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SummaryPublisher")
            .field("frame", &self.frame)
            .finish_non_exhaustive()
    }
}

impl SummaryPublisher {
    /// Publishes the summary of the map as it is now, its markers and its cloud.
    pub async fn publish(&self) {
        let snap = self.port.snapshot().await;
        let msg = summary(&snap, &self.frame);
        let stamp = msg.header.stamp;
        if let Err(e) = self.publisher.publish(msg) {
            warn!("cannot publish the object map summary: {e}");
        }
        let markers = asp_ros::convert::map_markers(&snap.map, &snap.keys, stamp);
        if let Err(e) = self.markers.publish(markers) {
            warn!("cannot publish the object map's markers: {e}");
        }
        if let Err(e) = self
            .cloud
            .publish(asp_ros::convert::map_cloud(&snap.map, stamp))
        {
            warn!("cannot publish the object map's cloud: {e}");
        }
    }
}

/// The summary message of a map snapshot.
pub fn summary(snap: &MapSnapshot, frame: &str) -> ObjectMapSummary {
    ObjectMapSummary {
        header: Header::new(Time::now(), frame),
        objects: snap.map.objects.len() as u32,
        points: snap
            .map
            .objects
            .iter()
            .map(|o| o.point_cloud.len() as u32)
            .sum(),
        keys: snap.keys.keys().map(|k| k.as_str().to_owned()).collect(),
        key_ids: snap.keys.values().map(|id| id.0).collect(),
    }
}

fn key(text: &str) -> Result<ObjectKey, ServiceError> {
    ObjectKey::new(text).map_err(|e| {
        ServiceError::new(
            FailureKind::InvalidArgument,
            format!("{text:?} is not an object key: {e}"),
        )
    })
}

fn without_crops(mut o: MapObject) -> MapObject {
    o.object.crops.clear();
    o
}

/// The spatial query of a request: the relation names the variant, `a` and `b` its keys.
pub fn spatial_query(req: &SpatialQueryRequest) -> Result<SpatialQuery, ServiceError> {
    let mut v = serde_json::json!({ "relation": req.relation, "a": req.a });
    if !req.b.is_empty() {
        v["b"] = serde_json::Value::String(req.b.clone());
    }
    serde_json::from_value(v).map_err(|e| {
        ServiceError::new(
            FailureKind::InvalidArgument,
            format!(
                "spatial query {:?}({:?}, {:?}) is not valid: {e}",
                req.relation, req.a, req.b
            ),
        )
    })
}

/// The request for a spatial query.
pub fn spatial_request(q: &SpatialQuery) -> SpatialQueryRequest {
    let (relation, a, b) = match q {
        SpatialQuery::DistanceTo { a } => ("distance_to", a, None),
        SpatialQuery::SizeOf { a } => ("size_of", a, None),
        SpatialQuery::DistanceBetween { a, b } => ("distance_between", a, Some(b)),
        SpatialQuery::LeftOf { a, b } => ("left_of", a, Some(b)),
        SpatialQuery::RightOf { a, b } => ("right_of", a, Some(b)),
    };
    SpatialQueryRequest {
        relation: relation.into(),
        a: a.as_str().into(),
        b: b.map(|k| k.as_str().to_owned()).unwrap_or_default(),
    }
}

/// Serves `port`'s services on `node`, publishing the map summary (in `frame`) after
/// every call that can change the map.
pub fn serve_object_map(
    node: &Node,
    port: Arc<dyn ObjectMapPort>,
    frame: &str,
) -> Result<ObjectMapServer, NodeError> {
    let summary = SummaryPublisher {
        port: port.clone(),
        publisher: Arc::new(
            node.publisher::<ObjectMapSummary>(names::OBJECT_MAP_TOPIC, Qos::latched())?,
        ),
        markers: Arc::new(node.publisher::<MarkerArray>(names::MARKERS_TOPIC, Qos::latched())?),
        cloud: Arc::new(node.publisher::<PointCloud2>(names::MAP_CLOUD_TOPIC, Qos::latched())?),
        frame: frame.to_owned(),
    };
    let mut servers = Vec::new();

    let (p, s) = (port.clone(), summary.clone());
    servers.push(node.serve::<RetrieveObjects, _, _>(
        names::RETRIEVE_SERVICE,
        move |req: RetrieveObjectsRequest| {
            let (p, s) = (p.clone(), s.clone());
            async move {
                let out = async {
                    let mut within = within_of(&req.room, &req.storey)?;
                    within.counted_from = req.storey_counted_from.checked_sub(1);
                    let r = p.retrieve_within(&req.query, &within).await?;
                    let json = to_json(&r, "the retrieval")?;
                    Ok::<_, ServiceError>((r.keys, json))
                }
                .await;
                s.publish().await;
                match out {
                    Ok((keys, retrieval_json)) => RetrieveObjectsResponse {
                        success: true,
                        failure: Failure::default(),
                        keys: keys.iter().map(|k| k.as_str().to_owned()).collect(),
                        retrieval_json,
                    },
                    Err(e) => RetrieveObjectsResponse {
                        failure: failure_of(&e),
                        ..RetrieveObjectsResponse::default()
                    },
                }
            }
        },
    )?);

    let p = port.clone();
    servers.push(node.serve::<RecallMemory, _, _>(
        names::RECALL_MEMORY_SERVICE,
        move |req: RecallMemoryRequest| {
            let p = p.clone();
            async move {
                let out = async {
                    let within = within_of(&req.room, &req.storey)?;
                    let r = p.recollect(&req.query, &within).await?;
                    let json = to_json(&r, "the recollection")?;
                    Ok::<_, ServiceError>((r, json))
                }
                .await;
                match out {
                    Ok((r, recollection_json)) => RecallMemoryResponse {
                        success: true,
                        failure: Failure::default(),
                        consulted: r.consulted,
                        answer: r.describe(),
                        recollection_json,
                    },
                    Err(e) => RecallMemoryResponse {
                        failure: failure_of(&e),
                        ..RecallMemoryResponse::default()
                    },
                }
            }
        },
    )?);

    let p = port.clone();
    servers.push(node.serve::<SpatialQuerySrv, _, _>(
        names::SPATIAL_SERVICE,
        move |req: SpatialQueryRequest| {
            let p = p.clone();
            async move {
                let answer = match spatial_query(&req) {
                    Ok(q) => p.spatial(&q).await,
                    Err(e) => Err(e),
                };
                match answer {
                    Ok(SpatialAnswer::Number(n)) => SpatialQueryResponse {
                        success: true,
                        is_number: true,
                        number: n,
                        ..SpatialQueryResponse::default()
                    },
                    Ok(SpatialAnswer::Truth(t)) => SpatialQueryResponse {
                        success: true,
                        truth: t,
                        ..SpatialQueryResponse::default()
                    },
                    Err(e) => SpatialQueryResponse {
                        failure: failure_of(&e),
                        ..SpatialQueryResponse::default()
                    },
                }
            }
        },
    )?);

    let p = port.clone();
    servers.push(node.serve::<GetObject, _, _>(
        names::GET_OBJECT_SERVICE,
        move |req: GetObjectRequest| {
            let p = p.clone();
            async move {
                let out = async {
                    let k = key(&req.key)?;
                    let o = p.object(&k).await?;
                    let o = if req.with_crops { o } else { without_crops(o) };
                    let json = to_json(&o, "the object")?;
                    Ok::<_, ServiceError>((o, json))
                }
                .await;
                match out {
                    Ok((o, object_json)) => GetObjectResponse {
                        success: true,
                        failure: Failure::default(),
                        points: o.object.point_cloud.len() as u32,
                        name: o.name,
                        query: o.query,
                        object_json,
                    },
                    Err(e) => GetObjectResponse {
                        failure: failure_of(&e),
                        ..GetObjectResponse::default()
                    },
                }
            }
        },
    )?);

    let p = port.clone();
    servers.push(node.serve::<GetObjectMap, _, _>(
        names::SNAPSHOT_SERVICE,
        move |req: GetObjectMapRequest| {
            let p = p.clone();
            async move {
                let mut snap = p.snapshot().await;
                if !req.with_crops {
                    for o in &mut snap.map.objects {
                        o.crops.clear();
                    }
                }
                match to_json(&snap, "the map snapshot") {
                    Ok(snapshot_json) => GetObjectMapResponse {
                        success: true,
                        failure: Failure::default(),
                        objects: snap.map.objects.len() as u32,
                        snapshot_json,
                    },
                    Err(e) => GetObjectMapResponse {
                        failure: failure_of(&e),
                        ..GetObjectMapResponse::default()
                    },
                }
            }
        },
    )?);

    let (p, s) = (port.clone(), summary.clone());
    servers.push(node.serve::<RebuildMap, _, _>(
        names::REBUILD_SERVICE,
        move |req: RebuildMapRequest| {
            let (p, s) = (p.clone(), s.clone());
            async move {
                let out = async {
                    let keep = if req.keep.is_empty() {
                        None
                    } else {
                        Some(key(&req.keep)?)
                    };
                    p.rebuild(keep.as_ref()).await
                }
                .await;
                s.publish().await;
                match out {
                    Ok(m) => RebuildMapResponse {
                        success: true,
                        failure: Failure::default(),
                        objects: m.objects as u32,
                        keyframes: m.keyframes,
                        kept_keys: m.kept_keys.iter().map(|k| k.as_str().to_owned()).collect(),
                    },
                    Err(e) => RebuildMapResponse {
                        failure: failure_of(&e),
                        ..RebuildMapResponse::default()
                    },
                }
            }
        },
    )?);

    let (p, s) = (port.clone(), summary.clone());
    servers.push(node.serve::<ObjectMoved, _, _>(
        names::OBJECT_MOVED_SERVICE,
        move |req: ObjectMovedRequest| {
            let (p, s) = (p.clone(), s.clone());
            async move {
                let out = async {
                    let k = key(&req.key)?;
                    let to = Point3::new(req.x, req.y, req.z);
                    if !(to.x.is_finite() && to.y.is_finite() && to.z.is_finite()) {
                        return Err(ServiceError::new(
                            FailureKind::InvalidArgument,
                            format!("object_moved: the position of {k} is not finite: {to:?}"),
                        ));
                    }
                    p.moved(&k, to).await
                }
                .await;
                s.publish().await;
                match out {
                    Ok(()) => ObjectMovedResponse {
                        success: true,
                        failure: Failure::default(),
                    },
                    Err(e) => ObjectMovedResponse {
                        success: false,
                        failure: failure_of(&e),
                    },
                }
            }
        },
    )?);

    let (p, s) = (port, summary.clone());
    servers.push(node.serve::<Relocalize, _, _>(
        names::RELOCALIZE_SERVICE,
        move |req: RelocalizeRequest| {
            let (p, s) = (p.clone(), s.clone());
            async move {
                let out = async {
                    let k = key(&req.key)?;
                    match p.relocalize(&k, &req.camera).await? {
                        Some(r) => Ok(Some(to_json(&r, "the relocalized object")?)),
                        None => Ok::<_, ServiceError>(None),
                    }
                }
                .await;
                s.publish().await;
                match out {
                    Ok(found) => RelocalizeResponse {
                        success: true,
                        failure: Failure::default(),
                        found: found.is_some(),
                        relocalized_json: found.unwrap_or_default(),
                    },
                    Err(e) => RelocalizeResponse {
                        failure: failure_of(&e),
                        ..RelocalizeResponse::default()
                    },
                }
            }
        },
    )?);
    Ok(ObjectMapServer {
        _servers: servers,
        summary,
    })
}

/// [`ObjectMapPort`] over object_map_node's services.
///
/// A client made with `with_crops(false)` asks for objects without their camera views
/// (crops): the agent's tool backend and go_to never look at them, and they are most of
/// an object's bytes. Affordance detection needs them.
pub struct ObjectMapClient {
    retrieve: Client<RetrieveObjects>,
    recall: Client<RecallMemory>,
    spatial: Client<SpatialQuerySrv>,
    object: Client<GetObject>,
    snapshot: Client<GetObjectMap>,
    rebuild: Client<RebuildMap>,
    relocalize: Client<Relocalize>,
    moved: Client<ObjectMoved>,
    with_crops: bool,
}

impl std::fmt::Debug for ObjectMapClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectMapClient")
            .field("with_crops", &self.with_crops)
            .finish_non_exhaustive()
    }
}

impl ObjectMapClient {
    /// A client that fetches objects with their crops.
    pub fn new(node: &Node) -> Result<Self, NodeError> {
        Ok(Self {
            retrieve: node.client(names::RETRIEVE_SERVICE)?,
            recall: node.client(names::RECALL_MEMORY_SERVICE)?,
            spatial: node.client(names::SPATIAL_SERVICE)?,
            object: node.client(names::GET_OBJECT_SERVICE)?,
            snapshot: node.client(names::SNAPSHOT_SERVICE)?,
            rebuild: node.client(names::REBUILD_SERVICE)?,
            relocalize: node.client(names::RELOCALIZE_SERVICE)?,
            moved: node.client(names::OBJECT_MOVED_SERVICE)?,
            with_crops: true,
        })
    }

    /// Whether objects and snapshots come with their crops (see the type's notes).
    pub fn with_crops(mut self, with_crops: bool) -> Self {
        self.with_crops = with_crops;
        self
    }
}

/// A request's room and storey fields (empty: anywhere) as a typed [`Within`]; a storey
/// that is not one is refused naming the field and its value.
fn within_of(room: &str, storey: &str) -> Result<Within, ServiceError> {
    let room = Some(room.trim())
        .filter(|r| !r.is_empty())
        .map(str::to_owned);
    let storey = match storey.trim() {
        "" => None,
        s => Some(s.parse::<asp_core::Storey>().map_err(|e| {
            ServiceError::new(FailureKind::InvalidArgument, format!("storey: {e}"))
        })?),
    };
    Ok(Within {
        room,
        storey,
        counted_from: None,
    })
}

#[async_trait]
impl ObjectMapPort for ObjectMapClient {
    async fn retrieve(&self, query: &str) -> Result<Retrieval, ServiceError> {
        self.retrieve_within(query, &Within::anywhere()).await
    }

    /// `object_retrieval` within a room, on a storey, or anywhere.
    async fn retrieve_within(
        &self,
        query: &str,
        within: &Within,
    ) -> Result<Retrieval, ServiceError> {
        let r = self
            .retrieve
            .call(RetrieveObjectsRequest {
                query: query.to_owned(),
                room: within.room.clone().unwrap_or_default(),
                storey: within.storey.map(|s| s.to_string()).unwrap_or_default(),
                storey_counted_from: within.counted_from.map_or(0, |k| k.saturating_add(1)),
            })
            .await
            .map_err(|e| transport_error(&e, names::RETRIEVE_SERVICE))?;
        if let Some(e) = failed_response(r.success, &r.failure, "object retrieval") {
            return Err(e);
        }
        from_json(&r.retrieval_json, "the retrieval")
    }

    async fn recollect(
        &self,
        query: &str,
        within: &Within,
    ) -> Result<asp_core::Recollection, ServiceError> {
        let r = self
            .recall
            .call(RecallMemoryRequest {
                query: query.to_owned(),
                room: within.room.clone().unwrap_or_default(),
                storey: within.storey.map(|s| s.to_string()).unwrap_or_default(),
            })
            .await
            .map_err(|e| transport_error(&e, names::RECALL_MEMORY_SERVICE))?;
        if let Some(e) = failed_response(r.success, &r.failure, "recall_memory") {
            return Err(e);
        }
        from_json(&r.recollection_json, "the recollection")
    }

    async fn spatial(&self, query: &SpatialQuery) -> Result<SpatialAnswer, ServiceError> {
        let r = self
            .spatial
            .call(spatial_request(query))
            .await
            .map_err(|e| transport_error(&e, names::SPATIAL_SERVICE))?;
        if let Some(e) = failed_response(r.success, &r.failure, "the spatial query") {
            return Err(e);
        }
        Ok(if r.is_number {
            SpatialAnswer::Number(r.number)
        } else {
            SpatialAnswer::Truth(r.truth)
        })
    }

    async fn object(&self, key: &ObjectKey) -> Result<MapObject, ServiceError> {
        let r = self
            .object
            .call(GetObjectRequest {
                key: key.as_str().to_owned(),
                with_crops: self.with_crops,
            })
            .await
            .map_err(|e| transport_error(&e, names::GET_OBJECT_SERVICE))?;
        if let Some(e) = failed_response(r.success, &r.failure, "get_object") {
            return Err(e);
        }
        from_json(&r.object_json, "the object")
    }

    async fn rebuild(&self, keep: Option<&ObjectKey>) -> Result<MapSummary, ServiceError> {
        let r = self
            .rebuild
            .call(RebuildMapRequest {
                keep: keep.map(|k| k.as_str().to_owned()).unwrap_or_default(),
            })
            .await
            .map_err(|e| transport_error(&e, names::REBUILD_SERVICE))?;
        if let Some(e) = failed_response(r.success, &r.failure, "the map rebuild") {
            return Err(e);
        }
        Ok(MapSummary {
            objects: r.objects as usize,
            keyframes: r.keyframes,
            kept_keys: r
                .kept_keys
                .iter()
                .map(|k| key(k))
                .collect::<Result<_, _>>()?,
        })
    }

    async fn moved(&self, key: &ObjectKey, to: Point3) -> Result<(), ServiceError> {
        let r = self
            .moved
            .call(ObjectMovedRequest {
                key: key.as_str().to_owned(),
                x: to.x,
                y: to.y,
                z: to.z,
            })
            .await
            .map_err(|e| transport_error(&e, names::OBJECT_MOVED_SERVICE))?;
        match failed_response(r.success, &r.failure, "the moved object") {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    async fn relocalize(
        &self,
        key: &ObjectKey,
        camera: &str,
    ) -> Result<Option<RelocalizedObject>, ServiceError> {
        let r = self
            .relocalize
            .call(RelocalizeRequest {
                key: key.as_str().to_owned(),
                camera: camera.to_owned(),
            })
            .await
            .map_err(|e| transport_error(&e, names::RELOCALIZE_SERVICE))?;
        if let Some(e) = failed_response(r.success, &r.failure, "relocalization") {
            return Err(e);
        }
        if !r.found {
            return Ok(None);
        }
        from_json(&r.relocalized_json, "the relocalized object").map(Some)
    }

    async fn snapshot(&self) -> MapSnapshot {
        let fetched = async {
            let r = self
                .snapshot
                .call(GetObjectMapRequest {
                    with_crops: self.with_crops,
                })
                .await
                .map_err(|e| transport_error(&e, names::SNAPSHOT_SERVICE))?;
            if let Some(e) = failed_response(r.success, &r.failure, "the map snapshot") {
                return Err(e);
            }
            from_json::<MapSnapshot>(&r.snapshot_json, "the map snapshot")
        }
        .await;
        fetched.unwrap_or_else(|e| {
            // the port's snapshot cannot fail; an unreachable map reads as an empty one
            warn!("no object map snapshot ({e}); reporting an empty map");
            MapSnapshot {
                map: asp_core::ObjectMap::new(asp_core::FrameId::map()),
                keys: Default::default(),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_requests_room_and_storey_are_typed_or_refused() {
        assert_eq!(within_of(" ", "").unwrap(), Within::anywhere());
        let w = within_of("office", "the second floor").unwrap();
        assert_eq!(w.room.as_deref(), Some("office"));
        assert_eq!(w.storey, Some(asp_core::Storey::Numbered(2)));
        let e = within_of("", "attic").unwrap_err();
        assert_eq!(e.failure.kind, FailureKind::InvalidArgument);
        assert!(
            e.message.contains("storey") && e.message.contains("\"attic\""),
            "{}",
            e.message
        );
    }

    #[test]
    fn spatial_queries_round_trip_through_requests() {
        let a = ObjectKey::new("mug_0").unwrap();
        let b = ObjectKey::new("bowl_0").unwrap();
        for q in [
            SpatialQuery::DistanceTo { a: a.clone() },
            SpatialQuery::SizeOf { a: a.clone() },
            SpatialQuery::DistanceBetween {
                a: a.clone(),
                b: b.clone(),
            },
            SpatialQuery::LeftOf {
                a: a.clone(),
                b: b.clone(),
            },
            SpatialQuery::RightOf { a, b },
        ] {
            assert_eq!(spatial_query(&spatial_request(&q)).unwrap(), q);
        }
        let bad = SpatialQueryRequest {
            relation: "above".into(),
            a: "mug_0".into(),
            b: String::new(),
        };
        let e = spatial_query(&bad).unwrap_err();
        assert_eq!(e.failure.kind, FailureKind::InvalidArgument);
        assert!(e.message.contains("above"), "{}", e.message);
        let missing_b = SpatialQueryRequest {
            relation: "left_of".into(),
            a: "mug_0".into(),
            b: String::new(),
        };
        assert!(spatial_query(&missing_b).is_err());
    }
}
