//! Where on a receiving surface a held object can be put down: free spots of its top
//! face, for the place skill's plan and for go_to's choice of where to stand with an
//! object to put down (both must agree on what the arm has to reach).
//!
//! The face is the receiving object's points near its top (a high percentile of their
//! heights), binned in 2 cm cells. A spot holds the object's centre: the face must be
//! seen all round it out to half the object's footprint radius and a margin (its centre
//! of mass well inside the seen edge), and nothing else may stand within its footprint
//! radius and the margin (the receiving object's own points above the face, and the
//! scene around it: the other objects on a desk).

use std::collections::HashSet;

use asp_core::{Point3, Real};

/// A held object whose footprint is unknown is taken this wide (radius, metres).
pub const UNKNOWN_HELD_RADIUS: Real = 0.04;
/// Cells of the surface map that spots are found on, metres.
const SPOT_CELL: Real = 0.02;
/// A spot keeps the object this far from what is seen of the face's edge and from
/// other objects, metres.
pub const SPOT_MARGIN: Real = 0.02;
/// Share of the object's footprint radius the face must be seen around a spot.
const SUPPORT_SHARE: Real = 0.5;
/// The top face: points this far below the top (a sagging or noisy top), metres.
pub const FACE_BAND: Real = 0.03;
/// Points higher than this above the face do not stand on it, metres.
const BLOCKER_HEIGHT: Real = 0.6;
/// Spots are tried nearest the arm base first (above a surface, with an object held
/// below the tool, the arm reaches less far out), but no nearer than this horizontally:
/// there the arm folds (go_to's `arm_min_reach`).
pub const SPOT_MIN_REACH: Real = 0.3;
/// At most this many spots are tried, at least `SPOT_SPACING` apart.
pub const MAX_SPOTS: usize = 4;
const SPOT_SPACING: Real = 0.08;

pub(crate) fn point_bits(p: &Point3) -> [u32; 3] {
    [p.x.to_bits(), p.y.to_bits(), p.z.to_bits()]
}

/// The height of a surface's top face: the 98th percentile of its points' heights
/// (robust to stray points above it).
pub fn top_height(points: &[Point3]) -> Option<Real> {
    if points.is_empty() {
        return None;
    }
    let mut zs: Vec<Real> = points.iter().map(|p| p.z).collect();
    zs.sort_by(|a, b| a.total_cmp(b));
    Some(zs[((zs.len() - 1) as Real * 0.98).round() as usize])
}

/// Horizontal radius of a cloud about its centroid.
pub fn footprint_radius(points: &[Point3]) -> Option<Real> {
    if points.is_empty() {
        return None;
    }
    let n = points.len() as Real;
    let (sx, sy) = points
        .iter()
        .fold((0.0, 0.0), |(x, y), p| (x + p.x, y + p.y));
    let (cx, cy) = (sx / n, sy / n);
    Some(
        points
            .iter()
            .map(|p| (p.x - cx).hypot(p.y - cy))
            .fold(0.0, Real::max),
    )
}

/// Every free spot (x, y) on the top face at `top` of `surface` for an object of
/// footprint `radius`, `obstacles` being the scene around the surface (module doc).
pub fn free_spots(
    surface: &[Point3],
    top: Real,
    radius: Real,
    obstacles: &[Point3],
) -> Vec<(Real, Real)> {
    let cell = |x: Real| (x / SPOT_CELL).floor() as i64;
    let face: HashSet<(i64, i64)> = surface
        .iter()
        .filter(|p| (p.z - top).abs() <= FACE_BAND)
        .map(|p| (cell(p.x), cell(p.y)))
        .collect();
    let supported_to = SUPPORT_SHARE * radius + SPOT_MARGIN;
    let clear_of = radius + SPOT_MARGIN;
    let blockers: Vec<(Real, Real)> = surface
        .iter()
        .chain(obstacles)
        .filter(|p| p.z > top + FACE_BAND && p.z < top + BLOCKER_HEIGHT)
        .map(|p| (p.x, p.y))
        .collect();
    let k = (supported_to / SPOT_CELL).ceil() as i64;
    let mut spots: Vec<(Real, Real)> = face
        .iter()
        .filter(|&&(i, j)| {
            (-k..=k).all(|di| {
                (-k..=k).all(|dj| {
                    let d = SPOT_CELL * ((di * di + dj * dj) as Real).sqrt();
                    d > supported_to || face.contains(&(i + di, j + dj))
                })
            })
        })
        .map(|&(i, j)| ((i as Real + 0.5) * SPOT_CELL, (j as Real + 0.5) * SPOT_CELL))
        .filter(|c| {
            blockers
                .iter()
                .all(|b| (b.0 - c.0).hypot(b.1 - c.1) > clear_of)
        })
        .collect();
    // a stable order whatever the hash set's
    spots.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
    spots
}

