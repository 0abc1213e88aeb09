//! Frontier exploration (Yamauchi 1997): the robot maps the floor it can see from its own
//! depth camera into a 2D occupancy grid, finds the frontiers (known free floor beside
//! cells nothing has shown yet), and drives to the nearest one it can reach, until no
//! frontier is left within reach or its budget ends.
//!
//! The grid is built from depth alone, point by point, with no ray tracing: a point on
//! the floor (height at most `floor_max_height`) makes its cell free, a point in the
//! obstacle band (`obstacle_min_height ..= obstacle_max_height`, what the base would hit)
//! counts towards its cell being occupied. Tracing rays through a 2D grid would clear a
//! low table a ray passes over on its way to the floor behind it; endpoints never do.
//! Each view votes once per cell, obstacle or floor (or both), and a cell is occupied
//! while its obstacle votes are at least its floor votes: the base's believed pose is off
//! by a degree or two from view to view, so a wall seen from four metres lands a cell
//! or two off, and marks that stayed for good narrowed doorways until the base could
//! no longer leave a room it had driven into; the views that see the floor there
//! outvote such a mark, while a wall or a table edge, seen as an obstacle from every
//! view that sees the floor beside it, stays. Points nearer the base than
//! `self_filter_radius` are the robot itself (the arm in front of the head camera) and
//! are dropped; the cells under the base are free (it stands there).

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

use asp_core::grid::{FREE, OCCUPIED, OccupancyGrid, UNKNOWN};
use asp_core::{CoreError, Point3, Pose2D, Real, RgbdFrame};

/// How the exploration grid is built and where frontiers are looked for.
#[derive(Debug, Clone, PartialEq)]
pub struct ExploreParams {
    /// Cell size, metres.
    pub resolution: Real,
    /// Side of the square mapped, metres, centred where exploration starts.
    pub extent: Real,
    /// Depth readings farther than this are not used (noise grows with depth squared).
    pub max_range: Real,
    /// Points at most this high are floor.
    pub floor_max_height: Real,
    /// Points in this height band are obstacles to the base.
    pub obstacle_min_height: Real,
    pub obstacle_max_height: Real,
    /// Obstacle points a cell needs to be occupied (one stray reading blocks nothing).
    pub min_obstacle_hits: u16,
    /// Points within this distance of the base centre are the robot itself.
    pub self_filter_radius: Real,
    /// Every n-th pixel of the depth image, both ways.
    pub pixel_step: u32,
    /// A frontier shorter than this (metres of cells) is a gap in the readings, not a
    /// way on.
    pub min_frontier: Real,
    /// Free cells this near an occupied one are not stood on (the base's radius: it
    /// turns there).
    pub clearance: Real,
    /// Cells this near an occupied one are not driven through (the base's inscribed
    /// half-width and a margin); between this and `clearance` the base passes, at a
    /// cost, as Nav2 does between the inscribed and the circumscribed radius: a doorway
    /// narrower than twice `clearance` is still a way on.
    pub pass_clearance: Real,
    /// The base stops within this distance of a frontier (the camera sees beyond it
    /// from there).
    pub approach: Real,
    /// A stop this near one already made is not made again (what is still unknown
    /// around it cannot be seen from there).
    pub revisit_radius: Real,
}

impl Default for ExploreParams {
    fn default() -> Self {
        Self {
            resolution: 0.1,
            extent: 40.0,
            max_range: 4.0,
            floor_max_height: 0.05,
            obstacle_min_height: 0.1,
            obstacle_max_height: 1.6,
            min_obstacle_hits: 2,
            self_filter_radius: 0.7,
            pixel_step: 4,
            min_frontier: 0.5,
            clearance: 0.35,
            pass_clearance: 0.3,
            approach: 1.0,
            revisit_radius: 0.6,
        }
    }
}

/// A frontier: 8-connected free cells with an unknown 4-neighbour.
#[derive(Debug, Clone, PartialEq)]
pub struct Frontier {
    /// Its cells, (column, row) in the grid.
    pub cells: Vec<(i64, i64)>,
    /// The mean of its cell centres, map frame.
    pub centroid: (Real, Real),
}

