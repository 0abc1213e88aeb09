//! `go_to_node`: affordance-facing navigation through Nav2 (SPEC §1.6).

use garde::Validate;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(default, deny_unknown_fields)]
#[garde(allow_unvalidated)]
pub struct GoToConfig {
    /// NavigateToPose action. Default `/navigate_to_pose`.
    #[garde(length(min = 1))]
    pub navigate_action: String,
    /// Occupancy grid topic. Default `/map`.
    #[garde(length(min = 1))]
    pub map_topic: String,
    /// First viewing radius r, metres. Default 0.85.
    #[garde(range(min = 0.1, max = 5.0))]
    pub radius: f32,
    /// Radius relaxation step, metres. Default 0.1.
    #[garde(range(min = 0.01, max = 1.0))]
    pub radius_step: f32,
    /// Smallest radius tried, metres. Default 0.45.
    #[garde(range(min = 0.05, max = 5.0))]
    pub min_radius: f32,
    /// Largest radius tried, metres. Default 1.45.
    #[garde(range(min = 0.1, max = 10.0), custom(super::not_below(self.radius, "radius", false)))]
    pub max_radius: f32,
    /// Candidate poses per circle. Default 36 (every 10°).
    #[garde(range(min = 4, max = 720))]
    pub angular_samples: usize,
    /// λ_aff: weight of the distance to the affordance-facing position; 0 means plain
    /// "go near". Default 1.0.
    #[garde(range(min = 0.0, max = 100.0))]
    pub lambda_aff: f32,
    /// Radius of the circle around the base footprint, metres. Default 0.4 (the ASP
    /// base is 0.60 × 0.50 m).
    #[garde(range(min = 0.05, max = 2.0))]
    pub footprint_radius: f32,
    /// The base's outline on the floor, base frame (x forward, y left), metres, as
    /// Nav2's `footprint`: candidate poses are checked against it at the heading they
    /// face the object with, so the base's front may come as near a table as it really
    /// can. Every corner within `footprint_radius`. Empty: the circle of
    /// `footprint_radius`. Default the ASP base, 0.60 × 0.50 m.
    #[garde(custom(footprint_within(self.footprint_radius)))]
    pub footprint: Vec<[f32; 2]>,
    /// Added to every corner of `footprint` away from the base centre, per axis, as
    /// Nav2's `footprint_padding`: room for localisation error and the grid's cells.
    /// Default 0.03.
    #[garde(range(min = 0.0, max = 0.5))]
    pub footprint_padding: f32,
    /// Occupancy values at or above this count as lethal. Default 65.
    #[garde(range(min = 1, max = 100))]
    pub lethal_cost: i8,
    /// Cells of unknown occupancy (-1) under the footprint make a pose invalid. Default
    /// on.
    #[garde(skip)]
    pub unknown_is_lethal: bool,
    /// Where the arm is mounted on the base (x forward, y left of the base centre),
    /// metres. Default [0.17, 0.0] (the xArm on the ASP base).
    #[garde(custom(finite_pair))]
    pub arm_offset: [f32; 2],
    /// Largest horizontal distance from the arm's mount to the affordance (or object)
    /// the arm works at, metres; poses farther away are not valid. 0 disables the check.
    /// Default 0.6.
    #[garde(range(min = 0.0, max = 5.0))]
    pub arm_reach: f32,
    /// Smallest horizontal distance from the arm's mount to the affordance the arm
    /// works at, metres: nearer, the arm folds into itself or the base (a door opened
    /// towards the robot brings its handle that close). 0 disables the check. Default 0.3.
    #[garde(range(min = 0.0, max = 5.0), custom(below_reach(self.arm_reach)))]
    pub arm_min_reach: f32,
    /// Height of the arm's shoulder joint (xArm6 joint 2) above the floor, metres, for
    /// the reach check when carrying an object to put down: the tool works above the
    /// surface by the object's height, where the arm reaches less far out. 0 disables
    /// it. Default 0.817 (pedestal 0.55 + 0.267).
    #[garde(range(min = 0.0, max = 3.0))]
    pub arm_shoulder_height: f32,
    /// Shoulder to wrist centre at full stretch, metres (upper arm and forearm).
    /// Default 0.64 (0.2895 + 0.351).
    #[garde(range(min = 0.0, max = 3.0))]
    pub arm_wrist_reach: f32,
    /// Wrist centre to tool point with the tool pointing down, metres. Default 0.269
    /// (0.097 + the gripper's 0.172).
    #[garde(range(min = 0.0, max = 1.0))]
    pub tool_length: f32,
    /// Room for an articulated part's motion (a door's swing, a drawer's pull).
    #[garde(dive)]
    pub part_motion: PartMotionConfig,
    /// Re-detect the object from the arrival frame (SPEC §1.6). Default on.
    #[garde(skip)]
    pub relocalize: bool,
    /// Camera whose frame the local map is built from on arrival, the arm at the next
    /// mapping pose. Default `wrist`: the arm hides 14–21 % of the head camera's image,
    /// right where the objects before the base are.
    #[garde(length(min = 1))]
    pub relocalize_camera: String,
    /// When no base pose around an object is valid and the object is at most this far
    /// from the base (metres, on the floor), go_to looks at it again from where the base
    /// stands (with `relocalize_camera`) before failing: a view may have taken another
    /// object for it, or run its points into what stands behind. 0: never. Default 2.0
    /// (the depth cameras' sharp range).
    #[garde(range(min = 0.0, max = 10.0))]
    pub look_again_within: f32,
}

