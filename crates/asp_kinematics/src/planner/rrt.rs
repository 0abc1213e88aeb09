//! RRT-Connect (Kuffner & LaValle 2000) in joint space, with random shortcutting: the
//! stand-in for OMPL's `RRTConnect` that MoveIt uses by default.

use asp_core::robot::MoveItErrorCode;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{Budget, Checker, PlanError, PlannerSettings};

struct Tree {
    nodes: Vec<Vec<f64>>,
    parents: Vec<usize>,
}

enum Extend {
    Trapped,
    Advanced(usize),
    Reached(usize),
}

impl Tree {
    fn new(root: &[f64]) -> Self {
        Self {
            nodes: vec![root.to_vec()],
            parents: vec![0],
        }
    }

    fn nearest(&self, q: &[f64]) -> usize {
        let mut best = (0, f64::INFINITY);
        for (i, n) in self.nodes.iter().enumerate() {
            let d: f64 = n.iter().zip(q).map(|(a, b)| (a - b) * (a - b)).sum();
            if d < best.1 {
                best = (i, d);
            }
        }
        best.0
    }

    /// Root → node.
    fn path_to(&self, mut i: usize) -> Vec<Vec<f64>> {
        let mut path = vec![self.nodes[i].clone()];
        while i != 0 {
            i = self.parents[i];
            path.push(self.nodes[i].clone());
        }
        path.reverse();
        path
    }

    fn extend(
        &mut self,
        target: &[f64],
        checker: &Checker<'_>,
        settings: &PlannerSettings,
    ) -> Extend {
        let near = self.nearest(target);
        let from = &self.nodes[near];
        let d = from
            .iter()
            .zip(target)
            .map(|(a, b)| (a - b) * (a - b))
            .sum::<f64>()
            .sqrt();
        let reached = d <= settings.rrt_range;
        let new: Vec<f64> = if reached {
            target.to_vec()
        } else {
            let s = settings.rrt_range / d;
            from.iter()
                .zip(target)
                .map(|(a, b)| a + (b - a) * s)
                .collect()
        };
        if checker
            .check_motion(from, &new, settings.collision_resolution)
            .is_err()
        {
            return Extend::Trapped;
        }
        self.nodes.push(new);
        self.parents.push(near);
        let i = self.nodes.len() - 1;
        if reached {
            Extend::Reached(i)
        } else {
            Extend::Advanced(i)
        }
    }

    fn connect(
        &mut self,
        target: &[f64],
        checker: &Checker<'_>,
        settings: &PlannerSettings,
    ) -> Extend {
        loop {
            match self.extend(target, checker, settings) {
                Extend::Advanced(_) => continue,
                other => return other,
            }
        }
    }
}

/// A collision-free path `start → goal` (both valid), shortcut.
pub(crate) fn rrt_connect(
    checker: &Checker<'_>,
    limits: &[(f64, f64)],
    start: &[f64],
    goal: &[f64],
    settings: &PlannerSettings,
    budget: &Budget<'_>,
) -> Result<Vec<Vec<f64>>, PlanError> {
    let mut rng = ChaCha8Rng::seed_from_u64(settings.seed);
    let mut trees = [Tree::new(start), Tree::new(goal)];
    for iteration in 0..settings.rrt_max_iterations {
        budget.check()?;
        let sample: Vec<f64> = limits
            .iter()
            .map(|&(lo, hi)| rng.random_range(lo..=hi))
            .collect();
        // Alternate which tree grows towards the sample and which one tries to connect.
        let (a, b) = if iteration % 2 == 0 { (0, 1) } else { (1, 0) };
        let new = match trees[a].extend(&sample, checker, settings) {
            Extend::Trapped => continue,
            Extend::Advanced(i) | Extend::Reached(i) => i,
        };
        let q_new = trees[a].nodes[new].clone();
        if let Extend::Reached(j) = trees[b].connect(&q_new, checker, settings) {
            let (from_start, from_goal) = if a == 0 {
                (trees[0].path_to(new), trees[1].path_to(j))
            } else {
                (trees[0].path_to(j), trees[1].path_to(new))
            };
            let mut path = from_start;
            // Both halves end in the same configuration.
            path.extend(from_goal.into_iter().rev().skip(1));
            shortcut(&mut path, checker, settings, &mut rng, budget)?;
            return Ok(path);
        }
    }
    Err(PlanError::new(
        MoveItErrorCode::PlanningFailed,
        format!(
            "RRT-Connect found no collision-free path in {} iterations ({} + {} nodes, {} collision checks)",
            settings.rrt_max_iterations,
            trees[0].nodes.len(),
            trees[1].nodes.len(),
            checker.checks.get()
        ),
    ))
}

/// Random shortcutting: replace the stretch between two waypoints by a straight
/// motion when that is collision-free.
fn shortcut(
    path: &mut Vec<Vec<f64>>,
    checker: &Checker<'_>,
    settings: &PlannerSettings,
    rng: &mut ChaCha8Rng,
    budget: &Budget<'_>,
) -> Result<(), PlanError> {
    for _ in 0..settings.shortcut_iterations {
        if path.len() <= 2 {
            break;
        }
        budget.check()?;
        let i = rng.random_range(0..path.len() - 2);
        let j = rng.random_range(i + 2..path.len());
        if checker
            .check_motion(&path[i], &path[j], settings.collision_resolution)
            .is_ok()
        {
            path.drain(i + 1..j);
        }
    }
    Ok(())
}
