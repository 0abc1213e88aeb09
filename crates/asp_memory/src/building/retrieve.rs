//! Top-down retrieval (SPEC §3.2), run once for the target object and once for the
//! receptacle.
//!
//! 1. From the top level down to level 4, keep the `k_b` clusters whose summary
//!    embedding is closest to the instruction's text embedding; their views are the
//!    candidates.
//! 2. Fuse each candidate's scores: `s = α·cos(text, regional) + (1 − α)·cos(mm_text,
//!    visual)`.
//! 3. Affordance-aware reranking: in the top `k_r` views keep the instances with the
//!    needed affordance, let the [`InstanceJudge`] score their descriptions against the
//!    instruction, order the best `k_f` by affordance score and promote the views that
//!    hold them, in that order, ahead of the rest.

use asp_core::map::cosine_similarity;
use serde::{Deserialize, Serialize};

use super::{Affordance, Hierarchy, Instance, RoomScope, Vacated};

/// Retrieval settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RetrievalParams {
    /// Clusters kept per level on the way down.
    pub k_b: usize,
    /// α: weight of regional (description) against visual similarity.
    pub alpha: f32,
    /// Views whose instances are reranked.
    pub k_r: usize,
    /// Instances kept after the judge, ordered by affordance score.
    pub k_f: usize,
    /// An instance "has" an affordance at this score or above.
    pub min_affordance: f32,
    /// Views answered.
    pub top: usize,
    /// Filter and order instances by the VLM's affordance scores; off (an ablation),
    /// every instance counts and the judge's relevance alone orders them.
    pub affordance_proposals: bool,
}

impl Default for RetrievalParams {
    fn default() -> Self {
        RetrievalParams {
            k_b: 8,
            alpha: 0.8,
            k_r: 20,
            k_f: 5,
            min_affordance: 0.3,
            top: 20,
            affordance_proposals: true,
        }
    }
}

/// One retrieval: the instruction, its embeddings, and the affordance the object must
/// offer (pick for the target, place for the receptacle).
#[derive(Debug, Clone, Copy)]
pub struct Query<'a> {
    pub instruction: &'a str,
    /// Text embedding (compared with summaries and regional semantics).
    pub text: &'a [f32],
    /// Text embedding in the image embedder's space (compared with visual semantics).
    pub visual: &'a [f32],
    /// `None`: no reranking.
    pub affordance: Option<Affordance>,
    /// Camera heights (map frame, metres) the answer must lie between: "upstairs" is
    /// above the robot's storey, "on this floor" its band. `None`: anywhere.
    pub heights: Option<[f64; 2]>,
}

