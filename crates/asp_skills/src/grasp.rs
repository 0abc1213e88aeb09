//! Grasp candidates around a target point cloud (SPEC §1.4: grasp anywhere on an object,
//! grasp_part on the affordance only), kept near the target points and ranked.
//!
//! Candidates are top-down grasps (closing directions over a half turn, at the target's
//! centre and along its major axis) and side grasps (approach directions spread around
//! the line from the arm to the target, fingers closing horizontally). Each is checked
//! against the geometry of a parallel gripper:
//!
//! - antipodal width: the target points between the pads span less than the stroke minus
//!   a clearance each side, and at least `min_contact_points` lie there (the grasp holds
//!   material, not air); the tool is re-centred between them;
//! - nothing else in the fingers or the palm: points of the rest of the object (the mug
//!   body beside its handle) and of the scene, and target points the open fingers would
//!   land on; the rest of the object right next to the target (part material its mask
//!   missed) may lie between the pads (it is held too, and widens the grasp), the body
//!   farther away and the scene may not;
//! - the approach sweep: the fingers travel clear of the target to the grasp;
//! - the fingertips stay above the support surface.
//!
//! The score favours many contact points, a grasp near the target's centre, width
//! margin, and top-down or robot-facing approaches; ties break on generation order, so
//! the ranking is deterministic.

use asp_config::sections::skills::{GraspConfig, GripperGeometry};
use asp_core::{Isometry3, Point3, Real, Vector3};
use serde::{Deserialize, Serialize};

use crate::geometry::{Principal, horizontal, shifted, tool_axes, tool_pose, top_down};

/// How the gripper approaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GraspKind {
    TopDown,
    Side,
}

/// One ranked grasp.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GraspCandidate {
    /// Tool centre point pose at the grasp (map frame).
    pub pose: Isometry3,
    pub kind: GraspKind,
    /// Target extent between the pads, metres.
    pub width: Real,
    /// Target points between the pads.
    pub contacts: usize,
    pub score: Real,
}

impl GraspCandidate {
    /// The direction the tool moves on its approach (its +z).
    pub fn approach(&self) -> Vector3 {
        self.pose.rotation * Vector3::z()
    }
}

/// The gripper and grasp settings, in the workspace's `f32`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GraspParams {
    pub open_width: Real,
    pub clearance: Real,
    pub min_contacts: usize,
    pub max_collision_points: usize,
    pub tip: Real,
    pub pad_length: Real,
    pub pad_width: Real,
    pub thickness: Real,
    pub palm_offset: Real,
    pub palm_half: [Real; 2],
    pub approach_distance: Real,
    pub yaw_samples: usize,
    pub side_samples: usize,
    pub side_spread: Real,
}

impl GraspParams {
    /// The pads' extent along the tool's z (from the pad's inner end to the fingertip).
    fn pad_z(&self) -> (Real, Real) {
        (self.tip - self.pad_length, self.tip)
    }

    /// Whether a point in the tool frame lies in the slab the pads sweep when they close
    /// (any distance along the closing axis).
    fn in_pad_slab(&self, l: &Point3) -> bool {
        let (lo, hi) = self.pad_z();
        l.x.abs() <= self.pad_width / 2.0 + MARGIN && l.z >= lo - MARGIN && l.z <= hi
    }

    pub fn new(grasp: &GraspConfig, gripper: &GripperGeometry) -> Self {
        Self {
            open_width: grasp.open_width as Real,
            clearance: grasp.width_clearance as Real,
            min_contacts: grasp.min_contact_points,
            max_collision_points: grasp.max_collision_points,
            tip: gripper.tip_offset as Real,
            pad_length: gripper.pad_length as Real,
            pad_width: gripper.pad_width as Real,
            thickness: gripper.finger_thickness as Real,
            palm_offset: gripper.palm_offset as Real,
            palm_half: gripper.palm_half_extents.map(|v| v as Real),
            approach_distance: grasp.approach_distance as Real,
            yaw_samples: grasp.yaw_samples,
            side_samples: grasp.side_samples,
            side_spread: (grasp.side_spread_deg as Real).to_radians(),
        }
    }
}

