//! Rooms a request names ("the desk in the office"). The memory holds no room labels:
//! rooms come out of the clustering (SPEC §3.1), so a named room is the level-4
//! clusters (zones) whose summaries are most like its name, and a place belongs to the
//! zone of the view that saw it from nearest (the tour drives into rooms, so that view
//! stood in the place's room, not in a corridor looking through its door).

use asp_core::map::cosine_similarity;

use super::Hierarchy;

/// Horizontal distance (metres) within which a remembered object counts as the one at
/// a place: a desk's centroid lies well away from the front face the tour's depth
/// placed it by.
const SAME_OBJECT_M: f64 = 1.0;
/// Height difference (metres) within which a remembered object counts as the one at a
/// place.
const SAME_OBJECT_DZ: f64 = 1.0;
/// Without a remembered object there: the nearest view within this distance decides.
const NEAREST_VIEW_M: f64 = 3.0;
/// Cameras more than this far below or above a place are on another storey.
const STOREY_DZ: f64 = 2.0;

/// The zones a named room was taken for.
#[derive(Debug, Clone, PartialEq)]
pub struct RoomScope {
    /// The room as the request named it.
    pub room: String,
    /// Level-4 cluster indices, the best match first.
    pub zones: Vec<u32>,
    /// The best zone's summary: what the memory took the room for.
    pub summary: String,
    /// Cosine of the room's name and the best zone's summary.
    pub score: f32,
}

impl RoomScope {
    /// Whether `at` (map frame) lies in one of the room's zones.
    pub fn contains(&self, memory: &Hierarchy, at: [f64; 3]) -> bool {
        zone_of(memory, at).is_some_and(|z| self.zones.contains(&z))
    }
}

/// The zones most like `room` (its name's text embedding `text`): the best, and every
/// other within `margin` of its cosine. `None` for a memory without zones.
pub fn room_scope(memory: &Hierarchy, room: &str, text: &[f32], margin: f32) -> Option<RoomScope> {
    let zones = memory.levels.first()?;
    let mut scored: Vec<(f32, u32)> = zones
        .iter()
        .enumerate()
        .map(|(i, z)| (cosine_similarity(text, &z.embedding), i as u32))
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let &(best, first) = scored.first()?;
    Some(RoomScope {
        room: room.to_owned(),
        zones: scored
            .iter()
            .take_while(|(s, _)| *s >= best - margin.max(0.0))
            .map(|&(_, i)| i)
            .collect(),
        summary: zones[first as usize].summary.clone(),
        score: best,
    })
}

/// The zone (level-4 cluster index) of the place `at`: that of the view nearest it
/// among those that saw an object there, else that of the nearest view on its storey
/// within [`NEAREST_VIEW_M`]. `None` when no view was near or the memory has no zones.
pub fn zone_of(memory: &Hierarchy, at: [f64; 3]) -> Option<u32> {
    let zones = memory.levels.first()?;
    let flat = |p: [f64; 3]| (p[0] - at[0]).hypot(p[1] - at[1]);
    let saw_it = |v: &super::View| {
        v.instances.iter().any(|i| {
            i.position
                .is_some_and(|p| flat(p) <= SAME_OBJECT_M && (p[2] - at[2]).abs() <= SAME_OBJECT_DZ)
        })
    };
    let storey = |v: &super::View| (v.position[2] - at[2]).abs() <= STOREY_DZ;
    let nearest = |admit: &dyn Fn(&super::View) -> bool| {
        memory
            .views
            .iter()
            .enumerate()
            .filter(|(_, v)| admit(v))
            .min_by(|(i, a), (j, b)| flat(a.position).total_cmp(&flat(b.position)).then(i.cmp(j)))
            .map(|(i, v)| (i as u32, flat(v.position)))
    };
    let view = nearest(&saw_it).map(|(v, _)| v).or_else(|| {
        nearest(&storey)
            .filter(|&(_, d)| d <= NEAREST_VIEW_M)
            .map(|(v, _)| v)
    })?;
    zones
        .iter()
        .position(|z| z.children.contains(&view))
        .map(|z| z as u32)
}
