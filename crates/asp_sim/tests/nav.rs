//! The occupancy grid and A*: obstacles in the base's height band, footprint inflation,
//! Nav2 planner error codes.
#![allow(clippy::unwrap_used)]

use asp_core::Pose2D;
use asp_core::grid::{FREE, OCCUPIED};
use asp_core::robot::NavErrorCode;
use asp_sim::nav::{GridParams, NavMap};
use asp_sim::parse_world;

// a 4 m × 3 m room split by a wall at x = 2 with a 1 m door at y 2–3 … and a table whose
// top is above the band's lower edge, and a lamp hanging above the band
const ROOM: &str = r#"
name: room
map: {origin: [0.0, 0.0], size: [4.0, 3.0]}
objects:
  - name: wall
    fixed: true
    shapes:
      - box: {size: [0.1, 2.0, 2.0]}
        at: {xyz: [2.0, 1.0, 1.0]}
  - name: table
    fixed: true
    shapes:
      - box: {size: [0.6, 0.6, 0.04]}
        at: {xyz: [0.8, 2.3, 0.5]}
  - name: lamp
    fixed: true
    shapes:
      - sphere: {radius: 0.2}
        at: {xyz: [3.0, 1.0, 2.5]}
"#;

fn params() -> GridParams {
    GridParams {
        resolution: 0.05,
        footprint_radius: 0.3,
        cost_distance: 0.2,
        ..GridParams::default()
    }
}

#[test]
fn grid_marks_geometry_in_the_base_height_band() {
    let w = parse_world(ROOM, "room.yaml").unwrap();
    let m = NavMap::build(&w, &params(), |_| false).unwrap();
    let g = &m.grid;
    assert_eq!((g.width, g.height), (80, 60));
    assert_eq!(g.value_at(2.0, 0.5), Some(OCCUPIED), "wall");
    assert_eq!(g.value_at(2.0, 2.5), Some(FREE), "door");
    assert_eq!(
        g.value_at(0.8, 2.3),
        Some(OCCUPIED),
        "table top within the band"
    );
    assert_eq!(g.value_at(3.0, 1.0), Some(FREE), "lamp above the band");
    // inflation: 0.25 m from the wall the footprint collides, 0.35 m away it does not
    assert!(m.footprint_blocked(1.75, 0.5));
    assert!(!m.footprint_blocked(1.6, 0.5));
    assert_eq!(m.cost(1.75, 0.5), Some(254));
    assert!(m.cost(1.55, 0.5).unwrap() > 0 && m.cost(1.55, 0.5).unwrap() < 254);
    assert_eq!(m.cost(1.0, 1.0), Some(0));
    // ignoring an object removes it
    let without_table = NavMap::build(&w, &params(), |o| w.objects[o].name == "table").unwrap();
    assert_eq!(without_table.grid.value_at(0.8, 2.3), Some(FREE));
}

#[test]
fn astar_goes_through_the_door_and_keeps_clear() {
    let w = parse_world(ROOM, "room.yaml").unwrap();
    let m = NavMap::build(&w, &params(), |_| false).unwrap();
    let start = Pose2D::new(1.0, 0.6, 0.0);
    let goal = Pose2D::new(3.2, 0.6, 0.0);
    let path = m.plan(&start, &goal).unwrap();
    assert_eq!(path.first().copied(), Some((1.0, 0.6)));
    assert_eq!(path.last().copied(), Some((3.2, 0.6)));
    // it has to pass the door (y > 2) and every point keeps the footprint clear
    assert!(path.iter().any(|p| p.1 > 2.0), "{path:?}");
    for win in path.windows(2) {
        for k in 0..=20 {
            let t = k as f32 / 20.0;
            let (x, y) = (
                win[0].0 + (win[1].0 - win[0].0) * t,
                win[0].1 + (win[1].1 - win[0].1) * t,
            );
            assert!(!m.footprint_blocked(x, y), "({x}, {y}) on {path:?}");
        }
    }
}

#[test]
fn nav2_error_codes() {
    let w = parse_world(ROOM, "room.yaml").unwrap();
    let m = NavMap::build(&w, &params(), |_| false).unwrap();
    let ok = Pose2D::new(1.0, 0.6, 0.0);
    let code = |s: Pose2D, g: Pose2D| m.plan(&s, &g).unwrap_err().code;
    assert_eq!(
        code(ok, Pose2D::new(9.0, 1.0, 0.0)),
        NavErrorCode::GoalOutsideMap
    );
    assert_eq!(
        code(Pose2D::new(-1.0, 1.0, 0.0), ok),
        NavErrorCode::StartOutsideMap
    );
    assert_eq!(
        code(Pose2D::new(1.9, 1.0, 0.0), ok),
        NavErrorCode::StartOccupied
    );
    assert_eq!(
        code(ok, Pose2D::new(2.1, 1.0, 0.0)),
        NavErrorCode::GoalOccupied
    );
    let err = m.plan(&ok, &Pose2D::new(2.1, 1.0, 0.0)).unwrap_err();
    assert!(err.message.contains("(2.10, 1.00)"), "{}", err.message);

    // close the door: the other room is unreachable
    let closed = ROOM.replace("size: [0.1, 2.0, 2.0]", "size: [0.1, 6.0, 2.0]");
    let w = parse_world(&closed, "room.yaml").unwrap();
    let m = NavMap::build(&w, &params(), |_| false).unwrap();
    let e = m.plan(&ok, &Pose2D::new(3.2, 0.6, 0.0)).unwrap_err();
    assert_eq!(e.code, NavErrorCode::NoValidPath);
}

/// With the base's polygon (a 0.6 × 0.5 m box), a pose near a wall is free or not by its
/// heading, as Nav2 checks the footprint; with the circle alone both are occupied.
#[test]
fn a_polygon_footprint_decides_poses_near_obstacles_by_heading() {
    let w = parse_world(ROOM, "room.yaml").unwrap();
    let rect = vec![[0.3, 0.25], [-0.3, 0.25], [-0.3, -0.25], [0.3, -0.25]];
    let p = GridParams {
        footprint_radius: 0.3f32.hypot(0.25),
        footprint: rect,
        ..params()
    };
    let m = NavMap::build(&w, &p, |_| false).unwrap();
    let ok = Pose2D::new(1.0, 0.6, 0.0);
    // 0.27 m from the wall: the box's front reaches into it, its side does not
    let facing = Pose2D::new(1.68, 1.0, 0.0);
    let sideways = Pose2D::new(1.68, 1.0, std::f32::consts::FRAC_PI_2);
    assert!(m.footprint_collides(&facing));
    assert!(!m.footprint_collides(&sideways));
    let code = |m: &NavMap, s: Pose2D, g: Pose2D| m.plan(&s, &g).unwrap_err().code;
    assert_eq!(code(&m, facing, ok), NavErrorCode::StartOccupied);
    assert_eq!(code(&m, ok, facing), NavErrorCode::GoalOccupied);
    let out = m.plan(&sideways, &ok).unwrap();
    assert_eq!(out.last(), Some(&(ok.x, ok.y)));
    m.plan(&ok, &sideways).unwrap();
    // nearer than the box's half width, whatever the heading
    assert!(m.footprint_collides(&Pose2D::new(1.78, 1.0, std::f32::consts::FRAC_PI_2)));
    // the circumscribed circle alone
    let circle = NavMap::build(
        &w,
        &GridParams {
            footprint: Vec::new(),
            ..p.clone()
        },
        |_| false,
    )
    .unwrap();
    assert_eq!(code(&circle, sideways, ok), NavErrorCode::StartOccupied);
}
