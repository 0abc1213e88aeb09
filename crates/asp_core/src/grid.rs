//! 2D occupancy grids in the convention of nav_msgs/OccupancyGrid: row-major cells from
//! the origin, values 0 (free) … 100 (occupied), -1 unknown.

use serde::{Deserialize, Serialize};

use crate::CoreError;
use crate::geometry::{Pose2D, Real};

pub const FREE: i8 = 0;
pub const OCCUPIED: i8 = 100;
pub const UNKNOWN: i8 = -1;

/// A metric occupancy grid. Cell `(i, j)` (column, row) covers
/// `origin + [i, i+1) × [j, j+1) · resolution` (the origin's heading is ignored, as Nav2
/// does for costmaps).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OccupancyGrid {
    pub resolution: Real,
    pub width: u32,
    pub height: u32,
    pub origin: Pose2D,
    data: Vec<i8>,
}

impl OccupancyGrid {
    /// A grid with every cell set to `value`.
    pub fn new(
        resolution: Real,
        width: u32,
        height: u32,
        origin: Pose2D,
        value: i8,
    ) -> Result<Self, CoreError> {
        if !(resolution.is_finite() && resolution > 0.0) {
            return Err(CoreError::InvalidArgument(format!(
                "grid resolution must be positive, got {resolution}"
            )));
        }
        Ok(Self {
            resolution,
            width,
            height,
            origin,
            data: vec![value; width as usize * height as usize],
        })
    }

    /// A grid from row-major cell values.
    pub fn from_cells(
        resolution: Real,
        width: u32,
        height: u32,
        origin: Pose2D,
        data: Vec<i8>,
    ) -> Result<Self, CoreError> {
        let mut g = Self::new(resolution, width, height, origin, UNKNOWN)?;
        if data.len() != g.data.len() {
            return Err(CoreError::ImageSize {
                width,
                height,
                len: data.len(),
            });
        }
        g.data = data;
        Ok(g)
    }

    pub fn cells(&self) -> &[i8] {
        &self.data
    }

    pub fn get(&self, i: i64, j: i64) -> Option<i8> {
        (i >= 0 && j >= 0 && i < i64::from(self.width) && j < i64::from(self.height))
            .then(|| self.data[j as usize * self.width as usize + i as usize])
    }

    pub fn set(&mut self, i: i64, j: i64, value: i8) {
        if i >= 0 && j >= 0 && i < i64::from(self.width) && j < i64::from(self.height) {
            self.data[j as usize * self.width as usize + i as usize] = value;
        }
    }

    /// The cell containing world point `(x, y)`; may lie outside the grid.
    pub fn world_to_cell(&self, x: Real, y: Real) -> (i64, i64) {
        (
            ((x - self.origin.x) / self.resolution).floor() as i64,
            ((y - self.origin.y) / self.resolution).floor() as i64,
        )
    }

    /// The world coordinates of the centre of cell `(i, j)`.
    pub fn cell_center(&self, i: i64, j: i64) -> (Real, Real) {
        (
            self.origin.x + (i as Real + 0.5) * self.resolution,
            self.origin.y + (j as Real + 0.5) * self.resolution,
        )
    }

    /// The value at world point `(x, y)`; `None` outside the grid.
    pub fn value_at(&self, x: Real, y: Real) -> Option<i8> {
        let (i, j) = self.world_to_cell(x, y);
        self.get(i, j)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn world_cell_round_trip() {
        let mut g = OccupancyGrid::new(0.5, 4, 2, Pose2D::new(-1.0, -0.5, 0.0), FREE).unwrap();
        assert_eq!(g.world_to_cell(-1.0, -0.5), (0, 0));
        assert_eq!(g.world_to_cell(0.9, 0.4), (3, 1));
        assert_eq!(g.world_to_cell(-1.01, 0.0), (-1, 1));
        assert_eq!(g.cell_center(3, 1), (0.75, 0.25));
        g.set(3, 1, OCCUPIED);
        assert_eq!(g.value_at(0.8, 0.3), Some(OCCUPIED));
        assert_eq!(g.value_at(5.0, 0.0), None);
        assert!(OccupancyGrid::new(0.0, 1, 1, Pose2D::new(0.0, 0.0, 0.0), 0).is_err());
        assert!(
            OccupancyGrid::from_cells(1.0, 2, 2, Pose2D::new(0.0, 0.0, 0.0), vec![0; 3]).is_err()
        );
    }
}
