//! object_map_node's logic (SPEC §1.1, §1.3, §1.7): the open-vocabulary map built from
//! the robot's cameras, `object_retrieval` with VLM confirmation, the spatial tools, and
//! re-detection from where the robot stands.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use asp_config::LoadedConfig;
use asp_config::sections::perception::{MappingConfig, SurveyLooks};
use asp_core::models::RetrievalVlm;
use asp_core::robot::{
    ArmMotion, BaseNavigation, CancellationToken, FrameSource, NavErrorCode, NavOutcome,
    TerminalStatus,
};
use asp_core::{
    FailureKind, FrameId, Object, ObjectId, ObjectKey, ObjectMap, Point3, PointCloud, Pose2D, Real,
    RgbdFrame, Transform, Within,
};
use asp_perception::completion::complete_partial_view;
use asp_perception::concepts::ConceptGrounder;
use asp_perception::{
    Ask, MapBuilder, ObjectRegistry, ObjectRetriever, PerceptionModels, Retrieval,
};
use async_trait::async_trait;
use tokio::sync::Mutex;
use tracing::{info, warn};

use crate::ports::{
    MapObject, MapSnapshot, MapSummary, ObjectMapPort, RelocalizedObject, ServiceError,
    SpatialAnswer, SpatialQuery,
};

/// Remembered places found empty that recall keeps skipping.
const STALE_KEPT: usize = 64;
/// Viewpoints of one remembered place looked from before it counts as stale.
const VIEWPOINTS_TRIED: usize = 2;

/// Where recall looks for a remembered place from, in turn: `reach` from the object
/// towards the viewpoint the tour saw it from, facing it, then the tour's own viewpoints
/// (at most [`VIEWPOINTS_TRIED`] in all).
fn recall_stops(place: &asp_memory::building::RememberedPlace, reach: f64) -> Vec<Pose2D> {
    let [ox, oy, _] = place.position;
    let mut stops = Vec::with_capacity(VIEWPOINTS_TRIED);
    if let Some((from, _)) = place.viewpoints.first() {
        let (dx, dy) = (from[0] - ox, from[1] - oy);
        let d = dx.hypot(dy);
        if d > reach + 0.1 {
            let (x, y) = (ox + dx / d * reach, oy + dy / d * reach);
            stops.push(Pose2D::new(x as Real, y as Real, (-dy).atan2(-dx) as Real));
        }
    }
    for (from, yaw) in &place.viewpoints {
        if stops.len() >= VIEWPOINTS_TRIED {
            break;
        }
        stops.push(Pose2D::new(from[0] as Real, from[1] as Real, *yaw as Real));
    }
    stops
}

/// The building memory as the object map last read it.
struct CachedMemory {
    /// The file's modification time when read.
    modified: std::time::SystemTime,
    hierarchy: Arc<asp_memory::building::Hierarchy>,
    vacated: Arc<[asp_memory::building::Vacated]>,
    /// The frame its views are in (`None`: the storey's map).
    frame: Option<String>,
}

/// What the map knows by key.
struct MapState {
    builder: MapBuilder,
    registry: ObjectRegistry,
    /// The query that first found each key.
    queries: BTreeMap<ObjectKey, String>,
    /// Objects whose latest view is not the builder's: the held object kept across a
    /// rebuild, objects re-found from a closer view. Looked up before the builder's map.
    pinned: BTreeMap<ObjectKey, Object>,
    built: bool,
    /// Looks so far, builds and re-detections (picks the next mapping arm pose).
    looks: usize,
    /// The mapping arm poses (indices) whose keyframes are in the current map, taken
    /// from where the base stood at `seen_from`.
    seen_poses: std::collections::BTreeSet<usize>,
    seen_from: Option<Pose2D>,
    /// Where closer looks said an object a query had found is not what it asked for,
    /// newest last (at most [`WITHDRAWN_KEPT`]): retrieval passes over objects there for
    /// that query, across rebuilds (map-frame positions, not ids).
    withdrawn: Vec<Withdrawn>,
    /// Closer looks so far that said what stands where the map has a key is not what its
    /// query asked for, by key (across relocalize calls: the next mapping pose of the
    /// same call may not see the object at all). Cleared when a look confirms it.
    said_not_it: BTreeMap<ObjectKey, usize>,
    /// Where the base stood when the map was first built at this place (the last survey
    /// stop, or the base's pose without a survey): a search steps sideways as the robot
    /// then faced. Rebuilds within a search's reach of it keep it: go_to since may have
    /// turned the base at an angle to the table, where sideways runs into it.
    placed_at: Option<Pose2D>,
    /// Remembered places (building memory) looked at and found without what the memory
    /// saw there, newest last (at most [`STALE_KEPT`]): a later recall goes elsewhere
    /// (the memory is of the tour's day).
    stale: Vec<[f64; 3]>,
    /// The building memory as last read (and the places it knows were found empty), with
    /// its file's modification time (read again when the file changes: `asp memory
    /// build` adds a tour, a recall marks a place empty).
    building: Option<CachedMemory>,
    /// The room the request being served keeps to (`retrieve_in_room`): every retrieval
    /// of that request, its looks, search and recall, passes over objects elsewhere.
    room: Option<RoomFilter>,
    /// `agent_node.building_memory.room_kinds` embedded, once a room was named.
    room_kinds: Vec<Vec<f32>>,
    /// The storey the request being served keeps to ("upstairs"), as `room`.
    storey: Option<StoreyFilter>,
}

/// A named storey as the elevator's storeys tell it.
#[derive(Debug, Clone)]
struct StoreyFilter {
    storey: asp_core::Storey,
    /// The elevator's storeys it names (0: the ground floor).
    storeys: Vec<usize>,
    /// Heights in the building's frame, `[low, high)`: from half a metre below the
    /// lowest named storey's floor to half a metre below the floor above the highest.
    heights: [f64; 2],
    /// The base is on one of `storeys`: the live map is of it (kept up to date as the
    /// base rides the elevator).
    robot_on_it: bool,
    /// The storey a relative storey was counted from.
    counted_from: usize,
}

impl StoreyFilter {
    /// "upstairs (floor 2)", "ground floor (floor 1)", "floor 2".
    fn said(&self, numbering: asp_core::FloorNumbering) -> String {
        let floors: Vec<String> = self
            .storeys
            .iter()
            .map(|&k| (k as u32 + numbering.ground).to_string())
            .collect();
        let floors = match floors.as_slice() {
            [one] => format!("floor {one}"),
            many => format!("floors {}", many.join(", ")),
        };
        match self.storey {
            asp_core::Storey::Numbered(_) => floors,
            s => format!("{s} ({floors})"),
        }
    }
}

/// The band of heights (the building's frame) storeys `named` of the elevator's
/// (floors at `floors`, ground first) cover: [`StoreyFilter::heights`].
fn storey_band(floors: &[f64], named: &[usize]) -> [f64; 2] {
    let (Some(&lo), Some(&hi)) = (named.iter().min(), named.iter().max()) else {
        return [f64::NEG_INFINITY, f64::INFINITY];
    };
    let low = if lo == 0 {
        f64::NEG_INFINITY
    } else {
        floors[lo] - 0.5
    };
    let high = floors.get(hi + 1).map_or(f64::INFINITY, |f| f - 0.5);
    [low, high]
}

/// A named room as the building memory tells it.
#[derive(Debug, Clone)]
struct RoomFilter {
    scope: asp_memory::building::RoomScope,
    memory: Arc<asp_memory::building::Hierarchy>,
    /// The base stood in the room when the request came: looking round and searching
    /// sideways here can find the object; elsewhere only the memory's places can.
    robot_in_it: bool,
}

impl RoomFilter {
    fn contains(&self, at: Point3) -> bool {
        self.scope.contains(
            &self.memory,
            [f64::from(at.x), f64::from(at.y), f64::from(at.z)],
        )
    }
}

/// What an exploring build did: its stops, how far it drove, and the floor it saw.
#[derive(Debug, Clone, PartialEq)]
pub struct ExplorationReport {
    /// Where it looked round, in order (the start first).
    pub stops: Vec<Pose2D>,
    /// Path length driven between stops, metres (the drive back not counted).
    pub travelled_m: Real,
    /// Floor known free at the end, square metres.
    pub free_area_m2: Real,
    /// Why it ended.
    pub ended: ExplorationEnd,
    /// The floor occupancy grid it built (free, occupied, unknown).
    pub grid: asp_core::grid::OccupancyGrid,
    /// The MCAP file the tour's views were recorded to, with how many
    /// (`mapping.explore.record`).
    pub recording: Option<(std::path::PathBuf, usize)>,
    /// With `mapping.explore.every_storey`, the storeys toured in order (the start's
    /// first); the stops are each in its storey's map, the path and the floor summed
    /// over them, the grid the start's. Empty otherwise.
    pub storeys: Vec<usize>,
}

impl ExplorationReport {
    /// Adds the tour of another storey.
    fn add_storey(&mut self, storey: usize, part: ExplorationReport) {
        self.storeys.push(storey);
        self.stops.extend(part.stops);
        self.travelled_m += part.travelled_m;
        self.free_area_m2 += part.free_area_m2;
        // a stop outranks a budget, a budget outranks the end of the frontiers
        let rank = |e: ExplorationEnd| match e {
            ExplorationEnd::Explored => 0,
            ExplorationEnd::MaxStops | ExplorationEnd::MaxTravel => 1,
            ExplorationEnd::Stopped => 2,
        };
        if rank(part.ended) > rank(self.ended) {
            self.ended = part.ended;
        }
    }
}

/// Why an exploration ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExplorationEnd {
    /// No frontier left within reach: everything reachable was seen.
    Explored,
    /// `max_stops` made.
    MaxStops,
    /// The next stop was past `max_travel_m`.
    MaxTravel,
    /// The e-stop or a cancel stopped it.
    Stopped,
}

/// An object a query found and closer looks took back.
#[derive(Debug, Clone)]
struct Withdrawn {
    query: String,
    at: Point3,
}

/// The withdrawals remembered (oldest forgotten first).
const WITHDRAWN_KEPT: usize = 64;

/// Closer looks asked about an object found where the map had it before it is withdrawn
/// from its query: the first look's "no" and a second look's, in one relocalize call or
/// across calls (a single wrong answer does not lose a true object).
const WITHDRAW_AFTER_LOOKS: usize = 2;

/// How far the base moves before the mapping poses count as unseen again: from a new
/// place, the same arm pose sees other things.
const LOOK_AGAIN_AFTER_M: Real = 0.25;
const LOOK_AGAIN_AFTER_RAD: Real = 0.26;

/// A search's start: where the base was, the token its motions run under (held with
/// the e-stop's guard), and the arm poses to look from at each stop.
struct SearchStart {
    start: Pose2D,
    cancel: CancellationToken,
    _estop: Option<asp_skills::EStopGuard>,
    looks: Vec<Option<usize>>,
}

fn base_pose_error(e: asp_core::robot::RobotError) -> ServiceError {
    ServiceError::new(
        FailureKind::Navigation,
        format!("cannot read the base pose: {e}"),
    )
}

/// `frame` with the depth readings beyond `range` metres dropped.
fn within_range(frame: &RgbdFrame, range: Real) -> RgbdFrame {
    RgbdFrame {
        depth: frame
            .depth
            .map(|&d| if d.is_finite() && d <= range { d } else { 0.0 }),
        ..frame.clone()
    }
}

/// The exploration grid's parameters from `mapping.explore`.
fn explore_params(
    x: &asp_config::sections::perception::ExploreConfig,
) -> asp_nav::explore::ExploreParams {
    asp_nav::explore::ExploreParams {
        resolution: x.resolution,
        extent: x.extent_m,
        max_range: x.max_range_m,
        floor_max_height: x.floor_max_height,
        obstacle_min_height: x.obstacle_min_height,
        obstacle_max_height: x.obstacle_max_height,
        self_filter_radius: x.self_filter_radius_m,
        pixel_step: x.pixel_step,
        min_frontier: x.min_frontier_m,
        clearance: x.clearance_m,
        pass_clearance: x.pass_clearance_m,
        approach: x.approach_m,
        ..asp_nav::explore::ExploreParams::default()
    }
}

/// A keyed object as the map knew it before a rebuild.
struct KnownObject {
    key: ObjectKey,
    query: Option<String>,
    centroid: Point3,
    features: Vec<f32>,
}

/// Which new objects (id, centroid, features) the `before` objects are: pairs within
/// `max_shift` whose features agree (cosine at least `min_similarity`), nearest pairs
/// first, each object used once. Returns (index into `before`, new id).
fn reassociate(
    before: &[KnownObject],
    now: &[(ObjectId, Point3, &[f32])],
    max_shift: Real,
    min_similarity: f32,
) -> Vec<(usize, ObjectId)> {
    let mut pairs: Vec<(Real, usize, usize)> = Vec::new();
    for (i, b) in before.iter().enumerate() {
        for (j, (_, c, f)) in now.iter().enumerate() {
            let shift = (c - b.centroid).norm();
            if shift <= max_shift
                && asp_core::map::cosine_similarity(&b.features, f) >= min_similarity
            {
                pairs.push((shift, i, j));
            }
        }
    }
    pairs.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (mut used_before, mut used_now) = (BTreeSet::new(), BTreeSet::new());
    let mut out = Vec::new();
    for (_, i, j) in pairs {
        if used_before.insert(i) {
            if used_now.insert(j) {
                out.push((i, now[j].0));
            } else {
                used_before.remove(&i);
            }
        }
    }
    out
}

