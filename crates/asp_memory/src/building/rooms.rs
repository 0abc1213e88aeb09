//! Rooms a request names ("the desk in the office"). The memory holds no room labels:
//! rooms come out of the clustering (SPEC §3.1), so a named room is found from what its
//! zones (level-4 clusters) hold. Each object a zone's views saw is classified among
//! room kinds (zero-shot: the room's name against a background of other kinds, all
//! embedded as text), the zone scores the objects' belief in the named room, weighted
//! by how few zones hold them (walls and doors are everywhere and say nothing), and
//! the room is the best zones together with those that saw the same objects (one room
//! splits into several zones: by the door, by the desk).
//!
//! A place belongs to the zone of the view that saw it from nearest (the tour drives
//! into rooms, so that view stood in the place's room, not in a corridor looking
//! through its door).

use std::collections::BTreeMap;

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
/// A background room kind this like the named room is the same room said otherwise
/// ("living room" for "lounge room"): it leaves the background.
const SAME_KIND: f32 = 0.9;
/// How many of a room's objects [`RoomScope::landmarks`] lists.
const MAX_LANDMARKS: usize = 5;

/// The weight of evidence a zone's score is shrunk by (about one distinctive object):
/// a zone that saw one thing does not outrank one that saw the room's furniture.
const PRIOR_WEIGHT: f32 = 1.0;
/// A zone joins the room when this share of its objects (by weight) are objects the
/// room's best zones saw.
const SHARED_OBJECTS: f32 = 2.0 / 3.0;

/// A named room and what it is told apart from, embedded by the text embedder.
#[derive(Debug, Clone, Copy)]
pub struct RoomNames<'a> {
    /// The room as the request named it ("office").
    pub room: &'a str,
    /// The room's name embedded.
    pub text: &'a [f32],
    /// Other kinds of room ("kitchen", "bedroom", ...) embedded: an object counts for
    /// the named room as far as it is more like it than like these.
    pub kinds: &'a [Vec<f32>],
}

/// How a named room is picked out of the zones.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RoomParams {
    /// Zones within this fraction of the best zone's score are the room's too.
    pub margin: f32,
    /// Softmax temperature of an object's room-kind belief over cosines.
    pub temperature: f32,
}

impl Default for RoomParams {
    fn default() -> Self {
        RoomParams {
            margin: 0.1,
            temperature: 0.02,
        }
    }
}

/// The zones a named room was taken for.
#[derive(Debug, Clone, PartialEq)]
pub struct RoomScope {
    /// The room as the request named it.
    pub room: String,
    /// Level-4 cluster indices: the best scored first, then those that saw the same
    /// objects.
    pub zones: Vec<u32>,
    /// The best zone's score: its objects' weighted belief in the room (0..1).
    pub score: f32,
    /// The best zone's objects that most suggested the room, most first: what the
    /// memory took the room for.
    pub evidence: Vec<String>,
    /// What to go to for the room, most telling first: the best zone's objects that
    /// told the room, those the VLM offered no pick for (furniture, which stays put and
    /// is large enough to find again on arrival) before the rest.
    pub landmarks: Vec<String>,
    /// Per view: whether its zone is one of `zones`.
    in_room: Vec<bool>,
}

impl RoomScope {
    /// Whether `at` (map frame) lies in one of the room's zones.
    pub fn contains(&self, memory: &Hierarchy, at: [f64; 3]) -> bool {
        nearest_view(memory, at).is_some_and(|v| self.in_room.get(v as usize) == Some(&true))
    }
}

/// The descriptions (lower case) of zone `zone`'s objects that stay put: the VLM offered
/// no pick for them, or a place at least as likely.
fn fixed_objects(memory: &Hierarchy, zone: usize) -> std::collections::BTreeSet<String> {
    use super::Affordance;
    let Some(z) = memory.levels.first().and_then(|l| l.get(zone)) else {
        return Default::default();
    };
    z.children
        .iter()
        .flat_map(|&v| &memory.views[v as usize].instances)
        .filter(|i| match i.score_for(Affordance::Pick) {
            None => true,
            Some(pick) => i
                .score_for(Affordance::Place)
                .is_some_and(|place| place >= pick),
        })
        .map(|i| i.description.to_lowercase())
        .collect()
}

/// A zone's distinct objects: description (lower case) → its first instance's
/// embedding.
type ZoneObjects<'m> = BTreeMap<String, &'m [f32]>;