impl Frontier {
    /// Its length in metres (cells × resolution).
    pub fn length(&self, resolution: Real) -> Real {
        self.cells.len() as Real * resolution
    }
}

/// Where exploration goes next.
#[derive(Debug, Clone, PartialEq)]
pub struct ExploreStop {
    /// The base pose to drive to, facing the frontier.
    pub pose: Pose2D,
    /// Path length over known free floor from the base, metres.
    pub path_length: Real,
    /// The frontier it looks at.
    pub frontier: Frontier,
}

/// What one frame added to the grid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Integrated {
    pub points: usize,
    pub new_free: usize,
    pub new_occupied: usize,
    /// Occupied cells the floor readings of more views than saw an obstacle there freed.
    pub cleared: usize,
}

/// The grid exploration builds and plans on.
#[derive(Debug, Clone)]
pub struct ExplorationMap {
    params: ExploreParams,
    grid: OccupancyGrid,
    obstacle_hits: Vec<u16>,
    /// Per cell, the views that saw an obstacle there and those that saw floor.
    obstacle_views: Vec<u16>,
    floor_views: Vec<u16>,
}

const SQRT2: Real = std::f32::consts::SQRT_2;
const NEIGHBOURS8: [(i64, i64, Real); 8] = [
    (1, 0, 1.0),
    (-1, 0, 1.0),
    (0, 1, 1.0),
    (0, -1, 1.0),
    (1, 1, SQRT2),
    (1, -1, SQRT2),
    (-1, 1, SQRT2),
    (-1, -1, SQRT2),
];
const NEIGHBOURS4: [(i64, i64); 4] = [(1, 0), (-1, 0), (0, 1), (0, -1)];

impl ExplorationMap {
    /// An unknown square of side `params.extent` centred on `center`.
    pub fn new(center: Pose2D, params: ExploreParams) -> Result<Self, CoreError> {
        let check = |name: &str, v: Real, ok: bool| {
            if v.is_finite() && ok {
                Ok(())
            } else {
                Err(CoreError::InvalidArgument(format!(
                    "exploration {name} is {v}, which is out of range"
                )))
            }
        };
        check("resolution", params.resolution, params.resolution > 0.0)?;
        check(
            "extent",
            params.extent,
            params.extent >= params.resolution && params.extent / params.resolution <= 8192.0,
        )?;
        check("max_range", params.max_range, params.max_range > 0.0)?;
        check(
            "obstacle_max_height",
            params.obstacle_max_height,
            params.obstacle_max_height >= params.obstacle_min_height
                && params.obstacle_min_height > params.floor_max_height,
        )?;
        let cells = (params.extent / params.resolution).ceil() as u32;
        let half = cells as Real * params.resolution / 2.0;
        let origin = Pose2D::new(center.x - half, center.y - half, 0.0);
        let grid = OccupancyGrid::new(params.resolution, cells, cells, origin, UNKNOWN)?;
        Ok(Self {
            obstacle_hits: vec![0; grid.cells().len()],
            obstacle_views: vec![0; grid.cells().len()],
            floor_views: vec![0; grid.cells().len()],
            grid,
            params,
        })
    }

    pub fn params(&self) -> &ExploreParams {
        &self.params
    }

    /// The grid: free, occupied or unknown cells (nav_msgs/OccupancyGrid values).
    pub fn grid(&self) -> &OccupancyGrid {
        &self.grid
    }

    fn index(&self, i: i64, j: i64) -> Option<usize> {
        (i >= 0 && j >= 0 && i < i64::from(self.grid.width) && j < i64::from(self.grid.height))
            .then(|| j as usize * self.grid.width as usize + i as usize)
    }

