//! Effects as geometric consequences of gripper and tool motions, on small worlds.
#![allow(clippy::unwrap_used)]

use asp_core::{Isometry3, Point3, Pose2D, Vector3};
use asp_sim::effects::{
    EffectParams, Event, FingerGeometry, Grip, close_gripper, effect_rng, settle, step_tool,
};
use asp_sim::parse_world;
use asp_sim::predicate::{Predicate, RobotView};
use asp_sim::world::World;
use nalgebra::{Translation3, UnitQuaternion};

const WORLD: &str = r#"
name: bench
floor: {size: [4.0, 4.0]}
objects:
  - name: table
    fixed: true
    shapes:
      - box: {size: [1.0, 2.0, 0.04]}
        at: {xyz: [0.5, 0.0, 0.48]}
  - name: block
    pose: {xyz: [0.3, 0.0, 0.5]}
    shapes:
      - box: {size: [0.04, 0.04, 0.06]}
        at: {xyz: [0.0, 0.0, 0.03]}
  - name: bowl
    pose: {xyz: [0.3, 0.4, 0.5]}
    shapes:
      - open_cylinder: {radius: 0.09, height: 0.06}
  - name: plate
    pose: {xyz: [0.3, -0.4, 0.5]}
    shapes:
      - cylinder: {radius: 0.09, height: 0.02}
        at: {xyz: [0.0, 0.0, 0.01]}
  - name: socket
    fixed: true
    pose: {xyz: [0.8, 0.5, 0.5]}
    shapes:
      - box: {size: [0.04, 0.2, 0.2]}
        at: {xyz: [0.0, 0.0, 0.1]}
  - name: plug
    pose: {xyz: [0.755, 0.5, 0.6]}
    mount: {holder: socket, axis: [-1.0, 0.0, 0.0], release: 0.015}
    parts:
      - name: plug body
        skills: [pinch_pull]
        shapes:
          - box: {size: [0.05, 0.03, 0.04]}
  - name: unit
    fixed: true
    pose: {xyz: [0.7, -0.5, 0.5]}
    shapes:
      - box: {size: [0.3, 0.3, 0.01]}
        at: {xyz: [0.0, 0.0, 0.005]}
    links:
      - name: drawer
        joint: prismatic
        origin: {xyz: [0.0, 0.0, 0.02]}
        axis: [-1.0, 0.0, 0.0]
        limits: [0.0, 0.2]
        shapes:
          - box: {size: [0.02, 0.3, 0.12]}
            at: {xyz: [-0.15, 0.0, 0.06]}
        parts:
          - name: drawer handle
            function: handle
            skills: [hook_pull]
            shapes:
              - box: {size: [0.014, 0.12, 0.014]}
                at: {xyz: [-0.2, 0.0, 0.08]}
              - box: {size: [0.04, 0.012, 0.012]}
                at: {xyz: [-0.18, 0.05, 0.08]}
              - box: {size: [0.04, 0.012, 0.012]}
                at: {xyz: [-0.18, -0.05, 0.08]}
  - name: bell
    pose: {xyz: [0.3, 0.8, 0.5]}
    shapes:
      - cylinder: {radius: 0.04, height: 0.03}
        at: {xyz: [0.0, 0.0, 0.015]}
    parts:
      - name: bell button
        function: button
        press_axis: [0.0, 0.0, -1.0]
        travel: 0.004
        shapes:
          - cylinder: {radius: 0.008, height: 0.01}
            at: {xyz: [0.0, 0.0, 0.035]}
    keypads:
      - prefix: key
        rows: ["12"]
        pitch: [0.03, 0.03]
        key_size: [0.02, 0.02, 0.008]
        at: {xyz: [-0.1, -0.06, 0.004]}
  - name: cabinet
    fixed: true
    pose: {xyz: [1.5, 0.0, 0.0]}
    shapes:
      - box: {size: [0.6, 0.4, 0.02]}
        at: {xyz: [0.0, 0.0, 0.01]}
    links:
      - name: door
        joint: revolute
        origin: {xyz: [0.3, 0.2, 0.0]}
        axis: [0.0, 0.0, -1.0]
        limits: [0.0, 1.9]
        shapes:
          - box: {size: [0.6, 0.02, 0.8]}
            at: {xyz: [-0.3, 0.012, 0.45]}
        parts:
          - name: door handle
            function: handle
            shapes:
              - box: {size: [0.014, 0.014, 0.14]}
                at: {xyz: [-0.54, 0.062, 0.55]}
              - box: {size: [0.012, 0.04, 0.012]}
                at: {xyz: [-0.54, 0.04, 0.6]}
              - box: {size: [0.012, 0.04, 0.012]}
                at: {xyz: [-0.54, 0.04, 0.5]}
