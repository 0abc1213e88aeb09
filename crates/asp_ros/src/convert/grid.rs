//! Occupancy grids (`nav_msgs/OccupancyGrid` ↔ `asp_core::grid::OccupancyGrid`).

use asp_core::grid::OccupancyGrid;
use asp_core::{Pose2D, Real};

use super::geometry::{pose, pose_2d};
use crate::RosError;
use crate::msg::builtin_interfaces::Time;
use crate::msg::nav_msgs::{MapMetaData, OccupancyGrid as RosGrid};
use crate::msg::std_msgs::Header;

pub fn ros_grid(grid: &OccupancyGrid, frame: &str, stamp: Time) -> RosGrid {
    RosGrid {
        header: Header::new(stamp, frame),
        info: MapMetaData {
            map_load_time: stamp,
            resolution: grid.resolution,
            width: grid.width,
            height: grid.height,
            origin: pose(&grid.origin.to_isometry()),
        },
        data: grid.cells().to_vec(),
    }
}

/// The grid of a map message; cell values outside -1…100 are an error naming the cell.
pub fn grid(msg: &RosGrid) -> Result<OccupancyGrid, RosError> {
    let origin: Pose2D = pose_2d(&msg.info.origin, "map origin")?;
    if let Some((i, v)) = msg
        .data
        .iter()
        .enumerate()
        .find(|(_, v)| !(-1..=100).contains(*v))
    {
        return Err(RosError::Conversion(format!(
            "map cell {i} holds {v}, outside -1…100"
        )));
    }
    OccupancyGrid::from_cells(
        msg.info.resolution as Real,
        msg.info.width,
        msg.info.height,
        origin,
        msg.data.clone(),
    )
    .map_err(|e| RosError::Conversion(format!("map of frame {:?}: {e}", msg.header.frame_id)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use asp_core::grid::{OCCUPIED, UNKNOWN};

    #[test]
    fn grid_round_trip_and_checks() {
        let mut g = OccupancyGrid::new(0.05, 4, 3, Pose2D::new(-1.0, 2.0, 0.0), UNKNOWN).unwrap();
        g.set(2, 1, OCCUPIED);
        let msg = ros_grid(&g, "map", Time::default());
        assert_eq!(msg.data.len(), 12);
        assert_eq!(grid(&msg).unwrap(), g);
        let mut bad = msg.clone();
        bad.data[5] = 120;
        assert!(grid(&bad).unwrap_err().to_string().contains("cell 5"));
        let mut short = msg;
        short.data.pop();
        assert!(grid(&short).is_err());
    }
}