    /// Adds the depth of `frame` (its camera pose in the map frame), taken with the base
    /// at `base`.
    pub fn integrate(&mut self, frame: &RgbdFrame, base: Pose2D) -> Integrated {
        let mut out = Integrated::default();
        let p = &self.params;
        let step = p.pixel_step.max(1);
        let (w, h) = (frame.depth.width(), frame.depth.height());
        let mut floor = Vec::new();
        let mut obstacles = Vec::new();
        for y in (0..h).step_by(step as usize) {
            for x in (0..w).step_by(step as usize) {
                let Some(&d) = frame.depth.get(x, y) else {
                    continue;
                };
                if !(d.is_finite() && d > 0.0 && d <= p.max_range) {
                    continue;
                }
                let c = frame
                    .intrinsics
                    .unproject(x as Real + 0.5, y as Real + 0.5, d);
                let m: Point3 = frame.camera_pose.iso * c;
                if (m.x - base.x).hypot(m.y - base.y) < p.self_filter_radius {
                    continue;
                }
                out.points += 1;
                if m.z <= p.floor_max_height {
                    floor.push((m.x, m.y));
                } else if m.z >= p.obstacle_min_height && m.z <= p.obstacle_max_height {
                    obstacles.push((m.x, m.y));
                }
            }
        }
        // one vote per view and cell, whatever the number of points
        let mut voted: Vec<(usize, bool)> = Vec::new();
        for (x, y, obstacle) in obstacles
            .into_iter()
            .map(|(x, y)| (x, y, true))
            .chain(floor.into_iter().map(|(x, y)| (x, y, false)))
        {
            let (i, j) = self.grid.world_to_cell(x, y);
            let Some(k) = self.index(i, j) else {
                continue;
            };
            if obstacle {
                self.obstacle_hits[k] = self.obstacle_hits[k].saturating_add(1);
            }
            voted.push((k, obstacle));
        }
        voted.sort_unstable();
        voted.dedup();
        for &(k, obstacle) in &voted {
            let votes = if obstacle {
                &mut self.obstacle_views
            } else {
                &mut self.floor_views
            };
            votes[k] = votes[k].saturating_add(1);
        }
        voted.dedup_by_key(|v| v.0);
        let width = i64::from(self.grid.width);
        for (k, _) in voted {
            let (i, j) = (k as i64 % width, k as i64 / width);
            let occupied = self.obstacle_hits[k] >= self.params.min_obstacle_hits
                && self.obstacle_views[k] >= self.floor_views[k];
            let now = if occupied {
                OCCUPIED
            } else if self.floor_views[k] > 0 {
                FREE
            } else {
                continue;
            };
            match (self.grid.get(i, j), now) {
                (Some(was), now) if was == now => {}
                (_, OCCUPIED) => out.new_occupied += 1,
                (Some(OCCUPIED), _) => out.cleared += 1,
                _ => out.new_free += 1,
            }
            self.grid.set(i, j, now);
        }
        out.new_free += self.clear_footprint(base, self.params.clearance);
        out
    }

    /// Marks the unknown cells within `radius` of `base` free (the robot stands there);
    /// how many changed.
    pub fn clear_footprint(&mut self, base: Pose2D, radius: Real) -> usize {
        let r = (radius / self.params.resolution).ceil() as i64;
        let (ci, cj) = self.grid.world_to_cell(base.x, base.y);
        let mut n = 0;
        for j in cj - r..=cj + r {
            for i in ci - r..=ci + r {
                let (x, y) = self.grid.cell_center(i, j);
                if (x - base.x).hypot(y - base.y) <= radius && self.grid.get(i, j) == Some(UNKNOWN)
                {
                    self.grid.set(i, j, FREE);
                    n += 1;
                }
            }
        }
        n
    }

    /// Square metres of floor known free.
    pub fn free_area(&self) -> Real {
        let n = self.grid.cells().iter().filter(|&&c| c == FREE).count();
        n as Real * self.params.resolution * self.params.resolution
    }

    /// The frontiers at least `min_frontier` long, longest first.
    pub fn frontiers(&self) -> Vec<Frontier> {
        let (w, h) = (i64::from(self.grid.width), i64::from(self.grid.height));
        let is_frontier = |i: i64, j: i64| {
            self.grid.get(i, j) == Some(FREE)
                && NEIGHBOURS4
                    .iter()
                    .any(|(di, dj)| self.grid.get(i + di, j + dj) == Some(UNKNOWN))
        };
        let mut seen = vec![false; self.grid.cells().len()];
        let mut out = Vec::new();
        for j in 0..h {
            for i in 0..w {
                let k = (j * w + i) as usize;
                if seen[k] || !is_frontier(i, j) {
                    continue;
                }
                seen[k] = true;
                let mut cells = Vec::new();
                let mut queue = VecDeque::from([(i, j)]);
                while let Some((a, b)) = queue.pop_front() {
                    cells.push((a, b));
                    for (di, dj, _) in NEIGHBOURS8 {
                        let (na, nb) = (a + di, b + dj);
                        if let Some(nk) = self.index(na, nb)
                            && !seen[nk]
                            && is_frontier(na, nb)
                        {
                            seen[nk] = true;
                            queue.push_back((na, nb));
                        }
                    }
                }
                let f = Frontier {
                    centroid: centroid(&self.grid, &cells),
                    cells,
                };
                if f.length(self.params.resolution) + 1e-4 >= self.params.min_frontier {
                    out.push(f);
                }
            }
        }
        out.sort_by_key(|f| std::cmp::Reverse(f.cells.len()));
        out
    }