/// Scores an instance's description against the instruction, in [0, 1] (an LLM where
/// configured; [`EmbeddingJudge`] offline).
pub trait InstanceJudge: Send + Sync {
    fn relevance(&self, query: &Query<'_>, instance: &Instance) -> f32;
}

/// Cosine of the instruction's and the instance description's text embeddings.
#[derive(Debug, Clone, Copy, Default)]
pub struct EmbeddingJudge;

impl InstanceJudge for EmbeddingJudge {
    fn relevance(&self, query: &Query<'_>, instance: &Instance) -> f32 {
        cosine_similarity(query.text, &instance.embedding).max(0.0)
    }
}

/// A retrieved view.
#[derive(Debug, Clone, PartialEq)]
pub struct Retrieved {
    /// Index into [`Hierarchy::views`].
    pub view: u32,
    /// Fused similarity.
    pub score: f32,
    /// The reranking's instances in this view (indices into its `instances`), best first;
    /// empty when the view was not promoted.
    pub instances: Vec<u32>,
}

/// The views the hierarchy leads to, best first (at most `params.top`).
pub fn retrieve(
    memory: &Hierarchy,
    query: &Query<'_>,
    params: &RetrievalParams,
    judge: &dyn InstanceJudge,
) -> Vec<Retrieved> {
    let candidates = traverse(memory, query.text, query.heights, params.k_b.max(1));
    let alpha = params.alpha.clamp(0.0, 1.0);
    let mut ranked: Vec<Retrieved> = candidates
        .into_iter()
        .map(|view| {
            let v = &memory.views[view as usize];
            let score = alpha * cosine_similarity(query.text, &v.regional)
                + (1.0 - alpha) * cosine_similarity(query.visual, &v.visual);
            Retrieved {
                view,
                score,
                instances: Vec::new(),
            }
        })
        .collect();
    // reranking looks at the best k_r; the rest only need their order up to `top`
    ranked = best(ranked, params.top.max(params.k_r));
    if let Some(affordance) = query.affordance {
        ranked = rerank(memory, query, affordance, params, judge, ranked);
    }
    ranked.truncate(params.top);
    ranked
}

/// Level N down to level 4, `k_b` clusters per level (among those with views in the
/// height band); the views under the last kept, in the band.
fn traverse(memory: &Hierarchy, text: &[f32], heights: Option<[f64; 2]>, k_b: usize) -> Vec<u32> {
    let overlaps = |h: [f64; 2]| heights.is_none_or(|[lo, hi]| h[1] >= lo && h[0] <= hi);
    let Some(top) = memory.levels.last() else {
        return (0..memory.views.len() as u32)
            .filter(|&v| {
                let z = memory.views[v as usize].position[2];
                overlaps([z, z])
            })
            .collect();
    };
    let mut current: Vec<u32> = (0..top.len() as u32).collect();
    for level in (0..memory.levels.len()).rev() {
        let nodes = &memory.levels[level];
        let mut scored: Vec<(f32, u32)> = current
            .iter()
            .filter(|&&i| overlaps(nodes[i as usize].heights))
            .map(|&i| (cosine_similarity(text, &nodes[i as usize].embedding), i))
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        scored.truncate(k_b);
        current = scored
            .iter()
            .flat_map(|&(_, i)| nodes[i as usize].children.iter().copied())
            .collect();
    }
    current.retain(|&v| {
        let z = memory.views[v as usize].position[2];
        overlaps([z, z])
    });
    current
}

fn by_score(a: &Retrieved, b: &Retrieved) -> std::cmp::Ordering {
    b.score.total_cmp(&a.score).then(a.view.cmp(&b.view))
}

fn sort_by_score(ranked: &mut [Retrieved]) {
    ranked.sort_by(by_score);
}

/// The best `top`, sorted, without sorting all of them.
fn best(mut ranked: Vec<Retrieved>, top: usize) -> Vec<Retrieved> {
    if ranked.len() > top && top > 0 {
        ranked.select_nth_unstable_by(top - 1, by_score);
    }
    ranked.truncate(top);
    sort_by_score(&mut ranked);
    ranked
}

fn rerank(
    memory: &Hierarchy,
    query: &Query<'_>,
    affordance: Affordance,
    params: &RetrievalParams,
    judge: &dyn InstanceJudge,
    ranked: Vec<Retrieved>,
) -> Vec<Retrieved> {
    // (view's rank, instance, relevance, affordance score)
    let mut found: Vec<(usize, u32, f32, f32)> = Vec::new();
    for (rank, r) in ranked.iter().take(params.k_r).enumerate() {
        for (i, inst) in memory.views[r.view as usize].instances.iter().enumerate() {
            let score = if params.affordance_proposals {
                inst.score_for(affordance)
                    .filter(|a| *a >= params.min_affordance)
            } else {
                Some(1.0)
            };
            if let Some(a) = score {
                found.push((rank, i as u32, judge.relevance(query, inst), a));
            }
        }
    }
    found.sort_by(|a, b| b.2.total_cmp(&a.2).then(a.0.cmp(&b.0)).then(a.1.cmp(&b.1)));
    found.truncate(params.k_f);
    // stable: equal affordance scores keep the judge's order
    found.sort_by(|a, b| b.3.total_cmp(&a.3));

    let mut promoted: Vec<Retrieved> = Vec::new();
    let mut taken = vec![false; ranked.len()];
    for (rank, instance, _, _) in found {
        if let Some(p) = promoted.iter_mut().find(|p| p.view == ranked[rank].view) {
            p.instances.push(instance);
            continue;
        }
        taken[rank] = true;
        promoted.push(Retrieved {
            instances: vec![instance],
            ..ranked[rank].clone()
        });
    }
    promoted.extend(
        ranked
            .into_iter()
            .zip(taken)
            .filter(|(_, t)| !t)
            .map(|(r, _)| r),
    );
    promoted
}

/// The usual baseline: every view scored by one image embedding against the
/// instruction's text-aligned embedding, best `top` first.
pub fn flat_retrieve(memory: &Hierarchy, visual: &[f32], top: usize) -> Vec<Retrieved> {
    let ranked: Vec<Retrieved> = memory
        .views
        .iter()
        .enumerate()
        .map(|(i, v)| Retrieved {
            view: i as u32,
            score: cosine_similarity(visual, &v.visual),
            instances: Vec::new(),
        })
        .collect();
    best(ranked, top)
}

/// A remembered object to go and look at: where it was seen and from where.
#[derive(Debug, Clone, PartialEq)]
pub struct RememberedPlace {
    /// Index into [`Hierarchy::views`] and into that view's instances.
    pub view: u32,
    pub instance: u32,
    /// The object's description and position (the memory's frame: see
    /// [`super::BuildingMemory::frame`]).
    pub description: String,
    pub position: [f64; 3],
    /// Cosine of the request and the description.
    pub relevance: f32,
    /// Where the camera stood (x, y) and looked (yaw) when it saw the object: places the
    /// robot has been, facing it; the nearest first (a closer look segments better),
    /// those closer than [`TOO_CLOSE_M`] last.
    pub viewpoints: Vec<([f64; 2], f64)>,
}

impl RememberedPlace {
    /// This place with its position and viewpoints moved by `to` (e.g. from a building's
    /// frame to the storey's map the robot navigates in).
    pub fn transformed(mut self, to: &asp_core::Isometry3) -> Self {
        let p = |x: f64, y: f64, z: f64| {
            let q = to
                * asp_core::Point3::new(
                    x as asp_core::Real,
                    y as asp_core::Real,
                    z as asp_core::Real,
                );
            [f64::from(q.x), f64::from(q.y), f64::from(q.z)]
        };
        let [x, y, z] = self.position;
        self.position = p(x, y, z);
        let (_, _, turn) = to.rotation.euler_angles();
        for (xy, yaw) in &mut self.viewpoints {
            let q = p(xy[0], xy[1], z);
            *xy = [q[0], q[1]];
            *yaw += f64::from(turn);
        }
        self
    }
}

/// A viewpoint this close to the object sees only part of it (or stands in it).
pub const TOO_CLOSE_M: f64 = 0.7;

/// Two remembered objects this close are one (seen from two views).
const SAME_PLACE_M: f64 = 0.5;

/// Remembered places recall passes over.
#[derive(Debug, Clone, Copy, Default)]
pub struct PassOver<'a> {
    /// Places looked at in this run and found without what was asked for (within
    /// half a metre: whatever was remembered there).
    pub looked: &'a [[f64; 3]],
    /// Places the memory knows were found without objects like a request.
    pub vacated: &'a [Vacated],
}