"#;

fn world() -> World {
    parse_world(WORLD, "bench.yaml").unwrap()
}

/// A tool pointing down (+z of the tool = -z of the map) at `p`; the fingers close along
/// the map's y axis, or along x with `yaw` = 90°.
fn down(x: f32, y: f32, z: f32, yaw_deg: f32) -> Isometry3 {
    Isometry3::from_parts(
        Translation3::new(x, y, z),
        UnitQuaternion::from_euler_angles(0.0, 0.0, yaw_deg.to_radians())
            * UnitQuaternion::from_euler_angles(std::f32::consts::PI, 0.0, 0.0),
    )
}

/// A tool pointing along +x (horizontal approach), fingers closing along the map's y.
fn forward(x: f32, y: f32, z: f32) -> Isometry3 {
    Isometry3::from_parts(
        Translation3::new(x, y, z),
        UnitQuaternion::from_euler_angles(0.0, std::f32::consts::FRAC_PI_2, 0.0),
    )
}

/// Moves the tool in small steps, the fingers closed, applying effects; returns the events.
fn glide(w: &mut World, grip: &mut Option<Grip>, from: &Isometry3, to: &Isometry3) -> Vec<Event> {
    glide_open(w, grip, from, to, 0.0)
}

/// Moves the tool in small steps, the fingers `opening` apart, applying effects.
fn glide_open(
    w: &mut World,
    grip: &mut Option<Grip>,
    from: &Isometry3,
    to: &Isometry3,
    opening: f32,
) -> Vec<Event> {
    let n = 100;
    let mut events = Vec::new();
    let mut prev = *from;
    for k in 1..=n {
        let t = k as f32 / n as f32;
        let next = Isometry3::from_parts(
            Translation3::from(from.translation.vector.lerp(&to.translation.vector, t)),
            from.rotation.slerp(&to.rotation, t),
        );
        events.extend(step_tool(
            w,
            grip,
            &prev,
            &next,
            opening,
            &EffectParams::default(),
        ));
        prev = next;
    }
    events
}

fn view<'a>(grip: &Option<Grip>) -> RobotView<'a> {
    RobotView {
        base: Pose2D::new(0.0, 0.0, 0.0),
        held: grip.as_ref().and_then(Grip::carries),
        held_part: grip.as_ref().and_then(Grip::part),
        tool_goals: &[],
        start_centres: &[],
    }
}

fn fingers() -> FingerGeometry {
    FingerGeometry::default()
}