/// Which of the objects re-found at `found` (centroids) is the one the map had at
/// `previous`, and how far it moved: the nearest within `max_shift` that is not nearer to
/// one of its `twins` (where the map has the other objects of its query: of two eggs a
/// hand's width apart, the other egg is not this one). Without a previous position, the
/// first.
fn associate(
    previous: Option<Point3>,
    twins: &[Point3],
    max_shift: Real,
    found: &[Point3],
) -> Option<(usize, Real)> {
    let Some(p) = previous else {
        return (!found.is_empty()).then_some((0, 0.0));
    };
    found
        .iter()
        .enumerate()
        .map(|(i, c)| (i, (c - p).norm(), c))
        .filter(|(_, shift, c)| {
            *shift <= max_shift && twins.iter().all(|t| (*c - t).norm() >= *shift)
        })
        .map(|(i, shift, _)| (i, shift))
        .min_by(|a, b| a.1.total_cmp(&b.1))
}

/// How far behind a search stop the base may stand when the stop itself is occupied,
/// metres, and the step.
const BACK_OFF_M: Real = 0.3;
const BACK_OFF_STEP_M: Real = 0.05;
/// What a search found is straight ahead when it is this near the base's heading line,
/// metres.
const IN_FRONT_M: Real = 0.1;

/// The line a sideways search steps along: through where it started, across
/// `heading`; a closer look goes at most `reach` either way.
struct SearchLine {
    start: Pose2D,
    heading: Real,
    reach: Real,
}

impl SearchLine {
    /// How far along the line (left of the heading positive) the point `(x, y)` lies.
    fn offset(&self, x: Real, y: Real) -> Real {
        let (sin, cos) = self.heading.sin_cos();
        -(x - self.start.x) * sin + (y - self.start.y) * cos
    }

    /// The stop `offset` along the line, facing `heading`.
    fn stop(&self, offset: Real) -> Pose2D {
        let (sin, cos) = self.heading.sin_cos();
        Pose2D::new(
            self.start.x - offset * sin,
            self.start.y + offset * cos,
            self.heading,
        )
    }
}

/// What stepping in front of a search's match gave.
enum InFront {
    /// Retrieved again from in front of it.
    Confirmed(Retrieval),
    /// It was in front already, or the base could not get there: the match stands.
    Already,
    /// The closer view matched nothing.
    NotConfirmed,
}

/// The object map service.
pub struct MapService {
    cfg: LoadedConfig,
    mapping: MappingConfig,
    models: PerceptionModels,
    retriever: ObjectRetriever,
    frames: Arc<dyn FrameSource>,
    base: Arc<dyn BaseNavigation>,
    /// The building's elevator, for recall across storeys.
    elevator: Option<Arc<dyn asp_core::robot::Elevator>>,
    arm: Option<Arc<dyn ArmMotion>>,
    /// Stops the survey drives and the mapping poses like every other motion.
    estop: Option<asp_skills::EStopListener>,
    base_frame: FrameId,
    state: Mutex<MapState>,
    /// The latest exploration's tour (`None` before one): rebuilds refresh instead of
    /// touring again once there is one, and the node's grid topic shows it.
    explorations: tokio::sync::watch::Sender<Option<Arc<ExplorationReport>>>,
    /// Grounds words retrieval finds nothing for (`object_map_node.concepts`).
    grounder: Option<Arc<ConceptGrounder>>,
}

impl std::fmt::Debug for MapService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MapService")
            .field("mapping", &self.mapping)
            .finish_non_exhaustive()
    }
}

/// Whether two queries ask for the same thing (case and outer spaces aside).
fn same_query(a: &str, b: &str) -> bool {
    a.trim().eq_ignore_ascii_case(b.trim())
}

/// Whether retrieval for `query` passes over an object at `at`: a withdrawal for that
/// query within `radius` of it.
fn passed_over(withdrawn: &[Withdrawn], query: &str, at: Point3, radius: Real) -> bool {
    withdrawn
        .iter()
        .any(|w| same_query(&w.query, query) && (w.at - at).norm() <= radius)
}

/// The objects retrieval for `query` may give: those no withdrawal passes over.
fn not_passed_over<'a>(
    withdrawn: &'a [Withdrawn],
    query: &'a str,
    radius: Real,
) -> impl Fn(&Object) -> bool + 'a {
    move |o| {
        !o.point_cloud
            .centroid()
            .is_some_and(|c| passed_over(withdrawn, query, c, radius))
    }
}

/// The object of `local` that stands where `previous` was: about its size (its box's
/// diagonal within half and twice `previous`'s: a table seen where a missed cup stood is
/// not the cup) and on the same place (half the points of one within
/// [`SAME_PLACE_M`] of the other's: a neighbour a hand's width away is not it), the
/// nearest of those.
fn same_object_in<'m>(local: &'m ObjectMap, previous: &PointCloud) -> Option<&'m Object> {
    let diagonal = |c: &PointCloud| c.aabb().map(|(lo, hi)| (hi - lo).norm());
    let (at, size) = (previous.centroid()?, diagonal(previous)?);
    let overlap = |c: &PointCloud| {
        let a = c.fraction_within(previous, SAME_PLACE_M).unwrap_or(0.0);
        let b = previous.fraction_within(c, SAME_PLACE_M).unwrap_or(0.0);
        a.max(b)
    };
    local
        .objects
        .iter()
        .filter_map(|o| {
            let c = &o.point_cloud;
            Some((o, (c.centroid()? - at).norm(), diagonal(c)?))
        })
        .filter(|(o, _, s)| {
            *s <= 2.0 * size.max(1e-3)
                && size <= 2.0 * s.max(1e-3)
                && overlap(&o.point_cloud) >= 0.5
        })
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(o, _, _)| o)
}

/// How near a point of one cloud must be to the other's for the two to stand on the same
/// place (localisation drift between two looks, a voxel or two).
const SAME_PLACE_M: Real = 0.03;
/// A closer look judges where the map had an object only when that place is in its
/// image within this range, metres, and not behind something the depth reads more than
/// [`OCCLUSION_MARGIN_M`] nearer.
const IN_VIEW_WITHIN_M: Real = 3.0;
const OCCLUSION_MARGIN_M: Real = 0.05;
/// A rebuild of an explored map looks again at the objects its views show within this
/// range, metres (farther, a view's few pixels of an object do not replace the tour's).
const REFRESH_WITHIN_M: Real = 4.0;

fn perception_error(e: asp_perception::PerceptionError) -> ServiceError {
    ServiceError::new(FailureKind::Perception, e.to_string())
}

/// The article-qualified name of a query: "red mug" → "the red mug".
pub fn object_name(query: &str) -> String {
    let q = query.trim();
    let lower = q.to_lowercase();
    if lower.starts_with("the ") || lower.starts_with("a ") || lower.starts_with("an ") {
        q.to_owned()
    } else {
        format!("the {q}")
    }
}

impl MapService {
    /// The service over `frames` (the robot's cameras and their poses) and `base` (where
    /// the robot stands, and the survey drive), with the configured models.
    pub fn new(
        cfg: &LoadedConfig,
        models: PerceptionModels,
        frames: Arc<dyn FrameSource>,
        base: Arc<dyn BaseNavigation>,
    ) -> Result<Self, ServiceError> {
        let builder =
            asp_perception::factory::map_builder(cfg, &models).map_err(perception_error)?;
        let vlm = crate::models::retrieval_vlm(cfg, &models.text_embedder)?;
        let retriever =
            asp_perception::factory::retriever(cfg, &models, vlm).map_err(perception_error)?;
        Ok(Self {
            mapping: cfg.config.object_map_node.mapping.clone(),
            cfg: cfg.clone(),
            models,
            retriever,
            frames,
            base,
            arm: None,
            elevator: None,
            estop: None,
            base_frame: cfg.config.common.frames.base.as_str().into(),
            explorations: tokio::sync::watch::Sender::new(None),
            grounder: None,
            state: Mutex::new(MapState {
                builder,
                registry: ObjectRegistry::new(),
                queries: BTreeMap::new(),
                pinned: BTreeMap::new(),
                built: false,
                looks: 0,
                seen_poses: std::collections::BTreeSet::new(),
                seen_from: None,
                withdrawn: Vec::new(),
                said_not_it: BTreeMap::new(),
                placed_at: None,
                stale: Vec::new(),
                building: None,
                room: None,
                room_kinds: Vec::new(),
                storey: None,
            }),
        })
    }

    /// Confirms retrieval candidates with `vlm` instead of the configured one (another
    /// model behind the same interface).
    pub fn with_retrieval_vlm(mut self, vlm: Arc<dyn RetrievalVlm>) -> Result<Self, ServiceError> {
        self.retriever = asp_perception::factory::retriever(&self.cfg, &self.models, Some(vlm))
            .map_err(perception_error)?;
        Ok(self)
    }

    /// Grounds words retrieval finds nothing for with `grounder` (SPEC §4.2; `None`: off):
    /// the map is searched again with the word's keywords, then with the known word that
    /// replaces it.
    pub fn with_grounder(mut self, grounder: Option<Arc<ConceptGrounder>>) -> Self {
        self.grounder = grounder;
        self
    }

    /// Rides `elevator` to what the building memory saw on another storey
    /// (`agent_node.building_memory.elevator` says where it is on each storey).
    pub fn with_elevator(mut self, elevator: Arc<dyn asp_core::robot::Elevator>) -> Self {
        self.elevator = Some(elevator);
        self
    }

    /// Takes `mapping.arm_poses` with `arm` before capturing (keeps the arm out of view).
    pub fn with_arm(mut self, arm: Arc<dyn ArmMotion>) -> Self {
        self.arm = Some(arm);
        self
    }

    /// Binds the survey drives and the mapping poses to the e-stop: engaged, they stop
    /// where they are, and no map build that would move starts.
    pub fn with_estop(mut self, estop: asp_skills::EStopListener) -> Self {
        self.estop = Some(estop);
        self
    }

    /// A token for the map's motions: cancelled by the e-stop; an error while it is
    /// engaged and the build would move the robot.
    fn motion_token(
        &self,
    ) -> Result<(CancellationToken, Option<asp_skills::EStopGuard>), ServiceError> {
        let cancel = CancellationToken::new();
        let Some(estop) = &self.estop else {
            return Ok((cancel, None));
        };
        let moves = !self.mapping.survey.is_empty()
            || self.mapping.explore.enabled
            || (self.arm.is_some() && !self.mapping.arm_poses.is_empty());
        if moves && estop.is_engaged() {
            return Err(ServiceError::new(
                FailureKind::Cancelled,
                "the e-stop is engaged: the map is not built, since its survey and mapping poses move the robot; release the e-stop and retry",
            ));
        }
        let guard = estop.guard(&cancel);
        Ok((guard.token().clone(), Some(guard)))
    }

    /// Builds the map now unless it was built.
    pub async fn ensure_built(&self) -> Result<(), ServiceError> {
        let mut st = self.state.lock().await;
        if !st.built {
            self.build(&mut st).await?;
        }
        Ok(())
    }

    /// Captures every mapping camera, at every survey pose (then drives back), into the
    /// builder.
    async fn build(&self, st: &mut MapState) -> Result<(), ServiceError> {
        let (cancel, _estop) = self.motion_token()?;
        if self.mapping.explore.enabled {
            if self.explorations.borrow().is_some() {
                return self.refresh_here(st, &cancel).await;
            }
            st.builder.reset();
            return self.explore(st, &cancel).await;
        }
        st.builder.reset();
        let start = if self.mapping.survey.is_empty() {
            None
        } else {
            Some(self.base.base_pose().await.map_err(|e| {
                ServiceError::new(
                    FailureKind::Navigation,
                    format!("cannot read the base pose: {e}"),
                )
            })?)
        };
        let mut stops: Vec<Option<Pose2D>> = self
            .mapping
            .survey
            .iter()
            .map(|p| Some(Pose2D::new(p[0], p[1], p[2].to_radians())))
            .collect();
        if stops.is_empty() {
            stops.push(None);
        }
        // each rebuild looks from the next pose: after a failure, another viewpoint
        let pose = self.next_look(st);
        st.seen_poses.clear();
        st.seen_from = None;
        let mut arm_at = None;
        for (i, stop) in stops.iter().enumerate() {
            if let Some(pose) = stop {
                let nav = self.base.navigate_to(*pose, &cancel).await;
                if nav.status != TerminalStatus::Succeeded {
                    warn!(
                        stop = i,
                        code = ?nav.error_code,
                        "survey pose not reached ({}); mapping from where the base stopped",
                        nav.error_msg
                    );
                }
            }
            for look in self.looks_at_stop(pose, stop.is_some()) {
                if look != arm_at {
                    self.take_pose(look.map(|l| self.mapping.arm_poses[l].as_str()), &cancel)
                        .await;
                    arm_at = look;
                }
                self.capture_keyframes(st).await?;
                if start.is_none() {
                    st.seen_poses.extend(look);
                }
            }
        }
        let here = self.base.base_pose().await.ok();
        st.placed_at = match (st.placed_at, here) {
            (Some(p), Some(h)) if p.distance_to(&h) <= self.mapping.search.reach => Some(p),
            _ => here,
        };
        if start.is_none() {
            st.seen_from = here;
        }
        if let Some(home) = start {
            // nothing was seen from the start itself: looks there are all new
            let nav = self.base.navigate_to(home, &cancel).await;
            if nav.status != TerminalStatus::Succeeded {
                warn!(
                    "could not drive back to the start of the survey: {:?} {}",
                    nav.error_code, nav.error_msg
                );
            }
        }
        st.built = true;
        Ok(())
    }