/// Each zone's distinct objects, and each description's weight (the log of zones over
/// zones holding it: what every zone holds weighs nothing).
fn zone_objects(memory: &Hierarchy) -> (Vec<ZoneObjects<'_>>, BTreeMap<String, f32>) {
    let zones = memory.levels.first().map_or(&[][..], Vec::as_slice);
    let per_zone: Vec<ZoneObjects<'_>> = zones
        .iter()
        .map(|z| {
            let mut objects = BTreeMap::new();
            for &v in &z.children {
                for i in &memory.views[v as usize].instances {
                    objects
                        .entry(i.description.to_lowercase())
                        .or_insert(i.embedding.as_slice());
                }
            }
            objects
        })
        .collect();
    let mut holding: BTreeMap<String, usize> = BTreeMap::new();
    for z in &per_zone {
        for d in z.keys() {
            *holding.entry(d.clone()).or_default() += 1;
        }
    }
    let n = per_zone.len() as f32;
    let weights = holding
        .into_iter()
        .map(|(d, k)| {
            // a memory of one zone has nothing to tell its objects apart by
            let w = if per_zone.len() > 1 {
                (n / k as f32).ln()
            } else {
                1.0
            };
            (d, w)
        })
        .collect();
    (per_zone, weights)
}

/// Each zone's score for the named room (index by level-4 cluster), and per zone its
/// objects with their contributions, largest first.
fn scores(
    zones: &[ZoneObjects<'_>],
    weights: &BTreeMap<String, f32>,
    names: &RoomNames<'_>,
    params: &RoomParams,
) -> (Vec<f32>, Vec<Vec<(String, f32)>>) {
    let background: Vec<&[f32]> = names
        .kinds
        .iter()
        .map(Vec::as_slice)
        .filter(|k| cosine_similarity(k, names.text) < SAME_KIND)
        .chain(std::iter::once(names.text))
        .collect();
    let t = params.temperature.max(1e-4);
    // softmax over the background, the named room last
    let belief = |e: &[f32]| {
        let logits: Vec<f32> = background
            .iter()
            .map(|k| cosine_similarity(k, e) / t)
            .collect();
        let top = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let sum: f32 = logits.iter().map(|l| (l - top).exp()).sum();
        logits.last().map_or(0.0, |l| (l - top).exp() / sum)
    };
    let mut out = Vec::with_capacity(zones.len());
    let mut evidence = Vec::with_capacity(zones.len());
    for z in zones {
        let mut total = 0.0;
        let mut weight = 0.0;
        let mut parts: Vec<(String, f32)> = Vec::new();
        for (d, e) in z {
            let w = weights.get(d).copied().unwrap_or(0.0);
            let b = w * belief(e);
            total += b;
            weight += w;
            parts.push((d.clone(), b));
        }
        parts.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        out.push(total / (weight + PRIOR_WEIGHT));
        evidence.push(parts);
    }
    (out, evidence)
}

/// Each level-4 zone's score for the named room: its objects' belief in it, weighted
/// by how few zones hold them, shrunk towards 0 for zones that saw little.
pub fn room_scores(memory: &Hierarchy, names: &RoomNames<'_>, params: &RoomParams) -> Vec<f32> {
    let (zones, weights) = zone_objects(memory);
    scores(&zones, &weights, names, params).0
}

/// The kind of room a zone looks like.
#[derive(Debug, Clone, PartialEq)]
pub struct ZoneKind {
    /// Index into the kinds asked about.
    pub kind: usize,
    /// The zone's score for that kind (as [`room_scores`]).
    pub score: f32,
    /// The zone's objects that most suggested it, most first (at most three).
    pub evidence: Vec<String>,
}

/// Each level-4 zone's likeliest kind among `names` (with `kinds`, their text
/// embeddings, in the same order): the kind it scores highest for, each kind told apart
/// from the others as a named room is ([`room_scores`]). `None` for a zone that saw
/// nothing to tell a room by.
pub fn zone_kinds(
    memory: &Hierarchy,
    names: &[String],
    kinds: &[Vec<f32>],
    params: &RoomParams,
) -> Vec<Option<ZoneKind>> {
    let (objects, weights) = zone_objects(memory);
    let mut best: Vec<Option<ZoneKind>> = vec![None; objects.len()];
    for (k, (name, text)) in names.iter().zip(kinds).enumerate() {
        let names = RoomNames {
            room: name,
            text,
            kinds,
        };
        let (scored, evidence) = scores(&objects, &weights, &names, params);
        for (z, (score, parts)) in scored.into_iter().zip(evidence).enumerate() {
            if score > 0.0 && best[z].as_ref().is_none_or(|b| score > b.score) {
                best[z] = Some(ZoneKind {
                    kind: k,
                    score,
                    evidence: parts
                        .into_iter()
                        .take(3)
                        .filter(|(_, b)| *b > 0.0)
                        .map(|(d, _)| d)
                        .collect(),
                });
            }
        }
    }
    best
}

/// The zones taken for the named room: the best scored, every other within
/// `params.margin` of its score, and the zones most of whose objects those saw; only
/// zones whose views' camera heights overlap `heights` when given (a storey: "the
/// office upstairs"). `None` for a memory without zones or where no zone saw an object.
pub fn room_scope(
    memory: &Hierarchy,
    names: &RoomNames<'_>,
    params: &RoomParams,
    heights: Option<[f64; 2]>,
) -> Option<RoomScope> {
    let (objects, weights) = zone_objects(memory);
    let (mut scored, evidence) = scores(&objects, &weights, names, params);
    let zones = memory.levels.first().map_or(&[][..], Vec::as_slice);
    let within = |z: usize| {
        heights.is_none_or(|[lo, hi]| {
            zones
                .get(z)
                .is_some_and(|n| n.heights[1] >= lo && n.heights[0] < hi)
        })
    };
    for (z, s) in scored.iter_mut().enumerate() {
        if !within(z) {
            *s = 0.0;
        }
    }
    let (first, &best) = scored
        .iter()
        .enumerate()
        .max_by(|(i, a), (j, b)| a.total_cmp(b).then(j.cmp(i)))?;
    if best <= 0.0 {
        return None;
    }
    let floor = best * (1.0 - params.margin.clamp(0.0, 1.0));
    let mut best_zones: Vec<(f32, u32)> = scored
        .iter()
        .enumerate()
        .filter(|(_, s)| **s >= floor)
        .map(|(i, &s)| (s, i as u32))
        .collect();
    best_zones.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut zones: Vec<u32> = best_zones.into_iter().map(|(_, z)| z).collect();
    let sharing = sharing_zones(memory, &weights, &zones);
    zones.extend(sharing.into_iter().filter(|&z| within(z as usize)));
    let mut in_room = vec![false; memory.views.len()];
    for &z in &zones {
        for &v in &memory.levels[0][z as usize].children {
            in_room[v as usize] = true;
        }
    }
    let telling: Vec<&String> = evidence[first]
        .iter()
        .filter(|(_, b)| *b > 0.0)
        .map(|(d, _)| d)
        .collect();
    let stays = fixed_objects(memory, first);
    let (fixed, movable): (Vec<&String>, Vec<&String>) =
        telling.iter().partition(|d| stays.contains(d.as_str()));
    Some(RoomScope {
        room: names.room.to_owned(),
        zones,
        score: best,
        evidence: telling.iter().take(3).map(|d| (*d).clone()).collect(),
        landmarks: fixed
            .into_iter()
            .chain(movable)
            .take(MAX_LANDMARKS)
            .cloned()
            .collect(),
        in_room,
    })
}

/// The zones, other than `seeds`, at least [`SHARED_OBJECTS`] of whose placed objects
/// (by weight) lie where the seeds' views saw an object: the same room seen from
/// elsewhere in it. One step only: a corridor that sees into two rooms does not join
/// them.
fn sharing_zones(memory: &Hierarchy, weights: &BTreeMap<String, f32>, seeds: &[u32]) -> Vec<u32> {
    let zones = &memory.levels[0];
    let placed = |z: u32| {
        zones[z as usize].children.iter().flat_map(|&v| {
            memory.views[v as usize]
                .instances
                .iter()
                .filter_map(|i| i.position.map(|p| (i, p)))
        })
    };
    let seen: Vec<[f64; 3]> = seeds
        .iter()
        .flat_map(|&z| placed(z).map(|(_, p)| p))
        .collect();
    let same = |a: [f64; 3], b: &[f64; 3]| {
        (a[0] - b[0]).hypot(a[1] - b[1]) <= SAME_OBJECT_M && (a[2] - b[2]).abs() <= SAME_OBJECT_DZ
    };
    (0..zones.len() as u32)
        .filter(|z| !seeds.contains(z))
        .filter(|&z| {
            let (mut shared, mut all) = (0.0, 0.0);
            for (i, p) in placed(z) {
                let w = weights
                    .get(&i.description.to_lowercase())
                    .copied()
                    .unwrap_or(0.0);
                all += w;
                if seen.iter().any(|s| same(p, s)) {
                    shared += w;
                }
            }
            all > 0.0 && shared / all >= SHARED_OBJECTS
        })
        .collect()
}

/// The view a place `at` is judged by: the nearest among those that saw an object
/// there, else the nearest on its storey within [`NEAREST_VIEW_M`].
fn nearest_view(memory: &Hierarchy, at: [f64; 3]) -> Option<u32> {
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
    nearest(&saw_it).map(|(v, _)| v).or_else(|| {
        nearest(&storey)
            .filter(|&(_, d)| d <= NEAREST_VIEW_M)
            .map(|(v, _)| v)
    })
}

/// The zone (level-4 cluster index) of the place `at`: that of the view nearest it
/// among those that saw an object there, else that of the nearest view on its storey
/// within [`NEAREST_VIEW_M`]. `None` when no view was near or the memory has no zones.
pub fn zone_of(memory: &Hierarchy, at: [f64; 3]) -> Option<u32> {
    let view = nearest_view(memory, at)?;
    memory
        .levels
        .first()?
        .iter()
        .position(|z| z.children.contains(&view))
        .map(|z| z as u32)
}

#[cfg(test)]
mod tests {
    use super::super::Affordance::{Pick, Place};
    use super::super::{Cluster, Instance, View};
    use super::*;

    // a toy text space: axis 0 office, 1 kitchen, 2 structure, 3 what is in any room
    const OFFICE: [f32; 4] = [1.0, 0.0, 0.0, 0.0];
    const KITCHEN: [f32; 4] = [0.0, 1.0, 0.0, 0.0];

    fn unit(v: [f32; 4]) -> Vec<f32> {
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter().map(|x| x / n).collect()
    }

    fn object(description: &str, embedding: [f32; 4], at: [f64; 2]) -> Instance {
        Instance {
            description: description.into(),
            affordances: Vec::new(),
            position: Some([at[0], at[1], 0.7]),
            embedding: unit(embedding),
        }
    }

    /// `i` with the VLM's affordance `a`.
    fn with(mut i: Instance, a: super::super::Affordance) -> Instance {
        i.affordances.push(super::super::AffordanceScore {
            affordance: a,
            score: 0.8,
        });
        i
    }

    fn walls(at: [f64; 2]) -> Instance {
        object("walls", [0.3, 0.3, 1.0, 0.0], at)
    }

    fn view(at: [f64; 2], instances: Vec<Instance>) -> View {
        View {
            source: String::new(),
            position: [at[0], at[1], 1.2],
            yaw: 0.0,
            description: String::new(),
            regional: Vec::new(),
            visual: Vec::new(),
            instances,
        }
    }

    /// Zones of one view each (index = zone = view).
    fn memory(views: Vec<View>) -> Hierarchy {
        let levels = vec![
            views
                .iter()
                .enumerate()
                .map(|(i, v)| Cluster {
                    position: v.position,
                    views: 1,
                    heights: [1.2, 1.2],
                    summary: String::new(),
                    embedding: Vec::new(),
                    children: vec![i as u32],
                })
                .collect(),
        ];
        Hierarchy { views, levels }
    }

    fn scope(h: &Hierarchy, room: [f32; 4], other: [f32; 4]) -> Option<RoomScope> {
        let text = unit(room);
        let kinds = vec![unit(other), unit([0.0, 0.0, 1.0, 0.0])];
        let names = RoomNames {
            room: "office",
            text: &text,
            kinds: &kinds,
        };
        room_scope(h, &names, &RoomParams::default(), None)
    }

    /// The office (zones 0 and 1: the desk side and the door side, which sees the same
    /// desk), the kitchen (zone 3), a corridor between them that sees into both (zone 2),
    /// and a zone of bare walls (zone 4).
    fn storey() -> Hierarchy {
        let desk = |at| with(object("wooden desk", [0.9, 0.1, 0.0, 0.4], at), Place);
        let stapler = |at| with(object("stapler", [0.8, 0.0, 0.0, 0.6], at), Pick);
        let counter = |at| object("kitchen counter", [0.1, 0.9, 0.0, 0.4], at);
        let mug = |at| object("mug", [0.3, 0.7, 0.0, 0.6], at);
        memory(vec![
            view(
                [0.0, 0.0],
                vec![desk([1.0, 0.0]), stapler([1.0, 0.5]), walls([2.0, 0.0])],
            ),
            view([0.0, 2.0], vec![desk([1.0, 0.2]), walls([0.0, 3.0])]),
            view(
                [5.0, 2.0],
                vec![desk([1.2, 0.2]), counter([9.0, 0.0]), walls([5.0, 3.0])],
            ),
            view(
                [9.0, 1.0],
                vec![counter([9.0, 0.0]), mug([9.5, 0.0]), walls([10.0, 1.0])],
            ),
            view([5.0, 6.0], vec![walls([5.0, 7.0])]),
        ])
    }

    #[test]
    fn a_room_is_its_best_zone_and_the_zones_that_saw_its_objects_but_not_a_corridor() {
        let h = storey();
        let office = scope(&h, OFFICE, KITCHEN).unwrap();
        // the desk side is the best; the door side saw only the desk (and walls) and
        // joins through it; the corridor saw the kitchen's counter too and does not
        assert_eq!(office.zones, vec![0, 1], "{office:?}");
        assert_eq!(office.evidence.first().map(String::as_str), Some("stapler"));
        // to go to the office: the desk (furniture) before the stapler (picked up)
        assert_eq!(office.landmarks, ["wooden desk", "stapler"], "{office:?}");
        assert!(office.contains(&h, [1.0, 0.5, 0.7]));
        assert!(!office.contains(&h, [9.5, 0.0, 0.7]));
        let kitchen = scope(&h, KITCHEN, OFFICE).unwrap();
        assert_eq!(kitchen.zones, vec![3], "{kitchen:?}");
        assert!(kitchen.contains(&h, [9.5, 0.0, 0.7]));
    }

    #[test]
    fn what_every_zone_holds_weighs_nothing_and_little_seen_is_little_believed() {
        let h = storey();
        let text = unit(OFFICE);
        let kinds = vec![unit(KITCHEN)];
        let names = RoomNames {
            room: "office",
            text: &text,
            kinds: &kinds,
        };
        let scores = room_scores(&h, &names, &RoomParams::default());
        // every zone saw walls: they weigh nothing, and the zone of bare walls scores 0
        assert_eq!(scores[4], 0.0, "{scores:?}");
        // the desk side (desk and stapler) over the door side (the desk alone)
        assert!(scores[0] > scores[1], "{scores:?}");
        assert!(scores[1] > scores[2] && scores[2] > scores[3], "{scores:?}");
    }

    #[test]
    fn each_zone_looks_like_the_kind_its_distinctive_objects_suggest() {
        let h = storey();
        let names = ["office", "kitchen", "hallway"].map(String::from);
        let kinds = [unit(OFFICE), unit(KITCHEN), unit([0.0, 0.0, 1.0, 0.0])];
        let looks = zone_kinds(&h, &names, &kinds, &RoomParams::default());
        let kind = |z: usize| looks[z].as_ref().map(|k| names[k.kind].as_str());
        assert_eq!(kind(0), Some("office"), "{looks:?}");
        assert_eq!(kind(1), Some("office"), "{looks:?}");
        assert_eq!(kind(3), Some("kitchen"), "{looks:?}");
        // bare walls, which every zone saw, say nothing
        assert_eq!(looks[4], None, "{looks:?}");
        let desk_side = looks[0].as_ref().unwrap();
        assert_eq!(
            desk_side.evidence.first().map(String::as_str),
            Some("stapler")
        );
        assert!(
            !desk_side.evidence.iter().any(|e| e == "walls"),
            "{desk_side:?}"
        );
    }

    #[test]
    fn a_memory_that_saw_no_objects_has_no_rooms() {
        let h = memory(vec![
            view([0.0, 0.0], Vec::new()),
            view([4.0, 0.0], Vec::new()),
        ]);
        assert_eq!(scope(&h, OFFICE, KITCHEN), None);
        assert_eq!(scope(&Hierarchy::default(), OFFICE, KITCHEN), None);
    }
}