#[test]
fn grasp_carry_and_release_into_a_bowl_and_onto_a_plate() {
    let mut w = world();
    let block = w.index_of("block").unwrap();
    let mut rng = effect_rng(0);
    // the block is 4 cm wide; the tool sits 1 cm off its centre line
    let tool = down(0.3, 0.01, 0.53, 0.0);
    let r = close_gripper(
        &mut w,
        &tool,
        0.085,
        0.0,
        &fingers(),
        &EffectParams::default(),
        &mut rng,
    );
    assert!(r.stalled);
    assert!((r.position - 0.04).abs() < 2e-3, "{}", r.position);
    let mut grip = r.grip.clone();
    assert!(matches!(grip, Some(Grip::Object { object, .. }) if object == block));
    // the fingers centred the block under the tool
    assert!((w.objects[block].pose.translation.y - 0.01).abs() < 2e-3);
    assert!(
        Predicate::Held {
            object: "block".into()
        }
        .eval(&w, &view(&grip))
    );

    let lifted = down(0.3, 0.01, 0.7, 0.0);
    glide(&mut w, &mut grip, &tool, &lifted);
    assert!((w.objects[block].pose.translation.z - 0.67).abs() < 1e-3);
    let over_bowl = down(0.3, 0.4, 0.66, 0.0);
    glide(&mut w, &mut grip, &lifted, &over_bowl);
    // open: the block drops into the bowl and rests on its floor
    let held = grip.take().and_then(|g| g.carries()).unwrap();
    settle(&mut w, held, &|_| false);
    let inside = Predicate::In {
        object: "block".into(),
        container: "bowl".into(),
    };
    assert!(inside.eval(&w, &view(&grip)));
    let z = w.objects[block].aabb().mins.z;
    assert!(
        (z - 0.505).abs() < 2e-3,
        "rests on the bowl's 5 mm floor, bottom at {z}"
    );

    // placed on the plate instead, it lies on its top surface
    let mut w2 = world();
    let b2 = w2.index_of("block").unwrap();
    w2.objects[b2].pose = Isometry3::translation(0.3, -0.4, 0.7);
    settle(&mut w2, b2, &|_| false);
    let on = Predicate::On {
        object: "block".into(),
        support: "plate".into(),
    };
    assert!(on.eval(&w2, &view(&None)));
    assert!((w2.objects[b2].aabb().mins.z - 0.52).abs() < 2e-3);
    assert!(
        !Predicate::On {
            object: "block".into(),
            support: "table".into()
        }
        .eval(&w2, &view(&None))
    );
}

#[test]
fn closing_on_nothing_reaches_zero_and_a_pad_on_the_object_displaces_it() {
    let mut w = world();
    let mut rng = effect_rng(0);
    let empty = down(0.3, -0.2, 0.53, 0.0);
    let r = close_gripper(
        &mut w,
        &empty,
        0.085,
        0.0,
        &fingers(),
        &EffectParams::default(),
        &mut rng,
    );
    assert!(!r.stalled && r.grip.is_none() && r.position == 0.0);

    // one pad starts inside the block: a failed grasp pushes it aside (seeded)
    let run = |seed: u64| {
        let mut w = world();
        let block = w.index_of("block").unwrap();
        let before = w.objects[block].centroid();
        let tool = down(0.3, 0.035, 0.53, 0.0);
        let mut rng = effect_rng(seed);
        let r = close_gripper(
            &mut w,
            &tool,
            0.085,
            0.0,
            &fingers(),
            &EffectParams::default(),
            &mut rng,
        );
        assert!(r.grip.is_none() && !r.stalled);
        assert_eq!(r.displaced, Some(block));
        let after = w.objects[block].centroid();
        let moved = ((after.x - before.x).powi(2) + (after.y - before.y).powi(2)).sqrt();
        assert!((0.02..=0.06 + 1e-4).contains(&moved), "moved {moved}");
        assert!(
            (w.objects[block].aabb().mins.z - 0.5).abs() < 1e-3,
            "settled on the table"
        );
        w.objects[block].pose
    };
    assert_eq!(run(3), run(3), "same seed, same displacement");
    assert_ne!(run(3), run(4));
}

#[test]
fn a_mounted_plug_slides_out_and_comes_free() {
    let mut w = world();
    let plug = w.index_of("plug").unwrap();
    let mut rng = effect_rng(0);
    let tool = forward(0.745, 0.5, 0.6);
    let r = close_gripper(
        &mut w,
        &tool,
        0.085,
        0.0,
        &fingers(),
        &EffectParams::default(),
        &mut rng,
    );
    assert!(r.stalled, "{r:?}");
    let mut grip = r.grip;
    assert!(matches!(grip, Some(Grip::Mounted { .. })));
    let removed = Predicate::Removed {
        object: "plug".into(),
    };
    // pulling sideways first: the plug does not follow, and the grip slips
    let mut g2 = grip.clone();
    let mut w2 = w.clone();
    let ev = glide(&mut w2, &mut g2, &tool, &forward(0.745, 0.56, 0.6));
    assert!(ev.contains(&Event::Slipped { object: plug }));
    assert!(g2.is_none() && !removed.eval(&w2, &view(&g2)));
    assert!((w2.objects[plug].pose.translation.y - 0.5).abs() < 1e-6);
    // pulling straight out along the mount axis frees it
    let ev = glide(&mut w, &mut grip, &tool, &forward(0.68, 0.5, 0.6));
    assert!(ev.contains(&Event::Removed { object: plug }));
    assert!(removed.eval(&w, &view(&grip)));
    assert!(matches!(grip, Some(Grip::Object { object, .. }) if object == plug));
    assert!((w.objects[plug].pose.translation.x - 0.69).abs() < 1e-3);
}

