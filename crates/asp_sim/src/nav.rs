//! Base navigation as Nav2 would do it on a static map: an occupancy grid rasterised from
//! the world's geometry in the base's height band, a costmap inflated by the circular
//! footprint, A* on the 8-connected grid, and Nav2's planner error codes.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use asp_core::geometry::polygon_contains;
use asp_core::grid::{FREE, OCCUPIED, OccupancyGrid};
use asp_core::robot::NavErrorCode;
use asp_core::{Isometry3, Pose2D, Real, Vector3};
use parry3d::bounding_volume::Aabb;
use parry3d::query::intersection_test;
use parry3d::shape::Cuboid;

use crate::error::SimError;
use crate::world::{ObjectIdx, World};

/// Parameters of the grid and the planner.
#[derive(Debug, Clone, PartialEq)]
pub struct GridParams {
    /// Cell size, metres.
    pub resolution: Real,
    /// Geometry between these heights blocks the base, metres.
    pub band: (Real, Real),
    /// Circular footprint radius (the polygon's circumscribed one when there is a
    /// polygon): without a polygon, cells closer than this to an obstacle are lethal.
    pub footprint_radius: Real,
    /// The base's footprint polygon (base frame, metres), as Nav2's `footprint`. With
    /// one, as Nav2 with NavFn: cells nearer an obstacle than its inscribed radius are
    /// lethal, those under `footprint_radius` cost the most (they may be in collision,
    /// depending on the heading), and a start or goal pose among them is checked
    /// against the polygon at its heading. Empty: a circle of `footprint_radius`.
    pub footprint: Vec<[Real; 2]>,
    /// Beyond the footprint, cost decays to zero over this distance (keeps paths off walls).
    pub cost_distance: Real,
    /// Margin around the world's fixed objects when the world gives no map extent.
    pub margin: Real,
}

impl Default for GridParams {
    fn default() -> Self {
        Self {
            resolution: 0.05,
            band: (0.02, 1.6),
            footprint_radius: 0.3,
            footprint: Vec::new(),
            cost_distance: 0.3,
            margin: 1.0,
        }
    }
}

/// The occupancy grid of a world (what `/map` publishes) and the planner's costmap.
#[derive(Debug, Clone)]
pub struct NavMap {
    pub grid: OccupancyGrid,
    /// Distance of each cell's centre to the nearest occupied cell, metres (capped).
    clearance: Vec<Real>,
    params: GridParams,
    /// Under this clearance a cell is lethal: the footprint's inscribed radius, or
    /// `footprint_radius` without a polygon.
    lethal: Real,
}

/// The distance from the origin to the nearest edge of `polygon`.
fn inscribed_radius(polygon: &[[Real; 2]]) -> Real {
    let n = polygon.len();
    (0..n)
        .filter_map(|i| {
            let (a, b) = (polygon[i], polygon[(i + 1) % n]);
            let (dx, dy) = (b[0] - a[0], b[1] - a[1]);
            let len = (dx * dx + dy * dy).sqrt();
            (len > 0.0).then(|| (a[0] * dy - a[1] * dx).abs() / len)
        })
        .fold(Real::MAX, Real::min)
}

/// A planning failure with its Nav2 code.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanFailure {
    pub code: NavErrorCode,
    pub message: String,
}

