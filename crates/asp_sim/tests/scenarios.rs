//! Every scenario file loads, its success predicate is false at the start, and an oracle
//! script of correct robot commands — computed from ground-truth object poses and sent
//! through the `asp_core::robot` trait implementations — makes it true. This proves each
//! task is solvable by the simulated robot.
#![allow(clippy::unwrap_used)]

use std::f32::consts::{FRAC_PI_2, PI};
use std::path::PathBuf;
use std::sync::Arc;

use asp_core::robot::{
    ArmMotion, BaseNavigation, CancellationToken, Gripper, GripperGoal, MotionKind, PoseGoal,
    TerminalStatus,
};
use asp_core::{FrameId, Isometry3, Point3, Pose2D};
use asp_kinematics::{RobotModel, Xarm6};
use asp_sim::predicate::Predicate;
use asp_sim::scenario::Scenario;
use asp_sim::{SimRobot, SimSettings};
use nalgebra::{Translation3, UnitQuaternion};
use parry3d::bounding_volume::Aabb;

fn scenarios_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../config/scenarios")
}

fn model() -> Arc<dyn RobotModel> {
    Arc::new(Xarm6::on_base().unwrap())
}

struct Oracle {
    sim: SimRobot,
    cancel: CancellationToken,
    name: String,
}

/// Tool pointing down, fingers closing along the map's y axis rotated by `yaw`.
fn down(p: Point3, yaw: f32) -> Isometry3 {
    Isometry3::from_parts(
        Translation3::from(p.coords),
        UnitQuaternion::from_euler_angles(0.0, 0.0, yaw)
            * UnitQuaternion::from_euler_angles(PI, 0.0, 0.0),
    )
}

/// Tool pointing horizontally along heading `dir`, fingers closing horizontally.
fn level(p: Point3, dir: f32) -> Isometry3 {
    Isometry3::from_parts(
        Translation3::from(p.coords),
        UnitQuaternion::from_euler_angles(0.0, 0.0, dir)
            * UnitQuaternion::from_euler_angles(0.0, FRAC_PI_2, 0.0),
    )
}

impl Oracle {
    fn new(file: &str) -> (Oracle, Scenario) {
        let path = scenarios_dir().join(file);
        let sc = Scenario::load(&path).unwrap_or_else(|e| panic!("{e}"));
        let sim = SimRobot::for_scenario(&sc, model(), SimSettings::default()).unwrap();
        assert!(
            !sim.holds(&sc.spec.success),
            "{file}: success holds at the start"
        );
        assert_eq!(
            sim.score(&sc),
            0.0,
            "{file}: no partial credit at the start"
        );
        (
            Oracle {
                sim,
                cancel: CancellationToken::new(),
                name: file.to_owned(),
            },
            sc,
        )
    }

    fn aabb(&self, object: &str) -> Aabb {
        self.sim
            .with_state(|s| s.world.object(object).unwrap().aabb())
    }

    fn part_aabb(&self, object: &str, part: &str) -> Aabb {
        self.sim.with_state(|s| {
            let o = s.world.object(object).unwrap();
            o.part_aabb(o.part_index(part).unwrap())
        })
    }

    async fn go(&self, target: Isometry3, kind: MotionKind, allowed: &[&str]) {
        let goal = PoseGoal {
            frame: FrameId::map(),
            target,
            kind,
            position_tolerance: 0.002,
            orientation_tolerance: 0.02,
            velocity_scaling: 0.5,
            acceleration_scaling: 0.5,
            allowed_contacts: allowed.iter().map(|s| (*s).to_owned()).collect(),
        };
        let out = self.sim.move_to_pose(&goal, &self.cancel).await;
        assert!(
            out.code.is_success(),
            "{}: motion to {:?} failed: {} {}",
            self.name,
            target.translation.vector,
            out.code,
            out.message
        );
    }

    async fn gripper(&self, position: f32) -> asp_core::robot::GripperOutcome {
        self.sim
            .command(
                GripperGoal {
                    position,
                    max_effort: 20.0,
                },
                &self.cancel,
            )
            .await
            .unwrap()
    }

    async fn drive(&self, x: f32, y: f32, heading_deg: f32) {
        let out = self
            .sim
            .navigate_to(Pose2D::new(x, y, heading_deg.to_radians()), &self.cancel)
            .await;
        assert_eq!(
            out.status,
            TerminalStatus::Succeeded,
            "{}: navigation to ({x}, {y}) failed: {:?} {}",
            self.name,
            out.error_code,
            out.error_msg
        );
    }