#[test]
fn pulling_a_gripped_drawer_handle_opens_the_drawer_up_to_its_limit() {
    let mut w = world();
    let unit = w.index_of("unit").unwrap();
    let mut rng = effect_rng(0);
    // handle bar at map x 0.7 - 0.2 = 0.5, z 0.5 + 0.02 + 0.08 = 0.6; fingers close along x
    // opened 5 cm: wider, a pad would land on the drawer front 5 cm behind the bar
    let tool = down(0.5, -0.5, 0.6, 90.0);
    let r = close_gripper(
        &mut w,
        &tool,
        0.05,
        0.0,
        &fingers(),
        &EffectParams::default(),
        &mut rng,
    );
    assert!(r.stalled && (r.position - 0.014).abs() < 2e-3, "{r:?}");
    let mut grip = r.grip;
    assert!(matches!(grip, Some(Grip::Link { link: 0, .. })));
    glide(&mut w, &mut grip, &tool, &down(0.38, -0.5, 0.6, 90.0));
    let q = w.objects[unit].links[0].position;
    assert!((q - 0.12).abs() < 2e-3, "{q}");
    assert!(
        Predicate::Open {
            object: "unit".into(),
            link: "drawer".into(),
            min: 0.1
        }
        .eval(&w, &view(&grip))
    );
    // past the limit the drawer stops and the handle slips out of the fingers
    let ev = glide(
        &mut w,
        &mut grip,
        &down(0.38, -0.5, 0.6, 90.0),
        &down(0.2, -0.5, 0.6, 90.0),
    );
    assert_eq!(w.objects[unit].links[0].position, 0.2);
    assert!(ev.contains(&Event::Slipped { object: unit }) && grip.is_none());
}

#[test]
fn a_free_fingertip_hooks_a_handle_and_pushes_a_drawer_closed() {
    let mut w = world();
    let unit = w.index_of("unit").unwrap();
    let mut none = None;
    // in front of the handle (outside it): pulling does nothing
    glide(
        &mut w,
        &mut none,
        &down(0.47, -0.5, 0.6, 0.0),
        &down(0.40, -0.5, 0.6, 0.0),
    );
    assert_eq!(w.objects[unit].links[0].position, 0.0);
    // behind the bar (between bar and panel), pulling drags the drawer out
    glide(
        &mut w,
        &mut none,
        &down(0.525, -0.5, 0.63, 0.0),
        &down(0.525, -0.5, 0.6, 0.0),
    );
    assert_eq!(
        w.objects[unit].links[0].position, 0.0,
        "moving down does not pull"
    );
    glide(
        &mut w,
        &mut none,
        &down(0.525, -0.5, 0.6, 0.0),
        &down(0.425, -0.5, 0.6, 0.0),
    );
    let q = w.objects[unit].links[0].position;
    assert!((q - 0.1).abs() < 3e-3, "{q}");
    // pushing on the front panel closes it again
    let panel_x = 0.7 - 0.15 - q - 0.012;
    glide(
        &mut w,
        &mut none,
        &down(panel_x - 0.05, -0.55, 0.58, 0.0),
        &down(panel_x, -0.55, 0.58, 0.0),
    );
    glide(
        &mut w,
        &mut none,
        &down(panel_x, -0.55, 0.58, 0.0),
        &down(panel_x + 0.12, -0.55, 0.58, 0.0),
    );
    let q = w.objects[unit].links[0].position;
    assert!(q < 0.005, "{q}");
    assert!(
        Predicate::Closed {
            object: "unit".into(),
            link: "drawer".into(),
            max: 0.01
        }
        .eval(&w, &view(&none))
    );
}