    /// Per cell, whether the base may stand there (free) or pass (unknown), farther than
    /// `clearance` from every occupied cell, or squeeze through (farther than
    /// `pass_clearance`).
    fn clear_cells(&self) -> Vec<Clear> {
        let (w, h) = (self.grid.width as i64, self.grid.height as i64);
        // brushfire from the occupied cells, in cells (8-connected distance)
        let mut dist = vec![Real::INFINITY; self.grid.cells().len()];
        let mut queue = VecDeque::new();
        for (k, &c) in self.grid.cells().iter().enumerate() {
            if c == OCCUPIED {
                dist[k] = 0.0;
                queue.push_back(k);
            }
        }
        let limit =
            self.params.clearance.max(self.params.pass_clearance) / self.params.resolution + 1.0;
        while let Some(k) = queue.pop_front() {
            let (i, j) = ((k as i64) % w, (k as i64) / w);
            for (di, dj, c) in NEIGHBOURS8 {
                let (ni, nj) = (i + di, j + dj);
                if ni < 0 || nj < 0 || ni >= w || nj >= h {
                    continue;
                }
                let nk = (nj * w + ni) as usize;
                let d = dist[k] + c;
                if d < dist[nk] && d <= limit {
                    dist[nk] = d;
                    queue.push_back(nk);
                }
            }
        }
        let clear = self.params.clearance / self.params.resolution;
        let pass = self.params.pass_clearance.min(self.params.clearance) / self.params.resolution;
        self.grid
            .cells()
            .iter()
            .zip(&dist)
            .map(|(&c, &d)| match c {
                OCCUPIED => Clear::No,
                _ if d <= pass => Clear::No,
                _ if d <= clear => Clear::Squeeze,
                FREE => Clear::Stand,
                UNKNOWN => Clear::Pass,
                _ => Clear::No,
            })
            .collect()
    }

    /// Path lengths (metres) from the cell of `from` over clear cells, an unknown one
    /// costing [`UNKNOWN_COST`] times a free one (the camera does not see the floor right
    /// round the base, nor under a table's edge: a plan through the ring it could not see
    /// is how a planner allowing unknown space drives, and a stop across a wall that was
    /// only unknown fails its drive and is passed over).
    fn reach(&self, from: Pose2D, clear: &[Clear]) -> Vec<Real> {
        let w = self.grid.width as i64;
        let mut dist = vec![Real::INFINITY; clear.len()];
        let (si, sj) = self.grid.world_to_cell(from.x, from.y);
        let Some(start) = self.index(si, sj) else {
            return dist;
        };
        dist[start] = 0.0;
        let mut heap = BinaryHeap::from([Open(0.0, start)]);
        while let Some(Open(d, k)) = heap.pop() {
            if d > dist[k] {
                continue;
            }
            let (i, j) = ((k as i64) % w, (k as i64) / w);
            for (di, dj, c) in NEIGHBOURS8 {
                let Some(nk) = self.index(i + di, j + dj) else {
                    continue;
                };
                let factor = match clear[nk] {
                    Clear::Stand => 1.0,
                    Clear::Pass => UNKNOWN_COST,
                    Clear::Squeeze => SQUEEZE_COST,
                    Clear::No => continue,
                };
                let nd = d + c * factor * self.params.resolution;
                if nd < dist[nk] {
                    dist[nk] = nd;
                    heap.push(Open(nd, nk));
                }
            }
        }
        dist
    }