/// What to grasp and what to avoid.
#[derive(Debug, Clone, Copy)]
pub struct GraspScene<'a> {
    /// The points to grasp (object or part), map frame.
    pub target: &'a [Point3],
    /// Points the gripper must not touch: the scene around the object.
    pub avoid: &'a [Point3],
    /// The rest of the target's own object (the mug body beside its handle): kept out of
    /// the fingers and the palm like `avoid`. Its points within [`ATTACHED_NEAR`] of the
    /// target may lie between the pads, grasped along with it (they count into the
    /// width): a part's mask rarely covers all of the part, and the handle's inner face
    /// left out of it is still the handle. Farther ones (the body) may not.
    pub attached: &'a [Point3],
    /// Height of the surface the object stands on (fingertips stay above it).
    pub support_z: Real,
    /// The target rests on the support: its bottom, hidden from a camera above, is at
    /// `support_z`, so a top-down grasp closes around the middle of [support, top] rather
    /// than of the visible points (which would close over the top of a thin object).
    pub rests_on_support: bool,
    /// The arm base position in the map (side approaches face away from it).
    pub arm_base: Point3,
}

/// Small margin around finger and palm volumes, metres.
const MARGIN: Real = 0.003;
/// Target material this far past a finger's outer face means the finger would land on
/// the target, metres.
const BEYOND_FINGER: Real = 0.02;
/// On an elongated target, the largest |cos| between the closing direction and its
/// length (30° off the across direction).
const MAX_CLOSING_ALONG_LENGTH: Real = 0.5;
/// A top-down grasp's closing direction at least this aligned with the line of sight
/// (cos, 60°) leaves the pads room on the target's unseen far side (a side grasp closes
/// across it: the far side it does not see lies along its approach).
const FAR_SIDE_ROOM_MIN_COS: Real = 0.5;
/// Fingertips stay this far above the support, metres.
const SUPPORT_CLEARANCE: Real = 0.004;
/// Points of the rest of the object this close to the target are taken for unmasked
/// target material, metres.
pub const ATTACHED_NEAR: Real = 0.015;

/// The points of the rest of the object next to the target, and the others.
struct Attached {
    near: Vec<Point3>,
    far: Vec<Point3>,
}

impl Attached {
    fn split(scene: &GraspScene<'_>) -> Self {
        let (near, far) = scene.attached.iter().partition(|q| {
            scene
                .target
                .iter()
                .any(|t| (*t - **q).norm_squared() <= ATTACHED_NEAR * ATTACHED_NEAR)
        });
        Self { near, far }
    }
}