    /// Top-down grasp at height `z` (the object's centre when `None`), lift 12 cm.
    async fn pick(&self, object: &str, yaw: f32, z: Option<f32>) {
        let b = self.aabb(object);
        let c = b.center();
        let at = Point3::new(c.x, c.y, z.unwrap_or(c.z));
        let above = Point3::new(at.x, at.y, b.maxs.z + 0.12);
        self.gripper(0.086).await;
        self.go(down(above, yaw), MotionKind::FreeSpace, &[]).await;
        self.go(down(at, yaw), MotionKind::Linear, &[object]).await;
        let g = self.gripper(0.0).await;
        assert!(
            g.stalled,
            "{}: nothing between the fingers at {object}",
            self.name
        );
        self.go(down(above, yaw), MotionKind::Linear, &[object])
            .await;
    }

    /// Carries the held object above `target`'s centre and lets go.
    async fn drop_over(&self, target: &str, yaw: f32) {
        self.drop_at(target, 0.0, 0.0, yaw).await;
    }

    /// Carries the held object above `target`'s centre shifted by (dx, dy) and lets go.
    async fn drop_at(&self, target: &str, dx: f32, dy: f32, yaw: f32) {
        let t = self.aabb(target);
        let c = t.center() + nalgebra::Vector3::new(dx, dy, 0.0);
        let held = self.sim.with_state(|s| s.held()).unwrap();
        let h = self.sim.with_state(|s| s.world.objects[held].aabb());
        let tool_z = self
            .sim
            .tool_pose(&FrameId::map())
            .await
            .unwrap()
            .translation
            .z;
        // keep the object's bottom 3 cm above the target's top
        let z = t.maxs.z + 0.03 + (tool_z - h.mins.z);
        self.go(
            down(Point3::new(c.x, c.y, z), yaw),
            MotionKind::FreeSpace,
            &[],
        )
        .await;
        self.gripper(0.086).await;
    }

    /// Pushes the fingertip `depth` past the top of a part and back.
    async fn press(&self, object: &str, part: &str, depth: f32) {
        let b = self.part_aabb(object, part);
        let c = b.center();
        let tip = self.sim.fingers().tip_z;
        self.gripper(0.0).await;
        let above = Point3::new(c.x, c.y, b.maxs.z + 0.04 + tip);
        let pushed = Point3::new(c.x, c.y, b.maxs.z - depth + tip);
        self.go(down(above, 0.0), MotionKind::FreeSpace, &[]).await;
        self.go(down(pushed, 0.0), MotionKind::Linear, &[object])
            .await;
        self.go(down(above, 0.0), MotionKind::Linear, &[object])
            .await;
    }
}

/// The oracle of a pick-and-place scenario: the object into (or onto) the target.
async fn pick_and_place(file: &str, object: &str, target: &str, yaw: f32) {
    let (o, sc) = Oracle::new(file);
    o.pick(object, yaw, None).await;
    assert_eq!(
        o.sim.score(&sc),
        0.5,
        "{file}: holding the object scores 0.5"
    );
    o.drop_over(target, yaw).await;
    assert!(o.sim.holds(&sc.spec.success), "{file}: not solved");
    assert_eq!(o.sim.score(&sc), 1.0);
}

#[tokio::test]
async fn apple_in_bowl() {
    pick_and_place("tabletop/apple_in_bowl.yaml", "apple", "bowl", 0.0).await;
}

#[tokio::test]
async fn banana_on_plate() {
    // the banana lies along y: close the fingers across it (along x)
    pick_and_place(
        "tabletop/banana_on_plate.yaml",
        "banana",
        "plate",
        FRAC_PI_2,
    )
    .await;
}

#[tokio::test]
async fn tomato_in_bowl() {
    pick_and_place("tabletop/tomato_in_bowl.yaml", "tomato", "bowl", 0.0).await;
}

#[tokio::test]
async fn orange_on_plate() {
    pick_and_place("tabletop/orange_on_plate.yaml", "orange", "plate", 0.0).await;
}

#[tokio::test]
async fn left_cup_in_tray() {
    pick_and_place("tabletop/left_cup_in_tray.yaml", "cup_left", "tray", 0.0).await;
}

#[tokio::test]
async fn right_cup_in_tray() {
    pick_and_place("tabletop/right_cup_in_tray.yaml", "cup_right", "tray", 0.0).await;
}

#[tokio::test]
async fn large_ball_in_basket() {
    pick_and_place(
        "tabletop/large_ball_in_basket.yaml",
        "large_ball",
        "basket",
        0.0,
    )
    .await;
}