#[test]
fn a_gripped_door_handle_swings_the_door_about_its_hinge() {
    let mut w = world();
    let cab = w.index_of("cabinet").unwrap();
    let mut rng = effect_rng(0);
    // handle bar at object (-0.24, 0.262, 0.55) → map (1.26, 0.262, 0.55); approach from +y
    // tool +z towards the door (-y), fingers closing along x across the vertical bar
    let rot = UnitQuaternion::from_euler_angles(std::f32::consts::FRAC_PI_2, 0.0, 0.0)
        * UnitQuaternion::from_euler_angles(0.0, 0.0, std::f32::consts::FRAC_PI_2);
    let tool = Isometry3::from_parts(Translation3::new(1.26, 0.262, 0.55), rot);
    let r = close_gripper(
        &mut w,
        &tool,
        0.085,
        0.0,
        &fingers(),
        &EffectParams::default(),
        &mut rng,
    );
    assert!(r.stalled, "{r:?}");
    let mut grip = r.grip;
    // follow the handle's arc about the hinge at map (1.8, 0.2) by 0.8 rad
    let hinge = Point3::new(1.8, 0.2, 0.55);
    let arm = Vector3::new(1.26 - 1.8, 0.262 - 0.2, 0.0);
    let mut prev = tool;
    for k in 1..=80 {
        let a = 0.8 * k as f32 / 80.0;
        let rot_a = UnitQuaternion::from_euler_angles(0.0, 0.0, -a);
        let p = hinge + rot_a * arm;
        let next = Isometry3::from_parts(Translation3::from(p.coords), rot_a * rot);
        step_tool(
            &mut w,
            &mut grip,
            &prev,
            &next,
            0.0,
            &EffectParams::default(),
        );
        prev = next;
    }
    let q = w.objects[cab].links[0].position;
    assert!((q - 0.8).abs() < 0.02, "{q}");
    assert!(grip.is_some(), "the grip held along the arc");
    assert!(
        Predicate::Open {
            object: "cabinet".into(),
            link: "door".into(),
            min: 0.5
        }
        .eval(&w, &view(&grip))
    );
}

/// Let go of a door handle at the end of an arc: open fingers around the bar slide off it
/// as the tool backs off along its own axis, and the door stays where the arc left it; a
/// closed fingertip behind the same bar hooks it and drags the door further open.
#[test]
fn open_fingers_back_off_a_door_handle_without_dragging_it() {
    let arc_end = |w: &mut World| {
        let cab = w.index_of("cabinet").unwrap();
        let rot = UnitQuaternion::from_euler_angles(std::f32::consts::FRAC_PI_2, 0.0, 0.0)
            * UnitQuaternion::from_euler_angles(0.0, 0.0, std::f32::consts::FRAC_PI_2);
        let tool = Isometry3::from_parts(Translation3::new(1.26, 0.262, 0.55), rot);
        let r = close_gripper(
            w,
            &tool,
            0.085,
            0.0,
            &fingers(),
            &EffectParams::default(),
            &mut effect_rng(0),
        );
        let mut grip = r.grip;
        let hinge = Point3::new(1.8, 0.2, 0.55);
        let arm = Vector3::new(1.26 - 1.8, 0.262 - 0.2, 0.0);
        let mut prev = tool;
        for k in 1..=40 {
            let a = 0.4 * k as f32 / 40.0;
            let rot_a = UnitQuaternion::from_euler_angles(0.0, 0.0, -a);
            let next = Isometry3::from_parts(
                Translation3::from((hinge + rot_a * arm).coords),
                rot_a * rot,
            );
            step_tool(w, &mut grip, &prev, &next, 0.0, &EffectParams::default());
            prev = next;
        }
        (cab, prev)
    };
    for (opening, drags) in [(0.085, false), (0.0, true)] {
        let mut w = world();
        let (cab, at) = arc_end(&mut w);
        let before = w.objects[cab].links[0].position;
        assert!((before - 0.4).abs() < 0.02, "{before}");
        // let go, then back off 5 cm along the tool's -z
        let back = at * Translation3::new(0.0, 0.0, -0.05);
        glide_open(&mut w, &mut None, &at, &back, opening);
        let after = w.objects[cab].links[0].position;
        assert_eq!(
            after - before > 0.02,
            drags,
            "fingers {opening} m apart: door {before} -> {after} rad"
        );
    }
}

