//! `skill_executor_node`: skills as pose goals through MoveIt 2 (SPEC §1.4).

use std::collections::BTreeMap;

use garde::Validate;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate, Default)]
#[serde(default, deny_unknown_fields)]
pub struct SkillExecutorConfig {
    /// What shows the verifier the world before and after a skill. Default `perception`.
    #[garde(skip)]
    pub observer: ObserverBackend,
    /// The perception observer's cameras and tolerances.
    #[garde(dive)]
    pub perception: ObserverPerceptionConfig,
    #[garde(dive)]
    pub interfaces: MotionInterfaces,
    #[garde(dive)]
    pub motion: MotionConfig,
    #[garde(dive)]
    pub grasp: GraspConfig,
    #[garde(dive)]
    pub articulation: ArticulationConfig,
    #[garde(dive)]
    pub gripper: GripperGeometry,
}

/// Where the verifier's before/after views of the acted-on objects come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ObserverBackend {
    /// Fresh depth frames from the robot's cameras, judged against the object's last
    /// known points: what left, what appeared, how far a part moved along its joint.
    #[default]
    Perception,
    /// Nothing beyond the gripper state and the tool pose: outcome checks that need the
    /// object's cloud answer "cannot tell" (a robot without cameras the arm can use).
    None,
}

/// The perception observer (`observer: perception`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(default, deny_unknown_fields)]
pub struct ObserverPerceptionConfig {
    /// Cameras captured before and after each skill (names of `common.cameras`).
    /// Default `[head, wrist]`.
    #[garde(length(min = 1))]
    pub cameras: Vec<String>,
    /// A point matches a depth reading within this distance at 1 m (grows with the
    /// square of the depth, as stereo and structured-light noise does), metres.
    /// Default 0.012.
    #[garde(range(min = 0.001, max = 0.2))]
    pub depth_tolerance: f32,
    /// Judge one point per voxel of this edge, metres. Default 0.01.
    #[garde(range(min = 0.002, max = 0.1))]
    pub voxel_size: f32,
    /// Read every n-th pixel when looking for what appeared on a place target. Default 2.
    #[garde(range(min = 1, max = 16))]
    pub pixel_step: u32,
    /// Points this close to the tool centre point, or above it within this radius, are
    /// the gripper, not the scene, metres. Default 0.08.
    #[garde(range(min = 0.0, max = 0.5))]
    pub self_filter_radius: f32,
    /// Object points within this distance of a part move with it (a drawer front around
    /// its handle), metres. Default 0.06.
    #[garde(range(min = 0.0, max = 0.5))]
    pub moving_radius: f32,
    /// Resolution of the search for a part's travel: metres for slides. Default 0.005.
    #[garde(range(min = 0.001, max = 0.1))]
    pub travel_step_m: f32,
    /// … and radians for hinges. Default 0.02.
    #[garde(range(min = 0.002, max = 0.5))]
    pub travel_step_rad: f32,
    /// Fewest matching points that place a moved part. Default 15.
    #[garde(range(min = 1, max = 100000))]
    pub min_seen_points: u32,
    /// A fresh view before a grasp that sees this share of the object's place as free
    /// space (or more, of at least `min_seen_points` judged) ends the skill before any
    /// motion: the object is not where the map has it. The verifier's
    /// `outcome.left_place_fraction` draws the same line after a pick. Default 0.6.
    #[garde(range(min = 0.05, max = 1.0))]
    pub absent_fraction: f32,
    /// A hinge's position is estimated from the front before the skill; after it, the
    /// hinge is moved in steps of this size in the horizontal plane while the views fit
    /// the moved door better, under `hinge_refinement`'s stopping rule (SPEC §5.1–5.2).
    /// 0: measure about the estimated hinge only. Metres. Default 0.02.
    #[garde(range(min = 0.0, max = 0.2))]
    pub hinge_step_m: f32,
    /// When the hinge search stops (SPEC §5.1's threshold verifier). The score is
    /// `5 · (1 + (present − vacated) / points)` of the door's points about the hinge: a
    /// hinge a few centimetres off still scores about 8 on a clean view (a door turned a
    /// little further about it covers much the same plane), so the overall threshold
    /// that ends the search early is 9.5, not SPEC's 7.5. Default: 9.5, 10 iterations,
    /// patience 3.
    #[garde(dive)]
    pub hinge_refinement: super::verifier::ThresholdVerifierConfig,
    /// Named arm configuration taken after a grasp when, from where the grasp ended, the
    /// held object hides the place it left from every camera; then the cameras look
    /// again. "": never. Default `look`.
    #[garde(skip)]
    pub verify_pose: String,
}