/// Every valid candidate, best first.
pub fn grasp_candidates(scene: &GraspScene<'_>, p: &GraspParams) -> Vec<GraspCandidate> {
    let Some(pc) = Principal::of(scene.target) else {
        return Vec::new();
    };
    let (zmin, zmax) = scene
        .target
        .iter()
        .fold((Real::MAX, Real::MIN), |(a, b), q| (a.min(q.z), b.max(q.z)));
    let zmin = if scene.rests_on_support {
        zmin.min(scene.support_z)
    } else {
        zmin
    };
    let centre = pc.centroid;
    // sample positions along the major horizontal axis (of the footprint: the 3D major
    // axis of an upright handle or bottle is vertical) when the target is longer than a
    // pad is wide: the centroid of a U-shaped handle lies in the air between its bars
    let footprint: Vec<Point3> = scene
        .target
        .iter()
        .map(|q| Point3::new(q.x, q.y, 0.0))
        .collect();
    let major = Principal::of(&footprint)
        .and_then(|f| horizontal(&f.major()))
        .unwrap_or_else(Vector3::x);
    let (lo, hi) = crate::geometry::extent_along(scene.target, &major).unwrap_or((0.0, 0.0));
    let half_len = (hi - lo) / 2.0;
    let mid = (lo + hi) / 2.0;
    let base_centre = centre + major * (mid - centre.coords.dot(&major));
    let offsets: Vec<Real> = if 2.0 * half_len > p.pad_width {
        vec![0.0, -0.25, 0.25, -0.5, 0.5]
    } else {
        vec![0.0]
    };
    let mut raw: Vec<(Isometry3, GraspKind)> = Vec::new();
    // top-down
    let z_mid = (zmin + zmax) / 2.0;
    let tcp_z = z_mid
        .max(scene.support_z + p.tip + SUPPORT_CLEARANCE)
        .max(zmax - p.palm_offset + 0.01);
    // an object lying on a surface and longer than the open gripper is only grasped
    // across its length: a closing direction along it would put a finger down on the
    // object itself, which a sparse map cloud may not show as a collision (parts such as
    // handles keep every direction: their skills choose among them)
    let elongated = scene.rests_on_support && 2.0 * half_len > p.open_width;
    for &t in &offsets {
        let c = base_centre + major * (t * half_len);
        for k in 0..p.yaw_samples.max(1) {
            let yaw = std::f32::consts::PI * k as Real / p.yaw_samples.max(1) as Real;
            let pose = top_down(Point3::new(c.x, c.y, tcp_z), yaw);
            if elongated && tool_axes(&pose).1.dot(&major).abs() > MAX_CLOSING_ALONG_LENGTH {
                continue;
            }
            raw.push((pose, GraspKind::TopDown));
        }
    }
    // side: approach from the arm's side, fingers closing horizontally
    let toward = horizontal(&(centre - scene.arm_base)).unwrap_or_else(Vector3::x);
    let base_yaw = toward.y.atan2(toward.x);
    let n_side = p.side_samples;
    for i in 0..n_side {
        let f = if n_side == 1 {
            0.0
        } else {
            -1.0 + 2.0 * i as Real / (n_side - 1) as Real
        };
        let yaw = base_yaw + f * p.side_spread;
        let a = Vector3::new(yaw.cos(), yaw.sin(), 0.0);
        let (amin, amax) = crate::geometry::extent_along(scene.target, &a).unwrap_or((0.0, 0.0));
        // tool point at the centre along the approach, but the palm stays in front
        let along = ((amin + amax) / 2.0).min(amin + p.palm_offset - 0.01);
        let zc = z_mid.max(scene.support_z + p.pad_width / 2.0 + SUPPORT_CLEARANCE);
        let c = centre + a * (along - centre.coords.dot(&a));
        let pos = Point3::new(c.x, c.y, zc);
        raw.push((tool_pose(pos, a, Vector3::z().cross(&a)), GraspKind::Side));
    }
    let attached = Attached::split(scene);
    let mut out: Vec<(usize, GraspCandidate)> = raw
        .into_iter()
        .enumerate()
        .filter_map(|(i, (pose, kind))| {
            evaluate(scene, &attached, p, &pose, kind, &centre, &toward).map(|c| (i, c))
        })
        .collect();
    out.sort_by(|a, b| b.1.score.total_cmp(&a.1.score).then(a.0.cmp(&b.0)));
    out.into_iter().map(|(_, c)| c).collect()
}