    /// The nearest stop (by path over known free floor from `from`) within `approach` of
    /// a frontier, facing the frontier, not within `revisit_radius` of `visited` nor of
    /// `from` itself; frontier cells within `approach + revisit_radius` of a visited stop
    /// do not count
    /// (they were looked at and stayed unknown). `None` when no frontier is left within
    /// reach.
    pub fn next_stop(&self, from: Pose2D, visited: &[Pose2D]) -> Option<ExploreStop> {
        let clear = self.clear_cells();
        let dist = self.reach(from, &clear);
        let res = self.params.resolution;
        let window = (self.params.approach / res).ceil() as i64;
        let fresh = |x: Real, y: Real| {
            std::iter::once(&from)
                .chain(visited)
                .all(|v| (v.x - x).hypot(v.y - y) > self.params.revisit_radius)
        };
        let mut best: Option<ExploreStop> = None;
        for mut frontier in self.frontiers() {
            // cells a stop already looked at from about `approach` away stayed unknown
            // from there (under furniture, a dark or glass surface): not a way on
            let looked = self.params.approach + self.params.revisit_radius;
            frontier.cells.retain(|&(i, j)| {
                let (x, y) = self.grid.cell_center(i, j);
                visited.iter().all(|v| (v.x - x).hypot(v.y - y) > looked)
            });
            if frontier.length(res) + 1e-4 < self.params.min_frontier {
                continue;
            }
            frontier.centroid = centroid(&self.grid, &frontier.cells);
            let mut chosen: Option<(Real, i64, i64)> = None;
            for &(fi, fj) in &frontier.cells {
                for j in fj - window..=fj + window {
                    for i in fi - window..=fi + window {
                        let Some(k) = self.index(i, j) else {
                            continue;
                        };
                        let d = dist[k];
                        if clear[k] != Clear::Stand
                            || !d.is_finite()
                            || chosen.is_some_and(|c| c.0 <= d)
                        {
                            continue;
                        }
                        if (((i - fi).pow(2) + (j - fj).pow(2)) as Real).sqrt() * res
                            > self.params.approach
                        {
                            continue;
                        }
                        let (x, y) = self.grid.cell_center(i, j);
                        if fresh(x, y) {
                            chosen = Some((d, i, j));
                        }
                    }
                }
            }
            let Some((d, i, j)) = chosen else { continue };
            if best.as_ref().is_some_and(|b| b.path_length <= d) {
                continue;
            }
            let (x, y) = self.grid.cell_center(i, j);
            let heading = (frontier.centroid.1 - y).atan2(frontier.centroid.0 - x);
            best = Some(ExploreStop {
                pose: Pose2D::new(x, y, heading),
                path_length: d,
                frontier,
            });
        }
        best
    }
}

fn centroid(grid: &OccupancyGrid, cells: &[(i64, i64)]) -> (Real, Real) {
    let n = cells.len().max(1) as Real;
    let (sx, sy) = cells.iter().fold((0.0, 0.0), |(sx, sy), &(i, j)| {
        let (x, y) = grid.cell_center(i, j);
        (sx + x, sy + y)
    });
    (sx / n, sy / n)
}

/// What the base may do on a cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Clear {
    /// Known free with clearance: a stop may be there.
    Stand,
    /// Unknown with clearance: a path may cross it.
    Pass,
    /// Free or unknown, nearer an obstacle than `clearance` but not than
    /// `pass_clearance`: a path may squeeze through (a doorway), no stop is made there.
    Squeeze,
    No,
}

/// How much more a metre squeezing past an obstacle costs than one over known free
/// floor (paths keep off walls where there is room).
const SQUEEZE_COST: Real = 3.0;

/// How much more a metre over unknown floor costs than one over known free floor.
const UNKNOWN_COST: Real = 2.0;

/// A Dijkstra heap entry, least distance first.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Open(Real, usize);

impl Eq for Open {}

impl Ord for Open {
    fn cmp(&self, other: &Self) -> Ordering {
        other.0.total_cmp(&self.0).then(other.1.cmp(&self.1))
    }
}