    /// A build that explores (`mapping.explore`): looks round at each stop (the explore
    /// camera's depth into the floor grid, the mapping cameras into the object map, the
    /// build's arm pose throughout), then drives to the nearest reachable frontier, until
    /// none is left or the budget is spent; with `every_storey`, then every other storey
    /// of the building the same way; then back to the start.
    async fn explore(
        &self,
        st: &mut MapState,
        cancel: &CancellationToken,
    ) -> Result<(), ServiceError> {
        let start = self.base.base_pose().await.map_err(base_pose_error)?;
        let storeys = if self.mapping.explore.every_storey {
            self.storeys_to_tour().await?
        } else {
            None
        };
        let mut recorder = self.tour_recorder()?;
        let mut toured = self.tour(st, cancel, start, recorder.as_mut()).await;
        let mut stranded = None;
        if let (Ok(report), Some((here, count))) = (toured.as_mut(), storeys) {
            report.storeys.push(here);
            // the other storeys build in their own maps; this one's is kept for after
            let this_storey = st.builder.take();
            let others = self
                .tour_other_storeys(st, cancel, here, count, report, recorder.as_mut())
                .await;
            st.builder.restore(this_storey);
            if let Err(e) = others {
                st.builder.reset();
                stranded = Some(e);
            }
        }
        let home = stranded.is_none();
        if let Some(e) = stranded {
            toured = Err(e);
        }
        st.seen_poses.clear();
        st.seen_from = None;
        st.placed_at = Some(start);
        // back to the start whether the tour ended or failed (a camera gave no frame):
        // the robot is not left somewhere in the building
        if home && !cancel.is_cancelled() {
            let nav = self.base.navigate_to(start, cancel).await;
            if nav.status != TerminalStatus::Succeeded {
                warn!(
                    "could not drive back to where exploration started: {:?} {}",
                    nav.error_code, nav.error_msg
                );
            }
        }
        let recording = match recorder {
            Some(r) => {
                let path = r.path().to_path_buf();
                let views = r.finish().map_err(|e| {
                    ServiceError::new(FailureKind::Internal, format!("recording the tour: {e}"))
                })?;
                info!(file = %path.display(), views, "tour recorded");
                Some((path, views))
            }
            None => None,
        };
        let mut report = toured?;
        report.recording = recording;
        info!(
            stops = report.stops.len(),
            travelled_m = report.travelled_m,
            free_m2 = report.free_area_m2,
            objects = st.builder.map().len(),
            storeys = ?report.storeys,
            ended = ?report.ended,
            "exploration done"
        );
        self.explorations.send_replace(Some(Arc::new(report)));
        st.built = true;
        Ok(())
    }

    /// The recorder of `mapping.explore.record` (`None` when it names no file).
    fn tour_recorder(&self) -> Result<Option<asp_perception::record::TourRecorder>, ServiceError> {
        let record = &self.mapping.explore.record;
        if record.as_os_str().is_empty() {
            return Ok(None);
        }
        asp_perception::record::TourRecorder::create(
            &self.cfg.data_path(record),
            &self.cfg.config.object_map_node.replay,
        )
        .map(Some)
        .map_err(|e| {
            ServiceError::new(
                FailureKind::InvalidArgument,
                format!("mapping.explore.record: {e}"),
            )
        })
    }

    /// For `mapping.explore.every_storey`: the storey the base is on and how many the
    /// elevator serves; `None` when it serves one.
    async fn storeys_to_tour(&self) -> Result<Option<(usize, usize)>, ServiceError> {
        let invalid = |why: String| {
            ServiceError::new(
                FailureKind::InvalidArgument,
                format!("mapping.explore.every_storey: {why}"),
            )
        };
        let (_, storeys) = self.set_up_elevator().map_err(invalid)?;
        if storeys.len() == 1 {
            return Ok(None);
        }
        let here = self.storey_here().await.map_err(invalid)?;
        Ok(Some((here, storeys.len())))
    }

    /// The elevator and its storeys (`agent_node.building_memory.elevator`), or why
    /// there is none to ride.
    fn set_up_elevator(
        &self,
    ) -> Result<
        (
            &Arc<dyn asp_core::robot::Elevator>,
            &[asp_config::sections::agent::ElevatorStorey],
        ),
        String,
    > {
        let storeys = &self.cfg.config.agent_node.building_memory.elevator.storeys;
        match &self.elevator {
            Some(elevator) if !storeys.is_empty() => Ok((elevator, storeys)),
            _ => Err("no elevator is set up (agent_node.building_memory.elevator.storeys)".into()),
        }
    }

    /// The elevator's storey the base is on (the nearest to its map's height in the
    /// building's frame).
    async fn storey_here(&self) -> Result<usize, String> {
        let frame = FrameId::new(self.cfg.config.common.frames.building.clone());
        let here = self.base.map_in(&frame).await.ok_or_else(|| {
            format!("TF does not say which storey the base is on ({frame} → map)")
        })?;
        Ok(nearest_storey(
            &self.storey_heights(),
            f64::from(here.translation.vector.z),
        ))
    }

    /// How the site numbers its floors (`agent_node.building_memory.elevator`).
    fn floor_numbering(&self) -> asp_core::FloorNumbering {
        asp_core::FloorNumbering {
            ground: self
                .cfg
                .config
                .agent_node
                .building_memory
                .elevator
                .ground_floor_number,
        }
    }

    /// The floor heights of the elevator's storeys, metres in the building's frame.
    fn storey_heights(&self) -> Vec<f64> {
        self.cfg
            .config
            .agent_node
            .building_memory
            .elevator
            .storeys
            .iter()
            .map(|s| f64::from(s.height_m))
            .collect()
    }

    /// Tours each storey but `home` (of `count`) in turn, each from where the elevator
    /// leaves the base, adding to `report` and `recorder`; then rides back to `home`.
    /// A storey the base cannot get to or whose tour fails is left out (warned); an
    /// error only when the base is not back on `home` (stopped, or the elevator failed).
    async fn tour_other_storeys(
        &self,
        st: &mut MapState,
        cancel: &CancellationToken,
        home: usize,
        count: usize,
        report: &mut ExplorationReport,
        mut recorder: Option<&mut asp_perception::record::TourRecorder>,
    ) -> Result<(), ServiceError> {
        let mut at = home;
        for to in (0..count).filter(|&k| k != home) {
            if cancel.is_cancelled() {
                break;
            }
            if let Err(why) = self.ride_elevator(st, at, to, cancel).await {
                warn!(from = at, to, "the tour leaves out storey {to}: {why}");
                // a ride that was refused left the base where it was; one that ended
                // elsewhere is caught by the ride home
                at = self.storey_here().await.unwrap_or(at);
                continue;
            }
            at = to;
            let spot = self.base.base_pose().await.map_err(base_pose_error)?;
            match self.tour(st, cancel, spot, recorder.as_deref_mut()).await {
                Ok(part) => {
                    info!(
                        storey = to,
                        stops = part.stops.len(),
                        travelled_m = part.travelled_m,
                        free_m2 = part.free_area_m2,
                        "explored another storey"
                    );
                    report.add_storey(to, part);
                }
                Err(e) => warn!(storey = to, "the tour of storey {to} failed: {e}"),
            }
        }
        if cancel.is_cancelled() {
            report.ended = ExplorationEnd::Stopped;
        }
        if at != home {
            if cancel.is_cancelled() {
                return Err(ServiceError::new(
                    FailureKind::Cancelled,
                    format!("the tour was stopped on storey {at}; it started on storey {home}"),
                ));
            }
            self.ride_elevator(st, at, home, cancel)
                .await
                .map_err(|why| {
                    ServiceError::new(
                        FailureKind::Navigation,
                        format!(
                            "the tour could not come back to storey {home} (the base is on storey {at}): {why}"
                        ),
                    )
                })?;
        }
        Ok(())
    }

    /// The tour of [`Self::explore`] from `start`, without the drive back.
    async fn tour(
        &self,
        st: &mut MapState,
        cancel: &CancellationToken,
        start: Pose2D,
        mut recorder: Option<&mut asp_perception::record::TourRecorder>,
    ) -> Result<ExplorationReport, ServiceError> {
        use asp_nav::explore::{ExplorationMap, headings_at};
        let x = &self.mapping.explore;
        let nav_error = base_pose_error;
        let mut grid = ExplorationMap::new(start, explore_params(x)).map_err(|e| {
            ServiceError::new(
                FailureKind::InvalidArgument,
                format!("mapping.explore: {e}"),
            )
        })?;
        let look = self.next_look(st);
        st.seen_poses.clear();
        st.seen_from = None;
        self.take_pose(look.map(|l| self.mapping.arm_poses[l].as_str()), cancel)
            .await;
        let mut stops: Vec<Pose2D> = Vec::new();
        let mut failed: Vec<Pose2D> = Vec::new();
        let mut travelled = 0.0;
        let mut here = start;
        // false after a drive that went nowhere: this place was looked round already
        let mut look_round = true;
        let ended = loop {
            let views = if look_round {
                headings_at(here, x.headings)
            } else {
                Vec::new()
            };
            for (k, view) in views.into_iter().enumerate() {
                if cancel.is_cancelled() {
                    break;
                }
                if k > 0 {
                    let nav = self.base.navigate_to(view, cancel).await;
                    if nav.status != TerminalStatus::Succeeded {
                        warn!(
                            view = k,
                            code = ?nav.error_code,
                            "could not turn to the next view ({}); looking from where the base stopped",
                            nav.error_msg
                        );
                    }
                }
                let base = self.base.base_pose().await.map_err(nav_error)?;
                let frame = self.capture("mapping.explore.camera", &x.camera).await?;
                grid.integrate(&frame, base);
                if let Some(r) = recorder.as_mut() {
                    // in a building, placed in the building's frame: the memory built
                    // from it keeps the storeys apart
                    let building = FrameId::new(self.cfg.config.common.frames.building.clone());
                    let recorded = match self.base.map_in(&building).await {
                        Some(map_in_building) => {
                            let mut f = frame.clone();
                            f.camera_pose = asp_core::Transform::new(
                                building,
                                frame.camera_pose.child.clone(),
                                map_in_building * frame.camera_pose.iso,
                            );
                            std::borrow::Cow::Owned(f)
                        }
                        None => std::borrow::Cow::Borrowed(&frame),
                    };
                    r.record(&recorded).map_err(|e| {
                        ServiceError::new(FailureKind::Internal, format!("recording the tour: {e}"))
                    })?;
                }
                for camera in &self.mapping.cameras {
                    let frame = if *camera == x.camera {
                        within_range(&frame, x.object_range_m)
                    } else {
                        self.capture("camera", camera).await?
                    };
                    st.builder.add_keyframe(&frame).map_err(perception_error)?;
                }
            }
            stops.push(here);
            if cancel.is_cancelled() {
                break ExplorationEnd::Stopped;
            }
            let avoid: Vec<Pose2D> = stops.iter().chain(&failed).copied().collect();
            let Some(next) = grid.next_stop(here, &avoid) else {
                break ExplorationEnd::Explored;
            };
            info!(
                stop = stops.len(),
                free_m2 = grid.free_area(),
                objects = st.builder.map().len(),
                next = ?next.pose,
                path_m = next.path_length,
                frontier_m = next.frontier.length(x.resolution),
                "explored a stop"
            );
            if stops.len() >= x.max_stops {
                break ExplorationEnd::MaxStops;
            }
            if travelled + next.path_length > x.max_travel_m {
                break ExplorationEnd::MaxTravel;
            }
            let nav = self.base.navigate_to(next.pose, cancel).await;
            if cancel.is_cancelled() {
                break ExplorationEnd::Stopped;
            }
            travelled += next.path_length;
            let now = self.base.base_pose().await.map_err(nav_error)?;
            if nav.status != TerminalStatus::Succeeded && now.distance_to(&here) < 0.1 {
                warn!(
                    code = ?nav.error_code,
                    goal = ?next.pose,
                    "exploration stop not reached ({}); trying the next frontier",
                    nav.error_msg
                );
                failed.push(next.pose);
                // plan again from the same place, without looking round again
                stops.pop();
                look_round = false;
                continue;
            }
            here = now;
            look_round = true;
        };
        Ok(ExplorationReport {
            recording: None,
            travelled_m: travelled,
            free_area_m2: grid.free_area(),
            ended,
            grid: grid.grid().clone(),
            stops,
            storeys: Vec::new(),
        })
    }

    /// A rebuild of an explored map: the tour's memory of the rest of the building
    /// stays, and what the mapping cameras see from here (the next arm pose) is looked
    /// at afresh: the objects in these views within [`REFRESH_WITHIN_M`] are forgotten
    /// and the views added (what moved or went is gone, what came is there). Exploring
    /// the whole building again after every failed grasp would take minutes on a robot.
    async fn refresh_here(
        &self,
        st: &mut MapState,
        cancel: &CancellationToken,
    ) -> Result<(), ServiceError> {
        let look = self.next_look(st);
        self.take_pose(look.map(|l| self.mapping.arm_poses[l].as_str()), cancel)
            .await;
        let mut frames = Vec::new();
        for camera in &self.mapping.cameras {
            frames.push(self.capture("camera", camera).await?);
        }
        let forgotten = st.builder.forget(|o| {
            o.point_cloud.centroid().is_some_and(|c| {
                frames
                    .iter()
                    .any(|f| f.sees(&c, REFRESH_WITHIN_M, OCCLUSION_MARGIN_M))
            })
        });
        for frame in &frames {
            st.builder.add_keyframe(frame).map_err(perception_error)?;
        }
        info!(
            forgotten,
            objects = st.builder.map().len(),
            "the explored map looked again from here"
        );
        let here = self.base.base_pose().await.ok();
        st.seen_poses = look.into_iter().collect();
        st.seen_from = here;
        st.placed_at = match (st.placed_at, here) {
            (Some(p), Some(h)) if p.distance_to(&h) <= self.mapping.search.reach => Some(p),
            _ => here,
        };
        st.built = true;
        Ok(())
    }