impl Default for ObserverPerceptionConfig {
    fn default() -> Self {
        Self {
            cameras: vec!["head".into(), "wrist".into()],
            depth_tolerance: 0.012,
            voxel_size: 0.01,
            pixel_step: 2,
            self_filter_radius: 0.08,
            moving_radius: 0.06,
            travel_step_m: 0.005,
            travel_step_rad: 0.02,
            min_seen_points: 15,
            absent_fraction: 0.6,
            hinge_step_m: 0.02,
            hinge_refinement: super::verifier::ThresholdVerifierConfig {
                overall: 9.5,
                ..super::verifier::ThresholdVerifierConfig::default()
            },
            verify_pose: "look".into(),
        }
    }
}

/// Names of the other people's interfaces the executor drives.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(default, deny_unknown_fields)]
pub struct MotionInterfaces {
    /// MoveGroup action. Default `/move_action` (MoveIt 2's move_group).
    #[garde(length(min = 1))]
    pub move_group_action: String,
    /// GripperCommand action. Default `/gripper_controller/gripper_cmd`.
    #[garde(length(min = 1))]
    pub gripper_action: String,
    /// MoveIt planning group. Default `xarm6`.
    #[garde(length(min = 1))]
    pub planning_group: String,
    /// Link whose pose goals refer to. Default `link_tcp`.
    #[garde(length(min = 1))]
    pub end_effector_link: String,
    /// Planning pipeline for free-space motions. Default `ompl`.
    #[garde(length(min = 1))]
    pub free_space_pipeline: String,
    /// Planner for free-space motions. Default `RRTConnectkConfigDefault`.
    #[garde(length(min = 1))]
    pub free_space_planner: String,
    /// Pipeline for straight-line motions. Default `pilz_industrial_motion_planner`.
    #[garde(length(min = 1))]
    pub linear_pipeline: String,
    /// Planner for straight-line motions. Default `LIN`.
    #[garde(length(min = 1))]
    pub linear_planner: String,
    /// Seconds MoveIt may plan. Default 5.
    #[garde(range(min = 0.1, max = 120.0))]
    pub planning_time_s: f64,
    /// move_group's service for reading the planning scene; its allowed collision
    /// matrix is extended (never replaced) when a motion may touch objects. Default
    /// `/get_planning_scene`.
    #[garde(length(min = 1))]
    pub planning_scene_service: String,
    /// move_group's service for applying planning-scene diffs; the acted-on object is
    /// added there as a collision object under its key before a skill. Default
    /// `/apply_planning_scene`.
    #[garde(length(min = 1))]
    pub apply_planning_scene_service: String,
    /// Edge of the boxes a perceived object's cloud becomes in the planning scene (one
    /// box per occupied voxel), metres. Default 0.02.
    #[garde(range(min = 0.002, max = 0.2))]
    pub scene_voxel_size: f64,
    /// Links that may touch the objects a motion allows contact with (the gripper's
    /// collision links). Default: the xArm gripper's seven links.
    #[garde(length(min = 1), inner(length(min = 1)))]
    pub touch_links: Vec<String>,
    /// Joints of the planning group, in order. Default `joint1` … `joint6`.
    #[garde(length(min = 1), inner(length(min = 1)))]
    pub joint_names: Vec<String>,
    /// Named joint configurations (radians, in `joint_names` order) for
    /// `move_to_named`. Default: the SRDF's group states `home`, `stow`, `look`,
    /// `look_left` and `look_right`.
    #[garde(custom(targets_match(&self.joint_names)))]
    pub named_targets: BTreeMap<String, Vec<f64>>,
}