impl PartialOrd for Open {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// The base poses of one stop's views: `n` headings evenly round from `at`'s heading.
pub fn headings_at(at: Pose2D, n: usize) -> Vec<Pose2D> {
    let n = n.max(1);
    (0..n)
        .map(|k| {
            let theta = at.theta + k as Real * std::f32::consts::TAU / n as Real;
            Pose2D::new(at.x, at.y, theta)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> ExploreParams {
        ExploreParams {
            extent: 10.0,
            ..ExploreParams::default()
        }
    }

    /// Sets the cells of the rectangle [x0, x1) × [y0, y1) (metres) to `value`.
    fn fill(m: &mut ExplorationMap, x0: Real, y0: Real, x1: Real, y1: Real, value: i8) {
        let (i0, j0) = m.grid.world_to_cell(x0, y0);
        let (i1, j1) = m.grid.world_to_cell(x1 - 1e-4, y1 - 1e-4);
        for j in j0..=j1 {
            for i in i0..=i1 {
                m.grid.set(i, j, value);
            }
        }
    }

    #[test]
    fn the_nearest_reachable_frontier_is_next_and_a_closed_room_has_none() {
        let mut m = ExplorationMap::new(Pose2D::new(0.0, 0.0, 0.0), params()).unwrap();
        // a known room 4 m × 2 m, walls all round but a 1 m door on its east wall
        fill(&mut m, -2.0, -1.0, 2.0, 1.0, FREE);
        fill(&mut m, -2.1, -1.1, 2.1, -1.0, OCCUPIED);
        fill(&mut m, -2.1, 1.0, 2.1, 1.1, OCCUPIED);
        fill(&mut m, -2.1, -1.1, -2.0, 1.1, OCCUPIED);
        fill(&mut m, 2.0, -1.1, 2.1, -0.5, OCCUPIED);
        fill(&mut m, 2.0, 0.5, 2.1, 1.1, OCCUPIED);
        // the door's cells are known free: the frontier is just beyond it
        fill(&mut m, 2.0, -0.5, 2.1, 0.5, FREE);
        let frontiers = m.frontiers();
        assert_eq!(frontiers.len(), 1, "{frontiers:?}");
        assert!((frontiers[0].centroid.0 - 2.05).abs() < 0.11);
        let stop = m.next_stop(Pose2D::new(-1.5, 0.0, 0.0), &[]).unwrap();
        // within approach of the door, on the room's side, facing east
        assert!(stop.pose.x > 0.9 && stop.pose.x < 2.1, "{stop:?}");
        assert!(stop.pose.theta.abs() < 0.3, "{stop:?}");
        assert!(stop.path_length > 2.0 && stop.path_length < 4.0);
        // a stop already made there is not made again
        assert!(
            m.next_stop(Pose2D::new(-1.5, 0.0, 0.0), &[stop.pose])
                .is_none()
        );
        // the door closed: nothing left to explore
        fill(&mut m, 2.0, -0.5, 2.1, 0.5, OCCUPIED);
        assert!(m.frontiers().is_empty());
        assert!(m.next_stop(Pose2D::new(-1.5, 0.0, 0.0), &[]).is_none());
    }

    #[test]
    fn a_frontier_behind_a_gap_narrower_than_the_base_is_not_reachable() {
        let mut m = ExplorationMap::new(Pose2D::new(0.0, 0.0, 0.0), params()).unwrap();
        fill(&mut m, -2.0, -1.0, 2.0, 1.0, FREE);
        // a wall at x = 0 with a 0.4 m gap: the base (0.35 m clearance) does not pass
        fill(&mut m, 0.0, -1.0, 0.1, -0.2, OCCUPIED);
        fill(&mut m, 0.0, 0.2, 0.1, 1.0, OCCUPIED);
        fill(&mut m, -2.1, -1.1, 2.1, -1.0, OCCUPIED);
        fill(&mut m, -2.1, 1.0, 2.1, 1.1, OCCUPIED);
        fill(&mut m, -2.1, -1.1, -2.0, 1.1, OCCUPIED);
        // the east end (x = 2) opens onto unknown: a frontier on the far side of the gap
        assert_eq!(m.frontiers().len(), 1);
        assert!(m.next_stop(Pose2D::new(-1.5, 0.0, 0.0), &[]).is_none());
        // from the far side it is reachable
        assert!(m.next_stop(Pose2D::new(0.8, 0.0, 0.0), &[]).is_some());
    }

    #[test]
    fn a_doorway_narrower_than_the_turning_circle_is_squeezed_through_not_stopped_in() {
        // turning needs 0.5 m all round, passing 0.3: a 0.8 m doorway is a way on
        let wide_base = ExploreParams {
            clearance: 0.5,
            pass_clearance: 0.3,
            ..params()
        };
        let mut m = ExplorationMap::new(Pose2D::new(0.0, 0.0, 0.0), wide_base.clone()).unwrap();
        fill(&mut m, -3.0, -1.5, 3.0, 1.5, FREE);
        fill(&mut m, 0.0, -1.5, 0.1, -0.4, OCCUPIED);
        fill(&mut m, 0.0, 0.4, 0.1, 1.5, OCCUPIED);
        fill(&mut m, -3.1, -1.6, 3.1, -1.5, OCCUPIED);
        fill(&mut m, -3.1, 1.5, 3.1, 1.6, OCCUPIED);
        fill(&mut m, -3.1, -1.6, -3.0, 1.6, OCCUPIED);
        let stop = m.next_stop(Pose2D::new(-2.0, 0.0, 0.0), &[]).unwrap();
        // beyond the doorway, not in it
        assert!(stop.pose.x > 0.6, "{stop:?}");
        assert!(stop.path_length > 2.6, "{stop:?}");
        // with passing as wide as turning, the doorway is shut to the base
        let mut strict = ExplorationMap::new(
            Pose2D::new(0.0, 0.0, 0.0),
            ExploreParams {
                pass_clearance: 0.5,
                ..wide_base
            },
        )
        .unwrap();
        strict.grid = m.grid.clone();
        assert!(strict.next_stop(Pose2D::new(-2.0, 0.0, 0.0), &[]).is_none());
    }

    #[test]
    fn short_frontiers_are_gaps_in_the_readings() {
        let mut m = ExplorationMap::new(Pose2D::new(0.0, 0.0, 0.0), params()).unwrap();
        fill(&mut m, -1.0, -1.0, 1.0, 1.0, FREE);
        fill(&mut m, -1.1, -1.1, 1.1, -1.0, OCCUPIED);
        fill(&mut m, -1.1, 1.0, 1.1, 1.1, OCCUPIED);
        fill(&mut m, -1.1, -1.1, -1.0, 1.1, OCCUPIED);
        fill(&mut m, 1.0, -1.1, 1.1, 1.1, OCCUPIED);
        // one unknown cell inside the room (a dropped reading): its 4 neighbours are
        // frontier cells, 0.4 m in all, under min_frontier
        m.grid.set(5 * 10, 5 * 10, UNKNOWN);
        assert!(m.frontiers().is_empty());
        let mut longer = m.clone();
        longer.params.min_frontier = 0.3;
        assert_eq!(longer.frontiers().len(), 1);
    }

    /// A camera 1.5 m above (2, 0) looking straight down: an 8×8 image 3 m across,
    /// the floor but for its last two columns, which see something 0.5 m high.
    fn downward_frame() -> RgbdFrame {
        use asp_core::geometry::{Isometry3, Transform, Vector3};
        use asp_core::image::Image;
        let mut depth = Image::filled(8, 8, 1.5f32);
        for v in 0..8 {
            for u in 6..8 {
                *depth.get_mut(u, v).unwrap() = 1.0;
            }
        }
        *depth.get_mut(0, 0).unwrap() = 0.0; // no reading
        let down = Isometry3::new(
            Vector3::new(2.0, 0.0, 1.5),
            Vector3::x() * std::f32::consts::PI,
        );
        RgbdFrame {
            rgb: Image::filled(8, 8, [0, 0, 0]),
            depth,
            intrinsics: asp_core::CameraIntrinsics {
                width: 8,
                height: 8,
                fx: 4.0,
                fy: 4.0,
                cx: 4.0,
                cy: 4.0,
            },
            camera_pose: Transform::new("map", "camera", down),
            stamp: 0.0,
            ground_truth: None,
        }
    }

    /// A map at the origin that reads every pixel of [`downward_frame`].
    fn every_pixel_map() -> ExplorationMap {
        let every_pixel = ExploreParams {
            pixel_step: 1,
            ..params()
        };
        ExplorationMap::new(Pose2D::new(0.0, 0.0, 0.0), every_pixel).unwrap()
    }

    #[test]
    fn floor_is_free_and_obstacles_need_two_readings() {
        let mut m = every_pixel_map();
        let base = Pose2D::new(0.0, 0.0, 0.0);
        let frame = downward_frame();
        let first = m.integrate(&frame, base);
        // 63 readings (one missing); none within the 0.7 m self-filter of the base
        assert_eq!(first.points, 63);
        assert!(first.new_free > 0);
        assert_eq!(first.new_occupied, 0, "one reading per cell blocks nothing");
        // the floor under the camera is free (pixel (4, 4): 0.1875 m off its axis, optical
        // +y being map -y with the camera turned π about x)
        assert_eq!(m.grid().value_at(2.1875, -0.1875), Some(FREE));
        // columns 6–7 (optical +x, map +x): 2.625 and 2.875, 0.5 m high
        let second = m.integrate(&frame, base);
        assert!(second.new_occupied > 0);
        assert_eq!(m.grid().value_at(2.625, -0.1875), Some(OCCUPIED));
        // an occupied cell is not freed by floor readings around it
        assert_eq!(m.integrate(&frame, base).new_occupied, 0);
        assert_eq!(m.grid().value_at(2.625, -0.1875), Some(OCCUPIED));
        // the base itself: within 1.5 m of (2, 0) every reading is the robot
        let mut robot = ExplorationMap::new(
            Pose2D::new(0.0, 0.0, 0.0),
            ExploreParams {
                pixel_step: 1,
                self_filter_radius: 3.0,
                ..params()
            },
        )
        .unwrap();
        assert_eq!(
            robot.integrate(&frame, Pose2D::new(2.0, 0.0, 0.0)).points,
            0
        );
    }

    #[test]
    fn a_mark_more_views_saw_as_floor_is_cleared_and_a_wall_stays() {
        let mut m = every_pixel_map();
        let base = Pose2D::new(0.0, 0.0, 0.0);
        let mark = downward_frame();
        // the same place seen again, half a metre lower: floor where the two columns
        // had something (each pixel's point lands where the first frame's did)
        let mut floor = downward_frame();
        floor.depth = asp_core::image::Image::filled(8, 8, 1.0f32);
        floor.camera_pose.iso.translation.z = 1.0;
        m.integrate(&mark, base);
        m.integrate(&mark, base);
        assert_eq!(m.grid().value_at(2.625, -0.1875), Some(OCCUPIED));
        // a tie keeps it: as many views saw floor as saw an obstacle
        assert_eq!(m.integrate(&floor, base).cleared, 0);
        assert_eq!(m.integrate(&floor, base).cleared, 0);
        assert_eq!(m.grid().value_at(2.625, -0.1875), Some(OCCUPIED));
        let outvoted = m.integrate(&floor, base);
        assert_eq!(outvoted.cleared, 16, "the two columns' 16 cells");
        assert_eq!(m.grid().value_at(2.625, -0.1875), Some(FREE));
        // a cell whose every view sees both its obstacle and the floor beside it (a wall
        // with the floor in front of it, both within one cell) stays occupied
        let coarse = ExploreParams {
            pixel_step: 1,
            resolution: 0.5,
            ..params()
        };
        let mut wall = ExplorationMap::new(Pose2D::new(0.0, 0.0, 0.0), coarse).unwrap();
        for _ in 0..5 {
            wall.integrate(&mark, base);
        }
        // the cell x 2.5–3.0 holds column 5's floor (2.5625) and columns 6–7's
        // obstacle (2.625, 2.875)
        assert_eq!(wall.grid().value_at(2.75, -0.25), Some(OCCUPIED));
    }

    #[test]
    fn headings_go_round() {
        let h = headings_at(Pose2D::new(1.0, 2.0, 0.5), 6);
        assert_eq!(h.len(), 6);
        assert!((h[1].theta - h[0].theta - std::f32::consts::TAU / 6.0).abs() < 1e-5);
        assert!(h.iter().all(|p| p.x == 1.0 && p.y == 2.0));
    }
}