    /// Each exploring build's tour as it ends (the latest; `None` before the first).
    pub fn explorations(&self) -> tokio::sync::watch::Receiver<Option<Arc<ExplorationReport>>> {
        self.explorations.subscribe()
    }

    /// The last exploring build's tour; `None` before one (or when builds do not explore).
    pub async fn exploration(&self) -> Option<ExplorationReport> {
        self.explorations.borrow().as_deref().cloned()
    }

    /// `object_retrieval` over the map, passing over objects where closer looks withdrew
    /// one from this query.
    async fn retrieve_in_map(
        &self,
        st: &mut MapState,
        query: &str,
    ) -> Result<Retrieval, ServiceError> {
        self.retrieve_asking(st, Ask::plain(query)).await
    }

    /// [`Self::retrieve_in_map`] with the ranking, confirming and keying texts apart.
    async fn retrieve_asking(
        &self,
        st: &mut MapState,
        ask: Ask<'_>,
    ) -> Result<Retrieval, ServiceError> {
        let query = ask.confirm;
        let passed_over = not_passed_over(&st.withdrawn, query, self.max_shift());
        let room = st.room.clone();
        // the live map is of the base's storey: of another, nothing in it counts
        let storey_here = st.storey.as_ref().is_none_or(|f| f.robot_on_it);
        let eligible = |o: &Object| {
            passed_over(o)
                && storey_here
                && room
                    .as_ref()
                    .is_none_or(|r| o.point_cloud.centroid().is_some_and(|c| r.contains(c)))
        };
        self.retriever
            .retrieve_asking(st.builder.map(), &mut st.registry, ask, eligible)
            .await
            .map_err(perception_error)
    }

    /// A look from the next mapping arm pose (not the same one again): a local map of
    /// `camera`'s frame.
    async fn look_locally(&self, camera: &str) -> Result<(MapBuilder, RgbdFrame), ServiceError> {
        let look = {
            let mut st = self.state.lock().await;
            self.next_look(&mut st)
        };
        self.take_pose(
            look.map(|i| self.mapping.arm_poses[i].as_str()),
            &CancellationToken::new(),
        )
        .await;
        let frame = self.capture("camera", camera).await?;
        let mut local = asp_perception::factory::map_builder(&self.cfg, &self.models)
            .map_err(perception_error)?;
        local.add_keyframe(&frame).map_err(perception_error)?;
        Ok((local, frame))
    }

    /// Closer looks said the object `key` stands for, at `at`, is not `query`: its key
    /// is forgotten and retrieval passes over objects there for that query.
    async fn withdraw(&self, key: &ObjectKey, query: &str, at: Point3) {
        let mut st = self.state.lock().await;
        st.registry.remove(key);
        st.queries.remove(key);
        st.pinned.remove(key);
        st.said_not_it.remove(key);
        st.withdrawn.push(Withdrawn {
            query: query.to_owned(),
            at,
        });
        let excess = st.withdrawn.len().saturating_sub(WITHDRAWN_KEPT);
        st.withdrawn.drain(..excess);
        info!(object = %key, query, "withdrawn from its query");
    }

    /// Whether retrieval passes over objects at `at` for `query` (a withdrawal there).
    async fn was_withdrawn(&self, query: &str, at: Point3) -> bool {
        let st = self.state.lock().await;
        passed_over(&st.withdrawn, query, at, self.max_shift())
    }

    /// A closer look saw `query` at `seen`, not where the map had `key` (`at`, in view):
    /// the look joins the map, `key` is withdrawn from the query, and the answer tells
    /// the agent to retrieve again (which now finds what this look saw).
    async fn take_the_closer_view(
        &self,
        key: &ObjectKey,
        query: &str,
        at: Point3,
        seen: Point3,
        frame: &RgbdFrame,
    ) -> ServiceError {
        {
            let mut st = self.state.lock().await;
            if let Err(e) = st.builder.add_keyframe(frame) {
                return perception_error(e);
            }
        }
        info!(
            object = %key,
            query,
            at = ?at,
            seen = ?seen,
            "a closer look found the query elsewhere and nothing of the object's size where the map had it"
        );
        self.withdraw(key, query, at).await;
        ServiceError::with_failure(
            asp_core::Failure::new(FailureKind::UnknownObject).retryable(),
            format!(
                "{key} was not there when looked at again from here (where the map had it is in view), but {} was, {:.2} m away at ({:.2}, {:.2}, {:.2}): the map now has this view and no longer offers {key} for {query:?}; retrieve {query:?} again",
                object_name(query),
                (seen - at).norm(),
                seen.x,
                seen.y,
                seen.z
            ),
        )
    }

    /// How near points must lie to belong to one piece of an object: the segment
    /// filter's `cluster_radius` (two voxels when that filter is off).
    fn link_radius(&self) -> Real {
        let om = &self.cfg.config.object_map_node;
        if om.filter.cluster_radius > 0.0 {
            om.filter.cluster_radius
        } else {
            2.0 * om.merge.voxel_size
        }
    }

    fn max_shift(&self) -> Real {
        self.cfg
            .config
            .object_map_node
            .retrieval
            .relocalize_max_shift
    }

    /// The index in `mapping.arm_poses` of the next look (cycling), counting it.
    fn next_look(&self, st: &mut MapState) -> Option<usize> {
        let n = self.mapping.arm_poses.len();
        st.looks += 1;
        (n > 0).then(|| (st.looks - 1) % n)
    }

    /// The arm poses (indices into `mapping.arm_poses`) to capture from at one stop of a
    /// build whose look is `first`: every pose, starting with `first`, at a survey stop
    /// with `survey_looks: all`; else `first` alone.
    fn looks_at_stop(&self, first: Option<usize>, survey_stop: bool) -> Vec<Option<usize>> {
        let n = self.mapping.arm_poses.len();
        match first {
            Some(f) if survey_stop && self.mapping.survey_looks == SurveyLooks::All => {
                (0..n).map(|k| Some((f + k) % n)).collect()
            }
            _ => vec![first],
        }
    }

    /// A frame of `camera`; a failure names it after `setting`, what chose it.
    async fn capture(&self, setting: &str, camera: &str) -> Result<RgbdFrame, ServiceError> {
        self.frames.capture(camera).await.map_err(|e| {
            ServiceError::new(
                FailureKind::Perception,
                format!("{setting} {camera:?} gave no frame: {e}"),
            )
        })
    }

    /// Takes each of `looks` (a mapping arm pose, or none) in turn and adds the mapping
    /// cameras' keyframes from it.
    async fn look_from_here(
        &self,
        st: &mut MapState,
        looks: &[Option<usize>],
        cancel: &CancellationToken,
    ) -> Result<(), ServiceError> {
        for look in looks {
            self.take_pose(look.map(|l| self.mapping.arm_poses[l].as_str()), cancel)
                .await;
            self.capture_keyframes(st).await?;
        }
        Ok(())
    }

    /// Adds a keyframe of every mapping camera, from where the robot is now.
    async fn capture_keyframes(&self, st: &mut MapState) -> Result<(), ServiceError> {
        for camera in &self.mapping.cameras {
            let frame = self.capture("camera", camera).await?;
            let report = st.builder.add_keyframe(&frame).map_err(perception_error)?;
            info!(
                camera,
                objects = st.builder.map().len(),
                "keyframe {report:?}"
            );
        }
        Ok(())
    }

    /// Looks from the mapping poses this map has not seen yet (from where the base is),
    /// adding their keyframes; `false` when there was none left.
    async fn look_around(&self, st: &mut MapState) -> Result<bool, ServiceError> {
        // poses seen from elsewhere are new from here
        let here = self.base.base_pose().await.ok();
        let moved = match (st.seen_from, here) {
            (Some(a), Some(b)) => {
                a.distance_to(&b) > LOOK_AGAIN_AFTER_M || a.turn_to(&b) > LOOK_AGAIN_AFTER_RAD
            }
            _ => true,
        };
        if moved {
            st.seen_poses.clear();
            st.seen_from = here;
        }
        let unseen: Vec<usize> = (0..self.mapping.arm_poses.len())
            .filter(|i| !st.seen_poses.contains(i))
            .collect();
        if unseen.is_empty() {
            return Ok(false);
        }
        let (cancel, _estop) = self.motion_token()?;
        for i in unseen {
            self.take_pose(Some(self.mapping.arm_poses[i].as_str()), &cancel)
                .await;
            self.capture_keyframes(st).await?;
            st.seen_poses.insert(i);
        }
        Ok(true)
    }

    /// Steps the base sideways and looks until `query` matches
    /// ([`asp_config::sections::perception::SearchConfig`]): the match, or `None` when
    /// there was no search or it found nothing (the base is then back where it was).
    async fn search(
        &self,
        st: &mut MapState,
        query: &str,
    ) -> Result<Option<Retrieval>, ServiceError> {
        let offsets = self.mapping.search.offsets();
        if offsets.is_empty() {
            return Ok(None);
        }
        let Some(SearchStart {
            start,
            cancel,
            _estop,
            looks,
        }) = self.search_start(query).await?
        else {
            return Ok(None);
        };
        // sideways as the robot faced where it was put (it faced what it was put
        // before; go_to since may have turned it at an angle to the table, where
        // sideways runs into it), turned by the quarter turns nearest its heading now
        // (go_to may have taken it round the table), unless the base has left that place
        let heading = match st.placed_at {
            Some(b) if b.distance_to(&start) <= self.mapping.search.reach => {
                nearest_quarter_turn(b.theta, start.theta)
            }
            _ => start.theta,
        };
        // a closer look may go one step past the last stop: what that stop's view sees
        // at working distance
        let line = SearchLine {
            start,
            heading,
            reach: self.mapping.search.reach + self.mapping.search.step,
        };
        let mut blocked = [false; 2];
        for offset in offsets {
            let side = usize::from(offset < 0.0);
            if blocked[side] || cancel.is_cancelled() {
                continue;
            }
            let nav = self.navigate_near(line.stop(offset), &cancel).await;
            if nav.status != TerminalStatus::Succeeded {
                info!(
                    offset,
                    "search stop not reached ({}); that side ends", nav.error_msg
                );
                blocked[side] = true;
                continue;
            }
            self.look_from_here(st, &looks, &cancel).await?;
            let found = self.retrieve_in_map(st, query).await?;
            if !found.keys.is_empty() {
                // a match at the edge of a view is one model's word: the closer view
                // must confirm it, or the search goes on
                let found = match self
                    .step_in_front(st, &found, &looks, &cancel, &line)
                    .await?
                {
                    InFront::Confirmed(again) => again,
                    InFront::Already => found,
                    InFront::NotConfirmed => {
                        info!(query, offset, "a match the closer view did not confirm");
                        continue;
                    }
                };
                info!(query, offset, "found by searching sideways");
                self.seen_from_here(st, &looks).await;
                return Ok(Some(found));
            }
        }
        info!(query, "searched sideways, nothing matched; driving back");
        let nav = self.navigate_near(start, &cancel).await;
        if nav.status != TerminalStatus::Succeeded {
            warn!(
                "could not drive back to where the search started: {:?} {}",
                nav.error_code, nav.error_msg
            );
        }
        Ok(None)
    }

    /// Records that the map has seen from where the base stands now through `looks`, so
    /// the next look around takes none of them again.
    async fn seen_from_here(&self, st: &mut MapState, looks: &[Option<usize>]) {
        st.seen_from = self.base.base_pose().await.ok();
        st.seen_poses = looks.iter().flatten().copied().collect();
    }

    /// Where a search starts (the base's pose), its motion token and the looks at each
    /// stop; `None` under the e-stop or without the base's pose: no search.
    async fn search_start(&self, query: &str) -> Result<Option<SearchStart>, ServiceError> {
        if self.estop.as_ref().is_some_and(|e| e.is_engaged()) {
            info!(
                query,
                "nothing matched; the e-stop is engaged, so no search"
            );
            return Ok(None);
        }
        let Ok(start) = self.base.base_pose().await else {
            return Ok(None);
        };
        let (cancel, _estop) = self.motion_token()?;
        let n = self.mapping.arm_poses.len();
        let looks = self.looks_at_stop((n > 0).then_some(0), true);
        Ok(Some(SearchStart {
            start,
            cancel,
            _estop,
            looks,
        }))
    }

    /// Turns the base in place by each of `mapping.search.turns_deg` from where it faces
    /// and looks, until `query` matches: what lies beside or behind the robot, which the
    /// sideways search, along one heading, never faces. The match (the base faces where
    /// it was seen), or `None` when there are no turns or they found nothing (the base
    /// then faces as it did).
    async fn turn_and_look(
        &self,
        st: &mut MapState,
        query: &str,
    ) -> Result<Option<Retrieval>, ServiceError> {
        let turns = &self.mapping.search.turns_deg;
        if turns.is_empty() {
            return Ok(None);
        }
        let Some(SearchStart {
            start,
            cancel,
            _estop,
            looks,
        }) = self.search_start(query).await?
        else {
            return Ok(None);
        };
        let mut turned = false;
        for deg in turns {
            if cancel.is_cancelled() {
                break;
            }
            let heading = start.theta + deg.to_radians();
            let facing = Pose2D::new(start.x, start.y, heading.sin().atan2(heading.cos()));
            let nav = self.base.navigate_to(facing, &cancel).await;
            if nav.status != TerminalStatus::Succeeded {
                info!(
                    deg,
                    "could not turn in place ({}); next turn", nav.error_msg
                );
                continue;
            }
            turned = true;
            self.look_from_here(st, &looks, &cancel).await?;
            let found = self.retrieve_in_map(st, query).await?;
            if !found.keys.is_empty() {
                info!(query, deg, "found by turning in place");
                self.seen_from_here(st, &looks).await;
                return Ok(Some(found));
            }
        }
        if turned {
            info!(query, "turned in place, nothing matched; facing as before");
            let nav = self.base.navigate_to(start, &cancel).await;
            if nav.status != TerminalStatus::Succeeded {
                warn!(
                    "could not turn back to where the search started: {:?} {}",
                    nav.error_code, nav.error_msg
                );
            }
        }
        Ok(None)
    }