/// Where a recall keeps to: a room's zones, a band of heights (a storey), both or
/// neither.
#[derive(Debug, Clone, Copy, Default)]
pub struct RecallScope<'a> {
    pub room: Option<&'a RoomScope>,
    /// Metres in the memory's frame, `[low, high)`: the traversal keeps to clusters whose
    /// camera heights overlap it, and places (where objects were) lie in it.
    pub heights: Option<[f64; 2]>,
}

/// [`recall_places`] for an object request as `object_retrieval` makes it: its text and
/// that text's embedding (a request has no image: the visual query is the text's), no
/// affordance, the default retrieval parameters, within `scope` (a room, a storey). The
/// object map's recall and `asp memory find` both ask this, so what the command prints
/// is what recall drives to.
pub fn recall_request(
    memory: &Hierarchy,
    instruction: &str,
    text: &[f32],
    scope: RecallScope<'_>,
    min_relevance: f32,
    pass_over: PassOver<'_>,
    max: usize,
) -> Vec<RememberedPlace> {
    let PassOver { looked, vacated } = pass_over;
    let RecallScope { room, heights } = scope;
    let query = Query {
        instruction,
        text,
        visual: text,
        affordance: None,
        heights,
    };
    let params = RetrievalParams::default();
    let passed = |at: [f64; 3], inst: &Instance| {
        near_any(looked, &at)
            || vacated.iter().any(|v| v.passes_over(&at, &inst.embedding))
            || room.is_some_and(|r| !r.contains(memory, at))
            || heights.is_some_and(|[lo, hi]| at[2] < lo || at[2] >= hi)
    };
    recall_where(memory, &query, &params, min_relevance, max, &passed)
}

/// Whether `at` is within [`SAME_PLACE_M`] of one of `places`.
fn near_any(places: &[[f64; 3]], at: &[f64; 3]) -> bool {
    places.iter().any(|p| same_place(p, at))
}

/// Whether two remembered positions are one place (within [`SAME_PLACE_M`]).
pub fn same_place(a: &[f64; 3], b: &[f64; 3]) -> bool {
    ((a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2) + (a[2] - b[2]).powi(2)).sqrt() < SAME_PLACE_M
}