#[tokio::test]
async fn small_ball_in_basket() {
    pick_and_place(
        "tabletop/small_ball_in_basket.yaml",
        "small_ball",
        "basket",
        0.0,
    )
    .await;
}

#[tokio::test]
async fn mug_by_handle() {
    let (o, sc) = Oracle::new("tabletop/mug_by_handle.yaml");
    let h = o.part_aabb("mug", "mug handle");
    // the handle's bar is its part nearest the robot; close across it (along y)
    let bar = Point3::new(h.mins.x + 0.006, h.center().y, h.center().z + 0.01);
    o.gripper(0.086).await;
    let above = Point3::new(bar.x, bar.y, h.maxs.z + 0.12);
    o.go(down(above, 0.0), MotionKind::FreeSpace, &[]).await;
    o.go(down(bar, 0.0), MotionKind::Linear, &["mug"]).await;
    assert!(o.gripper(0.0).await.stalled);
    o.go(down(above, 0.0), MotionKind::Linear, &["mug"]).await;
    assert!(o.sim.holds(&sc.spec.success));
    assert_eq!(o.sim.score(&sc), 1.0);
}

#[tokio::test]
async fn ring_bell() {
    let (o, sc) = Oracle::new("tabletop/ring_bell.yaml");
    o.press("desk_bell", "bell button", 0.008).await;
    assert!(o.sim.holds(&sc.spec.success));
}

#[tokio::test]
async fn turn_on_kettle() {
    let (o, sc) = Oracle::new("tabletop/turn_on_kettle.yaml");
    o.press("kettle", "kettle power button", 0.008).await;
    assert!(o.sim.holds(&sc.spec.success));
}

#[tokio::test]
async fn type_on_keyboard() {
    let (o, sc) = Oracle::new("tabletop/type_on_keyboard.yaml");
    o.press("keyboard", "key h", 0.006).await;
    assert!(!o.sim.holds(&sc.spec.success));
    assert_eq!(o.sim.score(&sc), 0.5, "touching the keyboard is an attempt");
    o.press("keyboard", "key i", 0.006).await;
    assert!(o.sim.holds(&sc.spec.success));
}

/// Pinches a mounted part from the front (the robot's side) and pulls it 4 cm out.
async fn pinch_pull(file: &str, object: &str, part: &str) {
    let (o, sc) = Oracle::new(file);
    let b = o.part_aabb(object, part);
    let c = b.center();
    let tip = o.sim.fingers().tip_z;
    // fingertips 8 mm into the part from its front face
    let at = Point3::new(b.mins.x + 0.008 - tip, c.y, c.z);
    o.gripper(0.086).await;
    o.go(
        level(Point3::new(at.x - 0.1, at.y, at.z), 0.0),
        MotionKind::FreeSpace,
        &[],
    )
    .await;
    o.go(level(at, 0.0), MotionKind::Linear, &[object]).await;
    assert!(
        o.gripper(0.0).await.stalled,
        "{file}: the fingers met nothing"
    );
    o.go(
        level(Point3::new(at.x - 0.04, at.y, at.z), 0.0),
        MotionKind::Linear,
        &[object],
    )
    .await;
    assert!(o.sim.holds(&sc.spec.success), "{file}: still seated");
    assert_eq!(
        o.sim
            .with_state(|s| s.held().map(|h| s.world.objects[h].name.clone())),
        Some(object.to_owned())
    );
}

#[tokio::test]
async fn unplug_power_adapter() {
    pinch_pull(
        "tabletop/unplug_power_adapter.yaml",
        "power_adapter",
        "power adapter plug",
    )
    .await;
}

#[tokio::test]
async fn remove_thumbtack() {
    pinch_pull(
        "tabletop/remove_thumbtack.yaml",
        "thumbtack",
        "thumbtack head",
    )
    .await;
}

#[tokio::test]
async fn open_drawer() {
    let (o, sc) = Oracle::new("tabletop/open_drawer.yaml");
    let h = o.part_aabb("drawer_unit", "drawer handle");
    // the bar is the handle's front edge; close across it (along x)
    let bar = Point3::new(h.mins.x + 0.007, h.center().y, h.center().z);
    o.gripper(0.086).await;
    o.go(
        down(Point3::new(bar.x, bar.y, bar.z + 0.12), FRAC_PI_2),
        MotionKind::FreeSpace,
        &[],
    )
    .await;
    o.go(down(bar, FRAC_PI_2), MotionKind::Linear, &["drawer_unit"])
        .await;
    assert!(o.gripper(0.0).await.stalled);
    o.go(
        down(Point3::new(bar.x - 0.13, bar.y, bar.z), FRAC_PI_2),
        MotionKind::Linear,
        &["drawer_unit"],
    )
    .await;
    assert!(o.sim.holds(&sc.spec.success));
    o.gripper(0.086).await;
}