    /// The building memory (`agent_node.building_memory`), read again when its file
    /// changed; `None` without a file or with an empty memory.
    fn building_memory(
        &self,
        st: &mut MapState,
    ) -> Result<Option<Arc<asp_memory::building::Hierarchy>>, ServiceError> {
        let m = &self.cfg.config.agent_node.building_memory;
        let path = self.cfg.data_path(&m.database);
        let Ok(modified) = std::fs::metadata(&path).and_then(|md| md.modified()) else {
            return Ok(None);
        };
        if let Some(c) = &st.building
            && c.modified == modified
        {
            return Ok((!c.hierarchy.views.is_empty()).then(|| Arc::clone(&c.hierarchy)));
        }
        let memory = match asp_memory::building::BuildingMemory::open(&path, &m.site) {
            Ok(memory) => memory,
            // `asp memory build` is adding a tour: this request goes without the memory
            Err(e @ asp_memory::MemoryError::Held { .. }) => {
                warn!("building memory not consulted: {e}");
                return Ok(None);
            }
            Err(e) => {
                return Err(ServiceError::new(
                    FailureKind::InvalidArgument,
                    format!("agent_node.building_memory: {e}"),
                ));
            }
        };
        let h = Arc::new(memory.hierarchy().clone());
        let frame = memory.frame().map_err(|e| {
            ServiceError::new(
                FailureKind::InvalidArgument,
                format!("agent_node.building_memory: {e}"),
            )
        })?;
        st.building = Some(CachedMemory {
            modified,
            hierarchy: Arc::clone(&h),
            vacated: memory.vacated().into(),
            frame,
        });
        Ok((!h.views.is_empty()).then_some(h))
    }

    /// How to move the building memory's places into the map the base navigates in:
    /// `Ok(None)` when its views are in that map already; `Err` saying why not when
    /// nothing relates the memory's frame to it (TF lacks the building's frame).
    async fn memory_to_map(&self, st: &MapState) -> Result<Option<asp_core::Isometry3>, String> {
        let map = &self.cfg.config.common.frames.map;
        match st.building.as_ref().and_then(|c| c.frame.clone()) {
            Some(frame) if frame != *map => self
                .base
                .map_in(&FrameId::new(frame.clone()))
                .await
                .map(|map_in_frame| Some(map_in_frame.inverse()))
                .ok_or_else(|| {
                    format!(
                        "the building memory's views are in frame {frame:?}, which TF does not relate to {map:?}"
                    )
                }),
            _ => Ok(None),
        }
    }

    /// The places the building memory (as [`Self::building_memory`] last read it) knows
    /// were found without what a request asked for.
    fn vacated(st: &MapState) -> Arc<[asp_memory::building::Vacated]> {
        st.building
            .as_ref()
            .map_or_else(|| Arc::from(Vec::new()), |c| Arc::clone(&c.vacated))
    }

    /// Takes the base to the storey at `height` in the building's frame by the elevator:
    /// drives to this storey's elevator spot, rides, and starts the live map afresh
    /// there (what it held is on the storey left). Returns how places of the memory
    /// move into the new storey's map, or why the base did not go.
    async fn ride_to_storey_of(
        &self,
        st: &mut MapState,
        height: f64,
        cancel: &CancellationToken,
    ) -> Result<asp_core::Isometry3, String> {
        self.set_up_elevator()?;
        let from = self.storey_here().await?;
        let to = storey_of(&self.storey_heights(), height)
            .ok_or_else(|| format!("no storey of the elevator's is at {height:.2} m"))?;
        if from == to {
            return Err(format!("storey {to} is the base's own"));
        }
        info!(
            from,
            to, "going to the elevator for what the building memory saw upstairs or downstairs"
        );
        self.ride_elevator(st, from, to, cancel).await?;
        match self.memory_to_map(st).await {
            Ok(Some(t)) => Ok(t),
            Ok(None) => Err("the memory is of one storey's map".into()),
            Err(why) => Err(why),
        }
    }

    /// Drives to storey `from`'s elevator spot and rides to `to`; the live map starts
    /// afresh there (what it held is on the storey left).
    async fn ride_elevator(
        &self,
        st: &mut MapState,
        from: usize,
        to: usize,
        cancel: &CancellationToken,
    ) -> Result<(), String> {
        let (elevator, storeys) = self.set_up_elevator()?;
        let [x, y] = storeys
            .get(from)
            .ok_or_else(|| format!("the elevator has no storey {from}"))?
            .spot;
        let heading = self.base.base_pose().await.map_or(0.0, |p| p.theta);
        info!(from, to, spot = ?[x, y], "going to the elevator");
        let nav = self
            .base
            .navigate_to(Pose2D::new(x, y, heading), cancel)
            .await;
        if nav.status != TerminalStatus::Succeeded {
            return Err(format!(
                "could not reach the elevator of storey {from} at ({x:.2}, {y:.2}): {}",
                nav.error_msg
            ));
        }
        let at = elevator.ride(to as u32, cancel).await?;
        if at as usize != to {
            return Err(format!("the elevator stopped at storey {at}, not {to}"));
        }
        // the live map was of the storey left behind
        st.builder.reset();
        st.seen_poses.clear();
        st.seen_from = None;
        st.placed_at = None;
        if let Some(f) = st.storey.as_mut() {
            f.robot_on_it = f.storeys.contains(&to);
        }
        info!(storey = to, "off the elevator; the live map starts afresh");
        Ok(())
    }

    /// Keeps in the building memory that `place` was found without what `query` asked
    /// for, so that later runs do not drive there for it again (the memory is of what
    /// the robot last saw). A memory that cannot be written is said and skipped: this
    /// run passes over the place all the same.
    fn remember_vacated(&self, position: [f64; 3], query: &str, text: &[f32]) {
        let m = &self.cfg.config.agent_node.building_memory;
        let path = self.cfg.data_path(&m.database);
        let mark = asp_memory::building::Vacated {
            position,
            request: query.to_owned(),
            embedding: text.to_vec(),
            min_relevance: m.min_relevance,
        };
        let written = asp_memory::building::BuildingMemory::open(&path, &m.site)
            .and_then(|mut memory| memory.mark_vacated(mark));
        match written {
            Ok(()) => {
                info!(query, at = ?position, "the building memory now knows it is not there")
            }
            Err(e) => warn!(
                query,
                "the building memory was not told the place is empty: {e}"
            ),
        }
    }

    /// `object_retrieval` in the live map; when nothing matches, looks from the other
    /// mapping poses, searches sideways (both only where the requested room, if any, is
    /// where the base stands), then goes where the building memory saw it.
    async fn retrieve_here_or_remembered(
        &self,
        st: &mut MapState,
        query: &str,
    ) -> Result<Retrieval, ServiceError> {
        let mut retrieval = self.retrieve_in_map(st, query).await?;
        // what found objects are keyed after: the words, also when their grounding finds them
        let word = query;
        // nothing matched the words: ground them, and look and search with what they mean
        let grounded;
        let query = if retrieval.keys.is_empty()
            && let Some((found, q)) = self.grounded_retrieval(st, query).await?
        {
            retrieval = found;
            grounded = q;
            grounded.as_str()
        } else {
            query
        };
        let here = st.room.as_ref().is_none_or(|r| r.robot_in_it)
            && st.storey.as_ref().is_none_or(|f| f.robot_on_it);
        // nothing matched: look from the poses this map has not seen yet, then again
        if retrieval.keys.is_empty() && here && self.look_around(st).await? {
            info!(
                query,
                "nothing matched; looked around from the other mapping poses"
            );
            let ask = Ask {
                key: word,
                ..Ask::plain(query)
            };
            retrieval = self.retrieve_asking(st, ask).await?;
        }
        // still nothing: step sideways and look
        if retrieval.keys.is_empty()
            && here
            && let Some(found) = self.search(st, query).await?
        {
            retrieval = found;
        }
        // still nothing: turn in place and look at the rest of the room
        if retrieval.keys.is_empty()
            && here
            && let Some(found) = self.turn_and_look(st, query).await?
        {
            retrieval = found;
        }
        // still nothing: where the building memory saw it
        if retrieval.keys.is_empty()
            && let Some(found) = self.recall(st, query).await?
        {
            retrieval = found;
        }
        for k in &retrieval.keys {
            st.queries
                .entry(k.clone())
                .or_insert_with(|| query.to_owned());
        }
        Ok(retrieval)
    }

    /// Grounds `query`'s words when a grounder is configured (SPEC §4.2), and searches
    /// the map with what they mean: candidates ranked by the word and its keywords, then
    /// (nothing confirmed) by its replacement, a known word that finds things of that
    /// kind. Either way each candidate is confirmed with the word and its keywords, so
    /// the kettle beside a moka pot is not taken for it, and keyed after the word. A
    /// replacement that found something is kept for the next time.
    ///
    /// `None` without a grounder or a grounding; else what the search found (perhaps
    /// nothing) and the question to look further with. A grounding that fails (the web
    /// or the model down) is logged and retrieval goes on with the words.
    async fn grounded_retrieval(
        &self,
        st: &mut MapState,
        query: &str,
    ) -> Result<Option<(Retrieval, String)>, ServiceError> {
        let Some(grounder) = &self.grounder else {
            return Ok(None);
        };
        let grounded = match grounder.ground(query).await {
            Ok(Some(g)) => g,
            Ok(None) => return Ok(None),
            Err(e) => {
                warn!(query, error = %e, "grounding failed; retrieving with the words alone");
                return Ok(None);
            }
        };
        let question = grounded.query();
        let ask = |rank| Ask {
            rank,
            confirm: &question,
            key: query,
        };
        let mut found = self.retrieve_asking(st, ask(&question)).await?;
        let mut by = "keywords";
        if found.keys.is_empty()
            && let Some(replacement) = &grounded.grounding.replacement
        {
            found = self.retrieve_asking(st, ask(replacement)).await?;
            by = "replacement";
            if !found.keys.is_empty()
                && let Err(e) = grounder.confirm_replacement(query, replacement)
            {
                warn!(query, replacement, error = %e, "the replacement was not kept");
            }
        }
        info!(
            query,
            grounded = %question,
            replacement = ?grounded.grounding.replacement,
            from_memory = grounded.from_memory,
            web_calls = grounded.web_calls,
            found = found.keys.len(),
            by,
            "retrieved with the grounded word"
        );
        Ok(Some((found, question)))
    }

    /// The text embedder's vector of `text` (a request, a room's name).
    fn embed_text(&self, text: &str) -> Result<Vec<f32>, ServiceError> {
        self.models
            .text_embedder
            .embed_text(text)
            .map_err(|e| ServiceError::new(FailureKind::Perception, e.to_string()))
    }

    /// Embeds `agent_node.building_memory.room_kinds` into `st.room_kinds`, once.
    fn embed_room_kinds(&self, st: &mut MapState) -> Result<(), ServiceError> {
        if st.room_kinds.is_empty() {
            st.room_kinds = self
                .cfg
                .config
                .agent_node
                .building_memory
                .room_kinds
                .iter()
                .map(|k| self.embed_text(k))
                .collect::<Result<_, _>>()?;
        }
        Ok(())
    }

    /// What the building memory saw like `query` (within `room` when one is named), as
    /// recall would visit it, without moving: each place with its distance from the
    /// base, the kind of room its zone looks like and what else was seen there. Places
    /// found empty during this run are left out (and counted in the note).
    async fn remembered(
        &self,
        query: &str,
        within: &Within,
    ) -> Result<asp_core::Recollection, ServiceError> {
        let mut st = self.state.lock().await;
        st.storey = match within.storey {
            Some(storey) => Some(self.storey_filter(storey, within.counted_from).await?),
            None => None,
        };
        let out = self
            .remembered_within(&mut st, query, within.room.as_deref())
            .await;
        st.storey = None;
        out
    }

