//! Agglomerative clustering of memory nodes by physical distance and description
//! similarity (SPEC §3.1 levels 4..N).
//!
//! Two nodes' dissimilarity is `(1 − λ)·d/r + λ·(1 − cos)`, `d` the distance between
//! their positions, `r` the level's radius, `cos` the cosine of their embeddings. Height
//! enters through storeys: node heights are split where they jump by more than
//! `storey_gap_m` (cameras on one floor differ by less, floors by more), each node
//! stands at its storey's mean height, and that height counts `vertical_weight` times;
//! so a floor apart is farther than any room apart, and a camera's height on one floor
//! does not matter.
//! Only nodes within `r` of each other are linked (their `neighbours` nearest, found
//! with a k-d tree), and merging follows the cheapest link first, each merged cluster
//! standing at its members' weighted centroid with their summed embedding, until no
//! link is cheaper than `merge_below`. Linking only neighbours keeps the work near
//! linear in the number of nodes (a million views build in seconds), where classic
//! all-pairs agglomeration is quadratic.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashSet};

use kiddo::{ImmutableKdTree, SquaredEuclidean};
use serde::{Deserialize, Serialize};

/// How the levels are built.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClusterParams {
    /// Link radius of level 4, metres.
    pub first_radius_m: f64,
    /// Each level's radius is the one below's times this.
    pub radius_growth: f64,
    /// No level links nodes farther apart than this.
    pub max_radius_m: f64,
    /// Heights closer than this are one storey.
    pub storey_gap_m: f64,
    /// Storey heights count this many times (floors 3 m apart are 3·w m apart).
    pub vertical_weight: f64,
    /// λ of level 4: weight of description dissimilarity against distance.
    pub semantic_weight: f64,
    /// λ of each level is the one below's times this: a room's views are alike, the
    /// rooms of a floor are not, and belong together by place.
    pub semantic_decay: f64,
    /// Merge while the cheapest link's dissimilarity is below this.
    pub merge_below: f64,
    /// Links per node (its nearest neighbours within the radius).
    pub neighbours: usize,
    /// Stop when the top level has this many clusters or fewer.
    pub top_nodes: usize,
    /// Levels above the views at most.
    pub max_levels: usize,
}

impl Default for ClusterParams {
    fn default() -> Self {
        ClusterParams {
            first_radius_m: 2.0,
            radius_growth: 2.5,
            max_radius_m: 200.0,
            storey_gap_m: 1.5,
            vertical_weight: 20.0,
            semantic_weight: 0.5,
            semantic_decay: 0.5,
            merge_below: 0.55,
            neighbours: 12,
            top_nodes: 1,
            max_levels: 6,
        }
    }
}

/// A node to cluster: a view or a cluster of the level below.
#[derive(Debug, Clone)]
pub struct Node {
    pub position: [f64; 3],
    /// Views it stands for (centroids are weighted by it).
    pub weight: f64,
    pub embedding: Vec<f32>,
}

/// A merged cluster while clustering.
struct Group {
    /// Position with the storey's height, scaled.
    coord: [f64; 3],
    weight: f64,
    /// Sum of the members' unit embeddings, weighted.
    embedding: Vec<f32>,
    members: Vec<u32>,
    links: HashSet<usize>,
    version: u32,
}

/// A candidate merge, cheapest first in the heap.
struct Link {
    cost: f64,
    a: usize,
    b: usize,
    version_a: u32,
    version_b: u32,
}

