//! Building-scale affordance memory (Affordance RAG, SPEC §3): what the robot saw on a
//! tour, kept as a hierarchy the agent searches top-down for objects out of view.
//!
//! - Level 1–2, [`Instance`]: an object a VLM found in a view, with its affordances
//!   (pick/place/open/close) and their scores.
//! - Level 3, [`View`]: one recorded image with its pose, the VLM's description embedded
//!   as text ("regional semantics") and a text-aligned image embedding ("visual
//!   semantics").
//! - Levels 4..N, [`Cluster`]: agglomerative clustering of the level below by physical
//!   distance and description similarity ([`cluster`]), each cluster summarised
//!   ([`Summariser`]) and the summary embedded. Rooms and floors are not given to the
//!   memory: they come out of the clustering (the lowest levels group a room's views,
//!   the highest a floor's, height counting more than floor distance).
//!
//! Construction ([`Hierarchy::build`]) and retrieval ([`retrieve`]) are pure; the
//! database ([`BuildingMemory`]) keeps the views, the derived levels and which site
//! they belong to.

mod cluster;
mod retrieve;
mod rooms;
mod store;
mod summarise;
mod views;

use asp_core::models::{ModelError, TextEmbedder};
use serde::{Deserialize, Serialize};

pub use cluster::{ClusterParams, cluster};
pub use retrieve::{
    EmbeddingJudge, InstanceJudge, PassOver, Query, RecallScope, RememberedPlace, RetrievalParams,
    Retrieved, flat_retrieve, recall_in_room, recall_places, recall_request, retrieve, same_place,
};
pub use rooms::{
    RoomNames, RoomParams, RoomScope, ZoneKind, room_scope, room_scores, zone_kinds, zone_of,
};
pub use store::{BUILDING_FORMAT, BuildingMemory, MAX_VACATED};
pub use summarise::{KeywordSummariser, Summariser};
pub use views::view_from_frame;

pub use asp_core::models::{ViewAffordance as Affordance, ViewAffordanceScore as AffordanceScore};

/// A remembered place the robot went to and found without what a request asked for
/// (the object moved since the tour). Kept in the memory, so that later runs pass over
/// the objects remembered there that are like the request ([`Vacated::passes_over`]);
/// the other objects remembered there stay. A newer tour that sees such an object
/// there again clears the mark ([`BuildingMemory::add_views`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Vacated {
    /// Where the memory had the object, map frame.
    pub position: [f64; 3],
    /// What was asked for ("the black bottle").
    pub request: String,
    /// The request's text embedding.
    pub embedding: Vec<f32>,
    /// How like the request a remembered object there must be to be passed over: the
    /// relevance recall asked of it when it went there.
    pub min_relevance: f32,
}

impl Vacated {
    /// Whether an object remembered at `position` with description embedding
    /// `embedding` is what this mark says is gone: within half a metre (as recall
    /// takes two remembered objects for one) and like the request.
    pub fn passes_over(&self, position: &[f64; 3], embedding: &[f32]) -> bool {
        same_place(&self.position, position) && self.is_like(embedding)
    }

    /// Whether `embedding` (a request's, or a remembered object's description) is like
    /// the request this mark was made for.
    pub fn is_like(&self, embedding: &[f32]) -> bool {
        asp_core::map::cosine_similarity(&self.embedding, embedding) >= self.min_relevance
    }
}

/// An object instance a VLM found in a view (levels 1–2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Instance {
    /// "red metal mug".
    pub description: String,
    pub affordances: Vec<AffordanceScore>,
    /// Where it is in the map frame, when the view's depth placed it.
    pub position: Option<[f64; 3]>,
    /// The description's text embedding.
    pub embedding: Vec<f32>,
}

impl Instance {
    /// The score of `affordance`, if the VLM proposed it.
    pub fn score_for(&self, affordance: Affordance) -> Option<f32> {
        self.affordances
            .iter()
            .filter(|a| a.affordance == affordance)
            .map(|a| a.score)
            .reduce(f32::max)
    }
}