#[test]
fn pushing_a_button_and_keys_registers_presses_once_per_push() {
    let mut w = world();
    let bell = w.index_of("bell").unwrap();
    let mut none = None;
    let button_top = 0.5 + 0.04;
    let above = down(0.3, 0.8, button_top + 0.03, 0.0);
    let pushed = down(0.3, 0.8, button_top - 0.008, 0.0);
    let ev = glide(&mut w, &mut none, &above, &pushed);
    assert_eq!(
        ev.iter()
            .filter(|e| matches!(e, Event::Pressed { .. }))
            .count(),
        1
    );
    glide(
        &mut w,
        &mut none,
        &pushed,
        &down(0.3, 0.8, button_top - 0.002, 0.0),
    );
    let pressed = |n| Predicate::Pressed {
        object: "bell".into(),
        part: "bell button".into(),
        count: n,
    };
    assert!(pressed(1).eval(&w, &view(&none)) && !pressed(2).eval(&w, &view(&none)));
    glide(&mut w, &mut none, &pushed, &above);
    glide(&mut w, &mut none, &above, &pushed);
    assert!(pressed(2).eval(&w, &view(&none)));
    // a touch too shallow does not count
    let shallow = down(0.3, 0.8, button_top - 0.001, 0.0);
    glide(&mut w, &mut none, &pushed, &above);
    glide(&mut w, &mut none, &above, &shallow);
    assert_eq!(w.objects[bell].parts[0].presses, 2);
    // keys type their symbols in order
    let key = |c: usize| {
        let x = 0.3 - 0.1 + 0.03 * c as f32;
        (
            down(x, 0.74, 0.53, 0.0),
            down(x, 0.74, 0.5 + 0.008 - 0.004, 0.0),
        )
    };
    for c in [1, 0, 1] {
        let (up, dn) = key(c);
        glide(&mut w, &mut none, &up, &dn);
        glide(&mut w, &mut none, &dn, &up);
    }
    assert_eq!(w.objects[bell].typed, "212");
    assert!(
        Predicate::Typed {
            object: "bell".into(),
            text: "21".into()
        }
        .eval(&w, &view(&none))
    );
    assert!(
        !Predicate::Typed {
            object: "bell".into(),
            text: "11".into()
        }
        .eval(&w, &view(&none))
    );
}

#[test]
fn base_in_holds_for_a_base_inside_the_area_on_its_storey() {
    let w = world();
    let at = |x: f32, y: f32| RobotView {
        base: Pose2D::new(x, y, 1.0),
        ..view(&None)
    };
    let kitchen = |world: Option<&str>| Predicate::BaseIn {
        area: [6.0, 0.0, 12.0, 5.0],
        world: world.map(str::to_owned),
    };
    assert!(kitchen(None).eval(&w, &at(8.0, 2.5)));
    assert!(kitchen(None).eval(&w, &at(6.0, 5.0)), "the edge is in");
    assert!(!kitchen(None).eval(&w, &at(5.9, 2.5)));
    assert!(
        !kitchen(None).eval(&w, &at(8.0, 6.2)),
        "the corridor is out"
    );
    // on another storey the same x, y is another room
    assert!(kitchen(Some("bench")).eval(&w, &at(8.0, 2.5)));
    assert!(!kitchen(Some("storey_1")).eval(&w, &at(8.0, 2.5)));
    // as a scenario writes it, and an area the wrong way round refused by name
    let p: Predicate = serde_yaml_ng::with::singleton_map_recursive::deserialize(
        serde_yaml_ng::Deserializer::from_str("base_in: {area: [6.0, 0.0, 12.0, 5.0]}"),
    )
    .unwrap();
    assert_eq!(p, kitchen(None));
    let e = Predicate::BaseIn {
        area: [12.0, 0.0, 6.0, 5.0],
        world: None,
    }
    .check(&w)
    .unwrap_err();
    assert!(e.to_string().contains("base_in.area"), "{e}");
}