/// Checks one pose; `None` when the gripper cannot grasp there.
fn evaluate(
    scene: &GraspScene<'_>,
    attached: &Attached,
    p: &GraspParams,
    pose: &Isometry3,
    kind: GraspKind,
    centre: &Point3,
    toward: &Vector3,
) -> Option<GraspCandidate> {
    let half_open = p.open_width / 2.0;
    let in_pad_slab = |l: &Point3| p.in_pad_slab(l);
    // target points between the open pads, measured at the pose; the tool is re-centred
    // between the extreme contacts and the span measured again (a pose that started off
    // centre would otherwise keep a width that only counted part of the target)
    let measure = |pose: &Isometry3| {
        let inv = pose.inverse();
        let mut lo = Real::MAX;
        let mut hi = Real::MIN;
        let mut n = 0usize;
        for q in scene.target {
            let l = inv * q;
            if in_pad_slab(&l) && l.y.abs() <= half_open {
                lo = lo.min(l.y);
                hi = hi.max(l.y);
                n += 1;
            }
        }
        // unmasked part material between the pads is squeezed too (only with the target)
        if n > 0 {
            for q in &attached.near {
                let l = inv * q;
                if in_pad_slab(&l) && l.y.abs() <= half_open {
                    lo = lo.min(l.y);
                    hi = hi.max(l.y);
                }
            }
        }
        (n, lo, hi)
    };
    let (_, y_axis, z_axis) = tool_axes(pose);
    let mut pose = *pose;
    let (mut n, mut lo, mut hi) = measure(&pose);
    for _ in 0..4 {
        if n < p.min_contacts {
            return None;
        }
        let mid = (lo + hi) / 2.0;
        if mid.abs() < 1e-4 {
            break;
        }
        pose = shifted(&pose, y_axis * mid);
        (n, lo, hi) = measure(&pose);
    }
    if n < p.min_contacts {
        return None;
    }
    let width = hi - lo;
    if width > p.open_width - 2.0 * p.clearance || ((lo + hi) / 2.0).abs() > p.clearance {
        return None;
    }
    // a top-down grasp closing along the line of sight: the far side of the target is
    // hidden from the robot's cameras (a binder standing face-on shows its front face
    // only), and its true extent only continues away from the robot; so the pads go
    // where the seen near edge sits against the near pad's clearance, leaving the rest of
    // the stroke for the unseen side. Only while the edge the pads meet first is the
    // target's near edge (no seen material nearer still: a wider object, cut by the
    // stroke) and the pads hold the same target points across the same span (the shift
    // adds air on the far side); where it puts a finger into something, the centred pose
    // stays.
    let along_sight = y_axis.dot(toward);
    // a point's depth along the closing axis, growing away from the robot
    let depth = |l: &Point3| if along_sight > 0.0 { l.y } else { -l.y };
    let near_edge = if along_sight > 0.0 { lo } else { -hi };
    let inv = pose.inverse();
    let near_edge_is_first = kind == GraspKind::TopDown
        && along_sight.abs() >= FAR_SIDE_ROOM_MIN_COS
        && scene
            .target
            .iter()
            .map(|q| inv * q)
            .filter(|l| in_pad_slab(l))
            .all(|l| depth(&l) >= near_edge - MARGIN);
    let room = near_edge_is_first
        .then(|| {
            let reach = p.open_width / 2.0 - p.clearance - MARGIN;
            let d = if along_sight > 0.0 {
                lo + reach
            } else {
                hi - reach
            };
            shifted(&pose, y_axis * d)
        })
        .filter(|r| {
            let (n_room, lo_room, hi_room) = measure(r);
            n_room == n && ((hi_room - lo_room) - (hi - lo)).abs() < 1e-3
        });
    let grasp_pose = room
        .filter(|r| clear_of_collisions(scene, attached, p, r))
        .or_else(|| clear_of_collisions(scene, attached, p, &pose).then_some(pose))?;
    let tcp = pose.translation.vector;
    let off = tcp - centre.coords;
    let lateral = off - z_axis * off.dot(&z_axis);
    let s_center = (-lateral.norm_squared() / (2.0 * 0.02 * 0.02)).exp();
    let s_contact = (n as Real / 20.0).min(1.0);
    let s_width = 1.0 - width / p.open_width;
    let s_kind = match kind {
        // a cloud seen from the robot's side hides the far side of the target, so its
        // width along the line of sight is underestimated and its centre biased towards
        // the robot: top-down grasps prefer to close across that line, where both edges
        // are seen
        GraspKind::TopDown => 0.1 + 0.3 * (1.0 - y_axis.dot(toward).abs()),
        GraspKind::Side => 0.1 * z_axis.dot(toward).max(0.0) - 0.05,
    };
    Some(GraspCandidate {
        pose: grasp_pose,
        kind,
        width,
        contacts: n,
        score: s_contact + s_center + 0.5 * s_width + s_kind,
    })
}