    /// [`Self::remembered`] with the storey's filter in `st`.
    async fn remembered_within(
        &self,
        st: &mut MapState,
        query: &str,
        room: Option<&str>,
    ) -> Result<asp_core::Recollection, ServiceError> {
        use asp_core::{RecalledObject, Recollection};
        use asp_memory::building::{
            PassOver, RecallScope, RoomParams, recall_request, zone_kinds, zone_of,
        };
        let m = &self.cfg.config.agent_node.building_memory;
        let Some(memory) = self.building_memory(st)? else {
            let path = self.cfg.data_path(&m.database);
            return Ok(Recollection::unavailable(
                query,
                format!(
                    "no building memory at {} (agent_node.building_memory.database): the robot has not toured this site, or `asp memory build` has not run",
                    path.display()
                ),
            ));
        };
        let scope = match room {
            Some(room) => match self.room_filter(st, room)? {
                Some(filter) => Some(filter.scope),
                None => {
                    return Ok(Recollection {
                        room: Some(room.to_owned()),
                        ..Recollection::unavailable(
                            query,
                            format!(
                                "rooms are off (agent_node.building_memory.rooms), so not the {room}; ask without the room"
                            ),
                        )
                    });
                }
            },
            None => None,
        };
        let heights = match self.recall_heights(st) {
            Ok(h) => h,
            Err(why) => {
                return Ok(Recollection {
                    room: room.map(str::to_owned),
                    storey: st.storey.as_ref().map(|f| f.storey),
                    ..Recollection::unavailable(
                        query,
                        format!("the building memory cannot keep to the storey: {why}"),
                    )
                });
            }
        };
        let text = self.embed_text(query)?;
        let max = m.max_places.max(1);
        let places = recall_request(
            &memory,
            query,
            &text,
            RecallScope {
                room: scope.as_ref(),
                heights,
            },
            m.min_relevance,
            PassOver {
                vacated: &Self::vacated(st),
                ..PassOver::default()
            },
            max + st.stale.len(),
        );
        // as recall_request's own exclusion
        let near = asp_memory::building::same_place;
        let (stale, fresh): (Vec<_>, Vec<_>) = places
            .into_iter()
            .partition(|p| st.stale.iter().any(|s| near(s, &p.position)));
        // places found empty for requests like this one, in this run or before (the
        // memory keeps them), each once
        let mut empty: Vec<[f64; 3]> = Self::vacated(st)
            .iter()
            .filter(|v| v.is_like(&text))
            .map(|v| v.position)
            .collect();
        for p in &stale {
            if !empty.iter().any(|e| near(e, &p.position)) {
                empty.push(p.position);
            }
        }
        self.embed_room_kinds(st)?;
        let params = RoomParams {
            margin: m.room_margin,
            temperature: m.room_temperature,
        };
        let looks = zone_kinds(&memory, &m.room_kinds, &st.room_kinds, &params);
        let base = self.base.base_pose().await.ok();
        // places are told in the map the base navigates in (a building memory's frame
        // moved there); unrelated frames leave them as remembered, without distances
        let to_map = self.memory_to_map(st).await;
        let places = fresh
            .into_iter()
            .take(max)
            .map(|p| {
                let zone = zone_of(&memory, p.position).and_then(|z| looks[z as usize].as_ref());
                let (p, base) = match &to_map {
                    Ok(Some(t)) => (p.transformed(t), base),
                    Ok(None) => (p, base),
                    Err(_) => (p, None),
                };
                RecalledObject {
                    distance_m: base.map(|b| {
                        (p.position[0] - f64::from(b.x)).hypot(p.position[1] - f64::from(b.y))
                    }),
                    looks_like: zone.map(|z| m.room_kinds[z.kind].clone()),
                    seen_with: zone
                        .map(|z| {
                            z.evidence
                                .iter()
                                .filter(|d| !d.eq_ignore_ascii_case(&p.description))
                                .cloned()
                                .collect()
                        })
                        .unwrap_or_default(),
                    description: p.description,
                    position: p.position,
                    relevance: p.relevance,
                }
            })
            .collect();
        let mut notes = Vec::new();
        if let (Some(room), Some(scope)) = (room, &scope) {
            notes.push(if scope.evidence.is_empty() {
                format!("kept to the {room} as the building memory tells it")
            } else {
                format!(
                    "kept to the {room}: where the building memory saw {}",
                    scope.evidence.join(", ")
                )
            });
        }
        if let Some(f) = &st.storey {
            notes.push(format!("kept to {}", f.said(self.floor_numbering())));
        }
        if !empty.is_empty() {
            notes.push(format!(
                "{} place(s) looked at since the tour and found empty left out",
                empty.len()
            ));
        }
        Ok(Recollection {
            query: query.to_owned(),
            room: room.map(str::to_owned),
            storey: st.storey.as_ref().map(|f| f.storey),
            consulted: true,
            places,
            room_landmarks: scope.map(|s| s.landmarks).unwrap_or_default(),
            note: notes.join("; "),
        })
    }

    /// The zones of the building memory taken for `room`; `None` without a memory or
    /// with `agent_node.building_memory.rooms` off.
    fn room_filter(
        &self,
        st: &mut MapState,
        room: &str,
    ) -> Result<Option<RoomFilter>, ServiceError> {
        if !self.cfg.config.agent_node.building_memory.rooms {
            return Ok(None);
        }
        let Some(memory) = self.building_memory(st)? else {
            return Ok(None);
        };
        let m = &self.cfg.config.agent_node.building_memory;
        self.embed_room_kinds(st)?;
        let text = self.embed_text(room)?;
        let names = asp_memory::building::RoomNames {
            room,
            text: &text,
            kinds: &st.room_kinds,
        };
        let params = asp_memory::building::RoomParams {
            margin: m.room_margin,
            temperature: m.room_temperature,
        };
        // a storey named too: the room's zones on it
        let heights = self.recall_heights(st).ok().flatten();
        let scope = asp_memory::building::room_scope(&memory, &names, &params, heights).ok_or_else(|| {
            ServiceError::new(
                FailureKind::Perception,
                format!(
                    "cannot tell where the {room} is: the building memory saw no objects to tell its rooms by; ask without the room"
                ),
            )
        })?;
        Ok(Some(RoomFilter {
            scope,
            memory,
            robot_in_it: false,
        }))
    }

    /// The heights (the memory's frame) recall keeps to for the request's storey:
    /// `None` for anywhere; `Err` when the memory cannot tell storeys (its views are in
    /// one storey's map) and the storey named is not the base's.
    fn recall_heights(&self, st: &MapState) -> Result<Option<[f64; 2]>, String> {
        let Some(f) = &st.storey else {
            return Ok(None);
        };
        let building = &self.cfg.config.common.frames.building;
        match st.building.as_ref().and_then(|c| c.frame.as_deref()) {
            Some(frame) if frame == building.as_str() => Ok(Some(f.heights)),
            // a memory of one storey's map: of the base's storey, as recall takes it
            _ if f.robot_on_it => Ok(None),
            frame => Err(format!(
                "its views are in one storey's map ({}), not the building's frame ({building}), so it cannot tell other storeys",
                frame.unwrap_or("map")
            )),
        }
    }

    /// The storey `storey` names, as the elevator's storeys (agent_node.building_memory
    /// .elevator) tell it for the storey the base is on; an error naming why when there
    /// is none (no storey above the top one, no elevator set up, TF silent).
    async fn storey_filter(
        &self,
        storey: asp_core::Storey,
        counted_from: Option<u32>,
    ) -> Result<StoreyFilter, ServiceError> {
        let elevator = &self.cfg.config.agent_node.building_memory.elevator;
        let numbering = self.floor_numbering();
        let invalid = |why: String| {
            ServiceError::new(
                FailureKind::InvalidArgument,
                format!("cannot keep to {storey}: {why}"),
            )
        };
        if elevator.storeys.is_empty() {
            return Err(invalid(
                "the site's storeys are not set up (agent_node.building_memory.elevator.storeys); ask without the storey".into(),
            ));
        }
        let floors = self.storey_heights();
        let here = if floors.len() == 1 {
            0
        } else {
            self.storey_here().await.map_err(|why| {
                ServiceError::new(
                    FailureKind::Perception,
                    format!("cannot keep to {storey}: {why}"),
                )
            })?
        };
        let from = match counted_from {
            Some(k) if k as usize >= floors.len() => {
                return Err(invalid(format!(
                    "it is counted from storey {k}, and the building has {} (0: the ground floor)",
                    floors.len()
                )));
            }
            Some(k) => k as usize,
            None => here,
        };
        let storeys = storey
            .resolve(floors.len(), from, numbering)
            .map_err(invalid)?;
        Ok(StoreyFilter {
            storey,
            heights: storey_band(&floors, &storeys),
            robot_on_it: storeys.contains(&here),
            storeys,
            counted_from: from,
        })
    }

    /// Goes to where the building memory saw what `query` asks for and looks again
    /// (SPEC §3.2, re-detection on arrival): the best remembered places in turn, each
    /// from the pose its view was taken from, a sideways search there when the look
    /// finds nothing; a place found empty is stale and not visited again. `None` when
    /// nothing was remembered (the base has not moved) or nothing was found.
    async fn recall(
        &self,
        st: &mut MapState,
        query: &str,
    ) -> Result<Option<Retrieval>, ServiceError> {
        use asp_memory::building::{PassOver, RecallScope, recall_request};
        let m = &self.cfg.config.agent_node.building_memory;
        if !m.recall {
            return Ok(None);
        }
        let Some(memory) = self.building_memory(st)? else {
            return Ok(None);
        };
        let heights = match self.recall_heights(st) {
            Ok(h) => h,
            Err(why) => {
                info!(query, "the building memory not consulted: {why}");
                return Ok(None);
            }
        };
        let text = self.embed_text(query)?;
        let scope = RecallScope {
            room: st.room.as_ref().map(|r| &r.scope),
            heights,
        };
        let places = recall_request(
            &memory,
            query,
            &text,
            scope,
            m.min_relevance,
            PassOver {
                looked: &st.stale,
                vacated: &Self::vacated(st),
            },
            m.max_places,
        );
        if places.is_empty() {
            info!(query, "the building memory holds nothing like it either");
            return Ok(None);
        }
        if self.estop.as_ref().is_some_and(|e| e.is_engaged()) {
            info!(
                query,
                "remembered elsewhere; the e-stop is engaged, so no drive"
            );
            return Ok(None);
        }
        let to_map = match self.memory_to_map(st).await {
            Ok(t) => t,
            Err(why) => {
                warn!(query, "building memory not consulted: {why}");
                return Ok(None);
            }
        };
        let (cancel, _estop) = self.motion_token()?;
        let n = self.mapping.arm_poses.len();
        let looks = self.looks_at_stop((n > 0).then_some(0), true);
        let mut to_map = to_map;
        for remembered in places {
            if cancel.is_cancelled() {
                break;
            }
            let remembered_at = remembered.position;
            let mut place = match &to_map {
                Some(t) => remembered.clone().transformed(t),
                None => remembered.clone(),
            };
            if !on_this_storey(&place.position) {
                match self.ride_to_storey_of(st, remembered_at[2], &cancel).await {
                    Ok(t) => {
                        place = remembered.transformed(&t);
                        to_map = Some(t);
                    }
                    Err(why) => {
                        info!(
                            query,
                            remembered = %place.description,
                            at = ?remembered_at,
                            "remembered on another storey and not gone to: {why}"
                        );
                        continue;
                    }
                }
            }
            info!(
                query,
                remembered = %place.description,
                at = ?place.position,
                relevance = place.relevance,
                "not in the live map; driving to where the building memory saw it"
            );
            // first within arm's reach, facing it from the side the tour saw it from
            // (the mapping looks are made for a table at arm's reach), then from the
            // nearest viewpoint the tour saw it from; a search from the last
            let stops = recall_stops(&place, f64::from(self.cfg.config.go_to_node.radius));
            for (k, pose) in stops.iter().copied().enumerate() {
                if cancel.is_cancelled() {
                    break;
                }
                let nav = self.navigate_near(pose, &cancel).await;
                if nav.status != TerminalStatus::Succeeded {
                    warn!(
                        "could not reach the remembered view pose ({}); looking from where the base stopped",
                        nav.error_msg
                    );
                }
                st.seen_poses.clear();
                st.seen_from = self.base.base_pose().await.ok();
                st.placed_at = st.seen_from;
                self.look_from_here(st, &looks, &cancel).await?;
                st.seen_poses = looks.iter().flatten().copied().collect();
                let mut found = self.retrieve_in_map(st, query).await?;
                let last = k + 1 == stops.len();
                if found.keys.is_empty()
                    && last
                    && let Some(again) = self.search(st, query).await?
                {
                    found = again;
                }
                if !found.keys.is_empty() {
                    info!(query, "found where the building memory saw it");
                    return Ok(Some(found));
                }
            }
            info!(
                query,
                at = ?place.position,
                "not where the building memory saw it (moved since the tour)"
            );
            if st.stale.len() >= STALE_KEPT {
                st.stale.remove(0);
            }
            // in the memory's frame, as recall compares them
            st.stale.push(remembered_at);
            self.remember_vacated(remembered_at, query, &text);
        }
        Ok(None)
    }

    /// After a search found `found`, at the edge of a view: steps sideways along the
    /// search's line until its best match is straight ahead (within reach, seen whole),
    /// never more than one step past the search's reach (what the last stop's view
    /// covers at working distance), looks again and retrieves again, judged by the
    /// new views alone: the crops that matched before (and the VLM's answer about them)
    /// cannot confirm it a second time. A match farther out, that no step brings
    /// nearer, is not confirmed.
    async fn step_in_front(
        &self,
        st: &mut MapState,
        found: &Retrieval,
        looks: &[Option<usize>],
        cancel: &CancellationToken,
        line: &SearchLine,
    ) -> Result<InFront, ServiceError> {
        let Some(centroid) = found.keys.first().and_then(|k| {
            Self::lookup(st, k)
                .ok()
                .and_then(|(o, _)| o.point_cloud.centroid())
        }) else {
            return Ok(InFront::NotConfirmed);
        };
        let Ok(here) = self.base.base_pose().await else {
            return Ok(InFront::Already);
        };
        let (object, now) = (
            line.offset(centroid.x, centroid.y),
            line.offset(here.x, here.y),
        );
        if (object - now).abs() < IN_FRONT_M {
            return Ok(InFront::Already);
        }
        let target = object.clamp(-line.reach, line.reach);
        if (target - now).abs() < IN_FRONT_M {
            info!(
                query = %found.query,
                beyond = object.abs() - line.reach,
                "what the search found lies beyond its reach; no closer view"
            );
            return Ok(InFront::NotConfirmed);
        }
        let nav = self.navigate_near(line.stop(target), cancel).await;
        if nav.status != TerminalStatus::Succeeded {
            info!(
                "could not step in front of what the search found ({})",
                nav.error_msg
            );
            return Ok(InFront::Already);
        }
        let first_new = st.builder.keyframes();
        self.look_from_here(st, looks, cancel).await?;
        let eligible = not_passed_over(&st.withdrawn, &found.query, self.max_shift());
        let again = self
            .retriever
            .retrieve_seen_since(
                st.builder.map(),
                &mut st.registry,
                &found.query,
                eligible,
                first_new,
            )
            .await
            .map_err(perception_error)?;
        Ok(if again.keys.is_empty() {
            InFront::NotConfirmed
        } else {
            InFront::Confirmed(again)
        })
    }