/// One recorded image (level 3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct View {
    /// Where the image lives (a bag and its message index, a file).
    pub source: String,
    /// The camera's position in the map frame, metres.
    pub position: [f64; 3],
    /// The camera's heading, radians.
    pub yaw: f64,
    /// The VLM's description of the image.
    pub description: String,
    /// Text embedding of `description` and its instances' descriptions (regional
    /// semantics).
    pub regional: Vec<f32>,
    /// Text-aligned image embedding (visual semantics).
    pub visual: Vec<f32>,
    pub instances: Vec<Instance>,
}

/// A cluster of the level below (levels 4..N).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cluster {
    /// Mean position of the views under it.
    pub position: [f64; 3],
    /// Views under it.
    pub views: u32,
    /// Lowest and highest camera height of the views under it (a height constraint
    /// prunes clusters that hold none of the wanted storey).
    pub heights: [f64; 2],
    pub summary: String,
    /// Text embedding of `summary`.
    pub embedding: Vec<f32>,
    /// Indices into the level below (views for level 4).
    pub children: Vec<u32>,
}

/// The memory's levels over its views.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Hierarchy {
    pub views: Vec<View>,
    /// `levels[0]` is level 4 (over views), the last is the top.
    pub levels: Vec<Vec<Cluster>>,
}

/// Why a memory could not be built.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("view {index} ({source_name}): {problem}")]
    InvalidView {
        index: usize,
        source_name: String,
        problem: String,
    },
    #[error("summarising a level-{level} cluster: {message}")]
    Summary { level: usize, message: String },
    #[error("embedding a level-{level} summary: {source}")]
    Embedding {
        level: usize,
        #[source]
        source: ModelError,
    },
}

impl Hierarchy {
    /// Builds levels 4..N bottom-up over `views`: cluster, summarise, embed; the next
    /// level clusters the one below with a wider radius, until the top holds at most
    /// `params.top_nodes` clusters or `params.max_levels` levels exist.
    pub fn build(
        views: Vec<View>,
        params: &ClusterParams,
        summariser: &dyn Summariser,
        embedder: &dyn TextEmbedder,
    ) -> Result<Hierarchy, BuildError> {
        validate_views(&views)?;
        let mut levels: Vec<Vec<Cluster>> = Vec::new();
        // what the level being built clusters: positions, weights, embeddings, texts
        let mut nodes: Vec<cluster::Node> = views
            .iter()
            .map(|v| cluster::Node {
                position: v.position,
                weight: 1.0,
                embedding: v.regional.clone(),
            })
            .collect();
        let mut texts: Vec<String> = views.iter().map(view_text).collect();
        let mut heights: Vec<[f64; 2]> = views
            .iter()
            .map(|v| [v.position[2], v.position[2]])
            .collect();
        let mut radius = params.first_radius_m;
        let mut lambda = params.semantic_weight;
        while levels.len() < params.max_levels && nodes.len() > params.top_nodes {
            let groups = cluster(&nodes, radius, lambda, params);
            if groups.len() == nodes.len() {
                // nothing merged at this radius: widen it rather than repeat the level
                radius *= params.radius_growth;
                lambda *= params.semantic_decay;
                if radius > params.max_radius_m {
                    break;
                }
                continue;
            }
            let level = 4 + levels.len();
            let mut clusters = Vec::with_capacity(groups.len());
            for members in &groups {
                let member_texts: Vec<&str> = members
                    .iter()
                    .map(|&i| texts[i as usize].as_str())
                    .collect();
                let summary = summariser
                    .summarise(level, &member_texts)
                    .map_err(|message| BuildError::Summary { level, message })?;
                let embedding = embedder
                    .embed_text(&summary)
                    .map_err(|source| BuildError::Embedding { level, source })?;
                let weight: f64 = members.iter().map(|&i| nodes[i as usize].weight).sum();
                let mut position = [0.0; 3];
                for &i in members {
                    let n = &nodes[i as usize];
                    for (p, q) in position.iter_mut().zip(n.position) {
                        *p += q * n.weight / weight;
                    }
                }
                let span =
                    members
                        .iter()
                        .fold([f64::INFINITY, f64::NEG_INFINITY], |[lo, hi], &i| {
                            let h = heights[i as usize];
                            [lo.min(h[0]), hi.max(h[1])]
                        });
                clusters.push(Cluster {
                    position,
                    views: weight.round() as u32,
                    heights: span,
                    summary,
                    embedding,
                    children: members.clone(),
                });
            }
            nodes = clusters
                .iter()
                .map(|c| cluster::Node {
                    position: c.position,
                    weight: f64::from(c.views),
                    embedding: c.embedding.clone(),
                })
                .collect();
            texts = clusters.iter().map(|c| c.summary.clone()).collect();
            heights = clusters.iter().map(|c| c.heights).collect();
            levels.push(clusters);
            radius *= params.radius_growth;
            lambda *= params.semantic_decay;
        }
        Ok(Hierarchy { views, levels })
    }