impl NavMap {
    /// Rasterises `world`, ignoring the objects `skip` selects (the held object).
    pub fn build(
        world: &World,
        params: &GridParams,
        skip: impl Fn(ObjectIdx) -> bool,
    ) -> Result<Self, SimError> {
        let (origin, size) = world
            .map_extent
            .unwrap_or_else(|| extent_of(world, params.margin));
        let res = params.resolution;
        let width = (size[0] / res).ceil().max(1.0) as u32;
        let height = (size[1] / res).ceil().max(1.0) as u32;
        let mut grid = OccupancyGrid::new(
            res,
            width,
            height,
            Pose2D::new(origin[0], origin[1], 0.0),
            FREE,
        )
        .map_err(|e| SimError::Robot(format!("occupancy grid of world {:?}: {e}", world.name)))?;
        let (z0, z1) = params.band;
        let half = res / 2.0;
        let column = Cuboid::new(Vector3::new(half, half, (z1 - z0) / 2.0));
        for (oi, o) in world.objects.iter().enumerate() {
            if skip(oi) {
                continue;
            }
            for g in &o.geoms {
                let pose = o.geom_pose(g);
                let b = g.prim.aabb(&pose);
                if b.maxs.z < z0 || b.mins.z > z1 {
                    continue;
                }
                let (i0, j0) = grid.world_to_cell(b.mins.x, b.mins.y);
                let (i1, j1) = grid.world_to_cell(b.maxs.x, b.maxs.y);
                for j in j0.max(0)..=j1.min(i64::from(height) - 1) {
                    for i in i0.max(0)..=i1.min(i64::from(width) - 1) {
                        if grid.get(i, j) == Some(OCCUPIED) {
                            continue;
                        }
                        let (cx, cy) = grid.cell_center(i, j);
                        let cell = Isometry3::translation(cx, cy, (z0 + z1) / 2.0);
                        if intersection_test(&cell, &column, &pose, g.prim.shape()).unwrap_or(true)
                        {
                            grid.set(i, j, OCCUPIED);
                        }
                    }
                }
            }
        }
        let clearance = clearance_field(&grid, params.footprint_radius + params.cost_distance);
        let lethal = if params.footprint.len() >= 3 {
            inscribed_radius(&params.footprint).min(params.footprint_radius)
        } else {
            params.footprint_radius
        };
        Ok(NavMap {
            grid,
            clearance,
            params: params.clone(),
            lethal,
        })
    }

    /// Whether the footprint at `pose` covers an occupied cell: the polygon at the
    /// pose's heading where there is one, else the circle.
    pub fn footprint_collides(&self, pose: &Pose2D) -> bool {
        let Some(c) = self.clearance_at(pose.x, pose.y) else {
            return true;
        };
        if c >= self.params.footprint_radius {
            return false;
        }
        if c < self.lethal || self.params.footprint.len() < 3 {
            return true;
        }
        // the centres of the occupied cells within reach, into the base frame
        let r = self.params.footprint_radius + self.grid.resolution;
        let (i0, j0) = self.grid.world_to_cell(pose.x - r, pose.y - r);
        let (i1, j1) = self.grid.world_to_cell(pose.x + r, pose.y + r);
        let (sin, cos) = pose.theta.sin_cos();
        for j in j0..=j1 {
            for i in i0..=i1 {
                if self.grid.get(i, j) != Some(OCCUPIED) {
                    continue;
                }
                let (cx, cy) = self.grid.cell_center(i, j);
                let (dx, dy) = (cx - pose.x, cy - pose.y);
                if polygon_contains(
                    &self.params.footprint,
                    [cos * dx + sin * dy, -sin * dx + cos * dy],
                ) {
                    return true;
                }
            }
        }
        false
    }

    pub fn params(&self) -> &GridParams {
        &self.params
    }

    fn idx(&self, i: i64, j: i64) -> Option<usize> {
        (i >= 0 && j >= 0 && i < i64::from(self.grid.width) && j < i64::from(self.grid.height))
            .then(|| j as usize * self.grid.width as usize + i as usize)
    }

    /// Distance from the point to the nearest obstacle (capped at footprint + cost
    /// distance); `None` outside the grid.
    pub fn clearance_at(&self, x: Real, y: Real) -> Option<Real> {
        let (i, j) = self.grid.world_to_cell(x, y);
        self.idx(i, j).map(|k| self.clearance[k])
    }

    /// Whether the footprint centred at (x, y) touches an obstacle (or leaves the map).
    pub fn footprint_blocked(&self, x: Real, y: Real) -> bool {
        self.clearance_at(x, y)
            .is_none_or(|c| c < self.params.footprint_radius)
    }

    /// The costmap value of a cell in Nav2's convention: 254 lethal (footprint
    /// overlaps), decaying to 0 with clearance.
    pub fn cost(&self, x: Real, y: Real) -> Option<u8> {
        self.clearance_at(x, y).map(|c| self.cost_of_clearance(c))
    }