/// Nothing but the target between the pads and nothing in the fingers, the palm or the
/// approach sweep at `pose` (up to `max_collision_points`), and the fingertips above the
/// support.
fn clear_of_collisions(
    scene: &GraspScene<'_>,
    attached: &Attached,
    p: &GraspParams,
    pose: &Isometry3,
) -> bool {
    let half_open = p.open_width / 2.0;
    let pad_z = p.pad_z();
    let in_pad_slab = |l: &Point3| p.in_pad_slab(l);
    let inv = pose.inverse();
    let finger = |l: &Point3| {
        in_pad_slab(l)
            && l.y.abs() > half_open - p.clearance
            && l.y.abs() <= half_open + p.thickness + MARGIN
    };
    let palm = |l: &Point3| {
        l.x.abs() <= p.palm_half[0] + MARGIN
            && l.y.abs() <= p.palm_half[1] + MARGIN
            && l.z <= -p.palm_offset + MARGIN
            && l.z >= -p.palm_offset - 0.08
    };
    // the fingers' sweep on the approach: from the pre-grasp down to the pads
    let sweep = |l: &Point3| {
        l.x.abs() <= p.pad_width / 2.0 + MARGIN
            && l.y.abs() > half_open - p.clearance
            && l.y.abs() <= half_open + p.thickness + MARGIN
            && l.z < pad_z.0
            && l.z >= pad_z.0 - p.approach_distance
    };
    // target material just past a finger (counted with the finger and palm hits below):
    // the finger would cut into an object that continues beyond the pads, i.e. the
    // target is wider than it looked between them
    let beyond = |l: &Point3| {
        in_pad_slab(l)
            && l.y.abs() > half_open + p.thickness + MARGIN
            && l.y.abs() <= half_open + p.thickness + MARGIN + BEYOND_FINGER
    };
    let target_beyond = scene.target.iter().filter(|q| beyond(&(inv * **q)));
    let in_gripper = scene
        .target
        .iter()
        .chain(scene.attached)
        .chain(scene.avoid)
        .filter(|q| {
            let l = inv * **q;
            finger(&l) || palm(&l) || sweep(&l)
        });
    // other objects may not be between the pads either, nor the rest of this one
    let between_pads = scene.avoid.iter().chain(&attached.far).filter(|q| {
        let l = inv * **q;
        in_pad_slab(&l) && l.y.abs() <= half_open
    });
    let hits = target_beyond
        .chain(in_gripper)
        .chain(between_pads)
        .take(p.max_collision_points + 1)
        .count();
    if hits > p.max_collision_points {
        return false;
    }
    // fingertips and finger edges above the support
    let lowest = [-1.0, 1.0]
        .into_iter()
        .flat_map(|sx| {
            [-1.0, 1.0].into_iter().map(move |sy| {
                Point3::new(
                    sx * p.pad_width / 2.0,
                    sy * (half_open + p.thickness),
                    p.tip,
                )
            })
        })
        .map(|c| (pose * c).z)
        .fold(Real::MAX, Real::min);
    lowest >= scene.support_z + SUPPORT_CLEARANCE
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> GraspParams {
        GraspParams::new(&GraspConfig::default(), &GripperGeometry::default())
    }

    /// How many of `points` lie in the pads' slab of `cand`, within `half_y` of the
    /// closing axis (the open width's half: between the pads; plus the fingers: in them).
    fn within_fingers(cand: &GraspCandidate, points: &[Point3], half_y: Real) -> usize {
        let p = params();
        let inv = cand.pose.inverse();
        points
            .iter()
            .map(|q| inv * q)
            .filter(|l| {
                l.x.abs() <= p.pad_width / 2.0
                    && l.z >= p.tip - p.pad_length
                    && l.z <= p.tip
                    && l.y.abs() <= half_y
            })
            .count()
    }

    /// Points on the surface of an upright cylinder (cup) standing at z = base.
    fn cylinder(c: Point3, r: Real, h: Real) -> Vec<Point3> {
        let mut out = Vec::new();
        for i in 0..36 {
            let a = i as Real * std::f32::consts::TAU / 36.0;
            for j in 0..=10 {
                out.push(Point3::new(
                    c.x + r * a.cos(),
                    c.y + r * a.sin(),
                    c.z + h * j as Real / 10.0,
                ));
            }
        }
        for i in 0..=8 {
            for j in 0..=8 {
                let x = -r + 2.0 * r * i as Real / 8.0;
                let y = -r + 2.0 * r * j as Real / 8.0;
                if x * x + y * y <= r * r {
                    out.push(Point3::new(c.x + x, c.y + y, c.z + h));
                }
            }
        }
        out
    }

    #[test]
    fn a_cup_gets_top_down_grasps_at_its_centre_within_the_stroke() {
        let cup = cylinder(Point3::new(0.6, 0.0, 0.5), 0.032, 0.09);
        let scene = GraspScene {
            target: &cup,
            avoid: &[],
            attached: &[],
            support_z: 0.5,
            rests_on_support: false,
            arm_base: Point3::new(0.17, 0.0, 0.55),
        };
        let c = grasp_candidates(&scene, &params());
        assert!(c.len() >= 10, "{} candidates", c.len());
        let best = &c[0];
        assert_eq!(best.kind, GraspKind::TopDown);
        assert!((best.width - 0.064).abs() < 0.005, "{:#?}", &c[..3]);
        let t = best.pose.translation.vector;
        assert!((t.x - 0.6).abs() < 0.005 && t.y.abs() < 0.005, "{t:?}");
        // fingertips above the table
        assert!(t.z - params().tip > 0.5);
        // sorted
        for w in c.windows(2) {
            assert!(w[0].score >= w[1].score);
        }
    }

    #[test]
    fn a_long_thin_object_is_grasped_across_its_length() {
        // a banana lying along y, seen from above: the top half of a 3.6 cm cylinder,
        // 15 cm long, sampled at 1 cm like the map's clouds
        let mut banana = Vec::new();
        for j in 0..15 {
            for a in 0..4 {
                let ang = std::f32::consts::PI * a as Real / 3.0;
                banana.push(Point3::new(
                    0.66 - 0.018 * ang.cos(),
                    -2.29 + 0.01 * j as Real,
                    0.518 + 0.018 * ang.sin(),
                ));
            }
        }
        let scene = GraspScene {
            target: &banana,
            avoid: &[],
            attached: &[],
            support_z: 0.5,
            rests_on_support: true,
            arm_base: Point3::new(0.17, -2.0, 0.55),
        };
        let c = grasp_candidates(&scene, &params());
        assert!(!c.is_empty());
        for cand in c.iter().filter(|c| c.kind == GraspKind::TopDown) {
            let (_, y, _) = tool_axes(&cand.pose);
            assert!(y.y.abs() <= MAX_CLOSING_ALONG_LENGTH + 1e-4, "{cand:#?}");
        }
        // it rests on the table: the fingers close around its middle, below the top
        let best = c.iter().find(|c| c.kind == GraspKind::TopDown).unwrap();
        assert!(
            (best.pose.translation.vector.z - 0.518).abs() < 0.006,
            "{best:#?}"
        );
    }

    #[test]
    fn a_face_seen_head_on_leaves_the_pads_room_for_its_hidden_back() {
        // a binder standing upright, 24 cm wide along x and 5.4 cm thick along y, seen by
        // the robot from -y: its cloud is the front face only (with 4 mm of depth noise)
        let front = 0.6;
        let thickness = 0.054;
        let face: Vec<Point3> = (0..=24)
            .flat_map(|i| {
                (0..=28).map(move |j| {
                    let noise = 0.002 * ((i * 7 + j * 3) % 5) as Real - 0.004;
                    Point3::new(
                        -0.12 + 0.01 * i as Real,
                        front + noise,
                        0.5 + 0.01 * j as Real,
                    )
                })
            })
            .collect();
        let scene = GraspScene {
            target: &face,
            avoid: &[],
            attached: &[],
            support_z: 0.5,
            rests_on_support: true,
            arm_base: Point3::new(0.0, 0.0, 0.55),
        };
        let c = grasp_candidates(&scene, &params());
        assert!(!c.is_empty(), "no candidate");
        let p = params();
        let inner = p.open_width / 2.0 - p.clearance + 1e-4;
        // the best grasp holds the binder's whole thickness between its pads: both the
        // seen front and the hidden back lie inside the open stroke along its closing axis
        let best = &c[0];
        let inv = best.pose.inverse();
        let centre_x = best.pose.translation.vector.x;
        for y in [front, front + thickness] {
            let l = inv * Point3::new(centre_x, y, best.pose.translation.vector.z);
            assert!(
                l.y.abs() <= inner,
                "the {} face at y {y} is {:.3} m off the closing axis: {best:#?}",
                if y == front { "front" } else { "back" },
                l.y
            );
        }
    }

    #[test]
    fn too_wide_objects_have_no_candidates() {
        let big = cylinder(Point3::new(0.6, 0.0, 0.5), 0.06, 0.09);
        let scene = GraspScene {
            target: &big,
            avoid: &[],
            attached: &[],
            support_z: 0.5,
            rests_on_support: false,
            arm_base: Point3::new(0.17, 0.0, 0.55),
        };
        let c = grasp_candidates(&scene, &params());
        assert!(c.is_empty(), "{:?}", c.first());
    }

    #[test]
    fn fingers_keep_out_of_the_rest_of_the_object() {
        // a handle bar beside a body: grasps whose fingers would enter the body are gone
        let bar: Vec<Point3> = (0..20)
            .flat_map(|i| {
                [0.0, 0.006].map(|dx| Point3::new(0.534 + dx, 0.3, 0.515 + i as Real * 0.0035))
            })
            .collect();
        let body = cylinder(Point3::new(0.6, 0.3, 0.5), 0.04, 0.1);
        let scene = GraspScene {
            target: &bar,
            avoid: &[],
            attached: &body,
            support_z: 0.5,
            rests_on_support: false,
            arm_base: Point3::new(0.17, 0.4, 0.55),
        };
        let c = grasp_candidates(&scene, &params());
        assert!(!c.is_empty());
        let p = params();
        for cand in &c {
            let inside = within_fingers(cand, &body, p.open_width / 2.0 + p.thickness);
            assert!(inside <= p.max_collision_points, "{cand:?}");
        }
        // closing along the bar (y): closing along x would put a finger into the body
        let (_, y, _) = tool_axes(&c[0].pose);
        assert!(y.y.abs() > 0.7, "{y:?}");
    }

    #[test]
    fn a_handle_whose_mask_misses_its_inner_face_is_still_grasped_at_the_bar() {
        // a mug handle's vertical bar (1.2 cm deep, 1.4 cm wide) in front of the body;
        // the part mask covers the outer face and the bar's top, its inner face is left
        // to the rest of the object, and two stray body points made it into the mask
        let face = |x: Real| -> Vec<Point3> {
            (0..20)
                .flat_map(|i| {
                    [0.293, 0.3, 0.307].map(|y| Point3::new(x, y, 0.515 + i as Real * 0.0035))
                })
                .collect()
        };
        let mut handle = face(0.528);
        handle.extend([0.533, 0.538].map(|x| Point3::new(x, 0.3, 0.585)));
        handle.extend([
            Point3::new(0.562, 0.285, 0.55),
            Point3::new(0.562, 0.285, 0.56),
        ]);
        let mut rest = face(0.540);
        rest.extend(cylinder(Point3::new(0.6, 0.3, 0.5), 0.04, 0.1));
        let scene = GraspScene {
            target: &handle,
            avoid: &[],
            attached: &rest,
            support_z: 0.5,
            rests_on_support: false,
            arm_base: Point3::new(0.0, 0.4, 0.55),
        };
        let c = grasp_candidates(&scene, &params());
        assert!(!c.is_empty(), "no candidate");
        let best = &c[0];
        let x = best.pose.translation.x;
        assert!((0.524..=0.544).contains(&x), "not at the bar: {best:?}");
        // the inner face is held too: the width spans the bar, not only the masked face
        let (_, y, _) = tool_axes(&best.pose);
        if y.x.abs() > 0.7 {
            assert!(best.width >= 0.01, "{best:?}");
        }
        // and the body is never between the pads
        let p = params();
        for cand in &c {
            let body_inside = within_fingers(cand, &rest[60..], p.open_width / 2.0);
            assert!(body_inside <= p.max_collision_points, "{cand:?}");
        }
    }

    #[test]
    fn ranking_is_deterministic() {
        let cup = cylinder(Point3::new(0.6, 0.1, 0.5), 0.03, 0.08);
        let scene = GraspScene {
            target: &cup,
            avoid: &[],
            attached: &[],
            support_z: 0.5,
            rests_on_support: false,
            arm_base: Point3::new(0.17, 0.0, 0.55),
        };
        let a = grasp_candidates(&scene, &params());
        let b = grasp_candidates(&scene, &params());
        assert_eq!(a, b);
    }
}
