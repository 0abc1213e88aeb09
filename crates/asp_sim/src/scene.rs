//! The simulator's planning scene, as MoveIt keeps one: collision objects a client adds
//! by id (MoveIt's `ApplyPlanningScene` with `CollisionObject`s), which pose goals may
//! then name as allowed contacts.
//!
//! The product names what it perceived (object keys with their point clouds); the
//! simulator plans against its true world. A collision object therefore stands for the
//! world objects its points lay on when it was added: each point votes for the nearest
//! world object within [`CONTACT_MARGIN`], and every object with at least [`MIN_SHARE`]
//! of the votes is covered (and stays covered when it moves, as an attached or re-seen
//! object does in MoveIt). No ground truth flows back to the product: it only learns
//! whether a motion planned.

use std::collections::BTreeMap;

use asp_core::{Point3, Real};

use crate::world::World;

/// A point farther than this from every world object votes for none, metres.
pub const CONTACT_MARGIN: Real = 0.015;
/// Share of a collision object's points a world object needs to be covered by it.
pub const MIN_SHARE: f64 = 0.2;
/// Points used per collision object (an evenly strided subset of larger clouds).
const MAX_POINTS: usize = 2000;

/// Collision objects by id, each with the world objects it covers.
#[derive(Debug, Clone, Default)]
pub struct PlanningScene {
    objects: BTreeMap<String, Vec<String>>,
}

impl PlanningScene {
    /// Adds or replaces collision object `id` with `points` (map frame) in `world` as
    /// it is now.
    pub fn apply(&mut self, world: &World, id: &str, points: &[Point3]) {
        let stride = points.len().div_ceil(MAX_POINTS).max(1);
        let kept: Vec<Point3> = points.iter().step_by(stride).copied().collect();
        self.objects
            .insert(id.to_owned(), covered_objects(world, &kept));
    }

    /// Removes collision object `id`; `false` when there was none.
    pub fn remove(&mut self, id: &str) -> bool {
        self.objects.remove(id).is_some()
    }

    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.objects.keys().map(String::as_str)
    }

    /// World object names for `names`: a world object's own name stands for itself, a
    /// collision object's id for the world objects it covers; unknown names are dropped.
    /// Order follows `names`, without repeats.
    pub fn resolve(&self, world: &World, names: &[String]) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let mut push = |n: String| {
            if !out.contains(&n) {
                out.push(n);
            }
        };
        for name in names {
            if world.object(name).is_some() {
                push(name.clone());
            } else if let Some(covered) = self.objects.get(name) {
                for n in covered {
                    push(n.clone());
                }
            }
        }
        out
    }
}

/// The world objects `points` lie on (see the module documentation), most votes first.
pub fn covered_objects(world: &World, points: &[Point3]) -> Vec<String> {
    if points.is_empty() {
        return Vec::new();
    }
    let mut votes = vec![0usize; world.objects.len()];
    for p in points {
        let nearest = world
            .objects
            .iter()
            .enumerate()
            .map(|(i, o)| (i, o.distance_to(p)))
            .filter(|(_, d)| *d <= CONTACT_MARGIN)
            .min_by(|a, b| a.1.total_cmp(&b.1));
        if let Some((i, _)) = nearest {
            votes[i] += 1;
        }
    }
    let mut covered: Vec<(usize, usize)> = votes
        .into_iter()
        .enumerate()
        .filter(|(_, v)| *v as f64 >= MIN_SHARE * points.len() as f64)
        .collect();
    covered.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    covered
        .into_iter()
        .map(|(i, _)| world.objects[i].name.clone())
        .collect()
}