    fn cost_of_clearance(&self, c: Real) -> u8 {
        let r = self.params.footprint_radius;
        if c < r {
            254
        } else if self.params.cost_distance <= 0.0 {
            0
        } else {
            let s = 1.0 - ((c - r) / self.params.cost_distance).clamp(0.0, 1.0);
            (s * 252.0).round() as u8
        }
    }

    /// A* from `start` to `goal` (positions only). The path starts at the start and ends
    /// exactly at the goal's position.
    pub fn plan(&self, start: &Pose2D, goal: &Pose2D) -> Result<Vec<(Real, Real)>, PlanFailure> {
        let fail = |code, message: String| Err(PlanFailure { code, message });
        let (si, sj) = self.grid.world_to_cell(start.x, start.y);
        let (gi, gj) = self.grid.world_to_cell(goal.x, goal.y);
        let Some(s) = self.idx(si, sj) else {
            return fail(
                NavErrorCode::StartOutsideMap,
                format!("start ({:.2}, {:.2}) is outside the map", start.x, start.y),
            );
        };
        let Some(g) = self.idx(gi, gj) else {
            return fail(
                NavErrorCode::GoalOutsideMap,
                format!("goal ({:.2}, {:.2}) is outside the map", goal.x, goal.y),
            );
        };
        let r = self.params.footprint_radius;
        if self.footprint_collides(start) {
            return fail(
                NavErrorCode::StartOccupied,
                format!(
                    "start ({:.2}, {:.2}) is in collision: the footprint (radius {r} m) overlaps an obstacle",
                    start.x, start.y
                ),
            );
        }
        if self.footprint_collides(goal) {
            return fail(
                NavErrorCode::GoalOccupied,
                format!(
                    "goal ({:.2}, {:.2}) is in collision: the footprint (radius {r} m) overlaps an obstacle {:.2} m away",
                    goal.x, goal.y, self.clearance[g]
                ),
            );
        }
        let w = self.grid.width as usize;
        let n = self.clearance.len();
        let mut g_cost = vec![Real::INFINITY; n];
        let mut parent = vec![usize::MAX; n];
        let mut closed = vec![false; n];
        let mut open = BinaryHeap::new();
        let res = self.grid.resolution;
        let h = |k: usize| {
            let (dx, dy) = (
                (k % w) as Real - (g % w) as Real,
                (k / w) as Real - (g / w) as Real,
            );
            let (a, b) = (dx.abs().max(dy.abs()), dx.abs().min(dy.abs()));
            (a - b + b * std::f32::consts::SQRT_2) * res
        };
        g_cost[s] = 0.0;
        open.push(Open { f: h(s), k: s });
        while let Some(Open { k, .. }) = open.pop() {
            if closed[k] {
                continue;
            }
            if k == g {
                break;
            }
            closed[k] = true;
            let (ci, cj) = ((k % w) as i64, (k / w) as i64);
            for (di, dj) in [
                (1, 0),
                (-1, 0),
                (0, 1),
                (0, -1),
                (1, 1),
                (1, -1),
                (-1, 1),
                (-1, -1),
            ] {
                let Some(nk) = self.idx(ci + di, cj + dj) else {
                    continue;
                };
                if closed[nk] || self.clearance[nk] < self.lethal {
                    continue;
                }
                let step = if di != 0 && dj != 0 {
                    std::f32::consts::SQRT_2
                } else {
                    1.0
                } * res;
                let penalty =
                    1.0 + 2.0 * f32::from(self.cost_of_clearance(self.clearance[nk])) / 252.0;
                let cand = g_cost[k] + step * penalty;
                if cand < g_cost[nk] {
                    g_cost[nk] = cand;
                    parent[nk] = k;
                    open.push(Open {
                        f: cand + h(nk),
                        k: nk,
                    });
                }
            }
        }
        if parent[g] == usize::MAX && g != s {
            return fail(
                NavErrorCode::NoValidPath,
                format!(
                    "no collision-free path from ({:.2}, {:.2}) to ({:.2}, {:.2})",
                    start.x, start.y, goal.x, goal.y
                ),
            );
        }
        let mut cells = vec![g];
        let mut k = g;
        while k != s {
            k = parent[k];
            cells.push(k);
        }
        cells.reverse();
        let mut path: Vec<(Real, Real)> = Vec::with_capacity(cells.len() + 1);
        path.push((start.x, start.y));
        for &c in cells.iter().skip(1).take(cells.len().saturating_sub(2)) {
            path.push(self.grid.cell_center((c % w) as i64, (c / w) as i64));
        }
        path.push((goal.x, goal.y));
        Ok(self.shortcut(path))
    }