#[tokio::test]
async fn dial_phone() {
    let (o, sc) = Oracle::new("mobile/dial_phone.yaml");
    let phone = o.aabb("phone").center();
    o.drive(phone.x, 4.84, 90.0).await;
    assert_eq!(o.sim.score(&sc), 0.25, "near the phone");
    for key in ["phone key 9", "phone key 1", "phone key 1"] {
        o.press("phone", key, 0.006).await;
    }
    assert!(o.sim.holds(&sc.spec.success));
}

#[tokio::test]
async fn open_cabinet() {
    let (o, sc) = Oracle::new("mobile/open_cabinet.yaml");
    // stand to the right of the door (the handle's side), facing the handle's arc
    o.drive(2.45, 1.0, -30.0).await;
    let h = o.part_aabb("metal_cabinet", "cabinet door handle");
    // the bar is the handle's front edge; approach it from the front, fingers along x
    let bar = Point3::new(h.center().x, h.maxs.y - 0.007, h.center().z);
    let facing = -FRAC_PI_2; // tool +z towards -y
    o.gripper(0.086).await;
    o.go(
        level(Point3::new(bar.x, bar.y + 0.1, bar.z), facing),
        MotionKind::FreeSpace,
        &[],
    )
    .await;
    o.go(level(bar, facing), MotionKind::Linear, &["metal_cabinet"])
        .await;
    assert!(o.gripper(0.0).await.stalled);
    // follow the handle's arc about the hinge, turning the tool with the door
    let hinge = o.sim.with_state(|s| {
        let c = s.world.object("metal_cabinet").unwrap();
        c.pose * c.links[0].origin * Point3::origin()
    });
    let arm = bar - hinge;
    for k in 1..=7 {
        let a = 0.1 * k as f32;
        let rot = UnitQuaternion::from_euler_angles(0.0, 0.0, -a);
        let p = hinge + rot * arm;
        o.go(level(p, facing - a), MotionKind::Linear, &["metal_cabinet"])
            .await;
    }
    assert!(
        o.sim.holds(&sc.spec.success),
        "door at {}",
        o.sim
            .with_state(|s| s.world.object("metal_cabinet").unwrap().links[0].position)
    );
    o.gripper(0.086).await;
}

#[tokio::test]
async fn double_pick_apples() {
    let (o, sc) = Oracle::new("mobile/double_pick_apples.yaml");
    for apple in ["apple_a", "apple_b"] {
        let c = o.aabb(apple).center();
        o.drive(7.1, c.y, 0.0).await;
        o.pick(apple, 0.0, None).await;
        let b = o.aabb("basket").center();
        o.drive(7.1, b.y, 0.0).await;
        let dy = if apple == "apple_a" { -0.05 } else { 0.05 };
        o.drop_at("basket", 0.0, dy, 0.0).await;
        if apple == "apple_a" {
            assert_eq!(o.sim.score(&sc), 0.5, "one apple in: half the credit");
        }
    }
    assert!(o.sim.holds(&sc.spec.success));
}

#[tokio::test]
async fn egg_near_tomato() {
    let (o, sc) = Oracle::new("mobile/egg_near_tomato.yaml");
    let egg = o.aabb("egg_near").center();
    o.drive(egg.x, 2.25, 90.0).await;
    o.pick("egg_near", 0.0, None).await;
    let pan = o.aabb("pan").center();
    o.drive(pan.x, 2.25, 90.0).await;
    o.drop_over("pan", 0.0).await;
    assert!(o.sim.holds(&sc.spec.success));
}

#[tokio::test]
async fn stapler_to_kitchen() {
    let (o, sc) = Oracle::new("mobile/stapler_to_kitchen.yaml");
    let s = o.aabb("stapler").center();
    o.drive(s.x, 1.05, -90.0).await;
    o.pick("stapler", 0.0, None).await;
    assert_eq!(o.sim.score(&sc), 0.5);
    o.drive(6.0, 3.75, -90.0).await;
    o.drop_over("kitchen_table", 0.0).await;
    assert!(o.sim.holds(&sc.spec.success));
}