/// Horizontal distance of a spot from the arm base as the spots are ordered: nearest
/// first from `SPOT_MIN_REACH` out, nearer ones after all others.
pub fn spot_order(spot: (Real, Real), arm_base: [Real; 2]) -> Real {
    let d = (spot.0 - arm_base[0]).hypot(spot.1 - arm_base[1]);
    if d < SPOT_MIN_REACH { 10.0 - d } else { d }
}

/// The spots to try, in order: [`free_spots`] by [`spot_order`], at most `MAX_SPOTS`,
/// `SPOT_SPACING` apart. Empty when the face is too small or too cluttered (a bowl's
/// rim).
pub fn place_spots(
    surface: &[Point3],
    top: Real,
    radius: Real,
    obstacles: &[Point3],
    arm_base: Point3,
) -> Vec<(Real, Real)> {
    let mut spots = free_spots(surface, top, radius, obstacles);
    let base = [arm_base.x, arm_base.y];
    spots.sort_by(|a, b| spot_order(*a, base).total_cmp(&spot_order(*b, base)));
    let mut out: Vec<(Real, Real)> = Vec::new();
    for c in spots {
        if out.len() == MAX_SPOTS {
            break;
        }
        if out
            .iter()
            .all(|o| (o.0 - c.0).hypot(o.1 - c.1) >= SPOT_SPACING)
        {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wide_surface_offers_free_spots_within_reach_and_a_rim_none() {
        // a desk 1.2 × 0.6 m at 0.75 m, its front edge 0.2 m from the arm base
        let mut desk = Vec::new();
        for i in 0..=120 {
            for j in 0..=60 {
                desk.push(Point3::new(
                    0.2 + 0.01 * j as Real,
                    -0.6 + 0.01 * i as Real,
                    0.75,
                ));
            }
        }
        let base = Point3::new(0.0, 0.0, 0.55);
        // a monitor stands on the desk right before the arm
        let monitor: Vec<Point3> = (0..40)
            .map(|i| Point3::new(0.42, -0.1 + 0.005 * i as Real, 0.9))
            .collect();
        let spots = place_spots(&desk, 0.75, 0.035, &monitor, base);
        assert_eq!(spots.len(), MAX_SPOTS, "{spots:?}");
        for (x, y) in &spots {
            let d = x.hypot(*y);
            // from the arm's folding distance out, the nearest first
            assert!(
                (SPOT_MIN_REACH..SPOT_MIN_REACH + 0.1).contains(&d),
                "({x}, {y}) at {d}"
            );
            // inside the desk by the object's radius and the margin
            assert!(*x >= 0.2 + 0.035 && *x <= 0.8 - 0.035, "({x}, {y})");
            // clear of the monitor
            assert!(
                monitor.iter().all(|m| (m.x - x).hypot(m.y - y) > 0.055),
                "({x}, {y}) under the monitor"
            );
        }
        for (a, b) in spots.iter().zip(spots.iter().skip(1)) {
            assert!((a.0 - b.0).hypot(a.1 - b.1) >= SPOT_SPACING);
        }
        // the centre is farther than any spot found
        let (cx, cy) = (0.5, 0.0);
        assert!(spots.iter().all(|(x, y)| x.hypot(*y) < Real::hypot(cx, cy)));
        // a bowl's rim: a ring, no face to stand on
        let rim: Vec<Point3> = (0..200)
            .map(|k| {
                let a = std::f32::consts::TAU * k as Real / 200.0;
                Point3::new(0.4 + 0.08 * a.cos(), 0.08 * a.sin(), 0.6)
            })
            .collect();
        assert!(place_spots(&rim, 0.6, 0.035, &[], base).is_empty());
    }
}