impl Default for GoToConfig {
    fn default() -> Self {
        Self {
            navigate_action: "/navigate_to_pose".into(),
            map_topic: "/map".into(),
            radius: 0.85,
            radius_step: 0.1,
            min_radius: 0.45,
            max_radius: 1.45,
            angular_samples: 36,
            lambda_aff: 1.0,
            footprint_radius: 0.4,
            footprint: vec![[0.3, 0.25], [-0.3, 0.25], [-0.3, -0.25], [0.3, -0.25]],
            footprint_padding: 0.03,
            lethal_cost: 65,
            unknown_is_lethal: true,
            arm_offset: [0.17, 0.0],
            arm_reach: 0.6,
            arm_min_reach: 0.3,
            arm_shoulder_height: 0.817,
            arm_wrist_reach: 0.64,
            tool_length: 0.269,
            part_motion: PartMotionConfig::default(),
            relocalize: true,
            relocalize_camera: "wrist".into(),
            look_again_within: 2.0,
        }
    }
}

/// How go_to leaves room for the motion of the part it drives to open: the joint is
/// estimated from the part's and the object's points as the skill will estimate it,
/// the base's footprint keeps clear of what swings, and poses that keep more of the
/// part's path within the arm's reach are preferred.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(default, deny_unknown_fields)]
#[garde(allow_unvalidated)]
pub struct PartMotionConfig {
    /// Consider the part's motion at all. Default on.
    #[garde(skip)]
    pub enabled: bool,
    /// How far a door swings when opened, radians (as
    /// `skill_executor_node.articulation.door_angle`). Default 1.2.
    #[garde(range(min = 0.0, max = 3.2))]
    pub door_angle: f32,
    /// How far a drawer is pulled, metres (as `articulation.max_open_travel`). Default
    /// 0.25.
    #[garde(range(min = 0.0, max = 2.0))]
    pub drawer_travel: f32,
    /// Radius of the front fitted around the handle, metres (as
    /// `articulation.surface_radius`). Default 0.08.
    #[garde(range(min = 0.01, max = 1.0))]
    pub surface_radius: f32,
    /// Weight of the share of the part's path out of the arm's reach in a pose's cost
    /// (λ_aff weighs metres). Default 2.0.
    #[garde(range(min = 0.0, max = 100.0))]
    pub lambda_reach: f32,
    /// The leaf is taken to reach this far past the handle, metres. Default 0.08.
    #[garde(range(min = 0.0, max = 1.0))]
    pub leaf_margin: f32,
}

impl Default for PartMotionConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            door_angle: 1.2,
            drawer_travel: 0.25,
            surface_radius: 0.08,
            lambda_reach: 2.0,
            leaf_margin: 0.08,
        }
    }
}

fn finite_pair(v: &[f32; 2], _: &()) -> garde::Result {
    if v.iter().all(|x| x.is_finite()) {
        Ok(())
    } else {
        Err(garde::Error::new("both values must be finite metres"))
    }
}

fn footprint_within(radius: f32) -> impl FnOnce(&Vec<[f32; 2]>, &()) -> garde::Result {
    move |corners, _| {
        if corners.is_empty() {
            return Ok(());
        }
        if corners.len() < 3 {
            return Err(garde::Error::new(format!(
                "a footprint polygon needs at least 3 corners (or none for the circle), got {}",
                corners.len()
            )));
        }
        match corners
            .iter()
            .find(|c| !(c[0].is_finite() && c[1].is_finite() && c[0].hypot(c[1]) <= radius + 1e-4))
        {
            Some(c) => Err(garde::Error::new(format!(
                "corner {c:?} lies outside footprint_radius {radius} m (or is not finite)"
            ))),
            None => Ok(()),
        }
    }
}

fn below_reach(reach: f32) -> impl FnOnce(&f32, &()) -> garde::Result {
    move |v, _| {
        if reach == 0.0 || *v < reach {
            Ok(())
        } else {
            Err(garde::Error::new(format!(
                "must be less than arm_reach ({reach})"
            )))
        }
    }
}