    /// Removes waypoints whose neighbours see each other through free space.
    fn shortcut(&self, path: Vec<(Real, Real)>) -> Vec<(Real, Real)> {
        if path.len() <= 2 {
            return path;
        }
        let mut out = vec![path[0]];
        let mut i = 0;
        while i < path.len() - 1 {
            let mut j = path.len() - 1;
            while j > i + 1 && !self.segment_free(path[i], path[j]) {
                j -= 1;
            }
            out.push(path[j]);
            i = j;
        }
        out
    }

    fn segment_free(&self, a: (Real, Real), b: (Real, Real)) -> bool {
        let len = ((b.0 - a.0).powi(2) + (b.1 - a.1).powi(2)).sqrt();
        let steps = (len / (self.grid.resolution / 2.0)).ceil().max(1.0) as usize;
        (0..=steps).all(|s| {
            let t = s as Real / steps as Real;
            let (x, y) = (a.0 + (b.0 - a.0) * t, a.1 + (b.1 - a.1) * t);
            // the costed band is kept as it was planned: shortcuts may not cut closer
            self.clearance_at(x, y).is_some_and(|c| {
                c >= self.params.footprint_radius + self.params.cost_distance * 0.5
            })
        })
    }
}

#[derive(Debug, PartialEq)]
struct Open {
    f: Real,
    k: usize,
}
impl Eq for Open {}
impl Ord for Open {
    fn cmp(&self, other: &Self) -> Ordering {
        other.f.total_cmp(&self.f).then(other.k.cmp(&self.k))
    }
}
impl PartialOrd for Open {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

fn extent_of(world: &World, margin: Real) -> ([Real; 2], [Real; 2]) {
    let mut b: Option<Aabb> = None;
    for o in world.objects.iter().filter(|o| o.fixed) {
        let a = o.aabb();
        b = Some(match b {
            Some(x) => parry3d::bounding_volume::BoundingVolume::merged(&x, &a),
            None => a,
        });
    }
    match b {
        Some(b) => (
            [b.mins.x - margin, b.mins.y - margin],
            [
                b.maxs.x - b.mins.x + 2.0 * margin,
                b.maxs.y - b.mins.y + 2.0 * margin,
            ],
        ),
        None => ([-margin, -margin], [2.0 * margin, 2.0 * margin]),
    }
}

/// Distance from every cell centre to the nearest occupied cell centre, capped at `cap`.
/// Cells outside the map count as occupied, so the footprint never leaves the map.
fn clearance_field(grid: &OccupancyGrid, cap: Real) -> Vec<Real> {
    let (w, h) = (grid.width as i64, grid.height as i64);
    let res = grid.resolution;
    let mut field = vec![cap; (w * h) as usize];
    let reach = (cap / res).ceil() as i64;
    let stencil: Vec<(i64, i64, Real)> = (-reach..=reach)
        .flat_map(|dj| (-reach..=reach).map(move |di| (di, dj)))
        .map(|(di, dj)| (di, dj, ((di * di + dj * dj) as Real).sqrt() * res))
        .filter(|(_, _, d)| *d < cap)
        .collect();
    let splat = |ci: i64, cj: i64, field: &mut [Real]| {
        for &(di, dj, d) in &stencil {
            let (i, j) = (ci + di, cj + dj);
            if i >= 0 && j >= 0 && i < w && j < h {
                let k = (j * w + i) as usize;
                if d < field[k] {
                    field[k] = d;
                }
            }
        }
    };
    for j in 0..h {
        for i in 0..w {
            if grid.get(i, j).is_some_and(|v| v >= OCCUPIED) {
                splat(i, j, &mut field);
            }
        }
    }
    // the map border: a ring of virtual occupied cells just outside
    for i in -1..=w {
        splat(i, -1, &mut field);
        splat(i, h, &mut field);
    }
    for j in 0..h {
        splat(-1, j, &mut field);
        splat(w, j, &mut field);
    }
    field
}