impl PartialEq for Link {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Link {}
impl PartialOrd for Link {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Link {
    fn cmp(&self, other: &Self) -> Ordering {
        // reversed: BinaryHeap is a max-heap; ties broken by index for determinism
        other
            .cost
            .total_cmp(&self.cost)
            .then_with(|| other.a.cmp(&self.a))
            .then_with(|| other.b.cmp(&self.b))
    }
}

/// Each node's position at its storey's mean height times `vertical_weight`.
fn storey_coords(nodes: &[Node], params: &ClusterParams) -> Vec<[f64; 3]> {
    let mut order: Vec<usize> = (0..nodes.len()).collect();
    order.sort_by(|&a, &b| nodes[a].position[2].total_cmp(&nodes[b].position[2]));
    let mut height = vec![0.0; nodes.len()];
    let mut start = 0;
    for k in 1..=order.len() {
        let split = k == order.len()
            || nodes[order[k]].position[2] - nodes[order[k - 1]].position[2] > params.storey_gap_m;
        if split {
            let storey = &order[start..k];
            let mean =
                storey.iter().map(|&i| nodes[i].position[2]).sum::<f64>() / storey.len() as f64;
            for &i in storey {
                height[i] = mean;
            }
            start = k;
        }
    }
    nodes
        .iter()
        .zip(height)
        .map(|(n, h)| [n.position[0], n.position[1], h * params.vertical_weight])
        .collect()
}

fn unit(v: &[f32]) -> Vec<f32> {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if n > 0.0 {
        v.iter().map(|x| x / n).collect()
    } else {
        v.to_vec()
    }
}

/// The clusters of `nodes` at link radius `radius` with description weight `lambda`:
/// each a list of node indices, ordered by their first member.
pub fn cluster(nodes: &[Node], radius: f64, lambda: f64, params: &ClusterParams) -> Vec<Vec<u32>> {
    let lambda = lambda.clamp(0.0, 1.0);
    let coords = storey_coords(nodes, params);
    let mut groups: Vec<Option<Group>> = nodes
        .iter()
        .zip(&coords)
        .enumerate()
        .map(|(i, (n, &coord))| {
            let u = unit(&n.embedding);
            Some(Group {
                coord,
                weight: n.weight.max(f64::MIN_POSITIVE),
                embedding: u.iter().map(|x| x * n.weight as f32).collect(),
                members: vec![i as u32],
                links: HashSet::new(),
                version: 0,
            })
        })
        .collect();
    let cost = |a: &Group, b: &Group| -> Option<f64> {
        let d = a
            .coord
            .iter()
            .zip(b.coord)
            .map(|(x, y)| (x - y) * (x - y))
            .sum::<f64>()
            .sqrt();
        if d > radius {
            return None;
        }
        let cos = f64::from(asp_core::map::cosine_similarity(&a.embedding, &b.embedding));
        Some((1.0 - lambda) * d / radius + lambda * (1.0 - cos))
    };

    let mut heap = BinaryHeap::new();
    if nodes.len() > 1 {
        let tree: ImmutableKdTree<f64, 3> = ImmutableKdTree::new_from_slice(&coords);
        let k = std::num::NonZeroUsize::new(params.neighbours.max(1) + 1)
            .unwrap_or(std::num::NonZeroUsize::MIN);
        for (i, c) in coords.iter().enumerate() {
            for nn in tree.nearest_n_within::<SquaredEuclidean>(c, radius * radius, k, false) {
                let j = nn.item as usize;
                if j == i {
                    continue;
                }
                let (a, b) = (i.min(j), i.max(j));
                if let (Some(ga), Some(gb)) = (&groups[a], &groups[b])
                    && let Some(c) = cost(ga, gb)
                    && c < params.merge_below
                {
                    heap.push(Link {
                        cost: c,
                        a,
                        b,
                        version_a: 0,
                        version_b: 0,
                    });
                }
                for (x, y) in [(a, b), (b, a)] {
                    if let Some(g) = groups[x].as_mut() {
                        g.links.insert(y);
                    }
                }
            }
        }
    }

    while let Some(link) = heap.pop() {
        let fresh = matches!((&groups[link.a], &groups[link.b]),
            (Some(a), Some(b)) if a.version == link.version_a && b.version == link.version_b);
        if !fresh {
            continue;
        }
        let Some(b) = groups[link.b].take() else {
            continue;
        };
        let Some(a) = groups[link.a].as_mut() else {
            continue;
        };
        // b goes into a
        let total = a.weight + b.weight;
        for (p, q) in a.coord.iter_mut().zip(b.coord) {
            *p = (*p * a.weight + q * b.weight) / total;
        }
        a.weight = total;
        for (x, y) in a.embedding.iter_mut().zip(&b.embedding) {
            *x += y;
        }
        a.members.extend(b.members);
        a.links.extend(b.links);
        a.links.remove(&link.a);
        a.links.remove(&link.b);
        a.version += 1;
        let neighbours: Vec<usize> = a.links.iter().copied().collect();
        for c in neighbours {
            if let Some(g) = groups[c].as_mut() {
                g.links.remove(&link.b);
                g.links.insert(link.a);
            }
            let (Some(ga), Some(gc)) = (&groups[link.a], &groups[c]) else {
                continue;
            };
            if let Some(cost) = cost(ga, gc)
                && cost < params.merge_below
            {
                let (x, y) = (link.a.min(c), link.a.max(c));
                let version = |i: usize| groups[i].as_ref().map_or(0, |g| g.version);
                heap.push(Link {
                    cost,
                    a: x,
                    b: y,
                    version_a: version(x),
                    version_b: version(y),
                });
            }
        }
    }

    let mut out: Vec<Vec<u32>> = groups
        .into_iter()
        .flatten()
        .map(|mut g| {
            g.members.sort_unstable();
            g.members
        })
        .collect();
    out.sort_unstable_by_key(|m| m[0]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(x: f64, y: f64, z: f64, e: &[f32]) -> Node {
        Node {
            position: [x, y, z],
            weight: 1.0,
            embedding: e.to_vec(),
        }
    }

    #[test]
    fn near_and_alike_nodes_merge_far_ones_do_not() {
        let bed = [1.0, 0.0, 0.0];
        let nodes = vec![
            node(0.0, 0.0, 0.0, &bed),
            node(1.0, 0.0, 0.0, &bed),
            node(0.5, 0.8, 0.0, &bed),
            node(30.0, 0.0, 0.0, &bed),
        ];
        let groups = cluster(&nodes, 2.0, 0.5, &ClusterParams::default());
        assert_eq!(groups, vec![vec![0, 1, 2], vec![3]]);
    }

    #[test]
    fn unlike_descriptions_stay_apart_at_the_same_distance() {
        let kitchen = [1.0, 0.0, 0.0];
        let bath = [0.0, 1.0, 0.0];
        let nodes = vec![
            node(0.0, 0.0, 0.0, &kitchen),
            node(1.2, 0.0, 0.0, &kitchen),
            node(2.4, 0.0, 0.0, &bath),
            node(3.6, 0.0, 0.0, &bath),
        ];
        let groups = cluster(&nodes, 3.0, 0.5, &ClusterParams::default());
        assert_eq!(groups, vec![vec![0, 1], vec![2, 3]]);
        // with descriptions ignored, distance alone chains them
        let blind = ClusterParams {
            merge_below: 1.0,
            ..ClusterParams::default()
        };
        assert_eq!(cluster(&nodes, 3.0, 0.0, &blind), vec![vec![0, 1, 2, 3]]);
    }

    #[test]
    fn a_floor_apart_is_farther_than_a_room_apart() {
        let e = [1.0, 0.0];
        // 1 m apart on the floor plan but 3 m up: 60 m with the default vertical weight
        let nodes = vec![node(0.0, 0.0, 0.0, &e), node(1.0, 0.0, 3.0, &e)];
        let p = ClusterParams::default();
        assert_eq!(cluster(&nodes, 5.0, 0.5, &p).len(), 2);
        let flat = ClusterParams {
            vertical_weight: 1.0,
            ..ClusterParams::default()
        };
        assert_eq!(cluster(&nodes, 5.0, 0.5, &flat).len(), 1);
        // cameras at different heights on one floor: one storey, height does not count
        let nodes = vec![node(0.0, 0.0, 0.9, &e), node(1.0, 0.0, 1.6, &e)];
        assert_eq!(cluster(&nodes, 2.0, 0.5, &p).len(), 1);
    }

    #[test]
    fn every_node_lands_in_exactly_one_cluster() {
        let nodes: Vec<Node> = (0..500)
            .map(|i| {
                let f = f64::from(i);
                node(
                    (f * 0.37).sin() * 20.0,
                    (f * 0.11).cos() * 20.0,
                    0.0,
                    &[(i % 3) as f32, ((i + 1) % 2) as f32, 1.0],
                )
            })
            .collect();
        let groups = cluster(&nodes, 3.0, 0.5, &ClusterParams::default());
        let mut seen: Vec<u32> = groups.iter().flatten().copied().collect();
        seen.sort_unstable();
        assert_eq!(seen, (0..500).collect::<Vec<u32>>());
        assert!(groups.len() < 500 && groups.len() > 1, "{}", groups.len());
    }
}