fn targets_match(
    joints: &[String],
) -> impl FnOnce(&BTreeMap<String, Vec<f64>>, &()) -> garde::Result + '_ {
    move |targets, _| {
        for (name, values) in targets {
            if values.len() != joints.len() {
                return Err(garde::Error::new(format!(
                    "named target {name:?} has {} values for {} joints",
                    values.len(),
                    joints.len()
                )));
            }
            if let Some(v) = values.iter().find(|v| !v.is_finite()) {
                return Err(garde::Error::new(format!(
                    "named target {name:?} holds {v}, not a finite angle"
                )));
            }
        }
        Ok(())
    }
}

impl Default for MotionInterfaces {
    fn default() -> Self {
        Self {
            move_group_action: "/move_action".into(),
            gripper_action: "/gripper_controller/gripper_cmd".into(),
            planning_group: "xarm6".into(),
            end_effector_link: "link_tcp".into(),
            free_space_pipeline: "ompl".into(),
            free_space_planner: "RRTConnectkConfigDefault".into(),
            linear_pipeline: "pilz_industrial_motion_planner".into(),
            linear_planner: "LIN".into(),
            planning_time_s: 5.0,
            planning_scene_service: "/get_planning_scene".into(),
            apply_planning_scene_service: "/apply_planning_scene".into(),
            scene_voxel_size: 0.02,
            touch_links: [
                "xarm_gripper_base_link",
                "left_outer_knuckle",
                "left_finger",
                "left_inner_knuckle",
                "right_outer_knuckle",
                "right_finger",
                "right_inner_knuckle",
            ]
            .map(String::from)
            .to_vec(),
            joint_names: (1..=6).map(|i| format!("joint{i}")).collect(),
            // the SRDF's group states (urdf/xarm6_on_base.srdf)
            named_targets: BTreeMap::from([
                (
                    "home".to_string(),
                    vec![0.0, -0.6315, -0.8332, 0.0, 1.4647, 0.0],
                ),
                ("stow".to_string(), vec![2.3562, 0.0, 0.0, 0.0, 0.0, 0.0]),
                (
                    "look".to_string(),
                    vec![0.0, -1.5057, -0.8536, 0.0, 1.5739, 0.0],
                ),
                (
                    "look_left".to_string(),
                    vec![0.2, -1.5057, -0.8536, 0.0, 1.5739, 0.0],
                ),
                (
                    "look_right".to_string(),
                    vec![-0.2, -1.5057, -0.8536, 0.0, 1.5739, 0.0],
                ),
            ]),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(default, deny_unknown_fields)]
pub struct MotionConfig {
    /// Requested velocity scaling (capped by `safety.max_velocity_scaling`). Default 0.3.
    #[garde(range(min = 0.01, max = 1.0))]
    pub velocity_scaling: f64,
    /// Requested acceleration scaling. Default 0.3.
    #[garde(range(min = 0.01, max = 1.0))]
    pub acceleration_scaling: f64,
    /// Position tolerance of pose goals, metres. Default 0.005.
    #[garde(range(min = 0.0001, max = 0.1))]
    pub position_tolerance: f64,
    /// Orientation tolerance, radians. Default 0.05.
    #[garde(range(min = 0.001, max = 3.2))]
    pub orientation_tolerance: f64,
}

impl Default for MotionConfig {
    fn default() -> Self {
        Self {
            velocity_scaling: 0.3,
            acceleration_scaling: 0.3,
            position_tolerance: 0.005,
            orientation_tolerance: 0.05,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(default, deny_unknown_fields)]
pub struct GraspConfig {
    /// Candidates tried in order until the planner accepts one (SPEC §1.4). Default 10.
    #[garde(range(min = 1, max = 200))]
    pub candidates: usize,
    /// Pre-grasp stand-off along the approach axis, metres. Default 0.10.
    #[garde(range(min = 0.0, max = 0.5))]
    pub approach_distance: f64,
    /// The shortest stand-off tried when no candidate plans at `approach_distance` (an
    /// object at the edge of the arm's reach: MoveIt Task Constructor's approach
    /// `min_distance`); equal to `approach_distance`: no second round. Default 0.04.
    #[garde(range(min = 0.0, max = 0.5), custom(super::at_most(self.approach_distance, "approach_distance")))]
    pub min_approach_distance: f64,
    /// Lift after grasping, metres. Default 0.10.
    #[garde(range(min = 0.0, max = 0.5))]
    pub lift_height: f64,

    /// Open finger gap, metres. Default 0.085 (xArm gripper stroke).
    #[garde(range(min = 0.0, max = 0.3))]
    pub open_width: f64,
    /// Effort for closing, newtons (capped by `safety.max_gripper_effort`). Default 30.
    #[garde(range(min = 0.0, max = 500.0))]
    pub effort: f64,
    /// Height above a surface at which a placed object is released, metres. Default 0.02.
    #[garde(range(min = 0.0, max = 0.5))]
    pub place_clearance: f64,
    /// Release height above the target for `drop`, metres. Default 0.12.
    #[garde(range(min = 0.0, max = 1.0))]
    pub drop_height: f64,
    /// Top-down candidates: closing directions sampled over a half turn. Default 12
    /// (every 15°).
    #[garde(range(min = 1, max = 72))]
    pub yaw_samples: usize,
    /// Side candidates: approach directions sampled around the line from the arm to the
    /// target. Default 5.
    #[garde(range(min = 0, max = 36))]
    pub side_samples: usize,
    /// Side candidates spread this far either side of that line, degrees. Default 60.
    #[garde(range(min = 0.0, max = 180.0))]
    pub side_spread_deg: f64,
    /// Target points that must lie between the pads for a candidate to count. Default 3.
    #[garde(range(min = 1, max = 10000))]
    pub min_contact_points: usize,
    /// Free gap kept on each side of the target inside the open fingers, metres.
    /// Default 0.005.
    #[garde(range(min = 0.0, max = 0.05))]
    pub width_clearance: f64,
    /// Tolerated points of anything but the target inside a finger or the palm (sensor
    /// noise). Default 2.
    #[garde(range(min = 0, max = 1000))]
    pub max_collision_points: usize,
}

impl Default for GraspConfig {
    fn default() -> Self {
        Self {
            candidates: 10,
            approach_distance: 0.10,
            min_approach_distance: 0.04,
            lift_height: 0.10,
            open_width: 0.085,
            effort: 30.0,
            place_clearance: 0.02,
            drop_height: 0.12,
            yaw_samples: 12,
            side_samples: 5,
            side_spread_deg: 60.0,
            min_contact_points: 3,
            width_clearance: 0.005,
            max_collision_points: 2,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(default, deny_unknown_fields)]
pub struct ArticulationConfig {
    /// Pull distance of pinch_pull, and of hook_pull on a part whose joint is not
    /// prismatic, metres. Default 0.12.
    #[garde(range(min = 0.0, max = 1.0))]
    pub pull_distance: f64,
    /// How far past contact a tip push goes, metres. Default 0.01.
    #[garde(range(min = 0.0, max = 0.1))]
    pub push_depth: f64,
    /// Opening angle for revolute doors and lids, radians. Default 1.2.
    #[garde(range(min = 0.0, max = 3.2))]
    pub door_angle: f64,
    /// Waypoints along a revolute arc. Default 8.
    #[garde(range(min = 2, max = 100))]
    pub arc_waypoints: usize,
    /// How far the fingertips reach past a pinched part's front face, metres. Default
    /// 0.01.
    #[garde(range(min = 0.0, max = 0.1))]
    pub pinch_depth: f64,
    /// Opening travel of a drawer as a share of the cabinet depth seen behind its front.
    /// Default 0.8.
    #[garde(range(min = 0.05, max = 1.0))]
    pub open_travel_fraction: f64,
    /// Largest drawer travel a skill pulls, metres; also the travel when the drawer's
    /// depth is not seen (opening pulls up to it, closing pushes up to it, in
    /// `pull_step` steps that end at the last one the planner accepts or at a
    /// controller stall). Default 0.25.
    #[garde(range(min = 0.01, max = 1.0))]
    pub max_open_travel: f64,
    /// A prismatic pull or push is split into steps of at most this length, metres; the
    /// motion stops at the last step the planner accepts. Default 0.05.
    #[garde(range(min = 0.005, max = 1.0))]
    pub pull_step: f64,
    /// Radius around a part within which the surface it sits on is fitted, metres.
    /// Default 0.08.
    #[garde(range(min = 0.01, max = 1.0))]
    pub surface_radius: f64,
}

impl Default for ArticulationConfig {
    fn default() -> Self {
        Self {
            pull_distance: 0.12,
            push_depth: 0.01,
            door_angle: 1.2,
            arc_waypoints: 8,
            pinch_depth: 0.01,
            open_travel_fraction: 0.8,
            max_open_travel: 0.25,
            pull_step: 0.05,
            surface_radius: 0.08,
        }
    }
}

/// The parallel gripper's geometry in the tool frame (+z out of the gripper, fingers
/// closing along ±y), as skills need it to place pads and fingertips. Defaults: the
/// xArm Gripper with UFactory's `link_tcp`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(default, deny_unknown_fields)]
pub struct GripperGeometry {
    /// Tool-frame z of the fingertips (positive: beyond the tool centre point), metres.
    /// Default 0.013.
    #[garde(range(min = -0.2, max = 0.2))]
    pub tip_offset: f64,
    /// Pad length along the tool z, back from the fingertips, metres. Default 0.09.
    #[garde(range(min = 0.001, max = 0.3))]
    pub pad_length: f64,
    /// Pad width along the tool x, metres. Default 0.022.
    #[garde(range(min = 0.001, max = 0.2))]
    pub pad_width: f64,
    /// Finger thickness along the closing direction, metres. Default 0.012.
    #[garde(range(min = 0.001, max = 0.1))]
    pub finger_thickness: f64,
    /// Distance from the tool centre point back to the palm (gripper body), metres.
    /// Default 0.077.
    #[garde(range(min = 0.0, max = 0.5))]
    pub palm_offset: f64,
    /// Palm half extents across (tool x, tool y), metres. Default [0.0325, 0.0625].
    #[garde(custom(positive_pair))]
    pub palm_half_extents: [f64; 2],
    /// Smallest finger gap that counts as holding something after a stalled close,
    /// metres. Default 0.002.
    #[garde(range(min = 0.0, max = 0.1))]
    pub min_held_gap: f64,
}

impl Default for GripperGeometry {
    fn default() -> Self {
        Self {
            tip_offset: 0.013,
            pad_length: 0.09,
            pad_width: 0.022,
            finger_thickness: 0.012,
            palm_offset: 0.077,
            palm_half_extents: [0.0325, 0.0625],
            min_held_gap: 0.002,
        }
    }
}

fn positive_pair(v: &[f64; 2], _: &()) -> garde::Result {
    if v.iter().all(|x| x.is_finite() && *x > 0.0) {
        Ok(())
    } else {
        Err(garde::Error::new("both values must be positive metres"))
    }
}