    /// Drives to `pose`, or, where the base would touch something there (a believed
    /// pose a few centimetres off puts a robot parked at a table into it), up to
    /// [`BACK_OFF_M`] behind it, a step at a time.
    async fn navigate_near(&self, pose: Pose2D, cancel: &CancellationToken) -> NavOutcome {
        let (sin, cos) = pose.theta.sin_cos();
        let mut back = 0.0;
        loop {
            let goal = Pose2D::new(pose.x - back * cos, pose.y - back * sin, pose.theta);
            let nav = self.base.navigate_to(goal, cancel).await;
            back += BACK_OFF_STEP_M;
            if nav.error_code != NavErrorCode::GoalOccupied || back > BACK_OFF_M + 1e-3 {
                return nav;
            }
        }
    }

    /// Moves the arm to `pose` (when there is an arm). A failure is logged: the cameras
    /// then see what they see.
    async fn take_pose(&self, pose: Option<&str>, cancel: &CancellationToken) {
        if let (Some(arm), Some(pose)) = (&self.arm, pose) {
            let out = arm.move_to_named(pose, cancel).await;
            if !out.code.is_success() {
                warn!(
                    pose,
                    "the arm did not reach its mapping pose ({}: {}); it may hide objects",
                    out.code,
                    out.message
                );
            }
        }
    }

    /// The object a key names, with the id of the key's entry in the builder's map when
    /// it has one. A pinned object (re-found from a closer view) keeps that entry, an
    /// earlier view of the same object; the held object kept across a rebuild has none.
    fn lookup<'a>(
        st: &'a MapState,
        key: &ObjectKey,
    ) -> Result<(&'a Object, Option<ObjectId>), ServiceError> {
        let entry = st.registry.resolve(key);
        if let Some(o) = st.pinned.get(key) {
            return Ok((o, entry));
        }
        let id = entry.ok_or_else(|| ServiceError::unknown_object(key))?;
        let o = st
            .builder
            .map()
            .get(id)
            .ok_or_else(|| ServiceError::unknown_object(key))?;
        Ok((o, Some(id)))
    }

    async fn base_in_map(&self, map_frame: &FrameId) -> Result<Transform, ServiceError> {
        let pose = self.base.base_pose().await.map_err(|e| {
            ServiceError::new(
                FailureKind::Internal,
                format!("cannot read the robot's pose: {e}"),
            )
        })?;
        Ok(Transform::new(
            map_frame.clone(),
            self.base_frame.clone(),
            pose.to_isometry(),
        ))
    }
}

/// The index of the storey whose floor is nearest `z` (the building's frame).
fn nearest_storey(heights: &[f64], z: f64) -> usize {
    (0..heights.len())
        .min_by(|&a, &b| (heights[a] - z).abs().total_cmp(&(heights[b] - z).abs()))
        .unwrap_or(0)
}

/// The storey a remembered place at `z` (the building's frame) is on: the highest floor
/// at most a metre above it, the place no more than 3.5 m above that floor.
fn storey_of(heights: &[f64], z: f64) -> Option<usize> {
    (0..heights.len())
        .filter(|&k| heights[k] <= z + 1.0 && z - heights[k] <= 3.5)
        .max_by(|&a, &b| heights[a].total_cmp(&heights[b]))
}

/// Whether a remembered place (map frame) is on the storey of the map: from a metre
/// below its floor to 3.5 m above it.
fn on_this_storey(position: &[f64; 3]) -> bool {
    (-1.0..=3.5).contains(&position[2])
}

/// `heading` turned by the whole quarter turns that bring it nearest `toward`: the same
/// walls and table edges, faced from where the robot is now.
fn nearest_quarter_turn(heading: Real, toward: Real) -> Real {
    let d = toward - heading;
    let d = d.sin().atan2(d.cos());
    heading + (d / std::f32::consts::FRAC_PI_2).round() * std::f32::consts::FRAC_PI_2
}

/// How far around an object's bounding box other objects' points count as its
/// surroundings, metres (horizontally; vertically twice as far, for its support).
pub const SURROUNDINGS_MARGIN: Real = 0.15;

/// The points of the other objects of `map` near `object` (`id` is its own entry, when
/// it has one); `None` when there are none.
fn surroundings(map: &ObjectMap, object: &Object, id: Option<ObjectId>) -> Option<PointCloud> {
    let (lo, hi) = object.point_cloud.aabb()?;
    let m = SURROUNDINGS_MARGIN;
    let near = |p: &&asp_core::Point3| {
        p.x >= lo.x - m
            && p.x <= hi.x + m
            && p.y >= lo.y - m
            && p.y <= hi.y + m
            && p.z >= lo.z - 2.0 * m
            && p.z <= hi.z + 2.0 * m
    };
    let points: Vec<asp_core::Point3> = map
        .objects
        .iter()
        .filter(|o| Some(o.id) != id && o.point_cloud.points() != object.point_cloud.points())
        .flat_map(|o| o.point_cloud.points().iter().filter(near).copied())
        .collect();
    (!points.is_empty()).then(|| PointCloud::new(map.frame.clone(), points))
}

/// A map of only the clouds of `objects` (ids 0, 1, …), for the spatial functions.
fn scratch_map(frame: &FrameId, clouds: &[&PointCloud]) -> ObjectMap {
    let mut map = ObjectMap::new(frame.clone());
    for cloud in clouds {
        let id = map.allocate_id();
        map.objects.push(Object {
            id,
            point_cloud: (*cloud).clone(),
            crops: Vec::new(),
            features: Vec::new(),
            observations: 1,
            affordances: Vec::new(),
        });
    }
    map
}

#[async_trait]
impl ObjectMapPort for MapService {
    async fn retrieve(&self, query: &str) -> Result<Retrieval, ServiceError> {
        self.retrieve_within(query, &Within::anywhere()).await
    }

    async fn retrieve_within(
        &self,
        query: &str,
        within: &Within,
    ) -> Result<Retrieval, ServiceError> {
        let mut st = self.state.lock().await;
        if !st.built {
            self.build(&mut st).await?;
        }
        // a request dropped half-way (cancelled) leaves no room or storey behind
        st.room = None;
        st.storey = None;
        if let Some(storey) = within.storey {
            let filter = self.storey_filter(storey, within.counted_from).await?;
            info!(
                query,
                storey = %storey,
                storeys = ?filter.storeys,
                heights = ?filter.heights,
                robot_on_it = filter.robot_on_it,
                "retrieval keeps to a storey"
            );
            st.storey = Some(filter);
        }
        let mut notes = Vec::new();
        if let Some(room) = within.room.as_deref() {
            match self.room_filter(&mut st, room) {
                Ok(Some(filter)) => {
                    let here = match self.base.base_pose().await {
                        Ok(p) => filter.contains(Point3::new(p.x, p.y, 0.0)),
                        Err(_) => false,
                    };
                    info!(
                        room,
                        taken_for = ?filter.scope.evidence,
                        zones = ?filter.scope.zones,
                        score = filter.scope.score,
                        robot_in_it = here,
                        "retrieval keeps to a room"
                    );
                    let taken_for = filter.scope.evidence.join(", ");
                    notes.push(if taken_for.is_empty() {
                        format!("kept to the {room} as the building memory tells it")
                    } else {
                        format!("kept to the {room}: where the building memory saw {taken_for}")
                    });
                    st.room = Some(RoomFilter {
                        robot_in_it: here,
                        ..filter
                    });
                }
                Ok(None) => {
                    let why = if self.cfg.config.agent_node.building_memory.rooms {
                        "there is no building memory to tell rooms by"
                    } else {
                        "rooms are off (agent_node.building_memory.rooms)"
                    };
                    warn!(
                        room,
                        query, "{why}: retrieving anywhere, the room unchecked"
                    );
                    notes.push(format!(
                        "the {room} was not checked, {why}: what was found may be anywhere"
                    ));
                }
                Err(e) => {
                    st.storey = None;
                    return Err(e);
                }
            }
        }
        if let Some(f) = &st.storey {
            notes.push(format!("kept to {}", f.said(self.floor_numbering())));
        }
        let counted_from = st
            .storey
            .as_ref()
            .filter(|f| f.storey.is_relative())
            .map(|f| f.counted_from as u32);
        let out = self.retrieve_here_or_remembered(&mut st, query).await;
        st.room = None;
        st.storey = None;
        let mut out = out?;
        if !notes.is_empty() {
            out.room = Some(notes.join("; "));
        }
        out.storeys_counted_from = counted_from;
        Ok(out)
    }

    async fn recollect(
        &self,
        query: &str,
        within: &Within,
    ) -> Result<asp_core::Recollection, ServiceError> {
        self.remembered(query, within).await
    }

    async fn spatial(&self, query: &SpatialQuery) -> Result<SpatialAnswer, ServiceError> {
        use asp_perception::spatial;
        let st = self.state.lock().await;
        let frame = st.builder.map().frame.clone();
        let cloud = |k: &ObjectKey| -> Result<&PointCloud, ServiceError> {
            let (o, _) = Self::lookup(&st, k)?;
            if o.point_cloud.is_empty() {
                return Err(ServiceError::new(
                    FailureKind::Perception,
                    format!("{k} has no points in the map"),
                ));
            }
            Ok(&o.point_cloud)
        };
        let err = perception_error;
        let answer = match query {
            SpatialQuery::DistanceTo { a } => {
                let map = scratch_map(&frame, &[cloud(a)?]);
                let base = self.base_in_map(&frame).await?;
                SpatialAnswer::Number(f64::from(
                    spatial::distance_to(&map, ObjectId(0), &base).map_err(err)?,
                ))
            }
            SpatialQuery::DistanceBetween { a, b } => {
                let map = scratch_map(&frame, &[cloud(a)?, cloud(b)?]);
                SpatialAnswer::Number(f64::from(
                    spatial::distance_between(&map, ObjectId(0), ObjectId(1)).map_err(err)?,
                ))
            }
            SpatialQuery::LeftOf { a, b } | SpatialQuery::RightOf { a, b } => {
                let map = scratch_map(&frame, &[cloud(a)?, cloud(b)?]);
                let base = self.base_in_map(&frame).await?;
                let left = matches!(query, SpatialQuery::LeftOf { .. });
                let f = if left {
                    spatial::left_of
                } else {
                    spatial::right_of
                };
                SpatialAnswer::Truth(f(&map, ObjectId(0), ObjectId(1), &base).map_err(err)?)
            }
            SpatialQuery::SizeOf { a } => {
                let map = scratch_map(&frame, &[cloud(a)?]);
                let s = spatial::size_of(&map, ObjectId(0)).map_err(err)?;
                let d: Real =
                    (s.length * s.length + s.width * s.width + s.height * s.height).sqrt();
                SpatialAnswer::Number(f64::from(d))
            }
        };
        Ok(answer)
    }

    async fn object(&self, key: &ObjectKey) -> Result<MapObject, ServiceError> {
        let st = self.state.lock().await;
        // its own builder entry (an earlier view of a pinned object too) is no obstacle
        let (object, id) = Self::lookup(&st, key)?;
        let surroundings = surroundings(st.builder.map(), object, id);
        let query = st
            .queries
            .get(key)
            .cloned()
            .unwrap_or_else(|| key.as_str().replace('_', " "));
        Ok(MapObject {
            key: key.clone(),
            name: object_name(&query),
            query,
            object: object.clone(),
            surroundings,
        })
    }

    async fn rebuild(&self, keep: Option<&ObjectKey>) -> Result<MapSummary, ServiceError> {
        let mut st = self.state.lock().await;
        let kept = match keep {
            Some(k) => match Self::lookup(&st, k) {
                Ok((o, _)) => Some((k.clone(), o.clone(), st.queries.get(k).cloned())),
                Err(_) => {
                    warn!(key = %k, "the held object is not in the map; it is not kept");
                    None
                }
            },
            None => None,
        };
        // where every other key's object was last seen (or put down)
        let mut before: Vec<KnownObject> = Vec::new();
        let keys: BTreeSet<ObjectKey> = st
            .registry
            .entries()
            .map(|(k, _)| k.clone())
            .chain(st.pinned.keys().cloned())
            .filter(|k| Some(k) != keep)
            .collect();
        for k in keys {
            if let Ok((o, _)) = Self::lookup(&st, &k)
                && let Some(centroid) = o.point_cloud.centroid()
            {
                before.push(KnownObject {
                    query: st.queries.get(&k).cloned(),
                    key: k,
                    centroid,
                    features: o.features.clone(),
                });
            }
        }
        st.registry.forget_keys();
        st.queries.clear();
        st.pinned.clear();
        self.build(&mut st).await?;
        let mut kept_keys = Vec::new();
        if let Some((k, o, q)) = kept {
            if let Some(q) = q {
                st.queries.insert(k.clone(), q);
            }
            st.pinned.insert(k.clone(), o);
            kept_keys.push(k);
        }
        // keys follow their objects: each goes to the new object found where it was
        let cfg = &self.cfg.config.object_map_node;
        let now: Vec<(ObjectId, Point3, &[f32])> = st
            .builder
            .map()
            .objects
            .iter()
            .filter_map(|o| Some((o.id, o.point_cloud.centroid()?, o.features.as_slice())))
            .collect();
        let matches = reassociate(
            &before,
            &now,
            cfg.retrieval.relocalize_max_shift,
            cfg.merge.feature_similarity,
        );
        for (i, id) in matches {
            let old = &before[i];
            st.registry.insert(old.key.clone(), id);
            if let Some(q) = &old.query {
                st.queries.insert(old.key.clone(), q.clone());
            }
            kept_keys.push(old.key.clone());
        }
        info!(
            objects = st.builder.map().len(),
            kept = kept_keys.len(),
            of = before.len(),
            "map rebuilt"
        );
        Ok(MapSummary {
            objects: st.builder.map().len(),
            keyframes: st.builder.keyframes(),
            kept_keys,
        })
    }