/// Across storeys: the thermos goes along in the gripper when the base rides the
/// elevator, and the scenario is judged on the storey the robot ends on.
#[tokio::test]
async fn thermos_up_to_coffee_table() {
    let (o, sc) = Oracle::new("building/thermos_up_to_coffee_table.yaml");
    assert_eq!(o.sim.storey(), Some((0, 0.0)));
    let t = o.aabb("thermos_s0_r0_9").center();
    o.drive(t.x, 1.6, -90.0).await;
    // top-down from 5 cm above it (12 cm is beyond the arm's reach over this table)
    let b = o.aabb("thermos_s0_r0_9");
    let above = Point3::new(t.x, t.y, b.maxs.z + 0.05);
    o.gripper(0.086).await;
    o.go(down(above, 0.0), MotionKind::FreeSpace, &[]).await;
    o.go(down(t, 0.0), MotionKind::Linear, &["thermos_s0_r0_9"])
        .await;
    assert!(o.gripper(0.0).await.stalled);
    o.go(down(above, 0.0), MotionKind::Linear, &["thermos_s0_r0_9"])
        .await;
    assert_eq!(o.sim.score(&sc), 0.5);
    o.drive(-2.0, 6.2, 0.0).await;
    let (storey, height) = o.sim.ride_elevator(1, &o.cancel, &|_, _| {}).await.unwrap();
    assert_eq!((storey, height), (1, 3.5));
    assert_eq!(o.sim.score(&sc), 0.5, "the thermos stayed behind");
    let c = o.aabb("coffee_table_s1_r2_0").center();
    // the table's free corner, at its west end
    o.drive(c.x - 0.4, 11.2, 90.0).await;
    o.drop_at("coffee_table_s1_r2_0", -0.4, -0.22, 0.0).await;
    assert!(o.sim.holds(&sc.spec.success));
}

/// A start storey the building does not have, or one on a single world, is an error
/// naming `robot.storey`, and so is a `base_in` storey it does not have; setup edits
/// reach objects on any storey.
#[test]
fn building_scenarios_check_their_storeys() {
    let path = scenarios_dir().join("building/thermos_up_to_coffee_table.yaml");
    let sc = Scenario::load(&path).unwrap();
    let site = || {
        asp_sim::storeys::load_site(scenarios_dir().join("../worlds/two_storeys/building.yaml"))
            .unwrap()
    };
    let mut spec = sc.spec.clone();
    spec.robot.storey = 2;
    let e = Scenario::from_site(&path, spec.clone(), site())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("robot.storey") && e.contains("storey 2 does not exist"),
        "{e}"
    );
    spec.robot.storey = 1;
    let world = sc.world.clone();
    let e = Scenario::from_site(&path, spec.clone(), asp_sim::storeys::Site::World(world))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("robot.storey") && e.contains("single world"),
        "{e}"
    );
    // a room drive judged on a storey the building lacks is refused, naming it
    let mut upstairs = spec.clone();
    upstairs.success = Predicate::BaseIn {
        area: [6.0, 0.0, 12.0, 5.0],
        world: Some("two_storeys_storey_7".into()),
    };
    let e = Scenario::from_site(&path, upstairs.clone(), site())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("success") && e.contains("base_in.world \"two_storeys_storey_7\""),
        "{e}"
    );
    upstairs.success = Predicate::BaseIn {
        area: [6.0, 0.0, 12.0, 5.0],
        world: Some("two_storeys_storey_1".into()),
    };
    assert!(Scenario::from_site(&path, upstairs, site()).is_ok());
    // the coffee table is upstairs: moving it is an edit of storey 1's world
    spec.setup.moves.insert(
        "coffee_table_s1_r2_0".into(),
        serde_yaml_ng::from_str("{xyz: [2.0, 11.95, 0.0]}").unwrap(),
    );
    let moved = Scenario::from_site(&path, spec, site()).unwrap();
    let b = moved.building.as_ref().unwrap();
    let table = b.worlds[1].object("coffee_table_s1_r2_0").unwrap();
    assert!((table.pose.translation.x - 2.0).abs() < 1e-5);
    // the robot starts upstairs: its world is storey 1's
    assert!(moved.world.object("coffee_table_s1_r2_0").is_some());
    assert!(moved.world.object("thermos_s0_r0_9").is_none());
}

#[test]
fn every_scenario_file_has_an_oracle_here() {
    let me = include_str!("scenarios.rs");
    for dir in ["tabletop", "mobile"] {
        for f in std::fs::read_dir(scenarios_dir().join(dir)).unwrap() {
            let f = f.unwrap().path();
            let rel = format!("{dir}/{}", f.file_name().unwrap().to_string_lossy());
            assert!(me.contains(&format!("\"{rel}\"")), "no oracle for {rel}");
        }
    }
}