/// The places the memory saw what `query` asks for (an object that may have gone out of
/// view), best first: among the views retrieval leads to (or, when none of theirs is,
/// among all remembered objects), the placed instances whose description is at least
/// `min_relevance` like the request, one per place, none near `exclude` (places looked
/// at already and found empty), at most `max`.
pub fn recall_places(
    memory: &Hierarchy,
    query: &Query<'_>,
    params: &RetrievalParams,
    min_relevance: f32,
    exclude: &[[f64; 3]],
    max: usize,
) -> Vec<RememberedPlace> {
    recall_where(memory, query, params, min_relevance, max, &|at, _| {
        near_any(exclude, &at)
    })
}

/// [`recall_places`] among the places in `room` ("the desk in the office"): the
/// traversal's views first, then every remembered object when none of theirs lies in
/// the room.
pub fn recall_in_room(
    memory: &Hierarchy,
    query: &Query<'_>,
    params: &RetrievalParams,
    room: &RoomScope,
    min_relevance: f32,
    exclude: &[[f64; 3]],
    max: usize,
) -> Vec<RememberedPlace> {
    recall_where(memory, query, params, min_relevance, max, &|at, _| {
        near_any(exclude, &at) || !room.contains(memory, at)
    })
}

/// The places [`recall_places`] finds, less the remembered objects `passed` passes over
/// (given where each is and what it is).
fn recall_where(
    memory: &Hierarchy,
    query: &Query<'_>,
    params: &RetrievalParams,
    min_relevance: f32,
    max: usize,
    passed: &dyn Fn([f64; 3], &Instance) -> bool,
) -> Vec<RememberedPlace> {
    let mut places: Vec<RememberedPlace> = Vec::new();
    let consider = |view: u32, places: &mut Vec<RememberedPlace>| {
        let v = &memory.views[view as usize];
        for (i, inst) in v.instances.iter().enumerate() {
            let Some(position) = inst.position else {
                continue;
            };
            let relevance = cosine_similarity(query.text, &inst.embedding);
            if relevance < min_relevance || passed(position, inst) {
                continue;
            }
            let viewpoint = ([v.position[0], v.position[1]], v.yaw);
            match places
                .iter_mut()
                .find(|p| same_place(&p.position, &position))
            {
                // the same object from another view: another viewpoint, and the better
                // match's description
                Some(p) => {
                    if !p.viewpoints.contains(&viewpoint) {
                        p.viewpoints.push(viewpoint);
                    }
                    if relevance > p.relevance {
                        p.view = view;
                        p.instance = i as u32;
                        p.description = inst.description.clone();
                        p.position = position;
                        p.relevance = relevance;
                    }
                }
                None => places.push(RememberedPlace {
                    view,
                    instance: i as u32,
                    description: inst.description.clone(),
                    position,
                    relevance,
                    viewpoints: vec![viewpoint],
                }),
            }
        }
    };
    for r in retrieve(memory, query, params, &EmbeddingJudge) {
        consider(r.view, &mut places);
    }
    // the traversal follows what views and their clusters are about; a short request
    // ("tv remote") can be most like the summaries of bare walls, its object in a branch
    // left behind: then every remembered object is asked (one cosine each)
    if places.is_empty() {
        let within = |z: f64| query.heights.is_none_or(|[lo, hi]| z >= lo && z <= hi);
        for view in 0..memory.views.len() as u32 {
            if within(memory.views[view as usize].position[2]) {
                consider(view, &mut places);
            }
        }
    }
    for p in &mut places {
        let at = p.position;
        let key = |v: &([f64; 2], f64)| {
            let d = (v.0[0] - at[0]).hypot(v.0[1] - at[1]);
            if d < TOO_CLOSE_M { d + 1e3 } else { d }
        };
        p.viewpoints.sort_by(|a, b| key(a).total_cmp(&key(b)));
    }
    // among equally relevant places (the same description), the one more views saw
    // there first: a single view's misplacement (its box's depth on the wall behind)
    // is outvoted by the views that agree
    places.sort_by(|a, b| {
        b.relevance
            .total_cmp(&a.relevance)
            .then(b.viewpoints.len().cmp(&a.viewpoints.len()))
            .then(a.view.cmp(&b.view))
            .then(a.instance.cmp(&b.instance))
    });
    places.truncate(max);
    places
}