    async fn moved(&self, key: &ObjectKey, to: Point3) -> Result<(), ServiceError> {
        let mut st = self.state.lock().await;
        let (o, _) = Self::lookup(&st, key)?;
        let mut o = o.clone();
        if let Some(c) = o.point_cloud.centroid() {
            let frame = o.point_cloud.frame.clone();
            let shift = asp_core::Isometry3::translation(to.x - c.x, to.y - c.y, to.z - c.z);
            o.point_cloud = o
                .point_cloud
                .transformed(&Transform::new(frame.clone(), frame, shift))
                .map_err(|e| ServiceError::new(FailureKind::Internal, e.to_string()))?;
        }
        info!(key = %key, x = to.x, y = to.y, z = to.z, "object moved");
        st.pinned.insert(key.clone(), o);
        Ok(())
    }

    async fn relocalize(
        &self,
        key: &ObjectKey,
        camera: &str,
    ) -> Result<Option<RelocalizedObject>, ServiceError> {
        let (previous, query, twins) = {
            let st = self.state.lock().await;
            let (o, _) = Self::lookup(&st, key)?;
            let query = st
                .queries
                .get(key)
                .cloned()
                .unwrap_or_else(|| key.as_str().replace('_', " "));
            // where the map has the other objects this query found
            let twins: Vec<_> = st
                .queries
                .iter()
                .filter(|(k, q)| *k != key && **q == query)
                .filter_map(|(k, _)| Self::lookup(&st, k).ok()?.0.point_cloud.centroid())
                .collect();
            (o.point_cloud.clone(), query, twins)
        };
        let max_shift = self.max_shift();
        for look in 1..=WITHDRAW_AFTER_LOOKS {
            let (local, frame) = self.look_locally(camera).await?;
            let mut registry = ObjectRegistry::new();
            let found = self
                .retriever
                .retrieve(local.map(), &mut registry, &query)
                .await
                .map_err(perception_error)?;
            let seen: Vec<(&Object, Point3, f32)> = found
                .candidates
                .iter()
                .filter(|c| c.confirmed)
                .filter_map(|c| {
                    let o = local.map().get(c.id)?;
                    Some((o, o.point_cloud.centroid()?, c.similarity))
                })
                .collect();
            let centroids: Vec<Point3> = seen.iter().map(|s| s.1).collect();
            // where the view should show the object: the centroid of what it shows of the
            // map's cloud; a view of part of a large object (a stand 1.5 m wide from 0.75
            // m) has its part's centroid, farther from the whole's than any shift allowed
            let expected = asp_perception::completion::seen_centroid(
                &previous,
                &frame,
                IN_VIEW_WITHIN_M,
                OCCLUSION_MARGIN_M,
            )
            .or_else(|| previous.centroid());
            if let Some((i, shift)) = associate(expected, &twins, max_shift, &centroids) {
                let (object, _, score) = seen[i];
                // the view is right about what it shows; what it cannot show above
                // that (a tall object's top, above the image or behind the gripper)
                // the map's views had
                let completed = complete_partial_view(
                    &object.point_cloud,
                    &previous,
                    &frame,
                    IN_VIEW_WITHIN_M,
                    OCCLUSION_MARGIN_M,
                    self.link_radius(),
                    max_shift,
                );
                if completed.carried > 0 {
                    tracing::debug!(object = %key, carried = completed.carried, "the closer look completed by the map's view");
                }
                let mut object = object.clone();
                object.point_cloud = completed.cloud;
                let relocalized = RelocalizedObject {
                    key: key.clone(),
                    cloud: object.point_cloud.clone(),
                    score,
                    shift,
                    local_objects: local.map().len(),
                };
                let mut st = self.state.lock().await;
                st.said_not_it.remove(key);
                st.pinned.insert(key.clone(), object);
                return Ok(Some(relocalized));
            }
            // not found: does this view show an object where the map had it, and what
            // does the VLM say it is? Out of view (or seen only as part of something
            // larger), the map's view stands.
            let Some(at) = previous.centroid() else {
                return Ok(None);
            };
            let Some(there) = same_object_in(local.map(), &previous) else {
                // nothing of its size where the map had it, though that place is in plain
                // view, and what was asked for stands elsewhere in this view: the map's
                // object was a mistaken match (a piece of a neighbour taken for it)
                let elsewhere = seen.iter().find(|(_, c, _)| {
                    twins.iter().all(|t| (c - t).norm() > max_shift) && (c - at).norm() > max_shift
                });
                if let Some(&(_, c, _)) = elsewhere
                    && frame.sees(&at, IN_VIEW_WITHIN_M, OCCLUSION_MARGIN_M)
                    && !self.was_withdrawn(&query, c).await
                {
                    return Err(self.take_the_closer_view(key, &query, at, c, &frame).await);
                }
                tracing::debug!(object = %key, look, "not in this view");
                return Ok(None);
            };
            let is_it = match found.candidates.iter().find(|c| c.id == there.id) {
                Some(c) => c.confirmed,
                None => self
                    .retriever
                    .confirm(there, &query)
                    .await
                    .map_err(perception_error)?,
            };
            if is_it {
                self.state.lock().await.said_not_it.remove(key);
                tracing::debug!(object = %key, look, "in view, taken for the query, not the nearest match");
                return Ok(None);
            }
            let noes = {
                let mut st = self.state.lock().await;
                let n = st.said_not_it.entry(key.clone()).or_default();
                *n += 1;
                *n
            };
            info!(
                object = %key,
                query,
                look,
                noes,
                "a closer look says what stands where the map had the object is not what was asked for"
            );
            if noes >= WITHDRAW_AFTER_LOOKS {
                break;
            }
        }
        let Some(at) = previous.centroid() else {
            return Ok(None);
        };
        self.withdraw(key, &query, at).await;
        Err(ServiceError::with_failure(
            asp_core::Failure::new(FailureKind::UnknownObject).retryable(),
            format!(
                "{key}, looked at again from here, is not {}: {WITHDRAW_AFTER_LOOKS} closer looks said so, so the map no longer offers it for {query:?}; retrieve {query:?} again (the map looks further)",
                object_name(&query)
            ),
        ))
    }

    async fn snapshot(&self) -> MapSnapshot {
        let st = self.state.lock().await;
        let mut map = st.builder.map().clone();
        let mut keys: BTreeMap<ObjectKey, ObjectId> = st
            .registry
            .entries()
            .map(|(k, id)| (k.clone(), id))
            .collect();
        // pinned objects replace their builder entry (or join the map when kept)
        for (key, object) in &st.pinned {
            match st.registry.resolve(key).and_then(|id| map.get_mut(id)) {
                Some(slot) => {
                    let id = slot.id;
                    *slot = object.clone();
                    slot.id = id;
                }
                None => {
                    let id = map.allocate_id();
                    let mut o = object.clone();
                    o.id = id;
                    map.objects.push(o);
                    keys.insert(key.clone(), id);
                }
            }
        }
        MapSnapshot { map, keys }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A remembered place's storey is the floor below it (an object on a shelf, a
    /// camera at head height); the base's is the nearest floor to its map's height.
    #[test]
    fn storeys_are_told_by_height_in_the_buildings_frame() {
        let heights = [0.0, 3.5, 7.0];
        assert_eq!(storey_of(&heights, 0.75), Some(0));
        assert_eq!(storey_of(&heights, 3.5 + 2.0), Some(1));
        assert_eq!(storey_of(&heights, 7.0 + 0.05), Some(2));
        // a little under a floor (a low table's depth noise) is still that floor
        assert_eq!(storey_of(&heights, 3.3), Some(1));
        assert_eq!(storey_of(&heights, 12.0), None);
        assert_eq!(storey_of(&heights, -2.0), None);
        assert_eq!(nearest_storey(&heights, 3.4), 1);
        assert_eq!(nearest_storey(&heights, 0.0), 0);
        assert!(on_this_storey(&[1.0, 2.0, 0.8]) && !on_this_storey(&[1.0, 2.0, 4.3]));
    }

    fn p(x: Real, y: Real) -> Point3 {
        Point3::new(x, y, 0.5)
    }

    #[test]
    fn a_search_line_measures_and_places_stops_across_its_heading() {
        // started at (2, 1) facing +y: left of the heading is -x
        let line = SearchLine {
            start: Pose2D::new(2.0, 1.0, std::f32::consts::FRAC_PI_2),
            heading: std::f32::consts::FRAC_PI_2,
            reach: 1.2,
        };
        assert!((line.offset(1.0, 5.0) - 1.0).abs() < 1e-5);
        assert!((line.offset(3.5, 0.0) + 1.5).abs() < 1e-5);
        let stop = line.stop(-0.8);
        assert!((stop.x - 2.8).abs() < 1e-5 && (stop.y - 1.0).abs() < 1e-5);
        assert!((stop.theta - line.heading).abs() < 1e-6);
        // a stop's offset is what it was placed at
        assert!((line.offset(stop.x, stop.y) + 0.8).abs() < 1e-5);
    }

    #[test]
    fn a_search_faces_the_quarter_turn_of_where_the_robot_was_put_nearest_its_heading() {
        let deg = |d: Real| d.to_radians();
        let near = |a: Real, b: Real| (a.sin() - b.sin()).abs() + (a.cos() - b.cos()).abs() < 1e-4;
        // turned 30° by go_to: the table edge as it was put
        assert!(near(nearest_quarter_turn(0.0, deg(30.0)), 0.0));
        // taken round the table, facing it from the other side
        assert!(near(nearest_quarter_turn(0.0, deg(160.0)), deg(180.0)));
        assert!(near(nearest_quarter_turn(0.0, deg(-160.0)), deg(180.0)));
        // beside a wall at a right angle
        assert!(near(
            nearest_quarter_turn(deg(10.0), deg(-70.0)),
            deg(-80.0)
        ));
        assert!(near(nearest_quarter_turn(deg(10.0), deg(10.0)), deg(10.0)));
    }

    #[test]
    fn a_refound_object_is_the_nearest_within_reach_that_is_not_its_twin() {
        let egg = Some(p(6.24, 2.84));
        let other_egg = [p(5.92, 2.84)];
        // the drift moved the view 5 cm: the egg seen there is it
        assert_eq!(
            associate(egg, &other_egg, 0.25, &[p(5.95, 2.85), p(6.20, 2.87)]).map(|a| a.0),
            Some(1)
        );
        // only the other egg is in view, 0.26 m off: it is not this egg (too far)
        assert_eq!(associate(egg, &other_egg, 0.3, &[p(5.98, 2.85)]), None);
        // within reach, but nearer the other egg's place than this one's: not it
        assert_eq!(associate(egg, &other_egg, 0.5, &[p(6.05, 2.84)]), None);
        // with no twin the same view is accepted
        assert_eq!(
            associate(egg, &[], 0.5, &[p(6.05, 2.84)]).map(|a| a.0),
            Some(0)
        );
        assert_eq!(associate(None, &[], 0.25, &[p(1.0, 1.0)]), Some((0, 0.0)));
        assert_eq!(associate(egg, &[], 0.25, &[]), None);
    }

    #[test]
    fn keys_go_to_the_nearest_new_object_that_looks_the_same() {
        let known = |key: &str, at: Point3, f: [f32; 2]| KnownObject {
            key: ObjectKey::new(key).unwrap(),
            query: None,
            centroid: at,
            features: f.to_vec(),
        };
        let apple = [1.0, 0.0];
        let bowl = [0.0, 1.0];
        let before = [
            known("apple_0", p(1.0, 1.0), apple),
            known("apple_1", p(1.35, 1.0), apple),
            known("bowl_0", p(2.0, 1.0), bowl),
        ];
        let now = [
            // the second apple, drifted 4 cm; the first apple is gone (eaten)
            (ObjectId(7), p(1.39, 1.0), &apple[..]),
            // something else where the bowl was: not the bowl
            (ObjectId(8), p(2.0, 1.02), &apple[..]),
        ];
        let got = reassociate(&before, &now, 0.25, 0.75);
        assert_eq!(got, vec![(1, ObjectId(7))]);
        // two candidates for one key: the nearer wins, the other stays free
        let now = [
            (ObjectId(1), p(1.2, 1.0), &apple[..]),
            (ObjectId(2), p(1.05, 1.0), &apple[..]),
        ];
        assert_eq!(
            reassociate(&before[..1], &now, 0.25, 0.75),
            vec![(0, ObjectId(2))]
        );
    }
}