    /// The views under cluster `index` of `levels[level]`.
    pub fn views_under(&self, level: usize, index: usize) -> Vec<u32> {
        let mut frontier = vec![index as u32];
        for l in (0..=level).rev() {
            frontier = frontier
                .iter()
                .flat_map(|&i| self.levels[l][i as usize].children.iter().copied())
                .collect();
        }
        frontier
    }
}

/// What a view contributes to its cluster's summary: its description and its objects.
fn view_text(v: &View) -> String {
    described_text(
        &v.description,
        v.instances.iter().map(|i| i.description.as_str()),
    )
}

/// A view's description followed by its objects' ("a view of walls and a tv stand;
/// small purple plastic tv remote; blue folded newspaper"): a VLM's description names
/// the few largest things in an image, the small ones a request asks for are among its
/// objects.
pub(crate) fn described_text<'a>(
    description: &str,
    objects: impl Iterator<Item = &'a str>,
) -> String {
    let mut text = description.to_owned();
    for o in objects {
        text.push_str("; ");
        text.push_str(o);
    }
    text
}

fn validate_views(views: &[View]) -> Result<(), BuildError> {
    let dims = views.first().map(|v| (v.regional.len(), v.visual.len()));
    for (index, v) in views.iter().enumerate() {
        let bad = |problem: String| BuildError::InvalidView {
            index,
            source_name: v.source.clone(),
            problem,
        };
        if v.position.iter().any(|c| !c.is_finite()) || !v.yaw.is_finite() {
            return Err(bad(format!(
                "pose {:?} yaw {} is not finite",
                v.position, v.yaw
            )));
        }
        if v.regional.is_empty() || v.regional.iter().any(|x| !x.is_finite()) {
            return Err(bad("regional embedding is empty or not finite".into()));
        }
        if v.visual.is_empty() || v.visual.iter().any(|x| !x.is_finite()) {
            return Err(bad("visual embedding is empty or not finite".into()));
        }
        if let Some((r, s)) = dims
            && (v.regional.len() != r || v.visual.len() != s)
        {
            return Err(bad(format!(
                "embeddings have {} and {} dimensions, the first view's {r} and {s}",
                v.regional.len(),
                v.visual.len()
            )));
        }
        for i in &v.instances {
            if let Some(p) = i.position.filter(|p| p.iter().any(|c| !c.is_finite())) {
                return Err(bad(format!(
                    "instance \"{}\": position {p:?} is not finite",
                    i.description
                )));
            }
            if let Some(a) = i
                .affordances
                .iter()
                .find(|a| !(0.0..=1.0).contains(&a.score))
            {
                return Err(bad(format!(
                    "instance \"{}\": {} score {} is outside [0, 1]",
                    i.description,
                    a.affordance.name(),
                    a.score
                )));
            }
        }
    }
    Ok(())
}
